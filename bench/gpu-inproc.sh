#!/bin/bash
# In-process A/B for what CUPTI tracing costs: one run of examples/train_mlp.py with CUDA
# activity captured in alternating blocks of steps (--capture=steps=...), then the median
# step time of captured blocks against uncaptured ones, from the report's per-step
# durations. Identical processes differ by up to +-15 % on the H200 (doc/performance.md);
# blocks of the same process do not carry that noise. The first step of every block (the
# switch) is left out of both sides. Usage: bench/gpu-inproc.sh [MODES] [STEPS] [BLOCK]
# (default all 400 20). Binaries from bench/gpu-carry.sh; device machine. Not yet run.
cd "$(dirname "$0")/.."
G=$PWD/.gpubin
export LD_LIBRARY_PATH=$G:${LD_LIBRARY_PATH:-}
export GPUPROF_INJECT=$G/.libs/libgpuprof-inject.so GPUPROF_AGENT=$G/gpuprof-agent
MODES=${1:-all} STEPS=${2:-400} BLOCK=${3:-20}
win=$(python3 -c "import sys; s,b=int(sys.argv[1]),int(sys.argv[2]); print(','.join(f'{a}-{a+b-1}' for a in range(2*b, s, 2*b)))" $STEPS $BLOCK)
for wl in seed launch; do
	args="--dim 4096 --layers 8 --batch 64 --steps $STEPS"
	[ $wl = launch ] && args="--dim 256 --layers 32 --batch 64 --steps $STEPS"
	rm -rf /tmp/inproc
	$G/gpuprof run --modes=$MODES --capture=steps=$win --output=/tmp/inproc -- python3 examples/train_mlp.py $args >/dev/null 2>&1
	$G/gpuprof report --quiet /tmp/inproc
	python3 - /tmp/inproc/report.json $BLOCK $wl <<'PY'
import json, sys, statistics as st
r = json.load(open(sys.argv[1]))["ranks"][0]; b = int(sys.argv[2])
d, warm = r["steps"]["durations_ms"], r["steps"]["warmup"]
on, off = [], []
for i, ms in enumerate(d):
    step = i + warm
    blk, pos = divmod(step, b)
    if step < 2 * b or pos == 0:
        continue  # warm-up block, and the step of each switch
    (on if blk % 2 == 0 else off).append(ms)
print(f"{sys.argv[3]:7s} captured {st.median(on):.4f} ms ({len(on)} steps)  not captured {st.median(off):.4f} ms ({len(off)})"
      f"  ratio {st.median(on) / st.median(off):.4f}  switches {r['capture']['switches']}")
PY
done
