/* A user's choices resolved into a task's GPUPROF_* environment (see optenv.h). */
#include "config.h"
#include "optenv.h"
#include "env.h"
#include "modes.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *gp_env_process_get(const char *name, void *arg)
{
	(void)arg;
	return getenv(name);
}

int gp_env_process_set(const char *name, const char *value, void *arg)
{
	(void)arg;
	return setenv(name, value, 1);
}

static int bad(char *err, size_t errlen, const char *name, const char *why)
{
	snprintf(err, errlen, "%s: %s", name, why);
	return -1;
}

int gp_opts_check(gp_opt_kind_t kind, const char *v, char *why, size_t whylen)
{
	gp_ranks_t *rk;
	gp_capture_t c;
	int rc;
	switch (kind) {
	case GP_OPT_OUTPUT:
		return gp_tmpl_check(v, why, whylen);
	case GP_OPT_RANKS:
		if (!(rk = malloc(sizeof(*rk)))) /* 2 KiB: not on a callback's stack */
			return snprintf(why, whylen, "out of memory"), -1;
		rc = gp_ranks_parse(v, rk, why, whylen);
		free(rk);
		return rc < 0 ? -1 : 0;
	case GP_OPT_CAPTURE:
		return gp_text_check(v, 256, why, whylen) < 0 ||
		               gp_capture_parse(v, &c, why, whylen) < 0
		           ? -1
		           : 0;
	}
	return -1;
}

static int resolve_modes(gp_opts_t *o, const gp_opt_given_t *g, const gp_opt_names_t *names,
                         const gp_opt_defaults_t *d, const char *env, char *err, size_t errlen)
{
	char why[512];
	o->modes = 0;
	o->modes_given = g->modes_given;
	if (g->modes_given && (!g->modes || !*g->modes))
		o->modes = d->bare_modes;
	else if (g->modes_given || env) {
		if (gp_modes_parse(g->modes_given ? g->modes : env, &o->modes, why, sizeof(why)) <
		    0)
			return bad(err, errlen, g->modes_given ? names->modes : GP_ENV_MODES, why);
	} else
		o->modes = d->unset_modes;
	return 0;
}

int gp_opts_resolve(gp_opts_t *o, const gp_opt_given_t *g, const gp_opt_names_t *names,
                    const gp_opt_defaults_t *d, gp_getenv_fn get, void *arg, char *err,
                    size_t errlen)
{
	char why[512];
	const char *v;
	memset(o, 0, sizeof(*o));
	if (resolve_modes(o, g, names, d, get(GP_ENV_MODES, arg), err, errlen) < 0)
		return -1;

	v = g->output ? g->output : get(GP_ENV_OUTPUT, arg);
	o->output_given = v != NULL;
	if (v && gp_opts_check(GP_OPT_OUTPUT, v, why, sizeof(why)) < 0)
		return bad(err, errlen, g->output ? names->output : GP_ENV_OUTPUT, why);
	v = v ? v : d->output;
	if (!v || snprintf(o->output, sizeof(o->output), "%s", v) >= (int)sizeof(o->output))
		return bad(err, errlen, g->output ? names->output : GP_ENV_OUTPUT, "too long");

	v = g->ranks ? g->ranks : get(GP_ENV_RANKS, arg);
	o->ranks.all = true;
	if (v && gp_ranks_parse(v, &o->ranks, why, sizeof(why)) < 0)
		return bad(err, errlen, g->ranks ? names->ranks : GP_ENV_RANKS, why);

	v = g->capture ? g->capture : get(GP_ENV_CAPTURE, arg);
	if (v) {
		if (gp_opts_check(GP_OPT_CAPTURE, v, why, sizeof(why)) < 0)
			return bad(err, errlen, g->capture ? names->capture : GP_ENV_CAPTURE, why);
		snprintf(o->capture, sizeof(o->capture), "%s", v);
	}
	return 0;
}

int gp_opts_jobdir(const char *tmpl, const gp_tmpl_vars_t *v, const char *base, char *out,
                   size_t len)
{
	char expanded[4096];
	if (gp_tmpl_expand(tmpl, v, expanded, sizeof(expanded)) < 0)
		return -1;
	if (expanded[0] != '/' && !base)
		return errno = EINVAL, -1;
	int n = expanded[0] == '/' ? snprintf(out, len, "%s", expanded)
	                           : snprintf(out, len, "%s/%s", base, expanded);
	return n < 0 || (size_t)n >= len ? (errno = ENAMETOOLONG, -1) : 0;
}

void gp_opts_task_env(const gp_opts_t *o, gp_task_env_t *t, char *buf, size_t len)
{
	memset(t, 0, sizeof(*t));
	gp_modes_format(o->modes, buf, len);
	t->modes = buf;
	t->capture = o->capture[0] ? o->capture : NULL;
}

int gp_task_env_export(const gp_task_env_t *t, gp_setenv_fn set, void *arg)
{
	const struct {
		const char *name, *value;
	} vars[] = {
	    {GP_ENV_MODES, t->modes}, {GP_ENV_JOBDIR, t->jobdir}, {GP_ENV_STEP, t->step},
	    {GP_ENV_RANK, t->rank},   {GP_ENV_SPOOL, t->spool},   {GP_ENV_CAPTURE, t->capture},
	};
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		int rc = vars[i].value ? set(vars[i].name, vars[i].value, arg) : 0;
		if (rc != 0)
			return rc;
	}
	return 0;
}
