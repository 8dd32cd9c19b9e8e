/* gpuprof ledger's formats (ledger.h): text for a terminal, JSON, CSV for a spreadsheet,
 * one HTML file, and the Prometheus/OpenMetrics text exposition that node_exporter's
 * textfile collector serves (a site's Grafana plots it; no server of ours). Each writes
 * the same sums; JSON and OpenMetrics in seconds, the others in GPU-hours. */
#include "config.h"
#include "json.h"
#include "ledger.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#define H(s) ((s) / 3600.0)

static double pct(double a, double b)
{
	return b > 0 ? 100.0 * a / b : 0;
}

/* The group's i-th value (its key's '\x1f'-separated parts) into buf */
static const char *key_part(const char *key, unsigned i, char *buf, size_t len)
{
	for (; i && key; i--) {
		key = strchr(key, '\x1f');
		key = key ? key + 1 : NULL;
	}
	size_t n = key ? strcspn(key, "\x1f") : 0;
	snprintf(buf, len, "%.*s", (int)n, key ? key : "");
	return buf;
}

/* the user's text on an admin's terminal: control bytes as '?' */
static const char *plain(const char *s, char *buf, size_t len)
{
	size_t i = 0;
	for (; s[i] && i + 1 < len; i++)
		buf[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	buf[i] = '\0';
	return buf;
}

static int top_cause(const gp_ld_sums_t *s)
{
	int best = -1;
	for (int c = 0; c < GP_NCAUSES; c++)
		if (c != GP_CAUSE_COMPUTE && c != GP_CAUSE_UNPROFILED && s->s[c] > 0 &&
		    (best < 0 || s->s[c] > s->s[best]))
			best = c;
	return best;
}

static const char *when(time_t t, char *buf, size_t len)
{
	struct tm tm;
	if (!t)
		return "open";
	strftime(buf, len, "%Y-%m-%d %H:%M", localtime_r(&t, &tm));
	return buf;
}

/* percentage points of waste: last week's less the week before's; NAN-free */
static bool week_change(const gp_ld_sums_t *s, double *pts)
{
	if (s->week_alloc[0] <= 0 || s->week_alloc[1] <= 0)
		return false;
	*pts = pct(s->week_waste[0], s->week_alloc[0]) - pct(s->week_waste[1], s->week_alloc[1]);
	return true;
}

/* week over week as a sentence (text's and HTML's) */
static const char *week_text(const gp_ld_sums_t *t, char *buf, size_t len)
{
	double pts;
	if (week_change(t, &pts))
		snprintf(buf, len,
		         "wasted %.1f %% of %.1f h in the last 7 days, %.1f %% of %.1f h the 7 "
		         "before (%+.1f points)",
		         pct(t->week_waste[0], t->week_alloc[0]), H(t->week_alloc[0]),
		         pct(t->week_waste[1], t->week_alloc[1]), H(t->week_alloc[1]), pts);
	else
		snprintf(buf, len,
		         "not measured (no GPU job ended in one of the two weeks before "
		         "the range's end)");
	return buf;
}

static const char *advice_of(const gp_ledger_t *l, const char *id, const char **note)
{
	*note = l->cfg ? gp_config_note(l->cfg, id) : NULL;
	const char *a = gp_finding_advice(id);
	return a ? a : "";
}

/* ---- text ---- */

static void text_totals(const gp_ledger_t *l, FILE *out)
{
	const gp_ld_sums_t *t = &l->total;
	char a[32], b[32], wk[200];
	double waste = gp_ld_waste(t);
	fprintf(out, "gpuprof ledger: %llu GPU jobs ended %s .. %s; %llu with a gpuprof record",
	        (unsigned long long)t->jobs, when(l->since, a, sizeof(a)),
	        when(l->until, b, sizeof(b)), (unsigned long long)t->profiled);
	if (t->refused)
		fprintf(out, ", %llu records refused (counted unprofiled)",
		        (unsigned long long)t->refused);
	if (t->scaled)
		fprintf(out, ", %llu claiming more than Slurm allocated (scaled down to it)",
		        (unsigned long long)t->scaled);
	if (l->bad_lines)
		fprintf(out, ", %llu lines unreadable (said on stderr; not counted)",
		        (unsigned long long)l->bad_lines);
	fprintf(out,
	        "\nGPU-hours allocated %.1f: computing %.1f (%.1f %%), wasted %.1f (%.1f %%), "
	        "unprofiled %.1f (%.1f %%)\n",
	        H(t->alloc_s), H(t->s[GP_CAUSE_COMPUTE]), pct(t->s[GP_CAUSE_COMPUTE], t->alloc_s),
	        H(waste), pct(waste, t->alloc_s), H(t->s[GP_CAUSE_UNPROFILED]),
	        pct(t->s[GP_CAUSE_UNPROFILED], t->alloc_s));
	fprintf(out, "wasted by cause:\n");
	for (int c = 0; c < GP_NCAUSES; c++)
		if (c != GP_CAUSE_COMPUTE && c != GP_CAUSE_UNPROFILED)
			fprintf(out, "  %-22s %10.1f h  %5.1f %%\n", gp_cause_words[c], H(t->s[c]),
			        pct(t->s[c], t->alloc_s));
	fprintf(out,
	        "ended badly: failed %.1f h, out of memory %.1f h, timed out %.1f h, cancelled "
	        "%.1f h, preempted or requeued %.1f h\n",
	        H(t->end_s[GP_END_FAILED]), H(t->end_s[GP_END_OOM]), H(t->end_s[GP_END_TIMEOUT]),
	        H(t->end_s[GP_END_CANCELLED]), H(t->end_s[GP_END_PREEMPTED]));
	fprintf(out, "week over week: %s\n", week_text(t, wk, sizeof(wk)));
}

static void text_groups(const gp_ledger_t *l, FILE *out)
{
	char by[64] = "", part[256], shown[256];
	for (unsigned i = 0; i < l->nby; i++)
		snprintf(by + strlen(by), sizeof(by) - strlen(by), "%s%s", i ? "," : "",
		         gp_by_name[l->by[i]]);
	fprintf(out, "\nby %s (most wasted first):\n  %-28s %6s %10s %7s %10s %7s  %-22s %s\n", by,
	        by, "jobs", "alloc h", "comp %", "wasted h", "waste%", "largest cause", "week");
	for (size_t g = 0; g < l->ngroups; g++) {
		const gp_ld_sums_t *s = &l->groups[g].sums;
		char name[300] = "", wk[32] = "-";
		double pts;
		for (unsigned i = 0; i < l->nby; i++)
			snprintf(name + strlen(name), sizeof(name) - strlen(name), "%s%s",
			         i ? "," : "",
			         plain(key_part(l->groups[g].key, i, part, sizeof(part)), shown,
			               sizeof(shown)));
		if (week_change(s, &pts))
			snprintf(wk, sizeof(wk), "%+.1f pts", pts);
		int c = top_cause(s);
		fprintf(out, "  %-28.28s %6llu %10.1f %7.1f %10.1f %7.1f  %-22s %s\n", name,
		        (unsigned long long)s->jobs, H(s->alloc_s),
		        pct(s->s[GP_CAUSE_COMPUTE], s->alloc_s), H(gp_ld_waste(s)),
		        pct(gp_ld_waste(s), s->alloc_s), c < 0 ? "-" : gp_cause_words[c], wk);
	}
}

static void text_jobs(const gp_ledger_t *l, FILE *out)
{
	char b1[128], b2[128];
	if (!l->top) /* --top=0: the lists were not asked for */
		return;
	fprintf(out, "\njobs that wasted most:\n");
	if (!l->nwaste)
		fprintf(out, "  none\n");
	for (unsigned i = 0; i < l->nwaste; i++) {
		const gp_ld_job_t *j = &l->waste[i];
		const char *note, *top = j->has_rec ? j->rec.top : "none";
		const char *advice = advice_of(l, top, &note);
		fprintf(out, "  %-12s %-12s wasted %.2f of %.2f GPU-hours; first finding %s\n",
		        plain(j->id, b1, sizeof(b1)), plain(j->user, b2, sizeof(b2)), H(j->waste_s),
		        H(j->alloc_s), top);
		if (*advice)
			fprintf(out, "      %s\n", advice);
		if (note)
			fprintf(out, "      site note: %s\n", note);
	}
	fprintf(out, "\njobs that held GPUs they never used:\n");
	if (!l->nidle)
		fprintf(out, "  none\n");
	for (unsigned i = 0; i < l->nidle; i++) {
		const gp_ld_job_t *j = &l->idle[i];
		fprintf(out, "  %-12s %-12s ran kernels on %u of %u GPUs: %.2f GPU-hours unused\n",
		        plain(j->id, b1, sizeof(b1)), plain(j->user, b2, sizeof(b2)), j->gpus_used,
		        j->gpus_alloc, H(j->unused_s));
	}
}

static void write_text(const gp_ledger_t *l, FILE *out)
{
	text_totals(l, out);
	text_groups(l, out);
	text_jobs(l, out);
}

/* ---- JSON ---- */

/* JSON's sums made into one buffer, written at once */
typedef struct jbuf {
	char b[40 * (GP_FIXED_MAX + 40)]; /* 35 figures; sep, name and value each */
	size_t o;
} jbuf_t;

static void jb_put(jbuf_t *j, const char *s)
{
	size_t n = strlen(s);
	memcpy(j->b + j->o, s, n);
	j->o += n;
}

/* name and value: ", \"name\": 12.345" (sep first) */
static void json_num(jbuf_t *j, const char *sep, const char *name, double v)
{
	jb_put(j, sep);
	jb_put(j, "\"");
	jb_put(j, name);
	jb_put(j, "\": ");
	j->o += gp_fixed_fmt(j->b + j->o, v, 3);
}

static void json_count(jbuf_t *j, const char *sep, const char *name, uint64_t v)
{
	char d[24], *p = d + sizeof(d);
	*--p = '\0';
	do
		*--p = (char)('0' + v % 10);
	while (v /= 10);
	jb_put(j, sep);
	jb_put(j, "\"");
	jb_put(j, name);
	jb_put(j, "\": ");
	jb_put(j, p);
}

/* a group's or the total's sums (gp_fixed_fmt into one buffer: fprintf's %.3f was most of
 * the time of a million groups) */
static void json_sums(const gp_ld_sums_t *s, FILE *out)
{
	jbuf_t j;
	j.o = 0;
	json_count(&j, "", "jobs", s->jobs);
	json_count(&j, ", ", "profiled", s->profiled);
	json_count(&j, ", ", "refused", s->refused);
	json_count(&j, ", ", "scaled", s->scaled);
	json_num(&j, ", ", "allocated_s", s->alloc_s);
	json_num(&j, ", ", "wasted_s", gp_ld_waste(s));
	jb_put(&j, ", \"gpu_s\": {");
	for (int c = 0; c < GP_NCAUSES; c++)
		json_num(&j, c ? ", " : "", gp_cause_key[c], s->s[c]);
	jb_put(&j, "}, \"records_gpu_s\": {");
	for (int c = 0; c < GP_NCAUSES; c++)
		json_num(&j, c ? ", " : "", gp_cause_key[c], s->rec[c]);
	jb_put(&j, "}, \"ended_s\": {");
	for (int e = 0; e < GP_NEND; e++)
		json_num(&j, e ? ", " : "", gp_end_name[e], s->end_s[e]);
	json_num(&j, "}, \"last_week\": {", "allocated_s", s->week_alloc[0]);
	json_num(&j, ", ", "wasted_s", s->week_waste[0]);
	json_num(&j, "}, \"week_before\": {", "allocated_s", s->week_alloc[1]);
	json_num(&j, ", ", "wasted_s", s->week_waste[1]);
	jb_put(&j, "}");
	fwrite(j.b, 1, j.o, out);
}

static void json_job(const gp_ledger_t *l, const gp_ld_job_t *j, FILE *out)
{
	const char *note, *top = j->has_rec ? j->rec.top : "none";
	const char *advice = advice_of(l, top, &note);
	fprintf(out, "{\"job\": ");
	gp_json_str(out, j->id);
	fprintf(out, ", \"user\": ");
	gp_json_str(out, j->user);
	fprintf(out, ", \"account\": ");
	gp_json_str(out, j->account);
	fprintf(out, ", \"partition\": ");
	gp_json_str(out, j->partition);
	fprintf(out, ", \"name\": ");
	gp_json_str(out, j->name);
	fprintf(out, ", \"state\": ");
	gp_json_str(out, j->state);
	fprintf(out,
	        ", \"allocated_s\": %.3f, \"wasted_s\": %.3f, \"unused_s\": %.3f, \"gpus\": %u, "
	        "\"gpus_used\": ",
	        j->alloc_s, j->waste_s, j->unused_s, j->gpus_alloc);
	if (j->has_rec)
		fprintf(out, "%u", j->gpus_used);
	else
		fputs("null", out);
	fprintf(out, ", \"first_finding\": ");
	gp_json_str(out, top);
	fprintf(out, ", \"advice\": ");
	gp_json_str(out, advice);
	fprintf(out, ", \"note\": ");
	if (note)
		gp_json_str(out, note);
	else
		fputs("null", out);
	fprintf(out, ", \"dir\": ");
	gp_json_str(out, j->has_rec ? j->rec.dir : "");
	fprintf(out, "}");
}

static void write_json(const gp_ledger_t *l, FILE *out)
{
	char part[256];
	fprintf(out,
	        "{\n  \"schema\": \"gpuprof-ledger/1\",\n  \"since\": %lld, \"until\": %lld,\n"
	        "  \"by\": [",
	        (long long)l->since, (long long)l->until);
	for (unsigned i = 0; i < l->nby; i++)
		fprintf(out, "%s\"%s\"", i ? ", " : "", gp_by_name[l->by[i]]);
	fprintf(out,
	        "],\n  \"lines\": %llu, \"skipped\": {\"steps\": %llu, \"not_gpu\": %llu, "
	        "\"running\": %llu, \"out_of_range\": %llu, \"unreadable\": %llu, "
	        "\"duplicates\": %llu},\n  \"total\": {",
	        (unsigned long long)l->lines, (unsigned long long)l->steps,
	        (unsigned long long)l->not_gpu, (unsigned long long)l->running,
	        (unsigned long long)l->out_of_range, (unsigned long long)l->bad_lines,
	        (unsigned long long)l->duplicates);
	json_sums(&l->total, out);
	fputs("},\n  \"job_ends\": {\"first\": ", out); /* the range the jobs cover: null, none */
	if (l->first_end)
		fprintf(out, "%lld, \"last\": %lld}", (long long)l->first_end,
		        (long long)l->last_end);
	else
		fputs("null, \"last\": null}", out);
	/* every refused record's job, not only the 20 said on stderr (at most
	 * GP_LD_REFUSALS_LISTED, the rest counted in "more") */
	fprintf(out, ",\n  \"refused_records\": {\"count\": %llu, \"more\": %llu, \"jobs\": [",
	        (unsigned long long)l->total.refused,
	        (unsigned long long)(l->total.refused - l->nrefusals));
	for (unsigned i = 0; i < l->nrefusals; i++) {
		fprintf(out, "%s\n    {\"job\": ", i ? "," : "");
		gp_json_str(out, l->refusals[i].id);
		fputs(", \"why\": ", out);
		gp_json_str(out, l->refusals[i].why);
		fputc('}', out);
	}
	fprintf(out, "%s]},\n  \"groups\": [", l->nrefusals ? "\n  " : "");
	for (size_t g = 0; g < l->ngroups; g++) {
		fprintf(out, "%s\n    {", g ? "," : "");
		for (unsigned i = 0; i < l->nby; i++) {
			fprintf(out, "\"%s\": ", gp_by_name[l->by[i]]);
			gp_json_str(out, key_part(l->groups[g].key, i, part, sizeof(part)));
			fputs(", ", out);
		}
		json_sums(&l->groups[g].sums, out);
		fputc('}', out);
	}
	fprintf(out, "\n  ],\n  \"wasted_most\": [");
	for (unsigned i = 0; i < l->nwaste; i++) {
		fprintf(out, "%s\n    ", i ? "," : "");
		json_job(l, &l->waste[i], out);
	}
	fprintf(out, "\n  ],\n  \"unused_gpus\": [");
	for (unsigned i = 0; i < l->nidle; i++) {
		fprintf(out, "%s\n    ", i ? "," : "");
		json_job(l, &l->idle[i], out);
	}
	fprintf(out, "\n  ]\n}\n");
}

/* ---- CSV (RFC 4180; a value a spreadsheet would take for a formula gets a quote) ---- */

static void csv_str(FILE *out, const char *s)
{
	fputc('"', out);
	if (*s && strchr("=+-@\t\r", *s))
		fputc('\'', out);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', out);
		fputc((unsigned char)*s < 0x20 && *s != '\t' ? ' ' : *s, out);
	}
	fputc('"', out);
}

static void csv_row(FILE *out, const gp_ld_sums_t *s)
{
	fprintf(out, ",%llu,%llu,%llu,%.4f,%.4f", (unsigned long long)s->jobs,
	        (unsigned long long)s->profiled, (unsigned long long)s->refused, H(s->alloc_s),
	        H(gp_ld_waste(s)));
	for (int c = 0; c < GP_NCAUSES; c++)
		fprintf(out, ",%.4f", H(s->s[c]));
	for (int e = 0; e < GP_NEND; e++)
		fprintf(out, ",%.4f", H(s->end_s[e]));
	fprintf(out, ",%.4f,%.4f,%.4f,%.4f\n", H(s->week_alloc[0]), H(s->week_waste[0]),
	        H(s->week_alloc[1]), H(s->week_waste[1]));
}

static void write_csv(const gp_ledger_t *l, FILE *out)
{
	char part[256];
	for (unsigned i = 0; i < l->nby; i++)
		fprintf(out, "%s%s", i ? "," : "", gp_by_name[l->by[i]]);
	fprintf(out, ",jobs,profiled,refused,allocated_h,wasted_h");
	for (int c = 0; c < GP_NCAUSES; c++)
		fprintf(out, ",%s_h", gp_cause_key[c]);
	for (int e = 0; e < GP_NEND; e++)
		fprintf(out, ",%s_h", gp_end_name[e]);
	fprintf(out, ",last_week_allocated_h,last_week_wasted_h,week_before_allocated_h,"
	             "week_before_wasted_h\n");
	for (size_t g = 0; g < l->ngroups; g++) {
		for (unsigned i = 0; i < l->nby; i++) {
			if (i)
				fputc(',', out);
			csv_str(out, key_part(l->groups[g].key, i, part, sizeof(part)));
		}
		csv_row(out, &l->groups[g].sums);
	}
	for (unsigned i = 0; i < l->nby; i++) /* the total: every group's value "*" */
		fprintf(out, "%s\"*\"", i ? "," : "");
	csv_row(out, &l->total);
}

/* ---- OpenMetrics text (the Prometheus text format node_exporter's textfile collector
 * reads, with OpenMetrics' # EOF): gauges in seconds, one sample per group ---- */

/* A group's labels from its key, without their closing '}', into buf: their length. Each
 * value with backslash, quote and newline escaped (OpenMetrics' three); the ledger's values
 * are valid UTF-8 without control characters already (ledger.c's ld_clean), so two job
 * names never make one label set. A value is 200 bytes at most (ledger.c), escaped twice
 * that: buf's 4 KiB hold five */
static size_t om_key_labels(const gp_ledger_t *l, const char *key, char *buf, size_t cap)
{
	static const char *const label[GP_NBY] = {"user", "account", "partition", "job_name",
	                                          "node"};
	size_t o = 0;
	buf[o++] = '{';
	for (unsigned i = 0; key && i < l->nby; i++) {
		size_t vl = (size_t)(strchrnul(key, '\x1f') - key);
		if (o + strlen(label[l->by[i]]) + 2 * vl + 8 >= cap)
			break; /* never: see above */
		o += (size_t)sprintf(buf + o, "%s%s=\"", i ? "," : "", label[l->by[i]]);
		for (size_t k = 0; k < vl; k++) {
			unsigned char c = (unsigned char)key[k];
			if (c == '\\' || c == '"' || c == '\n')
				buf[o++] = '\\', buf[o++] = c == '\n' ? 'n' : (char)c;
			else
				buf[o++] = (char)c;
		}
		buf[o++] = '"';
		key = key[vl] ? key + vl + 1 : key + vl;
	}
	return o;
}

typedef double (*om_get_t)(const gp_ld_sums_t *s, int i);
static double om_alloc(const gp_ld_sums_t *s, int i)
{
	(void)i;
	return s->alloc_s;
}
static double om_cause(const gp_ld_sums_t *s, int i)
{
	return s->s[i];
}
static double om_end(const gp_ld_sums_t *s, int i)
{
	return s->end_s[i];
}
static double om_jobs(const gp_ld_sums_t *s, int i)
{
	return (double)(i == 0 ? s->jobs : i == 1 ? s->profiled : s->refused);
}

/* a sample: name, the group's labels (lab[0..len), "{..." without '}'), the family's own;
 * made whole and written at once (a million groups are 16 million lines) */
static void om_sample(FILE *out, const char *name, const char *lab, size_t len, const char *label,
                      const char *value, double v)
{
	char line[256 + 4096 + GP_FIXED_MAX]; /* name, labels, the family's, value */
	size_t o = 0, nl = strlen(name);
	if (nl > 120 || len > 4096)
		return; /* never: names are ours, labels at most 4 KiB (om_key_labels) */
	memcpy(line, name, nl);
	o = nl;
	if (len > 1 || label) {
		memcpy(line + o, lab, len);
		o += len;
		if (label) { /* ours: a few bytes each */
			size_t ll = strlen(label), vl = strlen(value);
			if (ll + vl > 100)
				return;
			if (len > 1)
				line[o++] = ',';
			memcpy(line + o, label, ll);
			o += ll;
			memcpy(line + o, "=\"", 2);
			o += 2;
			memcpy(line + o, value, vl);
			o += vl;
			line[o++] = '"';
		}
		line[o++] = '}';
	}
	line[o++] = ' ';
	o += gp_fixed_fmt(line + o, v, 3);
	line[o++] = '\n';
	fwrite(line, 1, o, out);
}

static void om_head(FILE *out, const char *name, const char *help, const char *unit)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
	if (unit)
		fprintf(out, "# UNIT %s %s\n", name, unit);
}

/* A family of the groups' sums. With no group (no GPU job ended in the range), the
 * total's, which are then 0, without the group's labels: a textfile collector drops a
 * family with no sample, and a dashboard read no data as no change */
static void om_family(const gp_ledger_t *l, FILE *out, const char *name, const char *help,
                      const char *unit, const char *label, const char *const *values, int n,
                      om_get_t get)
{
	om_head(out, name, help, unit);
	char lab[4096]; /* the group's labels, made once for its n samples */
	for (size_t g = 0; g < l->ngroups || (!g && !l->ngroups); g++) {
		const char *key = l->ngroups ? l->groups[g].key : NULL;
		const gp_ld_sums_t *s = l->ngroups ? &l->groups[g].sums : &l->total;
		size_t len = om_key_labels(l, key, lab, sizeof(lab));
		for (int i = 0; i < n; i++)
			om_sample(out, name, lab, len, label, label ? values[i] : NULL, get(s, i));
	}
}

static void write_openmetrics(const gp_ledger_t *l, FILE *out)
{
	static const char *const kinds[] = {"gpu", "profiled", "refused"};
	om_family(l, out, "gpuprof_ledger_allocated_gpu_seconds",
	          "GPU-seconds allocated to GPU jobs that ended in the range", "seconds", NULL,
	          NULL, 1, om_alloc);
	om_family(l, out, "gpuprof_ledger_gpu_seconds",
	          "their GPU-seconds by cause (compute is use; unprofiled is not known)", "seconds",
	          "cause", gp_cause_key, GP_NCAUSES, om_cause);
	om_family(l, out, "gpuprof_ledger_ended_gpu_seconds",
	          "GPU-seconds of jobs that ended badly: failed, out of memory, timed out, "
	          "cancelled, preempted or requeued",
	          "seconds", "end", gp_end_name, GP_NEND, om_end);
	om_family(l, out, "gpuprof_ledger_jobs",
	          "GPU jobs; with a gpuprof record; with a record refused as malformed", NULL,
	          "kind", kinds, 3, om_jobs);
	/* the feed itself, so that a dashboard sees it broken: the lines read and what became
	 * of them, the range asked and the Ends of the jobs counted */
	static const char *const lk[] = {"read",    "unreadable", "duplicate", "out_of_range",
	                                 "running", "step",       "not_gpu"};
	const uint64_t lv[] = {l->lines,   l->bad_lines, l->duplicates, l->out_of_range,
	                       l->running, l->steps,     l->not_gpu};
	om_head(out, "gpuprof_ledger_lines",
	        "lines of sacct's output read; unreadable ones (said on stderr), and those "
	        "skipped: a job seen before, ended out of the range, still running, a step, no "
	        "GPU",
	        NULL);
	for (int i = 0; i < 7; i++)
		om_sample(out, "gpuprof_ledger_lines", "{", 1, "kind", lk[i], (double)lv[i]);
	om_head(out, "gpuprof_ledger_range_timestamp_seconds",
	        "the range asked: GPU jobs that ended from since to until (Unix time)", "seconds");
	om_sample(out, "gpuprof_ledger_range_timestamp_seconds", "{", 1, "edge", "since",
	          (double)l->since);
	om_sample(out, "gpuprof_ledger_range_timestamp_seconds", "{", 1, "edge", "until",
	          (double)l->until);
	om_head(out, "gpuprof_ledger_job_end_timestamp_seconds",
	        "the End of the first and of the last GPU job counted (Unix time; 0: none)",
	        "seconds");
	om_sample(out, "gpuprof_ledger_job_end_timestamp_seconds", "{", 1, "edge", "first",
	          (double)l->first_end);
	om_sample(out, "gpuprof_ledger_job_end_timestamp_seconds", "{", 1, "edge", "last",
	          (double)l->last_end);
	fprintf(out, "# EOF\n");
}

/* ---- HTML: one file, no script, no request: tables and bars in CSS ---- */

static void html_str(FILE *out, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '<')
			fputs("&lt;", out);
		else if (c == '>')
			fputs("&gt;", out);
		else if (c == '&')
			fputs("&amp;", out);
		else if (c == '"')
			fputs("&quot;", out);
		else if (c == '\'')
			fputs("&#39;", out);
		else
			fputc(c < 0x20 ? '?' : c, out);
	}
}

static const char *const cause_color[GP_NCAUSES] = {"#2e7d32", "#8e24aa", "#ef6c00",
                                                    "#c62828", "#ad1457", "#1565c0",
                                                    "#6d4c41", "#f9a825", "#9e9e9e"};

static void html_bar(const gp_ld_sums_t *s, FILE *out)
{
	fputs("<div class=bar>", out);
	for (int c = 0; c < GP_NCAUSES; c++)
		if (s->alloc_s > 0 && s->s[c] > 0)
			fprintf(
			    out,
			    "<span class=c%d style=\"width:%.2f%%\" title=\"%s %.1f h\"></span>", c,
			    pct(s->s[c], s->alloc_s), gp_cause_words[c], H(s->s[c]));
	fputs("</div>", out);
}

static void html_head(const gp_ledger_t *l, FILE *out)
{
	char a[32], b[32];
	fprintf(out, "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
	             "<title>gpuprof ledger</title><style>\n"
	             "body{font:14px sans-serif;margin:1.5em;color:#222}"
	             "table{border-collapse:collapse;margin:.5em 0 1.5em}"
	             "td,th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:right}"
	             "td.k,th.k{text-align:left}.bar{display:flex;width:300px;height:14px;"
	             "background:#eee}.bar span{display:block;height:14px}\n");
	for (int c = 0; c < GP_NCAUSES; c++)
		fprintf(out, ".c%d{background:%s}", c, cause_color[c]);
	fprintf(out,
	        "\n</style></head><body>\n<h1>gpuprof ledger</h1>\n<p>GPU jobs that ended "
	        "%s .. %s</p>\n<p>",
	        when(l->since, a, sizeof(a)), when(l->until, b, sizeof(b)));
	for (int c = 0; c < GP_NCAUSES; c++)
		fprintf(out, "<span class=c%d style=\"padding:0 6px\">&nbsp;</span> %s &nbsp; ", c,
		        gp_cause_words[c]);
	fprintf(out, "</p>\n");
}

static void html_sums_row(FILE *out, const gp_ld_sums_t *s)
{
	double pts;
	fprintf(out,
	        "<td>%llu</td><td>%llu</td><td>%llu</td><td>%llu</td><td>%.1f</td><td>%.1f</td>"
	        "<td>%.1f</td><td>",
	        (unsigned long long)s->jobs, (unsigned long long)s->profiled,
	        (unsigned long long)s->refused, (unsigned long long)s->scaled, H(s->alloc_s),
	        pct(s->s[GP_CAUSE_COMPUTE], s->alloc_s), H(gp_ld_waste(s)));
	html_bar(s, out);
	fprintf(out, "</td>");
	for (int c = 0; c < GP_NCAUSES; c++)
		fprintf(out, "<td>%.1f</td>", H(s->s[c]));
	for (int e = 0; e < GP_NEND; e++)
		fprintf(out, "<td>%.1f</td>", H(s->end_s[e]));
	if (week_change(s, &pts))
		fprintf(out, "<td>%+.1f</td>", pts);
	else
		fprintf(out, "<td>-</td>");
	fprintf(out, "</tr>\n");
}

/* the totals' sentences, as text's: refused and scaled records, how jobs ended, week over
 * week */
static void html_totals(const gp_ledger_t *l, FILE *out)
{
	const gp_ld_sums_t *t = &l->total;
	char wk[200];
	fprintf(out,
	        "<p class=records>%llu GPU jobs, %llu with a gpuprof record; %llu records refused "
	        "(counted unprofiled); %llu claiming more than Slurm allocated (scaled down to "
	        "it)</p>\n",
	        (unsigned long long)t->jobs, (unsigned long long)t->profiled,
	        (unsigned long long)t->refused, (unsigned long long)t->scaled);
	fprintf(out,
	        "<p class=ended>Ended badly: failed %.1f h, out of memory %.1f h, timed out %.1f "
	        "h, cancelled %.1f h, preempted or requeued %.1f h</p>\n",
	        H(t->end_s[GP_END_FAILED]), H(t->end_s[GP_END_OOM]), H(t->end_s[GP_END_TIMEOUT]),
	        H(t->end_s[GP_END_CANCELLED]), H(t->end_s[GP_END_PREEMPTED]));
	fprintf(out, "<p class=week>Week over week: %s</p>\n", week_text(t, wk, sizeof(wk)));
}

static void html_jobs(const gp_ledger_t *l, FILE *out, const gp_ld_job_t *v, unsigned n, bool idle)
{
	fprintf(out,
	        "<table class=%s><tr><th class=k>job</th><th class=k>user</th><th "
	        "class=k>account</th><th>%s</th><th class=k>first finding</th><th "
	        "class=k>advice</th></tr>\n",
	        idle ? "unused" : "wasters",
	        idle ? "GPUs used / held, unused h" : "wasted / alloc h");
	for (unsigned i = 0; i < n; i++) {
		const gp_ld_job_t *j = &v[i];
		const char *note, *top = j->has_rec ? j->rec.top : "none";
		const char *advice = advice_of(l, top, &note);
		fputs("<tr><td class=k>", out);
		html_str(out, j->id);
		fputs("</td><td class=k>", out);
		html_str(out, j->user);
		fputs("</td><td class=k>", out);
		html_str(out, j->account);
		if (idle)
			fprintf(out, "</td><td>%u / %u, %.2f</td><td class=k>", j->gpus_used,
			        j->gpus_alloc, H(j->unused_s));
		else
			fprintf(out, "</td><td>%.2f / %.2f</td><td class=k>", H(j->waste_s),
			        H(j->alloc_s));
		html_str(out, top);
		fputs("</td><td class=k>", out);
		html_str(out, advice);
		if (note && (!strncmp(note, "https://", 8) || !strncmp(note, "http://", 7))) {
			fputs(" <a href=\"", out);
			html_str(out, note);
			fputs("\">site note</a>", out);
		} else if (note) {
			fputs(" <b>Site note:</b> ", out);
			html_str(out, note);
		}
		fputs("</td></tr>\n", out);
	}
	fputs("</table>\n", out);
}

static void write_html(const gp_ledger_t *l, FILE *out)
{
	char part[256];
	html_head(l, out);
	html_totals(l, out);
	fprintf(out, "<table class=groups><tr>");
	for (unsigned i = 0; i < l->nby; i++)
		fprintf(out, "<th class=k>%s</th>", gp_by_name[l->by[i]]);
	fprintf(out, "<th>jobs</th><th>profiled</th><th>refused</th><th>scaled</th><th>alloc "
	             "h</th><th>comp %%</th><th>wasted h</th><th class=k>by cause</th>");
	for (int c = 0; c < GP_NCAUSES; c++)
		fprintf(out, "<th>%s h</th>", gp_cause_key[c]);
	for (int e = 0; e < GP_NEND; e++)
		fprintf(out, "<th>%s h</th>", gp_end_name[e]);
	fprintf(out, "<th>week (waste pts)</th></tr>\n<tr class=total>");
	for (unsigned i = 0; i < l->nby; i++)
		fprintf(out, "<td class=k>%s</td>", i ? "" : "all");
	html_sums_row(out, &l->total);
	for (size_t g = 0; g < l->ngroups; g++) {
		fputs("<tr>", out);
		for (unsigned i = 0; i < l->nby; i++) {
			fputs("<td class=k>", out);
			html_str(out, key_part(l->groups[g].key, i, part, sizeof(part)));
			fputs("</td>", out);
		}
		html_sums_row(out, &l->groups[g].sums);
	}
	fprintf(out, "</table>\n<h2>Jobs that wasted most</h2>\n");
	html_jobs(l, out, l->waste, l->nwaste, false);
	fprintf(out, "<h2>Jobs that held GPUs they never used</h2>\n");
	html_jobs(l, out, l->idle, l->nidle, true);
	fprintf(out, "</body></html>\n");
}

gp_ld_writer_t gp_ld_writer(const char *format)
{
	static const struct {
		const char *name;
		gp_ld_writer_t fn;
	} w[] = {{"text", write_text},
	         {"json", write_json},
	         {"csv", write_csv},
	         {"html", write_html},
	         {"openmetrics", write_openmetrics}};
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++)
		if (!strcmp(format, w[i].name))
			return w[i].fn;
	return NULL;
}
