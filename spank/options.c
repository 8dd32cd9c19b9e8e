/* The --gpuprof, --gpuprof-output, --gpuprof-ranks and --gpuprof-capture options: registration, the
 * callbacks (idempotent: slurmstepd calls them twice), and resolution against GPUPROF_*
 * variables and the site defaults (common/optenv.h). Syntax is checked where the user
 * typed it. The values as given are this file's own state, as pyxis's args.c keeps its:
 * Slurm calls the callbacks with no argument of ours. */
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

/* what the user gave (owned copies), and the context whose site policy checks them */
static struct {
	gp_opt_given_t given;
	char *modes, *output, *ranks, *capture;
	const gp_plugin_t *p;
} opt;

static const gp_opt_names_t names = {"--gpuprof", "--gpuprof-output", "--gpuprof-ranks",
                                     "--gpuprof-capture"};

static bool client_side(int remote)
{
	spank_context_t c = spank_context();
	return !remote && (c == S_CTX_LOCAL || c == S_CTX_ALLOCATOR);
}

static const char *set_str(char **dst, const char *v)
{
	free(*dst);
	*dst = v ? strdup(v) : NULL;
	return *dst;
}

static void print_help(void)
{
	char policy[1024] = "";
	if (opt.p && opt.p->config_ok)
		gp_config_describe(&opt.p->cfg, policy, sizeof(policy));
	/* The client's stderr is the user's terminal. */
	fprintf(stderr,
	        "gpuprof: --gpuprof[=MODES] profiles the GPU work of every task of the job.\n"
	        "MODES is a comma list of:\n%s"
	        "Without MODES the site default applies. Related options:\n"
	        "  --gpuprof-output=DIR   job directory (template: %%j job, %%u user, %%x name,\n"
	        "                         %%s step, %%n node, %%h its short name); relative to\n"
	        "                         the submit directory\n"
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
	if (opt.p && opt.p->config_ok && !(m & GP_MODE_NONE)) {
		unsigned bad = m & ~opt.p->cfg.allowed_modes & GP_MODES_KNOWN;
		if (bad) {
			char b[128], a[128];
			gp_modes_format(bad & ~GP_MODE_TIMING, b, sizeof(b));
			gp_modes_format(opt.p->cfg.allowed_modes, a, sizeof(a));
			return gp_err("%s: mode '%s' is not allowed on this cluster (allowed: %s)",
			              what, b, a);
		}
	}
	return 0;
}

static int check(const char *what, gp_opt_kind_t kind, const char *v)
{
	char err[512];
	if (gp_opts_check(kind, v, err, sizeof(err)) < 0)
		return gp_err("%s: %s", what, err);
	return 0;
}

static int cb_modes(int val, const char *optarg, int remote)
{
	if (client_side(remote) && check_modes(names.modes, optarg) < 0)
		return -1;
	opt.given.modes_given = true;
	opt.given.modes = set_str(&opt.modes, optarg);
	return 0;
}

static int cb_output(int val, const char *optarg, int remote)
{
	if (client_side(remote) && check(names.output, GP_OPT_OUTPUT, optarg) < 0)
		return -1;
	opt.given.output = set_str(&opt.output, optarg);
	return 0;
}

static int cb_ranks(int val, const char *optarg, int remote)
{
	if (client_side(remote) && check(names.ranks, GP_OPT_RANKS, optarg) < 0)
		return -1;
	opt.given.ranks = set_str(&opt.ranks, optarg);
	return 0;
}

static int cb_capture(int val, const char *optarg, int remote)
{
	if (client_side(remote) && check(names.capture, GP_OPT_CAPTURE, optarg) < 0)
		return -1;
	opt.given.capture = set_str(&opt.capture, optarg);
	return 0;
}

static struct spank_option options[] = {
    {"gpuprof", "[MODES]",
     "Profile GPU work: comma list of timing,nvtx,cuda,mem,gpu,layers,all,none "
     "(--gpuprof=help lists them)",
     2, OPT_MODES, cb_modes},
    {"gpuprof-output", "DIR", "gpuprof job directory (template: %j %u %x %s %n %h)", 1, OPT_OUTPUT,
     cb_output},
    {"gpuprof-ranks", "LIST", "profile only these global ranks, e.g. 0,8-15", 1, OPT_RANKS,
     cb_ranks},
    {"gpuprof-capture", "WINDOW",
     "trace CUDA activity only in these steps: steps=A-B[,C-D], cudaprofilerapi, all", 1,
     OPT_CAPTURE, cb_capture},
    SPANK_OPTIONS_TABLE_END,
};

int gp_options_register(spank_t sp, const gp_plugin_t *p)
{
	opt.p = p;
	for (struct spank_option *o = options; o->name; o++) {
		spank_err_t rc = spank_option_register(sp, o);
		if (rc != ESPANK_SUCCESS)
			return gp_err("cannot register --%s: %s", o->name, spank_strerror(rc));
	}
	return 0;
}

int gp_options_resolve(gp_plugin_t *p, gp_getenv_fn get, void *arg, char *err, size_t errlen)
{
	const gp_opt_defaults_t d = {.bare_modes = p->cfg.default_modes, .output = p->cfg.output};
	if (gp_opts_resolve(&p->opts, &opt.given, &names, &d, get, arg, err, errlen) < 0)
		return -1;
	if (p->opts.modes & GP_MODE_HELP)
		p->opts.modes = 0;
	return 0;
}
