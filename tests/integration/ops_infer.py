"""The PyTorch integration's operation ranges in a program with no optimizer step
(agent/python/_gpuprof_ops.py, watch_calls): an inference loop of top-level module calls,
against a stand-in for the injected library whose collector traces kernels (or, with
argument "untraced", does not). Traced: ranges named by this file's line in calls
CALLS_WARM + 1 .. CALLS_WARM + CALLS only, no torch-function mode between calls nor after
them, the global module hooks gone after them; untraced: no range at all. Prints a verdict.
usage: PY ops_infer.py AGENT_PYTHON_DIR [untraced]"""
import os
import sys

sys.path.insert(0, sys.argv[1])
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
TRACED = not (len(sys.argv) > 2 and sys.argv[2] == "untraced")
os.environ["GPUPROF_MODES"] = "timing,nvtx,cuda"
os.environ["GPUPROF_TORCH_LAYERS"] = "0"
import standin_lib  # noqa: E402
import torch  # noqa: E402
import torch.overrides as ov  # noqa: E402

if not hasattr(ov, "TorchFunctionMode") or not hasattr(ov, "_get_current_function_mode_stack"):
    print("SKIP no torch-function modes in this PyTorch")
    sys.exit(0)
lib, state = standin_lib.install(lambda: 1 if TRACED else 0, attached=True)
ops = sys.modules["_gpuprof_ops"]
mm = sys.modules["torch.nn.modules.module"]

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
x = torch.randn(32, 8)
me = sys._getframe().f_code.co_filename
if me.startswith(os.getcwd().rstrip("/") + "/"):
    me = me[len(os.getcwd().rstrip("/")) + 1:]
bad = []
per_call = []
with torch.no_grad():
    for i in range(10):
        n0 = len(state["names"])
        line = sys._getframe().f_lineno + 1
        y = model(x)
        got = state["names"][n0:]
        between = len(state["names"])
        z = torch.softmax(y, dim=1)  # between calls: no mode, no range
        if len(state["names"]) != between:
            bad.append("call %d: a range outside the module call" % (i + 1))
        if ov._get_current_function_mode_stack():
            bad.append("call %d: a torch-function mode left after it" % (i + 1))
        per_call.append(len(got))
        want = TRACED and ops.CALLS_WARM < i + 1 <= ops.CALLS_WARM + ops.CALLS
        if want and "linear @ %s:%d (<module>)" % (me, line) not in got:
            bad.append("call %d: no linear range (%s)" % (i + 1, got[:4]))
        if not want and got:
            bad.append("call %d: %d ranges outside the covered calls" % (i + 1, len(got)))
if ops._st.call_hooks or getattr(mm, "_global_forward_pre_hooks", {}):
    bad.append("the module hooks stayed after the covered calls")
if state["open"]:
    bad.append("ranges left open: %s" % sorted(state["open"]))
print("ranges per call: %s" % per_call)
print(("OK (%s)" % ("traced" if TRACED else "untraced")) if not bad else "BAD " + "; ".join(bad))
