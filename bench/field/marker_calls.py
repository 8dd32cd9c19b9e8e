"""The step marker's driver calls timed inside a PyTorch program (the seed MLP's step),
right after each optimizer step, where gpuprof places its marker: bench/marker_calls.cu
built as a library (LIB=path). Run without gpuprof, and under it (its own marker then
comes first). Prints each call's median and p95 in ns."""
import ctypes
import os
import statistics as st

import torch

lib = ctypes.CDLL(os.environ["LIB"])
STEPS = int(os.environ.get("STEPS", "600"))
torch.manual_seed(0)
layers = []
for _ in range(8):
    layers += [torch.nn.Linear(4096, 4096), torch.nn.GELU()]
m = torch.nn.Sequential(*layers).cuda().to(torch.bfloat16)
opt = torch.optim.Adam(m.parameters(), lr=1e-4)
x = torch.randn(64, 4096, device="cuda", dtype=torch.bfloat16)
out = (ctypes.c_ulonglong * 6)()
rows = []
for i in range(STEPS):
    loss = m(x).float().square().mean()
    loss.backward()
    opt.step()
    lib.marker_calls_once(out)
    opt.zero_grad(set_to_none=True)
    if i >= 20:
        rows.append(list(out))
names = ["cuCtxGetCurrent", "cuStreamIsCapturing(legacy)", "cuStreamIsCapturing(ptds)",
         "ExchangeCaptureMode x2", "cuEventRecord(legacy)", "all"]
for k, n in enumerate(names):
    v = sorted(r[k] for r in rows)
    print("inproc %-28s %6d %6d" % (n, st.median(v), v[len(v) * 95 // 100]))
torch.cuda.synchronize()
lib.marker_calls_run(0)
