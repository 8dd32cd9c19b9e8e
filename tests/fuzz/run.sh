#!/bin/bash
# Build the libFuzzer targets with clang and run each for a while (TAP; skips without
# clang):
#   rankfile  the reader on raw bytes, seeded with the committed H200 rank files
#   report    the whole report and every export on valid rank files whose events come
#             from the fuzzer's bytes (fuzz_report.c), so mutations get past checksums
#   parsers   the site configuration (YAML) and the option grammars (fuzz_parsers.c)
# GP_FUZZ_SECONDS sets each target's time budget.
. "$(dirname "$0")/../integration/tap.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
secs=${GP_FUZZ_SECONDS:-30}
command -v clang >/dev/null || skip_all "clang not installed"
T=$(mktemp -d); trap 'rm -rf "$T" /tmp/gp-fuzz-report.* /tmp/gp-fuzz.*' EXIT
C="$top/common"
flags=(-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -D_GNU_SOURCE
	-I"$C" -I"$top/report" -I"$top/_build" -DGP_AGENT_PATH="\"/a\"" -DGP_INJECT_PATH="\"/i\""
	-DGP_CLI_PATH="\"/c\"")
common=("$C/rankfile.c" "$C/crc32c.c" "$C/path.c" "$C/modes.c" "$C/log.c" "$C/ranks.c" "$C/admincomment.c"
	"$C/settings.c")

clang "${flags[@]}" "$top/tests/fuzz/fuzz_rankfile.c" "${common[@]}" -lzstd -o "$T/fuzz" 2>"$T/build.log"
ok $? "rank-file fuzzer builds ($(tail -1 "$T/build.log"))"
mkdir -p "$T/corpus"
for f in "$top"/tests/fixtures/*/step*/rank*.gpr; do cp "$f" "$T/corpus/$(basename "$(dirname "$(dirname "$f")")")-$(basename "$f")"; done
"$T/fuzz" -max_total_time="$secs" -max_len=65536 -timeout=10 -artifact_prefix="$T/" "$T/corpus" >"$T/fuzz.log" 2>&1
rc=$?
ok $rc "rank-file reader: no crash, leak or hang in ${secs}s ($(grep -o 'Done [0-9]* runs' "$T/fuzz.log"))"
[ $rc -eq 0 ] || tail -30 "$T/fuzz.log" | sed 's/^/# /'

report=()
# the analysis and its writers (outfile.c too: the Kineto export writes its files with it);
# not the command line's own files (main.c, the commands and the parts of it that parse
# options, run sacct, read the ledger and live files, and supervise the agent)
for f in "$top"/report/*.c; do
	case $(basename "$f") in
	main.c | cli.c | jobref.c | run.c | cmd_*.c | ledger*.c | live_report.c | livejob.c | pipeline.c) ;;
	*) report+=("$f") ;;
	esac
done
# the report's native-frame symboliser links libdw where the build found it
dw=(); grep -q "define HAVE_LIBDW 1" "$top/_build/config.h" 2>/dev/null && dw=(-ldw -lelf)
# the accounting record (acct.c) and the Kineto export's step names (chrome.c: spool.c,
# which reaches the ring) are common/'s
clang "${flags[@]}" "$top/tests/fuzz/fuzz_report.c" "${report[@]}" "${common[@]}" "$C/clock.c" \
	"$C/acctrec.c" "$C/spool.c" "$C/ring.c" -lzstd -lz -lm "${dw[@]}" -o "$T/fuzz-report" \
	2>"$T/build-report.log"
ok $? "report fuzzer builds ($(tail -1 "$T/build-report.log"))"
mkdir -p "$T/corpus-report"
# inputs that once failed (tests/fuzz/report-seeds): run first, every time
cp "$top"/tests/fuzz/report-seeds/* "$T/corpus-report/" 2>/dev/null
"$T/fuzz-report" -max_total_time="$secs" -max_len=4096 -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$T/" \
	"$T/corpus-report" >"$T/fuzz-report.log" 2>&1
rc=$?
ok $rc "report and exports: no crash, leak, hang or UB in ${secs}s ($(grep -o 'Done [0-9]* runs' "$T/fuzz-report.log"); $(grep -o 'cov: [0-9]*' "$T/fuzz-report.log" | tail -1) edges)"
[ $rc -eq 0 ] || grep -v "^#\|^INFO\|^gpuprof" "$T/fuzz-report.log" | tail -40 | sed 's/^/# /'
clang "${flags[@]}" "$top/tests/fuzz/fuzz_parsers.c" "$C/siteconf.c" "$C/sitedir.c" "$C/spool.c" "$C/ring.c" \
	"$C/clock.c" "${common[@]}" -lyaml -lzstd \
	-o "$T/fuzz-parsers" 2>"$T/build-parsers.log"
ok $? "parser fuzzer builds ($(tail -1 "$T/build-parsers.log"))"
mkdir -p "$T/corpus-parsers"
for f in "$top"/etc/*.yaml; do [ -f "$f" ] && { printf '\0'; cat "$f"; } >"$T/corpus-parsers/$(basename "$f")"; done
printf '\1timing,nvtx,cuda,mem' >"$T/corpus-parsers/modes"; printf '\2steps=10-20,30-40' >"$T/corpus-parsers/cap"
printf '\3 0-3,7,100-200' >"$T/corpus-parsers/ranks"; printf '\4gpuprof-%%j/%%u-%%x-%%s-%%n' >"$T/corpus-parsers/tmpl"
"$T/fuzz-parsers" -max_total_time="$((secs / 2))" -max_len=4096 -timeout=10 -artifact_prefix="$T/" \
	"$T/corpus-parsers" >"$T/fuzz-parsers.log" 2>&1
rc=$?
ok $rc "site config and option parsers: no crash, leak, hang or UB in $((secs / 2))s ($(grep -o 'Done [0-9]* runs' "$T/fuzz-parsers.log"))"
[ $rc -eq 0 ] || grep -v "^#\|^INFO" "$T/fuzz-parsers.log" | tail -30 | sed 's/^/# /'
rm -f /tmp/gp-fuzz-yaml.*
done_testing
