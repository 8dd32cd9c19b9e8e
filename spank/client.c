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

static const char *client_env(const char *name, void *arg)
{
	return getenv(name);
}

int gp_client_post_opt(spank_t sp)
{
	char err[512];
	const char *why;
	struct passwd *pw;

	if (!gp_plugin.config_ok)
		return 0;
	if (gp_options_resolve(client_env, NULL, err, sizeof(err)) < 0)
		return gp_err("%s", err);
	if (!gp_plugin.modes || (gp_plugin.modes & GP_MODE_NONE))
		return 0;
	/* GPUPROF_MODES from the environment gets the same policy check as --gpuprof. */
	unsigned bad = gp_plugin.modes & ~gp_plugin.cfg.allowed_modes & GP_MODES_KNOWN;
	if (bad) {
		char b[128], a[128];
		gp_modes_format(bad & ~GP_MODE_TIMING, b, sizeof(b));
		gp_modes_format(gp_plugin.cfg.allowed_modes, a, sizeof(a));
		return gp_err("%s: mode '%s' is not allowed on this cluster (allowed: %s)",
		              gp_plugin.opt_modes_set ? "--gpuprof" : GP_ENV_MODES, b, a);
	}
	pw = getpwuid(getuid());
	if (!gp_config_admits(&gp_plugin.cfg, pw ? pw->pw_name : NULL, NULL, &why))
		return gp_err("%s: not available to you: %s",
		              gp_plugin.opt_modes_set ? "--gpuprof" : GP_ENV_MODES, why);
	return 0;
}
