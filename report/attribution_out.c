/* Kernel time by the user's code, written (attribution.h): the tables by operation and by
 * source line in the text report's and the HTML page's "where the time goes", and
 * report.json's "attribution" object. */
#include "config.h"
#include "attribution.h"
#include "job.h"
#include "json.h"
#include "names.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define JSON_ROWS 100 /* rows of each JSON array */

/* A cell of column c as shown (no "%" sign): "-" for a time per call without calls, and
 * for calls that are not known (JAX's: doc/report.md). */
static const char *cell(const gp_attr_row_t *r, const gp_attr_col_t *c, char *buf, size_t len)
{
	if ((c->off == offsetof(gp_attr_row_t, mean_ns_per_call) && !r->calls) ||
	    (c->off == offsetof(gp_attr_row_t, calls) && r->calls_unknown))
		return "-";
	snprintf(buf, len, "%.*f", c->prec, gp_attr_value(r, c) / c->scale);
	return buf;
}

static void text_row(FILE *out, const char *key, unsigned len, const gp_attr_row_t *r,
                     unsigned width)
{
	char nm[128], b[64];
	snprintf(nm, sizeof(nm), "%.*s", (int)(len < sizeof(nm) - 1 ? len : sizeof(nm) - 1), key);
	if (strlen(nm) > width) {
		size_t cut = gp_utf8_back(nm, width - 3);
		strcpy(nm + cut, "...");
	}
	gp_text_safe(nm);
	fprintf(out, "%-*s", (int)width, nm);
	for (unsigned i = 0; i < GP_ATTR_NCOLS; i++) {
		const gp_attr_col_t *c = &gp_attr_cols[i];
		fprintf(out, c->pct ? " %*s%%" : " %*s", c->width - c->pct,
		        cell(r, c, b, sizeof(b)));
	}
	fputc('\n', out);
}

/* Each shown row of a table (gp_attr_shown_t) through row(key, length, row). */
#define EACH_SHOWN(rows, s, row)                                                                   \
	do {                                                                                       \
		char b_[48];                                                                       \
		for (unsigned i_ = 0; i_ < (s)->top; i_++)                                         \
			row((rows)[i_].key, (rows)[i_].keylen, &(rows)[i_]);                       \
		if ((s)->none >= 0)                                                                \
			row((rows)[(s)->none].key, (rows)[(s)->none].keylen, &(rows)[(s)->none]);  \
		if ((s)->nothers) {                                                                \
			snprintf(b_, sizeof(b_), "(%u others)", (s)->nothers);                     \
			row(b_, (unsigned)strlen(b_), &(s)->others);                               \
		}                                                                                  \
	} while (0)

static void text_table(FILE *out, const char *what, const gp_attr_row_t *rows,
                       const gp_attr_shown_t *s, unsigned width)
{
	fprintf(out, "%-*s", (int)width, what);
	for (unsigned i = 0; i < GP_ATTR_NCOLS; i++)
		fprintf(out, " %*s", gp_attr_cols[i].width, gp_attr_cols[i].head);
	fputc('\n', out);
#define TEXT_ROW(k, l, r) text_row(out, k, l, r, width)
	EACH_SHOWN(rows, s, TEXT_ROW);
#undef TEXT_ROW
}

static int cmp_sync(const void *a, const void *b)
{
	const gp_attr_row_t *x = a, *y = b;
	return x->sync_ns != y->sync_ns ? (x->sync_ns > y->sync_ns ? -1 : 1) : 0;
}

/* The lines whose torch calls held the host in synchronising calls, most first (SYNC_TOP);
 * the rows sorted in place. 0 where none did. */
#define SYNC_TOP 5
static unsigned sync_rows(gp_attr_t *a)
{
	unsigned n = 0;
	if (a->nline)
		qsort(a->by_line, a->nline, sizeof(gp_attr_row_t), cmp_sync);
	while (n < a->nline && n < SYNC_TOP && a->by_line[n].sync_ns)
		n++;
	return n;
}

static void text_sync(FILE *out, gp_attr_t *a)
{
	unsigned n = sync_rows(a);
	if (!n)
		return;
	fprintf(out,
	        "\nHost blocked in synchronising calls (.item(), .cpu(), print(tensor), "
	        "synchronize) by source line:\n%-48s %10s %6s %8s\n",
	        "line", "held ms", "share", "calls");
	for (unsigned i = 0; i < n; i++) {
		const gp_attr_row_t *r = &a->by_line[i];
		char nm[128];
		snprintf(nm, sizeof(nm), "%.*s", (int)(r->keylen < 127 ? r->keylen : 127), r->key);
		if (strlen(nm) > 48)
			strcpy(nm + gp_utf8_back(nm, 45), "...");
		gp_text_safe(nm);
		fprintf(out, "%-48s %10.3f %5.1f%% %8llu\n", nm, r->sync_ns / 1e6,
		        r->sync_share_pct, (unsigned long long)r->syncs);
	}
}

void gp_attr_text(const gp_job_t *job, FILE *out)
{
	gp_attr_t a;
	if (!job->ops.ranks || gp_attr_make(&job->ops, &a) < 0)
		return;
	if (!a.total_kernels) { /* no table of zeros that reads as a measurement */
		fprintf(out, "\nKernel time by operation and source line: none (operation ranges "
		             "recorded, no kernel traced in their steps)\n");
		gp_attr_free(&a);
		return;
	}
	if (a.xla) { /* JAX: XLA's own names, from its NVTX ranges and its kernels */
		fprintf(
		    out,
		    "\nKernel time by XLA operation (the thunk's HLO op; inside a command "
		    "buffer, a CUDA graph, each kernel by its own name, which XLA takes from its "
		    "fusion; post-warm-up steps; %u rank%s):\n",
		    a.ranks, a.ranks == 1 ? "" : "s");
		text_table(out, "operation", a.by_op, &a.op_shown, 48);
		fprintf(out, "\nKernel time by jitted function (XLA module):\n");
		text_table(out, "function", a.by_line, &a.line_shown, 48);
	} else if (a.native) { /* CUDA C/C++: the launches' call stacks */
		fprintf(out,
		        "\nKernel time by calling function (the program's innermost frame outside "
		        "CUDA and gpuprof at each launch: call stacks of the first launches of the "
		        "first 2 capture windows, post-warm-up steps; %u rank%s):\n",
		        a.ranks, a.ranks == 1 ? "" : "s");
		text_table(out, "function", a.by_op, &a.op_shown, 40);
		fprintf(out, "\nKernel time by source line (that frame's file:line, from the "
		             "module's line table; calls: launches):\n");
		text_table(out, "line", a.by_line, &a.line_shown, 48);
	} else {
		fprintf(
		    out,
		    "\nKernel time by operation (the PyTorch calls the program made, in capture "
		    "windows, post-warm-up steps; %u rank%s):\n",
		    a.ranks, a.ranks == 1 ? "" : "s");
		text_table(out, "operation", a.by_op, &a.op_shown, 30);
		fprintf(out,
		        "\nKernel time by source line (the program's innermost frame outside torch "
		        "and installed packages; a line's backward counts with it, its calls are "
		        "the forward's):\n");
		text_table(out, "line", a.by_line, &a.line_shown, 48);
	}
	if (a.native)
		fprintf(out,
		        "share: of the %.3f ms of %llu kernels whose launch had its call stack "
		        "taken; %llu more kernels of those steps, launched past the cap "
		        "(GPUPROF_LAUNCH_SITES), are left out\n",
		        a.total_ns / 1e6, (unsigned long long)a.total_kernels,
		        (unsigned long long)a.site_missed);
	else
		fprintf(out,
		        "share: of the %.3f ms of %llu kernels those ranks traced; (not "
		        "attributed): launched outside every operation range\n",
		        a.total_ns / 1e6, (unsigned long long)a.total_kernels);
	text_sync(out, &a);
	gp_attr_free(&a);
}

static void html_row(FILE *o, const char *key, unsigned len, const gp_attr_row_t *r)
{
	char b[64];
	fprintf(o, "<tr><td>");
	gp_html_escn(o, key, len);
	fprintf(o, "</td>");
	for (unsigned i = 0; i < GP_ATTR_NCOLS; i++) {
		const gp_attr_col_t *c = &gp_attr_cols[i];
		fprintf(o, "<td data-key=\"%s\">%s%s</td>", c->key, cell(r, c, b, sizeof(b)),
		        c->pct ? " %" : "");
	}
	fprintf(o, "</tr>\n");
}

static void html_table(FILE *o, const char *id, const char *what, const gp_attr_row_t *rows,
                       const gp_attr_shown_t *s)
{
	fprintf(o, "<table id=\"%s\">\n<tr><th>%s</th>", id, what);
	for (unsigned i = 0; i < GP_ATTR_NCOLS; i++) /* "us" as the micro sign */
		fprintf(o, "<th>%s%s</th>",
		        strncmp(gp_attr_cols[i].head, "us ", 3) ? "" : "&micro;",
		        gp_attr_cols[i].head + (strncmp(gp_attr_cols[i].head, "us ", 3) ? 0 : 1));
	fprintf(o, "</tr>\n");
#define HTML_ROW(k, l, r) html_row(o, k, l, r)
	EACH_SHOWN(rows, s, HTML_ROW);
#undef HTML_ROW
	fprintf(o, "</table>\n");
}

void gp_attr_html(const gp_job_t *job, FILE *o)
{
	gp_attr_t a;
	if (!job->ops.ranks || gp_attr_make(&job->ops, &a) < 0)
		return;
	if (!a.total_kernels) {
		gp_attr_free(&a);
		return;
	}
	fprintf(o,
	        "<h3>Kernel time by operation</h3>\n<p class=\"note\">%s (%u rank%s): share of "
	        "the %.2f ms of %llu kernels traced there.</p>\n",
	        a.xla ? "XLA's operations: the thunk's HLO op, or inside a command buffer each "
	                "kernel's own name"
	        : a.native ? "The program's function that launched each kernel (its call stack, "
	                     "first launches of the first 2 capture windows)"
	                   : "The PyTorch calls the program made, in capture windows",
	        a.ranks, a.ranks == 1 ? "" : "s", a.total_ns / 1e6,
	        (unsigned long long)a.total_kernels);
	html_table(o, "attr-ops", a.native ? "function" : "operation", a.by_op, &a.op_shown);
	if (a.xla)
		fprintf(o, "<h3>Kernel time by jitted function</h3>\n");
	else if (a.native)
		fprintf(o,
		        "<h3>Kernel time by source line</h3>\n<p class=\"note\">The calling "
		        "function's file:line, from the module's line table; calls: launches. "
		        "%llu kernels launched past the cap have no call stack and are left "
		        "out.</p>\n",
		        (unsigned long long)a.site_missed);
	else
		fprintf(o,
		        "<h3>Kernel time by source line</h3>\n<p class=\"note\">The program's "
		        "innermost frame outside torch and installed packages; a line's backward "
		        "counts with it, its calls are the forward's.</p>\n");
	html_table(o, "attr-lines", a.xla ? "jitted function" : "source line", a.by_line,
	           &a.line_shown);
	gp_attr_free(&a);
}

/* A row's figures after its name, from "attributed" on; calls and the time per call null
 * where the calls are not known (JAX), never a 0 that reads as "not called" */
static void json_row(FILE *out, const gp_attr_row_t *r, bool attributed)
{
	fprintf(out,
	        ", \"attributed\": %s, \"gpu_ns\": %llu, \"share_pct\": %.3f, \"kernels\": %llu, "
	        "\"calls\": ",
	        attributed ? "true" : "false", (unsigned long long)r->gpu_ns, r->share_pct,
	        (unsigned long long)r->kernels);
	if (r->calls_unknown)
		fputs("null, \"mean_ns_per_call\": null", out);
	else
		fprintf(out, "%llu, \"mean_ns_per_call\": %.0f", (unsigned long long)r->calls,
		        r->mean_ns_per_call);
	fprintf(out, ", \"syncs\": %llu, \"sync_ns\": %llu}", (unsigned long long)r->syncs,
	        (unsigned long long)r->sync_ns);
}

/* The table's rows (the first JSON_ROWS and the "(not attributed)" one), then
 * "KEY_others": the row the text and HTML show for the rest (gp_attr_shown_t). */
static void json_rows(FILE *out, const char *key, const gp_attr_row_t *rows, unsigned n,
                      const gp_attr_shown_t *s)
{
	fprintf(out, ",\n    \"%s\": [", key);
	for (unsigned i = 0, w = 0; i < n; i++) {
		bool none = rows[i].keylen == 16 && !memcmp(rows[i].key, "(not attributed)", 16);
		if (i >= JSON_ROWS && !none)
			continue;
		fprintf(out, "%s\n      {\"name\": ", w++ ? "," : "");
		gp_json_strn(out, rows[i].key, rows[i].keylen);
		json_row(out, &rows[i], !none);
	}
	fprintf(out, "%s]", n ? "\n    " : "");
	fprintf(out, ",\n    \"%s_others\": {\"name\": \"(%u others)\", \"rows\": %u", key,
	        s->nothers, s->nothers);
	json_row(out, &s->others, true);
}

static int cmp_ostat(const void *a, const void *b)
{
	const gp_ostat_t *const *x = a, *const *y = b;
	if ((*x)->gpu_ns != (*y)->gpu_ns)
		return (*x)->gpu_ns > (*y)->gpu_ns ? -1 : 1;
	return strcmp((*x)->name, (*y)->name);
}

/* The rows as recorded, one per operation and line (key_averages(group_by_stack_n=1)'s
 * grain), most GPU time first */
static void json_op_lines(FILE *out, const gp_otab_t *t, uint64_t total, bool calls_unknown)
{
	const gp_ostat_t **v = t->n ? malloc(t->n * sizeof(*v)) : NULL;
	fprintf(out, ",\n    \"operation_lines\": [");
	for (unsigned i = 0; v && i < t->n; i++)
		v[i] = &t->v[i];
	if (v)
		qsort(v, t->n, sizeof(*v), cmp_ostat);
	for (unsigned i = 0, w = 0; v && i < t->n; i++) {
		const char *at = strstr(v[i]->name, " @ ");
		if (i >= JSON_ROWS && v[i]->name[0] && !v[i]->sync_ns)
			continue; /* the top rows, and every one that held the host */
		fprintf(out, "%s\n      {\"operation\": ", w++ ? "," : "");
		if (v[i]->name[0])
			gp_json_strn(out, v[i]->name,
			             at ? (size_t)(at - v[i]->name) : strlen(v[i]->name));
		else
			gp_json_str(out, "(not attributed)");
		fprintf(out, ", \"line\": ");
		gp_json_str(out, at ? at + 3 : "");
		fprintf(out,
		        ", \"gpu_ns\": %llu, \"share_pct\": %.3f, \"kernels\": %llu, \"calls\": ",
		        (unsigned long long)v[i]->gpu_ns, gp_attr_pct(v[i]->gpu_ns, total),
		        (unsigned long long)v[i]->kernels);
		if (calls_unknown)
			fputs("null", out);
		else
			fprintf(out, "%llu", (unsigned long long)v[i]->calls);
		fprintf(out, ", \"syncs\": %llu, \"sync_ns\": %llu}",
		        (unsigned long long)v[i]->syncs, (unsigned long long)v[i]->sync_ns);
	}
	fprintf(out, "%s]", t->n ? "\n    " : "");
	free(v);
}

void gp_attr_json(const gp_job_t *job, FILE *out)
{
	gp_attr_t a;
	memset(&a, 0, sizeof(a));
	if (job->ops.ranks && gp_attr_make(&job->ops, &a) < 0)
		memset(&a, 0, sizeof(a));
	fprintf(out,
	        ",\n  \"attribution\": {\"ranks\": %u, \"total_ns\": %llu, \"kernels\": %llu, "
	        "\"sync_ns\": %llu, \"by_operation_rows\": %u, \"by_line_rows\": %u, "
	        "\"framework\": \"%s\", \"kernels_without_site\": %llu",
	        a.ranks, (unsigned long long)a.total_ns, (unsigned long long)a.total_kernels,
	        (unsigned long long)a.sync_ns, a.nop, a.nline,
	        !a.ranks   ? ""
	        : a.xla    ? "jax"
	        : a.native ? "native"
	                   : "pytorch",
	        (unsigned long long)a.site_missed);
	json_rows(out, "operations", a.by_op, a.nop, &a.op_shown);
	json_rows(out, "source_lines", a.by_line, a.nline, &a.line_shown);
	json_op_lines(out, &job->ops, a.total_ns, a.xla);
	fprintf(out, "\n  }");
	gp_attr_free(&a);
}
