#!/bin/bash
# Collect the binaries the GPU machine runs (built here; glibc-compatible there) into
# .gpubin, which `device run` carries. Needs a configured _build with CUDA.
set -e
cd "$(dirname "$0")/.."
make -C _build -j2 >/dev/null
rm -rf .gpubin && mkdir -p .gpubin/.libs
cp _build/gpuprof _build/gpuprof-agent _build/gpuprof-train-mlp .gpubin/
cp _build/.libs/libgpuprof-inject.so _build/.libs/libgpuprof-cupti.so .gpubin/.libs/
/usr/local/cuda/bin/nvcc -O2 -gencode 'arch=compute_90,code=[sm_90,compute_90]' -o .gpubin/known_counts bench/known_counts.cu
for l in $(ldd .gpubin/gpuprof .gpubin/gpuprof-agent .gpubin/.libs/*.so | awk '{print $3}' | grep -E 'zstd|unwind|lzma' | sort -u); do cp -L "$l" .gpubin/; done
du -sh .gpubin
