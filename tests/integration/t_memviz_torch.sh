#!/bin/bash
# The memory_viz export read by PyTorch's own torch.cuda._memory_viz: every committed
# fixture with device memory records and a 200 000-entry trace. MEMVIZ_ROOT: a chroot
# whose /usr/bin/python3 reads the files (scripts/test: the trixie chroot, PyTorch 2.6);
# else this machine's /usr/bin/python3 (Debian 12: PyTorch 1.13, which reads the segments).
. "$(dirname "$0")/tap.sh"
B=${GP_BUILD:?}
F=$(cd "$(dirname "$0")/../fixtures" && pwd)
ROOT=${MEMVIZ_ROOT:-}
run_py() { if [ -n "$ROOT" ]; then chroot "$ROOT" /usr/bin/python3 "$@"; else /usr/bin/python3 "$@"; fi; }
run_py -c 'import torch.cuda._memory_viz' 2>/dev/null || skip_all "no PyTorch${ROOT:+ in $ROOT}"
D=$(mktemp -d "${ROOT}/tmp/gp-memviz.XXXXXX"); trap 'rm -rf "$D"' EXIT
IN=${D#"$ROOT"}
n=0
for f in "$F"/*/; do
	f=$(basename "$f")
	"$B/gpuprof" export --format=memviz -o "$D/$f.pickle" "$F/$f" 2>/dev/null && n=$((n + 1))
done
[ $n -ge 10 ]; ok $? "$n fixtures exported (those with device memory records)"
"$B/tests/fuzz/mkhostile" allocs 40000 "$D/big" >/dev/null && "$B/gpuprof" export --format=memviz -o "$D/big.pickle" "$D/big" 2>/dev/null
ok $? "a 200 000-entry trace exported"
rm -rf "$D/big"
cp "$(dirname "$0")/memviz_check.py" "$D/"
ver=$(run_py -c 'import torch; print(torch.__version__)' 2>/dev/null)
(cd "$D" && run_py "$IN/memviz_check.py" $(for p in "$D"/*.pickle; do echo "$IN/$(basename "$p")"; done)) >"$D/out" 2>&1
while read -r st rest; do
	[ "$st" = ok ]; ok $? "PyTorch $ver's _memory_viz reads ${rest#"$IN/"}"
done < <(grep -E '^(ok|FAIL) ' "$D/out")
# its own command line, as a user runs it (stats: the subcommand that needs no
# flamegraph.pl from the network), on the layout this PyTorch reads: --torch=1.13 for 1.13,
# the default for 2.x
case $ver in 1.*) lay=1.13 ;; *) lay=2 ;; esac
for f in leak torch-leak; do
	"$B/gpuprof" export --format=memviz --torch=$lay -o "$D/cli-$f.pickle" "$F/$f" 2>/dev/null
	run_py -m torch.cuda._memory_viz stats "$IN/cli-$f.pickle" >"$D/cli.out" 2>&1
	ok $? "python -m torch.cuda._memory_viz stats of PyTorch $ver reads the --torch=$lay export of $f ($(tr '\n' ' ' <"$D/cli.out" | head -c 100))"
done
if [ "$lay" = 1.13 ]; then # why the option exists: 1.13 cannot read 2.x's dictionary
	"$B/gpuprof" export --format=memviz -o "$D/cli2.pickle" "$F/leak" 2>"$D/cli2.err"
	! run_py -m torch.cuda._memory_viz stats "$IN/cli2.pickle" >/dev/null 2>&1 && grep -q -- "--torch=1.13" "$D/cli2.err"
	ok $? "1.13 fails on PyTorch 2's layout, and the export says to use --torch=1.13"
fi
done_testing
