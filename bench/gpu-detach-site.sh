#!/bin/bash
# Run on the GPU machine: does a detach that finalizes CUPTI at the exit of one of the
# program's own API calls (on its thread, as NVIDIA's cupti_finalize sample and kineto's
# TEARDOWN_CUPTI do) crash the program, where the session-15 one (at the exit of gpuprof's
# own call, on its CUPTI thread) crashed 4 of 6 seed runs? And what does it give back?
# 1. crashes: the seed MLP (bench/field/seed_mlp.py, 800 steps, python3 -X faulthandler),
#    CUPTI detached after each window (GPUPROF_CUPTI_DETACH=1), one window at steps 400-419
#    and windows of 10 in 50 (about 15 detaches a run), RUNS runs each, this tree's module
#    (new) and the session-15 module (old: .gpubin/old/libgpuprof-cupti.so, with this
#    tree's injected library, which places the step markers a detach waits for under
#    steps= windows too);
# 2. torch.profiler over steps 100-139 (bench/field/profiler_mid.py) under the default
#    (auto: now detaching in PyTorch), the kernels it kept, against no tool.
# Binaries from gpu-carry.sh.
. "$(dirname "$0")/gpu-env.sh"
OUT=${OUT:-/tmp/out}
mkdir -p $OUT
export PYTHONUNBUFFERED=1
RUNS=${RUNS:-3}
res=$OUT/detach-site.txt
mkdir -p /tmp/oldlib
cp $G/.libs/libgpuprof-inject.so /tmp/oldlib/ && cp $G/old/libgpuprof-cupti.so /tmp/oldlib/
run1() { # new|old capture n
	local inj=$G/.libs/libgpuprof-inject.so d=/tmp/ds.$1.$3
	[ "$1" = old ] && inj=/tmp/oldlib/libgpuprof-inject.so
	rm -rf $d
	STEPS=800 GPUPROF_INJECT=$inj GPUPROF_CAPTURE=$2 GPUPROF_CUPTI_API=windows \
		GPUPROF_CUPTI_DETACH=1 timeout 300 $G/gpuprof run --output=$d -- \
		python3 -X faulthandler bench/field/seed_mlp.py >$d.out 2>$d.err
	local rc=$? f n=0 med
	f=$(find $d -name 'rank*.gpr' 2>/dev/null | head -1)
	[ -n "$f" ] && n=$($G/gpuprof dump --events "$f" 2>/dev/null | grep -c 'b=1073741824')
	med=$(grep '^TRUTH' $d.out | python3 -c '
import json, sys
t = sys.stdin.read()
print("median %.4f ms" % json.loads(t[6:])["step_ms_median"] if t else "no truth")')
	echo "$1 $2 run $3: rc=$rc detaches=$n $med" | tee -a $res
	if [ $rc -ne 0 ]; then
		{ echo "== $1 $2 run $3 rc=$rc"; tail -40 $d.err; } >>$OUT/crashes.txt
	fi
}
echo "== 1. crashes, $RUNS runs of each"
for cap in steps=400-419 sampled=10/50; do
	for n in $(seq $RUNS); do
		for lib in new old; do run1 $lib $cap $n; done
	done
done
echo "== 2. torch.profiler over steps 100-139 under the default"
rm -rf /tmp/dpd
STEPS=300 timeout 300 $G/gpuprof run --output=/tmp/dpd -- python3 bench/field/profiler_mid.py >$OUT/prof-default.out 2>&1
f=$(find /tmp/dpd -name 'rank*.gpr' | head -1)
echo "default rc=$? $(grep -h KINETO $OUT/prof-default.out) detaches=$($G/gpuprof dump --events "$f" | grep -c 'b=1073741824')" | tee -a $res
echo "no tool: $(STEPS=300 timeout 300 python3 bench/field/profiler_mid.py 2>&1 | grep 'KINETO')" | tee -a $res
