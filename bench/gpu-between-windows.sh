#!/bin/bash
# Run on the GPU machine: what the default costs a PyTorch step between capture windows, and
# what a CUPTI detached between windows does there and to a torch.profiler the program runs.
# 1. the seed MLP (bench/field/seed_mlp.py), STEPS steps, rounds rotated (CONFIGS): plain,
#    default (not detached since session 15), detach forced, the light modes (no kernels),
#    plain again; then each gpuprof run's windows and detaches by step;
# 2. torch.profiler over steps 100-139 (bench/field/profiler_mid.py, PER_STEP=1), windows of
#    10 in 50, detach forced and off: per profiled step, the launches it saw and how many
#    kept their kernel, beside gpuprof's windows and detaches by the program's step;
# 3. NVTX push+pop, no tool and --modes=nvtx (bench/nvtx_cost, literal names).
# Binaries from gpu-carry.sh.
. "$(dirname "$0")/gpu-env.sh"
OUT=${OUT:-/tmp/out}
mkdir -p $OUT
export PYTHONUNBUFFERED=1
echo "== 1. seed MLP, ${STEPS:=800} steps, ${ROUNDS:=3} rounds"
ROUNDS=$ROUNDS STEPS=$STEPS WORKLOADS=seed CONFIGS=${CONFIGS:-"plain default detach light plain2"} NO_MICRO=1 \
	bash bench/gpu-cost.sh
for c in default nodetach detach; do
	[ -d /tmp/cost.$c ] || continue
	f=$(find /tmp/cost.$c -name 'rank*.gpr' | head -1)
	$G/gpuprof dump --events "$f" >/tmp/dump.$c 2>/dev/null
	echo "$c (last round): $(grep -c '^control' /tmp/dump.$c) switches, $(grep -c 'b=1073741824' /tmp/dump.$c) detaches"
	python3 bench/windows_by_step.py /tmp/dump.$c | head -40
done
cp $OUT/cost.csv $OUT/seed-cost.csv 2>/dev/null
echo "== 2. torch.profiler over steps 100-139, windows of 10 in 50"
for d in 1 0; do
	rm -rf /tmp/dp$d
	PER_STEP=1 STEPS=300 GPUPROF_CAPTURE=sampled=10/50 GPUPROF_CUPTI_DETACH=$d timeout 300 \
		$G/gpuprof run --output=/tmp/dp$d -- python3 bench/field/profiler_mid.py >$OUT/prof$d.out 2>&1
	echo "detach=$d rc=$? $(grep -h KINETO $OUT/prof$d.out)"
	grep -h PERSTEP $OUT/prof$d.out
	f=$(find /tmp/dp$d -name 'rank*.gpr' | head -1)
	$G/gpuprof dump --events "$f" >/tmp/dumpp$d 2>/dev/null
	python3 bench/windows_by_step.py /tmp/dumpp$d $OUT/prof$d.out
	grep -i "error\|warn\|Traceback" $OUT/prof$d.out | head -5
done
echo "no tool: $(PER_STEP=1 timeout 300 python3 bench/field/profiler_mid.py 2>&1 | grep 'KINETO\|PERSTEP')"
echo "== 3. NVTX push+pop (ns per pair: mean (best burst)), 3 rounds"
for r in 1 2 3; do
	echo "none $($G/nvtx_cost 20 const) nvtx $($G/gpuprof run --modes=nvtx --output=/tmp/nv -- $G/nvtx_cost 20 const)"
	rm -rf /tmp/nv
done
