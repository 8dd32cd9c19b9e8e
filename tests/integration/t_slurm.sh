#!/bin/bash
# The plugin on a real Slurm cluster (tests/slurm/cluster, SLURM_CONF exported):
# bad input rejected before a job exists, srun/sbatch/inner srun wrapping, --export=NONE,
# rank subsets, exit status and signal deaths as without gpuprof, a non-root user, an
# unwritable output directory, the job-end report and AdminComment in sacct.
. "$(dirname "$0")/tap.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
B=${GP_BUILD:?}
[ -n "${SLURM_CONF:-}" ] || skip_all "no cluster (SLURM_CONF unset)"
W=$(mktemp -d /var/tmp/gp-slurm.XXXXXX)
chmod 755 "$W"
trap 'rm -rf "$W"' EXIT
cd "$W"
TO="timeout 120"
MLP="$B/gpuprof-train-mlp --steps 12 --dim 16 --layers 3 --batch 4"
# jobs submitted since $1 (a window that slides, like now-1hour, loses old jobs mid-test)
jobs_since() { local o; o=$(sacct -n -X -S "$1" -o JobID 2>&1) || { echo -1; return; }; printf '%s' "$o" | grep -c .; }

# 1. bad input: rejected where typed, message names the option, no job created
bad=(
	"--gpuprof=memm|unknown mode 'memm'"
	"--gpuprof=nvtx,|empty mode at position 6"
	"--gpuprof=,nvtx|empty mode at position 1"
	"--gpuprof=nvtx,,mem|empty mode"
	"--gpuprof=NVTX|unknown mode 'NVTX'"
	"--gpuprof=nvtx;mem|unknown mode"
	"--gpuprof=nvtx mem|unknown mode"
	"--gpuprof=\$(reboot)|unknown mode"
	"--gpuprof=\`id\`|unknown mode"
	"--gpuprof=nvtx|mem|unknown mode"
	"--gpuprof=none,nvtx|cannot be combined"
	"--gpuprof=help,mem|cannot be combined"
	"--gpuprof=$(printf 'nvtx\tmem')|control character"
	"--gpuprof=$(printf 'mem\033[31m')|control character"
	"--gpuprof=$(printf 'mem\xff')|not valid UTF-8"
	"--gpuprof=$(printf 'm\xc3\xa9m')|unknown mode"
	"--gpuprof=$(head -c 300 /dev/zero | tr '\0' a)|longer than"
	"--gpuprof-ranks=5-2|reversed range"
	"--gpuprof-ranks=1,|trailing ','"
	"--gpuprof-ranks=a|bad rank item 'a'"
	"--gpuprof-ranks=-1|bad rank item"
	"--gpuprof-ranks=99999999999|too large"
	"--gpuprof-ranks=0x10|bad rank item"
	"--gpuprof-ranks=1;2|bad rank item"
	"--gpuprof-capture=steps=9-3|is not a capture window"
	"--gpuprof-capture=$(printf 'steps=1\n-2')|control character"
	"--gpuprof-output=out-%q|unknown escape '%q'"
	"--gpuprof-output=out-%|trailing '%'"
	"--gpuprof-output=$(printf 'a\nb')|control character"
)
t0=$(date +%Y-%m-%dT%H:%M:%S)
sleep 1
for entry in "${bad[@]}"; do
	arg=${entry%|*}
	want=${entry##*|}
	for cmd in srun sbatch; do
		if [ $cmd = srun ]; then out=$($TO srun "$arg" true 2>&1); rc=$?
		else out=$($TO sbatch "$arg" --wrap=true 2>&1); rc=$?; fi
		label=$(printf '%q' "$arg" | head -c 60)
		ok $(( rc != 0 ? 0 : 1 )) "$cmd $label fails (rc $rc)"
		echo "$out" | grep -qF -- "$want" && echo "$out" | grep -q -- "--gpuprof"
		ok $? "$cmd $label names the option and the problem"
	done
done
out=$(GPUPROF_MODES=bogus $TO srun true 2>&1); rc=$?
ok $(( rc != 0 ? 0 : 1 )) "GPUPROF_MODES=bogus fails srun"
echo "$out" | grep -q "GPUPROF_MODES: unknown mode 'bogus'"; ok $? "message names the variable"
sleep 1
ok $(( $(jobs_since "$t0") == 0 ? 0 : 1 )) "no job was created by any bad input (sacct)"

out=$(GPUPROF_CAPTURE=steps=x $TO srun --gpuprof=nvtx true 2>&1); rc=$?
ok $(( rc != 0 ? 0 : 1 )) "GPUPROF_CAPTURE=steps=x fails srun"
echo "$out" | grep -q "GPUPROF_CAPTURE: 'steps=x' is not a capture window"; ok $? "message names the variable"
out=$($TO srun --gpuprof=nvtx --gpuprof-capture=steps=2-4,9 printenv GPUPROF_CAPTURE 2>&1)
[ "$out" = "steps=2-4,9" ]; ok $? "--gpuprof-capture reaches the task as GPUPROF_CAPTURE ($out)"
out=$($TO srun --gpuprof=help true 2>&1); rc=$?
ok $(( rc == 0 ? 0 : 1 )) "--gpuprof=help exits 0"
echo "$out" | grep -q "site policy:" && echo "$out" | grep -q "nvtx"; ok $? "help lists modes and policy"

# 2. srun -n2 with NVTX ranges: both ranks profiled, report at step end
$TO srun -n2 --gpuprof=nvtx $MLP >/dev/null 2>err.txt; ok $? "srun -n2 --gpuprof=nvtx runs"
j=$(ls -d gpuprof-* | sort -t- -k2 -n | tail -1)
[ -f "$j/step0/rank0.gpr" ] && [ -f "$j/step0/rank1.gpr" ]; ok $? "rank files for both ranks in $j/step0"
for i in $(seq 20); do [ -f "$j/report.txt" ] && break; sleep 0.5; done # srun returns before the step's exit hook
[ -f "$j/report.txt" ] && grep -q "train_step" "$j/report.txt"; ok $? "report.txt written at step end with the NVTX step"
grep -q '"wait_status": 0' "$j/step0/node0.json"; ok $? "node summary records exit statuses"

# 3. exit status and signal deaths identical with and without gpuprof
$TO srun sh -c 'exit 7' 2>/dev/null; a=$?
$TO srun --gpuprof=nvtx sh -c 'exit 7' 2>/dev/null; b=$?
ok $(( a == b && b == 7 ? 0 : 1 )) "exit 7 identical ($a/$b)"
jid_a=$($TO sbatch --parsable --wrap='srun sh -c "kill -SEGV \$\$"')
jid_b=$($TO sbatch --parsable --gpuprof=nvtx --wrap='srun sh -c "kill -SEGV \$\$"')
for i in $(seq 60); do [ -z "$(squeue -h -j "$jid_a,$jid_b" 2>/dev/null)" ] && break; sleep 1; done
sleep 2
sa=$(sacct -n -P -j "$jid_a" -o State,ExitCode | sed -n 3p)
sb=$(sacct -n -P -j "$jid_b" -o State,ExitCode | sed -n 3p)
ok $([ -n "$sa" ] && [ "$sa" = "$sb" ] && echo 0 || echo 1) "SIGSEGV death reads the same in sacct ('$sa' vs '$sb')"

# 4. sbatch: batch step wrapped, inner srun steps get their own ranks; AdminComment
cat >job.sh <<JOB
#!/bin/bash
#SBATCH --gpuprof=nvtx
#SBATCH -n2
srun -n2 $MLP
srun -n1 --gpuprof=none $MLP
$MLP
JOB
jid=$($TO sbatch --parsable -o out.%j job.sh)
for i in $(seq 90); do [ -z "$(squeue -h -j "$jid" 2>/dev/null)" ] && break; sleep 1; done
sleep 3
[ -f "gpuprof-$jid/stepbatch/rank0.gpr" ]; ok $? "#SBATCH --gpuprof: batch step wrapped"
[ -f "gpuprof-$jid/step0/rank0.gpr" ] && [ -f "gpuprof-$jid/step0/rank1.gpr" ]; ok $? "inner srun inherits the option"
[ ! -e "gpuprof-$jid/step1" ]; ok $? "inner srun --gpuprof=none overrides for its step"
$B/gpuprof report "gpuprof-$jid" >/dev/null; ok $? "gpuprof report on the job directory"
$B/gpuprof report --sacct "$jid" >rep.txt 2>&1; ok $? "gpuprof report JOBID finds the directory through sacct"
grep -q "COMPLETED" rep.txt; ok $? "report carries the sacct record"
for i in $(seq 20); do ac=$(sacct -n -X -j "$jid" -o AdminComment%500 | sed 's/^ *//; s/ *$//'); [ -n "$ac" ] && break; sleep 1; done
echo "$ac" | grep -q "gpuprof: ranks=" && echo "$ac" | grep -q "dir=$W/gpuprof-$jid"; ok $? "AdminComment links the job to its report ($(echo $ac | head -c 100))"
# another tool's AdminComment is kept, ours appended once (the detached report runs at nice
# 19 on a node budget: on a loaded 2-core machine it took over 20 s, so each wait below is
# up to 90 s, ended as soon as the record is there)
jid2=$($TO sbatch --parsable --gpuprof=nvtx -o out.%j --wrap="sleep 3; $MLP")
sleep 1; scontrol update jobid="$jid2" admincomment="site:tag=42" >/dev/null 2>&1
for i in $(seq 60); do [ -z "$(squeue -h -j "$jid2" 2>/dev/null)" ] && break; sleep 1; done
for i in $(seq 90); do ac=$(sacct -n -X -j "$jid2" -o AdminComment%500 | sed 's/^ *//; s/ *$//'); echo "$ac" | grep -q gpuprof && break; sleep 1; done
echo "$ac" | grep -q "^site:tag=42; gpuprof: ranks="; ok $? "an existing AdminComment is kept, not clobbered ($(echo $ac | head -c 60))"
# a job name that imitates the field (scontrol -o prints JobName before AdminComment)
jid3=$($TO sbatch --parsable --gpuprof=nvtx -o out.%j -J "x AdminComment=gpuprof: forged Foo=1" --wrap="sleep 3; $MLP")
sleep 1; scontrol update jobid="$jid3" admincomment="site:tag=7" >/dev/null 2>&1
for i in $(seq 60); do [ -z "$(squeue -h -j "$jid3" 2>/dev/null)" ] && break; sleep 1; done
for i in $(seq 90); do ac=$(sacct -n -X -j "$jid3" -o AdminComment%500 | sed 's/^ *//; s/ *$//'); echo "$ac" | grep -q "gpuprof: ranks" && break; sleep 1; done
echo "$ac" | grep -q "^site:tag=7; gpuprof: ranks=" && ! echo "$ac" | grep -q forged
ok $? "a job name imitating AdminComment= neither replaces nor enters it ($(echo $ac | head -c 60))"
# a short srun job: it has ended before the step's exit hook, yet gets its AdminComment
$TO srun -J gp-short --gpuprof=nvtx sh -c 'echo "job=$SLURM_JOB_ID" >&2' >/dev/null 2>short.err
jid4=$(sed -n 's/^job=//p' short.err | head -1)
for i in $(seq 90); do ac=$(sacct -n -X -j "$jid4" -o AdminComment%500 | sed 's/^ *//; s/ *$//'); echo "$ac" | grep -q "gpuprof: ranks" && break; sleep 1; done
# the detached report writes the accounting record once slurmctld's completion is in it
echo "$ac" | grep -q "gpuprof: ranks=1"
ok $? "a short srun --gpuprof=nvtx job gets its AdminComment (job ${jid4:-?}: '$(echo $ac | head -c 60)')"
# a job whose report cannot be made (its directory replaced by a file): sacct says so,
# with the reason and the directory, instead of nothing
jid5=$($TO sbatch --parsable --gpuprof=nvtx -o out.%j --wrap="$MLP; rm -rf gpuprof-\$SLURM_JOB_ID; echo x >gpuprof-\$SLURM_JOB_ID")
for i in $(seq 60); do [ -z "$(squeue -h -j "$jid5" 2>/dev/null)" ] && break; sleep 1; done
for i in $(seq 90); do ac=$(sacct -n -X -j "$jid5" -o AdminComment%500 | sed 's/^ *//; s/ *$//'); echo "$ac" | grep -q "gpuprof:" && break; sleep 1; done
echo "$ac" | grep -q "^gpuprof: no report (exit status [0-9]*) dir=$W/gpuprof-$jid5"
ok $? "a report that fails at the job's end is said in AdminComment ('$(echo $ac | head -c 80)')"

# 5. --export=NONE: batch step not profiled, inner sruns still are
jid=$($TO sbatch --parsable --export=NONE --gpuprof=nvtx -o out.%j --wrap="srun $MLP")
for i in $(seq 60); do [ -z "$(squeue -h -j "$jid" 2>/dev/null)" ] && break; sleep 1; done
sleep 2
[ ! -e "gpuprof-$jid/stepbatch" ] && [ -f "gpuprof-$jid/step0/rank0.gpr" ]; ok $? "--export=NONE: inner srun profiled, batch step not"

# 6. rank subsets
$TO srun -n3 --gpuprof=nvtx --gpuprof-ranks=1 --gpuprof-output="$W/ranks-%j" $MLP >/dev/null 2>&1; ok $? "srun -n3 --gpuprof-ranks=1"
d=$(ls -d ranks-* | tail -1)
[ -f "$d/step0/rank1.gpr" ] && [ ! -e "$d/step0/rank0.gpr" ] && [ ! -e "$d/step0/rank2.gpr" ]; ok $? "only rank 1 profiled"

# 6b. --multi-prog: per-task argv cannot be rewritten on 22.05; the injected library
# writes its own rank files (environment-only fallback), and the report says so
printf '0 %s\n1 %s\n' "$MLP" "$MLP" >mp.conf
$TO srun -n2 --gpuprof=nvtx --gpuprof-output="$W/mp-%j" --multi-prog mp.conf >/dev/null 2>&1; ok $? "--multi-prog step runs"
d=$(ls -d mp-* | tail -1)
[ -f "$d/step0/rank0.gpr" ] && [ -f "$d/step0/rank1.gpr" ]; ok $? "--multi-prog: both ranks captured"
$B/gpuprof report "$d" | grep -q "not wrapped (environment-only)"; ok $? "--multi-prog: the report names the fallback"

# 6c. job.json: who, where, when, how every task ended, the Slurm version
jj=$(ls -d gpuprof-* | sort -t- -k2 -n | head -1)/job.json
python3 - "$jj" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["job"] and j["modes"].startswith("timing") and j["nodes"] and j["profiled_ranks"], j
s = j["node_summaries"][0]
assert s["slurm_version"].startswith("22.05") and s["tasks"][0]["wait_status"] == 0, s
PY
ok $? "job.json has the job, modes, nodes, ranks, exit statuses and Slurm version"

# 6d. salloc
$TO salloc -n1 --gpuprof=nvtx --gpuprof-output="$W/salloc-%j" srun $MLP >/dev/null 2>&1; ok $? "salloc --gpuprof=nvtx runs"
d=$(ls -d salloc-* 2>/dev/null | tail -1)
[ -n "$d" ] && [ -f "$d/step0/rank0.gpr" ]; ok $? "salloc: the step inside the allocation is profiled"

# 6e. site policy: denials and narrowed modes, checked where the user typed them; a broken
# site config disables gpuprof and the job still runs
CFG=$(dirname "$SLURM_CONF")/gpuprof.yaml
cp "$CFG" "$W/saved.yaml"
printf 'allowed_modes: timing,nvtx\nusers_deny: [gpuprof-test]\n' >"$CFG"
out=$($TO srun --gpuprof=cuda true 2>&1); rc=$?
ok $(( rc != 0 ? 0 : 1 )) "a mode the site does not allow is refused"
echo "$out" | grep -q "mode 'cuda' is not allowed on this cluster (allowed: timing,nvtx)"; ok $? "with the allowed modes named"
if id gpuprof-test >/dev/null 2>&1; then
	out=$(cd /tmp && $TO runuser -u gpuprof-test -- env SLURM_CONF=$SLURM_CONF srun --gpuprof=nvtx true 2>&1); rc=$?
	ok $(( rc != 0 ? 0 : 1 )) "a denied user is refused"
	echo "$out" | grep -q "not available to you: user is in users_deny"; ok $? "with the reason"
else
	skip "no gpuprof-test user"; skip "no gpuprof-test user"
fi
printf 'enabled: maybe\n' >"$CFG"
out=$($TO srun --gpuprof=nvtx --gpuprof-output="$W/broken-%j" sh -c 'echo ran' 2>&1); rc=$?
ok $(( rc == 0 ? 0 : 1 )) "a broken site config never fails the job"
echo "$out" | grep -q "^ran" && echo "$out" | grep -q "site config disabled gpuprof: .*:1: 'enabled' must be true or false"
ok $? "it runs unprofiled with one line naming file and line"
cp "$W/saved.yaml" "$CFG"

# 7. a non-root user; an unwritable output directory
if id gpuprof-test >/dev/null 2>&1; then
	mkdir -p user && chown gpuprof-test user
	(cd user && $TO runuser -u gpuprof-test -- env SLURM_CONF=$SLURM_CONF srun --gpuprof=nvtx $MLP >/dev/null 2>&1); ok $? "non-root user runs a profiled step"
	f=$(ls user/gpuprof-*/step0/rank0.gpr 2>/dev/null | head -1)
	[ -n "$f" ] && [ "$(stat -c %U "$f")" = gpuprof-test ] && [ "$(stat -c %a "$f")" = 600 ]; ok $? "rank file owned by the user, mode 0600"
	mkdir -p locked && chmod 755 locked
	out=$(cd user && $TO runuser -u gpuprof-test -- env SLURM_CONF=$SLURM_CONF srun --gpuprof=nvtx --gpuprof-output="$W/locked/x" sh -c 'echo hi' 2>&1); rc=$?
	ok $(( rc == 0 ? 0 : 1 )) "unwritable output directory: the job still exits 0"
	echo "$out" | grep -q "^hi" && echo "$out" | grep -q "gpuprof: warning"; ok $? "one warning, output kept"
	[ ! -e locked/x ]; ok $? "nothing written into a directory the user may not write"
else
	for i in 1 2 3 4 5; do skip "no gpuprof-test user"; done
fi
# 8. profile every GPU job by site policy (issue 48): the cases 24.11 runs too
GPUPROF=$B/gpuprof V=""
. "$HERE/site_cases.sh"
cp "$W/saved.yaml" "$CFG"

# a job that runs into its time limit (last: it holds the node a minute and more, and
# the other tests' jobs would queue behind it): the report says so first, with the last step
tl_jid=$($TO sbatch --parsable --time=1 --gpuprof=nvtx -o out.tl.%j \
	--wrap="$B/gpuprof-train-mlp --steps 100000000 --dim 16 --layers 2 --batch 4 --host-stall-ms 5")
for i in $(seq 240); do [ -z "$(squeue -h -j "$tl_jid" 2>/dev/null)" ] && break; sleep 1; done
sleep 2
"$B/gpuprof" report --format=json "$tl_jid" >tl.json 2>tl.err
python3 - tl.json <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
f = j["findings"][0]
assert f["id"] == "time_limit" and "after reaching step" in f["title"], j["findings"][:2]
PY
ok $? "a job stopped at its time limit: the first finding says so, with the last step ($(sacct -n -X -j "$tl_jid" -o State | tr -d ' '))"
# the plugin's job epilog never failed (a failing epilog drains the node: 24.11's epilog
# process fatal()ed inside Slurm's API before the calls moved to a child of ours)
sleep 2
st=$(sinfo -h -o %T 2>/dev/null | sort -u | tr '\n' ' ')
case "$st" in *drain*) ok 1 "22.05: no epilog failure drained the node ($st: $(sinfo -h -R -o %E))" ;; *) ok 0 "22.05: no epilog failure drained the node ($st)" ;; esac
done_testing
