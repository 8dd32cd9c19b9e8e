#!/bin/bash
# Run on the GPU machine: build, then capture the planted-pathology fixtures with the
# PyTorch twin under `gpuprof run`, report each, and copy small rank files to $OUT.
set -x
cd "$(dirname "$0")/.."
G=$PWD/.gpubin; export LD_LIBRARY_PATH=$G:${LD_LIBRARY_PATH:-}


P="python3 examples/train_mlp.py --steps 12 --dim 1024 --layers 4 --batch 64"
run() { name=$1; shift; rm -rf "/tmp/w/$name"; mkdir -p "/tmp/w"; PYTHONUNBUFFERED=1 GPUPROF_INJECT=$G/.libs/libgpuprof-inject.so $G/gpuprof run --modes=all --output="/tmp/w/$name" -- "$@" 2>&1 | tail -3; $G/gpuprof report "/tmp/w/$name" | head -40; }
run clean $P
run sync $P --sync-every-step
run idle $P --host-stall-ms 20
run leak $P --leak-bytes 8388608
run frag python3 examples/train_mlp.py --steps 12 --dim 64 --layers 32 --batch 8 --sgd
cd "/tmp/w" && tar czf "$OUT/fixtures.tgz" . && ls -la */step0
