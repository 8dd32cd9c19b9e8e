/* The SPANK plugin's context and the functions of its files (one file per context,
 * pyxis-style): plugin.c dispatches, the others are called with the context. */
#ifndef GP_SPANK_PLUGIN_H
#define GP_SPANK_PLUGIN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <slurm/spank.h>

#include "optenv.h"
#include "ranks.h"
#include "siteconf.h"

#define GP_STEP_BATCH       0xfffffffbu
#define GP_STEP_EXTERN      0xfffffffcu
#define GP_STEP_INTERACTIVE 0xfffffffau

/* One per process: a static of plugin.c's, which passes it to the function of each
 * context (pyxis's per-context struct). Nothing else holds it. */
typedef struct gp_plugin {
	bool config_ok;  /* site config loaded (else plugin disabled) */
	bool enabled;    /* this step is profiled */
	gp_config_t cfg; /* site policy */
	char *config_path;
	char *state_dir; /* root-owned node-local records for the epilog */
	gp_opts_t opts;  /* modes, output, ranks and capture, resolved (optenv.h) */
	/* stepd bookkeeping */
	uint32_t job_id, step_id, node_id;
	uid_t uid;
	gid_t gid;
	gid_t groups[64]; /* the job's supplementary groups (S_JOB_SUPPLEMENTARY_GIDS) */
	int ngroups;      /* -1: unknown (initgroups from the user database) */
	char account[256], partition[256]; /* from slurmctld, for the site policy */
	bool job_info_ok;
	/* a step the site profiles without its asking (profile_all_jobs; site.c) */
	bool by_site;            /* profiled by the site's policy */
	bool site_dir;           /* into site_output (the user named no directory) */
	int site_state;          /* init_post_opt's answer: 0 not asked, 1 ready, -1 refused */
	bool site_group_ok;      /* the user's directory is site_group's */
	long long site_rank_cap; /* bytes a rank may write in the user's room; 0: no quota */
	char jobdir[4096];
	char spool[4096]; /* node-local spool root for the agents */
	unsigned ntasks_local;
	int exit_status[512]; /* by local task id */
	pid_t task_pid[512];  /* the task's process (the program itself without an agent) */
	uint32_t global_id[512];
	bool profiled[512];
	bool task_seen[512];
} gp_plugin_t;

/* Whom root-side helpers run as: the job's user, with its supplementary groups when
 * slurmstepd gave them (ngroups -1: from the user database). */
typedef struct gp_creds {
	uid_t uid;
	gid_t gid;
	int ngroups;
	const gid_t *groups;
} gp_creds_t;

/* spank/options.c: the options as the user gave them (its own state: the callbacks
 * Slurm calls have no argument for ours). p is kept for the callbacks' policy checks. */
int gp_options_register(spank_t sp, const gp_plugin_t *p);
/* Resolve modes/output/ranks/capture into p->opts: the options, then GPUPROF_* (get),
 * then site defaults. Returns -1 with a message (naming the option or variable) in err. */
int gp_options_resolve(gp_plugin_t *p, gp_getenv_fn get, void *arg, char *err, size_t errlen);

/* spank/client.c: srun/sbatch/salloc */
int gp_client_post_opt(spank_t sp, gp_plugin_t *p);
/* spank/stepd.c: slurmstepd */
int gp_stepd_init(spank_t sp, gp_plugin_t *p);
int gp_stepd_post_opt(spank_t sp, gp_plugin_t *p);
int gp_stepd_task_init(spank_t sp, gp_plugin_t *p);
int gp_stepd_task_exit(spank_t sp, gp_plugin_t *p);
int gp_stepd_exit(spank_t sp, gp_plugin_t *p);
/* spank/slurmapi.c: the job as Slurm knows it (never the job's environment) */
#define ADMIN_COMMENT_MAX    512  /* our one-line summary */
#define GP_ADMIN_COMMENT_MAX 4096 /* the whole field we write: others' text plus ours */
typedef struct gp_slurm_job {
	char account[256], partition[256];
	char admin_comment[GP_ADMIN_COMMENT_MAX];
	bool admin_comment_cut; /* longer than we hold: never rewritten */
	char system_comment[GP_ADMIN_COMMENT_MAX];
	bool system_comment_cut;
} gp_slurm_job_t;
/* 0 with the job's account, partition and AdminComment; -1 when Slurm's API is not
 * loaded in this process or the job is unknown. */
int gp_slurm_job_info(uint32_t job, gp_slurm_job_t *out);
/* Root, in a process of its own (the detached finisher: it may wait): append summary
 * (a "gpuprof: ..." line, or NULL) to the job's AdminComment and record (an accounting
 * record, common/acctrec.h, or NULL) to its SystemComment, each replacing an older one of
 * ours, never cutting other tools' text; the summary is left out where AdminComment holds
 * jobstats' JS1: value (which its reader decodes whole). In slurmctld while the job runs,
 * else (ended: known to have ended) in its accounting record once slurmctld's completion
 * has reached it, waiting up to wait_s seconds for that. 0 done, 1 the summary written
 * and the record left for the job's end (it still runs), -2 finished and the record could
 * not be updated, -1 otherwise. */
int gp_set_job_comments(uint32_t job, const char *summary, const char *record, bool ended,
                        int wait_s);
/* spank/finish.c: the job report and its AdminComment line, in a process detached from
 * slurmstepd (root; the report as the user), so that neither srun nor the node's
 * teardown waits for them; one at a time per job (a lock in the state directory). */
void gp_finish_detached(const gp_plugin_t *p, uint32_t job, const gp_creds_t *who,
                        const char *jobdir, bool ended);
/* spank/epilog.c: job epilog (root) */
int gp_epilog(spank_t sp, const gp_plugin_t *p);

/* spank/site.c: as root in init_post_opt, the site's directory of a step profiled by
 * profile_all_jobs into site_output: ROOT checked, ROOT/USER made for the user, what it
 * holds against site_quota_per_user (p->site_rank_cap: the room left for each of the
 * step's ntasks). 0, or -1 after one line in slurmd's log: the step is not profiled. */
int gp_site_prepare(gp_plugin_t *p, const char *user, unsigned ntasks);
/* spank/quota.c: the cap per rank (*cap; 0: no quota) that the room under
 * site_quota_per_user leaves each of ntasks, what ROOT/USER holds of template t's making
 * measured as the user or bounded from the node's last measure (site_quota_cache). 0, or
 * -1 with why: no room, or not measured. */
struct gp_site_tmpl;
int gp_site_quota_cap(const gp_plugin_t *p, const struct gp_site_tmpl *t, const char *user,
                      unsigned ntasks, long long *cap, char *why, size_t whylen);

/* spank/privsep.c: run fn(arg) in a child that dropped to who (setgroups, setgid,
 * setuid, verified), with a deadline in seconds. Returns the child's exit code, or -1. */
int gp_run_as_user(const gp_creds_t *who, int (*fn)(void *), void *arg, int timeout_s);
/* Same, running argv (no shell) as the user, stdout captured into out (may be NULL). */
int gp_exec_as_user(const gp_creds_t *who, char *const argv[], char *out, size_t outlen,
                    int timeout_s);
/* Run fn(arg, fd) in a forked child of the current user (root), nothing of ours open
 * but fd, whose writes come back in out; with a deadline. For Slurm API calls: a
 * fatal() inside Slurm's library (24.11's epilog process has no hash plugins loaded)
 * or a hang ends the child, never the host process. Returns fn's 0/1, or -1. */
int gp_run_isolated(int (*fn)(void *, int), void *arg, char *out, size_t outlen, int timeout_s);
/* fn(arg, fd) in a child that dropped to who (as gp_run_as_user), its writes to fd back
 * in out; with a deadline. Returns fn's 0/1, or -1. */
int gp_run_as_user_out(const gp_creds_t *who, int (*fn)(void *, int), void *arg, char *out,
                       size_t outlen, int timeout_s);
/* Run argv as the current user (root, in the epilog), stdout into out. */
int gp_exec_capture(char *const argv[], char *out, size_t outlen, int timeout_s);

#endif
