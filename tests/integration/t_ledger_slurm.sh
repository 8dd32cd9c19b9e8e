#!/bin/bash
# The accounting record and gpuprof ledger on a real slurmdbd (tests/slurm/cluster,
# SLURM_CONF exported): jobs of 3 users in 2 accounts on 2 partitions with GPUs (gres on
# stand-in devices), some profiled, one failing; jobstats writes its JS1: summary into
# AdminComment after gpuprof's record (its epilog's sacctmgr command, then its database
# handler's statement, since 22.05's sacctmgr lowercases the value) and, in another job,
# before it (gpuprof's report held back by the job's lock in the state directory), and
# jobstats' decode of it still works; the record stays in SystemComment, which a user cannot write;
# the ledger's totals read from sacct equal the sum of the jobs' own report.json fields
# and Slurm's allocations; a forged Comment and job name are never read; a job name with a
# newline (sacct -P prints it raw, cutting the job's line in two) whose tail reads as another
# user's job stays one job of its own user; malformed records set by an operator are
# refused with a line and never counted.
# Runs on Slurm 22.05 (the host cluster) and 24.11 (inside the trixie chroot: scripts/test
# sets GP_BUILD=/opt/gpuprof/bin, GP_STATE_DIR=/run/gp/state, GP_MYSQL_SOCK=/run/gp/mysql.sock).
. "$(dirname "$0")/tap.sh"
B=${GP_BUILD:?}
[ -n "${SLURM_CONF:-}" ] || skip_all "no cluster (SLURM_CONF unset)"
sinfo -h -o %G | grep -q gpu || skip_all "the cluster has no gres/gpu (tests/slurm/cluster up anew)"
# a second partition for this test alone, on the same node
scontrol create PartitionName=gpu Nodes=ALL MaxTime=INFINITE State=UP OverSubscribe=YES 2>/dev/null
W=$(mktemp -d /var/tmp/gp-ledger.XXXXXX)
chmod 755 "$W"
trap 'exec 9>&- 2>/dev/null; scontrol delete PartitionName=gpu 2>/dev/null; rm -rf "$W"' EXIT
TO="timeout 60"
STATE=${GP_STATE_DIR:-/run/gpuprof} # the plugin's state_dir
for u in gpl-alice gpl-bob gpl-carol; do
	id "$u" >/dev/null 2>&1 || useradd -M -s /bin/bash "$u"
	mkdir -p "$W/$u" && chown "$u" "$W/$u"
done
sacctmgr -i add account phys,chem >/dev/null 2>&1
sacctmgr -i add user gpl-alice account=phys >/dev/null 2>&1
sacctmgr -i add user gpl-bob account=chem >/dev/null 2>&1
sacctmgr -i add user gpl-carol account=phys,chem >/dev/null 2>&1
as() { # as USER COMMAND...: in the user's directory, as the user
	local u=$1
	shift
	(cd "$W/$u" && $TO runuser -u "$u" -- env SLURM_CONF="$SLURM_CONF" "$@")
}
sc() { sacct -n -P -X -j "$1" -o SystemComment 2>/dev/null; }
ac() { sacct -n -P -X -j "$1" -o AdminComment 2>/dev/null; }
wait_record() { # JOB: until SystemComment holds our record (30 s)
	local i
	for i in $(seq 60); do
		sc "$1" | grep -q "gpuprof-record/1 " && return 0
		sleep 0.5
	done
	return 1
}
wait_done() { # JOB: until the accounting record says the job ended
	local i
	for i in $(seq 60); do
		case $(sacct -n -P -X -j "$1" -o State 2>/dev/null) in
		COMPLETED* | FAILED* | TIMEOUT* | CANCELLED* | OUT_OF_MEMORY*) return 0 ;;
		esac
		sleep 0.5
	done
	return 1
}
# jobstats' summary, as its jobstats -f -b makes it (base64 of gzip of JSON), written by its
# slurmctld epilog's own command
js1() {
	python3 -c 'import base64, gzip, json, sys
d = {"gpus": 1, "nodes": {"n1": {"cpus": 1, "gpu_utilization": {"0": 0.0}, "total_memory": 1024}}, "total_time": int(sys.argv[1])}
print(base64.b64encode(gzip.compress(json.dumps(d).encode("ascii"))).decode("ascii"))' "$1"
}
jobstats_epilog() { sacctmgr -i update job where jobid="$1" set AdminComment="JS1:$2" >/dev/null; }
# Slurm 22.05's sacctmgr lowercases the value (the base64 then no longer decodes: jobstats'
# own problem there, with or without gpuprof); jobstats' database handler (db_handler.py)
# writes the job table itself, "UPDATE {cluster}_job_table SET admin_comment = %s WHERE
# id_job = %s", which keeps it as it is
D=$(dirname "$(dirname "$SLURM_CONF")")
CLUSTER=$(sed -n 's/^ClusterName=//p' "$SLURM_CONF")
jobstats_db() {
	mariadb --skip-ssl -S "${GP_MYSQL_SOCK:-$D/mysql/sock}" slurm_acct_db \
		-e "UPDATE ${CLUSTER}_job_table SET admin_comment = 'JS1:$2' WHERE id_job = $1"
}
# jobstats' reader: everything after the first four characters, base64 -> gzip -> JSON
js1_decode() {
	python3 -c 'import base64, gzip, json, sys
s = sys.stdin.read().rstrip("\n")
assert s.startswith("JS1:") and len(s) > 10, s[:40]
print(json.loads(gzip.decompress(base64.b64decode(s[4:])))["total_time"])'
}
jid_of() { sed -n 's/^Submitted batch job \([0-9]*\).*/\1/p;s/^\([0-9][0-9]*\)$/\1/p' | tail -1; }
t0=$(date +%Y-%m-%dT%H:%M:%S)
sleep 1

# 1. the jobs
# job 1 holds 2 GPUs it never uses, seen so through a stand-in NVML (tests/nvml/fake_nvml.c:
# two GPUs, no process of the task on them): the evidence the ledger needs to call them
# unused (a record that saw no GPU at all leaves them unprofiled); it runs 2 s, since a job
# of ElapsedRaw 0 (srun true, seen on 24.11) has no GPU-second to call unused
# (the 24.11 tier runs the installed gpuprof, GP_BUILD=/opt/gpuprof/bin: the stand-in is in
# the chroot's build tree, /src)
nv=$B/tests/nvml/.libs/libfakenvml.so
[ -f "$nv" ] || nv=/src/tests/nvml/.libs/libfakenvml.so
mkdir -p "$W/nvml" && cp "$nv" "$W/nvml/libnvidia-ml.so.1" && chmod -R a+rX "$W/nvml"
o1=$(as gpl-alice sbatch --parsable -p gpu -A phys --gres=gpu:2 --gpuprof=nvtx,cuda \
	--export=ALL,LD_LIBRARY_PATH="$W/nvml" \
	--gpuprof-output="$W/gpl-alice/gp-%j" --wrap='srun sleep 2'); j1=$(echo "$o1" | jid_of)
o2=$(as gpl-bob sbatch --parsable -p debug -A chem --gres=gpu:1 --gpuprof=nvtx \
	--gpuprof-output="$W/gpl-bob/gp-%j" --wrap='srun true; exit 3'); j2=$(echo "$o2" | jid_of)
forged="gpuprof-record/1 ranks=1 gpus=1 compute=99999.000 comm=0.000 input=0.000 launch=0.000 sync=0.000 startup=0.000 idle=0.000 unused=0.000 unprofiled=0.000 step_ms=1.000 peak=1 card=1 top=none dir=/x"
o3=$(as gpl-carol sbatch --parsable -p gpu -A phys --gres=gpu:1 --comment="$forged" -J "$forged" \
	--wrap=true); j3=$(echo "$o3" | jid_of)
o4=$(as gpl-carol sbatch --parsable -p debug -A chem --gres=gpu:1 --gpuprof=nvtx \
	--gpuprof-output="$W/gpl-carol/gp-%j" --wrap='srun true'); j4=$(echo "$o4" | jid_of)
# 5: jobstats first: gpuprof's report for the job waits for the job's lock, held here
o5=$(as gpl-bob sbatch --parsable -p gpu -A chem --gres=gpu:1 --gpuprof=nvtx \
	--gpuprof-output="$W/gpl-bob/gp-%j" --wrap='srun sleep 3'); j5=$(echo "$o5" | jid_of)
[ -d "$STATE" ] || install -d -m 0700 "$STATE"
[ -n "$j5" ] && exec 9>"$STATE/report-$j5.lock" && flock 9
o6=$(as gpl-alice sbatch --parsable -p gpu -A phys --gres=gpu:1 --wrap=true); j6=$(echo "$o6" | jid_of)
o7=$(as gpl-carol sbatch --parsable -p debug -A phys --gres=gpu:2 --wrap=true); j7=$(echo "$o7" | jid_of)
# 8: a job name with '|' and a newline that completes its own line in sacct -P's output (8
# GPUs for 10 h) and starts a job 999 of alice's (the admin tester's forge): the
# ledger asks sacct for a sealed delimiter, so it stays carol's job name
o8=$(as gpl-carol sbatch --parsable -p debug -A chem --gres=gpu:1 \
	-J "$(printf 'x|n|COMPLETED|2026-12-05T12:00:00|36000|gres/gpu=8|\n999|gpl-alice|phys|gpu|y')" \
	--wrap='sleep 2'); j8=$(echo "$o8" | jid_of)
[ -n "$j1" ] && [ -n "$j2" ] && [ -n "$j3" ] && [ -n "$j4" ] && [ -n "$j5" ] && [ -n "$j6" ] && [ -n "$j7" ] && [ -n "$j8" ]
ok $? "8 GPU jobs of 3 users, 2 accounts, 2 partitions submitted ($j1 $j2 $j3 $j4 $j5 $j6 $j7 $j8)"

# 2. jobstats after gpuprof (job 4), and before it (job 5)
wait_record "$j4"
ok $? "job $j4: gpuprof's record in SystemComment: $(sc "$j4" | head -c 120)"
js_a=$(js1 444)
jobstats_epilog "$j4" "$js_a"
sc "$j4" | grep -q "^gpuprof-record/1 "
ok $? "job $j4: jobstats' epilog command (sacctmgr) after gpuprof: the record stays in SystemComment (AdminComment now '$(ac "$j4" | head -c 24)...')"
jobstats_db "$j4" "$js_a"
[ "$(ac "$j4")" = "JS1:$js_a" ] && [ "$(ac "$j4" | js1_decode)" = 444 ]
ok $? "job $j4: jobstats' database write after gpuprof: AdminComment is its JS1 value alone, and its reader decodes it"
sc "$j4" | grep -q "^gpuprof-record/1 ranks=[0-9]* gpus=0 .* dir=$W/gpl-carol/gp-$j4$"
ok $? "job $j4: gpuprof's record still in SystemComment after jobstats replaced AdminComment"
wait_done "$j5"
js_b=$(js1 555)
jobstats_db "$j5" "$js_b"
exec 9>&- # the job's report may go on
wait_record "$j5"
ok $? "job $j5: gpuprof's record written after jobstats' epilog: $(sc "$j5" | head -c 100)"
sleep 2 # the epilog's finisher and the step end's both ran by now (each writes both fields)
[ "$(ac "$j5")" = "JS1:$js_b" ] && [ "$(ac "$j5" | js1_decode)" = 555 ]
ok $? "job $j5: gpuprof after jobstats: AdminComment still exactly jobstats' (decodes), nothing appended: $(ac "$j5" | head -c 60)"
grep -q "job $j5: AdminComment holds jobstats' JS1 summary; our line left out" "$STATE/finish.log"
ok $? "job $j5: the finisher says why it left AdminComment alone (finish.log)"

# 3. the other jobs' records and lines
wait_record "$j1" && wait_record "$j2"
# job 1's step end and its epilog each write the record; the later one has the whole job
for _ in $(seq 30); do sc "$j1" | grep -q " top=gpu_unused " && break; sleep 1; done
ok $? "jobs $j1 (2 GPUs) and $j2 (failed): records in SystemComment"
ac "$j1" | grep -q "^gpuprof: ranks=" && ! ac "$j1" | grep -q "gpuprof-record"
ok $? "job $j1: the human line in AdminComment where no JS1 is, the record not there: $(ac "$j1" | head -c 80)"
wait_done "$j3" && wait_done "$j6" && wait_done "$j7" && wait_done "$j8"
[ -z "$(sc "$j3")" ]
ok $? "job $j3: a forged Comment and job name put nothing into SystemComment"
# a user cannot write SystemComment, in slurmdbd nor in slurmctld
as gpl-bob sacctmgr -i modify job where jobid="$j2" set SystemComment="$forged" >/dev/null 2>&1
as gpl-bob scontrol update jobid="$j2" SystemComment="$forged" >/dev/null 2>&1
sc "$j2" | grep -q "^gpuprof-record/1 ranks=[0-9]* gpus=0 " && ! sc "$j2" | grep -q 99999
ok $? "job $j2: the user's sacctmgr and scontrol cannot replace the record"
# malformed records an operator (or a broken tool) left: a version we do not read, a huge one
sacctmgr -i modify job where jobid="$j6" set SystemComment="gpuprof-record/2 ranks=1 gpus=1" >/dev/null
huge="$(sc "$j4" | sed "s|dir=.*|dir=/$(head -c 3000 /dev/zero | tr '\0' a)|")"
sacctmgr -i modify job where jobid="$j7" set SystemComment="$huge" >/dev/null
[ "$(sc "$j6")" = "gpuprof-record/2 ranks=1 gpus=1" ] && [ "$(sc "$j7" | wc -c)" -gt 3000 ]
ok $? "jobs $j6 and $j7: malformed records set by an operator (sacctmgr)"

# 4. the ledger, from sacct
"$B/gpuprof" ledger --since "$t0" --by user,account,partition -f json -o "$W/l.json" 2>"$W/l.err"
ok $? "gpuprof ledger --since $t0 (sacct): exit 0"
grep -q "gpuprof: ledger: job $j6: SystemComment record refused: version '2' not understood" "$W/l.err" &&
	grep -q "gpuprof: ledger: job $j7: SystemComment record refused: [0-9]* bytes (at most 1024)" "$W/l.err"
ok $? "the malformed records refused with a line naming each job: $(head -c 300 "$W/l.err")"
sacct -n -P -X -S "$t0" -o JobID,AllocTRES,ElapsedRaw >"$W/alloc.txt"
for j in $j1 $j2 $j4 $j5; do sc "$j" | sed 's/.* dir=//'; done >"$W/dirs.txt"
sacct -n -P -X -j "$j8" -o JobID,User,JobName,AllocTRES >"$W/j8.txt"
sacct -n -P -X -S "$t0" -o JobID,User,AllocTRES,ElapsedRaw >"$W/alloc_u.txt"
python3 - "$W" "$j1" "$j2" "$j3" "$j4" "$j5" "$j6" "$j7" "$j8" <<'PY'
import json, re, sys
w, ids = sys.argv[1], sys.argv[2:]
l = json.load(open(f"{w}/l.json"))
tot = l["total"]
alloc = {}
for line in open(f"{w}/alloc.txt"):
    jid, tres, el = line.rstrip("\n").split("|")
    m = re.search(r"(?:^|,)gres/gpu=(\d+)", tres)
    if jid in ids and m:
        alloc[jid] = int(m.group(1)) * int(el)
assert len(alloc) == 8, alloc
assert abs(tot["allocated_s"] - sum(alloc.values())) < 1e-6, (tot["allocated_s"], alloc)
want = {}
for d in open(f"{w}/dirs.txt").read().split():
    for k, v in json.load(open(f"{d}/report.json"))["accounting"]["gpu_s"].items():
        want[k] = want.get(k, 0) + v
for k, v in want.items():
    assert abs(tot["records_gpu_s"][k] - v) < 1e-6, (k, tot["records_gpu_s"][k], v)
# job 8's name holds a newline (sacct -P prints it raw: its line is cut in two): one job,
# carol's, never a job 999 of alice's
assert tot["jobs"] == 8 and tot["profiled"] == 4 and tot["refused"] == 2, (tot, open(f"{w}/j8.txt").read())
assert tot["gpu_s"]["compute"] < 99999, "the forged figure counted"
# a job's GPUs that no rank ran kernels on: unused; the rest of the allocation unprofiled
assert abs(sum(tot["gpu_s"].values()) - tot["allocated_s"]) < 0.01, tot
assert tot["ended_s"]["failed"] == alloc[ids[1]], tot["ended_s"]
g = l["groups"]
assert {x["user"] for x in g} == {"gpl-alice", "gpl-bob", "gpl-carol"}
# each user's GPU-seconds are Slurm's for that user's jobs: job 8's are carol's, not alice's
per_user = {}
for line in open(f"{w}/alloc_u.txt"):
    jid, user, tres, el = line.rstrip("\n").split("|")
    m = re.search(r"(?:^|,)gres/gpu=(\d+)", tres)
    if jid in ids and m:
        per_user[user] = per_user.get(user, 0) + int(m.group(1)) * int(el)
got = {}
for x in g:
    got[x["user"]] = got.get(x["user"], 0) + x["allocated_s"]
assert all(abs(got.get(u, 0) - v) < 1e-6 for u, v in per_user.items()), (got, per_user)
assert {x["account"] for x in g} == {"phys", "chem"} and {x["partition"] for x in g} == {"gpu", "debug"}
u = {j["job"]: j for j in l["unused_gpus"]}
assert ids[0] in u and u[ids[0]]["gpus"] == 2 and u[ids[0]]["gpus_used"] == 0, u
PY
ok $? "ledger from sacct: the records' seconds are the sum of the 4 jobs' report.json fields, allocations Slurm's, 2 refused, the forged job unprofiled, a newline name one job, 3 users/2 accounts/2 partitions, the 2-GPU job unused ($(tr '\n' '~' <"$W/j8.txt" | head -c 80); job $j1: $(sc "$j1"))"
"$B/gpuprof" ledger --since "$t0" --by partition -f openmetrics 2>/dev/null >"$W/m.prom"
python3 "$(dirname "$0")/om_check.py" "$W/m.prom" && grep -q '^gpuprof_ledger_jobs{partition="gpu",kind="profiled"} ' "$W/m.prom"
ok $? "openmetrics from sacct, per partition"
seal="|#$(od -An -N5 -tu8 /dev/urandom | tr -d ' ' | head -c 12 | sed -e :a -e 's/^.\{1,11\}$/0&/;ta')#|"
sacct -a -P --delimiter="$seal" -S "$t0" -o "$("$B/gpuprof" ledger --print-fields)" >"$W/sacct.txt"
"$B/gpuprof" ledger --from-file "$W/sacct.txt" --since "$t0" --by user,account,partition -f json \
	-o "$W/f.json" 2>/dev/null
python3 -c 'import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert a["total"] == b["total"] and a["groups"] == b["groups"], (a["total"], b["total"])
assert b["skipped"]["steps"] > 0' "$W/l.json" "$W/f.json"
ok $? "--from-file of sacct -a -P --delimiter='$seal' -o \$(gpuprof ledger --print-fields) (steps included) gives the same ledger"
done_testing
