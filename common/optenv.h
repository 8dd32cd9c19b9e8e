/* A user's choices for a profiled task, resolved once into the GPUPROF_* environment the
 * agent reads: for the plugin (--gpuprof, --gpuprof-output, --gpuprof-ranks,
 * --gpuprof-capture), `gpuprof run` (--modes, --output, --ranks, --capture) and the
 * agent's own options (--modes, --output, --step, --rank). Each choice is its option when
 * given, else its GPUPROF_* variable, else the default; a bad value is refused naming the
 * option or the variable the user wrote it in. */
#ifndef GP_OPTENV_H
#define GP_OPTENV_H

#include <stdbool.h>
#include <stddef.h>

#include "path.h"
#include "ranks.h"

/* As the user gave them; NULL: not given. */
typedef struct gp_opt_given {
	bool modes_given; /* the modes option was given (NULL or "": the bare default) */
	const char *modes, *output, *ranks, *capture;
} gp_opt_given_t;

/* The names the user knows the four options by, for messages. */
typedef struct gp_opt_names {
	const char *modes, *output, *ranks, *capture;
} gp_opt_names_t;

typedef struct gp_opt_defaults {
	unsigned bare_modes;  /* the modes option without a value */
	unsigned unset_modes; /* neither option nor variable (0: not profiled) */
	const char *output;   /* the job directory's template */
} gp_opt_defaults_t;

typedef struct gp_opts {
	unsigned modes;    /* may hold GP_MODE_HELP or GP_MODE_NONE (modes.h) */
	bool modes_given;  /* from the option, not the variable or the default */
	char output[1100]; /* the job directory's template (checked) */
	bool output_given; /* from the option or the variable, not the default */
	gp_ranks_t ranks;  /* all when none given */
	char capture[260]; /* "": none given */
} gp_opts_t;

typedef const char *(*gp_getenv_fn)(const char *name, void *arg);
typedef int (*gp_setenv_fn)(const char *name, const char *value, void *arg);
/* getenv and setenv(name, value, 1) of this process, as gp_getenv_fn and gp_setenv_fn */
const char *gp_env_process_get(const char *name, void *arg);
int gp_env_process_set(const char *name, const char *value, void *arg);

/* One value's syntax, as gp_opts_resolve checks it (the modes are modes.h's): 0, or -1
 * with why. For a client's option callback, which sees one value at a time. */
typedef enum gp_opt_kind { GP_OPT_OUTPUT, GP_OPT_RANKS, GP_OPT_CAPTURE } gp_opt_kind_t;
int gp_opts_check(gp_opt_kind_t kind, const char *v, char *why, size_t whylen);
/* Resolve the four choices into out: 0, or -1 with "NAME: why" in err (NAME the option's
 * or the variable's) and out unusable. */
int gp_opts_resolve(gp_opts_t *out, const gp_opt_given_t *given, const gp_opt_names_t *names,
                    const gp_opt_defaults_t *dflt, gp_getenv_fn get, void *arg, char *err,
                    size_t errlen);
/* The job directory: tmpl expanded with v, under base when relative. -1: ENAMETOOLONG, or
 * EINVAL (relative, and base NULL). */
int gp_opts_jobdir(const char *tmpl, const gp_tmpl_vars_t *v, const char *base, char *out,
                   size_t len);

/* What a profiled task's environment carries from them; NULL: left as it is. */
typedef struct gp_task_env {
	const char *modes, *jobdir, *step, *rank, *spool, *capture;
} gp_task_env_t;
/* modes (formatted into buf) and capture from o, the rest NULL */
void gp_opts_task_env(const gp_opts_t *o, gp_task_env_t *t, char *buf, size_t len);
/* Set each variable of t that is not NULL through set: 0, or set's first failure. */
int gp_task_env_export(const gp_task_env_t *t, gp_setenv_fn set, void *arg);

#endif
