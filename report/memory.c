/* Device memory: the live-bytes timeline (CUPTI MEMORY2 records; DEVICE_STATIC module
 * globals apart), its peak with the allocation's stack, step and open ranges, growth per
 * step and leak suspects, what is live at the last step by allocating library, the
 * optimizer state, NVML aggregates, and the time series the HTML plots. */
#include "config.h"
#include "names.h"
#include "rankdata.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_optimizer_name(const char *s)
{
	return strstr(s, "optim") || strstr(s, "Optim");
}

/* The first range of the run named like an optimizer step (any thread). */
static void first_optimizer_range(const rank_data_t *d, uint64_t *lo, uint64_t *hi)
{
	*lo = *hi = 0;
	for (size_t i = 0; i < d->ranges.n; i++) {
		const range_t *rg = &d->ranges.v[i];
		if (rg->depth < 1000 && (!*hi || rg->start < *lo) &&
		    is_optimizer_name(gp_rd_str(d, rg->name)))
			*lo = rg->start, *hi = rg->end;
	}
}

/* The library that made an allocation: the module of its first frame outside the
 * profiler, the driver and the CUDA runtime (PyTorch: libc10_cuda.so). */
static void stack_owner(const rank_data_t *d, uint32_t stack, char *out, size_t len)
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

/* A frame as a person reads it: "sym+0xoff (lib)" with a C++ symbol demangled and
 * folded (its parameter list and nested template arguments dropped: names.h) */
static const char *frame_readable(const char *s, char *out, size_t len)
{
	size_t n = strcspn(s, "+ ");
	char sym[512], *dem = NULL, folded[96];
	size_t dl = 0;
	if (strncmp(s, "_Z", 2) || n >= sizeof(sym))
		return s;
	memcpy(sym, s, n);
	sym[n] = 0;
	const char *d = gp_demangle(sym, &dem, &dl);
	if (!d) {
		free(dem);
		return s;
	}
	gp_display_label(d, folded, sizeof(folded)); /* a frame: its scope is what it is */
	snprintf(out, len, "%s%s", folded, s + n);
	free(dem);
	return out;
}

static void stack_text(const rank_data_t *d, uint32_t stack, char *out, size_t len)
{
	const uint64_t *pcs;
	size_t n = gp_symtab_stack(&d->sym, stack, &pcs), o = 0;
	unsigned shown = 0;
	char b[256];
	out[0] = '\0';
	for (size_t i = 0; i < n && shown < 8 && o + 2 < len; i++) {
		const char *s = gp_symtab_frame(&d->sym, pcs[i]);
		if (gp_symtab_profiler_frame(s))
			continue;
		o += (size_t)snprintf(out + o, len - o, "%s%s", shown++ ? " <- " : "",
		                      frame_readable(s, b, sizeof(b)));
	}
}

static void growth_and_leaks(gp_rank_t *r, rank_data_t *d)
{
	size_t n = d->steps.n, warmup = r->steps.warmup;
	/* memory growth per step: device bytes live at each post-warm-up step end */
	if (d->mems.n && r->steps.n_post >= 3) {
		double xs = 0, ys = 0, xy = 0, xx = 0;
		unsigned k = 0;
		int64_t live = 0;
		size_t m = 0; /* memory records are sorted by time, steps by start */
		for (size_t i = 0; i < n; i++) {
			for (; m < d->mems.n && d->mems.v[m].ts <= d->steps.v[i].end; m++)
				if (gp_mem_is_device(d->mems.v[m].kind))
					live += d->mems.v[m].is_free ? -(int64_t)d->mems.v[m].bytes
					                             : (int64_t)d->mems.v[m].bytes;
			if (i < warmup)
				continue;
			double x = (double)k++, y = (double)live;
			xs += x, ys += y, xy += x * y, xx += x * x;
		}
		double den = k * xx - xs * xs;
		r->memory.growth_per_step = den > 0 ? (k * xy - xs * ys) / den : 0;
	}
	/* leak suspects: device allocations made after warm-up and never freed */
	if (d->mems.n && n > warmup) {
		uint64_t t_warm = d->steps.v[warmup].start;
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
			if (mm->ts < t_warm || !gp_mem_is_device(mm->kind))
				continue;
			r->memory.leak_bytes += mm->bytes;
			r->memory.leak_allocs++;
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
		char st[GP_MEM_STACK];
		stack_text(d, (uint32_t)best_stack, st, sizeof(st));
		gp_text_set(&r->memory.leak_stack, st, GP_MEM_STACK);
		u64map_free(&live);
		u64map_free(&by_stack);
	}
}

/* Where the program was when memory peaked: the step, and the NVTX ranges open on the
 * allocating thread -- or, when that thread had none (PyTorch's autograd threads
 * allocate the gradients and annotate nothing), on the thread that ran the steps. */
static void peak_context(gp_rank_t *r, rank_data_t *d, uint64_t ts, const api_t *a)
{
	size_t k = gp_step_at(d, ts);
	char open[GP_MEM_RANGES];
	r->memory.peak_step = k ? (int)k - 1 : -1;
	if (a && gp_open_ranges(d, a->tid, a->start, open, sizeof(open))) {
		gp_text_set(&r->memory.peak_ranges, open, GP_MEM_RANGES);
		return;
	}
	if (k && d->step_tid && gp_open_ranges(d, d->step_tid, ts, open, sizeof(open))) {
		gp_text_set(&r->memory.peak_ranges, open, GP_MEM_RANGES);
		r->memory.peak_ranges_other_thread = a != NULL;
	}
}

void gp_pass_memory(gp_rank_t *r, rank_data_t *d)
{
	growth_and_leaks(r, d);
	int64_t live = 0, host = 0, managed = 0;
	uint64_t peak_corr = 0, static_b = 0, peak_ts = 0;
	u64map_t *corr_api = &d->alloc_api;
	size_t from;
	for (size_t i = 0; i < d->mems.n; i++) { /* sorted by time in load_rank */
		mem_t *m = &d->mems.v[i];
		if (m->kind == GP_MEM_DEVICE_STATIC) { /* module globals */
			static_b += m->is_free ? 0 : m->bytes;
			continue;
		}
		if (!gp_mem_is_device(m->kind)) { /* host (pinned, pageable) and managed memory */
			int64_t *l = m->kind == GP_MEM_PINNED || m->kind == GP_MEM_PAGEABLE
			                 ? &host
			                 : &managed;
			uint64_t *p = l == &host ? &r->memory.host_peak : &r->memory.managed_peak;
			*l += m->is_free ? -(int64_t)m->bytes : (int64_t)m->bytes;
			if (*l > (int64_t)*p)
				*p = (uint64_t)*l;
			continue;
		}
		if (m->is_free) {
			r->memory.nfrees++;
			live -= (int64_t)m->bytes;
		} else {
			r->memory.nallocs++;
			live += (int64_t)m->bytes;
			if (live > (int64_t)r->memory.peak) {
				r->memory.peak = (uint64_t)live;
				r->memory.peak_t_ns = m->ts - d->first_ts;
				peak_ts = m->ts;
				peak_corr = m->corr;
			}
		}
	}
	r->memory.final = live > 0 ? (uint64_t)live : 0;
	r->memory.static_bytes = static_b;
	uint64_t ai;
	bool have_api = peak_corr && u64map_get(corr_api, peak_corr, &ai);
	if (have_api) {
		char st[GP_MEM_STACK];
		stack_text(d, d->apis.v[ai - 1].stack, st, sizeof(st));
		gp_text_set(&r->memory.peak_stack, st, GP_MEM_STACK);
	}
	if (r->memory.peak_stack.s) {
		snprintf(r->memory.peak_stack_source, sizeof(r->memory.peak_stack_source),
		         "CUPTI allocation callback");
	} else { /* CUPTI's callbacks left to PyTorch's profiler: PyTorch's largest owner
		    of the peak that has a stack ("(no stack: ...)" groups come first by size) */
		const gp_owner_t *own = gp_torch_owners(&r->torch, GP_OWN_PEAK);
		for (unsigned k = 0; k < r->torch.nowner; k++)
			if (own[k].stack[0] != '(') {
				gp_text_set(&r->memory.peak_stack, own[k].stack, GP_MEM_STACK);
				snprintf(r->memory.peak_stack_source,
				         sizeof(r->memory.peak_stack_source),
				         "PyTorch allocator history");
				break;
			}
	}
	r->memory.peak_step = -1;
	if (r->memory.peak)
		peak_context(r, d, peak_ts, have_api ? &d->apis.v[ai - 1] : NULL);
	/* what is live at the end of the last step (programs often free everything at exit):
	 * by allocating library, and the optimizer state: what the first optimizer step
	 * allocated and still holds (optimizers make their state lazily at their first step;
	 * what a later step allocates is workspace or someone else's) */
	uint64_t opt_lo = 0, opt_hi = 0;
	first_optimizer_range(d, &opt_lo, &opt_hi);
	uint64_t t_end = d->win_hi ? d->win_hi : UINT64_MAX;
	u64map_t live_map = {0};
	for (size_t i = 0; i < d->mems.n && d->mems.v[i].ts <= t_end; i++)
		u64map_put(&live_map, d->mems.v[i].addr, d->mems.v[i].is_free ? 0 : i + 1);
	for (size_t i = 0; i < live_map.cap; i++) {
		if (!live_map.k[i] || !live_map.v[i])
			continue;
		mem_t *m = &d->mems.v[live_map.v[i] - 1];
		if (!gp_mem_is_device(m->kind))
			continue;
		char owner[64];
		bool found = u64map_get(corr_api, m->corr, &ai);
		stack_owner(d, found ? d->apis.v[ai - 1].stack : 0, owner, sizeof(owner));
		unsigned o;
		for (o = 0;
		     o < r->memory.nowners && strcmp(gp_txt(r->memory.owners[o].module), owner);
		     o++)
			;
		if (o == r->memory.nowners && o < 8) {
			gp_text_set(&r->memory.owners[o].module, owner, GP_MEM_MODULE);
			r->memory.nowners++;
		}
		if (o < 8)
			r->memory.owners[o].bytes += m->bytes;
		if (!found)
			continue;
		const api_t *a = &d->apis.v[ai - 1];
		const range_t *rg = gp_owner_range(d, a->tid, a->start, &from);
		char open[256];
		/* a caching allocator's segments (PyTorch's libc10_cuda) hold more than the
		 * tensors in them: the optimizer's share cannot be known from them */
		if (opt_hi && rg && a->start >= opt_lo && a->start <= opt_hi &&
		    !strstr(owner, "c10_cuda") &&
		    gp_open_ranges(d, rg->tid, a->start, open, sizeof(open)) &&
		    is_optimizer_name(open))
			r->memory.optimizer_bytes += m->bytes;
	}
	u64map_free(&live_map);
	if (r->memory.optimizer_bytes)
		snprintf(r->memory.optimizer_source, sizeof(r->memory.optimizer_source),
		         "first optimizer range");
	/* PyTorch's optimizers say what they keep: their state tensors on the GPU */
	if (r->torch.opt_device_bytes) {
		r->memory.optimizer_bytes = r->torch.opt_device_bytes;
		snprintf(r->memory.optimizer_source, sizeof(r->memory.optimizer_source),
		         "PyTorch optimizer state");
	}
	r->memory.nvml_max = d->nvml_mem_max;
	r->gpu.nvml_samples = d->nvml_samples;
	r->gpu.nvml_util_mean = d->nvml_samples ? (double)d->nvml_util_sum / d->nvml_samples : 0;
	r->gpu.nvml_proc_samples = d->procs_samples;
	r->gpu.nvml_procs_refused = d->procs_refused;
	r->gpu.nvml_own_procs = (unsigned)d->procs_own_max;
	r->gpu.nvml_other_procs = (unsigned)d->procs_other_max;
	r->gpu.nvml_own_bytes = d->procs_own_bytes;
	r->gpu.nvml_rise = d->nvml_rise;
	r->gpu.cuda_inits = (unsigned)d->cuda_inits;
	/* a rank's traffic is the sum over its GPUs of each GPU's mean rate */
	for (int dev = 0; dev < 8; dev++)
		for (int k = 0; k < 4; k++)
			if (d->io_prev[dev].secs[k] > 0)
				r->io.Bps[k] += d->io_prev[dev].bytes[k] / d->io_prev[dev].secs[k];
	if (r->faults.nxid && r->faults.first_xid_ns >= d->first_ts)
		r->faults.first_xid_ns -= d->first_ts;
}

/* Utilisation, memory and NVML over the steps, in GP_TS buckets, for the HTML plots. */
void gp_pass_time_series(gp_rank_t *r, rank_data_t *d)
{
	uint64_t a = d->first_ts, z = d->last_ts;
	size_t ns = d->steps.n;
	if (ns >= 2) {
		const step_t *l = &d->steps.v[ns - 1];
		uint64_t end = l->gpu_end > l->end ? l->gpu_end : l->end;
		/* a first step that begins with the rank (steps from optimizer.step() returns:
		 * step 0 runs from the program's start) holds the start-up: the plots begin
		 * where step 1 does, as doc/report.md says (start-up folded, not 8 of 10 s) */
		uint64_t first = d->start_ts ? d->start_ts : d->first_ts;
		size_t f = ns >= 3 && d->steps.v[0].start <= first ? 1 : 0;
		if (end > d->steps.v[f].start) {
			a = d->steps.v[f].start;
			z = end;
			if (r->steps.warmup && r->steps.warmup < ns &&
			    d->steps.v[r->steps.warmup].start > a)
				r->ts.warm_s =
				    (double)(d->steps.v[r->steps.warmup].start - a) / 1e9;
		}
	}
	for (int b = 0; b < GP_TS; b++)
		r->ts.nvml_util[b] = r->ts.nvml_w[b] = r->ts.nvml_mhz[b] = -1;
	if (z <= a)
		return;
	double t0 = (double)a, w = (double)(z - a) / GP_TS;
	r->ts.span_s = (double)(z - a) / 1e9;
	r->ts.from_s = a > d->first_ts ? (double)(a - d->first_ts) / 1e9 : 0;
	/* NVML: the mean of the samples in each bucket (power summed over the rank's GPUs
	 * sampled at once is close to the mean times their count: means are drawn) */
	double su[GP_TS] = {0}, sw[GP_TS] = {0}, sm[GP_TS] = {0};
	unsigned cnt[GP_TS] = {0};
	for (size_t i = 0; i < d->nvml.n; i++) {
		const nvml_sample_t *q = &d->nvml.v[i];
		if (q->ts < a || q->ts > z)
			continue;
		int b = (int)(((double)q->ts - t0) / w);
		b = b >= GP_TS ? GP_TS - 1 : b;
		su[b] += q->util;
		sw[b] += q->power_mw / 1000.0;
		sm[b] += q->sm_mhz;
		cnt[b]++;
	}
	/* NVML samples every 100 ms or more, often less often than a bucket: a bucket with no
	 * sample of its own holds the last one's values, from the last sample before the
	 * window on (a step curve, as the device reported it) */
	const nvml_sample_t *prev = NULL;
	for (size_t i = 0; i < d->nvml.n && d->nvml.v[i].ts < a; i++)
		prev = &d->nvml.v[i];
	float pu = prev ? prev->util : -1, pw = prev ? prev->power_mw / 1000.0f : -1,
	      pm = prev ? (float)prev->sm_mhz : -1;
	for (int b = 0; b < GP_TS; b++) {
		if (cnt[b]) {
			pu = (float)(su[b] / cnt[b]);
			pw = (float)(sw[b] / cnt[b]);
			pm = (float)(sm[b] / cnt[b]);
		}
		r->ts.nvml_util[b] = pu;
		r->ts.nvml_w[b] = pw;
		r->ts.nvml_mhz[b] = pm;
	}
	for (size_t i = 0; i < d->kerns.n; i++) { /* overlapping streams may exceed 1: clipped */
		double s = (double)d->kerns.v[i].start - t0, e = s + (double)d->kerns.v[i].dur;
		if (e <= 0 || s >= (double)GP_TS * w)
			continue;
		for (int b = s > 0 ? (int)(s / w) : 0; b < GP_TS && b * w < e; b++) {
			double lo = b * w > s ? b * w : s, hi = (b + 1) * w < e ? (b + 1) * w : e;
			if (hi > lo)
				r->ts.util[b] += (float)((hi - lo) / w);
		}
	}
	for (int b = 0; b < GP_TS; b++)
		if (r->ts.util[b] > 1)
			r->ts.util[b] = 1;
	int64_t live = 0;
	size_t m = 0;
	for (int b = 0; b < GP_TS; b++) {
		double end = t0 + (b + 1) * w;
		for (; m < d->mems.n && (double)d->mems.v[m].ts <= end; m++)
			if (gp_mem_is_device(d->mems.v[m].kind))
				live += d->mems.v[m].is_free ? -(int64_t)d->mems.v[m].bytes
				                             : (int64_t)d->mems.v[m].bytes;
		r->ts.mem_mib[b] = (float)(live > 0 ? live : 0) / 1048576.0f;
	}
}
