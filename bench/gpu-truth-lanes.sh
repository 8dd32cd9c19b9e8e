#!/bin/bash
# Run on the GPU machine after ring v6 (lanes): the report's figures against the programs'
# own truth. 1-3: bench/gpu-own-cost.sh (the integration's hooks in and out of one
# process: own_cost against the program's A/B, now with the C extension; the GEMM step;
# the default's reports on the seed MLP and GPT-2); 4: the seed with the step markers off
# (the headline from the untraced steps' period, against the program's own median);
# 5: a small fixture of the C training step with NVTX range records from a lane.
. "$(dirname "$0")/gpu-env.sh"
OUT=${OUT:-/tmp/out}
mkdir -p $OUT
AB_RUNS=${AB_RUNS:-2} timeout 330 bash bench/gpu-own-cost.sh >$OUT/own-cost.log 2>&1
echo "own-cost rc=$?"
grep -E "^(new|rc=|seed|gpt2|light)|own_cost" $OUT/own-cost.log | cut -c1-400
echo "== 4. markers off"
for r in 1 2; do
	d=/tmp/mk0.$r; rm -rf $d
	GPUPROF_STEP_MARKERS=0 STEPS=1200 timeout 120 $G/gpuprof run --output=$d -- \
		python3 bench/field/seed_mlp.py >$d.out 2>$d.err
	echo "markers off run $r rc=$? truth $(grep -o '"step_ms_median": [0-9.]*' $d.out) report $($G/gpuprof \
		report --format=json $d 2>/dev/null | python3 -c '
import json, sys
r = json.load(sys.stdin)["ranks"][0]
w = r.get("windows", {})
print("median_ms", r["steps"]["median_ms"], "basis", r["steps"].get("basis"),
      "untraced", w.get("untraced_median_ms"), "traced", w.get("traced_median_ms"))')"
	$G/gpuprof report $d 2>/dev/null | grep -E "timed by|headline" | sed 's/^/  /'
done | tee $OUT/markers-off.txt
echo "== 5. fixture"
F=/tmp/fx-lanes; rm -rf $F
$G/gpuprof run --modes=all --output=$F -- $G/gpuprof-train-mlp --dim 1024 --layers 4 --batch 256 \
	--dtype bf16 --steps 24 --sgd >$F.out 2>&1
echo "fixture rc=$? $($G/gpuprof dump $F/step0/rank0.gpr | grep -E '^count nvtx' | tr '\n' ' ')"
$G/gpuprof report $F >$OUT/fx-lanes.txt 2>&1
cp -r $F $OUT/fx-lanes && cp $F.out $OUT/fx-lanes/program.out
du -sh $OUT/fx-lanes
