#!/bin/bash
# Live figures of a running job (issue 52), outside Slurm: `gpuprof run` runs the same agent.
# A real nvtx3 client times 360 steps of its own, 20 ms each, then 40 ms from the 180th on
# (a planted slowdown), and prints its own medians and when the slow half began; the live
# file (every second here: GPUPROF_LIVE_INTERVAL=1) is held to those figures while the
# program runs and after it ended; the report of the running job says it covers the job so
# far and has the slowdown with when it began; `gpuprof top` is driven as a person would,
# in tmux (send-keys, capture-pane): sorting, scrolling, quitting; the files are read as the
# report reads rank files (root takes no link and nobody else's file in a user's job).
. "$(dirname "$0")/tap.sh"
B=${GP_BUILD:?}
C=$B/tests/nvtx/nvtx_client
[ -x "$C" ] || skip_all "nvtx client not built (no NVTX3 headers)"
T=$(mktemp -d /tmp/gp-live.XXXXXX)
trap 'tmux -L gplive kill-server 2>/dev/null; rm -rf "$T"' EXIT
export TMPDIR=$T
GP=$B/gpuprof
D=$T/job
L=$D/step0/rank0.live.json
num() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"; }
near() { python3 -c "import sys; a,b,t=map(float,sys.argv[1:]); sys.exit(abs(a-b)>t)" "$1" "$2" "$3"; }

GPUPROF_LIVE_INTERVAL=1 "$GP" run -q --modes=nvtx -o "$D" -- "$C" steps 360 20 40 0.3 >"$T/prog.out" 2>"$T/run.err" &
run=$!
for _ in $(seq 100); do grep -q "half=1" "$T/prog.out" 2>/dev/null && break; sleep 0.1; done
sleep 2.5 # the slow half for 2 intervals
cp "$L" "$T/mid.json" 2>/dev/null
ok $? "a live file beside the rank file while the program runs"
[ "$(num "$T/mid.json" state)" = running ] && [ "$(stat -c %a "$L")" = 600 ] &&
	[ -z "$(ls -A "$D/step0" | grep -v '^rank0.live.json$')" ]
ok $? "running, mode 0600, and nothing else in the step directory (no temporary file left)"
"$GP" top "$D" >"$T/top.txt" 2>&1 # not a terminal: plain lines
grep -q "^job: 0:00:[0-9][0-9] so far; ranks 1 running" "$T/top.txt" && grep -q "^0 .* running .* slowdown$" "$T/top.txt" &&
	! grep -q $'\033' "$T/top.txt"
ok $? "gpuprof top with no terminal: plain lines, the job line and the rank's ($(sed -n 2p "$T/top.txt" | cut -c1-120))"
"$GP" report "$D" >"$T/rep.txt" 2>&1
grep -q "RUNNING, live figures of the job so far" "$T/rep.txt" && grep -q "== How slow, so far ==" "$T/rep.txt"
ok $? "gpuprof report of the running job: from its live figures, the job so far"
grep -q "slowdown: rank 0 (step 0): steps take [0-9.]* ms since [0-9.]* s into the run, [0-9.]*x the [0-9.]* ms median" "$T/rep.txt" &&
	grep -q "(began [0-9:]* UTC, 0:00:0[0-9] into the run)" "$T/rep.txt"
ok $? "the slowdown is a finding, with when it began ($(grep -m1 slowdown: "$T/rep.txt" | cut -c1-150))"
"$GP" report --format=json "$D" >"$T/rep.json"
python3 - "$T/rep.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["live"] is True and d["covers"] == "the job so far" and d["running"] == 1, d
assert [f["id"] for f in d["findings"]][:1] == ["slowdown"], d["findings"]
assert d["ranks"][0]["steps"]["so_far"]["median_ms"] > 0
PY
ok $? "--format=json: live, covers the job so far, the slowdown first"
wait $run
ok $? "the program's exit status through gpuprof run"

# the figures against the program's own timing
h1=$(sed -n 's/^steps half=1 .*median_ms=\([0-9.]*\) .*/\1/p' "$T/prog.out")
h2=$(sed -n 's/^steps half=2 .*median_ms=\([0-9.]*\) .*/\1/p' "$T/prog.out")
since=$(sed -n 's/^steps half=2 .*from_unix=\([0-9.]*\).*/\1/p' "$T/prog.out")
base=$(num "$L" slow_base_ms) last=$(num "$T/mid.json" last_median_ms)
near "$base" "$h1" "$(python3 -c "print($h1*0.02)")"
ok $? "the median before the slowdown: $base ms live, $h1 ms by the program's own clock"
near "$last" "$h2" "$(python3 -c "print($h2*0.02)")"
ok $? "the last interval's median while it ran: $last ms live, $h2 ms by the program"
began=$(python3 -c "import json; d=json.load(open('$L')); print(d['started'] + d['slow_since_s'])")
near "$began" "$since" 0.3
ok $? "the slowdown began at $began (live), $since by the program's clock (within 0.3 s: 2 vCPUs shared, a preempted fast step before it may be slow)"
[ "$(num "$L" state)" = ended ] && [ "$(num "$L" steps)" = 360 ] && [ "$(num "$L" wait_status)" = 0 ]
ok $? "after the end: ended, all 360 steps, the program's wait status"
cpu=$(num "$L" agent_cpu_s)
python3 -c "import sys; sys.exit(not 0 < $cpu < 1)"
ok $? "the agent's own CPU is in the file ($cpu s for the whole run)"
"$GP" report "$D" >"$T/final.txt" 2>&1 && ! grep -q RUNNING "$T/final.txt" && grep -q "== How slow ==" "$T/final.txt"
ok $? "once ended, gpuprof report is the full report from the rank file"
# the final report's slowdown (report/rules_time.c, steps.shift) against the live one and
# the program's own clock, on the same run: the same onset, medians and ratio
"$GP" report --format=json "$D" >"$T/final.json"
python3 - "$T/final.json" "$L" "$T/prog.out" <<'PY'
import json, re, sys
d, live = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
prog = dict((int(m[0]), (float(m[1]), float(m[2]))) for m in
            re.findall(r"steps half=(\d) n=\d+ median_ms=([0-9.]+) from_s=([0-9.]+)", open(sys.argv[3]).read()))
f = [f for f in d["findings"] if f["id"] == "slowdown"]
st = d["ranks"][0]["slowdown"] or {"ratio": 0, "step": None, "at_s": None}
assert len(f) == 1 and f[0]["rank"] == 0, d["findings"]
assert "from step 180 on" in f[0]["title"], f[0]["title"]
assert st["step"] == 180, st
assert abs(st["at_s"] - prog[2][1]) < 0.1, (st["at_s"], prog)
assert abs(st["at_s"] - live["slow_since_s"]) < 0.3, (st, live)
assert abs(st["before_ms"] - prog[1][0]) < 0.02 * prog[1][0], (st, prog)
assert abs(st["after_ms"] - prog[2][0]) < 0.02 * prog[2][0], (st, prog)
assert abs(st["before_ms"] - live["slow_base_ms"]) < 0.02 * live["slow_base_ms"], (st, live)
assert abs(st["ratio"] - live["slow_ratio"]) < 0.05 * live["slow_ratio"], (st, live)
PY
ok $? "the final report's slowdown: from step 180, when, the medians and the ratio as the live file and the program's clock say ($(python3 -c "import json; print([f['title'] for f in json.load(open('$T/final.json'))['findings'] if f['id'] == 'slowdown'])" | cut -c1-120))"

# The final rule against the live one on the same runs (tests/nvtx: stepseq), a step's
# length planted by segment: fires on a level shift (2.9x, 1.25x) from the onset the program
# timed; not on steady steps, a warm-up, alternating steps, gradient accumulation's every
# 4th, a slow last step or last three, a few slow steps or 100 that recovered; the live
# file's end state says the same each time
while read -r spec want; do
	rm -rf "$T/seq"
	GPUPROF_LIVE_INTERVAL=1 "$GP" run -q --modes=nvtx -o "$T/seq" -- "$C" stepseq "$spec" >"$T/seq.out" 2>&1
	"$GP" report --format=json "$T/seq" >"$T/seq.json" 2>/dev/null
	why=$(python3 - "$T/seq.json" "$T/seq/step0/rank0.live.json" "$T/seq.out" "$want" 2>&1 <<'PY'
import json, re, sys
d, live, want = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[4]
segs = re.findall(r"seg k=\d+ first_step=(\d+) n=\d+ median_ms=([0-9.]+) from_s=([0-9.]+)", open(sys.argv[3]).read())
st = d["ranks"][0]["slowdown"] or {"ratio": 0, "step": None, "at_s": None}
fired = [f for f in d["findings"] if f["id"] == "slowdown"]
if want == "-":
    assert not fired and d["ranks"][0]["slowdown"] is None, fired
    assert live["slow_since_s"] < 0, ("live", live["slow_since_s"], live["slow_ratio"])
else:
    step, t = int(segs[1][0]), float(segs[1][2])
    assert fired and st["step"] == step and abs(st["at_s"] - t) < 0.1, (st, segs)
    assert abs(st["ratio"] - float(want)) < 0.05 * float(want), st
    assert live["slow_since_s"] >= 0 and abs(live["slow_since_s"] - st["at_s"]) < 0.3, live
    assert abs(live["slow_ratio"] - st["ratio"]) < 0.05 * st["ratio"], live
print("final %s step %s (%.2fx), live since %s (%.2fx)" % ("fires" if fired else "silent",
      st["step"], st["ratio"], live["slow_since_s"], live["slow_ratio"]))
PY
	)
	ok $? "stepseq $spec: $(echo "$why" | tail -1 | cut -c1-160)"
done <<'SEQ'
150*6,150*17.4 2.9
150*6,150*7.5 1.25
300*6 -
10*30,290*6 -
300*6/18 -
300*6/18:4 -
299*6,1*30 -
297*6,3*30 -
150*6,5*18,145*6 -
100*6,100*18,100*6 -
SEQ
echo x >"$D/step0/.rank0.live.json.tmp.1" && touch -d '20 minutes ago' "$D/step0/.rank0.live.json.tmp.1"
echo x >"$D/step0/.rank0.live.json.tmp.2"
"$GP" report -q "$D" && [ ! -e "$D/step0/.rank0.live.json.tmp.1" ] && [ -e "$D/step0/.rank0.live.json.tmp.2" ]
ok $? "a live file's temporary file left by a killed agent: removed by the report after 10 minutes, not before"

GPUPROF_LIVE_INTERVAL=0 "$GP" run -q --modes=nvtx -o "$T/off" -- "$C" steps 20 5 5 >/dev/null 2>&1
[ -f "$T/off/step0/rank0.gpr" ] && ! ls "$T/off/step0" | grep -q live
ok $? "live_interval 0: no live file"

# a launcher's ranks (torchrun's workers, each with a ring of its own): a live file each;
# the launcher's own (a task of rank 1 whose workers are ranks 4 and 5) goes once they come
GPUPROF_LIVE_INTERVAL=1 "$GP" run -q --modes=nvtx -o "$T/l3" -- sh -c "for r in 0 1 2; do RANK=\$r '$C' steps 160 10 \$((10 + 10 * r)) & done; wait" >/dev/null 2>&1
"$GP" report --format=json "$T/l3" >/dev/null 2>&1 # the finished job's files are all there
python3 - "$T/l3/step0" <<'PY'
import json, sys
for r in (0, 1, 2):
    d = json.load(open(f"{sys.argv[1]}/rank{r}.live.json"))
    assert d["rank"] == r and d["state"] == "ended" and d["steps"] == 160, d
    # three programs that spin on 2 vCPUs: each rank's own figures, not the clock's accuracy
    assert abs(d["slow_base_ms" if r else "median_ms"] - 10) < 1, d
    assert r == 0 or abs(d["slow_ratio"] - (1 + r)) < 0.1 * (1 + r), d
    assert [f["id"] for f in d["findings"]] == ([] if r == 0 else ["slowdown"]), d["findings"]
PY
ok $? "3 workers under one task: a live file each, each with its own step time and slowdown (x2, x3)"
GPUPROF_RANK=1 GPUPROF_LIVE_INTERVAL=1 "$GP" run -q --modes=nvtx -o "$T/l4" -- sh -c "sleep 1.6; for r in 4 5; do RANK=\$r '$C' steps 60 10 10 & done; wait" >/dev/null 2>&1
[ "$(cd "$T/l4/step0" && ls -- *.live.json | tr '\n' ' ')" = "rank4.live.json rank5.live.json " ]
ok $? "the launcher's own live file (task 1, no steps) gone once its workers' came ($(ls "$T/l4/step0" | tr '\n' ' '))"

# a job of 40 ranks, as the agents would have written them, for top's screen
J=$T/many
mkdir -p "$J/step0" "$J/step1"
python3 - "$J" <<'PY'
import json, sys, time
now = time.time()
for r in range(40):
    step = "step0" if r < 36 else "step1"
    d = {"gpuprof_live": 1, "job": "4242", "step": step[4:], "rank": r, "node": "n%02d" % (r // 8),
         "pid": 100 + r, "state": "running", "wait_status": 0, "seq": 9, "started": now - 600,
         "written": now - (200 if r == 39 else 1), "elapsed_s": 600, "interval_s": 30,
         "step_name": "train_step", "step_source": "nvtx", "step_basis": "gpu", "steps": 5000,
         "warmup": 3, "median_ms": 100 + r, "p95_ms": 120, "mean_ms": 101, "last_steps": 300,
         "last_median_ms": 100 + r + (150 if r == 7 else 0), "last_from_s": 570,
         "last_to_s": 600, "first_step_s": 20, "slow_since_s": 580 if r == 7 else -1,
         "slow_ratio": 2.5 if r == 7 else 0, "slow_base_ms": 107 if r == 7 else 0, "gpus": 1,
         "nvml_samples": 600, "last_nvml_samples": 30, "busy_pct": 90, "last_busy_pct": 50 + r,
         "idle_startup_s": 15, "idle_steps_s": 40, "mem_used_bytes": (20 + r) << 30,
         "mem_peak_bytes": (21 + r) << 30, "mem_total_bytes": 80 << 30,
         "torch_allocated_bytes": 0, "torch_reserved_bytes": 0, "torch_peak_bytes": 0,
         "lost": 0, "lost_by": "", "faults": 0, "agent_cpu_s": 0.5, "agent_cpu_last_ms": 20,
         "findings": [{"id": "slowdown", "text": "steps take 257.0 ms since 580 s into the run"}] if r == 7 else []}
    open("%s/%s/rank%d.live.json" % (sys.argv[1], step, r), "w").write(json.dumps(d) + "\n")
PY
"$GP" top --once "$J" >"$T/many.txt"
[ "$(grep -c '^[01] ' "$T/many.txt")" = 40 ] && grep -q "ranks 39 running, 0 ended, 1 gone" "$T/many.txt" &&
	grep -q "^1 *39 .* gone " "$T/many.txt" && grep -q "first finding: rank 7: slowdown" "$T/many.txt" &&
	grep -q "memory 60.0 of 80.0 GiB (rank 39)" "$T/many.txt" && grep -q "slowest rank 7" "$T/many.txt"
ok $? "top --once: 40 ranks of 2 steps, the one not written for 200 s gone, rank 7 the slowest with its slowdown"
"$GP" report --format=json "$J" | python3 -c "
import json, sys
d = json.load(sys.stdin)
ids = [(f['id'], f['rank']) for f in d['findings']]
assert d['running'] == 39 and d['gone'] == 1 and d['job'] == '4242', d
assert ids == [('slowdown', 7), ('straggler', 7)], ids
"
ok $? "the running report of 40 ranks: rank 7's slowdown, and rank 7 the straggler"
"$GP" report --format=json --ranks=3-5,39 "$J" | python3 -c "
import json, sys
d = json.load(sys.stdin)
assert [r['rank'] for r in d['ranks']] == [3, 4, 5, 39] and d['running'] == 3 and d['gone'] == 1, d
assert [(f['id'], f['rank']) for f in d['findings']] == [('straggler', 39)], d['findings']
"
ok $? "--ranks=3-5,39: those ranks, and the job line of them (rank 39 their straggler)"
# not measured is '-' (null in JSON) in every live output, never 0: rank 0 saw a GPU but
# NVML never sampled it, rank 2 took no sample in its last interval; the job's busy is the
# mean of the ranks sampled (90 % so far, 50 % now), not pulled down by the unmeasured 0s
N=$T/nosamp
mkdir -p "$N/step0"
python3 - "$N" <<'PY'
import json, sys, time
now = time.time()
for r, (s, ls) in enumerate([(0, 0), (600, 30), (600, 0)]):
    d = {"gpuprof_live": 1, "job": "77", "step": "0", "rank": r, "node": "n0", "pid": 100 + r,
         "state": "running", "wait_status": 0, "seq": 9, "started": now - 600, "written": now - 1,
         "elapsed_s": 600, "interval_s": 30, "step_name": "train_step", "step_source": "nvtx",
         "step_basis": "gpu", "steps": 5000, "warmup": 3, "median_ms": 100, "p95_ms": 120,
         "mean_ms": 101, "last_steps": 300, "last_median_ms": 100, "last_from_s": 570,
         "last_to_s": 600, "first_step_s": 20, "slow_since_s": -1, "slow_ratio": 0,
         "slow_base_ms": 0, "gpus": 1, "nvml_samples": s, "last_nvml_samples": ls,
         "busy_pct": 90 if s else 0, "last_busy_pct": 50 if ls else 0,
         "idle_startup_s": 15 if s else 0, "idle_steps_s": 40 if s else 0,
         "mem_used_bytes": (20 << 30) if s else 0, "mem_peak_bytes": (21 << 30) if s else 0,
         "mem_total_bytes": 80 << 30, "torch_allocated_bytes": 0, "torch_reserved_bytes": 0,
         "torch_peak_bytes": 0, "lost": 0, "lost_by": "", "faults": 0, "agent_cpu_s": 0.5,
         "agent_cpu_last_ms": 20, "findings": []}
    open("%s/step0/rank%d.live.json" % (sys.argv[1], r), "w").write(json.dumps(d) + "\n")
PY
"$GP" report "$N" >"$T/nosamp.txt" 2>&1
grep -Eq '^0 +0 +- +- +- +- +- +- +80\.00$' "$T/nosamp.txt" &&
	grep -Eq '^0 +2 +90\.0 +- +15\.0 ' "$T/nosamp.txt"
ok $? "the running report: a GPU never sampled is '-' for busy, idle and memory ($(grep -m1 '^0  *0 ' "$T/nosamp.txt"))"
"$GP" top --once "$N" >"$T/nosamp.top"
grep -q "busy 50% now, 90% so far" "$T/nosamp.top" && grep -Eq '^0 +0 .* 1\.00 +- +- +- +80\.0' "$T/nosamp.top" &&
	grep -Eq '^0 +2 .* 1\.00 +- +20\.0 ' "$T/nosamp.top"
ok $? "top: the same '-', the job's busy the mean of the ranks sampled ($(sed -n 2p "$T/nosamp.top" | grep -o 'busy[^;]*'))"
"$GP" report --format=json "$N" | python3 -c "
import json, sys
d = json.load(sys.stdin)
g = [r['gpu'] for r in d['ranks']]
assert d['busy_pct'] == 90, d['busy_pct']
assert g[0]['so_far'] == {'busy_pct': None, 'idle_startup_s': None, 'idle_steps_s': None}, g[0]
assert g[0]['last']['busy_pct'] is None and g[0]['mem_used_bytes'] is None and g[0]['mem_peak_bytes'] is None, g[0]
assert g[2]['last']['busy_pct'] is None and g[2]['so_far']['busy_pct'] == 90, g[2]
"
ok $? "--format=json: null where not measured, never 0"
# the running job's text: the program's own strings made safe for a terminal, every line
# within 100 characters (textwidth.py), and what a step is said once per basis beneath the
# table
H=$(dirname "$0")
cp -r "$J" "$T/hostile"
python3 - "$T/hostile/step0" <<'PY'
import json, sys
p = "%s/rank5.live.json" % sys.argv[1]
d = json.load(open(p))
d["step_name"] = "fwd\x1b[2J\x07" + "x" * 150
d["step_source"] = "torch"
d["findings"] = [{"id": "slowdown", "text": "steps take 9 ms " + "and longer " * 30 + "\x1b]0;owned\x07"}]
open(p, "w").write(json.dumps(d) + "\n")
PY
"$GP" report "$T/hostile" >"$T/hostile.txt" 2>&1
out=$(python3 "$H/textwidth.py" check "$T/hostile.txt" 2>&1)
ok $? "the running report's text: every line within 100 characters ($out)"
! grep -q $'[\x01-\x09\x0b-\x1f\x7f]' "$T/hostile.txt" && grep -q "fwd?\[2J?" "$T/hostile.txt"
ok $? "the program's control characters shown as '?' ($(grep -m1 -o 'fwd.\{0,8\}' "$T/hostile.txt" | cat -v))"
unwrap "$T/hostile.txt" >"$T/hostile.u"
grep -q "^steps of 39 rank(s) from rank 0: gpu, train_step (nvtx)$" "$T/hostile.u" &&
	grep -q "^steps of 1 rank(s) from rank 5: gpu, fwd?\[2J?x*x (torch)$" "$T/hostile.u" && ! grep -q "^steps: " "$T/hostile.u"
ok $? "what a step is, once per basis with its ranks ($(grep -c '^steps' "$T/hostile.txt") lines)"
"$GP" report "$J" | grep -q "^steps: gpu, train_step (nvtx)$"
ok $? "one basis for all 40 ranks: one line"
"$GP" top --once --sort=now "$J" | sed -n 5p | grep -q "^0 *7 "
ok $? "--sort=now: the slowest rank first"
"$GP" top --once --sort=busy "$J" | sed -n 5p | grep -q "^0 *0 "
ok $? "--sort=busy: the least busy first"

# a job directory of 20 000 live files: top reads the first 1000 ranks (--max-ranks), lowest
# first, and says so on screen; --max-ranks=0 reads every one
B2=$T/big
mkdir -p "$B2/step0"
python3 - "$J/step0/rank3.live.json" "$B2/step0" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for r in range(20000):
    d["rank"] = r
    open("%s/rank%d.live.json" % (sys.argv[2], r), "w").write(json.dumps(d) + "\n")
PY
"$GP" top --once "$B2" >"$T/big.txt" 2>&1
[ "$(grep -c '^0 ' "$T/big.txt")" = 1000 ] && grep -q "^0 *999 " "$T/big.txt" && ! grep -q "^0 *1000 " "$T/big.txt" &&
	grep -q "^only the first 1000 ranks' live files read of 20000 (--max-ranks): the figures above are theirs$" "$T/big.txt"
ok $? "top of 20 000 ranks: ranks 0-999 read and shown, and the screen says so ($(grep -m1 '^only' "$T/big.txt"))"
"$GP" top --once --max-ranks=0 --sort=rank "$B2" >"$T/big0.txt" 2>&1
[ "$(grep -c '^0 ' "$T/big0.txt")" = 20000 ] && ! grep -q "^only the first" "$T/big0.txt"
ok $? "--max-ranks=0: every one of the 20 000 read"
out=$("$GP" top --once --max-ranks=-1 "$B2" 2>&1); rc=$?
[ $rc = 2 ] && echo "$out" | grep -q "max-ranks"; ok $? "a bad --max-ranks is refused ($rc: $out)"
rm -rf "$B2"

# gpuprof ledger --running: squeue's running jobs (here a file of its lines), each one's
# gpuprof-<id> in its WorkDir; jobs without live figures are not listed
mkdir -p "$T/wd" && cp -r "$J" "$T/wd/gpuprof-4242"
printf '%s\n' "4242|alice|physics|gpu|10:00|$T/wd" "4243|bob|bio|gpu|1:00|$T/wd" "bad line" >"$T/squeue.txt"
"$GP" ledger --running --from-file="$T/squeue.txt" >"$T/lr.txt" 2>&1
[ "$(grep -c "^4242 " "$T/lr.txt")" = 1 ] && ! grep -q "^4243 " "$T/lr.txt" &&
	grep -q "^4242 *alice *physics *gpu *10:00 *39/40 .* rank 7 slowdown: " "$T/lr.txt"
ok $? "ledger --running: the running profiled job with its live figures, the one without none ($(sed -n 3p "$T/lr.txt" | cut -c1-110))"
"$GP" ledger --running --format=json --from-file="$T/squeue.txt" | python3 -c "
import json, sys
d = json.load(sys.stdin)['running']
assert len(d) == 1 and d[0]['job'] == '4242' and d[0]['ranks'] == 40 and d[0]['ranks_gone'] == 1, d
assert d[0]['first_finding'] == 'slowdown' and abs(d[0]['last_busy_pct'] - 69.5) < 0.01, d
"
ok $? "ledger --running --format=json: the job, its ranks, its GPUs' busy now, its first finding"
# a job that profile_all_jobs profiled without asking writes under site_output, not in its
# WorkDir: --running lists it too (on Slurm 22.05 the site-profiled job was missing from
# --running while the job that asked was listed)
mkdir -p "$T/site/carol" "$T/wd3" && cp -r "$J" "$T/site/carol/4244"
# (its live files name their job: ledger --running leaves out those of another)
sed -i 's/"job": "4242"/"job": "4244"/' "$T"/site/carol/4244/step*/rank*.live.json
printf 'profile_all_jobs: true\nsite_output: %s/site/%%u/%%j\n' "$T" >"$T/site.yaml"
printf '%s\n' "4244|carol|physics|gpu|2:00|$T/wd3" >"$T/squeue2.txt"
"$GP" ledger --running --config="$T/site.yaml" --from-file="$T/squeue2.txt" >"$T/lr2.txt" 2>&1
grep -q "^4244 *carol " "$T/lr2.txt"
ok $? "ledger --running: a job profiled by the site's policy (its directory under site_output) is listed ($(tr '\n' '|' <"$T/lr2.txt" | cut -c1-200))"
# top JOBID through the job's WorkDir (sacct): a gpuprof-JOBID there whose live files name
# another job (a copy, a link of the user's) showed that job's figures as this one's
mkdir -p "$T/fsacct" "$T/wd5" && cp -r "$J" "$T/wd5/gpuprof-555"
printf '#!/bin/sh\nj=; p=; for a; do [ "$p" = -j ] && j=$a; p=$a; f=$a; done\ncase $j:$f in\n555:JobIDRaw) echo 555 ;;\n555:WorkDir) echo %s/wd5 ;;\nesac\n' "$T" >"$T/fsacct/sacct"
chmod 755 "$T/fsacct/sacct"
PATH=$T/fsacct:$PATH "$GP" top --once 555 >"$T/top555.out" 2>&1
grep -q "top: 40 of the 40 live file(s) in $T/wd5/gpuprof-555 are of job 4242, not job 555: left out" "$T/top555.out" &&
	grep -q "no live figures" "$T/top555.out"
ok $? "top JOBID: live files in its WorkDir's gpuprof-JOBID that name another job are left out, said ($(head -c 200 "$T/top555.out"))"
"$GP" ledger --running --format=csv --from-file="$T/squeue.txt" >/dev/null 2>"$T/lr.err"
[ $? = 2 ] && grep -q "running: --format 'csv' (text, json)" "$T/lr.err"
ok $? "ledger --running --format=csv: a usage error ($(cat "$T/lr.err"))"

if command -v tmux >/dev/null; then
	tx() { tmux -L gplive "$@"; }
	screen() { tx capture-pane -p -t top; }
	waitfor() { for _ in $(seq 50); do screen | grep -q -- "$1" && return 0; sleep 0.1; done; return 1; }
	tx new-session -d -s top -x 150 -y 20 "$GP top --delay=0.5 $J; echo TOP-EXITED \$?; sleep 30"
	waitfor "q quit"
	ok $? "top in tmux: a screen with its key line"
	screen | sed -n 5p | grep -q "^0 *0 " && screen | grep -q "ranks 1-14 of 40"
	ok $? "20 rows: ranks 1-14 of 40 shown, rank 0 first ($(screen | tail -1 | cut -c1-80))"
	tx send-keys -t top j j j
	waitfor "ranks 4-17 of 40" && screen | sed -n 5p | grep -q "^0 *3 "
	ok $? "j scrolls a line at a time (rank 3 on top after three)"
	tx send-keys -t top Space
	waitfor "ranks 17-30 of 40"
	ok $? "space: a page down"
	tx send-keys -t top g s
	waitfor "sort: now" && screen | sed -n 5p | grep -q "^0 *7 "
	ok $? "s: sorted by the step time now, rank 7 first"
	tx send-keys -t top r
	waitfor "sort: now (reversed)" && screen | sed -n 5p | grep -q "^0 *0 "
	ok $? "r: reversed"
	tx send-keys -t top q
	waitfor "TOP-EXITED 0"
	ok $? "q: top ends with status 0, the terminal given back"
	tx kill-server 2>/dev/null
else
	skip "tmux not installed (scripts/deps installs it)"
fi

# multibyte names (a live file a collector wrote raw UTF-8 into, as t_hostile's): top lays
# its columns out in terminal columns, a code point one and an East Asian wide one two (by
# bytes, "nœud-é" and "節點一" moved every column after them, and %-12.12s cut "ー" in
# three), and its screen cuts each line at the terminal's width at a whole character
M=$T/mb
mkdir -p "$M/step0"
python3 - "$M" <<'PY'
import json, sys, time
now = time.time()
nodes = ["n0", "nœud-é", "節點一", "nœud-éノードノード"]
for r, node in enumerate(nodes):
    d = {"gpuprof_live": 1, "job": "作業4242", "step": "0", "rank": r, "node": node, "pid": 100 + r,
         "state": "running", "wait_status": 0, "seq": 9, "started": now - 600, "written": now - 1,
         "elapsed_s": 600, "interval_s": 30, "step_name": "訓練", "step_source": "nvtx",
         "step_basis": "gpu", "steps": 5000, "warmup": 3, "median_ms": 100, "p95_ms": 120,
         "mean_ms": 101, "last_steps": 300, "last_median_ms": 100 + (150 if r == 2 else 0),
         "last_from_s": 570, "last_to_s": 600, "first_step_s": 20,
         "slow_since_s": 580 if r == 2 else -1, "slow_ratio": 2.5 if r == 2 else 0,
         "slow_base_ms": 100 if r == 2 else 0, "gpus": 1, "nvml_samples": 600,
         "last_nvml_samples": 30, "busy_pct": 90, "last_busy_pct": 50 + r,
         "idle_startup_s": 15, "idle_steps_s": 40, "mem_used_bytes": (20 + r) << 30,
         "mem_peak_bytes": (21 + r) << 30, "mem_total_bytes": 80 << 30,
         "torch_allocated_bytes": 0, "torch_reserved_bytes": 0, "torch_peak_bytes": 0,
         "lost": 0, "lost_by": "", "faults": 0, "agent_cpu_s": 0.5, "agent_cpu_last_ms": 20,
         "findings": [{"id": "slowdown", "text": "ステップが遅くなった：毎ステップ二百五十ミリ秒、五百八十秒から"}] if r == 2 else []}
    open("%s/step0/rank%d.live.json" % (sys.argv[1], r), "w", encoding="utf-8").write(json.dumps(d, ensure_ascii=False) + "\n")
PY
cat >"$T/cols.py" <<'PY'
import unicodedata
def cols(s):  # as a terminal counts them: East Asian wide and fullwidth two, else one
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in s)
PY
"$GP" top --once "$M" >"$T/mb.txt" 2>&1
python3 - "$T/mb.txt" "$T" <<'PY'
import sys
sys.path.insert(0, sys.argv[2])
from cols import cols
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
head = next(l for l in lines if l.startswith("STEP "))
rows = [l for l in lines if l.startswith("0 ")]
assert len(rows) == 4, lines
# each rank's STATE and the columns after it start where the heading's do
for h in ("STATE", "STEPS", "FINDING"):
    at = cols(head[:head.index(h) + len(h)]) if h == "STEPS" else cols(head[:head.index(h)])
    for r in rows:
        w = r.split()
        if h == "STATE":
            i = r.index("running")
            assert cols(r[:i]) == at, (h, r, cols(r[:i]), at)
        elif h == "STEPS":
            i = r.index(" 5000 ") + 5
            assert cols(r[:i]) == at, (h, r, cols(r[:i]), at)
        elif "slowdown" in r:
            assert cols(r[:r.index("slowdown")]) == at, (h, r)
# the node cut at 12 columns, at a whole character
assert any(" nœud-éノード running" in r for r in rows), rows
print("# " + " | ".join(r[:40] for r in rows))
PY
ok $? "top --once: multibyte and wide node names, each rank's columns under their headings"
# the screen, on a terminal 70 columns wide (a pty): each line valid UTF-8, within 70
# columns, and a line longer than that cut at 69 or 70 (a wide character at the edge)
python3 - "$GP" "$M" "$T" <<'PY'
import fcntl, os, pty, re, select, struct, sys, termios, time
sys.path.insert(0, sys.argv[3])
from cols import cols
W = 70
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], [sys.argv[1], "top", "--delay=0.5", sys.argv[2]])
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 20, W, 0, 0))
out, end = b"", time.time() + 3
while time.time() < end:
    if select.select([fd], [], [], 0.1)[0]:
        try:
            out += os.read(fd, 65536)
        except OSError:
            break
    if out.count(b"q quit") >= 2:
        break
os.write(fd, b"q")
time.sleep(0.3)
try:
    while select.select([fd], [], [], 0.2)[0]:
        out += os.read(fd, 65536)
except OSError:
    pass
os.waitpid(pid, 0)
# the last whole screen: from the last home-cursor to the key line
scr = out[out.rfind(b"\x1b[H"):]
lines = [re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", l).strip(b"\r") for l in scr.split(b"\n")]
bad, cut = [], 0
for l in lines:
    try:
        t = l.decode("utf-8")
    except UnicodeDecodeError as e:
        bad.append("not UTF-8: %r" % l)
        continue
    if cols(t) > W:
        bad.append("%d columns: %s" % (cols(t), t))
    if "ステップ" in t or t.startswith("0 "):  # the finding's line, the ranks' (all wider)
        cut += 1
        if cols(t) < W - 1:
            bad.append("cut at %d columns, not %d: %s" % (cols(t), W, t))
assert cut == 5 and not bad, (cut, bad)
print("# %d lines, %d of them cut at %d columns" % (len(lines), cut, W))
PY
ok $? "top's screen 70 columns wide: each line cut at 70 columns, at a whole character"

# read as the report reads rank files: root in another user's job takes no link and no
# file of someone else's
if [ "$(id -u)" = 0 ] && id gpuprof-test >/dev/null 2>&1; then
	V=$T/victim
	mkdir -p "$V/step0"
	cp "$J/step0/rank1.live.json" "$V/step0/rank1.live.json"   # root's, in the user's job
	ln -s "$J/step0/rank2.live.json" "$V/step0/rank2.live.json" # a link
	cp "$J/step0/rank3.live.json" "$V/step0/rank3.live.json"
	chown -R gpuprof-test "$V"
	chown -h root "$V/step0/rank1.live.json"
	"$GP" top --once "$V" >"$T/v.txt" 2>&1
	[ "$(grep -c '^0 ' "$T/v.txt")" = 1 ] && grep -q "^0 *3 " "$T/v.txt"
	ok $? "as root in a user's job: only the owner's file is read, not root's, not a link"
	runuser -u gpuprof-test -- "$GP" top --once "$J" >"$T/u.txt" 2>&1
	[ $? = 1 ] && grep -q "Permission denied" "$T/u.txt"
	ok $? "another user's job that the user may not read: refused ($(head -c 100 "$T/u.txt"))"
else
	skip "not root, or no user gpuprof-test"
fi
done_testing
