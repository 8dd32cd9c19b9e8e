#!/bin/bash
# The command line as the GNU coding standards have it (issue 32): getopt_long for every
# command, every option described in COMMAND --help and in gpuprof(1), usage errors one
# line and exit status 2, -- and abbreviations; numbers that are NaN or infinite refused
# (issue 30, item 18); gpuprof run saying what it wrote and never writing over an earlier
# run; .gz outputs compressed; a failed export leaving what was there, a link at -o
# refused (t_security S14-S17 as root), a FIFO written in place; every JSON file
# valid UTF-8 whatever bytes the program gave its NVTX names; a progress line only on a
# terminal.
. "$(dirname "$0")/tap.sh"
B=${GP_BUILD:?}
F=$(cd "$(dirname "$0")/../fixtures" && pwd)
[ -d "$F/leak" ] || skip_all "no fixtures"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
GP=$B/gpuprof

# usage errors: status 2, one line on stderr that names the problem
usage() { # DESCRIPTION PATTERN -- COMMAND...
	local d=$1 pat=$2; shift 3
	"$@" >out.txt 2>err.txt; local rc=$?
	[ $rc = 2 ] && [ "$(wc -l <err.txt)" = 1 ] && grep -q -- "$pat" err.txt && [ ! -s out.txt ]
	ok $? "$d: exit $rc, one line ($(head -c 150 err.txt))"
}
usage "report --step=abc" "--step: 'abc' is not a step" -- "$GP" report --step=abc "$F/leak"
usage "report --format with no value" "--format needs a value" -- "$GP" report "$F/leak" --format
usage "an unknown option" "unknown or ambiguous option '--bogus'" -- "$GP" report --bogus "$F/leak"
usage "an unknown short option" "unknown option '-Z'" -- "$GP" export -Z "$F/leak"
usage "report with no argument" "usage: gpuprof report \[OPTION\]... JOBDIR|JOBID" -- "$GP" report
usage "report with two jobs" "not 'a' and 'b'" -- "$GP" report a b
usage "--quiet=1 (takes no value)" "--quiet takes no value" -- "$GP" report --quiet=1 "$F/leak"
usage "diff --threshold=nan" "--threshold: 'nan' is not a number" -- "$GP" diff --threshold=nan "$F/leak" "$F/leak"
usage "diff --alpha=nan" "--alpha: 'nan' is not a number" -- "$GP" diff --alpha=nan "$F/leak" "$F/leak"
usage "diff --threshold=inf" "--threshold: 'inf'" -- "$GP" diff --threshold=inf "$F/leak" "$F/leak"
usage "diff --alpha=1" "--alpha: '1'" -- "$GP" diff --alpha=1 "$F/leak" "$F/leak"
usage "diff --threshold=0x10" "--threshold: '0x10'" -- "$GP" diff -t 0x10 "$F/leak" "$F/leak"
usage "diff with one job" "2 jobs needed, 1 given" -- "$GP" diff "$F/leak"
usage "findings --format=html" "--format: 'html' is not text or markdown" -- "$GP" findings --format=html
usage "findings of no rule" "'nosuch' is no rule (rules: not_observed, " -- "$GP" findings nosuch
usage "findings of two rules" "not 'straggler' and 'idle_gaps'" -- "$GP" findings straggler idle_gaps
# the rules as the report applies them: one rule's thresholds by name, value and unit; every
# id that fixtures of most kinds of finding give is a rule listed
"$GP" findings fragmentation >fr.txt && grep -q "^fragmentation: kernel fragmentation \[time\]" fr.txt &&
	grep -q "^  small_kernel  *10 us " fr.txt && [ "$(grep -c '^[a-z_]*: ' fr.txt)" = 1 ]
ok $? "findings RULE: that rule, its thresholds by name, value and unit ($(grep -m1 small_kernel fr.txt | head -c 60))"
"$GP" findings >all.txt && for d in ddp-imbalanced field-oom field-sgd-sync field-input straggler frag; do
	GPUPROF_REPORT_SUMMARIES=0 "$GP" report --format=json "$F/$d" 2>/dev/null; done |
	python3 -c '
import json, re, sys
listed = set(re.findall(r"^([a-z_0-9]+): ", open(sys.argv[1]).read(), re.M))
ids, dec = set(), json.JSONDecoder()
text, at = sys.stdin.read(), 0
while at < len(text.rstrip()):
    j, at = dec.raw_decode(text, at)
    at += len(text[at:]) - len(text[at:].lstrip())
    ids |= {f["id"] for f in j["findings"]}
assert len(listed) == 22 and ids and ids <= listed, (ids - listed, len(listed))
print(sorted(ids))' all.txt >ids.txt
ok $? "findings lists 22 rules, every finding id of six fixtures among them ($(head -c 120 ids.txt))"
usage "export --window=0:inf" "--window TO: 'inf'" -- "$GP" export --format=chrome -o w.json --window=0:inf "$F/leak"
usage "export --window=nan:nan" "--window FROM: 'nan'" -- "$GP" export --format=chrome -o w.json --window=nan:nan "$F/leak"
usage "export --window=5:2" "TO must come after FROM" -- "$GP" export --format=chrome -o w.json --window=5:2 "$F/leak"
usage "export --max-events=-3" "--max-events: '-3'" -- "$GP" export --format=chrome -o w.json -n -3 "$F/leak"
usage "export --format=kineto -o -" "writes a directory of files" -- "$GP" export --format=kineto -o - "$F/leak"
usage "export --torch=3" "--torch: '3'" -- "$GP" export --format=memviz --torch=3 -o m.pickle "$F/leak"
usage "run --modes=memm" "unknown mode 'memm'" -- "$GP" run --modes=memm -- true
usage "run with no program" "no program given" -- "$GP" run --modes=nvtx
usage "capture with no process" "which process" -- "$GP" capture on
[ ! -e ./- ] && [ ! -e w.json ]; ok $? "nothing written by a usage error (no directory named -, no w.json)"
"$GP" >/dev/null 2>err.txt; rc=$?
[ $rc = 2 ] && [ "$(wc -l <err.txt)" = 1 ]; ok $? "gpuprof alone: one usage line, exit 2 ($(cat err.txt))"

# what works as a person types it
"$GP" report --form=json "$F/leak" -- 2>/dev/null | python3 -c 'import json,sys; json.load(sys.stdin)'
ok $? "--form=json (a prefix), options after the job, a trailing --"
"$GP" report -q "$F/leak" >out.txt 2>&1 && [ ! -s out.txt ]; ok $? "-q is --quiet"
cp -r "$F/leak" ./-leak
"$GP" report --format=json -- -leak 2>/dev/null | python3 -c 'import json,sys; json.load(sys.stdin)'
ok $? "-- ends the options: a job directory named -leak"
"$GP" report --format json -s 0 "$F/leak" 2>/dev/null | python3 -c 'import json,sys; json.load(sys.stdin)'
ok $? "values as the next word, -s 0 a valid step"
"$GP" report --step=7 "$F/leak" >/dev/null 2>err.txt; ok $(( $? == 1 ? 0 : 1 )) "a step that is not there: the work failed (1), not a usage error"
# --steps-from other than auto: the job directory's own report is left as it was (it was
# rewritten with "steps: none found"), and none found names the source asked for
cp -r "$F/clean" sf && "$GP" report -q sf && a=$(md5sum <sf/report.txt)
"$GP" report --steps-from=optimizer sf >sf.txt 2>/dev/null
[ "$a" = "$(md5sum <sf/report.txt)" ] && grep -q "^steps: none found from the source asked for (--steps-from): no optimizer.step()" sf.txt
ok $? "--steps-from=optimizer: the job's report.txt unchanged, the none-found line names optimizer.step()"

# every option of every command described in its --help and in gpuprof(1)
man=$B/doc/gpuprof.1
miss=""
for c in run report export diff salvage capture dump summarize settings help; do
	"$GP" $c --help >help.txt 2>&1 || miss="$miss $c(--help failed)"
	grep -q "^usage: gpuprof $c" help.txt || miss="$miss $c(no usage line)"
	grep -q "^\.SS gpuprof $c\$" "$man" || miss="$miss $c(no .SS in gpuprof.1)"
	for o in $(grep -oE '^  (-[a-zA-Z], )?--[a-z-]+' help.txt | grep -oE -- '--[a-z-]+'); do
		# the option's own line in the OPTIONS section, as groff writes it
		e=$(printf '%s' "${o#--}" | sed 's/-/\\\\-/g') # as the page writes it: \-\-max\-events
		grep -q -- "\\\\-\\\\-$e\\b" "$man" || miss="$miss $c:$o"
		[ "$(grep -cE "^  (-[a-zA-Z], )?$o(=| |\$)" help.txt)" = 1 ] || miss="$miss $c:$o(help)"
	done
done
[ -z "$miss" ]; ok $? "every command's options in its --help and in gpuprof(1)${miss:+; missing:$miss}"
grep -q '@VERSION@\|@OPTIONS@\|@DOCDIR@' "$B"/doc/*.[158]; ok $(( $? == 0 ? 1 : 0 )) "no @...@ left in the built man pages"
ver=$("$GP" --version | head -1 | awk '{print $2}')
grep -q "gpuprof $ver" "$man" && grep -q "gpuprof $ver" "$B/doc/gpuprof-spank.8"; ok $? "the man pages say the version ($ver)"
"$GP" --version | grep -q "GPL-2.0-or-later"; ok $? "--version names the licence"

# gpuprof run: says what it wrote, writes the report, never over an earlier run
C=$B/tests/nvtx/nvtx_client
(unset SLURM_JOB_ID SLURM_STEP_ID SLURM_PROCID SLURM_RESTART_COUNT
 "$GP" run --modes=nvtx -- "$C" badnames >run1.out 2>run1.err; echo $? >rc1
 "$GP" run --modes=nvtx -- sh -c "'$C' badnames >/dev/null; exit 3" >run2.out 2>run2.err; echo $? >rc2
 "$GP" run --modes=nvtx --force-overwrite -o gpuprof-local.1 -- sh -c "'$C' deep >/dev/null" 2>run3.err; echo $? >rc3)
[ "$(cat rc1)" = 0 ] && grep -q "^gpuprof: wrote $T/gpuprof-local (report.txt" run1.err && [ -f gpuprof-local/report.txt ] &&
	grep -q "^gpuprof: 1 rank, median step" run1.err
ok $? "run: the report written, its directory and headline said ($(tr '\n' ' ' <run1.err | head -c 200))"
# ... a run without cuda (the quickstart's CPU-only job): its NVTX table's GPU and sync
# time and its start-up's GPU busy were not measured: '-', not 0.000 (the lead, session 33)
grep -qE '^step\S* +9 +[0-9.]+ +- +-$' gpuprof-local/report.txt &&
	grep -qE '^rank 0: [0-9.]+ s; GPU busy - of it' gpuprof-local/report.txt &&
	! grep -qE ' 0\.000 +0\.000$|GPU busy 0\.000' gpuprof-local/report.txt
ok $? "run without cuda: GPU and sync ms, start-up GPU busy '-' ($(grep -E '^step|GPU busy' gpuprof-local/report.txt | tr -s ' ' | tr '\n' ';'))"
[ "$(cat rc2)" = 3 ] && [ -f gpuprof-local.1/step0/rank0.gpr ] && grep -q "holds an earlier run; this one goes to $T/gpuprof-local.1" run2.err &&
	grep -q "^gpuprof: wrote $T/gpuprof-local.1 " run2.err && [ -f gpuprof-local/step0/rank0.gpr ]
ok $? "a second run goes to gpuprof-local.1, the first kept, the program's status (3) kept"
[ "$(cat rc3)" = 0 ] && [ ! -e gpuprof-local.2 ] &&
	"$GP" report --format=json gpuprof-local.1 | python3 -c 'import json,sys; r=json.load(sys.stdin)["ranks"][0]; assert r["outcome"] == "exit 0", r["outcome"]'
ok $? "--force-overwrite: the earlier run replaced in its directory"

# gpuprof diff: what was not measured reads '-' and "not measured", never 0.000 or an empty
# basis (issue 50): a run without steps or memory data against one with both
(unset SLURM_JOB_ID SLURM_STEP_ID SLURM_PROCID SLURM_RESTART_COUNT
 "$GP" run --modes=nvtx -o bare -- true >/dev/null 2>&1)
cp -r "$F/leak" dleak && "$GP" diff --fail-on-regression bare dleak >diff.txt 2>&1
echo $? >diff.rc
grep -qE '^mean step ms +- +[0-9.]+ +- +not comparable: no steps in one' diff.txt &&
	grep -qE '^  measured as +not measured +gpu$' diff.txt &&
	grep -qE '^peak device MiB +- +[0-9.]+ +- +not measured$' diff.txt &&
	! grep -q '0\.000\|( vs' diff.txt
ok $? "diff: not measured reads '-' ($(grep -E '^(median|peak)' diff.txt | tr -s ' ' | tr '\n' ';'))"
# ... and its report.json's figures of memory and steps it did not measure are null, as
# nodes[].peak_bytes is, not 0 (the tester, session 33: D12)
"$GP" report --format=json bare | python3 -c '
import json, sys
r = json.load(sys.stdin)["ranks"][0]
got = [r["memory"].get(k) for k in ("peak_bytes", "final_bytes", "in_use_peak_bytes", "nvml_used_max_bytes")]
got += [r["steps"].get("shape_low_ms"), r["gpu"].get("busy_pct_untraced")]
assert got == [None] * 6, got'
ok $? "report.json: memory peak, final, in-use peak, NVML max, shape_low_ms, busy_pct_untraced null where not measured"
# ... and a run that measured no steps does not pass a CI gate (exit 0 before: D9), and
# the empty kernel table says why
[ "$(cat diff.rc)" = 4 ] && grep -q '^  note: A measured no steps: not comparable' diff.txt &&
	grep -q '^  none: A has no steps to count them by' diff.txt &&
	grep -q '^verdict: not comparable (steps)' diff.txt
ok $? "diff --fail-on-regression: one side without steps is not comparable, exit 4 (rc $(cat diff.rc))"

# diff: the same program at 200 and 1000 steps (30 % of its steps 3x as slow, the same
# steps by number) is no change: the 1000-step run keeps the medians of blocks of ~2 steps,
# the 200-step run's steps are brought to the same blocks (before: +77 %, D1)
"$B/bench/synth-job" --ranks 1 --events 20000 --slow-share 30 --out d200 >/dev/null &&
	"$B/bench/synth-job" --ranks 1 --events 100000 --slow-share 30 --out d1000 >/dev/null &&
	"$GP" report --quiet d200 && "$GP" report --quiet d1000 &&
	"$GP" diff --fail-on-regression d200 d1000 >dlen.txt 2>&1 &&
	"$GP" diff --fail-on-regression d1000 d200 >dlen2.txt 2>&1 &&
	python3 - dlen.txt dlen2.txt <<'PY'
import re, sys
for p in sys.argv[1:]:
    t = open(p).read()
    a, b = map(float, re.search(r"^median step ms +([0-9.]+) +([0-9.]+)", t, re.M).groups())
    assert abs(b / a - 1) < 0.05 and "within noise" in t, t
    assert "is tested by 512 quantiles of its steps' times" in t, t
PY
ok $? "diff: 200 against 1000 steps of one program is no change, both ways ($(grep '^median' dlen.txt | tr -s ' '))"

# diff: the same program whose every 3rd step is 4x slow, 1024 against 1536 steps: no
# change, and the medians the reports' own (the medians of blocks of 2 and 3 steps read
# +75 % REGRESSION, exit 3, and a median no report showed: the reviewer)
"$B/bench/synth-job" --ranks 1 --events 102700 --period 3 --out dp1 >/dev/null &&
	"$B/bench/synth-job" --ranks 1 --events 153900 --period 3 --out dp2 >/dev/null &&
	"$GP" report --quiet dp1 && "$GP" report --quiet dp2 &&
	"$GP" diff --fail-on-regression dp2 dp1 >dper.txt 2>&1 &&
	"$GP" diff --fail-on-regression dp1 dp2 >dper2.txt 2>&1 &&
	python3 - dper.txt dper2.txt dp1/report.json dp2/report.json <<'PY'
import json, re, sys
med = {json.load(open(p))["ranks"][0]["steps"]["median_ms"] for p in sys.argv[3:]}
for p in sys.argv[1:3]:
    t = open(p).read()
    a, b = map(float, re.search(r"^median step ms +([0-9.]+) +([0-9.]+)", t, re.M).groups())
    assert abs(b / a - 1) < 0.05 and "within noise" in t, t
    assert all(min(abs(x - m) for m in med) < 1e-3 for x in (a, b)), (a, b, med)
PY
ok $? "diff: every 3rd step slow, 1536 against 1024 steps, is no change and says the reports' medians ($(grep '^median' dper.txt | tr -s ' '))"

# the slowdown over 512 steps found on every step (the tester, session 33: D7): every 2nd
# step 4x, 1.5x from step 515 of 1030 read period 1 and onset 513 on the medians of the
# kept blocks; the period and the onset in steps
"$B/bench/synth-job" --ranks 1 --events 103000 --period 2 --shift-at 515 --out dsp >/dev/null &&
	"$GP" report --quiet dsp && python3 - dsp/report.json <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
s = j["ranks"][0]["slowdown"]
ev = [f["evidence"] for f in j["findings"] if f["id"] == "slowdown"]
assert s["step"] == 515 and s["period"] == 2 and abs(s["ratio"] - 1.5) < 0.05, s
assert ev and "alternate every 2" in ev[0] and "blocks of its" not in ev[0], ev
PY
ok $? "slowdown: every 2nd step 4x, 1.5x from step 515 of 1030: found on every step, period 2, onset 515"

# one shape for the text, JSON and CSV (the tester, session 33: D11): a clean shift read
# "drifting" in JSON while the text said "then"; steps alternating, then 1.5x: JSON
# "alternating" between medians of mixed levels; each side now said by its own groups
"$B/bench/synth-job" --ranks 1 --events 60000 --shift-at 300 --out dsh1 >/dev/null &&
	"$B/bench/synth-job" --ranks 1 --events 60000 --period 2 --shift-at 300 --out dsh2 >/dev/null &&
	"$GP" report dsh1 >dsh1.txt && "$GP" report dsh2 >dsh2.txt &&
	"$GP" export --format=csv --table=ranks -o dsh1.csv dsh1 &&
	python3 - dsh1/report.json dsh2/report.json dsh1.csv dsh1.txt dsh2.txt <<'PY'
import csv, json, re, sys
a, b = (json.load(open(p))["ranks"][0] for p in sys.argv[1:3])
row = next(csv.DictReader(open(sys.argv[3])))
t1, t2 = (re.sub(r"\s+", " ", open(p).read()) for p in sys.argv[4:6])
for r in (a, b):
    assert r["steps"]["shape"] == "shifted", r["steps"]
    assert abs(r["steps"]["shape_low_ms"] - r["slowdown"]["before_ms"]) < 1e-6, r
assert row["steps.shape"] == "shifted", row.get("steps.shape")
assert "then" in t1 and "finding slowdown" in t1, t1
m = re.search(r"alternating between ([0-9.]+) and ([0-9.]+) ms, then alternating between "
              r"([0-9.]+) and ([0-9.]+) ms from step 300", t2)
assert m, t2
lo0, hi0, lo1, hi1 = map(float, m.groups())
assert abs(lo1 / lo0 - 1.5) < 0.1 and abs(hi1 / hi0 - 1.5) < 0.1, m.groups()
PY
ok $? "step shape: a shift is 'shifted' in the text, JSON and CSV alike; alternating steps' each side said by its own groups"

# a batch 2x from step 150 (2x the thread blocks, 2x the time): more work, no finding; and
# the second report, from the summary cache, said it too (slowdown.work_what was a pointer
# the cache kept: the next process read it as garbage, SIGSEGV)
"$B/bench/synth-job" --ranks 1 --events 30000 --batch-at 150 --out dba >/dev/null &&
	"$GP" report dba >dba1.txt && rm -f dba/report.* && "$GP" report dba >dba2.txt &&
	python3 - dba/report.json dba1.txt dba2.txt <<'PY'
import json, re, sys
j = json.load(open(sys.argv[1]))
s = j["ranks"][0]["slowdown"]
assert s["step"] == 150 and abs(s["work_ratio"] - 2) < 0.05, s
assert not [f for f in j["findings"] if f["id"] == "slowdown"], j["findings"]
for p in sys.argv[2:]:
    t = re.sub(r"\s+", " ", open(p).read())
    assert "the thread blocks a step: more work each step" in t, p
PY
ok $? "slowdown: a batch 2x (2x the thread blocks) is more work, also from the summary cache"

# diff's verdict on the mean step (the throughput) in the test's direction (the tester,
# session 33): steps alternating fast and slow, every step of B 1.5x slower, 1000 against
# 1001 steps: the median fell by the count's parity and it passed (-1.5 %, exit 0); 45 %
# of the steps 3x slow against 52 % 1.5x slow: the median rose (+30.9 %) where the
# throughput rose too, and it failed; 10 steps against 10: p = 1, it passed
"$B/bench/synth-job" --ranks 1 --events 100000 --period 2 --out da2 >/dev/null &&
	"$B/bench/synth-job" --ranks 1 --events 100100 --period 2 --shift-at 0 --out db2 >/dev/null &&
	"$B/bench/synth-job" --ranks 1 --events 100000 --slow-share 45 --out dss >/dev/null &&
	"$B/bench/synth-job" --ranks 1 --events 100000 --shift-at 480 --out dsh >/dev/null &&
	"$B/bench/synth-job" --ranks 1 --events 1000 --out dt1 >/dev/null &&
	"$B/bench/synth-job" --ranks 1 --events 1000 --shift-at 0 --out dt2 >/dev/null
for d in da2 db2 dss dsh dt1 dt2; do "$GP" report --quiet $d; done
"$GP" diff --fail-on-regression da2 db2 >dv1.txt 2>&1; r1=$?
"$GP" diff --fail-on-regression dss dsh >dv2.txt 2>&1; r2=$?
"$GP" diff --fail-on-regression dsh dss >dv3.txt 2>&1; r3=$?
"$GP" diff --fail-on-regression dt1 dt2 >dv4.txt 2>&1; r4=$?
[ $r1 = 3 ] && grep -qE '^mean step ms .*REGRESSION' dv1.txt &&
	[ $r2 = 0 ] && grep -qE '^mean step ms .* -[0-9.]+% +improvement' dv2.txt &&
	[ $r3 = 3 ] && grep -qE '^mean step ms .*REGRESSION' dv3.txt &&
	[ $r4 = 4 ] && grep -qE '^mean step ms .*not comparable: too few steps to test' dv4.txt
ok $? "diff: the mean step in the test's direction decides (alternating 1.5x: rc $r1; faster by throughput, slower by median: rc $r2; the reverse: rc $r3; 10 steps: rc $r4)"
"$GP" diff --fail-on-regression --threshold=0 dss dss >dv5.txt 2>&1
ok $? "diff --threshold=0: a job against itself is no regression (its equal peaks were: rc 3)"

# diff: steps found by different means (NVTX train_step, cudaProfilerStart/Stop windows)
# are not the same work a step: not comparable, never a regression (exit 3 before: D8)
"$B/bench/synth-job" --ranks 1 --events 20000 --profiler-steps --out dprof >/dev/null &&
	"$GP" report --quiet dprof
"$GP" diff --fail-on-regression d200 dprof >dsrc.txt 2>&1
[ $? = 4 ] && grep -qE '^  steps from +nvtx +profiler$' dsrc.txt &&
	grep -qE '^mean step ms .*not comparable: steps found apart' dsrc.txt &&
	grep -q "^  note: A's steps come from nvtx, B's from profiler" dsrc.txt
ok $? "diff: NVTX steps against profiler-window steps are not comparable, exit 4 ($(grep '^mean' dsrc.txt | tr -s ' '))"

# diff's memory line is the summary line's and the record's peak (the in-use peak), not
# an allocator's preallocated pool: JAX with and without XLA's preallocation (+9754.6 %
# REGRESSION before: D4)
cp -r "$F/field-jax" djax && cp -r "$F/field-jax-noprealloc" djaxn &&
	"$GP" diff --fail-on-regression djaxn djax >djax.txt 2>&1
echo $? >djax.rc
python3 - djax.txt djaxn/report.json djax/report.json <<'PY'
import json, re, sys
t = open(sys.argv[1]).read()
m = re.search(r"^peak device MiB +([0-9.]+) +([0-9.]+)", t, re.M)
for g, p in zip(m.groups(), sys.argv[2:]):
    rec = json.load(open(p))["accounting"]["peak_bytes"]
    assert abs(float(g) - rec / 1048576) < 0.1, (g, rec, t)
assert "REGRESSION" not in t.split("top kernels")[0].split("peak device")[1], t
PY
ok $? "diff: the memory line is the record's in-use peak ($(grep '^peak' djax.txt | tr -s ' '), rc $(cat djax.rc))"
# diff of a job whose job.json lists ranks whose rank files are gone: a note names them,
# side by side, and the figures are the ranks read (before: no word of it)
cp -r "$F/ddp-clean" dmA && cp -r "$F/ddp-clean" dmB && rm -f dmB/step0/rank1.* &&
	"$GP" diff dmA dmB >dmiss.txt 2>&1 &&
	grep -q "^  note: B: its job.json lists 2 rank(s), 1 of them not read (rank file gone or unreadable: step 0 rank 1): its figures are the 1 read$" dmiss.txt &&
	! grep -q "note: A:" dmiss.txt
ok $? "diff: B's rank file gone, job.json listing it: said in a note, A's side none ($(grep -m1 'note: B' dmiss.txt | cut -c1-110))"
# ... the step names in that note are job.json's, which its owner may write: a terminal
# escape there is shown as '?' (before: printed raw to whoever ran diff, root too)
cp -r dmB dmE && python3 - dmE/job.json <<'PY'
import sys
p = sys.argv[1]
s = open(p, "rb").read().replace(b'{"step": "0", "rank": 1', b'{"step": "0\x1b]0;x\x07", "rank": 1', 1)
open(p, "wb").write(s)
PY
"$GP" diff dmA dmE >dmesc.txt 2>&1
grep -q "not read (rank file gone or unreadable: step 0?\]0;x? rank 1)" dmesc.txt && ! grep -q "$(printf '\033')" dmesc.txt
ok $? "diff: a job.json step name's terminal escape shown as '?' ($(grep -m1 'note: B' dmesc.txt | cut -c1-110 | tr -d '\033\007'))"
# steps of different sources within a side ("mixed": rank 0's from NVTX, rank 1's from
# the profiler's steps) pool unlike work: not comparable (exit 4), as two sources are
# (before: a job against its own copy, "within noise", exit 0)
"$B/bench/synth-job" --ranks 1 --events 20000 --out dmx >/dev/null &&
	"$B/bench/synth-job" --ranks 2 --first 1 --events 20000 --profiler-steps --out dmx1 >/dev/null &&
	cp dmx1/step0/rank1.gpr dmx/step0/ && cp -r dmx dmy &&
	"$GP" diff --fail-on-regression dmx dmy >dmixed.txt 2>&1
rc=$?
[ $rc = 4 ] && grep -q "steps from  *mixed  *mixed" dmixed.txt && grep -q "not comparable: steps found apart" dmixed.txt
ok $? "diff: mixed step sources on both sides: not comparable, exit 4 (rc $rc)"
cp -r "$F/clean" dmc && "$GP" diff --fail-on-regression dmc dmx >/dev/null 2>&1
rc=$?
[ $rc = 4 ]
ok $? "diff: one source against mixed: exit 4 (rc $rc)"
# every committed fixture against its own copy: each figure's change 0 % (or '-' where
# not measured), no kernel slower or new, no finding new or gone; exit 0, or 4 where it
# cannot tell (no steps, fewer than 8 step samples)
bad=
for d in "$F"/*/; do
	n=$(basename "$d")
	[ -d "$d/step0" ] || continue
	rm -rf sA sB && cp -r "$d" sA && cp -r "$d" sB
	"$GP" diff --fail-on-regression sA sB >self.txt 2>&1
	rc=$?
	rows=$(grep -E '[+-][0-9.]+%' self.txt | grep -vcE '[+-]0\.0%')
	if [ $rc = 4 ]; then
		grep -qE "not comparable: (no steps in one|too few steps to test)" self.txt || bad="$bad $n(rc 4)"
	elif [ $rc != 0 ]; then
		bad="$bad $n(rc $rc)"
	fi
	[ "$rows" = 0 ] || bad="$bad $n($rows rows not 0 %)"
	! grep -qE "slower|NEW|gone in B|REGRESSION|improvement" self.txt || bad="$bad $n(a change)"
done
[ -z "$bad" ]
ok $? "diff: every fixture against its own copy: no change, exit 0 (4 where not testable)${bad:+:$bad}"

# every JSON writer: valid UTF-8 and valid JSON whatever the NVTX names' bytes
strict() { python3 -c 'import json,sys
for p in sys.argv[1:]:
    json.loads(open(p, "rb").read().decode("utf-8"))  # strict: no surrogateescape' "$@"; }
strict gpuprof-local/report.json gpuprof-local/job.json; ok $? "report.json and job.json: valid UTF-8 JSON with invalid NVTX names"
"$GP" export --format=chrome -o bad.json gpuprof-local && strict bad.json; ok $? "the Chrome trace too"
"$GP" export --format=kineto -o kin gpuprof-local 2>/dev/null && strict kin/step0/rank0.json; ok $? "the Kineto trace too"
python3 - gpuprof-local/report.json <<'PY'
import json, sys
names = {r["name"] for r in json.load(open(sys.argv[1]))["nvtx"]}
want = {"step\ufffd", "fwd\ufffd\ufffd", "bwd\ufffd\ufffd\ufffd", "opt\ufffd", "ctl\x01\x1f\"\\", "caf\u00e9"}
assert want <= names, names
PY
ok $? "invalid sequences are U+FFFD (one per maximal subpart), valid UTF-8 and escapes kept"
mkdir -p "$(printf 'job\xff')" && cp -r "$F/leak/step0" "$(printf 'job\xff')/" &&
	"$GP" report --format=json -o dir.json "$(printf 'job\xff')" && strict dir.json
ok $? "a job directory whose name is not UTF-8: report.json still valid"
python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["traceEvents"]; assert not any(e.get("ph") == "M" and e.get("name") == "trace" for e in t); n=[e["args"]["name"] for e in t if e.get("name") == "thread_name"]; assert n and all(x.startswith(("main", "thread ", "steps ")) for x in n), n; print(n)' bad.json >tn.txt
ok $? "the trace: no 'trace' metadata event; threads by NVTX name or 'thread N (id)', and the step tracks ($(head -c 120 tn.txt))"

# .gz outputs, and a failed export leaves what was there
"$GP" report --format=json -o r.json.gz "$F/leak" && python3 -c 'import gzip,json,sys; json.load(gzip.open(sys.argv[1]))' r.json.gz
ok $? "report -o r.json.gz: gzip-compressed JSON"
"$GP" export --format=chrome -o t.json.gz "$F/ddp-clean" && python3 -c 'import gzip,json,sys; d=json.load(gzip.open(sys.argv[1])); assert d["traceEvents"]' t.json.gz
ok $? "export -o t.json.gz: a gzip-compressed trace"
echo precious >keep.json
"$GP" export --format=chrome --ranks=7 -o keep.json "$F/leak" 2>/dev/null; rc=$?
[ $rc = 1 ] && [ "$(cat keep.json)" = precious ] && ! ls .keep.json.tmp.* >/dev/null 2>&1
ok $? "a failed export (rank 7 of 1) leaves the file it was given as it was, no temporary file"
echo target >tgt; ln -s tgt link.json
"$GP" export --format=chrome -o link.json "$F/leak" 2>link.err; rc=$?
[ $rc = 1 ] && [ "$(cat tgt)" = target ] && [ -L link.json ] && grep -q "a link: not written through" link.err
ok $? "a link under the output's name is refused: not written through, not replaced (exit $rc)"
mkfifo out.fifo.gz && { timeout 30 python3 -c 'import gzip,json,sys; json.load(gzip.open(sys.argv[1]))' out.fifo.gz & } &&
	"$GP" export --format=chrome -o out.fifo.gz "$F/leak" && wait $! && [ -p out.fifo.gz ]
ok $? "a FIFO is written in place, gzip-compressed by its name"
"$GP" export --format=chrome -o - "$F/leak" | python3 -c 'import json,sys; json.load(sys.stdin)'
ok $? "-o - is standard output"

# memviz for PyTorch 1.13's _memory_viz, the version said
"$GP" export --format=memviz --torch=1.13 -o m113.pickle "$F/leak" 2>m.err && python3 -c 'import pickle,sys; s=pickle.load(open(sys.argv[1],"rb")); assert isinstance(s, list) and s and all("history" in b for g in s for b in g["blocks"]), type(s)' m113.pickle
ok $? "--torch=1.13: a list of segments, blocks with their history"
"$GP" export --format=memviz -o m2.pickle "$F/leak" 2>m.err; grep -q "PyTorch 2's layout.*--torch=1.13" m.err
ok $? "the default layout says which PyTorch reads it ($(head -c 120 m.err))"

# a progress line on a terminal, nothing on a pipe
"$B/bench/synth-job" --ranks 1536 --events 2000 --out big >/dev/null 2>&1
GPUPROF_REPORT_THREADS=1 "$GP" report -q big 2>pipe.err
[ ! -s pipe.err ]; ok $? "stderr not a terminal: no progress line"
if command -v script >/dev/null; then
	rm -f big/report.*
	GPUPROF_REPORT_THREADS=1 script -qec "'$GP' report -q big" /dev/null >tty.out 2>&1
	grep -q "reading rank files: [0-9]* of 1536" tty.out; ok $? "on a terminal: 'reading rank files: N of 1536' ($(tr '\r' '\n' <tty.out | grep -m1 reading))"
else
	skip "no script(1) for a terminal"
fi
# gpuprof prune (issue 48): bad input refused naming the option; by age, in a tree of
# ROOT/USER/JOB (tests/integration/t_slurm.sh runs it as root over users' directories)
out=$("$B/gpuprof" prune "$T" 2>&1); rc=$?
[ $rc = 2 ] && echo "$out" | grep -q "prune: --older-than is needed (an age such as 30d)"; ok $? "prune without --older-than: usage error ($rc)"
out=$("$B/gpuprof" prune --older-than=30 "$T" 2>&1); rc=$?
[ $rc = 2 ] && echo "$out" | grep -q "prune: --older-than: '30' is not an age (a whole number above 0 with s, m, h, d or w: 30d)"; ok $? "an age without its unit is refused ($rc)"
out=$("$B/gpuprof" prune --older-than=30d --config="$T/none.yaml" 2>&1); rc=$?
[ $rc = 2 ] && echo "$out" | grep -q "which directory? $T/none.yaml does not exist (--config=FILE); give ROOT"; ok $? "no ROOT and no config file: which directory? the file is missing, said ($rc: $out)"
printf 'enabled: true\nsite_group: no-such-group-gp\n' >"$T/nosite.yaml"
out=$("$B/gpuprof" prune --older-than=30d --config="$T/nosite.yaml" 2>&1); rc=$?
[ $rc = 2 ] && echo "$out" | grep -q "which directory? $T/nosite.yaml sets no site_output; give ROOT" &&
	echo "$out" | grep -q "prune: $T/nosite.yaml: site_group 'no-such-group-gp' is not a group on this host"
ok $? "no ROOT and no site_output: which directory?; a site_group that is no group: warned where prune reads it ($rc)"
P=$T/prune; mkdir -p "$P/u1/1/step0" "$P/u1/2/stepbatch" "$P/u2/3/step1.attempt2" "$P/u2/notes/old" "$P/u2/Documents"
echo x >"$P/u1/1/step0/rank0.gpr"; echo y >"$P/u2/3/step1.attempt2/f"; ln -s "$P/u2/3/step1.attempt2/f" "$P/u1/1/link"
echo keep >"$P/u2/notes/old/f"
touch -h -d '3 days ago' "$P/u1/1/step0/rank0.gpr" "$P/u1/1/link" "$P/u1/1/step0" "$P/u1/1" "$P/u2/3/step1.attempt2/f" "$P/u2/3/step1.attempt2" "$P/u2/3" "$P/u2/notes/old/f" "$P/u2/notes/old" "$P/u2/notes" "$P/u2/Documents"
"$B/gpuprof" prune --older-than=2d --config="$T/none.yaml" "$P" >prune.out 2>&1; rc=$?
[ $rc = 0 ] && [ ! -e "$P/u1/1" ] && [ ! -e "$P/u2/3" ] && [ -d "$P/u1/2" ] && [ -f "$P/u2/notes/old/f" ] &&
	[ -d "$P/u2/Documents" ] && grep -q "removed 2 job directories" prune.out
ok $? "prune --older-than=2d: the two old job directories go, the new one stays, an old directory with no step's directory in it (not gpuprof's) stays, and an old empty one too where no template names it ($(tail -1 prune.out))"
# a job directory nested past the walk's depth: its age is not known, so it is kept (its
# old files were removed while a file written now lay 50 levels down)
P=$T/prune-deep; d="$P/u1/5/step0"; mkdir -p "$d"; echo old >"$d/rank0.gpr"
deep=$d; for i in $(seq 50); do deep=$deep/d; done; mkdir -p "$deep"; echo new >"$deep/f"
find "$P" -mindepth 1 ! -path "$deep/f" -exec touch -h -d '3 days ago' {} +
"$B/gpuprof" prune --older-than=2d --config="$T/none.yaml" "$P" >prune-deep.out 2>&1
[ -f "$d/rank0.gpr" ] && [ -f "$deep/f" ] && grep -q "cannot read all of it; kept" prune-deep.out
ok $? "a job directory nested past the walk's depth: kept whole, said ($(tail -1 prune-deep.out))"
# a user's child that stops (the user's SIGSTOP: it runs as them) or waits on a file
# system that does not answer (tests/integration/prune_stall.c makes both) is killed at
# --timeout and named, and the other users' directories are pruned all the same
cc -shared -fPIC -O2 -o prune_stall.so "$F/../integration/prune_stall.c" -ldl
P=$T/prune2; mkdir -p "$P/ua/gp-stop/step0" "$P/ub/7/step0" "$P/uc/gp-hang/step0" "$P/ud/8/step0"
touch -d '3 days ago' "$P/ub/7/step0" "$P/ud/8/step0" "$P/ub/7" "$P/ud/8"
out=$(timeout 60 env LD_PRELOAD="$T/prune_stall.so" "$B/gpuprof" prune --older-than=2d --timeout=1s "$P" 2>&1); rc=$?
[ $rc = 1 ] && [ ! -e "$P/ub/7" ] && [ ! -e "$P/ud/8" ] &&
	echo "$out" | grep -q "prune: $P/ua: not done in 1 s (--timeout; its child stopped, or a file system that does not answer): killed; " &&
	echo "$out" | grep -q "prune: $P/uc: not done in 1 s .*killed;" && echo "$out" | grep -q "removed 2 job directories"
ok $? "prune --timeout=1s: a stopped child and a hung one killed and named, the other users' old directories removed, exit 1 ($rc: $(echo "$out" | tail -1))"
out=$("$B/gpuprof" prune --older-than=2d --timeout=soon "$P" 2>&1); rc=$?
[ $rc = 2 ] && echo "$out" | grep -q "prune: --timeout: 'soon' is not an age"; ok $? "a bad --timeout is refused ($rc)"
# mount points under ROOT (a user's bind mount, NFS, FUSE) are never entered nor emptied:
# as a job directory, as a user's directory; links never followed
if unshare -m true 2>/dev/null; then
	P=$T/prune3; mkdir -p "$P/ue/mnt" "$P/ue/9/step0" "$P/uf" "$T/outside/10/step0"
	ln -s "$T/outside" "$P/ug"; ln -s "$T/outside/10" "$P/ue/11"
	touch -d '3 days ago' "$P/ue/9/step0" "$P/ue/9" "$T/outside/10/step0" "$T/outside/10"
	out=$(unshare -m sh -c 'mount -t tmpfs gp "$1/ue/mnt" && mount -t tmpfs gp "$1/uf" &&
		mkdir "$1/uf/12" && echo keep >"$1/ue/mnt/data" && echo keep >"$1/uf/12/data" &&
		touch -d "3 days ago" "$1/ue/mnt/data" "$1/ue/mnt" "$1/uf/12/data" "$1/uf/12" "$1/uf" &&
		"$2" prune --older-than=2d "$1"; echo "rc=$?"; cat "$1/ue/mnt/data" "$1/uf/12/data"' sh "$P" "$B/gpuprof" 2>&1)
	echo "$out" | grep -q "^rc=0$" && [ "$(echo "$out" | grep -c '^keep$')" = 2 ] &&
		echo "$out" | grep -q "^left alone $P/ue/mnt: another file system (a mount point)$" &&
		echo "$out" | grep -q "^left alone $P/uf: another file system (a mount point)$" &&
		[ ! -e "$P/ue/9" ] && [ -d "$T/outside/10" ] && echo "$out" | grep -q "2 mount points left alone"
	ok $? "prune: a job directory and a user's directory that are mount points left alone, their files kept; links not followed ($(echo "$out" | tr '\n' '|' | head -c 400))"
else
	skip "no mount namespace (unshare -m) for mount points"
fi
# a site_output whose user's directory holds more than the job directories
# (/home/%u/gpuprof/%j: ROOT /home is root's, the user's own directory theirs, so the
# plugin takes it): prune walks the template's literal level ("gpuprof") alone, never the
# user's other directories at the job's depth (~/thesis/chapters, ~/.config/app)
P=$T/prune4; mkdir -p "$P/u1/thesis/chapters" "$P/u1/.config/app" "$P/u1/gpuprof/4242/step0"
echo draft >"$P/u1/thesis/chapters/1.tex"; echo x >"$P/u1/.config/app/settings"; echo r >"$P/u1/gpuprof/4242/step0/rank0.gpr"
find "$P" -exec touch -h -d '40 days ago' {} +
printf 'profile_all_jobs: true\nsite_output: %s/%%u/gpuprof/%%j\n' "$P" >"$T/home.yaml"
"$B/gpuprof" prune --older-than=30d --config="$T/home.yaml" >prune4.out 2>&1; rc=$?
[ $rc = 0 ] && [ ! -e "$P/u1/gpuprof/4242" ] && [ -f "$P/u1/thesis/chapters/1.tex" ] && [ -f "$P/u1/.config/app/settings" ]
ok $? "prune under site_output ROOT/%u/gpuprof/%j removes old job directories only, never the user's other directories at that depth ($(tr '\n' '|' <prune4.out | head -c 300))"
# a job directory's name is the user's (they own ROOT/USER): prune names it on root's
# terminal (or cron's mail) with its control bytes made harmless, never an escape sequence
P=$T/prune5; mkdir -p "$P/u1/$(printf 'x\033]0;pwned\007\033[2J')/step0"; touch -d '40 days ago' "$P"/u1/x*/step0 "$P"/u1/x*
"$B/gpuprof" prune --older-than=30d --dry-run "$P" >prune5.out 2>&1
grep -q "would remove $P/u1/x" prune5.out && ! grep -q $'\033' prune5.out && ! grep -q $'\007' prune5.out
ok $? "prune: a job directory named with escape sequences is named without them ($(head -c 120 prune5.out | od -c | head -2 | tr -s ' ' | tr '\n' ' '))"
P=$T/prune6; mkdir -p "$P/u1/$(printf 'y\302\2332J')/step0" "$P/u1/$(printf 'z\23331m')/step0"; touch -d '40 days ago' "$P"/u1/*/step0 "$P"/u1/*
"$B/gpuprof" prune --older-than=30d --dry-run "$P" >prune6.out 2>&1
[ "$(grep -c "would remove $P/u1/" prune6.out)" = 2 ] && python3 -c 'import sys; sys.exit(b"\x9b" in open(sys.argv[1], "rb").read())' prune6.out
ok $? "prune: C1 controls in a job directory's name (U+009B, a raw 9b byte) never reach the terminal ($(tr '\n' '|' <prune6.out | head -c 160))"
# one pipeline for every command (issue 49): a job named by its id is taken with its sacct
# record by export as by report, so the HTML has the time-limit finding report.txt has
mkdir -p "$T/fakesacct" "$T/j77210" && cp -r "$F/ddp-imbalanced/step0" "$T/j77210/"
# rank 1's file cut at 70 %: no end record (a rank stopped at the time limit)
sz=$(stat -c %s "$T/j77210/step0/rank1.gpr") && truncate -s $((sz * 7 / 10)) "$T/j77210/step0/rank1.gpr"
cat >"$T/fakesacct/sacct" <<SACCT
#!/bin/sh
# a stand-in for sacct that knows job 77210 (ddp-imbalanced's), ended at its time limit
j=; p=; for a; do [ "\$p" = -j ] && j=\$a; p=\$a; f=\$a; done
case \$j:\$f in
77210:JobIDRaw) echo 77210 ;;
77210:AdminComment) echo "gpuprof: steps=1 dir=$T/j77210" ;;
77210:State) echo TIMEOUT ;;
77210:JobID,*) echo "77210|ddp|TIMEOUT|0:0|00:10:00|gres/gpu=2|vm|1G|" ;;
esac
SACCT
chmod 755 "$T/fakesacct/sacct"
PATH=$T/fakesacct:$PATH GPUPROF_REPORT_SUMMARIES=0 "$B/gpuprof" report --format=json 77210 >"$T/77210.json" 2>/dev/null &&
	PATH=$T/fakesacct:$PATH GPUPROF_REPORT_SUMMARIES=0 "$B/gpuprof" export --format=html -o "$T/77210.html" 77210 2>/dev/null &&
	grep -q '"id": "time_limit"' "$T/77210.json" && grep -q 'id="finding-time_limit"' "$T/77210.html"
ok $? "a job named by its id: export --format=html has report's time-limit finding (sacct asked once, by the one pipeline)"
PATH=$T/fakesacct:$PATH GPUPROF_REPORT_SUMMARIES=0 "$B/gpuprof" export --format=html -o "$T/77210d.html" "$T/j77210" 2>/dev/null &&
	! grep -q 'id="finding-time_limit"' "$T/77210d.html" && grep -q 'id="finding-incomplete"' "$T/77210d.html"
ok $? "... and named by its directory, sacct is not asked (incomplete, not the time limit)"
out=$("$B/gpuprof" export --format=pdf -o x "$F/clean" 2>&1); rc=$?
[ $rc = 2 ] && echo "$out" | grep -q "formats: chrome, memviz, html, kineto, csv"
ok $? "export's formats listed from the writers' table ($rc)"
# what gpuprof run and report wrote here within 100 columns (issue 49 item 6)
n=0; bad=""
while read -r r; do
	n=$((n + 1))
	python3 "$_tap_dir/textwidth.py" check "$r" >w.out || bad="$bad ${r#"$T"/}: $(head -1 w.out)"
done < <(find "$T" -name report.txt)
[ "$n" -ge 1 ] && [ -z "$bad" ]; ok $? "the $n report.txt written here: no line over 100 characters${bad:+ (not:$bad)}"

# a task the site profiles unasked logs to syslog, not to the job's stderr: to a datagram
# /dev/log and, where it is a stream (syslog-ng's unix-stream), one line each ended by a
# newline; a stand-in /dev/log in a private mount namespace (root)
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
	for kind in dgram stream; do
		unshare -m bash -c '
			d=$(mktemp -d); mkdir "$d/dev"; mount --bind /dev "$d/dev"
			mount -t tmpfs none /dev
			for x in null zero urandom random; do touch /dev/$x; mount --bind "$d/dev/$x" /dev/$x; done
			python3 "$1" "$2" "$3" &
			for i in $(seq 100); do [ -S /dev/log ] && break; sleep 0.1; done
			GPUPROF_SITE=1 SLURM_JOB_ID=77 "$4" run --output=/proc/nope -- true 2>"$3.err"
			sleep 0.5; kill %1 2>/dev/null; wait' _ "$_tap_dir/logsrv.py" $kind "$T/syslog.$kind" "$GP"
		n=$(grep -c '^<1[12]>gpuprof\[[0-9]*\]: .*(job 77, profiled by the site)$' "$T/syslog.$kind")
		[ "$n" -ge 2 ] && ! grep -q "running true unprofiled" "$T/syslog.$kind.err"
		ok $? "site mode, $kind /dev/log: the agent's lines in syslog, one a line ($n), none on stderr"
	done
else
	skip "not root or no unshare"; skip "not root or no unshare"
fi
done_testing
