#!/bin/bash
# issue 51 item 13 on the device: bench/mt_streams (two host threads, each its own stream and
# NVTX loop, a copy stream joined with cudaStreamWaitEvent, a synchronisation each
# iteration) plain, under the default modes (sampled windows, CUPTI detach auto), with the
# detach off, and with every step traced; 3 rounds each. Exit codes and the program's own
# figures in $OUT/mt.txt; a crash's backtrace (gdb) in $OUT/mt-gdb.txt.
. "$(dirname "$0")/gpu-env.sh"
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
M=$G/mt_streams
S=${MT_SECONDS:-6}
for round in 1 2 3; do
	for how in plain default nodetach all; do
		rm -rf /tmp/mt-$how
		case $how in
		plain) timeout 120 $M $S >/tmp/mt.out 2>&1 ;;
		default) timeout 120 $G/gpuprof run -q -o /tmp/mt-$how -- $M $S >/tmp/mt.out 2>&1 ;;
		nodetach) GPUPROF_CUPTI_DETACH=false timeout 120 $G/gpuprof run -q -o /tmp/mt-$how -- $M $S >/tmp/mt.out 2>&1 ;;
		all) timeout 120 $G/gpuprof run -q --capture=all -o /tmp/mt-$how -- $M $S >/tmp/mt.out 2>&1 ;;
		esac
		rc=$?
		echo "round $round $how rc=$rc $(grep own_steps /tmp/mt.out) $(grep -v own_steps /tmp/mt.out | tail -2 | tr '\n' ' ')" >>$OUT/mt.txt
		if [ $how != plain ] && [ -d /tmp/mt-$how ]; then
			$G/gpuprof report --format=json /tmp/mt-$how 2>/dev/null | python3 -c '
import json,sys; r=json.load(sys.stdin)["ranks"][0]
print("   report:", r["outcome"], r["steps"]["range"], r["steps"]["count"], "median", r["steps"]["median_ms"], "kernels", r["gpu"]["kernels"], "losses", r["quality"]["losses"])' >>$OUT/mt.txt 2>&1
		fi
		if [ $rc -ge 128 ] && [ ! -s $OUT/mt-gdb.txt ] && command -v gdb >/dev/null; then
			GPUPROF_CUPTI_DETACH=${how/nodetach/false} timeout 200 $G/gpuprof run -q -o /tmp/mt-gdb -- \
				gdb -batch -ex run -ex 'thread apply all bt 12' --args $M $S >$OUT/mt-gdb.txt 2>&1
		fi
	done
done
cat $OUT/mt.txt
