"""torch.profiler over steps 100-139 of a seed-like MLP run (8 x Linear(2048), batch 64,
bf16, Adam), for what gpuprof's capture windows and its detaching of CUPTI between them do
to a profiler the program runs itself. Prints KINETO with the CUDA kernels the profiler
recorded, and TRUTH (CUDA-event step times). PER_STEP=1 also prints, for each profiled step,
the kernel launches the profiler saw on the host and how many of them have their kernel
(PERSTEP), and each step's start on CLOCK_MONOTONIC (STEPTS), to lay beside gpuprof's own
records of its windows and detaches."""
import json
import os
import sys
import time

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
PER_STEP = os.environ.get("PER_STEP") == "1"
ev = []
starts = []
prof = None
for i in range(STEPS):
    starts.append(time.monotonic_ns())
    if i == 100:
        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        prof.__enter__()
    rf = torch.profiler.record_function("step%d" % i) if PER_STEP and prof and i < 140 else None
    if rf:
        rf.__enter__()
    loss = m(x).float().square().mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    e = torch.cuda.Event(enable_timing=True)
    e.record()
    ev.append(e)
    if rf:
        rf.__exit__(None, None, None)
    if i == 139:
        torch.cuda.synchronize()
        prof.__exit__(None, None, None)
kernels = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
print("KINETO kernels %d (40 steps)" % kernels, flush=True)
if PER_STEP:
    path = "/tmp/profiler_mid.%d.json" % os.getpid()
    prof.export_chrome_trace(path)
    tr = json.load(open(path))["traceEvents"]
    os.unlink(path)
    kern = {e["args"].get("correlation") for e in tr if e.get("cat") == "kernel"}
    steps = sorted((e["ts"], e["ts"] + e["dur"], e["name"]) for e in tr
                   if e.get("cat") == "user_annotation" and e["name"].startswith("step"))
    launches = [(e["ts"], e["args"].get("correlation")) for e in tr
                if e.get("cat") in ("cuda_runtime", "cuda_driver") and "aunch" in e["name"]]
    row = []
    for t0, t1, name in steps:
        mine = [c for t, c in launches if t0 <= t < t1]
        row.append("%s:%d/%d" % (name[4:], sum(c in kern for c in mine), len(mine)))
    print("PERSTEP kept/launched " + " ".join(row), flush=True)
    print("STEPTS " + " ".join("%d:%d" % (i, t) for i, t in enumerate(starts) if 40 <= i < 200),
          flush=True)
ms = cuda_step_times(ev, 5)
truth(framework="profiler mid", steps=STEPS, step_ms_median=med(ms))
