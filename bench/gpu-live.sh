#!/bin/bash
# The live figures on a GPU (issue 52), for the device machine: binaries from
# bench/gpu-carry.sh (.gpubin). Results under $OUT (live-*.json, top-*.txt, summary.txt).
#   A: the seed-style MLP (dim 4096, 8 layers, bf16) in the default modes with a 2 s
#      live_interval: a live file mid-run, held to the program's own synchronised step time
#      (basis gpu: the step markers), NVML busy and memory against nvidia-smi's.
#   B: the same with --host-stall-ms 40 (slow data loading): the GPU idles, so the live
#      busy % falls and gpu_idle fires; the period includes the stall.
# Usage: OUT=/tmp/out bash bench/gpu-live.sh
. "$(dirname "$0")/gpu-env.sh"
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export GPUPROF_LIVE_INTERVAL=2
MLP="$G/gpuprof-train-mlp --dim 4096 --layers 8 --batch 2048 --dtype bf16 --sgd"
one() { # NAME STEPS [MLP OPTIONS]: run, a live file and top's lines mid-run, the final file
	local name=$1 steps=$2; shift 2
	rm -rf "/tmp/gl-$name"
	$G/gpuprof run -q --output="/tmp/gl-$name" -- $MLP --steps "$steps" "$@" >"$OUT/prog-$name.txt" 2>&1 &
	local run=$!
	sleep 12
	cp /tmp/gl-$name/step0/rank0.live.json "$OUT/live-$name-mid.json" 2>/dev/null
	$G/gpuprof top --once "/tmp/gl-$name" >"$OUT/top-$name.txt" 2>&1
	$G/gpuprof report --format=json "/tmp/gl-$name" >"$OUT/report-live-$name.json" 2>&1
	nvidia-smi --query-gpu=memory.used,memory.total,utilization.gpu --format=csv,noheader,nounits >"$OUT/smi-$name.txt" 2>&1
	wait $run
	cp /tmp/gl-$name/step0/rank0.live.json "$OUT/live-$name-end.json" 2>/dev/null
	$G/gpuprof report "/tmp/gl-$name" >"$OUT/report-$name.txt" 2>&1
}
one plain 4000
one stall 400 --host-stall-ms 40
python3 - "$OUT" <<'PY' >"$OUT/summary.txt" 2>&1
import json, re, sys
out = sys.argv[1]
for name in ("plain", "stall"):
    prog = open(f"{out}/prog-{name}.txt").read()
    m = re.search(r"synchronised_step_ms ([0-9.]+)", prog)
    sync = float(m.group(1)) if m else float("nan")
    try:
        mid = json.load(open(f"{out}/live-{name}-mid.json"))
        end = json.load(open(f"{out}/live-{name}-end.json"))
    except Exception as e:
        print(f"{name}: no live file ({e})"); continue
    smi = open(f"{out}/smi-{name}.txt").read().strip()
    print(f"{name}: program's synchronised step {sync:.3f} ms; live mid-run: basis {mid['step_basis']}, "
          f"median {mid['median_ms']:.3f} ms so far, last {mid['last_median_ms']:.3f} ms over {mid['last_steps']} steps; "
          f"end: median {end['median_ms']:.3f} ms over {end['steps']} steps ({(end['median_ms'] / sync - 1) * 100:+.2f} % against the program)")
    print(f"  busy {mid['busy_pct']:.1f} % so far, {mid['last_busy_pct']:.1f} % last; memory {mid['mem_used_bytes'] / 2**20:.0f} MiB "
          f"(peak {mid['mem_peak_bytes'] / 2**20:.0f}) of {mid['mem_total_bytes'] / 2**20:.0f} MiB; nvidia-smi then: {smi} (MiB, MiB, %)")
    print(f"  idle before the first step {mid['idle_startup_s']:.2f} s, once steps ran {mid['idle_steps_s']:.2f} s; "
          f"findings {[f['id'] for f in mid['findings']]}; agent CPU {mid['agent_cpu_last_ms']:.1f} ms in the last {mid['interval_s']:.0f} s")
PY
cat "$OUT/summary.txt"
