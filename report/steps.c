/* Steps: which intervals are the training iterations, and how long each really took.
 *
 * Where steps come from, in order (GP_STEPS_AUTO takes the first that gives two):
 *   nvtx      the program's most repeated outermost NVTX range (GPUPROF_STEP_RANGE names
 *             one), in its own domain;
 *   optimizer PyTorch's optimizer.step() calls (GP_FW_OPT_END, agent/python): a step
 *             ends where the optimizer that steps most returns;
 *   profiler  cudaProfilerStart/Stop windows;
 *   kernels   the repetition of the launch sequence: the smallest period P at which the
 *             sequence of GPU work (kernel names, copies, sets, in launch order) repeats,
 *             cut where the host paused longest in the steady state.
 *
 * How long a step took. The host runs ahead of the GPU, so the CPU time inside a step
 * range measures launches, not work (the seed's first layer). Per step:
 *   cpu     the range's CPU interval (what the program's NVTX range saw);
 *   period  start of the step to start of the next (true on average once the host can
 *           no longer run ahead: the launch queue and any synchronisation bound it);
 *   gpu     completion of the last GPU work launched in the step to that of the
 *           previous step (work matched to its launch call by correlation id).
 * The headline is gpu where CUDA activity was recorded, the period otherwise. */
#include "config.h"
#include "rankdata.h"
#include "stats.h"
#include "modes.h"
#include "live.h"
#include "findings.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_step(const void *a, const void *b)
{
	const step_t *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* ---- steps from NVTX ranges ----
 * The steps are the outermost repeating range that holds the program's GPU work, not
 * merely the most frequent one: a program whose side threads run loops of their own
 * (a prefetcher, worker threads each on its own stream, a monitor) repeats their ranges
 * more often than its training step (issue 51: 'worker2_iter', 0.005 ms, 4x as often,
 * was taken for the main thread's 0.39 ms 'train_step'). Per candidate name (a named
 * outermost range of the program's own domain, seen twice or more):
 *   1. the GPU work launched while one of its ranges was open on the launching thread;
 *      a name holding under GP_STEP_GPU_SHARE of the candidates' GPU time is out (a
 *      monitor's or compiler thread's ranges hold none) -- unless none holds any;
 *   2. a name whose ranges lie mostly (GP_STEP_INNER) inside another candidate's ranges
 *      on other threads, and that repeats more often than it, is a loop inside the
 *      steps, not the steps (a worker thread's iterations in the main thread's step);
 *   3. of those left, the most repeated; then the most GPU time; then (equals, as in a
 *      program with no GPU records, where a worker's loop repeats as often as the steps)
 *      the one with ranges on the process's main thread (the training loop's: a worker,
 *      prefetcher or monitor is another thread), then the most wall time inside its
 *      ranges, then the first range seen (by start), never the thread ids' order (the
 *      old tie-break, the first in (thread, start) order, took a worker numbered below
 *      the main thread).
 * With one candidate (the usual case, or GPUPROF_STEP_RANGE) it is the steps. */
#define GP_STEP_GPU_SHARE 0.10
#define GP_STEP_INNER     0.5
#define GP_STEP_CANDS     16   /* the most repeated names weighed (2. is quadratic) */
#define GP_STEP_SAMPLES   1024 /* ranges of a name sampled for 2. */

typedef struct cand {
	uint32_t name;
	uint64_t count, gpu_ns;
	uint64_t wall_ns, first; /* inside its ranges; its first range's start */
	bool main;               /* a range on the process's main thread (tid = pid) */
	bool out;
	VEC(uint64_t) iv; /* its ranges: start, end, ... by start (the weighed ones) */
} cand_t;
typedef VEC(cand_t) cands_t;

static bool step_candidate(const rank_data_t *d, const range_t *rg)
{
	/* steps are the program's own outermost ranges, not a library's (NCCL and others
	 * annotate their calls in their own NVTX domains), and have a name */
	return rg->depth == 0 && rg->domain == 0 && gp_symtab_str(&d->sym, rg->name) &&
	       (!d->want_step[0] || !strcmp(gp_rd_str(d, rg->name), d->want_step));
}

/* Every candidate name with its count; idx: name + 1 -> index + 1 into c. */
static void count_candidates(const rank_data_t *d, cands_t *c, u64map_t *idx)
{
	for (size_t i = 0; i < d->ranges.n; i++) {
		const range_t *rg = &d->ranges.v[i];
		uint64_t k;
		if (!step_candidate(d, rg))
			continue;
		if (!u64map_get(idx, (uint64_t)rg->name + 1, &k)) {
			cand_t n = {.name = rg->name, .first = rg->start};
			size_t had = c->n;
			VEC_PUSH(*c, n);
			if (c->n == had)
				continue;
			k = c->n;
			u64map_put(idx, (uint64_t)rg->name + 1, k);
		}
		cand_t *x = &c->v[k - 1];
		x->count++;
		x->wall_ns += rg->end > rg->start ? rg->end - rg->start : 0;
		x->first = rg->start < x->first ? rg->start : x->first;
		x->main |= d->recorder_pid && rg->tid == d->recorder_pid;
	}
}

/* Between names equally repeated (and with as much GPU time): < 0 when x is the steps
 * rather than y (3.'s last rules) */
static int cmp_cand_tie(const cand_t *x, const cand_t *y)
{
	if (x->main != y->main)
		return x->main ? -1 : 1;
	if (x->wall_ns != y->wall_ns)
		return x->wall_ns > y->wall_ns ? -1 : 1;
	if (x->first != y->first)
		return x->first < y->first ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

static int cmp_cand_count(const void *a, const void *b)
{
	const cand_t *x = a, *y = b;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return cmp_cand_tie(x, y);
}

/* Of the outermost ranges at[0..n) (indices into d->ranges, in its (thread, start)
 * order; a thread's outermost ranges never overlap), the one open on thread tid at ts. */
static const range_t *open_of(const rank_data_t *d, const size_t *at, size_t n, uint32_t tid,
                              uint64_t ts)
{
	size_t lo = 0, hi = n; /* the first range after (tid, ts) */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const range_t *rg = &d->ranges.v[at[mid]];
		if (rg->tid < tid || (rg->tid == tid && rg->start <= ts))
			lo = mid + 1;
		else
			hi = mid;
	}
	const range_t *rg = lo ? &d->ranges.v[at[lo - 1]] : NULL;
	return rg && rg->tid == tid && ts <= rg->end ? rg : NULL;
}

/* 1.: each weighed candidate's GPU time, from the launch call's thread and time. */
static void candidate_gpu(const rank_data_t *d, cands_t *c, const u64map_t *idx)
{
	VEC(size_t) top = {0};
	uint64_t k;
	for (size_t i = 0; i < d->ranges.n; i++)
		if (step_candidate(d, &d->ranges.v[i]) &&
		    u64map_get(idx, (uint64_t)d->ranges.v[i].name + 1, &k))
			VEC_PUSH(top, i);
	for (size_t i = 0; i < d->kerns.n && top.n; i++) {
		const kern_t *kr = &d->kerns.v[i];
		const api_t *a = gp_rd_launch(d, kr);
		if (!a)
			continue;
		const range_t *rg = open_of(d, top.v, top.n, a->tid, a->start);
		if (rg && u64map_get(idx, (uint64_t)rg->name + 1, &k))
			c->v[k - 1].gpu_ns += kr->dur;
	}
	VEC_FREE(top);
}

/* The share of b's ranges (up to GP_STEP_SAMPLES of them, evenly spaced) that a's ranges
 * cover, by time. Both sorted by start; a's may overlap one another (several threads). */
static double covered_share(const cand_t *a, const cand_t *b)
{
	size_t na = a->iv.n / 2, nb = b->iv.n / 2;
	size_t stride = nb > GP_STEP_SAMPLES ? nb / GP_STEP_SAMPLES : 1;
	double all = 0, in = 0;
	for (size_t j = 0; j < nb; j += stride) {
		uint64_t s = b->iv.v[2 * j], e = b->iv.v[2 * j + 1], at = s;
		size_t lo = 0, hi = na; /* the first of a's ranges starting after s */
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (a->iv.v[2 * mid] <= s)
				lo = mid + 1;
			else
				hi = mid;
		}
		/* what a covers of [s, e): the one before (it may reach in), then those in it */
		for (size_t i = lo ? lo - 1 : 0; i < na && a->iv.v[2 * i] < e && at < e; i++) {
			uint64_t from = a->iv.v[2 * i] > at ? a->iv.v[2 * i] : at;
			uint64_t to = a->iv.v[2 * i + 1] < e ? a->iv.v[2 * i + 1] : e;
			if (to > from)
				in += (double)(to - from), at = to;
		}
		all += (double)(e - s);
	}
	return all > 0 ? in / all : 0;
}

/* 1. and 2. over the weighed candidates c[0..n) (most repeated first). */
static void weigh_candidates(const rank_data_t *d, cand_t *c, size_t n)
{
	uint64_t total = 0, k;
	u64map_t idx = {0};
	for (size_t i = 0; i < n; i++)
		u64map_put(&idx, (uint64_t)c[i].name + 1, i + 1);
	cands_t view = {.v = c, .n = n, .cap = n};
	candidate_gpu(d, &view, &idx);
	for (size_t i = 0; i < n; i++)
		total += c[i].gpu_ns;
	for (size_t i = 0; i < n; i++)
		c[i].out = total && (double)c[i].gpu_ns < GP_STEP_GPU_SHARE * (double)total;
	for (size_t i = 0; i < d->ranges.n; i++) {
		const range_t *rg = &d->ranges.v[i];
		if (step_candidate(d, rg) && u64map_get(&idx, (uint64_t)rg->name + 1, &k) &&
		    !c[k - 1].out) {
			VEC_PUSH(c[k - 1].iv, rg->start);
			VEC_PUSH(c[k - 1].iv, rg->end);
		}
	}
	u64map_free(&idx);
	for (size_t i = 0; i < n; i++) /* several threads' ranges of one name interleave */
		if (c[i].iv.n > 2)
			qsort(c[i].iv.v, c[i].iv.n / 2, 2 * sizeof(uint64_t), cmp_u64);
	bool inner[GP_STEP_CANDS] = {false};
	for (size_t b = 0; b < n; b++)
		for (size_t a = 0; a < n && !c[b].out && !inner[b]; a++)
			inner[b] = a != b && !c[a].out && c[a].count < c[b].count &&
			           covered_share(&c[a], &c[b]) >= GP_STEP_INNER;
	size_t left = 0;
	for (size_t i = 0; i < n; i++)
		left += !c[i].out && !inner[i];
	for (size_t i = 0; i < n && left; i++) /* all nested in one another: weigh all */
		c[i].out = c[i].out || inner[i];
}

/* The steps' name among the candidates (3.), and whether the most repeated was passed. */
static const cand_t *choose_candidate(const cand_t *c, size_t n)
{
	const cand_t *best = NULL;
	for (size_t i = 0; i < n; i++) {
		const cand_t *x = &c[i];
		if (x->out || x->count < 2)
			continue;
		if (!best || x->count > best->count ||
		    (x->count == best->count &&
		     (x->gpu_ns > best->gpu_ns ||
		      (x->gpu_ns == best->gpu_ns && cmp_cand_tie(x, best) < 0))))
			best = x;
	}
	return best;
}

/* The loops other threads run beside the steps: every outermost range, on a thread
 * other than the steps', of a candidate name repeated there (a thread with a loop of its
 * own runs its own work: worker threads on their streams, a prefetcher). Threads with no
 * range of their own (PyTorch's autograd threads) work for the step that is open. */
static void side_loops(rank_data_t *d, const cands_t *c, uint32_t steps)
{
	u64map_t idx = {0};
	uint64_t k;
	for (size_t i = 0; i < c->n; i++)
		if (c->v[i].count >= 2 && c->v[i].name != steps)
			u64map_put(&idx, (uint64_t)c->v[i].name + 1, i + 1);
	for (size_t i = 0; i < d->ranges.n && idx.n; i++) {
		const range_t *rg = &d->ranges.v[i];
		if (rg->tid != d->step_tid && step_candidate(d, rg) &&
		    u64map_get(&idx, (uint64_t)rg->name + 1, &k))
			VEC_PUSH(d->side_loops, i);
	}
	u64map_free(&idx);
}

/* Was a call made on thread tid at ts inside one of the side loops' ranges? */
static bool in_side_loop(const rank_data_t *d, uint32_t tid, uint64_t ts)
{
	return open_of(d, d->side_loops.v, d->side_loops.n, tid, ts) != NULL;
}

static size_t nvtx_steps(gp_rank_t *r, rank_data_t *d)
{
	cands_t c = {0};
	u64map_t idx = {0};
	uint64_t c2 = 0, k;
	count_candidates(d, &c, &idx);
	u64map_free(&idx);
	if (c.n)
		qsort(c.v, c.n, sizeof(cand_t), cmp_cand_count);
	for (size_t i = 0; i < c.n; i++)
		c2 += c.v[i].count >= 2;
	size_t weighed = c2 < GP_STEP_CANDS ? c2 : GP_STEP_CANDS;
	if (weighed > 1)
		weigh_candidates(d, c.v, weighed);
	const cand_t *best = choose_candidate(c.v, weighed);
	uint32_t name = best ? best->name : 0;
	uint64_t bestn = best ? best->count : 0;
	char passed[160] = "";
	if (best && best->count < c.v[0].count)
		snprintf(passed, sizeof(passed), "; not '%s' (%llu times: %s)",
		         gp_rd_str(d, c.v[0].name), (unsigned long long)c.v[0].count,
		         c.v[0].iv.n ? "inside it on another thread" : "little of the GPU work");
	for (size_t i = 0; i < c.n; i++)
		VEC_FREE(c.v[i].iv);
	u64map_t per_tid = {0};
	uint64_t tid_n = 0;
	for (size_t i = 0; i < d->ranges.n && bestn >= 2; i++) {
		const range_t *rg = &d->ranges.v[i];
		if (rg->depth || rg->domain || rg->name != name)
			continue;
		step_t s = {.start = rg->start, .end = rg->end};
		VEC_PUSH(d->steps, s);
		k = 0;
		u64map_get(&per_tid, (uint64_t)rg->tid + 1, &k);
		u64map_put(&per_tid, (uint64_t)rg->tid + 1, ++k);
		if (k > tid_n)
			tid_n = k, d->step_tid = rg->tid;
	}
	u64map_free(&per_tid);
	if (bestn >= 2)
		side_loops(d, &c, name);
	VEC_FREE(c);
	if (bestn < 2)
		return 0;
	snprintf(r->steps.name, sizeof(r->steps.name), "%s", gp_rd_str(d, name));
	snprintf(r->steps.source, sizeof(r->steps.source), "nvtx");
	gp_text_setf(&r->steps.how, GP_STEPS_HOW, "NVTX range '%s' (%llu times%s)", r->steps.name,
	             (unsigned long long)bestn, passed);
	return d->steps.n;
}

/* The optimizer whose step() returned most often (the first of equals: in a GAN both
 * step once an iteration); -1 when none returned twice. */
static int step_optimizer(rank_data_t *d, size_t *count)
{
	size_t cnt[256] = {0}, best = 0;
	int who = -1;
	if (d->opt_ends.n)
		qsort(d->opt_ends.v, d->opt_ends.n, sizeof(uint64_t), cmp_u64);
	for (size_t i = 0; i < d->opt_ends.n; i++)
		cnt[d->opt_ends.v[i] & 0xff]++;
	for (int k = 0; k < 256; k++)
		if (cnt[k] > best)
			best = cnt[k], who = k;
	*count = best;
	return best >= 2 ? who : -1;
}

/* Does some step (an NVTX range, d->steps) hold a return of the optimizer's step()? True
 * where the program has no optimizer records. */
static bool encloses_optimizer(rank_data_t *d)
{
	if (!d->opt_ends.n)
		return true;
	if (d->steps.n)
		qsort(d->steps.v, d->steps.n, sizeof(step_t), cmp_step);
	/* a few hundred of the returns are enough to tell, each found by bisection */
	for (size_t i = 0; i < d->opt_ends.n && i < 256; i++) {
		uint64_t t = d->opt_ends.v[i] >> 8;
		size_t lo = 0, hi = d->steps.n;
		while (lo < hi) { /* the first step starting after t */
			size_t mid = (lo + hi) / 2;
			if (d->steps.v[mid].start <= t)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo && d->steps.v[lo - 1].end >= t)
			return true;
	}
	return false;
}

/* Steps from optimizer.step(): each runs from the previous return of the step
 * optimizer's step() to its own (the first from the program's start). */
static size_t optimizer_steps(gp_rank_t *r, rank_data_t *d)
{
	size_t count;
	int who = step_optimizer(d, &count);
	if (who < 0)
		return 0;
	uint64_t prev = d->start_ts ? d->start_ts : d->first_ts;
	for (size_t i = 0; i < d->opt_ends.n; i++) {
		if ((int)(d->opt_ends.v[i] & 0xff) != who)
			continue;
		step_t s = {.start = prev, .end = d->opt_ends.v[i] >> 8};
		if (s.end > s.start)
			VEC_PUSH(d->steps, s);
		prev = s.end;
	}
	if (d->steps.n < 2) {
		d->steps.n = 0;
		return 0;
	}
	/* the first step runs from the program's start only as far as the record goes: what
	 * came before the first step's own work is start-up (DESIGN.md rule 9). Its start is
	 * its end less the median step of the others */
	if (d->steps.n >= 3) {
		double *p = malloc((d->steps.n - 1) * sizeof(double));
		if (p) {
			for (size_t i = 1; i < d->steps.n; i++)
				p[i - 1] = (double)(d->steps.v[i].end - d->steps.v[i].start);
			uint64_t med = (uint64_t)gp_median(p, d->steps.n - 1);
			step_t *s0 = &d->steps.v[0];
			if (s0->end - s0->start > med)
				s0->start = s0->end - med;
			free(p);
		}
	}
	snprintf(r->steps.name, sizeof(r->steps.name), "optimizer.step()");
	snprintf(r->steps.source, sizeof(r->steps.source), "optimizer");
	gp_text_setf(&r->steps.how, GP_STEPS_HOW,
	             "PyTorch optimizer.step() returns (optimizer %d of %u, %zu calls)", who,
	             r->torch.nopt ? r->torch.nopt : 1, count);
	return d->steps.n;
}

/* PyTorch's own view of the steps, whatever the steps came from: how many times the
 * step optimizer returned and the median time between returns after warm-up (to set
 * beside NVTX steps), and the allocator's growth per step. */
static void torch_steps(gp_rank_t *r, rank_data_t *d)
{
	size_t count;
	int who = step_optimizer(d, &count);
	unsigned w = d->warmup;
	if (who >= 0) {
		double *v = malloc(count * sizeof(double));
		size_t n = 0, k = 0;
		uint64_t prev = 0;
		for (size_t i = 0; v && i < d->opt_ends.n; i++) {
			if ((int)(d->opt_ends.v[i] & 0xff) != who)
				continue;
			uint64_t t = d->opt_ends.v[i] >> 8;
			if (k++ >= w && k > 1 && t > prev)
				v[n++] = (double)(t - prev) / 1e6;
			prev = t;
		}
		r->torch.opt_steps = (unsigned)count;
		r->torch.opt_period_median_ms = n ? gp_median(v, n) : 0;
		free(v);
	}
	/* growth: from the first sample after warm-up to the last, per optimizer step */
	size_t m = d->torch_mem.n / 2, first = m;
	const uint64_t *a = d->torch_mem.v;
	r->torch.nmem_steps = (unsigned)m;
	for (size_t i = 0; i < m && first == m; i++)
		if (a[2 * i] > w)
			first = i;
	if (first + 1 < m && a[2 * (m - 1)] > a[2 * first])
		r->torch.growth_per_step = ((double)a[2 * m - 1] - (double)a[2 * first + 1]) /
		                           (double)(a[2 * (m - 1)] - a[2 * first]);
	r->torch.opt_bytes = r->torch.opt_device_bytes = 0;
	for (unsigned i = 0; i < r->torch.nopt && i < 8; i++) {
		r->torch.opt_bytes += r->torch.opt[i].bytes;
		r->torch.opt_device_bytes += r->torch.opt[i].device_bytes;
	}
}

static size_t profiler_steps(gp_rank_t *r, rank_data_t *d)
{
	uint64_t open = 0;
	if (d->prof.n)
		qsort(d->prof.v, d->prof.n, sizeof(uint64_t), cmp_u64);
	for (size_t i = 0; i < d->prof.n; i++) {
		uint64_t t = d->prof.v[i] >> 1;
		if (d->prof.v[i] & 1) {
			open = t;
		} else if (open) {
			step_t s = {.start = open, .end = t};
			VEC_PUSH(d->steps, s);
			open = 0;
		}
	}
	if (d->steps.n < 2) {
		d->steps.n = 0;
		return 0;
	}
	snprintf(r->steps.name, sizeof(r->steps.name), "cudaProfilerStart/Stop");
	snprintf(r->steps.source, sizeof(r->steps.source), "profiler");
	gp_text_setf(&r->steps.how, GP_STEPS_HOW, "cudaProfilerStart/Stop windows (%zu)",
	             d->steps.n);
	return d->steps.n;
}

/* ---- steps from the repetition of the launch sequence ---- */

typedef struct tok {
	uint64_t t, t_end; /* launch call start and end (GPU start/end when unmatched) */
	uint64_t order;    /* correlation id: grows with every API call of the process */
	uint32_t tok;
} tok_t;

static int cmp_tok_order(const void *a, const void *b)
{
	const tok_t *x = a, *y = b;
	if (x->order != y->order)
		return x->order < y->order ? -1 : 1;
	return x->t < y->t ? -1 : x->t > y->t;
}

typedef struct pos {
	uint32_t tok;
	uint32_t at;
} pos_t;

static int cmp_pos(const void *a, const void *b)
{
	const pos_t *x = a, *y = b;
	if (x->tok != y->tok)
		return x->tok < y->tok ? -1 : 1;
	return x->at < y->at ? -1 : x->at > y->at;
}

/* Candidate periods: the median distance between consecutive occurrences of each
 * launch seen three times or more (a launch made once per step has the step's). */
static size_t candidate_periods(const tok_t *s, size_t n, uint64_t *cand, size_t max)
{
	pos_t *p = malloc(n * sizeof(*p));
	uint64_t *gaps = malloc(n * sizeof(*gaps));
	size_t nc = 0;
	if (!p || !gaps)
		goto out;
	for (size_t i = 0; i < n; i++)
		p[i] = (pos_t){s[i].tok, (uint32_t)i};
	qsort(p, n, sizeof(*p), cmp_pos);
	for (size_t i = 0; i < n;) {
		size_t j = i, ng = 0;
		while (j < n && p[j].tok == p[i].tok)
			j++;
		for (size_t k = i + 1; k < j; k++)
			gaps[ng++] = p[k].at - p[k - 1].at;
		if (ng >= 2) {
			uint64_t g = gp_median_u64(gaps, ng);
			bool seen = false;
			for (size_t c = 0; c < nc && !seen; c++)
				seen = cand[c] == g;
			if (!seen && g >= 2 && g * 3 <= n && nc < max)
				cand[nc++] = g;
		}
		i = j;
	}
out:
	free(p);
	free(gaps);
	return nc;
}

/* Share of launches in the steady state (past the first quarter) equal to the one P
 * launches later. */
static double repeat_share(const tok_t *s, size_t n, size_t P)
{
	size_t from = n / 4, match = 0, tot = 0;
	for (size_t i = from; i + P < n; i++, tot++)
		match += s[i].tok == s[i + P].tok;
	return tot ? (double)match / (double)tot : 0;
}

static size_t kernel_steps(gp_rank_t *r, rank_data_t *d)
{
	size_t n = d->kerns.n, nst = 0;
	if (n < 16)
		return 0;
	tok_t *s = malloc(n * sizeof(*s));
	uint64_t cand[256];
	uint64_t *g = NULL;
	if (!s)
		return 0;
	for (size_t i = 0; i < n; i++) {
		const kern_t *k = &d->kerns.v[i];
		const api_t *a = gp_rd_launch(d, k);
		s[i].t = a ? a->start : k->start;
		s[i].t_end = a ? a->start + a->dur : k->start + k->dur;
		s[i].order = k->corr ? k->corr : UINT64_MAX;
		s[i].tok = k->kind == 0 ? k->name << 2 : (uint32_t)k->copykind << 2 | k->kind;
	}
	qsort(s, n, sizeof(*s), cmp_tok_order);
	size_t nc = candidate_periods(s, n, cand, sizeof(cand) / sizeof(cand[0]));
	double best = 0, share[256];
	for (size_t c = 0; c < nc; c++)
		if ((share[c] = repeat_share(s, n, (size_t)cand[c])) > best)
			best = share[c];
	size_t P = 0;
	for (size_t c = 0; c < nc; c++) /* the smallest period as good as the best */
		if (share[c] >= best - 0.02 && (!P || cand[c] < P))
			P = (size_t)cand[c];
	if (best < 0.8 || !P)
		goto out;
	/* a clean period in the steady state: the template, the first r0 from n/4 on with
	 * s[r0 + k] == s[r0 + P + k] for every k < P. One pass keeping the run of matches
	 * ending at i: comparing P launches afresh from each r0 was quadratic on a sequence
	 * that almost repeats (27 s for 50 000 launches a step, issue 51) */
	size_t r0 = SIZE_MAX;
	for (size_t i = n / 4, run = 0; i + P < n && r0 == SIZE_MAX; i++) {
		run = s[i].tok == s[i + P].tok ? run + 1 : 0;
		if (run == P)
			r0 = i + 1 - P;
	}
	if (r0 == SIZE_MAX)
		goto out;
	/* the phase: cut where the host paused longest before a launch (median over the
	 * periods from r0 on) -- between steps, where data loading and logging happen */
	size_t periods = (n - r0) / P, phase = 0;
	uint64_t best_gap = 0;
	g = malloc((periods + 1) * sizeof(uint64_t));
	if (!g)
		goto out;
	for (size_t j = 0; j < P; j++) {
		size_t ng = 0;
		for (size_t k = 0; k < periods; k++) {
			size_t i = r0 + k * P + j;
			if (i >= 1 && i < n && s[i].t >= s[i - 1].t)
				g[ng++] = s[i].t - s[i - 1].t;
		}
		uint64_t m = gp_median_u64(g, ng);
		if (m > best_gap)
			best_gap = m, phase = j;
	}
	size_t a0 = r0 + phase;
	if (a0 + P > n)
		a0 -= P;
	/* step boundaries: where the template's first launches recur (90 % of up to 32
	 * must match); the next boundary is looked for no sooner than 3/4 of a period on */
	size_t L = P < 32 ? P : 32, need = (L * 9 + 9) / 10, last = SIZE_MAX;
	for (size_t i = 0; i + L <= n;) {
		size_t m = 0;
		if (s[i].tok == s[a0].tok)
			for (size_t k = 0; k < L; k++)
				m += s[i + k].tok == s[a0 + k].tok;
		if (m < need) {
			i++;
			continue;
		}
		if (last != SIZE_MAX) {
			step_t st = {.start = s[last].t, .end = s[i - 1].t_end};
			VEC_PUSH(d->steps, st);
		}
		last = i;
		i += P - P / 4 ? P - P / 4 : 1;
	}
	if (last != SIZE_MAX && n - last >= P - P / 4) { /* the last one, if complete */
		size_t e = last + P <= n ? last + P - 1 : n - 1;
		step_t st = {.start = s[last].t, .end = s[e].t_end};
		VEC_PUSH(d->steps, st);
	}
	nst = d->steps.n;
	if (nst < 2) {
		d->steps.n = nst = 0;
		goto out;
	}
	snprintf(r->steps.name, sizeof(r->steps.name), "(kernel sequence)");
	snprintf(r->steps.source, sizeof(r->steps.source), "kernels");
	gp_text_setf(&r->steps.how, GP_STEPS_HOW,
	             "no step range: a sequence of %zu GPU launches repeats %zu times (%.0f%% of "
	             "launches in the steady state recur one period later; %s)",
	             P, nst, 100 * best,
	             best >= 0.95   ? "sure"
	             : best >= 0.88 ? "fairly sure"
	                            : "unsure");
out:
	free(g);
	free(s);
	return nst;
}

/* ---- per-step timing ---- */

/* The step whose launches include time t: [start_i, start_i+1), the last one up to its
 * end. Index + 1, 0 for none. */
static size_t step_of_launch(const rank_data_t *d, uint64_t t)
{
	size_t lo = 0, hi = d->steps.n;
	while (lo < hi) { /* first step starting after t */
		size_t mid = (lo + hi) / 2;
		if (d->steps.v[mid].start <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || (lo == d->steps.n && t > d->steps.v[lo - 1].end))
		return 0;
	return lo;
}

size_t gp_step_at(const rank_data_t *d, uint64_t t)
{
	size_t k = step_of_launch(d, t);
	return k && t <= d->steps.v[k - 1].end ? k : 0;
}

uint64_t gp_step_span_end(const rank_data_t *d, size_t i)
{
	return i + 1 < d->steps.n ? d->steps.v[i + 1].start : d->steps.v[i].end;
}

static void summarise(const double *v, size_t n, double *median, double *p95)
{
	*median = gp_median(v, n);
	*p95 = gp_quantile(v, n, 0.95);
}

/* The markers (GP_EV_STEP_MARK) placed at the end of each step (an outermost range, an
 * optimizer step): a running sum of their GPU deltas is a GPU clock at each marker; a
 * step's GPU time is that clock at its end minus at the previous step's end. skip[i]:
 * step i has a sample of its own already (kernel records), NULL: none has. */
static size_t marker_samples(const rank_data_t *d, size_t w, const bool *skip, double *gpu,
                             unsigned *gpu_i)
{
	size_t n = d->steps.n, ng = 0, nm = d->marks.n;
	double *clk = malloc((nm ? nm : 1) * sizeof(double));
	uint64_t *chain = malloc((nm ? nm : 1) * sizeof(uint64_t));
	if (!clk || !chain)
		goto out;
	uint64_t c = 0, sum = 0;
	for (size_t k = 0; k < nm; k++) { /* markers complete in the order they were placed */
		const mark_t *mk = &d->marks.v[k];
		if (mk->dropped) {
			clk[k] = -1;
			chain[k] = 0;
			continue;
		}
		if (!mk->chained)
			c++, sum = 0;
		else
			sum += mk->gpu;
		clk[k] = (double)sum;
		chain[k] = c;
	}
	/* the marker placed at step i's end: its ts is the range's end */
	u64map_t at = {0};
	for (size_t k = 0; k < nm; k++)
		u64map_put(&at, d->marks.v[k].ts, k + 1);
	for (size_t i = w > 1 ? w : 1; i < n; i++) {
		uint64_t a, b;
		if ((skip && skip[i]) || !u64map_get(&at, d->steps.v[i - 1].end, &a) ||
		    !u64map_get(&at, d->steps.v[i].end, &b))
			continue;
		a--, b--;
		if (clk[a] < 0 || clk[b] < 0 || chain[a] != chain[b] || clk[b] <= clk[a])
			continue;
		gpu_i[ng] = (unsigned)i;
		gpu[ng++] = (clk[b] - clk[a]) / 1e6;
	}
	u64map_free(&at);
out:
	free(clk);
	free(chain);
	return ng;
}

/* The traced steps' GPU times (gpu[0..nk), from kernel records) against the untraced
 * ones' (gpu[nk..ng), from step markers), in the same run: what tracing costs a step. */
static void traced_vs_untraced(gp_rank_t *r, const double *gpu, size_t nk, size_t ng)
{
	r->capture.ntraced = (unsigned)nk;
	r->capture.nuntraced = (unsigned)(ng - nk);
	gp_median_interval(gpu, nk, &r->capture.traced_median_ms, &r->capture.traced_lo_ms,
	                   &r->capture.traced_hi_ms);
	gp_median_interval(gpu + nk, ng - nk, &r->capture.untraced_median_ms,
	                   &r->capture.untraced_lo_ms, &r->capture.untraced_hi_ms);
	if (nk >= 3 && ng - nk >= 3 && r->capture.traced_median_ms > r->capture.untraced_median_ms)
		r->capture.tracer_ms_per_step =
		    r->capture.traced_median_ms - r->capture.untraced_median_ms;
}

/* v[0..nk) and v[nk..n), each in step order (their step numbers in vi), merged into one
 * run in step order, in place: the headline's consumers (the level shift, the kept samples,
 * the step shape) read its samples as step times in step order. False: out of memory. */
static bool merge_by_step(double *v, unsigned *vi, size_t nk, size_t n)
{
	double *m = malloc((n ? n : 1) * sizeof(double));
	unsigned *mi = malloc((n ? n : 1) * sizeof(unsigned));
	bool ok = m && mi;
	for (size_t a = 0, b = nk, j = 0; ok && j < n; j++) {
		size_t k = b >= n || (a < nk && vi[a] < vi[b]) ? a++ : b++;
		m[j] = v[k];
		mi[j] = vi[k];
	}
	if (ok) {
		memcpy(v, m, n * sizeof(double));
		memcpy(vi, mi, n * sizeof(unsigned));
	}
	free(m);
	free(mi);
	return ok;
}

/* Which steps were traced at kernel level: wholly inside a stretch of d->cuda_on. */
static void mark_traced(rank_data_t *d)
{
	for (size_t i = 0; i < d->steps.n; i++) {
		step_t *s = &d->steps.v[i];
		size_t k = gp_interval_of(d->cuda_on.v, d->cuda_on.n, s->start);
		s->traced = k && s->end <= d->cuda_on.v[2 * k - 1];
	}
}

/* The median of v[i] over the steps [a, b) with kernels of their own (nk[i] > 0) */
static double traced_median(const double *v, const double *nk, size_t a, size_t b, double *tmp)
{
	size_t m = 0;
	for (size_t i = a; i < b; i++)
		if (nk[i] > 0)
			tmp[m++] = v[i];
	return m >= GP_LIVE_SLOW_MIN_STEPS ? gp_median(tmp, m) : 0;
}

/* A launch's thread blocks, from its configuration (GP_LAUNCH_FMT); 0: not recorded */
static double launch_blocks(const rank_data_t *d, const kern_t *k)
{
	const char *s = k->kind == 0 && k->launch ? gp_rd_str(d, (uint32_t)k->launch) : NULL;
	unsigned x, y, z;
	return s && sscanf(s, "grid %u,%u,%u", &x, &y, &z) == 3 ? (double)x * y * z : 0;
}

/* The work per step either side of a shift's onset (stepshape.h: work_ratio): bytes
 * copied or set and thread blocks launched in each post-warm-up step with kernels of its
 * own, their medians before and from the onset on; the largest growth, where it is at
 * least GP_SHIFT_WORK_SHARE of the time's. A batch-size ramp makes the steps slower with
 * more work each: not the node's doing. The kernels a step are no measure of work where
 * their blocks are recorded: three kernels of a third of the blocks each (a compiled graph
 * fallen back to eager kernels) are the same work, slower (the tester, session 33: D13);
 * only where no launch's configuration is (collectors before issue 50). */
static void shift_work(gp_step_shift_t *sh, const rank_data_t *d, size_t w)
{
	size_t n = d->steps.n, at = sh->step;
	static const char *what[3] = {"kernels (their sizes not recorded)", "bytes copied or set",
	                              "thread blocks"};
	double *v[3], *tmp = calloc(n ? n : 1, sizeof(double));
	for (int m = 0; m < 3; m++)
		v[m] = calloc(n ? n : 1, sizeof(double));
	if (!tmp || !v[0] || !v[1] || !v[2] || at <= w || at >= n)
		goto out;
	for (size_t i = 0; i < d->kerns.n; i++) {
		const kern_t *k = &d->kerns.v[i];
		size_t s = step_of_launch(d, gp_rd_launch_ts(d, k));
		if (!s--)
			continue;
		v[0][s] += k->kind == 0;
		v[1][s] += k->kind ? (double)k->bytes : 0;
		v[2][s] += launch_blocks(d, k);
	}
	double g[3];
	for (int m = 0; m < 3; m++) {
		double b = traced_median(v[m], v[0], w, at, tmp),
		       a = traced_median(v[m], v[0], at, n, tmp);
		g[m] = b > 0 ? a / b : 0;
	}
	sh->kernels_ratio = g[0], sh->blocks_ratio = g[2];
	for (int m = g[2] > 0 ? 1 : 0; m < 3; m++) /* kernels: only where blocks are not known */
		if (g[m] >= 1 + GP_SHIFT_WORK_SHARE * (sh->ratio - 1) && g[m] > sh->work_ratio)
			sh->work_ratio = g[m],
			snprintf(sh->work_what, sizeof(sh->work_what), "%s", what[m]);
out:
	free(tmp);
	for (int m = 0; m < 3; m++)
		free(v[m]);
}

/* NVML's clock event reasons that slow the SM clock, as nvml.h names its bits (nvml.h:
 * nvmlClocksEventReason*; the ones that lower the clock under load) */
static const struct {
	uint32_t bit;
	const char *name;
} clock_reason[] = {
    {0x2, "application_clocks"}, {0x4, "sw_power_cap"}, {0x8, "hw_slowdown"},
    {0x20, "sw_thermal"},        {0x40, "hw_thermal"},  {0x80, "hw_power_brake"},
};
#define NREASONS (sizeof(clock_reason) / sizeof(clock_reason[0]))

/* The rank's own GPU among the NVML samples (the agent samples every GPU it sees, in
 * CUDA's order, as the kernels' device numbers are): the one it ran most on, as
 * gp_pass_gpu picks it; where it ran no kernels, only a lone GPU's samples are its own.
 * -1: none known. */
static int own_nvml_device(const rank_data_t *d)
{
	uint64_t per[8] = {0};
	bool seen[8] = {false};
	unsigned dev = 0, ndev = 0;
	for (size_t i = 0; i < d->kerns.n; i++)
		if (d->kerns.v[i].device < 8)
			per[d->kerns.v[i].device] += d->kerns.v[i].dur + 1;
	for (size_t i = 0; i < d->nvml.n; i++)
		if (d->nvml.v[i].device < 8 && !seen[d->nvml.v[i].device])
			seen[d->nvml.v[i].device] = true, ndev++;
	for (unsigned k = 1; k < 8; k++)
		if (per[k] > per[dev])
			dev = k;
	if (per[dev])
		return (int)dev;
	if (ndev != 1)
		return -1;
	while (dev < 7 && !seen[dev])
		dev++;
	return (int)dev;
}

/* NVML's SM clock either side of the onset (its medians over the samples before the onset
 * step's start and from it on), the GPU's utilisation's, and the throttle reasons that came
 * with the onset. Only the rank's own GPU's samples, and only those within the steps: the
 * agent samples from its own start, and an idle start-up at 210 MHz is no clock "before" a
 * shift (the tester, session 33: D3). A clock that fell where the GPU was used less
 * followed a GPU that waited for the host (its idle clock), it did not slow the steps. */
static void shift_clock(gp_step_shift_t *sh, const rank_data_t *d)
{
	sh->util_before = sh->util_after = -1;
	int dev = d->nvml.n && d->steps.n && sh->step < d->steps.n ? own_nvml_device(d) : -1;
	if (dev < 0)
		return;
	uint64_t t = d->steps.v[sh->step].start, t0 = d->steps.v[0].start,
	         t1 = gp_step_span_end(d, d->steps.n - 1);
	double *b = malloc(d->nvml.n * sizeof(double)), *a = malloc(d->nvml.n * sizeof(double));
	double *ub = malloc(d->nvml.n * sizeof(double)), *ua = malloc(d->nvml.n * sizeof(double));
	size_t nb = 0, na = 0, rb[NREASONS] = {0}, ra[NREASONS] = {0}, ib = 0, ia = 0;
	for (size_t i = 0; a && b && ua && ub && i < d->nvml.n; i++) {
		const nvml_sample_t *v = &d->nvml.v[i];
		if (!v->sm_mhz || v->device != (unsigned)dev || v->ts < t0 || v->ts > t1)
			continue;
		size_t *r = rb;
		bool idle = v->reasons & 0x1; /* nvmlClocksEventReasonGpuIdle */
		if (v->ts < t) {
			ib += idle;
			ub[nb] = v->util;
			b[nb++] = v->sm_mhz;
		} else {
			ua[na] = v->util;
			a[na++] = v->sm_mhz;
			ia += idle;
			r = ra;
		}
		for (size_t k = 0; k < NREASONS; k++)
			r[k] += !!(v->reasons & clock_reason[k].bit);
	}
	if (nb && na) {
		sh->clock_before_mhz = gp_median(b, nb), sh->clock_after_mhz = gp_median(a, na);
		sh->util_before = gp_median(ub, nb), sh->util_after = gp_median(ua, na);
		sh->idle_before = (double)ib / nb, sh->idle_after = (double)ia / na;
		for (size_t k = 0; k < NREASONS; k++)
			if ((double)ra[k] / na >= (double)rb[k] / nb + GP_SHIFT_REASON_SHARE)
				gp_cat(sh->clock_reasons, sizeof(sh->clock_reasons), "%s%s",
				       sh->clock_reasons[0] ? "," : "", clock_reason[k].name);
	}
	free(a);
	free(b);
	free(ua);
	free(ub);
}

/* A level shift in the headline's samples (stepshape.h), found on the kept ones; where
 * they are the medians of blocks of steps, its onset placed among the steps of the blocks
 * around the onset block (the first split there with the fewest on the wrong side of the
 * threshold), the counts before and after it in steps (the medians the blocks'); its step,
 * and when that step began after the program's start. */
static void level_shift(gp_rank_t *r, const rank_data_t *d, const double *head,
                        const unsigned *head_i, size_t nh)
{
	gp_step_shift_t *sh = &r->steps.shift;
	/* the search on the kept samples: every step's time where there are few, else the
	 * medians of GP_STEP_KEEP blocks of consecutive steps (keep_samples): evenly spaced
	 * point samples alias with a periodic step (10/30 ms alternating over 1024 steps read
	 * as "3.0x slower from step 513"), a block's median holds each phase (the tester,
	 * session 32) */
	size_t keep = r->steps.nms;
	if (keep != (nh <= GP_STEP_KEEP ? nh : GP_STEP_KEEP))
		return;
	/* ... but every step's time up to GP_SHIFT_RAW_MAX of them: the period in steps, the
	 * onset at the step (the tester, session 33: D7: 1030 steps, every 4th 3x, 1.5x from
	 * step 515, read "alternate every 2", period 2, onset 511 on the blocks) */
	bool raw = nh <= GP_SHIFT_RAW_MAX;
	if (raw)
		keep = nh;
	if (!gp_step_shift(raw ? head : r->steps.ms, keep, strcmp(r->steps.basis, "gpu") != 0, sh))
		return;
	if (nh > keep && sh->period > 1) { /* a period of blocks, said in steps */
		sh->blocks = (unsigned)keep, sh->block_period = sh->period;
		sh->period = (unsigned)((double)sh->period * (double)nh / (double)keep + 0.5);
	} else if (nh > keep)
		sh->blocks = (unsigned)keep;
	size_t h1 = sh->at, h0 = h1;
	if (nh > keep && keep > 1) { /* the onset among the steps of the blocks around it */
		h0 = (size_t)((uint64_t)(sh->at - 1) * nh / keep);
		h1 = (size_t)((uint64_t)(sh->at + 1) * nh / keep) - 1;
		if (h1 >= nh)
			h1 = nh - 1;
		double thr = GP_LIVE_SLOW_RATIO * sh->before_ms;
		size_t wrong = 0, best = SIZE_MAX, at = h1;
		for (size_t i = h0 + 1; i <= h1; i++)
			wrong += head[i] < thr; /* the split before h0 + 1: these are after it */
		for (size_t j = h0 + 1; j <= h1; j++) {
			if (head[j] >= thr && wrong < best)
				best = wrong, at = j;
			/* move the split past j */
			wrong += head[j] >= thr;
			wrong -= head[j] < thr;
		}
		h1 = at;
		/* counted in steps; the medians stay the blocks' (of alternating steps, the
		 * steps' own median is either phase's, by the count's parity) */
		sh->nbefore = (unsigned)h1, sh->nafter = (unsigned)(nh - h1);
	}
	sh->step = head_i[h1];
	for (unsigned i = 0; i < sh->nlevels; i++) { /* a staircase's levels' steps */
		size_t at =
		    nh > keep ? (size_t)((uint64_t)sh->level_at[i] * nh / keep) : sh->level_at[i];
		sh->level_step[i] =
		    sh->level_at[i] == sh->at ? sh->step : head_i[at < nh ? at : nh - 1];
	}
	uint64_t t0 = d->start_ts ? d->start_ts : d->first_ts;
	if (sh->step < d->steps.n && d->steps.v[sh->step].start >= t0)
		sh->at_s = (double)(d->steps.v[sh->step].start - t0) / 1e9;
	if (d->kerns.n)
		shift_work(sh, d, r->steps.warmup);
	shift_clock(sh, d);
}

/* The headline's samples the rank keeps (steps.ms, steps.no): all of them up to
 * GP_STEP_KEEP; else the medians of GP_STEP_KEEP blocks of consecutive steps, each at
 * its block's first step. Not evenly spaced steps: those alias with a periodic step (10/30
 * ms alternating, 1025 steps kept every 2nd one: all 10 ms; 1026: half of them 30 ms), and
 * what reads them (`gpuprof diff`, the slowdown search, the step shape) would see a
 * change where there is none. */
static void keep_samples(gp_rank_t *r, const double *head, const unsigned *head_i, size_t nh)
{
	free(r->steps.ms);
	free(r->steps.no);
	size_t keep = nh < GP_STEP_KEEP ? nh : GP_STEP_KEEP;
	r->steps.ms = malloc((keep ? keep : 1) * sizeof(double));
	r->steps.no = malloc((keep ? keep : 1) * sizeof(unsigned));
	for (size_t b = 0; r->steps.ms && r->steps.no && b < keep; b++) {
		size_t a = b * nh / keep, z = (b + 1) * nh / keep;
		r->steps.ms[b] = z - a > 1 ? gp_median(head + a, z - a) : head[a];
		r->steps.no[b] = head_i[a];
	}
	r->steps.nms = r->steps.ms && r->steps.no ? (unsigned)keep : 0;
	r->steps.nall = r->steps.nms ? (unsigned)nh : 0;
	/* the distribution (steps.h: q): all of them sorted, or quantiles of all of them */
	free(r->steps.q);
	r->steps.nq = 0;
	double *s = nh ? malloc(nh * sizeof(double)) : NULL;
	r->steps.q = s && keep ? malloc(keep * sizeof(double)) : NULL;
	if (r->steps.q) {
		memcpy(s, head, nh * sizeof(double));
		gp_sort_doubles(s, nh);
		for (size_t i = 0; i < keep; i++)
			r->steps.q[i] =
			    s[nh == keep ? i : (size_t)(((double)i + 0.5) * (double)nh / keep)];
		r->steps.nq = (unsigned)keep;
	}
	free(s);
}

static void throughput(gp_rank_t *r, const rank_data_t *d, const double *head, size_t nh);

static void step_timing(gp_rank_t *r, rank_data_t *d)
{
	size_t n = d->steps.n, w = r->steps.warmup;
	for (size_t i = 0; i < d->kerns.n; i++) {
		const kern_t *k = &d->kerns.v[i];
		const api_t *a = d->side_loops.n ? gp_rd_launch(d, k) : NULL;
		if (a && in_side_loop(d, a->tid, a->start))
			continue; /* another thread's loop's work, not the step's */
		size_t s = step_of_launch(d, gp_rd_launch_ts(d, k));
		if (s && k->start + k->dur > d->steps.v[s - 1].gpu_end)
			d->steps.v[s - 1].gpu_end = k->start + k->dur;
	}
	double *cpu = calloc(n, sizeof(double)), *per = calloc(n, sizeof(double)),
	       *gpu = calloc(n, sizeof(double));
	/* each sample's step number (capture windows and missing completions leave gaps) */
	unsigned *cpu_i = calloc(n, sizeof(unsigned)), *per_i = calloc(n, sizeof(unsigned)),
	         *gpu_i = calloc(n, sizeof(unsigned));
	bool *has = calloc(n ? n : 1, sizeof(bool)); /* a sample from kernel records */
	size_t nc = 0, np = 0, ng = 0;
	if (!cpu || !per || !gpu || !cpu_i || !per_i || !gpu_i || !has)
		goto out;
	for (size_t i = w; i < n; i++) {
		const step_t *s = &d->steps.v[i];
		cpu_i[nc] = (unsigned)i;
		cpu[nc++] = (double)(s->end - s->start) / 1e6;
		if (i + 1 < n) {
			per_i[np] = (unsigned)i;
			per[np++] = (double)(gp_step_span_end(d, i) - s->start) / 1e6;
		}
		if (i >= 1 && s->traced && d->steps.v[i - 1].traced && s->gpu_end &&
		    d->steps.v[i - 1].gpu_end && s->gpu_end > d->steps.v[i - 1].gpu_end) {
			gpu_i[ng] = (unsigned)i;
			gpu[ng++] = (double)(s->gpu_end - d->steps.v[i - 1].gpu_end) / 1e6;
			has[i] = true;
		}
	}
	/* the steps without kernel records of their own (all of them without mode cuda;
	 * those between capture windows): the step markers' GPU clock */
	size_t nk = ng, nmark = 0;
	if (d->marks.n)
		ng += nmark = marker_samples(d, w, has, gpu + ng, gpu_i + ng);
	for (size_t j = nk; j < ng; j++) /* each step's marker time, for the exports */
		d->steps.v[gpu_i[j]].mark_ms = (float)gpu[j];
	bool markers = ng > nk && !nk;
	traced_vs_untraced(r, gpu, nk, ng);
	/* the headline: the untraced steps, where the traced ones were measurably slower (the
	 * cost of tracing); where they were not, the steps are not alike across the run and
	 * every step counts */
	if (nk && ng > nk && r->capture.nuntraced >= 3 && r->capture.tracer_ms_per_step > 0) {
		memmove(gpu, gpu + nk, (ng - nk) * sizeof(double));
		memmove(gpu_i, gpu_i + nk, (ng - nk) * sizeof(unsigned));
		ng -= nk;
		markers = true;
	} else if (ng > nk && nk &&
	           r->capture.nuntraced < 3) { /* too few untraced: the traced alone */
		ng = nk;
	} else if (nk && ng > nk && !merge_by_step(gpu, gpu_i, nk, ng)) {
		ng = nk; /* both, in step order; out of memory: the traced alone */
	}
	/* Capture windows, and GPU times for the traced steps alone (no step marker between
	 * them: GPUPROF_STEP_MARKERS=0, a second CUDA context, markers skipped): those steps
	 * are the ones tracing slowed (the seed MLP's x1.7 on the H200), so the headline is
	 * the untraced steps' host period, and the traced GPU time is set against it. Only
	 * where that period is the GPU's too: the traced steps' period is their GPU time (the
	 * host keeps pace: a host that runs ahead launches faster than the GPU runs, and its
	 * period says nothing of the GPU), and the untraced periods' median is their mean
	 * (a loop that synchronises every tenth step has short periods and one long one: its
	 * median is its launches, not its throughput). Steps next to a traced one (a window's
	 * edge, the switch's cost) are left out. Elsewhere the traced GPU time stays. */
	bool untraced_period = false;
	double *u = nk && !nmark && d->ctrl.n ? malloc((np ? np : 1) * sizeof(double)) : NULL;
	unsigned *ui = u ? malloc((np ? np : 1) * sizeof(unsigned)) : NULL;
	if (u && ui) {
		size_t nu = 0, nt = 0;
		for (size_t j = 0; j < np; j++) /* the traced steps' periods first */
			if (has[per_i[j]])
				u[nt++] = per[j];
		bool paced = nt >= 3 && gp_median(u, nt) >= 0.9 * gp_median(gpu, nk);
		for (size_t j = 0; paced && j < np; j++) {
			size_t i = per_i[j];
			if (d->steps.v[i].traced || has[i] || (i && d->steps.v[i - 1].traced) ||
			    (i + 1 < n && d->steps.v[i + 1].traced))
				continue;
			u[nu] = per[j];
			ui[nu++] = per_i[j];
		}
		double med = nu >= 3 ? gp_median(u, nu) : 0, mean = nu >= 3 ? gp_mean(u, nu) : 0;
		if (nu >= 3 && med > 0.9 * mean && med < 1.1 * mean) {
			memcpy(per, u, nu * sizeof(double));
			memcpy(per_i, ui, nu * sizeof(unsigned));
			np = nu;
			untraced_period = true;
			r->capture.nuntraced = (unsigned)nu;
			gp_median_interval(per, nu, &r->capture.untraced_median_ms,
			                   &r->capture.untraced_lo_ms, &r->capture.untraced_hi_ms);
			r->capture.tracer_ms_per_step =
			    nk >= 3 && r->capture.traced_median_ms > r->capture.untraced_median_ms
			        ? r->capture.traced_median_ms - r->capture.untraced_median_ms
			        : 0;
		}
	}
	free(u);
	free(ui);
	/* found without a range of the program's: no CPU range to speak of */
	if (strcmp(r->steps.source, "kernels") && strcmp(r->steps.source, "optimizer"))
		summarise(cpu, nc, &r->steps.cpu_median_ms, &r->steps.cpu_p95_ms);
	summarise(per, np, &r->steps.period_median_ms, &r->steps.period_p95_ms);
	summarise(gpu, ng, &r->steps.gpu_median_ms, &r->steps.gpu_p95_ms);
	r->steps.ngpu = (unsigned)ng;
	r->steps.nperiod = (unsigned)np;
	size_t nhg = untraced_period ? 0 : ng; /* GPU samples the headline takes */
	double *head = nhg ? gpu : np ? per : cpu;
	size_t nh = nhg ? nhg : np ? np : nc;
	snprintf(r->steps.basis, sizeof(r->steps.basis), "%s",
	         nhg  ? "gpu"
	         : np ? "period"
	              : "cpu range");
	r->steps.gpu_from_markers = markers;
	const unsigned *head_i = nhg ? gpu_i : np ? per_i : cpu_i;
	for (size_t i = 0; i < n; i++) /* which steps the headline counted, and how timed */
		d->steps.v[i].head = GP_HEAD_NONE;
	for (size_t j = 0; j < nh; j++) {
		step_t *s = &d->steps.v[head_i[j]];
		s->head = nhg  ? (has[head_i[j]] ? GP_HEAD_KERNELS : GP_HEAD_MARKERS)
		          : np ? GP_HEAD_PERIOD
		               : GP_HEAD_CPU;
		s->head_ms = head[j];
	}
	keep_samples(r, head, head_i, nh);
	level_shift(r, d, head, head_i, nh);
	gp_rank_compact_steps(r);
	gp_median_interval(head, nh, &r->steps.median_ms, &r->steps.median_lo_ms,
	                   &r->steps.median_hi_ms);
	r->steps.p95_ms = gp_quantile(head, nh, 0.95);
	r->steps.p99_ms = gp_quantile(head, nh, 0.99);
	r->steps.mean_ms = gp_mean(head, nh);
	r->steps.cv = gp_cv(head, nh);
	throughput(r, d, head, nh);
out:
	free(cpu);
	free(per);
	free(gpu);
	free(cpu_i);
	free(per_i);
	free(gpu_i);
	free(has);
}

size_t gp_interval_of(const uint64_t *v, size_t n, uint64_t t)
{
	size_t lo = 0, hi = n / 2;
	while (lo < hi) { /* the first pair starting after t */
		size_t mid = (lo + hi) / 2;
		if (v[2 * mid] <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && t <= v[2 * lo - 1] ? lo : 0;
}

bool gp_in_gwin(const rank_data_t *d, uint64_t t)
{
	return !d->gwin.n || gp_interval_of(d->gwin.v, d->gwin.n, t) != 0;
}

/* When kernels were traced: the stretches between the capture switches (GP_EV_CONTROL)
 * that had cuda on, the first from the rank's start; one stretch over the whole run
 * without switches, where kernels were recorded at all. */
static void cuda_stretches(rank_data_t *d)
{
	d->cuda_on.n = 0;
	if (!d->ctrl.n) {
		if (d->kerns.n) {
			VEC_PUSH(d->cuda_on, d->first_ts);
			VEC_PUSH(d->cuda_on, UINT64_MAX);
		}
		return;
	}
	bool on = true;
	uint64_t since = d->first_ts;
	for (size_t i = 0; i <= d->ctrl.n; i += 2) {
		bool end = i == d->ctrl.n;
		uint64_t t = end ? UINT64_MAX : d->ctrl.v[i];
		bool now = !end && (d->ctrl.v[i + 1] & GP_MODE_CUDA) != 0;
		if (on && (!now || end) && t > since) {
			VEC_PUSH(d->cuda_on, since);
			VEC_PUSH(d->cuda_on, t);
		}
		if (!on && now)
			since = t;
		on = now;
	}
}

/* Programs one after another under one agent record into one file: no step spans the
 * moment one took over from the other (its start-up is no step of either). */
static size_t drop_across_processes(rank_data_t *d)
{
	size_t m = 0;
	for (size_t i = 0; i < d->steps.n; i++) {
		bool across = false;
		for (size_t k = 0; k < d->proc_changes.n && !across; k++)
			across = d->steps.v[i].start < d->proc_changes.v[k] &&
			         d->proc_changes.v[k] <= d->steps.v[i].end;
		if (!across)
			d->steps.v[m++] = d->steps.v[i];
	}
	d->steps.n = m;
	return m >= 2 ? m : (d->steps.n = 0);
}

/* When step i's work was done: its end on the host, or its GPU work's completion where
 * kernels were traced and later (a host that runs ahead ends its loop long before the
 * GPU). */
static uint64_t step_done(const rank_data_t *d, size_t i)
{
	const step_t *s = &d->steps.v[i];
	return s->gpu_end > s->end ? s->gpu_end : s->end;
}

/* The throughput's step: the post-warm-up steps' wall time, from the last warm-up step's
 * completion (the first step's start where there is no warm-up) to the last step's, over
 * their count; and whether the headline's steps are alike (a median describes neither a
 * bimodal loop's steps nor its throughput: issue 49). */
static void throughput(gp_rank_t *r, const rank_data_t *d, const double *head, size_t nh)
{
	size_t n = d->steps.n, w = r->steps.warmup;
	uint64_t begin = w ? step_done(d, w - 1) : d->steps.v[0].start, end = step_done(d, n - 1);
	if (n >= w + 2 && end > begin) {
		r->steps.mean_period_ms = (double)(end - begin) / 1e6 / (double)(n - w);
		r->steps.per_second = 1000 / r->steps.mean_period_ms;
	}
	/* on every step, in step order: not the kept medians of blocks (of 1024 steps whose
	 * every 3rd is slow, blocks of 2 read 'alternating, 66 % slow': the reviewer) */
	gp_step_shape(head, nh, r->steps.median_ms, r->steps.mean_period_ms, &r->steps.shape);
	/* a level shift is the shape (one truth for the text, JSON and CSV: the tester,
	 * session 33: D11, a clean shift read "drifting" in JSON, the text "then"), each side
	 * said by its own shape */
	gp_step_shape_t *sh = &r->steps.shape;
	const gp_step_shift_t *sf = &r->steps.shift;
	size_t at = sf->nbefore;
	if (!(sf->ratio > 0) || at == 0 || at >= nh)
		return;
	snprintf(sh->shape, sizeof(sh->shape), "shifted");
	sh->low_ms = sf->before_ms, sh->high_ms = sf->after_ms;
	sh->high_share = (double)(nh - at) / (double)nh;
	if (sf->nlevels > 2) { /* a staircase: its first level and its last, to the end (the
		                * reviewer, session 34: the largest rise alone left 22 ms of
		                * 10/15/22 unsaid); the text lists the levels */
		unsigned L = sf->nlevels, first = sf->step - sf->nbefore,
		         last = sf->step + sf->nafter;
		sh->low_ms = sf->level_ms[0], sh->high_ms = sf->level_ms[L - 1];
		if (last > first && sf->level_step[L - 1] >= first && sf->level_step[L - 1] < last)
			sh->high_share =
			    (double)(last - sf->level_step[L - 1]) / (double)(last - first);
		for (int k = 0; k < 2; k++) {
			snprintf(sh->phase[k], sizeof(sh->phase[k]), "alike");
			sh->phase_low_ms[k] = sh->phase_high_ms[k] = k ? sh->high_ms : sh->low_ms;
		}
		return;
	}
	for (int k = 0; k < 2; k++) {
		gp_step_shape_t side;
		const double *v = k ? head + at : head;
		size_t m = k ? nh - at : at;
		gp_step_shape(v, m, 0, 0, &side);
		bool groups = !strcmp(side.shape, "bimodal") || !strcmp(side.shape, "alternating");
		snprintf(sh->phase[k], sizeof(sh->phase[k]), "%s", groups ? side.shape : "alike");
		sh->phase_low_ms[k] = groups ? side.low_ms : k ? sf->after_ms : sf->before_ms;
		sh->phase_high_ms[k] = groups ? side.high_ms : sh->phase_low_ms[k];
	}
}

void gp_pass_steps(gp_rank_t *r, rank_data_t *d)
{
	size_t n = 0;
	d->steps.n = 0;
	cuda_stretches(d);
	if (r->torch.seen)
		torch_steps(r, d);
	if (d->steps_from == GP_STEPS_AUTO || d->steps_from == GP_STEPS_NVTX)
		n = nvtx_steps(r, d);
	if (n && d->steps_from == GP_STEPS_AUTO && !d->want_step[0] && !encloses_optimizer(d)) {
		/* the program's range holds none of its optimizer's steps (a range around
		 * data preparation, a warm-up loop): the optimizer's steps are the steps */
		size_t cnt;
		if (step_optimizer(d, &cnt) >= 0) {
			d->steps.n = n = 0;
			r->steps.name[0] = r->steps.source[0] = '\0';
			r->steps.how.s = NULL;
		}
	}
	if (!n && (d->steps_from == GP_STEPS_AUTO || d->steps_from == GP_STEPS_OPTIMIZER))
		n = optimizer_steps(r, d);
	if (!n && (d->steps_from == GP_STEPS_AUTO || d->steps_from == GP_STEPS_PROFILER))
		n = profiler_steps(r, d);
	if (!n && (d->steps_from == GP_STEPS_AUTO || d->steps_from == GP_STEPS_KERNELS))
		n = kernel_steps(r, d);
	if (!n)
		return;
	qsort(d->steps.v, n, sizeof(step_t), cmp_step);
	n = drop_across_processes(d);
	if (!n)
		return;
	unsigned warmup = d->warmup;
	if (warmup >= n)
		warmup = n > 1 ? 1 : 0;
	r->steps.n = (unsigned)n;
	r->steps.warmup = warmup;
	r->steps.n_post = (unsigned)(n - warmup);
	/* the last step the program started, from 0, for findings about how it ended */
	r->steps.last_step = (unsigned)n - 1;
	mark_traced(d);
	step_timing(r, d); /* and the throughput, with every step's time */
	d->win_lo = d->steps.v[warmup].start;
	d->win_hi = 0;
	for (size_t i = warmup; i < n; i++)
		if (d->steps.v[i].end > d->win_hi)
			d->win_hi = d->steps.v[i].end;
}

/* The share of the rank's recorded time (first to last record) inside cuda_on */
static double traced_pct(const rank_data_t *d)
{
	uint64_t lo = d->first_ts, hi = d->last_ts, in = 0;
	if (hi <= lo)
		return 0;
	for (size_t k = 0; k + 1 < d->cuda_on.n; k += 2) {
		uint64_t a = d->cuda_on.v[k] > lo ? d->cuda_on.v[k] : lo;
		uint64_t b = d->cuda_on.v[k + 1] < hi ? d->cuda_on.v[k + 1] : hi;
		if (b > a)
			in += b - a;
	}
	return 100.0 * (double)in / (double)(hi - lo);
}

/* Capture windows (GP_EV_CONTROL): CUDA activity exists only while cuda was on, so GPU
 * statistics cover the captured stretches of the post-warm-up steps (gwin), and the
 * per-step figures count the steps inside them. Without steps: the whole run. */
void gp_pass_capture(gp_rank_t *r, rank_data_t *d)
{
	d->gwin.n = 0;
	d->gpu_lo = d->win_lo;
	d->gpu_hi = d->win_hi;
	if (d->win_hi && !d->ctrl.n) { /* no switches: the post-warm-up steps */
		VEC_PUSH(d->gwin, d->win_lo);
		VEC_PUSH(d->gwin, d->win_hi);
	} else if (d->win_hi) { /* the post-warm-up steps, where traced */
		for (size_t k = 0; k + 1 < d->cuda_on.n; k += 2) {
			uint64_t a = d->cuda_on.v[k] > d->win_lo ? d->cuda_on.v[k] : d->win_lo;
			uint64_t b =
			    d->cuda_on.v[k + 1] < d->win_hi ? d->cuda_on.v[k + 1] : d->win_hi;
			if (b > a) {
				VEC_PUSH(d->gwin, a);
				VEC_PUSH(d->gwin, b);
			}
		}
		if (d->gwin.n) {
			d->gpu_lo = d->gwin.v[0];
			d->gpu_hi = d->gwin.v[d->gwin.n - 1];
		}
	}
	if (!d->ctrl.n)
		return;
	r->capture.window = true;
	r->capture.traced_pct = traced_pct(d);
	r->capture.steps = 0;
	if (d->win_hi && !d->gwin.n) { /* cuda never on in the steady state */
		d->gpu_lo = d->gpu_hi = 1;
		VEC_PUSH(d->gwin, 1);
		VEC_PUSH(d->gwin, 1);
		return;
	}
	for (size_t i = r->steps.warmup; i < d->steps.n; i++)
		if (d->steps.v[i].traced) {
			if (!r->capture.steps++)
				r->capture.first = (unsigned)i;
			r->capture.last = (unsigned)i;
		}
}

/* The integration's own time a step: the running total's rise from one return of the step
 * optimizer (the one returning most often, the first of equals: step_optimizer's rule) to
 * its next, past the warm-up (the first steps read the optimizer's state and start the
 * allocator history, once each). A GAN's critic stepping five times an iteration is
 * measured a critic step at a time, the headline's own unit; the generator's hooks fall in
 * one of its five. A step in which a capture window began or ended carries the switch
 * as well; the median leaves those few out. */
void gp_pass_own(gp_rank_t *r, rank_data_t *d)
{
	size_t n = d->opt_own.n, cnt[256] = {0}, best = 0, k = 0, seen = 0;
	unsigned who = 0;
	for (size_t i = 0; i < n; i++)
		cnt[d->opt_own.v[i] & 0xff]++;
	for (unsigned i = 0; i < 256; i++)
		if (cnt[i] > best)
			best = cnt[i], who = i;
	size_t skip = r->steps.warmup > 2 ? r->steps.warmup : 2;
	if (best < skip + 2)
		return;
	double *v = malloc(best * sizeof(*v));
	if (!v)
		return;
	uint64_t prev = 0;
	for (size_t i = 0; i < n; i++) {
		if ((d->opt_own.v[i] & 0xff) != who)
			continue;
		uint64_t t = d->opt_own.v[i] >> 8;
		/* a running total never falls: one that did is a damaged record */
		if (seen++ > skip && t >= prev)
			v[k++] = (double)(t - prev) / 1e3;
		prev = t;
	}
	if (k) {
		r->own.steps = (unsigned)k;
		r->own.optimizer = who;
		r->own.us_median = gp_median(v, k);
		r->own.us_p95 = gp_quantile(v, k, 0.95);
		/* a share of the headline's step where that step is this optimizer's step */
		bool same = !strcmp(r->steps.source, "optimizer") ||
		            (r->steps.n && best * 10 >= (size_t)r->steps.n * 9 &&
		             best * 10 <= (size_t)r->steps.n * 11);
		if (same && r->steps.median_ms > 0)
			r->own.pct = r->own.us_median / 10 / r->steps.median_ms;
	}
	free(v);
}
