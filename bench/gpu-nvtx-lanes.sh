#!/bin/bash
# Run on the GPU machine: NVTX push+pop with the threads' lanes of the ring (ring v6: a
# range in one record, no locked instruction) against the build before them (.gpubin-base:
# its gpuprof, agent and libraries, made by bench/gpu-carry-base.sh), interleaved in each
# round; then the primitives of this host (bench/prim.c) and, unless NO_TIER, the GPU tier
# with this tree. Results under $OUT.
#   nvtx_cost 20 const N: 20 bursts of N literal pairs, 150 ms apart (the agent drains in
#   between); N = 5 000 fits a thread's lane (8 192 records), 50 000 overflows it into the
#   shared slots while the agent drains.
. "$(dirname "$0")/gpu-env.sh"
OUT=${OUT:-/tmp/out}
mkdir -p $OUT
GB=$PWD/.gpubin-base
[ -x $G/prim ] && { $G/prim; $G/prim | tail -1; } | tee $OUT/prim.txt
echo "== NVTX push+pop, ${NV_ROUNDS:=6} rounds"
for r in $(seq $NV_ROUNDS); do
	for n in 5000 50000; do
		for v in new base; do
			if [ $v = base ]; then
				env="GPUPROF_INJECT=$GB/.libs/libgpuprof-inject.so GPUPROF_AGENT=$GB/gpuprof-agent GPUPROF_PYTHON=$GB/python"
				gp=$GB/gpuprof
			else
				env=""
				gp=$G/gpuprof
			fi
			echo "$v $n $(env $env $gp run --modes=nvtx --output=/tmp/nv -- $G/nvtx_cost 20 const $n 2>/dev/null)"
			[ $r = 1 ] && $gp dump /tmp/nv/step0/rank0.gpr 2>/dev/null | grep "^count nvtx" | sed "s/^/  $v $n /"
			rm -rf /tmp/nv
		done
	done
	echo "none 5000 $($G/nvtx_cost 20 const 5000)"
done | tee $OUT/nvtx.txt
python3 - $OUT/nvtx.txt <<'PY' | tee $OUT/nvtx-summary.txt
import sys, statistics as st
d = {}
for l in open(sys.argv[1]):
    p = l.split()
    if len(p) >= 6 and p[2] == "ns_per_pair_mean":
        d.setdefault((p[0], p[1]), []).append((float(p[3]), float(p[5])))
for k, v in sorted(d.items()):
    print("%-5s %6s pairs: mean %6.1f ns (median of %d rounds; %.1f-%.1f), best burst %5.1f ns (median; %.1f-%.1f)" % (
        k[0], k[1], st.median(a for a, _ in v), len(v), min(a for a, _ in v), max(a for a, _ in v),
        st.median(b for _, b in v), min(b for _, b in v), max(b for _, b in v)))
PY
[ -n "$NO_TIER" ] && exit 0
echo "== GPU tier"
gpu_tier
