#!/bin/bash
# The quickstart's sample job: the seed's MLP training step with NVTX ranges, one task per
# rank. sbatch --gpuprof=mem,nvtx examples/train.sh
#SBATCH --job-name=gpuprof-sample
prefix=${GPUPROF_PREFIX:-/usr/local}
# sbatch runs a copy of this script from its spool: look beside the submitted one
here=${SLURM_SUBMIT_DIR:-$(dirname "$0")}
if command -v nvidia-smi >/dev/null 2>&1 && [ -f "$here/train_mlp.py" ] &&
	python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
	srun python3 "$here/train_mlp.py" --steps 30 --dim 2048 --layers 8
else
	srun "$prefix/bin/gpuprof-train-mlp" --steps 20 --dim 128 --layers 4
fi
