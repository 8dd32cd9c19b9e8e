"""(a) Gradient accumulation: a small pre-norm Transformer LM (4 layers, d=512), fp16
autocast with GradScaler, 4 micro-batches of forward/backward per optimizer step, grad
clipping, AdamW; STEPS optimizer steps (150). No NVTX, no synchronisation in the loop.
Truth: CUDA-event times between optimizer-step ends (the step a user means), the
micro-batch times inside steps, GradScaler's skipped steps (optimizer.step() not called:
inf/nan grads), max_memory_allocated/reserved."""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fcommon import intervals, med, summary, truth

STEPS = int(os.environ.get("STEPS", "150"))
ACC = 4
WARM = 5
D, L, S, B, V = 512, 4, 256, 16, 8192
torch.manual_seed(0)


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, D)
        layer = nn.TransformerEncoderLayer(D, 8, 4 * D, dropout=0.0, batch_first=True, norm_first=True)
        self.enc = nn.TransformerEncoder(layer, L, enable_nested_tensor=False)
        self.head = nn.Linear(D, V)

    def forward(self, x):
        return self.head(self.enc(self.emb(x)))


m = LM().cuda()
opt = torch.optim.AdamW(m.parameters(), lr=3e-4, weight_decay=0.01)
scaler = torch.amp.GradScaler("cuda")
data = torch.randint(0, V, (32, B, S + 1), device="cuda")
step_ev, micro_ev, scales = [], [], []
for step in range(STEPS):
    for k in range(ACC):
        batch = data[(step * ACC + k) % data.shape[0]]
        x, y = batch[:, :-1], batch[:, 1:]
        with torch.autocast("cuda", dtype=torch.float16):
            logits = m(x)
        loss = F.cross_entropy(logits.float().reshape(-1, V), y.reshape(-1)) / ACC
        scaler.scale(loss).backward()
        e = torch.cuda.Event(enable_timing=True)
        e.record()
        micro_ev.append(e)
    scaler.unscale_(opt)
    torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
    scaler.step(opt)
    scaler.update()
    opt.zero_grad(set_to_none=True)
    scales.append(scaler._scale.detach().clone())
    e = torch.cuda.Event(enable_timing=True)
    e.record()
    step_ev.append(e)
torch.cuda.synchronize()
step_ms = intervals(step_ev)
# micro-batch times inside a step: micro k-1 end -> micro k end, k = 1..3 (the first
# micro-batch of a step starts at the previous step's end, after the optimizer)
micro_ms = [micro_ev[i - 1].elapsed_time(micro_ev[i]) for i in range(len(micro_ev)) if i % ACC != 0]
micro_ms = micro_ms[WARM * (ACC - 1):]
# optimizer part: last micro end -> step end
opt_ms = [micro_ev[s * ACC + ACC - 1].elapsed_time(step_ev[s]) for s in range(WARM, STEPS)]
sc = [float(t.item()) for t in scales]
skipped = [i for i in range(STEPS) if sc[i] < (sc[i - 1] if i else 65536.0)]
print("DONE a_grad_accum steps=%d final_loss_finite=%s" % (STEPS, bool(torch.isfinite(loss).item())))
truth(program="a_grad_accum", optimizer_steps_loop=STEPS, micro_batches=STEPS * ACC, accum=ACC,
      gradscaler_skipped_iterations=skipped, optimizer_step_calls=STEPS - len(skipped),
      step_ms=summary(step_ms, WARM - 1), micro_ms_median=med(micro_ms), optimizer_part_ms_median=med(opt_ms),
      step_ms_all=[round(v, 3) for v in step_ms],
      max_memory_allocated=torch.cuda.max_memory_allocated(), max_memory_reserved=torch.cuda.max_memory_reserved(),
      memory_allocated_end=torch.cuda.memory_allocated())
