#!/bin/bash
# Two nodes (tests/slurm/cluster --nodes=2: gpn1 and gpn2, each slurmd in its own network
# and UTS namespace, SLURM_CONF exported): a 2-node x 2-task job end to end. Each node's
# agents write their ranks and summaries, the report merges both nodes, AdminComment links
# the job to it, and srun is not held up by the report (it runs detached on node 0).
. "$(dirname "$0")/tap.sh"
B=${GP_BUILD:?}
[ -n "${SLURM_CONF:-}" ] || skip_all "no cluster (SLURM_CONF unset)"
[ "$(sinfo -h -o %n | sort | tr '\n' ' ')" = "gpn1 gpn2 " ] || skip_all "not the two-node cluster"
W=$(mktemp -d /var/tmp/gp-2n.XXXXXX)
chmod 755 "$W"
trap 'rm -rf "$W"' EXIT
cd "$W"
TO="timeout 120"
MLP="$B/gpuprof-train-mlp --steps 12 --dim 16 --layers 3 --batch 4"
wait_gone() { for i in $(seq 90); do [ -z "$(squeue -h -j "$1" 2>/dev/null)" ] && return; sleep 1; done; }
admin_comment() { # job: waits for ours
	local i ac
	for i in $(seq 60); do
		ac=$(sacct -n -X -j "$1" -o AdminComment%500 | sed 's/^ *//; s/ *$//')
		echo "$ac" | grep -q "gpuprof: ranks" && break
		sleep 1
	done
	echo "$ac"
}

# 1. sbatch -N2 -n4: the inner srun spreads two tasks on each node
# (these rank files are small: GPUPROF_SUMMARY_MIN_BYTES=0 has every one summarised)
jid=$(GPUPROF_SUMMARY_MIN_BYTES=0 $TO sbatch --parsable -N2 -n4 --ntasks-per-node=2 --gpuprof=nvtx -o out.%j --wrap="srun $MLP")
ok $? "sbatch -N2 -n4 --gpuprof=nvtx accepted (job ${jid:-?})"
wait_gone "$jid"
j=gpuprof-$jid
for i in $(seq 20); do # the accounting record completes after squeue forgets the job
	st=$(sacct -n -X -P -j "$jid" -o State,NodeList | head -1)
	[ "$st" = "COMPLETED|gpn[1-2]" ] && break
	sleep 0.5
done
[ "$st" = "COMPLETED|gpn[1-2]" ]; ok $? "the job ran on both nodes and completed ($st)"
for r in 0 1 2 3; do [ -f "$j/step0/rank$r.gpr" ] || break; done
[ -f "$j/step0/rank3.gpr" ]; ok $? "four rank files from two nodes"
for i in $(seq 20); do [ "$(ls $j/step0/rank*.gps 2>/dev/null | wc -l)" -ge 4 ] && break; sleep 0.5; done
[ "$(ls $j/step0/rank*.gps 2>/dev/null | wc -l)" = 4 ]; ok $? "each rank's summary written on its node at capture end"
for i in $(seq 60); do [ -f "$j/report.json" ] && break; sleep 0.5; done
python3 - "$j/report.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
ranks = [r for r in j["ranks"] if str(r["step"]) == "0"]
nodes = sorted({r["node"] for r in ranks})
assert nodes == ["gpn1", "gpn2"], nodes
assert sorted(r["rank"] for r in ranks) == [0, 1, 2, 3], [r["rank"] for r in ranks]
# a node's ranks are consecutive (block distribution): 0,1 on one node, 2,3 on the other
by = {r["rank"]: r["node"] for r in ranks}
assert by[0] == by[1] and by[2] == by[3] and by[0] != by[2], by
assert all(r["steps"]["count"] > 0 for r in ranks)
PY
ok $? "the job report merges both nodes' ranks (report.json, written detached at job end)"
GPUPROF_DEBUG=1 $B/gpuprof report --quiet "$j" 2>&1 | grep -q "report: 5 rank(s) from their summaries, 0 from their rank files"
ok $? "the merged report reads every rank from its summary (batch step + 4)"
# the same merge from the rank files alone
GPUPROF_REPORT_SUMMARIES=false $B/gpuprof report --format=json "$j" >full.json &&
	$B/gpuprof report --format=json "$j" >sums.json && cmp -s full.json sums.json
ok $? "report from summaries equals the report from the rank files"
python3 - "$j/job.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert sorted(j["nodes"]) == ["gpn1", "gpn2"], j["nodes"]
ranks = [r for r in j["profiled_ranks"] if str(r["step"]) == "0"]
assert sorted({r["node"] for r in ranks}) == ["gpn1", "gpn2"]
assert all(r["outcome"] == "exit 0" and r["complete"] for r in ranks), ranks
assert len(j["node_summaries"]) >= 2, len(j["node_summaries"])
PY
ok $? "job.json names both nodes, every rank complete, a step summary from each node"
ls "$j"/step0/node*.json >/dev/null 2>&1 && [ "$(ls "$j"/step0/node*.json | wc -l)" = 2 ]
ok $? "each node wrote its step summary (node*.json)"
ac=$(admin_comment "$jid")
echo "$ac" | grep -q "gpuprof: ranks=4" && echo "$ac" | grep -q "dir=$W/$j" # 4 ranks of step 0; the batch script is no rank
ok $? "AdminComment links the job to its merged report ($(echo "$ac" | head -c 80))"

# 2. srun -N2 -n4 from outside an allocation: the job has ended before the report is
#    done, so AdminComment goes to the accounting record once the job's is complete
$TO srun -N2 -n4 --gpuprof=nvtx sh -c 'echo "job=$SLURM_JOB_ID" >&2; exec "$@"' sh $MLP >/dev/null 2>srun.err
ok $? "srun -N2 -n4 --gpuprof=nvtx"
jid2=$(sed -n 's/^job=//p' srun.err | head -1)
ac=$(admin_comment "$jid2")
echo "$ac" | grep -q "gpuprof: ranks=4"; ok $? "a job ended before its report still gets AdminComment ($(echo "$ac" | head -c 60))"
[ -f "gpuprof-$jid2/report.txt" ]; ok $? "and its report"

# 3. node 2's task and its agent killed (SIGKILL): the rank's spool stays in node 2's own
#    spool (spool_dir ...-%h), which only node 2's epilog salvages; that node then reports
#    again
cat >kill2.sh <<'SH'
#!/bin/bash
if [ "$SLURM_NODEID" = 1 ]; then
	(sleep 2; kill -9 "$PPID" "$$") & # the agent (our parent) and, after exec, the program
	exec "$@" --steps 1000000000
fi
exec "$@" --steps 12
SH
chmod +x kill2.sh
jid3=$($TO sbatch --parsable -N2 -n2 --ntasks-per-node=1 --gpuprof=nvtx -o out.%j \
	--wrap="srun $W/kill2.sh $B/gpuprof-train-mlp --dim 16 --layers 3 --batch 4")
wait_gone "$jid3"
for i in $(seq 60); do grep -q '"rank": 1' "gpuprof-$jid3/report.json" 2>/dev/null && break; sleep 0.5; done
python3 - "gpuprof-$jid3/report.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
ranks = {r["rank"]: r for r in j["ranks"] if str(r["step"]) == "0"}
assert sorted(ranks) == [0, 1], sorted(ranks)
assert ranks[0]["node"] != ranks[1]["node"]
assert ranks[1]["outcome"] == "incomplete" and ranks[1]["steps"]["count"] > 0, ranks[1]["outcome"]
PY
ok $? "a rank killed with its agent on the second node is salvaged there, in the merged report"
grep -q "job $jid3: report of .* done (epilog)" "$(dirname "$SLURM_CONF")/../gpstate-gpn2/finish.log"
ok $? "node 2, having salvaged a rank, reported again (its finish.log)"

# a state_dir that others could write into is not used (no log line, no lock files made
# there as root), and the job still gets its report and AdminComment
sd="$(dirname "$SLURM_CONF")/../gpstate-gpn1"
mode=$(stat -c %a "$sd")
chmod 0777 "$sd"
jid4=$($TO sbatch --parsable -N2 -n2 --ntasks-per-node=1 --gpuprof=nvtx -o out.%j --wrap="srun $MLP")
wait_gone "$jid4"
ac=$(admin_comment "$jid4")
chmod "$mode" "$sd"
grep -q "job $jid:" "$sd/finish.log" # the first job's finisher logged there
ok $? "node 1's finisher logs into its state_dir (job $jid)"
echo "$ac" | grep -q "gpuprof: ranks" && [ -s "gpuprof-$jid4/report.json" ] &&
	! grep -q "job $jid4:" "$sd/finish.log" && [ ! -e "$sd/$jid4.lock" ]
ok $? "node 1's state_dir made world-writable: no log line or lock made there, the report and AdminComment still are"
done_testing
