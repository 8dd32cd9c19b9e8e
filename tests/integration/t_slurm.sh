#!/bin/bash
# The plugin on a real Slurm cluster (tests/slurm/cluster, SLURM_CONF exported):
# bad input rejected before a job exists, srun/sbatch/inner srun wrapping, --export=NONE,
# rank subsets, exit status and signal deaths as without gpuprof, a non-root user, an
# unwritable output directory, the job-end report and AdminComment in sacct.
. "$(dirname "$0")/tap.sh"
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
# another tool's AdminComment is kept, ours appended once
jid2=$($TO sbatch --parsable --gpuprof=nvtx -o out.%j --wrap="sleep 3; $MLP")
sleep 1; scontrol update jobid="$jid2" admincomment="site:tag=42" >/dev/null 2>&1
for i in $(seq 60); do [ -z "$(squeue -h -j "$jid2" 2>/dev/null)" ] && break; sleep 1; done
for i in $(seq 20); do ac=$(sacct -n -X -j "$jid2" -o AdminComment%500 | sed 's/^ *//; s/ *$//'); echo "$ac" | grep -q gpuprof && break; sleep 1; done
echo "$ac" | grep -q "^site:tag=42; gpuprof: ranks="; ok $? "an existing AdminComment is kept, not clobbered ($(echo $ac | head -c 60))"
# a job name that imitates the field (scontrol -o prints JobName before AdminComment)
jid3=$($TO sbatch --parsable --gpuprof=nvtx -o out.%j -J "x AdminComment=gpuprof: forged Foo=1" --wrap="sleep 3; $MLP")
sleep 1; scontrol update jobid="$jid3" admincomment="site:tag=7" >/dev/null 2>&1
for i in $(seq 60); do [ -z "$(squeue -h -j "$jid3" 2>/dev/null)" ] && break; sleep 1; done
for i in $(seq 20); do ac=$(sacct -n -X -j "$jid3" -o AdminComment%500 | sed 's/^ *//; s/ *$//'); echo "$ac" | grep -q "gpuprof: ranks" && break; sleep 1; done
echo "$ac" | grep -q "^site:tag=7; gpuprof: ranks=" && ! echo "$ac" | grep -q forged
ok $? "a job name imitating AdminComment= neither replaces nor enters it ($(echo $ac | head -c 60))"
# a short srun job: it has ended before the step's exit hook, yet gets its AdminComment
$TO srun -J gp-short --gpuprof=nvtx sh -c 'echo "job=$SLURM_JOB_ID" >&2' >/dev/null 2>short.err
jid4=$(sed -n 's/^job=//p' short.err | head -1)
for i in $(seq 30); do ac=$(sacct -n -X -j "$jid4" -o AdminComment%500 | sed 's/^ *//; s/ *$//'); echo "$ac" | grep -q "gpuprof: ranks" && break; sleep 1; done
# the detached report writes the accounting record once slurmctld's completion is in it
echo "$ac" | grep -q "gpuprof: ranks=1"
ok $? "a short srun --gpuprof=nvtx job gets its AdminComment (job ${jid4:-?}: '$(echo $ac | head -c 60)')"
# a job whose report cannot be made (its directory replaced by a file): sacct says so,
# with the reason and the directory, instead of nothing
jid5=$($TO sbatch --parsable --gpuprof=nvtx -o out.%j --wrap="$MLP; rm -rf gpuprof-\$SLURM_JOB_ID; echo x >gpuprof-\$SLURM_JOB_ID")
for i in $(seq 60); do [ -z "$(squeue -h -j "$jid5" 2>/dev/null)" ] && break; sleep 1; done
for i in $(seq 30); do ac=$(sacct -n -X -j "$jid5" -o AdminComment%500 | sed 's/^ *//; s/ *$//'); echo "$ac" | grep -q "gpuprof:" && break; sleep 1; done
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
# 8. profile every GPU job by site policy (issue 48): tasks allocated GPUs (the cluster's
# stand-in GRES) run under gpuprof without --gpuprof, into the site's directory; tasks
# without GPUs are not wrapped; --gpuprof=none opts out unless the site forbids it; the
# user's directory made for the user, in site_group; a quota; gpuprof prune as the owner
SITE=$W/site
mkdir -m 755 "$SITE"
site_cfg() { { printf 'site_output: %s/%%u/%%j\nsite_group: users\n' "$SITE"; printf "$@"; } >"$CFG"; }
newest() { ls "$1" 2>/dev/null | sort -n | tail -1; }
before=$(ls -d gpuprof-* 2>/dev/null | wc -l)
site_cfg 'profile_all_jobs: true\n'
$TO srun --gres=gpu:1 $MLP >/dev/null 2>err.txt; ok $? "profile_all_jobs: srun --gres=gpu:1 without --gpuprof runs"
j=$(newest "$SITE/root")
[ -n "$j" ] && [ -f "$SITE/root/$j/step0/rank0.gpr" ]; ok $? "its task profiled into site_output ($SITE/root/$j)"
! grep -q gpuprof err.txt; ok $? "nothing of gpuprof on the stderr of a job that did not ask"
out=$($TO srun sh -c 'echo "${GPUPROF_WRAPPED:-none} ${CUDA_INJECTION64_PATH:-none}"' 2>/dev/null)
[ "$out" = "none none" ] && [ "$(newest "$SITE/root")" = "$j" ]; ok $? "a task without GPUs is not wrapped ($out)"
jid=$($TO sbatch --parsable --gres=gpu:1 -o out.%j --wrap="srun $MLP; srun --gres=gpu:0 sh -c 'echo inner=\${CUDA_INJECTION64_PATH:-none}'")
for i in $(seq 60); do [ -z "$(squeue -h -j "$jid" 2>/dev/null)" ] && break; sleep 1; done
for i in $(seq 20); do [ -f "$SITE/root/$jid/report.txt" ] && break; sleep 0.5; done
[ -f "$SITE/root/$jid/stepbatch/rank0.gpr" ] && [ -f "$SITE/root/$jid/step0/rank0.gpr" ] &&
	[ ! -e "$SITE/root/$jid/step1" ] && grep -q "^inner=none" "out.$jid"
ok $? "sbatch --gres=gpu:1: the batch step and its GPU step profiled, an inner --gres=gpu:0 step not"
[ "$(stat -c %a:%G "$SITE/root")" = 2750:users ] && [ "$(stat -c %a:%G "$SITE/root/$jid/report.txt")" = 640:users ] &&
	[ "$(stat -c %a:%G "$SITE/root/$jid/step0/rank0.gpr")" = 640:users ]
ok $? "the user's directory 2750 in site_group, the report and rank files 0640 in it ($(stat -c %a:%G "$SITE/root" "$SITE/root/$jid/report.txt" | tr '\n' ' '))"
[ "$(ls -d gpuprof-* 2>/dev/null | wc -l)" = "$before" ]; ok $? "nothing written into the submit directory"
out=$($TO srun --gres=gpu:1 --gpuprof=none sh -c 'echo "${GPUPROF_WRAPPED:-none}"' 2>/dev/null)
[ "$out" = none ]; ok $? "--gpuprof=none opts out ($out)"
$TO srun --gres=gpu:1 --gpuprof=nvtx --gpuprof-output="$W/asked-%j" $MLP >/dev/null 2>&1
ls -d "$W"/asked-*/step0 >/dev/null 2>&1; ok $? "a job that asks gets what it asked, where it said"
# hostile job names through %x (sbatch/srun -J is the user's): the job directory stays in
# the user's directory whatever the name holds
printf 'site_output: %s/%%u/%%x/%%j\nprofile_all_jobs: true\n' "$SITE" >"$CFG"
long=$(head -c 300 /dev/zero | tr '\0' n)
for nm in "..|_." "../../etc|.._.._etc" "$(printf 'a\nb')|a_b" "$long|$(head -c 128 /dev/zero | tr '\0' n)"; do
	name=${nm%|*}; want=${nm##*|}
	out=$($TO srun -J "$name" --gres=gpu:1 sh -c 'echo "$SLURM_JOB_ID"; exec '"$MLP" 2>/dev/null)
	jid=$(echo "$out" | head -1)
	[ -n "$jid" ] && [ -f "$SITE/root/$want/$jid/step0/rank0.gpr" ] && [ ! -e "$SITE/$jid" ] && [ ! -e "$SITE/root/$jid" ]
	ok $? "job name $(printf %q "${name:0:20}"): its directory $SITE/root/${want:0:20}.../$jid, inside the user's ($(ls "$SITE/root" | tr '\n' ' ' | head -c 120))"
done
site_cfg 'profile_all_jobs: true\n'
if id gpuprof-test >/dev/null 2>&1; then
	(cd user && $TO runuser -u gpuprof-test -- env SLURM_CONF=$SLURM_CONF srun --gres=gpu:1 $MLP >/dev/null 2>&1)
	f=$(ls "$SITE"/gpuprof-test/*/step0/rank0.gpr 2>/dev/null | head -1)
	[ "$(stat -c %U:%G:%a "$SITE/gpuprof-test")" = gpuprof-test:users:2750 ] && [ "$(stat -c %U:%G "$f")" = gpuprof-test:users ]
	ok $? "a user's directory made by root for the user, its job's files the user's ($(stat -c %U:%G:%a "$SITE/gpuprof-test"))"
	n=$(ls "$SITE/gpuprof-test" | wc -l)
	chown root "$SITE/gpuprof-test"
	(cd user && $TO runuser -u gpuprof-test -- env SLURM_CONF=$SLURM_CONF srun --gres=gpu:1 sh -c 'echo "${GPUPROF_WRAPPED:-none}"' >squat.txt 2>/dev/null); rc=$?
	[ $rc = 0 ] && [ "$(cat user/squat.txt)" = none ] && [ "$(ls "$SITE/gpuprof-test" | wc -l)" = "$n" ]
	ok $? "a user's directory that is not the user's is never written into; the job runs unprofiled (rc $rc)"
	chown gpuprof-test "$SITE/gpuprof-test"
else
	skip "no gpuprof-test user"; skip "no gpuprof-test user"
fi
site_cfg 'profile_all_jobs: true\nprofile_all_opt_out: false\n'
out=$($TO srun --gres=gpu:1 --gpuprof=none sh -c 'echo "${GPUPROF_WRAPPED:-none}"' 2>&1)
echo "$out" | grep -q "profile_all_opt_out: false" && echo "$out" | grep -q "^agent$"
ok $? "a site that allows no opting out profiles the job all the same, and srun says so"
site_cfg 'profile_all_partitions:\n  debug: true\n'
out=$($TO srun --gres=gpu:1 sh -c 'echo "${GPUPROF_WRAPPED:-none}"' 2>/dev/null)
site_cfg 'profile_all_jobs: true\nprofile_all_partitions:\n  debug: false\n'
out2=$($TO srun --gres=gpu:1 sh -c 'echo "${GPUPROF_WRAPPED:-none}"' 2>/dev/null)
[ "$out" = agent ] && [ "$out2" = none ]; ok $? "per partition: debug: true profiles, debug: false wins over profile_all_jobs ($out, $out2)"
site_cfg 'profile_all_jobs: true\nsite_quota_per_user: 32M\n'
out=$($TO srun --gres=gpu:1 sh -c 'echo "${GPUPROF_WRAPPED:-none}"' 2>/dev/null)
site_cfg 'profile_all_jobs: true\nsite_quota_per_user: 1G\n'
out2=$($TO srun -n2 --gres=gpu:1 sh -c 'echo "${GPUPROF_MAX_BYTES:-none}"' 2>/dev/null | sort -u)
[ "$out" = none ] && [ "$out2" -gt $((200 << 20)) ] && [ "$out2" -le $((512 << 20)) ]
ok $? "site_quota_per_user: no room, no site profile; room for 2 tasks of 1G: each rank's cap at most half ($out, $out2)"
printf 'profile_all_jobs: true\n' >"$CFG"
out=$($TO srun --gres=gpu:1 sh -c 'echo "ran ${GPUPROF_WRAPPED:-none}"' 2>&1)
echo "$out" | grep -q "^ran none" && echo "$out" | grep -q "'profile_all_jobs' needs 'site_output'"
ok $? "profile_all_jobs without site_output is refused with file:line, the job runs unprofiled"
# gpuprof prune: an old job directory (a link in it to a file of root's) removed as the
# directory's owner; a recent one kept; one holding root's files cannot be emptied by the
# owner, so it stays and the command says so
site_cfg 'profile_all_jobs: true\n'
if id gpuprof-test >/dev/null 2>&1; then
	U=$SITE/gpuprof-test
	mkdir -p "$U/900/step0" "$U/901/step0"
	echo x >"$U/900/step0/rank0.gpr"; ln -s /etc/passwd "$U/900/link"
	echo y >"$U/901/step0/rank0.gpr"
	chown -R -h gpuprof-test "$U/900" "$U/901"
	mkdir -p "$U/902"; echo z >"$U/902/rootfile"
	touch -h -d '40 days ago' "$U"/90[02]/step0/* "$U"/90[02]/step0 "$U/900/link" "$U"/90[02]/* "$U"/90[02] 2>/dev/null
	"$B/gpuprof" prune --older-than=30d --dry-run --config="$CFG" >prune.txt 2>&1
	grep -q "would remove $U/900 " prune.txt && [ -d "$U/900" ]; ok $? "prune --dry-run names the old directory and removes nothing"
	"$B/gpuprof" prune --older-than=30d --config="$CFG" >prune.txt 2>&1; rc=$?
	[ ! -e "$U/900" ] && [ -f "$U/901/step0/rank0.gpr" ] && [ -s /etc/passwd ] && ls "$SITE/root/$j/step0/rank0.gpr" >/dev/null
	ok $? "prune removes the old job directory (its link, not what it named) and keeps the recent ones"
	[ $rc = 1 ] && [ -f "$U/902/rootfile" ] && grep -q "could not remove all of $U/902" prune.txt
	ok $? "as root it removes as the directory's owner: root's file in it stays, said, exit 1 ($rc)"
	rm -rf "$U/902"
else
	skip "no gpuprof-test user"; skip "no gpuprof-test user"; skip "no gpuprof-test user"
fi
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
