#!/bin/bash
# Run on the GPU machine: kernel time by the user's code (issue 50 item 1) against
# torch.profiler, and what the operation ranges cost there.
#   window    bench/attr_prog.py (a step whose lines are known: two matmuls, a gelu, a loss,
#             backward, SGD) under gpuprof with a capture window at steps 20-39 (the ranges
#             cover its first 5 steps): report.json's attribution tables
#   sampled   the same under the default capture (the ranges in the first window's first
#             steps): the tables are there without any option
#   truth     the same program alone under torch.profiler (with_stack, 5 steps after 10):
#             its device time by the innermost frame of the program and
#             key_averages(group_by_stack_n=1)'s table
#   compare   per line (forward calls): our GPU time per call against the profiler's per
#             step, and the shares; all backward; the total per step; the unattributed share
#   mlp       examples/train_mlp.py --no-nvtx under the default capture: its tables (text)
#   cost      bench/torch_ops_cost.py cuda under mode layers: a torch call's cost with the
#             ranges on, against a pass-through torch-function mode and none (PyTorch 2.x's
#             C++ mode dispatch)
# Lines "ATTR ok|FAIL ..." and the cost lines on stdout; reports, truth and logs in
# $OUT/attr.tgz. Binaries from bench/gpu-carry.sh. Usage: bench/gpu-attr.sh
. "$(dirname "$0")/gpu-env.sh"
OUT=${OUT:-/tmp/out}
W=/tmp/attr
rm -rf $W && mkdir -p $W $OUT
export PYTHONUNBUFFERED=1
python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name(0))'

STEPS=60 timeout 300 $G/gpuprof run --capture=steps=20-39 --output=$W/window -- \
	python3 bench/attr_prog.py >$W/window.log 2>&1
echo "window rc=$?"
STEPS=60 timeout 300 $G/gpuprof run --output=$W/sampled -- python3 bench/attr_prog.py \
	>$W/sampled.log 2>&1
echo "sampled rc=$?"
for n in window sampled; do
	$G/gpuprof report $W/$n >$W/$n.report.txt 2>&1
	$G/gpuprof report --format=json $W/$n >$W/$n.report.json 2>/dev/null
done
PROFILE=1 TRUTH_FILE=$W/truth.json timeout 300 python3 bench/attr_prog.py >$W/truth.log 2>&1
echo "truth rc=$?"

python3 - $W <<'PY' | tee $W/check.txt
import json, sys
W = sys.argv[1]
def say(ok, what):
    print("ATTR %s %s" % ("ok" if ok else "FAIL", what))
t = json.load(open(W + "/truth.json"))
lines = {v: k for k, v in t["lines"].items()}  # line number -> its name
prof = {int(k): v / t["steps"] for k, v in t["by_line_ns"].items()}  # ns a step
prof_total = t["total_ns"] / t["steps"]
print("truth: torch.profiler, %d steps: %.1f us of kernels a step, %.1f us of it held by ops "
      "(%.1f us with no frame of the program: the backward pass)"
      % (t["steps"], prof_total / 1e3, t["attributed_ns"] / t["steps"] / 1e3,
         t["no_frame_ns"] / t["steps"] / 1e3))
for n in ("window", "sampled"):
    j = json.load(open("%s/%s.report.json" % (W, n)))
    a = j["attribution"]
    say(a["ranks"] == 1 and a["operation_lines"], "%s: the tables are there (%d rows, %d kernels)"
        % (n, len(a["operation_lines"]), a["kernels"]))
    if not a["operation_lines"]:
        continue
    rows = a["operation_lines"]
    steps = max((r["calls"] for r in rows if r["line"].split(" (")[0].endswith(":%d" % t["lines"]["matmul1"])
                 and not r["operation"].endswith(" backward")), default=0)
    say(steps >= 3, "%s: %d steps with operation ranges (line matmul1's calls)" % (n, steps))
    if not steps:
        continue
    ours, bwd = {}, 0
    for r in rows:
        if r["operation"] == "(not attributed)":
            continue
        ln = int(r["line"].split(" (")[0].rsplit(":", 1)[1])
        if r["operation"].endswith(" backward"):
            bwd += r["gpu_ns"]
        else:
            ours[ln] = ours.get(ln, 0) + r["gpu_ns"]
    none = sum(r["gpu_ns"] for r in rows if r["operation"] == "(not attributed)")
    print("%s: %-10s %12s %12s %8s %8s" % (n, "line", "ours us", "profiler us", "ours %", "prof %"))
    for ln in sorted(set(ours) | set(prof)):
        o, p = ours.get(ln, 0) / steps, prof.get(ln, 0)
        print("%s: %-10s %12.1f %12.1f %7.1f%% %7.1f%%" % (n, "%s:%d" % (lines.get(ln, "?"), ln),
              o / 1e3, p / 1e3, 100 * o / max(a["total_ns"] / steps, 1), 100 * p / max(prof_total, 1)))
    for name in ("matmul1", "gelu", "matmul2", "loss"):
        ln = t["lines"][name]
        o, p = ours.get(ln, 0) / steps, prof.get(ln, 0)
        say(p > 0 and abs(o / p - 1) <= 0.15,
            "%s: line %d (%s) %.1f us a step, torch.profiler %.1f us (within 15 %%)" % (n, ln, name, o / 1e3, p / 1e3))
    o_tot = a["total_ns"] / steps
    say(prof_total > 0 and abs(o_tot / prof_total - 1) <= 0.15, "%s: all kernels %.1f us a step, torch.profiler %.1f us"
        % (n, o_tot / 1e3, prof_total / 1e3))
    say(none <= 0.05 * a["total_ns"], "%s: not attributed %.1f %% of the kernel time (<= 5 %%)"
        % (n, 100.0 * none / max(a["total_ns"], 1)))
    bl = t["lines"]["backward"]
    say(bwd + ours.get(bl, 0) > 0, "%s: backward %.1f us a step on the forward lines, %.1f us on "
        "backward()'s line; torch.profiler's ops without a frame of the program %.1f us"
        % (n, bwd / steps / 1e3, ours.get(bl, 0) / steps / 1e3, t["no_frame_ns"] / t["steps"] / 1e3))
print(t["table"])
PY

timeout 300 $G/gpuprof run --output=$W/mlp -- python3 examples/train_mlp.py --no-nvtx --steps 40 \
	>$W/mlp.log 2>&1
echo "mlp rc=$?"
$G/gpuprof report $W/mlp >$W/mlp.report.txt 2>&1
sed -n '/Kernel time by operation/,/^share:/p' $W/mlp.report.txt
for i in 1 2 3; do
	timeout 300 $G/gpuprof run -q --modes=timing,nvtx,layers --output=$W/cost$i -- \
		python3 bench/torch_ops_cost.py cuda 10 2>&1 | grep '^ops_cost'
done
(cd $W && tar czf $OUT/attr.tgz .) && ls -la $OUT
