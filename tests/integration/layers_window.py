"""The PyTorch integration's module ranges in capture windows (agent/python/_gpuprof.py,
mode cuda without mode layers), against a stand-in for the injected library whose
collector traces kernels in steps WINDOW (switched, as the real one, at the end of an
optimizer step): ranges only in the traced steps; between windows no global module hook
left registered (the module call's fast path); none registered again once torch.compile
(TorchDynamo) has compiled a frame. Prints one line per step and a verdict.
usage: PY layers_window.py AGENT_PYTHON_DIR"""
import collections
import os
import sys
import types

sys.path.insert(0, sys.argv[1])
os.environ["GPUPROF_MODES"] = "timing,nvtx,cuda"
import _gpuprof as g  # noqa: E402
import torch  # noqa: E402
from torch.nn.modules import module as mm  # noqa: E402

if not hasattr(mm, "register_module_forward_pre_hook"):
    print("SKIP no global module hooks in this PyTorch")
    sys.exit(0)

WINDOWS = {3, 4, 8, 9}  # the steps (0-based) whose kernels the collector traces
state = {"ended": 0, "names": [], "next": 0}


def f(fn):  # ctypes functions take attributes (restype ...): so do plain functions
    return fn


lib = types.SimpleNamespace()
lib.gpuprof_fw_attach = f(lambda: 1)
lib.gpuprof_fw_rank_file = f(lambda: None)


def event(kind, dev, a, c, d, text):
    if kind == g._OPT_END:
        state["ended"] += 1  # the next step begins: the collector switches here


def tracing():
    return 1 if state["ended"] in WINDOWS else 0


def start(name):
    state["next"] += 1
    state["names"].append(name.decode())
    return state["next"]


lib.gpuprof_fw_event = f(event)
lib.gpuprof_fw_tracing = f(tracing)
lib.gpuprof_fw_range_start = f(start)
lib.gpuprof_fw_range_end = f(lambda i: None)
g._s.lib = lib
g._s.modes = set(os.environ["GPUPROF_MODES"].split(","))
g._start(torch)

m = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
opt = torch.optim.SGD(m.parameters(), lr=0.1)
x = torch.randn(4, 8)
bad = []
for i in range(12):
    if i == 6:  # torch.compile has compiled a frame from here on (its own counters)
        u = sys.modules.get("torch._dynamo.utils")
        if u is None:
            u = types.ModuleType("torch._dynamo.utils")
            u.counters = collections.defaultdict(collections.Counter)
            sys.modules["torch._dynamo.utils"] = u
        u.counters["frames"]["total"] += 1
    n0 = len(state["names"])
    opt.zero_grad()
    m(x).sum().backward()
    opt.step()
    got = state["names"][n0:]
    hooks = len(mm._global_forward_pre_hooks) + len(mm._global_forward_hooks)
    traced = i in WINDOWS
    want = traced and i < 6
    print("step %d traced=%d ranges=%d hooks_after=%d %s" % (i, traced, len(got), hooks,
                                                             ",".join(sorted(set(got)))))
    if want and sorted(set(got)) != ["Linear", "Linear backward", "ReLU", "ReLU backward",
                                     "Sequential", "Sequential backward"]:
        bad.append("step %d: ranges %s" % (i, got))
    if not want and got:
        bad.append("step %d: %d ranges outside a window" % (i, len(got)))
    if hooks and not (i + 1 in WINDOWS and i + 1 < 6):
        bad.append("step %d: %d global hooks left after it" % (i, hooks))
print("OK" if not bad else "BAD " + "; ".join(bad))
