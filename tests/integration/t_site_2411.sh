#!/bin/bash
# The site's always-on layer on Slurm 24.11 (runs inside the trixie chroot, gpuprof in
# /opt/gpuprof; tests/slurm/trixie gives the node two GPUs as GRES on stand-in devices):
# profile_all_jobs wraps the tasks allocated GPUs (through spank_prepend_task_argv) into
# site_output and leaves the others alone; --gpuprof=none and profile_all_opt_out; per
# partition; the user's directory made by root for the user in site_group, never one that
# is not the user's; the quota; hostile job names through %x kept inside the user's
# directory; gpuprof prune as the directories' owners; no epilog failure drains the node.
# The same cases as tests/integration/t_slurm.sh's section 8 (Slurm 22.05).
. "$(dirname "$0")/tap.sh"
G=/opt/gpuprof
[ -n "${SLURM_CONF:-}" ] || skip_all "no cluster (SLURM_CONF unset)"
sinfo -h -o %G | grep -q gpu || skip_all "the 24.11 cluster has no gres/gpu (tests/slurm/cluster up --slurm=trixie anew)"
W=$(mktemp -d /tmp/gp-site.XXXXXX)
chmod 755 "$W"
CFG=$(dirname "$SLURM_CONF")/gpuprof.yaml
cp "$CFG" "$W/saved.yaml"
trap 'cp "$W/saved.yaml" "$CFG"; rm -rf "$W"' EXIT
cd "$W"
mkdir -m 777 user
TO="timeout 120"
MLP="$G/bin/gpuprof-train-mlp --steps 12 --dim 16 --layers 3 --batch 4"
[ -x "$G/bin/gpuprof-train-mlp" ] || MLP="sh -c true"
SITE=$W/site
mkdir -m 755 "$SITE"
site_cfg() { { printf 'site_output: %s/%%u/%%j\nsite_group: users\n' "$SITE"; printf "$@"; } >"$CFG"; }
newest() { ls "$1" 2>/dev/null | grep '^[0-9]*$' | sort -n | tail -1; }
wrapped() { $TO srun "$@" sh -c 'echo "${GPUPROF_WRAPPED:-none}"' 2>/dev/null; }

site_cfg 'profile_all_jobs: true\n'
$TO srun --gres=gpu:1 $MLP >/dev/null 2>err.txt
ok $? "24.11 profile_all_jobs: srun --gres=gpu:1 without --gpuprof runs"
j=$(newest "$SITE/root")
[ -n "$j" ] && [ -f "$SITE/root/$j/step0/rank0.gpr" ]; ok $? "24.11: its task profiled into site_output ($SITE/root/$j)"
! grep -q gpuprof err.txt; ok $? "24.11: nothing of gpuprof on the stderr of a job that did not ask"
out=$($TO srun sh -c 'echo "${GPUPROF_WRAPPED:-none} ${CUDA_INJECTION64_PATH:-none}"' 2>/dev/null)
[ "$out" = "none none" ] && [ "$(newest "$SITE/root")" = "$j" ]; ok $? "24.11: a task without GPUs is not wrapped ($out)"
jid=$($TO sbatch --parsable --gres=gpu:1 -o out.%j --wrap="srun $MLP; srun --gres=gpu:0 sh -c 'echo inner=\${CUDA_INJECTION64_PATH:-none}'")
for i in $(seq 60); do [ -z "$(squeue -h -j "$jid" 2>/dev/null)" ] && break; sleep 1; done
for i in $(seq 20); do [ -f "$SITE/root/$jid/report.txt" ] && break; sleep 0.5; done
[ -f "$SITE/root/$jid/stepbatch/rank0.gpr" ] && [ -f "$SITE/root/$jid/step0/rank0.gpr" ] &&
	[ ! -e "$SITE/root/$jid/step1" ] && grep -q "^inner=none" "out.$jid"
ok $? "24.11 sbatch --gres=gpu:1: the batch step and its GPU step profiled, an inner --gres=gpu:0 step not"
[ "$(stat -c %a:%G "$SITE/root")" = 2750:users ] && [ "$(stat -c %a:%G "$SITE/root/$jid/report.txt")" = 640:users ]
ok $? "24.11: the user's directory 2750 in site_group, the report 0640 in it ($(stat -c %a:%G "$SITE/root" "$SITE/root/$jid/report.txt" | tr '\n' ' '))"
[ -z "$(ls -d gpuprof-* 2>/dev/null)" ]; ok $? "24.11: nothing written into the submit directory"
out=$(wrapped --gres=gpu:1 --gpuprof=none)
[ "$out" = none ]; ok $? "24.11 --gpuprof=none opts out ($out)"

# the user's directory, made by root for the user; one that is not the user's is never used
(cd user && $TO runuser -u gpuprof-test -- env SLURM_CONF=$SLURM_CONF srun --gres=gpu:1 $MLP >/dev/null 2>&1)
f=$(ls "$SITE"/gpuprof-test/*/step0/rank0.gpr 2>/dev/null | head -1)
[ "$(stat -c %U:%G:%a "$SITE/gpuprof-test")" = gpuprof-test:users:2750 ] && [ "$(stat -c %U:%G "$f")" = gpuprof-test:users ]
ok $? "24.11: a user's directory made by root for the user, its job's files the user's ($(stat -c %U:%G:%a "$SITE/gpuprof-test"))"
n=$(ls "$SITE/gpuprof-test" | wc -l)
chown root "$SITE/gpuprof-test"
out=$(cd user && $TO runuser -u gpuprof-test -- env SLURM_CONF=$SLURM_CONF srun --gres=gpu:1 sh -c 'echo "${GPUPROF_WRAPPED:-none}"' 2>/dev/null)
[ "$out" = none ] && [ "$(ls "$SITE/gpuprof-test" | wc -l)" = "$n" ]
ok $? "24.11: a user's directory that is not the user's is never written into; the job runs unprofiled ($out)"
chown gpuprof-test "$SITE/gpuprof-test"

site_cfg 'profile_all_jobs: true\nprofile_all_opt_out: false\n'
out=$($TO srun --gres=gpu:1 --gpuprof=none sh -c 'echo "${GPUPROF_WRAPPED:-none}"' 2>&1)
echo "$out" | grep -q "profile_all_opt_out: false" && echo "$out" | grep -q "^agent$"
ok $? "24.11: a site that allows no opting out profiles the job all the same, and srun says so"
site_cfg 'profile_all_partitions:\n  debug: true\n'
out=$(wrapped --gres=gpu:1)
site_cfg 'profile_all_jobs: true\nprofile_all_partitions:\n  debug: false\n'
out2=$(wrapped --gres=gpu:1)
[ "$out" = agent ] && [ "$out2" = none ]; ok $? "24.11 per partition: debug: true profiles, debug: false wins ($out, $out2)"
site_cfg 'profile_all_jobs: true\nsite_quota_per_user: 32M\n'
out=$(wrapped --gres=gpu:1)
site_cfg 'profile_all_jobs: true\nsite_quota_per_user: 1G\n'
out2=$($TO srun -n2 --gres=gpu:1 sh -c 'echo "${GPUPROF_MAX_BYTES:-none}"' 2>/dev/null | sort -u)
[ "$out" = none ] && [ "$out2" -gt $((200 << 20)) ] && [ "$out2" -le $((512 << 20)) ]
ok $? "24.11 site_quota_per_user: no room, no site profile; room for 2 tasks of 1G: each rank's cap at most half ($out, $out2)"
printf 'profile_all_jobs: true\n' >"$CFG"
out=$($TO srun --gres=gpu:1 sh -c 'echo "ran ${GPUPROF_WRAPPED:-none}"' 2>&1)
echo "$out" | grep -q "^ran none" && echo "$out" | grep -q "'profile_all_jobs' needs 'site_output'"
ok $? "24.11: profile_all_jobs without site_output is refused with file:line, the job runs unprofiled"

# hostile job names through %x: the job directory stays in the user's directory
printf 'site_output: %s/%%u/%%x/%%j\nprofile_all_jobs: true\n' "$SITE" >"$CFG"
long=$(head -c 300 /dev/zero | tr '\0' n)
for nm in "..|_." "../../etc|.._.._etc" "$(printf 'a\nb')|a_b" "$long|$(head -c 128 /dev/zero | tr '\0' n)"; do
	name=${nm%|*}; want=${nm##*|}
	out=$($TO srun -J "$name" --gres=gpu:1 sh -c 'echo "$SLURM_JOB_ID"; exec '"$MLP" 2>/dev/null)
	jid=$(echo "$out" | head -1)
	[ -n "$jid" ] && [ -f "$SITE/root/$want/$jid/step0/rank0.gpr" ] && [ ! -e "$SITE/$jid" ] && [ ! -e "$SITE/root/$jid" ]
	ok $? "24.11 job name $(printf %q "${name:0:20}"): its directory inside the user's ($SITE/root/${want:0:20}.../$jid)"
done

# gpuprof prune as root: each user's directory as its owner; root's file in it stays
site_cfg 'profile_all_jobs: true\n'
U=$SITE/gpuprof-test
mkdir -p "$U/900/step0" "$U/901/step0" "$U/902"
echo x >"$U/900/step0/rank0.gpr"; ln -s /etc/passwd "$U/900/link"; echo y >"$U/901/step0/rank0.gpr"
chown -R -h gpuprof-test "$U/900" "$U/901"
echo z >"$U/902/rootfile"
touch -h -d '40 days ago' "$U"/90[02]/step0/* "$U"/90[02]/step0 "$U/900/link" "$U"/90[02]/* "$U"/90[02] 2>/dev/null
$G/bin/gpuprof prune --older-than=30d --config="$CFG" >prune.txt 2>&1; rc=$?
[ ! -e "$U/900" ] && [ -f "$U/901/step0/rank0.gpr" ] && [ -s /etc/passwd ] && [ -f "$U/902/rootfile" ] &&
	[ $rc = 1 ] && grep -q "could not remove all of $U/902" prune.txt
ok $? "24.11 prune: the old directory removed as its owner (its link, not what it named), a recent one kept, root's file left and said ($rc)"

sleep 2
st=$(sinfo -h -o %T 2>/dev/null | sort -u | tr '\n' ' ')
case "$st" in *drain*) ok 1 "24.11 site: no epilog failure drained the node ($st: $(sinfo -h -R -o %E))" ;; *) ok 0 "24.11 site: no epilog failure drained the node ($st)" ;; esac
done_testing
