"""torch.compile's first compilation inside a step that has operation ranges
(agent/python/_gpuprof_ops.py): TorchDynamo then traces with the integration's
torch-function mode on the stack. A program's fullgraph=True compile must still succeed,
its result equal the eager one, and no range be made inside the compiled graph; the mode
is gone after the step. Prints a verdict.
usage: PY ops_compile.py AGENT_PYTHON_DIR [BACKEND]   (BACKEND: eager (default), inductor)"""
import os
import sys

sys.path.insert(0, sys.argv[1])
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
BACKEND = sys.argv[2] if len(sys.argv) > 2 else "eager"
os.environ["GPUPROF_MODES"] = "timing,nvtx,cuda"
os.environ["GPUPROF_TORCH_LAYERS"] = "0"
os.environ["GPUPROF_WARMUP_STEPS"] = "1"
import _gpuprof_abi as gpa  # noqa: E402
import standin_lib  # noqa: E402
import torch  # noqa: E402
import torch.overrides as ov  # noqa: E402

if not hasattr(torch, "compile") or not hasattr(ov, "TorchFunctionMode"):
    print("SKIP no torch.compile or no torch-function modes in this PyTorch")
    sys.exit(0)

steps = {"ended": 0}


def event(kind, dev, a, c, d, text):
    if kind == gpa.FW_OPT_END:
        steps["ended"] += 1
    return 1 if kind == gpa.FW_OPT_END else 0  # every step traced


lib, state = standin_lib.install(lambda: 1, event)

torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
opt = torch.optim.SGD(m.parameters(), lr=0.0)  # lr 0: eager and compiled see one model
x = torch.randn(32, 8)


def loss_of(model, t):
    return torch.nn.functional.mse_loss(model(t), torch.zeros(32, 4))


bad = []
compiled = None
for i in range(6):
    opt.zero_grad()
    if i == 3:  # a covered step (the warm-up is 1 step): the first compile happens here
        modes_before = len(ov._get_current_function_mode_stack())
        if not modes_before:
            bad.append("no mode pushed in step 3: the test covers nothing")
        try:
            compiled = torch.compile(loss_of, fullgraph=True, backend=BACKEND)
            n0 = len(state["names"])
            got = compiled(m, x)
            inside = state["names"][n0:]
            if inside:
                bad.append("ranges made inside the compiled call: %s" % inside[:5])
            want = loss_of(m, x)
            if not torch.allclose(got, want):
                bad.append("compiled %r != eager %r" % (got.item(), want.item()))
        except Exception as e:
            bad.append("fullgraph compile raised %s: %s" % (type(e).__name__, str(e)[:300]))
    loss = loss_of(m, x)
    loss.backward()
    opt.step()
modes = len(ov._get_current_function_mode_stack())
if modes:
    bad.append("%d torch-function modes left after the steps" % modes)
if state["open"]:
    bad.append("ranges left open: %s" % sorted(state["open"]))
if compiled is not None:  # compiled again, the mode gone: still the eager result
    try:
        if not torch.allclose(compiled(m, x), loss_of(m, x)):
            bad.append("the compiled function's later result differs")
    except Exception as e:
        bad.append("the compiled function failed later: %s" % e)
print("OK (%s; mode on the stack at the compile: %d)" % (BACKEND, modes_before)
      if not bad else "BAD " + "; ".join(bad))
