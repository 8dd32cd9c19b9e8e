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
"$B/gpuprof" export --format=bogus --output="$T/x" "$T/leak" 2>"$T/err"; rc=$?
ok $(( rc == 2 ? 0 : 1 )) "unknown export format rejected"
grep -q "formats: chrome, memviz, html" "$T/err"; ok $? "with the list of formats"
done_testing
