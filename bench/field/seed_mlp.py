"""The seed text's MLP step (8 x Linear(4096) + GELU, batch 64, bf16, Adam) and, with
BIG=1, a compute-bound variant (8 x Linear(8192), batch 8192: large GEMMs). Truth: the
CUDA-event time between step ends, every step kept (TRUTH step_ms)."""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from common import cuda_step_times, med, truth

STEPS = int(os.environ.get("STEPS", "60"))
big = os.environ.get("BIG") == "1"
dim, batch = (8192, 8192) if big else (4096, 64)
torch.manual_seed(0)
layers = []
for _ in range(8):
    layers += [torch.nn.Linear(dim, dim), torch.nn.GELU()]
m = torch.nn.Sequential(*layers).cuda().to(torch.bfloat16)
opt = torch.optim.Adam(m.parameters(), lr=1e-4)
x = torch.randn(batch, dim, device="cuda", dtype=torch.bfloat16)
ev = []
for i in range(STEPS):
    loss = m(x).float().square().mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    e = torch.cuda.Event(enable_timing=True)
    e.record()
    ev.append(e)
ms = cuda_step_times(ev, 5)
truth(framework="seed mlp" + (" big" if big else ""), steps=STEPS, step_ms_median=med(ms),
      step_ms=[round(v, 4) for v in ms])
