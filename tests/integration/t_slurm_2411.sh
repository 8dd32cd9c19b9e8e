#!/bin/bash
# The plugin on Slurm 24.11 (runs inside the trixie chroot, gpuprof installed in
# /opt/gpuprof): spank_prepend_task_argv wrapping of srun steps, the batch step and inner
# steps, --multi-prog, rank subsets, bad input, exit statuses.
. "$(dirname "$0")/tap.sh"
G=/opt/gpuprof
W=$(mktemp -d /tmp/gp-2411.XXXXXX)
trap 'rm -rf "$W"' EXIT
cd "$W"
TO="timeout 120"
MLP="$G/bin/gpuprof-train-mlp --steps 12 --dim 16 --layers 3 --batch 4"
[ -x "$G/bin/gpuprof-train-mlp" ] || MLP="sh -c true"
# the highest job id Slurm still shows: finished jobs age out (MinJobAge), so a count
# can fall during the test; a new job can only raise the highest id
max_job() { scontrol show jobs -o 2>/dev/null | sed -n 's/^JobId=\([0-9]*\).*/\1/p' | sort -n | tail -1; }
wrapped() { $G/bin/gpuprof report --format=json "$1" | python3 -c 'import json,sys; print(",".join(r["quality"]["wrapped"] for r in json.load(sys.stdin)["ranks"]))' 2>/dev/null; }

before=$(max_job)
for entry in "--gpuprof=memm|unknown mode 'memm'" "--gpuprof=nvtx,|empty mode" \
	"--gpuprof=none,mem|cannot be combined" "--gpuprof-ranks=3-1|reversed range" \
	"--gpuprof-output=x-%q|unknown escape" "--gpuprof=$(printf 'a\tb')|control character"; do
	arg=${entry%|*}; want=${entry##*|}
	for cmd in srun sbatch; do
		if [ $cmd = srun ]; then out=$($TO srun "$arg" true 2>&1); rc=$?
		else out=$($TO sbatch "$arg" --wrap=true 2>&1); rc=$?; fi
		ok $(( rc != 0 ? 0 : 1 )) "24.11 $cmd $(printf %q "$arg") fails"
		echo "$out" | grep -qF -- "$want"; ok $? "24.11 $cmd message: $want"
	done
done
now=$(max_job)
ok $(( ${now:-0} <= ${before:-0} ? 0 : 1 )) "24.11: no job created by bad input (highest id ${before:-none}, now ${now:-none})"

$TO srun -n2 --gpuprof=nvtx $MLP >/dev/null 2>&1; ok $? "24.11 srun -n2 --gpuprof=nvtx"
j=$(ls -d gpuprof-* | tail -1)
[ -f "$j/step0/rank0.gpr" ] && [ -f "$j/step0/rank1.gpr" ]; ok $? "24.11 rank files for both ranks"
[ "$(wrapped "$j")" = "agent,agent" ]; ok $? "24.11 tasks wrapped by spank_prepend_task_argv ($(wrapped "$j"))"
$TO srun sh -c 'exit 7' 2>/dev/null; a=$?
$TO srun --gpuprof=nvtx sh -c 'exit 7' 2>/dev/null; b=$?
ok $(( a == b && a == 7 ? 0 : 1 )) "24.11 exit 7 identical ($a/$b)"
$TO srun sh -c 'kill -SEGV $$' 2>/dev/null; a=$?
$TO srun --gpuprof=nvtx sh -c 'kill -SEGV $$' 2>/dev/null; b=$?
ok $(( a == b ? 0 : 1 )) "24.11 SIGSEGV death identical through srun ($a/$b)"

cat >job.sh <<JOB
#!/bin/bash
#SBATCH --gpuprof=nvtx
#SBATCH -n2
srun -n2 $MLP
JOB
jid=$($TO sbatch --parsable -o out.%j job.sh)
for i in $(seq 60); do scontrol show job "$jid" 2>/dev/null | grep -q "JobState=COMPLETED\|JobState=FAILED" && break; sleep 1; done
sleep 2
[ -f "gpuprof-$jid/stepbatch/rank0.gpr" ]; ok $? "24.11 batch step wrapped"
[ -f "gpuprof-$jid/step0/rank0.gpr" ] && [ -f "gpuprof-$jid/step0/rank1.gpr" ]; ok $? "24.11 inner srun wrapped"

printf '0 %s\n1 %s\n' "$MLP" "$MLP" >mp.conf
$TO srun -n2 --gpuprof=nvtx --multi-prog mp.conf >/dev/null 2>&1; ok $? "24.11 --multi-prog runs"
j=$(ls -d gpuprof-* | sort -t- -k2 -n | tail -1)
[ -f "$j/step0/rank0.gpr" ] && [ -f "$j/step0/rank1.gpr" ]; ok $? "24.11 --multi-prog ranks profiled ($(wrapped "$j"))"

$TO srun -n3 --gpuprof=nvtx --gpuprof-ranks=0,2 --gpuprof-output="$W/sub-%j" $MLP >/dev/null 2>&1
d=$(ls -d sub-* | tail -1)
[ -f "$d/step0/rank0.gpr" ] && [ ! -e "$d/step0/rank1.gpr" ] && [ -f "$d/step0/rank2.gpr" ]; ok $? "24.11 --gpuprof-ranks=0,2"
# the plugin's job epilog never failed (a failing epilog drains the node: 24.11's epilog
# process fatal()ed inside Slurm's API before the calls moved to a child of ours)
sleep 2
st=$(sinfo -h -o %T 2>/dev/null | sort -u | tr '\n' ' ')
case "$st" in *drain*) ok 1 "24.11: no epilog failure drained the node ($st: $(sinfo -h -R -o %E))" ;; *) ok 0 "24.11: no epilog failure drained the node ($st)" ;; esac
done_testing
