#!/bin/bash
# The tree as a maintainer and a packager meet it: every C and CUDA file formatted as
# .clang-format says, and `make distcheck` (the release tarball configures and builds its
# programs and test programs from a read-only source tree, installs and uninstalls cleanly).
. "$(dirname "$0")/../integration/tap.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
B=${GP_BUILD:?}
cd "$top" || exit 1
T_ERR=$(mktemp); trap 'rm -f "$T_ERR"' EXIT
if command -v clang-format >/dev/null && git rev-parse --git-dir >/dev/null 2>&1; then
	bad=$(git ls-files '*.c' '*.h' '*.cu' | xargs clang-format --dry-run --Werror 2>&1 |
		sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error:.*/\1/p' | sort -u)
	[ -z "$bad" ]; ok $? "clang-format --dry-run --Werror: every C and CUDA file is formatted${bad:+ (not: $(echo $bad))}"
else
	skip "clang-format or git not here"
fi
# the house rules (scripts/house): no C function over 150 lines in report/, agent/, spank/,
# common/, no loop of files among each directory's objects, no Python function over 80
# lines, no compiled Python in git
out=$(scripts/house "$B" 2>&1); ok $? "scripts/house: no C function over 150 lines, no loop of files, no Python function over 80 lines, no compiled Python in git${out:+ ($(echo "$out" | head -3 | tr '\n' ';'))}"
# ... and each Python rule refuses what breaks it: a function of 81 lines (80 pass), and a
# __pycache__ file committed to a repository
tmp=$(mktemp -d)
python3 -c 'import sys
for n, f in ((79, "ok.py"), (80, "long.py")):  # a def line and n body lines
    open(sys.argv[1] + "/" + f, "w").write("def f():\n" + "    x = 1\n" * n)' "$tmp"
out=$(scripts/house --python "$tmp/ok.py" 2>&1); ok $? "scripts/house --python: a function of 80 lines passes${out:+ ($out)}"
out=$(scripts/house --python "$tmp/long.py" 2>&1)
[ $? = 1 ] && case "$out" in *"long.py:1: def f is 81 lines (at most 80)"*) true ;; *) false ;; esac
ok $? "scripts/house --python: a function of 81 lines is refused ($out)"
if command -v git >/dev/null; then
	mkdir -p "$tmp/repo/__pycache__" && echo x >"$tmp/repo/a.py" && echo x >"$tmp/repo/__pycache__/a.cpython-311.pyc"
	git -C "$tmp/repo" init -q && git -C "$tmp/repo" add -f a.py __pycache__ &&
		git -C "$tmp/repo" -c user.name=t -c user.email=t@t.invalid commit -qm t
	out=$(scripts/house --tracked "$tmp/repo" 2>&1)
	[ $? = 1 ] && case "$out" in *"__pycache__/a.cpython-311.pyc: compiled Python is tracked"*) true ;; *) false ;; esac
	ok $? "scripts/house --tracked: a committed __pycache__ file is refused ($out)"
	git -C "$tmp/repo" rm -q --cached -r __pycache__ && git -C "$tmp/repo" -c user.name=t -c user.email=t@t.invalid commit -qm u
	out=$(scripts/house --tracked "$tmp/repo" 2>&1); ok $? "... and passes once it is untracked${out:+ ($out)}"
else
	skip "git not here"
	skip "git not here"
fi
rm -rf "$tmp"
# the man pages render without a warning
for m in "$B"/doc/gpuprof.yaml.5 "$B"/doc/gpuprof-agent.8 "$B"/doc/gpuprof-spank.8 "$B"/doc/gpuprof.1; do
	w=$(groff -man -Tutf8 -ww -z "$m" 2>&1)
	[ -s "$m" ] && [ -z "$w" ]; ok $? "man page $(basename "$m") renders without warnings${w:+ ($w)}"
done
# every setting is written once (common/settings.c): the documentation's tables are what
# `gpuprof settings` prints, and the man page carries every key
scripts/settings-docs --check "$B" 2>"$T_ERR"; ok $? "doc/admin.md and doc/environment.md hold gpuprof settings's tables$( [ -s "$T_ERR" ] && echo " ($(tail -1 "$T_ERR"))")"
keys=$("$B/gpuprof" settings | awk '{print $1}')
miss=""
for k in $keys; do
	grep -q "^\.B $k\$" "$B/doc/gpuprof.yaml.5" || miss="$miss $k"
done
[ -n "$keys" ] && [ -z "$miss" ]; ok $? "every site key ($(echo $keys | wc -w)) has its entry in gpuprof.yaml(5)${miss:+; missing:$miss}"
# the collector's ABI is written twice, in C (common/event.h's GP_FW_* and GP_SNAP_*,
# agent/inject/inject.h's gpuprof_fw_* calls) and in the Python integration
# (agent/python/_gpuprof_abi.py: FW_*, SNAP_*, SIGNATURES): the two must agree
abi=$(python3 tests/tree/abi_check.py 2>&1)
[ -z "$abi" ]; ok $? "GP_FW_*, GP_SNAP_* and gpuprof_fw_* in C and agent/python/_gpuprof_abi.py agree${abi:+ (differ: $abi)}"
# the checker itself finds a difference: a copy of the Python side with one number and
# one argument type changed must be refused
tmp=$(mktemp -d)
sed -e 's/^FW_POOL = 14$/FW_POOL = 41/' -e 's/("gpuprof_fw_range_end", None, ("c_uint64",))/("gpuprof_fw_range_end", None, ("c_uint",))/' \
	agent/python/_gpuprof_abi.py >"$tmp/abi.py"
bad=$(python3 tests/tree/abi_check.py "$tmp/abi.py" 2>&1)
case "$bad" in *FW_POOL*gpuprof_fw_range_end*) ok 0 "... and a changed number or argument type is caught ($bad)" ;;
*) ok 1 "... and a changed number or argument type is caught (got: $bad)" ;; esac
rm -rf "$tmp"
# the rank file's header keys are named once (GP_HDR_* in common/rankfile.h): doc/format.md's
# table of header keys lists the same keys, and no writer or reader spells one as a string
hdr=$(python3 - <<'PY'
import re
c = set(re.findall(r'#define GP_HDR_\w+\s+"(\w+)"', open("common/rankfile.h").read()))
doc = open("doc/format.md").read()
table = doc[doc.index("**Header text**"):].split("\n\n")[1]
d = set(re.findall(r"^\| `(\w+)` \|", table, re.M))
bad = ["not in doc/format.md: " + " ".join(sorted(c - d))] if c - d else []
bad += ["not GP_HDR_*: " + " ".join(sorted(d - c))] if d - c else []
print("; ".join(bad) if c else "no GP_HDR_* found")
PY
)
[ -z "$hdr" ]; ok $? "GP_HDR_* in common/rankfile.h and doc/format.md's header keys agree${hdr:+ ($hdr)}"
bare=$(git grep -nE 'gp_rf_(hdr_add|header) *\([^,]*(, *[^,]*)?, *"' -- common agent report spank bench 2>/dev/null)
[ -z "$bare" ]; ok $? "header keys are GP_HDR_* constants in every writer and reader${bare:+ (bare: $(echo "$bare" | cut -d: -f1,2 | tr '\n' ' '))}"
log=$(mktemp)
# TESTS empty: the release tarball still configures, builds every program and test
# program, installs and uninstalls, but its `make check` runs no test: the unit tier and
# the script tiers have run each of them once already (CI ran them twice: 18 of its 55
# minutes here, issue 49)
if make -C "$B" distcheck TESTS= >"$log" 2>&1; then
	ok 0 "make distcheck: $(grep -A1 "archives ready for distribution" "$log" | tail -1) ready for distribution"
else
	ok 1 "make distcheck"
	grep -E "error|Error|No rule|cannot" "$log" | head -10 | sed 's/^/# /'
fi
rm -f "$log"
done_testing
