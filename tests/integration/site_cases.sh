# The site's always-on layer (issue 48), the cases both Slurm versions run: sourced by
# tests/integration/t_slurm.sh (Slurm 22.05, section 8) and t_site_2411.sh (24.11, in the
# trixie chroot), so the two cannot drift. Tasks allocated GPUs (the cluster's stand-in
# GRES) run under gpuprof without --gpuprof, into the site's directory; tasks without GPUs
# are not wrapped; --gpuprof=none opts out unless the site forbids it; the user's directory
# made for the user, in site_group; per partition; a quota; hostile job names through %x;
# gpuprof prune as the owner; a full site file system. 23 tests. The caller sets: W (the
# test's directory, the cwd), CFG (the plugin's gpuprof.yaml, restored by the caller), TO
# (a timeout prefix), MLP (a short training run), GPUPROF (the gpuprof CLI), V (a prefix for
# the tests' names).
[ -d user ] || mkdir -m 777 user
SITE=$W/site
mkdir -m 755 "$SITE"
site_cfg() { { printf 'site_output: %s/%%u/%%j\nsite_group: users\n' "$SITE"; printf "$@"; } >"$CFG"; }
newest() { ls "$1" 2>/dev/null | grep '^[0-9]*$' | sort -n | tail -1; }
before=$(ls -d gpuprof-* 2>/dev/null | wc -l)
site_cfg 'profile_all_jobs: true\n'
$TO srun --gres=gpu:1 $MLP >/dev/null 2>err.txt; ok $? "${V}profile_all_jobs: srun --gres=gpu:1 without --gpuprof runs"
j=$(newest "$SITE/root")
[ -n "$j" ] && [ -f "$SITE/root/$j/step0/rank0.gpr" ]; ok $? "${V}its task profiled into site_output ($SITE/root/$j)"
! grep -q gpuprof err.txt; ok $? "${V}nothing of gpuprof on the stderr of a job that did not ask"
out=$($TO srun sh -c 'echo "${GPUPROF_WRAPPED:-none} ${CUDA_INJECTION64_PATH:-none}"' 2>/dev/null)
[ "$out" = "none none" ] && [ "$(newest "$SITE/root")" = "$j" ]; ok $? "${V}a task without GPUs is not wrapped ($out)"
jid=$($TO sbatch --parsable --gres=gpu:1 -o out.%j --wrap="srun $MLP; srun --gres=gpu:0 sh -c 'echo inner=\${CUDA_INJECTION64_PATH:-none}'")
for i in $(seq 60); do [ -z "$(squeue -h -j "$jid" 2>/dev/null)" ] && break; sleep 1; done
for i in $(seq 20); do [ -f "$SITE/root/$jid/report.txt" ] && break; sleep 0.5; done
[ -f "$SITE/root/$jid/stepbatch/rank0.gpr" ] && [ -f "$SITE/root/$jid/step0/rank0.gpr" ] &&
	[ ! -e "$SITE/root/$jid/step1" ] && grep -q "^inner=none" "out.$jid"
ok $? "${V}sbatch --gres=gpu:1: the batch step and its GPU step profiled, an inner --gres=gpu:0 step not"
[ "$(stat -c %a:%G "$SITE/root")" = 2750:users ] && [ "$(stat -c %a:%G "$SITE/root/$jid/report.txt")" = 640:users ] &&
	[ "$(stat -c %a:%G "$SITE/root/$jid/step0/rank0.gpr")" = 640:users ]
ok $? "${V}the user's directory 2750 in site_group, the report and rank files 0640 in it ($(stat -c %a:%G "$SITE/root" "$SITE/root/$jid/report.txt" | tr '\n' ' '))"
[ "$(ls -d gpuprof-* 2>/dev/null | wc -l)" = "$before" ]; ok $? "${V}nothing written into the submit directory"
out=$($TO srun --gres=gpu:1 --gpuprof=none sh -c 'echo "${GPUPROF_WRAPPED:-none}"' 2>/dev/null)
[ "$out" = none ]; ok $? "${V}--gpuprof=none opts out ($out)"
$TO srun --gres=gpu:1 --gpuprof=nvtx --gpuprof-output="$W/asked-%j" $MLP >/dev/null 2>&1
ls -d "$W"/asked-*/step0 >/dev/null 2>&1; ok $? "${V}a job that asks gets what it asked, where it said"
# hostile job names through %x (sbatch/srun -J is the user's): the job directory stays in
# the user's directory whatever the name holds
printf 'site_output: %s/%%u/%%x/%%j\nprofile_all_jobs: true\n' "$SITE" >"$CFG"
long=$(head -c 300 /dev/zero | tr '\0' n)
for nm in "..|_." "../../etc|.._.._etc" "$(printf 'a\nb')|a_b" "$long|$(head -c 128 /dev/zero | tr '\0' n)"; do
	name=${nm%|*}; want=${nm##*|}
	out=$($TO srun -J "$name" --gres=gpu:1 sh -c 'echo "$SLURM_JOB_ID"; exec '"$MLP" 2>/dev/null)
	jid=$(echo "$out" | head -1)
	[ -n "$jid" ] && [ -f "$SITE/root/$want/$jid/step0/rank0.gpr" ] && [ ! -e "$SITE/$jid" ] && [ ! -e "$SITE/root/$jid" ]
	ok $? "${V}job name $(printf %q "${name:0:20}"): its directory $SITE/root/${want:0:20}.../$jid, inside the user's ($(ls "$SITE/root" | tr '\n' ' ' | head -c 120))"
done
site_cfg 'profile_all_jobs: true\n'
if id gpuprof-test >/dev/null 2>&1; then
	(cd user && $TO runuser -u gpuprof-test -- env SLURM_CONF=$SLURM_CONF srun --gres=gpu:1 $MLP >/dev/null 2>&1)
	f=$(ls "$SITE"/gpuprof-test/*/step0/rank0.gpr 2>/dev/null | head -1)
	[ "$(stat -c %U:%G:%a "$SITE/gpuprof-test")" = gpuprof-test:users:2750 ] && [ "$(stat -c %U:%G "$f")" = gpuprof-test:users ]
	ok $? "${V}a user's directory made by root for the user, its job's files the user's ($(stat -c %U:%G:%a "$SITE/gpuprof-test"))"
	n=$(ls "$SITE/gpuprof-test" | wc -l)
	chown root "$SITE/gpuprof-test"
	(cd user && $TO runuser -u gpuprof-test -- env SLURM_CONF=$SLURM_CONF srun --gres=gpu:1 sh -c 'echo "${GPUPROF_WRAPPED:-none}"' >squat.txt 2>/dev/null); rc=$?
	[ $rc = 0 ] && [ "$(cat user/squat.txt)" = none ] && [ "$(ls "$SITE/gpuprof-test" | wc -l)" = "$n" ]
	ok $? "${V}a user's directory that is not the user's is never written into; the job runs unprofiled (rc $rc)"
	chown gpuprof-test "$SITE/gpuprof-test"
else
	skip "no gpuprof-test user"; skip "no gpuprof-test user"
fi
site_cfg 'profile_all_jobs: true\nprofile_all_opt_out: false\n'
out=$($TO srun --gres=gpu:1 --gpuprof=none sh -c 'echo "${GPUPROF_WRAPPED:-none}"' 2>&1)
echo "$out" | grep -q "profile_all_opt_out: false" && echo "$out" | grep -q "^agent$"
ok $? "${V}a site that allows no opting out profiles the job all the same, and srun says so"
site_cfg 'profile_all_partitions:\n  debug: true\n'
out=$($TO srun --gres=gpu:1 sh -c 'echo "${GPUPROF_WRAPPED:-none}"' 2>/dev/null)
site_cfg 'profile_all_jobs: true\nprofile_all_partitions:\n  debug: false\n'
out2=$($TO srun --gres=gpu:1 sh -c 'echo "${GPUPROF_WRAPPED:-none}"' 2>/dev/null)
[ "$out" = agent ] && [ "$out2" = none ]; ok $? "${V}per partition: debug: true profiles, debug: false wins over profile_all_jobs ($out, $out2)"
site_cfg 'profile_all_jobs: true\nsite_quota_per_user: 32M\n'
out=$($TO srun --gres=gpu:1 sh -c 'echo "${GPUPROF_WRAPPED:-none}"' 2>/dev/null)
site_cfg 'profile_all_jobs: true\nsite_quota_per_user: 1G\n'
out2=$($TO srun -n2 --gres=gpu:1 sh -c 'echo "${GPUPROF_MAX_BYTES:-none}"' 2>/dev/null | sort -u)
[ "$out" = none ] && [ "$out2" -gt $((200 << 20)) ] && [ "$out2" -le $((512 << 20)) ]
ok $? "${V}site_quota_per_user: no room, no site profile; room for 2 tasks of 1G: each rank's cap at most half ($out, $out2)"
printf 'profile_all_jobs: true\n' >"$CFG"
out=$($TO srun --gres=gpu:1 sh -c 'echo "ran ${GPUPROF_WRAPPED:-none}"' 2>&1)
echo "$out" | grep -q "^ran none" && echo "$out" | grep -q "'profile_all_jobs' needs 'site_output'"
ok $? "${V}profile_all_jobs without site_output is refused with file:line, the job runs unprofiled"
# a full site file system (the shared one every GPU job writes to): a job that did not ask
# runs as before and gets nothing of gpuprof on its output (doc/admin.md: the policy never
# prints on a job that did not ask; the reason goes to slurmd's log). Seen on 22.05:
# "gpuprof: warning: cannot write .../rank0.gpr: No space left on device (data kept in
# /tmp/gpuprof-1001/...)" on the job's stderr
FULL=$W/full; mkdir -p "$FULL"
if id gpuprof-test >/dev/null 2>&1 && mount -t tmpfs -o size=64k gp "$FULL" 2>/dev/null; then
	chmod 755 "$FULL"; dd if=/dev/zero of="$FULL/filler" bs=1k count=62 2>/dev/null
	printf 'profile_all_jobs: true\nsite_output: %s/%%u/%%j\nsite_quota_per_user: 0\n' "$FULL" >"$CFG"
	(cd user && $TO runuser -u gpuprof-test -- env SLURM_CONF=$SLURM_CONF srun --gres=gpu:1 sh -c "$MLP >/dev/null; echo ran" >full.out 2>full.err); rc=$?
	umount "$FULL" 2>/dev/null || umount -l "$FULL" # the step end's report may still hold it
	[ $rc = 0 ] && grep -q '^ran$' user/full.out && ! grep -q gpuprof user/full.err
	ok $? "${V}a full site file system: the job that did not ask runs, nothing of gpuprof on its output (rc $rc: $(grep gpuprof user/full.err | head -c 200))"
else
	skip "no gpuprof-test user, or no tmpfs to fill"
fi
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
	mkdir -p "$U/902/step0"; echo z >"$U/902/step0/rootfile"
	touch -h -d '40 days ago' "$U"/90[02]/step0/* "$U"/90[02]/step0 "$U/900/link" "$U"/90[02]/* "$U"/90[02] 2>/dev/null
	"$GPUPROF" prune --older-than=30d --dry-run --config="$CFG" >prune.txt 2>&1
	grep -q "would remove $U/900 " prune.txt && [ -d "$U/900" ]; ok $? "${V}prune --dry-run names the old directory and removes nothing"
	"$GPUPROF" prune --older-than=30d --config="$CFG" >prune.txt 2>&1; rc=$?
	[ ! -e "$U/900" ] && [ -f "$U/901/step0/rank0.gpr" ] && [ -s /etc/passwd ] && ls "$SITE/root/$j/step0/rank0.gpr" >/dev/null
	ok $? "${V}prune removes the old job directory (its link, not what it named) and keeps the recent ones"
	[ $rc = 1 ] && [ -f "$U/902/step0/rootfile" ] && grep -q "could not remove all of $U/902" prune.txt
	ok $? "${V}as root it removes as the directory's owner: root's file in it stays, said, exit 1 ($rc)"
	rm -rf "$U/902"
else
	skip "no gpuprof-test user"; skip "no gpuprof-test user"; skip "no gpuprof-test user"
fi
