/* Loading a rank file into typed per-rank arrays (see rankdata.h): every record type is
 * decoded here and nowhere else in the analysis. */
#include "config.h"
#include "settings.h"
#include "rankdata.h"
#include "cbid_names.h"
#include "modes.h"
#include "rankfile.h"
#include "strhash.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *gp_rd_str(const rank_data_t *d, uint32_t id)
{
	const char *s = gp_symtab_str(&d->sym, id);
	return s && *s ? s : "(unnamed)";
}

/* strhash.h's word-at-a-time hash: byte-at-a-time FNV-1a over each kernel name of each
 * rank was 5 % of a report of 10 240 ranks from their summaries (perf), merging their
 * kernel tables by name */
uint64_t gp_name_hash(const char *s)
{
	return gp_strhash(s, strlen(s));
}

bool gp_is_comm(const char *name)
{
	return strstr(name, "nccl") || strstr(name, "NCCL");
}

/* Records no collector writes: CUPTI's unknown timestamp (0), a time outside the rank's
 * life, a duration past a week or one that wraps, an allocation past 2^48 bytes. They
 * are counted (data quality) and left out: one of them would otherwise stretch the
 * rank's span to centuries and every figure built on it. */
#define GP_DUR_MAX   (7ull * 86400 * 1000000000)
#define GP_BYTES_MAX (1ull << 48)
static bool ts_outside(const rank_data_t *d, uint64_t ts)
{
	return !ts || (d->ts_lo && ts < d->ts_lo) || (d->ts_hi && ts > d->ts_hi);
}

static bool implausible(const rank_data_t *d, const gp_event_t *e)
{
	switch (e->type) {
	case GP_EV_DROPS: /* bookkeeping: kept whatever its time says */
	case GP_EV_LOSS:
	case GP_EV_END:
	case GP_EV_YIELD:
	case GP_EV_THREAD_NAME:
	case GP_EV_STREAM_NAME:
	case GP_EV_GPU:
		return false;
	case GP_EV_KERNEL:
	case GP_EV_MEMCPY:
	case GP_EV_MEMSET:
	case GP_EV_SYNC:
	case GP_EV_API:
	case GP_EV_OVERHEAD:
	case GP_EV_STEP_MARK:
		return ts_outside(d, e->ts) || e->a > GP_DUR_MAX;
	case GP_EV_ALLOC:
	case GP_EV_FREE:
		return ts_outside(d, e->ts) || e->b > GP_BYTES_MAX;
	case GP_EV_NVTX_RANGE:
		return ts_outside(d, e->ts) || e->b > GP_DUR_MAX || ts_outside(d, e->ts + e->b);
	case GP_EV_CONTROL: /* a switch's time, a window's cost: a forged one counts nothing */
		return ts_outside(d, e->ts) || e->c > GP_DUR_MAX || e->d > GP_DUR_MAX;
	default:
		return ts_outside(d, e->ts);
	}
}

static void push_open(rank_data_t *d, const open_t *o)
{
	uint64_t key = ((uint64_t)o->tid << 32 | o->domain) + 1, i;
	if (!u64map_get(&d->stack_of, key, &i)) {
		open_stack_t empty = {0};
		size_t n = d->stacks.n;
		VEC_PUSH(d->stacks, empty);
		if (d->stacks.n == n)
			return;
		i = d->stacks.n;
		u64map_put(&d->stack_of, key, i);
		if (!u64map_get(&d->stack_of, key, &i))
			return;
	}
	open_stack_t *st = &d->stacks.v[i - 1];
	if (st->n == st->cap) { /* small first: a crafted file may use 10^6 threads */
		size_t nc = st->cap ? st->cap * 2 : 8;
		open_t *nv = realloc(st->v, nc * sizeof(*nv));
		if (!nv)
			return;
		st->v = nv;
		st->cap = nc;
	}
	st->v[st->n++] = *o;
}

/* Pop the innermost open range of (tid, domain): false when none is open. */
static bool pop_open(rank_data_t *d, uint32_t tid, uint32_t domain, open_t *o, uint32_t *depth)
{
	uint64_t i;
	if (!u64map_get(&d->stack_of, ((uint64_t)tid << 32 | domain) + 1, &i))
		return false;
	open_stack_t *st = &d->stacks.v[i - 1];
	if (!st->n)
		return false;
	*o = st->v[--st->n];
	*depth = (uint32_t)st->n;
	return true;
}

static void add_range(rank_data_t *d, gp_rank_t *r, range_t *rg)
{
	if (rg->end < rg->start) { /* ends before it starts: not a measurement */
		r->quality.bad_records++;
		return;
	}
	VEC_PUSH(d->ranges, *rg);
}

static void feed_fw(rank_data_t *d, gp_rank_t *r, const gp_event_t *e);

/* NVTX ranges: push/pop on a stack per (thread, domain), start/end by id. */
static void feed_nvtx(rank_data_t *d, gp_rank_t *r, const gp_event_t *e)
{
	switch (e->type) {
	case GP_EV_NVTX_PUSH: {
		open_t o = {.start = e->ts,
		            .name = (uint32_t)e->a,
		            .tid = e->tid,
		            .domain = (uint32_t)e->b,
		            .level = e->u16};
		push_open(d, &o);
		break;
	}
	case GP_EV_NVTX_POP: {
		open_t o;
		uint32_t depth;
		if (pop_open(d, e->tid, (uint32_t)e->b, &o, &depth)) {
			/* a push that says its level: the ranges below it may be in range
			 * records (a thread's lane), which never were on this stack */
			range_t rg = {.start = o.start,
			              .end = e->ts,
			              .name = o.name,
			              .tid = e->tid,
			              .depth = o.level ? o.level - 1 : depth,
			              .domain = o.domain};
			add_range(d, r, &rg);
		}
		break;
	}
	case GP_EV_NVTX_RANGE: { /* a push and its pop in one record, default domain */
		range_t rg = {.start = e->ts,
		              .end = e->ts + e->b,
		              .name = (uint32_t)e->a,
		              .tid = e->tid,
		              .depth = e->u16};
		add_range(d, r, &rg);
		break;
	}
	case GP_EV_NVTX_START: {
		open_t o = {.start = e->ts,
		            .name = (uint32_t)e->a,
		            .tid = e->tid,
		            .id = e->c,
		            .domain = (uint32_t)e->b};
		size_t n = d->started.n;
		VEC_PUSH(d->started, o);
		if (d->started.n == n)
			break;
		/* the latest start of an id is the one its end closes */
		u64map_put(&d->started_of, e->c + 1, d->started.n);
		break;
	}
	case GP_EV_NVTX_END: {
		uint64_t i;
		if (!u64map_get(&d->started_of, e->c + 1, &i) || !i)
			break;
		u64map_put(&d->started_of, e->c + 1, 0); /* 0: ended */
		/* start/end ranges may cross threads: kept at depth 1000 so they never
		 * count as steps but still show in the range table */
		const open_t *o = &d->started.v[i - 1];
		range_t rg = {.start = o->start,
		              .end = e->ts,
		              .name = o->name,
		              .tid = o->tid,
		              .depth = 1000,
		              .domain = o->domain};
		add_range(d, r, &rg);
		/* move the last started range into the hole and repoint its id, unless a
		 * later start of the same id has taken the id over */
		if (i != d->started.n) {
			uint64_t j;
			d->started.v[i - 1] = d->started.v[d->started.n - 1];
			if (u64map_get(&d->started_of, d->started.v[i - 1].id + 1, &j) &&
			    j == d->started.n)
				u64map_put(&d->started_of, d->started.v[i - 1].id + 1, i);
		}
		d->started.n--;
		break;
	}
	default:
		break;
	}
}

/* GPU work and the host calls that made it: kernels, copies, syncs, API
 * calls, allocations. */
static void feed_work(rank_data_t *d, gp_rank_t *r, const gp_event_t *e)
{
	switch (e->type) {
	case GP_EV_KERNEL:
	case GP_EV_MEMCPY:
	case GP_EV_MEMSET: {
		kern_t k = {.start = e->ts, .dur = e->a, .corr = e->c, .stream = (uint32_t)e->d};
		k.kind = e->type == GP_EV_KERNEL ? 0 : e->type == GP_EV_MEMCPY ? 1 : 2;
		k.name = e->type == GP_EV_KERNEL ? (uint32_t)e->b : 0;
		k.copykind = e->type == GP_EV_MEMCPY ? (uint8_t)e->u16 : 0;
		k.memkinds = e->type == GP_EV_MEMCPY ? (uint8_t)(e->u16 >> 8) : 0;
		if (e->type == GP_EV_KERNEL)
			k.launch = e->tid;
		else
			k.bytes = e->b;
		k.device = e->u8;
		if (e->type == GP_EV_KERNEL)
			r->gpu.kernels_total++;
		if (e->type == GP_EV_MEMCPY)
			r->gpu.nmemcpy++;
		if (e->type == GP_EV_MEMSET)
			r->gpu.nmemset++;
		VEC_PUSH(d->kerns, k);
		break;
	}
	case GP_EV_SYNC:
		r->sync.records++;
		break;
	case GP_EV_API: {
		if (GP_API_CLASS(e->u16) == GP_API_LAUNCH_SITE) { /* no call of its own */
			if (GP_API_RET(e->u16) == GP_SITE_CAP_REACHED)
				d->sites_capped++;
			else
				u64map_put(&d->launch_site, e->c, (uint32_t)e->d + 1ull);
			break;
		}
		api_t a = {.start = e->ts,
		           .dur = e->a,
		           .corr = e->c,
		           .tid = e->tid,
		           .cbid = (uint32_t)e->b,
		           .stack = (uint32_t)e->d,
		           .domain = e->u8,
		           .alloc = GP_API_CLASS(e->u16) == GP_API_ALLOC_STACK,
		           .cls = (uint8_t)GP_API_CLASS(e->u16),
		           .ret = (uint8_t)GP_API_RET(e->u16)};
		VEC_PUSH(d->apis, a);
		if (a.cls == GP_API_ALLOC && a.ret == GP_API_RET_OOM) {
			d->oom_count++;
			if (a.start > d->oom_ts)
				d->oom_ts = a.start;
		}
		break;
	}
	case GP_EV_ALLOC:
	case GP_EV_FREE: {
		mem_t m = {.ts = e->ts,
		           .addr = e->a,
		           .bytes = e->b,
		           .corr = e->c,
		           .stream = (uint32_t)e->d,
		           .kind = e->u16,
		           .is_free = e->type == GP_EV_FREE,
		           .device = e->u8};
		VEC_PUSH(d->mems, m);
		break;
	}
	default:
		break;
	}
}

/* What the agent sampled of the GPUs: which they are, NVML, PCIe/NVLink,
 * faults. */
static void feed_device(rank_data_t *d, gp_rank_t *r, const gp_event_t *e)
{
	switch (e->type) {
	case GP_EV_GPU: /* the GPUs the agent sees, in CUDA's order (gp_pass_gpu picks one) */
		if (e->u8 < 8 && e->a) {
			d->gpu_uuid[e->u8] = (uint32_t)e->a;
			d->gpu_bytes[e->u8] = e->b;
			d->gpu_name[e->u8] = (uint32_t)e->c;
		}
		break;
	case GP_EV_NVML: {
		nvml_sample_t ns = {.ts = e->ts,
		                    .mem_bytes = e->b,
		                    .power_mw = (uint32_t)(e->c & 0xffffffffu),
		                    .sm_mhz = (uint32_t)(e->c >> 32),
		                    .reasons = (uint32_t)(e->d >> 32),
		                    .device = e->u8,
		                    .util = (uint8_t)(e->a & 0xff)};
		VEC_PUSH(d->nvml, ns);
		uint64_t *first = &d->nvml_mem_first[e->u8 & 7];
		if (!*first)
			*first = e->b + 1;
		if (e->b + 1 > *first && e->b + 1 - *first > d->nvml_rise)
			d->nvml_rise = e->b + 1 - *first;
		d->nvml_samples++;
		d->nvml_util_sum += e->a & 0xff;
		if (e->b > d->nvml_mem_max)
			d->nvml_mem_max = e->b;
		break;
	}
	case GP_EV_GPU_PROCS:
		if (e->u16 == 1) { /* the driver refused the list: said once */
			d->procs_refused = true;
			break;
		}
		d->procs_samples++;
		if (e->b > d->procs_own_max)
			d->procs_own_max = e->b;
		if (e->a > e->b && e->a - e->b > d->procs_other_max)
			d->procs_other_max = e->a - e->b;
		if (e->c > d->procs_own_bytes)
			d->procs_own_bytes = e->c;
		break;
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
				if (bytes / dt > r->io.peak_Bps[k])
					r->io.peak_Bps[k] = bytes / dt;
			}
		}
		r->io.bits |= e->u16;
		p->ts = e->ts;
		p->bits = e->u16;
		memcpy(p->v, v, sizeof(v));
		break;
	}
	case GP_EV_GPU_FAULT:
		if (e->a == GP_FAULT_XID) {
			if (!r->faults.nxid++) {
				r->faults.first_xid = (unsigned)e->b;
				r->faults.first_xid_ns = e->ts;
			}
		} else if (e->a == GP_FAULT_ECC_CORRECTED) {
			r->faults.ecc_corrected += e->b;
		} else if (e->a == GP_FAULT_ECC_UNCORRECTED) {
			r->faults.ecc_uncorrected += e->b;
		}
		break;
	default:
		break;
	}
}

/* The recorded process's start and end: who recorded, how it ended, what
 * it used. */
/* A window by cost that the process's death left open: its last cost so far stands for
 * it (GP_CTRL_SO_FAR), at a new recording process and once the file is read */
void gp_rd_cost_unended(rank_data_t *d, gp_rank_t *r)
{
	if (!d->cost_open_win)
		return;
	r->capture.cost_windows++;
	r->capture.cost_unended++;
	r->capture.cost_estimate_ns += d->cost_open_ns;
	d->cost_open_win = 0;
	d->cost_open_ns = 0;
}

/* A capture record: a switch, and for windows by cost (agent/inject/costwin.h) a window's
 * end, a late charge or an open window's cost so far (common/event.h GP_CTRL_*) */
static void feed_control(rank_data_t *d, gp_rank_t *r, const gp_event_t *e)
{
	struct gp_rank_capture *c = &r->capture;
	if (e->u8 == GP_CTRL_SO_FAR) {
		d->cost_open_win = (uint32_t)e->u16 + 1;
		d->cost_open_ns = e->d;
		return;
	}
	if (e->u8 == GP_CTRL_LATE) {
		c->cost_estimate_ns += e->d;
		c->cost_late_ns += e->d;
		return;
	}
	if (e->u8 >= GP_CTRL_BY_KERNELS && e->u8 <= GP_CTRL_BY_STEPS) { /* a window's end */
		c->cost_windows++;
		c->cost_estimate_ns += e->d;
		c->cost_at_exit += e->u8 == GP_CTRL_AT_EXIT;
		d->cost_open_win = 0;
		d->cost_open_ns = 0;
	}
	if (e->u8 > GP_CTRL_BY_TIME) /* at exit, steps seen, or unknown: nothing switched */
		return;
	VEC_PUSH(d->ctrl, e->ts);
	VEC_PUSH(d->ctrl, e->a);
	c->switches++;
	if (e->c > c->switch_max_ns)
		c->switch_max_ns = e->c;
}

static void feed_process(rank_data_t *d, gp_rank_t *r, const gp_event_t *e)
{
	switch (e->type) {
	case GP_EV_END:
		/* u8 1: the agent saw one of a launcher's ranks end; its status is the
		 * launcher's to know. The library's own record (what exit() was given) may
		 * come first and is kept. The library's record carries no resources (b, c, d):
		 * kept apart, for a rank whose process is not the one the agent started. */
		if (!e->b && !e->c && !e->d && e->u8 == 0) {
			d->lib_end = true;
			d->lib_status = (int)e->a;
		} else if (e->u8 == 0) { /* the agent's: how the program it started ended */
			d->agent_end = true;
			d->agent_status = (int)e->a;
		}
		if (e->u8 == 1) {
			if (!r->outcome.has_end)
				r->outcome.status_unknown = true;
		} else {
			r->outcome.status_unknown = false;
			r->outcome.wait_status = (int)e->a;
		}
		r->outcome.has_end = true;
		if (e->b || e->c || e->d) {
			r->outcome.cpu_us = e->b;
			r->outcome.maxrss_kib = e->c;
			r->outcome.wall_ns = e->d;
		}
		break;
	case GP_EV_START:
		if (e->u8 == 1) { /* the process that records here */
			if (d->recorder_pid && d->recorder_pid != e->a) {
				VEC_PUSH(d->proc_changes, e->ts);
				gp_rd_cost_unended(d, r); /* the one before died in a window */
			}
			d->recorder_pid = e->a;
			if (e->a <= INT32_MAX)
				r->id.pid = (int)e->a;
			if (e->b && gp_rd_str(d, (uint32_t)e->b)[0])
				gp_text_set(&r->id.command, gp_rd_str(d, (uint32_t)e->b),
				            GP_ID_COMMAND);
			break;
		}
		d->start_ts = e->ts;
		d->child_pid = e->a;
		if (!r->id.pid && e->a <= INT32_MAX)
			r->id.pid = (int)e->a;
		break;
	default:
		break;
	}
}

void gp_rd_feed(rank_data_t *d, gp_rank_t *r, const gp_event_t *e)
{
	if (gp_symtab_feed(&d->sym, e))
		return;
	if (implausible(d, e)) {
		r->quality.bad_records++;
		return;
	}
	if (ts_outside(d, e->ts)) /* bookkeeping records with no time of their own */
		goto typed;
	if (!d->first_ts || e->ts < d->first_ts)
		d->first_ts = e->ts;
	if (e->ts > d->last_ts)
		d->last_ts =
		    e->ts + ((e->type >= GP_EV_KERNEL && e->type <= GP_EV_SYNC) ? e->a : 0);
	if (e->type == GP_EV_NVTX_RANGE && e->ts + e->b > d->last_ts)
		d->last_ts = e->ts + e->b; /* its end (plausible: implausible() says) */
typed:
	switch (e->type) {
	case GP_EV_NVTX_PUSH:
	case GP_EV_NVTX_POP:
	case GP_EV_NVTX_START:
	case GP_EV_NVTX_END:
	case GP_EV_NVTX_RANGE:
		feed_nvtx(d, r, e);
		break;
	case GP_EV_KERNEL:
	case GP_EV_MEMCPY:
	case GP_EV_MEMSET:
	case GP_EV_SYNC:
	case GP_EV_API:
	case GP_EV_ALLOC:
	case GP_EV_FREE:
		feed_work(d, r, e);
		break;
	case GP_EV_GPU: /* the GPUs the agent sees, in CUDA's order (gp_pass_gpu picks one) */
	case GP_EV_NVML:
	case GP_EV_NVML_IO:
	case GP_EV_GPU_FAULT:
	case GP_EV_GPU_PROCS:
		feed_device(d, r, e);
		break;
	case GP_EV_END:
	case GP_EV_START:
		feed_process(d, r, e);
		break;
	case GP_EV_CUDA_INIT:
		d->cuda_inits++;
		break;
	case GP_EV_NVTX_MARK: {
		nvtx_mark_t mk = {.ts = e->ts, .tid = e->tid, .name = (uint32_t)e->a};
		if (!e->u8) /* u8: a mark of ours, not the program's */
			VEC_PUSH(d->nvtx_marks, mk);
		break;
	}
	case GP_EV_STREAM_NAME:
		if (e->u8 == 1) /* mapped to a CUPTI stream id */
			u64map_put(&d->stream_name, e->a + 1, e->b);
		break;
	case GP_EV_THREAD_NAME:
		u64map_put(&d->thread_name, (uint64_t)e->tid + 1, e->a);
		break;
	case GP_EV_STEP_MARK: {
		mark_t mk = {.ts = e->ts, .gpu = e->a, .chained = e->d == 1, .dropped = e->d == 2};
		VEC_PUSH(d->marks, mk);
		r->quality.markers_not_placed += mk.dropped;
		break;
	}
	case GP_EV_OVERHEAD:
		r->overhead.records++;
		r->overhead.ns += e->a;
		VEC_PUSH(d->overhead, e->ts);
		VEC_PUSH(d->overhead, e->ts + e->a);
		break;
	case GP_EV_LOSS: /* running totals: the largest of each cause */
		if (e->u8 < 16 && e->a > r->quality.loss[e->u8])
			r->quality.loss[e->u8] = e->a;
		break;
	case GP_EV_DROPS:
		r->quality.drops_ring += e->a;
		r->quality.drops_cupti += e->b;
		r->quality.drops_table += e->c;
		r->quality.drops_cap += e->d;
		break;
	case GP_EV_CLOCK: /* the first: the clock is dropped once per process */
		if (!r->quality.clock_dropped) {
			r->quality.clock_dropped = true;
			r->quality.clock_err_ns = (int64_t)e->a;
			r->quality.clock_at_ns =
			    e->ts >= d->hdr_monotonic ? e->ts - d->hdr_monotonic : 0;
			r->quality.clock_span_ns = e->b;
		}
		break;
	case GP_EV_PROFILER:
		VEC_PUSH(d->prof, e->ts << 1 | (e->a ? 1 : 0));
		break;
	case GP_EV_CONTROL:
		feed_control(d, r, e);
		break;
	case GP_EV_FW:
		feed_fw(d, r, e);
		break;
	case GP_EV_YIELD: {
		const char *y = gp_rd_str(d, (uint32_t)e->b);
		char now[256];
		/* older collectors said the slot was "left to the PyTorch profiler" whether or
		 * not one ran: say what is known */
		if (strstr(y, "CUPTI's one callback slot left to the")) {
			snprintf(now, sizeof(now), GP_YIELD_STACKS_FMT,
			         strstr(y, "PyTorch") ? "torch.profiler"
			                              : "the framework's profiler");
			y = now;
		}
		gp_text_setf(&r->quality.yielded, GP_YIELDED, "%s%s%s", gp_txt(r->quality.yielded),
		             r->quality.yielded.s ? "; " : "", y);
		break;
	}
	default:
		break;
	}
}

/* What PyTorch said (GP_EV_FW, agent/python). */
static void feed_fw(rank_data_t *d, gp_rank_t *r, const gp_event_t *e)
{
	struct gp_torch *t = &r->torch;
	const char *text = e->b ? gp_rd_str(d, (uint32_t)e->b) : "";
	t->seen = true;
	switch (e->u8) {
	case GP_FW_INFO:
		gp_text_set(&t->info, text, GP_TORCH_INFO);
		break;
	case GP_FW_PROFILER: /* one begin a session (the integration's); a start that
	                      * failed took its begin back */
		if (e->a)
			t->profiler_sessions++;
		else if (e->c == 1 && t->profiler_sessions)
			t->profiler_sessions--;
		break;
	case GP_FW_MISSING:
		if (!strstr(gp_txt(t->missing), text))
			gp_text_setf(&t->missing, GP_TORCH_MISSING, "%s%s%s", gp_txt(t->missing),
			             t->missing.s ? "; " : "", text);
		break;
	case GP_FW_OPT_END:
		VEC_PUSH(d->opt_ends, e->ts << 8 | (e->a < 255 ? e->a : 255));
		if (e->d && e->d < (1ull << 56))
			VEC_PUSH(d->opt_own, e->d << 8 | (e->a < 255 ? e->a : 255));
		if (e->a < 8) {
			if (e->a >= t->nopt)
				t->nopt = (unsigned)e->a + 1;
			if (e->c > t->opt[e->a].steps)
				t->opt[e->a].steps = e->c;
		}
		break;
	case GP_FW_OPT_STATE: /* the latest figure of each optimizer */
		if (e->a < 8) {
			if (e->a >= t->nopt)
				t->nopt = (unsigned)e->a + 1;
			t->opt[e->a].bytes = e->d;
			t->opt[e->a].device_bytes = e->c;
			gp_text_set(&t->opt[e->a].what, text, GP_TORCH_OPT);
		}
		break;
	case GP_FW_MEM_STEP: /* d: the optimizer step it follows (0: at exit) */
		if (e->d) {
			VEC_PUSH(d->torch_mem, e->d);
			VEC_PUSH(d->torch_mem, e->a);
		}
		t->allocated_end = e->a;
		t->reserved_end = e->c;
		break;
	case GP_FW_MEM_PEAK: /* a new picture of the peak replaces the owners of the last */
		if (e->a >= t->max_allocated) {
			t->max_allocated = e->a;
			t->frag_at_peak = e->d;
		}
		t->nowner = 0;
		t->grow_stale = true; /* a later window's records replace the last window's */
		if (e->c > t->max_reserved)
			t->max_reserved = e->c;
		break;
	case GP_FW_MEM_MAX:
		if (e->a > t->max_allocated)
			t->max_allocated = e->a;
		if (e->c > t->max_reserved)
			t->max_reserved = e->c;
		break;
	case GP_FW_OWNER: {
		gp_owner_t *o = NULL;
		uint64_t kind = e->d & 0xff; /* above it: the steps of a window (kind 3) */
		if (kind == 3 && e->d >> 8)
			t->grow_steps = (unsigned)(e->d >> 8);
		if (!t->own && (kind == 1 || kind == 2 || kind == 3) &&
		    !(t->own = calloc(3 * GP_OWNERS, sizeof(gp_owner_t))))
			break;
		if (kind == 1 && t->nowner < GP_OWNERS) {
			o = &gp_torch_owners(t, GP_OWN_PEAK)[t->nowner++];
		} else if (kind == 3 && (t->grow_stale || t->ngrow_owner < GP_OWNERS)) {
			if (t->grow_stale)
				t->ngrow_owner = 0, t->grow_stale = false;
			o = &gp_torch_owners(t, GP_OWN_GROW)[t->ngrow_owner++];
		} else if (kind == 2 && t->noom_owner < GP_OWNERS) {
			o = &gp_torch_owners(t, GP_OWN_OOM)[t->noom_owner++];
		}
		if (o) {
			o->bytes = e->a;
			o->tensors = e->c;
			snprintf(o->stack, sizeof(o->stack), "%s", text);
		}
		break;
	}
	case GP_FW_OOM: /* the first: what failed, not the retries after it */
		if (!t->oom) {
			t->oom = true;
			t->oom_requested = e->a;
			t->oom_total = e->c;
			t->oom_free = e->d;
		}
		break;
	case GP_FW_DATA_WAIT:
		VEC_PUSH(d->data_wait, e->ts);
		VEC_PUSH(d->data_wait, e->a);
		break;
	case GP_FW_COMPILE:
		VEC_PUSH(d->compiles, e->ts);
		VEC_PUSH(d->compiles, e->a);
		VEC_PUSH(d->compiles, e->b);
		break;
	case GP_FW_POOL: { /* the latest sample, and the largest */
		struct gp_pool *p = &r->pool;
		p->seen = true;
		p->samples++;
		p->in_use = e->a;
		p->pool = e->c;
		if (e->d > p->in_use_peak)
			p->in_use_peak = e->d;
		if (e->a > p->in_use_peak)
			p->in_use_peak = e->a;
		if (e->c > p->pool_peak)
			p->pool_peak = e->c;
		gp_text_set(&p->what, text, GP_POOL_WHAT);
		break;
	}
	case GP_FW_SNAPSHOT:
		gp_text_set(e->a == GP_SNAP_PEAK  ? &t->snap_peak
		            : e->a == GP_SNAP_OOM ? &t->snap_oom
		                                  : &t->snap_exit,
		            text, GP_TORCH_SNAP);
		break;
	default:
		break;
	}
}

void gp_rd_reset(rank_data_t *d)
{
	gp_symtab_reset(&d->sym);
	u64map_free(&d->alloc_api);
	u64map_free(&d->corr_api);
	u64map_free(&d->launch_site);
	d->sites_capped = 0;
	d->ranges.n = d->kerns.n = d->apis.n = d->mems.n = d->prof.n = 0;
	for (size_t i = 0; i < d->stacks.n; i++)
		VEC_FREE(d->stacks.v[i]);
	d->stacks.n = 0;
	u64map_clear(&d->stack_of);
	u64map_clear(&d->started_of);
	d->started.n = d->steps.n = d->ctrl.n = d->marks.n = 0;
	d->cost_open_win = 0;
	d->cost_open_ns = 0;
	d->opt_ends.n = d->opt_own.n = d->torch_mem.n = 0;
	d->gwin.n = d->cuda_on.n = d->data_wait.n = d->compiles.n = d->overhead.n = 0;
	d->proc_changes.n = d->side_loops.n = 0;
	d->child_pid = d->recorder_pid = 0;
	d->lib_end = d->agent_end = false;
	d->lib_status = d->agent_status = 0;
	memset(d->gpu_uuid, 0, sizeof(d->gpu_uuid));
	memset(d->gpu_bytes, 0, sizeof(d->gpu_bytes));
	d->ts_lo = d->ts_hi = 0;
	d->hdr_realtime = d->hdr_monotonic = d->start_ts = 0;
	d->nvml.n = d->nvtx_marks.n = 0;
	u64map_clear(&d->stream_name);
	u64map_clear(&d->thread_name);
	d->nvml_mem_max = d->nvml_samples = d->nvml_util_sum = 0;
	memset(d->nvml_mem_first, 0, sizeof(d->nvml_mem_first));
	d->nvml_rise = d->procs_samples = d->procs_own_max = d->procs_other_max = 0;
	d->procs_own_bytes = d->cuda_inits = 0;
	d->procs_refused = false;
	memset(d->io_prev, 0, sizeof(d->io_prev));
	d->first_ts = d->last_ts = d->win_lo = d->win_hi = d->gpu_lo = d->gpu_hi = 0;
	d->step_tid = 0;
	d->tid_mismatch = false;
	d->oom_ts = d->oom_count = 0;
	d->want_step[0] = '\0';
	d->warmup = (unsigned)gp_setting_default_long("warmup_steps");
	d->steps_from = GP_STEPS_AUTO;
	d->owner = (uid_t)-1;
}

void gp_rd_free(rank_data_t *d)
{
	gp_symtab_free(&d->sym);
	u64map_free(&d->alloc_api);
	u64map_free(&d->corr_api);
	u64map_free(&d->launch_site);
	VEC_FREE(d->ranges);
	VEC_FREE(d->kerns);
	VEC_FREE(d->apis);
	VEC_FREE(d->mems);
	for (size_t i = 0; i < d->stacks.n; i++)
		VEC_FREE(d->stacks.v[i]);
	VEC_FREE(d->stacks);
	u64map_free(&d->stack_of);
	u64map_free(&d->started_of);
	VEC_FREE(d->nvml);
	VEC_FREE(d->nvtx_marks);
	u64map_free(&d->stream_name);
	u64map_free(&d->thread_name);
	VEC_FREE(d->started);
	VEC_FREE(d->steps);
	VEC_FREE(d->marks);
	VEC_FREE(d->opt_ends);
	VEC_FREE(d->opt_own);
	VEC_FREE(d->torch_mem);
	VEC_FREE(d->prof);
	VEC_FREE(d->ctrl);
	VEC_FREE(d->gwin);
	VEC_FREE(d->cuda_on);
	VEC_FREE(d->data_wait);
	VEC_FREE(d->compiles);
	VEC_FREE(d->overhead);
	VEC_FREE(d->proc_changes);
	VEC_FREE(d->side_loops);
}

static int cmp_api(const void *a, const void *b)
{
	const api_t *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}
static int cmp_mem(const void *a, const void *b)
{
	const mem_t *x = a, *y = b;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}
static int cmp_range(const void *a, const void *b)
{
	const range_t *x = a, *y = b;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* Do NVTX and CUDA API records name threads the same way? Collectors before the fix
 * recorded NVTX threads by kernel tid and API threads by pthread id: then no launch
 * thread is an NVTX thread, and ranges can only be matched by time. */
static bool tids_unrelated(const rank_data_t *d)
{
	u64map_t nv = {0};
	size_t launches = 0, on_nvtx = 0;
	for (size_t i = 0; i < d->ranges.n; i++)
		u64map_put(&nv, (uint64_t)d->ranges.v[i].tid + 1, 1);
	for (size_t i = 0; i < d->apis.n; i++) {
		uint64_t v;
		if (d->apis.v[i].alloc) /* our callbacks' records: tid from another source */
			continue;
		launches++;
		on_nvtx += u64map_get(&nv, (uint64_t)d->apis.v[i].tid + 1, &v);
	}
	/* PyTorch launches forward on the annotated main thread and backward on others: a
	 * good share of launches is on NVTX threads whenever the ids agree */
	bool unrelated = nv.n && launches >= 20 && on_nvtx * 10 < launches;
	u64map_free(&nv);
	return unrelated;
}

/* Does this call block the host on the GPU: a synchronize, or a blocking copy whose
 * memcpy record says device-to-host? A driver call inside a runtime call of the same
 * thread (cudaDeviceSynchronize -> cuCtxSynchronize) is the same stall, counted once. */
static bool is_sync_api(const rank_data_t *d, size_t i, const u64map_t *corr_copy)
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

/* CUDA calls made by gpuprof's own threads in the program (the step markers' waiter):
 * the profiler's, not the program's, so none of them is a stall of the program's. */
static void drop_own_calls(rank_data_t *d)
{
	u64map_t own = {0};
	bool any = false;
	for (size_t i = 0; i < d->thread_name.cap; i++)
		if (d->thread_name.k[i] &&
		    !strncmp(gp_rd_str(d, (uint32_t)d->thread_name.v[i]), GP_OWN_THREAD_PREFIX,
		             strlen(GP_OWN_THREAD_PREFIX))) {
			u64map_put(&own, d->thread_name.k[i], 1);
			any = true;
		}
	/* rank files of collectors before the waiter named itself: with step markers, a
	 * thread whose every call is cuEventSynchronize is the waiter's */
	if (!any && d->marks.n) {
		u64map_t other = {0}, evs = {0};
		for (size_t i = 0; i < d->apis.n; i++) {
			const char *n = gp_cbid_name(d->apis.v[i].domain, d->apis.v[i].cbid);
			u64map_put(n && !strcmp(n, "cuEventSynchronize") ? &evs : &other,
			           (uint64_t)d->apis.v[i].tid + 1, 1);
		}
		for (size_t i = 0; i < evs.cap; i++)
			if (evs.k[i] && !u64map_get(&other, evs.k[i], &(uint64_t){0})) {
				u64map_put(&own, evs.k[i], 1);
				any = true;
			}
		u64map_free(&other);
		u64map_free(&evs);
	}
	size_t m = 0;
	uint64_t v;
	for (size_t i = 0; any && i < d->apis.n; i++)
		if (!u64map_get(&own, (uint64_t)d->apis.v[i].tid + 1, &v))
			d->apis.v[m++] = d->apis.v[i];
	if (any)
		d->apis.n = m;
	u64map_free(&own);
}

void gp_rd_finish(rank_data_t *d)
{
	drop_own_calls(d);
	SORT_IF_NEEDED(d->apis, cmp_api);
	SORT_IF_NEEDED(d->mems, cmp_mem);
	SORT_IF_NEEDED(d->ranges, cmp_range);
	for (size_t i = 0; i < d->apis.n; i++)
		u64map_put(d->apis.v[i].alloc ? &d->alloc_api : &d->corr_api, d->apis.v[i].corr,
		           i + 1);
	d->tid_mismatch = tids_unrelated(d);
	u64map_t corr_copy = {0};
	for (size_t i = 0; i < d->kerns.n; i++)
		if (d->kerns.v[i].kind == 1)
			u64map_put(&corr_copy, d->kerns.v[i].corr, d->kerns.v[i].copykind);
	for (size_t i = 0; i < d->apis.n; i++)
		d->apis.v[i].sync = is_sync_api(d, i, &corr_copy);
	u64map_free(&corr_copy);
}

const api_t *gp_rd_launch(const rank_data_t *d, const kern_t *k)
{
	uint64_t ai;
	return u64map_get(&d->corr_api, k->corr, &ai) ? &d->apis.v[ai - 1] : NULL;
}

uint64_t gp_rd_launch_ts(const rank_data_t *d, const kern_t *k)
{
	const api_t *a = gp_rd_launch(d, k);
	return a ? a->start : k->start;
}

static const char *const loss_key[GP_LOSS_N] = {
    [GP_LOSS_RING] = "ring_full",
    [GP_LOSS_CUPTI] = "cupti_dropped",
    [GP_LOSS_CUPTI_REFUSED] = "cupti_buffers_refused",
    [GP_LOSS_STRINGS] = "string_table_full",
    [GP_LOSS_DEPTH] = "nesting_too_deep",
    [GP_LOSS_STACKS] = "stack_table_full",
    [GP_LOSS_DEAD_THREAD] = "dead_thread",
    [GP_LOSS_WRITE] = "write_failed",
    [GP_LOSS_CAP] = "byte_cap",
    [GP_LOSS_PROCESSES] = "other_processes",
    [GP_LOSS_NO_RING] = "no_ring",
};
static const char *const loss_words[GP_LOSS_N] = {
    [GP_LOSS_RING] = "records dropped, the ring was full",
    [GP_LOSS_CUPTI] = "CUDA activity records dropped by CUPTI",
    [GP_LOSS_CUPTI_REFUSED] = "CUPTI buffers lost: not given (memory bound), or handed to the "
                              "program's own profiler with their records",
    [GP_LOSS_STRINGS] = "names lost, the string table was full (ranges shown unnamed)",
    [GP_LOSS_DEPTH] = "ranges nested deeper than 4096, not recorded",
    [GP_LOSS_STACKS] = "call stacks lost, a stack table was full (allocations', or kernel "
                       "launch sites': each has its own)",
    [GP_LOSS_DEAD_THREAD] = "records lost with a thread that died while writing one",
    [GP_LOSS_WRITE] = "records lost, the rank file could not be written (spool full?)",
    [GP_LOSS_CAP] = "records dropped past max_bytes_per_rank",
    [GP_LOSS_PROCESSES] = "other processes of the task not recorded (one per rank file)",
    [GP_LOSS_NO_RING] = "no event ring could be made: the program was not observed",
};

const char *gp_loss_key(unsigned cause)
{
	return cause && cause < GP_LOSS_N ? loss_key[cause] : NULL;
}

const char *gp_loss_words(unsigned cause)
{
	return cause && cause < GP_LOSS_N ? loss_words[cause] : NULL;
}

/* Fold the newer per-cause losses into the four totals older outputs show. */
void gp_rd_losses(gp_rank_t *r)
{
	r->quality.drops_ring += r->quality.loss[GP_LOSS_RING];
	r->quality.drops_cupti += r->quality.loss[GP_LOSS_CUPTI];
	r->quality.drops_table += r->quality.loss[GP_LOSS_STRINGS];
	r->quality.drops_cap += r->quality.loss[GP_LOSS_CAP];
	r->quality.lost_any = r->quality.drops_ring || r->quality.drops_cupti ||
	                      r->quality.drops_table || r->quality.drops_cap;
	for (unsigned c = 1; c < GP_LOSS_N; c++)
		r->quality.lost_any |= r->quality.loss[c] != 0;
}

int gp_rd_load_file(const char *path, rank_data_t *d, gp_rank_t *r,
                    void (*header)(void *, gp_rf_reader_t *), void *arg, char *err, size_t errlen)
{
	gp_rf_reader_t *rd;
	gp_event_t ev;
	int steps_from = d->steps_from;
	uid_t owner = d->owner;
	gp_rd_reset(d);
	d->steps_from = steps_from;
	d->owner = owner;
	if (gp_rf_open_owned(path, owner, &rd, err, errlen) < 0)
		return -1;
	const char *h = gp_rf_header(rd, GP_HDR_REALTIME_NS);
	d->hdr_realtime = h ? strtoull(h, NULL, 10) : 0;
	h = gp_rf_header(rd, GP_HDR_MONOTONIC_NS);
	d->hdr_monotonic = h ? strtoull(h, NULL, 10) : 0;
	if (d->hdr_monotonic) { /* the rank's records fall in its life: an hour's slack */
		const uint64_t hour = 3600ull * 1000000000;
		d->ts_lo = d->hdr_monotonic > hour ? d->hdr_monotonic - hour : 1;
		d->ts_hi = d->hdr_monotonic + 400 * 24 * hour;
	}
	if (header)
		header(arg, rd);
	while (gp_rf_next(rd, &ev) == 1)
		gp_rd_feed(d, r, &ev);
	const gp_rf_stats_t *st = gp_rf_stats(rd);
	const gp_rf_ident_t *id = gp_rf_ident(rd);
	d->src_ok = id != NULL;
	if (id)
		d->src = *id;
	r->quality.truncated = st->truncated;
	r->quality.corrupt_chunks = st->corrupt_chunks;
	r->quality.records = st->records;
	gp_rf_close(rd);
	gp_rd_losses(r);
	gp_rd_cost_unended(d, r);
	gp_rd_finish(d);
	/* the process recording here is not the program the agent started (a launcher's
	 * worker with the task's RANK): how it ended is its own, not its launcher's */
	r->id.child_pid = d->child_pid <= INT32_MAX ? (int)d->child_pid : 0;
	r->outcome.agent_end = d->agent_end;
	r->outcome.agent_status = d->agent_status;
	if (d->lib_end && d->recorder_pid && d->child_pid && d->recorder_pid != d->child_pid &&
	    !gp_rank_task_failed(r)) {
		r->outcome.launcher_status = r->outcome.has_end ? r->outcome.wait_status : -1;
		r->outcome.wait_status = d->lib_status;
		r->outcome.has_end = true;
		r->outcome.status_unknown = false;
	}
	return 0;
}
void gp_rd_header_steps(rank_data_t *d, gp_rf_reader_t *rd)
{
	const char *h;
	if ((h = gp_rf_header(rd, GP_HDR_STEP_RANGE)))
		snprintf(d->want_step, sizeof(d->want_step), "%s", h);
	d->warmup = (h = gp_rf_header(rd, GP_HDR_WARMUP_STEPS))
	                ? (unsigned)atoi(h)
	                : (unsigned)gp_setting_default_long("warmup_steps");
}
