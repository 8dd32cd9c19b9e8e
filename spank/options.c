/* The --gpuprof, --gpuprof-output, --gpuprof-ranks and --gpuprof-capture options: registration, the
 * callbacks (idempotent: slurmstepd calls them twice), and resolution against GPUPROF_*
 * variables and the site defaults. Syntax is checked where the user typed it. */
#include "config.h"
#include "plugin.h"
#include "env.h"
#include "log.h"
#include "modes.h"
#include "path.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { OPT_MODES = 1, OPT_OUTPUT, OPT_RANKS, OPT_CAPTURE };

static bool client_side(int remote)
{
	spank_context_t c = spank_context();
	return !remote && (c == S_CTX_LOCAL || c == S_CTX_ALLOCATOR);
}

static void set_str(char **dst, const char *v)
{
	free(*dst);
	*dst = v ? strdup(v) : NULL;
}

static void print_help(void)
{
	char policy[1024] = "";
	if (gp_plugin.config_ok)
		gp_config_describe(&gp_plugin.cfg, policy, sizeof(policy));
	/* The client's stderr is the user's terminal. */
	fprintf(stderr,
	        "gpuprof: --gpuprof[=MODES] profiles the GPU work of every task of the job.\n"
	        "MODES is a comma list of:\n%s"
	        "Without MODES the site default applies. Related options:\n"
	        "  --gpuprof-output=DIR   job directory (template: %%j job, %%u user, %%x name,\n"
	        "                         %%s step, %%n node); relative to the submit directory\n"
	        "  --gpuprof-ranks=LIST   profile only these global ranks, e.g. 0,8-15\n"
	        "  --gpuprof-capture=WINDOW  trace CUDA activity only in steps A-B:\n"
	        "                         steps=A-B[,C-D] (0-based), cudaprofilerapi, all\n"
	        "%s",
	        gp_modes_help(), policy);
}

static int check_modes(const char *what, const char *v)
{
	char err[512];
	unsigned m;
	if (!v || !*v)
		return 0; /* --gpuprof alone: site default */
	if (gp_modes_parse(v, &m, err, sizeof(err)) < 0)
		return gp_err("%s: %s", what, err);
	if (m & GP_MODE_HELP) {
		print_help();
		/* Like --help: print and leave before anything is submitted. Only ever in
		 * srun/sbatch/salloc, never in slurmstepd or a task. */
		exit(0);
	}
	if (gp_plugin.config_ok && !(m & GP_MODE_NONE)) {
		unsigned bad = m & ~gp_plugin.cfg.allowed_modes & GP_MODES_KNOWN;
		if (bad) {
			char b[128], a[128];
			gp_modes_format(bad & ~GP_MODE_TIMING, b, sizeof(b));
			gp_modes_format(gp_plugin.cfg.allowed_modes, a, sizeof(a));
			return gp_err("%s: mode '%s' is not allowed on this cluster (allowed: %s)",
			              what, b, a);
		}
	}
	return 0;
}

static int check_output(const char *what, const char *v)
{
	char err[512];
	if (gp_tmpl_check(v, err, sizeof(err)) < 0)
		return gp_err("%s: %s", what, err);
	return 0;
}

static int check_ranks(const char *what, const char *v)
{
	char err[512];
	gp_ranks_t *rk = malloc(sizeof(*rk));
	int rc = 0;
	if (!rk)
		return gp_err("out of memory");
	if (gp_ranks_parse(v, rk, err, sizeof(err)) < 0)
		rc = gp_err("%s: %s", what, err);
	free(rk);
	return rc;
}

static int check_capture(const char *what, const char *v)
{
	char err[512];
	gp_capture_t c;
	if (gp_text_check(v, 256, err, sizeof(err)) < 0 ||
	    gp_capture_parse(v, &c, err, sizeof(err)) < 0)
		return gp_err("%s: %s", what, err);
	return 0;
}

static int cb_modes(int val, const char *optarg, int remote)
{
	if (client_side(remote) && check_modes("--gpuprof", optarg) < 0)
		return -1;
	gp_plugin.opt_modes_set = true;
	set_str(&gp_plugin.opt_modes, optarg);
	return 0;
}

static int cb_output(int val, const char *optarg, int remote)
{
	if (client_side(remote) && check_output("--gpuprof-output", optarg) < 0)
		return -1;
	set_str(&gp_plugin.opt_output, optarg);
	return 0;
}

static int cb_ranks(int val, const char *optarg, int remote)
{
	if (client_side(remote) && check_ranks("--gpuprof-ranks", optarg) < 0)
		return -1;
	set_str(&gp_plugin.opt_ranks, optarg);
	return 0;
}

static int cb_capture(int val, const char *optarg, int remote)
{
	if (client_side(remote) && check_capture("--gpuprof-capture", optarg) < 0)
		return -1;
	set_str(&gp_plugin.opt_capture, optarg);
	return 0;
}

static struct spank_option options[] = {
    {"gpuprof", "[MODES]",
     "Profile GPU work: comma list of timing,nvtx,cuda,mem,gpu,layers,all,none "
     "(--gpuprof=help lists them)",
     2, OPT_MODES, cb_modes},
    {"gpuprof-output", "DIR", "gpuprof job directory (template: %j %u %x %s %n)", 1, OPT_OUTPUT,
     cb_output},
    {"gpuprof-ranks", "LIST", "profile only these global ranks, e.g. 0,8-15", 1, OPT_RANKS,
     cb_ranks},
    {"gpuprof-capture", "WINDOW",
     "trace CUDA activity only in these steps: steps=A-B[,C-D], cudaprofilerapi, all", 1,
     OPT_CAPTURE, cb_capture},
    SPANK_OPTIONS_TABLE_END,
};

int gp_options_register(spank_t sp)
{
	for (struct spank_option *o = options; o->name; o++) {
		spank_err_t rc = spank_option_register(sp, o);
		if (rc != ESPANK_SUCCESS)
			return gp_err("cannot register --%s: %s", o->name, spank_strerror(rc));
	}
	return 0;
}

int gp_options_resolve(const char *(*env_get)(const char *name, void *arg), void *arg, char *err,
                       size_t errlen)
{
	const char *v;
	char why[512];
	gp_plugin_t *p = &gp_plugin;

	p->modes = 0;
	if (p->opt_modes_set) {
		v = p->opt_modes;
		if (!v || !*v)
			p->modes = p->cfg.default_modes;
		else if (gp_modes_parse(v, &p->modes, why, sizeof(why)) < 0) {
			snprintf(err, errlen, "--gpuprof: %s", why);
			return -1;
		}
	} else if ((v = env_get(GP_ENV_MODES, arg)) != NULL) {
		if (gp_modes_parse(v, &p->modes, why, sizeof(why)) < 0) {
			snprintf(err, errlen, "%s: %s", GP_ENV_MODES, why);
			return -1;
		}
	}
	if (p->modes & GP_MODE_HELP)
		p->modes = 0;

	v = p->opt_output ? p->opt_output : env_get(GP_ENV_OUTPUT, arg);
	if (v && gp_tmpl_check(v, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "%s: %s", p->opt_output ? "--gpuprof-output" : GP_ENV_OUTPUT,
		         why);
		return -1;
	}
	set_str(&p->output_tmpl, v ? v : p->cfg.output);

	v = p->opt_ranks ? p->opt_ranks : env_get(GP_ENV_RANKS, arg);
	memset(&p->ranks, 0, sizeof(p->ranks));
	p->ranks.all = true;
	if (v && gp_ranks_parse(v, &p->ranks, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "%s: %s", p->opt_ranks ? "--gpuprof-ranks" : GP_ENV_RANKS,
		         why);
		return -1;
	}

	v = p->opt_capture ? p->opt_capture : env_get(GP_ENV_CAPTURE, arg);
	if (v) {
		gp_capture_t c;
		if (gp_text_check(v, 256, why, sizeof(why)) < 0 ||
		    gp_capture_parse(v, &c, why, sizeof(why)) < 0) {
			snprintf(err, errlen, "%s: %s",
			         p->opt_capture ? "--gpuprof-capture" : GP_ENV_CAPTURE, why);
			return -1;
		}
	}
	set_str(&p->capture, v && *v ? v : NULL);
	return 0;
}
