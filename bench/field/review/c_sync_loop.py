"""(c) A training loop with host syncs and a slow CPU-side data step: each step builds its
batch on the CPU (torch.randn + per-row normalisation + 4 ms of simulated decoding),
copies it with .cuda() from pageable memory, runs an fp32 MLP (2048-8192-8192-2048-1000)
forward/backward with SGD+momentum, logs loss.item() every step (a host sync) and calls
torch.cuda.synchronize() every 10 steps. No NVTX, no DataLoader.
Truth: CUDA-event time between step ends; per step the host's time building the batch,
in .item() and in synchronize() (time.perf_counter).
PIN=1: the batch pinned and copied with non_blocking=True (no pageable copy); TF32=1:
torch.backends.cuda.matmul.allow_tf32 (the GEMMs on tensor cores) - the expert rules'
must-nots (bench/gpu-rules.sh)."""
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fcommon import intervals, med, summary, truth

STEPS = int(os.environ.get("STEPS", "150"))
PIN = os.environ.get("PIN") == "1"
TF32 = os.environ.get("TF32") == "1"
torch.backends.cuda.matmul.allow_tf32 = TF32
WARM = 5
B, DIN = 512, 2048
torch.manual_seed(0)
m = nn.Sequential(nn.Linear(DIN, 8192), nn.ReLU(), nn.Linear(8192, 8192), nn.ReLU(),
                  nn.Linear(8192, 2048), nn.ReLU(), nn.Linear(2048, 1000)).cuda()
opt = torch.optim.SGD(m.parameters(), lr=1e-3, momentum=0.9)


def make_batch():
    x = torch.randn(B, DIN)
    x = (x - x.mean(1, keepdim=True)) / (x.std(1, keepdim=True) + 1e-5)
    time.sleep(0.004)  # decoding / augmentation
    y = torch.randint(0, 1000, (B,))
    if PIN:
        return x.pin_memory().cuda(non_blocking=True), y.pin_memory().cuda(non_blocking=True)
    return x.cuda(), y.cuda()  # pageable memory: no pin_memory


ev, data_ms, item_ms, sync_ms, step_wall_ms, losses = [], [], [], [], [], []
for step in range(STEPS):
    t_step = time.perf_counter()
    t0 = time.perf_counter()
    x, y = make_batch()
    data_ms.append((time.perf_counter() - t0) * 1e3)
    loss = F.cross_entropy(m(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    e = torch.cuda.Event(enable_timing=True)
    e.record()
    ev.append(e)
    t0 = time.perf_counter()
    losses.append(loss.item())
    item_ms.append((time.perf_counter() - t0) * 1e3)
    if step % 10 == 9:
        t0 = time.perf_counter()
        torch.cuda.synchronize()
        sync_ms.append((time.perf_counter() - t0) * 1e3)
    step_wall_ms.append((time.perf_counter() - t_step) * 1e3)
torch.cuda.synchronize()
ms = intervals(ev)
w = slice(WARM, None)
ITEM_PINNED = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 5)
print("DONE c_sync_loop steps=%d loss_first=%.4f" % (STEPS, losses[0]))
truth(program="c_sync_loop", steps=STEPS, step_ms=summary(ms, WARM - 1), step_ms_all=[round(v, 3) for v in ms],
      host_step_wall_ms_median=med(step_wall_ms[w]), data_ms_median=med(data_ms[w]),
      item_wait_ms_median=med(item_ms[w]), item_wait_ms_mean=round(sum(item_ms[w]) / len(item_ms[w]), 4),
      item_wait_share_of_step=round(med(item_ms[w]) / med(ms[WARM - 1:]), 4),
      data_share_of_step=round(med(data_ms[w]) / med(ms[WARM - 1:]), 4),
      sync_calls=len(sync_ms), sync_ms_median=med(sync_ms), item_calls=STEPS,
      # loss.item(): 4 bytes into a pageable stack variable up to PyTorch 2.4; from 2.5
      # into a pinned buffer (aten/src/ATen/native/cuda/CUDAScalar.cu, "avoid implicit
      # locking/sync ... due to pageable memory"; CUPTI's memory kinds on 2.11 say pinned)
      pinned=PIN, tf32=TF32, item_pinned=ITEM_PINNED,
      pageable_copies_per_step=(0 if ITEM_PINNED else 1) + (0 if PIN else 2),
      pageable_bytes_per_step=(0 if ITEM_PINNED else 4) + (0 if PIN else B * DIN * 4 + B * 8),
      max_memory_allocated=torch.cuda.max_memory_allocated(), max_memory_reserved=torch.cuda.max_memory_reserved(),
      memory_allocated_end=torch.cuda.memory_allocated())
