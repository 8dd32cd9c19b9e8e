/* NVTX ranges: projected GPU time (each kernel to every range enclosing its launch
 * call, nsys-style) and synchronisation time per range. A call belongs to the innermost
 * range open on its own thread; a thread with no range open (PyTorch runs backward on
 * the autograd engine's threads, which annotate nothing) lends its calls to the range
 * open on the steps' thread at that moment. */
#include "config.h"
#include "rankdata.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Innermost range of tid that contains ts; ranges sorted by (tid, start). */
static range_t *enclosing(rank_data_t *d, uint32_t tid, uint64_t ts, size_t *from)
{
	size_t lo = 0, hi = d->ranges.n;
	while (lo < hi) { /* first index with (tid, start) > (tid, ts) */
		size_t mid = (lo + hi) / 2;
		range_t *r = &d->ranges.v[mid];
		if (r->tid < tid || (r->tid == tid && r->start <= ts))
			lo = mid + 1;
		else
			hi = mid;
	}
	*from = lo;
	for (size_t i = lo, steps = 0; i-- > 0 && steps < 4096; steps++) {
		range_t *r = &d->ranges.v[i];
		if (r->tid != tid)
			return NULL;
		if (r->depth < 1000 && r->start <= ts && ts <= r->end)
			return r;
	}
	return NULL;
}

range_t *gp_owner_range(rank_data_t *d, uint32_t tid, uint64_t ts, size_t *from)
{
	range_t *rg = d->tid_mismatch ? NULL : enclosing(d, tid, ts, from);
	if (rg || !d->step_tid || (tid == d->step_tid && !d->tid_mismatch))
		return rg;
	return enclosing(d, d->step_tid, ts, from);
}

/* The thread with the most outermost ranges of the program (the steps' thread when no
 * range was found to be the step). */
static uint32_t busiest_range_thread(const rank_data_t *d)
{
	uint32_t best = 0, cur = 0;
	size_t bestn = 0, n = 0;
	for (size_t i = 0; i < d->ranges.n; i++) { /* sorted by thread */
		const range_t *rg = &d->ranges.v[i];
		if (!i || rg->tid != cur)
			cur = rg->tid, n = 0;
		if (!rg->depth && !rg->domain && ++n > bestn)
			bestn = n, best = cur;
	}
	return best;
}

static gp_rstat_t *rstat_get(gp_job_t *job, const char *name)
{
	uint64_t h = gp_name_hash(name), at;
	if (u64map_get(&job->ridx, h, &at) && !strcmp(job->r[at - 1].name, name))
		return &job->r[at - 1];
	if (u64map_get(&job->ridx, h, &at)) /* two names, one hash: look through them all */
		for (unsigned i = 0; i < job->nr; i++)
			if (!strcmp(job->r[i].name, name))
				return &job->r[i];
	if (job->nr == job->rcap) {
		unsigned nc = job->rcap ? job->rcap * 2 : 64;
		gp_rstat_t *n = realloc(job->r, nc * sizeof(*n));
		if (!n)
			return NULL;
		job->r = n;
		job->rcap = nc;
	}
	gp_rstat_t *r = &job->r[job->nr++];
	if (!u64map_get(&job->ridx, h, &at))
		u64map_put(&job->ridx, h, job->nr);
	memset(r, 0, sizeof(*r));
	r->name = strdup(name);
	return r;
}

void gp_job_add_ranges(gp_job_t *job, const gp_rstat_t *r, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		gp_rstat_t *g = rstat_get(job, r[i].name);
		if (!g)
			continue;
		g->count += r[i].count;
		g->count_all += r[i].count_all;
		g->cpu_ns += r[i].cpu_ns;
		g->gpu_ns += r[i].gpu_ns;
		g->sync_ns += r[i].sync_ns;
	}
}

/* Start/end ranges (depth 1000: PyTorch's layer ranges, ranges that may end on another
 * thread) are not nested, so they take no part in the ownership above: each gets the
 * GPU work launched on the thread that started it while it was open. They are looked up
 * in their own index (positions in d->ranges, so in (tid, start) order): a job without
 * them pays nothing per kernel. */
/* ... and returns the innermost of them (the latest to start), NULL: none. */
static const range_t *project_started(rank_data_t *d, const size_t *idx, size_t n, uint32_t tid,
                                      uint64_t ts, uint64_t dur)
{
	const range_t *inner = NULL;
	size_t lo = 0, hi = n;
	while (lo < hi) { /* first with (tid, start) > (tid, ts) */
		size_t mid = (lo + hi) / 2;
		const range_t *x = &d->ranges.v[idx[mid]];
		if (x->tid < tid || (x->tid == tid && x->start <= ts))
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t j = lo, steps = 0; j-- > 0 && steps < 4096; steps++) {
		range_t *x = &d->ranges.v[idx[j]];
		if (x->tid != tid)
			break;
		if (x->end >= ts) {
			x->gpu_ns += dur;
			if (!inner)
				inner = x;
		}
	}
	return inner;
}

void gp_pass_ranges(gp_job_t *job, gp_rank_t *r, rank_data_t *d)
{
	size_t from;
	r->quality.nvtx_ranges = d->ranges.n;
	r->quality.nvtx_cuda_tids_unrelated = d->tid_mismatch;
	if (!d->step_tid)
		d->step_tid = busiest_range_thread(d);
	/* projected GPU time: each kernel to every range enclosing its launch call, on the
	 * launching thread or, where that thread had none open, on the steps' thread */
	VEC(size_t) started = {0};
	for (size_t i = 0; i < d->ranges.n; i++)
		if (d->ranges.v[i].depth == 1000)
			VEC_PUSH(started, i);
	for (size_t i = 0; i < d->kerns.n; i++) {
		kern_t *k = &d->kerns.v[i];
		const api_t *a = gp_rd_launch(d, k);
		if (!a)
			continue;
		const range_t *in =
		    started.n && !d->tid_mismatch
		        ? project_started(d, started.v, started.n, a->tid, a->start, k->dur)
		        : NULL;
		range_t *rg = gp_owner_range(d, a->tid, a->start, &from);
		/* what launched it: the innermost range around the call, a start/end range (a
		 * module's, mode layers) where it began inside the push/pop one */
		k->range = in && (!rg || in->start >= rg->start) ? in->name : rg ? rg->name : 0;
		if (!rg)
			continue;
		if (rg->tid != a->tid || d->tid_mismatch)
			r->gpu.kernels_other_thread++;
		for (size_t j = from, steps = 0; j-- > 0 && steps < 4096; steps++) {
			range_t *x = &d->ranges.v[j];
			if (x->tid != rg->tid)
				break;
			if (x->depth < 1000 && x->start <= a->start && a->start <= x->end) {
				x->gpu_ns += k->dur;
				if (x->depth == 0)
					break;
			}
		}
	}
	VEC_FREE(started);
	/* synchronisation stalls, with the range they happened in */
	u64map_t sync_by_name = {0};
	for (size_t i = 0; i < d->apis.n; i++) {
		api_t *a = &d->apis.v[i];
		if (!gp_in_gwin(d, a->start))
			continue;
		if (!a->sync)
			continue;
		r->sync.ns += a->dur;
		r->sync.calls++;
		range_t *rg = gp_owner_range(d, a->tid, a->start, &from);
		if (rg) {
			rg->sync_ns += a->dur;
			uint64_t v = 0;
			u64map_get(&sync_by_name, (uint64_t)rg->name + 1, &v);
			u64map_put(&sync_by_name, (uint64_t)rg->name + 1, v + a->dur);
			if (v + a->dur > r->sync.range_ns) {
				r->sync.range_ns = v + a->dur;
				gp_text_set(&r->sync.range, gp_rd_str(d, rg->name), GP_SYNC_RANGE);
			}
		}
	}
	u64map_free(&sync_by_name);
	uint32_t dom = 0; /* the last domain looked at, and whether it is the operations' */
	bool ops = false;
	for (size_t i = 0; i < d->ranges.n; i++) {
		range_t *x = &d->ranges.v[i];
		if (x->domain && x->domain != dom)
			dom = x->domain, ops = gp_is_ops_domain(gp_rd_str(d, dom));
		if (x->domain &&
		    ops) /* operation ranges have tables of their own (attribution.c) */
			continue;
		gp_rstat_t *s = rstat_get(job, gp_rd_str(d, x->name));
		if (!s)
			continue;
		s->count_all++;
		if (!gp_in_gwin(d, x->start)) /* the steady state's: start-up is apart */
			continue;
		s->count++;
		s->cpu_ns += x->end - x->start;
		s->gpu_ns += x->gpu_ns;
		s->sync_ns += x->sync_ns;
	}
}

/* The program's NVTX ranges open at time ts on thread tid, outermost first
 * ("train_step > backward"); false when none is. */
bool gp_open_ranges(rank_data_t *d, uint32_t tid, uint64_t ts, char *out, size_t len)
{
	size_t from;
	range_t *in = enclosing(d, tid, ts, &from), *chain[8];
	unsigned n = 0;
	if (!in)
		return false;
	/* its ancestors start earlier on the same thread and are still open at ts */
	for (size_t i = from; i-- > 0 && n < 8;) {
		range_t *rg = &d->ranges.v[i];
		if (rg->tid != tid)
			break;
		if (rg->domain == 0 && rg->depth < 1000 && rg->start <= ts && ts <= rg->end &&
		    (!n || rg->depth < chain[n - 1]->depth)) {
			chain[n++] = rg;
			if (!rg->depth)
				break;
		}
	}
	size_t o = 0;
	out[0] = '\0';
	for (unsigned k = n; k-- > 0 && o < len;)
		o += (size_t)snprintf(out + o, len - o, "%s%s", k + 1 < n ? " > " : "",
		                      gp_rd_str(d, chain[k]->name));
	return n > 0;
}
