/* Per-rank analysis (see analyze.h). Definitions follow the seed text and HTA:
 * busy = union of kernel and memcpy/memset intervals; idle = span - busy, split into
 * kernel_wait (gap < 30 us), host_wait (the next launch call began after the previous
 * GPU work ended) and other. NVTX projected GPU time = kernels whose launch call lies
 * inside the range on the same thread (nsys-style projection). */
#include "config.h"
#include "analyze.h"
#include "modes.h"
#include "event.h"
#include "log.h"
#include "rankfile.h"
#include "symtab.h"
#include "vec.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct range {
	uint64_t start, end, gpu_ns, sync_ns;
	uint32_t name, tid, depth, domain; /* domain 0: the default one, the program's own */
} range_t;
typedef struct kern {
	uint64_t start, dur;
	uint32_t name, corr, stream;
	uint8_t kind;     /* 0 kernel 1 memcpy 2 memset */
	uint8_t copykind; /* CUPTI memcpy kind: 1 HtoD 2 DtoH 8 DtoD ... */
} kern_t;
typedef struct api {
	uint64_t start, dur;
	uint32_t corr, tid, cbid, stack;
	uint8_t domain, alloc, cls;
} api_t;
typedef struct mem {
	uint64_t ts, addr, bytes;
	uint32_t corr;
	uint16_t kind;
	uint8_t is_free;
} mem_t;
typedef struct open_range {
	uint64_t start;
	uint32_t name, tid, domain;
	uint64_t id;
} open_t;

typedef struct rank_data {
	gp_symtab_t sym;
	VEC(range_t) ranges;
	VEC(kern_t) kerns;
	VEC(api_t) apis;
	VEC(mem_t) mems;
	VEC(open_t) stack; /* open push ranges, all threads */
	VEC(open_t) started;
	uint64_t nvml_mem_max, nvml_samples, nvml_util_sum;
	struct io_prev {
		uint64_t ts, v[4];
		unsigned bits;
		double bytes[4], secs[4];
	} io_prev[8]; /* PCIe/NVLink counters per device: the last sample, sums */
	uint64_t first_ts, last_ts;
	uint64_t win_lo, win_hi; /* post-warm-up steps, when steps are known */
	uint64_t gpu_lo, gpu_hi; /* GPU statistics: win_* cut to the captured window */
	VEC(uint64_t) ctrl;      /* capture switches: ts, modes, ts, modes, ... */
	u64map_t alloc_api;      /* correlation -> index + 1 of the allocation call (its stack) */
	VEC(uint64_t) prof;      /* cudaProfilerStart/Stop: ts << 1 | start */
	VEC(uint64_t) steps;     /* all step intervals: start, end, start, end, ... (sorted) */
} rank_data_t;

/* ---- strings ---- */

static const char *str_get(rank_data_t *d, uint32_t id)
{
	const char *s = gp_symtab_str(&d->sym, id);
	return s && *s ? s : "(unnamed)";
}

/* ---- reading ---- */

static void on_event(rank_data_t *d, gp_rank_t *r, const gp_event_t *e)
{
	if (gp_symtab_feed(&d->sym, e))
		return;
	if (e->ts && (!d->first_ts || e->ts < d->first_ts) && e->type != GP_EV_STRING &&
	    e->type != GP_EV_STACK && e->type != GP_EV_FRAME)
		d->first_ts = e->ts;
	if (e->ts > d->last_ts && e->type != GP_EV_STRING && e->type != GP_EV_STACK &&
	    e->type != GP_EV_FRAME)
		d->last_ts =
		    e->ts + ((e->type >= GP_EV_KERNEL && e->type <= GP_EV_SYNC) ? e->a : 0);
	switch (e->type) {
	case GP_EV_NVTX_PUSH: {
		open_t o = {.start = e->ts,
		            .name = (uint32_t)e->a,
		            .tid = e->tid,
		            .domain = (uint32_t)e->b};
		VEC_PUSH(d->stack, o);
		break;
	}
	case GP_EV_NVTX_POP: {
		/* innermost open range of this thread */
		uint32_t depth = 0;
		for (size_t i = d->stack.n; i-- > 0;) {
			if (d->stack.v[i].tid != e->tid || d->stack.v[i].domain != (uint32_t)e->b)
				continue;
			for (size_t j = 0; j < i; j++)
				depth += d->stack.v[j].tid == e->tid &&
				         d->stack.v[j].domain == d->stack.v[i].domain;
			range_t rg = {.start = d->stack.v[i].start,
			              .end = e->ts,
			              .name = d->stack.v[i].name,
			              .tid = e->tid,
			              .depth = depth,
			              .domain = d->stack.v[i].domain};
			VEC_PUSH(d->ranges, rg);
			memmove(&d->stack.v[i], &d->stack.v[i + 1],
			        (d->stack.n - i - 1) * sizeof(open_t));
			d->stack.n--;
			break;
		}
		break;
	}
	case GP_EV_NVTX_START: {
		open_t o = {.start = e->ts,
		            .name = (uint32_t)e->a,
		            .tid = e->tid,
		            .id = e->c,
		            .domain = (uint32_t)e->b};
		VEC_PUSH(d->started, o);
		break;
	}
	case GP_EV_NVTX_END:
		for (size_t i = d->started.n; i-- > 0;) {
			if (d->started.v[i].id != e->c)
				continue;
			/* start/end ranges may cross threads: kept at depth 1000 so they never
			 * count as steps but still show in the range table */
			range_t rg = {.start = d->started.v[i].start,
			              .end = e->ts,
			              .name = d->started.v[i].name,
			              .tid = d->started.v[i].tid,
			              .depth = 1000};
			VEC_PUSH(d->ranges, rg);
			d->started.v[i] = d->started.v[--d->started.n];
			break;
		}
		break;
	case GP_EV_KERNEL:
	case GP_EV_MEMCPY:
	case GP_EV_MEMSET: {
		kern_t k = {
		    .start = e->ts, .dur = e->a, .corr = (uint32_t)e->c, .stream = (uint32_t)e->d};
		k.kind = e->type == GP_EV_KERNEL ? 0 : e->type == GP_EV_MEMCPY ? 1 : 2;
		k.name = e->type == GP_EV_KERNEL ? (uint32_t)e->b : 0;
		k.copykind = e->type == GP_EV_MEMCPY ? (uint8_t)e->u16 : 0;
		if (e->type == GP_EV_KERNEL)
			r->kernels_total++;
		if (e->type == GP_EV_MEMCPY)
			r->nmemcpy++;
		if (e->type == GP_EV_MEMSET)
			r->nmemset++;
		VEC_PUSH(d->kerns, k);
		break;
	}
	case GP_EV_SYNC:
		r->nsync_records++;
		break;
	case GP_EV_API: {
		api_t a = {.start = e->ts,
		           .dur = e->a,
		           .corr = (uint32_t)e->c,
		           .tid = e->tid,
		           .cbid = (uint32_t)e->b,
		           .stack = (uint32_t)e->d,
		           .domain = e->u8,
		           .alloc = e->u16 == GP_API_ALLOC_STACK,
		           .cls = (uint8_t)e->u16};
		VEC_PUSH(d->apis, a);
		break;
	}
	case GP_EV_ALLOC:
	case GP_EV_FREE: {
		mem_t m = {.ts = e->ts,
		           .addr = e->a,
		           .bytes = e->b,
		           .corr = (uint32_t)e->c,
		           .kind = e->u16,
		           .is_free = e->type == GP_EV_FREE};
		VEC_PUSH(d->mems, m);
		break;
	}
	case GP_EV_NVML: {
		d->nvml_samples++;
		d->nvml_util_sum += e->a & 0xff;
		if (e->b > d->nvml_mem_max)
			d->nvml_mem_max = e->b;
		break;
	}
	case GP_EV_NVML_IO: {
		struct io_prev *p = &d->io_prev[e->u8 & 7];
		uint64_t v[4] = {e->a, e->b, e->c, e->d};
		/* NVLink counters are KiB; rates in bytes per second */
		static const uint64_t unit[4] = {1, 1, 1024, 1024};
		if (p->ts && e->ts > p->ts) {
			double dt = (e->ts - p->ts) / 1e9;
			for (int k = 0; k < 4; k++) {
				unsigned bit = k < 2 ? GP_IO_PCIE : GP_IO_NVLINK;
				if (!(e->u16 & p->bits & bit) || v[k] < p->v[k])
					continue; /* not sampled, or the counter wrapped: skip */
				double bytes = (double)(v[k] - p->v[k]) * unit[k];
				p->bytes[k] += bytes;
				p->secs[k] += dt;
				if (bytes / dt > r->io_peak_Bps[k])
					r->io_peak_Bps[k] = bytes / dt;
			}
		}
		r->io_bits |= e->u16;
		p->ts = e->ts;
		p->bits = e->u16;
		memcpy(p->v, v, sizeof(v));
		break;
	}
	case GP_EV_GPU_FAULT:
		if (e->a == GP_FAULT_XID) {
			if (!r->nxid++) {
				r->first_xid = (unsigned)e->b;
				r->first_xid_ns = e->ts;
			}
		} else if (e->a == GP_FAULT_ECC_CORRECTED) {
			r->ecc_corrected += e->b;
		} else if (e->a == GP_FAULT_ECC_UNCORRECTED) {
			r->ecc_uncorrected += e->b;
		}
		break;
	case GP_EV_OVERHEAD:
		r->overhead_records++;
		r->overhead_ns += e->a;
		break;
	case GP_EV_DROPS:
		r->drops_ring += e->a;
		r->drops_cupti += e->b;
		r->drops_table += e->c;
		r->drops_cap += e->d;
		break;
	case GP_EV_END:
		r->has_end = true;
		r->wait_status = (int)e->a;
		r->cpu_us = e->b;
		r->maxrss_kib = e->c;
		r->wall_ns = e->d;
		break;
	case GP_EV_PROFILER:
		VEC_PUSH(d->prof, e->ts << 1 | (e->a ? 1 : 0));
		break;
	case GP_EV_CONTROL:
		VEC_PUSH(d->ctrl, e->ts);
		VEC_PUSH(d->ctrl, e->a);
		r->capture_switches++;
		if (e->c > r->capture_switch_max_ns)
			r->capture_switch_max_ns = e->c;
		break;
	case GP_EV_YIELD:
		snprintf(r->yielded + strlen(r->yielded), sizeof(r->yielded) - strlen(r->yielded),
		         "%s%s", r->yielded[0] ? "; " : "", str_get(d, (uint32_t)e->b));
		break;
	default:
		break;
	}
}

/* Empty the per-rank buffers but keep their memory: the next rank reuses it, which saves
 * the page faults of fresh allocations (12 % of a 100k-kernel rank's time). */
static void rank_data_reset(rank_data_t *d)
{
	gp_symtab_reset(&d->sym);
	u64map_free(&d->alloc_api);
	d->ranges.n = d->kerns.n = d->apis.n = d->mems.n = d->prof.n = 0;
	d->stack.n = d->started.n = d->steps.n = d->ctrl.n = 0;
	d->nvml_mem_max = d->nvml_samples = d->nvml_util_sum = 0;
	memset(d->io_prev, 0, sizeof(d->io_prev));
	d->first_ts = d->last_ts = d->win_lo = d->win_hi = d->gpu_lo = d->gpu_hi = 0;
}

static void rank_data_free(rank_data_t *d)
{
	gp_symtab_free(&d->sym);
	u64map_free(&d->alloc_api);
	VEC_FREE(d->ranges);
	VEC_FREE(d->kerns);
	VEC_FREE(d->apis);
	VEC_FREE(d->mems);
	VEC_FREE(d->stack);
	VEC_FREE(d->started);
	VEC_FREE(d->steps);
	VEC_FREE(d->prof);
	VEC_FREE(d->ctrl);
}

/* ---- helpers ---- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* k-th smallest (quickselect, Hoare partition); reorders v. */
static uint64_t select_kth(uint64_t *v, size_t n, size_t k)
{
	size_t lo = 0, hi = n - 1;
	while (lo < hi) {
		uint64_t pivot = v[lo + (hi - lo) / 2];
		size_t i = lo, j = hi;
		while (i <= j) {
			while (v[i] < pivot)
				i++;
			while (v[j] > pivot)
				j--;
			if (i <= j) {
				uint64_t t = v[i];
				v[i] = v[j];
				v[j] = t;
				i++;
				if (j == 0)
					break;
				j--;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			return v[k];
	}
	return v[k];
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}
static int cmp_kern(const void *a, const void *b)
{
	const kern_t *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}
static int cmp_range(const void *a, const void *b)
{
	const range_t *x = a, *y = b;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}
/* CUPTI delivers records almost in order; sort only what is not sorted yet. */
#define SORT_IF_NEEDED(vec, cmp)                                                                   \
	do {                                                                                       \
		size_t i_;                                                                         \
		for (i_ = 1; i_ < (vec).n && cmp(&(vec).v[i_ - 1], &(vec).v[i_]) <= 0; i_++)       \
			;                                                                          \
		if (i_ < (vec).n)                                                                  \
			qsort((vec).v, (vec).n, sizeof(*(vec).v), cmp);                            \
	} while (0)

static int cmp_mem(const void *a, const void *b)
{
	const mem_t *x = a, *y = b;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static int cmp_api(const void *a, const void *b)
{
	const api_t *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

static bool is_comm(const char *name)
{
	return strstr(name, "nccl") || strstr(name, "NCCL");
}

/* Does this call block the host on the GPU: a synchronize, or a blocking copy whose
 * memcpy record says device-to-host? A driver call inside a runtime call of the same
 * thread (cudaDeviceSynchronize -> cuCtxSynchronize) is the same stall, counted once. */
static bool is_sync_api(rank_data_t *d, size_t i, u64map_t *corr_copy)
{
	const api_t *a = &d->apis.v[i];
	uint64_t kind = 0;
	if (a->cls == GP_API_BLOCKING_COPY) {
		if (!u64map_get(corr_copy, a->corr, &kind) || kind != 2 /* DtoH */)
			return false;
	} else if (a->cls != GP_API_SYNC) {
		return false;
	}
	if (a->domain == 2)
		for (size_t j = i, k = 0; j-- > 0 && k < 16; k++) {
			const api_t *o = &d->apis.v[j];
			if (o->tid == a->tid && o->domain == 1 && o->start <= a->start &&
			    o->start + o->dur >= a->start + a->dur)
				return false;
		}
	return true;
}

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

/* The library that made an allocation: the module of its first frame outside the
 * profiler, the driver and the CUDA runtime (PyTorch: libc10_cuda.so). */
static void stack_owner(rank_data_t *d, uint32_t stack, char *out, size_t len)
{
	const uint64_t *pcs;
	size_t n = gp_symtab_stack(&d->sym, stack, &pcs);
	snprintf(out, len, "(no stack)");
	for (size_t i = 0; i < n; i++) {
		const char *s = gp_symtab_frame(&d->sym, pcs[i]);
		const char *lp = strrchr(s, '(');
		if (gp_symtab_profiler_frame(s) || strstr(s, "(libcudart") || !lp)
			continue;
		snprintf(out, len, "%.*s", (int)strcspn(lp + 1, ")"), lp + 1);
		return;
	}
}

static void stack_text(rank_data_t *d, uint32_t stack, char *out, size_t len)
{
	const uint64_t *pcs;
	size_t n = gp_symtab_stack(&d->sym, stack, &pcs), o = 0;
	unsigned shown = 0;
	out[0] = '\0';
	for (size_t i = 0; i < n && shown < 8 && o + 2 < len; i++) {
		const char *s = gp_symtab_frame(&d->sym, pcs[i]);
		if (gp_symtab_profiler_frame(s))
			continue;
		o += (size_t)snprintf(out + o, len - o, "%s%s", shown++ ? " <- " : "", s);
	}
}

/* ---- the analyses ---- */

static void analyze_steps(gp_job_t *job, gp_rank_t *r, rank_data_t *d, const char *want,
                          unsigned warmup)
{
	u64map_t counts = {0};
	uint32_t best = 0;
	uint64_t bestn = 0, c;
	for (size_t i = 0; i < d->ranges.n; i++) {
		range_t *rg = &d->ranges.v[i];
		/* steps are the program's own outermost ranges, not a library's (NCCL and
		 * others annotate their calls in their own NVTX domains) */
		if (rg->depth != 0 || rg->domain != 0)
			continue;
		if (want && *want && strcmp(str_get(d, rg->name), want))
			continue;
		c = 0;
		u64map_get(&counts, (uint64_t)rg->name + 1, &c);
		u64map_put(&counts, (uint64_t)rg->name + 1, ++c);
		if (c > bestn) {
			bestn = c;
			best = rg->name;
		}
	}
	u64map_free(&counts);
	uint64_t *st;
	size_t n = 0;
	if (bestn >= 2) {
		snprintf(r->step_name, sizeof(r->step_name), "%s", str_get(d, best));
		st = malloc(bestn * sizeof(uint64_t) * 2);
		for (size_t i = 0; st && i < d->ranges.n; i++)
			if (d->ranges.v[i].depth == 0 && d->ranges.v[i].domain == 0 &&
			    d->ranges.v[i].name == best) {
				st[2 * n] = d->ranges.v[i].start;
				st[2 * n + 1] = d->ranges.v[i].end;
				n++;
			}
	} else {
		/* no NVTX steps: windows between cudaProfilerStart and cudaProfilerStop */
		st = malloc((d->prof.n / 2 + 1) * sizeof(uint64_t) * 2);
		uint64_t open = 0;
		qsort(d->prof.v, d->prof.n, sizeof(uint64_t), cmp_u64);
		for (size_t i = 0; st && i < d->prof.n; i++) {
			uint64_t t = d->prof.v[i] >> 1;
			if (d->prof.v[i] & 1) {
				open = t;
			} else if (open) {
				st[2 * n] = open;
				st[2 * n + 1] = t;
				n++;
				open = 0;
			}
		}
		if (n < 2) {
			free(st);
			return;
		}
		snprintf(r->step_name, sizeof(r->step_name), "cudaProfilerStart/Stop");
	}
	if (!st)
		return;
	/* steps by start time (ranges are sorted by thread first) */
	qsort(st, n, 2 * sizeof(uint64_t), cmp_u64);
	if (warmup >= n)
		warmup = n > 1 ? 1 : 0;
	r->nsteps = (unsigned)n;
	r->warmup = warmup;
	r->nstep_ms = (unsigned)(n - warmup);
	r->step_ms = calloc(r->nstep_ms ? r->nstep_ms : 1, sizeof(double));
	double sum = 0, sq = 0;
	for (size_t i = warmup; i < n && r->step_ms; i++) {
		double ms = (double)(st[2 * i + 1] - st[2 * i]) / 1e6;
		r->step_ms[i - warmup] = ms;
		sum += ms;
	}
	double mean = r->nstep_ms ? sum / r->nstep_ms : 0;
	for (unsigned i = 0; i < r->nstep_ms; i++)
		sq += (r->step_ms[i] - mean) * (r->step_ms[i] - mean);
	double *sorted = malloc((r->nstep_ms ? r->nstep_ms : 1) * sizeof(double));
	if (sorted && r->nstep_ms) {
		memcpy(sorted, r->step_ms, r->nstep_ms * sizeof(double));
		qsort(sorted, r->nstep_ms, sizeof(double), cmp_double);
		r->step_median_ms =
		    r->nstep_ms % 2 ? sorted[r->nstep_ms / 2]
		                    : (sorted[r->nstep_ms / 2 - 1] + sorted[r->nstep_ms / 2]) / 2;
		r->step_p95_ms = sorted[(size_t)ceil(0.95 * r->nstep_ms) - 1];
	}
	free(sorted);
	r->step_mean_ms = mean;
	r->step_cv = mean > 0 && r->nstep_ms > 1 ? sqrt(sq / (r->nstep_ms - 1)) / mean : 0;

	/* memory growth per step: device bytes live at each post-warm-up step end */
	if (d->mems.n && r->nstep_ms >= 3) {
		double xs = 0, ys = 0, xy = 0, xx = 0;
		unsigned k = 0;
		int64_t live = 0;
		size_t m = 0; /* memory records are sorted by time, steps by start */
		for (size_t i = 0; i < n; i++) {
			for (; m < d->mems.n && d->mems.v[m].ts <= st[2 * i + 1]; m++)
				if (d->mems.v[m].kind != 6)
					live += d->mems.v[m].is_free ? -(int64_t)d->mems.v[m].bytes
					                             : (int64_t)d->mems.v[m].bytes;
			if (i < warmup)
				continue;
			double x = (double)k++, y = (double)live;
			xs += x, ys += y, xy += x * y, xx += x * x;
		}
		double den = k * xx - xs * xs;
		r->mem_growth_per_step = den > 0 ? (k * xy - xs * ys) / den : 0;
	}
	/* leak suspects: device allocations made after warm-up and never freed */
	if (d->mems.n && n > warmup) {
		uint64_t t_warm = st[2 * warmup];
		u64map_t live = {0}; /* addr -> index+1 of the live allocation */
		for (size_t m = 0; m < d->mems.n; m++) {
			mem_t *mm = &d->mems.v[m];
			if (mm->is_free)
				u64map_put(&live, mm->addr, 0);
			else
				u64map_put(&live, mm->addr, m + 1);
		}
		u64map_t by_stack = {0};
		uint64_t best_stack = 0, best_count = 0;
		for (size_t i = 0; i < live.cap; i++) {
			if (!live.k[i] || !live.v[i])
				continue;
			mem_t *mm = &d->mems.v[live.v[i] - 1];
			if (mm->ts < t_warm || mm->kind == 6)
				continue;
			r->leak_bytes += mm->bytes;
			r->leak_allocs++;
			uint64_t ai = 0, cnt = 0;
			uint64_t sid =
			    u64map_get(&d->alloc_api, mm->corr, &ai) ? d->apis.v[ai - 1].stack : 0;
			u64map_get(&by_stack, sid + 1, &cnt);
			u64map_put(&by_stack, sid + 1, ++cnt);
			if (cnt > best_count) {
				best_count = cnt;
				best_stack = sid;
			}
		}
		stack_text(d, (uint32_t)best_stack, r->leak_stack, sizeof(r->leak_stack));
		u64map_free(&live);
		u64map_free(&by_stack);
	}
	for (size_t i = 0; i < 2 * n; i++)
		VEC_PUSH(d->steps, st[i]);
	if (n > warmup) {
		d->win_lo = st[2 * warmup];
		d->win_hi = 0;
		for (size_t i = warmup; i < n; i++)
			if (st[2 * i + 1] > d->win_hi)
				d->win_hi = st[2 * i + 1];
	}
	free(st);
	(void)job;
}

/* Capture windows (GP_EV_CONTROL): CUDA activity exists only while cuda was on, so GPU
 * statistics cover the longest captured stretch of the post-warm-up steps, and the
 * per-step figures count the steps inside it. */
static void apply_capture(gp_rank_t *r, rank_data_t *d)
{
	d->gpu_lo = d->win_lo;
	d->gpu_hi = d->win_hi;
	if (!d->ctrl.n)
		return;
	uint64_t lo = d->win_hi ? d->win_lo : d->first_ts;
	uint64_t hi = d->win_hi ? d->win_hi : d->last_ts;
	uint64_t best_lo = 0, best_hi = 0, on_since = d->first_ts;
	bool on = true; /* before the first switch: everything the modes asked for */
	for (size_t i = 0; i <= d->ctrl.n; i += 2) {
		bool end = i == d->ctrl.n;
		uint64_t t = end ? d->last_ts : d->ctrl.v[i];
		bool now = end ? false : (d->ctrl.v[i + 1] & GP_MODE_CUDA) != 0;
		if (on && (!now || end)) {
			uint64_t a = on_since > lo ? on_since : lo, b = t < hi ? t : hi;
			if (b > a && b - a > best_hi - best_lo)
				best_lo = a, best_hi = b;
		}
		if (!on && now)
			on_since = t;
		on = now;
	}
	if (!best_hi) { /* cuda never on in the steady state: no GPU statistics */
		d->gpu_lo = d->gpu_hi = 1;
		r->captured_steps = 0;
		r->capture_window = true;
		return;
	}
	d->gpu_lo = best_lo;
	d->gpu_hi = best_hi;
	r->captured_steps = 0;
	for (size_t i = 2 * r->warmup; i + 1 < d->steps.n; i += 2)
		r->captured_steps += d->steps.v[i] >= best_lo && d->steps.v[i + 1] <= best_hi;
	r->capture_window = true;
}

/* CUDA activity that stops arriving while steps go on, without a capture switch: another
 * CUPTI client (torch.profiler, a tool attached later) re-registered the activity
 * buffers. The user's tool wins; the report says from where on the GPU view is missing. */
static void cuda_went_silent(gp_rank_t *r, rank_data_t *d)
{
	uint64_t last = 0;
	size_t nst = d->steps.n / 2, after = 0, first_after = 0;
	if (d->ctrl.n || !d->kerns.n || nst < 4 || !strstr(r->modes, "cuda"))
		return;
	for (size_t i = 0; i < d->kerns.n; i++)
		if (d->kerns.v[i].start > last)
			last = d->kerns.v[i].start;
	for (size_t i = 0; i < nst; i++)
		if (d->steps.v[2 * i] > last && !after++)
			first_after = i;
	if (after < 2)
		return;
	snprintf(r->yielded + strlen(r->yielded), sizeof(r->yielded) - strlen(r->yielded),
	         "%sCUDA activity stopped arriving at step %zu of %zu (another CUPTI client, such "
	         "as torch.profiler, took the activity buffers)",
	         r->yielded[0] ? "; " : "", first_after, nst);
}

/* Is this GPU activity part of the steady state? With steps known, activity whose launch
 * call (or, unmatched, whose start) falls in the post-warm-up steps; otherwise all. */
static bool in_window(const rank_data_t *d, const kern_t *k, u64map_t *corr_api)
{
	uint64_t ai, t = k->start;
	if (!d->gpu_hi)
		return true;
	if (u64map_get(corr_api, k->corr, &ai))
		t = d->apis.v[ai - 1].start;
	return t >= d->gpu_lo && t <= d->gpu_hi;
}

/* 1 + the index of the step that time t falls in; 0 when it falls in none */
static size_t step_at(const rank_data_t *d, uint64_t t)
{
	size_t lo = 0, hi = d->steps.n / 2;
	while (lo < hi) { /* first step starting after t */
		size_t mid = (lo + hi) / 2;
		if (d->steps.v[2 * mid] <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && t <= d->steps.v[2 * (lo - 1) + 1] ? lo : 0;
}

static bool in_a_step(const rank_data_t *d, uint64_t t)
{
	return step_at(d, t) != 0;
}

static void analyze_gpu(gp_rank_t *r, rank_data_t *d, u64map_t *corr_api)
{
	if (!d->kerns.n)
		return;
	for (size_t i = 0; i < d->kerns.n; i++) {
		uint64_t ai;
		if (d->kerns.v[i].kind == 0 && u64map_get(corr_api, d->kerns.v[i].corr, &ai) &&
		    in_a_step(d, d->apis.v[ai - 1].start))
			r->kernels_in_steps++;
	}
	SORT_IF_NEEDED(d->kerns, cmp_kern);
	uint64_t cur_s = 0, cur_e = 0, first = 0, last = 0;
	uint64_t comm_e = 0, comp_e = 0;
	bool any = false;
	u64map_t comm_by_name = {0};
	VEC(uint64_t) lat = {0};
	for (size_t i = 0; i < d->kerns.n; i++) {
		kern_t *k = &d->kerns.v[i];
		uint64_t e = k->start + k->dur;
		if (!in_window(d, k, corr_api))
			continue;
		if (!any) {
			cur_s = cur_e = first = k->start;
			any = true;
		}
		if (k->kind == 0)
			r->nkernels++;
		if (e > last)
			last = e;
		/* busy union and idle classification */
		if (k->start > cur_e) {
			uint64_t gap = k->start - cur_e, ai;
			r->busy_ns += cur_e - cur_s;
			if (gap < 30000)
				r->idle_kernel_ns += gap;
			else if (u64map_get(corr_api, k->corr, &ai) &&
			         d->apis.v[ai - 1].start >= cur_e)
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
			cf = is_comm(str_get(d, k->name)) ? 2 : 1;
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
		uint64_t ai;
		if (u64map_get(corr_api, k->corr, &ai)) {
			api_t *a = &d->apis.v[ai - 1];
			r->launches_matched++;
			if (k->start >= a->start)
				VEC_PUSH(lat, k->start - a->start);
			if (k->dur < a->dur)
				r->short_vs_launch++;
		}
	}
	u64map_free(&comm_by_name);
	if (!any) {
		VEC_FREE(lat);
		return;
	}
	r->busy_ns += cur_e - cur_s;
	r->span_ns = last - first;
	if (r->nkernels)
		r->kernel_mean_us = (double)r->compute_ns / 1e3 / (double)r->nkernels;
	if (lat.n)
		r->launch_latency_us = (double)select_kth(lat.v, lat.n, lat.n / 2) / 1e3;
	VEC_FREE(lat);
}

static gp_kstat_t *kstat_get(gp_job_t *job, const char *name)
{
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
	memset(k, 0, sizeof(*k));
	k->name = strdup(name);
	k->min = UINT64_MAX;
	k->comm = is_comm(name);
	return k;
}

static gp_rstat_t *rstat_get(gp_job_t *job, const char *name)
{
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
	memset(r, 0, sizeof(*r));
	r->name = strdup(name);
	return r;
}

static void merge_kernels(gp_job_t *job, rank_data_t *d)
{
	/* per-rank aggregation by name id first (cheap), then by name across ranks */
	u64map_t idx = {0};
	VEC(gp_kstat_t) loc = {0};
	for (size_t i = 0; i < d->kerns.n; i++) {
		kern_t *k = &d->kerns.v[i];
		uint64_t j;
		if (k->kind != 0)
			continue;
		if (!u64map_get(&idx, (uint64_t)k->name + 1, &j)) {
			gp_kstat_t z = {.name = (char *)str_get(d, k->name), .min = UINT64_MAX};
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
		gp_kstat_t *g = kstat_get(job, loc.v[i].name);
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

static void analyze_ranges(gp_job_t *job, gp_rank_t *r, rank_data_t *d, u64map_t *corr_api)
{
	size_t from;
	r->nvtx_ranges = d->ranges.n;
	/* projected GPU time: each kernel to every range enclosing its launch call */
	for (size_t i = 0; i < d->kerns.n; i++) {
		kern_t *k = &d->kerns.v[i];
		uint64_t ai;
		if (!u64map_get(corr_api, k->corr, &ai))
			continue;
		api_t *a = &d->apis.v[ai - 1];
		range_t *rg = enclosing(d, a->tid, a->start, &from);
		if (!rg)
			continue;
		for (size_t j = from, steps = 0; j-- > 0 && steps < 4096; steps++) {
			range_t *x = &d->ranges.v[j];
			if (x->tid != a->tid)
				break;
			if (x->depth < 1000 && x->start <= a->start && a->start <= x->end) {
				x->gpu_ns += k->dur;
				if (x->depth == 0)
					break;
			}
		}
	}
	/* synchronisation stalls, with the range they happened in */
	u64map_t sync_by_name = {0}, corr_copy = {0};
	for (size_t i = 0; i < d->kerns.n; i++)
		if (d->kerns.v[i].kind == 1)
			u64map_put(&corr_copy, d->kerns.v[i].corr, d->kerns.v[i].copykind);
	for (size_t i = 0; i < d->apis.n; i++) {
		api_t *a = &d->apis.v[i];
		if (d->gpu_hi && (a->start < d->gpu_lo || a->start > d->gpu_hi))
			continue;
		if (!is_sync_api(d, i, &corr_copy))
			continue;
		r->sync_ns += a->dur;
		r->sync_calls++;
		range_t *rg = enclosing(d, a->tid, a->start, &from);
		if (rg) {
			rg->sync_ns += a->dur;
			uint64_t v = 0;
			u64map_get(&sync_by_name, (uint64_t)rg->name + 1, &v);
			u64map_put(&sync_by_name, (uint64_t)rg->name + 1, v + a->dur);
			if (v + a->dur > r->sync_range_ns) {
				r->sync_range_ns = v + a->dur;
				snprintf(r->sync_range, sizeof(r->sync_range), "%s",
				         str_get(d, rg->name));
			}
		}
	}
	u64map_free(&sync_by_name);
	u64map_free(&corr_copy);
	for (size_t i = 0; i < d->ranges.n; i++) {
		range_t *x = &d->ranges.v[i];
		gp_rstat_t *s = rstat_get(job, str_get(d, x->name));
		if (!s)
			continue;
		s->count++;
		s->cpu_ns += x->end - x->start;
		s->gpu_ns += x->gpu_ns;
		s->sync_ns += x->sync_ns;
	}
}

/* Utilisation and memory over the whole run, in GP_TS buckets, for the HTML plots. */
static void time_series(gp_rank_t *r, rank_data_t *d)
{
	if (d->last_ts <= d->first_ts)
		return;
	double t0 = (double)d->first_ts, w = (double)(d->last_ts - d->first_ts) / GP_TS;
	r->ts_span_s = (double)(d->last_ts - d->first_ts) / 1e9;
	for (size_t i = 0; i < d->kerns.n; i++) { /* overlapping streams may exceed 1: clipped */
		double s = (double)d->kerns.v[i].start - t0, e = s + (double)d->kerns.v[i].dur;
		for (int b = (int)(s / w); b < GP_TS && b * w < e; b++) {
			double lo = b * w > s ? b * w : s, hi = (b + 1) * w < e ? (b + 1) * w : e;
			if (b >= 0 && hi > lo)
				r->util[b] += (float)((hi - lo) / w);
		}
	}
	for (int b = 0; b < GP_TS; b++)
		if (r->util[b] > 1)
			r->util[b] = 1;
	int64_t live = 0;
	size_t m = 0;
	for (int b = 0; b < GP_TS; b++) {
		double end = t0 + (b + 1) * w;
		for (; m < d->mems.n && (double)d->mems.v[m].ts <= end; m++)
			if (d->mems.v[m].kind != 6)
				live += d->mems.v[m].is_free ? -(int64_t)d->mems.v[m].bytes
				                             : (int64_t)d->mems.v[m].bytes;
		r->mem_mib[b] = (float)(live > 0 ? live : 0) / 1048576.0f;
	}
}

/* The program's NVTX ranges open at time ts on thread tid, outermost first
 * ("train_step > backward"); false when none is. */
static bool open_ranges(rank_data_t *d, uint32_t tid, uint64_t ts, char *out, size_t len)
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
		                      str_get(d, chain[k]->name));
	return n > 0;
}

/* Where the program was when memory peaked: the step, and the NVTX ranges open on the
 * allocating thread -- or, when that thread had none (PyTorch's autograd threads
 * allocate the gradients and annotate nothing), on the thread that ran the steps. */
static void peak_context(gp_rank_t *r, rank_data_t *d, uint64_t ts, const api_t *a)
{
	size_t k = step_at(d, ts);
	r->mem_peak_step = k ? (int)k - 1 : -1;
	if (a && open_ranges(d, a->tid, a->start, r->mem_peak_ranges, sizeof(r->mem_peak_ranges)))
		return;
	for (size_t i = 0; k && r->step_name[0] && i < d->ranges.n; i++) {
		range_t *rg = &d->ranges.v[i];
		if (rg->depth == 0 && rg->domain == 0 && rg->start <= ts && ts <= rg->end &&
		    !strcmp(str_get(d, rg->name), r->step_name)) {
			if (open_ranges(d, rg->tid, ts, r->mem_peak_ranges,
			                sizeof(r->mem_peak_ranges)))
				r->mem_peak_ranges_other_thread = a != NULL;
			return;
		}
	}
}

static void analyze_memory(gp_rank_t *r, rank_data_t *d)
{
	int64_t live = 0;
	uint64_t peak_corr = 0, static_b = 0, peak_ts = 0;
	u64map_t *corr_api = &d->alloc_api;
	size_t from;
	for (size_t i = 0; i < d->mems.n; i++) { /* sorted by time in load_rank */
		mem_t *m = &d->mems.v[i];
		if (m->kind == 6) { /* DEVICE_STATIC: module globals */
			static_b += m->is_free ? 0 : m->bytes;
			continue;
		}
		if (m->is_free) {
			r->nfrees++;
			live -= (int64_t)m->bytes;
		} else {
			r->nallocs++;
			live += (int64_t)m->bytes;
			if (live > (int64_t)r->mem_peak) {
				r->mem_peak = (uint64_t)live;
				r->mem_peak_t_ns = m->ts - d->first_ts;
				peak_ts = m->ts;
				peak_corr = m->corr;
			}
		}
	}
	r->mem_final = live > 0 ? (uint64_t)live : 0;
	r->mem_static = static_b;
	uint64_t ai;
	bool have_api = peak_corr && u64map_get(corr_api, peak_corr, &ai);
	if (have_api)
		stack_text(d, d->apis.v[ai - 1].stack, r->mem_peak_stack,
		           sizeof(r->mem_peak_stack));
	r->mem_peak_step = -1;
	if (r->mem_peak)
		peak_context(r, d, peak_ts, have_api ? &d->apis.v[ai - 1] : NULL);
	/* what is live at the end of the last step (programs often free everything at exit):
	 * by allocating library, and the optimizer state (made inside an optimizer range) */
	uint64_t t_end = d->win_hi ? d->win_hi : UINT64_MAX;
	u64map_t live_map = {0};
	for (size_t i = 0; i < d->mems.n && d->mems.v[i].ts <= t_end; i++)
		u64map_put(&live_map, d->mems.v[i].addr, d->mems.v[i].is_free ? 0 : i + 1);
	for (size_t i = 0; i < live_map.cap; i++) {
		if (!live_map.k[i] || !live_map.v[i])
			continue;
		mem_t *m = &d->mems.v[live_map.v[i] - 1];
		if (m->kind == 6)
			continue;
		char owner[64];
		bool found = u64map_get(corr_api, m->corr, &ai);
		stack_owner(d, found ? d->apis.v[ai - 1].stack : 0, owner, sizeof(owner));
		unsigned o;
		for (o = 0; o < r->nowners && strcmp(r->owners[o].module, owner); o++)
			;
		if (o == r->nowners && o < 8) {
			snprintf(r->owners[o].module, sizeof(r->owners[o].module), "%s", owner);
			r->nowners++;
		}
		if (o < 8)
			r->owners[o].bytes += m->bytes;
		if (!found)
			continue;
		api_t *a = &d->apis.v[ai - 1];
		for (range_t *rg = enclosing(d, a->tid, a->start, &from); rg;) {
			const char *nm = str_get(d, rg->name);
			if (strstr(nm, "optim") || strstr(nm, "Optim"))
				r->optimizer_bytes += m->bytes;
			break;
		}
	}
	u64map_free(&live_map);
	r->nvml_mem_max = d->nvml_mem_max;
	r->nvml_samples = d->nvml_samples;
	r->nvml_util_mean = d->nvml_samples ? (double)d->nvml_util_sum / d->nvml_samples : 0;
	/* a rank's traffic is the sum over its GPUs of each GPU's mean rate */
	for (int dev = 0; dev < 8; dev++)
		for (int k = 0; k < 4; k++)
			if (d->io_prev[dev].secs[k] > 0)
				r->io_Bps[k] += d->io_prev[dev].bytes[k] / d->io_prev[dev].secs[k];
	if (r->nxid && r->first_xid_ns >= d->first_ts)
		r->first_xid_ns -= d->first_ts;
}

static int load_rank(gp_job_t *job, const char *path, gp_rank_t *r, rank_data_t *dp)
{
	char err[512];
	gp_rf_reader_t *rd;
	gp_event_t ev;
#define d (*dp)
	const char *h;
	rank_data_reset(dp);
	memset(r, 0, sizeof(*r));
	snprintf(r->path, sizeof(r->path), "%s", path);
	if (gp_rf_open(path, &rd, err, sizeof(err)) < 0)
		return gp_warn("%s", err);
	r->rank = (h = gp_rf_header(rd, "rank")) ? atoi(h) : 0;
	if ((h = gp_rf_header(rd, "node")))
		snprintf(r->node, sizeof(r->node), "%s", h);
	if ((h = gp_rf_header(rd, "step")))
		snprintf(r->step, sizeof(r->step), "%s", h);
	if ((h = gp_rf_header(rd, "wrapped")))
		snprintf(r->wrapped, sizeof(r->wrapped), "%s", h);
	if ((h = gp_rf_header(rd, "yielded")) && *h)
		snprintf(r->yielded, sizeof(r->yielded), "%s", h);
	if ((h = gp_rf_header(rd, "nvml_limits")))
		snprintf(r->nvml_limits, sizeof(r->nvml_limits), "%s", h);
	if ((h = gp_rf_header(rd, "command")))
		snprintf(r->command, sizeof(r->command), "%s", h);
	if ((h = gp_rf_header(rd, "user")))
		snprintf(r->user, sizeof(r->user), "%s", h);
	if ((h = gp_rf_header(rd, "modes")))
		snprintf(r->modes, sizeof(r->modes), "%s", h);
	if ((h = gp_rf_header(rd, "job_name")))
		snprintf(r->job_name, sizeof(r->job_name), "%s", h);
	if (!job->job[0] && (h = gp_rf_header(rd, "job")))
		snprintf(job->job, sizeof(job->job), "%s", h);
	if ((h = gp_rf_header(rd, "ntasks")))
		job->ntasks_expected = (unsigned)atoi(h) > job->ntasks_expected
		                           ? (unsigned)atoi(h)
		                           : job->ntasks_expected;
	char want[128] = "";
	if ((h = gp_rf_header(rd, "step_range")))
		snprintf(want, sizeof(want), "%s", h);
	unsigned warmup = (h = gp_rf_header(rd, "warmup_steps")) ? (unsigned)atoi(h) : 3;
	uint64_t rt = (h = gp_rf_header(rd, "realtime_ns")) ? strtoull(h, NULL, 10) : 0;
	r->start_realtime_ns = rt;
	uint64_t mono = (h = gp_rf_header(rd, "monotonic_ns")) ? strtoull(h, NULL, 10) : 0;
	while (gp_rf_next(rd, &ev) == 1)
		on_event(&d, r, &ev);
	const gp_rf_stats_t *st = gp_rf_stats(rd);
	r->truncated = st->truncated;
	r->corrupt_chunks = st->corrupt_chunks;
	r->records = st->records;
	gp_rf_close(rd);
	r->t0_realtime_ns = rt + (d.first_ts > mono ? d.first_ts - mono : 0);

	u64map_t corr_api = {0};
	SORT_IF_NEEDED(d.apis, cmp_api);
	SORT_IF_NEEDED(d.mems, cmp_mem); /* per-thread CUPTI buffers interleave */
	for (size_t i = 0; i < d.apis.n; i++)
		u64map_put(d.apis.v[i].alloc ? &d.alloc_api : &corr_api, d.apis.v[i].corr, i + 1);
	SORT_IF_NEEDED(d.ranges, cmp_range);
	analyze_steps(job, r, &d, want, warmup);
	apply_capture(r, &d);
	cuda_went_silent(r, &d);
	analyze_gpu(r, &d, &corr_api);
	unsigned gsteps = r->capture_window ? r->captured_steps : r->nstep_ms;
	if (gsteps)
		r->kernels_per_step = (double)r->nkernels / (double)gsteps;
	analyze_ranges(job, r, &d, &corr_api);
	analyze_memory(r, &d);
	time_series(r, &d);
	r->snapshot_ns = d.win_hi ? d.win_hi : d.last_ts;
	if (r->nsteps)
		r->kernel_gpu_per_step_ms = (double)r->compute_ns / 1e6 / r->nsteps;
	merge_kernels(job, &d);
	u64map_free(&corr_api);
	return 0;
#undef d
}

static int cmp_rank(const void *a, const void *b)
{
	const gp_rank_t *x = a, *y = b;
	int c = strcmp(x->step, y->step);
	return c ? c : x->rank - y->rank;
}

static int cmp_kstat(const void *a, const void *b)
{
	const gp_kstat_t *x = a, *y = b;
	return x->total > y->total ? -1 : x->total < y->total;
}

static int cmp_rstat(const void *a, const void *b)
{
	const gp_rstat_t *x = a, *y = b;
	return x->cpu_ns > y->cpu_ns ? -1 : x->cpu_ns < y->cpu_ns;
}

int gp_job_load(gp_job_t *job, const char *dir, const char *step, char *err, size_t errlen)
{
	DIR *top;
	struct dirent *de;
	memset(job, 0, sizeof(*job));
	snprintf(job->dir, sizeof(job->dir), "%s", dir);
	top = opendir(dir);
	if (!top) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return -1;
	}
	unsigned cap = 0;
	rank_data_t rd;
	memset(&rd, 0, sizeof(rd));
	while ((de = readdir(top))) {
		char sub[4400];
		DIR *sd;
		struct dirent *fe;
		if (strncmp(de->d_name, "step", 4))
			continue;
		if (step && strcmp(de->d_name + 4, step))
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name);
		sd = opendir(sub);
		if (!sd)
			continue;
		while ((fe = readdir(sd))) {
			size_t l = strlen(fe->d_name);
			char path[4700];
			if (strncmp(fe->d_name, "rank", 4) || l < 8 ||
			    strcmp(fe->d_name + l - 4, ".gpr"))
				continue;
			if (job->nranks == cap) {
				cap = cap ? cap * 2 : 16;
				gp_rank_t *n = realloc(job->ranks, cap * sizeof(*n));
				if (!n)
					break;
				job->ranks = n;
			}
			snprintf(path, sizeof(path), "%s/%s", sub, fe->d_name);
			if (load_rank(job, path, &job->ranks[job->nranks], &rd) == 0)
				job->nranks++;
		}
		closedir(sd);
	}
	closedir(top);
	rank_data_free(&rd);
	if (!job->nranks) {
		snprintf(err, errlen, "%s: no rank files (step*/rank*.gpr)", dir);
		return -1;
	}
	qsort(job->ranks, job->nranks, sizeof(gp_rank_t), cmp_rank);
	qsort(job->k, job->nk, sizeof(gp_kstat_t), cmp_kstat);
	qsort(job->r, job->nr, sizeof(gp_rstat_t), cmp_rstat);
	double *med = calloc(job->nranks, sizeof(double));
	unsigned nm = 0;
	for (unsigned i = 0; med && i < job->nranks; i++)
		if (job->ranks[i].nstep_ms)
			med[nm++] = job->ranks[i].step_median_ms;
	if (nm) {
		qsort(med, nm, sizeof(double), cmp_double);
		job->step_median_ms = nm % 2 ? med[nm / 2] : (med[nm / 2 - 1] + med[nm / 2]) / 2;
	}
	free(med);
	return 0;
}

void gp_job_free(gp_job_t *job)
{
	for (unsigned i = 0; i < job->nranks; i++)
		free(job->ranks[i].step_ms);
	free(job->ranks);
	for (unsigned i = 0; i < job->nk; i++)
		free(job->k[i].name);
	free(job->k);
	for (unsigned i = 0; i < job->nr; i++)
		free(job->r[i].name);
	free(job->r);
	memset(job, 0, sizeof(*job));
}
