#!/bin/bash
# Run on the GPU machine from the repo root: bash bench/field/review/run_all.sh (binaries from bench/gpu-carry.sh)
# Each program under `gpuprof run` (default modes, capture) and plainly, interleaved;
# $OUT/summary.txt (rc, wall, TRUTH lines, output diffs), $OUT/reports.tgz (reports, logs),
# $OUT/ranks.tgz (rank files, for `gpuprof report` elsewhere). BUDGET: seconds to stop at.
. bench/gpu-env.sh
OUT=${OUT:-/tmp/out}
F=bench/field/review
W=/tmp/fnew
rm -rf $W && mkdir -p $W $OUT
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s)
BUDGET=${BUDGET:-280}
S=$W/summary.txt
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader; date -u; nproc; } >$S 2>&1
pack() {
	cp $S $OUT/summary.txt
	(cd $W && tar czf $OUT/reports.tgz --exclude='*.gpr' --exclude='*.gps' --exclude='*.pickle' . 2>/dev/null)
}
one() { # name prof|plain env... -- program args
	local name=$1 kind=$2; shift 2
	local envs=()
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	local el=$(( $(date +%s) - T0 )) rem
	rem=$(( BUDGET - el ))
	if [ $rem -lt 25 ]; then echo "== $name.$kind SKIPPED (${el}s elapsed)" >>$S; return; fi
	[ $rem -gt 75 ] && rem=75
	local t0=$(date +%s.%N)
	if [ $kind = prof ]; then
		env "${envs[@]}" timeout $rem $G/gpuprof run --output=$W/$name -- python3 "$@" >$W/$name.$kind.out 2>$W/$name.$kind.err
	else
		env "${envs[@]}" timeout $rem python3 "$@" >$W/$name.$kind.out 2>$W/$name.$kind.err
	fi
	local rc=$?
	echo "== $name.$kind rc=$rc wall=$(python3 -c "import time; print(round(time.time() - $t0, 2))")s at=${el}s" >>$S
	grep '^TRUTH' $W/$name.$kind.out | cut -c1-3000 >>$S
	grep -v '^TRUTH' $W/$name.$kind.out | head -5 | sed 's/^/  out: /' >>$S
	grep -v '^TRUTH' $W/$name.$kind.err | tail -6 | sed 's/^/  err: /' >>$S
	[ $kind = prof ] && ls -la $W/$name $W/$name/step* 2>/dev/null | sed 's/^/  ls: /' >>$S
	pack
}
P="$F"
one a prof -- $P/a_grad_accum.py
one a plain -- $P/a_grad_accum.py
one b prof -- $P/b_infer.py
one b plain -- $P/b_infer.py
one c prof -- $P/c_sync_loop.py
one c plain -- $P/c_sync_loop.py
one d prof -- $P/d_mem_shape.py
one d plain -- $P/d_mem_shape.py
one b0 prof NVTX=0 -- $P/b_infer.py
one b0 plain NVTX=0 -- $P/b_infer.py
for n in a b c d b0; do
	[ -f $W/$n.plain.out ] && [ -f $W/$n.prof.out ] && { echo "-- $n stdout diff (non-TRUTH):"; diff <(grep -v '^TRUTH' $W/$n.plain.out) <(grep -v '^TRUTH' $W/$n.prof.out); } >>$S
done
echo "total ${SECONDS}s" >>$S
pack
(cd $W && tar czf $OUT/ranks.tgz --exclude='*.pickle' $(ls -d a b c d b0 2>/dev/null)) 2>/dev/null
ls -la $OUT
cat $S | cut -c1-400
