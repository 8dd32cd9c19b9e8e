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
	out=$(python3 "$(dirname "$0")/trace_check.py" "$T/$name.trace.json" 5)
	ok $? "$name trace passes Perfetto's import rules (nesting per track, flows bound in slices, counters, metadata)${out:+: $out}"
	if "$B/gpuprof" dump "$d"/step0/rank0.gpr | grep -q "^modes=.*cuda"; then
		python3 -c 'import json,sys; t=json.load(open(sys.argv[1])); assert any(e.get("cat")=="kernel" for e in t["traceEvents"]) and any(e.get("cat")=="ac2g" for e in t["traceEvents"])' "$T/$name.trace.json"
		ok $? "$name trace has kernel slices and launch->kernel flows"
	else
		python3 -c 'import json,sys; t=json.load(open(sys.argv[1])); assert not any(e.get("cat")=="kernel" for e in t["traceEvents"])' "$T/$name.trace.json"
		ok $? "$name (captured without cuda) trace has no kernel slices"
	fi
done
# the checker itself catches what it looks for
printf '%s' '{"traceEvents": [{"ph": "X", "pid": 1, "tid": 1, "ts": 0, "dur": 10, "name": "a"}, {"ph": "X", "pid": 1, "tid": 1, "ts": 5, "dur": 10, "name": "b"}, {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 1, "pid": 1, "tid": 1, "ts": 50}]}' >"$T/bad.trace.json"
n=$(python3 "$(dirname "$0")/trace_check.py" "$T/bad.trace.json" | wc -l)
[ "$n" = 3 ]; ok $? "trace_check.py finds a misnested slice and an unbound flow outside any slice ($n problems)"
for r in 0 1; do
	"$B/gpuprof" export --format=kineto -o "$T/kt" "$F/ddp-clean" 2>/dev/null
	out=$(python3 "$(dirname "$0")/trace_check.py" "$T/kt/step0/rank$r.json" 5)
	ok $? "ddp-clean's Kineto file of rank $r passes the same rules${out:+: $out}"
done

# a step is decided once: the Kineto export's ProfilerStep events are the report's steps,
# whatever the rank file's header says (its step range, its warm-up)
bad=""
for d in "$F"/*/; do
	name=$(basename "$d")
	"$B/gpuprof" export --format=kineto -o "$T/k.$name" "$T/$name" 2>/dev/null || continue
	for f in "$T/k.$name"/step*/rank*.json; do
		[ -f "$f" ] || continue
		r=$(basename "$f" .json); r=${r#rank}
		python3 - "$f" "$T/$name.json" "$r" <<'PY' || bad="$bad $name/rank$r"
import json, sys
t = json.load(open(sys.argv[1])); rep = json.load(open(sys.argv[2])); r = int(sys.argv[3])
n = sum(1 for e in t["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep#"))
want = [x["steps"]["count"] for x in rep["ranks"] if x["rank"] == r]
sys.exit(0 if want and n == want[0] else 1)
PY
	done
done
[ -z "$bad" ]; ok $? "Kineto export: ProfilerStep events = the report's steps on every fixture${bad:+ (not:$bad)}"
# the Chrome trace gets the same steps, from whatever found them (NVTX, optimizer.step(),
# the kernels), on a track named by their source, whatever the fixture
python3 - "$T" "$F" <<'PY'
import glob, json, os, sys
T, F = sys.argv[1], sys.argv[2]
bad = []
for d in sorted(glob.glob(F + "/*/")):
    n = os.path.basename(d[:-1])
    rep = json.load(open("%s/%s.json" % (T, n))); t = json.load(open("%s/%s.trace.json" % (T, n)))["traceEvents"]
    want = sum(r["steps"]["count"] for r in rep["ranks"])
    got = sum(1 for e in t if e.get("cat") == "step" and not e["name"].startswith("ProfilerStep") and e.get("tid") == 1 << 41)
    srcs = {e["args"]["name"] for e in t if e.get("ph") == "M" and str(e.get("args", {}).get("name", "")).startswith("steps (")}
    want_src = {"steps (%s) on the host: start to the next start" % r["steps"]["source"] for r in rep["ranks"] if r["steps"]["count"]}
    if got != want or srcs != want_src:
        bad.append("%s: %s step slices, %s steps; tracks %s, sources %s" % (n, got, want, srcs, want_src))
for b in bad:
    print("# " + b)
sys.exit(1 if bad else 0)
PY
ok $? "Chrome export: a step slice for each of the report's steps on every fixture, on a track named by what found them (NVTX, optimizer, kernels)"
# the Kineto files' copies carry their bytes and rate (HTA's memory bandwidth analysis
# reads "bytes" and "memory bandwidth (GB/s)"): known's 3 copies, as its records say
"$B/gpuprof" export --format=kineto -o "$T/kt.known" "$T/known" 2>/dev/null
want=$("$B/gpuprof" dump --events "$F/known/step0/rank0.gpr" | awk '/^memcpy / {for (i = 1; i <= NF; i++) if ($i ~ /^b=/) s += substr($i, 3)} END {print s}')
python3 - "$T/kt.known/step0/rank0.json" "$want" <<'PY'
import json, sys
m = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("cat") == "gpu_memcpy"]
assert len(m) == 3 and sum(e["args"]["bytes"] for e in m) == int(sys.argv[2]), (len(m), [e["args"] for e in m], sys.argv[2])
for e in m:
    bw = e["args"]["bytes"] / (e["dur"] * 1000)
    assert abs(e["args"]["memory bandwidth (GB/s)"] - bw) <= 0.01 * bw + 0.002, (e["args"], e["dur"])
PY
ok $? "Kineto export: known's 3 copies with their bytes ($want in all, as the rank file's records) and bandwidth"

# the field: programs nobody here wrote the loop of, captured with the default modes and
# sampled capture, each against what the program measured itself (TRUTH, bench/field)
python3 - "$T" "$F" "$B" <<'PY'
import json, statistics as st, subprocess, sys
T, F, B = sys.argv[1], sys.argv[2], sys.argv[3]
def load(n):
    return json.load(open("%s/%s.json" % (T, n))), json.loads(open("%s/%s/TRUTH" % (F, n)).read())
def near(a, b, tol):
    return b and abs(a / b - 1) <= tol
bad = []
def check(cond, what):
    if not cond:
        bad.append(what)
# JAX: steps from the kernels (65 jitted steps, no NVTX, no optimizer it knows), XLA's pool
for n in ("field-jax", "field-jax-noprealloc"):
    j, t = load(n); r = j["ranks"][0]
    check(abs(r["steps"]["count"] - t["steps"]) <= 1, "%s: %s steps, truth %s" % (n, r["steps"]["count"], t["steps"]))
    check(near(r["steps"]["median_ms"], t["step_ms_median"], 0.05), "%s: median %.4f vs %.4f" % (n, r["steps"]["median_ms"], t["step_ms_median"]))
    p = r.get("pool", {})
    check(p.get("in_use_peak_bytes") == t["peak_bytes_in_use"], "%s: in use peak %s vs %s" % (n, p.get("in_use_peak_bytes"), t["peak_bytes_in_use"]))
    check(p.get("pool_bytes") == t["pool_bytes"], "%s: pool %s vs %s" % (n, p.get("pool_bytes"), t["pool_bytes"]))
    # the accounting record's peak (SystemComment, the ledger, AdminComment's peak=) is the
    # memory in use, as the card line says, not the pool XLA preallocated (105 GiB)
    check(j["accounting"]["peak_bytes"] == t["peak_bytes_in_use"], "%s: accounting peak %s vs in use %s" % (n, j["accounting"]["peak_bytes"], t["peak_bytes_in_use"]))
    check(r["startup"]["s"] > 1 and r["startup"]["compile_s"] > 0.5, "%s: start-up %s" % (n, r["startup"]))
    top = [k["name"] for k in j["kernels"][:10]]
    check(not any("RedzoneAllocator" in k or "autotun" in k.lower() for k in top), "%s: start-up kernels in the steady table %s" % (n, top))
    # the program waits for every step (l.block_until_ready()), which is no CUDA call: the
    # GPU idle before each step's launch says so, and the advice is JAX's, not py-spy's
    f = [x for x in j["findings"] if x["id"] == "idle_gaps"]
    check(f and "waits for every step" in f[0]["title"] and "block_until_ready" in f[0]["fix"] and "py-spy" not in f[0]["fix"], "%s: the per-step wait %s" % (n, f and (f[0]["title"], f[0]["fix"][:80])))
    check(r["gpu"]["idle_host_gaps"] >= 0.9 * r["steps"]["count"] - 5, "%s: idle before %s of %s steps" % (n, r["gpu"]["idle_host_gaps"], r["steps"]["count"]))
# a planted host sleep in a CUDA C loop (fixture idle: gpuprof-train-mlp): never ahead
# either, but no JAX wait, and a host profiler for C (perf), not Python's
j = json.load(open("%s/idle.json" % T)); f = [x for x in j["findings"] if x["id"] == "idle_gaps"]
check(f and "waits for every step" not in f[0]["title"] and "perf record" in f[0]["fix"] and "never ran ahead" in f[0]["evidence"], "idle: host advice %s" % (f and f[0]["title"]))
# kernel time by kind: every kernel in one kind, so the kinds add up to the kernels' time;
# GPT-2's largest is its GEMMs, and nothing of the JAX step is left unread
for n in ("field-gpt2-windows", "field-jax", "ddp-clean"):
    j = json.load(open("%s/%s.json" % (T, n)))
    ks, kk = j["kernels"], j["kernel_kinds"]
    check(len(ks) < 200 and sum(k["total_ns"] for k in kk) == sum(k["total_ns"] for k in ks) and sum(k["kernels"] for k in kk) == len(ks), "%s: kinds %s against %d kernels" % (n, [(k["kind"], k["total_ns"]) for k in kk], len(ks)))
    check(all(sum(x["total_ns"] for x in ks if x["kind"] == k["kind"]) == k["total_ns"] for k in kk), "%s: each kernel's kind as the kinds say" % n)
j = json.load(open("%s/field-gpt2-windows.json" % T))
check(j["kernel_kinds"][0]["kind"] == "GEMM", "gpt2: largest kind %s" % j["kernel_kinds"][0])
j = json.load(open("%s/field-jax.json" % T)); tot = sum(k["total_ns"] for k in j["kernel_kinds"])
check(all(k["kind"] != "other" or k["total_ns"] < 0.01 * tot for k in j["kernel_kinds"]), "jax: kinds %s" % j["kernel_kinds"])
# kernel time by XLA operation and jitted function (XLA's own NVTX ranges and kernel
# names): every kernel of the kernel table in one row, the jitted step all of it, and an
# XLA fusion's row its kernels' time as the kernel table has it (CUPTI's records)
a = j["attribution"]; ks = {k["name"]: k for k in j["kernels"]}
ops = {o["name"]: o for o in a["operations"]}
check(a["framework"] == "jax" and a["total_ns"] == sum(k["total_ns"] for k in ks.values()) and [(x["name"], x["share_pct"]) for x in a["source_lines"]] == [("jit_step", 100.0)], "jax: attribution %s %s %s" % (a["framework"], a["total_ns"], [(x["name"], x["share_pct"]) for x in a["source_lines"]]))
fus = [n for n in ks if "fusion" in n]
check(fus and all(n in ops and ops[n]["gpu_ns"] == ks[n]["total_ns"] and ops[n]["kernels"] == ks[n]["calls"] for n in fus), "jax: fusions' rows against the kernel table %s" % [(n, ops.get(n, {}).get("gpu_ns"), ks[n]["total_ns"]) for n in fus][:4])
j = json.load(open("%s/ddp-clean.json" % T))
check(any(k["kind"] == "communication" and k["total_ns"] > 0 for k in j["kernel_kinds"]), "ddp: NCCL's kernels a kind of their own")
# Lightning: the trainer is the rank though another process took the task's ring first
j, t = load("field-lightning"); r = j["ranks"][0]
check(r["processes"]["recorded"] == 2 and r["processes"]["listed"][0]["pid"] == t["pid"], "lightning: processes %s, trainer pid %s" % (r["processes"], t["pid"]))
check(r["steps"]["count"] == t["optimizer_steps"], "lightning: %s steps vs %s optimizer steps" % (r["steps"]["count"], t["optimizer_steps"]))
# its steps are host-bound and drift over the run (DataLoader with num_workers=0): the
# host's period over every step against the program's, and the GPU median near it
check(near(r["steps"]["period_median_ms"], t["step_ms_median"], 0.02), "lightning: period %.4f vs %.4f" % (r["steps"]["period_median_ms"], t["step_ms_median"]))
check(near(r["steps"]["median_ms"], t["step_ms_median"], 0.2), "lightning: median %.4f vs %.4f" % (r["steps"]["median_ms"], t["step_ms_median"]))
check(r["pytorch"]["max_allocated_bytes"] == t["max_memory_allocated"], "lightning: peak %s vs %s" % (r["pytorch"]["max_allocated_bytes"], t["max_memory_allocated"]))
# the input-bound job: its wait for data, as the program timed it
j, t = load("field-input"); f = j["findings"][0]
check(f["id"] == "input_bound" and near(f["saving_ms"], t["data_wait_ms_mean"], 0.15), "input: %s %.2f ms vs the program's %.2f ms wait" % (f["id"], f["saving_ms"], t["data_wait_ms_mean"]))
check("num_workers" in f["fix"] and "DataLoader" not in j["findings"][-1]["fix"] or len(j["findings"]) > 0, "input: advice")
check(all("DataLoader" not in x["fix"] for x in j["findings"] if x["id"] != "input_bound"), "input: DataLoader advice outside input_bound")
# steps that are not alike (issue 49): the loader's steps alternate about 13 and 130 ms,
# so the median (16.8 ms) is neither; the shape is said, the throughput beside it
r = j["ranks"][0]["steps"]
check(r["shape"] == "alternating" and near(r["shape_low_ms"], 13, 0.1) and near(r["shape_high_ms"], 130, 0.1), "input: steps %s between %.1f and %.1f ms" % (r["shape"], r["shape_low_ms"], r["shape_high_ms"]))
check(r["shape_low_ms"] < r["mean_period_ms"] < r["shape_high_ms"] and near(r["per_second"] * r["mean_period_ms"], 1000, 0.001), "input: throughput %.3f ms a step, %.3f/s" % (r["mean_period_ms"], r["per_second"]))
# GPT-2 under sampled windows: the headline is the untraced steps' own timing, the
# traced steps' beside it; nothing of gpuprof's own blamed on the program
j, t = load("field-gpt2-windows"); r = j["ranks"][0]; w = r["windows"]
# the program's own step times (CUDA events, from step 6 on) of the steps outside the
# windows (sampled=10/40, warm-up 3: traced before step 13 and where step % 40 < 10)
steps = [(j + 6, v) for j, v in enumerate(t["step_ms"])]
un = [v for s, v in steps if not (s < 13 or s % 40 < 10)]
tr = [v for s, v in steps if s < 13 or s % 40 < 10]
check(near(r["steps"]["median_ms"], st.median(un), 0.02), "gpt2: headline %.3f vs the program's untraced median %.3f" % (r["steps"]["median_ms"], st.median(un)))
check(near(w["traced_median_ms"], st.median(tr), 0.03), "gpt2: traced %.3f vs the program's %.3f" % (w["traced_median_ms"], st.median(tr)))
check(r["steps"]["median_low_ms"] <= st.median(un) <= r["steps"]["median_high_ms"], "gpt2: the program's untraced median %.3f inside the headline's interval %.3f-%.3f" % (st.median(un), r["steps"]["median_low_ms"], r["steps"]["median_high_ms"]))
check(w["traced_low_ms"] <= st.median(tr) <= w["traced_high_ms"], "gpt2: the program's traced median %.3f inside the interval %.3f-%.3f" % (st.median(tr), w["traced_low_ms"], w["traced_high_ms"]))
check(w["untraced_steps"] > 100 and w["traced_steps"] >= 40 and w["tracer_ms_per_step"] > 0, "gpt2: windows %s" % w)
# the throughput against the program's own: the mean of its step times (from step 6)
check(near(r["steps"]["mean_period_ms"], st.mean(t["step_ms"]), 0.01) and r["steps"]["shape"] == "alike", "gpt2: a step every %.3f ms vs the program's mean %.3f (%s)" % (r["steps"]["mean_period_ms"], st.mean(t["step_ms"]), r["steps"]["shape"]))
check(r["capture"]["switches"] >= 10, "gpt2: windows every 40 steps: %s switches" % r["capture"]["switches"])
# GPU-bound: its fastest untraced steps are its GPU work, which tracing does not stretch;
# the busy share scaled to the untraced steps follows from it
work = r["gpu"]["busy_ns"] / 1e6 / r["capture"]["captured_steps"]
check(0.9 * min(un) <= work <= min(un), "gpt2: %.3f ms of GPU work a step vs the program's fastest step %.3f" % (work, min(un)))
check(0.9 * min(un) <= r["gpu"]["kernel_ms_per_step"] <= work, "gpt2: %.3f ms of kernels a traced step vs the program's fastest step %.3f" % (r["gpu"]["kernel_ms_per_step"], min(un)))
check(near(r["gpu"]["busy_pct_untraced"], 100 * work / r["steps"]["median_ms"], 0.001) and r["gpu"]["busy_pct_untraced"] > 90, "gpt2: busy %.1f%% of an untraced step" % r["gpu"]["busy_pct_untraced"])
# GPT-2 again, with PyTorch's module ranges in the windows (session 16's default): each
# traced kernel under the module that launched it, module ranges in the traced steps only
# (hooks registered at the optimizer step a window begins at, from the first step's end),
# and the headline still the untraced steps' own (the hooks cost the traced steps only)
j, t = load("field-gpt2-layers"); r = j["ranks"][0]
nv = {x["name"]: x for x in j["nvtx"]}
steps = [(k + 6, v) for k, v in enumerate(t["step_ms"])]
un = [v for s, v in steps if not (s < 13 or s % 40 < 10)]
check(near(r["steps"]["median_ms"], st.median(un), 0.02), "gpt2-layers: headline %.3f vs the program's untraced median %.3f" % (r["steps"]["median_ms"], st.median(un)))
want = sum(1 for s in range(1, len(t["step_ms"]) + 6) if s < 13 or s % 40 < 10)
m = nv.get("GPT2LMHeadModel", {})
check(m.get("count_all") == want, "gpt2-layers: the model's forward in %s steps, the traced ones from step 1: %s" % (m.get("count_all"), want))
check(all(nv.get(n, {}).get("count_all") == 6 * want for n in ("GPT2Block", "GPT2Block backward", "GPT2Attention", "GPT2MLP")), "gpt2-layers: six blocks a step, forward and backward %s" % [(n, nv.get(n, {}).get("count_all")) for n in ("GPT2Block", "GPT2Block backward", "GPT2Attention", "GPT2MLP")])
ks = j["kernels"]; inmod = sum(k["launched_in_ns"] for k in ks if k["launched_in"]) / sum(k["total_ns"] for k in ks)
check(inmod > 0.7 and ks[0]["launched_in"] == "Linear", "gpt2-layers: %.1f %% of the kernels' time launched in a module, the largest GEMM in %s (the LM head)" % (100 * inmod, ks[0]["launched_in"]))
# the seed step with CUPTI detached after each window and attached again: every window's
# kernels (10 steps each, the first after the warm-up), each joined to its launch call
j, t = load("field-seed-detach"); r = j["ranks"][0]; g = r["gpu"]
check(r["capture"]["captured_steps"] == t["windows_post_warmup_steps"], "seed-detach: %s steps traced" % r["capture"]["captured_steps"])
check(g["kernels"] == t["windows_post_warmup_steps"] * t["kernels_per_step"], "seed-detach: %s kernels in the traced steps" % g["kernels"])
check(g["launch_latency_us_median"] and g["kernels_shorter_than_launch"] is not None, "seed-detach: launches joined %s" % g["launch_latency_us_median"])
check(near(r["steps"]["median_ms"], t["step_ms_median"], 0.03), "seed-detach: headline %.3f vs %.3f" % (r["steps"]["median_ms"], t["step_ms_median"]))
# gpuprof's own time on the program's thread under the default (H200, PyTorch 2.11): the
# report's median a step is the median of the rises of the running total each optimizer
# step's record carries (read here from the records, past the warm-up), and its share is
# of the headline, which is the program's own median
for n, most in (("field-seed-own", 2.0), ("field-seed-fast", 1.0)):
    j, t = load(n); r = j["ranks"][0]; o = r["own_cost"]
    tot = [int(l.split(" d=")[1].split()[0]) for l in subprocess.run([B + "/gpuprof", "dump", "--events", "%s/%s/step0/rank0.gpr" % (F, n)], capture_output=True, text=True).stdout.splitlines() if l.startswith("fw ") and " u8=4 " in l and " a=0 " in l]
    d = [b - a for a, b in zip(tot, tot[1:])][max(r["steps"]["warmup"], 2):]
    check(o["steps"] == len(d) > 1000 and abs(o["us_per_step"] - st.median(d) / 1e3) < 0.01, "%s: %s us a step over %s steps; from the records %.3f over %s" % (n, o["us_per_step"], o["steps"], st.median(d) / 1e3 if d else 0, len(d)))
    check(abs(o["pct_of_step"] - o["us_per_step"] / 10 / r["steps"]["median_ms"]) < 0.001 and near(r["steps"]["median_ms"], t["step_ms_median"], 0.03), "%s: %.3f %% of the headline %.3f ms (the program's median %.3f)" % (n, o["pct_of_step"], r["steps"]["median_ms"], t["step_ms_median"]))
    # session 17's ctypes call (1.09 %); session 18's C extension (0.78 %): the 1 % goal
    check(0 < o["pct_of_step"] <= most, "%s: own %.3f %% of the step (at most %s)" % (n, o["pct_of_step"], most))
# ring v6: every range of the C step is one record from its thread's lane (216 = 24 steps
# x 9 ranges, no push or pop), nested as the program nests them, kernels inside them; the
# headline against the program's own synchronised step (it diverged: exit 3, its truth)
j = json.load(open("%s/lanes.json" % T)); r = j["ranks"][0]
t = {l.split()[0]: float(l.split()[1]) for l in open("%s/lanes/TRUTH" % F) if l[:1] != "#"}
cnt = {l.split()[1]: int(l.split()[2]) for l in subprocess.run([B + "/gpuprof", "dump", "%s/lanes/step0/rank0.gpr" % F], capture_output=True, text=True).stdout.splitlines() if l.startswith("count ")}
check(cnt.get("nvtx_range") == t["nvtx_ranges"] and "nvtx_push" not in cnt and "nvtx_pop" not in cnt, "lanes: range records %s" % cnt)
names = {n["name"]: n["count_all"] for n in j["nvtx"]}
check(len(names) == 9 and set(names.values()) == {24} and r["steps"]["count"] == t["iterations"], "lanes: ranges %s, %s steps" % (names, r["steps"]["count"]))
check(near(r["steps"]["median_ms"], t["synchronised_step_ms"], 0.01) and r["outcome"] == "exit 3", "lanes: headline %.4f ms against the program's %.4f (%s)" % (r["steps"]["median_ms"], t["synchronised_step_ms"], r["outcome"]))
check(all(k["launched_in"] in names for k in j["kernels"]), "lanes: every kernel launched inside a range: %s" % sorted({k["launched_in"] for k in j["kernels"]}))
# a leak of 1 MiB per step: its growth (tensors), its line
j, t = load("field-leak"); f = [x for x in j["findings"] if x["id"] == "memory_leak"]
check(f and "leak.py:17" in f[0]["title"] and "1.0 MiB per step" in f[0]["title"], "leak: %s" % (f and f[0]["title"]))
# an OOM: PyTorch's failed request, the line that made what filled the device
j, t = load("field-oom"); f = j["findings"][0]
# bytes as the findings scale them (gp_rule_bytes, report/rulekit.c): 5368709120 is "5.00 GiB"
scaled = lambda b: next(("%.*f %s" % (p, b / d, u) for d, u, p in ((1 << 30, "GiB", 2), (1 << 20, "MiB", 1), (1 << 10, "KiB", 1)) if b >= d), "%.0f B" % b)
check(f["id"] == "cuda_oom" and "PyTorch asked for %s " % scaled(t["requested"]) in f["evidence"] and t["make_line"] in f["evidence"], "oom: %s" % f["evidence"])
# a field review's SGD loop on one GPU: the headline, and advice that fits its optimizer
j, t = load("field-sgd-sync"); r = j["ranks"][0]
check(near(r["steps"]["median_ms"], t["step_ms"]["median"], 0.01), "sgd-sync: headline %.3f vs %.3f" % (r["steps"]["median_ms"], t["step_ms"]["median"]))
# memory held against the card: SGD's momentum is 27 % of a 1.4 GiB peak on an 80 GiB H100
# (1.8 % of it), no constraint, so no optimizer finding
f = [x for x in j["findings"] if x["id"] == "optimizer_state"]
check(not f and r["gpu_memory_bytes"] == 85520809984 and r["memory"]["peak_bytes"] < 0.02 * r["gpu_memory_bytes"], "sgd-sync: no optimizer finding at %.1f %% of the card %s" % (100.0 * r["memory"]["peak_bytes"] / max(r["gpu_memory_bytes"], 1), f and f[0]["title"]))
# its batch is built on the CPU and copied with .cuda() from pageable memory: one
# 512 x 2048 fp32 copy (4 MiB) a step (its labels, 4 KiB, are below what the calls can tell)
g = r["gpu"]; f = [x for x in j["findings"] if x["id"] == "pageable_copies"]
n = r["capture"]["captured_steps"]
check(g["pageable_copies"] == n and g["pageable_bytes"] == n * 512 * 2048 * 4 and g["pageable_inferred"], "sgd-sync: pageable copies %s, %s bytes in %s steps" % (g["pageable_copies"], g["pageable_bytes"], n))
check(f and "pin_memory=True" in f[0]["fix"] and "non_blocking=True" in f[0]["fix"] and "4.0 MiB per step" in f[0]["evidence"], "sgd-sync: pageable finding %s" % (f and (f[0]["evidence"][:120], f[0]["fix"][:80]),))
# an fp32 MLP on an H100 without TF32: every GEMM on CUDA cores (SIMT/FFMA), PyTorch's words
f = [x for x in j["findings"] if x["id"] == "fp32_no_tensor_cores"]
gemm = [k["total_ns"] for k in j["kernel_kinds"] if k["kind"] == "GEMM"]
check(f and gemm and g["fp32_simt_gemm_ns"] == gemm[0] and g["fp32_simt_gemm_sm"] == 80 and "set_float32_matmul_precision" in f[0]["fix"] and "cublas" not in f[0]["fix"].lower(), "sgd-sync: fp32 GEMMs %s of %s ns, %s" % (g["fp32_simt_gemm_ns"], gemm, f and f[0]["fix"][:80]))
# the must-nots: a pinned DataLoader with non_blocking copies (field-input: its 19 MB
# batches are no pageable copy); bf16 GEMMs (GPT-2 under autocast: no fp32 SIMT GEMM)
j = json.load(open("%s/field-input.json" % T)); g = j["ranks"][0]["gpu"]
check(g["host_device_copies"] >= 20 and g["pageable_copies"] == 0 and not [x for x in j["findings"] if x["id"] == "pageable_copies"], "input: pinned copies %s, pageable %s" % (g["host_device_copies"], g["pageable_copies"]))
j = json.load(open("%s/field-gpt2-windows.json" % T)); g = j["ranks"][0]["gpu"]
check(g["fp32_simt_gemm_ns"] == 0 and not [x for x in j["findings"] if x["id"] == "fp32_no_tensor_cores"], "gpt2 (bf16): fp32 SIMT GEMMs %s" % g["fp32_simt_gemm_ns"])
# advice in the program's words: a PyTorch program without gpuprof's integration (its
# kernels say PyTorch) is never told to call cudaFree; a CUDA C program is
j = json.load(open("%s/oom-torch.json" % T)); f = [x for x in j["findings"] if x["id"] == "memory_leak"]
check(f and "cudaFree" not in f[0]["fix"] and ".detach()" in f[0]["fix"] and j["ranks"][0]["gpu"]["pytorch_kernels"], "oom-torch: leak advice %s" % (f and f[0]["fix"][:80]))
j = json.load(open("%s/field-oom.json" % T)); f = [x for x in j["findings"] if x["id"] == "memory_leak"]
check(f and "cudaFree" not in f[0]["fix"] and ".detach()" in f[0]["fix"], "field-oom (PyTorch, the allocator's counters not seen for 3 steps): leak advice %s" % (f and f[0]["fix"][:80]))
j = json.load(open("%s/leak.json" % T)); f = [x for x in j["findings"] if x["id"] == "memory_leak"]
check(f and "cudaFree" in f[0]["fix"], "leak (CUDA C): leak advice %s" % (f and f[0]["fix"][:80]))
# ... and its leak is named by the line the allocator history saw make what was kept (the
# cuda_oom finding names it: oom.py:17, 27 tensors), not "(no stack: ... CUPTI's callbacks)"
# and a fix that says "the line named" with none named
j = json.load(open("%s/field-oom.json" % T)); f = [x for x in j["findings"] if x["id"] == "memory_leak"]
check(f and "oom.py:17" in f[0]["title"] + f[0]["evidence"] and "CUPTI" not in f[0]["evidence"], "field-oom: the leak's line %s" % (f and f[0]["evidence"][-160:]))
# the accounting record (SystemComment, gpuprof ledger) charges the job its own time, not
# gpuprof's tracing: under sampled capture the steps' compute share is the untraced steps'
# busy share the report gives (gpu.busy_pct_untraced), not the traced windows' that tracing
# stretched (GPT-2: 78 % traced, 96 % its own; seed_mlp: 42 % against 72 %)
for n in ("field-gpt2-layers", "field-gpt2-windows", "field-seed-own"):
    j = json.load(open("%s/%s.json" % (T, n))); a = j["accounting"]["gpu_s"]; g = j["ranks"][0]["gpu"]
    share = 100.0 * a["compute"] / max(sum(a.values()) - a["startup"], 1e-9)
    check(g["busy_pct_untraced"] > 0 and abs(share - g["busy_pct_untraced"]) < 3, "%s: accounting compute %.1f %% of the steps, its untraced busy %.1f %% (traced %.1f %%), idle %.3f s" % (n, share, g["busy_pct_untraced"], g["busy_pct"], a["idle"]))
# a CUDA C program (gpuprof-train-mlp: cuBLAS, no Python) is not told of loss.item(),
# tensors, DataLoader batches or py-spy: the advice speaks its framework
for n, rule, words in (("sync", "sync_stall", ("loss.item", "tensor")), ("idle", "idle_gaps", ("DataLoader", "py-spy", "Python"))):
    j = json.load(open("%s/%s.json" % (T, n))); f = [x for x in j["findings"] if x["id"] == rule]
    check(f and not j["ranks"][0]["gpu"]["pytorch_kernels"] and not [w for w in words if w in f[0]["fix"]], "%s (CUDA C): %s advice %s" % (n, rule, f and f[0]["fix"][:90]))
# the idle finding's "GPU busy N% of the traced steps" is the time table's busy % of the rank
# it names (ddp-imbalanced rank 1: 11.0, not 13.6 with its exposed all-reduce counted busy)
for n in ("ddp-imbalanced", "pt-torchrun", "field-oom"):
    j = json.load(open("%s/%s.json" % (T, n)))
    for f in [x for x in j["findings"] if x["id"] == "idle_gaps"]:
        r = [x for x in j["ranks"] if x["rank"] == f["rank"]][0]
        check(f["evidence"].startswith("GPU busy %.1f%% of the traced steps" % r["gpu"]["busy_pct"]), "%s: idle_gaps on rank %s says %s, its busy %% %.1f" % (n, f["rank"], f["evidence"][:32], r["gpu"]["busy_pct"]))
# JAX's thunk ranges read apart in the text's NVTX table (issue 50: "the NVTX rows are
# identical cut Thunk:#name=jit(step) names"): each row shows its range's HLO op
txt = subprocess.run([B + "/gpuprof", "report", "%s/field-jax" % T], capture_output=True, text=True).stdout.split("\n")
i = txt.index(next(l for l in txt if l.startswith("NVTX ranges")))
j = json.load(open("%s/field-jax.json" % T))
rows = [l for l in txt[i + 2:i + 2 + min(20, len(j["nvtx"]))]]
miss = [(r["name"], l[:40]) for r, l in zip(j["nvtx"], rows) if "hlo_op=" in r["name"] and r["name"].split("hlo_op=")[1].split(",")[0].split("#")[0] not in l]
check(not miss, "field-jax: the NVTX table's thunk rows name their HLO op (%d do not, e.g. %s)" % (len(miss), miss[:1]))
# the framework a rank's kernels tell: cuDNN's cudnn::fusion kernels (mangled _ZN5cudnn6fusion)
# are no XLA fusion in a PyTorch GPT-2, and XLA's own loop_*_fusion kernels are
for n, want in (("field-gpt2-layers", False), ("field-jax", True)):
    j = json.load(open("%s/%s.json" % (T, n)))
    check(j["ranks"][0]["gpu"]["xla_kernels"] == want, "%s: xla_kernels %s" % (n, j["ranks"][0]["gpu"]["xla_kernels"]))
# NCCL by collective: the DDP runs' one all-reduce, its exposed part within its time
for n in ("ddp-clean", "ddp-imbalanced"):
    j = json.load(open("%s/%s.json" % (T, n)))
    for r in j["ranks"]:
        c = r["gpu"]["collectives"]
        check(len(c) == 1 and c[0]["name"] == "AllReduce_Sum_bf16_RING_LL" and c[0]["ns"] == r["gpu"]["comm_ns"] and 0 < c[0]["exposed_ns"] <= c[0]["ns"] and c[0]["ns"] - c[0]["exposed_ns"] == r["gpu"]["comm_compute_overlap_ns"], "%s rank %s: collectives %s" % (n, r["rank"], c))
    f = [x for x in j["findings"] if x["id"] == "comm_not_overlapped"]
    check(f and "AllReduce_Sum_bf16_RING_LL: 136 calls" in f[0]["evidence"], "%s: comm finding by collective %s" % (n, f and f[0]["evidence"][-120:]))
# a field review's inference loop (no optimizer; an NVTX range per batch) under sampled
# windows: the headline is the untraced batches' own; fragmentation's saving, sized on the
# traced steps, leaves out tracing's share and stays inside an untraced step's idle time
j, t = load("field-infer-nvtx"); r = j["ranks"][0]
check(near(r["steps"]["median_ms"], t["iter_ms"]["median"], 0.01), "infer: headline %.3f vs %.3f" % (r["steps"]["median_ms"], t["iter_ms"]["median"]))
idle = r["steps"]["median_ms"] - r["gpu"]["busy_ns"] / 1e6 / r["capture"]["captured_steps"]
f = [x for x in j["findings"] if x["id"] == "fragmentation"]
check(f and 0 < f[0]["saving_ms"] <= idle and "gpuprof's own tracing" in f[0]["evidence"], "infer: fragmentation saves %s ms of an untraced step's %.2f ms idle" % (f and f[0]["saving_ms"], idle))
# kernel time by the user's source line (issue 50) against torch.profiler's own run of the
# same program (bench/attr_prog.py, H100): each forward line's GPU time a step within 15 %
# of its record_function range's, all kernels a step within 15 % (both net of torch.profiler's
# own Activity Buffer Request), nothing left unattributed
j, t = load("field-attr"); a = j["attribution"]
rows = a["operation_lines"]
def line_of(r):
    return int(r["line"].split(" (")[0].rsplit(":", 1)[1]) if ":" in r["line"] else 0
steps = max((r["calls"] for r in rows if line_of(r) == t["lines"]["matmul1"] and not r["operation"].endswith(" backward")), default=0)
check(steps >= 3, "attr: %d steps with operation ranges" % steps)
for name in ("matmul1", "gelu", "matmul2", "loss"):
    ln = t["lines"][name]
    ours = sum(r["gpu_ns"] for r in rows if line_of(r) == ln and not r["operation"].endswith(" backward")) / max(steps, 1)
    prof = t["by_line_ns"][str(ln)] / t["profiled_steps"]
    check(near(ours, prof, 0.15), "attr: line %d (%s) %.1f us a step vs torch.profiler %.1f us" % (ln, name, ours / 1e3, prof / 1e3))
check(near(a["total_ns"] / max(steps, 1), t["total_ns"] / t["profiled_steps"], 0.15), "attr: %.1f us of kernels a step vs torch.profiler %.1f" % (a["total_ns"] / max(steps, 1) / 1e3, t["total_ns"] / t["profiled_steps"] / 1e3))
check(sum(r["gpu_ns"] for r in rows if r["operation"] == "(not attributed)") <= 0.05 * a["total_ns"], "attr: more than 5 % not attributed")
for b in bad:
    print("# " + b)
sys.exit(1 if bad else 0)
PY
ok $? "field fixtures (JAX, Lightning, input-bound, GPT-2 in windows, the seed step detached between windows, gpuprof's own time on the seed step, leak, OOM, kernel time by source line) against each program's own truth"

# the time findings' advice in the program's words (issue 50): CUDA C programs
# (gpuprof-train-mlp: cuBLAS, no Python) are told of CUDA graphs through the runtime's calls
# and CUDA events, never torch.compile or torch.cuda.synchronize(); PyTorch programs of
# torch.compile, never of JAX
python3 - "$T" <<'PY'
import json, sys
T = sys.argv[1]; bad = []
for name, rule, fw in (("frag", "fragmentation", "cuda"), ("clean", "host_ahead", "cuda"), ("leak", "host_ahead", "cuda"), ("torch-frag", "fragmentation", "torch"), ("torch-frag", "idle_gaps", "torch"), ("field-lightning", "idle_gaps", "torch")):
    j = json.load(open("%s/%s.json" % (T, name))); f = [x for x in j["findings"] if x["id"] == rule]
    fix = f[0]["fix"] if f else ""
    good = ("cudaStream" in fix and "torch" not in fix and "jax" not in fix) if fw == "cuda" else ("torch." in fix and "jax" not in fix and "cudaStream" not in fix)
    if not good or bool(j["ranks"][0]["gpu"]["pytorch_kernels"]) != (fw == "torch"):
        bad.append("%s %s: %s" % (name, rule, fix[:160]))
for b in bad:
    print("# " + b)
sys.exit(1 if bad else 0)
PY
ok $? "fragmentation, host_ahead and launch-bound advice in the program's words (CUDA C: the runtime's calls; PyTorch: torch.compile)"

# JAX's calls are not known (XLA's thunks and command buffers are no call of the user's):
# the text and HTML tables show '-' (doc/report.md), report.json null, never a 0 that reads
# as "never called"
"$B/gpuprof" report "$T/field-jax" >"$T/field-jax.txt" 2>/dev/null
"$B/gpuprof" export --format=html -o "$T/field-jax.html" "$T/field-jax" 2>/dev/null
python3 - "$T" <<'PY'
import json, re, sys
T = sys.argv[1]; bad = []
a = json.load(open("%s/field-jax.json" % T))["attribution"]
rows = a["operations"] + a["source_lines"] + [a["operations_others"], a["source_lines_others"]]
bad += ["json %s: calls %r, per call %r" % (r["name"], r["calls"], r["mean_ns_per_call"]) for r in rows if r["calls"] is not None or r["mean_ns_per_call"] is not None]
bad += ["json operation_lines: calls %r" % r["calls"] for r in a["operation_lines"] if r["calls"] is not None]
text = open("%s/field-jax.txt" % T).read().split("\n"); n = 0
for i, l in enumerate(text):
    if l.endswith("calls  us per call") and l.split()[0] in ("operation", "function"):
        for row in text[i + 1:]:
            if not row or row.startswith("share:"):
                break
            n += 1
            if row.split()[-2:] != ["-", "-"]:
                bad.append("text: %s" % row)
page = open("%s/field-jax.html" % T).read()
cells = re.findall(r'<td data-key="calls">([^<]*)</td>', page)
bad += ["html calls %r" % c for c in cells if c != "-"]
for b in bad[:5]:
    print("# " + b)
sys.exit(1 if bad or n < 4 or not cells else 0)
PY
ok $? "field-jax: calls not known shown '-' in the text and the HTML, null in report.json"

# PyTorch's memory snapshots the rank file names but that are not beside it (pt-leak's
# rank0.torch-{exit,peak}.pickle were never committed): the data-quality section says so,
# naming only the ones gone
cp -r "$F/pt-leak" "$T/ptl-snaps"
snaps() { # the text's data-quality section, report.json's memviz_gone, the HTML page
	"$B/gpuprof" report "$T/ptl-snaps" 2>/dev/null | unwrap >"$T/ptl-$1.all"
	grep 'memory_viz pickles:' "$T/ptl-$1.all" >"$T/ptl-$1.line"
	sed -n '/^== Data quality/,$p' "$T/ptl-$1.all" >"$T/ptl-$1.txt"
	"$B/gpuprof" report --format=json "$T/ptl-snaps" 2>/dev/null |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["ranks"][0]["pytorch"]["memviz_gone"])' >"$T/ptl-$1.gone"
	"$B/gpuprof" export --format=html --output="$T/ptl-$1.html" "$T/ptl-snaps" 2>/dev/null
}
snaps a
printf x >"$T/ptl-snaps/step0/rank0.torch-peak.pickle"
snaps b
grep -q "rank 0: .*rank0.torch-exit.pickle.*rank0.torch-peak.pickle.* gone" "$T/ptl-a.txt" &&
	grep -q "rank 0: .*rank0.torch-exit.pickle (at exit).* is gone" "$T/ptl-b.txt" &&
	! grep -q "torch-peak.pickle" "$T/ptl-b.txt"
ok $? "memviz snapshots named by the rank file but gone: said in the data-quality section ($(grep pickle "$T/ptl-a.txt" | head -c 160))"
# ... and report.json and the HTML say it, from the same one look (the pipeline's)
[ "$(cat "$T/ptl-a.gone")" = "['rank0.torch-exit.pickle', 'rank0.torch-peak.pickle']" ] &&
	[ "$(cat "$T/ptl-b.gone")" = "['rank0.torch-exit.pickle']" ]
ok $? "report.json's pytorch.memviz_gone names them: $(cat "$T/ptl-a.gone"), then $(cat "$T/ptl-b.gone")"
grep -q '<p class="note" id="snapshots-gone-0">Rank 0: .*rank0.torch-exit.pickle (at exit), rank0.torch-peak.pickle (at its peak).* are gone.*CUDA.s segments' "$T/ptl-a.html" &&
	grep -q '<p class="note" id="snapshots-gone-0">Rank 0: .*rank0.torch-exit.pickle (at exit), named.* is gone.*takes the one left' "$T/ptl-b.html"
ok $? "the HTML's memory section says them too ($(grep -o 'id="snapshots-gone-0">[^<]*' "$T/ptl-a.html" | head -c 140))"
# ... and the framework section's pickles line lists only the one left (it listed both
# with the data quality saying they were gone)
grep -q 'memory_viz pickles: 2 named by the rank file gone from beside it' "$T/ptl-a.line" &&
	grep -q 'memory_viz pickles: rank0.torch-peak.pickle (open in pytorch.org/memory_viz); 1 named' "$T/ptl-b.line"
ok $? "the pickles line names only what is there ($(cat "$T/ptl-a.line" "$T/ptl-b.line" | tr -s ' ' | head -c 200))"
# ... and one that is there but not to be taken (a symbolic link, a FIFO) is said as such,
# not as gone
rm -f "$T/ptl-snaps/step0/rank0.torch-peak.pickle"
ln -s /etc/passwd "$T/ptl-snaps/step0/rank0.torch-peak.pickle"
mkfifo "$T/ptl-snaps/step0/rank0.torch-exit.pickle"
snaps c
grep -q "rank 0: .*rank0.torch-exit.pickle (at exit; not a regular file), rank0.torch-peak.pickle (at its peak; a symbolic link), named by the rank file, cannot be taken from beside it" "$T/ptl-c.txt" &&
	grep -q 'memory_viz pickles: 2 named by the rank file not readable beside it' "$T/ptl-c.line" &&
	grep -q 'id="snapshots-gone-0">Rank 0: .*(at its peak; a symbolic link).*cannot be taken from beside it' "$T/ptl-c.html" &&
	[ "$(cat "$T/ptl-c.gone")" = "['rank0.torch-exit.pickle', 'rank0.torch-peak.pickle']" ]
ok $? "snapshots there but not to be taken (a FIFO, a link) are said so, not 'gone' ($(grep pickle "$T/ptl-c.txt" | head -c 200))"

# start-up's kernels: whole names in report.json (not cut at 95 bytes), and rows in the
# text that tell apart names sharing a long prefix (field-seed-detach: three of PyTorch's
# multi_tensor_apply_kernel<...> instantiations)
a=$("$B/gpuprof" report --format=json "$T/field-seed-detach" 2>/dev/null | python3 -c 'import json,sys; print(max(len(x["name"]) for x in json.load(sys.stdin)["ranks"][0]["startup"]["top"]))')
b=$("$B/gpuprof" report "$T/field-seed-detach" 2>/dev/null | sed -n '/^== Start-up/,/^$/p' | grep '^       kernel' | cut -c17-68 | sort | uniq -d | wc -l)
[ "${a:-0}" -gt 300 ] && [ "$b" = 0 ]
ok $? "start-up kernels: whole names in report.json (longest $a bytes), distinct rows in the text ($b alike)"

# a run whose every step was traced (field-jax: it ended inside its first window) has no
# untraced step to measure tracing against: the headline says it holds the tracing; a run
# with untraced steps (GPT-2 in windows) says what tracing cost instead
a=$("$B/gpuprof" report "$T/field-jax" 2>/dev/null | unwrap | grep "post-warm-up steps were traced at kernel level")
b=$("$B/gpuprof" report "$T/field-gpt2-windows" 2>/dev/null | unwrap | grep -c "steps were traced at kernel level")
echo "$a" | grep -q "headline includes gpuprof's kernel tracing, which this run cannot measure" && [ "$b" = 0 ]
ok $? "every step traced: the headline says it holds gpuprof's tracing; not said with untraced steps (${a:0:60}..., $b)"

# the PyTorch integration's captures against PyTorch's own figures (TRUTH)
python3 - "$T" "$F" <<'PY'
import json, sys
T, F = sys.argv[1], sys.argv[2]
def load(n):
    r = json.load(open(f"{T}/{n}.json"))["ranks"][0]
    truth = dict(l.split()[:2] for l in open(f"{F}/{n}/TRUTH") if len(l.split()) >= 2 and l.split()[1][:1].isdigit())
    return r, truth
fails = []
def check(cond, what):
    print(("# ok " if cond else "# FAIL ") + what)
    cond or fails.append(what)
r, t = load("pt-mem"); p = r["pytorch"]
check(p["max_allocated_bytes"] == int(t["max_memory_allocated"]), "pt-mem: peak allocated = max_memory_allocated()")
check(sum(o["bytes"] for o in p["peak_owners"]) == int(t["max_memory_allocated"]), "pt-mem: the peak's tensors add up to it")
check(p["reserved_end_bytes"] == int(t["memory_reserved"]), "pt-mem: reserved = memory_reserved()")
check(p["optimizer_state_bytes"] == int(t["optimizer_state_bytes"]), "pt-mem: optimizer state = Adam's state tensors")
check(r["memory"]["optimizer_source"] == "PyTorch optimizer state", "pt-mem: the optimizer finding uses PyTorch's figure")
check(p["optimizer_steps"] == r["steps"]["count"] == 30 and r["steps"]["source"] == "nvtx", "pt-mem: optimizer.step() calls = NVTX steps")
check(abs(p["optimizer_period_median_ms"] / r["steps"]["period_median_ms"] - 1) < 0.05, "pt-mem: their periods agree")
r, t = load("pt-nonvtx")
check(r["steps"]["source"] == "optimizer" and r["steps"]["count"] == 30, "pt-nonvtx: 30 steps from optimizer.step()")
check(abs(r["steps"]["median_ms"] / float(t["synchronised_step_ms"]) - 1) < 0.05, "pt-nonvtx: median within 5 % of the synchronised step time")
r, t = load("pt-oom"); o = r["pytorch"]["oom"]
check(o and abs(o["requested_bytes"] / int(t["request_bytes"]) - 1) < 0.001, "pt-oom: the failed request")
check(o and "oom.py:6" in o["holders"][0]["stack"], "pt-oom: what held the memory")
r, t = load("pt-leak"); p = r["pytorch"]
check(abs(p["growth_bytes_per_step"] - 8388608) < 0.01 * 8388608, "pt-leak: growth 8 MiB per step at tensor level")
check("train_mlp.py:104" in p["kept_by_recorded_steps"][0]["stack"], "pt-leak: the recorded steps kept the leak's line")
check(p["max_allocated_bytes"] == int(t["max_memory_allocated"]), "pt-leak: peak allocated = max_memory_allocated()")
# torchrun's two workers under one agent, each in a rank file of its own
R = {r["rank"]: r for r in json.load(open(f"{T}/pt-torchrun.json"))["ranks"]}
t, k = {}, None  # each worker's lines follow its "synchronised_step_ms X rank R"
for l in open(f"{F}/pt-torchrun/TRUTH"):
    w = l.split()
    if w[:1] == ["synchronised_step_ms"]:
        k = int(w[3])
    elif len(w) == 2 and k is not None:
        t.setdefault(k, {})[w[0]] = w[1]
check(sorted(R) == [0, 1], "pt-torchrun: a rank file per worker")
for k, r in R.items():
    p = r["pytorch"]
    check(p["max_allocated_bytes"] == int(t[k]["max_memory_allocated"]), f"pt-torchrun: rank {k}'s peak allocated = its own max_memory_allocated()")
    check(r["gpu"]["comm_ns"] > 0 and p["optimizer_steps"] == 20, f"pt-torchrun: rank {k}'s own NCCL kernels and 20 optimizer steps")
sys.exit(1 if fails else 0)
PY
ok $? "PyTorch integration fixtures (pt-*) agree with PyTorch's own figures"
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
grep -q "\"GPU [0-9]* stream $sid: known_stream\"" "$T/known.trace.json"; ok $? "known: the trace names that track known_stream"
python3 - "$T/window.json" "$T/clean.json" <<'PY'
import json, sys
w = json.load(open(sys.argv[1]))["ranks"][0]; c = json.load(open(sys.argv[2]))["ranks"][0]
cap = {k: w["capture"][k] for k in ("window", "captured_steps", "switches", "cost_windows", "cost_estimate_ns")}
assert cap == {"window": True, "captured_steps": 10, "switches": 3, "cost_windows": 0, "cost_estimate_ns": 0}, w["capture"]
assert 0 < w["capture"]["traced_pct"] < 100, w["capture"]  # windows by steps: none by cost
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
python3 -c 'import json,sys; f=json.load(open(sys.argv[1]))["findings"]; assert f[0]["id"]=="gpu_shared" and "ranks 0, 1" in f[0]["title"] and not [x for x in f if x["id"]=="straggler"], f' "$T/straggler.json"
ok $? "straggler: two ranks that never synchronise, on one GPU: the shared GPU is the finding, no straggler (nobody waits for rank 1)"
python3 -c 'import json,sys; f=[f for f in json.load(open(sys.argv[1]))["findings"] if f["id"]=="idle_gaps"][0]; assert f["rank"] == 1, f' "$T/straggler.json"
ok $? "straggler: rank 1's planted host stall is its own idle_gaps"
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
"$B/gpuprof" diff --fail-on-regression "$T/clean" "$T/sync" >"$T/diff.txt"; ok $? "gpuprof diff clean sync: no regression (a 0.7 % change) and exit 0 under --fail-on-regression"
grep -q "median step ms.*+0.7%" "$T/diff.txt" && grep -q "mean step ms.*+0.6%.*below the threshold" "$T/diff.txt" && grep -q "synchronisation stalls.*NEW in B" "$T/diff.txt" && grep -q "^verdict: no regression" "$T/diff.txt"
ok $? "diff: significant but below the 5 % threshold, and the new finding named ($(grep 'mean step' "$T/diff.txt"))"
"$B/gpuprof" diff --fail-on-regression "$T/clean" "$T/idle" >"$T/diff2.txt"; rc=$?
[ $rc = 3 ] && grep -q "mean step ms.*REGRESSION" "$T/diff2.txt"; ok $? "diff clean idle: a regression, exit 3 under --fail-on-regression (rc $rc)"

# the headline is the GPU step time (issue acceptance: within 5 % of the kernel records'
# own step times: clean 7.08, idle 31.3, ddp-imbalanced 26.2 ms, both ranks)
python3 - "$T" <<'PY'
import json, sys
T = sys.argv[1]
for name, truth in (("clean", 7.08), ("idle", 31.3), ("ddp-imbalanced", 26.2), ("leak", 7.07), ("adam", 7.73)):
    j = json.load(open(f"{T}/{name}.json"))
    assert abs(j["step_median_ms"] / truth - 1) < 0.05 and j["step_basis"] == "gpu", (name, j["step_median_ms"], j["step_basis"])
    for r in j["ranks"]:
        assert abs(r["steps"]["median_ms"] / truth - 1) < 0.05, (name, r["rank"], r["steps"]["median_ms"])
        assert r["steps"]["cpu_median_ms"] < r["steps"]["gpu_median_ms"], r["steps"]
PY
ok $? "headline GPU step time within 5 % of the truth on clean, idle, ddp-imbalanced (both ranks), leak, adam"
python3 - "$T/ddp-imbalanced.json" <<'PY'
import json, sys
f = json.load(open(sys.argv[1]))["findings"]
assert f[0]["id"] == "straggler" and f[0]["rank"] == 1 and 15 < f[0]["saving_ms"] < 25, f[0]
own = [x for x in f if x["effect_of"] == "straggler:self"]
eff = [x for x in f if x["effect_of"] == "straggler"]
assert [x["rank"] for x in own] == [1] and own[0]["id"] == "idle_gaps", own
assert eff and all(x["rank"] == 0 for x in eff) and f[1:1 + len(own) + len(eff)] == own + eff, [(x["id"], x["rank"], x["effect_of"]) for x in f]
assert {x["id"] for x in eff} >= {"comm_not_overlapped"}, eff
assert not [x for x in f if x["id"] in ("host_ahead", "optimizer_state")], f
PY
ok $? "ddp-imbalanced: the straggler (rank 1, about 20 ms per step) comes first, its own idle time under it, rank 0's waits as its effects; no host_ahead for a rank that waits in all-reduce, no optimizer state from PyTorch's segments"
python3 - "$T" <<'PY'
import json, sys, glob
for path in glob.glob(sys.argv[1] + "/*.json"):
    j = json.load(open(path))
    for f in j.get("findings", []) if isinstance(j, dict) else []:
        assert f["kind"] in ("outcome", "time", "memory"), f
        if f["effect_of"]:  # an effect's saving is its cause's
            assert f["saving_ms"] == f["saving_pct"] == f["saving_bytes"] == 0, (path, f)
        elif f["kind"] == "time" and f["id"] not in ("host_ahead", "gpu_shared"):
            assert 0 < f["saving_pct"] <= 100 and f["saving_ms"] > 0, (path, f)
PY
ok $? "every time finding states a saving in ms per step and % of the step, at most 100 %; an effect none of its own"

# steps without annotations, against the programs' own synchronised timing (TRUTH files:
# synchronised_step_ms = cudaDeviceSynchronize/torch.cuda.synchronize around steps 3..N-1)
for d in "$F"/*/; do
	name=$(basename "$d")
	[ -f "$d/TRUTH" ] && grep -q synchronised "$d/TRUTH" || continue
	python3 - "$T/$name.json" "$d/TRUTH" "$name" <<'PY'
import json, sys
R = {r["rank"]: r for r in json.load(open(sys.argv[1]))["ranks"]}
lines = [l.split() for l in open(sys.argv[2]) if len(l.split()) >= 2]
t = {l[0]: l[1] for l in lines}
iters = int(t["iterations"])
# "synchronised_step_ms X" or, from several ranks, "synchronised_step_ms X rank R"
truth = {int(l[3]) if len(l) >= 4 and l[2] == "rank" else 0: float(l[1])
         for l in lines if l[0] == "synchronised_step_ms"}
for k, ms in truth.items():
    s = R[k]["steps"]
    assert abs(s["count"] - iters) <= 1, (k, s["count"], iters)
    assert s["basis"] == "gpu" and abs(s["mean_ms"] / ms - 1) < 0.05, (k, s["basis"], s["mean_ms"], ms)
    if sys.argv[3].startswith("nonvtx"):
        assert s["source"] == "kernels", s["source"]
    if sys.argv[3].startswith("mark-"):
        assert s["gpu_from_markers"], s
PY
	ok $? "$name: $(sed -n 's/iterations /iterations /p' "$d/TRUTH") steps found ±1, mean GPU step within 5 % of the program's synchronised $(sed -n 's/synchronised_step_ms //p' "$d/TRUTH" | tr '\n' ' ')ms"
done
python3 - "$T/nonvtx-clean.json" "$T/clean30.json" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))["ranks"][0]["steps"]; b = json.load(open(sys.argv[2]))["ranks"][0]["steps"]
assert abs(a["median_ms"] / b["median_ms"] - 1) < 0.05 and abs(a["count"] - b["count"]) <= 1, (a["median_ms"], b["median_ms"])
PY
ok $? "the un-annotated MLP's median GPU step is within 5 % of the annotated run's (same device session)"
"$B/gpuprof" report --steps-from=kernels --format=json "$T/clean30" | python3 -c '
import json,sys; s=json.load(sys.stdin)["ranks"][0]["steps"]; assert s["source"]=="kernels" and abs(s["count"]-30)<=2 and abs(s["median_ms"]/7.133-1)<0.05, s'
ok $? "--steps-from=kernels on the annotated run: 30 steps ±2 (its first steps launch differently), the same GPU step time"
for n in oom-cuda oom-torch; do
	python3 -c 'import json,sys; f=json.load(open(sys.argv[1]))["findings"][0]; assert f["id"]=="cuda_oom" and f["kind"]=="outcome" and "refused" in f["evidence"], f' "$T/$n.json"
	ok $? "$n: the first finding is the CUDA out-of-memory that ended the run"
done
python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["ranks"][0]; assert r["quality"]["nvtx_cuda_tids_unrelated"] and r["gpu"]["kernels_attributed_across_threads"] > 0, r["quality"]
j=json.load(open(sys.argv[1])); assert [x for x in j["nvtx"] if x["name"]=="backward"][0]["gpu_ns"] > 0' "$T/torch-leak.json"
ok $? "torch-leak: NVTX and API thread ids that cannot match are said in data quality, and ranges still get GPU time by time"
done_testing
