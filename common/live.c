/* Live figures of a running rank (live.h): the running figures the agent keeps from the
 * records it writes, their JSON file, and the reader of that file.
 *
 * Steps, as the report finds them (report/steps.c) but one record at a time: the most
 * repeated outermost NVTX range of the program's own domain, per thread (or the range
 * GPUPROF_STEP_RANGE names) that is not a loop inside another thread's ranges (a
 * worker's iterations inside the main thread's step), else PyTorch's optimizer steps. A step's time
 * is the period from its start to the next one's start on the host, or, where the step completion
 * markers (GP_EV_STEP_MARK, the GPU's own clock) come one per step, the GPU's time from
 * one step's completion to the next one's. */
#include "config.h"
#include "live.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HB       4096  /* histogram buckets: 1 us .. 4.4e4 s */
#define HBASE    1.006 /* each bucket 0.6 % wider than the one before */
#define NCAND    16    /* candidate step ranges followed */
#define NSTR     4096  /* strings kept for naming a step range: at most half the table's */
#define STRMAX   96
#define NTHREADS 64 /* threads whose push/pop depth is followed */
#define OPT_NAME 0xffffffffu
#define IVMAX    4096 /* the last steps kept in order, to date a slowdown */
#define INNER    0.5  /* share of a name's starts inside another thread's range: nested */

typedef struct hist {
	uint32_t b[HB];
	uint64_t n;
	double sum_ms;
} hist_t;

typedef struct cand {
	uint32_t name, tid; /* name: a string id, OPT_NAME: an optimizer (tid: its index) */
	uint64_t n, last_start;
	/* starts made while another thread had a range of another name open (in_name, the
	 * last such): the report's nesting rule (report/steps.c, 2.), counted by starts */
	uint64_t inside;
	uint32_t in_name;
	hist_t all, iv;
} cand_t;

/* The last IVMAX steps in order (a ring): when each began, how long */
typedef struct ivlog {
	struct {
		uint64_t at, ns;
	} v[IVMAX];
	uint64_t n;
} ivlog_t;

typedef struct gpu {
	bool seen;
	uint64_t used, peak, total, last_ts;
	uint64_t samples, util_sum, iv_samples, iv_util_sum;
	double idle_startup_s, idle_steps_s;
} gpu_t;

struct gp_live {
	double interval_s;
	unsigned warmup;
	char want[STRMAX];
	uint64_t start_ns, iv_start_ns, first_step_ns;
	cand_t cand[NCAND];
	unsigned ncand;
	hist_t gpu_all, gpu_iv; /* step marker GPU times */
	uint64_t gpu_marks;
	ivlog_t host_log, gpu_log; /* the step's periods, the markers' times */
	struct { /* push/pop depth per thread, for GP_EV_NVTX_PUSH ranges, and the name of
		    its outermost open range */
		uint32_t tid, depth, name;
	} thr[NTHREADS];
	/* open addressing on id (0: a free slot; the library never names with 0): the ids
	 * probed apart from the text, in 16 KiB that stay in cache (the text's 384 KiB, touched
	 * at every probe, cost a cache miss per string record) */
	uint32_t *str_id;
	char (*str)[STRMAX];
	unsigned nstr; /* kept: at most NSTR / 2, so a probe ends within a few slots (a program
	                  of 10^5 distinct names probed the whole table for each) */
	gpu_t gpu[GP_LIVE_GPUS];
	uint64_t torch_alloc, torch_res, torch_peak;
	uint64_t lost[GP_LOSS_N];
	unsigned faults;
	/* the slowdown in progress: since (monotonic ns; 0 none) and the median before it */
	uint64_t slow_since;
	double slow_base_ms, slow_ratio;
};

/* ---- histograms ---- */

static unsigned bucket(uint64_t ns)
{
	if (ns < 1000)
		return 0;
	double i = log((double)ns / 1000.0) / log(HBASE);
	return i >= HB - 1 ? HB - 1 : (unsigned)i;
}

static void hist_add(hist_t *h, uint64_t ns)
{
	h->b[bucket(ns)]++;
	h->n++;
	h->sum_ms += (double)ns / 1e6;
}

/* The q-quantile's bucket middle (geometric), in ms; 0 when empty. */
static double hist_q(const hist_t *h, double q)
{
	if (!h->n)
		return 0;
	uint64_t want = (uint64_t)ceil(q * (double)h->n), c = 0;
	want = want ? want : 1;
	for (unsigned i = 0; i < HB; i++)
		if ((c += h->b[i]) >= want)
			return 1e-3 * pow(HBASE, (double)i + 0.5);
	return 0;
}

static void ivlog_add(ivlog_t *g, uint64_t at, uint64_t ns)
{
	g->v[g->n % IVMAX].at = at;
	g->v[g->n % IVMAX].ns = ns;
	g->n++;
}

/* When a slowdown began: the change point of the last IVMAX steps that best splits them
 * into fast before and slow (thr_ms or more) from it on, the fewest steps on the wrong side
 * (a step slowed by a hiccup before it does not move it); the start of that step, 0 when
 * no step is slow. */
static uint64_t ivlog_onset(const ivlog_t *g, double thr_ms)
{
	uint64_t kept = g->n < IVMAX ? g->n : IVMAX, first = g->n - kept, nslow = 0;
	for (uint64_t i = first; i < g->n; i++)
		nslow += (double)g->v[i % IVMAX].ns / 1e6 >= thr_ms;
	uint64_t slow_before = 0, best = UINT64_MAX, at = 0;
	for (uint64_t i = first; nslow && i < g->n; i++) {
		bool sl = (double)g->v[i % IVMAX].ns / 1e6 >= thr_ms;
		/* split before step i: slow ones before it, fast ones from it on */
		uint64_t wrong = slow_before + (g->n - i) - (nslow - slow_before);
		if (sl && wrong < best)
			best = wrong, at = g->v[i % IVMAX].at;
		slow_before += sl;
	}
	return at;
}

static void hist_clear(hist_t *h)
{
	memset(h, 0, sizeof(*h));
}

/* ---- strings (names of ranges) ---- */

/* The library numbers its strings one after the other: multiplied (Fibonacci hashing) they
 * spread over the table, where id % NSTR filled one run of slots that every new id probed
 * to its end (60 ns a string record at 10^5 distinct names). */
static unsigned str_slot(uint32_t id)
{
	return (unsigned)((id * 2654435761u) >> 20) % NSTR;
}

static const char *str_get(const gp_live_t *l, uint32_t id)
{
	for (unsigned k = 0, i = str_slot(id); id && k < NSTR; k++, i = (i + 1) % NSTR) {
		if (l->str_id[i] == id)
			return l->str[i];
		if (!l->str_id[i])
			break;
	}
	return NULL;
}

/* GP_EV_STRING: its first STRMAX - 1 bytes, chunk by chunk (u16 the chunk's offset) */
static void str_put(gp_live_t *l, const gp_event_t *ev)
{
	uint32_t id = ev->tid;
	unsigned off = ev->u16, n = ev->u8;
	if (!id || off >= STRMAX - 1 || n > GP_STRING_CHUNK)
		return;
	for (unsigned k = 0, i = str_slot(id); k < NSTR; k++, i = (i + 1) % NSTR) {
		if (l->str_id[i] && l->str_id[i] != id)
			continue;
		if (!l->str_id[i]) {
			if (off || l->nstr >= NSTR / 2)
				return; /* its start was not kept, or the table is full enough */
			l->str_id[i] = id;
			l->nstr++;
		}
		if (off + n > STRMAX - 1)
			n = STRMAX - 1 - off;
		memcpy(l->str[i] + off, &ev->a, n);
		l->str[i][off + n] = '\0';
		return;
	}
}

/* ---- steps ---- */

static cand_t *cand_get(gp_live_t *l, uint32_t name, uint32_t tid)
{
	cand_t *least = NULL;
	for (unsigned i = 0; i < l->ncand; i++) {
		if (l->cand[i].name == name && l->cand[i].tid == tid)
			return &l->cand[i];
		if (!least || l->cand[i].n < least->n)
			least = &l->cand[i];
	}
	if (l->ncand < NCAND) {
		least = &l->cand[l->ncand++];
	} else if (least->n > 2) {
		return NULL; /* sixteen repeated ranges already: a newcomer is not the step */
	}
	/* its histograms cleared only when they hold something: a program of distinct names
	 * replaces a candidate at every range (32 KiB each) */
	if (least->all.n || least->iv.n) {
		hist_clear(&least->all);
		hist_clear(&least->iv);
	}
	least->n = least->last_start = least->inside = 0;
	least->in_name = 0;
	least->name = name;
	least->tid = tid;
	return least;
}

static const cand_t *step_cand(const gp_live_t *l);

/* A step began (an outermost range, an optimizer's return) at ts. */
static void step_start(gp_live_t *l, uint32_t name, uint32_t tid, uint64_t ts)
{
	if (name != OPT_NAME && l->want[0]) {
		const char *s = str_get(l, name);
		if (!s || strcmp(s, l->want))
			return;
	}
	cand_t *c = cand_get(l, name, tid);
	if (!c)
		return;
	for (unsigned i = 0; name != OPT_NAME && i < NTHREADS; i++)
		if (l->thr[i].depth && l->thr[i].tid != tid && l->thr[i].name != name) {
			c->inside++; /* a worker's iteration inside the main thread's step */
			c->in_name = l->thr[i].name;
			break;
		}
	if (c->n && ts > c->last_start) {
		uint64_t period = ts - c->last_start;
		if (c->n > l->warmup) { /* the warm-up's steps are in no figure */
			hist_add(&c->all, period);
			hist_add(&c->iv, period);
			if (c == step_cand(l))
				ivlog_add(&l->host_log, c->last_start, period);
		}
	}
	c->n++;
	c->last_start = ts;
	if (!l->first_step_ns && c->n >= 2)
		l->first_step_ns = ts;
}

/* Is c a loop inside the steps: most of its starts inside another thread's open range of
 * a name that repeats less often (report/steps.c's rule 2; the live records hold no
 * kernels, so its GPU-share rule 1 is not applied here). */
static bool cand_inner(const gp_live_t *l, const cand_t *c)
{
	if (c->name == OPT_NAME || (double)c->inside < INNER * (double)c->n)
		return false;
	for (unsigned i = 0; i < l->ncand; i++)
		if (l->cand[i].name == c->in_name && l->cand[i].n >= 2 && l->cand[i].n < c->n)
			return true;
	return false;
}

/* The step: the most repeated NVTX candidate that is no loop inside another's ranges
 * (all of them when every one is), else the optimizer that steps most. */
static const cand_t *step_cand(const gp_live_t *l)
{
	const cand_t *best = NULL, *opt = NULL, *any = NULL;
	for (unsigned i = 0; i < l->ncand; i++) {
		const cand_t *c = &l->cand[i];
		if (c->n < 2)
			continue;
		if (c->name == OPT_NAME) {
			if (!opt || c->n > opt->n)
				opt = c;
			continue;
		}
		if (!any || c->n > any->n)
			any = c;
		if (!cand_inner(l, c) && (!best || c->n > best->n))
			best = c;
	}
	return best ? best : any ? any : opt;
}

static void on_push(gp_live_t *l, const gp_event_t *ev, bool push)
{
	if (ev->b) /* another domain's (a library's) */
		return;
	unsigned i, slot = NTHREADS;
	for (i = 0; i < NTHREADS && l->thr[i].tid != ev->tid; i++)
		if (!l->thr[i].depth && slot == NTHREADS)
			slot = i; /* a thread with no range open: its slot may be taken */
	if (i == NTHREADS) {
		if (!push || slot == NTHREADS)
			return;
		i = slot;
		l->thr[i].tid = ev->tid;
	}
	if (push) {
		if (l->thr[i].depth++ == 0) {
			step_start(l, (uint32_t)ev->a, ev->tid, ev->ts);
			l->thr[i].name = (uint32_t)ev->a;
		}
	} else if (l->thr[i].depth) {
		l->thr[i].depth--;
	}
}

/* ---- NVML and memory ---- */

static void on_nvml(gp_live_t *l, const gp_event_t *ev)
{
	if (ev->u8 >= GP_LIVE_GPUS)
		return;
	gpu_t *g = &l->gpu[ev->u8];
	unsigned util = (unsigned)(ev->a & 0xff);
	g->seen = true;
	g->used = ev->b;
	g->peak = ev->b > g->peak ? ev->b : g->peak;
	g->samples++;
	g->util_sum += util;
	g->iv_samples++;
	g->iv_util_sum += util;
	if (g->last_ts && ev->ts > g->last_ts) {
		double idle =
		    (double)(ev->ts - g->last_ts) / 1e9 * (100 - (util > 100 ? 100 : util)) / 100.0;
		*(l->first_step_ns ? &g->idle_steps_s : &g->idle_startup_s) += idle;
	}
	g->last_ts = ev->ts;
}

static void on_fw(gp_live_t *l, const gp_event_t *ev)
{
	switch (ev->u8) {
	case GP_FW_OPT_END:
		step_start(l, OPT_NAME, (uint32_t)ev->a, ev->ts);
		break;
	case GP_FW_MEM_STEP:
		l->torch_alloc = ev->a;
		l->torch_res = ev->c;
		break;
	case GP_FW_MEM_PEAK:
	case GP_FW_MEM_MAX:
		l->torch_peak = ev->a > l->torch_peak ? ev->a : l->torch_peak;
		break;
	}
}

void gp_live_observe(void *arg, const gp_event_t *ev)
{
	gp_live_t *l = arg;
	switch (ev->type) {
	case GP_EV_STRING:
		str_put(l, ev);
		break;
	case GP_EV_NVTX_RANGE:
		if (ev->u16 == 0) /* outermost */
			step_start(l, (uint32_t)ev->a, ev->tid, ev->ts);
		break;
	case GP_EV_NVTX_PUSH:
	case GP_EV_NVTX_POP:
		on_push(l, ev, ev->type == GP_EV_NVTX_PUSH);
		break;
	case GP_EV_STEP_MARK:
		if (ev->d == 1 && l->gpu_marks++ >= l->warmup) {
			hist_add(&l->gpu_all, ev->a);
			hist_add(&l->gpu_iv, ev->a);
			ivlog_add(&l->gpu_log, ev->ts > ev->a ? ev->ts - ev->a : ev->ts, ev->a);
		}
		break;
	case GP_EV_NVML:
		on_nvml(l, ev);
		break;
	case GP_EV_GPU:
		if (ev->u8 < GP_LIVE_GPUS)
			l->gpu[ev->u8].total = ev->b;
		break;
	case GP_EV_GPU_FAULT:
		if (ev->a == GP_FAULT_XID || ev->a == GP_FAULT_ECC_UNCORRECTED)
			l->faults++;
		break;
	case GP_EV_FW:
		on_fw(l, ev);
		break;
	case GP_EV_START:
		if (!l->start_ns && !ev->u8)
			l->start_ns = l->iv_start_ns = ev->ts;
		break;
	}
}

gp_live_t *gp_live_new(double interval_s, unsigned warmup, const char *step_range)
{
	gp_live_t *l = calloc(1, sizeof(*l));
	if (!l || !(l->str = calloc(NSTR, sizeof(*l->str))) ||
	    !(l->str_id = calloc(NSTR, sizeof(*l->str_id)))) {
		if (l)
			free(l->str);
		free(l);
		return NULL;
	}
	l->interval_s = interval_s;
	l->warmup = warmup;
	snprintf(l->want, sizeof(l->want), "%s", step_range ? step_range : "");
	return l;
}

void gp_live_free(gp_live_t *l)
{
	if (!l)
		return;
	free(l->str);
	free(l->str_id);
	free(l);
}

void gp_live_set_losses(gp_live_t *l, const uint64_t n[GP_LOSS_N])
{
	memcpy(l->lost, n, sizeof(l->lost));
}

/* ---- the interval's close ---- */

static const char *const loss_names[GP_LOSS_N] = {[GP_LOSS_RING] = "ring full",
                                                  [GP_LOSS_CUPTI] = "cupti",
                                                  [GP_LOSS_CUPTI_REFUSED] = "cupti refused",
                                                  [GP_LOSS_STRINGS] = "strings",
                                                  [GP_LOSS_DEPTH] = "depth",
                                                  [GP_LOSS_STACKS] = "stacks",
                                                  [GP_LOSS_DEAD_THREAD] = "dead thread",
                                                  [GP_LOSS_WRITE] = "write",
                                                  [GP_LOSS_CAP] = "byte cap",
                                                  [GP_LOSS_PROCESSES] = "processes",
                                                  [GP_LOSS_NO_RING] = "no ring"};

/* The median of what all holds and iv does not (the steps before the interval). */
static double hist_median_before(const hist_t *all, const hist_t *iv, uint64_t *n)
{
	*n = all->n > iv->n ? all->n - iv->n : 0;
	uint64_t want = (*n + 1) / 2, c = 0;
	for (unsigned i = 0; *n && i < HB; i++) {
		c += all->b[i] > iv->b[i] ? all->b[i] - iv->b[i] : 0;
		if (c >= want)
			return 1e-3 * pow(HBASE, (double)i + 0.5);
	}
	return 0;
}

static void add_find(gp_live_rank_t *r, const char *id, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void add_find(gp_live_rank_t *r, const char *id, const char *fmt, ...)
{
	if (r->nfind == GP_LIVE_FINDS)
		return;
	gp_live_finding_t *f = &r->find[r->nfind++];
	va_list ap;
	snprintf(f->id, sizeof(f->id), "%s", id);
	va_start(ap, fmt);
	vsnprintf(f->text, sizeof(f->text), fmt, ap);
	va_end(ap);
}

/* The steps' figures, and the slowdown: the interval's median against the steps' before
 * it, held from its onset (the median of all steps would drift toward the slow ones). */
static void tick_steps(gp_live_t *l, gp_live_rank_t *r, uint64_t now, bool ended)
{
	const cand_t *c = step_cand(l);
	r->step_name[0] = r->step_source[0] = r->step_basis[0] = '\0';
	r->steps = r->last_steps = 0;
	r->median_ms = r->p95_ms = r->mean_ms = r->last_median_ms = 0;
	if (!c)
		return;
	if (c->name == OPT_NAME)
		snprintf(r->step_name, sizeof(r->step_name), "optimizer %u step()", c->tid);
	else if (str_get(l, c->name))
		snprintf(r->step_name, sizeof(r->step_name), "%s", str_get(l, c->name));
	else
		snprintf(r->step_name, sizeof(r->step_name), "range %u", c->name);
	snprintf(r->step_source, sizeof(r->step_source), "%s",
	         c->name == OPT_NAME ? "optimizer" : "nvtx");
	/* the markers time the same steps when one comes per step (the first of a chain has
	 * no time) */
	bool gpu = c->name != OPT_NAME && l->gpu_marks >= 2 && l->gpu_marks + 2 >= c->n &&
	           l->gpu_marks <= c->n + 2;
	const hist_t *all = gpu ? &l->gpu_all : &c->all, *iv = gpu ? &l->gpu_iv : &c->iv;
	snprintf(r->step_basis, sizeof(r->step_basis), "%s", gpu ? "gpu" : "period");
	r->steps = (unsigned)c->n;
	r->median_ms = hist_q(all, 0.5);
	r->p95_ms = hist_q(all, 0.95);
	r->mean_ms = all->n ? all->sum_ms / (double)all->n : 0;
	r->last_steps = (unsigned)iv->n;
	r->last_median_ms = hist_q(iv, 0.5);
	uint64_t nbase;
	if (iv->n >= GP_LIVE_SLOW_MIN_STEPS && !l->slow_since) {
		double base = hist_median_before(all, iv, &nbase);
		if (nbase >= GP_LIVE_SLOW_MIN_BASE &&
		    r->last_median_ms >= GP_LIVE_SLOW_RATIO * base) {
			uint64_t at = ivlog_onset(gpu ? &l->gpu_log : &l->host_log,
			                          GP_LIVE_SLOW_RATIO * base);
			l->slow_since = at > l->start_ns ? at : l->iv_start_ns;
			l->slow_base_ms = base;
		}
	} else if (l->slow_since && iv->n >= GP_LIVE_SLOW_MIN_STEPS &&
	           r->last_median_ms < GP_LIVE_SLOW_RATIO * l->slow_base_ms) {
		l->slow_since = 0;
	}
	if (l->slow_since && iv->n)
		l->slow_ratio = r->last_median_ms / l->slow_base_ms;
	r->slow_since_s = l->slow_since ? (double)(l->slow_since - l->start_ns) / 1e9 : -1;
	r->slow_ratio = l->slow_since ? l->slow_ratio : 0;
	r->slow_base_ms = l->slow_since ? l->slow_base_ms : 0;
	if (l->slow_since)
		add_find(r, "slowdown",
		         "steps take %.1f ms since %.1f s into the run, %.2fx the %.1f ms median "
		         "of the steps before",
		         r->last_median_ms, r->slow_since_s, r->slow_ratio, r->slow_base_ms);
	double quiet_s = c->last_start && now > c->last_start ? (now - c->last_start) / 1e9 : 0;
	if (!ended && r->median_ms > 0 && quiet_s > l->interval_s &&
	    quiet_s * 1e3 > 10 * r->median_ms)
		add_find(r, "no_progress", "no step began for %.0f s (the median step: %.1f ms)",
		         quiet_s, r->median_ms);
}

static void tick_gpus(gp_live_t *l, gp_live_rank_t *r)
{
	uint64_t us = 0, s = 0, ius = 0, is = 0;
	double fullest = -1;
	r->ngpus = 0; /* each file's figures from the running totals, not added to the last's */
	r->idle_startup_s = r->idle_steps_s = 0;
	r->mem_used = r->mem_peak = r->mem_total = 0;
	for (unsigned d = 0; d < GP_LIVE_GPUS; d++) {
		gpu_t *g = &l->gpu[d];
		if (!g->seen)
			continue;
		r->ngpus++;
		s += g->samples, us += g->util_sum, is += g->iv_samples, ius += g->iv_util_sum;
		r->idle_startup_s += g->idle_startup_s;
		r->idle_steps_s += g->idle_steps_s;
		double full =
		    g->total ? (double)g->peak / (double)g->total : (double)g->peak / 1e18;
		if (full > fullest) {
			fullest = full;
			r->mem_used = g->used, r->mem_peak = g->peak, r->mem_total = g->total;
		}
		g->iv_samples = g->iv_util_sum = 0;
	}
	r->samples = (unsigned)s;
	r->last_samples = (unsigned)is;
	r->busy_pct = s ? (double)us / (double)s : 0;
	r->last_busy_pct = is ? (double)ius / (double)is : 0;
	r->torch_allocated = l->torch_alloc;
	r->torch_reserved = l->torch_res;
	r->torch_peak = l->torch_peak;
	/* three samples in the interval, or two once five were taken (an interval of 2 s
	 * holds two of NVML's 1 s samples: the rule never fired at GPUPROF_LIVE_INTERVAL=2
	 * on a GPU busy 18 % of the time, bench/gpu-live.sh) */
	if ((is >= 3 || (is >= 2 && s >= 5)) && l->first_step_ns && r->last_busy_pct < 50)
		add_find(r, "gpu_idle",
		         "the GPU was busy %.0f%% of the last %.0f s (NVML), %.0f%% so far",
		         r->last_busy_pct, r->last_to_s - r->last_from_s, r->busy_pct);
	if (r->mem_total && r->mem_peak >= r->mem_total / 100 * 95)
		add_find(r, "memory_near_limit", "device memory peaked at %.1f of %.1f GiB (NVML)",
		         r->mem_peak / 1073741824.0, r->mem_total / 1073741824.0);
}

void gp_live_tick(gp_live_t *l, uint64_t now, bool ended, gp_live_rank_t *r)
{
	if (!l->start_ns)
		l->start_ns = l->iv_start_ns = now;
	r->version = GP_LIVE_VERSION;
	r->interval_s = l->interval_s;
	r->warmup = l->warmup;
	r->elapsed_s = (double)(now - l->start_ns) / 1e9;
	r->last_from_s = (double)(l->iv_start_ns - l->start_ns) / 1e9;
	r->last_to_s = r->elapsed_s;
	r->first_step_s = l->first_step_ns ? (double)(l->first_step_ns - l->start_ns) / 1e9 : -1;
	r->slow_since_s = -1;
	r->nfind = 0;
	tick_steps(l, r, now, ended);
	tick_gpus(l, r);
	r->faults = l->faults;
	if (l->faults)
		add_find(r, "gpu_fault", "%u GPU errors (Xid or uncorrected ECC) so far",
		         l->faults);
	r->lost = 0;
	r->lost_by[0] = '\0';
	for (unsigned c = 1; c < GP_LOSS_N; c++) {
		size_t o = strlen(r->lost_by);
		if (!l->lost[c])
			continue;
		r->lost += l->lost[c];
		snprintf(r->lost_by + o, sizeof(r->lost_by) - o, "%s%s %llu", o ? ", " : "",
		         loss_names[c], (unsigned long long)l->lost[c]);
	}
	if (r->lost)
		add_find(r, "records_lost", "%llu records lost so far (%s)",
		         (unsigned long long)r->lost, r->lost_by);
	for (unsigned i = 0; i < l->ncand; i++)
		hist_clear(&l->cand[i].iv);
	hist_clear(&l->gpu_iv);
	l->iv_start_ns = now;
}

/* ---- the file ---- */

/* s as a JSON string: quotes, backslashes and control bytes escaped, bytes past ASCII as
 * '?' (a name cut at STRMAX may end inside a UTF-8 sequence) */
static size_t put_str(char *o, size_t len, const char *s)
{
	size_t n = 0;
	if (len < 3)
		return len;
	o[n++] = '"';
	for (; *s && n + 8 < len; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			o[n++] = '\\', o[n++] = (char)ch;
		else if (ch < 0x20)
			n += (size_t)snprintf(o + n, len - n, "\\u%04x", ch);
		else
			o[n++] = ch < 0x80 ? (char)ch : '?';
	}
	o[n++] = '"';
	o[n] = '\0';
	return n;
}

#define PUT(...)                                                                                   \
	do {                                                                                       \
		int k_ = snprintf(buf + n, len > n ? len - n : 0, __VA_ARGS__);                    \
		n += k_ > 0 ? (size_t)k_ : 0;                                                      \
	} while (0)
#define PUTS(key, v)                                                                               \
	do {                                                                                       \
		PUT(", \"%s\": ", key);                                                            \
		if (n < len)                                                                       \
			n += put_str(buf + n, len - n, v);                                         \
	} while (0)

size_t gp_live_format(const gp_live_rank_t *r, char *buf, size_t len)
{
	size_t n = 0;
	PUT("{\"gpuprof_live\": %d", r->version);
	PUTS("job", r->job);
	PUTS("step", r->step);
	PUT(", \"rank\": %d", r->rank);
	PUTS("node", r->node);
	PUT(", \"pid\": %d", r->pid);
	PUTS("state", r->state);
	PUT(", \"wait_status\": %d, \"seq\": %u, \"started\": %.3f, \"written\": %.3f, "
	    "\"elapsed_s\": %.3f, \"interval_s\": %.3f",
	    r->wait_status, r->seq, r->started, r->written, r->elapsed_s, r->interval_s);
	PUTS("step_name", r->step_name);
	PUTS("step_source", r->step_source);
	PUTS("step_basis", r->step_basis);
	PUT(", \"steps\": %u, \"warmup\": %u, \"median_ms\": %.4f, \"p95_ms\": %.4f, "
	    "\"mean_ms\": %.4f, \"last_steps\": %u, \"last_median_ms\": %.4f, \"last_from_s\": "
	    "%.3f, \"last_to_s\": %.3f, \"first_step_s\": %.3f, \"slow_since_s\": %.3f, "
	    "\"slow_ratio\": %.4f, \"slow_base_ms\": %.4f",
	    r->steps, r->warmup, r->median_ms, r->p95_ms, r->mean_ms, r->last_steps,
	    r->last_median_ms, r->last_from_s, r->last_to_s, r->first_step_s, r->slow_since_s,
	    r->slow_ratio, r->slow_base_ms);
	PUT(", \"gpus\": %u, \"nvml_samples\": %u, \"last_nvml_samples\": %u, \"busy_pct\": %.2f, "
	    "\"last_busy_pct\": %.2f, \"idle_startup_s\": %.3f, \"idle_steps_s\": %.3f, "
	    "\"mem_used_bytes\": %llu, \"mem_peak_bytes\": %llu, \"mem_total_bytes\": %llu, "
	    "\"torch_allocated_bytes\": %llu, \"torch_reserved_bytes\": %llu, "
	    "\"torch_peak_bytes\": %llu, \"lost\": %llu",
	    r->ngpus, r->samples, r->last_samples, r->busy_pct, r->last_busy_pct, r->idle_startup_s,
	    r->idle_steps_s, (unsigned long long)r->mem_used, (unsigned long long)r->mem_peak,
	    (unsigned long long)r->mem_total, (unsigned long long)r->torch_allocated,
	    (unsigned long long)r->torch_reserved, (unsigned long long)r->torch_peak,
	    (unsigned long long)r->lost);
	PUTS("lost_by", r->lost_by);
	PUT(", \"faults\": %u, \"agent_cpu_s\": %.4f, \"agent_cpu_last_ms\": %.3f, \"findings\": [",
	    r->faults, r->agent_cpu_s, r->agent_cpu_last_ms);
	for (unsigned i = 0; i < r->nfind && i < GP_LIVE_FINDS; i++) {
		PUT("%s{\"id\": ", i ? ", " : "");
		if (n < len)
			n += put_str(buf + n, len - n, r->find[i].id);
		PUT(", \"text\": ");
		if (n < len)
			n += put_str(buf + n, len - n, r->find[i].text);
		PUT("}");
	}
	PUT("]}\n");
	return n < len ? n : 0;
}

/* ---- the reader ---- */

/* The value after "key": in text (a flat object of ours: a key's quoted name cannot occur
 * inside an escaped string), or NULL. */
static const char *val(const char *text, const char *key)
{
	char pat[48];
	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	const char *p = strstr(text, pat);
	return p ? p + strlen(pat) : NULL;
}

/* A number; not one, or not finite (strtod takes "nan" and "inf", which the JSON we
 * write again could not hold): 0. */
static double num(const char *text, const char *key)
{
	const char *v = val(text, key);
	double d = v ? strtod(v, NULL) : 0;
	return isfinite(d) ? d : 0;
}

/* A whole number of a file someone else may have written: in [lo, hi] (a cast of a double
 * out of an int's range is undefined), NaN as lo. */
static int inum(const char *text, const char *key, int lo, int hi)
{
	double v = num(text, key);
	return !(v >= lo) ? lo : v > hi ? hi : (int)v;
}

/* A count of a file someone else may have written: a whole number in [0, max], else the
 * field is dropped (0): strtoull takes "-1" as 2^64 - 1, a cast past max wraps (2^40
 * steps read as 0). */
static uint64_t u64max(const char *text, const char *key, uint64_t max)
{
	const char *v = val(text, key);
	char *end;
	if (!v || *v < '0' || *v > '9')
		return 0;
	errno = 0;
	unsigned long long u = strtoull(v, &end, 10);
	return errno || u > max ? 0 : (uint64_t)u;
}

static uint64_t u64(const char *text, const char *key)
{
	return u64max(text, key, UINT64_MAX);
}

static unsigned uns(const char *text, const char *key)
{
	return (unsigned)u64max(text, key, UINT_MAX);
}

/* The most a time of a live file may say: a century in seconds (37 days in a step's ms;
 * an epoch time up to 2071). Any more,
 * a negative one or not a number: the field is dropped (0), so a job's sums and averages
 * over its ranks stay finite and lround() of them defined. */
#define LIVE_TIME_MAX 3.2e9
static double secs(const char *text, const char *key)
{
	double d = num(text, key);
	return d >= 0 && d <= LIVE_TIME_MAX ? d : 0;
}

/* A time that may be none (-1, what the agent writes): out of range, none. */
static double since(const char *text, const char *key)
{
	double d = num(text, key);
	return d >= 0 && d <= LIVE_TIME_MAX ? d : -1;
}

/* A share of the GPU's time: in [0, 100], else dropped (0). */
static double pct(const char *text, const char *key)
{
	double d = num(text, key);
	return d >= 0 && d <= 100 ? d : 0;
}

/* A JSON string at p into out (escapes undone, \u as '?'); the end after it, or NULL. */
static const char *get_str(const char *p, char *out, size_t len)
{
	size_t n = 0;
	if (!p || *p != '"')
		return NULL;
	for (p++; *p && *p != '"'; p++) {
		char ch = *p;
		if (ch == '\\') {
			if (!*++p)
				return NULL;
			ch = *p == 'n' ? '\n' : *p == 't' ? '\t' : *p;
			if (*p == 'u') {
				for (int i = 0; i < 4 && p[1]; i++)
					p++;
				ch = '?';
			}
		}
		/* a control byte (an escape sequence a job wrote for root's terminal, gpuprof
		 * top) is never kept */
		if ((unsigned char)ch < 0x20 || ch == 0x7f)
			ch = '?';
		if (n + 1 < len)
			out[n++] = ch;
	}
	if (len)
		out[n < len ? n : len - 1] = '\0';
	return *p == '"' ? p + 1 : NULL;
}

static void str(const char *text, const char *key, char *out, size_t len)
{
	if (!get_str(val(text, key), out, len) && len)
		out[0] = '\0';
}

static void parse_findings(const char *text, gp_live_rank_t *r)
{
	const char *p = val(text, "findings");
	r->nfind = 0;
	while (p && r->nfind < GP_LIVE_FINDS && (p = strstr(p, "{\"id\": "))) {
		gp_live_finding_t *f = &r->find[r->nfind];
		p = get_str(p + 7, f->id, sizeof(f->id));
		if (!p || strncmp(p, ", \"text\": ", 10) ||
		    !(p = get_str(p + 10, f->text, sizeof(f->text))))
			break;
		r->nfind++;
	}
}

int gp_live_parse(const char *t, gp_live_rank_t *r)
{
	memset(r, 0, sizeof(*r));
	if (strncmp(t, "{\"gpuprof_live\": ", 17) ||
	    (r->version = inum(t, "gpuprof_live", 0, 1000)) < 1)
		return -1;
	str(t, "job", r->job, sizeof(r->job));
	str(t, "step", r->step, sizeof(r->step));
	str(t, "node", r->node, sizeof(r->node));
	str(t, "state", r->state, sizeof(r->state));
	str(t, "step_name", r->step_name, sizeof(r->step_name));
	str(t, "step_source", r->step_source, sizeof(r->step_source));
	str(t, "step_basis", r->step_basis, sizeof(r->step_basis));
	str(t, "lost_by", r->lost_by, sizeof(r->lost_by));
	r->rank = inum(t, "rank", -1, INT32_MAX);
	r->pid = inum(t, "pid", 0, INT32_MAX);
	r->wait_status = inum(t, "wait_status", 0, 65535);
	r->seq = uns(t, "seq");
	r->started = secs(t, "started"), r->written = secs(t, "written");
	r->elapsed_s = secs(t, "elapsed_s"), r->interval_s = secs(t, "interval_s");
	r->steps = uns(t, "steps"), r->warmup = uns(t, "warmup");
	r->median_ms = secs(t, "median_ms"), r->p95_ms = secs(t, "p95_ms");
	r->mean_ms = secs(t, "mean_ms");
	r->last_steps = uns(t, "last_steps");
	r->last_median_ms = secs(t, "last_median_ms");
	r->last_from_s = secs(t, "last_from_s"), r->last_to_s = secs(t, "last_to_s");
	r->first_step_s = since(t, "first_step_s");
	r->slow_since_s = since(t, "slow_since_s"), r->slow_ratio = secs(t, "slow_ratio");
	r->slow_base_ms = secs(t, "slow_base_ms");
	r->ngpus = uns(t, "gpus");
	r->samples = uns(t, "nvml_samples");
	r->last_samples = uns(t, "last_nvml_samples");
	r->busy_pct = pct(t, "busy_pct"), r->last_busy_pct = pct(t, "last_busy_pct");
	r->idle_startup_s = secs(t, "idle_startup_s");
	r->idle_steps_s = secs(t, "idle_steps_s");
	r->mem_used = u64(t, "mem_used_bytes"), r->mem_peak = u64(t, "mem_peak_bytes");
	r->mem_total = u64(t, "mem_total_bytes");
	r->torch_allocated = u64(t, "torch_allocated_bytes");
	r->torch_reserved = u64(t, "torch_reserved_bytes");
	r->torch_peak = u64(t, "torch_peak_bytes");
	r->lost = u64(t, "lost");
	r->faults = uns(t, "faults");
	r->agent_cpu_s = secs(t, "agent_cpu_s");
	r->agent_cpu_last_ms = secs(t, "agent_cpu_last_ms");
	parse_findings(t, r);
	return 0;
}

bool gp_live_stale(const gp_live_rank_t *r, double now)
{
	return !strcmp(r->state, "running") &&
	       now - r->written > GP_LIVE_STALE_INTERVALS * r->interval_s + 10;
}
