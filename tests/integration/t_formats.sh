#!/bin/bash
# One figure in every output (issue 49): each committed fixture (and a synthetic job of
# many ranks and steps) rendered as JSON, text and HTML, and every figure the text and
# the HTML show of a rank or of the job held to the JSON field it claims to be
# (formats_check.py, reading the columns from `gpuprof fields --format=tables`), every
# line of the text within 100 characters (textwidth.py), and the Chrome trace's step
# slices and the Kineto export's ProfilerStep#N as documented (steps_check.py).
. "$(dirname "$0")/tap.sh"
B=${GP_BUILD:?}
H=$(cd "$(dirname "$0")" && pwd)
F=$(cd "$H/../fixtures" && pwd)
ls "$F"/*/step*/rank*.gpr >/dev/null 2>&1 || skip_all "no fixtures committed"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
export GPUPROF_REPORT_SUMMARIES=0 # nothing written into the tree
"$B/gpuprof" fields --format=tables >"$T/tables.tsv"; ok $? "gpuprof fields --format=tables"
n=$(cut -f1 "$T/tables.tsv" | grep -vx attribution | sort -u | wc -l)
ok $((n == 4 ? 0 : 1)) "four per-rank tables ($n)"
n=$(grep -c '^attribution' "$T/tables.tsv")
ok $((n == 5 ? 0 : 1)) "and the five columns of the attribution tables ($n)"
# every per-rank column names a field of report.json (the attribution's: formats_check.py)
bad=$(grep -v '^attribution' "$T/tables.tsv" | cut -f3 | grep -v '^-$' | while read -r k; do
	"$B/gpuprof" fields | awk '{print $1}' | grep -qx "$k" || echo "$k"; done)
ok $([ -z "$bad" ] && echo 0 || echo 1) "every column is a field of report.json${bad:+ (not: $bad)}"

one() { # NAME DIR
	"$B/gpuprof" report --format=json "$2" >"$T/$1.json" 2>/dev/null &&
		"$B/gpuprof" report --format=text "$2" >"$T/$1.txt" 2>/dev/null &&
		"$B/gpuprof" export --format=html --output="$T/$1.html" "$2" 2>/dev/null
	ok $? "$1: json, text and html"
	out=$(python3 "$H/formats_check.py" "$T/tables.tsv" "$T/$1.json" "$T/$1.txt" "$T/$1.html" 2>&1)
	ok $? "$1: every figure of the text and the HTML is its JSON field's: $(echo "$out" | tail -1)"
	[ -n "$out" ] && echo "$out" | head -n -1 | head -5 | sed 's/^/# /'
	# readable at a glance (issue 49 item 6): no line over 100 characters, and each
	# finding's words whole once the cut lines are joined back
	out=$(python3 "$H/textwidth.py" check "$T/$1.txt" "$T/$1.json" 2>&1)
	ok $? "$1: report.txt within 100 columns: $(echo "$out" | tail -1)"
	[ -n "$out" ] && echo "$out" | head -n -1 | head -5 | sed 's/^/# /'
	# the kernel table's names say what each kernel is (wave 12): no namespace, no
	# parameters, the functor or op whole, no two rows alike (kernel_names.py)
	out=$(python3 "$H/kernel_names.py" "$T/$1.txt" "$T/$1.json" 2>&1)
	ok $? "$1: the kernel table's names are readable and distinct: $(echo "$out" | tail -1)"
	[ -n "$out" ] && echo "$out" | head -n -1 | head -5 | sed 's/^/# /'
	# the Chrome trace's step slices as doc/report.md says them: each step from its start
	# to the next one's start, one a step of the report's (steps_check.py)
	if python3 -c 'import json,sys; sys.exit(not any(r["steps"]["count"] for r in json.load(open(sys.argv[1]))["ranks"]))' "$T/$1.json"; then
		"$B/gpuprof" export --format=chrome --output="$T/$1.trace.json" "$2" 2>/dev/null &&
			out=$(python3 "$H/steps_check.py" "$T/$1.trace.json" "$T/$1.json" 2>&1)
		ok $? "$1: the Chrome trace's step slices run from a step's start to the next one's: $(echo "$out" | tail -1)"
		[ -n "$out" ] && echo "$out" | head -n -1 | head -5 | sed 's/^/# /'
		rm -f "$T/$1.trace.json"
		# the Kineto export's ProfilerStep#N: the same spans, as PyTorch's traces and HTA
		# draw them (never the step range alone, never overlapping)
		"$B/gpuprof" export --format=kineto --output="$T/$1.kt" "$2" 2>/dev/null &&
			out=$(python3 "$H/steps_check.py" --kineto "$T/$1.kt" "$T/$1.json" 2>&1)
		ok $? "$1: the Kineto export's ProfilerStep#N run from a step's start to the next one's: $(echo "$out" | tail -1)"
		[ -n "$out" ] && echo "$out" | head -n -1 | head -5 | sed 's/^/# /'
		rm -rf "$T/$1.kt"
	fi
	true
}
for d in "$F"/*/; do
	ls "$d"step*/rank*.gpr >/dev/null 2>&1 || continue
	one "$(basename "$d")" "$d"
done
# the AdminComment line's busy and idle are the report's (the time table's busy % and the
# sum of its idle causes: host, sync, deps, other; span-weighted over the ranks), to the
# point it rounds to: not busy with communication in it, nor idle without the sync idle
bad=""
for d in "$F"/*/; do
	ls "$d"step*/rank*.gpr >/dev/null 2>&1 || continue
	n=$(basename "$d")
	line=$("$B/gpuprof" report --summary-line "$d" 2>/dev/null)
	why=$(python3 - "$T/$n.json" "$line" <<'PY'
import json, re, sys
j = json.load(open(sys.argv[1]))
m = re.search(r"busy=(\d+)% idle=(\d+)%", sys.argv[2])
# one figure: the line's busy and idle are report.json's busy_pct and idle_pct (computed
# once, report/job.c), null where the line says '-'
jb, ji = j["busy_pct"], j["idle_pct"]
if (m is None) != (jb is None or ji is None) or (m and (abs(int(m.group(1)) - jb) > 0.5001 or abs(int(m.group(2)) - ji) > 0.5001)):
    print("busy=%s idle=%s for report.json's busy_pct %s, idle_pct %s" % (m and m.group(1), m and m.group(2), jb, ji))
span = sum(r["gpu"]["span_ns"] for r in j["ranks"])
if not m or not span:
    sys.exit(0)
g = lambda k: sum(r["gpu"][k] * r["gpu"]["span_ns"] for r in j["ranks"]) / span
busy = g("busy_pct")
idle = sum(g(k) for k in ("idle_host_wait_pct", "idle_sync_pct", "idle_kernel_wait_pct", "idle_other_pct"))
if abs(int(m.group(1)) - busy) > 0.51 or abs(int(m.group(2)) - idle) > 0.51:
    print("busy=%s%% idle=%s%% for %.1f and %.1f" % (m.group(1), m.group(2), busy, idle))
p = re.search(r"peak=([0-9.]+)GiB|peak=(-) ", sys.argv[2])
pb = j["accounting"]["peak_bytes"]  # null: not measured, the line's '-'
if not p or (p.group(2) and pb is not None) or (p.group(1) and (pb is None or abs(float(p.group(1)) - pb / 2**30) > 0.051)):
    print("peak=%s for the record's %s bytes" % (p and (p.group(1) or p.group(2)), pb))
PY
)
	[ -n "$why" ] && bad="$bad $n: $why;"
done
ok $([ -z "$bad" ] && echo 0 || echo 1) "the summary line's busy, idle and peak are the report's (its time table, report.json's busy_pct and idle_pct, its accounting record)${bad:+:$bad}"
# doc/report.md's example of a finding ("How to read the report") is a report's own text
python3 - "$H/../../doc/report.md" "$T/field-sgd-sync.txt" <<'PY'
import sys
doc = open(sys.argv[1]).read()
i = doc.index("```\n1. "); j = doc.index("```", i + 3)
sys.exit(0 if doc[i + 4:j] in open(sys.argv[2]).read() else 1)
PY
ok $? "doc/report.md's example finding is field-sgd-sync's report.txt, line for line"
# the attribution tables were read back, not skipped: JAX's operations and jitted functions
grep -q "4 attribution tables" <<<"$(python3 "$H/formats_check.py" "$T/tables.tsv" "$T/field-jax.json" "$T/field-jax.txt" "$T/field-jax.html")"
ok $? "field-jax: its text and HTML tables of kernel time by operation and function checked"
# a synthetic job of 40 ranks: the HTML's rows are the fastest, median and slowest
if "$B/bench/synth-job" --ranks 40 --events 4000 --out "$T/synth40" >/dev/null; then
	one synth40 "$T/synth40"
	grep -q '<td class="who">[0-9]* (slowest)</td>' "$T/synth40.html"
	ok $? "synth40: the HTML names its slowest rank's row"
else
	ok 1 "the job the checks above read was not made (synth-job, cp or gpuprof run failed): none of them ran"
fi
# its nodes' lines with names past 16 characters: each name whole (all 5 read
# "dgx-h100-rack07-" when cut at 16), one rank's line singular, no peak shown as 0 B
if "$B/bench/synth-job" --ranks 33 --events 400 --node-prefix dgx-h100-rack07-n --out "$T/synth33" >/dev/null; then
	"$B/gpuprof" report "$T/synth33" >"$T/synth33.txt" 2>/dev/null
	n=$(grep -cE '^  node dgx-h100-rack07-n00[0-4] ' "$T/synth33.txt")
	grep -qE '^  node dgx-h100-rack07-n004 +1 rank,' "$T/synth33.txt" && [ "$n" = 5 ] &&
		! grep -q '^  node .*largest peak 0 B' "$T/synth33.txt"
	ok $? "synth33: each node's line names it whole ($n of 5), '1 rank'"
else
	ok 1 "the job the checks above read was not made (synth-job, cp or gpuprof run failed): none of them ran"
fi
# the steps line's ranks that differ, grouped as the pipeline's runs (report.json
# step_counts.differing): 16 ranks of 40 steps and 8 of 20, "ranks 16-23: 20" (one rank a
# line of the 8 before)
if "$B/bench/synth-job" --ranks 16 --events 4000 --out "$T/sc24" >/dev/null &&
	"$B/bench/synth-job" --ranks 24 --first 16 --events 2000 --out "$T/sc24b" >/dev/null &&
	cp "$T"/sc24b/step0/rank*.gpr "$T/sc24/step0/" &&
	"$B/gpuprof" report "$T/sc24" | unwrap >"$T/sc24.txt" &&
	"$B/gpuprof" report --format=json "$T/sc24" >"$T/sc24.json"; then
	out=$(python3 - "$T/sc24.txt" "$T/sc24.json" <<'PY'
import json, re, sys
t, j = open(sys.argv[1]).read(), json.load(open(sys.argv[2]))["step_counts"]
m = re.search(r"^steps: (\d+) to (\d+) a rank \((\d+) on (\d+) of the (\d+) ranks with steps; (.*?)\); rank", t, re.M)
assert m, "no steps line"
want = ", ".join(("ranks %d-%d: %d" % (d["rank"], d["last"], d["count"])) if d["last"] > d["rank"]
                 else ("rank %d: %d" % (d["rank"], d["count"])) for d in j["differing"])
assert (int(m.group(1)), int(m.group(2))) == (j["min"], j["max"]), m.groups()
assert m.group(6) == want == "ranks 16-23: 20", (m.group(6), want)
print("the steps line: " + m.group(6))
PY
)
	ok $? "the steps line groups the ranks that differ as report.json's step_counts: $out"
else
	ok 1 "the job the checks above read was not made (synth-job, cp or gpuprof run failed): none of them ran"
fi
# ranks without steps (issue 50): never the HTML's fastest rank, not in its busy spread;
# how many were left out said. 40 ranks of 40 steps and 4 of one step (none after warm-up)
if "$B/bench/synth-job" --ranks 40 --events 4000 --out "$T/sl44" >/dev/null &&
	"$B/bench/synth-job" --ranks 44 --first 40 --events 100 --out "$T/sl44b" >/dev/null &&
	cp "$T"/sl44b/step0/rank*.gpr "$T/sl44/step0/"; then
	one sl44 "$T/sl44"
	out=$(python3 - "$T/sl44.html" "$T/sl44.json" <<'PY'
import json, re, sys
h, j = open(sys.argv[1]).read(), json.load(open(sys.argv[2]))
stepless = {r["rank"] for r in j["ranks"] if not r["steps"]["count"] or r["steps"]["median_ms"] is None}
assert len(stepless) == 4, stepless
who = [int(w) for w in re.findall(r'<td class="who">(\d+) \(', h)]
assert who and not stepless & set(who), ("a rank without steps picked", who)
named = [int(w) for w in re.findall(r"\(rank (\d+)\)", h[h.index('id="busy"'):h.index("</svg>", h.index('id="busy"'))])]
assert named and not stepless & set(named), ("a rank without steps in the busy spread", named)
assert "4 ranks without steps left out" in h and "4 without steps left out" in h
print("rows %s, the busy spread's ranks %s: none of the 4 without steps, said" % (who[:5], sorted(set(named))))
PY
)
	ok $? "the HTML's rank rows and busy spread leave out the ranks without steps: $out"
else
	ok 1 "the job the checks above read was not made (synth-job, cp or gpuprof run failed): none of them ran"
fi
# a run with neither steps nor memory data (gpuprof run of a program that never touches the
# GPU): every writer held to its JSON (formats_check: '-' where null), no peak as 0
(cd "$T" && unset SLURM_JOB_ID SLURM_STEP_ID SLURM_PROCID SLURM_RESTART_COUNT &&
	"$B/gpuprof" run --modes=nvtx -o "$T/bare" -- true >/dev/null 2>&1)
if [ -f "$T/bare/step0/rank0.gpr" ]; then
	one bare "$T/bare"
	line=$("$B/gpuprof" report --summary-line "$T/bare" 2>/dev/null)
	grep -q " peak=- " <<<"$line" && grep -q " step=- " <<<"$line" && ! grep -q "peak 0" "$T/bare.txt"
	ok $? "bare: the summary line's peak and step '-', no peak of 0 B ($line)"
	python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert all(n["peak_bytes"] is None for n in j["nodes"]), j["nodes"]' "$T/bare.json"
	ok $? "bare: report.json's nodes' peak_bytes null"
else
	ok 1 "the job the checks above read was not made (synth-job, cp or gpuprof run failed): none of them ran"
fi
# the node lines' figures are the pipeline's (report.json nodes, node_step_median_ms), not
# the text writer's own: each node's ranks, median step and peak; past 32 nodes the
# medians' min, median and max and the slowest named
if "$B/bench/synth-job" --ranks 300 --events 400 --out "$T/synth300" >/dev/null &&
	"$B/gpuprof" report "$T/synth33" | unwrap >"$T/n33.txt" &&
	"$B/gpuprof" report --format=json "$T/synth33" >"$T/n33.json" &&
	"$B/gpuprof" report "$T/synth300" | unwrap >"$T/n300.txt" &&
	"$B/gpuprof" report --format=json "$T/synth300" >"$T/n300.json"; then
	out=$(python3 - "$T/n33.txt" "$T/n33.json" "$T/n300.txt" "$T/n300.json" <<'PY'
import json, re, sys
UNIT = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}
def same_bytes(shown, b):  # "192 MiB" for 201326592, to the digits shown
    v, u = shown.split()
    return abs(float(v) * UNIT[u] - b) <= 0.01 * b + UNIT[u] * 0.05
t, j = open(sys.argv[1]).read(), json.load(open(sys.argv[2]))
lines = re.findall(r"^  node (\S+) +(\d+) ranks?, median step ([0-9.]+) ms, largest peak (.+)$", t, re.M)
assert len(lines) == len(j["nodes"]) == 5, (len(lines), len(j["nodes"]))
for (name, n, med, peak), nd in zip(lines, j["nodes"]):
    assert (name, int(n), med) == (nd["node"], nd["ranks"], "%.3f" % nd["step_median_ms"]), (name, nd)
    assert (peak == "-") == (nd["peak_bytes"] is None), (peak, nd["peak_bytes"])
    assert peak == "-" or same_bytes(peak, nd["peak_bytes"]), (peak, nd["peak_bytes"])
t, j = open(sys.argv[3]).read(), json.load(open(sys.argv[4]))
m = re.search(r"(\d+) nodes: median step per node min ([0-9.]+), median ([0-9.]+), max ([0-9.]+) ms; slowest: (\S+) ([0-9.]+)", t)
meds = sorted(n["step_median_ms"] for n in j["nodes"])
slow = max(j["nodes"], key=lambda n: n["step_median_ms"])
want = (str(len(j["nodes"])), "%.3f" % meds[0], "%.3f" % j["node_step_median_ms"], "%.3f" % meds[-1], slow["node"])
assert m and m.groups()[:5] == want, (m and m.groups(), want)
print("5 node lines and the %s nodes' line are report.json's" % want[0])
PY
)
	ok $? "the node lines' figures are report.json's nodes: $out"
else
	ok 1 "the job the checks above read was not made (synth-job, cp or gpuprof run failed): none of them ran"
fi

# the checker itself finds a figure that differs from its field
python3 - "$T/ddp-imbalanced.txt" "$T/bad.txt" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
# rank 1's busy %: the third number of its line under the time table's heading
lines = t.split("\n")
i = next(i for i, l in enumerate(lines) if l.startswith("rank    kernels per step  busy %"))
row = lines[i + 2]
parts = row.split()
parts_new = row.replace(" " + parts[3] + " ", " " + "%.1f" % (float(parts[3]) + 3) + " ", 1)
lines[i + 2] = parts_new
open(sys.argv[2], "w").write("\n".join(lines))
PY
out=$(python3 "$H/formats_check.py" "$T/tables.tsv" "$T/ddp-imbalanced.json" "$T/bad.txt" "$T/ddp-imbalanced.html")
[ $? -ne 0 ] && echo "$out" | grep -q "gpu.busy_pct shows"
ok $? "the check catches a busy % 3 points off its field ($(echo "$out" | head -1))"
sed 's|<td data-key="gpu.comm_only_pct">[0-9.]*</td>|<td data-key="gpu.comm_only_pct">4.7</td>|' \
	"$T/ddp-imbalanced.html" >"$T/bad.html"
out=$(python3 "$H/formats_check.py" "$T/tables.tsv" "$T/ddp-imbalanced.json" "$T/ddp-imbalanced.txt" "$T/bad.html")
[ $? -ne 0 ] && echo "$out" | grep -q "gpu.comm_only_pct shows 4.7"
ok $? "... and an HTML comm % of 4.7 where its field says otherwise (the old drift: 4.7 for 30.5)"
# ... and an attribution table's share 1 point off its row's share_pct, in the text and the HTML
python3 - "$T/field-jax.txt" "$T/bad-attr.txt" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().split("\n")
i = next(i for i, l in enumerate(lines) if re.match(r"operation +GPU ms  share  kernels", l))
m = re.search(r" (\d+\.\d)%", lines[i + 1])
lines[i + 1] = lines[i + 1][:m.start(1)] + "%5.1f" % (float(m.group(1)) + 1) + lines[i + 1][m.end(1):]
open(sys.argv[2], "w").write("\n".join(lines))
PY
out=$(python3 "$H/formats_check.py" "$T/tables.tsv" "$T/field-jax.json" "$T/bad-attr.txt" "$T/field-jax.html")
[ $? -ne 0 ] && echo "$out" | grep -q "text operations .*share_pct shows"
ok $? "the check catches an operation's share 1 point off in the text ($(echo "$out" | head -1 | cut -c1-120))"
python3 - "$T/field-jax.html" "$T/bad-attr.html" <<'PY'
import re, sys
page = open(sys.argv[1]).read()
t = page.index('<table id="attr-lines">')
m = re.compile(r'<td data-key="share_pct">([0-9.]+) %</td>').search(page, t)
page = page[:m.start(1)] + "%.1f" % (float(m.group(1)) - 1) + page[m.end(1):]
open(sys.argv[2], "w").write(page)
PY
out=$(python3 "$H/formats_check.py" "$T/tables.tsv" "$T/field-jax.json" "$T/field-jax.txt" "$T/bad-attr.html")
[ $? -ne 0 ] && echo "$out" | grep -q "html attr-lines .*share_pct shows"
ok $? "... and a function's share 1 point off in the HTML ($(echo "$out" | head -1 | cut -c1-120))"
# the attribution tables read by their heading's positions, not fixed widths: the same
# table with its share column 2 wider reads back clean (fixed widths found no table); and
# a cell one column left of its heading's right edge is caught, in an attribution table and
# in a per-rank one (a reader that strips what lies between two positions read it as right)
python3 - "$T/field-jax.txt" "$T/ddp-imbalanced.txt" "$T" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().split("\n")
heads = [i for i, l in enumerate(lines) if re.match(r"(operation|function) +GPU ms  share  kernels", l)]
assert len(heads) == 2, heads
wide = list(lines)
for i in heads:  # 2 spaces after the GPU ms column's right edge: the share column 2 wider
    p = lines[i].index("GPU ms") + len("GPU ms")
    j = i
    while j < len(wide) and wide[j] and not wide[j].startswith("share:"):
        assert wide[j][p] == " ", (wide[j], p)
        wide[j] = wide[j][:p] + "  " + wide[j][p:]
        j += 1
open(sys.argv[3] + "/wide-attr.txt", "w").write("\n".join(wide))
def shift(lines, i, head, row):  # the cell under head in line row moved one column left
    e = lines[i].index(head) + len(head)
    r = lines[row]
    a = r.rfind(" ", 0, e) + 1
    assert r[a - 1] == " " and r[a:e].strip(), (r, a, e)
    lines[row] = r[:a - 1] + r[a:e] + " " + r[e:]
shift(lines, heads[0], "GPU ms", heads[0] + 1)
open(sys.argv[3] + "/shift-attr.txt", "w").write("\n".join(lines))
rk = open(sys.argv[2]).read().split("\n")
i = next(i for i, l in enumerate(rk) if l.startswith("rank    kernels per step  busy %"))
shift(rk, i, "busy %", i + 2)
open(sys.argv[3] + "/shift-rank.txt", "w").write("\n".join(rk))
PY
out=$(python3 "$H/formats_check.py" "$T/tables.tsv" "$T/field-jax.json" "$T/wide-attr.txt" "$T/field-jax.html")
ok $? "field-jax with its attribution tables' share column 2 wider: read by the heading, clean ($(echo "$out" | tail -1))"
grep -q "4 attribution tables" <<<"$out"; ok $? "... all 4 attribution tables read"
out=$(python3 "$H/formats_check.py" "$T/tables.tsv" "$T/field-jax.json" "$T/shift-attr.txt" "$T/field-jax.html")
[ $? -ne 0 ] && echo "$out" | grep -q "text operations .*: the cell of 'GPU ms' is not under its heading"
ok $? "the check catches an operation's GPU ms one column left of its heading ($(echo "$out" | head -1 | cut -c1-120))"
out=$(python3 "$H/formats_check.py" "$T/tables.tsv" "$T/ddp-imbalanced.json" "$T/shift-rank.txt" "$T/ddp-imbalanced.html")
[ $? -ne 0 ] && echo "$out" | grep -q "rank 1: the cell of 'busy %' is not under its heading"
ok $? "... and a rank's busy % one column left of its heading ($(echo "$out" | head -1 | cut -c1-120))"
# the per-rank tables' columns as wide as the job's own cells (issue 50's follow-up: the
# outcome was cut at 9 characters, "ended (st", and the node at 8): a node of 30 characters
# and a launcher's rank's outcome shown whole, one of 60 cut at 40 with "..."; each cell
# read back by its heading's positions and held to its JSON field, no line over 100
if [ -x "$B/tests/fuzz/mkhostile" ]; then
	for n in 30 60; do
		"$B/tests/fuzz/mkhostile" wide $n "$T/wide$n" && one wide$n "$T/wide$n"
	done
	node() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ranks"][0]["node"])' "$1"; }
	node30=$(node "$T/wide30.json") node60=$(node "$T/wide60.json")
	grep -q "^0 *$node30 ended (status with its launcher) " "$T/wide30.txt"
	ok $? "wide30: its node ($node30) and its outcome whole in the text's row"
	grep -q "^0 *${node60:0:37}\.\.\. ended (status with its launcher) " "$T/wide60.txt"
	ok $? "wide60: its node cut at 40 characters with '...', its outcome whole"
	# the check reads the cells: a node cut where the JSON's is whole is caught (the
	# columns kept where they were)
	sed "s/$node30/$(printf "%-30s" "${node30:0:8}")/" "$T/wide30.txt" >"$T/bad-wide.txt"
	out=$(python3 "$H/formats_check.py" "$T/tables.tsv" "$T/wide30.json" "$T/bad-wide.txt" "$T/wide30.html")
	[ $? -ne 0 ] && echo "$out" | grep -q "text slow rank 0: node shows '${node30:0:8}'"
	ok $? "the check catches a node's name cut in the text ($(echo "$out" | head -1 | cut -c1-120))"
	# a node whose name holds bytes that are not UTF-8: its column as wide as what the
	# text shows ('?' each), not as its valid characters (9: the row ran past 100
	# characters and wrapped, the outcome on a line of its own)
	"$B/tests/fuzz/mkhostile" widebad 30 "$T/widebad" &&
		"$B/gpuprof" report "$T/widebad" >"$T/widebad.txt" 2>/dev/null
	long=$(awk 'length($0) > 100' "$T/widebad.txt" | wc -l)
	grep -qE '^0 +gpu-node-\?{21} ended \(status with its launcher\) ' "$T/widebad.txt" && [ "$long" = 0 ]
	ok $? "a node with stray bytes: its row whole on one line, no line over 100 ($long)"
else
	skip "mkhostile not built"
	skip "mkhostile not built"
fi
# one truth for the kernels' shares: computed once (report/job.c), every writer prints it:
# each kernel's share (text top 15, HTML top 12, CSV, report.json kernels[].share) and each
# kind's (text, HTML, report.json kernel_kinds[].share) are one figure at each output's
# precision (before: text, HTML and CSV each summed the kernels and divided; report.json
# had no share)
for n in ddp-imbalanced field-attr; do
	cp -r "$F/$n" "$T/sh-$n" &&
		"$B/gpuprof" report --format=json "$T/sh-$n" >"$T/sh-$n.json" 2>/dev/null &&
		"$B/gpuprof" report "$T/sh-$n" >"$T/sh-$n.txt" 2>/dev/null &&
		"$B/gpuprof" export --format=html --output="$T/sh-$n.html" "$T/sh-$n" 2>/dev/null &&
		"$B/gpuprof" export --format=csv --table=kernels --output="$T/sh-$n.csv" "$T/sh-$n" 2>/dev/null
	out=$(python3 - "$T/sh-$n" 2>&1 <<'PY'
import csv, json, re, sys
p = sys.argv[1]
j = json.load(open(p + ".json"))
ks, kinds = [k["share"] for k in j["kernels"]], j["kernel_kinds"]
assert ks and kinds and abs(sum(k["share"] for k in kinds) - 1) < 1e-3, kinds
t = open(p + ".txt").read()
rows = t.split("Top kernels by total GPU time")[1].split("\nmean: ")[0].splitlines()
rows = rows[[i for i, r in enumerate(rows) if re.match(r"name +calls ", r)][0] + 1:]
text = [float(re.findall(r"(\d+\.\d)%", r)[-1]) for r in rows]
kt = t.split("Kernel time by kind")[1].split("\n\n")[0].splitlines()
kt = kt[[i for i, r in enumerate(kt) if re.match(r"kind +total ms", r)][0] + 1:]
text_kinds = {r[:24].strip(): float(re.search(r" (\d+\.\d)% ", r).group(1)) for r in kt}
h = open(p + ".html").read()
html = [float(x) for x in re.findall(r">(\d+\.\d)% \([0-9.]+ ms; median", h)]
hk = re.search(r"Kernel time by kind \(read from the kernels' names\):([^<]*)</p>", h).group(1)
html_kinds = {m[0].strip(): float(m[1]) for m in re.findall(r"([^;%]+?) (\d+\.\d)%", hk)}
c = list(csv.DictReader(open(p + ".csv", newline="")))
assert len(text) == min(15, len(ks)) and len(html) == min(12, len(ks)), (len(text), len(html))
near = lambda shown, share: abs(shown - 100 * share) <= 0.05 + 1e-9
for i, s in enumerate(ks):
    assert i >= len(text) or near(text[i], s), ("text", i, text[i], s)
    assert i >= len(html) or near(html[i], s), ("html", i, html[i], s)
    assert "%.6f" % s == c[i]["share"], ("csv", i, c[i]["share"], s)
for k in kinds:
    assert near(text_kinds[k["kind"]], k["share"]), ("text kind", k, text_kinds)
    assert near(html_kinds[k["kind"]], k["share"]), ("html kind", k, html_kinds)
print("%d kernels, %d kinds" % (len(ks), len(kinds)))
PY
)
	ok $? "$n: each kernel's and kind's share one figure in text, HTML, CSV and JSON ($(echo "$out" | tail -1 | cut -c1-150))"
done
done_testing
