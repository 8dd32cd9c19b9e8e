#!/bin/bash
# Run on the GPU machine (binaries from bench/gpu-carry.sh): the report's own_cost (gpuprof's
# own time on the program's thread, measured in the process) held against ground truth
# the program measures itself: bench/field/hooks_ab.py takes the integration's hooks out
# and puts them back in alternate blocks of one process and times its steps with CUDA
# events. Then the default's reports on the seed MLP, GPT-2 and the GEMM step, with their
# own_cost and windows lines, and a seed rank file kept as a fixture ($OUT/fixture).
. "$(dirname "$0")/gpu-env.sh"
OUT=${OUT:-/tmp/out}
mkdir -p $OUT
export PYTHONUNBUFFERED=1
own() { # JOBDIR LABEL: the report's own_cost and headline, and its text lines
	$G/gpuprof report --format=json "$1" 2>/dev/null | python3 -c '
import json, sys
r = json.load(sys.stdin)["ranks"][0]
w = r.get("windows", {})
print(sys.argv[1], "own_cost", json.dumps(r.get("own_cost")), "median_ms", r["steps"]["median_ms"],
      "untraced", w.get("untraced_median_ms"), "traced", w.get("traced_median_ms"))' "$2"
	$G/gpuprof report "$1" 2>/dev/null | grep -E "own work|the headline is|how sure" | sed "s/^/  /"
}
# OLD: a directory with an older build's python/ and libgpuprof-inject.so, run beside
# this tree's, interleaved
echo "== 1. the hooks in and out, in one process (seed MLP, ${AB_RUNS:=3} runs of ${AB_STEPS:=2400} steps)"
for n in $(seq $AB_RUNS); do
	for v in new ${OLD:+old}; do
		d=/tmp/ab.$v.$n; rm -rf $d
		env=""
		[ $v = old ] && env="GPUPROF_PYTHON=$OLD/python GPUPROF_INJECT=$OLD/libgpuprof-inject.so"
		env $env STEPS=$AB_STEPS GPUPROF_CAPTURE=sampled=20/100000 timeout 150 $G/gpuprof run \
			--output=$d -- python3 bench/field/hooks_ab.py >$d.out 2>$d.err
		echo "$v run $n rc=$? $(grep ^TRUTH $d.out)"
		own $d "ab.$v.$n"
	done
done | tee $OUT/hooks_ab.txt
echo "== 2. the GEMM step, the same"
d=/tmp/abbig; rm -rf $d
BIG=1 STEPS=${BIG_STEPS:-400} BLOCK=20 AB_FROM=60 GPUPROF_CAPTURE=sampled=20/100000 timeout 150 \
	$G/gpuprof run --output=$d -- python3 bench/field/hooks_ab.py >$d.out 2>$d.err
echo "rc=$? $(grep ^TRUTH $d.out)" | tee -a $OUT/hooks_ab.txt
own $d gemm | tee -a $OUT/hooks_ab.txt
echo "== 3. the default's reports"
for p in "seed_mlp.py 1200" "seed_mlp.py 1200" "gpt2.py 200"; do
	set -- $p
	d=/tmp/def.$1.$RANDOM; rm -rf $d
	STEPS=$2 timeout 150 $G/gpuprof run --output=$d -- python3 bench/field/$1 >$d.out 2>$d.err
	echo "$1 rc=$? truth median $(grep -o '"step_ms_median": [0-9.]*' $d.out)"
	own $d "$1"
	[ "$1" = seed_mlp.py ] && [ ! -d $OUT/fixture ] && cp -r $d $OUT/fixture && cp $d.out $OUT/fixture/program.out
done | tee $OUT/default.txt
d=/tmp/light; rm -rf $d
STEPS=1200 timeout 150 $G/gpuprof run --modes=timing,nvtx,mem --output=$d -- python3 bench/field/seed_mlp.py >$d.out 2>&1
echo "light modes: truth median $(grep -o '"step_ms_median": [0-9.]*' $d.out)" | tee -a $OUT/default.txt
own $d light | tee -a $OUT/default.txt
