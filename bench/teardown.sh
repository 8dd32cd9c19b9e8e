#!/bin/bash
# Step teardown with and without gpuprof: wall time of `srun -n TASKS -O` of a short
# program, with --gpuprof=nvtx and with --gpuprof=none, paired and interleaved (ABAB...,
# the order flipped every pair), on the test cluster (tests/slurm/cluster up; SLURM_CONF
# exported). Prints each pair and the medians and the median of the per-pair differences.
# The job report and AdminComment run detached from slurmstepd: srun should not wait for
# them. Usage: bench/teardown.sh [TASKS] [PAIRS] [-- PROGRAM [ARGS]]
# The default program is the CPU trainer (0.4 s of CPU each, most of it loading cuBLAS):
# 64 of them on 2 cores make each run ~20 s, whose noise (several seconds) hides a
# difference of one. `-- /bin/true` measures what gpuprof adds to a step's start and end
# alone.
cd "$(dirname "$0")/.."
B=${GP_BUILD:-$PWD/_build}
tasks=${1:-64}; pairs=${2:-10}
prog="$B/gpuprof-train-mlp --steps 20 --dim 16 --layers 2 --batch 4"
while [ $# -gt 0 ] && [ "$1" != -- ]; do shift; done
[ "${1:-}" = -- ] && shift && [ $# -gt 0 ] && prog="$*"
[ -n "${SLURM_CONF:-}" ] || { echo "teardown: SLURM_CONF unset (tests/slurm/cluster up)" >&2; exit 2; }
W=$(mktemp -d /var/tmp/gp-teardown.XXXXXX)
chmod 755 "$W"
# the last run's detached report may still be writing into its job directory
trap 'rm -rf "$W" 2>/dev/null || { sleep 3; rm -rf "$W"; }' EXIT
cd "$W"
# Each task ends with the time its program ended (a shell around it appends it, in both
# modes alike): the teardown of a run is from the last program's end to srun's return.
# That is what a report or a summariser in the way would lengthen; the whole run's
# difference also holds what profiling costs while the programs start and run.
cpu() { awk '/^cpu /{ print ($2 + $3 + $4 + $7 + $8) / 100 }' /proc/stat; } # whole machine
one() { # mode -> "seconds teardown cpu-seconds"
	local t0 t1 c0 c1 e=$W/ends.$RANDOM
	: >"$e"
	c0=$(cpu)
	t0=$(date +%s.%N)
	srun -n "$tasks" -O --gpuprof="$1" sh -c "$prog; date +%s.%N >>$e" >/dev/null 2>&1 ||
		echo "teardown: srun --gpuprof=$1 failed" >&2
	t1=$(date +%s.%N)
	c1=$(cpu)
	sort -n "$e" | tail -1 | awk -v a="$t0" -v b="$t1" -v c0="$c0" -v c1="$c1" '{ print b - a, b - $1, c1 - c0 }'
	rm -f "$e"
}
one nvtx >/dev/null # warm the page cache and the daemons
one none >/dev/null
: >pairs
for i in $(seq "$pairs"); do
	if [ $((i % 2)) = 1 ]; then a=$(one nvtx); b=$(one none); else b=$(one none); a=$(one nvtx); fi
	echo "$a $b" >>pairs
	set -- $a $b
	printf 'pair %2d: gpuprof %.3f s (teardown %.3f s, CPU %.2f s), without %.3f s (teardown %.3f s, CPU %.2f s)\n' "$i" "$1" "$2" "$3" "$4" "$5" "$6"
done
python3 - pairs "$tasks" "${prog##*/}" <<'PY'
import statistics as st, sys
p = [tuple(map(float, l.split())) for l in open(sys.argv[1])]
def line(what, a, b):
    d = [x - y for x, y in zip(a, b)]
    print(f"srun -n {sys.argv[2]} {sys.argv[3]}, {what}: median with gpuprof {st.median(a):.3f} s, "
          f"without {st.median(b):.3f} s, median paired difference {st.median(d):+.3f} s "
          f"(min {min(d):+.3f}, max {max(d):+.3f}, {len(p)} pairs)")
line("whole run", [x[0] for x in p], [x[3] for x in p])
line("teardown (last program end to srun's return)", [x[1] for x in p], [x[4] for x in p])
line("CPU time of the whole machine (user+system+irq, /proc/stat)", [x[2] for x in p], [x[5] for x in p])
PY
