#!/bin/bash
# What the live figures cost the agent (issue 52): gpuprof-agent's CPU time (utime+stime from
# /proc, read just before the program ends) while bench/event_rate emits RATE NVTX records
# per second for SECONDS, each a step of its own (an outermost range: the live figures'
# busiest case, a step time per record), with live_interval 0 (off), 30 (the default) and 1,
# interleaved, ROUNDS rounds; medians of the rounds: the cost of following each record, and
# of each file written.
# Usage: bench/live-cost.sh [RATE] [SECONDS] [ROUNDS]
cd "$(dirname "$0")/.." || exit 1
B=${GP_BUILD:-$PWD/_build}
rate=${1:-100000}; secs=${2:-10}; rounds=${3:-3}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
export TMPDIR=$T
hz=$(getconf CLK_TCK)
one() { # INTERVAL -> agent CPU seconds
	rm -rf "$T/out"
	GPUPROF_LIVE_INTERVAL=$1 "$B/gpuprof" run -q --modes=nvtx --output="$T/out" -- \
		"$B/bench/event_rate" "$rate" "$secs" >/dev/null &
	local run=$! apid="" s=""
	for _ in $(seq 50); do apid=$(pgrep -f "^$B/gpuprof-agent" | head -1); [ -n "$apid" ] && break; sleep 0.1; done
	while kill -0 "$run" 2>/dev/null; do
		s=$(cat /proc/"$apid"/stat 2>/dev/null) || break
		echo "$s" >"$T/stat"
		sleep 0.2
	done
	wait "$run"
	read -r _ _ _ _ _ _ _ _ _ _ _ _ _ ut st _ <"$T/stat"
	python3 -c "print(($ut + $st) / $hz)"
}
for r in $(seq "$rounds"); do
	for iv in 0 30 1; do echo "$iv $(one $iv)"; done
done >"$T/all"
python3 - "$T/all" "$secs" "$rate" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
secs, rate = float(sys.argv[2]), float(sys.argv[3])
by = {}
for iv, cpu in rows:
    by.setdefault(int(iv), []).append(float(cpu))
med = {iv: statistics.median(v) for iv, v in by.items()}
print(f"{rate:.0f} NVTX records/s (each an outermost range) for {secs:.0f} s, {len(by[0])} rounds; "
      f"agent CPU (medians, clock ticks of {1e3 / 100:.0f} ms):")
for iv in (0, 30, 1):
    print(f"  live_interval {iv:>2}: {med[iv]:.3f} s ({med[iv] / secs * 100:.2f} % of a core)  rounds: {by[iv]}")
print(f"  following the records (30 against 0): {(med[30] - med[0]) / (rate * secs) * 1e9:.1f} ns per record")
print(f"  a file a second (1 against 30): {(med[1] - med[30]) / secs * 1e3:.2f} ms per file")
PY
