#!/bin/bash
# Run on the GPU machine: the default (sampled windows, CUPTI detached after each since the
# detach finalizes at the exit of one of the program's own calls, auto on in PyTorch) on
# the seed MLP against plain, not detached and the light modes, rotated rounds; then
# programs that launch CUDA graphs (torch.compile reduce-overhead) and GPT-2 under windows
# of 10 in 50 with the detach, for crashes. Binaries from gpu-carry.sh.
. "$(dirname "$0")/gpu-env.sh"
OUT=${OUT:-/tmp/out}
mkdir -p $OUT
export PYTHONUNBUFFERED=1
echo "== 1. seed MLP, ${STEPS:=1200} steps, ${ROUNDS:=4} rounds"
rm -f $OUT/cost.csv
ROUNDS=$ROUNDS STEPS=$STEPS WORKLOADS=seed CONFIGS="plain default nodetach light plain2" NO_MICRO=1 \
	bash bench/gpu-cost.sh
echo "runs without a TRUTH line (crashed or hung): $(grep -c ';$' $OUT/cost.csv)"
f=$(find /tmp/cost.default -name 'rank*.gpr' | head -1)
echo "default (last round): $($G/gpuprof dump --events "$f" | grep -c 'b=1073741824') detaches"
$G/gpuprof dump --events "$f" | grep 'b=1073741824' | head -5
cp $OUT/cost.csv $OUT/seed-default-cost.csv
echo "== 2. crashes under windows of 10 in 50, detached after each"
for n in $(seq ${CRASH_RUNS:-2}); do
	for p in ${CRASH_PROGS:-compile_ro.py gpt2.py}; do
		d=/tmp/cr.$p.$n; rm -rf $d
		STEPS=300 GPUPROF_CAPTURE=sampled=10/50 timeout 200 $G/gpuprof run --output=$d -- \
			python3 -X faulthandler bench/field/$p >$d.out 2>$d.err
		rc=$?
		f=$(find $d -name 'rank*.gpr' | head -1)
		echo "$p run $n: rc=$rc detaches=$($G/gpuprof dump --events "$f" 2>/dev/null | grep -c 'b=1073741824') $(grep -o '"step_ms_median": [0-9.]*' $d.out)"
		[ $rc -ne 0 ] && tail -30 $d.err >>$OUT/crashes2.txt
	done
done
