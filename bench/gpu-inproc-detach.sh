#!/bin/bash
# Run on the GPU machine: does a CUPTI detached after a window give the program back the
# cost it had before any window? In-process: the seed MLP (bench/field/seed_mlp.py, its own
# CUDA-event step times), one capture window at steps 400-419 (GPUPROF_CAPTURE=steps=...),
# so steps 36-395 ran with CUPTI loaded but never tracing kernels and steps 446-799 after a
# window (API records only inside it, as the default's: GPUPROF_CUPTI_API=windows): the
# ratio of their medians, CUPTI detached after the window (1) or not (0),
# and a run without gpuprof for the drift of the same steps (A/A). ROUNDS rounds, rotated.
# Then GPT-2 (bench/field/gpt2.py) default, not detached and plain, through gpu-cost.sh.
# The detach waits for the step markers, which only sampled windows place: here it comes
# DETACH_WAIT_NS (10 s) after the window, past the end of an 800-step run. Session 15 ran
# this with a build that placed them under steps= windows too, and the detach crashed 4 of
# 6 runs (bench/results/performance-history.md, session 15): GPUPROF_CUPTI_DETACH=1 is
# experimental.
# Binaries from gpu-carry.sh.
. "$(dirname "$0")/gpu-env.sh"
OUT=${OUT:-/tmp/out}
mkdir -p $OUT
export PYTHONUNBUFFERED=1
ROUNDS=${ROUNDS:-3}
split() { # TRUTH json on stdin (step_ms[k] is step k+6): steps 36-395 against 446-799
	python3 -c '
import json, statistics as st, sys
ms = json.loads(sys.stdin.read()[6:])["step_ms"]
a, b = st.median(ms[30:390]), st.median(ms[440:])
print("before %.4f after %.4f ratio %.4f" % (a, b, b / a))'
}
echo "== seed MLP, 800 steps, one window at steps 400-419: after / before in each process"
set -- plain 1 0
for r in $(seq $ROUNDS); do
	for cfg in "$@"; do
		case $cfg in
		plain) t=$(STEPS=800 timeout 200 python3 bench/field/seed_mlp.py 2>/dev/null | grep '^TRUTH') ;;
		*) rm -rf /tmp/ip.$cfg
		   t=$(STEPS=800 GPUPROF_CAPTURE=steps=400-419 GPUPROF_CUPTI_API=windows GPUPROF_CUPTI_DETACH=$cfg timeout 200 \
		       $G/gpuprof run --output=/tmp/ip.$cfg -- python3 bench/field/seed_mlp.py 2>/dev/null | grep '^TRUTH') ;;
		esac
		echo "round $r $cfg $(echo "$t" | split)" | tee -a $OUT/inproc-detach.txt
	done
	set -- "${@:2}" "$1"
done
for cfg in 1 0; do
	f=$(find /tmp/ip.$cfg -name 'rank*.gpr' | head -1)
	echo "detach=$cfg (last round): $($G/gpuprof dump --events "$f" | grep -c 'b=1073741824') detaches"
done
[ -n "$NO_GPT2" ] && exit 0
echo "== GPT-2"
rm -f $OUT/cost.csv
ROUNDS=$ROUNDS STEPS=60 WORKLOADS=gpt2 CONFIGS="plain default nodetach plain2" NO_MICRO=1 bash bench/gpu-cost.sh
