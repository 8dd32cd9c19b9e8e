#!/bin/bash
# ThreadSanitizer over the lock-free parts every profiled process runs: the shared ring
# (multi-producer pushes against a draining consumer, tests/unit/t_ring.c) and the clock
# (tests/unit/t_clock.c). TAP; skips without clang.
. "$(dirname "$0")/../integration/tap.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
command -v clang >/dev/null || skip_all "clang not installed"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
C="$top/common"
for t in ring clock; do
	clang -g -O1 -fsanitize=thread -D_GNU_SOURCE -I"$C" -I"$top/_build" -I"$top/tests/unit" \
		"$top/tests/unit/t_$t.c" "$C/ring.c" "$C/clock.c" "$C/rankfile.c" "$C/crc32c.c" \
		"$C/path.c" "$C/log.c" "$C/modes.c" -lzstd -lpthread -o "$T/t_$t" 2>"$T/build-$t.log"
	ok $? "t_$t builds with -fsanitize=thread ($(tail -1 "$T/build-$t.log"))"
	TSAN_OPTIONS="halt_on_error=1 exitcode=66" "$T/t_$t" >"$T/$t.out" 2>&1
	rc=$?
	ok $(( rc == 0 ? 0 : 1 )) "t_$t under ThreadSanitizer: no data race ($(grep -c '^ok' "$T/$t.out") checks passed, exit $rc)"
	[ $rc -eq 0 ] || grep -A12 "WARNING: ThreadSanitizer" "$T/$t.out" | head -30 | sed 's/^/# /'
done
done_testing
