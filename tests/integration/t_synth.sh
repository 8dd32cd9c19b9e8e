#!/bin/bash
# The report on synthetic jobs written through the common writer (bench/synth-job): the
# planted straggler (rank 3, 40 % slower) is found among 16 ranks, steps come from
# cudaProfilerStart/Stop windows when a program has no NVTX steps, and every rank is read.
. "$(dirname "$0")/tap.sh"
B=${GP_BUILD:?}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
"$B/bench/synth-job" --ranks 16 --events 20000 --out "$T/nvtx" >/dev/null; ok $? "16-rank synthetic job"
"$B/gpuprof" report --format=json "$T/nvtx" >"$T/nvtx.json"; ok $? "report"
python3 - "$T/nvtx.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert len(j["ranks"]) == 16 and all(r["steps"]["count"] == 200 for r in j["ranks"])
assert j["job"] == "424242", j["job"]  # from the ranks' headers
f = [f for f in j["findings"] if f["id"] == "straggler"]
assert f and "rank 3 " in f[0]["title"], j["findings"]
assert all(r["gpu"]["kernels_total"] == 20000 for r in j["ranks"])
PY
ok $? "all ranks read, 200 steps each, rank 3 named as the straggler"
# rank files are analysed in parallel and merged in the order they were found: the
# report is the same whatever the threads
F=$(cd "$(dirname "$0")/../fixtures" && pwd)
same=1
for j in "$T/nvtx" "$F/ddp-clean" "$F/straggler" "$F/pt-torchrun"; do
	for fmt in text json; do
		GPUPROF_REPORT_THREADS=1 "$B/gpuprof" report --format=$fmt "$j" >"$T/one" 2>&1
		GPUPROF_REPORT_THREADS=5 "$B/gpuprof" report --format=$fmt "$j" >"$T/five" 2>&1
		cmp -s "$T/one" "$T/five" || { same=0; echo "# differs: $j $fmt"; }
	done
done
[ $same = 1 ]; ok $? "the report on 1 and on 5 threads is the same (16 synthetic ranks, three multi-rank fixtures)"
# no thread can start (a process or thread limit on a login node): the ranks are read on
# the report's own thread, the same report
printf '#include <errno.h>\n#include <pthread.h>\nint pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*f)(void *), void *x) { (void)t, (void)a, (void)f, (void)x; return EAGAIN; }\n' >"$T/nothr.c"
if ${CC:-cc} -shared -fPIC -o "$T/nothr.so" "$T/nothr.c" 2>/dev/null; then
	same=1
	for j in "$T/nvtx" "$F/ddp-clean"; do
		GPUPROF_REPORT_THREADS=1 "$B/gpuprof" report --format=json "$j" >"$T/one" 2>&1
		LD_PRELOAD="$T/nothr.so" "$B/gpuprof" report --format=json "$j" >"$T/none" 2>&1 &&
			cmp -s "$T/one" "$T/none" || { same=0; echo "# differs: $j"; head -3 "$T/none"; }
	done
	[ $same = 1 ]; ok $? "no thread starts: the same report, read on the report's own thread"
else
	skip "no C compiler for the thread-less case"
fi
"$B/bench/synth-job" --ranks 2 --events 2000 --out "$T/prof" --profiler-steps >/dev/null
"$B/gpuprof" report "$T/prof" >"$T/prof.txt"; ok $? "report on a job without NVTX steps"
grep -q "steps: cudaProfilerStart/Stop windows" "$T/prof.txt"; ok $? "steps from cudaProfilerStart/Stop"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert all(r["steps"]["count"] == 20 for r in j["ranks"])' "$T/prof/report.json"
ok $? "20 profiler windows per rank"
# a capture window: kernels recorded only in steps 10-19 of 20 (cuda switched at step
# boundaries); GPU statistics must cover those steps, not be diluted by the others
"$B/bench/synth-job" --ranks 1 --events 2000 --out "$T/full" >/dev/null
"$B/bench/synth-job" --ranks 1 --events 2000 --out "$T/win" --capture 10-19 >/dev/null
"$B/gpuprof" report "$T/full" >/dev/null && "$B/gpuprof" report "$T/win" >"$T/win.txt"
ok $? "report on a job with a capture window"
python3 - "$T/full/report.json" "$T/win/report.json" <<'PY'
import json, sys
f = json.load(open(sys.argv[1]))["ranks"][0]; w = json.load(open(sys.argv[2]))["ranks"][0]
assert w["capture"]["window"] and w["capture"]["captured_steps"] == 10, w["capture"]
assert w["capture"]["switches"] == 2 and w["capture"]["switch_max_ns"] == 150000, w["capture"]
assert w["steps"]["count"] == 20 == f["steps"]["count"], (w["steps"], f["steps"])
assert abs(w["gpu"]["kernels_per_step"] - 100) < 1e-9, w["gpu"]["kernels_per_step"]
bw = w["gpu"]["busy_ns"] / w["gpu"]["span_ns"]; bf = f["gpu"]["busy_ns"] / f["gpu"]["span_ns"]
assert abs(bw - bf) < 0.05, (bw, bf)
PY
ok $? "GPU statistics cover the 10 captured steps (100 kernels per step, busy share as uncaptured)"
grep -q "captured in 10 of 17 post-warm-up steps" "$T/win.txt"; ok $? "the text report says which steps were captured"
# memory peaks with the third warm-up allocation, made by a thread with no NVTX range open
python3 - "$T/full/report.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["ranks"][0]["memory"]
got = (m["peak_step"], m["peak_ranges"], m["peak_ranges_other_thread"], m["peak_bytes"] >> 20)
assert got == (2, "train_step", True, 192), got
PY
ok $? "the peak's step and the steps' thread's open ranges, when the allocating thread had none"
"$B/gpuprof" report "$T/full" | grep -q "peak reached in step 2 (warm-up) inside train_step (ranges of the steps' thread"
ok $? "the text report says so"

# a long run: every rank keeps GP_STEP_KEEP (512) step samples, the medians of 512 blocks
# of consecutive steps (evenly spaced steps alias with a periodic step: issue 50), while
# mean, median and p95 come from all; the kept ones are the run's own steps' medians
# (synth-job's step times depend on the step's number only, so a 400-step job gives the
# truth)
"$B/bench/synth-job" --ranks 1 --events 80000 --out "$T/long" >/dev/null &&
	"$B/bench/synth-job" --ranks 1 --events 40000 --out "$T/half" >/dev/null &&
	"$B/gpuprof" report --quiet "$T/long" && "$B/gpuprof" report --quiet "$T/half"
ok $? "reports on 800 and 400 steps"
python3 - "$T/long/report.json" "$T/half/report.json" <<'PY'
import json, statistics as st, sys
lo = json.load(open(sys.argv[1]))["ranks"][0]["steps"]; ha = json.load(open(sys.argv[2]))["ranks"][0]["steps"]
d, truth = lo["durations_ms"], ha["durations_ms"]
assert lo["durations_of"] == 797 and len(d) == 512, (lo["durations_of"], len(d))
assert ha["durations_of"] == len(truth) == 397, (ha["durations_of"], len(truth))
blocks = [(j, j * 797 // 512, (j + 1) * 797 // 512) for j in range(512)]
assert all(abs(d[j] - st.median(truth[a:z])) < 1e-3 for j, a, z in blocks if z <= 397), "kept samples are not the steps' blocks' medians"
assert abs(st.mean(truth) - ha["mean_ms"]) < 1e-3  # all kept: the mean is theirs
assert abs(st.mean(d) - lo["mean_ms"]) > 1e-4     # 512 of 797 kept: the mean is not theirs
PY
ok $? "800 steps: 512 samples kept, the medians of blocks of the steps' own, the mean from all 797"
GPUPROF_SUMMARY_MIN_BYTES=0 "$B/gpuprof" report --format=json "$T/long" >"$T/long.1" &&
	GPUPROF_DEBUG=1 "$B/gpuprof" report --format=json "$T/long" >"$T/long.2" 2>"$T/long.dbg" &&
	cmp -s "$T/long.1" "$T/long.2" && grep -q " 0 from their rank files" "$T/long.dbg"
ok $? "and the report from its summary is the same"
"$B/gpuprof" export --format=html --output="$T/long.html" "$T/long" >/dev/null 2>&1
python3 - "$T/long.html" <<'PY'
import re, sys
h = open(sys.argv[1]).read()
i = h.index("Step time per rank"); plot = h[i:h.index("</svg>", i)]
lines = [len(p.split()) for p in re.findall(r'<polyline[^>]*points="([^"]*)"', plot)]
assert lines and lines[0] > 500, lines  # one line, not a point per kept step
assert "drawn from the medians of 512 blocks" in h[i:i + 2000]
PY
ok $? "its HTML step plot is one unbroken line through the kept steps, and says it is thinned"

# a program with side threads (issue 51 item 13, bench/mt_streams.cu's shape): the main
# thread's train_step takes exactly 0.39 ms on the GPU; two worker threads each loop on a
# range of their own, 4.3 times as often, on streams of their own, each holding more GPU
# time than the steps. The steps are train_step, and the workers' kernels do not move its
# GPU completion: the headline is the known 0.39 ms, not the workers' loop
"$B/bench/synth-job" --ranks 2 --events 20000 --out "$T/mt" --threads >/dev/null &&
	"$B/gpuprof" report --quiet "$T/mt"
ok $? "report on a job of two-thread programs"
python3 - "$T/mt/report.json" <<'PY2'
import json, sys
for r in json.load(open(sys.argv[1]))["ranks"]:
    s = r["steps"]
    got = (s["range"], s["count"], s["basis"], s["median_ms"], s["p95_ms"], s["period_median_ms"])
    assert got == ("train_step", 200, "gpu", 0.39, 0.39, 0.39), got
    assert "not 'worker" in s["how"] and "inside it on another thread" in s["how"], s["how"]
PY2
ok $? "steps are the main thread's train_step with its known 0.39 ms, not a worker's loop"

# a large job: distributions across ranks and nodes with the outliers named, not a line
# per rank; --ranks lists the ones asked for; JSON keeps every rank
"$B/bench/synth-job" --ranks 80 --events 2000 --out "$T/big" >/dev/null
"$B/gpuprof" report "$T/big" >"$T/big.txt"; ok $? "report on 80 ranks"
unwrap "$T/big.txt" >"$T/big.joined" # sentences whole (lines cut at 100 columns joined)
n=$(wc -l <"$T/big.joined"); [ "$n" -lt 120 ]; ok $? "80 ranks in $n lines, not one line per rank and table"
grep -q "step median (ms) .* max 2\.[0-9]* (rank 3) over 80 ranks; outliers: rank 3 " "$T/big.joined"
ok $? "the slow rank is named as the outlier of the step time ($(grep 'step median (ms)' "$T/big.joined"))"
[ "$(grep -c '^  node node0' "$T/big.txt")" = 10 ]; ok $? "one line per node (10 nodes of 8 ranks)"
"$B/gpuprof" report --ranks=3,40-41 "$T/big" | grep -cE '^(3|40|41) +node0' | grep -qx 3
ok $? "--ranks=3,40-41 lists those ranks' lines"
"$B/gpuprof" report --ranks=x "$T/big" 2>/dev/null; ok $(( $? == 2 ? 0 : 1 )) "--ranks=x is rejected as usage"
# a node whose ranks found no steps is "not measured" (-), never a 0 ms node pulling the
# median across nodes down (the reviewer: node lines took ranks without steps as 0)
"$B/bench/synth-job" --ranks 40 --events 2000 --out "$T/quiet" >/dev/null
"$B/bench/synth-job" --first 40 --ranks 48 --events 100 --node-prefix quiet --out "$T/quiet" >/dev/null
"$B/gpuprof" report "$T/quiet" >"$T/quiet.txt" 2>/dev/null
grep -q '^  node quiet005 .*median step -,' "$T/quiet.txt" && ! grep -q 'median step 0\.000' "$T/quiet.txt"
ok $? "a node with no rank's steps: median step '-' ($(grep quiet005 "$T/quiet.txt"))"
"$B/gpuprof" report --format=json "$T/quiet" 2>/dev/null | python3 -c 'import json, sys
j = json.load(sys.stdin)
n = {x["node"]: x["step_median_ms"] for x in j["nodes"]}
assert n["quiet005"] is None and all(v > 1 for k, v in n.items() if k != "quiet005"), n
assert j["node_step_median_ms"] > 1, j["node_step_median_ms"]'
ok $? "... null in report.json, and the median across nodes over the nodes with steps"

python3 -c 'import json,sys; assert len(json.load(open(sys.argv[1]))["ranks"]) == 80' "$T/big/report.json"
ok $? "report.json keeps all 80 ranks"
# rank_table: every rank a row, each cell the value its rank's object gives that key
python3 - "$T/big/report.json" <<'PY3'
import json, sys
j = json.load(open(sys.argv[1])); t = j["rank_table"]
assert j["ranks_total"] == j["ranks_written"] == len(t["rows"]) == 80, (j["ranks_total"], len(t["rows"]))
def field(r, key):
    for k in key.split("."):
        r = r[k]
    return r
for r, row in zip(j["ranks"], t["rows"]):
    for k, v in zip(t["keys"], row):
        assert field(r, k) == v, (r["rank"], k, field(r, k), v)
assert all(v is not None for row in t["rows"] for v in row)
PY3
ok $? "rank_table gives every rank a row, each cell its rank object's value"
# above 1 024 ranks (GP_JSON_RANKS) an object only for the ranks the findings or --ranks name
"$B/bench/synth-job" --ranks 1100 --events 200 --out "$T/huge" >/dev/null &&
	"$B/gpuprof" report --quiet "$T/huge" && "$B/gpuprof" report --ranks=40 --format=json "$T/huge" >"$T/huge40.json"
ok $? "report on 1 100 ranks"
python3 - "$T/huge/report.json" "$T/huge40.json" <<'PY4'
import json, sys
j = json.load(open(sys.argv[1])); k = json.load(open(sys.argv[2]))
named = sorted({f["rank"] for f in j["findings"]})
assert j["ranks_total"] == len(j["rank_table"]["rows"]) == 1100, j["ranks_total"]
assert [r["rank"] for r in j["ranks"]] == named and 3 in named, ([r["rank"] for r in j["ranks"]], named)
assert j["ranks_written"] == len(named) and j["findings"][0]["id"] == "straggler"
assert sorted(r["rank"] for r in k["ranks"]) == sorted(set(named) | {40}), [r["rank"] for r in k["ranks"]]
PY4
ok $? "1 100 ranks: objects for the ranks the findings name (the straggler, rank 3) and --ranks=40 only, every rank in rank_table"
# per-rank summaries (rankR.gps): the first report writes them, the next reads them in
# place of the rank files, and says the same on every fixture; a rank file that changed,
# or a summary that is not valid, is read again
mkdir -p "$T/fx"
for d in "$F"/*/; do cp -r "$d" "$T/fx/"; done
find "$T/fx" -name '*.gps' -delete # an earlier report on the tree's fixtures left them
# a small rank file gets no summary by default (it would be the larger of the two)
small=$(find "$T/fx" -name 'rank*.gpr' -size -8k | head -1)
"$B/gpuprof" report "$(dirname "$(dirname "$small")")" >/dev/null 2>&1
[ -n "$small" ] && [ ! -e "${small%.gpr}.gps" ]
ok $? "a rank file under GPUPROF_SUMMARY_MIN_BYTES gets no summary ($(basename "${small:-none}"), $(stat -c %s "$small" 2>/dev/null) bytes)"
export GPUPROF_SUMMARY_MIN_BYTES=0 # every fixture's rank summarised, for the comparison
same=1 used=1
for d in "$T"/fx/*/; do
	for fmt in text json; do
		GPUPROF_REPORT_SUMMARIES=false "$B/gpuprof" report --format=$fmt "$d" >"$T/o.full" 2>&1
		"$B/gpuprof" report --format=$fmt "$d" >"$T/o.first" 2>&1
		GPUPROF_DEBUG=1 "$B/gpuprof" report --format=$fmt "$d" >"$T/o.again" 2>"$T/o.dbg"
		cmp -s "$T/o.full" "$T/o.first" && cmp -s "$T/o.full" "$T/o.again" || { same=0; echo "# differs: $d $fmt"; }
		# a rank with processes beside it (rankR.pidP.gpr) is analysed with them, from the rank files
		ls "$d"/step*/rank*.pid*.gpr >/dev/null 2>&1 ||
			grep -q " 0 from their rank files" "$T/o.dbg" || { used=0; echo "# not from summaries: $d $(grep summaries "$T/o.dbg")"; }
	done
done
[ $same = 1 ]; ok $? "every fixture's report from the summaries is the full analysis's ($(ls "$T"/fx | wc -l) jobs, text and json)"
[ $used = 1 ]; ok $? "and the second report read every rank from its summary"
j=$T/fx/straggler
touch "$j/step0/rank1.gpr"
GPUPROF_DEBUG=1 "$B/gpuprof" report "$j" 2>&1 >/dev/null | grep -q "1 rank(s) from their summaries, 1 from their rank files"
ok $? "a rank file that changed since its summary is read again"
# rewritten in place with its mtime put back: its ctime moved (the summary's key)
"$B/gpuprof" report "$j" >/dev/null 2>&1 # both summaries valid again
cat "$j/step0/rank1.gpr" >"$T/r1.copy" && touch -r "$j/step0/rank1.gpr" "$T/r1.copy" &&
	cat "$T/r1.copy" >"$j/step0/rank1.gpr" && touch -r "$T/r1.copy" "$j/step0/rank1.gpr"
GPUPROF_DEBUG=1 "$B/gpuprof" report "$j" 2>&1 >/dev/null | grep -q "1 rank(s) from their summaries, 1 from their rank files"
ok $? "a rank file rewritten in place, its size and mtime as they were, is read again"
printf 'x' | dd of="$j/step0/rank0.gps" bs=1 seek=200 conv=notrunc 2>/dev/null
GPUPROF_DEBUG=1 "$B/gpuprof" report "$j" 2>&1 >/dev/null | grep -q " 1 from their rank files"
ok $? "a summary whose checksum fails is not used"
if [ "$(id -u)" = 0 ]; then
	"$B/gpuprof" report "$j" >/dev/null 2>&1 # both summaries valid again
	chown nobody "$j/step0/rank1.gps"
	GPUPROF_DEBUG=1 "$B/gpuprof" report "$j" 2>&1 >/dev/null | grep -q "1 rank(s) from their summaries, 1 from their rank files"
	ok $? "a summary another user wrote is not read (it could say anything)"
else
	skip "not root: cannot give a summary to another user"
fi
rm "$T/fx/ddp-clean/step0/rank1.gpr"
"$B/gpuprof" report --format=json "$T/fx/ddp-clean" | python3 -c 'import json,sys; j=json.load(sys.stdin); assert j["job"] and len(j["ranks"]) == 1, j["job"]' &&
	"$B/gpuprof" report "$T/fx/ddp-clean" | grep -q "1 of 2 tasks have no rank file"
ok $? "from a summary, the job id and the task count its header gave: a missing rank is said"
# what writers killed before their rename leave: removed once stale, never someone else's
s=$T/fx/leak/step0
: >"$s/.rank0.gps.tmp.4242"; touch -d '-2 min' "$s/.rank0.gps.tmp.4242"
: >"$s/.rank0.gps.tmp.4243" # a summariser writing now
: >"$s/.rank0.gpr.tmp.4244"; touch -d '-20 min' "$s/.rank0.gpr.tmp.4244"
: >"$s/.rank0.gpr.tmp.4245"; touch -d '-2 min' "$s/.rank0.gpr.tmp.4245" # a large copy
: >"$s/.rank1.gps.tmp.4246"; touch -d '-2 min' "$s/.rank1.gps.tmp.4246"
: >"$s/.notes.tmp.4247"; touch -d '-20 min' "$s/.notes.tmp.4247" # not ours to judge
[ "$(id -u)" = 0 ] && chown nobody "$s/.rank1.gps.tmp.4246"
"$B/gpuprof" report "$T/fx/leak" >/dev/null 2>&1
left=$(cd "$s" && LC_ALL=C ls -A | grep tmp | tr '\n' ' ')
if [ "$(id -u)" = 0 ]; then want=".notes.tmp.4247 .rank0.gpr.tmp.4245 .rank0.gps.tmp.4243 .rank1.gps.tmp.4246 "; else want=".notes.tmp.4247 .rank0.gpr.tmp.4245 .rank0.gps.tmp.4243 "; fi
[ "$left" = "$want" ]
ok $? "the report removes stale temporaries of summaries (30 s) and rank files (10 min), its user's only (left: $left)"
rm -f "$s"/.*.tmp.*
rm -f "$T/fx/leak/step0/rank0.gps"
"$B/gpuprof" summarize "$T/fx/leak/step0/rank0.gpr" && [ -s "$T/fx/leak/step0/rank0.gps" ]
ok $? "gpuprof summarize writes a rank's summary"
"$B/gpuprof" summarize "$T/nope/rank0.gpr" 2>"$T/err"; [ $? -eq 1 ] && grep -q "summarize" "$T/err"
ok $? "gpuprof summarize of a missing rank file: an error, exit 1"
# many ranks listed (wave 12): a note that holds for every rank said once, not once a rank
# ("all 64 ranks: all 37 post-warm-up steps were traced ..."; it was 64 lines of it), the
# ranks a note holds for named together, and no heading with nothing under it (the
# framework's, above 32 ranks, where no rank is listed)
"$B/bench/synth-job" --ranks 64 --events 4000 --torch --out "$T/m64" >/dev/null &&
	"$B/gpuprof" report --ranks=0-63 "$T/m64" >"$T/m64.txt" &&
	"$B/gpuprof" report "$T/m64" >"$T/m64.default.txt" &&
	"$B/gpuprof" report --ranks=2,5-7 "$T/m64" >"$T/m64.some.txt"
ok $? "report on 64 ranks with the PyTorch integration's line, listed and not"
n=$(grep -c "post-warm-up steps were traced at kernel level" "$T/m64.txt")
t=$(grep -c "torch 2.11.0+cu130 (synthetic)" "$T/m64.txt")
grep -q "^all 64 ranks: all 37 post-warm-up steps were traced" "$T/m64.txt" && [ "$n" = 1 ] &&
	grep -q "^all 64 ranks: torch 2.11.0" "$T/m64.txt" && [ "$t" = 1 ]
ok $? "64 ranks listed: the traced-steps note once for all 64 ($n), the framework's line once ($t)"
grep -q "^ranks 2,5-7: torch 2.11.0+cu130 (synthetic)" "$T/m64.some.txt"
ok $? "--ranks=2,5-7: the ranks a note holds for named together ($(grep -m1 'torch 2.11' "$T/m64.some.txt" | cut -c1-40))"
! grep -q "== The framework" "$T/m64.default.txt"
ok $? "64 ranks, none listed: no framework heading with nothing under it"
python3 - "$T/m64.txt" "$T/m64.default.txt" <<'PY5'
import re, sys
for f in sys.argv[1:]:
    heads = [l for l in open(f).read().split("\n\n") if l.startswith("== ")]
    empty = [h.split("\n")[0] for h in heads if len(h.strip().split("\n")) < 2]
    assert not empty, (f, empty)
PY5
ok $? "no section of either report is a heading alone"
# the steps line says the job's count, not rank 0's (wave 12): the same on every rank,
# said once; two ranks that stopped early (36 steps, the others 40), the range and which
"$B/bench/synth-job" --ranks 8 --events 4000 --out "$T/cnt" >/dev/null &&
	"$B/gpuprof" report "$T/cnt" | unwrap >"$T/cnt.same" &&
	"$B/bench/synth-job" --ranks 8 --events 3600 --first 6 --out "$T/cnt" >/dev/null &&
	"$B/gpuprof" report "$T/cnt" | unwrap >"$T/cnt.txt" &&
	"$B/gpuprof" report --format=json "$T/cnt" >"$T/cnt.json"
ok $? "8 ranks, then ranks 6 and 7 written again with 36 steps"
grep -q "^steps: NVTX range 'train_step' (40 times), the same on all 8 ranks;" "$T/cnt.same"
ok $? "the same count on every rank: said once for all 8 ($(grep -m1 '^steps:' "$T/cnt.same" | cut -c1-70))"
grep -q "^steps: 36 to 40 a rank (40 on 6 of the 8 ranks with steps; ranks 6-7: 36); rank 0's: NVTX range 'train_step' (40 times);" "$T/cnt.txt"
ok $? "counts that differ: the range and the ranks that differ ($(grep -m1 '^steps:' "$T/cnt.txt" | cut -c1-90))"
python3 - "$T/cnt.json" <<'PY6'
import json, sys
c = json.load(open(sys.argv[1]))["step_counts"]
assert c == {"ranks": 8, "common": 40, "min": 36, "max": 40, "ranks_differing": 2,
             "differing": [{"rank": 6, "last": 7, "count": 36}]}, c
PY6
ok $? "report.json's step_counts: the common count, the range, the ranks that differ"
# every synthetic job's text report within 100 columns (issue 49 item 6): the large jobs'
# distributions and node lines, the windows, the threads; report.json's findings whole
n=0; bad=""
for r in "$T"/*/report.txt; do
	[ -f "$r" ] || continue
	n=$((n + 1))
	python3 "$(dirname "$0")/textwidth.py" check "$r" "$(dirname "$r")/report.json" >"$T/w.out" ||
		bad="$bad $(basename "$(dirname "$r")"): $(head -1 "$T/w.out")"
done
[ "$n" -ge 8 ] && [ -z "$bad" ]; ok $? "the $n synthetic jobs' report.txt: no line over 100 characters${bad:+ (not:$bad)}"
# the SM clock either side of a slowdown is the rank's own GPU's, within the steps: the
# agent samples 8 GPUs, the rank's (device 0) falls 1980 -> 1410 MHz at the 1.5x shift, the
# 7 others stay; 30 idle start-up samples at 210 MHz come before the first step (before:
# no fall said, the 7 others' 1980 either side: the tester, session 33, D3)
"$B/bench/synth-job" --ranks 1 --events 30000 --shift-at 120 --clock --out "$T/clk" >/dev/null &&
	"$B/gpuprof" report "$T/clk" >"$T/clk.txt" &&
	grep -q "Steps got 1.5x slower from step 120 on" "$T/clk.txt" &&
	tr '\n' ' ' <"$T/clk.txt" | tr -s ' ' | grep -q "NVML's SM clock fell at the onset, 1980 MHz before, 1410 MHz after"
ok $? "a slowdown's SM clock is its own GPU's within the steps: 1980 MHz before, 1410 after"
# ... and of 9000 steps (over the 8192 whose every step the search reads: the medians of 512
# blocks), 1.5x from step 5000: the evidence one clause after another, not "(1.50x); (found
# on ..." (the tester, session 33: D7); of 1030 steps, every step searched: no such clause
"$B/bench/synth-job" --ranks 1 --events 900000 --shift-at 5000 --out "$T/long2" >/dev/null &&
	"$B/gpuprof" report "$T/long2" >"$T/long2.txt" &&
	tr '\n' ' ' <"$T/long2.txt" | tr -s ' ' >"$T/long2.one" &&
	grep -q "Steps got 1.5x slower from step 5000 on" "$T/long2.one" &&
	grep -q "x); found on the medians of 512 blocks of its 8997 steps (over 8192 steps)" "$T/long2.one" &&
	! grep -q "); (found" "$T/long2.one" &&
	"$B/bench/synth-job" --ranks 1 --events 103000 --shift-at 515 --out "$T/long3" >/dev/null &&
	"$B/gpuprof" report "$T/long3" | tr '\n' ' ' | tr -s ' ' >"$T/long3.one" &&
	grep -q "Steps got 1.5x slower from step 515 on" "$T/long3.one" &&
	! grep -q "found on the medians" "$T/long3.one"
ok $? "a slowdown over 9000 steps: its evidence's clauses ($(grep -o '[0-9.]*x); .\{0,40\}' "$T/long2.one" | head -1)); over 1030, every step searched"
done_testing
