#!/bin/bash
# Run on the GPU machine: how far the program's own A/B of the integration's hooks
# (bench/field/hooks_ab.py, seed MLP, 2 400 steps, blocks of 25) can be trusted, and what
# in the hooks it sees, rotated over ${AB_ROUNDS:-3} rounds: the hooks in and out (ab);
# in through every block (aa: the method's floor); in and out with the step markers off
# (ab-nomark: the hooks without the marker the post hook places). Each line: the program's
# TRUTH and the report's own_cost. Then a small fixture of the C training step whose ranges
# are lane records ($OUT/fx-lanes.tgz). Results under $OUT.
. "$(dirname "$0")/gpu-env.sh"
OUT=${OUT:-/tmp/out}
mkdir -p $OUT
export PYTHONUNBUFFERED=1
F=/tmp/fx; rm -rf $F; mkdir -p $F
$G/gpuprof run --modes=all --output=$F/lanes -- $G/gpuprof-train-mlp --dim 1024 --layers 4 \
	--batch 256 --steps 24 >$F/lanes.out 2>&1
echo "fixture rc=$? $($G/gpuprof dump $F/lanes/step0/rank0.gpr | grep -E '^count nvtx' | tr '\n' ' ')"
(cd $F && tar czf $OUT/fx-lanes.tgz --exclude='report.*' lanes lanes.out)
for r in $(seq ${AB_ROUNDS:-3}); do
	for v in ab aa ab-nomark; do
		d=/tmp/own.$v.$r; rm -rf $d
		env=""
		[ $v = aa ] && env="AA=1"
		[ $v = ab-nomark ] && env="GPUPROF_STEP_MARKERS=0"
		env $env STEPS=2400 GPUPROF_CAPTURE=sampled=20/100000 timeout 100 $G/gpuprof run \
			--output=$d -- python3 bench/field/hooks_ab.py >$d.out 2>$d.err
		echo "$v run $r rc=$? $(grep ^TRUTH $d.out | cut -c7-) own $($G/gpuprof report --format=json $d 2>/dev/null |
			python3 -c 'import json,sys; o=json.load(sys.stdin)["ranks"][0].get("own_cost") or {}; print(o.get("us_per_step"), o.get("pct_of_step"))')"
	done
done | tee $OUT/own-ab.txt
