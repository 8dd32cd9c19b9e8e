#!/bin/bash
# gpuprof ledger from a file of sacct output (no cluster): the accounting record of real
# GPU captures (tests/fixtures) equals their report.json "accounting"; the ledger's totals
# equal the sum of those reports' fields and Slurm's allocations; forged and malformed
# records are refused with a line naming the job and never counted; every format is
# checked by a reader of it (JSON, CSV, promtool or a strict exposition checker, HTML in
# headless Chromium); bad options are usage errors.
. "$(dirname "$0")/tap.sh"
B=${GP_BUILD:?}
G=$B/gpuprof
F=$(cd "$(dirname "$0")/../fixtures" && pwd)
H=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T"

# 1. records of real captures, as the plugin gets them (report --record-line)
fx="clean idle sync ddp-imbalanced straggler pt-oom"
for f in $fx; do
	cp -r "$F/$f" "$T/$f"
	"$G" report --quiet --summary-line --record-line "$T/$f" >"$T/$f.lines" || echo "# report $f failed"
	sed -n 2p "$T/$f.lines" >"$T/$f.rec"
done
python3 - "$T" $fx <<'PY'
import json, sys
t = sys.argv[1]
for f in sys.argv[2:]:
    rec = open(f"{t}/{f}.rec").read().split()
    assert rec[0] == "gpuprof-record/1", rec[:1]
    kv = dict(x.split("=", 1) for x in rec[1:])
    a = json.load(open(f"{t}/{f}/report.json"))["accounting"]
    for k, v in a["gpu_s"].items():
        assert float(kv[k]) == v, (f, k, kv[k], v)
    assert int(kv["ranks"]) == a["ranks"] and int(kv["gpus"]) == a["gpus"], f
    assert float(kv["step_ms"]) == (a["step_ms"] or 0) and kv["top"] == a["top"], f
    # null in report.json where not measured, the record's 0
    assert int(kv["peak"]) == (a["peak_bytes"] or 0) and int(kv["card"]) == (a["card_bytes"] or 0), f
    assert kv["dir"] == f"{t}/{f}", kv["dir"]
    assert sum(a["gpu_s"].values()) > 0, f
PY
ok $? "the record line of 6 GPU captures carries report.json's accounting figures, to the digit"
python3 - "$T" <<'PY'
import json, sys
a = json.load(open(f"{sys.argv[1]}/ddp-imbalanced/report.json"))
r = a["ranks"]
wall = sum(x["wall_s"] for x in r)
s = sum(a["accounting"]["gpu_s"].values())
# every rank ran kernels: its wall time is split whole among the causes
assert abs(s - wall) < 0.001 * len(r) + 1e-6, (s, wall)
assert a["accounting"]["gpus"] == 2 and a["accounting"]["gpu_s"]["comm"] > 0
PY
ok $? "2-rank DDP capture: the causes add up to the ranks' wall time; exposed communication seen"
# a synthetic job's record (bench/synth-job ARGS): its gpus must be GPUS and its causes
# K times its ranks' wall time (K devices' each)
synth_rec() {
	local name=$1 gpus=$2 k=$3
	shift 3
	"$B/bench/synth-job" --events 2000 --out "$T/$name" "$@" >/dev/null
	"$G" report --quiet --record-line "$T/$name" 2>/dev/null | tail -1 >"$T/$name.rec"
	python3 - "$T/$name" "$gpus" "$k" <<'PY'
import json, sys
d, gpus, k = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
kv = dict(x.split("=", 1) for x in open(f"{d}.rec").read().split()[1:])
a = json.load(open(f"{d}/report.json"))
wall = sum(r["wall_s"] for r in a["ranks"])
s = sum(a["accounting"]["gpu_s"].values())
assert int(kv["gpus"]) == gpus == a["accounting"]["gpus"], (kv["gpus"], gpus)
assert abs(s - k * wall) < 0.01, (s, k, wall)
PY
}
# one process driving 2 devices (JAX's local devices, HF device_map="auto", DataParallel):
# its kernels on devices 0 and 1 (bench/synth-job --devices 2). The record counts 2 GPUs and
# 2 devices' wall time; the ledger never files the second as "allocated, unused" (before:
# gpus=1, one rank one GPU, and a 2-GPU job's second GPU-hour unused)
synth_rec dev2 2 2 --ranks 1 --devices 2 &&
	printf 'JobID|User|Account|Partition|JobName|NodeList|State|End|ElapsedRaw|AllocTRES|SystemComment\n701|alice|phys|gpu|jax|n1|COMPLETED|2026-12-05T12:00:00|3600|cpu=1,gres/gpu=2|%s\n' "$(cat "$T/dev2.rec")" >"$T/dev2.txt" &&
	"$G" ledger --from-file "$T/dev2.txt" --until 2026-12-06 -f json 2>/dev/null | python3 -c 'import json, sys
l = json.load(sys.stdin)
assert l["total"]["gpu_s"]["unused"] == 0 and l["unused_gpus"] == [], (l["total"]["gpu_s"], l["unused_gpus"])'
ok $? "one process on 2 devices: its record counts 2 GPUs and 2 devices' wall time, none 'allocated, unused' ($(cut -c1-120 "$T/dev2.rec"))"
# but a DDP rank whose kernels stray onto GPU 0 (1 in 50 here: bench/synth-job --stray)
# adds no GPU: GPU 0 is rank 0's (by NVML UUID), so 2 ranks are 2 GPUs and their wall time
# (before the UUID check: 3 GPUs, 3 devices' wall time, more than Slurm allocated)
synth_rec stray 2 1 --ranks 2 --stray
ok $? "2 DDP ranks, one straying onto GPU 0: 2 GPUs, 2 ranks' wall time ($(cut -c1-100 "$T/stray.rec"))"
# a job that measured neither steps nor memory (a program with no CUDA work): report.json's
# accounting has step_ms, peak_bytes and card_bytes null, never 0 (before: 0.0, 0, 0, where
# the summary line says step=- peak=-); the record line keeps its format's 0 (every key a
# number: a ledger of an earlier version refuses any other value), which the ledger reads
# and never sums (its totals are the causes' GPU-seconds alone)
"$G" run -q -o "$T/none" -- true >/dev/null 2>&1
"$G" report --quiet --summary-line --record-line "$T/none" >"$T/none.lines" 2>/dev/null
printf 'JobID|User|Account|Partition|JobName|NodeList|State|End|ElapsedRaw|AllocTRES|SystemComment\n702|alice|phys|gpu|none|n1|COMPLETED|2026-12-05T12:00:00|3600|cpu=1,gres/gpu=1|%s\n' "$(sed -n 2p "$T/none.lines")" >"$T/none.txt"
"$G" ledger --from-file "$T/none.txt" --until 2026-12-06 -f json 2>"$T/none.err" >"$T/none.json"
python3 - "$T" <<'PY'
import json, sys
t = sys.argv[1]
a = json.load(open(f"{t}/none/report.json"))["accounting"]
assert a["step_ms"] is None and a["peak_bytes"] is None and a["card_bytes"] is None, a
line, rec = open(f"{t}/none.lines").read().splitlines()[:2]
assert " step=- " in line and " peak=- " in line, line
kv = dict(x.split("=", 1) for x in rec.split()[1:])
assert (kv["step_ms"], kv["peak"], kv["card"]) == ("0.000", "0", "0"), rec
l = json.load(open(f"{t}/none.json"))
assert l["refused_records"]["jobs"] == [] and l["total"]["jobs"] == 1, (l["refused_records"], l["total"])
PY
ok $? "nothing measured: accounting's step_ms, peak_bytes, card_bytes null; the record's 0s read, not refused ($(sed -n 2p "$T/none.lines" | grep -o 'step_ms.*card=[0-9]*'))"

# 2. a file as sacct -a -P prints it: 3 users, 2 accounts, 2 partitions; records of ours
# beside another tool's entry; forged and malformed ones
rec() { cat "$T/$1.rec"; }
big=$(head -c 3000 /dev/zero | tr '\0' a)
{
	echo "JobID|User|Account|Partition|JobName|NodeList|State|End|ElapsedRaw|AllocTRES|SystemComment"
	echo "201|alice|phys|gpu|train|n[01-02]|COMPLETED|2026-12-05T10:00:00|100|cpu=4,gres/gpu=2,node=2|$(rec ddp-imbalanced)"
	echo "201.batch|alice|phys|gpu|batch|n01|COMPLETED|2026-12-05T10:00:00|100|cpu=4,gres/gpu=2,node=1|"
	echo "202|bob|chem|gpu|a|b|n03|FAILED|2026-12-05T11:00:00|20|cpu=1,gres/gpu=1|$(rec pt-oom)"
	echo "203|carol|phys|debug|x|n04|COMPLETED|2026-11-28T11:00:00|10|cpu=1,gres/gpu=4|bb=0; $(rec idle)"
	echo "204|carol|chem|debug|y|n04|TIMEOUT|2026-12-04T11:00:00|30|cpu=1,gres/gpu=1|$(rec clean)"
	echo "205|alice|chem|gpu|z|n05|COMPLETED|2026-11-27T11:00:00|40|cpu=1,gres/gpu=1|$(rec sync)"
	echo "206|bob|phys|gpu|s|n06|OUT_OF_MEMORY|2026-12-01T11:00:00|50|cpu=1,gres/gpu=2|$(rec straggler)"
	echo "207|dave|phys|gpu|cpu-only|n07|COMPLETED|2026-12-01T11:00:00|50|cpu=1|"
	echo "208|bob|chem|gpu|$(rec clean | sed 's/compute=[0-9.]*/compute=99999.000/')|n08|COMPLETED|2026-12-02T11:00:00|60|cpu=1,gres/gpu=1|"
	echo "209|bob|chem|gpu|v2|n08|COMPLETED|2026-12-02T11:00:00|60|cpu=1,gres/gpu=1|$(rec clean | sed 's|record/1|record/2|')"
	echo "210|bob|chem|gpu|huge|n08|COMPLETED|2026-12-02T11:00:00|60|cpu=1,gres/gpu=1|$(rec clean | sed "s|dir=.*|dir=/$big|")"
	echo "211|bob|chem|gpu|neg|n08|COMPLETED|2026-12-02T11:00:00|60|cpu=1,gres/gpu=1|$(rec clean | sed 's/input=[0-9.]*/input=-5/')"
	echo "212|bob|chem|gpu|nan|n08|COMPLETED|2026-12-02T11:00:00|60|cpu=1,gres/gpu=1|$(rec clean | sed 's/sync=[0-9.]*/sync=nan/')"
	echo "213|bob|chem|gpu|twice|n08|COMPLETED|2026-12-02T11:00:00|60|cpu=1,gres/gpu=1|$(rec clean); $(rec clean)"
	echo "214|bob|chem|gpu|dupkey|n08|COMPLETED|2026-12-02T11:00:00|60|cpu=1,gres/gpu=1|$(rec clean) ranks=9"
	echo "215|bob|chem|gpu|missing|n08|COMPLETED|2026-12-02T11:00:00|60|cpu=1,gres/gpu=1|$(rec clean | sed 's/ idle=[0-9.]*//')"
	echo "216|bob|chem|gpu|semicolon|n08|COMPLETED|2026-12-02T11:00:00|60|cpu=1,gres/gpu=1|$(rec clean | sed 's|dir=|dir=/x;y|')"
	echo "217|erin|phys|gpu|running|n09|RUNNING|Unknown|60|cpu=1,gres/gpu=1|"
	echo "218|erin|phys|gpu|old|n09|COMPLETED|2026-10-01T11:00:00|60|cpu=1,gres/gpu=1|$(rec clean)"
	echo "219|bob|chem|gpu|<script>alert(1)</script>|n10|COMPLETED|2026-12-03T11:00:00|70|cpu=1,gres/gpu=1|"
} >"$T/sacct.txt"
"$G" ledger --from-file "$T/sacct.txt" --until 2026-12-06 --by user,account,partition -f json \
	-o "$T/l.json" 2>"$T/l.err"
ok $? "ledger --from-file: exit 0"
diag "$(head -c 600 "$T/l.err")"
for want in "job 209: SystemComment record refused: version '2' not understood" \
	"job 210: SystemComment record refused: " "job 211: SystemComment record refused: input: bad value" \
	"job 212: SystemComment record refused: sync: bad value 'nan'" \
	"job 213: SystemComment record refused: more than one gpuprof record" \
	"job 214: SystemComment record refused: key 'ranks' twice" \
	"job 215: SystemComment record refused: key 'idle' missing" \
	"job 216: SystemComment record refused: dir: bad value"; do
	grep -qF -- "gpuprof: ledger: $want" "$T/l.err"
	ok $? "refused with a clear line: $want"
done
grep -q "job 210: SystemComment record refused: [0-9]* bytes (at most 1024)" "$T/l.err"
ok $? "a huge record is refused by its size"
[ "$(grep -c refused "$T/l.err")" = 8 ]
ok $? "exactly the 8 malformed records refused (forged JobName, another tool's entry, old and running jobs are not)"
# ties: 40 jobs of one record, one a user, in three orders: the same tables to the byte,
# the groups by key and the jobs by id where their figures tie (before: a tie fell to the
# hash table's slot order and the heap's, which the order the lines came in moved)
python3 - "$T" "$(rec clean)" <<'PY'
import random, sys
hdr = "JobID|User|Account|Partition|JobName|NodeList|State|End|ElapsedRaw|AllocTRES|SystemComment"
lines = ["%d|u%02d|acc%d|gpu|j|n1|COMPLETED|2026-12-05T10:00:00|100|cpu=1,gres/gpu=1|%s" % (300 + i, i, i % 3, sys.argv[2]) for i in range(40)]
for k in range(3):
    random.seed(k)
    random.shuffle(lines)
    open("%s/tie%d.txt" % (sys.argv[1], k), "w").write(hdr + "\n" + "\n".join(lines) + "\n")
PY
for k in 0 1 2; do
	"$G" ledger --from-file "$T/tie$k.txt" --until 2026-12-06 --by user --top 5 >"$T/tie$k.out" 2>/dev/null
	"$G" ledger --from-file "$T/tie$k.txt" --until 2026-12-06 --by account -f json >"$T/tie$k.json" 2>/dev/null
done
cmp -s "$T/tie0.out" "$T/tie1.out" && cmp -s "$T/tie0.out" "$T/tie2.out" &&
	cmp -s "$T/tie0.json" "$T/tie1.json" && cmp -s "$T/tie0.json" "$T/tie2.json" &&
	python3 - "$T/tie0.out" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
users = re.findall(r"^  (u\d\d) ", t, re.M)
jobs = re.findall(r"^  (\d+) +u\d\d +wasted", t, re.M)
assert users == sorted(users) and len(users) == 40, users
assert jobs == ["300", "301", "302", "303", "304"], jobs
PY
ok $? "ties: three orders of the same lines print the same tables, groups by key, jobs by id ($(grep -c '^  u[0-9]' "$T/tie0.out") users)"
python3 - "$T" ddp-imbalanced pt-oom idle clean sync straggler <<'PY'
import json, sys
t = sys.argv[1]
l = json.load(open(f"{t}/l.json"))
tot = l["total"]
want = {}
for f in sys.argv[2:]:
    for k, v in json.load(open(f"{t}/{f}/report.json"))["accounting"]["gpu_s"].items():
        want[k] = want.get(k, 0) + v
for k, v in want.items():
    assert abs(tot["records_gpu_s"][k] - v) < 1e-6, (k, tot["records_gpu_s"][k], v)
# allocations: gres/gpu x ElapsedRaw of the GPU jobs that ended in the 14 days
alloc = 2*100 + 1*20 + 4*10 + 1*30 + 1*40 + 2*50 + 9*60 + 70  # 208-216: 9 jobs of 60 s
assert abs(tot["allocated_s"] - alloc) < 1e-6, (tot["allocated_s"], alloc)
assert tot["jobs"] == 16 and tot["profiled"] == 6 and tot["refused"] == 8, tot
assert abs(sum(tot["gpu_s"].values()) - alloc) < 1e-3 or sum(tot["records_gpu_s"].values()) > alloc
# nothing of the forged JobName (compute=99999) counted
assert tot["gpu_s"]["compute"] < 1000, tot["gpu_s"]["compute"]
assert l["skipped"] == {"steps": 1, "not_gpu": 1, "running": 1, "out_of_range": 1, "unreadable": 0, "duplicates": 0}, l["skipped"]
# how jobs ended: 202 failed with a CUDA OOM, 206 OUT_OF_MEMORY, 204 TIMEOUT
assert tot["ended_s"] == {"failed": 0, "oom": 20 + 100, "timeout": 30, "cancelled": 0, "preempted": 0}, tot["ended_s"]
# weeks before 2026-12-06: 203 and 205 ended in the one before the last
assert tot["week_before"]["allocated_s"] == 40 + 40 and tot["last_week"]["allocated_s"] == alloc - 80
g = {(x["user"], x["account"], x["partition"]): x for x in l["groups"]}
assert set(u for u, a, p in g) == {"alice", "bob", "carol"}
assert {a for u, a, p in g} == {"phys", "chem"} and {p for u, a, p in g} == {"gpu", "debug"}
assert g[("alice", "phys", "gpu")]["allocated_s"] == 200
assert g[("bob", "chem", "gpu")]["refused"] == 8
PY
ok $? "totals: the records' seconds are the sum of the 6 reports' fields; allocations, jobs, refusals, endings and weeks as written"
# 2b. hostile values (doc/admin.md, "What a user controls"): a record that claims more
# GPU-seconds than Slurm allocated is scaled down to the allocation and said; a job name
# with a newline (sacct -P prints it raw) whose tail looks like another user's job is put
# back into its job, never read as a job; a file's GPU count or elapsed time that is not a
# whole number is a bad line, never summed; a name of 100 000 bytes with escapes and
# separators is counted and printed harmless
esc=$(printf '\033[2J;x|y')
long=$(head -c 100000 /dev/zero | tr '\0' n)
{
	echo "JobID|User|Account|Partition|JobName|NodeList|State|End|ElapsedRaw|AllocTRES|SystemComment"
	echo "301|mallory|phys|gpu|inflate|n11|COMPLETED|2026-12-05T12:00:00|10|cpu=1,gres/gpu=1|$(rec clean | sed 's/compute=[0-9.]*/compute=9999999.000/')"
	printf '%s\n' "302|mallory|phys|gpu|x" "999|victim|chem|debug|y|n11|COMPLETED|2026-12-05T12:00:00|10|cpu=1,gres/gpu=1|"
	echo "303|mallory|phys|gpu|negpus|n11|COMPLETED|2026-12-05T12:00:00|10|cpu=1,gres/gpu=-1|"
	echo "304|mallory|phys|gpu|nanel|n11|COMPLETED|2026-12-05T12:00:00|nan|cpu=1,gres/gpu=1|"
	echo "305|mallory|phys|gpu|negel|n11|COMPLETED|2026-12-05T12:00:00|-5|cpu=1,gres/gpu=1|"
	echo "306|mallory|phys|gpu|expel|n11|COMPLETED|2026-12-05T12:00:00|1e9|cpu=1,gres/gpu=1|"
	echo "307|mallory|phys|gpu|$long$esc|n11|COMPLETED|2026-12-05T12:00:00|10|cpu=1,gres/gpu=1|"
} >"$T/hostile.txt"
"$G" ledger --from-file "$T/hostile.txt" --until 2026-12-06 --by user,name -f json -o "$T/h.json" 2>"$T/h.err"
rc=$?
python3 - "$T/h.json" <<'PY'
import json, sys
l = json.load(open(sys.argv[1]))
t = l["total"]
assert t["jobs"] == 3 and t["scaled"] == 1 and abs(t["allocated_s"] - 30) < 1e-9, t
assert abs(sum(t["gpu_s"].values()) - 30) < 1e-6, t["gpu_s"]
assert t["records_gpu_s"]["compute"] >= 9999999, "the claim itself is kept, as claimed"
assert l["skipped"]["unreadable"] == 4, l["skipped"]
assert {g["user"] for g in l["groups"]} == {"mallory"}, [g["user"] for g in l["groups"]]
names = {g["name"] for g in l["groups"]}
# the name's bytes as text no output can mistake: its newline "\x0a", its backslash doubled
assert "x\\x0a999|victim|chem|debug|y" in names, names
PY
py=$?
[ $rc = 0 ] && [ $py = 0 ] && grep -q "gpuprof: ledger: job 301: its record claims [0-9.]* GPU-seconds, more than Slurm allocated (10.0: GPUs x elapsed); scaled down to the allocation" "$T/h.err"
ok $? "hostile values: a record claiming 9 999 999 GPU-s scaled to its 10 s (said), a newline name's forged tail never a job, non-numeric GPUs/elapsed never summed ($(head -c 300 "$T/h.err"))"
# gres/gpu=-1 was said to be "more GPUs than a job can hold"
grep -q "line .* unreadable (a negative GPU count): 303" "$T/h.err"
ok $? "hostile values: gres/gpu=-1 is said to be a negative GPU count ($(grep -m1 ' 303' "$T/h.err" | cut -c1-120))"
"$G" ledger --from-file "$T/hostile.txt" --until 2026-12-06 --by name >"$T/h.txt" 2>/dev/null &&
	! grep -q $'\033' "$T/h.txt" && [ "$(wc -l <"$T/h.txt")" -lt 60 ] && grep -qF '  x\x0a999|victim|chem|debug|y  ' "$T/h.txt" &&
	grep -q "1 claiming more than Slurm allocated (scaled down to it)" "$T/h.txt"
ok $? "hostile values in text: no escape byte, a newline of a name shown as \\x0a, the scaled record said ($(sed -n 1p "$T/h.txt" | cut -c1-160))"
"$G" ledger --from-file "$T/hostile.txt" --until 2026-12-06 --by name -f csv -o "$T/h.csv" 2>/dev/null
python3 -c 'import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
assert all(len(r) == len(rows[0]) for r in rows), [len(r) for r in rows]
assert len(rows) == 1 + 3 + 1, len(rows)' "$T/h.csv"
ok $? "hostile values in CSV: every row of the header's width, one per job name and the total"
python3 - "$T" <<'PY'
import json, sys
l = json.load(open(f"{sys.argv[1]}/l.json"))
u = {j["job"]: j for j in l["unused_gpus"]}
# 203 held 4 GPUs and ran kernels on 1 (idle's one rank): 3 x 10 s unused, no more than
# the allocation left after the record
assert "203" in u and u["203"]["gpus"] == 4 and u["203"]["gpus_used"] == 1, u
rec = json.load(open(f"{sys.argv[1]}/idle/report.json"))["accounting"]["gpu_s"]
assert abs(u["203"]["unused_s"] - min(30, 40 - sum(rec.values()))) < 1e-6, u["203"]
# 202's rank was not traced for CUDA: no GPU is called unused
assert "202" not in u
w = l["wasted_most"]
assert w == sorted(w, key=lambda j: -j["wasted_s"]) and w[0]["first_finding"] != ""
assert any(j["advice"] for j in w)
PY
ok $? "jobs that held GPUs they never used (3 of 4), never from an untraced rank; wasters sorted, with advice"

# 2c. a job name with '|' and a newline whose first line completes the job's own line
# (every field after JobName the user's) and whose second line starts another job's: in
# plain sacct -P output it reads as two whole lines (seen on Slurm 22.05, a 225-byte
# sbatch -J, by the admin tester). The ledger asks sacct for a sealed delimiter
# ('|#<12 random digits>#|', --delimiter), which no name can hold: the name stays the
# job's name; from a file with '|' it says the file cannot be trusted that way
frec="gpuprof-record/1 ranks=1 gpus=1 compute=288000 comm=0 input=0 launch=0 sync=0 startup=0 idle=0 unused=0 unprofiled=0 step_ms=1 peak=0 card=0 top=x dir=/"
fname="x|n|COMPLETED|2026-12-05T12:00:00|36000|gres/gpu=8|$frec
999|victim|chem|debug|y"
python3 - "$T" "$fname" <<'PY'
import sys
t, name = sys.argv[1], sys.argv[2]
head = "JobID|User|Account|Partition|JobName|NodeList|State|End|ElapsedRaw|AllocTRES|SystemComment".split("|")
row = ["401", "mallory", "phys", "gpu", name, "n11", "COMPLETED", "2026-12-05T12:00:00", "10", "cpu=1,gres/gpu=1", ""]
row2 = ["402", "bob", "bio", "gpu", "z", "n12", "COMPLETED", "2026-12-05T12:00:00", "20", "gres/gpu=1", ""]
for path, d in (("forge.txt", "|"), ("sealed.txt", "|#004815162342#|")):
    open(f"{t}/{path}", "w").write("".join(d.join(r) + "\n" for r in (head, row, row2)))
PY
"$G" ledger --from-file "$T/sealed.txt" --until 2026-12-06 --by name,user -f json -o "$T/sealed.json" 2>"$T/sealed.err"
python3 - "$T/sealed.json" "$fname" <<'PY'
import json, sys
l = json.load(open(sys.argv[1]))
t = l["total"]
assert abs(t["allocated_s"] - 30) < 1e-9 and t["jobs"] == 2, t
assert t["records_gpu_s"]["compute"] == 0, t["records_gpu_s"]
g = {(x["name"][:12], x["user"]): x["allocated_s"] for x in l["groups"]}
assert g == {(sys.argv[2][:12], "mallory"): 10, ("z", "bob"): 20}, g
PY
ok $? "sealed delimiter: a job name that completes its line and starts another is the job's name, adds no GPU-hours, no record, no user"
! grep -q "fields apart by '|'" "$T/sealed.err"
ok $? "sealed delimiter: no warning ($(head -c 200 "$T/sealed.err"))"
"$G" ledger --from-file "$T/forge.txt" --until 2026-12-06 -f json -o /dev/null 2>"$T/forge.err"
grep -q "forge.txt: fields apart by '|': a job name holding '|' and a newline can pass for another job's line; sacct --delimiter=" "$T/forge.err"
ok $? "a file with '|' between fields: the ledger says a job name can forge a line there, and how to seal it"

# from the admin tester (wave 9): a job name cannot move hours between groups, make
# two groups one label set, nor --top=0 be read as 10
# a job name holding the byte that joins a group's values (0x1f): with --by name,user
# mallory's 80 GPU-hours were shown as user victim's (the name's tail read as the next value)
printf 'JobID|User|Account|Partition|JobName|NodeList|State|End|ElapsedRaw|AllocTRES|SystemComment\n901|mallory|phys|gpu|x\037victim|n1|COMPLETED|2026-12-05T12:00:00|36000|cpu=1,gres/gpu=8|\n902|victim|chem|gpu|x|n1|COMPLETED|2026-12-05T12:00:00|10|cpu=1,gres/gpu=1|\n' >"$T/us.txt"
"$G" ledger --from-file "$T/us.txt" --until 2026-12-06 --by name,user -f json 2>/dev/null | python3 -c 'import json, sys
g = json.load(sys.stdin)["groups"]
by = {x["user"]: x["allocated_s"] for x in g}
assert len(g) == 2 and by.get("mallory") == 288000 and by.get("victim") == 10, [(x["name"], x["user"], x["allocated_s"]) for x in g]'
ok $? "--by name,user: a job name holding 0x1f keeps its hours its own user's"
# --top=0 is taken (0 to 1000, its help says) and then read as the default 10
"$G" ledger --from-file "$T/sacct.txt" --until 2026-12-06 --top=0 -f json -o "$T/top0.json" 2>/dev/null; rc=$?
[ $rc = 2 ] || python3 -c 'import json, sys
l = json.load(open(sys.argv[1]))
assert not l["wasted_most"] and not l["unused_gpus"], (len(l["wasted_most"]), len(l["unused_gpus"]))' "$T/top0.json"
ok $? "--top=0: no job listed (or refused), never the default 10 ($rc)"
# two job names that OpenMetrics' label values make the same ("a<newline>b" becomes
# "a_b", beside a job named "a_b"): two samples with one label set, which the exposition
# checker refuses (a user's job name breaking the site's metrics file); label values may
# hold any text escaped (\\, \", \n)
printf 'JobID|User|Account|Partition|JobName|NodeList|State|End|ElapsedRaw|AllocTRES|SystemComment\n801|bob|chem|gpu|a\nb|n1|COMPLETED|2026-12-05T12:00:00|10|cpu=1,gres/gpu=1|\n802|bob|chem|gpu|a_b|n1|COMPLETED|2026-12-05T12:00:00|10|cpu=1,gres/gpu=1|\n' >"$T/dup.txt"
"$G" ledger --from-file "$T/dup.txt" --until 2026-12-06 --by name -f openmetrics -o "$T/dup.prom" 2>/dev/null
python3 "$H/om_check.py" "$T/dup.prom" 2>"$T/dup.err"
ok $? "openmetrics: job names 'a<newline>b' and 'a_b' are two label sets, never one twice ($(head -c 200 "$T/dup.err"))"

# a record from a capture that saw no GPU at all (mode timing here: no NVML, no CUDA
# traced; gpus=0 and every cause 0): nothing says the job's 4 GPUs went unused, so they
# are unprofiled, never "held GPUs they never used" (the ledger charged all 4 GPU-hours as
# allocated, unused: 100 % wasted)
"$G" run -q --modes=timing -o "$T/blind" -- sleep 0.2 >/dev/null 2>&1
brec=$("$G" report --quiet --record-line "$T/blind" 2>/dev/null | tail -1)
printf 'JobID|User|Account|Partition|JobName|NodeList|State|End|ElapsedRaw|AllocTRES|SystemComment\n601|alice|phys|gpu|train|n1|COMPLETED|2026-12-05T12:00:00|3600|cpu=1,gres/gpu=4|%s\n' "$brec" >"$T/blind.txt"
"$G" ledger --from-file "$T/blind.txt" --until 2026-12-06 -f json 2>/dev/null | python3 -c 'import json, sys
l = json.load(sys.stdin)
t = l["total"]
assert t["profiled"] == 1, t
assert not l["unused_gpus"], ("listed as unused", l["unused_gpus"])
assert t["gpu_s"]["unused"] == 0 and t["gpu_s"]["unprofiled"] == 14400, t["gpu_s"]'
ok $? "a record that saw no GPU (gpus=0, every cause 0): its 4 GPUs unprofiled, never 'held GPUs they never used' ($brec)"

# the same with no '|' at all: a name of 70 newlines (94 bytes) passes the 64 physical
# lines a cut line may make, its head is dropped as unreadable and its tail read as a job
python3 -c 'import sys
sys.stdout.write("JobID|User|Account|Partition|JobName|NodeList|State|End|ElapsedRaw|AllocTRES|SystemComment\n"
                 "402|mallory|phys|gpu|x" + "\n" * 70 + "999|victim|chem|debug|y|n11|COMPLETED|2026-12-05T12:00:00|10|cpu=1,gres/gpu=1|\n")' >"$T/nl70.txt"
"$G" ledger --from-file "$T/nl70.txt" --until 2026-12-06 --by user -f json 2>/dev/null |
	python3 -c 'import json, sys
l = json.load(sys.stdin)
users = {g["user"]: g["allocated_s"] for g in l["groups"]}
assert "victim" not in users, ("job 402 charged to another user", users)'
ok $? "a job name of 70 newlines: its tail is never a job of another user"
# under a sealed delimiter a job name of 300 newlines (300 bytes) is joined back whole (no
# bound by lines: no name can hold the seal), and a cut line whose rest never comes never
# swallows the whole line after it: that one is said on stderr and the next job read
# (session 32's tester: 300 newlines hid their job and the next, 200 GPU-hours, silently)
python3 -c 'import sys
d = "|#000000000042#|"
h = d.join("JobID User Account Partition JobName NodeList State End ElapsedRaw AllocTRES SystemComment".split())
def job(i, u, name, el, gpus):
    return d.join([str(i), u, "phys", "gpu", name, "n1", "COMPLETED", "2026-12-05T12:00:00", str(el), "cpu=1,gres/gpu=%d" % gpus, ""]) + "\n"
sys.stdout.write(h + "\n" + job(1, "mallory", "\n" * 300, 86400, 8) + job(2, "alice", "a", 3600, 8) +
                 d.join(["3", "bob", "phys", "gpu", "cut"]) + "\n" + job(4, "carol", "c", 3600, 1))' >"$T/nl300.txt"
"$G" ledger --from-file "$T/nl300.txt" --until 2026-12-06 --by user -f json 2>"$T/nl300.err" |
	python3 -c 'import json, sys
l = json.load(sys.stdin)
users = {g["user"]: g["allocated_s"] for g in l["groups"]}
assert users == {"mallory": 8 * 86400, "alice": 8 * 3600, "carol": 3600}, users' &&
	grep -q "line .* unreadable (a line cut short): 3|#000000000042#|bob" "$T/nl300.err"
ok $? "sealed: a 300-newline job name joined back (its 192 GPU-hours and the next job's counted), a cut line said and the line after it read ($(head -c 200 "$T/nl300.err"))"
# an End the ledger cannot read (a caller's SLURM_TIME_FORMAT, garbage, 2026-02-30) is an
# unreadable line, said, never 'out of range'; sacct is run with SLURM_TIME_FORMAT=standard
printf 'JobID|User|Account|Partition|JobName|NodeList|State|End|ElapsedRaw|AllocTRES|SystemComment
601|bob|chem|gpu|e|n1|COMPLETED|1796600000|10|cpu=1,gres/gpu=1|
602|bob|chem|gpu|e|n1|COMPLETED|2026-02-30T12:00:00|10|cpu=1,gres/gpu=1|
603|bob|chem|gpu|e|n1|COMPLETED|2026-12-05T12:00:00|10|cpu=1,gres/gpu=1|
' >"$T/end.txt"
"$G" ledger --from-file "$T/end.txt" --since 2026-01-01 --until 2026-12-06 -f json 2>"$T/end.err" |
	python3 -c 'import json, sys
l = json.load(sys.stdin)
assert l["total"]["jobs"] == 1 and l["skipped"]["out_of_range"] == 0 and l["skipped"]["unreadable"] == 2, (l["total"]["jobs"], l["skipped"])' &&
	[ "$(grep -c "unreadable (End not a date" "$T/end.err")" = 2 ]
ok $? "an End not as sacct prints it (epoch seconds, 2026-02-30) is unreadable and said, never out of range ($(head -c 160 "$T/end.err"))"
# ... and a file none of whose lines could be read is no empty ledger passed as the truth:
# the text says the unreadable lines, and the exit is 1
head -3 "$T/end.txt" >"$T/end0.txt"
"$G" ledger --from-file "$T/end0.txt" --since 2026-01-01 --until 2026-12-06 >"$T/end0.out" 2>"$T/end0.err"
rc=$?
[ $rc = 1 ] && grep -q ", 2 lines unreadable (said on stderr; not counted)" "$T/end0.out" &&
	grep -q "none of the 2 lines read was a job the ledger could read" "$T/end0.err"
ok $? "every line unreadable: said in the text, exit 1 (rc $rc: $(head -c 120 "$T/end0.out"))"
mkdir -p "$T/fakesacct"
printf '#!/bin/sh
echo "SLURM_TIME_FORMAT=$SLURM_TIME_FORMAT" >"%s/fakesacct/env"
echo "JobID|User|Account|Partition|JobName|NodeList|State|End|ElapsedRaw|AllocTRES|SystemComment"
' "$T" >"$T/fakesacct/sacct"
chmod +x "$T/fakesacct/sacct"
PATH="$T/fakesacct:$PATH" SLURM_TIME_FORMAT=%s "$G" ledger --since 2026-01-01 >/dev/null 2>&1
grep -qx "SLURM_TIME_FORMAT=standard" "$T/fakesacct/env"
ok $? "the sacct the ledger runs gets SLURM_TIME_FORMAT=standard whatever the caller's ($(cat "$T/fakesacct/env"))"
# a job requeued (preempted, or scontrol requeue) ran twice: Slurm allocated both runs, and
# sacct -D shows the first as REQUEUED (seen on 22.05: 3 GPU-s REQUEUED, then the run that
# completed; sacct -X without -D shows only the last). The first run's GPU-hours are
# allocated and count, never skipped as running
printf 'JobID|User|Account|Partition|JobName|NodeList|State|End|ElapsedRaw|AllocTRES|SystemComment\n829|bob|chem|gpu|rq|n1|REQUEUED|2026-12-05T11:00:00|300|cpu=1,gres/gpu=2|\n829|bob|chem|gpu|rq|n1|COMPLETED|2026-12-05T12:00:00|600|cpu=1,gres/gpu=2|\n' >"$T/rq.txt"
"$G" ledger --from-file "$T/rq.txt" --until 2026-12-06 -f json 2>/dev/null | python3 -c 'import json, sys
t = json.load(sys.stdin)["total"]
assert abs(t["allocated_s"] - 1800) < 1e-9, t["allocated_s"]'
ok $? "a requeued job: both runs' allocations count (2 GPUs x 300 s REQUEUED + 2 x 600 s)"
# the same job's line twice (daily dumps joined: sacct -S/-E lists a job that ran across
# midnight in both days) is one job: counted once per JobID, End, State, ElapsedRaw, said
# on stderr and in skipped.duplicates (before: 2 jobs, its GPU-hours twice); the requeued
# runs above (same JobID, another End/State/ElapsedRaw) stay two
{
	head -3 "$T/rq.txt"
	printf '830|bob|chem|gpu|night|n1|COMPLETED|2026-12-05T01:00:00|7200|cpu=1,gres/gpu=4|\n'
	tail -2 "$T/rq.txt"
	printf '830|bob|chem|gpu|night|n1|COMPLETED|2026-12-05T01:00:00|7200|cpu=1,gres/gpu=4|\n'
} >"$T/dupl.txt"
"$G" ledger --from-file "$T/dupl.txt" --until 2026-12-06 -f json 2>"$T/dup2.err" | python3 -c 'import json, sys
l = json.load(sys.stdin)
t = l["total"]
assert t["jobs"] == 3 and abs(t["allocated_s"] - (1800 + 4 * 7200)) < 1e-9, (t["jobs"], t["allocated_s"])
assert l["skipped"]["duplicates"] == 3, l["skipped"]' && grep -q "job 830 .*seen before" "$T/dup2.err"
ok $? "a job's line twice (joined daily dumps) counted once, said ($(head -c 200 "$T/dup2.err")); a requeued job's runs stay two"
# two sealed daily files joined (cat day1 day2): the second's header line is a header (its
# own seal from there on), not 2 unreadable jobs and the rest cut lines (before: every job
# of the second day unreadable); a job name's line that looks like a header (a cut line's
# tail) stays the name's; AllocTRES with typed GPUs only (gres/gpu:a100=2, as a site's
# slurmdbd may store it) counts them (before: not a GPU job), a plain gres/gpu= beside typed
# ones counts once
python3 - "$T" <<'PY'
import sys
t = sys.argv[1]
F = "JobID User Account Partition JobName NodeList State End ElapsedRaw AllocTRES SystemComment".split()
def line(d, jid, name="n", end="2026-12-05T10:00:00", el=100, tres="cpu=1,gres/gpu=1", user="u"):
    return d.join([str(jid), user, "a", "gpu", name, "n1", "COMPLETED", end, str(el), tres, ""]) + "\n"
A, B = "|#111111111111#|", "|#222222222222#|"
with open(f"{t}/join.txt", "w") as f:
    f.write(A.join(F) + "\n")
    f.write(line(A, 901))
    f.write(line(A, 902, name="x\n" + B.join(F) + "\n" + line(B, 990, user="mallory", tres="gres/gpu=99").rstrip("\n")))
    f.write(B.join(F) + "\n")
    f.write(line(B, 903, tres="cpu=1,gres/gpu:a100=2,node=1"))
    f.write(line(B, 904, tres="cpu=1,gres/gpu:a100=1,gres/gpu:v100=2"))
    f.write(line(B, 905, tres="cpu=1,gres/gpu=2,gres/gpu:a100=2"))
with open(f"{t}/pjoin.txt", "w") as f:  # two plain '|' files joined: the same header again
    for day in (5, 6):
        f.write("|".join(F) + "\n" + line("|", 910 + day, end=f"2026-12-0{day}T01:00:00"))
PY
"$G" ledger --from-file "$T/pjoin.txt" --until 2026-12-07 -f json 2>/dev/null | python3 -c 'import json, sys
l = json.load(sys.stdin)
assert l["total"]["jobs"] == 2 and l["skipped"]["not_gpu"] == 0 and l["skipped"]["unreadable"] == 0, l["skipped"]'
ok $? "two plain '|' files joined: the second header is no job (before: a job 'JobID' of no GPU)"
"$G" ledger --from-file "$T/join.txt" --until 2026-12-06 -f json 2>"$T/join.err" | python3 -c 'import json, sys
l = json.load(sys.stdin)
t = l["total"]
assert l["skipped"]["unreadable"] == 0 and l["skipped"]["not_gpu"] == 0, l["skipped"]
assert t["jobs"] == 5, t["jobs"]
assert abs(t["allocated_s"] - 100 * (1 + 1 + 2 + 3 + 2)) < 1e-9, t["allocated_s"]'
ok $? "two sealed files joined: the second header read as one, a name's header-like line the name's; typed GPUs counted ($(head -c 200 "$T/join.err"))"
# 2d. C1 controls in a job name reach the admin's terminal in text: U+009B (CSI, as
# UTF-8 c2 9b) and a raw 9b byte (CSI in an 8-bit terminal), which xterm acts on as ESC [
# does; text prints control bytes as '?' (doc/admin.md), these included
printf 'JobID|User|Account|Partition|JobName|NodeList|State|End|ElapsedRaw|AllocTRES|SystemComment\n501|mallory|phys|gpu|a\302\2332J|n1|COMPLETED|2026-12-05T12:00:00|10|cpu=1,gres/gpu=1|\n502|mallory|phys|gpu|b\2331;31m|n1|COMPLETED|2026-12-05T12:00:00|10|cpu=1,gres/gpu=1|\n' >"$T/c1.txt"
"$G" ledger --from-file "$T/c1.txt" --until 2026-12-06 --by name >"$T/c1.out" 2>/dev/null
python3 -c 'import sys
b = open(sys.argv[1], "rb").read()
assert b"a" in b and b"\x9b" not in b, [l for l in b.split(b"\n") if b"\x9b" in l]' "$T/c1.out"
ok $? "text: a job name's C1 controls (U+009B, a raw 9b byte) never reach the terminal"
# 2e. a site note for a finding id that does not exist (a typo) is said, not silently never shown
printf 'finding_notes:\n  idle_gap: "https://hpc.example.edu/gpu/idle"\n' >"$T/typo.yaml"
"$G" ledger --from-file "$T/sacct.txt" --until 2026-12-06 --config "$T/typo.yaml" >/dev/null 2>"$T/typo.err"
grep -qw "idle_gap" "$T/typo.err"
ok $? "finding_notes: an id no finding has (idle_gap) is named on stderr ($(head -c 200 "$T/typo.err"))"


# the same 4-GPU job whose task NVML saw on its GPUs with no process of the task's (a stand-in
# NVML, tests/nvml/fake_nvml.c), too short to leave a millisecond of any cause: its report's
# gpu_unused is the evidence, so the GPUs read as unused
mkdir -p "$T/fnv" && cp "$GP_BUILD/tests/nvml/.libs/libfakenvml.so" "$T/fnv/libnvidia-ml.so.1"
LD_LIBRARY_PATH=$T/fnv "$G" run -q --modes=nvtx,cuda -o "$T/seen" -- true >/dev/null 2>&1
srec=$("$G" report --quiet --record-line "$T/seen" 2>/dev/null | tail -1)
printf 'JobID|User|Account|Partition|JobName|NodeList|State|End|ElapsedRaw|AllocTRES|SystemComment\n602|alice|phys|gpu|train|n1|COMPLETED|2026-12-05T12:00:00|3600|cpu=1,gres/gpu=4|%s\n' "$srec" >"$T/seen.txt"
"$G" ledger --from-file "$T/seen.txt" --until 2026-12-06 -f json 2>/dev/null | python3 -c 'import json, sys
l = json.load(sys.stdin)
t = l["total"]
assert [j["job"] for j in l["unused_gpus"]] == ["602"], l["unused_gpus"]
assert abs(t["gpu_s"]["unused"] - 14400) < 1, t["gpu_s"]'
ok $? "a record whose task NVML saw never use its GPUs (gpu_unused, every cause 0.000): its 4 GPUs unused ($srec)"

# 3. the formats, each read by a reader of its own
"$G" ledger --from-file "$T/sacct.txt" --until 2026-12-06 -f csv -o "$T/l.csv" 2>/dev/null
python3 - "$T" <<'PY'
import csv, json, sys
t = sys.argv[1]
rows = list(csv.DictReader(open(f"{t}/l.csv")))
tot = [r for r in rows if r["user"] == "*"][0]
j = json.load(open(f"{t}/l.json"))["total"]
assert abs(float(tot["allocated_h"]) * 3600 - j["allocated_s"]) < 1
assert int(tot["jobs"]) == j["jobs"] and int(tot["refused"]) == j["refused"]
assert {r["user"] for r in rows} == {"alice", "bob", "carol", "*"}
PY
ok $? "csv: one row per user and the total, as the JSON"
"$G" ledger --from-file "$T/sacct.txt" --until 2026-12-06 --by user,name -f openmetrics -o "$T/m.prom" 2>/dev/null
python3 "$H/om_check.py" "$T/m.prom"
ok $? "openmetrics: the strict exposition checker (tests/integration/om_check.py) takes it"
sed 's/^gpuprof_ledger_jobs{/gpuprof_ledger_jobs {/' "$T/m.prom" >"$T/bad.prom"
! python3 "$H/om_check.py" "$T/bad.prom" 2>/dev/null
ok $? "openmetrics: the checker refuses a broken line"
if command -v promtool >/dev/null; then
	promtool check metrics <"$T/m.prom" >"$T/promtool.out" 2>&1
	ok $? "openmetrics: promtool check metrics takes it (no lint problem) $(head -c 300 "$T/promtool.out")"
	printf '# TYPE x gauge\nx{a="1"} 1\nx{a="1"} 2\n' | promtool check metrics >/dev/null 2>&1
	[ $? -ne 0 ]
	ok $? "promtool refuses a duplicate sample (it can fail)"
else
	skip "promtool not installed (Debian's prometheus)"
	skip "promtool not installed"
fi
grep -q 'job_name="_script_alert(1)_/script_"\|job_name="<script>alert(1)</script>"' "$T/m.prom"
ok $? "openmetrics: a job name is a label value"

cat >"$T/site.yaml" <<'Y'
finding_notes:
  idle_gaps: "https://hpc.example.edu/gpu/idle"
  straggler: "Ask research computing about node health checks."
Y
"$G" ledger --from-file "$T/sacct.txt" --until 2026-12-06 --config "$T/site.yaml" >"$T/l.txt" 2>/dev/null
grep -q "site note: Ask research computing about node health checks." "$T/l.txt" &&
	grep -q "site note: https://hpc.example.edu/gpu/idle" "$T/l.txt"
ok $? "text: the site's finding_notes beside the wasters' first findings"
grep -q "^GPU-hours allocated" "$T/l.txt" && grep -q "^  bob " "$T/l.txt" && grep -q "week over week" "$T/l.txt"
ok $? "text: totals, a line per user, week over week"
"$G" ledger --from-file "$T/sacct.txt" --until 2026-12-06 --by user,name --config "$T/site.yaml" -f html -o "$T/l.html" 2>/dev/null
# the HTML carries what text, JSON and CSV do: each group's and the total's refused and
# scaled records, failed / out of memory / timed-out GPU-hours and week over week (before:
# none of them in the HTML), read by parsing it: the total row against the JSON's total
python3 - "$T/l.html" "$T/l.json" <<'PY'
import json, sys
from html.parser import HTMLParser
class P(HTMLParser):
    def __init__(s):
        super().__init__(); s.th = []; s.rows = []; s.cell = None; s.ptext = {}; s.pc = None; s.intable = 0
    def handle_starttag(s, tag, a):
        a = dict(a)
        if tag == "table": s.intable = a.get("class") == "groups"
        if tag == "tr" and s.intable: s.rows.append((a.get("class"), []))
        if tag in ("td", "th") and s.intable: s.cell = ""
        if tag == "p": s.pc = a.get("class"); s.ptext[s.pc] = ""
    def handle_endtag(s, tag):
        if tag in ("td", "th") and s.cell is not None:
            s.rows[-1][1].append(s.cell.strip()); s.cell = None
        if tag == "p": s.pc = None
        if tag == "table": s.intable = 0
    def handle_data(s, d):
        if s.cell is not None: s.cell += d
        if s.pc: s.ptext[s.pc] += d
p = P(); p.feed(open(sys.argv[1]).read())
head = p.rows[0][1]
total = dict(zip(head, [r for c, r in p.rows if c == "total"][0]))
t = json.load(open(sys.argv[2]))["total"]
for k in ("failed", "oom", "timeout"):
    assert abs(float(total[k + " h"]) - t["ended_s"][k] / 3600) < 0.05, (k, total, t["ended_s"])
assert int(total["refused"]) == t["refused"] == 8 and int(total["scaled"]) == t["scaled"], total
lw, wb = t["last_week"], t["week_before"]
pts = 100 * lw["wasted_s"] / lw["allocated_s"] - 100 * wb["wasted_s"] / wb["allocated_s"]
assert abs(float(total["week (waste pts)"]) - pts) < 0.05, (total["week (waste pts)"], pts)
assert "8 records refused" in p.ptext["records"] and f"out of memory {t['ended_s']['oom'] / 3600:.1f} h" in p.ptext["ended"], p.ptext
assert f"({pts:+.1f} points)" in p.ptext["week"], p.ptext["week"]
assert all(len(r) == len(head) for c, r in p.rows[1:]), [len(r) for c, r in p.rows]
PY
ok $? "html: refused and scaled records, failed/OOM/timed-out GPU-hours and week over week, per group and in total, as the JSON says"
C=$(command -v chromium || command -v chromium-browser)
if [ -z "$C" ]; then
	skip "chromium not installed"
else
	timeout 120 "$C" --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
		--disable-component-update --disable-sync --user-data-dir="$T/ud" --dump-dom "file://$T/l.html" \
		>"$T/dom.html" 2>/dev/null
	python3 - "$T/dom.html" <<'PY'
import sys
from html.parser import HTMLParser
class P(HTMLParser):
    def __init__(s):
        super().__init__(); s.tags = {}; s.rows = 0; s.links = []; s.text = ""
    def handle_starttag(s, tag, a):
        s.tags[tag] = s.tags.get(tag, 0) + 1
        s.rows += tag == "tr"
        if tag == "a": s.links.append(dict(a).get("href"))
    def handle_data(s, d): s.text += d
p = P(); p.feed(open(sys.argv[1]).read())
assert "script" not in p.tags, "a job name became a script"
assert "<script>alert(1)</script>" in p.text
assert p.tags.get("table") == 3 and p.rows > 10, (p.tags, p.rows)
assert "https://hpc.example.edu/gpu/idle" in p.links, p.links
assert p.tags.get("span", 0) > 20  # the cause bars
PY
	ok $? "html: headless Chromium's DOM has the three tables, the bars, the note's link, and a job name as text, never a script"
fi

# 3b. issue 48's leftovers (session 33)
HDR='JobID|User|Account|Partition|JobName|NodeList|State|End|ElapsedRaw|AllocTRES|SystemComment'
# a job on 10 000 nodes (a range), one on 10 000 nodes of a fragmented cluster (a list of
# 60 KB), each with a GPU a node: --by node has 10 000 nodes of each, an hour a node (the
# list was cut at 4 096 hosts, and each bracket at 255 bytes: 42 hosts); a file's range of
# 4 294 967 296 hosts, or 65 537 (a 20-byte list that cost --by node a million host
# groups where a job could hold 1 000 000: the reviewer), is an unreadable line, never a job
python3 - "$T/nodes.txt" "$HDR" <<'PY'
import sys
hosts = ",".join(f"{i:05d}" for i in range(1, 20000, 2))
with open(sys.argv[1], "w") as f:
    f.write(sys.argv[2] + "\n")
    f.write("801|alice|phys|gpu|big|a[00001-10000]|COMPLETED|2026-12-05T12:00:00|3600|cpu=1,gres/gpu=10000|\n")
    f.write(f"802|bob|chem|gpu|frag|b[{hosts}]|COMPLETED|2026-12-05T12:00:00|3600|cpu=1,gres/gpu=10000|\n")
    f.write("803|eve|chem|gpu|huge|c[0-4294967295]|COMPLETED|2026-12-05T12:00:00|3600|cpu=1,gres/gpu=1|\n")
    f.write("804|eve|chem|gpu|past|d[1-65537]|COMPLETED|2026-12-05T12:00:00|3600|cpu=1,gres/gpu=1|\n")
PY
"$G" ledger --from-file "$T/nodes.txt" --until 2026-12-06 --by node -f json 2>"$T/nodes.err" | python3 -c 'import json, sys
l = json.load(sys.stdin)
g = {x["node"]: x for x in l["groups"]}
a = [n for n in g if n.startswith("a")]
b = [n for n in g if n.startswith("b")]
assert len(a) == 10000 and len(b) == 10000 and len(g) == 20000, (len(a), len(b), len(g))
assert "a10000" in g and "b19999" in g and "b00002" not in g
assert all(abs(x["allocated_s"] - 3600) < 1e-6 for x in g.values())
assert l["total"]["jobs"] == 2 and l["skipped"]["unreadable"] == 2, (l["total"]["jobs"], l["skipped"])' &&
	grep -q "NodeList of more hosts than a job can hold" "$T/nodes.err"
ok $? "--by node: a job on 10 000 nodes (a range, and a 60 KB list) has each, an hour each; 4 294 967 296 hosts, or 65 537 (more than a job holds), is an unreadable line"
# every Slurm end state but COMPLETED ended badly, in a class (job_state_string() of
# src/common/slurm_protocol_defs.c; doc/admin.md's table): BOOT_FAIL and NODE_FAIL failed,
# DEADLINE timed out (before: both counted as ending well), CANCELLED and REVOKED cancelled,
# PREEMPTED and the REQUEUED runs preempted; RESIZING ended well; CONFIGURING, COMPLETING
# and the like are still allocated. Each job's seconds a power of 2, so each sum says which
{
	echo "$HDR"
	i=0
	for st in COMPLETED FAILED NODE_FAIL BOOT_FAIL SPECIAL_EXIT OUT_OF_MEMORY TIMEOUT DEADLINE \
		"CANCELLED by 1000" REVOKED PREEMPTED REQUEUED REQUEUE_FED REQUEUE_HOLD RESIZING \
		CONFIGURING COMPLETING STOPPED SIGNALING STAGE_OUT RESV_DEL_HOLD; do
		echo "$((900 + i))|alice|phys|gpu|s$i|n1|$st|2026-12-05T12:00:00|$((1 << i))|cpu=1,gres/gpu=1|"
		i=$((i + 1))
	done
} >"$T/states.txt"
"$G" ledger --from-file "$T/states.txt" --until 2026-12-06 -f json 2>/dev/null | python3 -c 'import json, sys
l = json.load(sys.stdin)
e = l["total"]["ended_s"]
want = {"failed": 2 + 4 + 8 + 16, "oom": 32, "timeout": 64 + 128, "cancelled": 256 + 512,
        "preempted": 1024 + 2048 + 4096 + 8192}
assert e == want, (e, want)
assert l["total"]["jobs"] == 15 and l["skipped"]["running"] == 6, (l["total"]["jobs"], l["skipped"])' &&
	"$G" ledger --from-file "$T/states.txt" --until 2026-12-06 2>/dev/null |
	grep -q "^ended badly: failed 0.0 h, out of memory 0.0 h, timed out 0.1 h, cancelled 0.2 h, preempted or requeued 4.3 h"
ok $? "every end state but COMPLETED and RESIZING ended badly: BOOT_FAIL failed, DEADLINE timed out, CANCELLED, PREEMPTED and REQUEUED in classes of their own"
# an empty range in OpenMetrics: every family has its samples, 0 where 0 is the truth (a
# family without a sample is dropped by the textfile collector, and a dashboard reads no
# data, not "no GPU job"); before: HELP and TYPE lines alone
echo "$HDR" >"$T/empty.txt"
"$G" ledger --from-file "$T/empty.txt" --until 2026-12-06 -f openmetrics -o "$T/empty.prom" 2>/dev/null &&
	python3 "$H/om_check.py" "$T/empty.prom" && python3 - "$T/empty.prom" <<'PY'
import re, sys
fams, samples = [], {}
for line in open(sys.argv[1]):
    if line.startswith("# TYPE "):
        fams.append(line.split()[2])
    elif not line.startswith("#"):
        name, v = re.match(r"([a-z_]+)(?:\{.*\})? (\S+)$", line.strip()).groups()
        samples.setdefault(name, []).append(float(v))
assert len(fams) == 7 and all(samples.get(f) for f in fams), (fams, samples.keys())
for f in ("gpuprof_ledger_allocated_gpu_seconds", "gpuprof_ledger_gpu_seconds",
          "gpuprof_ledger_ended_gpu_seconds", "gpuprof_ledger_jobs"):
    assert all(v == 0 for v in samples[f]), (f, samples[f])
assert len(samples["gpuprof_ledger_gpu_seconds"]) == 9 and len(samples["gpuprof_ledger_jobs"]) == 3
PY
r=$?
if [ $r = 0 ] && command -v promtool >/dev/null; then
	promtool check metrics <"$T/empty.prom" >/dev/null 2>&1
	r=$?
fi
ok $r "openmetrics of an empty range: every family's samples, 0 (the strict checker and promtool take it)"
# a broken feed seen from the metrics and the JSON: the unreadable lines and the Ends the
# jobs cover, beside the range asked (before: the unreadable count in JSON alone)
{
	echo "$HDR"
	echo "811|alice|phys|gpu|a|n1|COMPLETED|2026-12-01T10:00:00|60|cpu=1,gres/gpu=1|"
	echo "812|alice|phys|gpu|b|n1|COMPLETED|2026-12-04T10:00:00|60|cpu=1,gres/gpu=1|"
	echo "813|alice|phys|gpu|c|n1|COMPLETED|1764500000|60|cpu=1,gres/gpu=1|"
	echo "814|alice|phys|gpu|d|n1|COMPLETED|2026-10-04T10:00:00|60|cpu=1,gres/gpu=1|"
} >"$T/feed.txt"
"$G" ledger --from-file "$T/feed.txt" --until 2026-12-06 -f openmetrics -o "$T/feed.prom" 2>/dev/null
"$G" ledger --from-file "$T/feed.txt" --until 2026-12-06 -f json -o "$T/feed.json" 2>/dev/null
python3 - "$T/feed.prom" "$T/feed.json" <<'PY'
import json, sys, time
m = {}
for line in open(sys.argv[1]):
    if not line.startswith("#"):
        k, v = line.rsplit(" ", 1)
        m[k] = float(v)
j = json.load(open(sys.argv[2]))
ts = lambda s: int(time.mktime(time.strptime(s, "%Y-%m-%dT%H:%M:%S")))
assert m['gpuprof_ledger_lines{kind="unreadable"}'] == 1 and m['gpuprof_ledger_lines{kind="read"}'] == 5, m
assert m['gpuprof_ledger_lines{kind="out_of_range"}'] == 1, m
assert m['gpuprof_ledger_range_timestamp_seconds{edge="until"}'] == j["until"] == ts("2026-12-06T00:00:00"), m
assert m['gpuprof_ledger_range_timestamp_seconds{edge="since"}'] == j["since"], m
assert m['gpuprof_ledger_job_end_timestamp_seconds{edge="first"}'] == j["job_ends"]["first"] == ts("2026-12-01T10:00:00"), m
assert m['gpuprof_ledger_job_end_timestamp_seconds{edge="last"}'] == j["job_ends"]["last"] == ts("2026-12-04T10:00:00"), m
PY
r=$?
[ $r = 0 ] && command -v promtool >/dev/null && { promtool check metrics <"$T/feed.prom" >/dev/null 2>&1 || r=1; }
ok $r "openmetrics and JSON: unreadable and skipped lines, the range asked and the first and last End of the jobs counted"
# refused records past the 20 said on stderr: JSON lists every one's job and why, up to
# 10 000, and counts the rest (before: the 21st on named nowhere)
python3 - "$T/refused.txt" "$HDR" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    f.write(sys.argv[2] + "\n")
    for i in range(10005):
        f.write(f"{100000 + i}|bob|chem|gpu|r|n1|COMPLETED|2026-12-05T12:00:00|60|cpu=1,gres/gpu=1|gpuprof-record/9 x=1\n")
PY
"$G" ledger --from-file "$T/refused.txt" --until 2026-12-06 -f json 2>"$T/refused.err" | python3 -c 'import json, sys
r = json.load(sys.stdin)["refused_records"]
assert r["count"] == 10005 and r["more"] == 5 and len(r["jobs"]) == 10000, (r["count"], r["more"], len(r["jobs"]))
assert r["jobs"][0]["job"] == "100000" and r["jobs"][-1]["job"] == "109999", (r["jobs"][0], r["jobs"][-1])
assert all("version" in x["why"] for x in r["jobs"]), r["jobs"][0]' &&
	[ "$(grep -c "record refused" "$T/refused.err")" = 20 ] && grep -q "9985 more records refused" "$T/refused.err"
ok $? "refused records: JSON lists 10 000 jobs with why, and 5 more counted; stderr says 20"
# an unreadable line's text on stderr goes through the project's one rule (gp_shown): a
# tab, an escape, a C1 control and a bidirectional override each a '?'
printf '%s\n9\tx\033[2J\302\205\342\200\256|only\n' "$HDR" >"$T/ctl.txt"
"$G" ledger --from-file "$T/ctl.txt" --until 2026-12-06 -f json >/dev/null 2>"$T/ctl.err"
grep -qF 'unreadable (a line cut short at the end): 9?x?[2J??|only' "$T/ctl.err"
ok $? "an unreadable line's controls are '?' on stderr ($(grep unreadable "$T/ctl.err" | head -c 160))"

# 4. the command line
out=$(PATH=/nonexistent "$G" ledger --help 2>&1)
[ $? = 0 ] && echo "$out" | grep -q "^usage: gpuprof ledger" && ! echo "$out" | grep -q "gpuprof: ledger:"
ok $? "--help prints the help and runs nothing"
[ "$("$G" ledger --print-fields)" = "JobID,User,Account,Partition,JobName,NodeList,State,End,ElapsedRaw,AllocTRES,SystemComment" ]
ok $? "--print-fields"
bad=(
	"--by=group|--by: 'group' is not a grouping"
	"--by=user,user|--by: 'user' twice"
	"--by=user,|--by: 'user,'"
	"--since=yesterdayish|--since: 'yesterdayish' is not a date"
	"--until=2026-13-01|--until: '2026-13-01' is not a date"
	"--since=now-3fortnights|--since: 'now-3fortnights' is not a date"
	"--since=2026-12-06 --until=2026-12-01|--since '2026-12-06' comes after --until '2026-12-01'"
	"--format=xml|--format: 'xml' (text, json, csv, html, openmetrics)"
	"--top=5000|--top"
)
for e in "${bad[@]}"; do
	a=${e%%|*}
	w=${e#*|}
	# shellcheck disable=SC2086
	out=$("$G" ledger --from-file "$T/sacct.txt" $a 2>&1)
	rc=$?
	[ $rc = 2 ] && echo "$out" | grep -qF "gpuprof: ledger: $w"
	ok $? "usage error ($rc): $a"
done
for w in now-7days now-36hours 2026-11-01 2026-11-01T08:00 2026-11-01T08:00:30 11/01 11/01/26 today midnight \
	110126 11.01.26 10:00AM today-08:00 uts1764547200; do
	# a time of day without a date is today's, as sacct reads it (parse_time with past set):
	# 10:00AM is later than now before 10:00, so the window ends tomorrow
	"$G" ledger --from-file "$T/sacct.txt" --since "$w" --until now+1days -f json -o /dev/null 2>/dev/null
	ok $? "Slurm's date syntax: --since $w"
done
# a window that ends at the epoch is one (0 was read as no end: every job counted)
"$G" ledger --from-file "$T/sacct.txt" --until 1970-01-01T00:00:00 --since 1970-01-01 -f json 2>/dev/null |
	python3 -c 'import json,sys; j=json.load(sys.stdin); assert j["total"]["jobs"] == 0 and j["skipped"]["out_of_range"] > 0, (j["total"]["jobs"], j["skipped"])'
ok $? "--until 1970-01-01: no job in the window, each out of range"
"$G" ledger --from-file "$T/nonexistent" >/dev/null 2>"$T/e"
[ $? = 1 ] && grep -q "gpuprof: ledger: --from-file $T/nonexistent: No such file" "$T/e"
ok $? "a file that is not there: exit 1 and its name"
printf 'JobID|User|State\n1|a|COMPLETED\n' | "$G" ledger --from-file - >/dev/null 2>"$T/e"
[ $? = 1 ] && grep -q "sacct's header has no Account" "$T/e"
ok $? "a header without the fields: exit 1 and the field named"
tail -n +2 "$T/sacct.txt" | "$G" ledger --from-file - --until 2026-12-06 -f json 2>/dev/null |
	python3 -c 'import json,sys; t=json.load(sys.stdin)["total"]; assert t["jobs"] == 16 and t["profiled"] == 6, t'
ok $? "no header: --print-fields' order"
done_testing
