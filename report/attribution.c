/* Kernel time by the user's code (attribution.h): the pass that charges each kernel of a
 * rank's steady state to the operation range open at its launch (into the table of
 * optable.c), and the two tables the report shows from the job's, by operation and by
 * source line. */
#include "config.h"
#include "attribution.h"
#include "job.h"
#include "json.h"
#include "names.h"
#include "rankdata.h"

#include <stdlib.h>
#include <string.h>

/* ---- the pass ---- */

/* The innermost operation range (the latest begun) open on thread tid at ts; ops holds
 * positions in d->ranges in (tid, start) order. NULL: none. */
static const range_t *op_at(const rank_data_t *d, const size_t *ops, size_t n, uint32_t tid,
                            uint64_t ts)
{
	size_t lo = 0, hi = n;
	while (lo < hi) { /* first with (tid, start) > (tid, ts) */
		size_t mid = (lo + hi) / 2;
		const range_t *x = &d->ranges.v[ops[mid]];
		if (x->tid < tid || (x->tid == tid && x->start <= ts))
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t j = lo, steps = 0; j-- > 0 && steps < 4096; steps++) {
		const range_t *x = &d->ranges.v[ops[j]];
		if (x->tid != tid)
			break;
		if (x->end >= ts)
			return x;
	}
	return NULL;
}

/* The operation a kernel launched at ts on thread tid ran for: the innermost range open on
 * that thread; where it had none (an autograd engine thread running a node the integration
 * did not hook), the one open on another thread then, the latest begun (the thread that
 * asked for the work: the program's line calling backward()). */
static const range_t *owner_op(const rank_data_t *d, const size_t *ops, size_t n,
                               const uint32_t *tids, size_t ntids, uint32_t tid, uint64_t ts)
{
	const range_t *x = op_at(d, ops, n, tid, ts);
	for (size_t i = 0; !x && i < ntids; i++) {
		const range_t *y = tids[i] != tid ? op_at(d, ops, n, tids[i], ts) : NULL;
		if (y && (!x || y->start > x->start))
			x = y;
	}
	return x;
}

typedef struct local {
	uint32_t name; /* the range name's string id; 0: not attributed */
	uint64_t calls, kernels, gpu_ns, syncs, sync_ns;
} local_t;
typedef VEC(local_t) locals_t;

static local_t *local_row(locals_t *rows, u64map_t *idx, uint32_t name)
{
	uint64_t at;
	if (u64map_get(idx, (uint64_t)name + 1, &at))
		return &rows->v[at];
	local_t z = {.name = name};
	size_t n = rows->n;
	VEC_PUSH(*rows, z);
	if (rows->n == n)
		return NULL;
	u64map_put(idx, (uint64_t)name + 1, n);
	return &rows->v[n];
}

/* The steps the operation ranges covered: those in which one began before the step's first
 * launch. The integration pushes its mode at the end of one step and pops it at the end of
 * another (a few steps of each window): the step it was pushed in, whose kernels ran before,
 * and the window's steps after it was popped are left out, so that their kernels do not
 * read as unattributed. NULL: no steps known (every kernel counts). */
static bool *covered_steps(const rank_data_t *d, const size_t *ops, size_t nops)
{
	size_t n = d->steps.n;
	uint64_t *first = n ? calloc(2 * n, sizeof(uint64_t)) : NULL; /* op, launch; 0: none */
	bool *cov = n ? calloc(n, sizeof(bool)) : NULL;
	if (!first || !cov) {
		free(first);
		free(cov);
		return NULL;
	}
	for (size_t i = 0; i < nops; i++) {
		uint64_t ts = d->ranges.v[ops[i]].start;
		size_t s = gp_step_at(d, ts);
		if (s && (!first[2 * (s - 1)] || ts < first[2 * (s - 1)]))
			first[2 * (s - 1)] = ts;
	}
	for (size_t i = 0; i < d->kerns.n; i++) {
		uint64_t ts = gp_rd_launch_ts(d, &d->kerns.v[i]);
		size_t s = gp_step_at(d, ts);
		if (s && (!first[2 * (s - 1) + 1] || ts < first[2 * (s - 1) + 1]))
			first[2 * (s - 1) + 1] = ts;
	}
	for (size_t s = 0; s < n; s++)
		cov[s] = first[2 * s] && (!first[2 * s + 1] || first[2 * s] < first[2 * s + 1]);
	free(first);
	return cov;
}

/* The kernels and calls the tables count: in the steps the ranges covered (cov; NULL:
 * every step), and where no steps are known (inference: the integration covers a few
 * top-level module calls, _gpuprof_ops.py's watch_calls) from the first operation range to
 * the last, so the rest of the run does not read as unattributed. */
typedef struct cover {
	bool *cov;
	uint64_t lo, hi;
} cover_t;

static cover_t cover_of(const rank_data_t *d, const size_t *ops, size_t n)
{
	cover_t c = {n ? covered_steps(d, ops, n) : NULL, 0, UINT64_MAX};
	if (d->steps.n || !n)
		return c;
	c.lo = UINT64_MAX, c.hi = 0;
	for (size_t i = 0; i < n; i++) {
		const range_t *x = &d->ranges.v[ops[i]];
		c.lo = x->start < c.lo ? x->start : c.lo;
		c.hi = x->end > c.hi ? x->end : c.hi;
	}
	return c;
}

static bool counted(const rank_data_t *d, const cover_t *c, uint64_t ts)
{
	const bool *cov = c->cov;
	if (!gp_in_gwin(d, ts) || ts < c->lo || ts > c->hi)
		return false;
	size_t s = cov ? gp_step_at(d, ts) : 1;
	return s && (!cov || cov[s - 1]);
}

/* JAX: no operation ranges of ours, but XLA's own NVTX ranges around what it runs
 * ("XlaModule:#hlo_module=jit_step,..." > "Thunk:#name=jit(step)/...,hlo_op=loop_add_fusion,..."):
 * each kernel of the steady state to "op @ module", the op the innermost thunk's hlo_op or,
 * inside a command buffer (a CUDA graph of many ops) or with no thunk, the kernel's own name
 * (XLA names its kernels after their fusions). False: no XLA module range in the rank. */
static bool xla_attribution(gp_otab_t *t, rank_data_t *d)
{
	VEC(size_t) mods = {0}; /* XLA's module ranges, in (thread, start) order */
	for (size_t i = 0; i < d->ranges.n; i++)
		if (!strncmp(gp_rd_str(d, d->ranges.v[i].name), "XlaModule:#", 11))
			VEC_PUSH(mods, i);
	for (size_t i = 0; mods.n && i < d->kerns.n; i++) {
		const kern_t *k = &d->kerns.v[i];
		if (k->kind != 0 || !gp_in_gwin(d, gp_rd_launch_ts(d, k)))
			continue;
		const api_t *a = gp_rd_launch(d, k);
		const range_t *m = a ? op_at(d, mods.v, mods.n, a->tid, a->start) : NULL;
		const char *mod = m ? strstr(gp_rd_str(d, m->name), "hlo_module=") : NULL;
		char name[512] = "";
		if (mod) {
			const char *th = k->range ? gp_rd_str(d, k->range) : "";
			const char *op = !strncmp(th, "Thunk:#", 7) ? strstr(th, "hlo_op=") : NULL;
			size_t ml = strcspn(mod + 11, ",#"), ol = op ? strcspn(op + 7, ",#") : 0;
			if (!ol || !strncmp(op + 7, "command_buffer", 14))
				snprintf(name, sizeof(name), "%s @ %.*s", gp_rd_str(d, k->name),
				         (int)ml, mod + 11);
			else
				snprintf(name, sizeof(name), "%.*s @ %.*s", (int)ol, op + 7,
				         (int)ml, mod + 11);
		}
		gp_ostat_t row = {name, 0, 1, k->dur, 0, 0};
		gp_otab_add(t, &row);
	}
	bool any = mods.n > 0;
	t->ranks += any, t->xla += any;
	VEC_FREE(mods);
	return any;
}

int gp_ops_index(const rank_data_t *d, gp_ops_t *ix)
{
	uint32_t dom = 0; /* the last domain id looked at, and whether it is the operations' */
	bool is_ops = false;
	memset(ix, 0, sizeof(*ix));
	for (size_t i = 0; i < d->ranges.n; i++) {
		const range_t *x = &d->ranges.v[i];
		if (!x->domain || x->depth != 1000)
			continue;
		if (x->domain != dom)
			dom = x->domain, is_ops = gp_is_ops_domain(gp_rd_str(d, dom));
		if (!is_ops)
			continue;
		VEC_PUSH(ix->ops, i);
		if (!ix->tids.n || ix->tids.v[ix->tids.n - 1] != x->tid) /* sorted by thread */
			VEC_PUSH(ix->tids, x->tid);
	}
	return ix->ops.n ? 1 : 0;
}

size_t gp_ops_owner(const rank_data_t *d, const gp_ops_t *ix, uint32_t tid, uint64_t ts)
{
	const range_t *x = owner_op(d, ix->ops.v, ix->ops.n, ix->tids.v, ix->tids.n, tid, ts);
	return x ? (size_t)(x - d->ranges.v) + 1 : 0;
}

bool gp_ops_is_op(const rank_data_t *d, const gp_ops_t *ix, size_t i)
{
	size_t lo = 0, hi = ix->ops.n; /* ops is in d->ranges' order */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (ix->ops.v[mid] < i)
			lo = mid + 1;
		else
			hi = mid;
	}
	(void)d;
	return lo < ix->ops.n && ix->ops.v[lo] == i;
}

void gp_ops_free(gp_ops_t *ix)
{
	VEC_FREE(ix->ops);
	VEC_FREE(ix->tids);
}

void gp_pass_attribution(gp_otab_t *t, rank_data_t *d)
{
	gp_ops_t ix;
	locals_t rows = {0};
	u64map_t idx = {0};
	gp_ops_index(d, &ix);
	if (!ix.ops.n && (xla_attribution(t, d) || gp_sites_attribution(t, d))) {
		gp_ops_free(&ix);
		return;
	}
	cover_t cv = cover_of(d, ix.ops.v, ix.ops.n);
	for (size_t i = 0; i < ix.ops.n; i++) {
		const range_t *x = &d->ranges.v[ix.ops.v[i]];
		local_t *l = counted(d, &cv, x->start) ? local_row(&rows, &idx, x->name) : NULL;
		if (l)
			l->calls++;
	}
	for (size_t i = 0; ix.ops.n && i < d->kerns.n; i++) {
		const kern_t *k = &d->kerns.v[i];
		if (k->kind != 0 || !counted(d, &cv, gp_rd_launch_ts(d, k)))
			continue;
		const api_t *a = gp_rd_launch(d, k);
		const range_t *x =
		    a ? owner_op(d, ix.ops.v, ix.ops.n, ix.tids.v, ix.tids.n, a->tid, a->start)
		      : NULL;
		local_t *l = local_row(&rows, &idx, x ? x->name : 0);
		if (l)
			l->kernels++, l->gpu_ns += k->dur;
	}
	/* the host's waits: a synchronising call belongs to the operation open on its own
	 * thread (loss.item(), print(loss), GradScaler's found_inf.item() in scaler.step) */
	for (size_t i = 0; ix.ops.n && i < d->apis.n; i++) {
		const api_t *a = &d->apis.v[i];
		if (!a->sync || !counted(d, &cv, a->start))
			continue;
		const range_t *x = op_at(d, ix.ops.v, ix.ops.n, a->tid, a->start);
		local_t *l = local_row(&rows, &idx, x ? x->name : 0);
		if (l)
			l->syncs++, l->sync_ns += a->dur;
	}
	for (size_t i = 0; i < rows.n; i++) {
		const local_t *l = &rows.v[i];
		gp_ostat_t row = {(char *)(l->name ? gp_rd_str(d, l->name) : ""),
		                  l->calls,
		                  l->kernels,
		                  l->gpu_ns,
		                  l->syncs,
		                  l->sync_ns};
		gp_otab_add(t, &row);
	}
	t->ranks += ix.ops.n > 0;
	free(cv.cov);
	gp_ops_free(&ix);
	VEC_FREE(rows);
	u64map_free(&idx);
}

/* ---- the two tables ---- */

/* name "op @ where": the operation or the place, as a slice of name */
static void split(const char *name, bool line, const char **key, unsigned *len)
{
	const char *at = strstr(name, " @ ");
	if (!*name) {
		*key = "(not attributed)", *len = 16;
	} else if (!at) {
		*key = name, *len = (unsigned)strlen(name);
	} else if (line) {
		*key = at + 3, *len = (unsigned)strlen(at + 3);
	} else {
		*key = name, *len = (unsigned)(at - name);
	}
}

static int add_row(gp_attr_row_t **rows, unsigned *n, const gp_ostat_t *o, bool line)
{
	const char *key;
	unsigned len;
	split(o->name, line, &key, &len);
	/* a backward range is no call of the user's: its line's calls are the forward's */
	const char *at = strstr(o->name, " @ ");
	bool bwd = at && at - o->name >= 9 && !memcmp(at - 9, " backward", 9);
	for (unsigned i = 0; i < *n; i++) {
		gp_attr_row_t *r = &(*rows)[i];
		if (r->keylen == len && !memcmp(r->key, key, len)) {
			r->calls += line && bwd ? 0 : o->calls;
			r->kernels += o->kernels, r->gpu_ns += o->gpu_ns;
			r->syncs += o->syncs, r->sync_ns += o->sync_ns;
			return 0;
		}
	}
	gp_attr_row_t *nv = realloc(*rows, (*n + 1) * sizeof(**rows));
	if (!nv)
		return -1;
	*rows = nv;
	nv[*n] = (gp_attr_row_t){.key = key,
	                         .keylen = len,
	                         .calls = line && bwd ? 0 : o->calls,
	                         .kernels = o->kernels,
	                         .gpu_ns = o->gpu_ns,
	                         .syncs = o->syncs,
	                         .sync_ns = o->sync_ns};
	(*n)++;
	return 0;
}

static int cmp_row(const void *a, const void *b)
{
	const gp_attr_row_t *x = a, *y = b;
	if (x->gpu_ns != y->gpu_ns)
		return x->gpu_ns > y->gpu_ns ? -1 : 1;
	if (x->calls != y->calls)
		return x->calls > y->calls ? -1 : 1;
	unsigned n = x->keylen < y->keylen ? x->keylen : y->keylen;
	int c = memcmp(x->key, y->key, n);
	return c ? c : (int)x->keylen - (int)y->keylen;
}

#define COL(h, k, type, w, p, s, pct, doc)                                                         \
	{                                                                                          \
		h, #k, offsetof(gp_attr_row_t, k), type, w, p, s, pct, doc                         \
	}
const gp_attr_col_t gp_attr_cols[GP_ATTR_NCOLS] = {
    COL("GPU ms", gpu_ns, false, 10, 3, 1e6, false,
        "GPU time of the kernels launched inside the operation (or line), ns"),
    COL("share", share_pct, true, 6, 1, 1, true,
        "that time, % of every kernel's of the ranks that recorded operation ranges"),
    COL("kernels", kernels, false, 8, 0, 1, false, "kernels launched inside it"),
    COL("calls", calls, false, 8, 0, 1, false,
        "calls of it in the steps counted (a backward's are its forward's)"),
    COL("us per call", mean_ns_per_call, true, 12, 1, 1e3, false,
        "GPU time per call, ns (none without calls)"),
};

double gp_attr_value(const gp_attr_row_t *r, const gp_attr_col_t *c)
{
	const char *p = (const char *)r + c->off;
	uint64_t u;
	double d;
	if (c->dbl)
		return memcpy(&d, p, sizeof(d)), d;
	return memcpy(&u, p, sizeof(u)), (double)u;
}

double gp_attr_pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0.0;
}

static void derive_row(gp_attr_row_t *r, const gp_attr_t *a)
{
	r->share_pct = gp_attr_pct(r->gpu_ns, a->total_ns);
	r->sync_share_pct = gp_attr_pct(r->sync_ns, a->sync_ns);
	r->mean_ns_per_call = r->calls ? (double)r->gpu_ns / (double)r->calls : 0.0;
	r->calls_unknown = a->xla;
}

/* The rows shown (gp_attr_shown_t), with the rest's figures derived like a row's. */
static void shown_rows(gp_attr_row_t *rows, unsigned n, const gp_attr_t *a, gp_attr_shown_t *s)
{
	memset(s, 0, sizeof(*s));
	s->top = n < GP_ATTR_TOP ? n : GP_ATTR_TOP;
	s->none = -1;
	for (unsigned i = 0; i < n; i++) {
		derive_row(&rows[i], a);
		bool none = rows[i].keylen == 16 && !memcmp(rows[i].key, "(not attributed)", 16);
		if (none && i >= s->top)
			s->none = (int)i;
		else if (i >= s->top) {
			gp_attr_row_t *o = &s->others;
			o->calls += rows[i].calls, o->kernels += rows[i].kernels;
			o->gpu_ns += rows[i].gpu_ns, o->syncs += rows[i].syncs;
			o->sync_ns += rows[i].sync_ns, s->nothers++;
		}
	}
	derive_row(&s->others, a);
}

int gp_attr_make(const gp_otab_t *t, gp_attr_t *a)
{
	memset(a, 0, sizeof(*a));
	a->ranks = t->ranks;
	a->xla = t->ranks && t->xla == t->ranks;
	a->native = t->ranks && t->native == t->ranks;
	a->site_missed = t->site_missed;
	for (unsigned i = 0; i < t->n; i++) {
		const gp_ostat_t *o = &t->v[i];
		a->total_ns += o->gpu_ns, a->total_kernels += o->kernels, a->sync_ns += o->sync_ns;
		if (add_row(&a->by_op, &a->nop, o, false) < 0 ||
		    add_row(&a->by_line, &a->nline, o, true) < 0) {
			gp_attr_free(a);
			return -1;
		}
	}
	if (a->nop)
		qsort(a->by_op, a->nop, sizeof(gp_attr_row_t), cmp_row);
	if (a->nline)
		qsort(a->by_line, a->nline, sizeof(gp_attr_row_t), cmp_row);
	shown_rows(a->by_op, a->nop, a, &a->op_shown);
	shown_rows(a->by_line, a->nline, a, &a->line_shown);
	return 0;
}

void gp_attr_free(gp_attr_t *a)
{
	free(a->by_op);
	free(a->by_line);
	memset(a, 0, sizeof(*a));
}

bool gp_attr_top_sync(const gp_job_t *job, char *out, size_t len, double *share)
{
	const gp_otab_t *t = &job->ops;
	const gp_ostat_t *top = NULL;
	uint64_t all = 0;
	for (unsigned i = 0; i < t->n; i++) {
		all += t->v[i].sync_ns;
		if (t->v[i].name[0] && t->v[i].sync_ns && (!top || t->v[i].sync_ns > top->sync_ns))
			top = &t->v[i];
	}
	if (!top)
		return false;
	snprintf(out, len, "%s", top->name);
	*share = 100.0 * (double)top->sync_ns / (double)all;
	return true;
}

void gp_attr_sync_evidence(const gp_job_t *job, char *evidence, size_t len)
{
	char line[256];
	double share;
	size_t n = strlen(evidence);
	if (gp_attr_top_sync(job, line, sizeof(line), &share) && n + 1 < len)
		snprintf(
		    evidence + n, len - n,
		    "; in the steps with operation ranges, %.0f%% of the blocking time was the "
		    "program's '%s'",
		    share, line);
}
