#!/bin/bash
# Live figures of a running job on the Slurm 22.05 test cluster (issue 52): the site's
# live_interval (2 s here, in the cluster's gpuprof.yaml) reaches every task; a real nvtx3
# client times 20 ms steps for 30 s, then 50 ms steps (a planted slowdown) until the job's
# one-minute time limit ends it; while it runs, its live file, `gpuprof report JOBID` and
# `gpuprof top JOBID` (plain, and in tmux) and `gpuprof ledger --running` are held to the program's own timing; once the
# time limit has ended it, its last live figures are there, the program's end among them,
# and the report of the finished job says it reached its time limit.
. "$(dirname "$0")/tap.sh"
B=${GP_BUILD:?}
C=$B/tests/nvtx/nvtx_client
[ -n "${SLURM_CONF:-}" ] || skip_all "no cluster (SLURM_CONF unset)"
[ -x "$C" ] || skip_all "nvtx client not built (no NVTX3 headers)"
Y=$(dirname "$SLURM_CONF")/gpuprof.yaml
W=$(mktemp -d /var/tmp/gp-live.XXXXXX)
chmod 755 "$W"
cp "$Y" "$W/site.yaml"
trap 'cp "$W/site.yaml" "$Y"; tmux -L gplives kill-server 2>/dev/null; rm -rf "$W"' EXIT
cd "$W" || exit 1
sed -i 's/^live_interval:.*/live_interval: 2/' "$Y"
grep -q '^live_interval: 2$' "$Y" || echo "live_interval: 2" >>"$Y"
GP=$B/gpuprof
num() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"; }
near() { python3 -c "import sys; a,b,t=map(float,sys.argv[1:]); sys.exit(abs(a-b)>t)" "$1" "$2" "$3"; }

jid=$(timeout 30 sbatch --parsable --time=1 --gpuprof=nvtx -o "$W/out.%j" \
	--wrap="srun $C steps 3000 20 50 0.5")
[ -n "$jid" ]
ok $? "a job with a one-minute time limit submitted ($jid)"
L=$W/gpuprof-$jid/step0/rank0.live.json
# the slow half began at 30.5 s; 8 s of it
for _ in $(seq 90); do grep -q "half=1" "$W/out.$jid" 2>/dev/null && break; sleep 1; done
sleep 8
cp "$L" mid.json 2>/dev/null && [ "$(num mid.json state)" = running ] && [ "$(num mid.json job)" = "$jid" ] &&
	[ "$(num mid.json interval_s)" = 2.0 ]
ok $? "while it runs: rank 0's live file, the job's id, the site's 2 s interval"
"$GP" top --once "$jid" >top.txt 2>&1
grep -q "^gpuprof top: job $jid ($W/gpuprof-$jid)" top.txt && grep -q "^0 *0 .* running .* slowdown$" top.txt
ok $? "gpuprof top --once JOBID: the job found through sacct, rank 0 with its slowdown"
"$GP" ledger --running >lr.txt 2>&1
grep -q "^$jid .* [12]/[12] .* rank 0 slowdown: " lr.txt
ok $? "gpuprof ledger --running: the job from squeue, its live figures and its slowdown ($(sed -n 3p lr.txt | cut -c1-120))"
if command -v tmux >/dev/null; then
	tmux -L gplives new-session -d -s top -x 160 -y 12 "$GP top $jid"
	for _ in $(seq 50); do tmux -L gplives capture-pane -p -t top | grep -q "q quit" && break; sleep 0.1; done
	tmux -L gplives capture-pane -p -t top >tmux.txt
	grep -q "^gpuprof top: job $jid" tmux.txt && grep -q "first finding: rank 0: slowdown" tmux.txt
	ok $? "gpuprof top JOBID in tmux: the job and its first finding on the screen"
	tmux -L gplives send-keys -t top q
	sleep 0.5
	tmux -L gplives kill-server 2>/dev/null
else
	skip "tmux not installed"
fi
"$GP" report "$jid" 2>&1 | unwrap >run.txt # the text's lines are cut at 100 columns
grep -q "^gpuprof report: job $jid RUNNING, live figures of the job so far" run.txt &&
	grep -q "slowdown: rank 0 (step 0): .*(began [0-9:]* UTC, 0:00:[0-9][0-9] into the run)" run.txt
ok $? "gpuprof report JOBID while it runs: the job so far, the slowdown with when it began"
"$GP" report --format=json "$jid" >run.json 2>&1
since=$(python3 -c "import json; print([f for f in json.load(open('run.json'))['findings'] if f['id']=='slowdown'][0]['since'])")
h1=$(sed -n 's/^steps half=1 .*median_ms=\([0-9.]*\) .*/\1/p' "$W/out.$jid")
base=$(num mid.json slow_base_ms) last=$(num mid.json last_median_ms)
near "$base" "$h1" "$(python3 -c "print($h1*0.02)")"
ok $? "the median of the steps before the slowdown: $base ms live, $h1 ms by the program's clock"

for _ in $(seq 120); do [ -z "$(squeue -h -j "$jid" 2>/dev/null)" ] && break; sleep 1; done
sleep 2
h2=$(sed -n 's/^steps half=2 .*median_ms=\([0-9.]*\) .*stopped$/\1/p' "$W/out.$jid")
from2=$(sed -n 's/^steps half=2 .*from_unix=\([0-9.]*\) stopped$/\1/p' "$W/out.$jid")
[ -n "$h2" ]
ok $? "the time limit stopped the program in its slow half ($(grep half=2 "$W/out.$jid"))"
near "$last" "$h2" "$(python3 -c "print(${h2:-1}*0.02)")"
ok $? "the last interval's median while it ran: $last ms live, $h2 ms by the program's clock"
near "$since" "${from2:-0}" 0.3
ok $? "the slowdown began at $since live, $from2 by the program's clock (within 0.3 s)"
st=$(num "$L" state) ws=$(num "$L" wait_status) n=$(num "$L" steps)
[ "$st" = ended ] && [ "$ws" = 15 ] && [ "$n" -gt 1600 ]
ok $? "after the time limit: the last live figures, ended by SIGTERM (wait status $ws), $n steps"
"$GP" report --format=json "$jid" >end.json 2>&1
python3 - end.json <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert not j.get("live") and j["findings"][0]["id"] == "time_limit", j["findings"][:1]
PY
ok $? "the report of the ended job: from the rank files, its first finding the time limit ($(sacct -n -X -j "$jid" -o State | tr -d ' '))"
done_testing
