#!/bin/bash
# Issue 49's target: a job of RANKS (100 000) ranks x EVENTS (10 000) kernel events a rank,
# reported from its summaries in <= 10 s and <= 1 GiB on the 2-core machine, the
# straggler (rank 3, planted 40 % slower by bench/synth-job) named. Stages, each skipped
# where its files are there already:
#   1. bench/synth-job writes the rank files (about 60 KiB and 5 ms of CPU a rank; resumed
#      after the last one there);
#   2. each rank's summary, as the agent writes it at capture end on the rank's node:
#      `gpuprof summarize` over the rank files, JOBS processes of 500 files each (about 8 ms
#      of CPU a rank), from a copy of the binary (a rebuild during the hours this takes
#      must not stop it);
#   3. per point K of POINTS (default: RANKS), the report of the first K ranks from their
#      summaries (K < RANKS: hard links of their rank files, made before the summaries, and
#      of the summaries, in a directory of their own), ROUNDS times, warm cache, then once
#      with the job's files dropped from the page cache (POSIX_FADV_DONTNEED on each of
#      them, nothing else's): /usr/bin/time's wall, CPU (user + sys), peak RSS and blocks
#      read, checked that every rank came from its summary and that rank 3 is the finding
#      the report names first.
# Prints one line per run, and the disk the job takes. The machine is shared: CPU time is
# the figure to compare when its load is high (wall mostly waits for a core).
# Usage: bench/report-100k.sh [RANKS] [EVENTS]   env: SCRATCH, GP_BUILD, JOBS, ROUNDS, POINTS,
#        STAGES (default "synth summarize report")
cd "$(dirname "$0")/.." || exit 1
B=${GP_BUILD:-$PWD/_build}
ranks=${1:-100000}
events=${2:-10000}
S=${SCRATCH:-/var/tmp/gpuprof-scale}
d=$S/r$ranks.e$events
jobs=${JOBS:-2}
rounds=${ROUNDS:-3}
points=${POINTS:-$ranks}
stages=${STAGES:-synth summarize report}
mkdir -p "$S" || exit 1

has() { [[ " $stages " == *" $1 "* ]]; }

# the first K ranks of the job in a directory of their own, hard links (python: a process
# per link took minutes on the loaded machine): EXT gpr, the rank files, made before the
# summaries (a link moves the rank file's ctime, which the summary's key holds: a summary
# made before it is stale), then EXT gps, the summaries
subset() { # K EXT
	local k=$1 p=$S/r$ranks.e$events.first$1
	[ "$2" = gpr ] && [ ! -f "$p/step0/rank$((k - 1)).gpr" ] && { rm -rf "$p" && mkdir -p "$p/step0" || return 1; }
	python3 -c 'import os, sys
src, dst, k, ext = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
for i in range(k):
    s, d = "%s/rank%d.%s" % (src, i, ext), "%s/rank%d.%s" % (dst, i, ext)
    if os.path.exists(s) and not os.path.exists(d):
        os.link(s, d)' "$d/step0" "$p/step0" "$k" "$2" || return 1
	echo "$p"
}

if has synth && [ ! -f "$d/step0/rank$((ranks - 1)).gpr" ]; then
	# resumed after the last file there (written in rank order; that one perhaps torn)
	have=$(find "$d/step0" -name 'rank*.gpr' 2>/dev/null | wc -l)
	/usr/bin/time -f "synth-job: ranks=$ranks from $((have ? have - 1 : 0)) wall=%es cpu=%U+%Ss" \
		"$B/bench/synth-job" --ranks "$ranks" --events "$events" --out "$d" \
		--first "$((have ? have - 1 : 0))" >/dev/null || exit 1
fi

if has summarize; then
	for k in $points; do
		[ "$k" -lt "$ranks" ] && { subset "$k" gpr >/dev/null || exit 1; }
	done
	cp "$B/gpuprof" "$S/gpuprof.summarize" || exit 1
	(cd "$d/step0" && for ((i = 0; i < ranks; i++)); do
		[ -f "rank$i.gps" ] || [ ! -f "rank$i.gpr" ] || echo "rank$i.gpr"
	done | /usr/bin/time -f "summarize: wall=%es cpu=%U+%Ss (the ranks without one)" \
		xargs -r -P "$jobs" -n 500 "$S/gpuprof.summarize" summarize)
	for k in $points; do
		[ "$k" -lt "$ranks" ] && { subset "$k" gps >/dev/null || exit 1; }
	done
fi

# evict DIR's files (and only those) from the page cache
evict() {
	python3 -c 'import os, sys
for root, _, files in os.walk(sys.argv[1]):
    for f in files:
        fd = os.open(os.path.join(root, f), os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)' "$1"
}

one() { # DIR K LABEL
	local out
	out=$( { /usr/bin/time -f "wall=%es cpu=%U+%Ss maxrss=%MKiB read=%I blocks" \
		env GPUPROF_DEBUG=1 "$B/gpuprof" report --quiet "$1"; } 2>&1)
	local t from straggler
	t=$(echo "$out" | grep '^wall=')
	from=$(echo "$out" | grep -o '[0-9]* rank(s) from their summaries, [0-9]* from their rank files')
	straggler=$(grep -m1 '^1\. ' "$1/report.txt" | cut -c1-60)
	echo "ranks=$2 $3 $t [$from] [$straggler]"
	[[ "$from" == "$2 rank(s) from their summaries, 0 from"* ]] || echo "  PROBLEM: not every rank from its summary"
	[[ "$straggler" == *"Straggler: rank 3 "* ]] || echo "  PROBLEM: rank 3 is not the first finding"
}

if has report; then
	echo "load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
	for k in $points; do
		p=$d
		[ "$k" -lt "$ranks" ] && p=$S/r$ranks.e$events.first$k
		for ((r = 1; r <= rounds; r++)); do
			one "$p" "$k" warm
		done
		evict "$p"
		one "$p" "$k" cold
	done
	sizes=$(find "$d/step0" -name 'rank*.gp[rs]' -printf '%f %s\n' |
		awk '{n[substr($1, length($1) - 2)]++; b[substr($1, length($1) - 2)] += $2}
		END {printf "rank files %d MiB (%d), summaries %d MiB (%d)", b["gpr"] / 1048576, n["gpr"], b["gps"] / 1048576, n["gps"]}')
	echo "disk: $sizes"
fi
