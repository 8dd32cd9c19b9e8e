#!/bin/bash
# Run on the GPU machine: what each part of CUPTI costs a launch on the host, and whether
# cuptiFinalize gives it back (bench/cupti_floor.cu, one process per mode, the modes rotated
# within each of ROUNDS rounds); then the same launch loop under gpuprof's own configurations.
# Binaries from gpu-carry.sh.
. "$(dirname "$0")/gpu-env.sh"
ROUNDS=${ROUNDS:-3}
export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/usr/local/cuda/lib64
set -- ${MODES:-none act act-kern act-api act-mem sub}
for round in $(seq $ROUNDS); do
	for m in "$@"; do
		timeout 120 $G/cupti-floor $m 100 1000 | sed "s/^/$round $m /"
	done
	set -- "${@:2}" "$1"
done
echo "== gpuprof on the same empty-kernel loop (us per launch, median of 200 steps of 1000)"
for r in $(seq $ROUNDS); do
	echo "none $($G/launch-loop 200 1000)"
	echo "default $($G/gpuprof run --output=/tmp/ll -- $G/launch-loop 200 1000)"
	echo "light $($G/gpuprof run --modes=timing,nvtx,mem --output=/tmp/ll -- $G/launch-loop 200 1000)"
	echo "timing $($G/gpuprof run --modes=timing,nvtx --output=/tmp/ll -- $G/launch-loop 200 1000)"
	rm -rf /tmp/ll
done
