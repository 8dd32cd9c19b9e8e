#!/bin/bash
# In-process A/B of what CUPTI costs, free of the +-15 % that separates identical processes
# on the H200 (doc/performance.md): one run of examples/train_mlp.py --time (every step
# synchronised, so step-to-step time includes its GPU work) whose capture is switched on
# and off while it runs, then bench/inproc_ab.py compares the steps run with the part on
# against those run with it off, from the rank file's own NVTX and switch records.
#   bench/gpu-inproc.sh cuda   kernel tracing in alternating 20-step windows (--capture)
#   bench/gpu-inproc.sh mem    memory tracking switched every 2 s (gpuprof capture --mem)
# Binaries from bench/gpu-carry.sh; device machine. Written after the device time of the
# session that made it ran out: not yet run.
. "$(dirname "$0")/gpu-env.sh"
WHAT=${1:-cuda} STEPS=${STEPS:-600}
for wl in seed launch; do
	args="--dim 4096 --layers 8 --batch 64 --steps $STEPS --time"
	[ $wl = launch ] && args="--dim 256 --layers 32 --batch 64 --steps $STEPS --time"
	rm -rf /tmp/inproc
	if [ "$WHAT" = cuda ]; then
		win=$(python3 -c "print(','.join(f'{a}-{a+19}' for a in range(40, $STEPS, 40)))")
		$G/gpuprof run --modes=all --capture=steps=$win --output=/tmp/inproc -- \
			python3 examples/train_mlp.py $args >/dev/null 2>&1
		bit=4
	else
		$G/gpuprof run --modes=timing,nvtx,mem --output=/tmp/inproc -- \
			python3 examples/train_mlp.py $args >/tmp/inproc.out 2>&1 &
		run=$!
		for _ in $(seq 300); do grep -q "^train_mlp.py: device" /tmp/inproc.out 2>/dev/null && break; sleep 0.1; done
		pid=$(pgrep -f "^python3 examples/train_mlp.py $args" | head -1)
		while kill -0 $run 2>/dev/null; do
			sleep 2; $G/gpuprof capture off --mem "$pid" >/dev/null 2>&1
			sleep 2; $G/gpuprof capture on --mem "$pid" >/dev/null 2>&1
		done
		wait $run
		bit=8
	fi
	echo -n "$wl $WHAT: "
	python3 bench/inproc_ab.py $G/gpuprof /tmp/inproc/step0/rank0.gpr $bit
done
