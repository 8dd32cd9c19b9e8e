#!/bin/bash
# Run on the GPU machine: build, then capture the planted-pathology fixtures with the
# PyTorch twin under `gpuprof run`, report each, and copy small rank files to $OUT.
set -x
cd "$(dirname "$0")/.."
[ -x configure ] || ./bootstrap; mkdir -p _gbuild && cd _gbuild && ../configure --with-slurm=no --disable-cuda-workload >/dev/null && make -j16 >/dev/null 2>&1 || { echo BUILD FAILED; exit 1; }
cd ..
G=$PWD/_gbuild
P="python3 examples/train_mlp.py --steps 12 --dim 1024 --layers 4 --batch 64"
run() { name=$1; shift; rm -rf "$OUT/w/$name"; mkdir -p "$OUT/w"; PYTHONUNBUFFERED=1 $G/gpuprof run --modes=all --output="$OUT/w/$name" -- "$@" 2>&1 | tail -3; $G/gpuprof report "$OUT/w/$name" | head -40; }
run clean $P
run sync $P --sync-every-step
run idle $P --host-stall-ms 20
run leak $P --leak-bytes 8388608
run frag python3 examples/train_mlp.py --steps 12 --dim 64 --layers 32 --batch 8 --sgd
cd "$OUT/w" && tar czf "$OUT/fixtures.tgz" . && ls -la */step0
