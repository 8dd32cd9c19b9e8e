/* Leaving a Slurm job's cgroups (the detached report, spank/finish.c): a process forked
 * from slurmstepd is in the step's cgroup, which Slurm removes (and whose processes it
 * kills) once the step ends. */
#ifndef GPUPROF_CGROUP_H
#define GPUPROF_CGROUP_H

#include <sys/types.h>

/* Move pid out of every cgroup of proc_cgroup (a /proc/PID/cgroup file) whose path has a
 * job's directory ("/job_N") in it, below root (the cgroup file systems' mount point,
 * /sys/fs/cgroup). cgroup v2: into "system" beside the job's directory (Slurm's
 * cgroup/v2 keeps slurmstepd itself there while a step ends: cgroup_p_step_destroy),
 * else that directory's parent, else the root. v1: that hierarchy's root. Returns the
 * number of cgroups left, or -1 when proc_cgroup cannot be read. */
int gp_cgroup_leave_jobs(const char *proc_cgroup, const char *root, pid_t pid);

#endif
