"""Hugging Face GPT-2 (6 layers, from its config: no download), batch 8 x 512, bf16
autocast, AdamW: a launch-bound step of ~600 launches. Truth: CUDA-event time between
step ends (no synchronisation in the loop), the median after warm-up.
STEPS, PROFILE=1 (torch.profiler around the loop: the reference cost)."""
import os
import sys

import torch
from transformers import GPT2Config, GPT2LMHeadModel

sys.path.insert(0, os.path.dirname(__file__))
from common import cuda_step_times, med, truth

STEPS = int(os.environ.get("STEPS", "60"))
torch.manual_seed(0)
cfg = GPT2Config(n_layer=6, n_embd=768, n_head=12, n_positions=512, vocab_size=50257)
m = GPT2LMHeadModel(cfg).cuda()
opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
ids = torch.randint(0, cfg.vocab_size, (8, 512), device="cuda")
ev = []


def loop():
    for i in range(STEPS):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = m(ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        e = torch.cuda.Event(enable_timing=True)
        e.record()
        ev.append(e)


if os.environ.get("PROFILE") == "1":
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
        loop()
else:
    loop()
ms = cuda_step_times(ev, 5)
truth(framework="gpt2", steps=STEPS, step_ms_median=med(ms), step_ms=[round(v, 4) for v in ms],
      max_memory_allocated=torch.cuda.max_memory_allocated())
