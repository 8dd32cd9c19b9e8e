"""Ground truth for the report's own_cost (gpuprof's own time on the program's thread):
the seed MLP's step (or BIG=1's GEMM step) with the PyTorch integration's global optimizer
hooks taken out and put back in alternate blocks of BLOCK steps of one process, after the
first capture window (steps 0-AB_FROM). The program times every step itself (CUDA events
between step ends) and prints the median step with the hooks in, without them, and their
difference: what the hooks cost this loop, all effects included, against the report's
figure. Without the hooks gpuprof sees no step, so run it with a single window
(GPUPROF_CAPTURE=sampled=20/100000: the first window, then none): the steady state between
windows is the default's. PyTorch 2 (global hooks). AA=1: the hooks stay in through every
block (the same bookkeeping), so hooks_us is the method's own floor: what two sets of
blocks of one loop differ by when nothing differs."""
import os
import sys

import torch
import torch.optim.optimizer as om

sys.path.insert(0, os.path.dirname(__file__))
from common import med, truth

STEPS = int(os.environ.get("STEPS", "1200"))
BLOCK = int(os.environ.get("BLOCK", "25"))
AB_FROM = int(os.environ.get("AB_FROM", "100"))
big = os.environ.get("BIG") == "1"
aa = os.environ.get("AA") == "1"
dim, batch = (8192, 8192) if big else (4096, 64)
torch.manual_seed(0)
layers = []
for _ in range(8):
    layers += [torch.nn.Linear(dim, dim), torch.nn.GELU()]
m = torch.nn.Sequential(*layers).cuda().to(torch.bfloat16)
opt = torch.optim.Adam(m.parameters(), lr=1e-4)
x = torch.randn(batch, dim, device="cuda", dtype=torch.bfloat16)
pre, post = om._global_optimizer_pre_hooks, om._global_optimizer_post_hooks
saved = (dict(pre), dict(post))
gp = sys.modules.get("_gpuprof")
ev, hooked = [], []
own0 = own_on = 0
for i in range(STEPS):
    on = i < AB_FROM or ((i - AB_FROM) // BLOCK) % 2 == 0
    if on and not pre:
        pre.update(saved[0])
        post.update(saved[1])
    elif not on and pre and not aa:
        pre.clear()
        post.clear()
    own0 = gp.ctx.own_ns if gp else 0
    loss = m(x).float().square().mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    e = torch.cuda.Event(enable_timing=True)
    e.record()
    ev.append(e)
    hooked.append(on)
    if on and i >= AB_FROM + 1 and gp:
        own_on += gp.ctx.own_ns - own0
pre.update(saved[0])
post.update(saved[1])
torch.cuda.synchronize()
# step i's time: end of step i-1 to end of step i; a block's first step is left out
# (its predecessor ran the other way)
on_ms, off_ms = [], []
for i in range(AB_FROM + 1, STEPS):
    if hooked[i] != hooked[i - 1]:
        continue
    (on_ms if hooked[i] else off_ms).append(ev[i - 1].elapsed_time(ev[i]))
n_on = sum(1 for i in range(AB_FROM + 1, STEPS) if hooked[i])
truth(framework="seed mlp hooks " + ("a/a" if aa else "a/b") + (" big" if big else ""), steps=STEPS, block=BLOCK,
      on_ms_median=round(med(on_ms), 5), off_ms_median=round(med(off_ms), 5),
      hooks_us=round((med(on_ms) - med(off_ms)) * 1000, 2),
      own_us_mean_on=round(own_on / n_on / 1000, 2) if n_on else None,
      n_on=len(on_ms), n_off=len(off_ms))
