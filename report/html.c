/* HTML report: one self-contained file (no script, no network: plots are inline SVG, hover
 * text is SVG's <title>), read top to bottom as a person asks: what to fix first (the
 * findings with what each would save), how slow (step time per rank over the steps, the
 * warm-up shaded), where the time goes (GPU busy and idle per rank, busy over time,
 * kernels), where the memory goes (device memory over time, the peak marked), what NVML
 * saw (utilisation, power, SM clock), then the tables and the text report.
 *
 * Many ranks: with more than LINES ranks a plot draws the band from the lowest to the
 * highest rank, the median across ranks, and the ranks furthest from the median by name;
 * tables give min/median/p95/max with the outlier ranks named (`report --ranks` for the
 * detail). Plain SVG because it needs no library to vet or vendor and renders the same
 * in any browser. */
#include "config.h"
#include "names.h"
#include "job.h"
#include "tables.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define W       900 /* plot size */
#define H       250
#define ML      70 /* margins: left (ticks, unit), right, top, bottom */
#define MR      20
#define MT      12
#define MB      38
#define LINES   8 /* ranks drawn one line each; more: a band, the median, the outliers */
#define OUTLIER 3 /* outlier ranks named on a band */

static void esc(FILE *o, const char *s)
{
	gp_html_escn(o, s, SIZE_MAX);
}

/* A long name with its middle taken out: both ends say more than the start alone. */
static const char *ellipsize(const char *s, size_t max, char *buf, size_t len)
{
	size_t n = strlen(s);
	if (n <= max || max < 8 || len < max + 4) {
		snprintf(buf, len, "%s", s);
		return buf;
	}
	/* two thirds from the start: kernels' names differ early (gemm_nt vs gemm_tn) */
	size_t head = (max - 1) * 2 / 3, tail = max - 1 - head;
	snprintf(buf, len, "%.*s\xe2\x80\xa6%s", (int)head, s, s + n - tail);
	return buf;
}

/* What the page is about: the Slurm job (and its name), or for a run without Slurm
 * (gpuprof run: no job id) the program that ran, then the directory's name */
static const char *page_title(const gp_job_t *job, char *buf, size_t len)
{
	const gp_rank_t *r0 = job->nranks ? &job->ranks[0] : NULL;
	char cmd[160];
	if (job->job[0] && strcmp(job->job, "?"))
		snprintf(buf, len, "job %s%s%s%s", job->job, r0 && r0->id.job_name.s ? " (" : "",
		         r0 && r0->id.job_name.s ? gp_txt(r0->id.job_name) : "",
		         r0 && r0->id.job_name.s ? ")" : "");
	else if (r0 && r0->id.command.s) {
		const char *c = gp_txt(r0->id.command), *sp = strchr(c, ' '), *sl = c;
		for (const char *q = c; *q && q != sp; q++) /* the program's own name, no path */
			if (*q == '/')
				sl = q + 1;
		snprintf(buf, len, "%s (gpuprof run)", ellipsize(sl, 60, cmd, sizeof(cmd)));
	} else {
		const char *sl = strrchr(job->dir, '/');
		snprintf(buf, len, "%s", sl && sl[1] ? sl + 1 : job->dir);
	}
	return buf;
}

static const char *color(unsigned i)
{
	static const char *c[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
	                          "#9467bd", "#8c564b", "#e377c2", "#17becf"};
	return c[i % 8];
}

/* Tick step: 1, 2 or 5 times a power of ten, about five ticks over range. */
static double nice_step(double range)
{
	if (!(range > 0))
		return 1;
	double raw = range / 5, p = pow(10, floor(log10(raw))), f = raw / p;
	return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
}

/* SI ticks, never scientific notation: 0.25, 12, 1.5k, 2M */
static const char *si(double v, char *b, size_t len)
{
	double a = fabs(v);
	if (a >= 1e6)
		snprintf(b, len, "%.3gM", v / 1e6);
	else if (a >= 1e4)
		snprintf(b, len, "%.3gk", v / 1e3);
	else if (a >= 100 || a == 0 || fabs(v - round(v)) < 1e-9)
		snprintf(b, len, "%.0f", v);
	else
		snprintf(b, len, "%.3g", v);
	return b;
}

typedef struct frame {
	double x0, x1, y0, y1; /* data ranges */
} frame_t;

static double X(const frame_t *f, double v)
{
	return ML + (W - ML - MR) * (f->x1 > f->x0 ? (v - f->x0) / (f->x1 - f->x0) : 0.5);
}

static double Y(const frame_t *f, double v)
{
	return H - MB - (H - MB - MT) * (f->y1 > f->y0 ? (v - f->y0) / (f->y1 - f->y0) : 0);
}

/* Heading, legend slot, SVG with grid, ticks and axis titles (units in them). */
static void frame_open(FILE *o, const char *id, const char *title, const char *note, const char *xl,
                       const char *yl, frame_t *f)
{
	char b[32];
	fprintf(o, "<h3>");
	esc(o, title);
	fprintf(o, "</h3>\n");
	if (note && *note) {
		fprintf(o, "<p class=\"note\">");
		esc(o, note);
		fprintf(o, "</p>\n");
	}
	if (f->y1 <= f->y0)
		f->y1 = f->y0 + 1;
	double ys = nice_step(f->y1 - f->y0), xs = nice_step(f->x1 - f->x0);
	f->y1 = f->y0 + ceil((f->y1 - f->y0) / ys - 1e-9) * ys; /* the top on a tick */
	fprintf(o,
	        "<svg class=\"plot\" id=\"%s\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
	        "xmlns=\"http://www.w3.org/2000/svg\" font-family=\"sans-serif\">\n",
	        id, W, H, W, H);
	for (double v = f->y0; *yl && v <= f->y1 + ys / 2; v += ys) { /* no unit: no ticks */
		double y = Y(f, v);
		fprintf(
		    o,
		    "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>"
		    "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%s</text>\n",
		    ML, y, W - MR, y, ML - 5, y + 4, si(v, b, sizeof(b)));
	}
	for (double v = ceil(f->x0 / xs) * xs; v <= f->x1 + xs / 1000; v += xs) {
		double x = X(f, v);
		fprintf(
		    o,
		    "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#999\"/>"
		    "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">%s</text>\n",
		    x, H - MB, x, H - MB + 4, x, H - MB + 16, si(v, b, sizeof(b)));
	}
	fprintf(o,
	        "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>"
	        "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>\n",
	        ML, H - MB, W - MR, H - MB, ML, MT, ML, H - MB);
	fprintf(o, "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">",
	        (W + ML - MR) / 2, H - 6);
	esc(o, xl);
	fprintf(o,
	        "</text>\n<text x=\"14\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\" "
	        "transform=\"rotate(-90 14 %d)\">",
	        (H - MB + MT) / 2, (H - MB + MT) / 2);
	esc(o, yl);
	fprintf(o, "</text>\n");
}

/* A line through the points with y >= 0 (negative: no sample, the line breaks). */
static void line(FILE *o, const frame_t *f, const double *x, const double *y, unsigned n,
                 const char *col, double width, const char *title)
{
	bool open = false;
	for (unsigned i = 0; i <= n; i++) {
		bool have = i < n && y[i] >= 0 && isfinite(y[i]);
		if (have && !open) {
			fprintf(o,
			        "<polyline class=\"series\" fill=\"none\" stroke=\"%s\" "
			        "stroke-width=\"%.1f\" points=\"",
			        col, width);
			open = true;
		}
		if (have)
			fprintf(o, "%.1f,%.1f ", X(f, x[i]), Y(f, y[i]));
		if (!have && open) {
			fprintf(o, "\"><title>");
			esc(o, title);
			fprintf(o, "</title></polyline>\n");
			open = false;
		}
	}
}

/* The band between lo and hi where both are sampled. */
static void band(FILE *o, const frame_t *f, const double *x, const double *lo, const double *hi,
                 unsigned n, const char *title)
{
	fprintf(o, "<polygon class=\"band\" fill=\"#1f77b4\" fill-opacity=\"0.18\" points=\"");
	for (unsigned i = 0; i < n; i++)
		if (lo[i] >= 0)
			fprintf(o, "%.1f,%.1f ", X(f, x[i]), Y(f, hi[i]));
	for (unsigned i = n; i-- > 0;)
		if (lo[i] >= 0)
			fprintf(o, "%.1f,%.1f ", X(f, x[i]), Y(f, lo[i]));
	fprintf(o, "\"><title>");
	esc(o, title);
	fprintf(o, "</title></polygon>\n");
}

typedef struct legend {
	unsigned n;
	char text[LINES + 4][64];
	char col[LINES + 4][32];
	bool dash[LINES + 4];
} legend_t;

static void legend_add(legend_t *l, const char *col, const char *text)
{
	if (l->n < sizeof(l->text) / sizeof(l->text[0])) {
		snprintf(l->col[l->n], sizeof(l->col[0]), "%s", col);
		snprintf(l->text[l->n++], sizeof(l->text[0]), "%s", text);
	}
}

static void legend_close(FILE *o, const legend_t *l)
{
	fprintf(o, "</svg>\n<div class=\"legend\">");
	for (unsigned i = 0; i < l->n; i++) {
		fprintf(o, "<span><i style=\"background:%s\"></i>", l->col[i]);
		esc(o, l->text[i]);
		fprintf(o, "</span>");
	}
	fprintf(o, "</div>\n");
}

static int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Per-rank series, sampled at n points: one line per rank when there are few; else the
 * band of the ranks, their median, and the OUTLIER ranks furthest from the median (mean
 * absolute distance) by name. get(r, i) < 0: no sample. */
typedef double (*sample_fn)(const gp_rank_t *r, unsigned i, const void *ctx);

static void ranks_plot(FILE *o, const gp_job_t *job, const frame_t *f, const double *x, unsigned n,
                       sample_fn get, const void *ctx, const char *unit, legend_t *lg)
{
	char t[96];
	if (job->nranks <= LINES) {
		double *y = calloc(n ? n : 1, sizeof(double));
		for (unsigned r = 0; y && r < job->nranks; r++) {
			for (unsigned i = 0; i < n; i++)
				y[i] = get(&job->ranks[r], i, ctx);
			snprintf(t, sizeof(t), "rank %d (%s)", job->ranks[r].id.rank, unit);
			line(o, f, x, y, n, color(r), 1.6, t);
			snprintf(t, sizeof(t), "rank %d", job->ranks[r].id.rank);
			legend_add(lg, color(r), t);
		}
		free(y);
		return;
	}
	double *lo = calloc(n ? n : 1, sizeof(double)), *hi = calloc(n ? n : 1, sizeof(double)),
	       *med = calloc(n ? n : 1, sizeof(double)), *col = calloc(job->nranks, sizeof(double)),
	       *dist = calloc(job->nranks, sizeof(double));
	unsigned *cnt = calloc(job->nranks, sizeof(unsigned));
	if (!lo || !hi || !med || !col || !dist || !cnt)
		goto out;
	for (unsigned i = 0; i < n; i++) {
		unsigned k = 0;
		for (unsigned r = 0; r < job->nranks; r++) {
			double v = get(&job->ranks[r], i, ctx);
			if (v >= 0)
				col[k++] = v;
		}
		if (!k) {
			lo[i] = hi[i] = med[i] = -1;
			continue;
		}
		qsort(col, k, sizeof(double), cmpd);
		lo[i] = col[0];
		hi[i] = col[k - 1];
		med[i] = k % 2 ? col[k / 2] : (col[k / 2 - 1] + col[k / 2]) / 2;
	}
	for (unsigned r = 0; r < job->nranks; r++)
		for (unsigned i = 0; i < n; i++) {
			double v = get(&job->ranks[r], i, ctx);
			if (v >= 0 && med[i] >= 0) {
				dist[r] += fabs(v - med[i]);
				cnt[r]++;
			}
		}
	snprintf(t, sizeof(t), "lowest to highest of %u ranks (%s)", job->nranks, unit);
	band(o, f, x, lo, hi, n, t);
	legend_add(lg, "rgba(31,119,180,.3)", t);
	snprintf(t, sizeof(t), "median across ranks (%s)", unit);
	line(o, f, x, med, n, "#1f77b4", 2, t);
	legend_add(lg, "#1f77b4", "median across ranks");
	/* the outliers, furthest first */
	bool *taken = calloc(job->nranks, sizeof(bool));
	double *y = calloc(n ? n : 1, sizeof(double));
	for (unsigned k = 0; taken && y && k < OUTLIER; k++) {
		int best = -1;
		for (unsigned r = 0; r < job->nranks; r++)
			if (!taken[r] && cnt[r] &&
			    (best < 0 || dist[r] / cnt[r] > dist[best] / cnt[best]))
				best = (int)r;
		if (best < 0 || dist[best] <= 0)
			break;
		taken[best] = true;
		for (unsigned i = 0; i < n; i++)
			y[i] = get(&job->ranks[best], i, ctx);
		snprintf(t, sizeof(t), "rank %d: furthest from the median (%s)",
		         job->ranks[best].id.rank, unit);
		line(o, f, x, y, n, color(3 + k), 1.4, t);
		snprintf(t, sizeof(t), "rank %d (outlier)", job->ranks[best].id.rank);
		legend_add(lg, color(3 + k), t);
	}
	free(taken);
	free(y);
out:
	free(lo);
	free(hi);
	free(med);
	free(col);
	free(dist);
	free(cnt);
}

/* ---- how slow ---- */

/* rank r's sample of the plot's i-th step (ctx: the step numbers the plot is drawn at, or
 * NULL: step i); its samples are in step order. A rank that kept GP_STEP_KEEP of more
 * steps answers for a step between two kept ones with the earlier, so its line does not
 * break at every step it did not keep. */
static double step_sample(const gp_rank_t *r, unsigned i, const void *ctx)
{
	if (ctx)
		i = ((const unsigned *)ctx)[i];
	unsigned lo = 0, hi = r->steps.nms;
	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;
		if (gp_step_no(r, mid) < i)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < r->steps.nms && gp_step_no(r, lo) == i)
		return r->steps.ms[lo];
	return r->steps.nall > r->steps.nms && lo > 0 && lo < r->steps.nms ? r->steps.ms[lo - 1]
	                                                                   : -1;
}

static void plot_steps(FILE *o, const gp_job_t *job)
{
	unsigned warm = 0, last = 0;
	double ymax = 0;
	bool thinned = false;
	for (unsigned i = 0; i < job->nranks; i++) {
		const gp_rank_t *r = &job->ranks[i];
		if (!r->steps.nms)
			continue;
		thinned |= r->steps.nall > r->steps.nms;
		warm = r->steps.warmup > warm ? r->steps.warmup : warm;
		last = gp_step_no(r, r->steps.nms - 1) + 1 > last
		           ? gp_step_no(r, r->steps.nms - 1) + 1
		           : last;
		for (unsigned s = 0; s < r->steps.nms; s++)
			ymax = fmax(ymax, r->steps.ms[s]);
	}
	if (!last)
		return;
	const char *basis = !strcmp(job->step_basis, "gpu")
	                        ? "GPU step: completion of a step's GPU work to the next one's"
	                    : !strcmp(job->step_basis, "period") ? "step period: start to start"
	                                                         : job->step_basis;
	char note[320], thin[128] = "";
	if (thinned)
		snprintf(thin, sizeof(thin),
		         " A rank of more than %d steps is drawn from the medians of %d blocks "
		         "of consecutive steps, each at its first (its statistics are from all).",
		         GP_STEP_KEEP, GP_STEP_KEEP);
	snprintf(note, sizeof(note),
	         "%s; the first %u step(s) are warm-up, excluded from every "
	         "statistic (shaded).%s",
	         basis, warm, thin);
	/* drawn at every step, or where ranks kept the medians of GP_STEP_KEEP blocks of
	 * steps, at GP_STEP_KEEP steps (the blocks' first steps, when they ran as many) */
	unsigned n = thinned && last > GP_STEP_KEEP ? GP_STEP_KEEP : last;
	double *x = malloc(n * sizeof(double));
	unsigned *at = n < last ? malloc(n * sizeof(unsigned)) : NULL;
	if (!x || (n < last && !at)) {
		free(x);
		free(at);
		return;
	}
	for (unsigned i = 0; i < n; i++) {
		if (at)
			at[i] = (unsigned)((uint64_t)i * (last - 1) / (n - 1));
		x[i] = at ? at[i] : i;
	}
	frame_t f = {0, last > 1 ? last - 1 : 1, 0, ymax * 1.08};
	frame_open(o, "steps", "Step time per rank", note, "step number", "step time (ms)", &f);
	if (warm)
		fprintf(o,
		        "<rect class=\"warmup\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" "
		        "fill=\"#bbb\" fill-opacity=\"0.3\"><title>warm-up: excluded</title></rect>"
		        "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" fill=\"#555\">warm-up</text>\n",
		        X(&f, 0), MT, X(&f, warm - 0.5) - X(&f, 0), H - MB - MT, X(&f, 0) + 3,
		        MT + 12);
	/* the steps whose CUDA activity was captured (--capture=steps=A-B): the GPU figures
	 * come from them alone */
	const gp_rank_t *cw = NULL;
	for (unsigned i = 0; i < job->nranks && !cw; i++)
		if (job->ranks[i].capture.window && job->ranks[i].capture.steps)
			cw = &job->ranks[i];
	char cap[96] = "";
	if (cw) {
		snprintf(cap, sizeof(cap), "CUDA captured (steps %u-%u, rank %d)",
		         cw->capture.first, cw->capture.last, cw->id.rank);
		fprintf(o,
		        "<rect class=\"capture\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" "
		        "fill=\"#2ca02c\" fill-opacity=\"0.12\"><title>%s</title></rect>\n",
		        fmax(X(&f, cw->capture.first - 0.5), ML), MT,
		        fmin(X(&f, cw->capture.last + 0.5), W - MR) -
		            fmax(X(&f, cw->capture.first - 0.5), ML),
		        H - MB - MT, cap);
	}
	legend_t lg = {0};
	ranks_plot(o, job, &f, x, n, step_sample, at, "ms", &lg);
	if (warm)
		legend_add(&lg, "rgba(150,150,150,.4)", "warm-up (excluded)");
	if (cw)
		legend_add(&lg, "rgba(44,160,44,.25)", cap);
	legend_close(o, &lg);
	free(x);
	free(at);
}

/* ---- where the time goes ---- */

#define NPARTS 6
/* busy, communication alone, waiting for the host, synchronising, between kernels, other:
 * shares of the span
 * (derive.c, as report.json and the tables give them) */
static void parts(const gp_rank_t *r, double p[NPARTS])
{
	p[0] = r->shares.busy_pct;
	p[1] = r->shares.comm_only_pct;
	p[2] = r->shares.idle_host_pct;
	p[3] = r->shares.idle_sync_pct;
	p[4] = r->shares.idle_kernel_pct;
	p[5] = r->shares.idle_other_pct;
}

static const char *part_name[NPARTS] = {"busy",
                                        "communication alone",
                                        "idle: waiting for the host",
                                        "idle: synchronising",
                                        "idle: between kernels",
                                        "idle: other"};
static const char *part_col[NPARTS] = {"#2ca02c", "#1f77b4", "#ff7f0e",
                                       "#d62728", "#9467bd", "#bbbbbb"};

/* a rank's busy and idle shares are of its steps: measured with kernel records and steps */
static bool busy_measured(const gp_rank_t *r)
{
	return r->gpu.span_ns > 0 && r->steps.nms > 0;
}

static void plot_busy(FILE *o, const gp_job_t *job)
{
	unsigned any = 0, out = 0;
	for (unsigned i = 0; i < job->nranks; i++) {
		any += job->ranks[i].gpu.span_ns > 0;
		out += job->ranks[i].gpu.span_ns > 0 && !busy_measured(&job->ranks[i]);
	}
	if (!any || (job->nranks > 32 && any == out))
		return;
	fprintf(o, "<h3>GPU busy and idle per rank</h3>\n"
	           "<p class=\"note\">Share of each rank's steps (warm-up excluded)");
	if (job->nranks > 32 && out)
		fprintf(o, "; %u rank%s without steps left out", out, out == 1 ? "" : "s");
	fprintf(o, ".</p>\n");
	unsigned rows = job->nranks <= 32 ? job->nranks : 5, rh = 18;
	fprintf(o,
	        "<svg class=\"plot\" id=\"busy\" width=\"%d\" height=\"%u\" "
	        "xmlns=\"http://www.w3.org/2000/svg\" font-family=\"sans-serif\">\n",
	        W, rows * rh + 30);
	double x0 = 170, w = W - x0 - MR;
	char t[160];
	if (job->nranks <= 32) {
		for (unsigned i = 0; i < job->nranks; i++) {
			const gp_rank_t *r = &job->ranks[i];
			double p[NPARTS], x = x0;
			parts(r, p);
			fprintf(o,
			        "<text x=\"%.0f\" y=\"%u\" font-size=\"11\" "
			        "text-anchor=\"end\">rank %d",
			        x0 - 6, i * rh + 13, r->id.rank);
			if (r->id.node.s) {
				fprintf(o, " (");
				esc(o, gp_txt(r->id.node));
				fprintf(o, ")");
			}
			fprintf(o, "</text>\n");
			for (int k = 0; k < NPARTS; k++) {
				fprintf(o,
				        "<rect class=\"bar\" x=\"%.1f\" y=\"%u\" width=\"%.1f\" "
				        "height=\"%u\" fill=\"%s\"><title>rank %d: %s "
				        "%.1f%%</title></rect>\n",
				        x, i * rh + 2, w * p[k] / 100, rh - 4, part_col[k],
				        r->id.rank, part_name[k], p[k]);
				x += w * p[k] / 100;
			}
		}
	} else {
		/* per part: the spread across the ranks with steps and kernel records (a bar
		 * from the lowest to the highest, a tick at the median), the lowest and highest
		 * ranks named in a column on the right */
		double *v = malloc(job->nranks * sizeof(double));
		unsigned *of = malloc(job->nranks * sizeof(unsigned)), m = 0;
		for (unsigned i = 0; v && of && i < job->nranks; i++)
			if (busy_measured(&job->ranks[i]))
				of[m++] = i;
		w = W - x0 - MR - 360;
		for (int k = 0; v && of && m && k < NPARTS; k++) {
			unsigned lo = 0, hi = 0;
			for (unsigned j = 0; j < m; j++) {
				double p[NPARTS];
				parts(&job->ranks[of[j]], p);
				v[j] = p[k];
				lo = v[j] < v[lo] ? j : lo;
				hi = v[j] > v[hi] ? j : hi;
			}
			double mn = v[lo], mx = v[hi];
			lo = of[lo], hi = of[hi];
			qsort(v, m, sizeof(double), cmpd);
			double md = v[m / 2];
			unsigned y = (unsigned)k * rh;
			snprintf(t, sizeof(t),
			         "lowest %.1f%% (rank %d), median %.1f%%, highest %.1f%% (rank %d)",
			         mn, job->ranks[lo].id.rank, md, mx, job->ranks[hi].id.rank);
			fprintf(o,
			        "<text x=\"%.0f\" y=\"%u\" font-size=\"11\" text-anchor=\"end\">",
			        x0 - 6, y + 13);
			esc(o, part_name[k]);
			fprintf(
			    o,
			    "</text>\n<rect class=\"bar\" x=\"%.1f\" y=\"%u\" width=\"%.1f\" "
			    "height=\"%u\" fill=\"%s\" fill-opacity=\"0.4\"/>\n<rect x=\"%.1f\" "
			    "y=\"%u\" width=\"3\" height=\"%u\" fill=\"%s\"/>\n<text x=\"%.0f\" "
			    "y=\"%u\" font-size=\"10\">",
			    x0 + w * mn / 100, y + 2, w * (mx - mn) / 100 + 1, rh - 4, part_col[k],
			    x0 + w * md / 100 - 1, y + 1, rh - 2, part_col[k], W - MR - 350.0,
			    y + 13);
			esc(o, t);
			fprintf(o, "</text>\n");
		}
		free(v);
		free(of);
	}
	for (int p = 0; p <= 100; p += 25)
		fprintf(o,
		        "<text x=\"%.1f\" y=\"%u\" font-size=\"10\" "
		        "text-anchor=\"middle\">%d%%</text>\n",
		        x0 + w * p / 100, rows * rh + 14, p);
	fprintf(o, "</svg>\n<div class=\"legend\">");
	for (int k = 0; k < NPARTS; k++) {
		fprintf(o, "<span><i style=\"background:%s\"></i>", part_col[k]);
		esc(o, part_name[k]);
		fprintf(o, "</span>");
	}
	fprintf(o, "</div>\n");
}

/* The warm-up steps on a time axis: shaded, as on the step plot (the latest warm-up end
 * among the ranks; each rank's axis starts at its own first plotted step) */
static void warm_band(FILE *o, const gp_job_t *job, const frame_t *f)
{
	double w = 0;
	for (unsigned i = 0; i < job->nranks; i++)
		if (job->ranks[i].ts.span_s > 0)
			w = fmax(w, job->ranks[i].ts.warm_s);
	if (w <= 0 || w >= f->x1)
		return;
	fprintf(o,
	        "<rect class=\"warmup\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" "
	        "fill=\"#bbb\" fill-opacity=\"0.3\"><title>warm-up steps: excluded from the "
	        "statistics</title></rect>\n",
	        X(f, 0), MT, X(f, w) - X(f, 0), H - MB - MT);
}

/* GPU busy over time, a row per rank: readable for 1024 ranks. From kernel records, or
 * NVML's utilisation where no kernel was recorded (mode gpu without cuda). */
static void plot_util(FILE *o, const gp_job_t *job, bool nvml)
{
	unsigned n = job->nranks;
	double span = 0;
	for (unsigned i = 0; i < n; i++)
		span = fmax(span, job->ranks[i].ts.span_s);
	if (!n || span <= 0)
		return;
	frame_t f = {0, span, 0, n};
	char note[200];
	snprintf(note, sizeof(note),
	         "%s, over each rank's steps (start-up and teardown not drawn); darker is busier.",
	         nvml ? "NVML's GPU utilisation (no kernel records in this job)"
	              : "Share of time a kernel ran, from the kernel records");
	frame_open(o, "util", "GPU busy over time, one row per rank", note,
	           "time since the rank's first step (s)", "", &f);
	warm_band(o, job, &f);
	double rowh = (double)(H - MB - MT) / n;
	for (unsigned i = 0; i < n; i++) {
		const gp_rank_t *r = &job->ranks[i];
		double cw = (X(&f, r->ts.span_s) - ML) / GP_TS;
		for (int b = 0; b < GP_TS; b++) {
			float u = nvml ? (r->ts.nvml_util[b] >= 0 ? r->ts.nvml_util[b] / 100 : 0)
			               : r->ts.util[b];
			if (u <= 0.005f)
				continue;
			fprintf(o,
			        "<rect class=\"cell\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
			        "height=\"%.1f\" "
			        "fill=\"rgb(%d,%d,255)\"/>\n",
			        ML + b * cw, MT + i * rowh, cw + 0.3, rowh + 0.3,
			        (int)(230 * (1 - u)), (int)(230 * (1 - u)));
		}
	}
	/* rank labels: every row up to 16, else every k-th */
	unsigned every = n <= 16 ? 1 : (n + 15) / 16;
	for (unsigned i = 0; i < n; i += every)
		fprintf(o,
		        "<text x=\"%d\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">rank "
		        "%d</text>\n",
		        ML - 4, MT + (i + 0.5) * rowh + 3, job->ranks[i].id.rank);
	fprintf(o, "</svg>\n<div class=\"legend\"><span><i style=\"background:rgb(230,230,255)\">"
	           "</i>idle</span><span><i style=\"background:rgb(115,115,255)\"></i>50%% busy"
	           "</span><span><i style=\"background:rgb(0,0,255)\"></i>busy</span></div>\n");
}

static void plot_kernels(FILE *o, const gp_job_t *job)
{
	unsigned n = job->nk < 12 ? job->nk : 12;
	if (!n || !job->k_total)
		return;
	double x0 = 400, w = W - x0 - 280; /* room for the share, the time, median and p95 */
	fprintf(o,
	        "<h3>Kernels (all ranks, the steady state's steps)</h3>\n<svg class=\"plot\" "
	        "id=\"kernels\" width=\"%d\" height=\"%u\" xmlns=\"http://www.w3.org/2000/svg\" "
	        "font-family=\"sans-serif\">\n",
	        W, 22 * n + 10);
	const char *names[12];
	char shown[12][56];
	for (unsigned i = 0; i < n; i++)
		names[i] = job->k[i].name;
	gp_display_names(names, NULL, n, shown[0], sizeof(shown[0]));
	for (unsigned i = 0; i < n; i++) {
		const gp_kstat_t *k = &job->k[i];
		double share = gp_job_kernel_share(job, i); /* the pipeline's (job.c) */
		const char *nm = shown[i];
		fprintf(o, "<g><title>");
		esc(o, k->name);
		fprintf(o, " (%s", gp_kernel_kind(k->name));
		if (k->in[0].name) {
			fprintf(o, "; launched in ");
			esc(o, k->in[0].name);
		}
		fprintf(o, ")");
		fprintf(o, ": %llu calls, %.2f ms; median %.2f us, p95 %.2f us, sd %.2f us",
		        (unsigned long long)k->calls, k->total / 1e6,
		        gp_kstat_quantile(k, 0.5) / 1e3, gp_kstat_quantile(k, 0.95) / 1e3,
		        gp_kstat_stddev(k) / 1e3);
		fprintf(o,
		        "</title><rect class=\"bar\" x=\"%.0f\" y=\"%u\" "
		        "width=\"%.1f\" height=\"16\" fill=\"%s\"/>\n<text x=\"%.0f\" y=\"%u\" "
		        "font-size=\"11\" font-family=\"monospace\" text-anchor=\"end\">",
		        x0, 5 + 22 * i, share * w + 1, k->comm ? "#d62728" : "#1f77b4", x0 - 6,
		        17 + 22 * i);
		/* the whole name on hover (title) */
		esc(o, nm);
		fprintf(o,
		        "</text>\n<text x=\"%.1f\" y=\"%u\" font-size=\"11\">%.1f%% (%.2f "
		        "ms; median %.1f us, p95 %.1f us)</text></g>\n",
		        x0 + share * w + 5, 17 + 22 * i, 100 * share, k->total / 1e6,
		        gp_kstat_quantile(k, 0.5) / 1e3, gp_kstat_quantile(k, 0.95) / 1e3);
	}
	fprintf(o, "</svg>\n<div class=\"legend\"><span><i style=\"background:#1f77b4\"></i>compute"
	           "</span><span><i style=\"background:#d62728\"></i>communication (NCCL)</span>"
	           "</div>\n");
	gp_kind_t kd[16];
	unsigned nkd = gp_job_kernel_kinds(job, kd, 16);
	fprintf(o, "<p>Kernel time by kind (read from the kernels' names):");
	for (unsigned i = 0; i < nkd; i++)
		fprintf(o, "%s %s %.1f%%", i ? ";" : "", kd[i].kind, 100 * kd[i].share);
	fprintf(o, "</p>\n");
}

/* ---- where the memory goes, what NVML saw ---- */

typedef struct series_ctx {
	int which; /* 0 memory, 1 NVML utilisation, 2 power, 3 SM clock */
	double scale;
} series_ctx_t;

static double series_sample(const gp_rank_t *r, unsigned b, const void *ctx)
{
	const series_ctx_t *c = ctx;
	if (r->ts.span_s <= 0)
		return -1;
	float v = c->which == 0   ? r->ts.mem_mib[b]
	          : c->which == 1 ? r->ts.nvml_util[b]
	          : c->which == 2 ? r->ts.nvml_w[b]
	                          : r->ts.nvml_mhz[b];
	return v < 0 ? -1 : v * c->scale;
}

/* the time of bucket b: the plots share one axis, in seconds since each rank's first step */
static bool time_axis(const gp_job_t *job, double *x, double *span)
{
	*span = 0;
	for (unsigned i = 0; i < job->nranks; i++)
		*span = fmax(*span, job->ranks[i].ts.span_s);
	for (int b = 0; b < GP_TS; b++)
		x[b] = *span * (b + 1) / GP_TS;
	return *span > 0;
}

static void plot_series(FILE *o, const gp_job_t *job, int which)
{
	static const char *ids[] = {"memory", "nvml-util", "nvml-power", "nvml-clock"};
	static const char *titles[] = {"Device memory per rank over time", "NVML: GPU utilisation",
	                               "NVML: power", "NVML: SM clock"};
	double x[GP_TS], span, ymax = 0;
	if (!time_axis(job, x, &span))
		return;
	series_ctx_t c = {which, 1};
	int pr = -1, pb = 0; /* the peak: rank and bucket */
	bool sampled = false;
	for (unsigned i = 0; i < job->nranks; i++)
		for (int b = 0; b < GP_TS; b++) {
			double v = series_sample(&job->ranks[i], (unsigned)b, &c);
			sampled |= v >= 0;
			if (v > ymax || (pr < 0 && v >= 0)) {
				ymax = v;
				pr = (int)i;
				pb = b;
			}
		}
	/* an idle GPU is worth a plot; a power or clock of 0 is one NVML could not read */
	if (!sampled || (which != 1 && ymax <= 0))
		return;
	const char *unit = which == 1 ? "%" : which == 2 ? "W" : which == 3 ? "MHz" : "MiB";
	if (which == 0 && ymax >= 4096) {
		c.scale = 1.0 / 1024;
		ymax /= 1024;
		unit = "GiB";
	}
	char yl[64], note[256];
	snprintf(yl, sizeof(yl), "%s (%s)",
	         which == 0   ? "live device memory"
	         : which == 1 ? "utilisation"
	         : which == 2 ? "power"
	                      : "SM clock",
	         unit);
	const gp_rank_t *r0 = &job->ranks[pr];
	if (which == 0)
		snprintf(note, sizeof(note),
		         "Bytes allocated and not yet freed at the end of each of %d intervals; "
		         "%.1f s of start-up before rank %d's steps not drawn; warm-up shaded.",
		         GP_TS, r0->ts.from_s, r0->id.rank);
	else
		snprintf(note, sizeof(note), "Mean of the samples in each of %d intervals.", GP_TS);
	frame_t f = {0, span, 0, which == 1 ? 100 : ymax * 1.1};
	frame_open(o, ids[which], titles[which], note, "time since the rank's first step (s)", yl,
	           &f);
	warm_band(o, job, &f);
	legend_t lg = {0};
	ranks_plot(o, job, &f, x, GP_TS, series_sample, &c, unit, &lg);
	if (which == 0) { /* the peak, marked and said */
		char b[32];
		double px = X(&f, x[pb]), py = Y(&f, ymax);
		fprintf(o,
		        "<circle class=\"peak\" cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"none\" "
		        "stroke=\"#d62728\" stroke-width=\"2\"/><text x=\"%.1f\" y=\"%.1f\" "
		        "font-size=\"11\" fill=\"#d62728\" text-anchor=\"%s\">peak %s %s, rank %d"
		        "</text>\n",
		        px, py, px + (px > W / 2 ? -8 : 8), py + 14 > H - MB ? py - 8 : py + 14,
		        px > W / 2 ? "end" : "start", si(ymax, b, sizeof(b)), unit, r0->id.rank);
	}
	legend_close(o, &lg);
}

/* ---- tables ---- */

static void th(FILE *o, const char *const *cols, unsigned n)
{
	fprintf(o, "<table>\n<tr>");
	for (unsigned i = 0; i < n; i++)
		fprintf(o, "<th>%s</th>", cols[i]);
	fprintf(o, "</tr>\n");
}

/* A rank's row of a per-rank table (tables.c: the text's columns, from the same JSON
 * fields); each figure's cell names its field (data-key), which the formats tier reads */
static void rank_row(FILE *o, const gp_rank_table_t *t, const gp_rank_t *r, const char *who)
{
	char b[128];
	fprintf(o, "<tr>");
	for (size_t i = 0; i < t->ncols; i++) {
		const gp_col_t *c = &t->cols[i];
		if (c->key)
			fprintf(o, "<td data-key=\"%s\">", c->key);
		else
			fprintf(o, "<td class=\"who\">");
		esc(o, gp_col_cell(c, r, who, b, sizeof(b)));
		fprintf(o, "</td>");
	}
	fprintf(o, "</tr>\n");
}

static int by_median(const void *a, const void *b)
{
	const gp_rank_t *x = *(const gp_rank_t *const *)a, *y = *(const gp_rank_t *const *)b;
	return x->steps.median_ms < y->steps.median_ms ? -1
	                                               : x->steps.median_ms > y->steps.median_ms;
}

/* Every rank up to 32; else the fastest, the median and the slowest ranks by step time
 * (gpuprof report --ranks LIST gives any rank's lines). */
static void rows(FILE *o, const gp_job_t *job, const gp_rank_table_t *t)
{
	char who[64];
	if (job->nranks <= 32) {
		for (unsigned i = 0; i < job->nranks; i++) {
			snprintf(who, sizeof(who), "%d", job->ranks[i].id.rank);
			rank_row(o, t, &job->ranks[i], who);
		}
		return;
	}
	/* by step time: the ranks with steps (a rank without has no step time, never the
	 * fastest; tables() says how many are left out) */
	const gp_rank_t **s = malloc(job->nranks * sizeof(*s));
	unsigned m = 0;
	if (!s)
		return;
	for (unsigned i = 0; i < job->nranks; i++)
		if (job->ranks[i].steps.nms)
			s[m++] = &job->ranks[i];
	qsort(s, m, sizeof(*s), by_median);
	unsigned pick[] = {0, 1, m / 2, m - 2, m - 1};
	const char *what[] = {"fastest", "2nd fastest", "median", "2nd slowest", "slowest"};
	for (unsigned k = 0; k < 5 && m >= 5; k++) {
		snprintf(who, sizeof(who), "%d (%s)", s[pick[k]]->id.rank, what[k]);
		rank_row(o, t, s[pick[k]], who);
	}
	for (unsigned k = 0; k < m && m < 5; k++) { /* too few to pick from: each */
		snprintf(who, sizeof(who), "%d", s[k]->id.rank);
		rank_row(o, t, s[k], who);
	}
	free(s);
}

static void rank_table(FILE *o, const gp_job_t *job, const gp_rank_table_t *t)
{
	fprintf(o, "<h3>%s</h3>\n<table id=\"table-%s\">\n<tr>", t->title, t->id);
	for (size_t i = 0; i < t->ncols; i++) {
		fprintf(o, "<th>");
		esc(o, t->cols[i].head);
		fprintf(o, "</th>");
	}
	fprintf(o, "</tr>\n");
	rows(o, job, t);
	fprintf(o, "</table>\n<p class=\"note\">");
	esc(o, t->legend);
	fprintf(o, "</p>\n");
}

static void tables(FILE *o, const gp_job_t *job)
{
	fprintf(o, "<h2>Tables</h2>\n");
	unsigned stepless = 0;
	for (unsigned i = 0; i < job->nranks; i++)
		stepless += !job->ranks[i].steps.nms;
	if (job->nranks > 32) {
		fprintf(o,
		        "<p class=\"note\">%u ranks: the fastest, median and slowest by step time",
		        job->nranks);
		if (stepless)
			fprintf(o, " of the %u with steps (%u without steps left out)",
			        job->nranks - stepless, stepless);
		fprintf(o, "; <code>gpuprof report --ranks LIST</code> for any rank.</p>\n");
	}
	for (unsigned t = 0; t < GP_NTABLES; t++)
		rank_table(o, job, &gp_rank_tables[t]);
	unsigned n = job->nr < 15 ? job->nr : 15;
	if (n) {
		static const char *rc[] = {"NVTX range", "count", "CPU ms", "GPU ms", "sync ms"};
		fprintf(o, "<h3>NVTX ranges (all ranks)</h3>\n");
		th(o, rc, 5);
		for (unsigned i = 0; i < n; i++) {
			const gp_rstat_t *r = &job->r[i];
			char nm[128];
			fprintf(o, "<tr><td title=\"");
			esc(o, r->name);
			fprintf(o, "\">");
			esc(o, ellipsize(r->name, 60, nm, sizeof(nm)));
			fprintf(o,
			        "</td><td>%llu</td><td>%.2f</td><td>%.2f</td><td>%.2f</td></tr>\n",
			        (unsigned long long)r->count, r->cpu_ns / 1e6, r->gpu_ns / 1e6,
			        r->sync_ns / 1e6);
		}
		fprintf(o, "</table>\n");
	}
}

/* ---- the page ---- */

/* The ranks whose PyTorch snapshots are gone (the pipeline's torch.snap_gone), as the
 * text's data-quality section says them: what the memory_viz export then shows. */
static void snapshots_gone(FILE *o, const gp_job_t *job)
{
	unsigned said = 0, more = 0;
	for (unsigned i = 0; i < job->nranks; i++) {
		const gp_rank_t *r = &job->ranks[i];
		char gone[600];
		unsigned named, n = gp_snapshots_gone(r, gone, sizeof(gone), &named);
		if (!n)
			continue;
		if (said++ >= 16) {
			more++;
			continue;
		}
		fprintf(o,
		        "<p class=\"note\" id=\"snapshots-gone-%u\">Rank %d: PyTorch's memory "
		        "snapshot%s ",
		        i, r->id.rank, n > 1 ? "s" : "");
		esc(o, gone);
		fprintf(o,
		        ", named by the rank file, %s: <code>gpuprof export "
		        "--format=memviz</code> %s.</p>\n",
		        gp_snapshots_verb(r, n),
		        n < named ? "takes the one left" : "shows CUDA's segments instead");
	}
	if (more)
		fprintf(o,
		        "<p class=\"note\">... and %u more ranks whose snapshots are gone.</p>\n",
		        more);
}

static void findings(FILE *o, const gp_job_t *job)
{
	fprintf(o, "<h2>What to fix first</h2>\n");
	if (!job->nf)
		fprintf(o, "<p id=\"no-findings\">No rule fired.</p>\n");
	for (unsigned i = 0; i < job->nf; i++) {
		const gp_finding_t *f = &job->f[i];
		const char *cls = f->kind == GP_F_OUTCOME ? "outcome"
		                  : f->kind == GP_F_TIME  ? "time"
		                                          : "memory";
		fprintf(o, "<div class=\"finding %s\" id=\"finding-%s\"><b>%u. ", cls, f->id,
		        i + 1);
		esc(o, f->title);
		fprintf(o, "</b>");
		if (gp_finding_has_saving(f) && f->saving_ms > 0)
			fprintf(
			    o,
			    " <span class=\"saving\">saves about %.2f ms per step (%.1f%%)</span>",
			    f->saving_ms, f->saving_pct);
		else if (gp_finding_has_saving(f) && f->saving_bytes > 0)
			fprintf(o, " <span class=\"saving\">frees about %.1f MiB</span>",
			        f->saving_bytes / 1048576.0);
		char relb[320];
		const char *rel = gp_finding_relation(job, f, relb, sizeof(relb));
		if (rel[0]) {
			fprintf(o, " <span class=\"effect\">(");
			esc(o, rel);
			fprintf(o, ")</span>");
		}
		fprintf(o, "<br><span class=\"k\">evidence</span> ");
		esc(o, f->evidence);
		fprintf(o, "<br><span class=\"k\">threshold</span> ");
		esc(o, f->threshold);
		fprintf(o, "<br><span class=\"k\">fix</span> ");
		esc(o, f->fix);
		fprintf(o, "</div>\n");
	}
}

/* The throughput beside the median (the job's figures, as report.json gives them), and
 * the ranks whose steps are not alike, for which the median is not the throughput. */
static void headline_throughput(FILE *o, const gp_job_t *job)
{
	if (job->step_period_rank < 0 || (unsigned)job->step_period_rank >= job->nranks ||
	    !(job->step_mean_period_ms > 0))
		return;
	fprintf(o,
	        "<p>Throughput: <span data-job=\"steps_per_second\">%.4g</span> steps/s, a step "
	        "every <span data-job=\"step_mean_period_ms\">%.3f</span> ms on average "
	        "(post-warm-up wall time over the steps%s).</p>\n",
	        job->steps_per_second, job->step_mean_period_ms,
	        job->nranks > 1 ? "; the slowest rank" : "");
	unsigned said = 0;
	for (unsigned i = 0; i < job->nranks && said < 4; i++) {
		const gp_step_shape_t *sh = &job->ranks[i].steps.shape;
		const gp_step_shift_t *sf = &job->ranks[i].steps.shift;
		if (sf->ratio > 0) { /* two levels in time: the slowdown finding's */
			said++;
			fprintf(o,
			        "<p class=\"note\">Rank %d: steps not alike (%.3f ms, then %.3f ms "
			        "from step %u on: %.2fx slower",
			        job->ranks[i].id.rank, sf->before_ms, sf->after_ms, sf->step,
			        sf->ratio);
			if (sf->work_ratio > 0) /* a planned change (text_throughput's words) */
				fprintf(o,
				        ", with %.2fx the %s a step: more work each step, not a "
				        "slower node",
				        sf->work_ratio, sf->work_what);
			fprintf(
			    o, "): its median %.3f ms is not its throughput, %.3f ms a step.</p>\n",
			    job->ranks[i].steps.median_ms, job->ranks[i].steps.mean_period_ms);
			continue;
		}
		if (!sh->shape[0] || !strcmp(sh->shape, "alike"))
			continue;
		said++;
		fprintf(o,
		        "<p class=\"note\">Rank %d: steps not alike (%s, %.3f to %.3f ms): its "
		        "median %.3f ms is not its throughput, %.3f ms a step.</p>\n",
		        job->ranks[i].id.rank, sh->shape, sh->low_ms, sh->high_ms,
		        job->ranks[i].steps.median_ms, job->ranks[i].steps.mean_period_ms);
	}
}

int gp_report_html(const gp_job_t *job, FILE *o)
{
	bool kernels = false, nvml = false;
	for (unsigned i = 0; i < job->nranks; i++) {
		kernels |= job->ranks[i].gpu.nkernels > 0;
		nvml |= job->ranks[i].gpu.nvml_samples > 0;
	}
	char title[256];
	page_title(job, title, sizeof(title));
	fprintf(o, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
	           "<title>gpuprof report: ");
	esc(o, title);
	fprintf(o,
	        "</title>\n<style>body{font-family:sans-serif;max-width:%dpx;margin:1.5em auto;"
	        "color:#222}h2{border-bottom:1px solid #ccc;margin-top:1.6em}"
	        ".note{color:#555;font-size:13px;margin:.2em 0 .4em}"
	        ".finding{border-left:5px solid #d62728;padding:.4em .8em;margin:.6em 0;"
	        "background:#fdf6f6}.finding.memory{border-color:#9467bd;background:#f8f5fc}"
	        ".finding.outcome{border-color:#333;background:#f4f4f4}"
	        ".saving{background:#2ca02c;color:#fff;border-radius:3px;padding:0 .4em;"
	        "font-size:13px}.effect{color:#777;font-size:13px}.k{color:#777;font-size:12px;"
	        "display:inline-block;width:5.5em}.legend{font-size:12px;margin:.2em 0 1em %dpx}"
	        ".legend span{margin-right:1.2em;white-space:nowrap}.legend i{display:inline-block;"
	        "width:14px;height:10px;margin-right:4px;vertical-align:middle}"
	        "table{border-collapse:collapse;font-size:12px;margin:.4em 0}"
	        "th,td{border:1px solid #ddd;padding:2px 6px;text-align:right}"
	        "td:first-child,th:first-child{text-align:left}th{background:#f0f0f0}"
	        "pre{font-size:11px;background:#f6f6f6;padding:1em;overflow-x:auto}"
	        "</style></head><body>\n<h1>gpuprof report: ",
	        W + 40, ML);
	esc(o, title);
	fprintf(o, "</h1>\n<p>%u rank(s) from <code>", job->nranks);
	esc(o, job->dir);
	fprintf(o, "</code>");
	if (job->step_median_ms > 0)
		fprintf(o, "; median step <span data-job=\"step_median_ms\">%.3f</span> ms (%s)%s",
		        job->step_median_ms, job->step_basis,
		        job->step_median_left_out
		            ? "; damaged ranks (corrupt chunks) left out of it: see data quality"
		            : "");
	fprintf(o, ".</p>\n");
	headline_throughput(o, job);
	if (job->sacct[0]) {
		fprintf(o, "<p class=\"note\">sacct: <code>");
		esc(o, job->sacct);
		fprintf(o, "</code></p>\n");
	}
	findings(o, job);
	fprintf(o, "<h2>How slow</h2>\n");
	plot_steps(o, job);
	fprintf(o, "<h2>Where the time goes</h2>\n");
	plot_busy(o, job);
	plot_util(o, job, !kernels && nvml);
	plot_kernels(o, job);
	gp_attr_html(job, o);
	fprintf(o, "<h2>Where the memory goes</h2>\n");
	plot_series(o, job, 0);
	snapshots_gone(o, job);
	if (nvml) {
		fprintf(o, "<h2>What NVML saw</h2>\n");
		for (int w = 1; w <= 3; w++)
			plot_series(o, job, w);
	}
	tables(o, job);
	fprintf(o, "<details><summary>The text report</summary>\n<pre>");
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	if (m) {
		gp_report_text(job, m);
		fclose(m);
		esc(o, buf);
		free(buf);
	}
	fprintf(o, "</pre></details>\n</body></html>\n");
	return ferror(o) ? -1 : 0;
}
