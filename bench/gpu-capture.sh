#!/bin/bash
# What switching CUDA activity tracing on in the middle of a run costs (kineto reported
# multi-second stalls from module re-instrumentation), and where gpuprof's kernel count
# and torch.profiler's differ, by kernel name. Device machine; binaries from
# bench/gpu-carry.sh in .gpubin. Results: $OUT/capture.txt. Usage: bench/gpu-capture.sh
. "$(dirname "$0")/gpu-env.sh"
OUT=${OUT:-/tmp/out}
V=$OUT/capture.txt
W=/tmp/gpcap
rm -rf $W; mkdir -p $W $OUT
say() { echo "$*" | tee -a $V; }
gp() { $G/gpuprof "$@"; }

say "== switch cost: cuda off for steps 0-19, on for 20-29, off after (per-step times from the report)"
for wl in seed launch; do
	args="--dim 4096 --layers 8 --batch 64 --steps 40"
	[ $wl = launch ] && args="--dim 256 --layers 32 --batch 64 --steps 40"
	for rep in 1 2 3; do
		gp run --modes=all --capture=steps=20-29 --output=$W/$wl$rep -- python3 examples/train_mlp.py $args >/dev/null 2>&1
		gp run --modes=all --output=$W/${wl}all$rep -- python3 examples/train_mlp.py $args >/dev/null 2>&1
		gp report --quiet $W/$wl$rep; gp report --quiet $W/${wl}all$rep
		python3 - $W/$wl$rep $W/${wl}all$rep $wl <<'PY' | tee -a $V
import json, sys, statistics as st
w = json.load(open(sys.argv[1] + "/report.json"))["ranks"][0]
a = json.load(open(sys.argv[2] + "/report.json"))["ranks"][0]
d = w["steps"]["durations_ms"]; warm = w["steps"]["warmup"]
step = lambda i: d[i - warm]
off = st.median(d[:20 - warm]); on = st.median(d[21 - warm:30 - warm]); after = st.median(d[31 - warm:])
print(f"{sys.argv[3]:7s} off {off:7.3f} ms | step 20 (switch on) {step(20):8.3f} ms | on {on:7.3f} ms | "
      f"step 30 (switch off) {step(30):7.3f} ms | after {after:7.3f} ms | traced from start {a['steps']['median_ms']:7.3f} ms | "
      f"switches {w['capture']['switches']} slowest {w['capture']['switch_max_ns']/1e6:.3f} ms in the application")
PY
	done
done

say "== kernel count: gpuprof vs torch.profiler, by name (same workload, separate runs)"
TORCH_KERNEL_NAMES=$W/torch.json python3 examples/train_mlp.py --steps 5 --dim 1024 --layers 4 --torch-profiler | grep torch_profiler | tee -a $V
gp run --modes=cuda --output=$W/pt -- python3 examples/train_mlp.py --steps 5 --dim 1024 --layers 4 >/dev/null 2>&1
gp report --quiet $W/pt
python3 - $W/torch.json $W/pt/report.json <<'PY' | tee -a $V
import json, sys
t = json.load(open(sys.argv[1]))
j = json.load(open(sys.argv[2]))
g = {k["name"]: k["calls"] for k in j["kernels"]}
print("torch.profiler kernels", sum(t.values()), "gpuprof kernels", sum(g.values()),
      "gpuprof kernels_total", j["ranks"][0]["gpu"]["kernels_total"])
for n in sorted(set(t) | set(g)):
    if t.get(n, 0) != g.get(n, 0):
        print(f"  differs: torch {t.get(n, 0):4d} gpuprof {g.get(n, 0):4d}  {n[:120]}")
PY

say "== NVML on this machine (mode gpu): what it can sample"
gp run --modes=gpu --output=$W/nv -- python3 examples/train_mlp.py --steps 60 --dim 4096 >/dev/null 2>&1
gp report $W/nv | sed -n '/GPU I\/O/,/^$/p' | tee -a $V
