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
CSV=$OUT/cost.csv
echo "config;round;truth" >$CSV
py="python3 bench/field/gpt2.py"
for round in $(seq $ROUNDS); do
	set -- $CONFIGS
	for _ in $(seq $(( (round - 1) % $# ))); do set -- "${@:2}" "$1"; done
	for cfg in "$@"; do
		g="$G/gpuprof run --output=/tmp/cost.$cfg --"
		case $cfg in
		plain | plain2) cmd="$py" ;;
		default) cmd="$g $py" ;;
		capall) cmd="env GPUPROF_CAPTURE=all $g $py" ;;
		apiwin) cmd="env GPUPROF_CAPTURE=all GPUPROF_CUPTI_API=windows $g $py" ;;
		apioff) cmd="env GPUPROF_CAPTURE=all GPUPROF_CUPTI_API=off $g $py" ;;
		light) cmd="$G/gpuprof run --modes=timing,nvtx,mem --output=/tmp/cost.$cfg -- $py" ;;
		nvtx) cmd="$G/gpuprof run --modes=timing,nvtx --output=/tmp/cost.$cfg -- $py" ;;
		torchprof) cmd="env PROFILE=1 $py" ;;
		esac
		rm -rf /tmp/cost.$cfg
		t=$(env STEPS=$STEPS timeout 120 $cmd 2>/dev/null | grep "^TRUTH" | cut -c7-)
		echo "$cfg;$round;$t" >>$CSV
	done
done
python3 - "$CSV" <<'PY'
import json, statistics as st, sys
rows = [l.rstrip("\n").split(";", 2) for l in open(sys.argv[1]).readlines()[1:]]
by = {}
for cfg, rnd, t in rows:
    if not t:
        print("no truth:", cfg, rnd); continue
    ms = json.loads(t)["step_ms"]
    # all steps after warm-up, and the steady ones after the first capture window
    by.setdefault(cfg, {})[rnd] = (st.median(ms), st.median(ms[25:]) if len(ms) > 30 else st.median(ms))
for part, name in ((0, "all steps"), (1, "steps 30+")):
    print("GPT-2 step, %s: config  median ms (rounds)  ratio to plain of the same round (median, min-max)" % name)
    for cfg, r in by.items():
        rat = [r[k][part] / by["plain"][k][part] for k in r if k in by.get("plain", {})]
        print("  %-10s %8.3f  x%.3f (%.3f-%.3f)" % (cfg, st.median(v[part] for v in r.values()),
              st.median(rat) if rat else 0, min(rat) if rat else 0, max(rat) if rat else 0))
PY
echo "== NVTX push+pop (ns per pair, 3 rounds)"
for r in 1 2 3; do
	echo "none $($G/nvtx_cost 20)"
	echo "nvtx $($G/gpuprof run --modes=nvtx --output=/tmp/nv -- $G/nvtx_cost 20)"
	echo "timing $($G/gpuprof run --modes=timing --output=/tmp/nv -- $G/nvtx_cost 20)"
	rm -rf /tmp/nv
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
