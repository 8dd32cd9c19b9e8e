#!/bin/bash
# Run on the GPU machine (binaries from bench/gpu-carry.sh): b_infer.py (no optimizer)
# plain and under gpuprof, with and without NVTX, interleaved: whether the allocator history
# ends with the first capture window (a small exit pickle) and the median iteration of each
. bench/gpu-env.sh
OUT=${OUT:-/tmp/out}; mkdir -p $OUT /tmp/hc
F=bench/field/review
med() { python3 -c "import json,sys; d=json.loads(sys.stdin.read().split('TRUTH ',1)[1]); print(d['iter_ms']['median'])"; }
for r in 1 2; do
  for cfg in plain1 prof1 prof0 plain0; do
    nv=${cfg: -1}
    if [ ${cfg:0:4} = prof ]; then
      rm -rf /tmp/hc/$cfg
      out=$(NVTX=$nv timeout 60 $G/gpuprof run --output=/tmp/hc/$cfg -- python3 $F/b_infer.py 2>/tmp/hc/$cfg.err)
      extra="pickles: $(ls -la /tmp/hc/$cfg/step0/*.pickle 2>/dev/null | awk '{printf "%s=%s ", $NF, $5}') head: $(grep -m1 'median step' /tmp/hc/$cfg.err)"
    else
      out=$(NVTX=$nv timeout 60 python3 $F/b_infer.py 2>/dev/null); extra=""
    fi
    echo "round $r $cfg median_ms $(echo "$out" | grep TRUTH | med) $extra"
  done
done | tee $OUT/hist_check.txt
grep -iE "headline|history|traced" /tmp/hc/prof1/report.txt | head -8 | tee -a $OUT/hist_check.txt
grep -iE "headline|history|traced" /tmp/hc/prof0/report.txt | head -8 | tee -a $OUT/hist_check.txt
