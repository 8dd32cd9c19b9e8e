"""A torchvision ResNet-18 fed by a slow DataLoader (each sample costs 4 ms of "decoding",
2 workers, pin_memory=True): input-bound. Truth: the time the loop waits in next() per
step (perf_counter), the CUDA-event step time."""
import os
import sys
import time

import torch
import torchvision

sys.path.insert(0, os.path.dirname(__file__))
from common import cuda_step_times, med, truth

STEPS = int(os.environ.get("STEPS", "30"))


class Slow(torch.utils.data.Dataset):
    def __len__(self):
        return 100000

    def __getitem__(self, i):
        time.sleep(0.004)
        return torch.randn(3, 128, 128), i % 1000


m = torchvision.models.resnet18().cuda()
opt = torch.optim.SGD(m.parameters(), lr=0.01)
dl = torch.utils.data.DataLoader(Slow(), batch_size=32, num_workers=2, pin_memory=True)
it = iter(dl)
waits, ev = [], []
for i in range(STEPS):
    t0 = time.perf_counter()
    x, y = next(it)
    waits.append((time.perf_counter() - t0) * 1e3)
    x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
    loss = torch.nn.functional.cross_entropy(m(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    e = torch.cuda.Event(enable_timing=True)
    e.record()
    ev.append(e)
ms = cuda_step_times(ev, 3)
truth(framework="torchvision input-bound", steps=STEPS, step_ms_median=med(ms),
      data_wait_ms_median=med(waits[3:]), data_wait_ms_mean=sum(waits[3:]) / len(waits[3:]))
