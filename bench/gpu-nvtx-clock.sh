#!/bin/bash
# Run on the GPU machine (binaries from bench/gpu-carry.sh): NVTX push+pop with gpuprof's
# clock as it chooses it (the TSC where the kernel keeps time with one: tsc, kvm-clock,
# Hyper-V's page) against clock_gettime forced (GPUPROF_TEST_CLOCK=gettime, the clock before
# session 22) and no tool, interleaved, with the ring in $TMPDIR on /tmp and on /dev/shm.
# Each run prints the mean over 20 bursts of 50 000 pairs, the best burst and the median
# burst; the summary gives the median of each over the rounds. With the library built with
# a clock that costs nothing (gpu-carry.sh puts it in $G/freeclock): the pair's cost less
# the clock's; with the raw TSC as the clock ($G/rawtsc): the floor of a pair that reads
# it; with NV_LIBS="name=path ...": other builds of the library, interleaved.
# Also what decides the clock (the clocksource, the CPU's flags) and the primitives
# (bench/prim.c). Results in $OUT.
. "$(dirname "$0")/gpu-env.sh"
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" /tmp/gpt /dev/shm/gpt
{
	echo "clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
	echo "available $(cat /sys/devices/system/clocksource/clocksource0/available_clocksource)"
	grep -m1 'model name' /proc/cpuinfo
	echo "flags: $(grep -m1 -o -w -E 'constant_tsc|nonstop_tsc|tsc_known_freq|rdtscp' /proc/cpuinfo | sort -u | tr '\n' ' ')"
	echo "nproc $(nproc)"
	df -T /tmp /dev/shm | awk 'NR > 1 {print "fs", $7, $2}'
} | tee "$OUT/facts.txt"
"$G/prim" | tee "$OUT/prim.txt"
# a record's cost to its producer with no consumer: the shared ring's CAS, a lane's plain
# store, and that without the clock
[ -x "$G/ring_push" ] && "$G/ring_push" 5 | tee -a "$OUT/prim.txt"
# each burst of one run with the TSC, for the shape (first laps, drain overlap)
NVTX_COST_BURSTS=1 TMPDIR=/tmp/gpt "$G/gpuprof" run --modes=nvtx --output=/tmp/nv -- "$G/nvtx_cost" 20 const 2>&1 |
	awk '/^burst/ {printf "%s ", $3} /^ns_per/ {print; print ""}' | tee "$OUT/bursts.txt"
rm -rf /tmp/nv
for r in $(seq "${NV_ROUNDS:-5}"); do
	echo "none $("$G/nvtx_cost" 20 const)"
	echo "tsc-tmp $(TMPDIR=/tmp/gpt "$G/gpuprof" run --modes=nvtx --output=/tmp/nv -- "$G/nvtx_cost" 20 const 2>/dev/null)"
	rm -rf /tmp/nv
	echo "gettime-tmp $(GPUPROF_TEST_CLOCK=gettime TMPDIR=/tmp/gpt "$G/gpuprof" run --modes=nvtx --output=/tmp/nv -- "$G/nvtx_cost" 20 const 2>/dev/null)"
	rm -rf /tmp/nv
	echo "tsc-shm $(TMPDIR=/dev/shm/gpt "$G/gpuprof" run --modes=nvtx --output=/tmp/nv -- "$G/nvtx_cost" 20 const 2>/dev/null)"
	rm -rf /tmp/nv
	echo "tsc-5000 $(TMPDIR=/tmp/gpt "$G/gpuprof" run --modes=nvtx --output=/tmp/nv -- "$G/nvtx_cost" 20 const 5000 2>/dev/null)"
	rm -rf /tmp/nv
	# the injected library with a clock that costs nothing (gpu-carry.sh): the pair's
	# cost less the clock's, as the pair runs it (the clock's reads overlap the rest)
	if [ -f "$G/freeclock/libgpuprof-inject.so" ]; then
		echo "freeclock $(GPUPROF_INJECT=$G/freeclock/libgpuprof-inject.so TMPDIR=/tmp/gpt "$G/gpuprof" run --modes=nvtx --output=/tmp/nv -- "$G/nvtx_cost" 20 const 2>/dev/null)"
		rm -rf /tmp/nv
	fi
	# and with the TSC's raw ticks as its clock (no anchor, no conversion): the floor of a
	# pair that reads the TSC twice on this host
	if [ -f "$G/rawtsc/libgpuprof-inject.so" ]; then
		echo "rawtsc $(GPUPROF_INJECT=$G/rawtsc/libgpuprof-inject.so TMPDIR=/tmp/gpt "$G/gpuprof" run --modes=nvtx --output=/tmp/nv -- "$G/nvtx_cost" 20 const 2>/dev/null)"
		rm -rf /tmp/nv
	fi
	# other builds of the library to compare with (NV_LIBS="name=path ..."), interleaved
	for nl in ${NV_LIBS:-}; do
		echo "${nl%%=*}-tmp $(GPUPROF_INJECT=${nl#*=} TMPDIR=/tmp/gpt "$G/gpuprof" run --modes=nvtx --output=/tmp/nv -- "$G/nvtx_cost" 20 const 2>/dev/null)"
		rm -rf /tmp/nv
	done
done | tee "$OUT/nvtx.txt"
python3 - "$OUT/nvtx.txt" <<'PY' | tee "$OUT/nvtx-summary.txt"
import sys, statistics as st
d = {}
for l in open(sys.argv[1]):
    p = l.split()
    if len(p) >= 7:
        d.setdefault(p[0], []).append((float(p[2]), float(p[4]), float(p[6])))
for k, v in d.items():
    print("%-12s mean %6.1f  best %5.1f (min %5.1f)  median burst %5.1f ns a pair (medians of %d rounds)" % (
        k, st.median(a for a, _, _ in v), st.median(b for _, b, _ in v), min(b for _, b, _ in v),
        st.median(c for _, _, c in v), len(v)))
PY
# whether the TSC held for a whole run (a dropped one leaves a "clock:" line in the report)
"$G/gpuprof" run --modes=nvtx --output=/tmp/nvk -- "$G/nvtx_cost" 20 const >/dev/null 2>&1
echo "clock line in the report: $(grep -c 'clock:' /tmp/nvk/report.txt) ($(grep 'clock:' /tmp/nvk/report.txt))" | tee -a "$OUT/facts.txt"
rm -rf /tmp/nvk
