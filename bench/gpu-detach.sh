#!/bin/bash
# Run on the GPU machine: CUPTI given back between capture windows (GPUPROF_CUPTI_DETACH).
# 1. the empty-kernel loop with a window of 10 in every 60 steps, detach on and off, against
#    no tool (us per launch, the median step: an untraced one), and what the report saw
#    (kernels in every window, their launch calls, the detach's own cost);
# 2. a PyTorch run with windows of 10 in 100 (the same figures, and the headline against
#    the program's own CUDA-event timing);
# 3. torch.profiler run by the program across a window's end (bench/field/profiler_mid.py):
#    the profiler keeps its kernels, the run its outcome.
# Binaries from gpu-carry.sh.
. "$(dirname "$0")/gpu-env.sh"
OUT=${OUT:-/tmp/out}
mkdir -p $OUT
export PYTHONUNBUFFERED=1
fields() { # DIR: the figures of rank 0 that say what the windows held
	$G/gpuprof report --format=json "$1" 2>/dev/null | python3 -c '
import json, sys
j = json.load(sys.stdin); r = j["ranks"][0]
g = lambda o, k: (r.get(o) or {}).get(k)
print(" ".join("%s.%s=%s" % (o, k, g(o, k)) for o, k in [
    ("gpu", "kernels_total"), ("gpu", "launch_latency_us_median"), ("capture", "captured_steps"),
    ("capture", "switches"), ("capture", "switch_max_ns"), ("cupti_overhead", "records"),
    ("cupti_overhead", "ns"), ("windows", "traced_median_ms"), ("windows", "untraced_median_ms"),
    ("steps", "median_ms"), ("steps", "count")]))'
}
echo "== 1. empty-kernel loop, GPUPROF_CAPTURE=sampled=10/60, 300 steps of 1000 launches"
for r in 1 2 3; do
	echo "none $($G/launch-loop 300 1000)"
	for d in 1 0; do
		rm -rf /tmp/dl$d
		echo "detach=$d $(GPUPROF_CAPTURE=sampled=10/60 GPUPROF_CUPTI_DETACH=$d $G/gpuprof run --output=/tmp/dl$d -- $G/launch-loop 300 1000 2>/dev/null)"
	done
done
for d in 1 0; do echo "detach=$d $(fields /tmp/dl$d)"; done
echo "== 2. seed MLP, 400 steps, GPUPROF_CAPTURE=sampled=10/100"
for d in 1 0; do
	rm -rf /tmp/ds$d
	t=$(STEPS=400 GPUPROF_CAPTURE=sampled=10/100 GPUPROF_CUPTI_DETACH=$d timeout 300 $G/gpuprof run --output=/tmp/ds$d -- python3 bench/field/seed_mlp.py 2>$OUT/seed$d.err | grep '^TRUTH' | python3 -c 'import json,sys; print(json.loads(sys.stdin.read()[6:])["step_ms_median"])')
	echo "detach=$d truth_median_ms=$t $(fields /tmp/ds$d)"
	tail -3 $OUT/seed$d.err
done
tar czf $OUT/seed-detach.tgz -C /tmp ds1 2>/dev/null
echo "== 3. torch.profiler over steps 100-139, windows of 10 in 50"
for d in 1 0; do
	rm -rf /tmp/dp$d
	GPUPROF_CAPTURE=sampled=10/50 GPUPROF_CUPTI_DETACH=$d timeout 300 $G/gpuprof run --output=/tmp/dp$d -- python3 bench/field/profiler_mid.py >$OUT/prof$d.out 2>&1
	echo "detach=$d rc=$? $(grep -h KINETO $OUT/prof$d.out) $(fields /tmp/dp$d)"
	grep -i "error\|warn\|Traceback" $OUT/prof$d.out | head -5
done
echo "no tool: $(timeout 300 python3 bench/field/profiler_mid.py 2>&1 | grep KINETO)"
