#!/bin/bash
# Run on the GPU machine (binaries from bench/gpu-carry.sh): what the default (a bare
# --gpuprof: sampled windows, CUPTI detached after each) costs against plain runs of the same
# round, on the seed MLP (host-bound, 2.5 ms) and its compute-bound variant (BIG=1: large
# GEMMs, about 45 ms), every run under `setarch -R` with PYTHONHASHSEED=0 (the layout of
# memory and of Python's dicts the same in every process: the +-10 % that separates
# identical processes on this host is what hid 1 %); plain2, a second plain run, is the
# floor. Then NVTX push+pop with this tree's library and an older one side by side
# (OLD_INJECT, when carried), interleaved. Results: $OUT/*.csv, $OUT/nvtx.txt.
. "$(dirname "$0")/gpu-env.sh"
OUT=${OUT:-/tmp/out}
mkdir -p $OUT
export PYTHONUNBUFFERED=1
P="setarch -R env PYTHONHASHSEED=0"
setarch -R true 2>/dev/null || { echo "no setarch -R here: the hash seed alone"; P="env PYTHONHASHSEED=0"; }
echo "== NVTX push+pop, ns a pair (mean, best burst of 20 x 50 000), ${NV_ROUNDS:=5} rounds"
for r in $(seq $NV_ROUNDS); do
	echo "none $($G/nvtx_cost 20 const)"
	echo "new $($G/gpuprof run --modes=nvtx --output=/tmp/nv -- $G/nvtx_cost 20 const)"
	rm -rf /tmp/nv
	if [ -f "${OLD_INJECT:=$G/old/libgpuprof-inject.so}" ]; then
		echo "old $(GPUPROF_INJECT=$OLD_INJECT $G/gpuprof run --modes=nvtx --output=/tmp/nv -- $G/nvtx_cost 20 const)"
		rm -rf /tmp/nv
	fi
	echo "new-snprintf $($G/gpuprof run --modes=nvtx --output=/tmp/nv -- $G/nvtx_cost 20)"
	rm -rf /tmp/nv
done | tee $OUT/nvtx.txt
python3 - $OUT/nvtx.txt <<'PY'
import sys, statistics as st
d = {}
for l in open(sys.argv[1]):
    p = l.split()
    if len(p) >= 5:
        d.setdefault(p[0], []).append((float(p[2]), float(p[4])))
for k, v in d.items():
    print("%-13s mean %6.1f ns (median of %d rounds), best burst %5.1f ns (median; min %.1f)" % (
        k, st.median(a for a, _ in v), len(v), st.median(b for _, b in v), min(b for _, b in v)))
PY
for wl in ${WORKLOADS:-seed gemm}; do
	steps=${SEED_STEPS:-800} rounds=${SEED_ROUNDS:-8}
	[ $wl = gemm ] && steps=${GEMM_STEPS:-150} rounds=${GEMM_ROUNDS:-4}
	echo "== $wl: $steps steps, $rounds rounds, ASLR off, PYTHONHASHSEED=0"
	rm -f $OUT/cost.csv
	PIN="$P" ROUNDS=$rounds STEPS=$steps WORKLOADS=$wl CONFIGS="plain default plain2" NO_MICRO=1 \
		bash bench/gpu-cost.sh
	cp $OUT/cost.csv $OUT/$wl-default-cost.csv
	echo "runs without a TRUTH line: $(grep -c ';$' $OUT/$wl-default-cost.csv)"
done
