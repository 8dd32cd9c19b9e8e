#!/bin/bash
# Multi-GPU run (issue: straggler and communication/compute overlap on real NCCL): the
# PyTorch twin under DistributedDataParallel, one process per GPU, each wrapped by
# `gpuprof run` (the agent is the per-rank wrapper, as torchrun would launch it), once
# with --imbalance-rank 1 --imbalance-ms 20 and once clean. Needs >= 2 GPUs.
. "$(dirname "$0")/gpu-env.sh"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
n=$(nvidia-smi -L | wc -l); echo "GPUs: $n" | tee $OUT/ddp.txt
ARGS="--ddp --dim 4096 --layers 8 --batch 512 --steps 20 --time"
for run in imbalanced clean; do
	extra=""; [ $run = imbalanced ] && extra="--imbalance-rank 1 --imbalance-ms 20"
	for r in $(seq 0 $((n - 1))); do
		env RANK=$r LOCAL_RANK=$r WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 MASTER_PORT=$((29500 + ${#run})) \
			SLURM_PROCID=$r SLURM_NTASKS=$n SLURM_JOB_ID=77$n${#run} \
			timeout 150 $G/gpuprof run --modes=all --output=/tmp/ddp/$run -- python3 examples/train_mlp.py $ARGS $extra \
			>/tmp/ddp-$run-$r.log 2>&1 &
	done
	wait
	grep -h "step_ms_median" /tmp/ddp-$run-*.log | sed "s/^/$run (script's own timing): /" | tee -a $OUT/ddp.txt
	$G/gpuprof report /tmp/ddp/$run | sed -n '1,40p' | tee -a $OUT/ddp.txt
	$G/gpuprof report --format=json /tmp/ddp/$run | python3 -c '
import json,sys; j=json.load(sys.stdin)
for r in j["ranks"]:
    g=r["gpu"]; print("rank", r["rank"], "median_ms", r["steps"]["median_ms"], "compute_ms", g["compute_ns"]/1e6, "comm_ms", g["comm_ns"]/1e6, "overlap_ms", g["comm_compute_overlap_ns"]/1e6)
print("findings", [f["id"] for f in j["findings"]])' | tee -a $OUT/ddp.txt
done
tail -3 /tmp/ddp-*-0.log >> $OUT/ddp.txt
cd /tmp/ddp && tar czf $OUT/ddp-fixtures.tgz --exclude='report.*' .
