/* slurmstepd side: decide per task whether it is profiled, wrap it with the agent, record
 * exit statuses, and at step end write the node's summary and refresh the report as the
 * job's user. Every hook starts with the enabled check; any failure leaves the task to
 * run unprofiled with one "gpuprof:" line on its stderr (unless the site says required). */
#include "config.h"
#include <stdint.h>
#include <slurm/slurm_version.h>
#include "plugin.h"
#include "env.h"
#include "log.h"
#include "modes.h"
#include "path.h"
#include "settings.h"
#include "spool.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A variable of the job's environment (arg: the spank_t); the last four values stay
 * valid (gp_options_resolve holds up to four at once). */
static const char *job_env(const char *name, void *arg)
{
	static char buf[4][4096];
	static int k;
	char *b = buf[k++ & 3];
	if (spank_getenv((spank_t)arg, name, b, sizeof(buf[0])) != ESPANK_SUCCESS)
		return NULL;
	return b;
}

static void step_name(uint32_t step, char *buf, size_t len)
{
	if (step == GP_STEP_BATCH)
		snprintf(buf, len, "batch");
	else if (step == GP_STEP_INTERACTIVE)
		snprintf(buf, len, "interactive");
	else if (step == GP_STEP_EXTERN)
		snprintf(buf, len, "extern");
	else
		snprintf(buf, len, "%u", step);
}

static bool policy_needs_job_info(const gp_config_t *c)
{
	return c->accounts_allow.n || c->accounts_deny.n || c->account_modes.n ||
	       c->partition_modes.n || c->profile_all_partitions.n || c->profile_all_accounts.n;
}

/* Whether this step was allocated GPUs on this node, as slurmstepd set the step's
 * environment from its GRES (seen on 22.05 and 24.11): SLURM_GPUS_ON_NODE, else the
 * step's SLURM_STEP_GPUS (the batch step's SLURM_JOB_GPUS). The job's SLURM_JOB_GPUS
 * alone is not the step's: an inner `srun --gres=gpu:0` inherits it with no GPU. */
static bool step_has_gpus(spank_t sp, uint32_t step)
{
	const char *n = job_env("SLURM_GPUS_ON_NODE", sp);
	if (n && atoi(n) > 0)
		return true;
	bool whole = step == GP_STEP_BATCH || step == GP_STEP_INTERACTIVE;
	const char *v = job_env(whole ? "SLURM_JOB_GPUS" : "SLURM_STEP_GPUS", sp);
	return v && *v;
}

/* A task of such a step bound to none of them (--gpu-bind): CUDA_VISIBLE_DEVICES empty,
 * or Slurm's "NoDevFiles". */
static bool task_has_gpus(spank_t sp)
{
	const char *v = job_env("CUDA_VISIBLE_DEVICES", sp);
	return !v || (*v && strcmp(v, "NoDevFiles"));
}

/* profile_all_jobs: a step that did not ask (or opted out where the site allows none) and
 * has GPUs on this node is profiled with the site's default modes, into site_output
 * unless its user named a directory (--gpuprof-output, GPUPROF_OUTPUT). */
static void site_policy(spank_t sp, gp_plugin_t *p)
{
	bool none = p->opts.modes & GP_MODE_NONE;
	const char *part = p->job_info_ok ? p->partition : NULL;
	const char *acct = p->job_info_ok ? p->account : NULL;
	p->by_site = p->site_dir = false;
	if (p->opts.modes && !(none && !p->cfg.profile_all_opt_out))
		return;
	if (!gp_config_profile_all(&p->cfg, part, acct) || !step_has_gpus(sp, p->step_id))
		return;
	p->opts.modes = p->cfg.default_modes;
	p->by_site = true;
	p->site_dir = !p->opts.output_given;
	if (p->site_dir)
		snprintf(p->opts.output, sizeof(p->opts.output), "%s", p->cfg.site_output);
}

/* The site policy for this step's user and job: narrows p->opts.modes, or returns false
 * (not profiled), saying why unless quiet. */
static bool step_admitted(gp_plugin_t *p, bool quiet)
{
	const char *why, *account = p->job_info_ok ? p->account : NULL;
	struct passwd *pw = getpwuid(p->uid);
	/* account and partition as slurmctld has them (gp_stepd_post_opt): the job's
	 * environment is the user's to write. Rules about them with nothing to check
	 * them against refuse profiling rather than let it through. */
	if (policy_needs_job_info(&p->cfg) && !p->job_info_ok) {
		if (!quiet)
			gp_warn("profiling refused: the site policy has account or partition rules "
			        "and Slurm's view of this job could not be read");
		return false;
	}
	if (!gp_config_admits(&p->cfg, pw ? pw->pw_name : NULL, account, &why)) {
		if (!quiet)
			gp_warn("profiling refused by site policy: %s", why);
		return false;
	}
	unsigned allowed =
	    gp_config_allowed(&p->cfg, p->job_info_ok ? p->partition : NULL, account);
	if (p->opts.modes & ~allowed & GP_MODES_KNOWN) {
		char a[128];
		p->opts.modes &= allowed;
		gp_modes_format(p->opts.modes, a, sizeof(a));
		if (!quiet)
			gp_warn("site policy narrows this job to modes %s", a);
	}
	return true;
}

/* The job directory (the template, relative to the submit directory) and the node's
 * spool root into p; false when there is none. */
static bool step_places(spank_t sp, gp_plugin_t *p, bool quiet)
{
	char stepbuf[32], jobbuf[32], cwd[PATH_MAX], why[256];
	struct passwd *pw = getpwuid(p->uid);
	gp_tmpl_hostbuf_t hb;
	snprintf(jobbuf, sizeof(jobbuf), "%u", p->job_id);
	step_name(p->step_id, stepbuf, sizeof(stepbuf));
	gp_tmpl_vars_t vars = {
	    .job = jobbuf,
	    .user = pw ? pw->pw_name : NULL,
	    .name = job_env("SLURM_JOB_NAME", sp),
	    .step = stepbuf,
	};
	gp_tmpl_this_host(&vars, &hb);
	const char *sub = job_env("SLURM_SUBMIT_DIR", sp);
	if (!sub)
		sub = getcwd(cwd, sizeof(cwd));
	if (gp_opts_jobdir(p->opts.output, &vars, sub, p->jobdir, sizeof(p->jobdir)) < 0) {
		if (!quiet)
			gp_warn("--gpuprof-output: cannot place the job directory '%s'",
			        p->opts.output);
		return false;
	}
	if (!gp_spool_root(p->spool, sizeof(p->spool), p->cfg.spool_dir, job_env("TMPDIR", sp), why,
	                   sizeof(why)) &&
	    !quiet)
		gp_warn("spool_dir '%s': %s; the default spool is used", p->cfg.spool_dir, why);
	return true;
}

/* Resolve options and policy for this step; sets p->enabled, p->opts, p->jobdir and
 * p->spool. Runs in user_init (as the user) and again in task_init (the task process). */
static int resolve_step(spank_t sp, gp_plugin_t *p, bool quiet)
{
	char err[600];
	p->enabled = false;
	if (!p->config_ok || p->step_id == GP_STEP_EXTERN)
		return 0;
	if (gp_options_resolve(p, job_env, sp, err, sizeof(err)) < 0) {
		/* The client checked this already; a value can only be bad here if the
		 * environment changed in between. Never fail the step for it. */
		if (!quiet)
			gp_warn("%s; this step is not profiled", err);
		return 0;
	}
	site_policy(sp, p);
	if (!p->opts.modes || (p->opts.modes & GP_MODE_NONE))
		return 0;
	if (p->site_dir && p->site_state < 0)
		return 0; /* init_post_opt found no room of the site's for it */
	/* a job the site profiles did not ask: its user hears nothing of the policy */
	p->enabled = step_admitted(p, quiet || p->by_site) && step_places(sp, p, quiet);
	return 0;
}

int gp_stepd_init(spank_t sp, gp_plugin_t *p)
{
	if (spank_get_item(sp, S_JOB_ID, &p->job_id) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &p->step_id) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_UID, &p->uid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_GID, &p->gid) != ESPANK_SUCCESS) {
		p->config_ok = false;
		return 0;
	}
	if (spank_get_item(sp, S_JOB_NODEID, &p->node_id) != ESPANK_SUCCESS)
		p->node_id = 0;
	/* the job's supplementary groups, kept when root-side helpers drop to the user */
	gid_t *gids = NULL;
	int ng = 0;
	p->ngroups = -1;
	if (spank_get_item(sp, S_JOB_SUPPLEMENTARY_GIDS, &gids, &ng) == ESPANK_SUCCESS && ng >= 0 &&
	    (size_t)ng <= sizeof(p->groups) / sizeof(p->groups[0])) {
		memcpy(p->groups, gids, (size_t)ng * sizeof(gid_t));
		p->ngroups = ng;
	}
	return 0;
}

/* A task that is not profiled must not inherit our injection from a profiled parent
 * (a wrapped batch script running srun): remove what points at our library. */
static void strip_inherited(spank_t sp, const gp_plugin_t *p)
{
	static const char *vars[] = {"CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH"};
	char v[4096];
	for (size_t i = 0; i < 2; i++)
		if (spank_getenv(sp, vars[i], v, sizeof(v)) == ESPANK_SUCCESS &&
		    !strcmp(v, p->cfg.inject_path))
			spank_unsetenv(sp, vars[i]);
	spank_unsetenv(sp, GP_ENV_RING);
	spank_unsetenv(sp, GP_ENV_AGENT_PID);
}

static int fail_task(const gp_plugin_t *p, const char *what)
{
	if (p->cfg.required) {
		gp_err("%s (site policy: required)", what);
		return -1;
	}
	gp_warn("%s; the task runs unprofiled", what);
	return 0;
}

/* Fallback: no agent, the injected library writes its own rank file. */
static void env_only(spank_t sp, const gp_plugin_t *p, const char *why)
{
	char v[4096];
	if (access(p->cfg.inject_path, R_OK) != 0)
		return;
	if (spank_getenv(sp, "CUDA_INJECTION64_PATH", v, sizeof(v)) != ESPANK_SUCCESS)
		spank_setenv(sp, "CUDA_INJECTION64_PATH", p->cfg.inject_path, 1);
	if (spank_getenv(sp, "NVTX_INJECTION64_PATH", v, sizeof(v)) != ESPANK_SUCCESS)
		spank_setenv(sp, "NVTX_INJECTION64_PATH", p->cfg.inject_path, 1);
	spank_setenv(sp, GP_ENV_WRAPPED, "env", 1);
	spank_setenv(sp, GP_ENV_FALLBACK, why, 1);
}

static int wrap_task(spank_t sp, const gp_plugin_t *p)
{
	const char *agent = p->cfg.agent_path;
	if (access(agent, X_OK) != 0)
		return -1;
#ifdef HAVE_SPANK_PREPEND_TASK_ARGV
	const char *pre[] = {agent, "--"};
	if (spank_prepend_task_argv(sp, 2, pre) != ESPANK_SUCCESS)
		return -1;
#else
	/* Slurm < 23.11: slurmstepd resolves argv[0] through PATH after task_init and
	 * execs the same array, so replacing argv[0] runs the agent; the agent reads the
	 * original argv[0] back from GPUPROF_ARGV0. */
	int argc = 0;
	char **argv = NULL;
	if (spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS || argc < 1 || !argv ||
	    !argv[0])
		return -1;
	if (spank_setenv(sp, GP_ENV_ARGV0, argv[0], 1) != ESPANK_SUCCESS)
		return -1;
	char *dup = strdup(agent);
	if (!dup)
		return -1;
	argv[0] = dup; /* the old string belongs to slurmstepd; leave it alone */
#endif
	return 0;
}

/* A task profiled into site_output: its rank's cap is the room the user's quota leaves,
 * and its files are site_group's to read (the user's directory passes the group on). */
static int site_task_env(spank_t sp, const gp_plugin_t *p)
{
	char v[32];
	if (!p->site_dir)
		return 0;
	snprintf(v, sizeof(v), "%lld", p->site_rank_cap);
	if (p->site_rank_cap > 0 && spank_setenv(sp, GP_ENV_MAXBYTES, v, 1) != ESPANK_SUCCESS)
		return -1;
	if (p->site_group_ok && spank_setenv(sp, GP_ENV_GROUP_READABLE, "1", 1) != ESPANK_SUCCESS)
		return -1;
	return 0;
}

static int task_setenv(const char *name, const char *value, void *arg)
{
	return spank_setenv((spank_t)arg, name, value, 1) == ESPANK_SUCCESS ? 0 : -1;
}

int gp_stepd_task_init(spank_t sp, gp_plugin_t *p)
{
	uint32_t rank = 0;
	char modes[128], stepbuf[32], rankbuf[16];
	gp_task_env_t t;

	if (!p->config_ok)
		return 0;
	resolve_step(sp, p, false);
	if (!p->enabled) {
		strip_inherited(sp, p);
		return 0;
	}
	if (spank_get_item(sp, S_TASK_GLOBAL_ID, &rank) != ESPANK_SUCCESS)
		rank = 0;
	if (!gp_ranks_contains(&p->opts.ranks, rank) || (p->by_site && !task_has_gpus(sp))) {
		strip_inherited(sp, p);
		return 0;
	}
	step_name(p->step_id, stepbuf, sizeof(stepbuf));
	snprintf(rankbuf, sizeof(rankbuf), "%u", rank);
	gp_opts_task_env(&p->opts, &t, modes, sizeof(modes));
	t.jobdir = p->jobdir;
	t.step = stepbuf;
	t.rank = rankbuf;
	t.spool = p->spool;
	if (gp_task_env_export(&t, task_setenv, sp) != 0)
		return fail_task(p, "cannot set the task environment");
	/* the site's values of the settings every task gets (settings.h: GP_SET_TASK) */
	for (unsigned i = 0; i < gp_nsettings; i++) {
		const gp_setting_t *s = &gp_settings[i];
		char v[4200];
		if (!(s->flags & GP_SET_TASK))
			continue;
		if (gp_config_env_text(&p->cfg, s, v, sizeof(v)) < 0 ||
		    spank_setenv(sp, s->env, v, 1) != ESPANK_SUCCESS)
			return fail_task(p, "cannot set the task environment");
	}
	if (site_task_env(sp, p) < 0)
		return fail_task(p, "cannot set the task environment");
	/* Injection first, as the fallback: the agent, once running, points it at its
	 * own ring; if the agent never runs (multi-prog), the library writes alone. */
	env_only(sp, p, "task not wrapped by the agent");
	if (wrap_task(sp, p) < 0)
		return fail_task(p, "cannot wrap the task with gpuprof-agent");
	return 0;
}

int gp_stepd_task_exit(spank_t sp, gp_plugin_t *p)
{
	uint32_t tid = 0, gid = 0;
	int status = 0;
	if (!p->config_ok || !p->enabled)
		return 0;
	if (spank_get_item(sp, S_TASK_ID, &tid) != ESPANK_SUCCESS || tid >= 512)
		return 0;
	if (spank_get_item(sp, S_TASK_EXIT_STATUS, &status) != ESPANK_SUCCESS)
		return 0;
	spank_get_item(sp, S_TASK_GLOBAL_ID, &gid);
	pid_t pid = 0;
	if (spank_get_item(sp, S_TASK_PID, &pid) != ESPANK_SUCCESS)
		pid = 0;
	p->task_pid[tid] = pid;
	p->exit_status[tid] = status;
	p->global_id[tid] = gid;
	p->profiled[tid] = gp_ranks_contains(&p->opts.ranks, gid);
	p->task_seen[tid] = true;
	if (tid + 1 > p->ntasks_local)
		p->ntasks_local = tid + 1;
	return 0;
}

typedef struct node_summary {
	const gp_plugin_t *p;
	const char *attempt;
} node_summary_t;

/* As the user: write step<S>/node<N>.json with this node's task exit statuses. */
static int write_node_summary(void *arg)
{
	const gp_plugin_t *p = ((const node_summary_t *)arg)->p;
	const char *attempt = ((const node_summary_t *)arg)->attempt;
	char stepbuf[32], dir[4200], name[64], node[256] = "";
	char *buf = malloc(64 * 1024);
	size_t off = 0;
	int dfd, rc;
	if (!buf)
		return -1;
	step_name(p->step_id, stepbuf, sizeof(stepbuf));
	gethostname(node, sizeof(node) - 1);
	dfd = gp_spool_step_dir(dir, sizeof(dir), p->jobdir, stepbuf, attempt) < 0
	          ? -1
	          : gp_mkdir_p(dir, p->cfg.group_readable ? 0750 : 0700);
	if (dfd < 0) {
		free(buf);
		return -1;
	}
	off += (size_t)snprintf(
	    buf + off, 65536 - off,
	    "{\"job\": %u, \"step\": \"%s\", \"node\": \"%s\", \"node_id\": %u, "
	    "\"slurm_version\": \"%d.%02d.%d\", \"attempt\": %d, \"tasks\": [",
	    p->job_id, stepbuf, node, p->node_id, SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER),
	    SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER), SLURM_VERSION_MICRO(SLURM_VERSION_NUMBER),
	    attempt ? atoi(attempt) : 0);
	for (unsigned i = 0; i < p->ntasks_local && off < 60000; i++) {
		if (!p->task_seen[i])
			continue;
		off += (size_t)snprintf(buf + off, 65536 - off,
		                        "%s{\"task\": %u, \"rank\": %u, \"pid\": %d, "
		                        "\"wait_status\": %d, \"profiled\": %s}",
		                        off && buf[off - 1] == '}' ? ", " : "", i, p->global_id[i],
		                        (int)p->task_pid[i], p->exit_status[i],
		                        p->profiled[i] ? "true" : "false");
	}
	off += (size_t)snprintf(buf + off, 65536 - off, "]}\n");
	snprintf(name, sizeof(name), "node%u.json", p->node_id);
	rc = gp_write_file_at(dfd, name, buf, off, p->cfg.group_readable ? 0640 : 0600, true);
	close(dfd);
	free(buf);
	return rc;
}

/* Root-owned record for the epilog, one per step ("JOB.STEP": every step's spool and
 * directory is salvaged, not only the last one's), in a root-owned directory that
 * nobody else can write (never a user path). */
static void write_state_record(const gp_plugin_t *p)
{
	char rec[4400], name[48];
	struct stat st;
	int dfd;
	if (geteuid() != 0)
		return;
	for (const char *c = p->jobdir; *c; c++)
		if ((unsigned char)*c < 0x20) { /* the record is line-based */
			gp_warn("job directory has a control character; no epilog record");
			return;
		}
	dfd = gp_mkdir_p(p->state_dir, 0700);
	if (dfd < 0) {
		gp_err_errno("state directory %s", p->state_dir);
		return;
	}
	if (fstat(dfd, &st) < 0 || st.st_uid != 0 || (st.st_mode & 022)) {
		gp_err("state directory %s is not root's alone; no epilog record", p->state_dir);
		close(dfd);
		return;
	}
	int n = snprintf(rec, sizeof(rec), "%u %u %u\n%s\n%s\n", (unsigned)p->uid, (unsigned)p->gid,
	                 (unsigned)p->node_id, p->spool, p->jobdir);
	snprintf(name, sizeof(name), "%u.%u", p->job_id, p->step_id);
	if (gp_write_file_at(dfd, name, rec, (size_t)n, 0600, true) < 0)
		gp_err_errno("state record %s/%s", p->state_dir, name);
	close(dfd);
}

/* init_post_opt runs as root in slurmstepd once options are known: resolve the step
 * and leave the epilog its record now (the epilog can run before slurmstepd's exit
 * hook has finished). */
int gp_stepd_post_opt(spank_t sp, gp_plugin_t *p)
{
	if (!p->config_ok)
		return 0;
	/* once per node and step, and only when the policy is about them */
	if (policy_needs_job_info(&p->cfg)) {
		gp_slurm_job_t info;
		if (gp_slurm_job_info(p->job_id, &info) == 0) {
			snprintf(p->account, sizeof(p->account), "%s", info.account);
			snprintf(p->partition, sizeof(p->partition), "%s", info.partition);
			p->job_info_ok = true;
		}
	}
	resolve_step(sp, p, true);
	if (p->enabled && p->site_dir) {
		struct passwd *pw = getpwuid(p->uid);
		uint32_t ntasks = 1;
		if (spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &ntasks) != ESPANK_SUCCESS)
			ntasks = 1;
		p->site_state = gp_site_prepare(p, pw ? pw->pw_name : NULL, ntasks) == 0 ? 1 : -1;
		p->enabled = p->site_state > 0;
	}
	if (p->enabled)
		write_state_record(p);
	return 0;
}

int gp_stepd_exit(spank_t sp, gp_plugin_t *p)
{
	char attempt[32] = "0";
	const gp_creds_t who = {p->uid, p->gid, p->ngroups, p->groups};
	if (!p->config_ok || !p->enabled)
		return 0;
	const char *rc = job_env("SLURM_RESTART_COUNT", sp);
	if (rc)
		snprintf(attempt, sizeof(attempt), "%s", rc);
	node_summary_t ns = {p, attempt};
	if (p->ntasks_local && gp_run_as_user(&who, write_node_summary, &ns, 10) != 0)
		gp_warn("could not write the step summary into %s", p->jobdir);
	/* node 0 refreshes the report as the user and puts its summary into AdminComment,
	 * detached: srun does not wait for it (the epilog does it again after salvage) */
	if (p->node_id == 0 && p->cfg.report_at_end && access(p->cfg.cli_path, X_OK) == 0) {
		if (geteuid() == 0)
			gp_finish_detached(p, p->job_id, &who, p->jobdir, false);
		else /* slurmstepd not root (a test): the report alone, as it is */
			gp_exec_as_user(
			    &who, (char *[]){p->cfg.cli_path, "report", "--quiet", p->jobdir, NULL},
			    NULL, 0, (int)p->cfg.report_timeout);
	}
	return 0;
}
