#!/bin/bash
# Run on the GPU machine (issue 51, the GPU tier's capture-window run exiting 1 with a
# circular ImportError in torch._inductor.utils): the PyTorch twin under a capture window,
# every import begun by a thread other than the main one logged with its stack
# (bench/diag/thread_imports.py), and the sources of PyTorch's history and snapshot calls.
. "$(dirname "$0")/gpu-env.sh"
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 - >"$OUT/torch-src.txt" 2>&1 <<'PY'
import inspect, torch, torch.cuda.memory as m
print(torch.__version__)
for f in (m._record_memory_history, getattr(m, "_record_memory_history_impl", None), m._snapshot):
    if f: print(inspect.getsource(f))
PY
for i in 1 2 3; do
	rm -rf /tmp/win$i
	"$G/gpuprof" run --modes=all --capture=steps=10-19 --output=/tmp/win$i -- \
		python3 bench/diag/thread_imports.py examples/train_mlp.py --steps 30 --dim 1024 --layers 4 \
		>"$OUT/win$i.out" 2>&1
	echo "window run $i rc=$? thread imports: $(grep -c THREAD-IMPORT "$OUT/win$i.out")"
done
grep THREAD-IMPORT "$OUT"/win*.out | sort | uniq -c | sort -rn | head -30
