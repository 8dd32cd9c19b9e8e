# Sourced by the device-machine scripts in bench/: run from the tree's root with the
# binaries bench/gpu-carry.sh collected in .gpubin (built on the CPU machine).
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
G=$PWD/.gpubin
export LD_LIBRARY_PATH=$G:${LD_LIBRARY_PATH:-}
export GPUPROF_INJECT=$G/.libs/libgpuprof-inject.so GPUPROF_AGENT=$G/gpuprof-agent GPUPROF_PYTHON=$G/python
