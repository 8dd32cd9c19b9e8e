#!/bin/bash
# Collect the binaries the GPU machine runs (built here; glibc-compatible there) into
# .gpubin, which `device run` carries. Needs a configured _build with CUDA.
set -e
cd "$(dirname "$0")/.."
make -C _build -j2 >/dev/null
rm -rf .gpubin && mkdir -p .gpubin/.libs
cp _build/gpuprof _build/gpuprof-agent _build/gpuprof-train-mlp .gpubin/
cp -r _build/python .gpubin/python
cp _build/.libs/libgpuprof-inject.so _build/.libs/libgpuprof-cupti.so _build/.libs/gpuprof.so .gpubin/.libs/
# Debian 12's Slurm 22.05 and munge for bench/gpu-quickstart.sh (the plugin above was built
# against the same spank.h)
mkdir -p .gpubin/debs
(cd .gpubin/debs && apt-get download slurmctld slurmd slurm-client slurm-wlm-basic-plugins \
	libslurm38 munge libmunge2 libdbus-1-3 libjson-c5 libyaml-0-2 >/dev/null 2>&1) ||
	echo "gpu-carry: could not download the Slurm packages" >&2
gcc -O1 -g -shared -fPIC -o .gpubin/abort_bt.so bench/abort_bt.c # bench/gpu-abort.sh
/usr/local/cuda/bin/nvcc -O2 -gencode 'arch=compute_90,code=[sm_90,compute_90]' -o .gpubin/known_counts bench/known_counts.cu
/usr/local/cuda/bin/nvcc -O2 -g -gencode 'arch=compute_90,code=[sm_90,compute_90]' -I/usr/local/cuda/include -o .gpubin/launch_sites bench/launch_sites.cu -L/usr/local/cuda/lib64 -lcupti
/usr/local/cuda/bin/nvcc -O2 -g -gencode 'arch=compute_90,code=[sm_90,compute_90]' -I/usr/local/cuda/include -o .gpubin/mt_streams bench/mt_streams.cu
/usr/local/cuda/bin/nvcc -O2 -gencode 'arch=compute_90,code=[sm_90,compute_90]' -I/usr/local/cuda/include -o .gpubin/marker_check bench/marker_check.cu
/usr/local/cuda/bin/nvcc -O2 -gencode 'arch=compute_90,code=[sm_90,compute_90]' -I/usr/local/cuda/include -o .gpubin/launch-loop bench/launch_loop.cu
/usr/local/cuda/bin/nvcc -O2 -gencode 'arch=compute_90,code=[sm_90,compute_90]' -I/usr/local/cuda/include -o .gpubin/cupti-floor bench/cupti_floor.cu -L/usr/local/cuda/lib64 -lcupti
/usr/local/cuda/bin/nvcc -O2 -gencode 'arch=compute_90,code=[sm_90,compute_90]' -o .gpubin/marker_calls bench/marker_calls.cu -lcuda
/usr/local/cuda/bin/nvcc -O2 -gencode 'arch=compute_90,code=[sm_90,compute_90]' -DMARKER_CALLS_LIB -shared -Xcompiler -fPIC -o .gpubin/libmarker_calls.so bench/marker_calls.cu -lcuda
# the injected library again with other clocks (common/clock.h), for bench/gpu-nvtx-clock.sh's
# split of a pair's cost, each in its own build directory, configured once: one that costs
# nothing (GP_BENCH_FREE_CLOCK), and the raw TSC with no anchor or conversion
# (GP_BENCH_RAW_TSC: the floor of a pair that reads it)
variant() {
	if [ ! -f "_build-$1/Makefile" ]; then
		mkdir -p "_build-$1"
		(cd "_build-$1" && ../configure CPPFLAGS="-D$2" >/dev/null)
	fi
	make -C "_build-$1" -j2 libgpuprof-inject.la >/dev/null
	mkdir -p ".gpubin/$1"
	cp "_build-$1/.libs/libgpuprof-inject.so" ".gpubin/$1/"
}
variant freeclock GP_BENCH_FREE_CLOCK
variant rawtsc GP_BENCH_RAW_TSC
cp _build/bench/nvtx_cost _build/bench/ring_push .gpubin/
gcc -O2 -o .gpubin/prim bench/prim.c
for l in $(ldd .gpubin/gpuprof .gpubin/gpuprof-agent .gpubin/.libs/*.so | awk '{print $3}' | grep -E 'zstd|unwind|lzma|libdw|libelf|bz2|yaml' | sort -u); do cp -L "$l" .gpubin/; done
du -sh .gpubin
