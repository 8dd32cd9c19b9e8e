/* The report of a running job (`gpuprof report` while it runs): made from its ranks' live
 * files (livejob.h), every figure labelled as the job's so far or as its last interval's;
 * the full report comes from the rank files when the job ends. A slowdown during the run
 * (a rank's last interval against the median of its steps before it) is a finding of its
 * own, with when it began. */
#include "config.h"
#include "live_report.h"
#include "json.h"
#include "wrap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GIB 1073741824.0

static const char *state_of(const gp_live_job_t *j, unsigned i)
{
	return j->stale[i] ? "gone" : j->r[i].state;
}

/* A finding's line: what it says, with when a slowdown began on the wall clock. */
static void finding_text(const gp_live_rank_t *r, const gp_live_finding_t *f, char *out, size_t len)
{
	char when[48], hms[24];
	if (!strcmp(f->id, "slowdown") && r->slow_since_s >= 0)
		snprintf(out, len, "%s (began %s, %s into the run)", f->text,
		         gp_live_clock(r->started + r->slow_since_s, when, sizeof(when)),
		         gp_live_hms(r->slow_since_s, hms, sizeof(hms)));
	else
		snprintf(out, len, "%s", f->text);
}

static void text_head(const gp_live_job_t *j, FILE *f)
{
	char hms[24], when[48];
	const char *job = j->n && j->r[0].job[0] ? j->r[0].job : "?";
	double newest = 0;
	for (unsigned i = 0; i < j->n; i++)
		newest = j->r[i].written > newest ? j->r[i].written : newest;
	fprintf(f, "gpuprof report: job %s %s, live figures of the job so far (%s)\n", job,
	        j->running ? "RUNNING" : "NOT FINISHED", j->dir);
	fprintf(f,
	        "started %s, %s so far; %u rank(s): %u running, %u ended, %u gone (no live "
	        "figures for %d intervals); newest figures %.0f s old\n",
	        gp_live_clock(j->started, when, sizeof(when)),
	        gp_live_hms(j->elapsed_s, hms, sizeof(hms)), j->n, j->running, j->ended, j->nstale,
	        GP_LIVE_STALE_INTERVALS, j->now - newest);
	fprintf(f, "Every figure covers the job so far, except those headed \"last\": each rank's "
	           "last interval (live_interval). The full report is made from the rank files "
	           "when the job ends.\n");
}

static void text_findings(const gp_live_job_t *j, FILE *f)
{
	char line[640];
	unsigned n = 0;
	fprintf(f, "\n== Findings so far ==\n");
	for (int pass = 0; pass < 2; pass++) /* slowdowns first */
		for (unsigned i = 0; i < j->n; i++)
			for (unsigned k = 0; k < j->r[i].nfind; k++) {
				const gp_live_finding_t *x = &j->r[i].find[k];
				if ((pass == 0) != !strcmp(x->id, "slowdown"))
					continue;
				finding_text(&j->r[i], x, line, sizeof(line));
				fprintf(f, "  %s: rank %d (step %s): %s\n", x->id, j->r[i].rank,
				        j->r[i].step, line);
				n++;
			}
	if (j->slowest >= 0 && j->slowest_ratio >= GP_LIVE_SLOW_RATIO && j->n > 1) {
		fprintf(f,
		        "  straggler: rank %d's last steps take %.1f ms, %.2fx the median over "
		        "ranks (%.1f ms)\n",
		        j->r[j->slowest].rank, j->r[j->slowest].last_median_ms, j->slowest_ratio,
		        j->now_ms);
		n++;
	}
	if (!n)
		fprintf(f, "  none so far\n");
}

/* A rank's step basis: "<basis>, <name> (<source>)". */
static void basis_of(const gp_live_rank_t *r, char *out, size_t len)
{
	snprintf(out, len, "%s, %s (%s)", r->step_basis, r->step_name, r->step_source);
}

static void text_steps(const gp_live_job_t *j, FILE *f)
{
	fprintf(f, "\n== How slow, so far ==\n");
	fprintf(f, "%-6s %-6s %-12s %-8s %8s %10s %10s %10s %10s %8s\n", "step", "rank", "node",
	        "state", "steps", "median ms", "p95 ms", "last ms", "last steps", "last/med");
	for (unsigned i = 0; i < j->n; i++) {
		const gp_live_rank_t *r = &j->r[i];
		fprintf(f, "%-6s %-6d %-12.12s %-8s %8u ", r->step, r->rank, r->node,
		        state_of(j, i), r->steps);
		if (!r->step_source[0]) {
			fprintf(f, "%10s %10s %10s %10s %8s\n", "-", "-", "-", "-", "-");
			continue;
		}
		fprintf(f, "%10.3f %10.3f ", r->median_ms, r->p95_ms);
		if (r->last_steps)
			fprintf(f, "%10.3f %10u %8.2f\n", r->last_median_ms, r->last_steps,
			        r->median_ms > 0 ? r->last_median_ms / r->median_ms : 0);
		else
			fprintf(f, "%10s %10u %8s\n", "-", 0u, "-");
	}
	/* what a step is, once per distinct basis with its ranks (the same for all of them in
	 * most jobs), beneath the table rather than as a column that no width holds; each
	 * rank's basis made once, compared against the few distinct ones (O(ranks x bases)) */
	unsigned nobasis = 0, nu = 0, *uniq = calloc(j->n ? j->n : 1, sizeof(unsigned)),
	         *cnt = calloc(j->n ? j->n : 1, sizeof(unsigned));
	char(*bs)[320] = calloc(j->n ? j->n : 1, sizeof(*bs));
	for (unsigned i = 0; uniq && cnt && bs && i < j->n; i++) {
		if (!j->r[i].step_source[0]) {
			nobasis++;
			continue;
		}
		basis_of(&j->r[i], bs[i], sizeof(bs[i]));
		unsigned k = 0;
		while (k < nu && strcmp(bs[uniq[k]], bs[i]))
			k++;
		if (k == nu)
			uniq[nu++] = i;
		cnt[k]++;
	}
	for (unsigned k = 0; k < nu; k++)
		if (cnt[k] == j->n)
			fprintf(f, "steps: %s\n", bs[uniq[k]]);
		else
			fprintf(f, "steps of %u rank(s) from rank %d: %s\n", cnt[k],
			        j->r[uniq[k]].rank, bs[uniq[k]]);
	free(uniq);
	free(cnt);
	free(bs);
	if (nobasis)
		fprintf(f, "no steps found yet on %u rank(s)\n", nobasis);
	if (j->median_ms > 0)
		fprintf(f,
		        "job: median step %.3f ms so far (median over ranks), %.3f ms in the "
		        "ranks' last intervals\n",
		        j->median_ms, j->now_ms);
}

/* A figure of width columns with prec decimals, or '-' where not measured. */
static void cell(FILE *f, int width, bool measured, double v, int prec)
{
	if (measured)
		fprintf(f, " %*.*f", width, prec, v);
	else
		fprintf(f, " %*s", width, "-");
}

static void text_gpus(const gp_live_job_t *j, FILE *f)
{
	fprintf(f, "\n== GPU and memory, so far ==\n");
	if (!j->with_gpus) {
		fprintf(f, "no NVML samples (no GPU, or NVML not found)\n");
		return;
	}
	fprintf(f, "%-6s %-6s %6s %10s %14s %14s %10s %10s %10s\n", "step", "rank", "busy%",
	        "last busy%", "idle startup s", "idle steps s", "used GiB", "peak GiB", "card GiB");
	for (unsigned i = 0; i < j->n; i++) {
		const gp_live_rank_t *r = &j->r[i];
		if (!r->ngpus)
			continue;
		/* a GPU seen but never sampled measured none of them: '-', as top prints */
		bool s = gp_live_sampled(r);
		fprintf(f, "%-6s %-6d", r->step, r->rank);
		cell(f, 6, s, r->busy_pct, 1);
		cell(f, 10, gp_live_last_sampled(r), r->last_busy_pct, 1);
		cell(f, 14, s, r->idle_startup_s, 1);
		cell(f, 14, s, r->idle_steps_s, 1);
		cell(f, 10, s, r->mem_used / GIB, 2);
		cell(f, 10, s, r->mem_peak / GIB, 2);
		cell(f, 10, r->mem_total > 0, r->mem_total / GIB, 2);
		fputc('\n', f);
	}
	fprintf(f, "busy: NVML's utilisation (a kernel running), mean of the samples; idle split "
	           "by cause: before the first step (start-up), once steps run; '-': no NVML "
	           "sample (not measured)\n");
}

static void text_quality(const gp_live_job_t *j, FILE *f)
{
	double cpu = 0, last = 0, iv = 0;
	fprintf(f, "\n== Data quality, so far ==\n");
	for (unsigned i = 0; i < j->n; i++) {
		cpu += j->r[i].agent_cpu_s;
		last = j->r[i].agent_cpu_last_ms > last ? j->r[i].agent_cpu_last_ms : last;
		iv = j->r[i].interval_s;
		if (j->r[i].lost)
			fprintf(f, "rank %d: %llu records lost (%s)\n", j->r[i].rank,
			        (unsigned long long)j->r[i].lost, j->r[i].lost_by);
	}
	if (!j->lost)
		fprintf(f, "nothing lost so far (every rank's counters)\n");
	if (j->unreadable)
		fprintf(f,
		        "%u live file(s) not read, their ranks not counted: %u over %u KiB (not a "
		        "live file), %u not the job's owner's or not live files\n",
		        j->unreadable, j->too_big, GP_LIVE_MAXFILE / 1024,
		        j->unreadable - j->too_big);
	fprintf(f,
	        "gpuprof's agents used %.3f s of CPU in all so far, at most %.1f ms in a rank's "
	        "last %.0f s interval\n",
	        cpu, last, iv);
}

static void text_all(FILE *to, const void *arg)
{
	const gp_live_job_t *j = arg;
	text_head(j, to);
	text_findings(j, to);
	text_steps(j, to);
	text_gpus(j, to);
	text_quality(j, to);
}

void gp_live_report_text(const gp_live_job_t *j, FILE *f)
{
	/* as the full report: made safe for a terminal and cut into lines in one place
	 * (gp_text_report): findings and step names are the program's own strings */
	gp_text_report(f, text_all, j);
}

/* `pre"key": d` with prec decimals, null where d is not finite (JSON has none). */
static void jnum(FILE *f, const char *pre, const char *key, double d, int prec)
{
	fprintf(f, "%s\"%s\": ", pre, key);
	gp_json_fixed(f, d, prec);
}

static void json_rank(const gp_live_job_t *j, unsigned i, FILE *f)
{
	const gp_live_rank_t *r = &j->r[i];
	bool steps = r->step_source[0], s = gp_live_sampled(r);
	fprintf(f, "{\"step\": ");
	gp_json_str(f, r->step);
	fprintf(f, ", \"rank\": %d, \"node\": ", r->rank);
	gp_json_str(f, r->node);
	fprintf(f, ", \"state\": \"%s\"", state_of(j, i));
	jnum(f, ", ", "written", r->written, 3);
	jnum(f, ", ", "elapsed_s", r->elapsed_s, 3);
	fprintf(f, ", \"steps\": {\"name\": ");
	gp_json_str(f, r->step_name);
	/* not measured is null, never 0 (the text's '-'): no steps yet, no step in the last
	 * interval, no NVML sample */
	fprintf(f,
	        ", \"source\": \"%s\", \"basis\": \"%s\", \"n\": %u, \"warmup\": %u, "
	        "\"so_far\": {\"median_ms\": ",
	        r->step_source, r->step_basis, r->steps, r->warmup);
	gp_json_num(f, steps, r->median_ms, 4);
	fprintf(f, ", \"p95_ms\": ");
	gp_json_num(f, steps, r->p95_ms, 4);
	fprintf(f, ", \"mean_ms\": ");
	gp_json_num(f, steps, r->mean_ms, 4);
	jnum(f, "}, \"last\": {", "from_s", r->last_from_s, 3);
	jnum(f, ", ", "to_s", r->last_to_s, 3);
	fprintf(f, ", \"n\": %u, \"median_ms\": ", r->last_steps);
	gp_json_num(f, steps && r->last_steps, r->last_median_ms, 4);
	fprintf(f, "}}, \"gpu\": {\"devices\": %u, \"samples\": %u, \"so_far\": {\"busy_pct\": ",
	        r->ngpus, r->samples);
	gp_json_num(f, s, r->busy_pct, 2);
	fprintf(f, ", \"idle_startup_s\": ");
	gp_json_num(f, s, r->idle_startup_s, 3);
	fprintf(f, ", \"idle_steps_s\": ");
	gp_json_num(f, s, r->idle_steps_s, 3);
	fprintf(f, "}, \"last\": {\"busy_pct\": ");
	gp_json_num(f, gp_live_last_sampled(r), r->last_busy_pct, 2);
	fprintf(f, "}, \"mem_used_bytes\": ");
	gp_json_num(f, s, (double)r->mem_used, 0);
	fprintf(f, ", \"mem_peak_bytes\": ");
	gp_json_num(f, s, (double)r->mem_peak, 0);
	fprintf(f, ", \"mem_total_bytes\": ");
	gp_json_num(f, r->mem_total > 0, (double)r->mem_total, 0);
	fprintf(f, "}, \"lost\": %llu", (unsigned long long)r->lost);
	jnum(f, ", ", "agent_cpu_s", r->agent_cpu_s, 4);
	fprintf(f, "}");
}

static void json_findings(const gp_live_job_t *j, FILE *f)
{
	char line[640];
	unsigned n = 0;
	fprintf(f, ", \"findings\": [");
	for (unsigned i = 0; i < j->n; i++)
		for (unsigned k = 0; k < j->r[i].nfind; k++) {
			const gp_live_finding_t *x = &j->r[i].find[k];
			finding_text(&j->r[i], x, line, sizeof(line));
			fprintf(f, "%s{\"id\": ", n++ ? ", " : "");
			gp_json_str(f, x->id);
			fprintf(f, ", \"step\": ");
			gp_json_str(f, j->r[i].step);
			fprintf(f, ", \"rank\": %d, \"text\": ", j->r[i].rank);
			gp_json_str(f, line);
			if (!strcmp(x->id, "slowdown")) {
				jnum(f, ", ", "since_s", j->r[i].slow_since_s, 3);
				jnum(f, ", ", "since", j->r[i].started + j->r[i].slow_since_s, 3);
				jnum(f, ", ", "ratio", j->r[i].slow_ratio, 4);
				jnum(f, ", ", "base_ms", j->r[i].slow_base_ms, 4);
			}
			fprintf(f, "}");
		}
	if (j->slowest >= 0 && j->slowest_ratio >= GP_LIVE_SLOW_RATIO && j->n > 1) {
		fprintf(f, "%s{\"id\": \"straggler\", \"step\": ", n++ ? ", " : "");
		gp_json_str(f, j->r[j->slowest].step);
		fprintf(f, ", \"rank\": %d", j->r[j->slowest].rank);
		jnum(f, ", ", "last_ms", j->r[j->slowest].last_median_ms, 4);
		jnum(f, ", ", "ratio", j->slowest_ratio, 4);
		jnum(f, ", ", "ranks_last_ms", j->now_ms, 4);
		fprintf(f, "}");
	}
	fprintf(f, "]");
}

void gp_live_report_json(const gp_live_job_t *j, FILE *f)
{
	fprintf(f, "{\"live\": true, \"covers\": \"the job so far\", \"job\": ");
	gp_json_str(f, j->n ? j->r[0].job : "");
	fprintf(f, ", \"dir\": ");
	gp_json_str(f, j->dir);
	jnum(f, ", ", "read_at", j->now, 3);
	jnum(f, ", ", "started", j->started, 3);
	jnum(f, ", ", "elapsed_s", j->elapsed_s, 3);
	fprintf(f,
	        ", \"running\": %u, \"ended\": %u, \"gone\": %u, \"step_median_ms\": ", j->running,
	        j->ended, j->nstale);
	gp_json_num(f, j->median_ms > 0, j->median_ms, 4);
	fprintf(f, ", \"step_last_ms\": ");
	gp_json_num(f, j->now_ms > 0, j->now_ms, 4);
	fprintf(f, ", \"busy_pct\": ");
	gp_json_num(f, j->with_gpus, j->busy_pct, 2);
	fprintf(f, ", \"lost\": %llu", (unsigned long long)j->lost);
	json_findings(j, f);
	fprintf(f, ", \"ranks\": [");
	for (unsigned i = 0; i < j->n; i++) {
		fprintf(f, "%s", i ? ", " : "");
		json_rank(j, i, f);
	}
	fprintf(f, "]}\n");
}

void gp_live_report_line(const gp_live_job_t *j, char *out, size_t len)
{
	char hms[24];
	int n = snprintf(out, len, "gpuprof: running, %s so far, %u rank(s) running",
	                 gp_live_hms(j->elapsed_s, hms, sizeof(hms)), j->running);
	if (n > 0 && (size_t)n < len && j->median_ms > 0)
		n += snprintf(out + n, len - (size_t)n, ", median step %.3f ms so far, %.3f ms now",
		              j->median_ms, j->now_ms);
	if (n > 0 && (size_t)n < len && j->first_find >= 0)
		snprintf(out + n, len - (size_t)n, "; %s (rank %d)", j->r[j->first_find].find[0].id,
		         j->r[j->first_find].rank);
}
