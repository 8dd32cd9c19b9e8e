#!/bin/bash
# GPU validation and overhead run for the device machine (doc/validation.md,
# doc/performance.md). Binaries are built on the CPU machine and carried in .gpubin
# (bench/gpu-carry.sh makes it). Results: $OUT/validate.txt, $OUT/overhead.csv,
# $OUT/fixtures.tgz. Usage: bench/gpu-validate.sh [quick]
. "$(dirname "$0")/gpu-env.sh"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
V=$OUT/validate.txt
FX=/tmp/fx
rm -rf $FX; mkdir -p $FX $OUT
say() { echo "$*" | tee -a $V; }
gp() { $G/gpuprof "$@"; }
json() { gp report --format=json "$1"; }

say "== device: $(nvidia-smi -L | head -1)"
say "== 1. exact counts (bench/known_counts.cu)"
gp run --modes=all --output=$FX/known -- $G/known_counts | tee -a $V
json $FX/known | python3 -c '
import json,sys; r=json.load(sys.stdin)["ranks"][0]; g=r["gpu"]; m=r["memory"]
got=dict(kernels=g["kernels_total"],memcpy=g["memcpy"],memset=g["memset"],allocs=m["allocs"],frees=m["frees"],sync_calls=r["sync"]["calls"])
want=dict(kernels=10,memcpy=3,memset=2,allocs=4,frees=4,sync_calls=4)
print("counts", got, "want", want, "MATCH" if got==want else "MISMATCH")' | tee -a $V

say "== 2. CPU and CUDA paths agree on the loss (fp32, same seed)"
$G/gpuprof-train-mlp --dim 64 --layers 3 --batch 16 --steps 10 | tail -1 | tee -a $V
$G/gpuprof-train-mlp --dim 64 --layers 3 --batch 16 --steps 10 --cpu | tail -1 | tee -a $V

say "== 3. compute-sanitizer memcheck"
timeout 120 compute-sanitizer --tool memcheck $G/gpuprof-train-mlp --dim 128 --layers 2 --batch 32 --steps 3 --adam --unfused 2>&1 | tail -3 | tee -a $V

say "== 4. planted pathologies (CUDA workload, gpuprof run --modes=all)"
BIG="--dim 4096 --layers 8 --batch 2048 --dtype bf16 --steps 12"
pathology() { local name=$1; shift
	gp run --modes=all --output=$FX/$name -- $G/gpuprof-train-mlp "$@" >$FX/$name.log 2>&1
	json $FX/$name | python3 -c '
import json,sys; j=json.load(sys.stdin); r=j["ranks"][0]; g=r["gpu"]; m=r["memory"]
span=max(1,g["span_ns"])
print("%-10s findings=[%s] step_ms=%.3f busy=%.1f%% hostwait=%.1f%% sync_ms=%.2f (%s) kernels/step=%.0f mean_kernel_us=%.1f small=%d peak_MiB=%.0f growth_KiB/step=%.0f leak_MiB=%.1f optim_MiB=%.0f nvml_samples=%d" % (sys.argv[1], ",".join(f["id"] for f in j["findings"]), r["steps"]["median_ms"], 100*g["busy_ns"]/span, 100*g["idle_host_wait_ns"]/span, r["sync"]["ns"]/1e6, r["sync"]["top_range"], g["kernels_per_step"], (g["compute_ns"]/max(1,g["kernels"]))/1e3, g["small_kernels"], m["peak_bytes"]/2**20, m["growth_bytes_per_step"]/1024, m["leak_bytes"]/2**20, m["optimizer_bytes"]/2**20, g["nvml_samples"]))' $name | tee -a $V
}
pathology clean $BIG --sgd
pathology sync $BIG --sgd --sync-every-step
pathology idle $BIG --sgd --host-stall-ms 30
pathology leak $BIG --sgd --leak-bytes 67108864
pathology adam $BIG --adam
pathology frag --dim 256 --layers 32 --batch 64 --steps 30 --sgd --unfused
# a straggler: two ranks of one job sharing the GPU, rank 1 sleeps 20 ms per step
for r in 0 1; do SLURM_PROCID=$r SLURM_JOB_ID=9001 SLURM_NTASKS=2 gp run --modes=all --output=$FX/straggler -- $G/gpuprof-train-mlp $BIG --sgd --imbalance-rank 1 --imbalance-ms 20 >$FX/straggler.$r.log 2>&1 & done; wait
for r in 0 1; do SLURM_PROCID=$r SLURM_JOB_ID=9002 SLURM_NTASKS=2 gp run --modes=all --output=$FX/balanced -- $G/gpuprof-train-mlp $BIG --sgd >$FX/balanced.$r.log 2>&1 & done; wait
for n in straggler balanced; do say "$n: $(json $FX/$n | python3 -c 'import json,sys; j=json.load(sys.stdin); print("findings=[%s]" % ",".join(f["id"]+":"+f["title"] for f in j["findings"]), " medians:", [r["steps"]["median_ms"] for r in j["ranks"]])')"; done
gp report $FX/sync | sed -n '1,12p' >>$V

(cd $FX && tar czf $OUT/fixtures.tgz --exclude='report.*' --exclude='*.log' .)
[ "${1:-}" = quick ] && exit 0

say "== 5. PyTorch: kernel count vs torch.profiler, reserved memory"
python3 examples/train_mlp.py --steps 5 --dim 1024 --layers 4 --torch-profiler | grep torch_profiler | tee -a $V
gp run --modes=cuda,mem --output=$FX/pt -- python3 examples/train_mlp.py --steps 5 --dim 1024 --layers 4 | grep memory_reserved | tee -a $V
json $FX/pt | python3 -c 'import json,sys; r=json.load(sys.stdin)["ranks"][0]; g=r["gpu"]; print("gpuprof kernels launched inside steps", g["kernels_in_steps"], "kernels in all", g["kernels_total"], "bytes by library at the last step", r["memory"]["bytes_by_library_at_last_step"], "peak", r["memory"]["peak_bytes"])' | tee -a $V

say "== 6. overhead (bench/gpu-overhead.sh)"
bash bench/gpu-overhead.sh | tee -a $V
