#!/bin/bash
# The Chrome/Perfetto trace in a real reader: speedscope (from the npm registry), driven
# in headless Chromium through playwright-core, opens the export of a 2-rank and a DDP
# fixture and shows every rank's threads and GPU streams as profiles named as the report
# names them. The npm packages are cached per version under GP_NPM_DIR (default
# /var/tmp/gpuprof-npm-<versions>); no node, npm, registry or chromium: skipped.
. "$(dirname "$0")/tap.sh"
B=${GP_BUILD:?}
F=$(cd "$(dirname "$0")/../fixtures" && pwd)
PKGS="speedscope@1.20.0 playwright-core@1.49.1"
N=${GP_NPM_DIR:-/var/tmp/gpuprof-npm-$(echo "$PKGS" | tr ' @' '_-')}
command -v node >/dev/null && command -v npm >/dev/null || skip_all "no node/npm"
C=$(command -v chromium || command -v chromium-browser) || skip_all "no chromium"
if [ ! -f "$N/node_modules/speedscope/dist/release/index.html" ] || [ ! -d "$N/node_modules/playwright-core" ]; then
	mkdir -p "$N" && (cd "$N" && timeout 300 npm install --no-audit --no-fund --silent $PKGS >"$N/npm.log" 2>&1) ||
		skip_all "npm install $PKGS failed ($(tail -1 "$N/npm.log" 2>/dev/null))"
fi
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
for f in straggler ddp-clean; do
	"$B/gpuprof" export --format=chrome -o "$T/$f.json" "$F/$f"; ok $? "chrome export of $f"
	CHROMIUM=$C timeout 120 node "$(dirname "$0")/speedscope.js" "$N" "$T/$f.json" "$T/$f.png" >"$T/$f.out" 2>&1
	python3 - "$T/$f.out" "$f" <<'PY'
import json, sys
r = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
assert not r["errors"], r["errors"]
assert r["profiles"] >= 4, r  # two ranks: their CPU threads and GPU streams
assert r["title"].startswith("rank 0 (step 0) on "), r["title"]
print("# speedscope:", r["title"])
PY
	ok $? "speedscope opens $f's trace: a profile per thread and stream of both ranks, named by rank and step"
done
done_testing
