/* The report's writers (report/output.c, report/fields.c) on a job made in memory: the
 * table of a rank's figures is sound (every key once in its object, a doc line each, a
 * place inside gp_rank_t), report.json holds each of them once per rank as valid JSON
 * with the values the rank has, and the text report has its sections and figures. */
#include "config.h"
#include "fields.h"
#include "job.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *render(void (*fn)(const gp_job_t *, FILE *), const gp_job_t *job)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	fn(job, m);
	fclose(m);
	return buf;
}

/* Valid JSON's shape: braces and brackets balance outside strings, strings end. */
static bool balanced(const char *s)
{
	int depth = 0;
	bool str = false;
	for (; *s; s++) {
		if (str) {
			if (*s == '\\' && s[1])
				s++;
			else if (*s == '"')
				str = false;
			continue;
		}
		if (*s == '"')
			str = true;
		else if (*s == '{' || *s == '[')
			depth++;
		else if ((*s == '}' || *s == ']') && --depth < 0)
			return false;
	}
	return !str && depth == 0;
}

static unsigned count(const char *hay, const char *needle)
{
	unsigned n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

static void table(void)
{
	unsigned dup = 0, nodoc = 0, outside = 0;
	for (size_t i = 0; i < gp_rank_nfields; i++) {
		const gp_field_t *f = &gp_rank_fields[i];
		nodoc += !f->doc || !*f->doc;
		outside += f->type != GP_FT_FN && f->off >= sizeof(gp_rank_t);
		for (size_t j = 0; j < i; j++) {
			const gp_field_t *g = &gp_rank_fields[j];
			bool same_sec =
			    (!f->section && !g->section) ||
			    (f->section && g->section && !strcmp(f->section, g->section));
			dup += same_sec && !strcmp(f->key, g->key);
		}
	}
	ok(gp_rank_nfields > 100, "%zu fields", gp_rank_nfields);
	ok(!dup, "every key once in its object (%u twice)", dup);
	ok(!nodoc, "every field has its line of doc (%u without)", nodoc);
	ok(!outside, "every field lies inside gp_rank_t (%u outside)", outside);
	/* a section's fields are together: once left, an object is never reopened */
	unsigned reopened = 0;
	for (size_t i = 1; i < gp_rank_nfields; i++) {
		const char *s = gp_rank_fields[i].section, *p = gp_rank_fields[i - 1].section;
		if (!s || (p && !strcmp(s, p)))
			continue;
		for (size_t j = 0; j + 1 < i; j++)
			reopened +=
			    gp_rank_fields[j].section && !strcmp(gp_rank_fields[j].section, s);
	}
	ok(!reopened, "each object's fields are listed together (%u out of place)", reopened);
}

/* A figure not measured is not 0 (issue 50): a rank with no steps and no kernel records
 * (modes without cuda) beside one with host-timed steps: its step figures and the GPU's
 * shares are null in report.json, empty in the CSV, "-" in the text and the summary line;
 * the job's step figures null where no rank has steps */
/* a job of n ranks without CUDA records, each ended, per_node of them a node */
static void job_of(gp_job_t *job, unsigned n, unsigned per_node)
{
	memset(job, 0, sizeof(*job));
	job->nranks = n;
	job->ranks = calloc(n, sizeof(gp_rank_t));
	for (unsigned i = 0; i < n; i++) {
		gp_rank_t *r = &job->ranks[i];
		r->id.rank = (int)i;
		gp_text_setf(&r->id.node, GP_ID_NODE, "node%u", i / per_node);
		snprintf(r->id.modes, sizeof(r->id.modes), "timing,nvtx");
		r->outcome.has_end = true;
	}
}

static void not_measured(void)
{
	gp_job_t job;
	job_of(&job, 2, 1);
	gp_rank_t *r1 = &job.ranks[1]; /* steps timed on the host, no GPU time */
	snprintf(r1->steps.source, sizeof(r1->steps.source), "nvtx");
	snprintf(r1->steps.basis, sizeof(r1->steps.basis), "period");
	r1->steps.n = 20, r1->steps.warmup = 2, r1->steps.n_post = 18;
	r1->steps.median_ms = r1->steps.period_median_ms = 10, r1->steps.nperiod = 17;
	r1->steps.nms = r1->steps.nall = 1;
	r1->steps.ms = calloc(1, sizeof(double));
	r1->steps.ms[0] = 10;
	char *json = render(gp_report_json, &job);
	ok(json && balanced(json) && strstr(json, "\"step_median_ms\": null") &&
	       strstr(json, "\"step_mean_period_ms\": null") &&
	       strstr(json, "\"steps_per_second\": null"),
	   "no rank's steps measured in the job: its step figures null, not 0");
	ok(json && count(json, "\"median_ms\": null") == 1 &&
	       count(json, "\"median_ms\": 10.000000") == 1 &&
	       count(json, "\"gpu_median_ms\": null") == 2 &&
	       count(json, "\"period_median_ms\": null") == 1 &&
	       count(json, "\"median_low_ms\": null") == 2 &&
	       count(json, "\"busy_pct\": null") == 3 &&
	       count(json, "\"mean_period_ms\": null") == 2 && !strstr(json, "\"median_ms\": 0.0"),
	   "a rank without steps: its step figures null; GPU step time and the GPU's shares null "
	   "without kernel records; a 95 %% interval null under 6 steps");
	free(json);
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	int rc = gp_export_csv(&job, m, "ranks");
	fclose(m);
	/* the column of steps.median_ms: empty for rank 0, 10 for rank 1 */
	int col = -1, k = 0;
	char *line2 = buf ? strstr(buf, "\r\n") : NULL,
	     *line3 = line2 ? strstr(line2 + 2, "\r\n") : NULL;
	for (char *p = buf; line2 && p < line2; k++) {
		char *e = strpbrk(p, ",\r");
		if (!strncmp(p, "steps.median_ms,", 16))
			col = k;
		p = e ? e + 1 : line2;
	}
	char cell0[32] = "?", cell1[32] = "?";
	for (int row = 0; row < 2 && col >= 0; row++) {
		char *p = (row ? line3 : line2) + 2;
		for (int c = 0; c < col; c++)
			p = strchr(p, ',') + 1; /* no quoted commas before it: numbers and names */
		snprintf(row ? cell1 : cell0, 32, "%.*s", (int)strcspn(p, ",\r"), p);
	}
	ok(rc == 0 && col >= 0 && !strcmp(cell0, "") && !strcmp(cell1, "10.000000"),
	   "the CSV's steps.median_ms: an empty cell where not measured ('%s'), 10.000000 where "
	   "measured ('%s')",
	   cell0, cell1);
	free(buf);
	char line[1024];
	gp_report_summary_line(&job, line, sizeof(line));
	ok(strstr(line, " busy=- idle=- ") && strstr(line, " step=- ") && strstr(line, " peak=- "),
	   "the summary line: busy, idle, the peak and the step '-' where not measured (%s)", line);
	/* a node whose ranks measured no memory: its peak null, as the text's '-' */
	struct gp_node nd = {.name = "node0", .ranks = 2};
	job.nodes = &nd, job.nnodes = 1;
	json = render(gp_report_json, &job);
	ok(json && strstr(json, "\"ranks\": 2, \"step_median_ms\": null, \"peak_bytes\": null}"),
	   "report.json's node without memory data: peak_bytes null, not 0 (%.120s)",
	   json && strstr(json, "\"nodes\"") ? strstr(json, "\"nodes\"") : "none");
	free(json);
	job.nodes = NULL, job.nnodes = 0;
	r1->steps.mean_period_ms = 10.5;
	job.step_median_ms = 10, job.step_mean_period_ms = 10.5, job.steps_per_second = 95.2;
	snprintf(job.step_basis, sizeof(job.step_basis), "period");
	gp_report_summary_line(&job, line, sizeof(line));
	json = render(gp_report_json, &job);
	ok(strstr(line, " step=10.00ms(period) ") && json &&
	       strstr(json, "\"step_median_ms\": 10.000000") &&
	       strstr(json, "\"steps_per_second\": 95.2000"),
	   "measured: the figures as before (%s)", line);
	free(json);
	char *text = render(gp_report_text, &job);
	const char *row0 = text ? strstr(text, "\n0      node0") : NULL;
	ok(row0 && strstr(row0, " - ") && strstr(row0, "exit 0"),
	   "the text's How slow row of the rank without steps: '-', never 0.000");
	free(text);
	for (unsigned i = 0; i < job.nranks; i++)
		gp_rank_release(&job.ranks[i]);
	free(job.ranks);
}

/* The "steps not alike" notes of many ranks (issue 50): every rank's, those that read the
 * same said once ("ranks 0-7: ..."), not the first 4 ranks' alone */
static void shape_groups(void)
{
	gp_job_t job;
	job_of(&job, 10, 4);
	for (int i = 0; i < 10; i++) {
		gp_rank_t *r = &job.ranks[i];
		snprintf(r->steps.source, sizeof(r->steps.source), "nvtx");
		snprintf(r->steps.basis, sizeof(r->steps.basis), "period");
		r->steps.n = 40, r->steps.warmup = 2, r->steps.n_post = 38;
		r->steps.median_ms = 71.5, r->steps.mean_period_ms = 71.5;
		gp_step_shape_t *sh = &r->steps.shape;
		snprintf(sh->shape, sizeof(sh->shape), i < 8 ? "alternating" : "drifting");
		sh->low_ms = 13, sh->high_ms = 130, sh->high_share = 0.5;
	}
	job.step_period_rank = 0, job.step_mean_period_ms = 71.5, job.steps_per_second = 14;
	char *text = render(gp_report_text, &job);
	ok(text && count(text, "steps not alike") == 2 &&
	       strstr(text, "ranks 0-7: steps not alike: alternating between 13.000 and 130.000") &&
	       strstr(text, "ranks 8-9: steps not alike: drifting from 13.000"),
	   "10 ranks' steps not alike: said once a group, every rank (%u notes)",
	   text ? count(text, "steps not alike") : 0);
	free(text);
	for (int i = 0; i < 10; i++) /* each its own way: 8 lines, then how many more */
		job.ranks[i].steps.shape.low_ms = 13 + i;
	text = render(gp_report_text, &job);
	ok(text && count(text, "steps not alike") == 8 && strstr(text, "rank 7: steps not alike") &&
	       !strstr(text, "rank 8: steps") &&
	       strstr(text, "and 2 more ranks whose steps are not alike"),
	   "10 ranks each their own way: 8 lines, then 'and 2 more ranks' (%u)",
	   text ? count(text, "steps not alike") : 0);
	free(text);
	for (unsigned i = 0; i < job.nranks; i++)
		gp_rank_release(&job.ranks[i]);
	free(job.ranks);
}

int main(void)
{
	table();

	gp_job_t job;
	memset(&job, 0, sizeof(job));
	snprintf(job.job, sizeof(job.job), "4242");
	snprintf(job.dir, sizeof(job.dir), "/tmp/gpuprof-4242");
	job.nranks = 2;
	job.ranks = calloc(2, sizeof(gp_rank_t));
	for (int i = 0; i < 2; i++) {
		gp_rank_t *r = &job.ranks[i];
		r->id.rank = i;
		gp_text_setf(&r->id.node, GP_ID_NODE, i ? "node-%d" : "\x1b[31mnode%d\a", i);
		snprintf(r->id.step, sizeof(r->id.step), "0");
		snprintf(r->id.modes, sizeof(r->id.modes), "timing,nvtx,cuda,mem");
		r->outcome.has_end = true;
		r->outcome.wall_ns = 2500000000ull;
		snprintf(r->steps.name, sizeof(r->steps.name), "train \"step\"");
		snprintf(r->steps.source, sizeof(r->steps.source), "nvtx");
		snprintf(r->steps.basis, sizeof(r->steps.basis), "gpu");
		r->steps.n = 20, r->steps.warmup = 2, r->steps.n_post = 18;
		r->steps.median_ms = 10.0 + i;
		r->steps.nms = 2, r->steps.nall = 2;
		r->steps.ms = calloc(2, sizeof(double));
		r->steps.ms[0] = 10.5, r->steps.ms[1] = 11.25;
		r->gpu.span_ns = 200000000, r->gpu.busy_ns = 150000000;
		r->memory.peak = 3ull << 30;
		r->memory.peak_step = i ? -1 : 7;
		r->torch.seen = i == 1;
		if (i == 1) /* 2.9x slower from step 12 on rank 1 only */
			r->steps.shift = (gp_step_shift_t){.ratio = 2.9,
			                                   .before_ms = 10,
			                                   .after_ms = 29,
			                                   .nbefore = 10,
			                                   .nafter = 8,
			                                   .at = 10,
			                                   .step = 12,
			                                   .at_s = 1.5};
		if (i == 1) /* gpuprof's own time measured on rank 1 only */
			r->own.steps = 18, r->own.us_median = 30, r->own.us_p95 = 60,
			r->own.pct = 0.27;
	}
	job.step_median_ms = 10.5;
	snprintf(job.step_basis, sizeof(job.step_basis), "gpu");

	char *json = render(gp_report_json, &job);
	ok(json && balanced(json), "report.json balances its braces and strings");
	unsigned missing = 0;
	char key[128], first[128] = "";
	for (size_t i = 0; i < gp_rank_nfields; i++) {
		const gp_field_t *f = &gp_rank_fields[i];
		if (f->section && !strcmp(f->section, "pool"))
			continue; /* null where no framework's pool was seen */
		snprintf(key, sizeof(key), "\"%s\": ", f->key);
		if (!strstr(json, key)) {
			missing++;
			if (!first[0])
				snprintf(first, sizeof(first), "%s", f->key);
		}
	}
	ok(!missing, "every field of the table is in report.json (%u missing, first %s)", missing,
	   first);
	ok(count(json, "\"pytorch\": null") == 1 && count(json, "\"pytorch\": {") == 1,
	   "pytorch: an object where the integration ran, null where not");
	ok(count(json, "\"pool\": null") == 2, "pool: null where none was seen");
	ok(count(json, "\"own_cost\": null") == 1 && count(json, "\"own_cost\": {") == 1,
	   "own_cost: an object where gpuprof's own time was measured, null where not");
	ok(count(json, "\"slowdown\": null") == 1 &&
	       strstr(json, "\"slowdown\": {\"ratio\": 2.9000, \"step\": 12, \"at_s\": 1.500") !=
	           NULL,
	   "slowdown: an object where the steps got slower and stayed so, null where not");
	ok(strstr(json, "\"median_ms\": 10.000000") && strstr(json, "\"median_ms\": 11.000000"),
	   "each rank's headline");
	ok(strstr(json, "\"durations_ms\": [10.5000, 11.2500]") != NULL, "the step samples");
	ok(strstr(json, "\"peak_step\": 7") && strstr(json, "\"peak_step\": null"),
	   "peak_step: a number, or null outside steps");
	ok(strstr(json, "\"range\": \"train \\\"step\\\"\"") != NULL, "strings are escaped");
	ok(strstr(json, "\"wall_s\": 2.500000") != NULL, "scaled figures (ns to s)");
	ok(count(json, "\"busy_ns\": 150000000") == 2, "the same figure for each rank");
	free(json);

	char *text = render(gp_report_text, &job);
	ok(text && strstr(text, "== How slow ==") && strstr(text, "== Where the time goes ==") &&
	       strstr(text, "== Where the memory goes ==") && strstr(text, "== Data quality =="),
	   "the text report has its sections");
	ok(text && strstr(text, "10.50") != NULL, "and the job's median step");
	ok(text && !strchr(text, '\x1b') && !strchr(text, '\a') && strstr(text, "?[31mno"),
	   "no escape sequence or bell of the program's strings reaches the text");
	free(text);
	/* a level shift is said as two levels in time, not as a shape of two kinds of step */
	job.step_period_rank = 1, job.step_mean_period_ms = 15, job.steps_per_second = 66.7;
	job.ranks[1].steps.mean_period_ms = 15;
	snprintf(job.ranks[1].steps.shape.shape, sizeof(job.ranks[1].steps.shape.shape), "bimodal");
	text = render(gp_report_text, &job);
	ok(text &&
	       strstr(text, "rank 1: steps not alike: 10.000 ms, then 29.000 ms from step 12 on "
	                    "(2.90x: finding slowdown)") &&
	       !strstr(text, "bimodal between"),
	   "the text: a slowdown's steps as two levels from its step, not 'bimodal'");
	free(text);
	/* ... and as a planned change where the work per step grew with it (issue 50) */
	job.ranks[1].steps.shift.work_ratio = 2.9;
	snprintf(job.ranks[1].steps.shift.work_what, sizeof(job.ranks[1].steps.shift.work_what),
	         "thread blocks");
	text = render(gp_report_text, &job);
	ok(text && strstr(text, "(2.90x, with 2.90x the thread") &&
	       strstr(text, "more work each step, not a slower node)"),
	   "the text: a shift with the work per step grown is said as more work (%.200s)",
	   text && strstr(text, "rank 1: steps") ? strstr(text, "rank 1: steps") : "none");
	free(text);
	char *page = NULL;
	size_t pl = 0;
	FILE *pm = open_memstream(&page, &pl);
	gp_report_html(&job, pm);
	fclose(pm);
	ok(page && strstr(page, "from step 12 on: 2.90x slower, with 2.90x the thread blocks a "
	                        "step: more work each step, not a slower node)"),
	   "the HTML: the same");
	free(page);
	job.ranks[1].steps.shift.work_ratio = 0;
	/* the NVTX table's names told apart where they differ, not cut at the end (PyTorch's
	 * emit_nvtx: two autograd nodes read "autograd::engine::evaluate_function: ...") */
	gp_rstat_t rs[2] = {{.name = "autograd::engine::evaluate_function: AddmmBackward0",
	                     .count = 10,
	                     .cpu_ns = 1000000},
	                    {.name = "autograd::engine::evaluate_function: MulBackward0",
	                     .count = 10,
	                     .cpu_ns = 500000}};
	job.r = rs, job.nr = 2;
	text = render(gp_report_text, &job);
	const char *nv = text ? strstr(text, "NVTX ranges (all ranks)") : NULL;
	ok(nv && strstr(nv, "AddmmBackward0") && strstr(nv, "MulBackward0"),
	   "the NVTX table: AddmmBackward0 and MulBackward0 told apart (%.300s)", nv ? nv : "none");
	free(text);
	job.r = NULL, job.nr = 0;
	char *html = NULL;
	size_t hl = 0;
	FILE *hm = open_memstream(&html, &hl);
	gp_report_html(&job, hm);
	fclose(hm);
	ok(html &&
	       strstr(html, "Rank 1: steps not alike (10.000 ms, then 29.000 ms from step 12 on: "
	                    "2.90x slower)"),
	   "the HTML: the same");
	free(html);

	for (unsigned i = 0; i < job.nranks; i++)
		gp_rank_release(&job.ranks[i]);
	free(job.ranks);
	not_measured();
	shape_groups();
	return done_testing();
}
