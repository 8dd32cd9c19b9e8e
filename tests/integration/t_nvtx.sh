#!/bin/bash
# NVTX capture with a real nvtx3 client (tests/nvtx/nvtx_client.c), no GPU needed:
# 4 threads x 250k ranges, 10^5 distinct strings, ranges started and ended on different
# threads, domains and registered strings, wide strings, 1000-deep nesting, pops without
# pushes, and an overflowing burst whose drops are counted exactly.
. "$(dirname "$0")/tap.sh"
B=${GP_BUILD:?}
C=$B/tests/nvtx/nvtx_client
[ -x "$C" ] || skip_all "nvtx client not built (no NVTX3 headers)"
T=$(mktemp -d /tmp/gp-nvtx.XXXXXX); trap 'rm -rf "$T"' EXIT
export TMPDIR=$T
cap() { "$B/gpuprof" run --modes=nvtx --output="$T/$1" -- "$C" "$1" >"$T/$1.out" 2>&1; }
count() { "$B/gpuprof" dump "$T/$1/step0/rank0.gpr" | sed -n "s/^count $2 //p"; }
field() { "$B/gpuprof" dump "$T/$1/step0/rank0.gpr" | sed -n "s/^$2 //p"; }
drops() { local n; n=$(loss "$1" ring_full); echo "${n:-0}"; }
loss() { "$B/gpuprof" report --format=json "$T/$1" | python3 -c "import json,sys; print(json.load(sys.stdin)['ranks'][0]['quality']['losses'].get(sys.argv[1], ''))" "$2"; }
rj() { "$B/gpuprof" report --format=json "$T/$1" | python3 -c "$2"; }
nvtx_json() { "$B/gpuprof" report --format=json "$T/$1" | python3 -c "import json,sys; d={r['name']: r['count_all'] for r in json.load(sys.stdin)['nvtx']}; print(d.get(sys.argv[1], 0))" "$2"; }

cap threads; ok $? "4 threads x 250k ranges"
# the agent has the rank's summary written when its capture ends (detached: the program's
# exit does not wait for it), and the report reads it in place of the rank file
for _ in $(seq 150); do [ -s "$T/threads/step0/rank0.gps" ] && break; sleep 0.2; done
[ -s "$T/threads/step0/rank0.gps" ]; ok $? "the agent's summary of the rank is beside its rank file"
GPUPROF_DEBUG=1 "$B/gpuprof" report "$T/threads" 2>&1 >/dev/null | grep -q "1 rank(s) from their summaries, 0 from"
ok $? "the report reads it in place of the 10^6 ranges' rank file"
# each thread's ranges in its lane of the ring, a push and its pop in one record
[ "$(count threads nvtx_range)" = 1000000 ] && [ -z "$(count threads nvtx_push)" ]
ok $? "all 10^6 ranges recorded, one record each from the threads' lanes ($(count threads nvtx_range))"
[ "$(drops threads)" = 0 ]; ok $? "no drops at ~2M records/s"
[ "$(nvtx_json threads work)" = 1000000 ]; ok $? "report pairs 10^6 ranges per thread"

cap strings; ok $? "10^5 distinct range names"
[ "$(field strings distinct_strings)" -ge 100000 ]; ok $? "10^5 distinct strings interned ($(field strings distinct_strings))"
"$B/gpuprof" dump --strings "$T/strings/step0/rank0.gpr" | grep -q " distinct_99999$"; ok $? "the last name is in the rank file"

cap cross; ok $? "ranges started on one thread, ended on another"
sz=$(stat -c %s "$T/cross/step0/rank0.gpr")
[ "$sz" -lt 16384 ] && [ ! -e "$T/cross/step0/rank0.gps" ]
ok $? "a rank file under 16 KiB ($sz bytes) gets no summary from its agent"
[ "$(count cross nvtx_start)" = 1000 ] && [ "$(count cross nvtx_end)" = 1000 ]; ok $? "1000 starts and 1000 ends"
[ "$(nvtx_json cross cross_thread)" = 1000 ]; ok $? "report pairs them across threads"

cap domains; ok $? "domains, registered strings, wide strings"
[ "$(nvtx_json domains registered_range)" = 10 ]; ok $? "registered string names domain ranges"
[ "$(nvtx_json domains "wïde_range")" = 1 ]; ok $? "wide string converted to UTF-8"
"$B/gpuprof" dump --events "$T/domains/step0/rank0.gpr" | grep "^nvtx_push" | head -1 | grep -q "c=42 d=$(python3 -c 'print((1 << 63) | (0xff00ff00 << 32) | 7)')"
ok $? "payload, colour and category kept"

cap streams; ok $? "CUDA and CUDA runtime stream naming"
if grep -q no_stream_naming "$T/streams.out"; then
	for _ in 1 2 3; do skip "nvtx client built without cuda.h"; done
else
"$B/gpuprof" dump --events "$T/streams/step0/rank0.gpr" | grep "^stream_name" >"$T/sn.txt"
[ "$(wc -l <"$T/sn.txt")" = 3 ]; ok $? "three stream names recorded"
grep -q "a=$((0x1234)) .*c=$((0x1234))" "$T/sn.txt" && grep -q "a=$((0x5678))" "$T/sn.txt"
ok $? "keyed by their handles (no CUPTI to map them)"
"$B/gpuprof" dump --strings "$T/streams/step0/rank0.gpr" | grep -q " prefetch_stream$" &&
	"$B/gpuprof" dump --strings "$T/streams/step0/rank0.gpr" | grep -q " wïde_stream$"
ok $? "with their names, wide ones in UTF-8"
fi

cap deep; ok $? "1000-deep nesting"
[ "$(nvtx_json deep nest)" = 1000 ]; ok $? "1000 nested ranges"
cap deeper; ok $? "5000-deep nesting"
[ "$(nvtx_json deeper nest)" = 4096 ] && [ "$(loss deeper nesting_too_deep)" = 904 ]
ok $? "4096 levels recorded, the 904 deeper counted as lost ($(loss deeper nesting_too_deep))"
"$B/gpuprof" report "$T/deeper" | grep -q "lost: 904 ranges nested deeper than 4096"; ok $? "data quality names the cause"
cap names; ok $? "300 000 distinct names, more than the string table holds"
n=$(loss names string_table_full)
[ "${n:-0}" -ge 37856 ] && [ "$(nvtx_json names '(unnamed)')" = "$n" ]
ok $? "every name lost is counted, and equals the unnamed ranges ($n)"
"$B/gpuprof" report --format=json "$T/names" | python3 -c 'import json,sys; r=json.load(sys.stdin)["ranks"][0]; assert r["steps"]["range"] != "(unnamed)", r["steps"]' 2>/dev/null
ok $? "an unnamed range is never taken for the step"
cap earlyfork; ok $? "a worker forked before the first NVTX call, calling NVTX first"
[ "$(nvtx_json earlyfork parent_step)" = 10 ] && [ "$(nvtx_json earlyfork worker_range)" = 0 ]
ok $? "the parent's ranges are recorded, the worker's are not"
[ "$(loss earlyfork other_processes)" = 1 ]; ok $? "and the worker is counted as a process not recorded"
"$B/gpuprof" run --modes=nvtx --output="$T/execchild" -- "$C" execchild >/dev/null 2>&1
ls "$T/execchild/step0" | grep "\.gpr$" | tr '\n' ' ' | grep -qxE "rank0.gpr rank0.pid[0-9]+.gpr "
ok $? "a helper that touches NVTX before the program: each has a file of its own ($(ls "$T/execchild/step0" | tr '\n' ' '))"
rj execchild 'import json,sys
r = json.load(sys.stdin)["ranks"][0]
assert r["steps"]["range"] == "parent_step" and r["steps"]["count"] == 100, r["steps"]
p = r["processes"]; assert p["recorded"] == 2 and p["listed"][0]["trainer"] and p["listed"][0]["steps"] == 100 and p["listed"][1]["steps"] == 60, p
assert r["outcome"] == "exit 0" and r["quality"]["losses"].get("other_processes") is None, r["quality"]' 2>"$T/execchild.err"
ok $? "the program's 100 steps are the rank, the helper's 60 listed beside it $(tail -1 "$T/execchild.err")"
"$B/gpuprof" report "$T/execchild" | grep -q "2 processes recorded; the rank's figures are the one that trained"
ok $? "the text report lists the rank's processes"
# a process file another agent wrote (an earlier run into the same directory) is no
# process of this rank: left out, and counted
"$B/gpuprof" run --modes=nvtx --output="$T/stale" -- "$C" worker >/dev/null 2>&1
cp "$T"/execchild/step0/rank0.pid*.gpr "$T/stale/step0/" && rm -f "$T"/stale/step0/*.gps
rj stale 'import json,sys
r = json.load(sys.stdin)["ranks"][0]
assert r["processes"]["foreign_left_out"] == 1 and r["steps"]["count"] == 20, (r["processes"], r["steps"]["count"])' 2>"$T/stale.err"
ok $? "another run's process file beside the rank is left out and counted $(tail -1 "$T/stale.err")"
"$B/gpuprof" run --modes=nvtx --output="$T/seq" -- sh -c "'$C' deep >/dev/null && '$C' fork >/dev/null" >/dev/null 2>&1
ok $? "two programs one after the other under one agent"
[ "$(nvtx_json seq nest)" = 1000 ] && [ "$(nvtx_json seq parent_range)" = 1 ] && [ "$(loss seq other_processes)" = "" ]
ok $? "both recorded, each name its own (the second takes over the ring with its own ids)"
# a launcher's ranks (torchrun under one task: RANK set per worker) each get a rank file
"$B/gpuprof" run --modes=nvtx --output="$T/launch" -- sh -c "for r in 0 1 2 3; do RANK=\$r '$C' worker & done; wait" >/dev/null 2>&1
ok $? "four ranks of a launcher under one agent"
ls "$T/launch/step0" | grep "\.gpr$" | tr '\n' ' ' | grep -qx "rank0.gpr rank1.gpr rank2.gpr rank3.gpr "
ok $? "one rank file each ($(ls "$T/launch/step0" | grep "\.gpr$" | tr '\n' ' '))"
rj launch 'import json,sys
d = json.load(sys.stdin); R = {r["rank"]: r for r in d["ranks"]}
assert sorted(R) == [0, 1, 2, 3], sorted(R)
for k, r in R.items():
    assert r["steps"]["count"] == 20 + 5 * k, (k, r["steps"])
n = {x["name"]: x["count_all"] for x in d["nvtx"]}  # worker_rK: before the steps
assert all(n.get("worker_r%d" % k) == 1 for k in range(4)), n
assert R[2]["outcome"] == "exit 3" and R[1]["outcome"] == "exit 0", [R[k]["outcome"] for k in R]
assert not d["launchers"]' 2>"$T/launch.err"
ok $? "each with its own steps (20 + 5 x rank), names kept apart, rank 2's exit status 3 $(tail -1 "$T/launch.err")"
GPUPROF_RANK=1 "$B/gpuprof" run --modes=nvtx --output="$T/launch2" -- sh -c "for r in 4 5 5; do RANK=\$r '$C' worker & done; wait; exit 7" >/dev/null 2>&1
[ $? = 7 ]; ok $? "a task whose ranks are all its launcher's (task 1 of a two-node torchrun) keeps its exit status"
ls "$T/launch2/step0" | grep "\.gpr$" | tr '\n' ' ' | grep -qxE "launcher1.gpr rank4.gpr rank5.gpr rank5.pid[0-9]+.gpr "
ok $? "its own file is launcher1.gpr, not rank1.gpr (another node's rank 1); the second rank-5 process has a file of its own ($(ls "$T/launch2/step0" | grep "\.gpr$" | tr '\n' ' '))"
rj launch2 'import json,sys
d = json.load(sys.stdin)
assert [r["rank"] for r in d["ranks"]] == [4, 5]
l = d["launchers"]; assert len(l) == 1 and l[0]["task"] == 1 and l[0]["wait_status"] == 7 << 8 and l[0]["other_processes"] == 0, l
p = d["ranks"][1]["processes"]; assert p["recorded"] == 2 and sum(x["trainer"] for x in p["listed"]) == 1, p
assert any("launcher" in f["title"] and "7" in f["title"] for f in d["findings"]), d["findings"]' 2>"$T/launch2.err"
ok $? "the report names the failed launcher and lists both rank-5 processes $(tail -1 "$T/launch2.err")"
# a launcher whose worker with the task's RANK fails while the launcher exits 0: the
# rank's outcome is the worker's own (issue 30 item 8)
"$B/gpuprof" run --modes=nvtx --output="$T/launch6" -- sh -c "RANK=0 EXIT=5 '$C' worker; exit 0" >/dev/null 2>&1
rj launch6 'import json,sys
r = json.load(sys.stdin)["ranks"][0]
assert r["rank"] == 0 and r["outcome"] == "exit 5" and r["steps"]["count"] == 20, (r["outcome"], r["steps"]["count"])' 2>"$T/launch6.err"
ok $? "a launcher's RANK=0 worker exits 5, the launcher 0: rank 0 is exit 5 $(tail -1 "$T/launch6.err")"
# issue 51 (R4-5): the task fails after its trainer ended well (a launcher exits 1, or
# dies of SIGSEGV, after its RANK=0 worker exited 0): the task's known failure is the
# rank's outcome, never hidden under the worker's own "exit 0"
for how in "exit 1" "kill -SEGV \$\$"; do
	"$B/gpuprof" run --modes=nvtx --output="$T/launchfail" -f -- sh -c "RANK=0 '$C' worker; $how" >/dev/null 2>&1
	HOW=$how rj launchfail 'import json,os,sys
d = json.load(sys.stdin); r = d["ranks"][0]
want = "exit 1" if os.environ["HOW"] == "exit 1" else "signal 11"
assert r["outcome"] == want and r["steps"]["count"] == 20, (r["outcome"], r["steps"]["count"])
assert d["findings"] and d["findings"][0]["id"] in ("failed", "killed"), d["findings"][:1]' 2>"$T/launchfail.err"
	ok $? "R4-5: a launcher that ends '$how' after its worker exits 0: the rank says so, first finding $(tail -1 "$T/launchfail.err")"
done
# issue 51 (R4-6): a helper with more NVTX ranges than the trainer (2000 short 'prefetch'
# ranges beside the program's 50 steps of 5 ms, modes without cuda) is not the trainer
"$B/gpuprof" run --modes=nvtx --output="$T/busyhelper" -- "$C" busyhelper >/dev/null 2>&1
rj busyhelper 'import json,sys
r = json.load(sys.stdin)["ranks"][0]
assert r["steps"]["range"] == "train_step" and r["steps"]["count"] == 50, r["steps"]
assert 4.5 < r["steps"]["median_ms"] < 50, r["steps"]["median_ms"]
p = r["processes"]["listed"]; assert p[0]["trainer"] and p[1]["steps"] == 2000, p' 2>"$T/busyhelper.err"
ok $? "R4-6: the program's 50 steps of 5 ms are the rank, the helper's 2000 ranges beside it $(tail -1 "$T/busyhelper.err")"
# a launcher without a RANK that touches NVTX (or CUDA) before its workers, as torchrun
# does on a GPU: the worker with the task's RANK records into a ring of its own
"$B/gpuprof" run --modes=nvtx --output="$T/launch4" -- sh -c "STEPS=100 '$C' worker & sleep 0.2; for r in 0 1; do RANK=\$r '$C' worker & done; wait" >/dev/null 2>&1
ls "$T/launch4/step0" | grep "\.gpr$" | tr '\n' ' ' | grep -qx "launcher0.gpr rank0.gpr rank1.gpr "
ok $? "a launcher holding the task's ring: rank 0 gets its own file, the task's is launcher0.gpr ($(ls "$T/launch4/step0" | grep "\.gpr$" | tr '\n' ' '))"
rj launch4 'import json,sys
d = json.load(sys.stdin); R = {r["rank"]: r for r in d["ranks"]}
assert sorted(R) == [0, 1] and R[0]["steps"]["count"] == 20 and R[1]["steps"]["count"] == 25, {k: R[k]["steps"]["count"] for k in R}' 2>"$T/launch4.err"
ok $? "with the workers' own steps (20 and 25) $(tail -1 "$T/launch4.err")"
# a rank killed by a signal, its zombie left a while by its launcher: the status is read
"$B/gpuprof" run --modes=nvtx --output="$T/launch5" -- python3 -c "import os, subprocess, time
p = subprocess.Popen(['$C', 'worker'], env=dict(os.environ, DIE='1', RANK='1'))
time.sleep(1.5); p.wait()" >/dev/null 2>&1
rj launch5 'import json,sys
R = {r["rank"]: r for r in json.load(sys.stdin)["ranks"]}
assert R[1]["outcome"] == "signal 9", R[1]["outcome"]' 2>"$T/launch5.err"
ok $? "a launcher's rank killed by SIGKILL: its status read from its zombie (signal 9) $(tail -1 "$T/launch5.err")"
printf "for r in 1 2; do STEPS=200 RANK=\$r '%s' worker & done\nsleep 30\n" "$C" >"$T/slow.sh"
"$B/gpuprof" run --modes=nvtx --output="$T/launch3" -- sh "$T/slow.sh" >/dev/null 2>&1 &
# the agent itself (gpuprof run alone is its parent, which reaps it and passes its death on)
sleep 0.5; pkill -KILL -f "^$B/gpuprof-agent -- sh $T/slow.sh"; wait $! 2>/dev/null
# the ranks go on (their parent, not the agent, started them) and finish: wait for them
for _ in $(seq 100); do pgrep -f "^$C worker" >/dev/null || break; sleep 0.2; done
"$B/gpuprof" salvage --spool="$T" >/dev/null 2>&1
rj launch3 'import json,sys
d = json.load(sys.stdin); R = {r["rank"]: r for r in d["ranks"]}
assert sorted(R) == [1, 2] and all(R[k]["steps"]["count"] == 200 for k in R), {k: R[k]["steps"] for k in R}
assert d["launchers"] and not d["launchers"][0]["complete"]' 2>"$T/launch3.err"
ok $? "the agent SIGKILLed: salvage recovers every rank's ring, all 200 steps each $(tail -1 "$T/launch3.err")"
# timing keeps only outermost ranges: a range left open in another domain (NCCL's) must
# not make the program's steps inner ones
"$B/gpuprof" run --modes=timing --output="$T/domopen" -- "$C" domainopen >/dev/null 2>&1
rj domopen 'import json,sys
r = json.load(sys.stdin)["ranks"][0]
assert r["steps"]["range"] == "train_step" and r["steps"]["count"] == 20, r["steps"]' 2>"$T/domopen.err"
ok $? "a range left open in its own domain leaves the default domain's steps outermost (20 steps in timing mode) $(tail -1 "$T/domopen.err")"
# the injected library without an agent (the plugin's environment-only fallback): the
# agent's names (a requeued job's .attempt step directory) and its byte cap
env NVTX_INJECTION64_PATH="$B/.libs/libgpuprof-inject.so" GPUPROF_MODES=nvtx GPUPROF_JOBDIR="$T/fb" \
	SLURM_RESTART_COUNT=2 GPUPROF_MAX_BYTES=200000 "$C" strings >/dev/null 2>&1
f=$T/fb/step0.attempt2/rank0.gpr
[ -f "$f" ]; ok $? "fallback: the rank file in the attempt's step directory ($(ls "$T/fb" 2>/dev/null | tr '\n' ' '))"
n=$("$B/gpuprof" report --format=json "$T/fb" 2>/dev/null | python3 -c "import json,sys; print(json.load(sys.stdin)['ranks'][0]['quality']['losses'].get('byte_cap', 0))")
[ "${n:-0}" -gt 0 ] && [ "$(stat -c %s "$f")" -lt 300000 ]; ok $? "fallback: the byte cap holds ($(stat -c %s "$f" 2>/dev/null) bytes, ${n:-0} records counted past it)"
# a fallback task that dies where the library's exit hook cannot run (SIGSEGV, _exit):
# its rank file (salvaged from the spool, as the epilog does) has no end record, and the
# plugin's node summary (stepd.c: node<N>.json, as the user at step end) has Slurm's
# wait status for the task: the report gives that, not "killed with its agent"
for c in "segv|11|signal 11" "exit4|1024|exit 4"; do
	IFS='|' read -r m ws want <<<"$c"
	rm -rf "$T/fb$m" "$T/sp$m"; mkdir -p "$T/sp$m"
	env NVTX_INJECTION64_PATH="$B/.libs/libgpuprof-inject.so" GPUPROF_MODES=nvtx GPUPROF_JOBDIR="$T/fb$m" \
		GPUPROF_SPOOL="$T/sp$m" SLURM_JOB_ID=77 "$C" "$m" >/dev/null 2>&1 & pid=$!
	wait $pid
	"$B/gpuprof" salvage --spool="$T/sp$m" --job=77 >/dev/null 2>&1
	printf '{"job": 77, "step": "0", "node": "n", "node_id": 0, "slurm_version": "22.05.8", "attempt": 0, "tasks": [{"task": 0, "rank": 0, "pid": %d, "wait_status": %d, "profiled": true}]}\n' \
		"$pid" "$ws" >"$T/fb$m/step0/node0.json"
	o=$("$B/gpuprof" report --format=json "$T/fb$m" 2>/dev/null | python3 -c "import json,sys; r=json.load(sys.stdin)['ranks'][0]; print(r['outcome'], r['complete'], r['steps']['count'])")
	case $o in "$want (Slurm's status; no end record) False 20") r=0 ;; *) r=1 ;; esac
	ok $r "fallback task ended by $m: the report has Slurm's status from node0.json ($o)"
	"$B/gpuprof" report "$T/fb$m" 2>/dev/null | grep -q "killed with its agent"
	ok $(( $? != 0 ? 0 : 1 )) "fallback task ended by $m: not 'killed with its agent'"
done
cap fork; ok $? "a forked worker emitting NVTX"
[ "$(nvtx_json fork parent_range)" = 1 ] && [ "$(nvtx_json fork child_range)" = 0 ]
ok $? "the parent's range is recorded, the forked child's are not"
# threads through the lanes: 20 one after another, each ending inside a range (its lane
# given back, the open range a push); then 12 at once, 4 more than the lanes
cap churn; ok $? "20 threads ending inside a range, then 12 at once"
[ "$(count churn nvtx_push)" = "$(( 20 + $(count churn nvtx_pop) ))" ]
ok $? "each ended thread's open range is a push ($(count churn nvtx_push) pushes, $(count churn nvtx_pop) pops)"
[ "$(( $(count churn nvtx_range) + $(count churn nvtx_pop) ))" = $(( 20 + 24000 )) ] && [ "$(count churn nvtx_pop)" -gt 0 ]
ok $? "every closed range recorded, from lanes or, past the 8 lanes, as pushes and pops ($(count churn nvtx_range) + $(count churn nvtx_pop))"
[ "$(nvtx_json churn many_inner)" = 12000 ] && [ "$(nvtx_json churn many)" = 12000 ] && [ "$(nvtx_json churn churn_closed)" = 20 ]
ok $? "the report pairs them all: 12 000 + 12 000 + 20"
"$B/gpuprof" dump --events "$T/churn/step0/rank0.gpr" | grep "^nvtx_range" | grep -q "c=42 d=$(python3 -c 'print((1 << 63) | (0xff00ff00 << 32) | 7)')"
ok $? "a range record keeps its payload, colour and category"
rj churn "import json,sys; r=json.load(sys.stdin); d={n['name']: n for n in r['nvtx']}; sys.exit(0 if 'churn_open' not in d else 1)"
ok $? "the ranges left open are not counted as closed"
"$B/gpuprof" export --format=chrome --output="$T/churn.json" "$T/churn" 2>/dev/null
python3 -c "import json,sys; t=json.load(open(sys.argv[1]))['traceEvents']; n=sum(1 for e in t if e.get('name')=='churn_open' and e.get('args',{}).get('open_at_end')); sys.exit(0 if n == 20 else 1)" "$T/churn.json"
ok $? "and the trace shows the 20 of them open at the end"

grep -q "^bad_levels 0$" "$T/churn.out"
ok $? "each thread's pushes return its own nesting levels, on stacks of ended threads too ($(grep bad_levels "$T/churn.out"))"
# more threads at once than the table of thread states has slots, twice (the second 300
# on the first's stacks): each finds its own state, the first level 0 whatever an ended
# thread on its stack left open
cap tslots; ok $? "300 threads at once, ending inside a range, twice"
grep -q "^bad_levels 0$" "$T/tslots.out"; ok $? "every push returned the thread's own level ($(grep bad_levels "$T/tslots.out"))"
[ "$(nvtx_json tslots tslot)" = 6000 ] && [ "$(nvtx_json tslots tslot_inner)" = 6000 ]
ok $? "and the report pairs every closed range: 6 000 + 6 000"

# a thread that ends with a raw exit inside a range (no key destructors), then one on its
# stack: three times (the unit tier's t_tslots cannot, under its sanitizers)
cap rawexit; ok $? "3 threads ending with a raw exit inside a range, each followed by one on its stack"
grep -q "^bad_levels 0$" "$T/rawexit.out"; ok $? "each thread after a raw exit starts at level 0 ($(grep bad_levels "$T/rawexit.out"))"
[ "$(nvtx_json rawexit after_raw)" = 3 ] && [ "$(nvtx_json rawexit after_raw_inner)" = 3 ]
ok $? "and the report pairs their ranges: 3 + 3"

cap pops; ok $? "pops without pushes"
grep -q "unbalanced_pop_nonnegative 0" "$T/pops.out"; ok $? "an unbalanced pop returns a negative level, as NVTX specifies"
[ -z "$(count pops nvtx_pop)" ]; ok $? "and records nothing"

cap burst; ok $? "an unpaced burst of 2x10^6 records"
# a range a record (the threads' lanes, then the shared slots once a lane is full)
sum=$(( $(count burst nvtx_range) + $(drops burst) ))
[ "$sum" -ge 1000000 ] && [ "$sum" -le 1000003 ]; ok $? "recorded + dropped = produced ($sum; dropped $(drops burst))"
# whether the writer falls behind depends on the machine: the report must agree either way
if [ "$(drops burst)" -gt 0 ]; then
	"$B/gpuprof" report "$T/burst" | unwrap | grep -q "records dropped: $(drops burst) with the ring full"
else
	"$B/gpuprof" report "$T/burst" | grep -q "nothing dropped"
fi
ok $? "the report shows the drops ($(drops burst))"

# a TSC that stops agreeing with the kernel's clock (forced: GPUPROF_TEST_CLOCK=tsc-jump puts
# its time 5 ms ahead as soon as it is in use) is dropped at its next check, and the report
# says which times may be off and by how much
STEPS=150 GPUPROF_TEST_CLOCK=tsc-jump "$B/gpuprof" run --modes=nvtx --output="$T/jump" -- "$C" worker >"$T/jump.out" 2>&1
ok $? "a run whose TSC jumps"
[ "$("$B/gpuprof" dump --events "$T/jump/step0/rank0.gpr" | grep -c "^clock ")" = 1 ]
ok $? "one clock record: the TSC is dropped once"
rj jump "import json,sys; c=json.load(sys.stdin)['ranks'][0]['quality']['clock_dropped']; sys.exit(0 if c and -5.2e6 < c['error_ns'] < -4.8e6 and 0 < c['interval_s'] < 1 and 0 < c['at_s'] < 5 else 1)"
ok $? "report.json: quality.clock_dropped says -5 ms, when, and over what interval"
"$B/gpuprof" report "$T/jump" | grep -qE "clock: the TSC was -(4[89][0-9]{2}|5[01][0-9]{2})\.[0-9] us off the kernel's clock at"
ok $? "report.txt says it under data quality"
rj threads "import json,sys; sys.exit(0 if json.load(sys.stdin)['ranks'][0]['quality']['clock_dropped'] is None else 1)"
ok $? "a run whose clock held says null"
done_testing
