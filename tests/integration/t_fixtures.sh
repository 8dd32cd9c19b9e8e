#!/bin/bash
# The report on rank files captured on a real H200 (tests/fixtures/*): each planted
# pathology is found, and none on the clean run.
. "$(dirname "$0")/tap.sh"
B=${GP_BUILD:?}
F=$(cd "$(dirname "$0")/../fixtures" && pwd)
ls "$F"/*/step*/rank*.gpr >/dev/null 2>&1 || skip_all "no GPU fixtures committed yet"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
for d in "$F"/*/; do
	name=$(basename "$d")
	cp -r "$d" "$T/$name"
	"$B/gpuprof" report --format=json "$T/$name" >"$T/$name.json"; ok $? "report on fixture $name"
	want=$(cat "$d/EXPECT" 2>/dev/null)
	got=$(python3 -c 'import json,sys; print(" ".join(f["id"] for f in json.load(open(sys.argv[1]))["findings"]))' "$T/$name.json")
	if [ "$want" = "none" ]; then
		[ -z "$got" ]; ok $? "$name: no finding (got '$got')"
	else
		for w in $want; do echo " $got " | grep -q " $w "; ok $? "$name: finding $w (got '$got')"; done
	fi
	"$B/gpuprof" export --format=chrome --output="$T/$name.trace.json" "$T/$name"; ok $? "chrome export of $name"
	python3 -c 'import json,sys; t=json.load(open(sys.argv[1])); assert any(e.get("cat")=="kernel" for e in t["traceEvents"])' "$T/$name.trace.json"
	ok $? "$name trace has kernel slices"
done
done_testing
