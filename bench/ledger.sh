#!/bin/bash
# gpuprof ledger over a million job records from a file (issue 48's target: <= 20 s and
# <= 1 GiB on the 2-core CPU machine, any grouping): bench/ledger_gen.py writes them as sacct
# prints them, with the sums they must give; each grouping is timed with /usr/bin/time
# (wall, user CPU, peak RSS) and its totals checked against the generator's. The last case
# reads a second file whose job names are each job's own (ledger_gen.py --unique-names), so
# `--by user,name` makes nearly one group per job: the most groups any grouping can make.
#   bench/ledger.sh [BUILD] [N]      (default ./_build, 1000000)
#   FORMATS="json text"  CASES="plain:user ... unique:user,name"  RUNS=1 (each run timed)
# A run over the target is marked "OVER TARGET" and the exit status is 1.
set -euo pipefail
B=${1:-$PWD/_build}
N=${2:-1000000}
T=${TMPDIR:-/tmp}/gpuprof-ledger-bench
FORMATS=${FORMATS:-json text openmetrics}
CASES=${CASES:-plain:user plain:user,account,partition plain:node plain:name unique:user,name}
RUNS=${RUNS:-1}
mkdir -p "$T"
here=$(cd "$(dirname "$0")" && pwd)
for kind in plain unique; do
	case " $CASES " in *" $kind:"*) ;; *) continue ;; esac
	if [ ! -s "$T/jobs-$N-$kind.txt" ]; then
		python3 "$here/ledger_gen.py" "$N" "$T/jobs-$N-$kind.txt" \
			$([ $kind = unique ] && echo --unique-names) >"$T/jobs-$N-$kind.sums"
	fi
	echo "$kind: $(wc -c <"$T/jobs-$N-$kind.txt") bytes, $N jobs"
done
over=0
for c in $CASES; do
	kind=${c%%:*} by=${c#*:}
	for fmt in $FORMATS; do
		for r in $(seq "$RUNS"); do
			line=$(/usr/bin/time -f "%e %U %S %M" "$B/gpuprof" ledger --from-file \
				"$T/jobs-$N-$kind.txt" --until 2026-12-06 --by "$by" -f "$fmt" \
				-o "$T/out.$fmt" 2>&1 >/dev/null | tail -1)
			read -r wall user sys rss <<<"$line"
			mark=
			if awk -v w="$wall" -v m="$rss" 'BEGIN { exit !(w > 20 || m > 1048576) }'; then
				mark=" OVER TARGET"
				over=1
			fi
			echo "$kind by=$by format=$fmt run $r: $wall s wall, $user s user, $sys s system," \
				"$rss KiB peak RSS, load $(cut -d' ' -f1 /proc/loadavg)$mark"
		done
	done
	case " $FORMATS " in *" json "*) ;; *) continue ;; esac
	python3 - "$T/out.json" "$T/jobs-$N-$kind.sums" <<'PY'
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
rm -f "$T"/out.*
exit $over
