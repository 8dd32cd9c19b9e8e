/* HTML report: one self-contained file (no script, no network), plots drawn as inline SVG:
 * step time per rank, GPU utilisation over time (a heat map that stays readable for 1024
 * ranks), device memory per rank over time, kernel time breakdown; then the findings and
 * the tables of the text report. Plain SVG because it needs no library to vet or vendor
 * and renders the same in any browser. */
#include "config.h"
#include "analyze.h"

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#define W        760
#define H        260
#define ML       60 /* margins */
#define MB       30
#define MAXLINES 32

static void esc(FILE *o, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '<':
			fputs("&lt;", o);
			break;
		case '>':
			fputs("&gt;", o);
			break;
		case '&':
			fputs("&amp;", o);
			break;
		case '"':
			fputs("&quot;", o);
			break;
		default:
			fputc(*s, o);
		}
	}
}

static const char *color(unsigned i)
{
	static const char *c[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
	                          "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
	return c[i % 10];
}

static void axes(FILE *o, const char *id, const char *title, const char *xl, const char *yl,
                 double ymax)
{
	fprintf(o, "<h3>");
	esc(o, title);
	fprintf(o,
	        "</h3>\n<svg class=\"plot\" id=\"%s\" width=\"%d\" height=\"%d\" "
	        "viewBox=\"0 0 %d %d\" xmlns=\"http://www.w3.org/2000/svg\">\n",
	        id, W, H, W, H);
	fprintf(o, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>\n", ML, H - MB,
	        W - 10, H - MB);
	fprintf(o, "<line x1=\"%d\" y1=\"10\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>\n", ML, ML,
	        H - MB);
	fprintf(o, "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">", (W + ML) / 2,
	        H - 5);
	esc(o, xl);
	fprintf(o,
	        "</text>\n<text x=\"12\" y=\"%d\" font-size=\"11\" transform=\"rotate(-90 12 %d)\" "
	        "text-anchor=\"middle\">",
	        H / 2, H / 2);
	esc(o, yl);
	fprintf(o, "</text>\n");
	for (int t = 0; t <= 4; t++) {
		double v = ymax * t / 4;
		int y = H - MB - (int)((H - MB - 10) * t / 4.0);
		fprintf(
		    o, "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"end\">%.3g</text>\n",
		    ML - 4, y + 3, v);
	}
}

static double px(double i, double n)
{
	return ML + (W - 10 - ML) * (n > 1 ? i / (n - 1) : 0.5);
}

static double py(double v, double ymax)
{
	return H - MB - (H - MB - 10) * (ymax > 0 ? v / ymax : 0);
}

static void plot_steps(FILE *o, const gp_job_t *job)
{
	double ymax = 0;
	unsigned nmax = 0;
	for (unsigned i = 0; i < job->nranks; i++)
		for (unsigned s = 0; s < job->ranks[i].nstep_ms; s++) {
			ymax = fmax(ymax, job->ranks[i].step_ms[s]);
			nmax = job->ranks[i].nstep_ms > nmax ? job->ranks[i].nstep_ms : nmax;
		}
	char title[160];
	snprintf(title, sizeof(title), "Step time per rank (%s; warm-up excluded)",
	         !strcmp(job->step_basis, "gpu")
	             ? "GPU: completion of a step's work to the next one's"
	         : !strcmp(job->step_basis, "period") ? "period: step start to the next start"
	                                              : job->step_basis);
	axes(o, "steps", title, "step", "ms", ymax * 1.05);
	for (unsigned i = 0; i < job->nranks && i < MAXLINES; i++) {
		const gp_rank_t *r = &job->ranks[i];
		if (!r->nstep_ms)
			continue;
		fprintf(o, "<polyline class=\"series\" fill=\"none\" stroke=\"%s\" points=\"",
		        color(i));
		for (unsigned s = 0; s < r->nstep_ms; s++)
			fprintf(o, "%.1f,%.1f ", px(s, nmax), py(r->step_ms[s], ymax * 1.05));
		fprintf(o, "\"><title>rank %d</title></polyline>\n", r->rank);
	}
	fprintf(o, "</svg>\n");
}

static void plot_util(FILE *o, const gp_job_t *job)
{
	unsigned n = job->nranks;
	double rowh = n ? (double)(H - MB - 10) / n : 1;
	axes(o, "util", "GPU utilisation over time (one row per rank; darker = busier)",
	     "time in the rank's run", "rank", n ? n - 1 : 0);
	double cw = (double)(W - 10 - ML) / GP_TS;
	for (unsigned i = 0; i < n; i++)
		for (int b = 0; b < GP_TS; b++) {
			float u = job->ranks[i].util[b];
			if (u <= 0.005f)
				continue;
			fprintf(o,
			        "<rect class=\"cell\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
			        "height=\"%.1f\" "
			        "fill=\"rgb(%d,%d,255)\"/>\n",
			        ML + b * cw, 10 + i * rowh, cw + 0.2, rowh + 0.2,
			        (int)(230 * (1 - u)), (int)(230 * (1 - u)));
		}
	fprintf(o, "</svg>\n");
}

static void plot_memory(FILE *o, const gp_job_t *job)
{
	double ymax = 0;
	for (unsigned i = 0; i < job->nranks; i++)
		for (int b = 0; b < GP_TS; b++)
			ymax = fmax(ymax, job->ranks[i].mem_mib[b]);
	axes(o, "memory", "Device memory per rank over time", "time in the rank's run", "MiB",
	     ymax * 1.05);
	for (unsigned i = 0; i < job->nranks && i < MAXLINES; i++) {
		fprintf(o, "<polyline class=\"series\" fill=\"none\" stroke=\"%s\" points=\"",
		        color(i));
		for (int b = 0; b < GP_TS; b++)
			fprintf(o, "%.1f,%.1f ", px(b, GP_TS),
			        py(job->ranks[i].mem_mib[b], ymax * 1.05));
		fprintf(o, "\"><title>rank %d</title></polyline>\n", job->ranks[i].rank);
	}
	fprintf(o, "</svg>\n");
}

static void plot_kernels(FILE *o, const gp_job_t *job)
{
	uint64_t tot = 0;
	unsigned n = job->nk < 12 ? job->nk : 12;
	for (unsigned i = 0; i < job->nk; i++)
		tot += job->k[i].total;
	fprintf(o,
	        "<h3>Kernel time breakdown (all ranks)</h3>\n<svg class=\"plot\" id=\"kernels\" "
	        "width=\"%d\" height=\"%u\" xmlns=\"http://www.w3.org/2000/svg\">\n",
	        W, 22 * n + 10);
	for (unsigned i = 0; i < n; i++) {
		const gp_kstat_t *k = &job->k[i];
		double share = tot ? (double)k->total / tot : 0;
		char nm[61];
		snprintf(nm, sizeof(nm), "%s", k->name);
		fprintf(o,
		        "<rect class=\"bar\" x=\"300\" y=\"%u\" width=\"%.1f\" height=\"16\" "
		        "fill=\"%s\"/>\n<text x=\"295\" y=\"%u\" font-size=\"10\" "
		        "text-anchor=\"end\">",
		        5 + 22 * i, share * (W - 380), k->comm ? "#d62728" : "#1f77b4",
		        17 + 22 * i);
		esc(o, nm);
		fprintf(
		    o,
		    "</text>\n<text x=\"%.1f\" y=\"%u\" font-size=\"10\">%.1f%% (%.2f ms)</text>\n",
		    305 + share * (W - 380), 17 + 22 * i, 100 * share, k->total / 1e6);
	}
	fprintf(o, "</svg>\n");
}

int gp_report_html(const gp_job_t *job, FILE *o)
{
	fprintf(o, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>gpuprof report: "
	           "job ");
	esc(o, job->job);
	fprintf(o,
	        "</title>\n<style>body{font-family:sans-serif;max-width:%dpx;margin:2em auto}"
	        "pre{font-size:11px;background:#f6f6f6;padding:1em;overflow-x:auto}"
	        ".finding{border-left:4px solid #d62728;padding:.3em .8em;margin:.6em 0}"
	        "</style></head><body>\n<h1>gpuprof report: job ",
	        W + 40);
	esc(o, job->job);
	fprintf(o, "</h1>\n<p>%u rank file(s) in <code>", job->nranks);
	esc(o, job->dir);
	fprintf(o, "</code></p>\n");
	if (job->sacct[0]) {
		fprintf(o, "<p>sacct: <code>");
		esc(o, job->sacct);
		fprintf(o, "</code></p>\n");
	}
	fprintf(o, "<h2>Findings</h2>\n");
	if (!job->nf)
		fprintf(o, "<p id=\"no-findings\">No rule fired.</p>\n");
	for (unsigned i = 0; i < job->nf; i++) {
		const gp_finding_t *f = &job->f[i];
		fprintf(o, "<div class=\"finding\" id=\"finding-%s\"><b>", f->id);
		esc(o, f->title);
		fprintf(o, "</b><br>evidence: ");
		esc(o, f->evidence);
		fprintf(o, "<br>threshold: ");
		esc(o, f->threshold);
		fprintf(o, "<br>fix: ");
		esc(o, f->fix);
		fprintf(o, "</div>\n");
	}
	fprintf(o, "<h2>How slow, where the time goes, where the memory goes</h2>\n");
	plot_steps(o, job);
	plot_util(o, job);
	plot_memory(o, job);
	plot_kernels(o, job);
	if (job->nranks > MAXLINES)
		fprintf(o, "<p>Line plots show the first %d of %u ranks.</p>\n", MAXLINES,
		        job->nranks);
	fprintf(o, "<h2>Tables</h2>\n<pre>");
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	if (m) {
		gp_report_text(job, m);
		fclose(m);
		esc(o, buf);
		free(buf);
	}
	fprintf(o, "</pre>\n</body></html>\n");
	return ferror(o) ? -1 : 0;
}
