/* Site configuration loader on libyaml's event parser (no document tree: the file is
 * small, but events give us line numbers for every error). */
#include "config.h"
#include "siteconf.h"
#include "modes.h"
#include "path.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <stddef.h>
#include <yaml.h>

enum key_type { T_BOOL, T_MODES, T_STR, T_INT, T_SIZE, T_LIST, T_MODEMAP };

#define OFF(f) offsetof(gp_config_t, f)
/* Bounds of the whole-number keys (inclusive). */
static const struct key {
	const char *name;
	enum key_type type;
	size_t off;
	long lo, hi;
} keys[] = {
    {"enabled", T_BOOL, OFF(enabled), 0, 0},
    {"required", T_BOOL, OFF(required), 0, 0},
    {"default_modes", T_MODES, OFF(default_modes), 0, 0},
    {"allowed_modes", T_MODES, OFF(allowed_modes), 0, 0},
    {"partition_modes", T_MODEMAP, OFF(partition_modes), 0, 0},
    {"account_modes", T_MODEMAP, OFF(account_modes), 0, 0},
    {"users_allow", T_LIST, OFF(users_allow), 0, 0},
    {"users_deny", T_LIST, OFF(users_deny), 0, 0},
    {"accounts_allow", T_LIST, OFF(accounts_allow), 0, 0},
    {"accounts_deny", T_LIST, OFF(accounts_deny), 0, 0},
    {"output", T_STR, OFF(output), 0, 0},
    {"spool_dir", T_STR, OFF(spool_dir), 0, 0},
    {"max_bytes_per_rank", T_SIZE, OFF(max_bytes_per_rank), 0, 0},
    {"nvml_hz", T_INT, OFF(nvml_hz), 1, 100},
    {"warmup_steps", T_INT, OFF(warmup_steps), 0, 1000000},
    {"step_range", T_STR, OFF(step_range), 0, 0},
    {"group_readable", T_BOOL, OFF(group_readable), 0, 0},
    {"admin_comment", T_BOOL, OFF(admin_comment), 0, 0},
    {"report_at_end", T_BOOL, OFF(report_at_end), 0, 0},
    {"pytorch", T_BOOL, OFF(pytorch), 0, 0},
    {"torch_history_entries", T_INT, OFF(torch_history_entries), 0, 10000000},
    {"agent_path", T_STR, OFF(agent_path), 0, 0},
    {"inject_path", T_STR, OFF(inject_path), 0, 0},
    {"cli_path", T_STR, OFF(cli_path), 0, 0},
};

static char *xstrdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

void gp_config_defaults(gp_config_t *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->enabled = true;
	cfg->required = false;
	cfg->default_modes = GP_MODE_TIMING | GP_MODE_NVTX | GP_MODE_CUDA | GP_MODE_MEM;
	cfg->allowed_modes = GP_MODES_KNOWN;
	cfg->output = xstrdup("gpuprof-%j");
	cfg->spool_dir = xstrdup("");
	cfg->max_bytes_per_rank = 1LL << 30;
	cfg->nvml_hz = 10;
	cfg->warmup_steps = 3;
	cfg->step_range = xstrdup("");
	cfg->group_readable = false;
	cfg->admin_comment = true;
	cfg->report_at_end = true;
	cfg->pytorch = true;
	cfg->torch_history_entries = 100000;
	cfg->agent_path = xstrdup(GP_AGENT_PATH);
	cfg->inject_path = xstrdup(GP_INJECT_PATH);
	cfg->cli_path = xstrdup(GP_CLI_PATH);
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

void gp_config_free(gp_config_t *cfg)
{
	if (!cfg)
		return;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		void *f = (char *)cfg + keys[i].off;
		if (keys[i].type == T_STR) {
			free(*(char **)f);
			*(char **)f = NULL;
		} else if (keys[i].type == T_LIST)
			list_free(f);
		else if (keys[i].type == T_MODEMAP)
			map_free(f);
	}
}

static int parse_bool(const char *v, bool *out)
{
	static const char *t[] = {"true", "yes", "on", "1"}, *f[] = {"false", "no", "off", "0"};
	for (int i = 0; i < 4; i++) {
		if (!strcasecmp(v, t[i]))
			return *out = true, 0;
		if (!strcasecmp(v, f[i]))
			return *out = false, 0;
	}
	return -1;
}

/* "64M", "1G", "1024" -> bytes; -1 when not a size or past 2^62 (8388608T overflowed) */
static int parse_size(const char *v, long long *out)
{
	char *end;
	errno = 0;
	long long n = strtoll(v, &end, 10);
	if (errno || end == v || n < 0 || *v < '0' || *v > '9')
		return -1;
	int shift = 0;
	switch (*end) {
	case 'K':
	case 'k':
		shift = 10;
		break;
	case 'M':
	case 'm':
		shift = 20;
		break;
	case 'G':
	case 'g':
		shift = 30;
		break;
	case 'T':
	case 't':
		shift = 40;
		break;
	default:
		break;
	}
	if (shift)
		end++;
	if (n > (1LL << 62) >> shift)
		return -1;
	n <<= shift;
	if (*end == 'i' || *end == 'B')
		end += (*end == 'i' && end[1] == 'B') ? 2 : 1;
	if (*end)
		return -1;
	*out = n;
	return 0;
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

static int parse_value(parser_t *ps, gp_config_t *cfg, const struct key *k)
{
	void *f = (char *)cfg + k->off;
	char why[300];
	if (next(ps) < 0)
		return -1;
	if (k->type == T_LIST) {
		gp_strlist_t *l = f;
		list_free(l);
		if (ps->ev.type != YAML_SEQUENCE_START_EVENT)
			return perr(ps, "'%s' must be a list of names", k->name);
		for (;;) {
			if (next(ps) < 0)
				return -1;
			if (ps->ev.type == YAML_SEQUENCE_END_EVENT)
				return 0;
			if (ps->ev.type != YAML_SCALAR_EVENT)
				return perr(ps, "'%s' items must be plain names", k->name);
			if (l->n == GP_CONFIG_MAXLIST)
				return perr(ps, "'%s' has too many items", k->name);
			l->v[l->n++] = strdup(scalar(ps));
		}
	}
	if (k->type == T_MODEMAP) {
		gp_modemap_t *m = f;
		map_free(m);
		if (ps->ev.type != YAML_MAPPING_START_EVENT)
			return perr(ps, "'%s' must be a mapping of name: modes", k->name);
		for (;;) {
			unsigned modes;
			if (next(ps) < 0)
				return -1;
			if (ps->ev.type == YAML_MAPPING_END_EVENT)
				return 0;
			if (ps->ev.type != YAML_SCALAR_EVENT)
				return perr(ps, "'%s' keys must be names", k->name);
			if (m->n == GP_CONFIG_MAXMAP)
				return perr(ps, "'%s' has too many entries", k->name);
			for (unsigned i = 0; i < m->n; i++)
				if (!strcmp(m->key[i], scalar(ps)))
					return perr(ps, "'%s': '%s' is given twice", k->name,
					            scalar(ps));
			m->key[m->n] = strdup(scalar(ps));
			m->n++;
			if (next(ps) < 0)
				return -1;
			if (ps->ev.type != YAML_SCALAR_EVENT ||
			    gp_modes_parse(scalar(ps), &modes, why, sizeof(why)) < 0)
				return perr(ps, "'%s': %s", k->name,
				            ps->ev.type == YAML_SCALAR_EVENT ? why
				                                             : "expected modes");
			m->modes[m->n - 1] = modes;
		}
	}
	if (ps->ev.type != YAML_SCALAR_EVENT)
		return perr(ps, "'%s' must be a single value, not a list or mapping", k->name);
	const char *v = scalar(ps);
	switch (k->type) {
	case T_BOOL:
		if (parse_bool(v, f) < 0)
			return perr(ps, "'%s' must be true or false, not '%s'", k->name, v);
		return 0;
	case T_MODES: {
		unsigned modes = 0;
		if (gp_modes_parse(v, &modes, why, sizeof(why)) < 0 || (modes & GP_MODE_HELP))
			return perr(ps, "'%s': %s", k->name,
			            (modes & GP_MODE_HELP) ? "'help' is not a mode here" : why);
		*(unsigned *)f = modes;
		return 0;
	}
	case T_STR:
		if (gp_text_check(v, 4096, why, sizeof(why)) < 0)
			return perr(ps, "'%s': %s", k->name, why);
		if (k->off == OFF(output) && gp_tmpl_check(v, why, sizeof(why)) < 0)
			return perr(ps, "'%s': %s", k->name, why);
		free(*(char **)f);
		*(char **)f = strdup(v);
		return 0;
	case T_INT: {
		char *end;
		errno = 0;
		long n = strtol(v, &end, 10);
		if (errno || end == v || *end || n < k->lo || n > k->hi)
			return perr(ps, "'%s' must be a whole number from %ld to %ld, not '%s'",
			            k->name, k->lo, k->hi, v);
		*(long *)f = n;
		return 0;
	}
	case T_SIZE:
		if (parse_size(v, f) < 0)
			return perr(
			    ps,
			    "'%s' must be a size such as 512M or 2G (at most 4194304T), not '%s'",
			    k->name, v);
		return 0;
	default:
		return -1;
	}
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
	size_t seen_line[sizeof(keys) / sizeof(keys[0])] = {0};
	for (;;) {
		const struct key *k = NULL;
		if (next(ps) < 0)
			return -1;
		if (ps->ev.type == YAML_MAPPING_END_EVENT)
			break;
		if (ps->ev.type != YAML_SCALAR_EVENT)
			return perr(ps, "expected a key");
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			if (!strcmp(keys[i].name, scalar(ps)))
				k = &keys[i];
		if (!k)
			return perr(ps, "unknown key '%s'%s", scalar(ps), "");
		if (seen_line[k - keys])
			return perr(ps, "'%s' is given twice (first on line %zu)", k->name,
			            seen_line[k - keys]);
		seen_line[k - keys] = ps->ev.start_mark.line + 1;
		if (parse_value(ps, cfg, k) < 0)
			return -1;
	}
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

	gp_config_defaults(cfg);
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
	return n;
}
