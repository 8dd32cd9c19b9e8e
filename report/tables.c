/* The per-rank tables of the text and HTML reports, defined once (tables.h). */
#include "tables.h"

#include <math.h>
#include <string.h>

#include "attribution.h"
#include "fields.h"
#include "names.h"
#include "wrap.h"

#define TXT(h, k, w)                                                                               \
	{                                                                                          \
		h, k, NULL, w, 0, 0, GP_COL_LEFT | GP_COL_CUT                                      \
	}
#define NUM(h, k, when, w, p)                                                                      \
	{                                                                                          \
		h, k, when, w, p, 0, 0                                                             \
	}
#define SCALED(h, k, when, w, p, s)                                                                \
	{                                                                                          \
		h, k, when, w, p, s, 0                                                             \
	}
#define BYTES(h, k, when, w)                                                                       \
	{                                                                                          \
		h, k, when, w, 0, 0, GP_COL_BYTES                                                  \
	}
#define LABEL                                                                                      \
	{                                                                                          \
		"rank", NULL, NULL, 6, 0, 0, GP_COL_LEFT                                           \
	}
#define N(t) (sizeof(t) / sizeof((t)[0]))

static const gp_col_t slow[] = {
    LABEL,
    TXT("node", "node", 8),
    TXT("outcome", "outcome", 9),
    NUM("wall s", "wall_s", NULL, 8, 2),
    NUM("steps", "steps.count", NULL, 6, 0),
    NUM("warm", "steps.warmup", NULL, 4, 0),
    NUM("median ms", "steps.median_ms", "steps.durations_of", 9, 3),
    NUM("p95 ms", "steps.p95_ms", "steps.durations_of", 8, 3),
    NUM("p99 ms", "steps.p99_ms", "steps.durations_of", 8, 3),
    NUM("mean ms", "steps.mean_ms", "steps.durations_of", 8, 3),
    NUM("CV", "steps.cv", "steps.durations_of", 6, 3),
    NUM("period ms", "steps.period_median_ms", "steps.period_samples", 9, 3),
};

static const gp_col_t time_[] = {
    LABEL,
    NUM("kernels", "gpu.kernels", NULL, 8, 0),
    NUM("per step", "gpu.kernels_per_step", "=", 8, 1),
    NUM("busy %", "gpu.busy_pct", "gpu.span_ns", 7, 1),
    NUM("comm %", "gpu.comm_only_pct", "gpu.span_ns", 7, 1),
    NUM("host %", "gpu.idle_host_wait_pct", "gpu.span_ns", 7, 1),
    NUM("sync %", "gpu.idle_sync_pct", "gpu.span_ns", 7, 1),
    NUM("deps %", "gpu.idle_kernel_wait_pct", "gpu.span_ns", 7, 1),
    NUM("other %", "gpu.idle_other_pct", "gpu.span_ns", 7, 1),
    NUM("hidden %", "gpu.comm_overlap_pct", "gpu.comm_ns", 8, 1),
};

static const gp_col_t host[] = {
    LABEL,
    NUM("CPU ms", "steps.cpu_median_ms", "steps.cpu_samples", 8, 3),
    NUM("call us", "gpu.launch_call_us_median", "=", 8, 1),
    NUM("queue us", "gpu.launch_latency_us_median", "=", 9, 1),
    NUM("syncs", "sync.calls", NULL, 8, 0),
    SCALED("sync ms", "sync.ns", NULL, 9, 2, 1e6),
    NUM("CUDA ms/step", "host.cuda_calls_ms_per_step", "=", 12, 3),
    SCALED("data wait ms", "host.data_wait_ns", "host.data_waits", 12, 1, 1e6),
};

static const gp_col_t memory[] = {
    LABEL,
    BYTES("in use", "memory.in_use_peak_bytes", "=", 9),
    BYTES("pool", "memory.pool_peak_bytes", "memory.in_use_peak_bytes", 9),
    BYTES("CUDA peak", "memory.peak_bytes", "memory.allocs", 9),
    SCALED("at s", "memory.peak_at_ns", "memory.allocs", 7, 2, 1e9),
    BYTES("at exit", "memory.final_bytes", "memory.allocs", 9),
    BYTES("growth/step", "memory.step_growth_bytes", "memory.step_growth_source", 11),
    BYTES("optimizer", "memory.optimizer_bytes", "=", 9),
    BYTES("host", "memory.host_peak_bytes", "memory.allocs", 9),
    BYTES("NVML", "memory.nvml_used_max_bytes", "gpu.nvml_samples", 9),
};

/* a label column and at least one more (the text's blocks: output.c), within the layout */
#define TABLE_COLS_OK(a) (N(a) >= 2 && N(a) <= GP_TABLE_MAXCOLS)
_Static_assert(TABLE_COLS_OK(slow) && TABLE_COLS_OK(time_) && TABLE_COLS_OK(host) &&
                   TABLE_COLS_OK(memory),
               "a rank table holds 2 to GP_TABLE_MAXCOLS columns");

const gp_rank_table_t gp_rank_tables[GP_NTABLES] = {
    [GP_TABLE_SLOW] = {"slow", "How slow", slow, N(slow),
                       "times of the post-warm-up steps; period: step start to the next "
                       "start (the host's view); - = not measured"},
    [GP_TABLE_TIME] = {"time", "Where the time goes", time_, N(time_),
                       "shares of the steps' GPU span, adding up to 100: busy computing or "
                       "copying; comm: running communication alone (waiting in a collective "
                       "is not busy); idle while the GPU waited for the host (host), for a "
                       "synchronising host (sync), between dependent kernels (deps), other; "
                       "hidden: the share of communication compute overlapped"},
    [GP_TABLE_HOST] = {"host", "The host's side", host, N(host),
                       "CPU: CPU time inside the step range (median); call: a launch call's "
                       "own time; queue: from the call to the kernel's start (how far the "
                       "host runs ahead); syncs: calls that blocked the host on the GPU"},
    [GP_TABLE_MEMORY] = {"memory", "Where the memory goes", memory, N(memory),
                         "in use: the framework's allocated bytes at their peak; pool: what "
                         "its allocator held from the device; CUDA peak: every device "
                         "allocation CUPTI saw, at its peak, at s after the start; at exit: "
                         "live at the last record; host: pinned host buffers"},
};

const char *gp_human_bytes(double b, char *buf, size_t len)
{
	static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
	unsigned k = 0;
	while (fabs(b) >= 1000 && k + 1 < sizeof(unit) / sizeof(unit[0])) {
		b /= 1024;
		k++;
	}
	double a = fabs(b);
	int prec = k == 0 || a >= 100 ? 0 : a >= 10 ? 1 : 2;
	snprintf(buf, len, "%.*f %s", prec, b, unit[k]);
	return buf;
}

/* Does the condition hold: the field nonzero, or a string not empty? */
static bool holds(const char *when, const gp_field_t *self, const gp_rank_t *r)
{
	const gp_field_t *f = !when ? NULL : strcmp(when, "=") ? gp_field_find(when) : self;
	double v;
	if (!when)
		return true;
	if (!f)
		return false;
	const char *s = gp_field_text(f, r);
	if (s)
		return *s != 0;
	return gp_field_number(f, r, &v) && v != 0;
}

const char *gp_col_cell(const gp_col_t *c, const gp_rank_t *r, const char *label, char *buf,
                        size_t len)
{
	if (!c->key)
		return label;
	const gp_field_t *f = gp_field_find(c->key);
	double v;
	if (!f)
		return "?";
	if (!strcmp(c->key, "outcome"))
		return gp_rank_outcome(r, buf, len);
	const char *s = gp_field_text(f, r);
	if (s)
		return *s ? s : "-";
	if (!holds(c->when, f, r) || !gp_field_number(f, r, &v))
		return "-";
	if (c->scale > 0)
		v /= c->scale;
	if (c->flags & GP_COL_BYTES)
		return gp_human_bytes(v, buf, len);
	snprintf(buf, len, "%.*f", c->prec, v);
	return buf;
}

/* Characters (code points) of s */
static int chars(const char *s)
{
	return (int)gp_wrap_chars(s, strlen(s));
}

/* The cell as the text shows it (in buf): what no terminal shows raw made '?' as the text
 * writer will (gp_text_shown: a run of bytes that are not UTF-8 is one '?', so the width is
 * measured on what is printed), and a text column's past GP_COL_TEXT_MAX characters cut to
 * whole characters and "..." */
static const char *text_cell(const gp_col_t *c, const gp_rank_t *r, const char *label, char *buf,
                             size_t len)
{
	const char *v = gp_col_cell(c, r, label, buf, len);
	if (v != buf)
		snprintf(buf, len, "%s", v);
	buf[gp_text_shown(buf, strlen(buf))] = '\0';
	v = buf;
	if (!(c->flags & GP_COL_CUT))
		return v;
	char whole[256];
	snprintf(whole, sizeof(whole), "%s", v);
	return gp_text_cut(whole, GP_COL_TEXT_MAX, buf, len, NULL);
}

void gp_table_layout_init(gp_table_layout_t *lay, const gp_rank_table_t *t)
{
	memset(lay, 0, sizeof(*lay));
	for (size_t i = 0; i < t->ncols && i < GP_TABLE_MAXCOLS; i++) {
		const gp_col_t *c = &t->cols[i];
		lay->width[i] = c->width > chars(c->head) ? c->width : chars(c->head);
	}
}

void gp_table_layout_add(gp_table_layout_t *lay, const gp_rank_table_t *t, const gp_rank_t *r,
                         const char *label)
{
	char b[256];
	for (size_t i = 0; i < t->ncols && i < GP_TABLE_MAXCOLS; i++) {
		int w = chars(text_cell(&t->cols[i], r, label, b, sizeof(b)));
		if (w > lay->width[i])
			lay->width[i] = w;
	}
}

void gp_table_layout_end(gp_table_layout_t *lay, const gp_rank_table_t *t)
{
	size_t n = t->ncols < GP_TABLE_MAXCOLS ? t->ncols : GP_TABLE_MAXCOLS;
	int used = 0;
	lay->nblocks = 0;
	for (size_t i = 1; i < n; i++) {
		if (lay->nblocks == 0 || used + 1 + lay->width[i] > GP_TEXT_WIDTH) {
			lay->from[lay->nblocks++] = i; /* a new block, the label column first */
			used = lay->width[0];
		}
		used += 1 + lay->width[i];
	}
	lay->from[lay->nblocks] = n;
}

static void put_cell(FILE *out, const char *sep, const char *v, int width, bool left)
{
	int pad = width - chars(v);
	fputs(sep, out);
	if (!left && pad > 0)
		fprintf(out, "%*s", pad, "");
	fputs(v, out);
	if (left && pad > 0)
		fprintf(out, "%*s", pad, "");
}

void gp_table_text_head(FILE *out, const gp_rank_table_t *t, const gp_table_layout_t *lay,
                        unsigned b)
{
	put_cell(out, "", t->cols[0].head, lay->width[0], true);
	for (size_t i = lay->from[b]; i < lay->from[b + 1]; i++)
		put_cell(out, " ", t->cols[i].head, lay->width[i], t->cols[i].flags & GP_COL_LEFT);
	fputc('\n', out);
}

void gp_table_text_row(FILE *out, const gp_rank_table_t *t, const gp_table_layout_t *lay,
                       unsigned b, const gp_rank_t *r, const char *label)
{
	char buf[256];
	put_cell(out, "", text_cell(&t->cols[0], r, label, buf, sizeof(buf)), lay->width[0], true);
	for (size_t i = lay->from[b]; i < lay->from[b + 1]; i++)
		put_cell(out, " ", text_cell(&t->cols[i], r, label, buf, sizeof(buf)),
		         lay->width[i], t->cols[i].flags & GP_COL_LEFT);
	fputc('\n', out);
}

void gp_tables_print(FILE *out)
{
	for (unsigned t = 0; t < GP_NTABLES; t++)
		for (size_t i = 0; i < gp_rank_tables[t].ncols; i++) {
			const gp_col_t *c = &gp_rank_tables[t].cols[i];
			char most[16] = "-";
			if (c->flags & GP_COL_CUT)
				snprintf(most, sizeof(most), "%d", GP_COL_TEXT_MAX);
			fprintf(out, "%s\t%s\t%s\t%s\t%d\t%g\t%s\t%s\n", gp_rank_tables[t].id,
			        c->head, c->key ? c->key : "-", c->when ? c->when : "-", c->width,
			        c->scale > 0 ? c->scale : 1,
			        c->flags & GP_COL_BYTES  ? "bytes"
			        : c->flags & GP_COL_LEFT ? "text"
			                                 : "number",
			        most);
		}
	/* the kernel time by operation and by line (attribution.h): keys of their rows */
	for (unsigned i = 0; i < GP_ATTR_NCOLS; i++) {
		const gp_attr_col_t *c = &gp_attr_cols[i];
		fprintf(out, "attribution\t%s\t%s\t-\t%d\t%g\t%s\t-\n", c->head, c->key, c->width,
		        c->scale, c->pct ? "percent" : "number");
	}
}
