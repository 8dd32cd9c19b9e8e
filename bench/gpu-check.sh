#!/bin/bash
# One device-machine run after a change to the collector: the GPU test tier, the capture
# window / kernel-count / NVML measurements (bench/gpu-capture.sh), fresh fixtures for the
# new record types, and the nvml.h constants agent/nvml.c declares by hand. Binaries from
# bench/gpu-carry.sh. Results under $OUT.
. "$(dirname "$0")/gpu-env.sh"
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
H=/usr/local/cuda/targets/x86_64-linux/include/nvml.h
grep -nE "define NVML_FI_DEV_(PCIE_COUNT_(TX|RX)_BYTES|NVLINK_THROUGHPUT_DATA_(TX|RX)) |nvmlEventType(XidCriticalError|SingleBitEccError|DoubleBitEccError) |NVML_ERROR_(NOT_SUPPORTED|TIMEOUT) " $H >$OUT/nvml-consts.txt
sed -n '/typedef struct nvmlEventData_st/,/} nvmlEventData_t/p;/typedef struct nvmlFieldValue_st/,/} nvmlFieldValue_t/p' $H >>$OUT/nvml-consts.txt
GP_BUILD=$G KNOWN_COUNTS=$G/known_counts timeout 300 bash tests/gpu/t_gpu.sh >$OUT/t_gpu.txt 2>&1
FX=/tmp/fx2; rm -rf $FX; mkdir -p $FX
$G/gpuprof run --modes=all --output=$FX/known -- $G/known_counts >/dev/null 2>&1
$G/gpuprof run --modes=all --capture=steps=10-19 --output=$FX/window -- $G/gpuprof-train-mlp --dim 4096 --layers 8 --batch 2048 --dtype bf16 --steps 30 --sgd >/dev/null 2>&1
$G/gpuprof run --modes=timing,gpu --output=$FX/nvml -- $G/gpuprof-train-mlp --dim 4096 --layers 8 --batch 2048 --dtype bf16 --steps 40 --sgd >/dev/null 2>&1
for d in known window nvml; do $G/gpuprof report $FX/$d >$OUT/fx-$d.txt 2>&1; done
(cd $FX && tar czf $OUT/fixtures2.tgz --exclude='report.*' .)
[ "${1:-}" = tier ] || timeout 280 bash bench/gpu-capture.sh >/dev/null 2>&1
