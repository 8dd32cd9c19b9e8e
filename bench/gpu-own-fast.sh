#!/bin/bash
# Run on the GPU machine (binaries from bench/gpu-carry.sh): the PyTorch integration's
# records through its C extension (_gpuprof_fast.so) against ctypes alone
# (GPUPROF_PY_CTYPES=1), interleaved, on the seed MLP (the report's own_cost and the
# program's own CUDA-event median) and GPT-2; then one seed run of the stage timer
# (bench/prof_hooks.py) with the extension.
. "$(dirname "$0")/gpu-env.sh"
OUT=${OUT:-/tmp/out}
mkdir -p $OUT
export PYTHONUNBUFFERED=1
own() { # JOBDIR: own_cost and the headline
	$G/gpuprof report --format=json "$1" 2>/dev/null | python3 -c '
import json, sys
r = json.load(sys.stdin)["ranks"][0]
o = r.get("own_cost") or {}
print("own_us", o.get("us_per_step"), "p95", o.get("us_p95"), "pct", o.get("pct_of_step"), "headline_ms", r["steps"]["median_ms"])'
}
for p in ${PROGRAMS:-"seed_mlp.py 1200" "seed_mlp.py 1200" "seed_mlp.py 1200" "gpt2.py 200"}; do
	set -- $p
	for v in fast ctypes; do
		c=0; [ $v = ctypes ] && c=1
		d=/tmp/of.$v.$RANDOM; rm -rf $d
		GPUPROF_PY_CTYPES=$c STEPS=$2 timeout 200 $G/gpuprof run --output=$d -- python3 bench/field/$1 >$d.out 2>$d.err
		echo "$1 $v rc=$? truth $(grep -o '"step_ms_median": [0-9.]*' $d.out | cut -d' ' -f2) $(own $d)"
	done
done | tee $OUT/own-fast.txt
RUNS=1 bash bench/gpu-own-parts.sh | tee -a $OUT/own-fast.txt
