#!/bin/bash
# The report on rank files captured on a real H200 (tests/fixtures/*, see its README):
# each planted pathology is found, nothing on the clean runs, exact counts on the
# known-counts program, exports that real consumers parse.
. "$(dirname "$0")/tap.sh"
B=${GP_BUILD:?}
F=$(cd "$(dirname "$0")/../fixtures" && pwd)
ls "$F"/*/step*/rank*.gpr >/dev/null 2>&1 || skip_all "no GPU fixtures committed"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
for d in "$F"/*/; do
	name=$(basename "$d")
	cp -r "$d" "$T/$name"
	"$B/gpuprof" report --format=json "$T/$name" >"$T/$name.json"; ok $? "report on fixture $name"
	want=$(cat "$d/EXPECT")
	got=$(python3 -c 'import json,sys; print(" ".join(sorted(f["id"] for f in json.load(open(sys.argv[1]))["findings"])) or "none")' "$T/$name.json")
	[ "$got" = "$want" ]; ok $? "$name: findings exactly '$want' (got '$got')"
	"$B/gpuprof" export --format=chrome --output="$T/$name.trace.json" "$T/$name"; ok $? "chrome export of $name"
	if "$B/gpuprof" dump "$d"/step0/rank0.gpr | grep -q "^modes=.*cuda"; then
		python3 -c 'import json,sys; t=json.load(open(sys.argv[1])); assert any(e.get("cat")=="kernel" for e in t["traceEvents"]) and any(e.get("cat")=="ac2g" for e in t["traceEvents"])' "$T/$name.trace.json"
		ok $? "$name trace has kernel slices and launch->kernel flows"
	else
		python3 -c 'import json,sys; t=json.load(open(sys.argv[1])); assert not any(e.get("cat")=="kernel" for e in t["traceEvents"])' "$T/$name.trace.json"
		ok $? "$name (captured without cuda) trace has no kernel slices"
	fi
done
python3 - "$T/known.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["ranks"][0]
g, m = r["gpu"], r["memory"]
got = (g["kernels_total"], g["memcpy"], g["memset"], m["allocs"], m["frees"], r["sync"]["calls"])
assert got == (10, 3, 2, 4, 4, 4), got
PY
ok $? "known: exactly 10 kernels, 3 memcpy, 2 memset, 4 allocs, 4 frees, 4 host stalls"
ps=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ranks"][0]["memory"]["peak_stack"])' "$T/torch-pystacks.json")
case "$ps" in "adam.py:178 _init_group [python] <- adam.py:238 step [python] <- "*"train_mlp.py:80 main [python] <- "*) ok 0 "torch-pystacks: the peak is Adam's state, allocated from train_mlp.py:80" ;;
*) ok 1 "torch-pystacks: the peak is Adam's state, allocated from train_mlp.py:80 ($ps)" ;; esac
python3 - "$T/torch-pystacks.json" "$T/torch-leak.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["ranks"][0]; l = json.load(open(sys.argv[2]))["ranks"][0]
got = (p["memory"]["peak_step"], p["memory"]["peak_ranges"], p["memory"]["peak_ranges_other_thread"])
assert got == (0, "train_step > optimizer_step", False), got
# the leak keeps one tensor per step: the peak comes in the second half of the run (the
# caching allocator serves some steps from what it holds: step 10 of 12 here)
assert 2 * l["memory"]["peak_step"] >= l["steps"]["count"], (l["memory"]["peak_step"], l["steps"]["count"])
assert l["memory"]["peak_ranges"].startswith("train_step"), l["memory"]["peak_ranges"]
PY
ok $? "the peak's step and NVTX ranges: Adam's state in step 0's optimizer_step; the leak's late in the run"
sid=$("$B/gpuprof" dump --events "$F/known/step0/rank0.gpr" | sed -n 's/^stream_name .* a=\([0-9]*\) .*u8=1 .*/\1/p')
[ "$("$B/gpuprof" dump --events "$F/known/step0/rank0.gpr" | grep -c "^kernel .* d=$sid ")" = 5 ]
ok $? "known: the stream named with nvtxNameCudaStreamA is CUPTI stream $sid, which ran 5 kernels"
grep -q "\"stream $sid: known_stream\"" "$T/known.trace.json"; ok $? "known: the trace names that track known_stream"
python3 - "$T/window.json" "$T/clean.json" <<'PY'
import json, sys
w = json.load(open(sys.argv[1]))["ranks"][0]; c = json.load(open(sys.argv[2]))["ranks"][0]
assert w["capture"] == {"window": True, "captured_steps": 10, "switches": 3, "switch_max_ns": w["capture"]["switch_max_ns"]}, w["capture"]
assert w["gpu"]["kernels_total"] == 520 and w["gpu"]["kernels_per_step"] == c["gpu"]["kernels_per_step"] == 52, (w["gpu"], c["gpu"]["kernels_per_step"])
assert w["gpu"]["launch_latency_us_median"] > 0, w["gpu"]
PY
ok $? "window: GPU statistics from the 10 captured steps, 52 kernels per step as in the clean run, launch records kept"
python3 - "$T/nvml.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["ranks"][0]
assert r["io"]["pcie"] and not r["io"]["nvlink"] and r["io"]["pcie_peak_Bps"] > 1e8, r["io"]
assert "NVLink counters not supported" in r["io"]["not_sampled"], r["io"]
assert r["faults"]["xid"] == 0 and r["gpu"]["nvml_samples"] > 10, (r["faults"], r["gpu"])
PY
ok $? "nvml: PCIe traffic from the H200's byte counters, NVLink reported as not supported"
python3 -c 'import json,sys; f=[f for f in json.load(open(sys.argv[1]))["findings"] if f["id"]=="straggler"][0]; assert "rank 1" in f["title"], f' "$T/straggler.json"
ok $? "straggler: rank 1 named"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["ranks"][0]; assert r["sync"]["top_range"]=="train_step" and r["sync"]["calls"]>=9, r["sync"]' "$T/sync.json"
ok $? "sync: stalls attributed to the NVTX range they happened in"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["ranks"][0]; assert r["memory"]["optimizer_bytes"]==2*4*(8*4096*4096+8*4096), r["memory"]["optimizer_bytes"]' "$T/adam.json"
ok $? "adam: optimizer state is exactly m and v for weights and biases (2 x 4 B x (8x4096^2 + 8x4096))"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["ranks"][0]; assert "gpuprof-train-mlp" in r["memory"]["leak_stack"], r["memory"]["leak_stack"]' "$T/leak.json"
ok $? "leak: the stack names the allocating program"
python3 -c 'import json,sys; f=[f for f in json.load(open(sys.argv[1]))["findings"] if f["id"]=="straggler"][0]; assert "rank 1" in f["title"] and "wait for it" in f["evidence"], f' "$T/ddp-imbalanced.json"
ok $? "DDP on 2 H200s: rank 1 (20 ms planted) named as the straggler"
python3 - "$T/ddp-clean.json" "$T/ddp-imbalanced.json" <<'PY'
import json, sys
for path in sys.argv[1:]:
    for r in json.load(open(path))["ranks"]:
        g = r["gpu"]
        assert g["comm_ns"] > 0 and g["compute_ns"] > 0 and 0 < g["comm_compute_overlap_ns"] <= g["comm_ns"], g
PY
ok $? "DDP: NCCL communication, compute and their overlap measured on every rank"
"$B/gpuprof" diff "$T/clean" "$T/sync" >"$T/diff.txt"; ok $? "gpuprof diff runs"
grep -q "median step ms.*REGRESSION" "$T/diff.txt" && grep -q "sync_stall.*NEW in B" "$T/diff.txt"; ok $? "diff flags the slower step and the new finding"
done_testing
