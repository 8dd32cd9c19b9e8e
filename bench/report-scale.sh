#!/bin/bash
# `gpuprof report` on synthetic jobs of N ranks x EVENTS kernel events (bench/synth-job
# writes real rank files through the common writer; rank 3 is planted 40 % slower). Per
# point, in this order: from the rank files on one thread, from the rank files on every
# core (both with GPUPROF_REPORT_SUMMARIES=false), the first report with summaries (reads
# the rank files on every core and writes rankR.gps), and the report from the summaries.
# Prints wall time and peak RSS (GNU time); the job directories go to $SCRATCH.
# Usage: bench/report-scale.sh [EVENTS] [POINTS...]
cd "$(dirname "$0")/.."
B=${GP_BUILD:-$PWD/_build}
events=${1:-100000}; shift || true
points=${*:-64 256 1024}
S=${SCRATCH:-/var/tmp/gpuprof-scale}
for n in $points; do
	d=$S/r$n.e$events
	[ -f "$d/step0/rank$((n - 1)).gpr" ] || { rm -rf "$d"; "$B/bench/synth-job" --ranks "$n" --events "$events" --out "$d" >/dev/null; }
	rm -f "$d"/step0/*.gps
	sz=$(du -sm "$d" | cut -f1)
	sync
	t() { /usr/bin/time -f "ranks=$n events/rank=$events files=${sz}MiB $1 wall=%es maxrss=%MKiB" "${@:2}" "$B/gpuprof" report --quiet "$d"; }
	t "rank-files/1-thread" env GPUPROF_REPORT_SUMMARIES=false GPUPROF_REPORT_THREADS=1
	t "rank-files/$(nproc)-threads" env GPUPROF_REPORT_SUMMARIES=false
	t "rank-files+writing-summaries" env
	t "from-summaries($(du -cm "$d"/step0/*.gps | tail -1 | cut -f1)MiB)" env
done
