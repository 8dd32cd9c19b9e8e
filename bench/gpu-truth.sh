#!/bin/bash
# Ground truth for the report's headline figures (issue: the report tells the truth), on
# the device machine. Each workload prints its own synchronised step time
# ("synchronised_step_ms": cudaDeviceSynchronize / torch.cuda.synchronize before step 3
# and after the last step); the same workload is captured annotated, un-annotated
# (--no-nvtx) and in the light modes, plus runs that die of CUDA out-of-memory. The rank
# files come back in $OUT/truth.tgz, the programs' output in $OUT/truth.txt; the report
# is computed on the CPU machine. Binaries from bench/gpu-carry.sh (.gpubin).
# Usage: bench/gpu-truth.sh [all|markers|markercost]
. "$(dirname "$0")/gpu-env.sh"
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
W=/tmp/truth
rm -rf $W; mkdir -p $W $OUT
V=$OUT/truth.txt
cap() { # name modes program args...
	local name=$1 modes=$2; shift 2
	$G/gpuprof run --modes=$modes --output=$W/$name -- "$@" >$W/$name.log 2>&1
	echo "$name rc=$? $(grep -h 'synchronised_step_ms\|Error\|error' $W/$name.log | tail -2 | tr '\n' ' ')" | tee -a $V
}
echo "== device: $(nvidia-smi -L | head -1)" | tee $V
M=$G/gpuprof-train-mlp
P="python3 examples/train_mlp.py --steps 30"
PART=${1:-all}
if [ "$PART" = all ] || [ "$PART" = markers ]; then
	# step completion markers in the light modes (no CUDA activity records)
	cap mark-clean-memnvtx mem,nvtx $M --dim 4096 --layers 8 --batch 2048 --dtype bf16 --steps 30 --sgd
	cap mark-clean-timing timing $M --dim 4096 --layers 8 --batch 2048 --dtype bf16 --steps 30 --sgd
	cap mark-torchbig-memnvtx mem,nvtx $P --dim 4096 --layers 8 --batch 4096
	cap mark-check-timing timing $G/marker_check --steps 40
	# their cost on a launch-bound PyTorch loop: markers on/off interleaved, the
	# program's own synchronised step time (200 steps each)
	for i in 1 2 3; do for mk in 1 0; do
		GPUPROF_STEP_MARKERS=$mk $G/gpuprof run --modes=mem,nvtx --output=$W/ab$mk-$i -- \
			python3 examples/train_mlp.py --steps 200 --dim 1024 --layers 4 2>&1 |
			grep -o 'synchronised_step_ms [0-9.]*' | sed "s/^/markers=$mk run $i /" | tee -a $V
		rm -rf $W/ab$mk-$i
	done; done
fi
if [ "$PART" = markercost ]; then
	# the markers' cost where they are paid: the host time of the nvtxRangePop that
	# places one (marker_check --cost: 20 us kernels, 4000 steps), markers on and off,
	# interleaved, 4 processes each; the difference of the medians is the cost per step
	for i in 1 2 3 4; do for mk in 1 0; do
		GPUPROF_STEP_MARKERS=$mk $G/gpuprof run --modes=timing,nvtx --output=$W/mc$mk-$i -- \
			$G/marker_check --cost 4000 | sed "s/^/markers=$mk run $i /" | tee -a $V
		rm -rf $W/mc$mk-$i
	done; done
	PART=none
fi
[ "$PART" = markers ] && PART=none
BIG="--dim 4096 --layers 8 --batch 2048 --dtype bf16 --steps 30 --sgd"
[ "$PART" = all ] && {
cap clean all $M $BIG
cap clean-nonvtx all $M $BIG --no-nvtx
cap idle-nonvtx all $M $BIG --host-stall-ms 30 --no-nvtx
cap clean-memnvtx mem,nvtx $M $BIG
cap clean-timing timing $M $BIG
cap frag-nonvtx all $M --dim 256 --layers 32 --batch 64 --steps 30 --sgd --unfused --no-nvtx
cap torch all $P --dim 1024 --layers 4
cap torch-nonvtx all $P --dim 1024 --layers 4 --no-nvtx
cap torchbig-memnvtx mem,nvtx $P --dim 4096 --layers 8 --batch 4096
cap torchbig-nonvtx all $P --dim 4096 --layers 8 --batch 4096 --no-nvtx
# out of memory: 20 GiB kept per step until the 141 GB card is full
cap oom-cuda all $M --dim 1024 --layers 4 --batch 64 --steps 100 --sgd --leak-bytes 21474836480
cap oom-torch all $P --steps 100 --dim 1024 --layers 4 --leak-bytes 21474836480
}
for d in $W/*/; do ls -la $d/step*/ | grep gpr; done >>$V
(cd $W && tar czf $OUT/truth.tgz --exclude='report.*' .)
echo "== GPU tier" | tee -a $V
GP_BUILD=$G KNOWN_COUNTS=$G/known_counts MARKER_CHECK=$G/marker_check timeout 400 bash tests/gpu/t_gpu.sh >$OUT/t_gpu.txt 2>&1
grep -c '^ok' $OUT/t_gpu.txt | sed 's/^/ok: /' | tee -a $V
grep '^not ok' $OUT/t_gpu.txt | tee -a $V
