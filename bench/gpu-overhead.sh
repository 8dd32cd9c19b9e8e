#!/bin/bash
# Overhead on the device machine: paired, interleaved runs of examples/train_mlp.py
# --time (each run prints the median of its per-step times, steps 4..STEPS, each step
# between two torch.cuda.synchronize() calls). Every round runs every configuration once,
# in an order rotated by one each round; the table gives, per configuration, the median
# over rounds of (config / plain of the same round). "plain2" is a second plain run per
# round: its ratio is the noise floor of the method. Binaries from bench/gpu-carry.sh.
# Usage: ROUNDS=5 STEPS=150 WORKLOADS="seed launch" bench/gpu-overhead.sh
# Results: $OUT/overhead.csv and the table on stdout.
. "$(dirname "$0")/gpu-env.sh"
OUT=${OUT:-/tmp/out}
CSV=$OUT/overhead.csv
mkdir -p $OUT
ROUNDS=${ROUNDS:-5} STEPS=${STEPS:-150}
CONFIGS=${CONFIGS:-"plain nvtx light cuda floor torchprof plain2"}
[ -f $CSV ] || echo "workload,config,round,step_ms_median" >$CSV
for round in $(seq $ROUNDS); do
	for wl in ${WORKLOADS:-seed launch}; do
		args="--dim 4096 --layers 8 --batch 64 --steps $STEPS --time"
		[ $wl = launch ] && args="--dim 256 --layers 32 --batch 64 --steps $STEPS --time"
		set -- $CONFIGS
		for _ in $(seq $(( (round - 1) % $# ))); do set -- "${@:2}" "$1"; done
		for cfg in "$@"; do
			py="python3 examples/train_mlp.py $args"
			case $cfg in
			plain | plain2) cmd="$py" ;;
			nvtx) cmd="$G/gpuprof run --modes=timing,nvtx --output=/tmp/oh -- $py" ;;
			light) cmd="$G/gpuprof run --modes=timing,nvtx,mem,gpu --output=/tmp/oh -- $py" ;;
			mem) cmd="$G/gpuprof run --modes=timing,nvtx,mem --output=/tmp/oh -- $py" ;;
			memflush1s) cmd="env GPUPROF_CUPTI_FLUSH_MS=1000 $G/gpuprof run --modes=timing,nvtx,mem --output=/tmp/oh -- $py" ;;
			gpu) cmd="$G/gpuprof run --modes=timing,nvtx,gpu --output=/tmp/oh -- $py" ;;
			gpu1hz) cmd="env GPUPROF_NVML_HZ=1 $G/gpuprof run --modes=timing,nvtx,gpu --output=/tmp/oh -- $py" ;;
			cuda) cmd="$G/gpuprof run --modes=all --output=/tmp/oh -- $py" ;;
			floor) cmd="env GPUPROF_CUPTI_DISCARD=1 $G/gpuprof run --modes=all --output=/tmp/oh -- $py" ;;
			torchprof) cmd="$py --torch-profiler" ;;
			esac
			ms=$($cmd 2>/dev/null | sed -n "s/^step_ms_median \([0-9.]*\).*/\1/p")
			echo "$wl,$cfg,$round,$ms" >>$CSV
			rm -rf /tmp/oh
		done
	done
done
python3 - $CSV "$CONFIGS" <<'PY'
import csv, sys, statistics as st
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["step_ms_median"]]
for wl in sorted({r["workload"] for r in rows}):
    base = {r["round"]: float(r["step_ms_median"]) for r in rows if r["workload"] == wl and r["config"] == "plain"}
    for cfg in sys.argv[2].split():
        ratios = sorted(float(r["step_ms_median"]) / base[r["round"]] for r in rows
                        if r["workload"] == wl and r["config"] == cfg and r["round"] in base)
        ms = [float(r["step_ms_median"]) for r in rows if r["workload"] == wl and r["config"] == cfg]
        if ratios:
            print(f"{wl:7s} {cfg:10s} median step {st.median(ms):8.3f} ms  paired ratio median {st.median(ratios):.3f}"
                  f"  min {ratios[0]:.3f} max {ratios[-1]:.3f}  ({len(ratios)} rounds)")
PY
