"""(d) Memory-shaped training loop: a token MLP (4 residual blocks, d=1024, hidden 4096,
bf16 autocast, AdamW) whose sequence length grows from 256 to 2048 over the first
GROW steps (28; activations grow with it), then stays at 2048. During steps
LEAK_FROM..LEAK_FROM+19 (60..79) the loop keeps a 50 MiB tensor per step in a Python list
(a deliberate leak of 20 x 50 MiB = 1000 MiB), released (list cleared) at step RELEASE
(100). STEPS=140. Truth: memory_allocated after every step, max_memory_allocated and the
step it was reached in, memory_allocated at the end, the leaked bytes and their line."""
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fcommon import intervals, summary, truth

STEPS = int(os.environ.get("STEPS", "140"))
GROW, LEAK_FROM, LEAK_N, RELEASE = 28, 60, 20, 100
LEAK_BYTES = 50 << 20
WARM = 5
D, H, NB, B = 1024, 4096, 4, 4
torch.backends.cuda.matmul.allow_tf32 = True
torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(D)
        self.up = nn.Linear(D, H)
        self.down = nn.Linear(H, D)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(self.ln(x))))


m = nn.Sequential(*[Block() for _ in range(NB)], nn.Linear(D, D)).cuda()
opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
kept = []
ev, alloc_after, maxalloc_after, seqs = [], [], [], []
for step in range(STEPS):
    seq = min(2048, 256 + 64 * step) if step < GROW else 2048
    seqs.append(seq)
    x = torch.randn(B, seq, D, device="cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        out = m(x)
    loss = out.float().square().mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    if LEAK_FROM <= step < LEAK_FROM + LEAK_N:
        kept.append(torch.randn(LEAK_BYTES // 4, device="cuda"))  # LEAK_LINE
    if step == RELEASE:
        kept.clear()
    e = torch.cuda.Event(enable_timing=True)
    e.record()
    ev.append(e)
    alloc_after.append(torch.cuda.memory_allocated())
    maxalloc_after.append(torch.cuda.max_memory_allocated())
torch.cuda.synchronize()
ms = intervals(ev)
peak = torch.cuda.max_memory_allocated()
peak_step = min(i for i in range(STEPS) if maxalloc_after[i] == peak)
line = [n for n, l in enumerate(open(__file__), 1) if "LEAK_" + "LINE" in l][0]
MiB = 1 << 20
print("DONE d_mem_shape steps=%d" % STEPS)
truth(program="d_mem_shape", steps=STEPS, step_ms=summary(ms, WARM - 1),
      seq_by_step=seqs[:GROW + 1], grow_steps=GROW, leak_steps=[LEAK_FROM, LEAK_FROM + LEAK_N - 1],
      leak_bytes_per_step=LEAK_BYTES, leak_bytes_total=LEAK_BYTES * LEAK_N, released_at_step=RELEASE,
      leak_line="d_mem_shape.py:%d" % line,
      max_memory_allocated=peak, max_memory_allocated_MiB=round(peak / MiB, 1), peak_step=peak_step,
      max_memory_reserved=torch.cuda.max_memory_reserved(),
      memory_allocated_end=torch.cuda.memory_allocated(), memory_allocated_end_MiB=round(torch.cuda.memory_allocated() / MiB, 1),
      memory_reserved_end=torch.cuda.memory_reserved(),
      alloc_after_step_MiB={i: round(alloc_after[i] / MiB, 1) for i in
                            [0, 1, 2, 3, 5, 10, 20, 27, 28, 30, 40, 59, 60, 65, 70, 79, 80, 99, 100, 101, 120, STEPS - 1]},
      growth_MiB_per_step_30_to_end=round((alloc_after[-1] - alloc_after[30]) / (STEPS - 1 - 30) / MiB, 3),
      growth_MiB_per_step_leak_phase=round((alloc_after[LEAK_FROM + LEAK_N - 1] - alloc_after[LEAK_FROM - 1]) / LEAK_N / MiB, 3))
