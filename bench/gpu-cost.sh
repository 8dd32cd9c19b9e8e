#!/bin/bash
# Run on the GPU machine: what gpuprof's collection costs, each configuration against plain
# runs of the same round (rotated order, ROUNDS rounds), on Hugging Face GPT-2 (launch-bound,
# bench/field/gpt2.py: its own CUDA-event step times, all kept in its TRUTH line, so the
# steady steps after the first capture window can be taken apart afterwards); plus NVTX
# push+pop and the per-launch cost of kernel tracing on empty kernels (bench/launch_loop.cu).
# Results: $OUT/cost.csv (config,round,step_ms list) and a table. Binaries from gpu-carry.sh.
. "$(dirname "$0")/gpu-env.sh"
OUT=${OUT:-/tmp/out}
mkdir -p $OUT
export PYTHONUNBUFFERED=1
ROUNDS=${ROUNDS:-3} STEPS=${STEPS:-60}
CONFIGS=${CONFIGS:-"plain default capall apiwin light torchprof plain2"}
WORKLOADS=${WORKLOADS:-gpt2}
CSV=$OUT/cost.csv
[ -f $CSV ] || echo "config;round;truth" >$CSV
for round in $(seq $ROUNDS); do
for wl in $WORKLOADS; do
	case $wl in
	gpt2) py="python3 bench/field/gpt2.py" ;;
	seed) py="python3 bench/field/seed_mlp.py" ;;
	gemm) py="env BIG=1 python3 bench/field/seed_mlp.py" ;;
	esac
	set -- $CONFIGS
	for _ in $(seq $(( (round - 1) % $# ))); do set -- "${@:2}" "$1"; done
	for cfg in "$@"; do
		g="$G/gpuprof run --output=/tmp/cost.$cfg --"
		case $cfg in
		plain | plain2) cmd="$py" ;;
		default) cmd="$g $py" ;;
		nodetach) cmd="env GPUPROF_CUPTI_DETACH=0 $g $py" ;;
		detach) cmd="env GPUPROF_CUPTI_DETACH=1 $g $py" ;;
		capall) cmd="env GPUPROF_CAPTURE=all $g $py" ;;
		apiwin) cmd="env GPUPROF_CAPTURE=all GPUPROF_CUPTI_API=windows $g $py" ;;
		apioff) cmd="env GPUPROF_CAPTURE=all GPUPROF_CUPTI_API=off $g $py" ;;
		light) cmd="$G/gpuprof run --modes=timing,nvtx,mem --output=/tmp/cost.$cfg -- $py" ;;
		nvtx) cmd="$G/gpuprof run --modes=timing,nvtx --output=/tmp/cost.$cfg -- $py" ;;
		torchprof) cmd="env PROFILE=1 $py" ;;
		esac
		rm -rf /tmp/cost.$cfg
		# PIN: a prefix for every run, plain ones included (bench/gpu-default-cost.sh: ASLR
		# off and a fixed hash seed, so that identical processes differ less)
		t=$(env STEPS=$STEPS timeout 120 $PIN $cmd 2>/dev/null | grep "^TRUTH" | cut -c7-)
		echo "$wl.$cfg;$round;$t" >>$CSV
	done
done
done
python3 bench/cost_table.py "$CSV"
[ -n "$NO_MICRO" ] && exit 0
echo "== NVTX push+pop (ns per pair, 3 rounds; const: literal names, the push+pop alone)"
for r in 1 2 3; do
	echo "none $($G/nvtx_cost 20) const $($G/nvtx_cost 20 const)"
	echo "nvtx $($G/gpuprof run --modes=nvtx --output=/tmp/nv -- $G/nvtx_cost 20) const $($G/gpuprof run --modes=nvtx --output=/tmp/nv2 -- $G/nvtx_cost 20 const)"
	echo "timing $($G/gpuprof run --modes=timing --output=/tmp/nv -- $G/nvtx_cost 20)"
	rm -rf /tmp/nv /tmp/nv2
done
echo "== empty-kernel launches (us per launch, median of 200 steps of 1000)"
for r in 1 2; do
	echo "none $($G/launch-loop 200 1000)"
	echo "capall $(GPUPROF_CAPTURE=all $G/gpuprof run --output=/tmp/ll -- $G/launch-loop 200 1000)"
	echo "default $($G/gpuprof run --output=/tmp/ll -- $G/launch-loop 200 1000)"
	echo "timing $($G/gpuprof run --modes=timing,nvtx --output=/tmp/ll -- $G/launch-loop 200 1000)"
	rm -rf /tmp/ll
done
echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
grep -m1 -o 'constant_tsc\|nonstop_tsc' /proc/cpuinfo | sort -u | tr '\n' ' '; echo
