#!/bin/bash
# The report on hostile rank files (tests/fuzz/mkhostile.c): valid, checksummed files
# crafted to make a careless reader slow, large or wrong. The report runs in epilogs
# with deadlines and on shared login nodes, so each must finish well inside a hang guard
# (timeout) and a memory limit (ulimit -v), ignore and count what is impossible, and
# never hang on a file that is not a regular one.
. "$(dirname "$0")/tap.sh"
B=${GP_BUILD:?}
H=$B/tests/fuzz/mkhostile
[ -x "$H" ] || skip_all "mkhostile not built"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
# 600 MiB of address space and 120 s: the files below took 21 GB and minutes to hours
# in readers that allocate per string id or scan every open range per pop
report() { (ulimit -v 614400; timeout 120 "$B/gpuprof" report --format=json "$@"); }
field() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$1" "$2"; }

for c in "strings 1000000" "pops 200000" "ends 200000" "threads 200000" "rangenames 200000" "ts0 100000" "absurd 1000"; do
	set -- $c
	"$H" "$1" "$2" "$T/$1" || { ok 1 "mkhostile $1"; continue; }
	s=$(date +%s.%N)
	report "$T/$1" >"$T/$1.json" 2>"$T/$1.err"
	rc=$?
	ok $rc "$1 x $2 ($(stat -c %s "$T/$1/step0/rank0.gpr") bytes): report within 600 MiB and the hang guard ($(python3 -c "print(round($(date +%s.%N) - $s, 2))") s)"
	[ $rc -eq 0 ] || sed 's/^/# /' "$T/$1.err" | tail -5
done
# one kernel launched 10^6 times, every launch alike: the medians of equal values were
# quadratic (533 s); linear they take a fraction of a second, so 30 s is a hang guard
"$H" samelaunch 1000000 "$T/same" && s=$(date +%s.%N) &&
	(ulimit -v 614400; timeout 30 "$B/gpuprof" report --format=json "$T/same" >"$T/same.json" 2>"$T/same.err")
ok $? "samelaunch x 1000000 ($(stat -c %s "$T/same/step0/rank0.gpr") bytes): report within 30 s ($(python3 -c "print(round($(date +%s.%N) - $s, 2))") s)"
[ "$(field "$T/same.json" "(j['ranks'][0]['gpu']['kernels'], round(j['ranks'][0]['gpu']['launch_latency_us_median'], 3))" 2>/dev/null)" = "(1000000, 2.0)" ]
ok $? "samelaunch: 10^6 kernels, launch latency 2 us ($(field "$T/same.json" "(j['ranks'][0]['gpu']['kernels'], j['ranks'][0]['gpu']['launch_latency_us_median'])" 2>&1 | tail -1))"
# issue 51 #11: an almost periodic launch sequence (one kernel a step at a place that
# moves) made the template search quadratic: 150 000 launches a step took 72 s here (100 000
# took 118 s on the reviewer's machine); linear it takes 4-8 s, so 30 s is a hang guard
"$H" moving 150000 "$T/moving" && s=$(date +%s.%N) &&
	timeout 30 "$B/gpuprof" report --format=json "$T/moving" >"$T/moving.json" 2>"$T/moving.err"
ok $? "moving x 150000 (10 steps, 1 500 010 launches): report within 30 s ($(python3 -c "print(round($(date +%s.%N) - $s, 2))") s)"
# issue 51 #12: more ranks than the report's memory holds (5 000 ranks of 6 KiB of results
# each under a 25 MB limit; 2 000 of 15.6 KiB before the rank's text went to text.h): it
# said "out of memory ... no rank files"
"$B/bench/synth-job" --ranks 5000 --events 100 --out "$T/many" >/dev/null 2>&1
(ulimit -v 25000; "$B/gpuprof" report --quiet "$T/many" 2>"$T/many.err"); rc=$?
[ $rc = 1 ] && grep -q "out of memory: the results of 5000 rank files need [0-9]* MiB" "$T/many.err" && ! grep -q "no rank files" "$T/many.err"
ok $? "5 000 ranks past a 25 MB limit: the report says its memory ran out for 5 000 rank files (exit $rc: $(head -c 160 "$T/many.err"))"
[ "$(field "$T/strings.json" "[r['name'] for r in j['nvtx']]")" = "['last_string']" ]
ok $? "strings: the last of 10^6 names is kept"
[ "$(field "$T/pops.json" "[r['count'] for r in j['nvtx']]")" = "[200000]" ]
ok $? "pops: the nested ranges are paired, the pops of another thread match nothing"
[ "$(field "$T/ts0.json" "j['ranks'][0]['quality']['bad_records']")" = 200000 ]
ok $? "ts0: records with CUPTI's unknown timestamp are counted and left out"
[ "$(field "$T/ts0.json" "round(j['ranks'][0]['steps']['median_ms'], 3)")" = 10.0 ]
ok $? "ts0: the steps are still 10 ms"
[ "$(field "$T/absurd.json" "j['ranks'][0]['quality']['bad_records']")" = 4000 ]
ok $? "absurd: UINT64_MAX durations, backwards ranges, 2^63-byte allocations and far-future kernels counted (4 x 1000)"
[ "$(field "$T/absurd.json" "(round(j['ranks'][0]['steps']['median_ms'], 3), j['ranks'][0]['memory']['peak_bytes'])")" = "(10.0, None)" ]
ok $? "absurd: the step time and the memory peak are those of the good records (none of them an allocation: null, not measured)"
"$B/gpuprof" report "$T/absurd" | unwrap | grep -q "4000 records with impossible times or sizes ignored"
ok $? "absurd: data quality says so"
# the exports read through the same loader: the impossible records are not in them either
"$B/gpuprof" export --format=chrome --output="$T/absurd.trace.json" "$T/absurd" &&
	python3 -c 'import json,sys; ev=json.load(open(sys.argv[1]))["traceEvents"]; k=[e for e in ev if e.get("cat")=="kernel"]; assert len(k)==20 and max(e["dur"] for e in k) < 5000, len(k)' "$T/absurd.trace.json"
ok $? "absurd: the Chrome trace holds the 20 good kernels only"
"$B/gpuprof" export --format=memviz --output="$T/absurd.pickle" "$T/absurd" 2>/dev/null
ok $(( $? != 0 ? 0 : 1 )) "absurd: memviz has no 2^63-byte allocation to show (no memory records: an error)"

# Faults while a rank file is read (a large one: the reader takes a second or more).
# holds PID FILE: wait until process PID has FILE open or mapped (5 s at most)
holds() {
	for _ in $(seq 500); do
		{ grep -qF "$2" "/proc/$1/maps" || ls -l "/proc/$1/fd" | grep -qF "$2"; } 2>/dev/null && return 0
		sleep 0.01
	done
	return 1
}
# cut shorter while read (a writer's ftruncate, an admin's truncate): a mapping's reader
# died of SIGBUS, also root reading a user's group-readable job
"$H" noise 20000 "$T/shrink" >/dev/null
f=$T/shrink/step0/rank0.gpr
"$B/gpuprof" report --format=json "$T/shrink" >"$T/shrink.json" 2>"$T/shrink.err" & p=$!
holds $p "$f"; truncate -s 300000 "$f"; kill -0 $p 2>/dev/null; during=$?
wait $p; rc=$?
ok $during "the rank file was cut while the report read it"
ok $rc "and the report finished (exit $rc; 135 is SIGBUS)"
[ "$(field "$T/shrink.json" "j['ranks'][0]['quality']['truncated']" 2>/dev/null)" = True ]
ok $? "the report says the file ends early"
# replaced while read (the agent's SIGTERM snapshot summarised while salvage renames the
# whole file over it): the summary is of what was read, never of the file now there
"$H" noise 20000 "$T/swap" >/dev/null && "$H" noise 50 "$T/swapB" >/dev/null
f=$T/swap/step0/rank0.gpr
"$B/gpuprof" summarize "$f" 2>"$T/swap.err" & p=$!
holds $p "$f"; mv "$T/swapB/step0/rank0.gpr" "$f"; kill -0 $p 2>/dev/null; during=$?
wait $p; rc=$?
ok $during "the rank file was replaced while summarize read it"
ok $rc "summarize exits 0 (exit $rc)"
"$B/gpuprof" report --format=json "$T/swap" >"$T/swap.json" 2>>"$T/swap.err"
n=$(field "$T/swap.json" "j['ranks'][0]['steps']['count']")
[ "$n" = 50 ]; ok $? "the report has the steps of the file there now (50; got $n, 20000 is the one read before)"

# a FIFO, a directory and a file that is not a rank file among real ones: the report
# finishes on the rest and says which could not be read
mkdir -p "$T/mixed/step0"
cp "$T/absurd/step0/rank0.gpr" "$T/mixed/step0/rank0.gpr"
mkfifo "$T/mixed/step0/rank5.gpr"
mkdir "$T/mixed/step0/rank6.gpr"
echo "not a rank file" >"$T/mixed/step0/rank7.gpr"
timeout 60 "$B/gpuprof" report "$T/mixed" >"$T/mixed.txt" 2>"$T/mixed.err"
ok $? "a FIFO named rank5.gpr does not hang the report"
grep -q "3 rank files could not be read" "$T/mixed.txt"; ok $? "data quality counts the 3 unreadable files"
grep -q "not a regular file" "$T/mixed.err"; ok $? "and stderr says why"
python3 -c "import json,sys; j=json.load(open(sys.argv[1])); assert j['unreadable_rank_files'] == 3" "$T/mixed/report.json"
ok $? "report.json carries the count"
mkdir -p "$T/none/step0"; mkfifo "$T/none/step0/rank0.gpr"
timeout 60 "$B/gpuprof" report "$T/none" 2>"$T/none.err"
[ $? -ne 124 ] && grep -q "no readable rank file" "$T/none.err"; ok $? "a job of only unreadable files fails with a message"
# Names the program chose, in every output (mkhostile names): kernel, operation, NVTX,
# thread and stream names with terminal escapes, other control characters, bytes that are
# not UTF-8 (the collector cuts a name at 1 024 bytes, inside a character where it falls),
# HTML and a name of 5 000 bytes. Every file is valid UTF-8 with no control character but
# tab, CR and LF, each JSON file parses and the CSV reads back row by row.
F=$(cd "$(dirname "$0")/../fixtures" && pwd)
"$H" names 12 "$T/names" >/dev/null
"$B/gpuprof" report "$T/names" >"$T/names.txt" 2>"$T/names.err" &&
	"$B/gpuprof" report --format=json "$T/names" >"$T/names.json" 2>>"$T/names.err" &&
	"$B/gpuprof" export --format=html -o "$T/names.html" "$T/names" 2>>"$T/names.err" &&
	"$B/gpuprof" export --format=csv -o "$T/names.csv" "$T/names" 2>>"$T/names.err" &&
	"$B/gpuprof" export --format=chrome -o "$T/names.trace.json" "$T/names" 2>>"$T/names.err" &&
	"$B/gpuprof" export --format=kineto -o "$T/names.kt" "$T/names" 2>>"$T/names.err"
ok $? "hostile names: the report and every export are written"
clean() { # FILE [json|csv|term]: valid UTF-8, no control character but \t \r \n, and its syntax
	python3 - "$@" <<'PY'
import csv, io, json, re, sys
raw = open(sys.argv[1], "rb").read()
try:
    text = raw.decode("utf-8")
except UnicodeDecodeError as e:
    sys.exit("not UTF-8 at byte %d: %r" % (e.start, raw[max(0, e.start - 30):e.start + 10]))
kind = sys.argv[2] if len(sys.argv) > 2 else ""
# no C1 (U+009B is a CSI: `cat` or `less -R` of the file would act on it; JSON keeps it as
# a \u escape); term: printed straight to a terminal, so no tab or CR either
bad = re.search(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]" if kind == "term" else
                r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]", text)
if bad:
    sys.exit("control character %r at %d: %r" % (bad.group(), bad.start(), text[max(0, bad.start() - 30):bad.start() + 10]))
# the bidirectional controls (U+202A-U+202E, U+2066-U+2069) reorder what a terminal, a
# browser or an editor shows after them (Trojan Source, CVE-2021-42574): never raw
bad = re.search("[\u202a-\u202e\u2066-\u2069]", text)
if bad:
    sys.exit("bidirectional control U+%04X at %d: %r" % (ord(bad.group()), bad.start(), text[max(0, bad.start() - 30):bad.start() + 10]))
if kind == "json":
    json.loads(text)
elif kind == "csv":
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert len(rows) == 4 and {len(r) for r in rows} == {14}, [len(r) for r in rows]
PY
}
out=$(clean "$T/names.json" json 2>&1); ok $? "hostile names: report.json ${out:-clean}"
out=$(clean "$T/names.trace.json" json 2>&1); ok $? "hostile names: the Chrome trace ${out:-clean}"
out=$(clean "$T/names.kt/step0/rank0.json" json 2>&1); ok $? "hostile names: the Kineto trace ${out:-clean}"
# ... and the names kept: the thread's name, C1's CSI (U+009B) and a bidirectional control
# in it, reads back whole from both traces' JSON (escaped, not replaced or dropped)
python3 - "$T/names.trace.json" "$T/names.kt/step0/rank0.json" <<'PY'
import json, sys
want = "\x1b[7mmain<i>\r\u202d\u009b31m\x1b]8;;http://e.vil/\x1b\\link\x1b]8;;\x1b\\"
for f in sys.argv[1:]:
    ev = json.load(open(f))["traceEvents"]
    got = [e["args"]["name"] for e in ev if e.get("name") == "thread_name" and "main<i>" in e["args"]["name"]]
    assert got and all(g.startswith(want) for g in got), (f, got)
PY
ok $? "hostile names: the thread's name, U+009B and U+202D in it, whole in the Chrome and Kineto traces"
out=$(clean "$T/names.html" 2>&1); ok $? "hostile names: the HTML ${out:-clean}"
out=$(clean "$T/names.csv" csv 2>&1); ok $? "hostile names: the kernels' CSV ${out:-clean}"
out=$(clean "$T/names.txt" 2>&1); ok $? "hostile names: report.txt ${out:-clean}"
grep -q '<script>' "$T/names.html"; ok $((! $?)) "hostile names: no tag of a name's in the HTML"
# ... and the commands that print a program's strings straight to a terminal: gpuprof dump
# --strings (each byte a terminal would act on as \xNN) and gpuprof top (as '?', as the
# report writes them): no escape (CSI, OSC 8 link), no C0 but the newline, no DEL, no C1
# (U+009B is a CSI too), no bidirectional control
"$B/gpuprof" dump --strings "$T/names/step0/rank0.gpr" >"$T/names.dump" 2>&1
out=$(clean "$T/names.dump" term 2>&1) && grep -qF 'string 14 +0 \x1b[7mmain<i>\x0d\xe2\x80\xad\xc2\x9b31m\x1b]8;;http://' "$T/names.dump"
ok $? "hostile names: gpuprof dump --strings ${out:-shows each as \\xNN} ($(grep -m1 '^string 14' "$T/names.dump"))"
mkdir -p "$T/livenames/step0"
python3 - "$T/livenames/step0/rank0.live.json" <<'PY'
import json, sys, time
now = time.time()
ev = "\x1b[2J\x1b]8;;http://e.vil/\x1b\\x\x1b]8;;\x1b\\\x07\u009b31m\u202etxt.exe\x7f"
d = {"gpuprof_live": 1, "job": "77" + ev, "step": "0" + ev, "rank": 0, "node": "n0" + ev, "pid": 100,
     "state": "run" + ev, "wait_status": 0, "seq": 9, "started": now - 600, "written": now - 1,
     "elapsed_s": 600, "interval_s": 30, "step_name": "train" + ev, "step_source": "nvtx",
     "step_basis": "gpu", "steps": 5000, "warmup": 3, "median_ms": 100, "p95_ms": 120, "mean_ms": 101,
     "last_steps": 300, "last_median_ms": 260, "last_from_s": 570, "last_to_s": 600,
     "first_step_s": 20, "slow_since_s": 580, "slow_ratio": 2.6, "slow_base_ms": 100, "gpus": 1,
     "nvml_samples": 600, "last_nvml_samples": 30, "busy_pct": 90, "last_busy_pct": 50,
     "idle_startup_s": 15, "idle_steps_s": 40, "mem_used_bytes": 20 << 30, "mem_peak_bytes": 21 << 30,
     "mem_total_bytes": 80 << 30, "torch_allocated_bytes": 0, "torch_reserved_bytes": 0,
     "torch_peak_bytes": 0, "lost": 0, "lost_by": "", "faults": 0, "agent_cpu_s": 0.5,
     "agent_cpu_last_ms": 20, "findings": [{"id": "slowdown" + ev, "text": "steps take 260 ms" + ev}]}
# raw UTF-8 (C1, bidi) as a collector may write it, not \u escapes the reader makes '?'
open(sys.argv[1], "w", encoding="utf-8").write(json.dumps(d, ensure_ascii=False) + "\n")
PY
"$B/gpuprof" top --once "$T/livenames" >"$T/livenames.top" 2>&1
out=$(clean "$T/livenames.top" term 2>&1) && grep -q "^first finding: rank 0: slowdown?" "$T/livenames.top" && grep -q " 0 n0?" "$T/livenames.top"
ok $? "hostile names: gpuprof top ${out:-shows them as '?'} ($(grep -m1 '^first finding' "$T/livenames.top" | cut -c1-100))"
# the same file under ledger --running (root's view of every running job): the finding's
# id and text went out raw (C1 CSI as U+009B and as a raw 0x9b byte, ESC)
mkdir -p "$T/lr/gpuprof-77/step0"
cp "$T/livenames/step0/rank0.live.json" "$T/lr/gpuprof-77/step0/"
python3 - "$T/lr/gpuprof-77/step0/rank0.live.json" <<'PY'
import sys
p = sys.argv[1]; b = open(p, "rb").read()
b = b.replace(b"steps take 260 ms", b"steps \x9b31m take \xc2\x9b2J 260 ms")
b = b.replace(b'"job": "77', b'"job": "77", "x": "', 1)  # the job it is listed as
open(p, "wb").write(b)
PY
printf '77|bob|a|p|1:00|%s\n' "$T/lr" >"$T/lr.sq"
"$B/gpuprof" ledger --running --from-file "$T/lr.sq" >"$T/lr.out" 2>&1
out=$(clean "$T/lr.out" term 2>&1) && grep -q "rank 0 slowdown?.*: steps ?31m take ?2J 260 ms" "$T/lr.out"
ok $? "hostile names: ledger --running ${out:-shows the id and text of a live finding as '?'} ($(grep -m1 'slowdown' "$T/lr.out" | cut -c1-160 | cat -v))"
# rank files of two jobs in one directory (copied together by hand, a job id reused by
# another cluster): the report says so rather than one job's report of the other's ranks
mkdir -p "$T/twojobs/step0"
cp "$F/ddp-imbalanced/step0/rank0.gpr" "$F/ddp-clean/step0/rank1.gpr" "$T/twojobs/step0/"
"$B/gpuprof" report "$T/twojobs" >"$T/twojobs.txt" 2>"$T/twojobs.err"
grep -q 77210 "$T/twojobs.txt" "$T/twojobs.err" && grep -q 7725 "$T/twojobs.txt" "$T/twojobs.err"
ok $? "rank files of jobs 77210 and 7725 in one directory: the report names both ($(head -1 "$T/twojobs.txt"))"
# the same rank twice (a file copied beside itself): never "2 ranks share one GPU (ranks 0, 0)"
mkdir -p "$T/twice/step0"
cp "$F/field-sgd-sync/step0/rank0.gpr" "$T/twice/step0/rank0.gpr"
cp "$F/field-sgd-sync/step0/rank0.gpr" "$T/twice/step0/rank1.gpr"
"$B/gpuprof" report --format=json "$T/twice" >"$T/twice.json" 2>"$T/twice.err"
python3 -c 'import json,sys; f=json.load(open(sys.argv[1]))["findings"]; sys.exit(any(x["id"] == "gpu_shared" for x in f))' "$T/twice.json"
ok $? "one rank file twice: no gpu_shared finding ($(python3 -c 'import json,sys; print([x["title"] for x in json.load(open(sys.argv[1]))["findings"]][:1])' "$T/twice.json"))"
# ... and both said where a program reads them: report.json's keys (not only stderr)
"$B/gpuprof" report --format=json "$T/twojobs" >"$T/twojobs.json" 2>/dev/null
python3 - "$T/twice.json" "$T/twojobs.json" <<'PY'
import json, sys
t, j = (json.load(open(f)) for f in sys.argv[1:3])
assert t["copies_left_out"] == 1 and t["other_job_rank_files"] == 0, t["copies_left_out"]
assert j["other_job_rank_files"] == 1 and j["other_job"] in ("7725", "77210"), j["other_job"]
assert j["copies_left_out"] == 0
PY
ok $? "report.json: copies_left_out 1 for the copy, other_job_rank_files 1 and other_job for two jobs"
# names the user chose, quoted in a message on stderr: never a raw terminal escape (a file
# "rank9<ESC>[31m.gpr" beside the rank files, a directory named with one, a value typed):
# an admin reading a user's job got its title set and screen cleared
esc=$'\e'
mkdir -p "$T/escmsg/step0" "$T/esc${esc}]0;pwn${esc}[2J"
cp "$F/clean/step0/rank0.gpr" "$T/escmsg/step0/"
printf junk >"$T/escmsg/step0/rank9${esc}[31m.gpr"
{
	"$B/gpuprof" report "$T/escmsg" >/dev/null
	"$B/gpuprof" top --once "$T/esc${esc}]0;pwn${esc}[2J"
	"$B/gpuprof" report --steps-from="${esc}[2J" "$T/escmsg"
	"$B/gpuprof" export --format=chrome --output=- "$T/nosuch${esc}[2J"
} >"$T/escmsg.err" 2>&1
n=$(grep -c "$esc" "$T/escmsg.err")
[ "$n" = 0 ] && grep -q 'rank9?\[31m.gpr: not a gpuprof rank file' "$T/escmsg.err"
ok $? "messages quoting a user's names hold no raw escape ($n lines did; $(head -1 "$T/escmsg.err" | cut -c1-90))"
# a chunk of one rank's file overwritten (4 bytes of a 2-rank job's rank 0): its lost
# records are not taken for a shorter run: the rank is called damaged, and the job's step
# median is the whole rank's (it moved 6.980 -> 8.092 ms "(mixed)", rank 0 "complete")
cp -r "$F/ddp-clean" "$T/damaged"
printf '\xff\x00\xff\x00' | dd of="$T/damaged/step0/rank0.gpr" bs=1 seek=45000 conv=notrunc 2>/dev/null
"$B/gpuprof" report "$T/damaged" >"$T/damaged.txt" 2>/dev/null
"$B/gpuprof" report --format=json "$T/damaged" >"$T/damaged.json" 2>/dev/null
"$B/gpuprof" report --format=json "$F/ddp-clean" 2>/dev/null >"$T/whole.json"
python3 - "$T/damaged.json" "$T/whole.json" <<'PY'
import json, sys
d, w = (json.load(open(f)) for f in sys.argv[1:3])
r0, r1 = d["ranks"][0], [r for r in w["ranks"] if r["rank"] == 1][0]
assert r0["quality"]["corrupt_chunks"] >= 1, r0["quality"]
assert d["step_median_left_out"] == 1 and w["step_median_left_out"] == 0
assert abs(d["step_median_ms"] - r1["steps"]["median_ms"]) < 1e-6, (d["step_median_ms"], r1["steps"]["median_ms"])
PY
rc=$?
[ $rc = 0 ] && grep -q "^rank 0: damaged" "$T/damaged.txt" &&
	tr -s '\n ' '  ' <"$T/damaged.txt" | grep -q "job median [0-9.]* ms (gpu); damaged ranks left out of it"
ok $? "a rank file with a corrupt chunk: the rank damaged, left out of the job's step median"
# names a spreadsheet would take for formulas (=HYPERLINK, +cmd|, @SUM, -2+3+cmd|) in
# kernel and operation names: every table of the CSV export hands them over as text (a
# quote first, as the ledger's CSV), never as a formula; numbers stay numbers
if [ -x "$B/tests/fuzz/mkhostile" ]; then
	"$B/tests/fuzz/mkhostile" csvinj 12 "$T/csvinj" >/dev/null 2>&1
	for t in kernels ranks findings; do
		"$B/gpuprof" export --format=csv --table=$t --output="$T/csvinj.$t.csv" "$T/csvinj" 2>/dev/null
	done
	out=$(python3 - "$T"/csvinj.*.csv <<'PY'
import csv, re, sys
bad, cells = [], 0
for f in sys.argv[1:]:
    for row in csv.reader(open(f, newline="", encoding="utf-8")):
        for c in row:
            cells += 1
            if c[:1] in ("=", "+", "@", "\t", "\r") or (c[:1] == "-" and c != "-" and not re.fullmatch(r"-[0-9.e+-]+", c)):
                bad.append(c[:40])
print("%d cells, %d formulas: %s" % (cells, len(bad), bad[:3]))
sys.exit(1 if bad or cells < 50 else 0)
PY
)
	ok $? "CSV export: no cell a spreadsheet takes for a formula ($out)"
else
	skip "mkhostile not built"
fi
# a user's live files with finite but absurd figures (busy_pct 1.7e308 on 3 ranks summed
# to inf, "busy_pct": inf in the JSON; elapsed 1.7e308 through lround; 2^40 steps read as
# 0), and one over the size cap (its rank vanished from top uncounted): each figure
# dropped at parse, JSON stays JSON, the big file counted
mkdir -p "$T/lb/gpuprof-600/step0"
python3 - "$T/lb/gpuprof-600/step0" <<'PY'
import json, sys, time
now = time.time()
for r in range(3):
    x = {"gpuprof_live": 1, "job": "600", "step": "0", "rank": r, "node": "n1", "pid": 1 + r,
         "state": "running", "seq": 1, "started": now - 100, "written": now, "elapsed_s": 1.7e308,
         "interval_s": 30, "steps": 2 ** 40, "median_ms": 1.7e308, "last_steps": 10,
         "last_median_ms": 1.7e308, "slow_ratio": 1.7e308, "gpus": 1, "busy_pct": 1.7e308,
         "last_busy_pct": -50, "lost": 2 ** 64 - 1, "findings": []}
    open("%s/rank%d.live.json" % (sys.argv[1], r), "w").write(json.dumps(x) + "\n")
x["rank"] = 3
x["lost_by"] = "x" * 70000
open("%s/rank3.live.json" % sys.argv[1], "w").write(json.dumps(x) + "\n")
PY
printf '600|bob|a|p|1:00|%s\n' "$T/lb" >"$T/livebig.sq"
"$B/gpuprof" report -f json "$T/lb/gpuprof-600" >"$T/livebig.json" 2>"$T/livebig.err"
"$B/gpuprof" ledger --running --from-file "$T/livebig.sq" -f json >"$T/livebig.lr" 2>>"$T/livebig.err"
"$B/gpuprof" report "$T/lb/gpuprof-600" >"$T/livebig.txt" 2>>"$T/livebig.err"
"$B/gpuprof" top --once "$T/lb/gpuprof-600" >"$T/livebig.top" 2>>"$T/livebig.err"
out=$(python3 - "$T/livebig.json" "$T/livebig.lr" <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); lr = json.load(open(sys.argv[2]))["running"][0]
r = j["ranks"][0]
# a dropped busy share is not measured (null: no rank's sample counts), a dropped count 0
bad = [k for k, v, want in (("busy", j["busy_pct"], None), ("lr busy", lr["busy_pct"], None),
       ("elapsed", j["elapsed_s"], 0), ("steps", r["steps"]["n"], 0),
       ("last busy", r["gpu"]["last"]["busy_pct"], None)) if v != want]
print("busy %s, ledger busy %s, steps %s%s" % (j["busy_pct"], lr["busy_pct"], r["steps"]["n"], " bad: %s" % bad if bad else ""))
sys.exit(1 if bad or len(j["ranks"]) != 3 else 0)
PY
) && grep -q " 0:00:00 so far" "$T/livebig.txt" &&
	grep -q "^1 live file(s) not read, their ranks not shown: 1 over 64 KiB" "$T/livebig.top"
ok $? "absurd live figures dropped at parse, the JSON valid (${out:-$(head -c 300 "$T/livebig.err")}); a live file over the cap counted in top"
done_testing
