/* GPU time: busy/idle over the steady state and why the GPU idled, communication vs
 * compute and their overlap, launch latency, the job-wide kernel table. Definitions
 * follow the seed text and HTA: busy = union of kernel, memcpy and memset intervals;
 * idle = span - busy, each gap put in one class by what the host was doing when the GPU
 * ran dry:
 *   sync         the next launch came after the GPU finished, and the host was blocked
 *                in a synchronising call when it did (the host had drained the queue
 *                and then had to refill it: the cost of that synchronisation);
 *   kernel_wait  other gaps under 30 us: launch overhead between back-to-back work;
 *   host_wait    the next launch came after the GPU finished, no synchronisation (data
 *                loading, Python, a slow host);
 *   other        the work was launched in time but started late (dependencies,
 *                events, other streams). */
#include "config.h"
#include "rankdata.h"
#include "names.h"
#include "stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KERNEL_WAIT_NS 30000

static int cmp_kern(const void *a, const void *b)
{
	const kern_t *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* Was some thread blocked in a synchronising call at time t? (calls sorted by start) */
static bool blocked_at(const api_t *s, size_t n, uint64_t t)
{
	size_t lo = 0, hi = n;
	while (lo < hi) { /* first call starting after t */
		size_t mid = (lo + hi) / 2;
		if (s[mid].start <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo, k = 0; i-- > 0 && k < 16; k++)
		if (s[i].start + s[i].dur >= t)
			return true;
	return false;
}

/* Is this GPU activity part of the steady state? With steps known, activity whose launch
 * call (or, unmatched, whose start) falls in the post-warm-up steps; otherwise all. */
static bool in_window(const rank_data_t *d, const kern_t *k)
{
	return gp_in_gwin(d, gp_rd_launch_ts(d, k));
}

/* CUDA activity that stops arriving while steps go on, without a capture switch: another
 * CUPTI client (torch.profiler, a tool attached later) re-registered the activity
 * buffers. The user's tool wins; the report says from where on the GPU view is missing. */
static void cuda_went_silent(gp_rank_t *r, rank_data_t *d)
{
	uint64_t last = 0;
	size_t nst = d->steps.n, after = 0, first_after = 0;
	if (d->ctrl.n || !d->kerns.n || nst < 4 || !strstr(r->modes, "cuda"))
		return;
	for (size_t i = 0; i < d->kerns.n; i++)
		if (d->kerns.v[i].start > last)
			last = d->kerns.v[i].start;
	for (size_t i = 0; i < nst; i++)
		if (d->steps.v[i].start > last && !after++)
			first_after = i;
	if (after < 2)
		return;
	snprintf(r->yielded + strlen(r->yielded), sizeof(r->yielded) - strlen(r->yielded),
	         "%sCUDA activity stopped arriving at step %zu of %zu (another CUPTI client, such "
	         "as torch.profiler, took the activity buffers)",
	         r->yielded[0] ? "; " : "", first_after, nst);
}

void gp_pass_gpu(gp_rank_t *r, rank_data_t *d)
{
	cuda_went_silent(r, d);
	if (!d->kerns.n)
		return;
	for (size_t i = 0; i < d->kerns.n; i++) {
		const api_t *a = gp_rd_launch(d, &d->kerns.v[i]);
		if (d->kerns.v[i].kind == 0 && a && gp_step_at(d, a->start))
			r->kernels_in_steps++;
	}
	SORT_IF_NEEDED(d->kerns, cmp_kern);
	VEC(api_t) syncs = {0}; /* blocking calls, by start */
	for (size_t i = 0; i < d->apis.n; i++)
		if (d->apis.v[i].sync)
			VEC_PUSH(syncs, d->apis.v[i]);
	uint64_t cur_s = 0, cur_e = 0, first = 0, last = 0;
	uint64_t comm_e = 0, comp_e = 0;
	size_t part = 0; /* the stretch of gwin the last kernel was in: the GPU's idle time
	                    between two capture windows is not measured */
	bool any = false;
	u64map_t comm_by_name = {0};
	VEC(uint64_t) lat = {0};
	for (size_t i = 0; i < d->kerns.n; i++) {
		kern_t *k = &d->kerns.v[i];
		uint64_t e = k->start + k->dur;
		if (!in_window(d, k))
			continue;
		size_t kp = d->gwin.n ? gp_interval_of(d->gwin.v, d->gwin.n, gp_rd_launch_ts(d, k)) : 1;
		if (any && kp != part) { /* the previous stretch ends here */
			r->busy_ns += cur_e - cur_s;
			r->span_ns += last - first;
			any = false;
		}
		part = kp;
		if (!any) {
			cur_s = cur_e = first = last = k->start;
			any = true;
		}
		if (k->kind == 0)
			r->nkernels++;
		if (e > last)
			last = e;
		/* busy union and idle classification */
		if (k->start > cur_e) {
			uint64_t gap = k->start - cur_e;
			const api_t *a = gp_rd_launch(d, k);
			r->busy_ns += cur_e - cur_s;
			if (a && a->start >= cur_e && blocked_at(syncs.v, syncs.n, cur_e))
				r->idle_sync_ns += gap;
			else if (gap < KERNEL_WAIT_NS)
				r->idle_kernel_ns += gap;
			else if (a && a->start >= cur_e)
				r->idle_host_ns += gap;
			else
				r->idle_other_ns += gap;
			cur_s = k->start;
		}
		if (e > cur_e)
			cur_e = e;
		/* categories and comm/compute overlap (compute and comm unions swept) */
		if (k->kind != 0) {
			r->memcpy_ns += k->dur;
			continue;
		}
		uint64_t cf;
		if (!u64map_get(&comm_by_name, (uint64_t)k->name + 1, &cf)) {
			cf = gp_is_comm(gp_rd_str(d, k->name)) ? 2 : 1;
			u64map_put(&comm_by_name, (uint64_t)k->name + 1, cf);
		}
		bool comm = cf == 2;
		if (comm) {
			r->comm_ns += k->dur;
			if (comp_e > k->start)
				r->overlap_ns += (comp_e < e ? comp_e : e) - k->start;
			if (e > comm_e)
				comm_e = e;
		} else {
			r->compute_ns += k->dur;
			if (comm_e > k->start)
				r->overlap_ns += (comm_e < e ? comm_e : e) - k->start;
			if (e > comp_e)
				comp_e = e;
		}
		if (k->dur < 10000)
			r->small_kernels++;
		const api_t *a = gp_rd_launch(d, k);
		if (a) {
			r->launches_matched++;
			if (k->start >= a->start)
				VEC_PUSH(lat, k->start - a->start);
			if (k->dur < a->dur)
				r->short_vs_launch++;
		}
	}
	u64map_free(&comm_by_name);
	VEC_FREE(syncs);
	if (!any) {
		VEC_FREE(lat);
		return;
	}
	r->busy_ns += cur_e - cur_s;
	r->span_ns += last - first;
	if (r->nkernels)
		r->kernel_mean_us = (double)r->compute_ns / 1e3 / (double)r->nkernels;
	if (lat.n)
		r->launch_latency_us = (double)gp_median_u64(lat.v, lat.n) / 1e3;
	VEC_FREE(lat);
	unsigned gsteps = r->capture_window ? r->captured_steps : r->nsteps_post;
	if (gsteps)
		r->kernels_per_step = (double)r->nkernels / (double)gsteps;
}

static gp_kstat_t *kstat_get(gp_job_t *job, const char *name)
{
	uint64_t h = gp_name_hash(name), at;
	if (u64map_get(&job->kidx, h, &at) && !strcmp(job->k[at - 1].name, name))
		return &job->k[at - 1];
	if (u64map_get(&job->kidx, h, &at)) /* two names, one hash: look through them all */
		for (unsigned i = 0; i < job->nk; i++)
			if (!strcmp(job->k[i].name, name))
				return &job->k[i];
	if (job->nk == job->kcap) {
		unsigned nc = job->kcap ? job->kcap * 2 : 64;
		gp_kstat_t *n = realloc(job->k, nc * sizeof(*n));
		if (!n)
			return NULL;
		job->k = n;
		job->kcap = nc;
	}
	gp_kstat_t *k = &job->k[job->nk++];
	if (!u64map_get(&job->kidx, h, &at))
		u64map_put(&job->kidx, h, job->nk);
	memset(k, 0, sizeof(*k));
	k->name = strdup(name);
	k->min = UINT64_MAX;
	k->comm = gp_is_comm(name);
	return k;
}

void gp_job_add_kernels(gp_job_t *job, const gp_kstat_t *k, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		gp_kstat_t *g = kstat_get(job, k[i].name);
		if (!g)
			continue;
		g->calls += k[i].calls;
		g->total += k[i].total;
		if (k[i].min < g->min)
			g->min = k[i].min;
		if (k[i].max > g->max)
			g->max = k[i].max;
	}
}

void gp_merge_kernels(gp_job_t *job, rank_data_t *d)
{
	/* per-rank aggregation by name id first (cheap), then by name across ranks */
	u64map_t idx = {0};
	VEC(gp_kstat_t) loc = {0};
	for (size_t i = 0; i < d->kerns.n; i++) {
		kern_t *k = &d->kerns.v[i];
		uint64_t j;
		/* the steady state's kernels (start-up's have a section of their own) */
		if (k->kind != 0 || !in_window(d, k))
			continue;
		if (!u64map_get(&idx, (uint64_t)k->name + 1, &j)) {
			gp_kstat_t z = {.name = (char *)gp_rd_str(d, k->name), .min = UINT64_MAX};
			VEC_PUSH(loc, z);
			j = loc.n - 1;
			u64map_put(&idx, (uint64_t)k->name + 1, j);
		}
		gp_kstat_t *s = &loc.v[j];
		s->calls++;
		s->total += k->dur;
		if (k->dur < s->min)
			s->min = k->dur;
		if (k->dur > s->max)
			s->max = k->dur;
	}
	for (size_t i = 0; i < loc.n; i++) {
		/* by the name a person reads (demangled): what every output shows */
		char *rn = gp_readable_name(loc.v[i].name);
		gp_kstat_t *g = kstat_get(job, rn ? rn : loc.v[i].name);
		free(rn);
		if (!g)
			continue;
		g->calls += loc.v[i].calls;
		g->total += loc.v[i].total;
		if (loc.v[i].min < g->min)
			g->min = loc.v[i].min;
		if (loc.v[i].max > g->max)
			g->max = loc.v[i].max;
	}
	VEC_FREE(loc);
	u64map_free(&idx);
}
