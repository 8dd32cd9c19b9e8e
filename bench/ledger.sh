#!/bin/bash
# gpuprof ledger over a million job records from a file (issue 48's target: <= 20 s and
# <= 1 GiB on the 2-core CPU machine): bench/ledger_gen.py writes them as sacct prints them,
# with the sums they must give; each grouping is timed with /usr/bin/time (wall, user CPU,
# peak RSS) and its totals checked against the generator's.
#   bench/ledger.sh [BUILD] [N]      (default ./_build, 1000000)
set -euo pipefail
B=${1:-$PWD/_build}
N=${2:-1000000}
T=${TMPDIR:-/tmp}/gpuprof-ledger-bench
mkdir -p "$T"
here=$(cd "$(dirname "$0")" && pwd)
if [ ! -s "$T/jobs-$N.txt" ]; then
	python3 "$here/ledger_gen.py" "$N" "$T/jobs-$N.txt" >"$T/jobs-$N.sums"
fi
echo "$(wc -c <"$T/jobs-$N.txt") bytes, $N jobs; load average $(cut -d' ' -f1-3 /proc/loadavg)"
for by in user user,account,partition node name; do
	for fmt in json text; do
		/usr/bin/time -f "by=$by format=$fmt: %e s wall, %U s user, %S s system, %M KiB peak RSS" \
			"$B/gpuprof" ledger --from-file "$T/jobs-$N.txt" --until 2026-12-06 --by "$by" \
			-f "$fmt" -o "$T/out.$fmt"
	done
	python3 - "$T/out.json" "$T/jobs-$N.sums" <<'PY'
import json, sys
j, s = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
t = j["total"]
assert t["jobs"] == s["jobs"], (t["jobs"], s["jobs"])
assert abs(t["allocated_s"] - s["allocated_s"]) < 1e-3
for k, v in s["records_gpu_s"].items():
    assert abs(t["records_gpu_s"][k] - v) < 1e-3 * s["jobs"], k
print(f"  totals as generated ({len(j['groups'])} groups)")
PY
done
