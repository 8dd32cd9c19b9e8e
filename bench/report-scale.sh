#!/bin/bash
# `gpuprof report` on synthetic jobs of 64, 256 and 1024 ranks x EVENTS kernel events
# (bench/synth-job writes real rank files through the common writer). Prints wall time
# and peak RSS (GNU time) per point; the job directories go to $SCRATCH.
# Usage: bench/report-scale.sh [EVENTS] [POINTS...]
cd "$(dirname "$0")/.."
B=${GP_BUILD:-$PWD/_build}
events=${1:-100000}; shift || true
points=${*:-64 256 1024}
S=${SCRATCH:-/var/tmp/gpuprof-scale}
for n in $points; do
	d=$S/r$n
	[ -f "$d/step0/rank$((n - 1)).gpr" ] || { rm -rf "$d"; "$B/bench/synth-job" --ranks "$n" --events "$events" --out "$d" >/dev/null; }
	sz=$(du -sm "$d" | cut -f1)
	sync
	/usr/bin/time -f "ranks=$n events/rank=$events files=${sz}MiB wall=%es maxrss=%MKiB" "$B/gpuprof" report --quiet "$d"
done
