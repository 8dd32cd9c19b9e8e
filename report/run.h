/* gpuprof run outside Slurm: a directory of its own for every run, the agent run as a
 * child (so that the report can be made when it ends), and the program's exit status
 * passed on. Under Slurm gpuprof run becomes the agent itself, as the plugin runs it. */
#ifndef GP_RUN_H
#define GP_RUN_H

#include <stdbool.h>
#include <stddef.h>

/* A run of its own: not inside a Slurm job or step, not one task of several
 * (SLURM_PROCID), not a requeued attempt, not started by slurmstepd. */
bool gp_run_alone(void);
/* Does dir hold an earlier run (a report, a job.json or a step directory)? */
bool gp_run_dir_used(const char *dir);
/* The directory for this run: dir itself when unused; with force, dir with the earlier
 * run's files removed; else the first unused dir.N (N = 1, 2, ...), written back into
 * dir. -1 with errno (EEXIST: every name up to dir.999 is taken). */
int gp_run_pick_dir(char *dir, size_t len, bool force);
/* Run argv[0] (the agent) as a child and wait for it: its wait status, or -1. Signals
 * sent to us alone are passed on to it; those the terminal sent to the whole foreground
 * group reached it already. The child dies with us (PR_SET_PDEATHSIG). */
int gp_run_supervise(char **argv);
/* End as the program did: its exit code, or death by its signal (without a core of
 * ours). */
void gp_run_exit_as(int status) __attribute__((noreturn));

#endif
