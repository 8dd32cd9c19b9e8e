/* gpuprof SPANK plugin: the thin dispatcher on spank_context(). Each context lives in
 * its own file: client.c (srun/sbatch/salloc), stepd.c (slurmstepd), epilog.c. Nothing
 * here may exit or abort: slurmstepd and srun are other people's processes. */
#include "config.h"
#include "plugin.h"
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

SPANK_PLUGIN(gpuprof, 1);

gp_plugin_t gp_plugin;

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

/* tmpl with %h replaced by this host's short name (state_dir, spool_dir): one directory
 * per slurmd where several share a machine (test clusters); NULL for any other '%' or a
 * name too long */
char *gp_expand_host(const char *tmpl)
{
	char host[256] = "", out[1024];
	size_t n = 0;
	if (gethostname(host, sizeof(host) - 1) == 0)
		host[strcspn(host, ".")] = '\0';
	for (const char *c = tmpl; *c; c++) {
		const char *add = NULL;
		char one[2] = {*c, '\0'};
		if (*c != '%')
			add = one;
		else if (c[1] == 'h' && host[0] && !strchr(host, '/'))
			add = host, c++;
		else
			return NULL;
		size_t l = strlen(add);
		if (n + l >= sizeof(out))
			return NULL;
		memcpy(out + n, add, l);
		n += l;
	}
	out[n] = '\0';
	return strdup(out);
}

/* plugstack.conf arguments: config= agent= inject= cli= state_dir= */
static int parse_plugin_args(int ac, char **av)
{
	for (int i = 0; i < ac; i++) {
		const char *eq = strchr(av[i], '=');
		if (!eq)
			return gp_err("plugstack.conf: argument '%s' is not key=value", av[i]);
		size_t kl = (size_t)(eq - av[i]);
		if (kl == 6 && !strncmp(av[i], "config", 6)) {
			free(gp_plugin.config_path);
			gp_plugin.config_path = strdup(eq + 1);
		} else if (kl == 9 && !strncmp(av[i], "state_dir", 9)) {
			free(gp_plugin.state_dir);
			gp_plugin.state_dir = gp_expand_host(eq + 1);
			if (!gp_plugin.state_dir)
				return gp_err("plugstack.conf: state_dir '%s': only %%h (this "
				              "host's name) may follow a '%%'",
				              eq + 1);
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
static void apply_path_args(int ac, char **av)
{
	for (int i = 0; i < ac; i++) {
		char **dst = NULL;
		if (!strncmp(av[i], "agent=", 6))
			dst = &gp_plugin.cfg.agent_path;
		else if (!strncmp(av[i], "inject=", 7))
			dst = &gp_plugin.cfg.inject_path;
		else if (!strncmp(av[i], "cli=", 4))
			dst = &gp_plugin.cfg.cli_path;
		if (dst) {
			free(*dst);
			*dst = strdup(strchr(av[i], '=') + 1);
		}
	}
}

/* Plugin arguments and site policy. Any failure leaves the plugin disabled (config_ok
 * false): one line in the log, and the job runs as if gpuprof were not installed. */
static void load_site(int ac, char **av)
{
	char err[512];
	gp_plugin.config_ok = false;
	if (parse_plugin_args(ac, av) < 0)
		return;
	if (!gp_plugin.config_path)
		gp_plugin.config_path = strdup(GP_SYSCONF_PATH);
	if (!gp_plugin.state_dir)
		gp_plugin.state_dir = strdup("/run/gpuprof");
	if (gp_config_load(&gp_plugin.cfg, gp_plugin.config_path, true, err, sizeof(err)) < 0) {
		gp_err("site config disabled gpuprof: %s", err);
		return;
	}
	apply_path_args(ac, av);
	gp_plugin.config_ok = true;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	spank_context_t ctx = spank_context();

	if (ctx == S_CTX_REMOTE || ctx == S_CTX_JOB_SCRIPT)
		gp_log_set_sink(slurm_sink);
	/* Options first, in every context: sbatch/salloc ignore a static table. */
	if (ctx != S_CTX_JOB_SCRIPT && gp_options_register(sp) < 0)
		return -1;
	load_site(ac, av);
	if (gp_plugin.config_ok && ctx == S_CTX_REMOTE)
		return gp_stepd_init(sp);
	return 0;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	switch (spank_context()) {
	case S_CTX_LOCAL:
	case S_CTX_ALLOCATOR:
		return gp_client_post_opt(sp);
	case S_CTX_REMOTE:
		return gp_stepd_post_opt(sp);
	default:
		return 0;
	}
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	if (spank_context() != S_CTX_REMOTE)
		return 0;
	return gp_stepd_task_init(sp);
}

int slurm_spank_task_exit(spank_t sp, int ac, char **av)
{
	if (spank_context() != S_CTX_REMOTE)
		return 0;
	return gp_stepd_task_exit(sp);
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	if (spank_context() != S_CTX_REMOTE)
		return 0;
	return gp_stepd_exit(sp);
}

int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
	if (spank_context() != S_CTX_JOB_SCRIPT)
		return 0;
	/* Slurm 22.05 does not call slurm_spank_init before the job epilog (seen in our
	 * tests: the epilog ran with nothing initialised), so set up here. */
	if (!gp_plugin.config_ok) {
		gp_log_set_sink(slurm_sink);
		load_site(ac, av);
	}
	return gp_epilog(sp);
}
