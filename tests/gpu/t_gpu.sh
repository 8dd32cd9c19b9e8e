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
P="python3 $(dirname "$0")/../../examples/train_mlp.py"
jr() { "$B/gpuprof" report --format=json "$T/$1" | python3 -c "import json,sys; r=json.load(sys.stdin)['ranks'][0]; print($2)"; }

# native frames of allocation stacks to function and file:line at report time (libdw):
# the CUDA C workload's cudaMalloc calls are in train_mlp_cuda.cu, built with -g
"$B/gpuprof" run --modes=nvtx,mem --output="$T/sym" -- "$B/gpuprof-train-mlp" --steps 5 >/dev/null 2>&1
"$B/gpuprof" export --format=memviz -o "$T/sym.pickle" "$T/sym" 2>"$T/sym.err"
ok $? "memviz export of the CUDA workload's allocations ($(grep symbolised "$T/sym.err"))"
python3 - "$T/sym.pickle" <<'PY'
import pickle, sys
s = pickle.load(open(sys.argv[1], "rb"))
fr = [f for seg in s["segments"] for b in seg["blocks"] for f in b.get("frames", [])]
fr += [f for dev in s["device_traces"] for e in dev for f in e.get("frames", [])]
cu = [f for f in fr if f["filename"].endswith("train_mlp_cuda.cu") and f["line"] > 0]
assert cu, sorted({(f["filename"], f["line"], f["name"]) for f in fr})[:10]
print("# e.g.", cu[0])
PY
ok $? "frames name train_mlp_cuda.cu with a line and a function, read from its DWARF"

# capture windows: cuda traced in steps 10-19 of 30 only, switched at step boundaries
"$B/gpuprof" run --modes=all --capture=steps=10-19 --output="$T/win" -- $P --steps 30 --dim 1024 --layers 4 >/dev/null 2>&1
ok $? "a run with a capture window"
[ "$(jr win "r['capture']['window'], r['capture']['captured_steps']")" = "True 10" ]
ok $? "GPU statistics cover the 10 captured steps ($(jr win "r['capture']"))"
kw=$(jr win "round(r['gpu']['kernels_per_step'])"); kc=$(jr clean "round(r['gpu']['kernels_per_step'])")
ok $(( kw == kc ? 0 : 1 )) "kernels per captured step ($kw) equal an uncaptured run's ($kc)"
ll=$(jr win "int(r['gpu']['launch_latency_us_median'] > 0)")
ok $(( ll == 1 ? 0 : 1 )) "launch API records arrive after cuda is switched on mid-run"
kt=$(jr win "r['gpu']['kernels_total']"); ka=$(jr clean "r['gpu']['kernels_total']")
ok $(( kt * 2 < ka ? 0 : 1 )) "and far fewer kernels were recorded ($kt in the window, $ka for 20 steps)"

# on demand: gpuprof capture off PID while the program runs
"$B/gpuprof" run --modes=all --output="$T/od" -- $P --steps 1500 --dim 1024 --layers 4 --host-stall-ms 5 >"$T/od.out" 2>&1 &
# python needs seconds to import torch: wait for the loop to start, then 2 s of steps
for _ in $(seq 300); do grep -q "^train_mlp.py: device" "$T/od.out" 2>/dev/null && break; sleep 0.1; done
cpid=$(pgrep -f '^python3 .*train_mlp.py --steps 1500' | head -1)
sleep 2; "$B/gpuprof" capture off "$cpid" >/dev/null; ok $? "gpuprof capture off PID"
wait
# the switches at steps (b: the step; b=4294967295 are the windows-by-cost records): the last
# turned cuda off at a step, and none turned it on again. How many came before depends on
# whether the default capture's first window had ended by then (the H100 run of session 29
# read 2 cuda-off switches: that window's end, then none more)
last=$("$B/gpuprof" dump --events "$T/od/step0/rank0.gpr" | sed -n 's/^control .* a=\([0-9]*\) b=\([0-9]*\) .*/\1 \2/p' |
	grep -v ' 4294967295$' | tail -1)
ok $([ -n "$last" ] && [ $(( ${last% *} & 4 )) = 0 ] && [ "${last#* }" -gt 0 ] && echo 0 || echo 1) "the process switched cuda off at a step boundary, and stayed off (last switch: modes, step $last)"
c=$(jr od "r['capture'], r['steps']['count']")
case "$c" in "{'window': True"*) ok 0 "the report restricts GPU statistics to the captured part: $c" ;;
*) ok 1 "the report restricts GPU statistics to the captured part: $c"
	[ -n "${OUT:-}" ] && "$B/gpuprof" dump --events "$T/od/step0/rank0.gpr" | grep -E "^control|^nvtx_push|^start|^end" | head -12 >"$OUT/od-debug.txt" &&
		"$B/gpuprof" dump --events "$T/od/step0/rank0.gpr" | grep -E "^control" -B3 -A3 >>"$OUT/od-debug.txt" ;; esac

# CUPTI's own overhead records
ov=$(jr clean "r['cupti_overhead']['records']"); echo "# CUPTI overhead records: $ov"

# known counts and a named stream (bench/known_counts.cu, built by bench/gpu-carry.sh)
K=${KNOWN_COUNTS:-$B/known_counts}
if [ -x "$K" ]; then
	# launch sites by default (GPUPROF_LAUNCH_SITES unset: 4096)
	env -u GPUPROF_LAUNCH_SITES "$B/gpuprof" run --modes=all --output="$T/known" -- "$K" >/dev/null 2>&1
	"$B/gpuprof" dump --events "$T/known/step0/rank0.gpr" >"$T/known.txt"
	sid=$(sed -n 's/^stream_name .* a=\([0-9]*\) .*u8=1 .*/\1/p' "$T/known.txt")
	ok $([ -n "$sid" ] && echo 0 || echo 1) "nvtxNameCudaStreamA mapped to a CUPTI stream id ($sid)"
	n=$(grep -c "^kernel .* d=$sid " "$T/known.txt")
	ok $(( n == 5 ? 0 : 1 )) "the 5 kernels launched on the named stream carry that id ($n)"
	"$B/gpuprof" export --format=chrome --output="$T/known.json" "$T/known" &&
		grep -q "stream $sid: known_stream" "$T/known.json"
	ok $? "the Chrome trace names the track after the user's name"
	# launch configuration and copy bytes against the program's source: 10 launches of
	# inc<<<4096, 256, 0>>>, 3 cudaMemcpy of 4 MiB (issue 50)
	"$B/gpuprof" export --format=kineto --output="$T/known.kt" "$T/known" 2>/dev/null
	python3 - "$T/known.kt/step0/rank0.json" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
k = [e["args"] for e in ev if e.get("cat") == "kernel"]
assert len(k) == 10 and all(a["grid"] == [4096, 1, 1] and a["block"] == [256, 1, 1] and a["shared memory"] == 0
                            and a["registers per thread"] > 0 for a in k), k[:2]
c = [e["args"]["bytes"] for e in ev if e.get("cat") == "gpu_memcpy"]
assert c == [4 << 20] * 3, c
PY
	ok $? "the Kineto export: each kernel's grid [4096,1,1], block [256,1,1], shared memory 0, registers; 3 copies of 4 MiB"
	# its 10 kernels launched from main (no steps: the whole run), each with its call site
	got=$("$B/gpuprof" report --format=json "$T/known" | python3 -c '
import json, sys
a = json.load(sys.stdin)["attribution"]
rows = [(r["operation"], r["kernels"], r["calls"]) for r in a["operation_lines"]]
print(a["framework"], a["kernels_without_site"], rows)')
	case "$got" in
	"native 0 [('main', 10, 10)]") ok 0 "kernel time by native caller: main, 10 kernels, 10 launches ($got)" ;;
	*) ok 1 "kernel time by native caller: main, 10 kernels, 10 launches ($got)" ;;
	esac
else
	for _ in 1 2 3 4 5; do skip "known_counts not built (bench/gpu-carry.sh builds it)"; done
fi

# living with other tools: the user's profiler wins, gpuprof keeps NVTX and timing
"$B/gpuprof" run --modes=all --output="$T/tp" -- $P --steps 10 --dim 1024 --layers 4 --torch-profiler >"$T/tp.out" 2>&1
ok $? "torch.profiler inside a profiled program: the program succeeds"
k=$(sed -n 's/^torch_profiler_cuda_events [0-9]* kernels \([0-9]*\)/\1/p' "$T/tp.out")
ok $(( ${k:-0} > 100 ? 0 : 1 )) "and the user's torch.profiler still sees its kernels ($k)"
[ "$(jr tp "r['steps']['count']")" = 10 ]; ok $? "gpuprof still has the steps"
y=$(jr tp "r['quality']['yielded']"); echo "# gpuprof kernels under torch.profiler: $(jr tp "r['gpu']['kernels_total']"); yielded: $y"
case "$y" in *"allocation call stacks"*) ok 0 "the report says the callback slot was left to PyTorch" ;; *) ok 1 "the report says the callback slot was left to PyTorch ($y)" ;; esac
GPUPROF_ALLOC_STACKS=1 "$B/gpuprof" run --modes=all --output="$T/st" -- $P --steps 5 --dim 1024 --layers 4 >/dev/null 2>&1
# by default the peak's stack comes from PyTorch's allocator history (agent/python), CUPTI's
# callback slot being left to torch.profiler; GPUPROF_ALLOC_STACKS=1 takes the slot
s1=$(jr st "r['memory']['peak_stack_source']"); s0=$(jr clean "r['memory']['peak_stack_source']")
ok $([ "$s1|$s0" = "CUPTI allocation callback|PyTorch allocator history" ] && echo 0 || echo 1) "allocation stacks in PyTorch: from CUPTI only with GPUPROF_ALLOC_STACKS=1, else from PyTorch's history ($s1|$s0)"
# PyTorch releases the GIL around every operator: these frames come from the read-only walker
pf=$("$B/gpuprof" dump --strings "$T/st/step0/rank0.gpr" | grep -c " train_mlp.py:[0-9]* .*\[python\]")
ok $(( ${pf:-0} > 0 ? 0 : 1 )) "allocation stacks carry Python frames of train_mlp.py ($pf distinct)"
[ -n "${OUT:-}" ] && "$B/gpuprof" dump --strings "$T/st/step0/rank0.gpr" | grep "\[python\]" >"$OUT/pyframes.txt"
ps=$(jr st "r['memory']['peak_stack']"); echo "# peak reached by: $ps"
if command -v ncu >/dev/null; then
	# --clock-control none: never change the GPU's clocks
	ncu --clock-control none --target-processes all -k regex:inc -c 1 "$B/gpuprof" run --modes=all --output="$T/ncu" -- "${K:-true}" >"$T/ncu.out" 2>&1
	ok $? "under ncu: the program succeeds"
	[ -n "${OUT:-}" ] && cp "$T/ncu.out" "$OUT/ncu.out"
	grep -q "==PROF==\|Section: GPU Speed Of Light" "$T/ncu.out"; ok $? "ncu still profiles"
	y=$(jr ncu "r['quality']['yielded']"); echo "# yielded under ncu: $y"
	ok $([ -n "$y" ] && echo 0 || echo 1) "the report says what was yielded to ncu"
else
	for _ in 1 2 3; do skip "no ncu"; done
fi
if command -v compute-sanitizer >/dev/null && [ -x "$K" ]; then
	compute-sanitizer --tool memcheck "$B/gpuprof" run --modes=all --output="$T/cs" -- "$K" >"$T/cs.out" 2>&1
	ok $? "under compute-sanitizer: the program succeeds"
	grep -q "ERROR SUMMARY: 0 errors" "$T/cs.out"; ok $? "compute-sanitizer still checks it"
	y=$(jr cs "r['quality']['yielded']"); echo "# yielded under compute-sanitizer: $y"
	case "$y" in *compute-sanitiz*) ok 0 "the report says cuda,mem went to compute-sanitizer" ;;
	*) ok 1 "the report says cuda,mem went to compute-sanitizer ($y)" ;; esac
else
	for _ in 1 2 3; do skip "no compute-sanitizer or known_counts"; done
fi
# step completion markers: a program that never synchronises, 2 ms of GPU time per step
MC=${MARKER_CHECK:-}
if [ -x "$MC" ]; then
	"$MC" --steps 40 >"$T/mc0.out" 2>&1; ok $? "marker_check alone: both graph captures work ($(tail -1 "$T/mc0.out"))"
	for m in timing mem,nvtx; do
		"$B/gpuprof" run --modes=$m --output="$T/mc-$m" -- "$MC" --steps 40 >"$T/mc.out" 2>&1
		ok $? "under --modes=$m: graph captures with a marker inside still work ($(tail -1 "$T/mc.out"))"
		got=$(jr "mc-$m" "'%s %.3f %.3f' % (r['steps']['basis'], r['steps']['median_ms'], r['steps']['cpu_median_ms'])")
		echo "# $m: basis, median, cpu median: $got"
		python3 -c 'import sys; b, m, c = sys.argv[1].split(); assert b == "gpu" and abs(float(m) - 2.0) < 0.1 and float(c) < 0.5, sys.argv[1]' "$got"
		ok $? "--modes=$m: GPU step time from markers is the 2 ms each step spins ($got)"
	done
	GPUPROF_STEP_MARKERS=0 "$B/gpuprof" run --modes=timing --output="$T/mc-off" -- "$MC" --steps 40 >/dev/null 2>&1
	b=$(jr mc-off "r['steps']['basis']")
	ok $([ "$b" = period ] && echo 0 || echo 1) "GPUPROF_STEP_MARKERS=0: no markers, the host period ($b)"
else
	for _ in 1 2 3 4 5 6; do skip "no marker_check binary (MARKER_CHECK)"; done
fi
# DataLoader workers forked from a CUDA process (the fork handler installed at load
# silences them) and a worker pool forked before CUDA is touched: the training process is
# the one recorded, every step is there, and nothing is lost
cat >"$T/dl.py" <<'PY'
import multiprocessing as mp, torch, torch.cuda.nvtx as nvtx
def square(x):
    return x * x
if __name__ == "__main__":
    pool = mp.get_context("fork").Pool(2)      # before CUDA: forked copies of us
    pool.map(square, range(8))
    ds = torch.utils.data.TensorDataset(torch.randn(4096, 256), torch.randn(4096, 1))
    dl = torch.utils.data.DataLoader(ds, batch_size=128, num_workers=2,
                                     multiprocessing_context="fork")
    m = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1)).cuda()
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    for x, y in dl:                                # 32 steps
        nvtx.range_push("train_step")
        loss = torch.nn.functional.mse_loss(m(x.cuda()), y.cuda())
        opt.zero_grad(); loss.backward(); opt.step()
        nvtx.range_pop()
    torch.cuda.synchronize(); pool.close()
    print("ok")
PY
"$B/gpuprof" run --modes=all --output="$T/dl" -- python3 "$T/dl.py" >"$T/dl.out" 2>&1
ok $? "PyTorch with forked DataLoader workers and a forked pool ($(tail -1 "$T/dl.out"))"
got=$(jr dl "'%d %s %d' % (r['steps']['count'], sorted(r['quality']['losses']), r['gpu']['kernels'] > 100)")
echo "# steps, losses, kernels: $got"
[ "$got" = "32 [] 1" ]; ok $? "32 steps of the training process, its kernels, no loss ($got)"
done_testing
