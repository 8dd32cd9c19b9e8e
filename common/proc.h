/* A forked child's fresh start: what a process of ours inherits from the one it was
 * forked from (slurmstepd, the agent) and must not keep before it runs on its own or
 * as the user. One helper for the spank plugin's helpers (privsep.c), the detached
 * report (finish.c) and the agent's summariser. Async-signal-safe calls only: it runs
 * between fork and exec (or _exit) of a possibly multi-threaded parent. */
#ifndef GPUPROF_PROC_H
#define GPUPROF_PROC_H

#include <stdbool.h>
#include <sys/types.h>

enum {
	GP_CHILD_SIGMASK = 1 << 0, /* nothing blocked */
	GP_CHILD_SIGNALS = 1 << 1, /* nothing blocked, every disposition the default (64
	                            * system calls: for a parent with handlers of its own) */
	GP_CHILD_STDIO = 1 << 2,   /* 0, 1 and 2 on /dev/null */
	GP_CHILD_SESSION = 1 << 3, /* a session (and process group) of its own */
	GP_CHILD_PGROUP = 1 << 4,  /* a process group of its own, same session */
};

/* Apply flags, then close every descriptor from 3 up except keep (-1: none). */
void gp_child_reset(unsigned flags, int keep);

/* A budget for work done after a job on its node (the detached report, finish.c): the
 * lowest CPU priority (nice 19) and cpu_s seconds of CPU (RLIMIT_CPU: SIGXCPU at cpu_s,
 * SIGKILL 5 s later; a process that dropped to the user can lower neither). Inherited
 * by what the process forks and execs. -1 when the limit could not be set. */
int gp_child_budget(int cpu_s);

/* Is process pid slurmstepd (its /proc/PID/comm)? The agent tells slurmstepd's signals
 * from the program's, gpuprof run a task of a step from a run of its own. */
bool gp_proc_is_slurmstepd(pid_t pid);
/* Is pid ancestor, or a process under it (its parents' chain in /proc, 64 deep at most)?
 * Who sent a signal: the program or what it started. Async-signal-safe. */
bool gp_proc_descends_from(pid_t pid, pid_t ancestor);
/* The slurmstepd this process runs under (its parent, or further up: a batch script,
 * srun gpuprof run), 0 outside Slurm. Async-signal-safe. */
pid_t gp_proc_slurmstepd_above(void);

#endif
