/* gpuprof SPANK plugin: the thin dispatcher on spank_context(). Each context lives in
 * its own file: client.c (srun/sbatch/salloc), stepd.c (slurmstepd), epilog.c. Nothing
 * here may exit or abort: slurmstepd and srun are other people's processes. */
#include "config.h"
#include "plugin.h"
#include "log.h"
#include "path.h"

#include <grp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

SPANK_PLUGIN(gpuprof, 1);

/* the context, passed to each context's functions (plugin.h) */
static gp_plugin_t ctx;

static void slurm_sink(int level, const char *msg)
{
	/* slurm_* prefix the plugin; keep "gpuprof:" so users can grep one word. */
	if (level == GP_LOG_ERROR)
		slurm_error("gpuprof: %s", msg);
	else if (level == GP_LOG_WARN)
		slurm_info("gpuprof: warning: %s", msg);
	else if (level == GP_LOG_INFO)
		slurm_verbose("gpuprof: %s", msg);
	else
		slurm_debug("gpuprof: %s", msg);
}

/* state_dir= with its %n and %h expanded (path.h: a node's template): one directory per
 * slurmd where several share a machine (test clusters). Allocated; NULL with a message. */
static char *node_dir(const char *tmpl)
{
	char err[256], out[1024];
	gp_tmpl_vars_t v = {0};
	gp_tmpl_hostbuf_t hb;
	if (gp_tmpl_check_kind(tmpl, GP_TMPL_NODE, err, sizeof(err)) < 0) {
		gp_err("plugstack.conf: state_dir '%s': %s", tmpl, err);
		return NULL;
	}
	gp_tmpl_this_host(&v, &hb);
	if (gp_tmpl_expand(tmpl, &v, out, sizeof(out)) < 0) {
		gp_err("plugstack.conf: state_dir '%s': too long once expanded", tmpl);
		return NULL;
	}
	return strdup(out);
}

/* plugstack.conf arguments: config= agent= inject= cli= state_dir= */
static int parse_plugin_args(gp_plugin_t *p, int ac, char **av)
{
	for (int i = 0; i < ac; i++) {
		const char *eq = strchr(av[i], '=');
		if (!eq)
			return gp_err("plugstack.conf: argument '%s' is not key=value", av[i]);
		size_t kl = (size_t)(eq - av[i]);
		if (kl == 6 && !strncmp(av[i], "config", 6)) {
			free(p->config_path);
			p->config_path = strdup(eq + 1);
		} else if (kl == 9 && !strncmp(av[i], "state_dir", 9)) {
			free(p->state_dir);
			p->state_dir = node_dir(eq + 1);
			if (!p->state_dir)
				return -1;
		} else if (!(kl == 5 && !strncmp(av[i], "agent", 5)) &&
		           !(kl == 6 && !strncmp(av[i], "inject", 6)) &&
		           !(kl == 3 && !strncmp(av[i], "cli", 3))) {
			return gp_err("plugstack.conf: unknown argument '%.*s' (known: config, "
			              "agent, inject, cli, state_dir)",
			              (int)kl, av[i]);
		}
	}
	return 0;
}

/* Paths given in plugstack.conf win over the YAML file (the admin wrote both). */
static void apply_path_args(gp_plugin_t *p, int ac, char **av)
{
	for (int i = 0; i < ac; i++) {
		char **dst = NULL;
		if (!strncmp(av[i], "agent=", 6))
			dst = &p->cfg.agent_path;
		else if (!strncmp(av[i], "inject=", 7))
			dst = &p->cfg.inject_path;
		else if (!strncmp(av[i], "cli=", 4))
			dst = &p->cfg.cli_path;
		if (dst) {
			free(*dst);
			*dst = strdup(strchr(av[i], '=') + 1);
		}
	}
}

/* Plugin arguments and site policy. Any failure leaves the plugin disabled (config_ok
 * false): one line in the log, and the job runs as if gpuprof were not installed. */
static void load_site(gp_plugin_t *p, int ac, char **av)
{
	char err[512];
	p->config_ok = false;
	if (parse_plugin_args(p, ac, av) < 0)
		return;
	if (!p->config_path)
		p->config_path = strdup(GP_SYSCONF_PATH);
	if (!p->state_dir)
		p->state_dir = strdup("/run/gpuprof");
	if (gp_config_load(&p->cfg, p->config_path, true, err, sizeof(err)) < 0) {
		gp_err("site config disabled gpuprof: %s", err);
		return;
	}
	apply_path_args(p, ac, av);
	p->config_ok = true;
	/* said where the file is read, in slurmd's log once at its start (a job's step says
	 * it again where it makes the user's directory, spank/site.c) */
	if (spank_context() == S_CTX_SLURMD && *p->cfg.site_group && !getgrnam(p->cfg.site_group))
		gp_warn("%s: site_group '%s' is not a group on this node: the users' directories "
		        "under site_output are made theirs alone",
		        p->config_path, p->cfg.site_group);
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	spank_context_t sctx = spank_context();

	if (sctx == S_CTX_REMOTE || sctx == S_CTX_JOB_SCRIPT || sctx == S_CTX_SLURMD)
		gp_log_set_sink(slurm_sink);
	/* Options first, in every context: sbatch/salloc ignore a static table. */
	if (sctx != S_CTX_JOB_SCRIPT && gp_options_register(sp, &ctx) < 0)
		return -1;
	load_site(&ctx, ac, av);
	if (ctx.config_ok && sctx == S_CTX_REMOTE)
		return gp_stepd_init(sp, &ctx);
	return 0;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	switch (spank_context()) {
	case S_CTX_LOCAL:
	case S_CTX_ALLOCATOR:
		return gp_client_post_opt(sp, &ctx);
	case S_CTX_REMOTE:
		return gp_stepd_post_opt(sp, &ctx);
	default:
		return 0;
	}
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	if (spank_context() != S_CTX_REMOTE)
		return 0;
	return gp_stepd_task_init(sp, &ctx);
}

int slurm_spank_task_exit(spank_t sp, int ac, char **av)
{
	if (spank_context() != S_CTX_REMOTE)
		return 0;
	return gp_stepd_task_exit(sp, &ctx);
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	if (spank_context() != S_CTX_REMOTE)
		return 0;
	return gp_stepd_exit(sp, &ctx);
}

int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
	if (spank_context() != S_CTX_JOB_SCRIPT)
		return 0;
	/* Slurm 22.05 does not call slurm_spank_init before the job epilog (seen in our
	 * tests: the epilog ran with nothing initialised), so set up here. */
	if (!ctx.config_ok) {
		gp_log_set_sink(slurm_sink);
		load_site(&ctx, ac, av);
	}
	return gp_epilog(sp, &ctx);
}
