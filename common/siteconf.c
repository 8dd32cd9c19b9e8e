/* Site configuration loader on libyaml's event parser (no document tree: the file is
 * small, but events give us line numbers for every error). */
#include "config.h"
#include "siteconf.h"
#include "modes.h"
#include "path.h"
#include "settings.h"
#include "sitedir.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <stddef.h>
#include <yaml.h>

#define OFF(f) offsetof(gp_config_t, f)
/* the site keys: settings.h's table, where a key is given */
#define FOREACH_KEY(k)                                                                             \
	for (const gp_setting_t *k = gp_settings; k < gp_settings + gp_nsettings; k++)             \
		if (k->key && k->off != GP_SET_NOCONF)

void gp_config_defaults(gp_config_t *cfg)
{
	char why[256];
	memset(cfg, 0, sizeof(*cfg));
	FOREACH_KEY(k)
	{
		void *f = (char *)cfg + k->off;
		if (k->type == GP_T_STR)
			*(char **)f = strdup(k->def);
		else if (k->type != GP_T_LIST && k->type != GP_T_MODEMAP &&
		         k->type != GP_T_TEXTMAP && k->type != GP_T_BOOLMAP)
			gp_setting_parse(k, k->def, f, why, sizeof(why)); /* t_siteconf checks */
	}
}

static void list_free(gp_strlist_t *l)
{
	for (unsigned i = 0; i < l->n; i++)
		free(l->v[i]);
	l->n = 0;
}

static void map_free(gp_modemap_t *m)
{
	for (unsigned i = 0; i < m->n; i++)
		free(m->key[i]);
	m->n = 0;
}

static void textmap_free(gp_textmap_t *m)
{
	for (unsigned i = 0; i < m->n; i++) {
		free(m->key[i]);
		free(m->text[i]);
	}
	m->n = 0;
}

void gp_config_free(gp_config_t *cfg)
{
	if (!cfg)
		return;
	FOREACH_KEY(k)
	{
		void *f = (char *)cfg + k->off;
		if (k->type == GP_T_STR) {
			free(*(char **)f);
			*(char **)f = NULL;
		} else if (k->type == GP_T_LIST)
			list_free(f);
		else if (k->type == GP_T_MODEMAP || k->type == GP_T_BOOLMAP)
			map_free(f);
		else if (k->type == GP_T_TEXTMAP)
			textmap_free(f);
	}
}

typedef struct parser {
	yaml_parser_t p;
	yaml_event_t ev;
	const char *path;
	char *err;
	size_t errlen;
} parser_t;

static int perr(parser_t *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int perr(parser_t *ps, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(ps->err, ps->errlen, "%s:%zu: %s", ps->path, ps->ev.start_mark.line + 1, msg);
	return -1;
}

static int next(parser_t *ps)
{
	yaml_event_delete(&ps->ev);
	if (!yaml_parser_parse(&ps->p, &ps->ev)) {
		snprintf(ps->err, ps->errlen, "%s:%zu: YAML syntax error: %s", ps->path,
		         ps->p.problem_mark.line + 1, ps->p.problem ? ps->p.problem : "?");
		/* leave a harmless event so later deletes are safe */
		memset(&ps->ev, 0, sizeof(ps->ev));
		return -1;
	}
	return 0;
}

static const char *scalar(parser_t *ps)
{
	return (const char *)ps->ev.data.scalar.value;
}

/* name: text, each text one line of printable text (it is printed to admins' terminals
 * and into HTML, escaped there) */
static int parse_textmap(parser_t *ps, gp_textmap_t *m, const gp_setting_t *k)
{
	char why[300];
	textmap_free(m);
	if (ps->ev.type != YAML_MAPPING_START_EVENT)
		return perr(ps, "'%s' must be a mapping of id: text", k->key);
	for (;;) {
		if (next(ps) < 0)
			return -1;
		if (ps->ev.type == YAML_MAPPING_END_EVENT)
			return 0;
		if (ps->ev.type != YAML_SCALAR_EVENT)
			return perr(ps, "'%s' keys must be finding ids", k->key);
		if (m->n == GP_CONFIG_MAXMAP)
			return perr(ps, "'%s' has too many entries", k->key);
		for (unsigned i = 0; i < m->n; i++)
			if (!strcmp(m->key[i], scalar(ps)))
				return perr(ps, "'%s': '%s' is given twice", k->key, scalar(ps));
		char *key = strdup(scalar(ps));
		if (next(ps) < 0 || ps->ev.type != YAML_SCALAR_EVENT) {
			free(key);
			return ps->ev.type == YAML_SCALAR_EVENT
			           ? -1
			           : perr(ps, "'%s': expected text", k->key);
		}
		if (gp_text_check(scalar(ps), 1024, why, sizeof(why)) < 0) {
			free(key);
			return perr(ps, "'%s': %s", k->key, why);
		}
		m->key[m->n] = key;
		m->text[m->n++] = strdup(scalar(ps));
	}
}

const char *gp_config_note(const gp_config_t *cfg, const char *id)
{
	for (unsigned i = 0; i < cfg->finding_notes.n; i++)
		if (!strcmp(cfg->finding_notes.key[i], id))
			return cfg->finding_notes.text[i];
	return NULL;
}

static int parse_value(parser_t *ps, gp_config_t *cfg, const gp_setting_t *k)
{
	void *f = (char *)cfg + k->off;
	char why[300];
	if (next(ps) < 0)
		return -1;
	if (k->type == GP_T_LIST) {
		gp_strlist_t *l = f;
		list_free(l);
		if (ps->ev.type != YAML_SEQUENCE_START_EVENT)
			return perr(ps, "'%s' must be a list of names", k->key);
		for (;;) {
			if (next(ps) < 0)
				return -1;
			if (ps->ev.type == YAML_SEQUENCE_END_EVENT)
				return 0;
			if (ps->ev.type != YAML_SCALAR_EVENT)
				return perr(ps, "'%s' items must be plain names", k->key);
			if (l->n == GP_CONFIG_MAXLIST)
				return perr(ps, "'%s' has too many items", k->key);
			l->v[l->n++] = strdup(scalar(ps));
		}
	}
	if (k->type == GP_T_TEXTMAP)
		return parse_textmap(ps, f, k);
	if (k->type == GP_T_MODEMAP || k->type == GP_T_BOOLMAP) {
		gp_modemap_t *m = f;
		bool bools = k->type == GP_T_BOOLMAP;
		map_free(m);
		if (ps->ev.type != YAML_MAPPING_START_EVENT)
			return perr(ps, "'%s' must be a mapping of name: %s", k->key,
			            bools ? "true or false" : "modes");
		for (;;) {
			unsigned modes;
			if (next(ps) < 0)
				return -1;
			if (ps->ev.type == YAML_MAPPING_END_EVENT)
				return 0;
			if (ps->ev.type != YAML_SCALAR_EVENT)
				return perr(ps, "'%s' keys must be names", k->key);
			if (m->n == GP_CONFIG_MAXMAP)
				return perr(ps, "'%s' has too many entries", k->key);
			for (unsigned i = 0; i < m->n; i++)
				if (!strcmp(m->key[i], scalar(ps)))
					return perr(ps, "'%s': '%s' is given twice", k->key,
					            scalar(ps));
			m->key[m->n] = strdup(scalar(ps));
			m->n++;
			if (next(ps) < 0)
				return -1;
			if (bools) {
				bool b;
				if (ps->ev.type != YAML_SCALAR_EVENT ||
				    gp_parse_bool(scalar(ps), &b))
					return perr(ps, "'%s': '%s' must be true or false", k->key,
					            m->key[m->n - 1]);
				m->modes[m->n - 1] = b;
				continue;
			}
			if (ps->ev.type != YAML_SCALAR_EVENT ||
			    gp_modes_parse(scalar(ps), &modes, why, sizeof(why)) < 0)
				return perr(ps, "'%s': %s", k->key,
				            ps->ev.type == YAML_SCALAR_EVENT ? why
				                                             : "expected modes");
			m->modes[m->n - 1] = modes;
		}
	}
	if (ps->ev.type != YAML_SCALAR_EVENT)
		return perr(ps, "'%s' must be a single value, not a list or mapping", k->key);
	const char *v = scalar(ps);
	if (gp_setting_parse(k, v, f, why, sizeof(why)) < 0)
		return perr(ps, "%s", why);
	if (k->type != GP_T_STR)
		return 0;
	if (gp_text_check(v, 4096, why, sizeof(why)) < 0)
		return perr(ps, "'%s': %s", k->key, why);
	if (k->off == OFF(output) && gp_tmpl_check(v, why, sizeof(why)) < 0)
		return perr(ps, "'%s': %s", k->key, why);
	if (k->off == OFF(site_output) && *v && gp_site_tmpl_check(v, why, sizeof(why)) < 0)
		return perr(ps, "'%s': %s", k->key, why);
	if (k->off == OFF(site_group) && *v && !gp_site_group_name_ok(v))
		return perr(ps, "'%s': '%s' is not a group name", k->key, v);
	/* empty: the default spool (spool.h: gp_spool_root) */
	if (k->off == OFF(spool_dir) && *v &&
	    gp_tmpl_check_kind(v, GP_TMPL_NODE, why, sizeof(why)) < 0)
		return perr(ps, "'%s': %s", k->key, why);
	free(*(char **)f);
	*(char **)f = strdup(v);
	return 0;
}

/* Keys that hold only together: a job the site profiles without its asking needs a
 * place of the site's (never the submit directory unasked). */
static int site_keys_check(parser_t *ps, gp_config_t *cfg, const size_t *seen_line)
{
	if (!gp_config_profile_any(cfg) || *cfg->site_output)
		return 0;
	const char *name = "profile_all_accounts";
	if (cfg->profile_all_jobs)
		name = "profile_all_jobs";
	else
		for (unsigned i = 0; i < cfg->profile_all_partitions.n; i++)
			if (cfg->profile_all_partitions.modes[i])
				name = "profile_all_partitions";
	const gp_setting_t *k = gp_setting_key(name);
	snprintf(ps->err, ps->errlen,
	         "%s:%zu: '%s' needs 'site_output' (a job that did not ask is written under the "
	         "site's directory, never into its submit directory)",
	         ps->path, seen_line[k - gp_settings], k->key);
	return -1;
}

static int parse_doc(parser_t *ps, gp_config_t *cfg)
{
	/* stream start, [document start, mapping start] */
	do {
		if (next(ps) < 0)
			return -1;
	} while (ps->ev.type == YAML_STREAM_START_EVENT ||
	         ps->ev.type == YAML_DOCUMENT_START_EVENT);
	if (ps->ev.type == YAML_STREAM_END_EVENT || ps->ev.type == YAML_DOCUMENT_END_EVENT)
		return 0; /* empty file: defaults */
	if (ps->ev.type == YAML_SCALAR_EVENT && ps->ev.data.scalar.length == 0)
		return 0;
	if (ps->ev.type != YAML_MAPPING_START_EVENT)
		return perr(ps, "the top level must be a mapping of key: value");
	/* a key given twice is an error, never last-wins: "users_deny: [alice]" followed
	 * by "users_deny: [bob]" would let alice in */
	size_t seen_line[GP_SETTINGS_MAX] = {0};
	for (;;) {
		const gp_setting_t *k;
		if (next(ps) < 0)
			return -1;
		if (ps->ev.type == YAML_MAPPING_END_EVENT)
			break;
		if (ps->ev.type != YAML_SCALAR_EVENT)
			return perr(ps, "expected a key");
		k = gp_setting_key(scalar(ps));
		if (!k || k->off == GP_SET_NOCONF)
			return perr(ps, "unknown key '%s'%s", scalar(ps), "");
		if (seen_line[k - gp_settings])
			return perr(ps, "'%s' is given twice (first on line %zu)", k->key,
			            seen_line[k - gp_settings]);
		seen_line[k - gp_settings] = ps->ev.start_mark.line + 1;
		if (parse_value(ps, cfg, k) < 0)
			return -1;
	}
	if (site_keys_check(ps, cfg, seen_line) < 0)
		return -1;
	if (next(ps) < 0)
		return -1;
	if (ps->ev.type == YAML_DOCUMENT_END_EVENT && next(ps) < 0)
		return -1;
	if (ps->ev.type != YAML_STREAM_END_EVENT)
		return perr(ps, "only one YAML document is allowed");
	return 0;
}

int gp_config_load(gp_config_t *cfg, const char *path, bool missing_ok, char *err, size_t errlen)
{
	parser_t ps;
	int rc = -1;
	FILE *fp = fopen(path, "re");
	int open_errno = errno;

	gp_config_defaults(cfg);
	errno = open_errno;
	if (!fp) {
		if (errno == ENOENT && missing_ok)
			return 0;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	memset(&ps, 0, sizeof(ps));
	ps.path = path;
	ps.err = err;
	ps.errlen = errlen;
	if (!yaml_parser_initialize(&ps.p)) {
		snprintf(err, errlen, "%s: cannot initialise YAML parser", path);
		fclose(fp);
		return -1;
	}
	yaml_parser_set_input_file(&ps.p, fp);
	rc = parse_doc(&ps, cfg);
	yaml_event_delete(&ps.ev);
	yaml_parser_delete(&ps.p);
	fclose(fp);
	if (rc < 0) {
		gp_config_free(cfg);
		gp_config_defaults(cfg);
	}
	return rc;
}

int gp_config_env_text(const gp_config_t *cfg, const gp_setting_t *s, char *buf, size_t len)
{
	const void *f = (const char *)cfg + s->off;
	switch (s->type) {
	case GP_T_BOOL:
		return snprintf(buf, len, "%d", *(const bool *)f) < 0 ? -1 : 0;
	case GP_T_INT:
		return snprintf(buf, len, "%ld", *(const long *)f) < 0 ? -1 : 0;
	case GP_T_SIZE:
		return snprintf(buf, len, "%lld", *(const long long *)f) < 0 ? -1 : 0;
	case GP_T_MODES:
		return gp_modes_format(*(const unsigned *)f, buf, len) < 0 ? -1 : 0;
	case GP_T_STR:
		return snprintf(buf, len, "%s", *(char *const *)f) >= (int)len ? -1 : 0;
	default:
		return -1;
	}
}

static bool in_list(const gp_strlist_t *l, const char *name)
{
	for (unsigned i = 0; name && i < l->n; i++)
		if (!strcmp(l->v[i], name) || !strcmp(l->v[i], "*"))
			return true;
	return false;
}

static unsigned map_lookup(const gp_modemap_t *m, const char *key)
{
	for (unsigned i = 0; key && i < m->n; i++)
		if (!strcmp(m->key[i], key))
			return m->modes[i];
	return GP_MODES_KNOWN;
}

unsigned gp_config_allowed(const gp_config_t *cfg, const char *partition, const char *account)
{
	unsigned m = cfg->allowed_modes & GP_MODES_KNOWN;
	m &= map_lookup(&cfg->partition_modes, partition) | GP_MODE_TIMING;
	m &= map_lookup(&cfg->account_modes, account) | GP_MODE_TIMING;
	return m | GP_MODE_TIMING;
}

static int map_bool(const gp_modemap_t *m, const char *key)
{
	for (unsigned i = 0; key && i < m->n; i++)
		if (!strcmp(m->key[i], key))
			return (int)m->modes[i];
	return -1;
}

bool gp_config_profile_all(const gp_config_t *cfg, const char *partition, const char *account)
{
	int byp = map_bool(&cfg->profile_all_partitions, partition);
	int bya = map_bool(&cfg->profile_all_accounts, account);
	if (byp == 0 || bya == 0)
		return false;
	return byp == 1 || bya == 1 || cfg->profile_all_jobs;
}

bool gp_config_profile_any(const gp_config_t *cfg)
{
	const gp_modemap_t *maps[] = {&cfg->profile_all_partitions, &cfg->profile_all_accounts};
	if (cfg->profile_all_jobs)
		return true;
	for (unsigned k = 0; k < 2; k++)
		for (unsigned i = 0; i < maps[k]->n; i++)
			if (maps[k]->modes[i])
				return true;
	return false;
}

bool gp_config_admits(const gp_config_t *cfg, const char *user, const char *account,
                      const char **reason)
{
	if (!cfg->enabled)
		return *reason = "gpuprof is disabled on this cluster", false;
	if (in_list(&cfg->users_deny, user))
		return *reason = "user is in users_deny", false;
	if (account && in_list(&cfg->accounts_deny, account))
		return *reason = "account is in accounts_deny", false;
	if (cfg->users_allow.n && !in_list(&cfg->users_allow, user))
		return *reason = "user is not in users_allow", false;
	if (cfg->accounts_allow.n && account && !in_list(&cfg->accounts_allow, account))
		return *reason = "account is not in accounts_allow", false;
	return true;
}

int gp_config_describe(const gp_config_t *cfg, char *buf, size_t len)
{
	char def[128], allow[128];
	gp_modes_format(cfg->default_modes, def, sizeof(def));
	gp_modes_format(cfg->allowed_modes, allow, sizeof(allow));
	int n = snprintf(buf, len,
	                 "site policy: enabled=%s required=%s default_modes=%s allowed_modes=%s\n"
	                 "             output=%s max_bytes_per_rank=%lld warmup_steps=%ld%s\n",
	                 cfg->enabled ? "yes" : "no", cfg->required ? "yes" : "no", def, allow,
	                 cfg->output, cfg->max_bytes_per_rank, cfg->warmup_steps,
	                 (cfg->partition_modes.n || cfg->account_modes.n)
	                     ? " (narrowed per partition/account)"
	                     : "");
	if (n >= 0 && (size_t)n < len && gp_config_profile_any(cfg))
		n += snprintf(
		    buf + n, len - (size_t)n, "             every GPU job profiled%s into %s%s\n",
		    cfg->profile_all_jobs ? "" : " (in some partitions/accounts)", cfg->site_output,
		    cfg->profile_all_opt_out ? " (--gpuprof=none opts out)" : " (no opting out)");
	return n;
}
