#!/bin/bash
# The tree as a maintainer and a packager meet it: every C and CUDA file formatted as
# .clang-format says, and `make distcheck` (the release tarball configures, builds, passes
# its unit tests from a read-only source tree, installs and uninstalls cleanly).
. "$(dirname "$0")/../integration/tap.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
B=${GP_BUILD:?}
cd "$top" || exit 1
if command -v clang-format >/dev/null && git rev-parse --git-dir >/dev/null 2>&1; then
	bad=$(git ls-files '*.c' '*.h' '*.cu' | xargs clang-format --dry-run --Werror 2>&1 |
		sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error:.*/\1/p' | sort -u)
	[ -z "$bad" ]; ok $? "clang-format --dry-run --Werror: every C and CUDA file is formatted${bad:+ (not: $(echo $bad))}"
else
	skip "clang-format or git not here"
fi
# the man pages render without a warning, and every site key of common/siteconf.c's
# table is documented in gpuprof.yaml(5) and doc/admin.md
for m in "$B"/doc/gpuprof.yaml.5 "$B"/doc/gpuprof-agent.8 "$B"/doc/gpuprof-spank.8 doc/gpuprof.1; do
	w=$(groff -man -Tutf8 -ww -z "$m" 2>&1)
	[ -s "$m" ] && [ -z "$w" ]; ok $? "man page $(basename "$m") renders without warnings${w:+ ($w)}"
done
keys=$(sed -n 's/^    {"\([a-z_]*\)", T_.*/\1/p' common/siteconf.c)
miss=""
for k in $keys; do
	grep -q "^\.B.*$k" doc/gpuprof.yaml.5.in || miss="$miss $k(man)"
	grep -q "| $k\b\|$k |\|, $k" doc/admin.md || miss="$miss $k(admin.md)"
done
[ -n "$keys" ] && [ -z "$miss" ]; ok $? "every site key ($(echo $keys | wc -w)) is documented in gpuprof.yaml(5) and doc/admin.md${miss:+; missing:$miss}"
log=$(mktemp)
if make -C "$B" distcheck >"$log" 2>&1; then
	ok 0 "make distcheck: $(grep -A1 "archives ready for distribution" "$log" | tail -1) ready for distribution"
else
	ok 1 "make distcheck"
	grep -E "error|Error|No rule|cannot" "$log" | head -10 | sed 's/^/# /'
fi
rm -f "$log"
done_testing
