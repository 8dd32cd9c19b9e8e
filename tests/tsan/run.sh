#!/bin/bash
# ThreadSanitizer over the lock-free parts every profiled process runs: the shared ring
# (multi-producer pushes against a draining consumer, tests/unit/t_ring.c) and the clock
# (tests/unit/t_clock.c, both of its paths). TAP; skips without clang. The injected library
# runs with the TSC path forced (GPUPROF_TEST_CLOCK=tsc, doc/environment.md): it runs only
# where the CPU's TSC is trusted, so CI otherwise passed or failed by the CPU it landed on.
. "$(dirname "$0")/../integration/tap.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
command -v clang >/dev/null || skip_all "clang not installed"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
# Each program runs under a time limit: a hang (a test waiting for ever, as t_ring's lane
# test once did under TSan's scheduling) fails its check here instead of holding CI to
# its own limit. Five minutes each: they take 2-15 s on the CPU machine.
LIMIT=${GP_TSAN_LIMIT:-300}
C="$top/common"
# settings.c names the installed paths (Makefile.am defines them for the build)
PATHS=(-DGP_AGENT_PATH="\"/a\"" -DGP_INJECT_PATH="\"/i\"" -DGP_CLI_PATH="\"/c\"")
for t in ring clock; do
	clang -g -O1 -fsanitize=thread -D_GNU_SOURCE -I"$C" -I"$top/_build" -I"$top/tests/unit" \
		"$top/tests/unit/t_$t.c" "$C/ring.c" "$C/clock.c" "$C/rankfile.c" "$C/crc32c.c" \
		"$C/path.c" "$C/log.c" "$C/modes.c" "$C/settings.c" "${PATHS[@]}" -lzstd -lpthread \
		-o "$T/t_$t" 2>"$T/build-$t.log"
	ok $? "t_$t builds with -fsanitize=thread ($(tail -1 "$T/build-$t.log"))"
	TSAN_OPTIONS="halt_on_error=1 exitcode=66" timeout -k 10 "$LIMIT" "$T/t_$t" >"$T/$t.out" 2>&1
	rc=$?
	ok $(( rc == 0 ? 0 : 1 )) "t_$t under ThreadSanitizer: no data race ($(grep -c '^ok' "$T/$t.out") checks passed, exit $rc$( ((rc == 124 || rc == 137)) && echo ": over ${LIMIT} s, the last check passed: $(grep '^ok' "$T/$t.out" | tail -1)"))"
	[ $rc -eq 0 ] || grep -A12 "WARNING: ThreadSanitizer" "$T/$t.out" | head -30 | sed 's/^/# /'
done
# the injected library itself (string interning, the ring, thread ids) in a program
# whose 4 threads open ranges at once, under its own drainer thread (no agent: fallback)
CF=(-g -O1 -fsanitize=thread -D_GNU_SOURCE -I"$C" -I"$top/_build" -I"$top/agent/inject")
[ -d /usr/local/cuda/include ] && CF+=(-I/usr/local/cuda/include)
INJ=("$top"/agent/inject/{state,startup,intern,nvtx,capture,cuda,fw,marker}.c)
clang "${CF[@]}" -fPIC -shared "${INJ[@]}" \
	"$C/ring.c" "$C/clock.c" "$C/rankfile.c" "$C/crc32c.c" "$C/path.c" "$C/log.c" "$C/modes.c" \
	"$C/spool.c" "$C/settings.c" "${PATHS[@]}" -lzstd -ldl -lpthread -o "$T/inject.so" \
	2>"$T/build-inject.log" &&
	clang "${CF[@]}" "$top/tests/nvtx/nvtx_client.c" -ldl -lpthread -o "$T/client" 2>>"$T/build-inject.log"
if [ $? -ne 0 ]; then
	skip "the injected library does not build with -fsanitize=thread here ($(tail -1 "$T/build-inject.log"))"
	skip "no TSan library"
else
	ok 0 "the injected library and the NVTX client build with -fsanitize=thread"
	for c in threads strings churn tslots cross; do
		(cd "$T" && TSAN_OPTIONS="halt_on_error=1 exitcode=66 report_signal_unsafe=0" \
			NVTX_INJECTION64_PATH="$T/inject.so" GPUPROF_MODES=nvtx TMPDIR="$T" GPUPROF_TEST_CLOCK=tsc \
			timeout -k 10 "$LIMIT" ./client $c >"$T/$c.out" 2>&1) || { echo "not ok - $c (exit $?)"; grep -A12 "WARNING: ThreadSanitizer" "$T/$c.out" | head -30 | sed 's/^/# /'; }
	done >"$T/inject.tap"
	n=$("$top/_build/gpuprof" dump "$T/gpuprof-local/step0/rank0.gpr" 2>/dev/null | sed -n 's/^count nvtx_end //p')
	! grep -q "^not ok" "$T/inject.tap"; ok $? "NVTX from 4 threads, 10^5 names, threads that end (300 at once), cross-thread ranges: no data race in the library ($(grep -c '' "$T/inject.tap") failures)"
	cat "$T/inject.tap" | grep "^#"
	[ "${n:-0}" = 1000 ]; ok $? "and the records are there (the last run's 1000 cross-thread ends: ${n:-none})"
fi
done_testing
