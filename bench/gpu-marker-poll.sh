#!/bin/bash
# Run on the GPU machine (binaries from bench/gpu-carry.sh, an older injected library in
# .gpubin/old/ to compare against): what the step markers' waiter that polls (no
# semaphore posted at every step) and the ring's prefault change, each against the older
# library in the same round, interleaved.
#   1. the markers' cost where it is paid: the host time of the nvtxRangePop that places
#      one (marker_check --cost: 20 us kernels, 4000 steps);
#   2. NVTX push+pop (nvtx_cost: 20 bursts of 50 000 literal pairs; the bursts of the
#      first run of each kept, to see the ring's first lap);
#   3. the seed MLP's own_cost under the default (the report's measure of gpuprof's time
#      on the program's thread), and with the markers off;
#   4. the GPU tier (marker truth: a step's GPU time from markers is the 2 ms it spins).
# Results under $OUT.
. "$(dirname "$0")/gpu-env.sh"
OUT=${OUT:-/tmp/out}
mkdir -p $OUT
export PYTHONUNBUFFERED=1
OLD=$G/old
lib() { [ "$1" = old ] && echo $OLD/libgpuprof-inject.so || echo $GPUPROF_INJECT; }
echo "== 1. marker cost (pop_ns: median p95 of the placing pop), ${MC_ROUNDS:=3} rounds"
for r in $(seq $MC_ROUNDS); do
	for v in new old off; do
		mk=1; [ $v = off ] && mk=0
		l=$(lib $v); [ $v = off ] && l=$GPUPROF_INJECT
		echo "$v run $r $(GPUPROF_INJECT=$l GPUPROF_STEP_MARKERS=$mk $G/gpuprof run --modes=timing,nvtx \
			--output=/tmp/mc -- $G/marker_check --cost 4000 2>/dev/null | tail -1)"
		rm -rf /tmp/mc
	done
done | tee $OUT/markercost.txt
echo "== 2. NVTX push+pop, ${NV_ROUNDS:=5} rounds"
for r in $(seq $NV_ROUNDS); do
	for v in new old; do
		b=""; [ $r = 1 ] && b=1
		echo "$v $(NVTX_COST_BURSTS=$b GPUPROF_INJECT=$(lib $v) $G/gpuprof run --modes=nvtx \
			--output=/tmp/nv -- $G/nvtx_cost 20 const 2>/tmp/nv.err)"
		[ $r = 1 ] && echo "$v bursts $(grep '^burst' /tmp/nv.err | awk '{printf "%s ", $3}')"
		rm -rf /tmp/nv
	done
	echo "none $($G/nvtx_cost 20 const)"
done | tee $OUT/nvtx.txt
python3 - $OUT/nvtx.txt <<'PY'
import sys, statistics as st
d = {}
for l in open(sys.argv[1]):
    p = l.split()
    if len(p) >= 5 and p[1] == "ns_per_pair_mean":
        d.setdefault(p[0], []).append((float(p[2]), float(p[4])))
for k, v in d.items():
    print("%-5s mean %6.1f ns (median of %d rounds; %.1f-%.1f), best burst %5.1f ns (median)" % (
        k, st.median(a for a, _ in v), len(v), min(a for a, _ in v), max(a for a, _ in v),
        st.median(b for _, b in v)))
PY
echo "== 3. seed own_cost under the default, ${OWN_ROUNDS:=3} rounds of ${OWN_STEPS:=1200} steps"
for r in $(seq $OWN_ROUNDS); do
	for v in new old off; do
		mk=1; [ $v = off ] && mk=0
		l=$(lib $v); [ $v = off ] && l=$GPUPROF_INJECT
		d=/tmp/own.$v.$r; rm -rf $d
		GPUPROF_INJECT=$l GPUPROF_STEP_MARKERS=$mk STEPS=$OWN_STEPS timeout 150 $G/gpuprof run \
			--output=$d -- python3 bench/field/seed_mlp.py >$d.out 2>$d.err
		echo "$v run $r rc=$? truth $(grep -o '"step_ms_median": [0-9.]*' $d.out) $($G/gpuprof report \
			--format=json $d 2>/dev/null | python3 -c '
import json, sys
r = json.load(sys.stdin)["ranks"][0]
o = r.get("own_cost") or {}
print("own_us", o.get("us_per_step"), "own_p95_us", o.get("us_p95"), "pct", o.get("pct_of_step"),
      "headline_ms", r["steps"]["median_ms"], "basis", r["steps"].get("basis"))')"
		[ $v = new ] && [ $r = 1 ] && cp -r $d $OUT/seed-new && cp $d.out $OUT/seed-new/program.out
	done
done | tee $OUT/own.txt
[ -n "$NO_TIER" ] && exit 0
echo "== 4. GPU tier"
gpu_tier
grep -i "marker" $OUT/t_gpu.txt
