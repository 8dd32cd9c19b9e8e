#!/bin/bash
# Run on the GPU machine: t_gpu's on-demand case (gpuprof capture off PID mid-run) with
# every control record dumped, to tell which records carry the modes cuda-off (a=8).
# Results in $OUT/od.txt. Binaries from bench/gpu-carry.sh.
. "$(dirname "$0")/gpu-env.sh"
OUT=${OUT:-/tmp/out}; T=/tmp/od; rm -rf $T; mkdir -p $T $OUT
P="python3 examples/train_mlp.py"
$G/gpuprof run --modes=all --output="$T/od" -- $P --steps 1500 --dim 1024 --layers 4 --host-stall-ms 5 >"$T/od.out" 2>&1 &
for _ in $(seq 300); do grep -q "^train_mlp.py: device" "$T/od.out" 2>/dev/null && break; sleep 0.1; done
cpid=$(pgrep -f '^python3 .*train_mlp.py --steps 1500' | head -1)
sleep 2; $G/gpuprof capture off "$cpid"
wait
{
	$G/gpuprof dump --events "$T/od/step0/rank0.gpr" | grep -E "^control" 
	echo "first/last events:"; $G/gpuprof dump --events "$T/od/step0/rank0.gpr" | head -3
	$G/gpuprof report --format=json "$T/od" | python3 -c "import json,sys; r=json.load(sys.stdin)['ranks'][0]; print(r['capture'])"
} >$OUT/od.txt 2>&1
cat $OUT/od.txt | head -40
