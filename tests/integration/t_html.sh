#!/bin/bash
# The HTML report: self-contained, four plots, the findings; rendered in headless
# Chromium (Debian's chromium), whose screenshot must show the plots drawn.
. "$(dirname "$0")/tap.sh"
B=${GP_BUILD:?}
F=$(cd "$(dirname "$0")/../fixtures" && pwd)
[ -d "$F/straggler" ] || skip_all "no fixtures"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cp -r "$F/straggler" "$T/job"
"$B/gpuprof" export --format=html --output="$T/r.html" "$T/job"; ok $? "html export"
python3 - "$T/r.html" <<'PY'
import html.parser, sys
class P(html.parser.HTMLParser):
    def __init__(s):
        super().__init__(); s.c = {}; s.ids = set(); s.ext = []
    def handle_starttag(s, t, a):
        a = dict(a); s.c[t] = s.c.get(t, 0) + 1
        if "id" in a: s.ids.add(a["id"])
        for k in ("src", "href"):
            if k in a: s.ext.append(a[k])
p = P(); p.feed(open(sys.argv[1]).read())
assert {"steps", "util", "memory", "kernels"} <= p.ids, p.ids
assert p.c.get("polyline", 0) >= 4 and p.c.get("rect", 0) >= 20, p.c
assert "finding-straggler" in p.ids, p.ids
assert not p.ext and "script" not in p.c, p.ext   # nothing to fetch, nothing to run
PY
ok $? "four plots, the findings, no external resource or script"
C=$(command -v chromium || command -v chromium-browser)
if [ -z "$C" ]; then
	skip "chromium not installed"; skip "chromium not installed"
else
	timeout 120 "$C" --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
		--disable-component-update --disable-sync --user-data-dir="$T/ud" --window-size=900,2400 \
		--screenshot="$T/shot.png" "file://$T/r.html" >/dev/null 2>&1
	[ -s "$T/shot.png" ]; ok $? "headless Chromium took a screenshot"
	read -r _ blue _ col < <(python3 "$(dirname "$0")/pngstat.py" "$T/shot.png")
	[ "${blue:-0}" -gt 2000 ] && [ "${col:-0}" -gt 500 ]; ok $? "the plots drew (heat map $blue px, lines and bars $col px)"
fi
done_testing
