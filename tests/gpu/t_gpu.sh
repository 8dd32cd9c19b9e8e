#!/bin/bash
# GPU tier: real CUPTI on a real GPU. Skips cleanly where there is none.
. "$(dirname "$0")/../integration/tap.sh"
B=${GP_BUILD:?}
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 || skip_all "no GPU on this machine"
python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null || skip_all "no PyTorch with CUDA"
T=$(mktemp -d /tmp/gp-gpu.XXXXXX)
trap 'rm -rf "$T"' EXIT
"$B/gpuprof" run --modes=all --output="$T/clean" -- python3 "$(dirname "$0")/../../examples/train_mlp.py" --steps 20 --dim 1024 --layers 4 >/dev/null 2>&1
ok $? "PyTorch twin runs under gpuprof run --modes=all"
"$B/gpuprof" report --format=json "$T/clean" >"$T/r.json"; ok $? "report"
python3 - "$T/r.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["ranks"][0]
assert r["gpu"]["kernels"] > 100, r["gpu"]
assert r["memory"]["peak_bytes"] > 0, r["memory"]
assert r["steps"]["count"] == 20, r["steps"]
PY
ok $? "kernels, memory and steps captured on the GPU"
done_testing
