"""The PyTorch integration's operation ranges in capture windows (agent/python/_gpuprof_ops.py,
mode cuda), against a stand-in for the injected library whose collector traces kernels in
steps WINDOW (switched, as the real one, at the end of an optimizer step): in the traced
steps each torch call of this file gets a range named by its line here, and its backward a
range on the same line; between windows no torch-function mode is left on the stack (the
calls pay nothing) and no range is made; none once torch.compile (TorchDynamo) has begun;
a forked child keeps no mode; every range is ended; a backward pass that raises leaves the
program's exception as it was. Prints one line per step and a verdict.
usage: PY ops_window.py AGENT_PYTHON_DIR"""
import collections
import os
import sys
import types

sys.path.insert(0, sys.argv[1])
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ["GPUPROF_MODES"] = "timing,nvtx,cuda"
os.environ["GPUPROF_TORCH_LAYERS"] = "0"
os.environ["GPUPROF_WARMUP_STEPS"] = "3"
import _gpuprof as g  # noqa: E402
import _gpuprof_abi as gpa  # noqa: E402
import _gpuprof_steps as gps  # noqa: E402
import _gpuprof_layers as gpl  # noqa: E402
import standin_lib  # noqa: E402
import torch  # noqa: E402
import torch.overrides as ov  # noqa: E402

if not hasattr(ov, "TorchFunctionMode") or not hasattr(ov, "_get_current_function_mode_stack"):
    print("SKIP no torch-function modes in this PyTorch")
    sys.exit(0)

# the steps (0-based) whose kernels the collector traces: a window that begins in the
# warm-up, then one longer than the STEPS steps with operation ranges, then one after
# torch.compile began (step COMPILE)
WINDOWS = {1, 2, 3, 4} | set(range(8, 16)) | {18, 19}
WARM = 3  # the warm-up's steps (GPUPROF_WARMUP_STEPS): none of them has ranges
COMPILE = 17
steps = {"ended": 0}  # optimizer steps ended


def event(kind, dev, a, c, d, text):
    if kind == gpa.FW_OPT_END:
        steps["ended"] += 1  # the next step begins: the collector switches here
    return tracing() if kind == gpa.FW_OPT_END else 0


def tracing():
    return 1 if steps["ended"] in WINDOWS else 0


lib, state = standin_lib.install(tracing, event)

m = torch.nn.Linear(8, 4)
opt = torch.optim.SGD(m.parameters(), lr=0.1)
x = torch.randn(16, 8)
LINE = {}


def here(tag):
    LINE[tag] = sys._getframe(1).f_lineno + 1


def step(i):
    opt.zero_grad()
    here("linear")
    h = m(x)
    here("relu")
    h = torch.relu(h)
    here("sum")
    loss = (h * h).sum()
    here("backward")
    loss.backward()
    here("step")
    opt.step()


me = sys._getframe().f_code.co_filename  # as the integration names it: from the cwd
if me.startswith(os.getcwd().rstrip("/") + "/"):
    me = me[len(os.getcwd().rstrip("/")) + 1:]


def want(i):
    n = {"linear": "linear", "relu": "relu", "sum": "sum"}
    w = {"%s @ %s:%d (step)" % (op, me, LINE[k]) for k, op in n.items()}
    w |= {"%s backward @ %s:%d (step)" % (op, me, LINE[k]) for k, op in n.items()}
    w.add("backward @ %s:%d (step)" % (me, LINE["backward"]))
    return w


bad = []

def covered(i):
    """Operation ranges in step i: the window's first STEPS steps, before torch.compile."""
    if i not in WINDOWS or i >= COMPILE or i < WARM:
        return False
    first = min(j for j in range(i, -1, -1) if all(k in WINDOWS for k in range(j, i + 1)))
    return i - max(first, WARM) < g.ctx.ops.STEPS


for i in range(20):
    if i == COMPILE:  # torch.compile has begun to compile from here on
        if hasattr(torch, "compile"):
            torch.compile(lambda t: t * 2, backend="eager")(torch.randn(2))
        else:
            u = types.ModuleType("torch._dynamo.utils")
            u.counters = collections.defaultdict(collections.Counter)
            u.counters["frames"]["total"] = 1
            sys.modules["torch._dynamo.utils"] = u
    n0 = len(state["names"])
    step(i)
    got = state["names"][n0:]
    modes = len(ov._get_current_function_mode_stack())
    traced = covered(i)
    print("step %d traced=%d ranges=%d modes_after=%d %s" % (i, traced, len(got), modes,
                                                             ",".join(sorted(set(got)))[:300]))
    if traced and not want(i) <= set(got):
        bad.append("step %d: missing %s" % (i, sorted(want(i) - set(got))))
    # the step's own optimizer call ends inside the window's last step: its ranges count
    if not traced and not covered(i - 1) and got:
        bad.append("step %d: %d ranges outside the window's first steps" % (i, len(got)))
    if modes and not covered(i + 1):
        bad.append("step %d: %d torch-function modes left after it" % (i, modes))
    if not modes and state["open"]:
        bad.append("step %d: ranges %s still open after the window" % (i, sorted(state["open"])))
# a window again, TorchDynamo forgotten: a forked child (a DataLoader worker) keeps no mode
g.ctx.dynamo_seen = False
g.ctx.ops = sys.modules["_gpuprof_ops"]
g.ctx.ops._st.off = False
if not hasattr(torch, "compile"):
    sys.modules.pop("torch._dynamo.utils", None)
WINDOWS.add(steps["ended"])
if not gpl._compiled():
    # past the first WINDOWS windows of a process no mode is pushed (the cost stays a
    # constant of the job); then counted afresh for the cases below
    ops = sys.modules["_gpuprof_ops"]
    ops._st.windows = ops.WINDOWS
    gps._ops_window(True)
    if ov._get_current_function_mode_stack():
        bad.append("a mode pushed past the first %d windows" % ops.WINDOWS)
    gps._ops_window(False)
    ops._st.windows = 0
    gps._ops_window(True)
    if not ov._get_current_function_mode_stack():
        bad.append("no mode pushed for a window")
    if hasattr(os, "fork"):
        pid = os.fork()
        if pid == 0:
            n0 = len(state["names"])
            torch.relu(x)
            os._exit(0 if not ov._get_current_function_mode_stack() and len(state["names"]) == n0
                     else 1)
        _, status = os.waitpid(pid, 0)
        if status:
            bad.append("a forked child kept the mode or made a range (status %d)" % status)
    # a backward pass that raises in the program's own hook: its error, as it was
    t = torch.relu(m(x)).sum()

    def boom(grad):
        raise ValueError("the program's own error")

    m.weight.register_hook(boom)
    try:
        t.backward()
        bad.append("the program's exception was lost")
    except ValueError as e:
        if str(e) != "the program's own error":
            bad.append("the program's exception changed: %s" % e)
    gps._ops_window(False)
    if ov._get_current_function_mode_stack() or state["open"]:
        bad.append("the mode or ranges left after the window (%s)" % sorted(state["open"]))
print("OK" if not bad else "BAD " + "; ".join(bad))
