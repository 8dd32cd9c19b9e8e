#!/bin/bash
# Run on the GPU machine (issue 48): what the site-wide default reads and costs there.
#  1. allocated, not used: programs that never touch CUDA, that only ask whether CUDA is
#     there, and that use the GPU, each under the default modes; what NVML's process list,
#     the cuInit records and the report say (gpu_unused / not_observed), against what each
#     program did;
#  2. the default's cost on a job whose steps the collector does not see: a Hugging Face
#     GPT-2 generate() loop (no optimizer, no NVTX; random weights, nothing downloaded),
#     ~30 s, its own per-call times plain and under the default, alternated over ROUNDS
#     rounds (the budget: <= 1 % of the wall time; issue 48 measured x1.6 on an H100).
# Results in $OUT (site.txt, the reports); binaries from bench/gpu-carry.sh.
#  3. (parts) the same loop under each part of the default alone: where its cost goes.
#  4. (budget) the windows by cost: plain, default and all traced, with the report's
#     share traced and estimated cost, and the price of a traced kernel.
# Usage: bench/gpu-site.sh [unused|cost|parts|budget|detach|phases|stress]...   (default: unused cost)   ROUNDS=3 SECS=30
# (parts runs 9 programs a round, each SECS plus ~12 s of start-up and report: ROUNDS=2
# SECS=20 ran past a 10-minute command; ROUNDS=2 SECS=10 VARIANTS="timing cuda_sampled
# cuda_all mem mem_nohistory default" fits in about 5 minutes)
. "$(dirname "$0")/gpu-env.sh"
OUT=${OUT:-/tmp/out}
W=/tmp/site
rm -rf $W && mkdir -p $W $OUT
exec > >(tee -a $OUT/site.txt) 2>&1
export PYTHONUNBUFFERED=1
fields() { # job directory -> the figures that tell used from unused
	$G/gpuprof report --format=json "$1" 2>/dev/null | python3 -c '
import json, sys
j = json.load(sys.stdin)
for r in j["ranks"]:
    g = r["gpu"]
    print("  findings=%s unused=%s not_observed=%s lists=%s refused=%s task_procs=%s others=%s task_MiB=%.0f rise_MiB=%.0f cuda_inits=%s nvml_max_MiB=%.0f kernels=%s" % (
        ",".join(f["id"] for f in j["findings"]) or "none", g["allocated_unused"],
        r["quality"]["not_observed"], g["nvml_process_samples"], g["nvml_processes_refused"],
        g["nvml_task_processes"], g["nvml_other_processes"], g["nvml_task_bytes"] / 2**20,
        g["nvml_rise_bytes"] / 2**20, g["cuda_inits"], r["memory"]["nvml_used_max_bytes"] / 2**20,
        g["kernels_total"]))'
}
unused() {
	echo "== 1. allocated, not used (want: unused=True for the first two, False with task_procs>=1 for the last two)"
	local name
	for name in sleep is_available timing_tensor default_train; do
		case $name in
		sleep) set -- python3 -c 'import time; time.sleep(4)' ;;
		is_available) set -- python3 -c 'import time, torch; print("cuda", torch.cuda.is_available()); time.sleep(4)' ;;
		timing_tensor) set -- python3 -c 'import time, torch; x = torch.ones(1 << 20, device="cuda"); torch.cuda.synchronize(); time.sleep(4)' ;;
		default_train) set -- env STEPS=60 python3 bench/field/seed_mlp.py ;;
		esac
		local modes=()
		[ $name = timing_tensor ] && modes=(--modes=timing)
		timeout 300 $G/gpuprof run "${modes[@]}" --output=$W/$name -- "$@" >$W/$name.log 2>&1
		echo "-- $name (rc $?): $*"
		fields $W/$name
		$G/gpuprof report $W/$name >$W/$name.report.txt 2>&1
		sed -n '/== Findings/,/== How slow/p' $W/$name.report.txt | head -6
	done
}
write_infer() { # the generate() loop of parts 2 and 3
	cat >$W/infer.py <<'PY'
# GPT-2 (random weights) generate() calls for SECS seconds; its own per-call times
import ctypes, json, os, resource, struct, time, torch
from transformers import GPT2Config, GPT2LMHeadModel
def instr_counter():
    """A count of the user-space instructions this thread retires (perf_event_open, x86-64
    syscall 298: PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, exclude_kernel and _hv):
    unlike the wall and CPU times, the host's clock and neighbours do not move it. None
    where the kernel or the VM refuses."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        attr = struct.pack("IIQQQQQ", 0, 64, 1, 0, 0, 0, (1 << 5) | (1 << 6)) + bytes(8)
        buf = ctypes.create_string_buffer(attr, 64)
        fd = libc.syscall(298, buf, 0, -1, -1, 0)
        if fd < 0:
            return None
        return lambda: struct.unpack("Q", os.read(fd, 8))[0]
    except Exception:
        return None
instr = instr_counter()
torch.manual_seed(0)
m = GPT2LMHeadModel(GPT2Config(n_layer=12, n_embd=768, n_head=12)).cuda().eval().half()
ids = torch.randint(0, 50000, (8, 64), device="cuda")
secs, ms, cpu, ins, t_end = float(os.environ.get("SECS", "30")), [], [], [], None
t0 = time.perf_counter()
with torch.no_grad():
    while time.perf_counter() - t0 < secs:
        torch.cuda.synchronize(); a = time.perf_counter(); ca = time.thread_time()
        ia = instr() if instr else 0
        m.generate(ids, max_new_tokens=48, do_sample=False, pad_token_id=0)
        torch.cuda.synchronize(); ms.append((time.perf_counter() - a) * 1e3)
        cpu.append((time.thread_time() - ca) * 1e3)
        if instr:
            ins.append(instr() - ia)
late = sorted(ms[len(ms) // 4:])  # the calls after the first quarter (the window's end)
ms.sort(); cpu.sort(); ins.sort()
# cpu: the main thread's own CPU time a call (CLOCK_THREAD_CPUTIME_ID), which the host's
# steal and the other tenants move less than the wall time; proc_cpu_s: the whole
# process's (gpuprof's threads too)
ru = resource.getrusage(resource.RUSAGE_SELF)
print("TRUTH " + json.dumps({"calls": len(ms), "median_ms": ms[len(ms) // 2],
                             "mean_ms": sum(ms) / len(ms), "wall_s": time.perf_counter() - t0,
                             "cpu_median_ms": cpu[len(cpu) // 2],
                             "late_median_ms": late[len(late) // 2] if late else None,
                             "minstr_median": ins[len(ins) // 2] / 1e6 if ins else None,
                             "proc_cpu_s": ru.ru_utime + ru.ru_stime}))
PY
}
cost() {
	echo "== 2. the default on a generate() loop whose steps the collector does not see"
	write_infer
	local r
	for r in $(seq ${ROUNDS:-3}); do
		SECS=${SECS:-30} timeout 300 python3 $W/infer.py >$W/plain.$r.log 2>&1
		SECS=${SECS:-30} timeout 300 $G/gpuprof run --output=$W/default.$r -- python3 $W/infer.py >$W/default.$r.log 2>&1
		echo "round $r plain:   $(grep '^TRUTH' $W/plain.$r.log)"
		echo "round $r default: $(grep '^TRUTH' $W/default.$r.log)"
	done
	python3 - $W <<'PY'
import glob, json, statistics, sys
w = sys.argv[1]
def med(kind):
    v = [json.loads(l[6:])["median_ms"] for f in sorted(glob.glob(f"{w}/{kind}.*.log"))
         for l in open(f) if l.startswith("TRUTH ")]
    return statistics.median(v) if v else float("nan")
p, d = med("plain"), med("default")
print(f"median of the rounds' per-call medians: plain {p:.1f} ms, default {d:.1f} ms: {100 * (d / p - 1):+.1f} % (budget <= 1 %)")
def allof(kind, key):
    return [json.loads(l[6:]).get(key) for f in sorted(glob.glob(f"{w}/{kind}.*.log"))
            for l in open(f) if l.startswith("TRUTH ")]
for key, what in (("wall_s", "the job's wall time (s)"), ("calls", "calls in SECS"),
                  ("late_median_ms", "per-call median after the first quarter (ms)"),
                  ("cpu_median_ms", "main thread's CPU a call (ms)"),
                  ("minstr_median", "main thread's user instructions a call (millions)")):
    a, b = allof("plain", key), allof("default", key)
    if None in a + b or not a or not b:
        print(f"{what}: not measured here ({a} {b})")
        continue
    pairs = [y / x for x, y in zip(a, b) if x]
    print(f"{what}: plain {a}, default {b}; default/plain by round {[round(r, 3) for r in pairs]}, median {statistics.median(pairs):.3f}")
PY
	$G/gpuprof report $W/default.1 >$W/default.report.txt 2>&1
	sed -n '/== Findings/,/== Where the time/p' $W/default.report.txt | head -20
}
# 3. where the default's cost on the generate() loop goes: each part of the default alone,
# against plain runs in the same rounds (the same infer.py as part 2). A variant is a name
# and the environment it runs under (gpuprof run --modes, and the switches of the PyTorch
# integration); each is run ROUNDS times interleaved with plain runs. What to read: if
# timing,cuda costs what the default costs, the time-based first window (60 s traced
# where no step is seen, agent/inject/capture.c) is the cost, and shortening it or
# bounding it by kernels is the fix; if timing,mem or the history does, the allocator
# history is, and it needs windows for step-less programs; if timing alone costs, the
# PyTorch hooks do.
parts() {
	echo "== 3. the default's cost on generate(), part by part"
	write_infer
	local v r
	local variants=(
		"timing|--modes=timing"
		"timing_nopytorch|--modes=timing|GPUPROF_PYTORCH=0"
		"nvtx|--modes=timing,nvtx"
		"cuda_sampled|--modes=timing,cuda"
		"cuda_all|--modes=timing,cuda --capture=all"
		"mem|--modes=timing,mem"
		"mem_nohistory|--modes=timing,mem|GPUPROF_TORCH_HISTORY=0"
		"default|--modes=timing,nvtx,cuda,mem")
	if [ -n "${VARIANTS:-}" ]; then # a subset by name: VARIANTS="timing mem default"
		local keep=() want
		for v in "${variants[@]}"; do
			for want in $VARIANTS; do [ "${v%%|*}" = "$want" ] && keep+=("$v"); done
		done
		variants=("${keep[@]}")
	fi
	for r in $(seq ${ROUNDS:-3}); do
		SECS=${SECS:-30} timeout 300 python3 $W/infer.py >$W/p3plain.$r.log 2>&1
		for v in "${variants[@]}"; do
			IFS='|' read -r name args envs <<<"$v"
			SECS=${SECS:-30} timeout 300 env $envs $G/gpuprof run $args --output=$W/p3.$name.$r \
				-- python3 $W/infer.py >$W/p3.$name.$r.log 2>&1
		done
	done
	python3 - $W "${variants[@]}" <<'PY'
import glob, json, statistics, sys
w = sys.argv[1]
def med(pattern):
    v = [json.loads(l[6:])["median_ms"] for f in sorted(glob.glob(f"{w}/{pattern}"))
         for l in open(f) if l.startswith("TRUTH ")]
    return statistics.median(v) if v else float("nan"), len(v)
p, n = med("p3plain.*.log")
print(f"plain: {p:.1f} ms per call ({n} rounds)")
for v in sys.argv[2:]:
    name = v.split("|")[0]
    d, n = med(f"p3.{name}.*.log")
    print(f"{name:18s} {d:8.1f} ms per call ({n} rounds): {100 * (d / p - 1):+6.1f} %")
PY
}
# 4. (budget) the windows by cost (agent/inject/costwin.h) on the generate() loop: plain,
# the default and every kernel traced (--capture=all), rotated in each round. Reads: the
# default's cost on the loop's wall time (the mean call, the traced first calls
# included: a median would hide the first window) against the 1 % budget; the share of
# the time traced and the estimated cost the report says; and the price of a traced
# kernel, (all - plain) per call over the kernels of a call, which GP_COSTWIN_NS_PER_KERNEL
# (20 us) should not undercut; the estimate (every window, the one open at exit and the
# charges after each window's end included) against the wall time, beside the measured
# cost. ROUNDS=3 SECS=30: 9 programs, about 7 minutes.
budget() {
	echo "== 4. windows by cost on generate(): plain, default, all traced"
	write_infer
	local r kind
	for r in $(seq ${ROUNDS:-3}); do
		for kind in plain default all; do
			case $kind in
			plain) SECS=${SECS:-30} timeout 300 python3 $W/infer.py >$W/b.$kind.$r.log 2>&1 ;;
			default) SECS=${SECS:-30} timeout 300 $G/gpuprof run --output=$W/b.$kind.$r \
				-- python3 $W/infer.py >$W/b.$kind.$r.log 2>&1 ;;
			all) SECS=${SECS:-30} timeout 300 $G/gpuprof run --capture=all --output=$W/b.$kind.$r \
				-- python3 $W/infer.py >$W/b.$kind.$r.log 2>&1 ;;
			esac
			echo "round $r $kind: $(grep '^TRUTH' $W/b.$kind.$r.log)"
			[ $kind = default ] && echo "round $r default: $(detaches $W/b.$kind.$r/step0/rank0.gpr)"
			[ $kind = plain ] || $G/gpuprof report --format=json $W/b.$kind.$r >$W/b.$kind.$r.json 2>$W/b.$kind.$r.err
		done
	done
	python3 - $W <<'PY'
import glob, json, statistics, sys
w = sys.argv[1]
def truth(kind):
    out = []
    for f in sorted(glob.glob(f"{w}/b.{kind}.*.log")):
        for l in open(f):
            if l.startswith("TRUTH "):
                out.append(json.loads(l[6:]))
    return out
def med(v):
    return statistics.median(v) if v else float("nan")
t = {k: truth(k) for k in ("plain", "default", "all")}
for key in ("mean_ms", "median_ms"):
    p, d, a = (med([x[key] for x in t[k]]) for k in ("plain", "default", "all"))
    print(f"{key}: plain {p:.1f}, default {d:.1f} ({100 * (d / p - 1):+.2f} %, budget 1 %), "
          f"all traced {a:.1f} ({100 * (a / p - 1):+.1f} %)")
for f in sorted(glob.glob(f"{w}/b.default.*.json")):
    try:
        j = json.load(open(f))
    except Exception as e:
        print(f"{f}: no report ({e})"); continue
    for r in j["ranks"]:
        c = r["capture"]
        est = c.get('cost_estimate_ns', 0) / 1e6
        wall = r.get('wall_s') or 0
        share = f" ({100 * est / (wall * 1e3):.2f} % of its {wall:.1f} s)" if wall else ""
        print(f"{f.split('/')[-1]}: traced {c.get('traced_pct')} % of the time, "
              f"{c.get('cost_windows')} window(s) by cost ({c.get('cost_at_exit')} open at exit, "
              f"{c.get('cost_unended')} at death), estimated {est:.1f} ms{share}, "
              f"{c.get('cost_late_ns', 0) / 1e6:.1f} ms of it after the windows' ends (late "
              f"records, detaches), kernels {r['gpu']['kernels_total']}, switches {c.get('switches')}")
p = med([x["mean_ms"] for x in t["plain"]])
for f, x in zip(sorted(glob.glob(f"{w}/b.all.*.json")), t["all"]):
    try:
        k = sum(r["gpu"]["kernels_total"] for r in json.load(open(f))["ranks"])
    except Exception as e:
        print(f"{f}: no report ({e})"); continue
    per_call = k / max(x["calls"], 1)
    print(f"{f.split('/')[-1]}: {per_call:.0f} kernels a call; a traced kernel costs "
          f"{(x['mean_ms'] - p) * 1e3 / per_call:.1f} us (GP_COSTWIN_NS_PER_KERNEL: 20 us)")
PY
}
# 5. (detach) the default with CUPTI given back after its window and kept (GPUPROF_CUPTI_DETACH
# true and false; GPUPROF_CUPTI_DETACH_POLL_MS=100: no step marker follows the window) against plain runs, rotated in each round: what a CUPTI left attached
# costs the calls after the window, and whether the detach came (its record, and how long
# after the window's end). ROUNDS=5 SECS=15: 15 programs, about 7 minutes.
detaches() { # rank file -> "N detach(es), the first S s after the first window's end"
	$G/gpuprof dump --events "$1" 2>/dev/null | python3 -c '
import re, sys
off, det = None, []
for l in sys.stdin:
    f = dict(re.findall(r"(\w+)=(\d+)", l))
    if l.startswith("control") and off is None and not int(f["a"]) & 4:
        off = int(f["ts"])
    if l.startswith("overhead") and int(f["b"]) == 0x40000000:
        det.append((int(f["ts"]), f["c"], f["d"]))
after = "%.2f s after the first window ended (it waited %s looks for kernel records, %s for a call)" % (
    (det[0][0] - off) / 1e9, det[0][1], det[0][2]) if det and off else "-"
print("%d detach(es), the first %s" % (len(det), after))'
}
detach() {
	echo "== 5. the default with CUPTI given back and kept, on generate()"
	write_infer
	local r kind
	for r in $(seq ${ROUNDS:-5}); do
		for kind in plain detach nodetach; do
			case $kind in
			plain) SECS=${SECS:-15} timeout 300 python3 $W/infer.py >$W/d.$kind.$r.log 2>&1 ;;
			detach | nodetach)
				SECS=${SECS:-15} GPUPROF_CUPTI_DETACH_POLL_MS=100 \
					GPUPROF_CUPTI_DETACH=$([ $kind = detach ] && echo true || echo false) \
					timeout 300 $G/gpuprof run --output=$W/d.$kind.$r -- python3 $W/infer.py \
					>$W/d.$kind.$r.log 2>&1 ;;
			esac
			local extra=""
			[ $kind = plain ] || extra=" [$(detaches $W/d.$kind.$r/step0/rank0.gpr)]"
			echo "round $r $kind: $(grep '^TRUTH' $W/d.$kind.$r.log)$extra"
		done
	done
	python3 - $W <<'PY'
import glob, json, statistics, sys
w = sys.argv[1]
def med(kind, key):
    v = [json.loads(l[6:])[key] for f in sorted(glob.glob(f"{w}/d.{kind}.*.log"))
         for l in open(f) if l.startswith("TRUTH ")]
    return statistics.median(v) if v else float("nan")
for key in ("median_ms", "mean_ms", "cpu_median_ms"):
    p, d, n = (med(k, key) for k in ("plain", "detach", "nodetach"))
    print(f"{key}: plain {p:.1f}, default detached {d:.1f} ({100 * (d / p - 1):+.2f} %), "
          f"default kept {n:.1f} ({100 * (n / p - 1):+.2f} %)")
PY
}
# 7. (stress) does the program still exit as it would with the detach poll on? generate()
# loops of SECS (8) seconds under the default with GPUPROF_CUPTI_DETACH_POLL_MS=POLL_MS
# (100), STRESS_N (10) runs: each run's exit status, any abort line, and its detach (session
# 30: 3 of 10 aborted with heap corruption where the detach fell inside the allocator
# history's end; the guard gpuprof_fw_busy / gp_cupti_quiesce came after).
stress() {
	echo "== 7. exits with the detach poll (POLL_MS=${POLL_MS:-100}), ${STRESS_N:-10} runs of generate()"
	write_infer
	local i rc bad=0
	for i in $(seq ${STRESS_N:-10}); do
		SECS=${SECS:-8} GPUPROF_CUPTI_DETACH_POLL_MS=${POLL_MS:-100} \
			timeout 300 $G/gpuprof run --output=$W/s.$i -- python3 $W/infer.py >$W/s.$i.log 2>&1
		rc=$?
		[ $rc = 0 ] || bad=$((bad + 1))
		echo "run $i: rc $rc $(grep -m1 -iE 'corrupt|abort|fatal|segfault|double free' $W/s.$i.log) [$(detaches $W/s.$i/step0/rank0.gpr)]"
	done
	echo "stress: $bad of ${STRESS_N:-10} runs exited non-zero"
}
# 6. (phases) the same question inside one process, free of the drift between processes
# (plain moved 274-600 ms a call between runs in session 30): the default with the detach
# put off (GPUPROF_CUPTI_DETACH_POLL_MS=PHASE_MS, 6 s) so that each run has calls in three
# phases, each call placed by its start on the rank file's clock (CLOCK_MONOTONIC, as
# Python's monotonic_ns): traced (before the first window's end), after the window with
# CUPTI still attached, and after the detach. The last two medians' ratio is what a CUPTI
# left attached costs a call; the last against plain runs in the same rounds is what the
# default costs once it has given CUPTI back. ROUNDS=3 SECS=20: 6 programs, ~3 minutes.
phases() {
	echo "== 6. generate()'s calls by phase: traced, attached after the window, detached"
	write_infer
	sed -e 's/ms.append((time.perf_counter() - a) \* 1e3)/ms.append((time.perf_counter() - a) * 1e3); at.append(t_ns)/' \
		-e 's/torch.cuda.synchronize(); a = time.perf_counter()/torch.cuda.synchronize(); t_ns = time.monotonic_ns(); a = time.perf_counter()/' \
		-e 's/^secs, ms, cpu, t_end = /at = []; secs, ms, cpu, t_end = /' \
		-e 's/^ms.sort()/print("CALLS " + json.dumps(list(zip(at, ms))))\nms.sort()/' $W/infer.py >$W/infer_phases.py
	local r
	for r in $(seq ${ROUNDS:-3}); do
		SECS=${SECS:-20} timeout 300 python3 $W/infer_phases.py >$W/ph.plain.$r.log 2>&1
		SECS=${SECS:-20} GPUPROF_CUPTI_DETACH=true GPUPROF_CUPTI_DETACH_POLL_MS=${PHASE_MS:-6000} \
			timeout 300 $G/gpuprof run --output=$W/ph.default.$r -- python3 $W/infer_phases.py \
			>$W/ph.default.$r.log 2>&1
		$G/gpuprof dump --events $W/ph.default.$r/step0/rank0.gpr >$W/ph.default.$r.dump 2>/dev/null
	done
	python3 - $W ${ROUNDS:-3} <<'PY'
import json, re, statistics as st, sys
w, rounds = sys.argv[1], int(sys.argv[2])
def calls(f):
    for l in open(f):
        if l.startswith("CALLS "):
            return json.loads(l[6:])
    return []
plain, ratio = [], []
for r in range(1, rounds + 1):
    p = calls(f"{w}/ph.plain.{r}.log")
    if p:
        plain.append(st.median(m for _, m in p[3:]))
    off = det = None
    for l in open(f"{w}/ph.default.{r}.dump"):
        f = dict(re.findall(r"(\w+)=(\d+)", l))
        if l.startswith("control") and off is None and not int(f["a"]) & 4:
            off = int(f["ts"])
        if l.startswith("overhead") and int(f["b"]) == 0x40000000 and det is None:
            det = int(f["ts"])
    c = calls(f"{w}/ph.default.{r}.log")
    if not (off and det and c):
        print(f"round {r}: window end {off}, detach {det}, {len(c)} calls: no phases"); continue
    ph = {"traced": [m for t, m in c if t < off], "attached": [m for t, m in c if off <= t < det],
          "detached": [m for t, m in c if t >= det]}
    med = {k: st.median(v) if v else float("nan") for k, v in ph.items()}
    print(f"round {r}: plain {plain[-1] if plain else float('nan'):.1f} ms; default " +
          ", ".join(f"{k} {med[k]:.1f} ms ({len(ph[k])} calls)" for k in ph) +
          f"; attached/detached {med['attached'] / med['detached']:.3f}")
    ratio.append((med["attached"] / med["detached"], med["detached"]))
if ratio:
    print(f"median over rounds: attached/detached {st.median(x for x, _ in ratio):.3f}; "
          f"detached {st.median(d for _, d in ratio):.1f} ms against plain {st.median(plain):.1f} ms")
PY
}
for part in ${*:-unused cost}; do $part; done
tar -czf $OUT/site.tgz -C /tmp site 2>/dev/null
