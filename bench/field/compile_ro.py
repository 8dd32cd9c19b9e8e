"""torch.compile(mode="reduce-overhead"): forward and backward replayed as CUDA graphs,
the host ~20 steps ahead of the GPU. Truth: CUDA-event time between step ends, compile
time (the first steps' wall time)."""
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(__file__))
from common import cuda_step_times, med, truth

STEPS = int(os.environ.get("STEPS", "80"))
m = torch.nn.Sequential(*[l for _ in range(16) for l in (torch.nn.Linear(512, 512), torch.nn.GELU())]).cuda()
opt = torch.optim.SGD(m.parameters(), lr=1e-3)
x = torch.randn(64, 512, device="cuda")
cm = torch.compile(lambda x: m(x).square().mean(), mode="reduce-overhead")
ev = []
t0 = time.perf_counter()
for i in range(STEPS):
    torch.compiler.cudagraph_mark_step_begin()
    loss = cm(x)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=False)
    e = torch.cuda.Event(enable_timing=True)
    e.record()
    ev.append(e)
    if i == 2:
        torch.cuda.synchronize()
        t_compile = time.perf_counter() - t0
ms = cuda_step_times(ev, 5)
truth(framework="torch.compile reduce-overhead", steps=STEPS, step_ms_median=med(ms),
      startup_s=t_compile, max_memory_allocated=torch.cuda.max_memory_allocated())
