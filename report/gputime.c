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
#include "kernelclass.h"
#include "cbid_names.h"
#include "stats.h"
#include "strhash.h"

#include <math.h>
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
	if (d->ctrl.n || !d->kerns.n || nst < 4 || !strstr(r->id.modes, "cuda"))
		return;
	for (size_t i = 0; i < d->kerns.n; i++)
		if (d->kerns.v[i].start > last)
			last = d->kerns.v[i].start;
	for (size_t i = 0; i < nst; i++)
		if (d->steps.v[i].start > last && !after++)
			first_after = i;
	if (after < 2)
		return;
	gp_text_setf(&r->quality.yielded, GP_YIELDED,
	             "%s%sCUDA activity stopped arriving at step %zu of %zu (another CUPTI client, "
	             "such as torch.profiler, took the activity buffers)",
	             gp_txt(r->quality.yielded), r->quality.yielded.s ? "; " : "", first_after,
	             nst);
}

/* Sorted, disjoint intervals (lo, hi pairs) and how much of [a, b) they cover. */
typedef VEC(uint64_t) spans_t;

static int cmp_pair(const void *x, const void *y)
{
	const uint64_t *p = x, *q = y;
	return p[0] < q[0] ? -1 : p[0] > q[0];
}

/* pairs (lo, hi) in any order, merged in place into sorted disjoint ones */
static void merge_spans(spans_t *s)
{
	size_t n = s->n / 2, m = 0;
	if (!n)
		return;
	qsort(s->v, n, 2 * sizeof(uint64_t), cmp_pair);
	for (size_t i = 1; i < n; i++) {
		uint64_t *last = &s->v[2 * m], *cur = &s->v[2 * i];
		if (cur[0] <= last[1]) {
			if (cur[1] > last[1])
				last[1] = cur[1];
		} else {
			m++;
			s->v[2 * m] = cur[0];
			s->v[2 * m + 1] = cur[1];
		}
	}
	s->n = 2 * (m + 1);
}

static uint64_t covered(const spans_t *s, uint64_t a, uint64_t b)
{
	size_t lo = 0, hi = s->n / 2;
	uint64_t c = 0;
	while (lo < hi) { /* the first span ending after a */
		size_t mid = (lo + hi) / 2;
		if (s->v[2 * mid + 1] <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < s->n / 2 && s->v[2 * i] < b; i++) {
		uint64_t x = s->v[2 * i] > a ? s->v[2 * i] : a;
		uint64_t y = s->v[2 * i + 1] < b ? s->v[2 * i + 1] : b;
		if (y > x)
			c += y - x;
	}
	return c;
}

/* What the host did while the GPU waited for it: blocked for the next batch (the
 * DataLoader's __next__), compiling (a framework's compilations), inside CUDA calls
 * other than synchronisations (launching), or none of those. */
typedef struct host_spans {
	spans_t data, compile, calls, tracer;
} host_spans_t;

static void host_spans(const rank_data_t *d, host_spans_t *h)
{
	for (size_t i = 0; i + 1 < d->data_wait.n; i += 2) {
		uint64_t t = d->data_wait.v[i], w = d->data_wait.v[i + 1];
		VEC_PUSH(h->data, t > w ? t - w : 0);
		VEC_PUSH(h->data, t);
	}
	for (size_t i = 0; i + 2 < d->compiles.n; i += 3) {
		uint64_t t = d->compiles.v[i], w = d->compiles.v[i + 1];
		VEC_PUSH(h->compile, t > w ? t - w : 0);
		VEC_PUSH(h->compile, t);
	}
	for (size_t i = 0; i < d->apis.n; i++)
		if (!d->apis.v[i].sync) {
			VEC_PUSH(h->calls, d->apis.v[i].start);
			VEC_PUSH(h->calls, d->apis.v[i].start + d->apis.v[i].dur);
		}
	for (size_t i = 0; i + 1 < d->overhead.n; i += 2) {
		VEC_PUSH(h->tracer, d->overhead.v[i]);
		VEC_PUSH(h->tracer, d->overhead.v[i + 1]);
	}
	merge_spans(&h->tracer);
	merge_spans(&h->data);
	merge_spans(&h->compile);
	merge_spans(&h->calls);
}

/* A gap the host caused (no synchronisation pending): its parts by what the host did. */
static void classify_host_gap(gp_rank_t *r, const host_spans_t *h, uint64_t a, uint64_t b)
{
	uint64_t data = covered(&h->data, a, b), comp = covered(&h->compile, a, b);
	uint64_t calls = covered(&h->calls, a, b);
	r->gpu.idle_data_ns += data;
	r->gpu.idle_tracer_ns += covered(&h->tracer, a, b);
	r->gpu.idle_compile_ns += comp > b - a - data ? b - a - data : comp;
	if (!data && !comp)
		r->gpu.idle_launch_ns += calls;
}

/* The steady state's waits for the next batch, and the host's time in CUDA calls. */
static void host_per_step(gp_rank_t *r, const rank_data_t *d)
{
	for (size_t i = 0; i + 1 < d->data_wait.n; i += 2)
		if (d->win_hi && d->data_wait.v[i] >= d->win_lo && d->data_wait.v[i] <= d->win_hi) {
			r->gpu.data_wait_ns += d->data_wait.v[i + 1];
			r->gpu.data_waits++;
		}
	uint64_t calls = 0; /* launch calls: what launching costs the host (not a cudaMalloc) */
	for (size_t i = 0; i < d->apis.n; i++)
		if (gp_in_gwin(d, d->apis.v[i].start) && d->apis.v[i].cls == GP_API_LAUNCH)
			calls += d->apis.v[i].dur;
	unsigned n = r->capture.window ? r->capture.steps : r->steps.n_post;
	if (n)
		r->gpu.host_busy_per_step_ms = (double)calls / 1e6 / n;
}

/* The GPU the rank ran on: the device its kernels ran on most (CUDA's index, which the
 * agent's list follows), else the only one it could see. */
static void rank_gpu(gp_rank_t *r, const rank_data_t *d)
{
	uint64_t per[8] = {0};
	unsigned dev = 0, seen = 0;
	bool ran[8] = {false};
	r->gpu.devices = 0;
	r->gpu.dev_ran = 0;
	memset(r->gpu.dev_uuid_h, 0, sizeof(r->gpu.dev_uuid_h));
	for (size_t i = 0; i < d->kerns.n; i++)
		if (d->kerns.v[i].device < 8) {
			per[d->kerns.v[i].device] += d->kerns.v[i].dur + 1;
			ran[d->kerns.v[i].device] |= d->kerns.v[i].kind == 0;
		}
	for (unsigned k = 0; k < 8; k++) {
		r->gpu.devices += ran[k];
		r->gpu.dev_ran |= (uint8_t)(ran[k] << k);
		if (ran[k] && d->gpu_uuid[k]) {
			const char *u = gp_rd_str(d, d->gpu_uuid[k]);
			r->gpu.dev_uuid_h[k] = gp_strhash(u, strlen(u)) | 1;
		}
		seen += d->gpu_uuid[k] != 0;
		if (per[k] > per[dev])
			dev = k;
	}
	r->gpu.main_dev = dev;
	if (!d->gpu_uuid[dev] || (!per[dev] && seen != 1))
		return;
	snprintf(r->id.gpu_uuid, sizeof(r->id.gpu_uuid), "%s", gp_rd_str(d, d->gpu_uuid[dev]));
	r->id.gpu_total = d->gpu_bytes[dev];
	if (d->gpu_name[dev])
		snprintf(r->id.gpu_name, sizeof(r->id.gpu_name), "%s",
		         gp_rd_str(d, d->gpu_name[dev]));
}

/* NCCL's collectives of the steady state by name (gp_collective_name), while the kernels
 * are swept: each kernel's time, and what compute overlapped of it (from the compute
 * before it as it starts, and from compute that starts while it is the last to end). */
typedef struct coll {
	char name[48];
	uint64_t calls, ns, overlap;
} coll_t;
typedef struct colls {
	coll_t v[32];
	unsigned n, at, last; /* at: the last kernel's; last: the one that ends last */
	u64map_t of;          /* kernel name id + 1 -> index + 1 */
} colls_t;

static void coll_add(colls_t *c, const rank_data_t *d, const kern_t *k, uint64_t overlap)
{
	uint64_t j;
	if (!c->n)
		c->last = 32;
	if (!u64map_get(&c->of, (uint64_t)k->name + 1, &j)) {
		char nm[48];
		char *rn = gp_readable_name(gp_rd_str(d, k->name));
		gp_collective_name(rn ? rn : gp_rd_str(d, k->name), nm, sizeof(nm));
		free(rn);
		for (j = 1; j <= c->n && strcmp(c->v[j - 1].name, nm); j++)
			;
		if (j > c->n) {
			if (c->n == 32) { /* more than 32 collectives: the rest uncounted by name */
				c->at = 32;
				return;
			}
			snprintf(c->v[c->n++].name, sizeof(c->v[0].name), "%s", nm);
		}
		u64map_put(&c->of, (uint64_t)k->name + 1, j);
	}
	coll_t *x = &c->v[j - 1];
	x->calls++;
	x->ns += k->dur;
	x->overlap += overlap;
	c->at = (unsigned)(j - 1);
}

static void colls_done(gp_rank_t *r, colls_t *c)
{
	for (unsigned n = 0; n < GP_COLLS; n++) { /* the largest GP_COLLS, most first */
		unsigned best = c->n;
		for (unsigned i = 0; i < c->n; i++)
			if (c->v[i].ns && (best == c->n || c->v[i].ns > c->v[best].ns))
				best = i;
		if (best == c->n)
			break;
		struct gp_coll *o = &r->gpu.coll[r->gpu.ncoll++];
		snprintf(o->name, sizeof(o->name), "%s", c->v[best].name);
		o->calls = c->v[best].calls;
		o->ns = c->v[best].ns;
		o->exposed_ns =
		    c->v[best].ns > c->v[best].overlap ? c->v[best].ns - c->v[best].overlap : 0;
		c->v[best].ns = 0;
	}
	u64map_free(&c->of);
}

/* A copy between host and device from or into pageable memory: the memory kinds the
 * collector recorded; in files without them, an async copy call of a MiB or more that held
 * the host through most of the transfer (the driver stages pageable memory through a
 * pinned buffer while the call waits; from pinned memory the call returns at once). */
static bool pageable(const rank_data_t *d, const kern_t *k, bool *inferred)
{
	unsigned src = k->memkinds & 0xfu, dst = k->memkinds >> 4;
	*inferred = false;
	if (k->memkinds)
		return (k->copykind == 1 && src == GP_MEM_PAGEABLE) ||
		       (k->copykind == 2 && dst == GP_MEM_PAGEABLE);
	const api_t *a = gp_rd_launch(d, k);
	const char *n = a ? gp_cbid_name(a->domain, a->cbid) : NULL;
	if (!n || !strstr(n, "emcpy") || !strstr(n, "Async") || k->bytes < GP_PAGEABLE_MIN_BYTES)
		return false;
	*inferred = true;
	return a->start + a->dur >= k->start + k->dur / 2;
}

/* The steady state's host<->device copies (pageable ones apart) and its fp32 GEMMs on CUDA
 * cores: what the pageable_copies and fp32_no_tensor_cores rules read. */
static void copies_and_precision(gp_rank_t *r, const rank_data_t *d)
{
	u64map_t cls = {0}; /* kernel name id + 1 -> 1 + (sm << 3 | xla << 2 | torch << 1 | simt) */
	uint64_t top_ns = 0;
	uint32_t top = 0;
	u64map_t by = {0}; /* fp32 SIMT kernel name id + 1 -> its time */
	for (size_t i = 0; i < d->kerns.n; i++) {
		const kern_t *k = &d->kerns.v[i];
		if (!in_window(d, k))
			continue;
		if (k->kind == 1 && (k->copykind == 1 || k->copykind == 2)) {
			bool inferred;
			r->gpu.hd_copies++;
			r->gpu.hd_bytes += k->bytes;
			if (!pageable(d, k, &inferred))
				continue;
			const api_t *a = gp_rd_launch(d, k);
			r->gpu.pageable_copies++;
			r->gpu.pageable_bytes += k->bytes;
			r->gpu.pageable_ns += k->dur;
			/* the host held from the transfer's start to the call's end: before it, the
			 * call waited for the GPU's earlier work (a synchronisation's cost, sized
			 * by sync_stall) */
			uint64_t from = a && a->start > k->start ? a->start : k->start;
			r->gpu.pageable_held_ns +=
			    a && a->start + a->dur > from ? a->start + a->dur - from : 0;
			r->gpu.pageable_inferred |= inferred;
			continue;
		}
		if (k->kind != 0)
			continue;
		uint64_t v, t = 0;
		if (!u64map_get(&cls, (uint64_t)k->name + 1, &v)) {
			unsigned sm;
			const char *n = gp_rd_str(d, k->name);
			bool f = gp_fp32_simt_gemm(n, &sm);
			bool torch = strstr(n, "at::native") || strstr(n, "at6native") ||
			             strstr(n, "c10::") || strstr(n, "3c10");
			/* XLA names its kernels by their fusion (loop_add_fusion_7,
			 * input_reduce_fusion, gemm_fusion_dot_8), which the kinds file under
			 * elementwise, reduction or GEMM; n is the collector's mangled name, so
			 * cuDNN's cudnn::fusion kernels read _ZN5cudnn6fusion... here, no XLA's */
			bool xla = strstr(n, "fusion") && strncmp(n, "_Z", 2) && !strstr(n, "::");
			v = 1 + ((uint64_t)sm << 3 | (uint64_t)xla << 2 | (uint64_t)torch << 1 | f);
			u64map_put(&cls, (uint64_t)k->name + 1, v);
		}
		r->gpu.torch_kernels |= ((v - 1) >> 1) & 1;
		r->gpu.xla_kernels |= ((v - 1) >> 2) & 1;
		if (!((v - 1) & 1))
			continue;
		r->gpu.fp32_gemm_ns += k->dur;
		r->gpu.fp32_gemm_calls++;
		if ((v - 1) >> 3 > r->gpu.fp32_gemm_sm)
			r->gpu.fp32_gemm_sm = (unsigned)((v - 1) >> 3);
		u64map_get(&by, (uint64_t)k->name + 1, &t);
		u64map_put(&by, (uint64_t)k->name + 1, t + k->dur);
		if (t + k->dur > top_ns)
			top_ns = t + k->dur, top = k->name;
	}
	if (top) {
		char *rn = gp_readable_name(gp_rd_str(d, top));
		gp_text_set(&r->gpu.fp32_gemm_top, rn ? rn : gp_rd_str(d, top), GP_GEMM_TOP);
		free(rn);
	}
	u64map_free(&cls);
	u64map_free(&by);
}

/* One device's busy union, swept in start order: a kernel [s, e) on device dv extends the
 * current stretch or closes it into busy[dv] */
static void dev_sweep(uint64_t *busy, uint64_t *cur_s, uint64_t *cur_e, unsigned dv, uint64_t s,
                      uint64_t e)
{
	if (s > cur_e[dv] || !cur_e[dv]) {
		busy[dv] += cur_e[dv] - cur_s[dv];
		cur_s[dv] = s;
		cur_e[dv] = e;
	} else if (e > cur_e[dv]) {
		cur_e[dv] = e;
	}
}

/* The rank's kernel mean and communication shares, from its sums */
static void gpu_shares(gp_rank_t *r)
{
	if (r->gpu.nkernels)
		r->gpu.kernel_mean_us = (double)r->gpu.compute_ns / 1e3 / (double)r->gpu.nkernels;
	if (r->gpu.comm_ns + r->gpu.compute_ns)
		r->gpu.comm_pct =
		    100.0 * (double)r->gpu.comm_ns / (double)(r->gpu.comm_ns + r->gpu.compute_ns);
	if (r->gpu.comm_ns)
		r->gpu.comm_overlap_pct =
		    100.0 * (double)r->gpu.overlap_ns / (double)r->gpu.comm_ns;
}

void gp_pass_gpu(gp_rank_t *r, rank_data_t *d)
{
	cuda_went_silent(r, d);
	host_per_step(r, d);
	rank_gpu(r, d);
	if (!d->kerns.n)
		return;
	host_spans_t hs = {0};
	host_spans(d, &hs);
	for (size_t i = 0; i < d->kerns.n; i++) {
		const api_t *a = gp_rd_launch(d, &d->kerns.v[i]);
		if (d->kerns.v[i].kind == 0 && a && gp_step_at(d, a->start))
			r->gpu.kernels_in_steps++;
	}
	SORT_IF_NEEDED(d->kerns, cmp_kern);
	VEC(api_t) syncs = {0}; /* blocking calls, by start */
	for (size_t i = 0; i < d->apis.n; i++)
		if (d->apis.v[i].sync)
			VEC_PUSH(syncs, d->apis.v[i]);
	uint64_t cur_s = 0, cur_e = 0, first = 0, last = 0;
	uint64_t comm_e = 0, comp_e = 0;
	uint64_t step_ns =
	    r->steps.median_ms > 0 ? (uint64_t)(r->steps.median_ms * 1e6) : UINT64_MAX;
	size_t gap_step = 0; /* the last step counted in idle_host_gaps */
	size_t part = 0;     /* the stretch of gwin the last kernel was in: the GPU's idle time
	                        between two capture windows is not measured */
	bool any = false;
	u64map_t comm_by_name = {0};
	colls_t cl = {0};
	VEC(uint64_t) lat = {0}, calls = {0};
	uint64_t last_call = UINT64_MAX;
	uint64_t dev_s[8] = {0}, dev_e[8] = {0}; /* each device's busy union, swept */
	for (size_t i = 0; i < d->kerns.n; i++) {
		kern_t *k = &d->kerns.v[i];
		uint64_t e = k->start + k->dur;
		if (!in_window(d, k))
			continue;
		if (k->device < 8)
			dev_sweep(r->gpu.dev_busy_ns, dev_s, dev_e, k->device, k->start, e);
		size_t kp =
		    d->gwin.n ? gp_interval_of(d->gwin.v, d->gwin.n, gp_rd_launch_ts(d, k)) : 1;
		if (any && kp != part) { /* the previous stretch ends here */
			r->gpu.busy_ns += cur_e - cur_s;
			r->gpu.span_ns += last - first;
			any = false;
		}
		part = kp;
		if (!any) {
			cur_s = cur_e = first = last = k->start;
			any = true;
		}
		if (k->kind == 0)
			r->gpu.nkernels++;
		if (e > last)
			last = e;
		/* busy union and idle classification */
		if (k->start > cur_e) {
			uint64_t gap = k->start - cur_e;
			const api_t *a = gp_rd_launch(d, k);
			r->gpu.busy_ns += cur_e - cur_s;
			if (a && a->start >= cur_e && blocked_at(syncs.v, syncs.n, cur_e))
				r->gpu.idle_sync_ns += gap;
			else if (gap < KERNEL_WAIT_NS)
				r->gpu.idle_kernel_ns += gap;
			else if (a && a->start >= cur_e) {
				r->gpu.idle_host_ns += gap;
				classify_host_gap(r, &hs, cur_e, k->start);
				size_t sk = gap * 10 >= step_ns ? gp_step_at(d, a->start) : 0;
				if (sk > r->steps.warmup && sk != gap_step) { /* a step once */
					r->gpu.idle_host_gaps++;
					gap_step = sk;
				}
			} else
				r->gpu.idle_other_ns += gap;
			cur_s = k->start;
		}
		if (e > cur_e)
			cur_e = e;
		/* categories and comm/compute overlap (compute and comm unions swept) */
		if (k->kind != 0) {
			r->gpu.memcpy_ns += k->dur;
			continue;
		}
		uint64_t cf;
		if (!u64map_get(&comm_by_name, (uint64_t)k->name + 1, &cf)) {
			cf = gp_is_comm(gp_rd_str(d, k->name)) ? 2 : 1;
			u64map_put(&comm_by_name, (uint64_t)k->name + 1, cf);
		}
		bool comm = cf == 2;
		if (comm) {
			uint64_t ov = comp_e > k->start ? (comp_e < e ? comp_e : e) - k->start : 0;
			r->gpu.comm_ns += k->dur;
			r->gpu.overlap_ns += ov;
			coll_add(&cl, d, k, ov);
			if (e > comm_e)
				comm_e = e, cl.last = cl.at;
		} else {
			r->gpu.compute_ns += k->dur;
			if (comm_e > k->start) {
				uint64_t ov = (comm_e < e ? comm_e : e) - k->start;
				r->gpu.overlap_ns += ov;
				if (cl.last < cl.n)
					cl.v[cl.last].overlap += ov;
			}
			if (e > comp_e)
				comp_e = e;
		}
		if (k->dur < GP_SMALL_KERNEL_US * 1000ull)
			r->gpu.small_kernels++;
		const api_t *a = gp_rd_launch(d, k);
		if (a) {
			r->gpu.launches_matched++;
			if (k->start >= a->start)
				VEC_PUSH(lat, k->start - a->start);
			if (a->corr != last_call) /* a graph launch's kernels share one call */
				VEC_PUSH(calls, a->dur);
			last_call = a->corr;
			if (k->dur < a->dur)
				r->gpu.short_vs_launch++;
		}
	}
	u64map_free(&comm_by_name);
	colls_done(r, &cl);
	VEC_FREE(syncs);
	VEC_FREE(hs.data);
	VEC_FREE(hs.compile);
	VEC_FREE(hs.calls);
	VEC_FREE(hs.tracer);
	if (!any) {
		VEC_FREE(lat);
		VEC_FREE(calls);
		return;
	}
	r->gpu.busy_ns += cur_e - cur_s;
	r->gpu.span_ns += last - first;
	for (unsigned dv = 0; dv < 8; dv++)
		r->gpu.dev_busy_ns[dv] += dev_e[dv] - dev_s[dv];
	gpu_shares(r);
	if (lat.n)
		r->gpu.launch_latency_us = (double)gp_median_u64(lat.v, lat.n) / 1e3;
	if (calls.n)
		r->gpu.launch_call_us = (double)gp_median_u64(calls.v, calls.n) / 1e3;
	VEC_FREE(lat);
	VEC_FREE(calls);
	unsigned gsteps = r->capture.window ? r->capture.steps : r->steps.n_post;
	if (gsteps)
		r->gpu.kernels_per_step = (double)r->gpu.nkernels / (double)gsteps;
	copies_and_precision(r, d);
}

unsigned gp_khist_bucket(uint64_t ns)
{
	double b = ns ? floor(16.0 * log2((double)ns)) - GP_KHIST_SHIFT : 0;
	return b < 0 ? 0 : b >= GP_KHIST ? GP_KHIST - 1 : (unsigned)b;
}

/* k's histogram covering buckets lo to hi (it grows by HIST_SLACK more each side, so a
 * kernel's durations seldom move it; never shrinks). false: no memory. */
#define HIST_SLACK 8u
static bool hist_cover(gp_kstat_t *k, unsigned lo, unsigned hi)
{
	unsigned from = k->hlo, to = k->hlo + k->hn; /* [from, to) */
	if (k->hn && lo >= from && hi < to)
		return true;
	from = !k->hn || lo < from ? (lo > HIST_SLACK ? lo - HIST_SLACK : 0) : from;
	to = !k->hn || hi >= to ? (hi + 1 + HIST_SLACK < GP_KHIST ? hi + 1 + HIST_SLACK : GP_KHIST)
	                        : to;
	uint32_t *h = calloc(to - from, sizeof(uint32_t));
	if (!h)
		return false;
	if (k->hn)
		memcpy(h + (k->hlo - from), k->hist, k->hn * sizeof(uint32_t));
	free(k->hist);
	k->hist = h;
	k->hlo = (uint16_t)from;
	k->hn = (uint16_t)(to - from);
	return true;
}

bool gp_kstat_hist_add(gp_kstat_t *k, unsigned b, uint32_t n)
{
	if (b >= GP_KHIST || !hist_cover(k, b, b))
		return false;
	k->hist[b - k->hlo] += n;
	return true;
}

void gp_kstat_free_hist(gp_kstat_t *k)
{
	free(k->hist);
	k->hist = NULL;
	k->hlo = k->hn = 0;
}

void gp_kstat_add(gp_kstat_t *k, uint64_t ns)
{
	k->calls++;
	k->total += ns;
	k->sumsq += (double)ns * (double)ns;
	gp_kstat_hist_add(k, gp_khist_bucket(ns), 1);
	if (ns < k->min)
		k->min = ns;
	if (ns > k->max)
		k->max = ns;
}

void gp_kstat_merge(gp_kstat_t *into, const gp_kstat_t *k)
{
	into->calls += k->calls;
	into->total += k->total;
	into->sumsq += k->sumsq;
	if (k->hn && hist_cover(into, k->hlo, k->hlo + k->hn - 1u))
		for (unsigned i = 0; i < k->hn; i++)
			into->hist[k->hlo - into->hlo + i] += k->hist[i];
	if (k->min < into->min)
		into->min = k->min;
	if (k->max > into->max)
		into->max = k->max;
}

double gp_kstat_quantile(const gp_kstat_t *k, double q)
{
	uint64_t n = 0, want, seen = 0;
	for (unsigned i = 0; i < k->hn; i++)
		n += k->hist[i];
	if (!n)
		return 0;
	want = (uint64_t)ceil(q * (double)n); /* the nearest-rank quantile */
	want = want ? want : 1;
	for (unsigned i = 0; i < k->hn; i++) {
		unsigned b = k->hlo + i;
		seen += k->hist[i];
		if (seen < want)
			continue;
		double v = exp2((b + GP_KHIST_SHIFT + 0.5) / 16.0);
		v = v < (double)k->min ? (double)k->min : v;
		return v > (double)k->max ? (double)k->max : v;
	}
	return (double)k->max;
}

double gp_kstat_stddev(const gp_kstat_t *k)
{
	if (k->calls < 2)
		return 0;
	double mean = (double)k->total / (double)k->calls;
	double var = k->sumsq / (double)k->calls - mean * mean;
	return var > 0 ? sqrt(var) : 0;
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

/* Where a kernel was launched, merged: the same range adds up; a new one takes the
 * place of the least of GP_KRANGES where it launched more; most first. */
static void add_range(gp_kstat_t *g, const char *range, uint64_t ns)
{
	if (!range || !ns)
		return;
	unsigned i = 0;
	while (i < GP_KRANGES && g->in[i].name && strcmp(g->in[i].name, range))
		i++;
	if (i == GP_KRANGES) { /* not there, and no room: over the least, if more */
		i = GP_KRANGES - 1;
		if (ns <= g->in[i].ns)
			return;
		free(g->in[i].name);
		g->in[i].name = NULL, g->in[i].ns = 0;
	}
	if (!g->in[i].name && !(g->in[i].name = strdup(range)))
		return;
	g->in[i].ns += ns;
	for (; i > 0 && g->in[i].ns > g->in[i - 1].ns; i--) { /* most first */
		struct gp_krange t = g->in[i];
		g->in[i] = g->in[i - 1];
		g->in[i - 1] = t;
	}
}

void gp_job_add_kernels(gp_job_t *job, const gp_kstat_t *k, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		gp_kstat_t *g = kstat_get(job, k[i].name);
		if (!g)
			continue;
		gp_kstat_merge(g, &k[i]);
		for (unsigned j = 0; j < GP_KRANGES; j++)
			add_range(g, k[i].in[j].name, k[i].in[j].ns);
	}
}

/* The ranges of each kernel name (by name id) that launched most of its time: (kernel
 * name, range name) -> ns, then the GP_KRANGES largest per kernel; the steps' own range says
 * nothing (every kernel of a step is in it) and is not taken. */
static void launching_ranges(const gp_rank_t *r, rank_data_t *d, u64map_t *idx, gp_kstat_t *loc)
{
	u64map_t by = {0};
	for (size_t i = 0; i < d->kerns.n; i++) {
		const kern_t *k = &d->kerns.v[i];
		uint64_t v = 0;
		if (k->kind != 0 || !k->range || !in_window(d, k) ||
		    (r->steps.name[0] && !strcmp(gp_rd_str(d, k->range), r->steps.name)))
			continue;
		uint64_t key = (uint64_t)k->name << 32 | k->range;
		u64map_get(&by, key + 1, &v);
		u64map_put(&by, key + 1, v + k->dur);
	}
	for (size_t i = 0; i < by.cap; i++) {
		uint64_t j;
		if (!by.k[i])
			continue;
		uint64_t key = by.k[i] - 1, ns = by.v[i];
		if (!u64map_get(idx, (key >> 32) + 1, &j))
			continue;
		gp_kstat_t *s = &loc[j];
		unsigned at = GP_KRANGES;
		while (at > 0 && ns > s->in[at - 1].ns) /* most first: where it goes */
			at--;
		if (at == GP_KRANGES)
			continue;
		memmove(&s->in[at + 1], &s->in[at], (GP_KRANGES - 1 - at) * sizeof(s->in[0]));
		s->in[at].name = (char *)gp_rd_str(d, (uint32_t)key);
		s->in[at].ns = ns;
	}
	u64map_free(&by);
}

void gp_merge_kernels(gp_job_t *job, const gp_rank_t *r, rank_data_t *d)
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
			size_t had = loc.n;
			VEC_PUSH(loc, z);
			if (loc.n == had) /* no memory: no row for it (index -1 was a crash) */
				continue;
			j = loc.n - 1;
			u64map_put(&idx, (uint64_t)k->name + 1, j);
		}
		gp_kstat_add(&loc.v[j], k->dur);
	}
	if (loc.n)
		launching_ranges(r, d, &idx, loc.v);
	for (size_t i = 0; i < loc.n; i++) {
		/* by the name a person reads (demangled): what every output shows */
		char *rn = gp_readable_name(loc.v[i].name);
		gp_kstat_t *g = kstat_get(job, rn ? rn : loc.v[i].name);
		free(rn);
		if (!g)
			continue;
		gp_kstat_merge(g, &loc.v[i]);
		for (unsigned j = 0; j < GP_KRANGES; j++)
			add_range(g, loc.v[i].in[j].name, loc.v[i].in[j].ns);
	}
	for (size_t i = 0; i < loc.n; i++)
		gp_kstat_free_hist(&loc.v[i]);
	VEC_FREE(loc);
	u64map_free(&idx);
}
