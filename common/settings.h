/* Every setting of gpuprof in one table: its site key (gpuprof.yaml), its environment
 * variable, type, default and one line of documentation. The YAML loader (siteconf.c),
 * the plugin (what it passes to a task), the agent, the injected library and the CLI read
 * their values and defaults here, and `gpuprof settings` prints the tables of
 * gpuprof.yaml(5), doc/admin.md and doc/environment.md from it (tests/tree checks they
 * agree), so no default is written twice.
 *
 * The variables that only carry state from the plugin to the agent to the injected
 * library (the job directory, the ring, ...) are not settings: common/env.h. */
#ifndef GP_SETTINGS_H
#define GP_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef enum gp_set_type {
	GP_T_BOOL,    /* true/false (yes/no, on/off, 1/0) */
	GP_T_MODES,   /* a mode list (modes.h) */
	GP_T_STR,     /* text */
	GP_T_INT,     /* a whole number in [lo, hi] */
	GP_T_SIZE,    /* bytes, with an optional K, M, G or T suffix (powers of 1024) */
	GP_T_LIST,    /* a YAML list of names (site only) */
	GP_T_MODEMAP, /* a YAML mapping name: modes (site only) */
	GP_T_TEXTMAP, /* a YAML mapping name: text (site only) */
	GP_T_BOOLMAP, /* a YAML mapping name: true/false (site only) */
} gp_set_type_t;

enum {
	GP_SET_TASK = 1, /* the plugin passes the site's value to every profiled task */
	GP_SET_USER = 2, /* a user may set the variable (exported before srun/sbatch) */
};

#define GP_SET_NOCONF ((size_t)-1)

typedef struct gp_setting {
	const char *key; /* in gpuprof.yaml; NULL: environment only */
	const char *env; /* GPUPROF_*; NULL: site only */
	gp_set_type_t type;
	const char *def; /* the default, as text, parsed as a value of the file is */
	long lo, hi;     /* GP_T_INT's bounds, inclusive */
	size_t off;      /* its field in gp_config_t (siteconf.h); GP_SET_NOCONF: none */
	unsigned flags;  /* GP_SET_* */
	const char *doc;
	const char *shown; /* the default as the documentation says it (NULL: def) */
} gp_setting_t;

extern const gp_setting_t gp_settings[];
extern const unsigned gp_nsettings;
#define GP_SETTINGS_MAX 64 /* the table's size at most (a static assertion checks) */

const gp_setting_t *gp_setting_key(const char *key);
const gp_setting_t *gp_setting_env(const char *env);

/* Parse text as a value of s's scalar type into out (bool, unsigned modes, long,
 * long long size; GP_T_STR: nothing to convert). -1 with why set when it is not one. */
int gp_setting_parse(const gp_setting_t *s, const char *text, void *out, char *why, size_t whylen);
int gp_parse_bool(const char *v, bool *out);
int gp_parse_size(const char *v, long long *out);

/* The value in force in this process for the setting of environment variable env: the
 * variable's when it is set and valid, else the table's default. A value that is not
 * valid is said once on stderr. */
bool gp_setting_bool(const char *env);
long long gp_setting_long(const char *env); /* GP_T_INT and GP_T_SIZE */
const char *gp_setting_str(const char *env);
/* The table's default of a site key, parsed (for readers with no file: the report). */
long long gp_setting_default_long(const char *key);

/* The tables for the documentation: which = "site" (gpuprof.yaml's keys) or "env"
 * (the variables); format = "text", "markdown" or "man". */
int gp_settings_print(FILE *f, const char *which, const char *format);

#endif
