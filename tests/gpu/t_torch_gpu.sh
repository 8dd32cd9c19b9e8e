#!/bin/bash
# The PyTorch integration on a GPU (agent/python), checked against PyTorch's
# own figures printed by the script: the tensor-level peak against
# torch.cuda.max_memory_allocated(), reserved against memory_reserved(), the optimizer
# state against the sum of its state tensors, steps from optimizer.step() against the
# script's NVTX steps and its synchronised step time, an OOM run whose report names the
# failing request, and memory_viz pickles that torch.cuda._memory_viz accepts for every
# rank of a 2-process run. Needs PyTorch with CUDA (the H200's 2.11).
#   GP_BUILD=DIR bash tests/gpu/t_torch_gpu.sh   [FIXTURES=DIR: copy the captures there]
. "$(dirname "$0")/../integration/tap.sh"
B=${GP_BUILD:?}
python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null || skip_all "no PyTorch with CUDA"
T=$(mktemp -d /tmp/gp-torchgpu.XXXXXX)
trap 'rm -rf "$T"' EXIT
P="python3 $(dirname "$0")/../../examples/train_mlp.py"
jr() { "$B/gpuprof" report --format=json "$T/$1" | python3 -c "import json,sys; j=json.load(sys.stdin); r=j['ranks'][0]; print($2)"; }
near() { python3 -c "import sys; a,b,t=map(float,sys.argv[1:]); sys.exit(not (b > 0 and abs(a-b) <= t*b))" "$@"; }
val() { sed -n "s/^$1 \([0-9.]*\).*/\1/p" "$2" | head -1; }

# 1. mem,nvtx: the annotated script, with PyTorch's figures printed at its end
"$B/gpuprof" run --modes=mem,nvtx --output="$T/mem" -- $P --steps 30 --dim 2048 --layers 6 \
	--dtype fp32 --time >"$T/mem.out" 2>&1
ok $? "mem,nvtx: train_mlp.py runs under the PyTorch integration"
mx=$(val max_memory_allocated "$T/mem.out"); rs=$(val memory_reserved "$T/mem.out")
st=$(val optimizer_state_bytes "$T/mem.out")
got=$(jr mem "r['pytorch']['max_allocated_bytes']")
near "$got" "$mx" 0.01; ok $? "peak allocated = torch.cuda.max_memory_allocated() within 1 % ($got vs $mx)"
got=$(jr mem "sum(o['bytes'] for o in r['pytorch']['peak_owners'])")
near "$got" "$mx" 0.01; ok $? "the peak's live tensors add up to max_memory_allocated() within 1 % ($got vs $mx)"
got=$(jr mem "r['pytorch']['reserved_end_bytes']")
[ "$got" = "$rs" ]; ok $? "reserved = torch.cuda.memory_reserved() ($got vs $rs)"
got=$(jr mem "r['pytorch']['optimizer_state_bytes']")
[ "$got" = "$st" ]; ok $? "optimizer state = the sum of Adam's state tensors ($got vs $st)"
dv=$(jr mem "r['pytorch']['optimizer_state_device_bytes']")
near "$dv" "$st" 0.001; ok $? "... nearly all on the GPU ($dv bytes; Adam's step counters stay on the CPU)"
[ "$(jr mem "r['memory']['optimizer_source']")" = "PyTorch optimizer state" ]; ok $? "the optimizer figure is PyTorch's own"
o=$(jr mem "r['pytorch']['peak_owners'][0]['stack']")
case "$o" in *train_mlp.py:*) ok 0 "the peak's largest owner is a line of the script ($o)" ;;
*) ok 1 "the peak's largest owner is a line of the script ($o)" ;; esac
[ "$(jr mem "r['memory']['peak_stack_source']")" != "" ]; ok $? "the report says where the peak's stack came from ($(jr mem "r['memory']['peak_stack_source']"))"
n=$(jr mem "r['steps']['count']"); no=$(jr mem "r['pytorch']['optimizer_steps']")
[ "$n" = "$no" ] && [ "$n" = 30 ]; ok $? "optimizer.step() calls = the script's NVTX steps ($no vs $n)"
a=$(jr mem "r['pytorch']['optimizer_period_median_ms']"); b=$(jr mem "r['steps']['period_median_ms']")
near "$a" "$b" 0.05; ok $? "... and their period agrees within 5 % ($a vs $b ms)"
# the exit pickle has the segments and blocks (the history records only in windows: its
# trace may be empty); the peak's has the trace that led to the peak
for k in exit peak; do
	f=$(jr mem "r['pytorch']['memviz']['$k']")
	[ -n "$f" ] && python3 - "$T/mem/step0/$f" $k <<'PY'
import pickle, sys
from torch.cuda import _memory_viz as mv
s = pickle.load(open(sys.argv[1], "rb"))
assert s["segments"] and any(b["state"] == "active_allocated" for g in s["segments"] for b in g["blocks"]), "no blocks"
assert sys.argv[2] == "exit" or any(len(t) for t in s["device_traces"]), "no trace"
mv.segment_plot(s); mv.trace_plot(s)
PY
	ok $? "the $k pickle ($f) opens in torch.cuda._memory_viz (segment and trace plots)"
done

# 2. the same script without NVTX: steps from optimizer.step(), the GPU time true
"$B/gpuprof" run --modes=mem,nvtx --output="$T/nonvtx" -- $P --steps 30 --dim 2048 --layers 6 \
	--dtype fp32 --no-nvtx >"$T/nonvtx.out" 2>&1
[ "$(jr nonvtx "r['steps']['source']")" = optimizer ] && [ "$(jr nonvtx "r['steps']['count']")" = 30 ]
ok $? "no NVTX: 30 steps from optimizer.step() ($(jr nonvtx "r['steps']['how']"))"
# like for like: the script's synchronised time is a mean over steps 3.. (one sync at each
# end), so gpuprof's mean over its post-warm-up steps; the median leaves out the slow
# steps the mean keeps (27 steps of ~2 ms with two of 5-6 ms: the median read 5-10 % low)
sy=$(val synchronised_step_ms "$T/nonvtx.out"); m=$(jr nonvtx "r['steps']['mean_ms']")
near "$m" "$sy" 0.05; ok $? "no NVTX: mean step within 5 % of the script's synchronised mean ($m vs $sy ms, basis $(jr nonvtx "r['steps']['basis']"), median $(jr nonvtx "r['steps']['median_ms']"))"

# 3. all modes: CUPTI and the integration together
"$B/gpuprof" run --modes=all --output="$T/all" -- $P --steps 20 --dim 1024 --layers 4 >"$T/all.out" 2>&1
ok $? "--modes=all with the integration: the program succeeds"
[ "$(jr all "r['pytorch']['optimizer_steps']")" = "$(jr all "r['steps']['count']")" ]
ok $? "all modes: optimizer steps = NVTX steps"

# 3b. mode layers: per-module ranges with their GPU time, beside the script's own ranges
"$B/gpuprof" run --modes=all,layers --output="$T/layers" -- $P --steps 12 --dim 1024 --layers 4 >"$T/layers.out" 2>&1
ok $? "--modes=all,layers: the program succeeds"
# count_all: every step's; count: the steady state's, after the warm-up steps (report.md)
g=$("$B/gpuprof" report --format=json "$T/layers" | python3 -c 'import json,sys; j=json.load(sys.stdin); n={x["name"]: x for x in j["nvtx"]}; w=j["ranks"][0]["steps"]["warmup"]; print(n["Linear"]["count_all"], n["Linear backward"]["count_all"], n["Linear"]["count"] == n["Linear backward"]["count"] == 4 * (12 - w), n["Linear backward"]["gpu_ns"] > 0, n["Linear"]["gpu_ns"] > 0)')
[ "$g" = "48 48 True True True" ]; ok $? "Linear forward and backward ranges, 4 a step (4 a steady step), with GPU time ($g)"
[ "$(jr layers "r['steps']['range']")" = train_step ]; ok $? "the steps are still the script's own"

# 4. CUDA out of memory: the failing request and what held the memory
cat >"$T/oom.py" <<'EOF'
import torch
free, total = torch.cuda.mem_get_info()
chunk = 1 << 30
kept = []
print("request_bytes", 4 * total, flush=True)
kept.append(torch.empty(free // 2, dtype=torch.uint8, device="cuda"))
torch.empty(4 * total, dtype=torch.uint8, device="cuda")  # cannot fit: OutOfMemoryError
EOF
"$B/gpuprof" run --modes=mem,nvtx --output="$T/oom" -- python3 "$T/oom.py" >"$T/oom.out" 2>&1
ok $(( $? != 0 ? 0 : 1 )) "the OOM program fails as it would without gpuprof"
rq=$(val request_bytes "$T/oom.out"); got=$(jr oom "r['pytorch']['oom']['requested_bytes']")
near "$got" "$rq" 0.001; ok $? "the report names the failed request ($got vs $rq bytes)"
h=$(jr oom "r['pytorch']['oom']['holders'][0]['stack']")
case "$h" in *oom.py:6*) ok 0 "... and what held the memory ($h)" ;; *) ok 1 "... and what held the memory ($h)" ;; esac
"$B/gpuprof" report "$T/oom" | grep -A2 "^ *1\." | grep -q "out of device memory"; ok $? "the OOM is the first finding"
f=$(jr oom "r['pytorch']['memviz']['oom']")
[ -n "$f" ] && [ -s "$T/oom/step0/$f" ]; ok $? "an OOM pickle is written ($f)"

# 5. two processes: one memory_viz pickle per rank, each accepted
for r in 0 1; do
	SLURM_PROCID=$r "$B/gpuprof" run --modes=mem,nvtx --output="$T/two" -- $P --steps 12 --dim 1024 \
		--layers 4 >"$T/two$r.out" 2>&1 &
done
wait
for r in 0 1; do
	python3 - "$T/two/step0/rank$r.torch-exit.pickle" <<'PY'
import pickle, sys
from torch.cuda import _memory_viz as mv
s = pickle.load(open(sys.argv[1], "rb")); mv.segment_plot(s); mv.trace_plot(s)
PY
	ok $? "2 processes: rank $r's pickle opens in torch.cuda._memory_viz"
done

"$B/gpuprof" export --format=memviz -o "$T/two.pickle" "$T/two" 2>/dev/null
python3 - "$T/two.pickle" <<'PY'
import pickle, sys
from torch.cuda import _memory_viz as mv
s = pickle.load(open(sys.argv[1], "rb"))
assert sorted({g["device"] for g in s["segments"]}) == [0, 1], "want a device per rank"
mv.segment_plot(s); mv.trace_plot(s)
PY
ok $? "gpuprof export --format=memviz: both ranks' real segments, a device each, accepted by _memory_viz"

# 5a. torchrun under one agent (one Slurm task): every worker its own rank file, with its
# own kernels, NCCL and steps, and its own memory_viz pickle. Needs two GPUs.
ng=$(python3 -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null)
if [ "${ng:-0}" -ge 2 ]; then
	"$B/gpuprof" run --output="$T/trun" -- python3 -m torch.distributed.run \
		--standalone --nproc_per_node=2 "$(dirname "$0")/../../examples/train_mlp.py" --ddp \
		--steps 20 --dim 1024 --layers 4 >"$T/trun.out" 2>&1
	ok $? "torchrun, 2 workers over NCCL, under one agent (default modes)"
	ls "$T/trun/step0" | grep -c '^rank[01]\.gpr$' | grep -qx 2
	ok $? "a rank file per worker ($(ls "$T/trun/step0" | tr '\n' ' '))"
	"$B/gpuprof" report --format=json "$T/trun" | python3 -c '
import json, sys
d = json.load(sys.stdin); R = {r["rank"]: r for r in d["ranks"]}
printed = {int(l.split()[1]) for l in open(sys.argv[1]) if l.startswith("max_memory_allocated ")}
assert sorted(R) == [0, 1], sorted(R)
for k, r in R.items():
    assert r["steps"]["count"] == 20 and r["steps"]["basis"] == "gpu", (k, r["steps"])
    assert r["gpu"]["kernels_total"] > 100 and r["gpu"]["comm_ns"] > 0, (k, r["gpu"])
    assert r["pytorch"]["max_allocated_bytes"] in printed, (k, r["pytorch"]["max_allocated_bytes"], printed)
print(" ".join("rank %d: %d kernels, step %.3f ms, comm %.1f ms" % (k, r["gpu"]["kernels_total"], r["steps"]["median_ms"], r["gpu"]["comm_ns"] / 1e6) for k, r in sorted(R.items())))' "$T/trun.out" >"$T/trun.chk" 2>&1
	ok $? "each with its own 20 steps on the GPU basis, kernels, NCCL and its own GPU's max_memory_allocated ($(tail -1 "$T/trun.chk"))"
	for r in 0 1; do
		python3 - "$T/trun/step0/rank$r.torch-exit.pickle" <<'PY'
import pickle, sys
from torch.cuda import _memory_viz as mv
s = pickle.load(open(sys.argv[1], "rb")); mv.segment_plot(s)
assert s["segments"], "no segments"
PY
		ok $? "torchrun worker $r's own memory_viz pickle opens in torch.cuda._memory_viz"
	done
else
	for _ in 1 2 3 4 5; do skip "torchrun over NCCL needs two GPUs ($ng here)"; done
fi

# 5b. a leak: the growth per step at tensor level, and the peak's owner is the leak's line
# (the history records in windows after warm-up: the peak grows every step here)
L=$(grep -n "kept.append" "$(dirname "$0")/../../examples/train_mlp.py" | cut -d: -f1)
"$B/gpuprof" run --modes=mem,nvtx --output="$T/leak" -- $P --steps 160 --dim 1024 --layers 4 \
	--leak-bytes 8388608 >"$T/leak.out" 2>&1
g=$(jr leak "r['pytorch']['growth_bytes_per_step']")
near "$g" 8388608 0.01; ok $? "a leak of 8 MiB a step: growth per step at tensor level ($g bytes)"
o=$(jr leak "r['pytorch']['kept_by_recorded_steps'][0]['stack']")
case "$o" in *train_mlp.py:$L*) ok 0 "... and the leak's line is what the recorded steps kept ($o)" ;;
*) ok 1 "... and the leak's line (train_mlp.py:$L) is what the recorded steps kept ($o)" ;; esac
mx=$(val max_memory_allocated "$T/leak.out"); got=$(jr leak "r['pytorch']['max_allocated_bytes']")
near "$got" "$mx" 0.01; ok $? "... peak allocated = max_memory_allocated() within 1 % ($got vs $mx)"

# 6. the user's own torch.profiler and _record_memory_history calls still work
cat >"$T/own.py" <<'EOF'
import torch, pickle
torch.cuda.memory._record_memory_history(max_entries=1000)
m = torch.nn.Linear(512, 512).cuda(); opt = torch.optim.SGD(m.parameters(), lr=0.1)
for _ in range(5):
    m(torch.randn(64, 512, device="cuda")).sum().backward(); opt.step()
s = torch.cuda.memory._snapshot()
print("own_history_entries", len(s["device_traces"][0]))
EOF
"$B/gpuprof" run --modes=mem,nvtx --output="$T/own" -- python3 "$T/own.py" >"$T/own.out" 2>&1
ok $? "a script calling _record_memory_history itself runs"
e=$(val own_history_entries "$T/own.out"); [ "${e:-0}" -gt 0 ]; ok $? "... and gets its history ($e entries)"
[ "$(jr own "r['pytorch']['optimizer_steps']")" = 5 ]; ok $? "... and the steps are still recorded"

# a loop with no optimizer step and no marker of its own (inference: the windows by cost)
# exits as it would: 3 of 10 such runs aborted at exit (heap corruption) where the detach
# fell inside the allocator history's end (session 30), and with the busy guard and the
# poll still 14 of 46 (session 32, H100): PyTorch's step-less windows are no longer
# detached; 5 runs here
cat >"$T/infer.py" <<'EOF'
import time, torch
m = torch.nn.Sequential(*[torch.nn.Linear(1024, 1024) for _ in range(8)]).cuda().eval()
x = torch.randn(64, 1024, device="cuda")
t0 = time.perf_counter()
with torch.no_grad():
    while time.perf_counter() - t0 < 12:
        m(x).sum().item()
print("done")
EOF
bad=""
for i in 1 2 3 4 5; do
	rm -rf "$T/infer"
	"$B/gpuprof" run --output="$T/infer" -- python3 "$T/infer.py" \
		>"$T/infer.out" 2>&1 || bad="$bad run $i: rc $? ($(grep -m1 -i 'corrupt\|abort\|fatal' "$T/infer.out"));"
done
[ -z "$bad" ]; ok $? "a step-less inference loop under the default (the detach poll) exits 0, 5 runs of 5 (${bad:-all 0})"
"$B/gpuprof" dump --events "$T/infer/step0/rank0.gpr" 2>/dev/null | python3 -c '
import re, sys
off, det = None, []
for l in sys.stdin:
    f = dict(re.findall(r"(\w+)=(\d+)", l))
    if l.startswith("control") and off is None and not int(f["a"]) & 4:
        off = int(f["ts"])  # the first window ends: cuda off
    if l.startswith("overhead") and int(f["b"]) == 0x40000000:
        det.append((int(f["ts"]), f["c"], f["d"]))
# PyTorch under GPUPROF_CUPTI_DETACH=auto: a window no step marker follows is not
# detached (such detaches corrupted the heap in 14 of 46 runs on the H100, session 32)
print("window end", off, "detaches", det)
sys.exit(not (off and not det))
' >"$T/infer.det" 2>&1
ok $? "... CUPTI kept after its first window, no step marker following it ($(cat "$T/infer.det"))"

# the same step-less loop capturing CUDA graphs again and again (a server's start-up,
# torch.compile's reduce-overhead): the detach's finalize must not fall inside a capture
# (it waits while the thread's streams see one, and relaxes the thread's capture mode:
# cupti.c, marker.c), and no capture may fail for it; 3 runs, each must exit 0 and finish
cat >"$T/graphs.py" <<'EOF'
import time, torch
m = torch.nn.Sequential(*[torch.nn.Linear(1024, 1024) for _ in range(8)]).cuda().eval()
x = torch.randn(64, 1024, device="cuda")
s = torch.cuda.Stream()
with torch.no_grad():
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            m(x)
    torch.cuda.current_stream().wait_stream(s)
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < 12:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = m(x)
        for _ in range(20):
            g.replay()
        y.sum().item()
        n += 1
print("graphs", n)
EOF
bad="" dets=""
for i in 1 2 3; do
	rm -rf "$T/graphs"
	"$B/gpuprof" run --output="$T/graphs" -- python3 "$T/graphs.py" >"$T/graphs.out" 2>&1 ||
		bad="$bad run $i: rc $? ($(grep -m1 -iE 'corrupt|abort|fatal|capture|error' "$T/graphs.out"));"
	grep -q '^graphs [0-9]' "$T/graphs.out" || bad="$bad run $i: not finished;"
	dets="$dets $("$B/gpuprof" dump --events "$T/graphs/step0/rank0.gpr" 2>/dev/null | grep -c '^overhead.* b=1073741824')"
done
[ -z "$bad" ]; ok $? "a step-less loop capturing CUDA graphs under the default exits 0, 3 runs of 3 (${bad:-all 0}; detaches per run:$dets)"

if [ -n "${FIXTURES:-}" ]; then
	mkdir -p "$FIXTURES"
	for c in mem nonvtx oom leak; do # flat: torch-C.gpr and the program's output
		cp "$T/$c/step0/rank0.gpr" "$FIXTURES/torch-$c.gpr"
		cp "$T/$c.out" "$FIXTURES/torch-$c.out"
	done
	for f in rank0 rank1 launcher0; do
		[ -f "$T/trun/step0/$f.gpr" ] && cp "$T/trun/step0/$f.gpr" "$FIXTURES/torchrun-$f.gpr"
	done
	[ -f "$T/trun.out" ] && cp "$T/trun.out" "$FIXTURES/torchrun.out"
fi
done_testing
