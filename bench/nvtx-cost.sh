#!/bin/bash
# NVTX push+pop cost with and without gpuprof, interleaved, same machine and run.
# Prints the median over rounds of each configuration's mean ns per pair.
# Usage: bench/nvtx-cost.sh [ROUNDS]   (needs a built _build)
cd "$(dirname "$0")/.."
B=${GP_BUILD:-$PWD/_build}
rounds=${1:-5}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
export TMPDIR=$T
for r in $(seq "$rounds"); do
	echo "none $("$B/bench/nvtx_cost" 20 | awk '{print $2}')"
	echo "gpuprof-nvtx $("$B/gpuprof" run --modes=nvtx --output="$T/o" -- "$B/bench/nvtx_cost" 20 | awk '{print $2}')"
	echo "gpuprof-timing $("$B/gpuprof" run --modes=timing --output="$T/o" -- "$B/bench/nvtx_cost" 20 | awk '{print $2}')"
	rm -rf "$T/o"
done | python3 -c '
import sys, statistics as st
d = {}
for line in sys.stdin:
    k, v = line.split(); d.setdefault(k, []).append(float(v))
base = st.median(d["none"])
for k, v in d.items():
    print(f"{k:16s} median {st.median(v):6.1f} ns/pair  (min {min(v):.1f}, max {max(v):.1f}, {len(v)} rounds)  +{st.median(v) - base:.1f} ns over no tool")
'
