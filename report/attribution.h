/* Kernel time by the user's code (report/attribution.c): each kernel of the steady state
 * charged to the framework operation range open at its launch ("op @ file:line
 * (function)", the "pytorch.ops" domain the PyTorch integration records in capture
 * windows, agent/python/_gpuprof_ops.py), per rank, merged across ranks by name, and shown
 * as two tables, by operation and by source line, like torch.profiler's
 * key_averages(group_by_stack_n=1). Kernels launched outside every operation range count
 * as "(not attributed)", so the shares add up to 100 %. */
#ifndef GP_ATTRIBUTION_H
#define GP_ATTRIBUTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "vec.h"

/* One operation range's name and what ran in it: calls (ranges begun in the steady
 * state), kernels and their GPU time, and the synchronising calls (a stream, device or
 * event synchronize, a blocking device-to-host copy: .item(), .cpu(), print(tensor)) that
 * held the host inside it, and their time. name "" : what no range owned. */
typedef struct gp_ostat {
	char *name;
	uint64_t calls, kernels, gpu_ns, syncs, sync_ns;
} gp_ostat_t;
typedef struct gp_otab {
	gp_ostat_t *v;
	unsigned n, cap;
	u64map_t idx;    /* name hash -> index + 1 (while filled) */
	unsigned ranks;  /* ranks that recorded operation ranges */
	unsigned xla;    /* ... of them, ranks whose rows are XLA's ("op @ jitted function") */
	unsigned native; /* ... ranks whose rows are native launch sites ("function @ file:line") */
	uint64_t site_missed; /* kernels of those ranks' steady state launched with no site */
} gp_otab_t;

/* The domain the integration records operation ranges in. */
#define GP_OPS_DOMAIN "pytorch.ops"

/* Add a row's figures under its name (merged with the name's); -1 when out of memory. */
int gp_otab_add(gp_otab_t *t, const gp_ostat_t *row);
/* Add every row of from into t (a rank's into the job's), ranks counted. */
void gp_otab_merge(gp_otab_t *t, const gp_otab_t *from);
void gp_otab_free(gp_otab_t *t);
/* The table in a rank's summary (summary.c): written to f; read from [*p, end), *p moved
 * past it. -1: a table that cannot be (truncated, counts beyond the bytes). */
void gp_otab_write(FILE *f, const gp_otab_t *t);
int gp_otab_read(const unsigned char **p, const unsigned char *end, gp_otab_t *t);

/* The pass: a rank's kernels of the steady state (the kernel table's) to the operation
 * ranges open at their launch, added into t (runs after gp_pass_ranges). */
struct rank_data;
void gp_pass_attribution(gp_otab_t *t, struct rank_data *d);

/* A program no framework names (report/launch_sites.c): each kernel of the steady state whose
 * launch had its call stack taken (GPUPROF_LAUNCH_SITES) to "function @ file:line
 * (function)", the program's innermost frame; false: no launch site in the rank. */
bool gp_sites_attribution(gp_otab_t *t, struct rank_data *d);
/* A rank's operation ranges, for the pass and the exports (chrome.c's Kineto cpu_op
 * events): their positions in d->ranges (in its (thread, start) order) and their threads.
 * gp_ops_index: 1 when there are any, 0 none (ix is empty and may be freed). */
typedef struct gp_ops {
	VEC(size_t) ops;
	VEC(uint32_t) tids;
} gp_ops_t;
int gp_ops_index(const struct rank_data *d, gp_ops_t *ix);
/* The operation a launch call at ts on thread tid ran for, as the pass charges its
 * kernels: the innermost open on that thread, else the latest begun on another; its
 * position in d->ranges + 1, 0: none. */
size_t gp_ops_owner(const struct rank_data *d, const gp_ops_t *ix, uint32_t tid, uint64_t ts);
/* Is d->ranges.v[i] an operation range? */
bool gp_ops_is_op(const struct rank_data *d, const gp_ops_t *ix, size_t i);
void gp_ops_free(gp_ops_t *ix);

/* Is this range domain (a string of the rank file) the operations'? */
bool gp_is_ops_domain(const char *domain);

/* The two tables: rows grouped by operation ("linear", "linear backward") or by source
 * line ("train.py:34 (step)"), most GPU time first, the "(not attributed)" row among them.
 * calls: forward calls (a backward range is no call of the user's). Every figure a writer
 * shows is a field here, computed once by gp_attr_make (the writers only format them):
 * the shares and the time per call, and which rows the text and HTML show (the first
 * GP_ATTR_TOP, the "(not attributed)" row wherever it sorted, the rest summed as one). */
#define GP_ATTR_TOP 10
typedef struct gp_attr_row {
	const char *key; /* points into the job's table (the part of a name after " @ ") */
	unsigned keylen;
	uint64_t calls, kernels, gpu_ns, syncs, sync_ns;
	double share_pct;        /* gpu_ns, % of the table's (gp_attr_t's total_ns) */
	double sync_share_pct;   /* sync_ns, % of every synchronising call's (sync_ns) */
	double mean_ns_per_call; /* gpu_ns / calls; 0 without calls */
	bool calls_unknown;      /* XLA's rows: no call of the user's is seen (calls 0), so
	                            calls and time per call are shown as not known */
} gp_attr_row_t;
/* The rows of a table the text and HTML show: rows[0..top), then rows[none] when none >=
 * 0 (the "(not attributed)" row sorted below them), then others (the rest summed: its key
 * NULL) when nothers > 0. The shares shown add up to 100 %. */
typedef struct gp_attr_shown {
	unsigned top;
	int none;
	gp_attr_row_t others;
	unsigned nothers;
} gp_attr_shown_t;
typedef struct gp_attr {
	gp_attr_row_t *by_op, *by_line;
	unsigned nop, nline;
	gp_attr_shown_t op_shown, line_shown;
	uint64_t total_ns, total_kernels; /* every kernel of the ranks with operation ranges */
	uint64_t sync_ns;                 /* and every synchronising call's time */
	bool xla;                         /* every rank's rows are XLA's (JAX) */
	bool native;                      /* every rank's rows are native launch sites */
	uint64_t site_missed;             /* kernels left out: launched with no site taken */
	unsigned ranks;
} gp_attr_t;
/* The columns of both tables, described once (as tables.c does for the per-rank tables):
 * heading, the row's key in report.json's "operations" and "source_lines" (and
 * "*_others"), width in the text, digits, scale (shown = value / scale) and what it is.
 * The text, the HTML and `gpuprof fields --format=tables` (table "attribution") read
 * them; the formats tier holds every cell to its JSON field. */
typedef struct gp_attr_col {
	const char *head, *key;
	size_t off; /* where gp_attr_row_t holds it: a uint64_t, or a double when dbl */
	bool dbl;
	int width, prec;
	double scale;
	bool pct; /* shown with a % sign */
	const char *doc;
} gp_attr_col_t;
#define GP_ATTR_NCOLS 5
extern const gp_attr_col_t gp_attr_cols[GP_ATTR_NCOLS];
/* A row's value of column c (unscaled); a percentage a / b (0 when b is 0). */
double gp_attr_value(const gp_attr_row_t *r, const gp_attr_col_t *c);
double gp_attr_pct(uint64_t a, uint64_t b);
int gp_attr_make(const gp_otab_t *t, gp_attr_t *a);
/* The operation and line that held the host longest in synchronising calls ("item @
 * train.py:40 (step)"), its share of all of them (%), into out; false: none (no operation
 * ranges, or no such call inside one). For the sync_stall finding's evidence. */
struct gp_job;
bool gp_attr_top_sync(const struct gp_job *job, char *out, size_t len, double *share);
/* ... appended to a finding's evidence (NUL-terminated, len bytes in all) where there is one */
void gp_attr_sync_evidence(const struct gp_job *job, char *evidence, size_t len);
void gp_attr_free(gp_attr_t *a);

/* Writers: "where the time goes" gains both tables (text, HTML) and report.json's
 * "operations" and "source_lines" arrays (each begins with ",\n": the key before it is
 * closed). Nothing where no rank recorded operation ranges (an empty array in JSON). */
struct gp_job;
void gp_attr_text(const struct gp_job *job, FILE *out);
void gp_attr_html(const struct gp_job *job, FILE *out);
void gp_attr_json(const struct gp_job *job, FILE *out);

#endif
