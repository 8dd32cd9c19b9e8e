#!/bin/bash
# Exports read by their real consumers' formats: the memory_viz pickle loads with
# Python's pickle and is self-consistent the way torch.cuda._memory_viz expects
# (blocks tile segments; trace actions known; frames have filename/line/name). On the
# GPU machine PyTorch 2.11's _memory_viz trace_plot/segment_plot/trace/stats accepted
# these files (doc/validation.md). Chrome trace: valid JSON with flows and counters.
. "$(dirname "$0")/tap.sh"
B=${GP_BUILD:?}
F=$(cd "$(dirname "$0")/../fixtures" && pwd)
[ -d "$F/leak" ] || skip_all "no fixtures"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
for f in leak adam torch-leak torch-pystacks; do
	cp -r "$F/$f" "$T/$f"
	"$B/gpuprof" export --format=memviz --output="$T/$f.pickle" "$T/$f"; ok $? "memviz export of $f"
	python3 - "$T/$f.pickle" "$T/$f" "$B" <<'PY'
import json, pickle, subprocess, sys
d = pickle.load(open(sys.argv[1], "rb"))
assert set(d) >= {"segments", "device_traces"}, d.keys()
for s in d["segments"]:
    assert sum(b["size"] for b in s["blocks"]) == s["total_size"]
    for b in s["blocks"]:
        assert b["state"] in ("active_allocated", "inactive") and b["requested_size"] <= b["size"]
        for fr in b["frames"]:
            assert set(fr) == {"filename", "line", "name"}
acts = {"alloc", "free_requested", "free_completed", "segment_alloc", "segment_free"}
for t in d["device_traces"]:
    assert all(e["action"] in acts and e["size"] > 0 for e in t)
    ts = [e["time_us"] for e in t]
    assert ts == sorted(ts), "trace not in time order"
# replaying the trace gives the snapshot's segments
live = {}
for t in d["device_traces"]:
    for e in t:
        if e["action"] == "segment_alloc": live[e["addr"]] = e["size"]
        if e["action"] == "segment_free": live.pop(e["addr"], None)
assert live == {s["address"]: s["total_size"] for s in d["segments"]}
# and the snapshot holds the report's peak for these runs (no frees during the steps)
r = json.loads(subprocess.run([sys.argv[3] + "/gpuprof", "report", "--format=json", sys.argv[2]],
                              capture_output=True, text=True).stdout)["ranks"][0]
assert sum(live.values()) <= r["memory"]["peak_bytes"]
PY
	ok $? "$f: pickle loads, blocks tile segments, trace replays to the snapshot"
done
# a stream CUPTI did not know (its memory records' 2^32-1) is written as PyTorch's own
# snapshots write the default stream, 0: PyTorch's _memory_viz names segments by it
# (stream_4294967295 in its flame graph, a stream no program has)
if /usr/bin/python3 -c 'import torch.cuda._memory_viz' 2>/dev/null; then
	/usr/bin/python3 - "$T/leak.pickle" "$T/torch-leak.pickle" <<'PY'
import pickle, sys
import torch.cuda._memory_viz as mv
for p in sys.argv[1:]:
    d = pickle.load(open(p, "rb"))
    bad = [s["stream"] for s in d["segments"] if s["stream"] != 0]
    bad += [e["stream"] for t in d["device_traces"] for e in t if e["stream"] != 0]
    # PyTorch's own reader (Debian 12's 1.13: segments() takes the segment list), its
    # flame graph's lines as they are (no flamegraph.pl)
    lines = mv.segments(d["segments"], format_flamegraph=lambda s: s).splitlines()
    assert lines and all(l.startswith("stream_0;seg_") for l in lines), (p, lines[:2])
    assert not bad, (p, bad[:3])
PY
	ok $? "memviz: a stream not known is PyTorch's default stream 0, read by torch.cuda._memory_viz (leak, torch-leak)"
else
	skip "memviz streams: no torch.cuda._memory_viz for /usr/bin/python3 (python3-torch)"
fi
python3 -c 'import pickle,sys; d=pickle.load(open(sys.argv[1],"rb")); assert any("gpuprof-train-mlp" == f["filename"] for s in d["segments"] for f in s["frames"])' "$T/leak.pickle"
ok $? "leak: frames name the allocating program"
python3 - "$T/torch-pystacks.pickle" <<'PY'
import pickle, sys
d = pickle.load(open(sys.argv[1], "rb"))
frames = [f for t in d["device_traces"] for e in t for f in e["frames"]]
py = {(f["filename"], f["line"], f["name"]) for f in frames if f["filename"].endswith(".py")}
assert ("train_mlp.py", 80, "main") in py and ("linear.py", 134, "forward") in py, sorted(py)[:8]
PY
ok $? "torch-pystacks: PyTorch's allocations carry Python file, line and function (read without the GIL)"
"$B/gpuprof" export --format=memviz --ranks=7 --output="$T/x.pickle" "$T/leak" 2>"$T/err"; ok $(( $? != 0 ? 0 : 1 )) "a rank that is not there is an error"
python3 - "$T/torch-pystacks.pickle" <<'PY'
import pickle, sys
d = pickle.load(open(sys.argv[1], "rb"))
# frames innermost first as PyTorch writes them: the native frames under the allocating
# call before every Python frame
stacks = [b["frames"] for s in d["segments"] for b in s["blocks"]] + [e["frames"] for t in d["device_traces"] for e in t]
mixed = [f for f in stacks if any(x["filename"].endswith(".py") for x in f) and any(not x["filename"].endswith(".py") for x in f)]
assert mixed
for f in mixed:
    py = [x["filename"].endswith(".py") for x in f]
    assert py == sorted(py), [x["filename"] for x in f]
PY
ok $? "memviz: frames innermost first (native under Python)"
"$B/tests/fuzz/mkhostile" allocs 3000 "$T/allocs" && "$B/gpuprof" export --format=memviz --output="$T/allocs.pickle" "$T/allocs"
python3 - "$T/allocs.pickle" <<'PY'
import pickle, pickletools, sys
raw = open(sys.argv[1], "rb").read()
d = pickle.loads(raw)
n = sum(len(t) for t in d["device_traces"])
assert n == 3000 * 5, n  # alloc: segment_alloc + alloc; free: free_requested, free_completed, segment_free
# the trace list is built in APPENDS of at most 1000 (MemoryViz.js spreads each into push(...))
appends = sum(1 for op, _, _ in pickletools.genops(raw) if op.name == "APPENDS")
assert appends >= n // 1000, (appends, n)
PY
ok $? "memviz: a 15 000-entry trace is appended in batches of 1 000"
"$B/tests/fuzz/mkhostile" ts0 10 "$T/nomem" >/dev/null
"$B/gpuprof" export --format=memviz --output="$T/nomem.pickle" "$T/nomem" 2>"$T/err"; rc=$?
[ $rc -ne 0 ] && [ ! -e "$T/nomem.pickle" ] && grep -q "no device memory records" "$T/err"
ok $? "memviz of a job without memory records: an error, and no file left ($rc)"
cp -r "$F/sync" "$T/sync"
"$B/gpuprof" export --format=chrome --output="$T/all.json" "$T/sync" &&
	"$B/gpuprof" export --format=chrome --window=1.25:1.27 --output="$T/win.json" "$T/sync"
ok $? "chrome export with a time window"
python3 - "$T/all.json" "$T/win.json" <<'PY'
import json, sys
k = [[e for e in json.load(open(p))["traceEvents"] if e.get("cat") == "kernel"] for p in sys.argv[1:]]
assert 0 < len(k[1]) < len(k[0]), (len(k[0]), len(k[1]))
assert all(e["ts"] + e["dur"] >= 1.25e6 and e["ts"] <= 1.27e6 for e in k[1])
PY
ok $? "the window keeps only the kernels that overlap it"
"$B/gpuprof" export --format=chrome --window=5:2 --output="$T/x.json" "$T/sync" 2>/dev/null
ok $(( $? == 2 ? 0 : 1 )) "a reversed window is rejected"
# a multi-rank trace as Perfetto's JSON importer reads it (issue 16)
cp -r "$F/ddp-clean" "$T/ddp"
"$B/gpuprof" export --format=chrome --output="$T/ddp.json" "$T/ddp"; ok $? "chrome export of ddp-clean"
"$B/gpuprof" report --format=json "$T/ddp" >"$T/ddp-report.json"
python3 - "$T/ddp.json" "$T/ddp-report.json" <<'PY'
import collections, json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
rep = json.load(open(sys.argv[2]))
# flows: Perfetto binds v1 flows by (cat, name, id) over the whole file
s = collections.Counter((e["cat"], e["name"], e["id"]) for e in ev if e.get("ph") == "s")
f = collections.Counter((e["cat"], e["name"], e["id"]) for e in ev if e.get("ph") == "f")
assert s and max(s.values()) == 1 and max(f.values()) == 1, "a flow id starts twice"
assert set(s) == set(f), "a flow without its other end"
pid_of = {}
for e in ev:
    if e.get("ph") in "sf":
        pid_of.setdefault(e["id"], set()).add(e["pid"])
assert all(len(p) == 1 for p in pid_of.values()), "a flow joins two ranks"
# every flow starts on a launch call
launch = {(e["pid"], e["tid"], e["ts"]) for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")}
assert all((e["pid"], e["tid"], e["ts"]) in launch for e in ev if e.get("ph") == "s")
# API calls by their names
api = collections.Counter(e["name"] for e in ev if e.get("cat") == "cuda_runtime")
assert api["cudaLaunchKernel"] > 100, api.most_common(3)
# processes per (step, rank) named for people
names = [e["args"]["name"] for e in ev if e.get("name") == "process_name" and e["pid"]]
assert names == ["rank 0 (step 0) on vm", "rank 1 (step 0) on vm"], names
# the memory counter in time order: its peak is the report's
for pid, r in ((1, rep["ranks"][0]), (2, rep["ranks"][1])):
    c = [e for e in ev if e.get("name") == "device memory" and e["pid"] == pid]
    assert [e["ts"] for e in c] == sorted(e["ts"] for e in c)
    peak = max(e["args"]["MiB"] for e in c)
    assert abs(peak - r["memory"]["peak_bytes"] / 1048576) < 0.01, (peak, r["memory"]["peak_bytes"])
# integer nanoseconds to the end: no two kernels of a stream overlap from rounding
for pid in (1, 2):
    by = collections.defaultdict(list)
    for e in ev:
        if e.get("cat") == "kernel" and e["pid"] == pid:
            by[e["tid"]].append((round(e["ts"] * 1000), round(e["dur"] * 1000)))
    for k in by.values():
        k.sort()
        assert all(a[0] + a[1] <= b[0] for a, b in zip(k, k[1:])), "kernels overlap"
PY
ok $? "ddp-clean: flow ids unique and within one rank, on launch calls; API names; processes named; memory peak as the report's; no rounding overlaps"
"$B/gpuprof" export --format=chrome --max-events=2000 --output="$T/cut.json" "$T/ddp" 2>/dev/null
python3 -c 'import json,sys,collections; c=collections.Counter(e["pid"] for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") not in ("M",)); assert c[1] >= 900 and c[2] >= 900, c' "$T/cut.json"
ok $? "--max-events is shared across the ranks"
cp -r "$F/leak" "$T/leak2"
"$B/gpuprof" export --format=chrome --window=1.15:2 --output="$T/lw.json" "$T/leak2"
python3 -c 'import json,sys; c=[e["args"]["MiB"] for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("name") == "device memory"]; assert c and min(c) > 0, c[:3]' "$T/lw.json"
ok $? "inside a window the memory counter starts from the live bytes, never below 0"
"$B/gpuprof" export --format=chrome --ranks=5 --output="$T/none.json" "$T/leak2" 2>"$T/err"; rc=$?
[ $rc -ne 0 ] && grep -q "selects none" "$T/err"; ok $? "--ranks selecting no rank is an error ($rc)"
"$B/gpuprof" export --format=chrome -o - "$T/leak2" >"$T/stdout.json" && python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/stdout.json" && [ ! -e ./- ]
ok $? "-o - writes the export to standard output"
"$B/gpuprof" report --format=json -o - "$T/leak2" | python3 -c 'import json,sys; json.load(sys.stdin)'
ok $? "report -o - as well"
"$B/gpuprof" export --format=bogus --output="$T/x" "$T/leak" 2>"$T/err"; rc=$?
ok $(( rc == 2 ? 0 : 1 )) "unknown export format rejected"
grep -q "formats: chrome, memviz, html, kineto" "$T/err"; ok $? "with the list of formats"

# --format=csv: the report's tables for a spreadsheet, read back with Python's csv module
# against report.json: every kernel with its whole demangled name and the same figures,
# every rank's single values, every finding
"$B/gpuprof" report --format=json "$F/field-sgd-sync" >"$T/sgd.json"
for t in kernels ranks findings; do
	"$B/gpuprof" export --format=csv --table=$t -o "$T/sgd.$t.csv" "$F/field-sgd-sync"; ok $? "csv export of the $t table"
done
python3 - "$T" <<'PY'
import csv, json, sys
T = sys.argv[1]
j = json.load(open(T + "/sgd.json"))
k = list(csv.DictReader(open(T + "/sgd.kernels.csv", newline="")))
assert len(k) == sum(x["kernels"] for x in j["kernel_kinds"]), (len(k), j["kernel_kinds"])
for row, js in zip(k, j["kernels"]):
    assert row["name"] == js["name"] and int(row["total_ns"]) == js["total_ns"] and int(row["calls"]) == js["calls"], (row["name"], js["name"])
    assert float(row["median_ns"]) == js["median_ns"] and float(row["p95_ns"]) == js["p95_ns"], row
    assert int(row["min_ns"]) <= float(row["median_ns"]) <= float(row["p95_ns"]) <= int(row["max_ns"]), row
assert max(len(r["name"]) for r in k) > 100 and any("cutlass_80_simt_sgemm" in r["name"] and "::Params)" in r["name"] for r in k)
r = list(csv.DictReader(open(T + "/sgd.ranks.csv", newline="")))
assert len(r) == 1 and float(r[0]["steps.median_ms"]) == j["ranks"][0]["steps"]["median_ms"] and int(r[0]["gpu_memory_bytes"]) == j["ranks"][0]["gpu_memory_bytes"], r[0]
f = list(csv.DictReader(open(T + "/sgd.findings.csv", newline="")))
assert [x["id"] for x in f] == [x["id"] for x in j["findings"]] and all(a["fix"] == b["fix"] for a, b in zip(f, j["findings"])), f
PY
ok $? "csv: every kernel with its whole name and report.json's figures (median <= p95 within min and max), the rank's values, the findings with their text"
"$B/gpuprof" export --format=csv --table=nope -o "$T/x.csv" "$F/field-sgd-sync" 2>"$T/err"; rc=$?
[ $rc = 2 ] && grep -q "tables: kernels, ranks, findings" "$T/err" && [ ! -e "$T/x.csv" ]; ok $? "an unknown --table is a usage error, nothing written"

# --format=kineto for HTA: one file per rank, checked against what HTA's loader does
# (hta/common/trace_file.py, trace.py, trace_filter.py, trace_symbol_table.py): a unique
# integer distributedInfo.rank per file; GPU work with args stream >= 0 and a
# correlation, API calls without a stream; kernels joined to their launch by correlation
# (HTA's index_correlation), launches named as HTA's launch query expects; iterations
# from ProfilerStep#N annotations; ac2g flows bound within the file
"$B/gpuprof" export --format=kineto -o "$T/kineto" "$F/ddp-clean" 2>"$T/err"; ok $? "kineto export of ddp-clean ($(cat "$T/err"))"
python3 - "$T/kineto/step0" <<'PY'
import json, os, re, sys
d = sys.argv[1]
files = sorted(f for f in os.listdir(d) if f.endswith(".json"))
assert files == ["rank0.json", "rank1.json"], files
ranks = set()
for f in files:
    t = json.load(open(os.path.join(d, f)))
    r = t["distributedInfo"]["rank"]
    assert isinstance(r, int) and r >= 0 and r not in ranks and t["distributedInfo"]["world_size"] == 2, t["distributedInfo"]
    ranks.add(r)
    ev = t["traceEvents"]
    gpu = [e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    cpu = [e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")]
    assert gpu and all(e["args"]["stream"] >= 0 and e["args"]["correlation"] >= 0 and e["dur"] >= 0 for e in gpu), f
    assert all("stream" not in e.get("args", {}) for e in cpu), f
    by_corr = {e["args"]["correlation"]: e for e in cpu}
    joined = [k for k in gpu if k["args"]["correlation"] in by_corr]
    assert len(joined) >= 0.95 * len(gpu), (f, len(joined), len(gpu))
    launch = {"cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx", "cudaMemcpyAsync", "cudaMemsetAsync"}
    names = {by_corr[k["args"]["correlation"]]["name"] for k in joined}
    assert names & launch, names
    steps = [e for e in ev if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep")]
    nums = [int(re.match(r"ProfilerStep\s*#\s*(\d+)", e["name"]).group(1)) for e in steps]
    assert nums == list(range(len(nums))) and len(nums) >= 10, nums
    spans = [(e["ts"], e["ts"] + e["dur"]) for e in steps]
    inside = sum(any(a <= by_corr[k["args"]["correlation"]]["ts"] < b for a, b in spans) for k in joined)
    assert inside >= 0.8 * len(joined), (inside, len(joined))
    assert any("nccl" in k["name"].lower() for k in gpu if k["cat"] == "kernel"), "no NCCL kernel"
    # names as Kineto writes them: kernels demangled (HTA's communication pattern is
    # "^nccl.*" on the demangled name), copies by kind ("Memcpy HtoD")
    kn = [k["name"] for k in gpu if k["cat"] == "kernel"]
    assert not [n for n in kn if n.startswith("_Z")], [n for n in kn if n.startswith("_Z")][:3]
    assert any(re.match(r"^nccl.*", n) for n in kn), "no kernel HTA would call communication"
    mc = {k["name"] for k in gpu if k["cat"] == "gpu_memcpy"}
    assert mc and all(re.match(r"Memcpy [HDAP]to[HDAP]$", n) for n in mc), mc
    s_ids = {e["id"] for e in ev if e.get("ph") == "s"}
    f_ids = [e["id"] for e in ev if e.get("ph") == "f"]
    assert f_ids and all(i in s_ids for i in f_ids), "unbound flow"
print("# kineto files checked")
PY
ok $? "the Kineto files meet HTA's loader: ranks, streams, correlations, launch names, ProfilerStep iterations, NCCL kernels demangled, copies by kind, flows"

# memviz from PyTorch's own snapshots (agent/python writes them beside the rank files and
# records their names): two ranks merged into one pickle, a device per rank. A CPU
# stand-in: each rank records a snapshot name through the integration's own call and
# writes a snapshot-shaped pickle where _gpuprof_mem.py would.
cat >"$T/snap.py" <<'EOF'
import ctypes, os, pickle, sys
r = int(os.environ["SLURM_PROCID"])
base = os.environ["GPUPROF_RANK_FILE"][:-4]
name = os.path.basename(base) + ".torch-exit.pickle"
blk = {"address": 4096 * (r + 1), "size": 1024 << r, "requested_size": 1000, "state": "active_allocated",
       "frames": [{"filename": "train.py", "line": 10 + r, "name": "main"}]}
snap = {"segments": [{"device": 0, "address": 4096 * (r + 1), "total_size": 2 << 20, "allocated_size": 1024 << r,
                      "active_size": 1024 << r, "requested_size": 1000, "stream": 0, "segment_type": "small",
                      "blocks": [blk]}],
        "device_traces": [[{"action": "alloc", "addr": 4096 * (r + 1), "size": 1024 << r, "stream": 0,
                            "frames": blk["frames"]}]]}
if len(sys.argv) > 1:  # a pickle that would run code when loaded
    class Evil:
        def __reduce__(self):
            return (os.system, ("touch " + sys.argv[1],))
    snap["segments"].append(Evil())
pickle.dump(snap, open(base + ".torch-exit.pickle", "wb"), protocol=4)
lib = ctypes.CDLL(os.environ["NVTX_INJECTION64_PATH"])
lib.gpuprof_fw_event.argtypes = [ctypes.c_uint, ctypes.c_uint, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_char_p]
if lib.gpuprof_fw_attach():
    lib.gpuprof_fw_event(10, 0, 3, 0, 0, name.encode())
EOF
for r in 0 1; do SLURM_PROCID=$r "$B/gpuprof" run --modes=timing,nvtx -o "$T/tsnap" -- python3 "$T/snap.py"; done
"$B/gpuprof" export --format=memviz -o "$T/tsnap.pickle" "$T/tsnap" 2>"$T/err"; ok $? "memviz export of two ranks' PyTorch snapshots"
python3 - "$T/tsnap.pickle" <<'PY'
import pickle, sys
s = pickle.load(open(sys.argv[1], "rb"))
assert sorted(g["device"] for g in s["segments"]) == [0, 1], s["segments"]
assert [t[0]["size"] for t in s["device_traces"]] == [1024, 2048], s["device_traces"]
assert {g["blocks"][0]["frames"][0]["line"] for g in s["segments"]} == {10, 11}
PY
ok $? "one device per rank, each with its own segments, blocks, frames and trace"
grep -q "device 1 = rank 1 step 0 cuda:0" "$T/err"; ok $? "the device map is said ($(cat "$T/err"))"
"$B/gpuprof" export --format=memviz --ranks=1 -o "$T/tsnap1.pickle" "$T/tsnap" 2>/dev/null
python3 -c 'import pickle,sys; s=pickle.load(open(sys.argv[1],"rb")); assert len(s["device_traces"]) == 1 and s["device_traces"][0][0]["size"] == 2048' "$T/tsnap1.pickle"
ok $? "--ranks=1 exports rank 1's alone"
SLURM_PROCID=1 "$B/gpuprof" run --modes=timing,nvtx -o "$T/tsnap" -- python3 "$T/snap.py" "$T/PWNED"
"$B/gpuprof" export --format=memviz -o "$T/evil.pickle" "$T/tsnap" 2>"$T/err"; rc=$?
[ $rc = 0 ] && [ ! -e "$T/PWNED" ] && grep -q "rank 1 step 0 left out: .*refused posix.system" "$T/err" &&
	python3 -c 'import pickle,sys; s=pickle.load(open(sys.argv[1],"rb")); assert len(s["device_traces"]) == 1' "$T/evil.pickle"
ok $? "a snapshot pickle that would run code is refused and said, nothing run, the other rank's exported ($(head -1 "$T/err" | cut -c1-120))"
# a step is decided once: a rank file whose header names its step range (the less
# frequent of two outermost ranges) gets the same steps in the report and the Kineto export
if [ -x "$B/tests/nvtx/nvtx_client" ]; then
	GPUPROF_STEP_RANGE=eval_step "$B/gpuprof" run --modes=nvtx --force-overwrite -o "$T/two" -- "$B/tests/nvtx/nvtx_client" tworanges >/dev/null 2>&1 ||
		GPUPROF_STEP_RANGE=eval_step "$B/gpuprof" run --modes=nvtx -o "$T/two" -- "$B/tests/nvtx/nvtx_client" tworanges >/dev/null 2>&1
	"$B/gpuprof" export --format=kineto -o "$T/two.kt" "$T/two" 2>/dev/null
	rep=$("$B/gpuprof" report --format=json "$T/two" | python3 -c 'import json,sys; r=json.load(sys.stdin)["ranks"][0]["steps"]; print(r["range"], r["count"])')
	kt=$(python3 -c 'import json,sys; print(sum(1 for e in json.load(open(sys.argv[1]))["traceEvents"] if str(e.get("name","")).startswith("ProfilerStep#")))' "$T/two.kt/step0/rank0.json")
	[ "$rep" = "eval_step 20" ] && [ "$kt" = 20 ]; ok $? "the header's step range: report '$rep', Kineto export $kt ProfilerStep events (want eval_step 20, 20)"
else
	skip "no nvtx_client built"
fi

# Kineto cpu_op events, launch configuration and copy bytes, and steps without NVTX, on a
# synthetic PyTorch rank (mkhostile ops: 12 steps from optimizer.step(), no NVTX; each the
# integration's operation ranges to/linear/relu/backward, a kernel of backward launched on
# autograd's thread outside every range), held to what HTA's loader and call graph read:
# cpu_op slices enclosing their launch calls on one thread, "External id" on the op, its
# launch calls and kernels; Kineto's arg names (hta/configs/event_args_formats)
"$B/tests/fuzz/mkhostile" ops 12 "$T/ops" >/dev/null
"$B/gpuprof" export --format=kineto -o "$T/ops.kt" "$T/ops" 2>/dev/null &&
	"$B/gpuprof" export --format=chrome -o "$T/ops.json" "$T/ops"
ok $? "kineto and chrome exports of a PyTorch rank without NVTX"
python3 - "$T/ops.kt/step0/rank0.json" "$T/ops.json" <<'PY'
import collections, json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
ops = [e for e in ev if e.get("cat") == "cpu_op"]
names = collections.Counter(e["name"] for e in ops)
# torch functions under the ATen names torch.profiler gives them (HTA's ATen analyses read
# only those); the backward pass, no ATen op, as the integration named it
assert names == {"aten::to": 12, "aten::linear": 12, "aten::relu": 12, "backward": 12}, names
assert {e["args"]["source"] for e in ops if e["name"] == "aten::linear"} == {"train.py:10 (step)"}
ext = {e["args"]["External id"]: e for e in ops}
assert len(ext) == len(ops), "an External id given twice"
rt = [e for e in ev if e.get("cat") == "cuda_runtime"]
gpu = [e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy")]
by_corr = {e["args"]["correlation"]: e for e in rt}
# every launch call inside an op on its own thread carries that op's id and lies inside it
for r in rt:
    i = r["args"].get("External id")
    assert i in ext, r
    o = ext[i]
    if r["tid"] == o["tid"]:
        assert o["ts"] <= r["ts"] and r["ts"] + r["dur"] <= o["ts"] + o["dur"], (o, r)
# every kernel and copy carries its launch call's External id: the op it ran for
want = {"ampere_sgemm_128x64_nn": "aten::linear", "relu_kernel": "aten::relu", "gemm_bwd": "backward", "Memcpy HtoD": "aten::to"}
for k in gpu:
    assert ext[k["args"]["External id"]]["name"] == want[k["name"]], k
    assert k["args"]["External id"] == by_corr[k["args"]["correlation"]]["args"]["External id"]
# launch configuration under Kineto's names where the collector recorded it
for k in gpu:
    a = k["args"]
    if k["name"] == "ampere_sgemm_128x64_nn":
        assert a["grid"] == [128, 2, 1] and a["block"] == [256, 1, 1], a
        assert a["registers per thread"] == 96 and a["shared memory"] == 49152, a
    elif k["name"] == "relu_kernel":
        assert a["grid"] == [4096, 1, 1] and a["block"] == [512, 1, 1] and a["registers per thread"] == 16 and a["shared memory"] == 0, a
    elif k["name"] == "gemm_bwd":  # an older collector's record: no configuration, no keys
        assert not {"grid", "block", "registers per thread", "shared memory"} & set(a), a
    else:  # the copy: bytes and bandwidth (bytes / ns = GB/s), 1 MiB in 100 us
        assert a["bytes"] == 1 << 20 and abs(a["memory bandwidth (GB/s)"] - 10.486) < 0.001, a
# ProfilerStep#N from optimizer.step() without NVTX, each holding its step's ops
steps = sorted((e for e in ev if e.get("name", "").startswith("ProfilerStep#")), key=lambda e: e["ts"])
assert [e["name"] for e in steps] == ["ProfilerStep#%d" % i for i in range(len(steps))] and len(steps) >= 10, [e["name"] for e in steps]
# the Chrome trace: a step track from the same source
ch = json.load(open(sys.argv[2]))["traceEvents"]
tn = [e["args"]["name"] for e in ch if e.get("name") == "thread_name"]
assert "steps (optimizer) on the host: start to the next start" in tn, tn
assert len([e for e in ch if e.get("cat") == "step" and e["name"].startswith("step ")]) >= 10
k = [e for e in ch if e.get("cat") == "kernel" and e["name"] == "ampere_sgemm_128x64_nn"]
assert k and all(e["args"]["grid"] == [128, 2, 1] for e in k)
print("# %d cpu_op, %d launch calls, %d GPU records, %d steps" % (len(ops), len(rt), len(gpu), len(steps)))
PY
ok $? "kineto: cpu_op per operation range with External id on its launches and kernels, grid/block/registers/shared memory, copy bytes and bandwidth, ProfilerStep from optimizer.step(); chrome: steps (optimizer) track, launch configuration"

# memviz: a rank whose exit snapshot was taken with the allocator history off (PyTorch
# empties the trace when recording stops: the Active Memory Timeline would draw one flat
# band) and whose peak snapshot was taken inside a window: the peak's trace is exported
cat >"$T/snap2.py" <<'PYEOF'
import ctypes, os, pickle
base = os.environ["GPUPROF_RANK_FILE"][:-4]
fr = [{"filename": "train.py", "line": 20, "name": "step"}]
def snap(trace):
    blk = {"address": 8192, "size": 4096, "requested_size": 4000, "state": "active_allocated", "frames": fr}
    return {"segments": [{"device": 0, "address": 8192, "total_size": 2 << 20, "allocated_size": 4096,
                          "active_size": 4096, "requested_size": 4000, "stream": 0, "segment_type": "small",
                          "blocks": [blk]}], "device_traces": [trace]}
tr = [{"action": "alloc", "addr": 8192 + 4096, "size": 512, "stream": 0, "frames": fr},
      {"action": "free_requested", "addr": 8192 + 4096, "size": 512, "stream": 0, "frames": fr},
      {"action": "free_completed", "addr": 8192 + 4096, "size": 512, "stream": 0, "frames": fr}]
lib = ctypes.CDLL(os.environ["NVTX_INJECTION64_PATH"])
lib.gpuprof_fw_event.argtypes = [ctypes.c_uint, ctypes.c_uint, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_char_p]
lib.gpuprof_fw_attach()
for tag, why, t in (("peak", 1, tr), ("exit", 3, [])):
    name = os.path.basename(base) + ".torch-%s.pickle" % tag
    pickle.dump(snap(t), open(base + ".torch-%s.pickle" % tag, "wb"), protocol=4)
    lib.gpuprof_fw_event(10, 0, why, 0, 0, name.encode())
PYEOF
SLURM_PROCID=0 "$B/gpuprof" run --modes=timing,nvtx -o "$T/tsnap2" -- python3 "$T/snap2.py"
"$B/gpuprof" export --format=memviz -o "$T/tsnap2.pickle" "$T/tsnap2" 2>"$T/err"; ok $? "memviz export of a rank with an exit and a peak snapshot"
python3 - "$T/tsnap2.pickle" <<'PY'
import pickle, sys
s = pickle.load(open(sys.argv[1], "rb"))
assert len(s["device_traces"]) == 1 and [e["action"] for e in s["device_traces"][0]] == ["alloc", "free_requested", "free_completed"], s["device_traces"]
PY
ok $? "the peak's trace is taken where the exit snapshot's is empty (Active Memory Timeline populated)"
grep -q "peak snapshot: the exit one's trace is empty" "$T/err"; ok $? "and the choice is said ($(cat "$T/err"))"
# the same on a real capture: field-seed-detach (a committed GPU capture) left an exit snapshot taken with the
# history off (an empty trace, 53 live blocks) and a peak one taken inside a window
"$B/gpuprof" export --format=memviz -o "$T/fsd.pickle" "$F/field-seed-detach" 2>"$T/err"
python3 - "$T/fsd.pickle" <<'PY'
import collections, pickle, sys
s = pickle.load(open(sys.argv[1], "rb"))
tr = [e for t in s["device_traces"] for e in t]
acts = collections.Counter(e["action"] for e in tr)
assert acts["alloc"] >= 100 and acts["free_completed"] >= 50, acts
assert sum(1 for e in tr if any(f["filename"].endswith(".py") for f in e.get("frames", []))) >= 100
PY
ok $? "field-seed-detach: the peak snapshot's trace (allocations and frees with Python frames), not the exit one's empty trace ($(cat "$T/err"))"
# one of its snapshots replaced by what is no pickle: the other taken, the bad one said;
# both: the rank's CUDA segments, said (the export failed whole, rc 1, no file)
cp -r "$F/field-seed-detach" "$T/fsd-bad"
printf 'not a pickle' >"$T/fsd-bad/step0/rank0.torch-peak.pickle"
"$B/gpuprof" export --format=memviz -o "$T/fsd-bad.pickle" "$T/fsd-bad" 2>"$T/err"; rc=$?
[ $rc = 0 ] && grep -q "exit snapshot.*the peak one could not be read: UnpicklingError" "$T/err" &&
	python3 -c 'import pickle,sys; s=pickle.load(open(sys.argv[1],"rb")); assert len(s["segments"]) > 0' "$T/fsd-bad.pickle"
ok $? "a snapshot that is no pickle: passed over and said, the other one exported (rc $rc; $(grep -o 'the peak one.*' "$T/err" | head -c 100))"
printf 'x' >"$T/fsd-bad/step0/rank0.torch-exit.pickle"
"$B/gpuprof" export --format=memviz -o "$T/fsd-bad2.pickle" "$T/fsd-bad" 2>"$T/err"; rc=$?
[ $rc = 0 ] && grep -q "rank 0 step 0 left out: the exit one could not be read" "$T/err" &&
	python3 -c 'import pickle,sys; s=pickle.load(open(sys.argv[1],"rb")); assert len(s["segments"]) > 0' "$T/fsd-bad2.pickle"
ok $? "... both: CUDA's segments instead, said (rc $rc)"
# Kineto steps found from the kernels' rhythm (JAX): on a track of their own, so that a
# ProfilerStep spanning to the next step's start never crosses the end of an XLA Thunk
# annotation on the launching thread (64 crossings in field-jax when they shared it)
cp -r "$F/field-jax" "$T/kjax"
"$B/gpuprof" export --format=kineto --output="$T/kjax.out" "$T/kjax" 2>/dev/null
n=$(python3 "$(dirname "$0")/trace_check.py" "$T/kjax.out/step0/rank0.json" 1000 | wc -l)
k=$(grep -o '"ProfilerStep#' "$T/kjax.out/step0/rank0.json" | wc -l)
[ "$n" = 0 ] && [ "$k" -ge 50 ]
ok $? "field-jax's Kineto export: $k ProfilerSteps, $n nesting problems"
done_testing
