"""(b) Inference only: torchvision ResNet-50, fp16, channels_last, batch 32 of 160x160,
under torch.inference_mode(), ITERS iterations (500), no optimizer anywhere. Each
iteration is one NVTX range "batch" (depth 0) with "forward" and "postprocess" inside it;
a one-off depth-0 range "warmup" holds 10 warm-up iterations (cudnn.benchmark). Every
50 iterations the accumulated top-1 predictions are fetched to the host (.cpu(): a sync),
as a serving loop hands its results on. NVTX=0 runs the same with no NVTX at all.
Truth: CUDA-event time between iteration ends, the iteration count, memory."""
import os
import sys
import time

import torch
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fcommon import intervals, summary, truth

ITERS = int(os.environ.get("ITERS", "500"))
NVTX = os.environ.get("NVTX", "1") == "1"
WARM = 5
torch.backends.cudnn.benchmark = True
torch.manual_seed(0)


def push(name):
    if NVTX:
        torch.cuda.nvtx.range_push(name)


def pop():
    if NVTX:
        torch.cuda.nvtx.range_pop()


m = torchvision.models.resnet50().cuda().half().eval().to(memory_format=torch.channels_last)
inputs = [torch.randn(32, 3, 160, 160, device="cuda").half().to(memory_format=torch.channels_last) for _ in range(4)]
ev, fetched, host_fetch_ms = [], 0, []
with torch.inference_mode():
    push("warmup")
    for i in range(10):
        m(inputs[i % 4])
    torch.cuda.synchronize()
    pop()
    preds = []
    for i in range(ITERS):
        push("batch")
        x = inputs[i % 4]
        push("forward")
        logits = m(x)
        pop()
        push("postprocess")
        prob = torch.softmax(logits.float(), dim=1)
        conf, top1 = prob.max(dim=1)
        preds.append(torch.where(conf > 0.0, top1, -1))
        if len(preds) == 50:
            t0 = time.perf_counter()
            out = torch.cat(preds).cpu()
            host_fetch_ms.append((time.perf_counter() - t0) * 1e3)
            fetched += out.numel()
            preds = []
        pop()
        e = torch.cuda.Event(enable_timing=True)
        e.record()
        ev.append(e)
        pop()
torch.cuda.synchronize()
ms = intervals(ev)
print("DONE b_infer iters=%d fetched=%d nvtx=%d" % (ITERS, fetched, NVTX))
truth(program="b_infer", nvtx=NVTX, iterations=ITERS, warmup_iterations_outside_loop=10,
      iter_ms=summary(ms, WARM - 1), iter_ms_all=[round(v, 3) for v in ms], host_syncs=len(host_fetch_ms),
      host_fetch_ms_median=round(sorted(host_fetch_ms)[len(host_fetch_ms) // 2], 3) if host_fetch_ms else None,
      max_memory_allocated=torch.cuda.max_memory_allocated(), max_memory_reserved=torch.cuda.max_memory_reserved(),
      memory_allocated_end=torch.cuda.memory_allocated())
