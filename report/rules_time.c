/* Findings about time that is not the GPU's idle (findings.h): ranks sharing a GPU, the
 * straggler the other ranks wait for, communication not overlapped with compute, copies
 * from pageable memory, fp32 matrix work off the tensor cores, and a host that runs ahead
 * of the GPU (a warning about measurement). */
#include "config.h"
#include "findings.h"
#include "kernelclass.h"
#include "live.h"
#include "names.h"
#include "stats.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- gpu_shared ---- */

/* Ranks on one node that run on the same GPU (the same NVML UUID in their headers): each
 * gets a share of it, and their step times say more about the sharing than about the
 * program. Not sized: what a rank would run at alone is not in the capture. */
static bool same_gpu(const gp_rank_t *a, const gp_rank_t *b)
{
	return !strcmp(a->id.gpu_uuid, b->id.gpu_uuid) &&
	       !strcmp(gp_txt(a->id.node), gp_txt(b->id.node));
}

/* How many ranks share each rank's GPU, from one sort by (node, UUID): comparing every
 * pair took 10^10 comparisons on 100 000 ranks. */
struct shared_state {
	unsigned *order; /* the ranks with a GPU and steps, sorted */
	unsigned *count; /* by rank: how many share its GPU */
};

static int shared_cmp(const void *a, const void *b, void *job)
{
	const gp_rank_t *ranks = ((const gp_job_t *)job)->ranks;
	const gp_rank_t *x = &ranks[*(const unsigned *)a], *y = &ranks[*(const unsigned *)b];
	int c = strcmp(gp_txt(x->id.node), gp_txt(y->id.node));
	return c ? c : strcmp(x->id.gpu_uuid, y->id.gpu_uuid);
}

static void shared_release(void *p)
{
	struct shared_state *st = p;
	if (st) {
		free(st->order);
		free(st->count);
		free(st);
	}
}

static void *shared_prepare(const gp_job_t *job)
{
	struct shared_state *st = calloc(1, sizeof(*st));
	size_t n = job->nranks ? job->nranks : 1;
	unsigned k = 0;
	if (!st || !(st->order = calloc(n, sizeof(unsigned))) ||
	    !(st->count = calloc(n, sizeof(unsigned)))) {
		shared_release(st);
		return NULL;
	}
	for (unsigned i = 0; i < job->nranks; i++)
		if (job->ranks[i].id.gpu_uuid[0] && job->ranks[i].steps.nms)
			st->order[k++] = i;
	qsort_r(st->order, k, sizeof(unsigned), shared_cmp, (void *)job);
	for (unsigned a = 0, b; a < k; a = b) {
		for (b = a + 1; b < k && !shared_cmp(&st->order[a], &st->order[b], (void *)job);
		     b++)
			;
		for (unsigned x = a; x < b; x++)
			st->count[st->order[x]] = b - a;
	}
	return st;
}

static bool shared_size(const gp_rule_ctx_t *c, const gp_rank_t *r, unsigned i, gp_size_t *s)
{
	const struct shared_state *st = c->state;
	s->rank_by = st->count[i];
	s->score = 0.99; /* the first time finding: it explains the others' figures */
	return st->count[i] >= 2;
}

static void shared_describe(const gp_rule_ctx_t *c, gp_finding_t *f, const gp_rank_t *w,
                            const gp_size_t *s)
{
	const gp_job_t *job = c->job;
	char list[128] = "";
	for (unsigned k = 0, m = 0; k < job->nranks; k++)
		if (same_gpu(&job->ranks[k], w))
			gp_cat(list, sizeof(list), "%s%d", m++ ? ", " : "", job->ranks[k].id.rank);
	snprintf(f->title, sizeof(f->title), "%.0f ranks share one GPU on %s (ranks %s)",
	         s->rank_by, gp_txt(w->id.node), list);
	snprintf(f->evidence, sizeof(f->evidence),
	         "the rank files name the same GPU (%s) for ranks %s; their kernels run "
	         "interleaved on it, so each rank's step time includes the others' work",
	         w->id.gpu_uuid, list);
	snprintf(f->threshold, sizeof(f->threshold), "two or more ranks of a node on one GPU");
	snprintf(f->fix, sizeof(f->fix),
	         "Give each rank a GPU of its own (srun --gpus-per-task=1, or --gres=gpu:N with "
	         "one task per GPU; CUDA_VISIBLE_DEVICES=$SLURM_LOCALID) unless the sharing is "
	         "meant (MPS); then compare ranks only against ranks sharing alike.");
}

const gp_rule_t gp_rule_gpu_shared = {
    .id = "gpu_shared",
    .name = "ranks sharing a GPU",
    .tier = GP_F_TIME,
    .role = GP_ROLE_CAUSE,
    .saving_th = -1,
    .fires = "two or more ranks of a node run on one GPU (the same NVML UUID, the device their "
             "kernels ran on)",
    .saves = "none: not sized (a setup)",
    .advice = "Ranks shared a GPU: give each rank a GPU of its own (--gpus-per-task=1) unless "
              "the sharing is meant (MPS).",
    .prepare = shared_prepare,
    .release = shared_release,
    .size = shared_size,
    .describe = shared_describe,
};

/* ---- slowdown ---- */

/* The steps got slower at one step and stayed so to the end (steps.shift, found by the
 * steps pass: stepshape.h): the live view's slowdown, with its thresholds (common/live.h),
 * held against the whole run. Sized as what the slow steps cost over the run: had they
 * stayed at the median before, each post-warm-up step would have saved (after - before)
 * times the slow steps' share. */
enum { SLOWDOWN_RATIO, SLOWDOWN_BASE, SLOWDOWN_SLOW, SLOWDOWN_SHARE, SLOWDOWN_MISFIT };
static const gp_threshold_t slowdown_th[] = {
    [SLOWDOWN_RATIO] = {"ratio", GP_LIVE_SLOW_RATIO, "x",
                        "the median step from the onset on, of the median before it "
                        "(common/live.h GP_LIVE_SLOW_RATIO: the live view's slowdown)"},
    [SLOWDOWN_BASE] = {"min_before", GP_LIVE_SLOW_MIN_BASE, "steps",
                       "post-warm-up steps before the onset, at least (GP_LIVE_SLOW_MIN_BASE)"},
    [SLOWDOWN_SLOW] = {"min_slow", GP_LIVE_SLOW_MIN_STEPS, "steps",
                       "steps from the onset on, at least (GP_LIVE_SLOW_MIN_STEPS) ..."},
    [SLOWDOWN_SHARE] = {"slow_share", 100 * GP_SHIFT_MIN_AFTER, "%",
                        "... and this share of the steps (stepshape.h; the steps pass)"},
    [SLOWDOWN_MISFIT] = {"misfit", 100 * GP_SHIFT_MISFIT, "%",
                         "steps on the wrong side of the onset (slow before, fast after), of "
                         "all, at most: alternating or bimodal steps have some on every side "
                         "(stepshape.h; the steps pass)"},
};

static bool slowdown_holds(const gp_rank_t *r)
{
	const gp_step_shift_t *sh = &r->steps.shift;
	return sh->ratio > 0 && sh->before_ms > 0 && !(sh->work_ratio > 0) &&
	       sh->ratio >= gp_th(&gp_rule_slowdown, SLOWDOWN_RATIO) &&
	       sh->nbefore >= gp_th(&gp_rule_slowdown, SLOWDOWN_BASE) &&
	       sh->nafter >= gp_th(&gp_rule_slowdown, SLOWDOWN_SLOW);
}

/* A staircase said by its levels (the tester, session 33: D5): the first level against the
 * last, not the largest rise's two sides, which mix the levels after it */
static bool stairs(const gp_step_shift_t *sh)
{
	unsigned L = sh->nlevels;
	return L > 2 && L <= GP_SHIFT_MAX_LEVELS && sh->level_ms[0] > 0 &&
	       sh->level_step[1] > sh->step - sh->nbefore &&
	       sh->level_step[L - 1] < sh->step + sh->nafter;
}

static bool slowdown_size(const gp_rule_ctx_t *c, const gp_rank_t *r, unsigned i, gp_size_t *s)
{
	(void)c, (void)i;
	const gp_step_shift_t *sh = &r->steps.shift;
	if (!slowdown_holds(r))
		return false;
	s->ms = (sh->after_ms - sh->before_ms) * sh->nafter / (double)(sh->nbefore + sh->nafter);
	if (stairs(sh)) { /* each level's rise over the first, for its steps */
		unsigned first = sh->step - sh->nbefore, end = sh->step + sh->nafter,
		         L = sh->nlevels;
		s->ms = 0;
		for (unsigned k = 1; k < L; k++) {
			unsigned z = k + 1 < L ? sh->level_step[k + 1] : end;
			if (z > sh->level_step[k] && sh->level_ms[k] > sh->level_ms[0])
				s->ms +=
				    (sh->level_ms[k] - sh->level_ms[0]) * (z - sh->level_step[k]);
		}
		s->ms /= (double)(end - first);
	}
	s->step_ms = gp_step_of(r);
	return s->ms > 0;
}

/* What NVML said of the SM clock at a slowdown's onset (steps.c shift_clock): a fall with
 * the reasons NVML gave; a fall that came with the GPU's use falling (the GPU waited for
 * the host, and its clock went down as an idle GPU's does: a consequence, not the cause);
 * else a fall of no known reason. */
static void shift_clock_evidence(gp_finding_t *f, const gp_step_shift_t *sh)
{
	if (!(sh->clock_before_mhz > 0) ||
	    !(sh->clock_after_mhz < GP_SHIFT_CLOCK_FELL * sh->clock_before_mhz))
		return;
	gp_cat(f->evidence, sizeof(f->evidence),
	       "NVML's SM clock fell at the onset, %.0f MHz before, %.0f MHz after",
	       sh->clock_before_mhz, sh->clock_after_mhz);
	if (sh->clock_reasons[0])
		gp_cat(f->evidence, sizeof(f->evidence),
		       ", with NVML's throttle reasons %s from it on: the GPU slowed; ",
		       sh->clock_reasons);
	else if ((sh->util_before > 0 && sh->util_after >= 0 &&
	          sh->util_after < GP_SHIFT_UTIL_FELL * sh->util_before) ||
	         sh->idle_after >= sh->idle_before + GP_SHIFT_REASON_SHARE)
		gp_cat(
		    f->evidence, sizeof(f->evidence),
		    ", with the GPU's use (utilisation %.0f %% before, %.0f %% after; NVML's idle "
		    "reason in %.0f %% of the samples before, %.0f %% after) and no throttle "
		    "reason: the GPU waited more and its clock followed, a consequence of the "
		    "slowdown, not its cause; ",
		    sh->util_before, sh->util_after, 100 * sh->idle_before, 100 * sh->idle_after);
	else
		gp_cat(
		    f->evidence, sizeof(f->evidence),
		    ": the GPU slowed (throttling: power, temperature, or clocks set lower; NVML "
		    "gave no reason); ");
}

static void slowdown_describe(const gp_rule_ctx_t *c, gp_finding_t *f, const gp_rank_t *w,
                              const gp_size_t *s)
{
	(void)s;
	const gp_job_t *job = c->job;
	const gp_step_shift_t *sh = &w->steps.shift;
	char when[48] = "", list[160] = "";
	unsigned n = 0, lo = UINT32_MAX, hi = 0, listed = 0;
	if (sh->at_s >= 0)
		snprintf(when, sizeof(when), " (%.1f s into the run)", sh->at_s);
	for (unsigned k = 0; k < job->nranks; k++) {
		const gp_rank_t *r = &job->ranks[k];
		if (!slowdown_holds(r))
			continue;
		n++;
		lo = r->steps.shift.step < lo ? r->steps.shift.step : lo;
		hi = r->steps.shift.step > hi ? r->steps.shift.step : hi;
		if (listed < 8)
			gp_cat(list, sizeof(list), "%s%d", listed++ ? ", " : "", r->id.rank);
	}
	if (n > listed)
		gp_cat(list, sizeof(list), " and %u more", n - listed);
	const char *who = job->nranks == 1   ? "its only rank"
	                  : n == job->nranks ? "every rank"
	                  : n == 1           ? "one rank"
	                                     : "some ranks";
	if (stairs(sh)) {
		unsigned L = sh->nlevels, first = sh->step - sh->nbefore,
		         end = sh->step + sh->nafter;
		double l0 = sh->level_ms[0], l1 = sh->level_ms[L - 1];
		/* from the first level on which every level stays slow (10, 7, 12.5 ms: from the
		 * third; 10, 20, 10, 20: from the fourth) */
		unsigned from = L - 1;
		while (from > 1 && sh->level_ms[from - 1] >= GP_LIVE_SLOW_RATIO * l0)
			from--;
		snprintf(f->title, sizeof(f->title),
		         "Steps got %.1fx slower in %u levels from step %u on: %.3g ms at the end "
		         "against %.3g ms before (%s)",
		         l1 / l0, L, sh->level_step[from], l1, l0, who);
		snprintf(f->evidence, sizeof(f->evidence),
		         "rank %d on %s: median step (%s) %.3f ms over the %u post-warm-up steps "
		         "before step %u, %.3f ms over the last level's %u steps, from step %u to "
		         "the end (%.2fx); the largest rise at step %u%s (%.2fx); ",
		         w->id.rank, gp_txt(w->id.node), w->steps.basis, l0,
		         sh->level_step[1] - first, sh->level_step[1], l1,
		         end - sh->level_step[L - 1], sh->level_step[L - 1], l1 / l0, sh->step,
		         when, sh->ratio);
	} else {
		snprintf(f->title, sizeof(f->title),
		         "Steps got %.1fx slower from step %u on%s: %.3g ms against %.3g ms before "
		         "(%s)",
		         sh->ratio, sh->step, when, sh->after_ms, sh->before_ms, who);
		snprintf(f->evidence, sizeof(f->evidence),
		         "rank %d on %s: median step (%s) %.3f ms over the %u post-warm-up steps "
		         "before step %u, %.3f ms over the %u from it%s to the end (%.2fx); ",
		         w->id.rank, gp_txt(w->id.node), w->steps.basis, sh->before_ms, sh->nbefore,
		         sh->step, sh->after_ms, sh->nafter, when, sh->ratio);
	}
	if (sh->blocks)
		gp_cat(f->evidence, sizeof(f->evidence),
		       "found on the medians of %u blocks of its %u steps (over %u steps); ",
		       sh->blocks, w->steps.nall, GP_SHIFT_RAW_MAX);
	if (sh->period > 1 && sh->blocks) /* a period of blocks */
		gp_cat(f->evidence, sizeof(f->evidence),
		       "those medians alternate every %u, about %u steps: the search is on the "
		       "medians of groups of %u of them; ",
		       sh->block_period, sh->period, sh->block_period);
	else if (sh->period > 1)
		gp_cat(f->evidence, sizeof(f->evidence),
		       "its steps alternate every %u: the medians are those of blocks of %u "
		       "steps; ",
		       sh->period, sh->period);
	if (sh->nlevels > 2) { /* a staircase: each level */
		gp_cat(f->evidence, sizeof(f->evidence), "in %u levels: %.3g ms", sh->nlevels,
		       sh->level_ms[0]);
		for (unsigned i = 1; i < sh->nlevels && i < GP_SHIFT_MAX_LEVELS; i++)
			gp_cat(f->evidence, sizeof(f->evidence), ", %.3g ms from step %u",
			       sh->level_ms[i], sh->level_step[i]);
		gp_cat(f->evidence, sizeof(f->evidence), " (the largest rise said); ");
		if (sh->recovered && sh->recovered + 1 < sh->nlevels) /* a note: the finding is
		                                                         the last level's */
			gp_cat(f->evidence, sizeof(f->evidence),
			       "it had recovered, %.3g ms from step %u, and slowed again from step "
			       "%u; ",
			       sh->level_ms[sh->recovered], sh->level_step[sh->recovered],
			       sh->level_step[sh->recovered + 1]);
	}
	shift_clock_evidence(f, sh);
	if (sh->blocks_ratio > 0 && sh->kernels_ratio >= 1 + GP_SHIFT_WORK_SHARE * (sh->ratio - 1))
		gp_cat(f->evidence, sizeof(f->evidence),
		       "the kernels a step grew %.2fx, their thread blocks %.2fx: more, smaller "
		       "kernels for the same work (a compiled graph run as eager kernels, a fusion "
		       "lost), not more work; ",
		       sh->kernels_ratio, sh->blocks_ratio);
	if (job->nranks == 1)
		gp_cat(f->evidence, sizeof(f->evidence), "the job's only rank");
	else if (n == job->nranks)
		gp_cat(f->evidence, sizeof(f->evidence),
		       "every rank (%u) slowed, from steps %u to %u: a cause all ranks share (the "
		       "file system, the network, the input data) or one rank the others wait for "
		       "in their collectives",
		       n, lo, hi);
	else
		gp_cat(f->evidence, sizeof(f->evidence), "ranks that slowed: %s (%u of %u)", list,
		       n, job->nranks);
	snprintf(f->threshold, sizeof(f->threshold),
	         "the median step from one step on >= %gx the median of the >= %g steps before, "
	         "to the end (as the live view's slowdown)",
	         slowdown_th[SLOWDOWN_RATIO].value, slowdown_th[SLOWDOWN_BASE].value);
	snprintf(
	    f->fix, sizeof(f->fix),
	    "Steps that get slower at one moment and stay slower point at the node or the "
	    "program's state, not the model. Look at that time for: the GPU's clocks, "
	    "temperature and power (nvidia-smi -q -d PERFORMANCE, DCGM: thermal or power "
	    "throttling); another process on the GPU or the node's CPUs; host memory (a leak "
	    "paging, swap); %s. The HTML report's step plot shows the change.",
	    gp_words(w, "a DataLoader worker that died or stalled (fewer workers feeding the step)",
	             "the input pipeline's workers (tf.data, grain)",
	             "the threads that read the input"));
}

const gp_rule_t gp_rule_slowdown = {
    .id = "slowdown",
    .name = "steps got slower and stayed so",
    .tier = GP_F_TIME,
    .sized = true,
    .th = slowdown_th,
    .nth = GP_NTH(slowdown_th),
    .saving_th = -1,
    .fires =
        "the steps got slower at one step and stayed so to the end of the run: the median "
        "from that step on >= {ratio} the median of the post-warm-up steps before it (>= "
        "{min_before}), as the live view's slowdown (common/live.h); with >= {min_slow} and >= "
        "{slow_share} of the steps from it on, at most {misfit} of the steps on the wrong "
        "side of it (not alternating or bimodal), the last quarter still slow (not one "
        "that recovered), and each side one level (not a drift); the onset is the split "
        "with the fewest steps on the wrong side, its step and time said",
    .saves = "what the slow steps cost over the run: (the median after - the median before) "
             "times the slow steps' share, of the mean step",
    .advice = "The steps got slower at one moment and stayed so: look at the node at that time "
              "(GPU clocks and throttling, other processes, host memory, the input pipeline).",
    .size = slowdown_size,
    .describe = slowdown_describe,
};

/* ---- straggler ---- */

/* The straggler: the rank whose own work per step (step time less its exposed waits in
 * collectives) exceeds the other ranks'. In synchronous data parallelism every rank has
 * the straggler's step time; the others spend the difference waiting inside NCCL. The
 * baseline is the median of the other ranks (the other one, of two). */
enum { STRAGGLER_EXCESS };
static const gp_threshold_t straggler_th[] = {
    [STRAGGLER_EXCESS] = {"excess", 30, "%",
                          "own work above the other ranks' median (two ranks sharing one "
                          "H200 differed by 21 % with nothing planted)"},
};

struct straggler_state {
	double *work;      /* each rank's own work per step; < 0: it does not synchronise */
	double *others;    /* the work of those that do, sorted */
	unsigned n, nsync; /* how many: with work, that synchronise with steps */
};

static void straggler_release(void *p)
{
	struct straggler_state *st = p;
	if (st) {
		free(st->work);
		free(st->others);
		free(st);
	}
}

static void *straggler_prepare(const gp_job_t *job)
{
	struct straggler_state *st = calloc(1, sizeof(*st));
	size_t n = job->nranks ? job->nranks : 1;
	if (!st || !(st->work = calloc(n, sizeof(double))) ||
	    !(st->others = calloc(n, sizeof(double)))) {
		straggler_release(st);
		return NULL;
	}
	/* only ranks that wait for one another: a collective recorded (NCCL's kernels).
	 * Ranks that never synchronise are nobody's stragglers, whatever their speed. The
	 * median of the others, for every rank, from one sort (10 000 ranks) */
	for (unsigned i = 0; i < job->nranks; i++) {
		const gp_rank_t *r = &job->ranks[i];
		bool syncs = r->gpu.comm_ns > 0;
		st->work[i] =
		    r->steps.nms && syncs ? r->steps.median_ms - gp_exposed_comm_ms(r) : -1;
		st->nsync += r->steps.nms > 0 && syncs;
		if (st->work[i] >= 0)
			st->others[st->n++] = st->work[i];
	}
	gp_sort_doubles(st->others, st->n);
	return st;
}

/* the other ranks' median for rank i; 0: none */
static double straggler_base(const struct straggler_state *st, unsigned i)
{
	return st && st->nsync >= 2 && st->work[i] >= 0
	           ? gp_median_without(st->others, st->n, st->work[i])
	           : 0;
}

static bool straggler_size(const gp_rule_ctx_t *c, const gp_rank_t *r, unsigned i, gp_size_t *s)
{
	const struct straggler_state *st = c->state;
	double b = straggler_base(st, i);
	if (b <= 0 || st->work[i] - b < gp_th(&gp_rule_straggler, STRAGGLER_EXCESS) * b)
		return false;
	s->ms = st->work[i] - b;
	s->step_ms = c->job->step_median_ms; /* the job's step: every rank waits it out */
	return true;
}

static void straggler_describe(const gp_rule_ctx_t *c, gp_finding_t *f, const gp_rank_t *slow,
                               const gp_size_t *s)
{
	const struct straggler_state *st = c->state;
	double base = straggler_base(st, (unsigned)(slow - c->job->ranks));
	snprintf(f->title, sizeof(f->title),
	         "Straggler: rank %d on %s does %.0f%% more work per step than the others",
	         slow->id.rank, gp_txt(slow->id.node), 100 * s->ms / base);
	snprintf(f->evidence, sizeof(f->evidence),
	         "rank %d: %.2f ms of its own work per step (%s step %.2f ms, %.2f ms of it "
	         "exposed communication) against %.2f ms on the other ranks (%u)%s",
	         slow->id.rank, slow->steps.median_ms - gp_exposed_comm_ms(slow), slow->steps.basis,
	         slow->steps.median_ms, gp_exposed_comm_ms(slow), base, st->nsync - 1,
	         slow->gpu.comm_ns ? "; the others wait for it inside their collectives" : "");
	snprintf(f->threshold, sizeof(f->threshold),
	         "a rank's step time less its exposed communication >= %.0f%% of the other "
	         "ranks' median",
	         100 + straggler_th[STRAGGLER_EXCESS].value);
	snprintf(f->fix, sizeof(f->fix),
	         "Every collective waits for the slowest rank. Look at that rank's node (GPU "
	         "clocks and throttling in NVML, other jobs), its data shard, or uneven work.");
}

static const gp_rule_t *const straggler_effects[] = {&gp_rule_comm, &gp_rule_sync_stall,
                                                     &gp_rule_idle_gaps, NULL};
static const gp_rule_t *const straggler_own[] = {&gp_rule_idle_gaps, &gp_rule_sync_stall,
                                                 &gp_rule_input_bound, NULL};

const gp_rule_t gp_rule_straggler = {
    .id = "straggler",
    .name = "straggler",
    .tier = GP_F_TIME,
    .sized = true,
    .th = straggler_th,
    .nth = GP_NTH(straggler_th),
    .saving_th = -1,
    .fires = "among ranks that synchronise (NCCL kernels recorded), a rank's own work per step "
             "(step time less its exposed NCCL time) exceeds the other ranks' median by >= "
             "{excess}",
    .saves = "its excess per step, as a share of the job's median step",
    .advice = "Every collective waits for the slowest rank: look at its node, its data shard, "
              "or uneven work.",
    .prepare = straggler_prepare,
    .release = straggler_release,
    .size = straggler_size,
    .describe = straggler_describe,
    .explains = straggler_effects,
    .explains_own = straggler_own,
    .own_words = "the straggler's own time",
};

/* ---- comm_not_overlapped ---- */

enum { COMM_SHARE_MIN, COMM_OVERLAP_MAX, COMM_MIN_SAVING };
static const gp_threshold_t comm_th[] = {
    [COMM_SHARE_MIN] = {"comm_share", 10, "%",
                        "NCCL kernels' share of kernel time (communication and compute), at "
                        "least"},
    [COMM_OVERLAP_MAX] = {"overlap_max", 30, "%",
                          "the share of communication overlapped by compute, less than"},
    [COMM_MIN_SAVING] = {"min_saving", 1, "%", "exposed communication, of the step"},
};

static bool comm_size(const gp_rule_ctx_t *c, const gp_rank_t *r, unsigned i, gp_size_t *s)
{
	const gp_rule_t *rule = &gp_rule_comm;
	if (r->gpu.compute_ns + r->gpu.comm_ns == 0 ||
	    (double)r->gpu.comm_ns / (r->gpu.compute_ns + r->gpu.comm_ns) <
	        gp_th(rule, COMM_SHARE_MIN) ||
	    (double)r->gpu.overlap_ns / (r->gpu.comm_ns ? r->gpu.comm_ns : 1) >=
	        gp_th(rule, COMM_OVERLAP_MAX))
		return false;
	s->ms = gp_per_step_ms(r, r->gpu.comm_ns - (r->gpu.overlap_ns < r->gpu.comm_ns
	                                                ? r->gpu.overlap_ns
	                                                : r->gpu.comm_ns));
	s->step_ms = gp_step_of(r);
	return true;
}

static void comm_describe(const gp_rule_ctx_t *c, gp_finding_t *f, const gp_rank_t *w,
                          const gp_size_t *s)
{
	snprintf(f->title, sizeof(f->title),
	         "Communication not overlapped with compute on rank %d: %.2f ms per step (%.1f%%)",
	         w->id.rank, s->saving_ms, s->saving_pct);
	snprintf(f->evidence, sizeof(f->evidence),
	         "NCCL kernels %.1f ms (%.0f%% of kernel time), overlapped with compute %.1f ms",
	         w->gpu.comm_ns / 1e6,
	         100.0 * w->gpu.comm_ns / (w->gpu.comm_ns + w->gpu.compute_ns),
	         w->gpu.overlap_ns / 1e6);
	/* by collective (HTA's comm_comp_overlap, per kernel): which ones are exposed */
	unsigned n = gp_gsteps(w);
	for (unsigned k = 0; k < w->gpu.ncoll && k < GP_COLLS; k++) {
		const struct gp_coll *x = &w->gpu.coll[k];
		gp_cat(f->evidence, sizeof(f->evidence),
		       "%s%s: %llu calls, %.2f ms per step, %.0f%% of it exposed",
		       k ? "; " : "; by collective: ", x->name, (unsigned long long)x->calls,
		       n ? x->ns / 1e6 / n : 0, x->ns ? 100.0 * x->exposed_ns / x->ns : 0);
	}
	snprintf(f->threshold, sizeof(f->threshold), "comm >= %.0f%% and overlap < %.0f%% of comm",
	         comm_th[COMM_SHARE_MIN].value, comm_th[COMM_OVERLAP_MAX].value);
	snprintf(f->fix, sizeof(f->fix),
	         "Overlap gradient all-reduce with backward (DDP bucketing, bucket_cap_mb), or "
	         "reduce communication (gradient accumulation, compression).");
}

const gp_rule_t gp_rule_comm = {
    .id = "comm_not_overlapped",
    .name = "communication not overlapped with compute",
    .tier = GP_F_TIME,
    .sized = true,
    .th = comm_th,
    .nth = GP_NTH(comm_th),
    .saving_th = COMM_MIN_SAVING,
    .fires = "NCCL >= {comm_share} of kernel time, overlap < {overlap_max} of it, exposed >= "
             "{min_saving} of the step; the evidence splits it by collective "
             "(`gpu.collectives`: each NCCL kernel's calls, time and exposed part)",
    .saves = "exposed NCCL time per step",
    .advice = "Communication is not overlapped with compute: bucket gradients, overlap "
              "all-reduce with backward, or use fewer, larger messages.",
    .size = comm_size,
    .describe = comm_describe,
};

/* ---- pageable_copies ---- */

/* Copies between host and device from or into pageable memory (gputime.c): the driver
 * stages them through a buffer of its own while the call holds the host, and an async copy
 * from pageable memory is no longer async. Sized by the host's time inside those calls,
 * which a non-blocking copy from pinned memory gives back. nsys analyze's
 * cuda_memcpy_async rule; HTA has no rule for it. */
enum { PAGEABLE_MIN_SAVING };
static const gp_threshold_t pageable_th[] = {
    [PAGEABLE_MIN_SAVING] = {"min_saving", 1, "%",
                             "the host's time inside those copy calls, of the step"},
};

static bool pageable_size(const gp_rule_ctx_t *c, const gp_rank_t *r, unsigned i, gp_size_t *s)
{
	s->ms = gp_per_step_ms(r, r->gpu.pageable_held_ns);
	s->step_ms = gp_step_of(r);
	return r->gpu.pageable_copies > 0;
}

static void pageable_describe(const gp_rule_ctx_t *c, gp_finding_t *f, const gp_rank_t *w,
                              const gp_size_t *s)
{
	unsigned n = gp_gsteps(w);
	double gpu_ms = gp_per_step_ms(w, w->gpu.pageable_ns);
	double step = gp_step_of(w), gpu_pct = step > 0 && gpu_ms > 0 ? 100.0 * gpu_ms / step : 0;
	snprintf(f->title, sizeof(f->title),
	         "Copies from pageable host memory hold the host %.2f ms per step (%.1f%%) on "
	         "rank %d",
	         s->saving_ms, s->saving_pct, w->id.rank);
	snprintf(
	    f->evidence, sizeof(f->evidence),
	    "%llu of the %llu host<->device copies in %u traced steps were from or into "
	    "pageable memory (%s): %.1f copies and %.1f MiB per step, %.3f ms of copy time on "
	    "the GPU per step (%.1f%% of the step, %.1f GB/s); the copy calls held the host "
	    "%.3f ms per step",
	    (unsigned long long)w->gpu.pageable_copies, (unsigned long long)w->gpu.hd_copies, n,
	    w->gpu.pageable_inferred
	        ? "told by the calls: async copies of 1 MiB or more that held the host through "
	          "most of the transfer, as only a staged pageable copy does; this rank file "
	          "has no memory kinds"
	        : "CUPTI's memory kinds",
	    n ? (double)w->gpu.pageable_copies / n : 0,
	    n ? w->gpu.pageable_bytes / 1048576.0 / n : 0, gpu_ms, gpu_pct,
	    w->gpu.pageable_ns ? (double)w->gpu.pageable_bytes / w->gpu.pageable_ns : 0,
	    s->saving_ms);
	snprintf(f->threshold, sizeof(f->threshold),
	         "copies from or into pageable memory holding the host >= %.0f%% of the step",
	         pageable_th[PAGEABLE_MIN_SAVING].value);
	snprintf(
	    f->fix, sizeof(f->fix), "%s",
	    gp_words(w,
	             "Pin the host side and copy without blocking: DataLoader(pin_memory=True) "
	             "(or batch.pin_memory() for a batch made by hand) and "
	             "batch.to(device, non_blocking=True); the copy then runs while Python goes "
	             "on, at the full PCIe rate.",
	             "Hand JAX the next batch ahead of the step (jax.device_put of batch N+1 "
	             "while step N runs, or flax.jax_utils.prefetch_to_device), so its copy "
	             "overlaps the step instead of holding the host.",
	             "Allocate the host buffers pinned (cudaMallocHost or cudaHostAlloc, or "
	             "cudaHostRegister an existing one) and copy with cudaMemcpyAsync on a "
	             "stream; from pageable memory the driver stages the copy and the host "
	             "waits."));
}

const gp_rule_t gp_rule_pageable = {
    .id = "pageable_copies",
    .name = "copies from pageable host memory",
    .tier = GP_F_TIME,
    .sized = true,
    .th = pageable_th,
    .nth = GP_NTH(pageable_th),
    .saving_th = PAGEABLE_MIN_SAVING,
    .fires = "host<->device copies from or into pageable host memory (`gpu.pageable_*`: "
             "CUPTI's memory kinds where the rank file has them; in older files an async copy "
             "of >= 1 MiB whose call held the host through most of the transfer) hold the "
             "host >= {min_saving} of the step",
    .saves = "the host's time inside those copy calls per step, from each transfer's start on "
             "(before it the call waited for the GPU's earlier work: a synchronisation, sized "
             "by sync_stall)",
    .advice = "Host-device copies from pageable memory hold the host: pin the host buffers "
              "(pin_memory=True) and copy non-blocking.",
    .size = pageable_size,
    .describe = pageable_describe,
};

/* ---- fp32_no_tensor_cores ---- */

/* fp32 matrix multiplies on CUDA cores on a card with tensor cores for them (TF32, sm_80
 * on): the kernels' names say SIMT or FFMA (kernelclass.c). Sized as a share of their time
 * (TF32 tensor cores run fp32 matmuls at 7-8 times the FFMA rate: A100 156 against 19.5
 * TFLOPS, H100 SXM 495 against 67, dense), a saving of the step where the GPU's work is on
 * its path. nsys analyze has no such rule; HTA's kernel breakdown shows the GEMMs' time,
 * not their precision. */
enum { FP32_SHARE, FP32_GAIN, FP32_GPU_BOUND, FP32_MIN_SAVING };
static const gp_threshold_t fp32_th[] = {
    [FP32_SHARE] = {"gemm_share", 10, "%",
                    "fp32 GEMMs on CUDA cores, of the kernels' time (compute), at least"},
    [FP32_GAIN] = {"gain", 50, "%", "the share of their time TF32 would save"},
    [FP32_GPU_BOUND] = {"gpu_bound", 90, "%",
                        "the GPU busy this share of the span: all its work is on the step's "
                        "path"},
    [FP32_MIN_SAVING] = {"min_saving", 1, "%", "the saving, of the step"},
};

/* How much of the GPU's work is on the step's path: all of it where the GPU is busy (GPU-
 * bound), else the share of its idle time that the host spent waiting for it (blocked in a
 * synchronisation) rather than the GPU waiting for the host (launches, data, Python): a
 * faster kernel shortens the first kind of step, not the second. */
static double on_path(const gp_rank_t *r)
{
	const gp_gpu_t *g = &r->gpu;
	uint64_t waits = g->idle_sync_ns + g->idle_host_ns;
	if (!g->span_ns ||
	    (double)g->busy_ns >= gp_th(&gp_rule_fp32, FP32_GPU_BOUND) * (double)g->span_ns ||
	    !waits)
		return 1;
	return (double)g->idle_sync_ns / (double)waits;
}

static bool fp32_size(const gp_rule_ctx_t *c, const gp_rank_t *r, unsigned i, gp_size_t *s)
{
	const gp_rule_t *rule = &gp_rule_fp32;
	bool tf32 = r->gpu.fp32_gemm_sm >= 80 || gp_gpu_has_tf32(r->id.gpu_name);
	if (!tf32 || !r->gpu.fp32_gemm_ns ||
	    (double)r->gpu.fp32_gemm_ns < gp_th(rule, FP32_SHARE) * (double)r->gpu.compute_ns)
		return false;
	s->ms = gp_per_step_ms(
	    r, (uint64_t)(gp_th(rule, FP32_GAIN) * on_path(r) * (double)r->gpu.fp32_gemm_ns));
	s->step_ms = gp_step_of(r);
	return true;
}

static void fp32_describe(const gp_rule_ctx_t *c, gp_finding_t *f, const gp_rank_t *w,
                          const gp_size_t *s)
{
	double ms = gp_per_step_ms(w, w->gpu.fp32_gemm_ns), step = gp_step_of(w);
	double pct = ms > 0 && step > 0 ? 100 * ms / step : 0;
	double share = 100.0 * w->gpu.fp32_gemm_ns / (w->gpu.compute_ns ? w->gpu.compute_ns : 1);
	snprintf(f->title, sizeof(f->title),
	         "fp32 matrix multiplies run on CUDA cores, not tensor cores: %.0f%% of kernel "
	         "time on rank %d",
	         share, w->id.rank);
	char card[120];
	if (w->gpu.fp32_gemm_sm)
		snprintf(card, sizeof(card), "kernels built for sm_%u%s%s", w->gpu.fp32_gemm_sm,
		         w->id.gpu_name[0] ? " on an " : "", w->id.gpu_name);
	else
		snprintf(card, sizeof(card), "%s", w->id.gpu_name);
	/* its name as the kernels' table shows it (no return type, no parameters): the whole
	 * name is report.json's kernels[], and a 150-character token fits no line of text */
	char top[61];
	gp_display_name(gp_txt(w->gpu.fp32_gemm_top), top, sizeof(top));
	snprintf(f->evidence, sizeof(f->evidence),
	         "%llu GEMM kernels with fp32 inputs on CUDA cores (SIMT/FFMA, no TF32, bf16 or "
	         "fp16 tensor-core kernel) took %.2f ms per step (%.1f%% of the step, %.1f%% of "
	         "the kernels' time); the largest: %s; the card has TF32 tensor cores (%s); "
	         "the saving is half their time (TF32 runs fp32 matmuls 7-8 times faster) on the "
	         "step's path (%.0f%%: the GPU busy, or the host waiting for it, not it for the "
	         "host)",
	         (unsigned long long)w->gpu.fp32_gemm_calls, ms, pct, share, top, card,
	         100 * on_path(w));
	snprintf(f->threshold, sizeof(f->threshold),
	         "fp32 GEMMs on CUDA cores >= %.0f%% of kernel time on an sm_80+ card, half their "
	         "time >= %.0f%% of the step",
	         fp32_th[FP32_SHARE].value, fp32_th[FP32_MIN_SAVING].value);
	snprintf(
	    f->fix, sizeof(f->fix), "%s",
	    gp_words(w,
	             "Let PyTorch use TF32 tensor cores for fp32 matmuls: "
	             "torch.set_float32_matmul_precision(\"high\") (or "
	             "torch.backends.cuda.matmul.allow_tf32 = True), or train in bf16 under "
	             "torch.autocast(\"cuda\", dtype=torch.bfloat16).",
	             "Let XLA use TF32: jax.config.update(\"jax_default_matmul_precision\", "
	             "\"tensorfloat32\") (or precision= on jnp.dot/lax.dot_general), or keep "
	             "parameters and activations in jnp.bfloat16.",
	             "Ask cuBLAS for tensor cores: cublasSetMathMode(handle, "
	             "CUBLAS_TF32_TENSOR_OP_MATH) or cublasGemmEx with "
	             "CUBLAS_COMPUTE_32F_FAST_TF32, or store the matrices in bf16 (CUDA_R_16BF) "
	             "with fp32 accumulation."));
}

const gp_rule_t gp_rule_fp32 = {
    .id = "fp32_no_tensor_cores",
    .name = "fp32 matrix work off the tensor cores",
    .tier = GP_F_TIME,
    .sized = true,
    .th = fp32_th,
    .nth = GP_NTH(fp32_th),
    .saving_th = FP32_MIN_SAVING,
    .fires = "GEMM kernels with fp32 inputs on CUDA cores (SIMT/FFMA names: "
             "`cutlass_80_simt_sgemm`, `sm80_xmma_gemm_f32f32_..._ffma`, `ampere_sgemm`) >= "
             "{gemm_share} of kernel time on an sm_80+ card (the kernels' architecture or "
             "NVML's name), {gain} of their time on the step's path >= {min_saving} of the step",
    .saves = "{gain} of their time (TF32 runs fp32 matmuls 7-8 times the FFMA rate), times the "
             "share of the GPU's work on the step's path (all when the GPU is >= {gpu_bound} "
             "busy, else the GPU's idle while the host waited in synchronisation over its idle "
             "while the host launched)",
    .advice = "fp32 matrix work runs on CUDA cores: enable TF32 "
              "(torch.backends.cuda.matmul.allow_tf32) or train in bf16.",
    .size = fp32_size,
    .describe = fp32_describe,
};

/* ---- host_ahead ---- */

/* The host runs ahead: the step range closes long before its GPU work does, so timing the
 * range (or any host timer without synchronisation) measures launches. Not a cost: a
 * warning about measurements, ranked after the time findings. */
enum { AHEAD_RATIO, AHEAD_COMM_MAX, AHEAD_BUSY_MIN };
static const gp_threshold_t ahead_th[] = {
    [AHEAD_RATIO] = {"cpu_share", 50, "%", "the step range's CPU time, of the GPU step, under"},
    [AHEAD_COMM_MAX] = {"comm_max", 20, "%",
                        "exposed communication, of the step, under (a rank that waits for "
                        "others is not GPU-bound)"},
    [AHEAD_BUSY_MIN] = {"busy_min", 70, "%", "the GPU busy, of its span, at least"},
};

static bool ahead_size(const gp_rule_ctx_t *c, const gp_rank_t *r, unsigned i, gp_size_t *s)
{
	const gp_rule_t *rule = &gp_rule_host_ahead;
	/* a warning about timing a GPU-bound step with a host timer: not where the rank mostly
	 * waits for others (exposed communication), nor where the GPU waits */
	if (strcmp(r->steps.basis, "gpu") || r->steps.cpu_median_ms <= 0 ||
	    r->steps.cpu_median_ms >= gp_th(rule, AHEAD_RATIO) * r->steps.median_ms ||
	    gp_exposed_comm_ms(r) >= gp_th(rule, AHEAD_COMM_MAX) * r->steps.median_ms ||
	    (r->gpu.span_ns && r->gpu.busy_ns < gp_th(rule, AHEAD_BUSY_MIN) * r->gpu.span_ns))
		return false;
	s->rank_by = -(r->steps.cpu_median_ms / r->steps.median_ms); /* the furthest ahead */
	return true;
}

static void ahead_describe(const gp_rule_ctx_t *c, gp_finding_t *f, const gp_rank_t *w,
                           const gp_size_t *s)
{
	snprintf(f->title, sizeof(f->title),
	         "The host runs ahead of the GPU on rank %d: the step range takes %.2f ms of CPU "
	         "time, the GPU %.2f ms per step",
	         w->id.rank, w->steps.cpu_median_ms, w->steps.median_ms);
	snprintf(f->evidence, sizeof(f->evidence),
	         "median CPU time inside '%s' %.3f ms; GPU step %.3f ms (%s)", w->steps.name,
	         w->steps.cpu_median_ms, w->steps.median_ms,
	         w->steps.gpu_from_markers ? "from step completion markers"
	                                   : "completion of the step's last GPU work to the next");
	snprintf(f->threshold, sizeof(f->threshold), "CPU range < %.0f%% of the GPU step",
	         ahead_th[AHEAD_RATIO].value);
	snprintf(f->fix, sizeof(f->fix), "%s",
	         gp_words(w,
	                  "Nothing to fix in the program: the GPU is the bottleneck. Time steps "
	                  "with torch.cuda.Event(enable_timing=True) or after "
	                  "torch.cuda.synchronize(), not a host timer around the step (this "
	                  "report already does).",
	                  "Nothing to fix in the program: the GPU is the bottleneck. Time steps "
	                  "after jax.block_until_ready() on the step's result, not a host timer "
	                  "around the dispatch (this report already does).",
	                  "Nothing to fix in the program: the GPU is the bottleneck. Time steps "
	                  "with CUDA events (cudaEventRecord around the step, "
	                  "cudaEventElapsedTime) or after cudaStreamSynchronize, not a host timer "
	                  "around the launches (this report already does)."));
}

const gp_rule_t gp_rule_host_ahead = {
    .id = "host_ahead",
    .name = "the host runs ahead of the GPU",
    .tier = GP_F_TIME,
    .role = GP_ROLE_QUALITY,
    .th = ahead_th,
    .nth = GP_NTH(ahead_th),
    .saving_th = -1,
    .fires = "the step range's CPU time < {cpu_share} of the GPU step, exposed communication < "
             "{comm_max} of it, and the GPU busy >= {busy_min} of its span",
    .saves = "none: a warning (time steps with synchronisation)",
    .advice = "The host runs far ahead of the GPU: the GPU is the limit; measure kernels, not "
              "host time.",
    .size = ahead_size,
    .describe = ahead_describe,
};
