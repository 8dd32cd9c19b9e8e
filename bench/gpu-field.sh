#!/bin/bash
# Run on the GPU machine: the field programs (bench/field/: JAX, Lightning, torch.compile,
# an input-bound torchvision job, GPT-2, a leak, an OOM), each under `gpuprof run` with the
# default modes and capture, each printing its own truth (TRUTH {json} on stdout). Rank
# files, reports and logs go to $OUT/field.tgz. Binaries from bench/gpu-carry.sh.
# Usage: bench/gpu-field.sh [PROGRAM...]   (default: all)
. "$(dirname "$0")/gpu-env.sh"
OUT=${OUT:-/tmp/out}
W=/tmp/field
rm -rf $W && mkdir -p $W $OUT
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
run() { # name env... -- program args
	local name=$1; shift
	local envs=()
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	local t0=$(date +%s.%N)
	env "${envs[@]}" timeout 240 $G/gpuprof run --output=$W/$name -- "$@" >$W/$name.log 2>&1
	echo "rc=$? wall=$(python3 -c "import time; print(round(time.time() - $t0, 2))")" >>$W/$name.log
	$G/gpuprof report $W/$name >$W/$name.report.txt 2>&1
	$G/gpuprof report --format=json $W/$name >$W/$name.report.json 2>/dev/null
	echo "== $name: $(grep -c . $W/$name.log) log lines, $(ls $W/$name/step0 2>/dev/null | tr '\n' ' ')"
	grep "^TRUTH" $W/$name.log | cut -c1-400
	tail -2 $W/$name.log
	sed -n '/== Findings/,/== How slow/p' $W/$name.report.txt | head -30
}
want() { [ $# -eq 0 ] || [[ " $* " == *" $1 "* ]]; }
sel="$*"
F=bench/field
for p in ${sel:-jax jax_noprealloc lightning compile input gpt2 leak oom}; do
	case $p in
	jax) run jax -- python3 $F/jax_loop.py ;;
	jax_noprealloc) run jax_noprealloc XLA_PYTHON_CLIENT_PREALLOCATE=false -- python3 $F/jax_loop.py ;;
	lightning) run lightning GPUPROF_DEBUG=1 -- python3 $F/lightning_fit.py ;;
	compile) run compile -- python3 $F/compile_ro.py ;;
	input) run input -- python3 $F/input_bound.py ;;
	gpt2) run gpt2 -- python3 $F/gpt2.py ;;
	gpt2_windows) run gpt2_windows STEPS=240 GPUPROF_CAPTURE=sampled=10/40 -- python3 $F/gpt2.py ;;
	# the same since session 16's module ranges in windows (tests/fixtures/field-gpt2-layers)
	gpt2_layers) run gpt2_layers STEPS=240 GPUPROF_CAPTURE=sampled=10/40 -- python3 $F/gpt2.py ;;
	leak) run leak -- python3 $F/leak.py ;;
	oom) run oom -- python3 $F/oom.py ;;
	esac
done
(cd $W && tar czf $OUT/field.tgz .) && ls -la $OUT
