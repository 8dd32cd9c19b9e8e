#!/bin/bash
# In-process A/B of what each part of gpuprof costs, free of the +-15 % that separates
# identical processes on the H200 (doc/performance.md): one run of examples/train_mlp.py
# --time (every step synchronised, so step-to-step time includes its GPU work) with one
# part switched on and off while it runs; bench/inproc_ab.py then compares the steps run
# with the part on against those run with it off, from the rank file's own NVTX records.
#   bench/gpu-inproc.sh cuda   kernel tracing in 16 windows of 20 steps, 30 steps apart (--capture);
#                              windows from the rank file's switch records
#   bench/gpu-inproc.sh mem    memory tracking switched every SWITCH_S seconds
#                              (gpuprof capture --mem); windows from the switch records
#   bench/gpu-inproc.sh gpu    mode gpu's 10 Hz NVML sampling: a second agent
#                              (gpuprof run --modes=gpu -- sleep SWITCH_S) samples the same
#                              GPU every other SWITCH_S seconds; windows are its lifetimes
#                              (CLOCK_MONOTONIC, the rank file's clock)
#   bench/gpu-inproc.sh light  mem and gpu together, the light modes' part above
#                              timing,nvtx: capture on --mem, the sampler for SWITCH_S,
#                              capture off --mem; windows from just before the first to
#                              just after the last
#   bench/gpu-inproc.sh none   the same windows with nothing switched (sleep only): the
#                              A/A noise floor of this method
# The run itself is under --modes=timing,nvtx (1 Hz NVML) in the gpu and none cases,
# timing,nvtx,mem with mem off outside the windows in the mem and light cases. Binaries from
# bench/gpu-carry.sh; device machine. Per-workload step counts: SEED_STEPS, LAUNCH_STEPS.
. "$(dirname "$0")/gpu-env.sh"
WHAT=${1:-cuda} SWITCH_S=${SWITCH_S:-1}
mono() { python3 -c 'import time; print(time.monotonic_ns())'; }
for wl in ${WORKLOADS:-seed launch}; do
	steps=${SEED_STEPS:-6000}
	args="--dim 4096 --layers 8 --batch 64 --time"
	[ $wl = launch ] && steps=${LAUNCH_STEPS:-4000} args="--dim 256 --layers 32 --batch 64 --time"
	[ $WHAT = cuda ] && steps=840 # 16 windows (the most --capture takes) of 20 steps, 30 apart
	args="$args --steps $steps"
	rm -rf /tmp/inproc /tmp/inproc.win
	if [ "$WHAT" = cuda ]; then
		win=$(python3 -c "print(','.join(f'{a}-{a+19}' for a in range(40, $steps, 50)))")
		$G/gpuprof run --modes=all --capture=steps=$win --output=/tmp/inproc -- \
			python3 examples/train_mlp.py $args >/dev/null 2>&1
		sel=4
	else
		modes=timing,nvtx,mem
		case $WHAT in gpu | none) modes=timing,nvtx ;; esac
		$G/gpuprof run --modes=$modes --output=/tmp/inproc -- \
			python3 examples/train_mlp.py $args >/tmp/inproc.out 2>&1 &
		run=$!
		for _ in $(seq 300); do grep -q "^train_mlp.py: device" /tmp/inproc.out 2>/dev/null && break; sleep 0.1; done
		pid=$(pgrep -f "^python3 examples/train_mlp.py $args" | head -1)
		sleep 1
		while kill -0 $run 2>/dev/null; do
			case $WHAT in
			mem)
				$G/gpuprof capture off --mem "$pid" >/dev/null 2>&1; sleep $SWITCH_S
				$G/gpuprof capture on --mem "$pid" >/dev/null 2>&1; sleep $SWITCH_S ;;
			*)
				[ $WHAT = light ] && $G/gpuprof capture off --mem "$pid" >/dev/null 2>&1
				sleep $SWITCH_S
				t0=$(mono)
				[ $WHAT = light ] && $G/gpuprof capture on --mem "$pid" >/dev/null 2>&1
				if [ $WHAT = none ]; then
					sleep $SWITCH_S
				else
					$G/gpuprof run --modes=gpu --output=/tmp/inproc-samp -- sleep $SWITCH_S >/dev/null 2>&1
				fi
				[ $WHAT = light ] && $G/gpuprof capture off --mem "$pid" >/dev/null 2>&1
				echo "$t0 $(mono)" >>/tmp/inproc.win
				rm -rf /tmp/inproc-samp ;;
			esac
		done
		wait $run
		sel=8
		[ $WHAT = mem ] || sel=/tmp/inproc.win
	fi
	echo -n "$wl $WHAT: "
	python3 bench/inproc_ab.py $G/gpuprof /tmp/inproc/step0/rank0.gpr $sel
done
