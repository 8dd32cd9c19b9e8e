/* The findings engine (findings.h): runs every rule over the job's ranks and makes the list
 * of findings. For each rule it chooses where it fires (the rank where it is worst, or every
 * rank for how each ended), sizes a time finding once (gpuprof's own tracing taken out, the
 * saving held to the time it is made of and to the step), then marks the effects a cause
 * explains, orders the list in tiers (how the job ended, time by saving, memory by share of
 * the peak), keeps the causes of one rank from saving more than its step, lists each
 * effect under its cause with no saving of its own, and prints the rules for a person and
 * for doc/report.md. The rules live in rules_*.c, their order in rules.c, what they share in
 * rulekit.c. */
#include "config.h"
#include "findings.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the engine ---- */

static bool sized_time(const gp_rule_t *rule)
{
	return rule->tier == GP_F_TIME && rule->sized;
}

/* A time saving, once for every rule: gpuprof's tracing out, never more than the time it
 * is made of (bound_ms) nor than the step; true where its share of the step reaches the
 * rule's threshold. */
static bool time_saving(const gp_rule_t *rule, gp_size_t *s)
{
	double tr = s->tracer_ms > 0 ? (s->tracer_ms < s->ms ? s->tracer_ms : s->ms) : 0;
	double net = s->ms - tr;
	double bound = s->step_ms > 0 ? s->step_ms : 0;
	if (s->bound_ms >= 0 && s->bound_ms < bound)
		bound = s->bound_ms;
	s->bounded = net > bound;
	s->saving_ms = s->bounded ? bound : net;
	s->saving_pct = s->step_ms > 0 ? 100 * s->saving_ms / s->step_ms : 0;
	return rule->saving_th < 0 || s->saving_pct >= rule->th[rule->saving_th].value;
}

/* rule on rank i: false where it does not fire; s sized */
static bool measure(const gp_rule_ctx_t *c, const gp_rule_t *rule, unsigned i, gp_size_t *s)
{
	memset(s, 0, sizeof(*s));
	s->bound_ms = -1;
	s->tracer_how = "";
	gp_rule_ctx_t rc = *c;
	rc.rule = rule;
	if (!rule->size(&rc, &c->job->ranks[i], i, s))
		return false;
	if (!sized_time(rule))
		return true;
	return time_saving(rule, s) && (s->rank_by = s->saving_ms) > 0;
}

static void emit(gp_rule_ctx_t *c, const gp_rule_t *rule, const gp_rank_t *r, const gp_size_t *s)
{
	gp_finding_t *f = gp_rule_add(c, rule, r);
	if (!f)
		return;
	if (sized_time(rule)) {
		f->saving_ms = s->saving_ms;
		f->saving_pct = s->saving_pct;
		f->score = s->saving_pct / 100;
	} else {
		f->saving_bytes = s->bytes;
		f->score = s->score;
	}
	rule->describe(c, f, r, s);
	if (s->bounded)
		gp_cat(f->evidence, sizeof(f->evidence),
		       "; the saving is held to the %s (%.2f ms per step)",
		       s->bound_ms >= 0 && s->bound_ms < s->step_ms
		           ? "step's idle time: the mean step less its GPU busy share"
		           : "step",
		       s->saving_ms);
}

/* Where each rule is worst: its largest saving (else rank_by; the first among equals), on
 * how many ranks it fired, and its job-wide figures (prepare). */
struct worst {
	gp_size_t best;
	const gp_rank_t *w;
	unsigned fired;
	void *state;
	bool off; /* its prepare failed (no memory): it does not run */
};

/* Every rule that picks its worst rank, over the ranks once, rank by rank: a rank's
 * figures are read while they are in the cache (a rank is 16 KiB; rule by rule, 100 000
 * ranks took 21 passes through 1.6 GB). */
static void find_worst(gp_rule_ctx_t *c, struct worst *wr)
{
	gp_size_t s;
	for (unsigned k = 0; k < gp_nrules; k++) {
		const gp_rule_t *rule = gp_rules[k];
		if (rule->select != GP_SELECT_WORST)
			continue;
		wr[k].state = rule->prepare ? rule->prepare(c->job) : NULL;
		wr[k].off = rule->prepare && !wr[k].state;
	}
	for (unsigned i = 0; i < c->job->nranks; i++)
		for (unsigned k = 0; k < gp_nrules; k++) {
			if (gp_rules[k]->select != GP_SELECT_WORST || wr[k].off)
				continue;
			c->state = wr[k].state;
			if (!measure(c, gp_rules[k], i, &s))
				continue;
			wr[k].fired++;
			if (!wr[k].w || s.rank_by > wr[k].best.rank_by)
				wr[k].best = s, wr[k].w = &c->job->ranks[i];
		}
	c->state = NULL;
}

/* Rules that judge every rank (how each ended) run rank by rank, a rank's findings
 * together; then their findings of their own (launchers). */
static void run_each(gp_rule_ctx_t *c, const gp_rule_t *const *group, unsigned n)
{
	gp_size_t s;
	for (unsigned i = 0; i < c->job->nranks; i++)
		for (unsigned k = 0; k < n; k++)
			if (measure(c, group[k], i, &s)) {
				s.nfired = 1;
				emit(c, group[k], &c->job->ranks[i], &s);
			}
	for (unsigned k = 0; k < n; k++)
		if (group[k]->job_findings)
			group[k]->job_findings(c);
}

static bool listed(const gp_rule_t *const *list, const gp_rule_t *rule)
{
	for (; list && *list; list++)
		if (*list == rule)
			return true;
	return false;
}

/* A cause explains time findings of the rules it names: on other ranks they are its
 * effects, on its own rank its own time told under it. */
static void mark_effects(gp_job_t *job)
{
	for (unsigned i = 0; i < job->nf; i++) {
		const gp_rule_t *rule = job->f[i].rule;
		int rank = job->f[i].rank;
		char id[sizeof(job->f[i].id)]; /* a copy: the effects are written beside it */
		if (!rule || (!rule->explains && !rule->explains_own))
			continue;
		memcpy(id, job->f[i].id, sizeof(id));
		for (unsigned k = 0; k < job->nf; k++) {
			gp_finding_t *f = &job->f[k];
			if (k == i || f->kind != GP_F_TIME || f->effect_of[0])
				continue;
			if (f->rank != rank && listed(rule->explains, f->rule))
				snprintf(f->effect_of, sizeof(f->effect_of), "%s", id);
			else if (f->rank == rank && listed(rule->explains_own, f->rule))
				snprintf(f->effect_of, sizeof(f->effect_of), "%s:self", id);
		}
	}
}

/* tiers in order; a cause that explains others leads its tier; then by score */
static int cmp_f(const gp_finding_t *x, const gp_finding_t *y)
{
	if (x->kind != y->kind)
		return x->kind - y->kind;
	bool ex = x->rule && x->rule->explains, ey = y->rule && y->rule->explains;
	if (ex != ey)
		return ex ? -1 : 1;
	return x->score > y->score ? -1 : x->score < y->score;
}

/* stable: equal findings keep the order the rules made them in (24 at most) */
static void sort_findings(gp_job_t *job)
{
	for (unsigned i = 1; i < job->nf; i++) {
		gp_finding_t t = job->f[i];
		unsigned k = i;
		for (; k > 0 && cmp_f(&job->f[k - 1], &t) > 0; k--)
			job->f[k] = job->f[k - 1];
		job->f[k] = t;
	}
}

/* The causes' savings on one rank never add past its step: each, in order, saves at most
 * what the ones before it left (they overlap: the same idle time seen twice). A sized cause
 * left with nothing to save is no finding. */
static void cap_savings(gp_job_t *job)
{
	for (unsigned i = 0; i < job->nf; i++) {
		gp_finding_t *f = &job->f[i];
		if (f->kind != GP_F_TIME || f->effect_of[0] || f->saving_pct <= 0)
			continue;
		double used = 0;
		for (unsigned k = 0; k < i; k++) {
			const gp_finding_t *g = &job->f[k];
			if (g->kind == GP_F_TIME && !g->effect_of[0] && g->rank == f->rank)
				used += g->saving_pct;
		}
		double left = used < 100 ? 100 - used : 0;
		if (f->saving_pct <= left)
			continue;
		f->saving_ms *= left / f->saving_pct;
		f->saving_pct = left;
		f->score = left / 100;
		gp_cat(f->evidence, sizeof(f->evidence),
		       "; the saving is what the findings above leave of the step (they share its "
		       "time)");
	}
	unsigned n = 0;
	for (unsigned i = 0; i < job->nf; i++) {
		const gp_finding_t *f = &job->f[i];
		if (!(f->kind == GP_F_TIME && !f->effect_of[0] && f->rule && f->rule->sized &&
		      f->saving_pct <= 0))
			job->f[n++] = *f;
	}
	job->nf = n;
}

/* Each effect right after its cause (its own time first, then the other ranks'), with no
 * saving of its own: what it would save is its cause's. */
static void place_effects(gp_job_t *job)
{
	gp_finding_t out[sizeof(job->f) / sizeof(job->f[0])];
	unsigned n = 0;
	char own[40];
	for (unsigned i = 0; i < job->nf; i++) {
		if (job->f[i].effect_of[0])
			continue;
		out[n++] = job->f[i];
		snprintf(own, sizeof(own), "%s:self", job->f[i].id);
		for (unsigned pass = 0; pass < 2; pass++)
			for (unsigned j = 0; j < job->nf; j++)
				if (!strcmp(job->f[j].effect_of, pass ? job->f[i].id : own))
					out[n++] = job->f[j];
	}
	for (unsigned i = 0; i < n; i++)
		if (out[i].effect_of[0])
			out[i].saving_ms = out[i].saving_pct = out[i].saving_bytes = out[i].score =
			    0;
	memcpy(job->f, out, n * sizeof(gp_finding_t));
	job->nf = n;
}

void gp_job_findings(gp_job_t *job)
{
	gp_rule_ctx_t c = {.job = job};
	struct worst wr[gp_nrules];
	memset(wr, 0, sizeof(wr));
	find_worst(&c, wr);
	/* the findings in the rules' order */
	for (unsigned i = 0; i < gp_nrules;) {
		const gp_rule_t *rule = gp_rules[i];
		if (rule->select == GP_SELECT_EACH) {
			unsigned n = 1;
			while (i + n < gp_nrules && gp_rules[i + n]->select == GP_SELECT_EACH)
				n++;
			run_each(&c, &gp_rules[i], n);
			i += n;
			continue;
		}
		if (wr[i].w) {
			c.state = wr[i].state;
			wr[i].best.nfired = wr[i].fired;
			emit(&c, rule, wr[i].w, &wr[i].best);
		}
		if (rule->release)
			rule->release(wr[i].state);
		c.state = NULL;
		i++;
	}
	mark_effects(job);
	sort_findings(job);
	cap_savings(job);
	place_effects(job);
	gp_job_accounting(job);
}

const char *gp_finding_advice(const char *id)
{
	const gp_rule_t *rule = gp_rule_by_id(id);
	return rule ? rule->advice : NULL;
}

const char *gp_finding_relation(const gp_job_t *job, const gp_finding_t *f, char *buf, size_t len)
{
	if (!f->effect_of[0])
		return "";
	const char *self = strstr(f->effect_of, ":self");
	if (self && !self[5]) {
		char id[32];
		snprintf(id, sizeof(id), "%.*s", (int)(self - f->effect_of), f->effect_of);
		const gp_rule_t *cause = gp_rule_by_id(id);
		return cause && cause->own_words ? cause->own_words : "the cause's own time";
	}
	for (unsigned i = 0; i < job->nf; i++)
		if (!strcmp(job->f[i].id, f->effect_of)) {
			snprintf(buf, len, "an effect of finding %u", i + 1);
			return buf;
		}
	return "an effect of the finding above";
}

/* ---- the rules for a person and for doc/report.md ---- */

/* a threshold's value and unit as the docs write them: "50 %", "10 us", "1024 B" */
static void th_text(const gp_threshold_t *t, char *buf, size_t len)
{
	snprintf(buf, len, "%g %s", t->value, t->unit);
}

int gp_rule_text(const gp_rule_t *rule, const char *text, char *buf, size_t len)
{
	int rc = 0;
	buf[0] = 0;
	for (const char *p = text; p && *p;) {
		const char *open = strchr(p, '{'), *close = open ? strchr(open, '}') : NULL;
		if (!open || !close) {
			gp_cat(buf, len, "%s", p);
			break;
		}
		gp_cat(buf, len, "%.*s", (int)(open - p), p);
		unsigned k = 0;
		while (k < rule->nth && (strlen(rule->th[k].name) != (size_t)(close - open - 1) ||
		                         strncmp(rule->th[k].name, open + 1, close - open - 1)))
			k++;
		char v[64] = "?";
		if (k < rule->nth)
			th_text(&rule->th[k], v, sizeof(v));
		else
			rc = -1;
		gp_cat(buf, len, "%s", v);
		p = close + 1;
	}
	return rc;
}

/* "time", "time (not sized)", "time (data quality)", "outcome", ... */
static const char *kind_words(const gp_rule_t *rule, char *buf, size_t len)
{
	static const char *const tier[] = {"outcome", "time", "memory"};
	snprintf(buf, len, "%s%s", tier[rule->tier],
	         rule->role == GP_ROLE_QUALITY             ? " (data quality)"
	         : rule->tier == GP_F_TIME && !rule->sized ? " (not sized)"
	                                                   : "");
	return buf;
}

/* text at most 100 columns wide: prefix on the first line, as many spaces on the others */
static void wrapped(FILE *out, const char *prefix, const char *text)
{
	enum { WIDTH = 100 };
	size_t indent = strlen(prefix), col = indent;
	fputs(prefix, out);
	for (const char *p = text; *p;) {
		while (*p == ' ')
			p++;
		size_t n = strcspn(p, " ");
		if (!n)
			break;
		if (col > indent && col + 1 + n > WIDTH) {
			fprintf(out, "\n%*s", (int)indent, "");
			col = indent;
		}
		fprintf(out, "%s%.*s", col > indent ? " " : "", (int)n, p);
		col += (col > indent) + n;
		p += n;
	}
	fputc('\n', out);
}

static void print_explains(FILE *out, const gp_rule_t *rule)
{
	char buf[512] = "";
	if (!rule->explains && !rule->explains_own)
		return;
	for (const gp_rule_t *const *e = rule->explains; e && *e; e++)
		gp_cat(buf, sizeof(buf), "%s%s", e == rule->explains ? "" : ", ", (*e)->id);
	gp_cat(buf, sizeof(buf), " on other ranks (its effects); ");
	for (const gp_rule_t *const *e = rule->explains_own; e && *e; e++)
		gp_cat(buf, sizeof(buf), "%s%s", e == rule->explains_own ? "" : ", ", (*e)->id);
	gp_cat(buf, sizeof(buf), " on its own rank (%s)",
	       rule->own_words ? rule->own_words : "its own time");
	wrapped(out, "  explains:   ", buf);
}

static void print_text(FILE *out, const gp_rule_t *rule)
{
	char kind[64], text[2048], head[160];
	fprintf(out, "%s: %s [%s]\n", rule->id, rule->name, kind_words(rule, kind, sizeof(kind)));
	gp_rule_text(rule, rule->fires, text, sizeof(text));
	wrapped(out, "  fires when: ", text);
	gp_rule_text(rule, rule->saves, text, sizeof(text));
	wrapped(out, "  saves:      ", text);
	for (unsigned k = 0; k < rule->nth; k++) {
		char v[64];
		th_text(&rule->th[k], v, sizeof(v));
		snprintf(head, sizeof(head), "  %-20s %-14s ", rule->th[k].name, v);
		wrapped(out, head, rule->th[k].doc);
	}
	print_explains(out, rule);
}

static void print_markdown(FILE *out, const gp_rule_t *only)
{
	char kind[64], fires[2048], saves[1024], v[64];
	fprintf(out, "| id | kind | fires when | saving |\n|---|---|---|---|\n");
	for (unsigned i = 0; i < gp_nrules; i++) {
		const gp_rule_t *rule = gp_rules[i];
		if (only && rule != only)
			continue;
		gp_rule_text(rule, rule->fires, fires, sizeof(fires));
		gp_rule_text(rule, rule->saves, saves, sizeof(saves));
		fprintf(out, "| %s | %s | %s | %s |\n", rule->id,
		        kind_words(rule, kind, sizeof(kind)), fires, saves);
	}
	fprintf(out, "\nEach threshold by name (`gpuprof findings RULE` prints one rule's):\n\n"
	             "| rule | threshold | value | what |\n|---|---|---|---|\n");
	for (unsigned i = 0; i < gp_nrules; i++)
		for (unsigned k = 0; k < gp_rules[i]->nth; k++) {
			if (only && gp_rules[i] != only)
				continue;
			th_text(&gp_rules[i]->th[k], v, sizeof(v));
			fprintf(out, "| %s | `%s` | %s | %s |\n", gp_rules[i]->id,
			        gp_rules[i]->th[k].name, v, gp_rules[i]->th[k].doc);
		}
}

void gp_rules_print(FILE *out, const gp_rule_t *only, bool markdown)
{
	if (markdown) {
		print_markdown(out, only);
		return;
	}
	for (unsigned i = 0, n = 0; i < gp_nrules; i++)
		if (!only || gp_rules[i] == only) {
			fputs(n++ ? "\n" : "", out);
			print_text(out, gp_rules[i]);
		}
}
