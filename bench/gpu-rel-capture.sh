#!/bin/bash
# Run on the GPU machine (issue 51 #10): `gpuprof capture on PID` between capture windows
# traces CUDA activity at the program's next step and `off` stops it; before the fix "on"
# said it succeeded and nothing was traced until the next window.
# The seed MLP in C (gpuprof-train-mlp), 3000 steps with a 5 ms host stall a step, windows
# steps=10-12 only; 4 s in: capture on; 6 s in: capture off. Counted from the rank file:
# the CONTROL records (a: the modes captured, b: the step) and the kernels recorded after
# the window. Expect: a switch on at a step past 12 (at ~4 s), one off ~2 s later, and
# hundreds of kernels between them. Binaries from gpu-carry.sh; results under $OUT.
. "$(dirname "$0")/gpu-env.sh"
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
rm -rf /tmp/relcap
GPUPROF_CAPTURE=steps=10-12 "$G/gpuprof" run --modes=timing,nvtx,cuda --output=/tmp/relcap -- \
	"$G/gpuprof-train-mlp" --steps 3000 --host-stall-ms 5 >"$OUT/relcap.out" 2>&1 &
runpid=$!
for _ in $(seq 100); do
	pid=$(pgrep -f "^$G/gpuprof-train-mlp" | head -1)
	[ -n "$pid" ] && break
	sleep 0.1
done
sleep 4
"$G/gpuprof" capture on "$pid" >>"$OUT/relcap.out" 2>&1
echo "capture on rc=$?"
sleep 2
"$G/gpuprof" capture off "$pid" >>"$OUT/relcap.out" 2>&1
echo "capture off rc=$?"
wait $runpid
echo "run rc=$?"
f=$(find /tmp/relcap -name 'rank*.gpr' | head -1)
"$G/gpuprof" dump --events "$f" >"$OUT/relcap.dump" 2>&1
python3 - "$OUT/relcap.dump" <<'PY'
import re, sys
ctl, kts = [], []
for line in open(sys.argv[1]):
    kind = line.split(" ", 1)[0]
    f = dict((k, int(v)) for k, v in re.findall(r"(\w+)=(\d+)", line))
    if kind == "control":
        ctl.append((f.get("b"), f.get("a"), f.get("ts")))
    elif kind == "kernel":
        kts.append(f.get("ts", 0))
print("switches (step, modes):", [(s, m) for s, m, _ in ctl])
on = [c for c in ctl if c[0] is not None and c[0] > 12 and c[1] & 4]
off = [c for c in ctl if on and c[2] > on[0][2] and not c[1] & 4]
n = sum(1 for t in kts if on and off and on[0][2] <= t <= off[0][2])
print("the CLI's on at step", on[0][0] if on else None, "off at step", off[0][0] if off else None,
      "kernels between:", n)
print("RESULT", "ok" if on and off and n > 100 else "NOT OK")
PY
"$G/gpuprof" report /tmp/relcap >"$OUT/relcap.report" 2>&1
grep -i "captured\|capture" "$OUT/relcap.report" | head -5
