"""A loop that keeps each step's 5 GiB input until the device runs out: the OOM's holder is
the line that keeps it (keep.append(x)), the tensor made one line above. Truth: PyTorch's
failed request, the lines."""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from common import truth

m = torch.nn.Linear(4096, 4096).cuda()
keep = []
lines = {k: [n for n, l in enumerate(open(__file__), 1) if k + "_LINE" in l][0] for k in ("MAKE", "KEEP")}
try:
    for i in range(1000):
        x = torch.empty(5 << 30, dtype=torch.uint8, device="cuda")  # MAKE_LINE
        keep.append(x)  # KEEP_LINE
        m(torch.randn(64, 4096, device="cuda")).sum().item()
except torch.OutOfMemoryError as e:
    truth(framework="oom", kept=len(keep), requested=5 << 30, make_line="oom.py:%d" % lines["MAKE"],
          keep_line="oom.py:%d" % lines["KEEP"], allocated=torch.cuda.memory_allocated())
    raise
