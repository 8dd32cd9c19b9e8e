#!/bin/bash
# Run on the GPU machine: the exports of issue 50 item 3 held to the truth there.
#   known    bench/known_counts (10 launches of inc<<<4096, 256, 0>>>, 3 cudaMemcpy of 4 MiB:
#            HtoD, DtoD, DtoH) under --modes=all: the Kineto export's kernels carry grid
#            [4096,1,1], block [256,1,1], shared memory 0 and registers > 0, its copies
#            4 194 304 bytes and bandwidth = bytes / duration
#   kineto   bench/exports_prog.py (an MLP with SGD, the same steps) alone under
#            torch.profiler (PyTorch's own Kineto trace of 5 steps) and under gpuprof's default
#            capture: every kernel name in both has in our export the launch configurations
#            Kineto wrote for it (grid, block, registers per thread, shared memory); our
#            cpu_op events carry External ids that their launch calls and kernels carry, the
#            kernels' share inside an operation; ProfilerStep#N without NVTX
#   memviz   examples/train_mlp.py --no-nvtx --steps 40 under --modes=mem,nvtx (the PyTorch
#            integration's allocator history and snapshots): which snapshot the export took,
#            its trace's alloc and free_completed entries with Python frames (what the Active
#            Memory Timeline draws); PyTorch's own _memory_viz trace_plot reads it
#   cost     the rank file's size, its kernels and their distinct launch configurations
# Lines "EXPORTS ok|FAIL ..." on stdout; exports, traces and logs in $OUT/exports.tgz.
# Binaries from bench/gpu-carry.sh (the lead runs it on the CPU machine first).
# Usage: bench/gpu-exports.sh
. "$(dirname "$0")/gpu-env.sh"
OUT=${OUT:-/tmp/out}
W=/tmp/exports
rm -rf $W && mkdir -p $W $OUT
export PYTHONUNBUFFERED=1
python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name(0))'

# known: launch configuration and copy bytes against the program's own source
timeout 120 $G/gpuprof run --modes=all --output=$W/known -- $G/known_counts >$W/known.log 2>&1
echo "known rc=$?"
$G/gpuprof export --format=kineto -o $W/known.kt $W/known 2>>$W/known.log
# kineto: the same program under torch.profiler and under gpuprof
STEPS=40 KINETO_TRACE=$W/torch-kineto.json timeout 300 python3 bench/exports_prog.py >$W/kineto-truth.log 2>&1
echo "torch.profiler rc=$?"
STEPS=40 timeout 300 $G/gpuprof run --output=$W/prog -- python3 bench/exports_prog.py >$W/prog.log 2>&1
echo "gpuprof rc=$?"
$G/gpuprof export --format=kineto -o $W/prog.kt $W/prog 2>>$W/prog.log
$G/gpuprof export --format=chrome -o $W/prog.chrome.json $W/prog 2>>$W/prog.log
# memviz: the PyTorch integration's snapshots
timeout 300 $G/gpuprof run --modes=mem,nvtx --output=$W/mem -- python3 examples/train_mlp.py \
	--no-nvtx --steps 40 --dim 1024 --layers 4 >$W/mem.log 2>&1
echo "mem rc=$?"
$G/gpuprof export --format=memviz -o $W/mem.pickle $W/mem 2>$W/memviz.err
echo "memviz rc=$? $(cat $W/memviz.err | tr '\n' ' ')"
python3 -m torch.cuda._memory_viz trace_plot $W/mem.pickle -o $W/mem.html >$W/trace_plot.log 2>&1
echo "trace_plot rc=$? $(stat -c %s $W/mem.html 2>/dev/null) bytes"
ls $W/mem/step*/ 2>/dev/null | tr '\n' ' '
echo

python3 - $W <<'PY' | tee $W/check.txt
import collections, glob, json, os, pickle, sys
W = sys.argv[1]
def say(ok, what):
    print("EXPORTS %s %s" % ("ok" if ok else "FAIL", what))
def events(path):
    return json.load(open(path))["traceEvents"]

# known
f = glob.glob(W + "/known.kt/step*/rank0.json")
ev = events(f[0]) if f else []
k = [e for e in ev if e.get("cat") == "kernel"]
say(len(k) == 10, "known: 10 kernels (%d)" % len(k))
cfg = collections.Counter((tuple(e["args"].get("grid", ())), tuple(e["args"].get("block", ())),
                           e["args"].get("shared memory"), e["args"].get("registers per thread", 0) > 0) for e in k)
say(cfg == {((4096, 1, 1), (256, 1, 1), 0, True): 10}, "known: each grid [4096,1,1] block [256,1,1], "
    "shared memory 0, registers > 0: %s" % dict(cfg))
print("known: registers per thread %s" % sorted({e["args"].get("registers per thread") for e in k}))
c = [e for e in ev if e.get("cat") == "gpu_memcpy"]
say(sorted(e["name"] for e in c) == ["Memcpy DtoD", "Memcpy DtoH", "Memcpy HtoD"] and
    all(e["args"]["bytes"] == 4 << 20 for e in c), "known: 3 copies of 4 MiB by kind (%s)"
    % [(e["name"], e["args"]["bytes"]) for e in c])
say(all(e["dur"] > 0 and abs(e["args"]["memory bandwidth (GB/s)"] - e["args"]["bytes"] / (e["dur"] * 1e3)) <
        0.01 * e["args"]["memory bandwidth (GB/s)"] + 0.01 for e in c),
    "known: bandwidth = bytes / duration (%s GB/s)" % [e["args"]["memory bandwidth (GB/s)"] for e in c])

# kineto: our launch configurations against PyTorch's own Kineto trace
def configs(ev):
    out = collections.defaultdict(set)
    for e in ev:
        if e.get("cat", "").lower() == "kernel":
            a = e.get("args", {})
            if "grid" in a:
                out[e["name"]].add((tuple(a["grid"]), tuple(a["block"]), a["registers per thread"],
                                    a["shared memory"]))
    return out
truth = configs(events(W + "/torch-kineto.json")) if os.path.exists(W + "/torch-kineto.json") else {}
f = glob.glob(W + "/prog.kt/step*/rank0.json")
ev = events(f[0]) if f else []
ours = configs(ev)
both = set(truth) & set(ours)
say(len(both) >= 3, "kineto: %d kernel names in both traces (%d in PyTorch's, %d in ours)"
    % (len(both), len(truth), len(ours)))
bad = {n: (sorted(ours[n]), sorted(truth[n])) for n in both if not ours[n] <= truth[n]}
say(not bad, "kineto: every launch configuration of ours is one PyTorch's Kineto wrote for that "
    "kernel%s" % ("" if not bad else ": %s" % list(bad.items())[:3]))
same = sum(ours[n] == truth[n] for n in both)
print("kineto: %d of %d kernel names with exactly Kineto's set of configurations" % (same, len(both)))
k = [e for e in ev if e.get("cat") == "kernel"]
nocfg = [e for e in k if "grid" not in e["args"]]
say(k and not nocfg, "kineto: %d kernels, %d without a launch configuration" % (len(k), len(nocfg)))
ops = [e for e in ev if e.get("cat") == "cpu_op"]
ext = {e["args"]["External id"]: e for e in ops}
say(len(ops) > 0 and len(ext) == len(ops), "kineto: %d cpu_op events, External ids unique (%s)"
    % (len(ops), collections.Counter(e["name"] for e in ops).most_common(6)))
rt = {e["args"]["correlation"]: e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")}
linked = [e for e in k if e["args"].get("External id") in ext]
agree = [e for e in linked if rt.get(e["args"]["correlation"], {}).get("args", {}).get("External id") == e["args"]["External id"]]
say(linked and len(agree) == len(linked), "kineto: %d kernels charged to an operation, each with its "
    "launch call's External id (%d agree)" % (len(linked), len(agree)))
inside = [e for e in linked for o in [ext[e["args"]["External id"]]]
          if rt.get(e["args"]["correlation"]) and rt[e["args"]["correlation"]]["tid"] == o["tid"]
          and o["ts"] <= rt[e["args"]["correlation"]]["ts"] <= o["ts"] + o["dur"]]
print("kineto: %d of %d charged kernels' launch calls lie inside their op on its thread (the rest: "
      "autograd's thread)" % (len(inside), len(linked)))
steps = [e for e in ev if str(e.get("name", "")).startswith("ProfilerStep#")]
say(len(steps) >= 10, "kineto: %d ProfilerStep#N without NVTX" % len(steps))
ch = events(W + "/prog.chrome.json") if os.path.exists(W + "/prog.chrome.json") else []
tn = [e["args"]["name"] for e in ch if e.get("name") == "thread_name" and e["args"]["name"].startswith("steps (")]
say(tn, "chrome: step track %s" % tn)

# memviz
try:
    s = pickle.load(open(W + "/mem.pickle", "rb"))
except Exception as e:
    s = None
    say(False, "memviz: %s" % e)
if s:
    tr = [e for t in s["device_traces"] for e in t]
    acts = collections.Counter(e["action"] for e in tr)
    py = [e for e in tr if any(f["filename"].endswith(".py") for f in e.get("frames", []))]
    say(acts["alloc"] > 0 and acts["free_completed"] > 0, "memviz: trace %s" % dict(acts))
    say(len(py) >= 0.5 * len(tr) and tr, "memviz: %d of %d trace entries with Python frames" % (len(py), len(tr)))
    blocks = [b for g in s["segments"] for b in g["blocks"] if b["state"] == "active_allocated"]
    print("memviz: %d segments, %d active blocks, %d of them with frames" % (len(s["segments"]), len(blocks),
          sum(1 for b in blocks if b.get("frames"))))
print("memviz: " + open(W + "/memviz.err").read().strip().replace("\n", " | "))

# cost: the rank file's bytes per kernel record and the configurations it names
for rf in glob.glob(W + "/prog/step*/rank0.gpr"):
    print("cost: %s %d bytes, %d kernels in the export, %d distinct launch configurations"
          % (os.path.basename(rf), os.path.getsize(rf), len(k), len(set().union(*ours.values())) if ours else 0))
PY
(cd $W && tar czf $OUT/exports.tgz --exclude='*.gpr' . && cp -r prog known mem $OUT/ 2>/dev/null) && ls -la $OUT
