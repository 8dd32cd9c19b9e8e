#!/bin/bash
# The HTML report as a person reads it: self-contained (no script, nothing fetched), the
# findings first with what each saves, plots with units, legends, ranks named and SI ticks,
# tables as tables; for 1, 2 and 64 ranks (a band with the outlier ranks named, not 64
# lines), and NVML's plots in a job without kernel records. Each page is rendered in
# headless Chromium (Debian's chromium), whose screenshot must show the plots drawn.
. "$(dirname "$0")/tap.sh"
B=${GP_BUILD:?}
F=$(cd "$(dirname "$0")/../fixtures" && pwd)
[ -d "$F/straggler" ] || skip_all "no fixtures"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
H=$(dirname "$0")
"$B/gpuprof" export --format=html --output="$T/r1.html" "$F/leak"; ok $? "html export, 1 rank (leak)"
"$B/gpuprof" export --format=html --output="$T/r2.html" "$F/straggler"; ok $? "html export, 2 ranks (straggler)"
"$B/bench/synth-job" --ranks 64 --events 2000 --out "$T/j64" >/dev/null &&
	"$B/gpuprof" export --format=html --output="$T/r64.html" "$T/j64"; ok $? "html export, 64 ranks (synthetic, rank 3 slow)"
"$B/gpuprof" export --format=html --output="$T/nvml.html" "$F/nvml"; ok $? "html export of a job with NVML samples and no kernel records"
"$B/gpuprof" export --format=html --output="$T/win.html" "$F/window"; ok $? "html export of a job captured in steps 10-19"

# the page's structure, read by Python's HTML parser
check() { python3 - "$@" <<'PY'
import html.parser, re, sys
path, what = sys.argv[1], sys.argv[2]
class P(html.parser.HTMLParser):
    def __init__(s):
        super().__init__(); s.c = {}; s.ids = []; s.ext = []; s.text = []; s.svgtext = []
        s.titles = []; s.stack = []; s.rows = {}; s.table = None
    def handle_starttag(s, t, a):
        a = dict(a); s.c[t] = s.c.get(t, 0) + 1; s.stack.append(t)
        if "id" in a: s.ids.append(a["id"])
        for k in ("src", "href"):
            if k in a: s.ext.append(a[k])
        if t == "table": s.table = len(s.rows); s.rows[s.table] = 0
        if t == "tr" and s.table is not None: s.rows[s.table] += 1
    def handle_endtag(s, t):
        while s.stack and s.stack.pop() != t: pass
    def handle_data(s, d):
        s.text.append(d)
        if s.stack and s.stack[-1] == "text": s.svgtext.append(d)
        if s.stack and s.stack[-1] == "title": s.titles.append(d)
src = open(path).read()
p = P(); p.feed(src)
text = " ".join(p.text)
assert not p.ext and "script" not in p.c and "iframe" not in p.c, ("external or script", p.ext)
ticks = [t for t in p.svgtext if re.fullmatch(r"-?[0-9.]+[kM]?", t.strip())]
assert ticks and not any("e+" in t or "e-" in t for t in p.svgtext), "SI ticks, no scientific notation"
# findings before the plots, each with its evidence, threshold, fix
assert text.index("What to fix first") < text.index("How slow") < text.index("Where the time goes") < text.index("Where the memory goes"), "order"
def has(*ids):
    miss = [i for i in ids if i not in p.ids]
    assert not miss, ("missing", miss, p.ids)
if what == "r2":
    # two ranks on one GPU that never synchronise: the shared GPU, no straggler
    has("steps", "busy", "util", "kernels", "memory", "finding-gpu_shared")
    assert "finding-straggler" not in p.ids, "no straggler among ranks that never synchronise"
    assert re.search(r"saves about [0-9.]+ ms per step", text), "a finding's saving"
    assert "step time (ms)" in p.svgtext and "step number" in p.svgtext, "step axis titles with unit"
    assert "rank 0" in text and "rank 1" in text and "warm-up (excluded)" in text, "legend"
    assert 'class="warmup"' in src, "warm-up shaded"
    assert any(".." in t for t in p.svgtext), "a long kernel name folded (report/names.c: gp_display_name)"
    assert any(t.startswith("sm90_xmma_gemm") and len(t) > 80 for t in p.titles), "its full name on hover"
    assert max(p.rows.values()) >= 3, ("tables as tables, a row per rank", p.rows)
    assert "live device memory (MiB)" in p.svgtext, "memory axis with its unit"
if what == "r1":
    has("steps", "memory")
    assert 'class="peak"' in src and re.search(r"peak [0-9.k]+ MiB, rank 0", text), "the memory peak marked"
    assert "finding-memory_leak" in p.ids, p.ids
    assert re.search(r"frees about [0-9.]+ MiB", text), "the leak's bytes"
if what == "r64":
    has("steps", "busy", "util", "memory", "nvml-util", "nvml-power", "finding-straggler")
    assert 'class="band"' in src and "median across ranks" in text, "a band and the median, not 64 lines"
    assert src.count('class="series"') < 40, ("lines", src.count('class="series"'))
    assert "rank 3 (outlier)" in text, "the slow rank named as an outlier"
    assert re.search(r"highest [0-9.]+% \(rank [0-9]+\)", text), "busy/idle spread with ranks named"
    assert re.search(r"3 \(slowest\)", text), "tables: rank 3 is the slowest row"
    assert "rank 60" in p.svgtext and "rank 1" not in p.svgtext, "heat map rows labelled every 4th"
if what == "win":
    assert re.search(r'class="capture"[^>]*><title>CUDA captured \(steps 10-19, rank 0\)', src), "the capture window shaded"
    xs = [float(x) for x in re.findall(r'class="series"[^>]*points="([0-9.]+),', src)[:1]]
    cap = float(re.search(r'class="capture" x="([0-9.]+)"', src).group(1))
    assert xs and xs[0] > cap, ("the GPU samples drawn at their step numbers, inside the window", xs, cap)
if what == "nvml":
    has("util", "nvml-util", "nvml-power", "nvml-clock")
    assert "NVML's GPU utilisation" in text, "busy over time from NVML when no kernel was recorded"
    assert "power (W)" in p.svgtext and "SM clock (MHz)" in p.svgtext, "NVML units"
PY
}
check "$T/r1.html" r1; ok $? "1 rank: the leak first with its bytes, the memory peak marked, SI ticks"
check "$T/r2.html" r2; ok $? "2 ranks on one GPU: the shared GPU found (no straggler), saving, legends, units, warm-up shaded, long names folded with the full name on hover, tables"
check "$T/r64.html" r64; ok $? "64 ranks: a band, the median and the outlier ranks named; spreads and tables name the slowest"
check "$T/nvml.html" nvml; ok $? "NVML plots (utilisation, power, SM clock), and busy over time from NVML without kernels"
check "$T/win.html" win; ok $? "--capture=steps=10-19: the window shaded, the GPU step samples at their step numbers"
C=$(command -v chromium || command -v chromium-browser)
for n in 1 2 64; do
	if [ -z "$C" ]; then
		skip "chromium not installed"
		continue
	fi
	timeout 120 "$C" --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
		--disable-component-update --disable-sync --user-data-dir="$T/ud$n" --window-size=1000,3000 \
		--screenshot="$T/shot$n.png" "file://$T/r$n.html" >/dev/null 2>&1
	read -r _ blue _ col < <(python3 "$H/pngstat.py" "$T/shot$n.png" 2>/dev/null)
	[ -s "$T/shot$n.png" ] && [ "${blue:-0}" -gt 2000 ] && [ "${col:-0}" -gt 500 ]
	ok $? "$n rank(s): headless Chromium drew the plots (blue $blue px, lines and bars $col px)"
done
done_testing
