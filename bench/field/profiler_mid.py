"""torch.profiler over steps 100-139 of a seed-like MLP run (8 x Linear(2048), batch 64,
bf16, Adam), for what gpuprof's capture windows and its detaching of CUPTI between them do
to a profiler the program runs itself. Prints KINETO with the CUDA kernels the profiler
recorded, and TRUTH (CUDA-event step times)."""
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(__file__))
from common import cuda_step_times, med, truth

STEPS = int(os.environ.get("STEPS", "300"))
torch.manual_seed(0)
layers = []
for _ in range(8):
    layers += [torch.nn.Linear(2048, 2048), torch.nn.GELU()]
m = torch.nn.Sequential(*layers).cuda().to(torch.bfloat16)
opt = torch.optim.Adam(m.parameters(), lr=1e-4)
x = torch.randn(64, 2048, device="cuda", dtype=torch.bfloat16)
ev = []
prof = None
for i in range(STEPS):
    if i == 100:
        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        prof.__enter__()
    loss = m(x).float().square().mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    e = torch.cuda.Event(enable_timing=True)
    e.record()
    ev.append(e)
    if i == 139:
        torch.cuda.synchronize()
        prof.__exit__(None, None, None)
kernels = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
print("KINETO kernels %d (40 steps)" % kernels, flush=True)
ms = cuda_step_times(ev, 5)
truth(framework="profiler mid", steps=STEPS, step_ms_median=med(ms))
