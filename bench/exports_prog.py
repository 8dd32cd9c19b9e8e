"""A small PyTorch training loop for bench/gpu-exports.sh: the same steps run under gpuprof
(its Kineto export) and, with KINETO_TRACE set, alone under torch.profiler for PROF_STEPS
steps after WARM steps, whose own Kineto trace (export_chrome_trace) is the truth the
export's launch configurations are held to. No NVTX: gpuprof finds the steps from
optimizer.step(). Environment: STEPS (40), DIM (1024), BATCH (256), WARM (10),
PROF_STEPS (5), KINETO_TRACE."""
import os

import torch

STEPS = int(os.environ.get("STEPS", "40"))
D, B = int(os.environ.get("DIM", "1024")), int(os.environ.get("BATCH", "256"))
WARM, PROF_STEPS = int(os.environ.get("WARM", "10")), int(os.environ.get("PROF_STEPS", "5"))
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(D, D), torch.nn.GELU(), torch.nn.Linear(D, D),
                            torch.nn.LayerNorm(D)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=1e-4, momentum=0.9)
host = torch.randn(B, D).pin_memory()


def step():
    x = host.cuda(non_blocking=True)
    opt.zero_grad(set_to_none=True)
    loss = model(x).float().pow(2).mean()
    loss.backward()
    opt.step()


def main():
    trace = os.environ.get("KINETO_TRACE")
    prof = None
    for i in range(STEPS):
        if trace and i == WARM:
            torch.cuda.synchronize()
            prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                      torch.profiler.ProfilerActivity.CUDA])
            prof.__enter__()
        step()
        if prof is not None and i == WARM + PROF_STEPS - 1:
            torch.cuda.synchronize()
            prof.__exit__(None, None, None)
            prof.export_chrome_trace(trace)
            prof = None
    torch.cuda.synchronize()
    print("exports_prog: %d steps, dim %d, batch %d" % (STEPS, D, B))


main()
