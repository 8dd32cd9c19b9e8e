# Sourced by the device-machine scripts in bench/: run from the tree's root with the
# binaries bench/gpu-carry.sh collected in .gpubin (built on the CPU machine).
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
G=$PWD/.gpubin
export LD_LIBRARY_PATH=$G:${LD_LIBRARY_PATH:-}
export GPUPROF_INJECT=$G/.libs/libgpuprof-inject.so GPUPROF_AGENT=$G/gpuprof-agent GPUPROF_PYTHON=$G/python
# The GPU tier with this tree's binaries, its TAP in $OUT/t_gpu.txt, a line of counts and the
# failures on stdout
gpu_tier() {
	GP_BUILD=$G KNOWN_COUNTS=$G/known_counts MARKER_CHECK=$G/marker_check timeout ${TIER_S:-330} \
		bash tests/gpu/t_gpu.sh >$OUT/t_gpu.txt 2>&1
	echo "tier rc=$? ok $(grep -c '^ok' $OUT/t_gpu.txt) not-ok $(grep -c '^not ok' $OUT/t_gpu.txt)"
	grep '^not ok' $OUT/t_gpu.txt
	# the PyTorch integration on the GPU too (its check of mode layers' counts went stale
	# for sessions, unrun here: session 20)
	GP_BUILD=$G timeout ${TIER_S:-330} bash tests/gpu/t_torch_gpu.sh >$OUT/t_torch_gpu.txt 2>&1
	echo "torch tier rc=$? ok $(grep -c '^ok' $OUT/t_torch_gpu.txt) not-ok $(grep -c '^not ok' $OUT/t_torch_gpu.txt)"
	grep '^not ok' $OUT/t_torch_gpu.txt
}
