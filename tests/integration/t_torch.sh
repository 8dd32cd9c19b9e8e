#!/bin/bash
# The PyTorch integration on the CPU (agent/python): steps from optimizer.step() with no
# change to the script, the optimizer's state from its state tensors, and everything a
# hook inside someone else's program must not do: change the exit status, lose the
# user's sitecustomize or PYTHONPATH, put the working directory on sys.path, fail with
# a PyTorch that lacks what it needs, or with a crash inside the hook.
# Runs with Debian 12's python3-torch (1.13: step() wrappers) on the host, and with
# Debian 13's (2.6: global optimizer hooks) in the trixie chroot:
#   GP=/path/to/gpuprof PY=/usr/bin/python3 bash t_torch.sh
. "$(dirname "$0")/tap.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
GP=${GP:-${GP_BUILD:?}/gpuprof}
PY=${PY:-/usr/bin/python3}
"$PY" -c 'import torch' 2>/dev/null || skip_all "no PyTorch for $PY"
V=$("$PY" -c 'import torch; print(torch.__version__)')
diag "PyTorch $V ($PY)"
W=$(mktemp -d /tmp/gp-torch.XXXXXX)
trap 'rm -rf "$W"' EXIT
cd "$W" || exit 1
j() { # j JOBDIR PYTHON-EXPRESSION-ON-r (rank 0 of the JSON report)
	"$GP" report --format=json "$1" 2>/dev/null |
		"$PY" -c 'import json,sys; j=json.load(sys.stdin); r=j["ranks"][0]; print(eval(sys.argv[1]))' "$2"
}

cat >train.py <<'EOF'
# an un-annotated training loop; prints its own measurements to compare with
import sys, time, torch
torch.manual_seed(0)
steps = int(sys.argv[1])
m = torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
opt = torch.optim.Adam(m.parameters(), lr=1e-3)
sgd = torch.optim.SGD(m.parameters(), lr=1e-3, momentum=0.9) if "gan" in sys.argv else None
x = torch.randn(32, 128); y = torch.randint(0, 10, (32,))
ends = []
for i in range(steps):
    opt.zero_grad()
    torch.nn.functional.cross_entropy(m(x), y).backward()
    opt.step()
    if sgd is not None and i % 2 == 0:
        sgd.step()
    time.sleep(0.005)
    ends.append(time.perf_counter())
# the mean over the intervals the report's period uses (warm-up 3): ends 2 .. n-2
own_mean = (ends[-2] - ends[2]) / (steps - 4)
state = sum(v.numel() * v.element_size() for s in opt.state.values() for v in s.values()
            if isinstance(v, torch.Tensor))
print("own_mean_ms %.3f" % (own_mean * 1000))
print("own_state_bytes %d" % state)
sys.exit(int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2].isdigit() else 0)
EOF

out=$("$GP" run -o job1 -- "$PY" train.py 25 2>&1); ok $? "a profiled un-annotated script runs ($V)"
[ "$(j job1 'r["steps"]["source"]')" = optimizer ]; ok $? "steps come from optimizer.step() without NVTX"
[ "$(j job1 'r["steps"]["count"]')" = 25 ]; ok $? "25 iterations give 25 steps ($(j job1 'r["steps"]["count"]'))"
own=$(echo "$out" | sed -n 's/^own_mean_ms //p')
med=$(j job1 'r["steps"]["mean_ms"]')
"$PY" -c "import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); sys.exit(abs(a-b) > 0.05*b)" "$med" "$own"
ok $? "mean step within 5 % of the script's own over the same steps ($med vs $own ms)"
own=$(echo "$out" | sed -n 's/^own_state_bytes //p')
[ "$(j job1 'r["pytorch"]["optimizer_state_bytes"]')" = "$own" ]
ok $? "optimizer state = the sum of Adam's state tensors ($own bytes)"
j job1 'r["pytorch"]["info"]' | grep -q "^torch $V; steps: optimizer.step()"; ok $? "the report says which PyTorch and how ($(j job1 'r["pytorch"]["info"]'))"
"$GP" report job1 | grep -q "== The framework (its own figures: PyTorch, JAX) =="; ok $? "the text report has a framework section"
# gpuprof's own time on the program's thread: each optimizer step's record carries the
# integration's running total, and the report's median per step is the records' own
f=$(find job1 -name 'rank*.gpr' | head -1)
"$GP" dump --events "$f" | "$PY" -c '
import statistics, sys, json
tot = [int(l.split(" d=")[1].split()[0]) for l in sys.stdin
       if l.startswith("fw ") and " u8=4 " in l and " a=0 " in l]
j = json.load(open(sys.argv[1]))["ranks"][0]
r = j["own_cost"]
d = [b - a for a, b in zip(tot, tot[1:])][max(j["steps"]["warmup"], 2):]  # past the warm-up
ok = (all(x >= 0 for x in d) and tot[0] > 0 and r["steps"] == len(d) and
      abs(r["us_per_step"] - statistics.median(d) / 1e3) < 0.01 and
      0 < r["pct_of_step"] < 20)
print(r, len(d)); sys.exit(0 if ok else 1)' <("$GP" report --format=json job1 2>/dev/null) >own.out 2>&1
ok $? "gpuprof's own time a step is the median of the increments its step records carry ($(cat own.out | tail -1))"
"$GP" report job1 | unwrap | grep -q "gpuprof's own work on the program's thread .* timed in the process: median"
ok $? "... and the text report says it"

# the records without text go through the C extension beside _gpuprof_abi.py where it
# imports (_gpuprof_fast.so: CPython 3.10+, built with Python's headers), through ctypes
# under GPUPROF_PY_CTYPES=1 or without it: the same optimizer step records either way
cat >fastcheck.py <<'EOF'
import os, sys, torch
import _gpuprof_abi as g
m = torch.nn.Linear(8, 8)
opt = torch.optim.SGD(m.parameters(), lr=0.1)
for i in range(6):
    m(torch.randn(2, 8)).sum().backward()
    opt.step()
    opt.zero_grad()
so = os.path.join(os.path.dirname(os.path.abspath(g.__file__)), "_gpuprof_fast.so")
print("built", os.path.exists(so) and sys.version_info >= (3, 10))
print("fast", g._c.fast is not None)
EOF
"$GP" run -o jobFast -- "$PY" fastcheck.py >fast.out 2>&1
if grep -q "^built True" fast.out; then
	GPUPROF_PY_CTYPES=1 "$GP" run -o jobCtypes -- "$PY" fastcheck.py >ctypes.out 2>&1
	grep -q "^fast True" fast.out && grep -q "^fast False" ctypes.out
	ok $? "the C extension is taken where it imports, ctypes under GPUPROF_PY_CTYPES=1 ($(grep ^fast fast.out), $(grep ^fast ctypes.out))"
	steps() { # a job's optimizer step records: index:step, and whether the running total grew
		"$GP" dump --events "$(find "$1" -name 'rank*.gpr' | head -1)" | "$PY" -c '
import sys
rows = [l.split() for l in sys.stdin if l.startswith("fw ") and " u8=4 " in l]
f = lambda r, k: int([x for x in r if x.startswith(k + "=")][0].split("=")[1])
tot = [f(r, "d") for r in rows]
print(" ".join("%d:%d" % (f(r, "a"), f(r, "c")) for r in rows),
      "own>0" if tot and tot[0] > 0 and all(b >= a for a, b in zip(tot, tot[1:])) else "own?")'
	}
	a=$(steps jobFast) b=$(steps jobCtypes)
	[ "$a" = "$b" ] && [ "$a" = "0:1 0:2 0:3 0:4 0:5 0:6 own>0" ]
	ok $? "the same step records either way ($a | $b)"
else
	skip "no C extension beside the integration for $PY ($(grep -h '^built' fast.out | tail -1))"
	skip "no C extension for $PY"
fi

# mode layers: a range per module forward and backward, never taken for the steps
"$GP" run --modes=timing,nvtx,layers -o jobL -- "$PY" train.py 12 >/dev/null 2>&1
ok $? "--modes=layers: the program runs"
c=$("$GP" report --format=json jobL | "$PY" -c 'import json,sys; n={x["name"]: x["count_all"] for x in json.load(sys.stdin)["nvtx"]}; print(n.get("Sequential"), n.get("Linear"), n.get("ReLU"), n.get("Linear backward"), n.get("Sequential backward"))')
[ "$c" = "12 24 12 24 12" ]; ok $? "forward and backward ranges per module and step: Sequential, Linear, ReLU, Linear backward, Sequential backward = $c (want 12 24 12 24 12)"
[ "$(j jobL 'r["steps"]["source"]')" = optimizer ] && [ "$(j jobL 'r["steps"]["count"]')" = 12 ]
ok $? "... and the steps still come from optimizer.step() ($(j jobL 'r["steps"]["how"]'))"
"$GP" export --format=chrome -o jobL.trace.json jobL 2>/dev/null
out=$("$PY" "$HERE/trace_check.py" jobL.trace.json 3)
ok $? "the layer ranges (backward ones overlap) make a trace Perfetto imports: async slices${out:+ ($out)}"

# mode cuda without mode layers: module ranges only in capture windows, no hook between
# them, none after torch.compile (a stand-in library traces steps 3-4 and 8-9)
out=$("$PY" "$HERE/layers_window.py" "$HERE/../../agent/python" 2>&1)
case "$out" in
*"SKIP "*) skip "${out#*SKIP }" ;;
*) echo "$out" | tail -1 | grep -q '^OK$'; ok $? "module ranges in capture windows only, none after torch.compile${out:+ ($(echo "$out" | tail -1))}" ;;
esac

# operation ranges (kernel time by the user's line): in capture windows under mode cuda
# (a stand-in library), all along in mode layers (the real one, no GPU needed): each torch
# call gets "op @ file:line (function)" with the line of this program that made it, its
# backward the same line; no torch-function mode between windows nor after torch.compile
out=$("$PY" "$HERE/ops_window.py" "$HERE/../../agent/python" 2>&1)
case "$out" in
*"SKIP "*) skip "${out#*SKIP }" ;;
*) echo "$out" | tail -1 | grep -q '^OK$'; ok $? "operation ranges in capture windows only, named by the calling line, none after torch.compile${out:+ ($(echo "$out" | tail -1 | cut -c1-300))}" ;;
esac
# a program with no optimizer step (inference): operation ranges in top-level module calls
# 4-6 only, where kernels are traced, no mode between calls, the module hooks gone after
for v in traced untraced; do
	out=$("$PY" "$HERE/ops_infer.py" "$HERE/../../agent/python" $v 2>&1)
	case "$out" in
	*"SKIP "*) skip "${out#*SKIP }" ;;
	*) echo "$out" | tail -1 | grep -q '^OK '; ok $? "inference ($v): operation ranges in top-level calls 4-6 only, hooks gone after${out:+ ($(echo "$out" | tail -2 | tr '\n' ' ' | cut -c1-300))}" ;;
	esac
done
# torch.compile(fullgraph=True) first called inside a step with operation ranges: Dynamo
# traces with the integration's mode on the stack (a graph break there raised); aot_eager
# runs Dynamo and AOTAutograd without a C++ compiler (inductor's CPU code needs g++)
out=$("$PY" "$HERE/ops_compile.py" "$HERE/../../agent/python" aot_eager 2>&1)
case "$out" in
*"SKIP "*) skip "${out#*SKIP }" ;;
*) echo "$out" | tail -1 | grep -q '^OK '; ok $? "torch.compile(fullgraph=True) first run inside a step with operation ranges compiles, gives the eager result, makes no range${out:+ ($(echo "$out" | tail -1 | cut -c1-300))}" ;;
esac
cat >lines.py <<'EOF'
import sys, torch
torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
opt = torch.optim.SGD(m.parameters(), lr=0.01)
x, y = torch.randn(16, 64), torch.zeros(16, dtype=torch.long)
def step():
    opt.zero_grad()
    h = m(x)  # line 8: two linear calls and a relu per step
    loss = torch.nn.functional.cross_entropy(h, y)  # line 9
    loss.backward()  # line 10
    opt.step()
for i in range(int(sys.argv[1])):
    step()
EOF
"$GP" run --modes=timing,nvtx,layers -o jobO -- "$PY" lines.py 12 >/dev/null 2>&1
ok $? "--modes=layers with operation ranges: the program runs"
p=$(j jobO 'r["steps"]["count"] - r["steps"]["warmup"]')
got=$("$GP" report --format=json jobO 2>/dev/null | "$PY" -c '
import json, sys
a = json.load(sys.stdin)["attribution"]
ops = {r["name"]: r["calls"] for r in a["operations"]}
lines = {r["name"]: r["calls"] for r in a["source_lines"]}
print(a["ranks"], ops.get("linear"), ops.get("linear backward"), ops.get("relu"),
      ops.get("cross_entropy"), ops.get("cross_entropy backward"),
      lines.get("lines.py:8 (step)"), lines.get("lines.py:9 (step)"), lines.get("lines.py:10 (step)"))')
[ "$got" = "1 $((2 * p)) $((2 * p)) $p $p $p $((3 * p)) $p $p" ]
ok $? "operation ranges name the program's lines: linear, its backward, relu, cross_entropy, lines 8, 9, 10 over $p steps: $got (want 1 $((2 * p)) $((2 * p)) $p $p $p $((3 * p)) $p $p)"
"$GP" report --format=json jobO 2>/dev/null | "$PY" -c '
import json, sys
sys.exit(any(" @ " in r["name"] for r in json.load(sys.stdin)["nvtx"]))'
ok $? "... and stay out of the NVTX range table"
GPUPROF_TORCH_OPS=0 "$GP" run --modes=timing,nvtx,layers -o jobO0 -- "$PY" lines.py 6 >/dev/null 2>&1
n=$("$GP" report --format=json jobO0 2>/dev/null | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)["attribution"]["operations"]))')
[ "$n" = 0 ]; ok $? "GPUPROF_TORCH_OPS=0: no operation range ($n rows)"

# a program that never steps an optimizer (inference): the allocator history begun at
# CUDA's initialisation ends with the first capture window (or after a time bound), not
# at the job's end (a stand-in library and history switch; no PyTorch needed)
out=$("$PY" "$HERE/hist_watch.py" "$HERE/../../agent/python" 2>&1)
echo "$out" | tail -1 | grep -q '^OK$'
ok $? "no optimizer step: the allocator history ends with the first window or after a time bound ($(echo "$out" | tail -1))"

# the owners of a peak the allocator history did not see (reached between its windows):
# what it saw, and the rest said to be unseen, so that they add up to the peak
out=$("$PY" "$HERE/peak_owners.py" "$HERE/../../agent/python" 2>&1)
echo "$out" | tail -1 | grep -q '^OK$'
ok $? "the peak's owners add up to the peak, one the history missed included ($(echo "$out" | tail -1))"

# the connection to the collector (_gpuprof_abi.py: records held back until the first
# attach, clamped, cut, silenced when broken; the signatures) and the JAX part's pool
# records, against stand-ins (no PyTorch, no JAX needed)
out=$("$PY" "$HERE/abi_unit.py" "$HERE/../../agent/python" 2>&1)
echo "$out" | tail -1 | grep -q '^OK$'
ok $? "the collector's connection and the JAX pool records, against stand-ins ($(echo "$out" | grep -c ' ok (') cases; $(echo "$out" | tail -1))"

# torch.compile's compilations (TorchDynamo's compile callbacks, taken when torch._dynamo
# is first imported): the first is start-up, a recompilation for a new shape during the
# steps is what the host did while the GPU waited (idle_gaps' compiling cause)
cat >comp.py <<'EOF'
import sys, torch
if not hasattr(torch, "compile"):
    print("SKIP no torch.compile in this PyTorch"); sys.exit(0)
m = torch.nn.Linear(16, 4)
opt = torch.optim.SGD(m.parameters(), lr=0.1)
f = torch.compile(lambda x: m(x).sum(), backend="aot_eager", dynamic=False)
for i in range(12):
    x = torch.randn(4 + (i % 3 if i >= 6 else 0), 16)  # new shapes from step 6
    opt.zero_grad(); f(x).backward(); opt.step()
EOF
out=$("$GP" run -o jobC -- "$PY" comp.py 2>&1)
case "$out" in
*"SKIP "*) skip "$(echo "$out" | sed -n 's/^SKIP //p')"; skip "no torch.compile" ;;
*)
	n=$("$GP" dump --events jobC/step0/rank0.gpr 2>/dev/null | grep -c '^fw .* u8=13 ')
	late=$("$GP" dump --events jobC/step0/rank0.gpr 2>/dev/null | awk '/^fw .* u8=4 /{s=1} s && /^fw .* u8=13 /{n++} END{print n+0}')
	[ "$n" -ge 2 ] && [ "$late" -ge 1 ]
	ok $? "torch.compile's compilations recorded: $n, $late of them after the first step (a new shape)"
	c=$(j jobC 'r["startup"]["compile_s"]')
	"$PY" -c "import sys; sys.exit(not float(sys.argv[1]) > 0)" "$c"
	ok $? "the first compilation is start-up's ($c s)" ;;
esac

# two optimizers: the one that steps every iteration makes the steps
"$GP" run -o job2 -- "$PY" train.py 20 gan >/dev/null 2>&1
[ "$(j job2 'r["steps"]["count"]')" = 20 ] && [ "$(j job2 'len(r["pytorch"]["optimizers"])')" = 2 ]
ok $? "two optimizers: 20 steps from the one that steps every iteration, both measured"

# an optimizer whose step() raised once (caught by the script) does not swallow the
# steps of the others; a wrapper optimizer stepping an inner one counts once
cat >raise.py <<'EOF'
import torch
p = torch.nn.Parameter(torch.zeros(4))
class Flaky(torch.optim.SGD):
    n = 0
    def step(self, closure=None):
        Flaky.n += 1
        if Flaky.n == 2:
            raise RuntimeError("inf in grads")
        return super().step(closure)
class Wrap(torch.optim.Optimizer):
    def __init__(self, inner):
        self.inner = inner
        super().__init__(inner.param_groups[0]["params"], {"lr": 0.1})
    def step(self, closure=None):
        return self.inner.step(closure)
d, g = Flaky([p], lr=0.1), Wrap(torch.optim.SGD([p], lr=0.1))
for i in range(6):
    p.grad = torch.ones(4)
    try:
        d.step()
    except RuntimeError:
        pass
    g.step()
print("ran")
EOF
"$GP" run -o jobR -- "$PY" raise.py >/dev/null 2>&1
c=$(j jobR '[o["steps"] for o in r["pytorch"]["optimizers"]]')
[ "$c" = "[5, 6]" ] || [ "$c" = "[5, 6, 0]" ]; ok $? "a step that raised is not taken as still running; the wrapper's inner step is not counted (steps per optimizer: $c)"

# the exit status is the program's
"$GP" run -o job3 -- "$PY" train.py 5 3 >/dev/null 2>&1; ok $(( $? == 3 ? 0 : 1 )) "exit status 3 stays 3"

# the user's own sitecustomize and PYTHONPATH keep working
mkdir -p mine
cat >mine/sitecustomize.py <<'EOF'
import os
os.environ["MINE_RAN"] = "yes"
EOF
cat >mine/mymod.py <<'EOF'
VALUE = 42
EOF
cat >check.py <<'EOF'
import os, sys, mymod, torch
print("mine", os.environ.get("MINE_RAN"), mymod.VALUE)
opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(4))], lr=0.1)
for _ in range(4):
    opt.step()
EOF
out=$(PYTHONPATH="$W/mine" "$GP" run -o job4 -- "$PY" check.py 2>&1)
echo "$out" | grep -q "^mine yes 42$"; ok $? "the user's sitecustomize ran and PYTHONPATH still imports ($(echo "$out" | grep ^mine))"
[ "$(j job4 'r["pytorch"]["optimizer_steps"]')" = 4 ]; ok $? "... and gpuprof's hook ran too"
cat >mine/sitecustomize.py <<'EOF'
raise RuntimeError("user sitecustomize is broken")
EOF
out=$(PYTHONPATH="$W/mine" "$GP" run -o job5 -- "$PY" check.py 2>&1)
echo "$out" | grep -q "Error in sitecustomize"; ok $? "a broken user sitecustomize is reported by Python as without gpuprof"
rm -rf mine
cat >empty.py <<'EOF'
import os, sys
print("empty_entry", "" in sys.path[1:], os.getcwd() in sys.path[1:])
EOF
cd /tmp && out=$(PYTHONPATH= "$GP" run -o "$W/job6" -- "$PY" "$W/empty.py" 2>&1); cd "$W"
echo "$out" | grep -q "^empty_entry False False$"; ok $? "an empty PYTHONPATH puts no working directory on sys.path"

# a script that never imports torch: nothing changes, nothing is said
cat >plain.py <<'EOF'
import sys
print("modules", "torch" in sys.modules, "_gpuprof" in sys.modules,
      [m for m in sys.modules if m.startswith("_gpuprof_")])
EOF
out=$("$GP" run -o job7 -- "$PY" plain.py 2>&1)
echo "$out" | grep -q "^modules False True \[\]$"
ok $? "a script without torch: the hook is armed, torch is not imported for it, nor any part of the integration but the arming ($(echo "$out" | grep ^modules))"
[ "$(j job7 'r["pytorch"]')" = None ]; ok $? "... and the report has no PyTorch part"

# GPUPROF_PYTORCH=0 and python -I leave the program alone
out=$(GPUPROF_PYTORCH=0 "$GP" run -o job8 -- "$PY" plain.py 2>&1)
echo "$out" | grep -q "^modules False False \[\]$"; ok $? "GPUPROF_PYTORCH=0: no hook"
out=$("$GP" run -o job9 -- "$PY" -I plain.py 2>&1)
echo "$out" | grep -q "^modules False False \[\]$"; ok $? "python -I (isolated) ignores PYTHONPATH: no hook, the program runs"

# a PyTorch without what the hook needs: a stand-in torch package that has no optim
mkdir -p fake/torch
echo '__version__ = "0.0-fake"' >fake/torch/__init__.py
cat >fake.py <<'EOF'
import torch
print("fake", torch.__version__)
EOF
out=$(PYTHONPATH="$W/fake" "$GP" run -o job10 -- "$PY" fake.py 2>&1); rc=$?
[ $rc = 0 ] && echo "$out" | grep -q "^fake 0.0-fake$"; ok $? "a torch without optim: the program runs unchanged"
j job10 'r["pytorch"]["not_collected"]' | grep -q "PyTorch integration not started"
ok $? "... and the report says what was not collected and why ($(j job10 'r["pytorch"]["not_collected"]'))"

# a crash inside the hook: optimizer state that cannot be measured (a tensor subclass
# whose numel() raises); the optimizer itself never asks
cat >crash.py <<'EOF'
import torch
class Odd(torch.Tensor):
    def numel(self):
        raise ValueError("numel is not available")
p = torch.nn.Parameter(torch.zeros(4))
opt = torch.optim.SGD([p], lr=0.1)
opt.state[p]["odd"] = torch.zeros(1).as_subclass(Odd)
for _ in range(5):
    p.grad = torch.ones(4)
    opt.step()
print("trained", float(p[0]))
EOF
out=$("$GP" run -o job11 -- "$PY" crash.py 2>&1); rc=$?
[ $rc = 0 ] && echo "$out" | grep -q "^trained -0.5"; ok $? "a hook that fails inside optimizer.step(): training goes on ($(echo "$out" | tail -1))"
j job11 'r["pytorch"]["not_collected"]' | grep -q "optimizer step hook"
ok $? "... and the failure is in the report ($(j job11 'r["pytorch"]["not_collected"]'))"
[ "$(j job11 'r["steps"]["count"]')" = 5 ]; ok $? "... with its steps"

# SIGTERM while the main thread is blocked in C (a CUDA synchronisation, a hung
# collective): the memory picture's handler must not turn "die now" into "die at
# SIGKILL"; the rank still dies of SIGTERM, promptly. (On a GPU the handler is installed
# at CUDA's initialisation; here it is called directly, with a C busy loop as the block.)
cat >block.c <<'EOF'
#include <time.h>
void block(int s) { time_t e = time(0) + s; while (time(0) < e) ; }
EOF
gcc -shared -fPIC -o libblock.so block.c
cat >term.py <<'EOF'
import ctypes, os, signal, sys, _gpuprof_signal
if sys.argv[1] == "busy":  # the program's wakeup fd already in use: the hook stands back
    r, w = os.pipe(); os.set_blocking(w, False); signal.set_wakeup_fd(w)
_gpuprof_signal._hook_sigterm(lambda: None)
print("handler", signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL, flush=True)
ctypes.CDLL(sys.argv[2]).block(20)  # the GIL released, never back in the interpreter
print("not reached")
EOF
"$GP" run -o jobT -- "$PY" term.py free "$W/libblock.so" >term.out 2>&1 &
gp=$!; sleep 3; t0=$(date +%s%N); pkill -TERM -f "^$PY term.py free"; wait $gp; rc=$?; ms=$(( ($(date +%s%N) - t0) / 1000000 ))
grep -q "^handler True" term.out && [ $rc = 143 ] && [ $ms -lt 3000 ]
ok $? "SIGTERM with the main thread blocked in C: dies of SIGTERM at once through the hook's thread (rc $rc after $ms ms)"
"$GP" run -o jobT2 -- "$PY" term.py busy "$W/libblock.so" >term2.out 2>&1 &
gp=$!; sleep 3; pkill -TERM -f "^$PY term.py busy"; wait $gp; rc=$?
grep -q "^handler False" term2.out && [ $rc = 143 ]; ok $? "the program's own wakeup fd in use: no handler, SIGTERM's default action (rc $rc)"

# a forked child shares nothing of the hook: SIGTERM to it (Pool.terminate()) must not
# kill the parent (the child's signal went through the parent's wakeup pipe: exit 143)
cat >forkterm.py <<'EOF'
import ctypes, multiprocessing, os, signal, sys, time, _gpuprof_signal
_gpuprof_signal._hook_sigterm(lambda: None)
if sys.argv[1] in ("fork", "cfork"):  # cfork: libc's, where no fork hook runs (R4-9)
    pid = os.fork() if sys.argv[1] == "fork" else ctypes.CDLL(None).fork()
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    time.sleep(0.5)
    os.kill(pid, signal.SIGTERM)
    _, st = os.waitpid(pid, 0)
    print("child", "signal %d" % os.WTERMSIG(st) if os.WIFSIGNALED(st) else "exit", flush=True)
else:
    p = multiprocessing.get_context("fork").Pool(2)
    p.map(abs, [1, 2, 3])
    p.terminate()
    p.join()
time.sleep(1.5)  # the parent's thread would have read a child's wakeup byte by now
print("parent alive", flush=True)
EOF
for m in fork pool cfork; do
	"$GP" run -o jobF$m -- "$PY" forkterm.py $m >fork$m.out 2>&1; rc=$?
	grep -q "^parent alive" fork$m.out && [ $rc = 0 ] && { [ $m = pool ] || grep -q "^child signal 15" fork$m.out; }
	ok $? "SIGTERM to a child forked by $m: the child dies of it, the parent goes on and exits 0 (rc $rc: $(tr '\n' ' ' <fork$m.out | tail -c 100))"
done
# issue 51 (R4-8): a program that installs its own SIGTERM handler and calls the one it
# replaced (Lightning's _SignalConnector) checkpoints and exits 0, as it does without us
cat >chain.py <<'EOF'
import os, signal, sys, time, _gpuprof_signal
_gpuprof_signal._hook_sigterm(lambda: None)
prev = signal.getsignal(signal.SIGTERM)
seen = []
def handler(signum, frame):
    seen.append(signum)
    if callable(prev):
        prev(signum, frame)
signal.signal(signal.SIGTERM, handler)
os.kill(os.getpid(), signal.SIGTERM)
time.sleep(1.5)  # the hook's thread would have acted by now
print("checkpoint", len(seen), flush=True)
EOF
"$GP" run -o jobC -- "$PY" chain.py >chain.out 2>&1; rc=$?
[ $rc = 0 ] && grep -q "^checkpoint 1" chain.out
ok $? "R4-8: a handler of the program's own that calls the one it replaced: checkpoint written, exit 0 (rc $rc)"
"$GP" run -o jobF2 -- "$PY" term.py free "$W/libblock.so" >term3.out 2>&1 &
gp=$!; sleep 3; pkill -TERM -f "^$PY term.py free"; wait $gp; rc=$?
[ $rc = 143 ]; ok $? "and the parent's own SIGTERM still works with the fork hook installed (rc $rc)"

# a launcher that imports torch but trains nothing does not take the rank file: the
# process that steps does
cat >launch.py <<'EOF'
import subprocess, sys, torch
sys.exit(subprocess.call([sys.executable, sys.argv[1], "8"]))
EOF
"$GP" run -o job12 -- "$PY" launch.py train.py >/dev/null 2>&1
[ "$(j job12 'r["steps"]["count"]')" = 8 ]; ok $? "a launcher importing torch leaves the rank file to the process that trains"

# torchrun under one task: every worker records into a rank file of its own (RANK), the
# steps of each its own optimizer's
cat >ddp.py <<'EOF'
import os, sys, torch, torch.distributed as dist
dist.init_process_group("gloo")
torch.manual_seed(0)
m = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(64, 8))
opt = torch.optim.SGD(m.parameters(), lr=1e-2)
x = torch.randn(16, 64)
for i in range(int(sys.argv[1])):
    opt.zero_grad(); m(x).sum().backward(); opt.step()
dist.destroy_process_group()
print("rank", os.environ["RANK"], "done", flush=True)
EOF
# --redirects/--tee 1: Debian 12's torchrun (1.13 on Python 3.11) cannot parse their
# default "0" (IntFlag iteration skips 0); 1 (stdout) parses on every version
"$GP" run -o jobDDP -- "$PY" -m torch.distributed.run --standalone --nnodes=1 --nproc_per_node=2 \
	--redirects 1 --tee 1 ddp.py 9 >ddp.out 2>&1
rc=$?
ddp_check() { # JOBDIR: ranks 0 and 1, each with its 9 optimizer steps
	"$GP" report --format=json "$1" 2>/dev/null | "$PY" -c '
import json, sys
d = json.load(sys.stdin); R = {r["rank"]: r for r in d["ranks"]}
assert sorted(R) == [0, 1], sorted(R)
for k, r in R.items():
    assert r["steps"]["source"] == "optimizer" and r["steps"]["count"] == 9, (k, r["steps"])' 2>"$1.err"
}
if grep -q "without libuv support" ddp.out; then
	# Debian 13's PyTorch 2.6 is built without libuv, which torchrun's TCPStore asks for
	for _ in 1 2 3; do skip "torchrun here cannot make its store (PyTorch built without libuv)"; done
else
	ok $rc "torchrun with two workers (gloo) under one agent (rc $rc$([ $rc = 0 ] || echo "; $(tail -2 ddp.out | tr '\n' ' ')"))"
	ls jobDDP/step0 2>/dev/null | grep -c '^rank[01]\.gpr$' | grep -qx 2; ok $? "a rank file per worker ($(ls jobDDP/step0 2>/dev/null | tr '\n' ' '))"
	ddp_check jobDDP; ok $? "each worker's 9 optimizer steps in its own file $(tail -1 jobDDP.err)"
fi
# the same with a launcher of our own (what torchrun does: RANK, WORLD_SIZE and the
# master's address for each worker, env:// rendezvous), which imports torch itself
cat >launch2.py <<'EOF'
import os, socket, subprocess, sys, torch
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
ps = [subprocess.Popen([sys.executable, "ddp.py", "9"], env=dict(os.environ, RANK=str(r),
      LOCAL_RANK=str(r), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
      USE_LIBUV="0")) for r in range(2)]
sys.exit(max(p.wait() for p in ps))
EOF
"$GP" run -o jobL2 -- "$PY" launch2.py >launch2.out 2>&1
ok $? "a launcher starting two ranked gloo workers under one agent ($(tail -1 launch2.out))"
ddp_check jobL2; ok $? "each worker's 9 optimizer steps in its own file $(tail -1 jobL2.err)"
# torch.profiler shares CUPTI with gpuprof: the integration sees each session that traces
# CUDA begin and end (through kineto's entry points), so the collector switches no
# capture meanwhile; CPU-only sessions and a start that fails are not sessions of CUPTI's;
# the program's profiler still records what it did. (A CPU build drops the CUDA activity
# before kineto sees it, so the CUDA session is made through the entry points themselves.)
cat >prof.py <<'EOF'
import torch
import torch.autograd.profiler as ap
from torch.profiler import ProfilerActivity, profile
m = torch.nn.Linear(64, 64); opt = torch.optim.SGD(m.parameters(), lr=0.1)
x = torch.randn(16, 64)
for i in range(12):
    if i in (3, 8):
        p = profile(activities=[ProfilerActivity.CPU]); p.__enter__()
    m(x).sum().backward(); opt.step(); opt.zero_grad()
    if i in (5, 10):
        p.__exit__(None, None, None)
        print("ops", len(p.events()) > 0)
cfg = ap.profile(use_kineto=True).config()
for _ in range(2):
    ap._prepare_profiler(cfg, {ProfilerActivity.CUDA})
    ap._enable_profiler(cfg, {ProfilerActivity.CUDA})
    m(x).sum().backward()
    ap._disable_profiler()
try:
    ap._enable_profiler("not a config", {ProfilerActivity.CUDA})
except Exception as e:
    print("bad start raised", type(e).__name__)
EOF
out=$("$GP" run -o jobP -- "$PY" prof.py 2>&1)
ok $? "a program running torch.profiler under gpuprof runs ($(echo "$out" | tail -1))"
[ "$(echo "$out" | grep -c '^ops True')" = 2 ]; ok $? "its profiler recorded both CPU sessions"
echo "$out" | grep -q "^bad start raised TypeError"; ok $? "a start that fails raises the profiler's own error through the watch"
[ "$(j jobP 'r["pytorch"]["profiler_sessions"]')" = 2 ]; ok $? "the report counts the 2 CUDA sessions, not the CPU-only ones nor the start that failed ($(j jobP 'r["pytorch"]["profiler_sessions"]'))"
[ "$("$GP" dump --events jobP/step0/rank0.gpr | grep -c '^fw .*u8=15 ')" = 6 ]; ok $? "each begins and ends once ($("$GP" dump --events jobP/step0/rank0.gpr | grep '^fw .*u8=15 ' | grep -o ' a=[0-9]*' | tr -d '\n'))"
j jobP 'r["pytorch"]["info"]' | grep -q "torch.profiler: watched"; ok $? "the integration says it watches torch.profiler ($(j jobP 'r["pytorch"]["info"]'))"
[ "$(j jobP 'r["steps"]["count"]')" = 12 ]; ok $? "its 12 steps still counted ($(j jobP 'r["steps"]["count"]'))"
# issue 51 (R4-7): a program that asks importlib.util.find_spec("torch") before it imports
# torch (transformers, accelerate, lightning_utilities), or imports it through
# importlib.import_module or a lazy loader: the integration still starts at the import
for how in find_spec import_module lazy; do
	cat >imp_$how.py <<EOF
import importlib, importlib.util, sys
how = "$how"
if how == "find_spec":
    assert importlib.util.find_spec("torch") is not None
    assert "torch" not in sys.modules
    import torch
elif how == "import_module":
    torch = importlib.import_module("torch")
else:
    spec = importlib.util.find_spec("torch")
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    torch = importlib.util.module_from_spec(spec)
    sys.modules["torch"] = torch
    loader.exec_module(torch)
m = torch.nn.Linear(16, 4); opt = torch.optim.SGD(m.parameters(), lr=0.1)
x = torch.randn(8, 16)
for i in range(20):
    opt.zero_grad(); m(x).sum().backward(); opt.step()
EOF
	# the program alone first: PyTorch 2.6 on Python 3.13 cannot be lazy-loaded at all
	# (RecursionError in importlib.util's _LazyModule), with or without gpuprof
	if ! "$PY" imp_$how.py >/dev/null 2>&1; then
		skip "R4-7: torch reached by $how: the program fails without gpuprof here"
		continue
	fi
	"$GP" run -q -o job_imp_$how -- "$PY" imp_$how.py >/dev/null 2>&1
	n=$(j job_imp_$how 'r["steps"]["count"]')
	[ "$n" = 20 ]; ok $? "R4-7: torch reached by $how: the integration starts, 20 steps of 20 ($n)"
done
done_testing
