#!/bin/bash
# The quickstart's job on the GPU machine: Debian 12's Slurm 22.05 and munge carried as
# .debs (bench/gpu-carry.sh puts them in .gpubin/debs), unpacked with dpkg -x into a
# private prefix, a one-node cluster with GPU GRES, the plugin built on the CPU machine,
# then `sbatch --gpuprof=mem,nvtx examples/train.sh` and its report. Facts it relies on:
# FACTS.md, "Slurm on the GPU machine".
cd "$(dirname "$0")/.."
top=$PWD
G=$top/.gpubin
P=/tmp/slurm-prefix
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
set -x
rm -rf $P; mkdir -p $P/etc $P/run $P/log $P/state $P/spool $P/bin
for d in $G/debs/*.deb; do dpkg -x $d $P; done
L=$P/usr/lib/x86_64-linux-gnu
export LD_LIBRARY_PATH=$L:$L/slurm-wlm:$G:${LD_LIBRARY_PATH:-}
export PATH=$P/bin:$P/usr/bin:$P/usr/sbin:$PATH
# started under their -wlm names Slurm drops Gres=: link them under the plain names
ln -sf $P/usr/sbin/slurmctld-wlm $P/bin/slurmctld 2>/dev/null || ln -sf $P/usr/sbin/slurmctld $P/bin/slurmctld
ln -sf $P/usr/sbin/slurmd-wlm $P/bin/slurmd 2>/dev/null || true
ls $P/usr/sbin/ | tr '\n' ' '
for b in slurmctld slurmd slurmstepd; do
	src=$(ls $P/usr/sbin/$b-wlm $P/usr/sbin/$b 2>/dev/null | grep -v "^$P/bin" | head -1)
	[ -n "$src" ] && [ "$src" != "$P/bin/$b" ] && ln -sf "$src" $P/bin/$b
done
dd if=/dev/urandom of=$P/munge.key bs=1024 count=1 status=none; chmod 400 $P/munge.key
$P/usr/sbin/munged --force --key-file=$P/munge.key --socket=$P/munge.sock --pid-file=$P/run/munged.pid \
	--log-file=$P/log/munged.log --seed-file=$P/run/munge.seed
node=$(hostname -s); ngpu=$(nvidia-smi -L | wc -l)
: >$P/etc/gres.conf
for i in $(seq 0 $((ngpu - 1))); do echo "Name=gpu File=/dev/nvidia$i" >>$P/etc/gres.conf; done
echo "CgroupPlugin=cgroup/v1" >$P/etc/cgroup.conf
cat >$P/etc/slurm.conf <<CONF
ClusterName=gpuprof
SlurmctldHost=$node
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$P/munge.sock
PluginDir=$L/slurm-wlm
StateSaveLocation=$P/state
SlurmdSpoolDir=$P/spool
SlurmctldPidFile=$P/run/slurmctld.pid
SlurmdPidFile=$P/run/slurmd.pid
SlurmctldLogFile=$P/log/slurmctld.log
SlurmdLogFile=$P/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MailProg=/bin/true
ReturnToService=2
GresTypes=gpu
SlurmdParameters=config_overrides
PlugStackConfig=$P/etc/plugstack.conf
NodeName=$node CPUs=16 RealMemory=64000 Gres=gpu:$ngpu State=UNKNOWN
PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
echo "required $G/.libs/gpuprof.so agent=$G/gpuprof-agent inject=$G/.libs/libgpuprof-inject.so cli=$G/gpuprof config=$P/etc/gpuprof.yaml state_dir=$P/run/gp" >$P/etc/plugstack.conf
cp etc/gpuprof.yaml $P/etc/gpuprof.yaml
export SLURM_CONF=$P/etc/slurm.conf
$P/bin/slurmctld -f $SLURM_CONF
sleep 1
$P/bin/slurmd -f $SLURM_CONF -d $P/bin/slurmstepd
for i in $(seq 30); do timeout 5 sinfo -h -o %T | grep -q idle && break; sleep 0.5; done
timeout 5 sinfo
set +x
W=/tmp/qs; rm -rf $W; mkdir -p $W; cp examples/train.sh examples/train_mlp.py $W/
cd $W
export GPUPROF_PREFIX=$G NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
jid=$(timeout 20 sbatch --parsable --gpuprof=mem,nvtx -n2 -o slurm-%j.out train.sh)
echo "submitted $jid"
for i in $(seq 120); do [ -z "$(timeout 5 squeue -h -j $jid 2>/dev/null)" ] && break; sleep 1; done
sleep 3
cat slurm-$jid.out | tail -5
ls -R gpuprof-$jid | head -20
$G/gpuprof report gpuprof-$jid 2>&1 | tee $OUT/quickstart-report.txt | head -60
tail -20 $P/log/slurmd.log > $OUT/slurmd.log.txt
