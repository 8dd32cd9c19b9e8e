"""A loop that keeps each step's 1 MiB output (preds.append(out)): a leak of 1 MiB per step
at the line below. Truth: allocated bytes after each step (PyTorch's counter), the line."""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from common import truth

STEPS = int(os.environ.get("STEPS", "60"))
m = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024)).cuda()
opt = torch.optim.Adam(m.parameters(), lr=1e-3)
x = torch.randn(256, 1024, device="cuda")
preds, alloc = [], []
for i in range(STEPS):
    out = m(x)
    loss = out.square().mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
    preds.append(out.detach())  # LEAK_LINE
    alloc.append(torch.cuda.memory_allocated())
line = [n for n, l in enumerate(open(__file__), 1) if "LEAK_" + "LINE" in l][0]
truth(framework="leak", steps=STEPS, growth_bytes_per_step=(alloc[-1] - alloc[10]) / (STEPS - 1 - 10),
      leak_line="leak.py:%d" % line, max_memory_allocated=torch.cuda.max_memory_allocated())
