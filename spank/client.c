/* srun/sbatch/salloc side: everything a user can get wrong is rejected here, before a
 * job exists (returning -1 makes the client print our line and exit non-zero). */
#include "config.h"
#include "plugin.h"
#include "env.h"
#include "log.h"
#include "modes.h"

#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int gp_client_post_opt(spank_t sp, gp_plugin_t *p)
{
	char err[512];
	const char *why;
	struct passwd *pw;

	if (!p->config_ok)
		return 0;
	if (gp_options_resolve(p, gp_env_process_get, NULL, err, sizeof(err)) < 0)
		return gp_err("%s", err);
	/* an opt-out the site does not honour is said where it was typed, and the job runs */
	if ((p->opts.modes & GP_MODE_NONE) && !p->cfg.profile_all_opt_out &&
	    gp_config_profile_any(&p->cfg))
		gp_warn("%s=none: this cluster profiles every job's tasks that have GPUs "
		        "(profile_all_opt_out: false); yours are profiled all the same",
		        p->opts.modes_given ? "--gpuprof" : GP_ENV_MODES);
	if (!p->opts.modes || (p->opts.modes & GP_MODE_NONE))
		return 0;
	/* GPUPROF_MODES from the environment gets the same policy check as --gpuprof. */
	unsigned bad = p->opts.modes & ~p->cfg.allowed_modes & GP_MODES_KNOWN;
	if (bad) {
		char b[128], a[128];
		gp_modes_format(bad & ~GP_MODE_TIMING, b, sizeof(b));
		gp_modes_format(p->cfg.allowed_modes, a, sizeof(a));
		return gp_err("%s: mode '%s' is not allowed on this cluster (allowed: %s)",
		              p->opts.modes_given ? "--gpuprof" : GP_ENV_MODES, b, a);
	}
	pw = getpwuid(getuid());
	if (!gp_config_admits(&p->cfg, pw ? pw->pw_name : NULL, NULL, &why))
		return gp_err("%s: not available to you: %s",
		              p->opts.modes_given ? "--gpuprof" : GP_ENV_MODES, why);
	return 0;
}
