"""The PyTorch integration's module ranges in capture windows (agent/python/_gpuprof_layers.py,
mode cuda without mode layers), against a stand-in for the injected library whose
collector traces kernels in steps WINDOW (switched, as the real one, at the end of an
optimizer step): ranges only in the traced steps; between windows no global module hook
left registered (the module call's fast path); none registered again once torch.compile
(TorchDynamo) has begun to compile (a real torch.compile where PyTorch has it); no hook
left on a Parameter a module was given (they are never freed); every range ended once
its window has, a forward that raised in it included. Prints one line per step and a
verdict.
usage: PY layers_window.py AGENT_PYTHON_DIR"""
import collections
import os
import sys
import types

sys.path.insert(0, sys.argv[1])
os.environ["GPUPROF_MODES"] = "timing,nvtx,cuda"
import _gpuprof as g  # noqa: E402
import _gpuprof_abi as gpa  # noqa: E402
import _gpuprof_torch as gpt  # noqa: E402
import _gpuprof_layers as gpl  # noqa: E402
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
    if kind == gpa.FW_OPT_END:
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
ended = set()
lib.gpuprof_fw_range_end = f(lambda i: ended.add(i))
gpa._c.lib = lib
g.ctx.modes = set(os.environ["GPUPROF_MODES"].split(","))
gpt._start(torch)

m = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
lat = torch.nn.Parameter(torch.randn(4, 8))  # a Parameter given to a module (latents)
proj = torch.nn.Linear(8, 8)
opt = torch.optim.SGD(list(m.parameters()) + list(proj.parameters()) + [lat], lr=0.1)
x = torch.randn(4, 8)
bad = []
for i in range(12):
    if i == 6:  # torch.compile has begun to compile from here on
        if hasattr(torch, "compile"):
            torch.compile(lambda t: t * 2, backend="eager")(torch.randn(2))
        else:
            u = types.ModuleType("torch._dynamo.utils")
            u.counters = collections.defaultdict(collections.Counter)
            u.counters["frames"]["total"] = 1
            sys.modules["torch._dynamo.utils"] = u
    n0 = len(state["names"])
    opt.zero_grad()
    if i == 4:  # a forward that raises inside the window (a bad batch, skipped)
        try:
            m(torch.randn(4, 7))
        except RuntimeError:
            pass
    (m(x).sum() + proj(lat).sum()).backward()
    opt.step()
    got = state["names"][n0:]
    hooks = len(mm._global_forward_pre_hooks) + len(mm._global_forward_hooks)
    traced = i in WINDOWS
    want = traced and i < 6
    print("step %d traced=%d ranges=%d hooks_after=%d %s" % (i, traced, len(got), hooks,
                                                             ",".join(sorted(set(got)))))
    if want and not {"Linear", "Linear backward", "ReLU", "ReLU backward", "Sequential",
                     "Sequential backward"} <= set(got):
        bad.append("step %d: ranges %s" % (i, got))
    if not want and got:
        bad.append("step %d: %d ranges outside a window" % (i, len(got)))
    if hooks and not (i + 1 in WINDOWS and i + 1 < 6):
        bad.append("step %d: %d global hooks left after it" % (i, hooks))
    if not hooks and set(range(1, state["next"] + 1)) - ended:
        bad.append("step %d: ranges %s still open after the window" % (
            i, sorted(set(range(1, state["next"] + 1)) - ended)))
# a process forked while a window's hooks are registered (a DataLoader worker running
# module transforms): the hooks gone there, no range of its, no attach
WINDOWS.add(state["ended"])  # a window again, before TorchDynamo was seen
g.ctx.dynamo_seen = False
gpl._active.windowed = True
u = sys.modules.get("torch._dynamo.utils")
if u is not None and not hasattr(torch, "compile"):
    del sys.modules["torch._dynamo.utils"]
gpl._layers_window()
if hasattr(os, "fork") and gpl._active.handles is not None and not gpl._compiled():
    n0 = len(state["names"])
    pid = os.fork()
    if pid == 0:
        m(x)
        hooks = len(mm._global_forward_pre_hooks) + len(mm._global_forward_hooks)
        os._exit(0 if not hooks and len(state["names"]) == n0 and not gpa._c.attached else 1)
    _, status = os.waitpid(pid, 0)
    if status:
        bad.append("a forked child kept the hooks or recorded a range (status %d)" % status)
    gpl._layers_unregister()
left = len(getattr(lat, "_backward_hooks", None) or {})
if left:
    bad.append("%d hooks left on a Parameter given to a module" % left)
print("OK" if not bad else "BAD " + "; ".join(bad))
