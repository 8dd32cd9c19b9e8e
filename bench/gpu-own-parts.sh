#!/bin/bash
# Run on the GPU machine (binaries from bench/gpu-carry.sh): where gpuprof's own time a
# step goes in the seed MLP under the default, stage by stage (a copy of the PyTorch
# integration made by bench/prof_hooks.py times each stage of its optimizer hooks and
# prints the medians at exit), beside the report's own_cost of the same run.
. "$(dirname "$0")/gpu-env.sh"
OUT=${OUT:-/tmp/out}
mkdir -p $OUT
rm -rf $G/pp && python3 bench/prof_hooks.py $G/python $G/pp
for r in $(seq ${RUNS:-2}); do
	d=/tmp/parts.$r; rm -rf $d
	GPUPROF_PYTHON=$G/pp STEPS=${STEPS:-1200} timeout 150 $G/gpuprof run --output=$d -- \
		python3 bench/field/seed_mlp.py >$d.out 2>$d.err
	echo "run $r rc=$? truth $(grep -o '"step_ms_median": [0-9.]*' $d.out)"
	grep '^PROF' $d.err
	$G/gpuprof report --format=json $d 2>/dev/null | python3 -c '
import json, sys
print("own_cost", json.dumps(json.load(sys.stdin)["ranks"][0].get("own_cost")))'
done | tee $OUT/own-parts.txt
