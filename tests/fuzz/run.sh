#!/bin/bash
# Build the rank-file reader fuzzer with clang's libFuzzer and run it for a while on a
# corpus seeded with real rank files (the H200 fixtures). TAP output; skips without clang.
. "$(dirname "$0")/../integration/tap.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
secs=${GP_FUZZ_SECONDS:-30}
command -v clang >/dev/null || skip_all "clang not installed"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
C="$top/common"
clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -I"$C" -I"$top/_build" \
	"$top/tests/fuzz/fuzz_rankfile.c" "$C/rankfile.c" "$C/crc32c.c" "$C/path.c" "$C/modes.c" \
	"$C/log.c" -lzstd -o "$T/fuzz" 2>"$T/build.log"
ok $? "fuzzer builds ($(tail -1 "$T/build.log"))"
mkdir -p "$T/corpus"
for f in "$top"/tests/fixtures/*/step*/rank*.gpr; do cp "$f" "$T/corpus/$(basename "$(dirname "$(dirname "$f")")")-$(basename "$f")"; done
"$T/fuzz" -max_total_time="$secs" -max_len=65536 -timeout=10 "$T/corpus" >"$T/fuzz.log" 2>&1
rc=$?
ok $rc "no crash, leak or hang in ${secs}s ($(grep -o 'Done [0-9]* runs' "$T/fuzz.log"))"
[ $rc -eq 0 ] || tail -30 "$T/fuzz.log" | sed 's/^/# /'
done_testing
