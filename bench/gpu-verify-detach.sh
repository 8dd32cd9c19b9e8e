#!/bin/bash
# Run on the GPU machine (binaries from gpu-carry.sh): the detach after the review, for
# crashes (seed MLP, windows of 10 in 50, 3 runs), torch.profiler across windows and a
# GPT-2 default run.
. bench/gpu-env.sh; export PYTHONUNBUFFERED=1
for n in 1 2 3; do d=/tmp/v.$n; rm -rf $d; STEPS=800 GPUPROF_CAPTURE=sampled=10/50 timeout 120 $G/gpuprof run --output=$d -- python3 -X faulthandler bench/field/seed_mlp.py >$d.out 2>$d.err; rc=$?; f=$(find $d -name 'rank*.gpr'|head -1); echo "seed sampled=10/50 run $n rc=$rc detaches=$($G/gpuprof dump --events $f | grep -c b=1073741824) $(grep -o '"step_ms_median": [0-9.]*' $d.out)"; [ $rc != 0 ] && tail -20 $d.err; done
$G/gpuprof dump --events $(find /tmp/v.1 -name 'rank*.gpr'|head -1) | grep b=1073741824 | awk '{print $4}' | tr '\n' ' '; echo
rm -rf /tmp/pd; STEPS=300 GPUPROF_CAPTURE=sampled=10/50 timeout 200 $G/gpuprof run --output=/tmp/pd -- python3 bench/field/profiler_mid.py > /tmp/pd.out 2>&1; echo "profiler_mid windows 10/50 rc=$? $(grep KINETO /tmp/pd.out) detaches=$($G/gpuprof dump --events $(find /tmp/pd -name 'rank*.gpr'|head -1) | grep -c b=1073741824)"
rm -rf /tmp/g2; STEPS=120 timeout 200 $G/gpuprof run --output=/tmp/g2 -- python3 bench/field/gpt2.py > /tmp/g2.out 2>&1; echo "gpt2 default rc=$? $(grep -o '"step_ms_median": [0-9.]*' /tmp/g2.out)"; $G/gpuprof report /tmp/g2 | sed -n '/Findings/,/How slow/p' | head -8
