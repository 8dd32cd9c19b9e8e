#!/bin/bash
# Run on the GPU machine: PyTorch's module ranges in capture windows (the default since
# session 16: mode cuda, GPUPROF_TORCH_LAYERS=1) on Hugging Face GPT-2 (bench/field/gpt2.py,
# 240 steps, windows of 10 in 40), against the same without them (GPUPROF_TORCH_LAYERS=0),
# alternated, RUNS runs each: the report's own line on what tracing cost the traced steps
# (the hooks are registered only inside windows, so only that figure may move), the
# program's median over all steps, the modules the traced kernels fall under, and the
# share of traced kernel time that has a module. Binaries from gpu-carry.sh.
. "$(dirname "$0")/gpu-env.sh"
OUT=${OUT:-/tmp/out}
mkdir -p $OUT
export PYTHONUNBUFFERED=1
RUNS=${RUNS:-2}
for n in $(seq $RUNS); do
	for l in 1 0; do
		d=/tmp/lw.$l.$n; rm -rf $d
		STEPS=240 GPUPROF_CAPTURE=sampled=10/40 GPUPROF_TORCH_LAYERS=$l timeout 200 \
			$G/gpuprof run --output=$d -- python3 bench/field/gpt2.py >$d.out 2>$d.err
		echo "layers=$l run $n: rc=$? $(grep -o '"step_ms_median": [0-9.]*' $d.out)"
		$G/gpuprof report $d 2>/dev/null | grep -A1 'steps traced at kernel' | head -2
		$G/gpuprof report --format=json $d 2>/dev/null | python3 -c '
import json, sys, collections
j = json.load(sys.stdin)
ks = j.get("kernels") or []
tot = sum(k.get("total_ns", 0) for k in ks) or 1
withr = sum(k.get("launched_in_ns", 0) for k in ks if k.get("launched_in"))
print("top %d kernels: %.1f %% of their time launched inside a range" % (len(ks), 100.0 * withr / tot))
print("their ranges: " + "; ".join(sorted(set("%s" % k.get("launched_in") for k in ks[:15]))))
nv = sorted(j.get("nvtx") or [], key=lambda x: -x.get("gpu_ns", 0))[:8]
print("ranges by GPU time: " + "; ".join("%s %.1f ms" % (x["name"], x.get("gpu_ns", 0) / 1e6) for x in nv))'
	done
done
cp /tmp/lw.1.1.out $OUT/gpt2-layers.out 2>/dev/null
gpuprof=$G/gpuprof; $gpuprof report /tmp/lw.1.1 >$OUT/gpt2-layers-report.txt 2>&1
$gpuprof report --format=json /tmp/lw.1.1 >$OUT/gpt2-layers-report.json 2>&1
