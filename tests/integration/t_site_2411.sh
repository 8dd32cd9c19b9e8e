#!/bin/bash
# The site's always-on layer on Slurm 24.11 (runs inside the trixie chroot, gpuprof in
# /opt/gpuprof; tests/slurm/trixie gives the node two GPUs as GRES on stand-in devices):
# profile_all_jobs wraps the tasks allocated GPUs (through spank_prepend_task_argv) into
# site_output and leaves the others alone; --gpuprof=none and profile_all_opt_out; per
# partition; the user's directory made by root for the user in site_group, never one that
# is not the user's; the quota; hostile job names through %x kept inside the user's
# directory; gpuprof prune as the directories' owners; no epilog failure drains the node.
# The cases are tests/integration/t_slurm.sh's section 8 (Slurm 22.05): one file both
# source (site_cases.sh), so they cannot drift.
. "$(dirname "$0")/tap.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
G=/opt/gpuprof
[ -n "${SLURM_CONF:-}" ] || skip_all "no cluster (SLURM_CONF unset)"
sinfo -h -o %G | grep -q gpu || skip_all "the 24.11 cluster has no gres/gpu (tests/slurm/cluster up --slurm=trixie anew)"
W=$(mktemp -d /tmp/gp-site.XXXXXX)
chmod 755 "$W"
CFG=$(dirname "$SLURM_CONF")/gpuprof.yaml
cp "$CFG" "$W/saved.yaml"
trap 'cp "$W/saved.yaml" "$CFG"; rm -rf "$W"' EXIT
cd "$W"
TO="timeout 120"
MLP="$G/bin/gpuprof-train-mlp --steps 12 --dim 16 --layers 3 --batch 4"
[ -x "$G/bin/gpuprof-train-mlp" ] || MLP="sh -c true"
GPUPROF=$G/bin/gpuprof V="24.11: "
. "$HERE/site_cases.sh"

sleep 2
st=$(sinfo -h -o %T 2>/dev/null | sort -u | tr '\n' ' ')
case "$st" in *drain*) ok 1 "24.11 site: no epilog failure drained the node ($st: $(sinfo -h -R -o %E))" ;; *) ok 0 "24.11 site: no epilog failure drained the node ($st)" ;; esac
done_testing
