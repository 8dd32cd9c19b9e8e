#!/bin/bash
# The build to compare against on the GPU machine, in .gpubin-base (what bench/gpu-*.sh
# call "base"): gpuprof, its agent, libraries and Python integration from a tree built at
# BASE (a directory with a configured and built tree, default /tmp/base/_b).
set -e
cd "$(dirname "$0")/.."
B=${BASE:-/tmp/base/_b}
rm -rf .gpubin-base && mkdir -p .gpubin-base/.libs
cp $B/gpuprof $B/gpuprof-agent .gpubin-base/
cp -r $B/python .gpubin-base/python
cp $B/.libs/libgpuprof-inject.so $B/.libs/libgpuprof-cupti.so $B/.libs/gpuprof.so .gpubin-base/.libs/
du -sh .gpubin-base
