/* The findings engine and its rules (report/findings.c, report/rules_*.c), table-driven as
 * flux-core's libutil tests: every rule runs on synthetic ranks built at each of its
 * thresholds and one unit either side, and must fire or not as the threshold says; every
 * finding's saving stays within the time it is made of and the step; the engine's own
 * work (the worst rank, tracing taken out, effects with no saving, causes that share a
 * step) is checked once. A threshold of a rule without a case here fails the test. */
#include "config.h"
#include "findings.h"
#include "tap.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A rank with 100 post-warm-up steps of 10 ms (mean and median), timed on the GPU, that
 * ended with exit 0: no rule fires on it. */
static void base_rank(gp_rank_t *r, int rank)
{
	memset(r, 0, sizeof(*r));
	r->id.rank = rank;
	gp_text_set(&r->id.node, "node0", 64);
	snprintf(r->id.modes, sizeof(r->id.modes), "timing,nvtx,cuda");
	r->outcome.has_end = true;
	r->steps.n = r->steps.n_post = 100;
	r->steps.nms = 100;
	r->steps.median_ms = r->steps.mean_ms = 10;
	snprintf(r->steps.basis, sizeof(r->steps.basis), "gpu");
	r->gpu.nkernels = r->gpu.kernels_total = 1000;
}

/* A job of n such ranks, k: the sweep (-1 below the threshold, 0 at it, +1 above) */
typedef void (*build_fn)(gp_job_t *j, int k);

static void job_of(gp_job_t *j, unsigned n)
{
	memset(j, 0, sizeof(*j));
	j->ranks = calloc(n, sizeof(gp_rank_t));
	j->nranks = n;
	for (unsigned i = 0; i < n; i++)
		base_rank(&j->ranks[i], (int)i);
	j->step_median_ms = 10;
}

#define R0 (&j->ranks[0])
#define US 1000.0 /* a microsecond over the 100 steps: 0.01 us a step */

/* ---- builders, each at its threshold plus k units ---- */

static void sync_idle(gp_job_t *j, int k) /* 0.25 % of 10 ms = 0.025 ms a step */
{
	R0->sync.calls = 100;
	R0->gpu.idle_sync_ns = (uint64_t)(2.5e6 + k * US);
}
static void sync_calls(gp_job_t *j, int k) /* in half the 100 steps */
{
	R0->sync.calls = (uint64_t)(50 + k);
	R0->gpu.idle_sync_ns = (uint64_t)1e8;
}
static void input_idle(gp_job_t *j, int k) /* 10 % */
{
	R0->gpu.idle_data_ns = (uint64_t)(1e8 + k * US);
}
static void idle_min(gp_job_t *j, int k) /* 10 % */
{
	R0->gpu.idle_host_ns = (uint64_t)(1e8 + k * US);
}
/* 15 % measured, 5 % of it gpuprof's tracing (less above): 10 % of the program's */
static void idle_tracer(gp_job_t *j, int k)
{
	R0->gpu.idle_host_ns = (uint64_t)1.5e8;
	R0->capture.tracer_ms_per_step = 0.5 - k * 1e-5;
}
/* the title's classification: idle_gaps fires (40 %), the words say why */
static void idle_busy(gp_job_t *j)
{
	R0->gpu.idle_host_ns = (uint64_t)4e8;
}
static void idle_compiling(gp_job_t *j, int k)
{
	idle_busy(j);
	R0->gpu.idle_compile_ns = (uint64_t)(2e8 + k * US);
}
static void idle_launch_gate(gp_job_t *j, int k)
{
	idle_busy(j);
	R0->gpu.kernels_per_step = 50 + k;
	R0->gpu.host_busy_per_step_ms = 5;
}
static void idle_launch_host(gp_job_t *j, int k)
{
	idle_busy(j);
	R0->gpu.kernels_per_step = 60;
	R0->gpu.host_busy_per_step_ms = 2.5 + k * 1e-6;
}
static void idle_launch_kernels(gp_job_t *j, int k)
{
	idle_busy(j);
	R0->gpu.kernels_per_step = 100 + k;
	R0->gpu.kernel_mean_us = 10;
}
static void idle_launch_us(gp_job_t *j, int k)
{
	idle_busy(j);
	R0->gpu.kernels_per_step = 100;
	R0->gpu.kernel_mean_us = 20 + k * 1e-6;
}
static void idle_launch(gp_job_t *j) /* 120 kernels of 10 us a step */
{
	idle_launch_kernels(j, 20);
}
static void idle_waits_share(gp_job_t *j, int k)
{
	idle_busy(j);
	gp_text_set(&R0->torch.info, "jax 0.4.30", 512);
	R0->gpu.idle_host_gaps = (uint64_t)(80 + k);
}
static void idle_waits_steps(gp_job_t *j, int k)
{
	idle_busy(j);
	gp_text_set(&R0->torch.info, "jax 0.4.30", 512);
	R0->steps.n_post = (unsigned)(5 + k);
	R0->gpu.idle_host_ns = (uint64_t)(0.4 * 10 * 1e6 * R0->steps.n_post);
	R0->gpu.idle_host_gaps = R0->steps.n_post;
}
/* fragmentation: 60 % small kernels, GPU busy 50 %, gaps 5 % */
static void frag(gp_job_t *j)
{
	R0->gpu.small_kernels = 600;
	R0->gpu.span_ns = (uint64_t)1e9;
	R0->gpu.busy_ns = (uint64_t)5e8;
	R0->gpu.idle_kernel_ns = (uint64_t)5e7;
}
static void frag_saving(gp_job_t *j, int k)
{
	frag(j);
	R0->gpu.idle_kernel_ns = (uint64_t)(1e7 + k * US);
}
static void frag_share(gp_job_t *j, int k)
{
	frag(j);
	R0->gpu.small_kernels = (uint64_t)(500 + k);
}
static void frag_busy(gp_job_t *j, int k)
{
	frag(j);
	R0->gpu.busy_ns = (uint64_t)(7e8 + k * US);
}
static void frag_kernels(gp_job_t *j, int k)
{
	frag(j);
	R0->gpu.nkernels = R0->gpu.small_kernels = (uint64_t)(100 + k);
}
static void comm_share(gp_job_t *j, int k)
{
	R0->gpu.comm_ns = (uint64_t)(1e8 + k * US);
	R0->gpu.compute_ns = (uint64_t)(9e8 - k * US);
}
static void comm_overlap(gp_job_t *j, int k)
{
	R0->gpu.comm_ns = R0->gpu.compute_ns = (uint64_t)5e8;
	R0->gpu.overlap_ns = (uint64_t)(1.5e8 + k * US);
}
static void comm_saving(gp_job_t *j, int k)
{
	R0->gpu.comm_ns = (uint64_t)(1e7 + k * US);
	R0->gpu.compute_ns = (uint64_t)1e7;
}
static void pageable(gp_job_t *j, int k)
{
	R0->gpu.pageable_copies = 10;
	R0->gpu.pageable_held_ns = (uint64_t)(1e7 + k * US);
}
static void fp32(gp_job_t *j)
{
	snprintf(R0->id.gpu_name, sizeof(R0->id.gpu_name), "NVIDIA H100 80GB HBM3");
	R0->gpu.fp32_gemm_sm = 90;
	R0->gpu.compute_ns = (uint64_t)1e9;
	R0->gpu.fp32_gemm_ns = (uint64_t)5e8;
}
static void fp32_share(gp_job_t *j, int k)
{
	fp32(j);
	R0->gpu.fp32_gemm_ns = (uint64_t)(1e8 + k * US);
}
static void fp32_saving(gp_job_t *j, int k) /* half of 2 % of the step */
{
	fp32(j);
	R0->gpu.compute_ns = (uint64_t)1e8;
	R0->gpu.fp32_gemm_ns = (uint64_t)(2e7 + 2 * k * US);
}
static void fp32_bound(gp_job_t *j, int k) /* below: the GPU waits for the host only */
{
	fp32(j);
	R0->gpu.span_ns = (uint64_t)1e9;
	R0->gpu.busy_ns = (uint64_t)(9e8 + k * US);
	R0->gpu.idle_host_ns = (uint64_t)1e8;
}
/* three ranks that synchronise, their exposed communication none */
static void straggler(gp_job_t *j, int k)
{
	for (unsigned i = 0; i < 3; i++)
		j->ranks[i].gpu.comm_ns = j->ranks[i].gpu.overlap_ns = 1000;
	j->ranks[2].steps.median_ms = 13 + k * 1e-6;
}
/* 100 steps of 10 ms, then 100 at the ratio: the steps pass's shift (stepshape.h) */
static void slowdown_at(gp_job_t *j, double ratio, unsigned before, unsigned after)
{
	gp_step_shift_t *sh = &R0->steps.shift;
	sh->before_ms = 10, sh->after_ms = 10 * ratio, sh->ratio = ratio;
	sh->nbefore = before, sh->nafter = after, sh->at = before, sh->step = before + 5;
	sh->at_s = 12.5;
}
static void slowdown_ratio(gp_job_t *j, int k)
{
	slowdown_at(j, 1.2 + k * 1e-6, 100, 100);
}
static void slowdown_base(gp_job_t *j, int k)
{
	slowdown_at(j, 2.9, (unsigned)(10 + k), 100);
}
static void slowdown_slow(gp_job_t *j, int k)
{
	slowdown_at(j, 2.9, 100, (unsigned)(3 + k));
}
static void ahead(gp_job_t *j)
{
	R0->steps.cpu_median_ms = 1;
}
static void ahead_share(gp_job_t *j, int k)
{
	R0->steps.cpu_median_ms = 5 + k * 1e-6;
}
static void ahead_comm(gp_job_t *j, int k)
{
	ahead(j);
	R0->gpu.comm_ns = (uint64_t)(2e8 + k * US);
}
static void ahead_busy(gp_job_t *j, int k)
{
	ahead(j);
	R0->gpu.span_ns = (uint64_t)1e9;
	R0->gpu.busy_ns = (uint64_t)(7e8 + k * US);
}
static void leak_growth(gp_job_t *j, int k)
{
	R0->memory.growth_per_step = 1024 + k;
	R0->memory.leak_allocs = 2;
}
static void leak_allocs(gp_job_t *j, int k)
{
	R0->memory.growth_per_step = 1e6;
	R0->memory.leak_allocs = (uint64_t)(2 + k);
}
static void leak_steps(gp_job_t *j, int k)
{
	R0->torch.growth_per_step = 1e6;
	R0->torch.nmem_steps = (unsigned)(3 + k);
}
static void opt(gp_job_t *j)
{
	R0->memory.peak = R0->id.gpu_total = 4000000000ull;
	R0->memory.optimizer_bytes = 2000000000ull;
	snprintf(R0->memory.optimizer_source, sizeof(R0->memory.optimizer_source),
	         "first optimizer range");
}
static void opt_share(gp_job_t *j, int k)
{
	opt(j);
	R0->memory.optimizer_bytes = (uint64_t)(1000000000 + k);
}
static void opt_pressure(gp_job_t *j, int k)
{
	opt(j);
	R0->id.gpu_total = 8000000000ull;
	R0->memory.peak = (uint64_t)(4000000000ll + k);
}
static void near_limit(gp_job_t *j, int k)
{
	R0->id.gpu_total = 10000000000ull;
	R0->memory.peak = (uint64_t)(9000000000ll + k);
}
/* a rank with no CUDA work on a GPU NVML saw, without process lists: memory in use rose */
static void no_cuda(gp_job_t *j, int k, bool cuda_mode)
{
	gp_rank_t *r = R0;
	base_rank(r, 0);
	r->gpu.nkernels = r->gpu.kernels_total = 0;
	snprintf(r->id.modes, sizeof(r->id.modes), "%s", cuda_mode ? "timing,cuda" : "timing");
	snprintf(r->id.gpu_uuid, sizeof(r->id.gpu_uuid), "GPU-0");
	r->gpu.nvml_samples = 10;
	r->gpu.nvml_procs_refused = true;
	r->gpu.nvml_rise = (uint64_t)((256ll << 20) + k);
}
static void unobserved(gp_job_t *j, int k)
{
	no_cuda(j, k, true);
}
static void unused(gp_job_t *j, int k)
{
	no_cuda(j, k, false); /* unused: the memory never rose that far */
}

static const struct tcase {
	const char *rule, *threshold; /* the rule, and the threshold swept */
	build_fn build;
	unsigned nranks;
	int fires[3];          /* below, at, above */
	const char *title_has; /* where the threshold chooses words, not firing */
} cases[] = {
    {"sync_stall", "min_idle", sync_idle, 1, {0, 1, 1}, NULL},
    {"sync_stall", "calls_per_step", sync_calls, 1, {0, 1, 1}, NULL},
    {"input_bound", "min_idle", input_idle, 1, {0, 1, 1}, NULL},
    {"idle_gaps", "min_idle", idle_min, 1, {0, 1, 1}, NULL},
    {"idle_gaps", "min_idle", idle_tracer, 1, {0, 1, 1}, NULL},
    {"idle_gaps", "compiling", idle_compiling, 1, {0, 1, 1}, "(compiling)"},
    {"idle_gaps", "launch_kernels_min", idle_launch_gate, 1, {0, 1, 1}, "(launch-bound)"},
    {"idle_gaps", "launch_host", idle_launch_host, 1, {0, 1, 1}, "(launch-bound)"},
    {"idle_gaps", "launch_kernels", idle_launch_kernels, 1, {0, 1, 1}, "(launch-bound)"},
    {"idle_gaps", "launch_kernel_us", idle_launch_us, 1, {1, 0, 0}, "(launch-bound)"},
    {"idle_gaps", "waits_share", idle_waits_share, 1, {0, 1, 1}, "waits for every step"},
    {"idle_gaps", "waits_steps", idle_waits_steps, 1, {0, 1, 1}, "waits for every step"},
    {"fragmentation", "min_saving", frag_saving, 1, {0, 1, 1}, NULL},
    {"fragmentation", "small_share", frag_share, 1, {0, 1, 1}, NULL},
    {"fragmentation", "busy_max", frag_busy, 1, {1, 0, 0}, NULL},
    {"fragmentation", "min_kernels", frag_kernels, 1, {0, 1, 1}, NULL},
    {"comm_not_overlapped", "comm_share", comm_share, 1, {0, 1, 1}, NULL},
    {"comm_not_overlapped", "overlap_max", comm_overlap, 1, {1, 0, 0}, NULL},
    {"comm_not_overlapped", "min_saving", comm_saving, 1, {0, 1, 1}, NULL},
    {"pageable_copies", "min_saving", pageable, 1, {0, 1, 1}, NULL},
    {"fp32_no_tensor_cores", "gemm_share", fp32_share, 1, {0, 1, 1}, NULL},
    {"fp32_no_tensor_cores", "min_saving", fp32_saving, 1, {0, 1, 1}, NULL},
    {"fp32_no_tensor_cores", "gpu_bound", fp32_bound, 1, {0, 1, 1}, NULL},
    {"straggler", "excess", straggler, 3, {0, 1, 1}, NULL},
    {"slowdown", "ratio", slowdown_ratio, 1, {0, 1, 1}, NULL},
    {"slowdown", "min_before", slowdown_base, 1, {0, 1, 1}, NULL},
    {"slowdown", "min_slow", slowdown_slow, 1, {0, 1, 1}, NULL},
    {"host_ahead", "cpu_share", ahead_share, 1, {1, 0, 0}, NULL},
    {"host_ahead", "comm_max", ahead_comm, 1, {1, 0, 0}, NULL},
    {"host_ahead", "busy_min", ahead_busy, 1, {0, 1, 1}, NULL},
    {"memory_leak", "min_growth", leak_growth, 1, {0, 1, 1}, NULL},
    {"memory_leak", "min_allocs", leak_allocs, 1, {0, 1, 1}, NULL},
    {"memory_leak", "min_steps", leak_steps, 1, {0, 1, 1}, NULL},
    {"optimizer_state", "state_share", opt_share, 1, {0, 1, 1}, NULL},
    {"optimizer_state", "pressure", opt_pressure, 1, {0, 1, 1}, NULL},
    {"memory_near_limit", "peak_share", near_limit, 1, {0, 1, 1}, NULL},
    {"not_observed", "memory_rise", unobserved, 1, {0, 1, 1}, NULL},
    {"gpu_unused", "memory_rise", unused, 1, {1, 0, 0}, NULL},
};

static const gp_finding_t *find(const gp_job_t *j, const char *id)
{
	for (unsigned i = 0; i < j->nf; i++)
		if (!strcmp(j->f[i].id, id))
			return &j->f[i];
	return NULL;
}

/* What every finding must hold: a time saving within its step and, for idle time, within
 * the step's idle time; an effect none of its own. */
static int saving_bounded(const gp_job_t *j, const gp_finding_t *f)
{
	if (f->effect_of[0])
		return f->saving_ms == 0 && f->saving_pct == 0 && f->saving_bytes == 0;
	if (f->kind != GP_F_TIME || !f->rule->sized)
		return f->saving_ms == 0 && f->saving_pct == 0;
	const gp_rank_t *r = NULL;
	for (unsigned i = 0; i < j->nranks; i++)
		if (j->ranks[i].id.rank == f->rank)
			r = &j->ranks[i];
	double step = f->rule == &gp_rule_straggler ? j->step_median_ms : gp_step_of(r);
	double idle = gp_idle_bound_ms(r);
	bool of_idle = f->rule == &gp_rule_idle_gaps || f->rule == &gp_rule_sync_stall ||
	               f->rule == &gp_rule_fragmentation ||
	               (f->rule == &gp_rule_input_bound && r->gpu.nkernels);
	return f->saving_ms > 0 && f->saving_ms <= step * (1 + 1e-12) && f->saving_pct <= 100 &&
	       (!of_idle || idle < 0 || f->saving_ms <= idle * (1 + 1e-12));
}

static void run_case(const struct tcase *t, bool *bounded)
{
	static const char *const where[] = {"below", "at", "above"};
	for (int k = -1; k <= 1; k++) {
		gp_job_t j;
		job_of(&j, t->nranks);
		t->build(&j, k);
		gp_job_findings(&j);
		const gp_finding_t *f = find(&j, t->rule);
		bool fired = f && (!t->title_has || strstr(f->title, t->title_has));
		ok(fired == (bool)t->fires[k + 1], "%s %s: %s the threshold, %s", t->rule,
		   t->threshold, where[k + 1], t->fires[k + 1] ? "fires" : "does not fire");
		for (unsigned i = 0; i < j.nf; i++)
			if (!saving_bounded(&j, &j.f[i])) {
				*bounded = false;
				diag("%s: %s saves %.4f ms (%.2f %%)", t->rule, j.f[i].id,
				     j.f[i].saving_ms, j.f[i].saving_pct);
			}
		gp_job_free(&j);
	}
}

/* every threshold of every rule is swept by a case, or sizes a saving (checked below), or
 * is a pass's (small kernels: gputime.c counts them, t_analysis.c sweeps it; a slowdown's
 * share of slow steps and steps on the wrong side: stepshape.c, t_stats.c sweeps them) */
static void coverage(void)
{
	static const char *const sizing[] = {"fp32_no_tensor_cores/gain", "optimizer_state/saves",
	                                     "fragmentation/small_kernel", "slowdown/slow_share",
	                                     "slowdown/misfit"};
	unsigned missing = 0;
	for (unsigned i = 0; i < gp_nrules; i++)
		for (unsigned k = 0; k < gp_rules[i]->nth; k++) {
			char key[96];
			bool seen = false;
			snprintf(key, sizeof(key), "%s/%s", gp_rules[i]->id,
			         gp_rules[i]->th[k].name);
			for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
				seen |= !strcmp(cases[c].rule, gp_rules[i]->id) &&
				        !strcmp(cases[c].threshold, gp_rules[i]->th[k].name);
			for (size_t c = 0; c < sizeof(sizing) / sizeof(sizing[0]); c++)
				seen |= !strcmp(sizing[c], key);
			if (!seen && ++missing)
				diag("no case for %s", key);
		}
	ok(!missing, "every threshold of every rule has a case (%u without)", missing);
}

/* The rules as data: ids unique, words for a person, docs whose {names} are thresholds */
static void rules_table(void)
{
	unsigned bad = 0;
	char buf[4096];
	for (unsigned i = 0; i < gp_nrules; i++) {
		const gp_rule_t *r = gp_rules[i];
		bad += gp_rule_by_id(r->id) != r || !r->name[0] || !r->advice || !r->fires ||
		       !r->saves || !r->size || !r->describe ||
		       gp_finding_advice(r->id) != r->advice;
		bad += gp_rule_text(r, r->fires, buf, sizeof(buf)) < 0 ||
		       gp_rule_text(r, r->saves, buf, sizeof(buf)) < 0;
		bad += r->saving_th >= (int)r->nth;
		for (unsigned k = 0; k < r->nth; k++)
			bad += !r->th[k].name || !r->th[k].unit || !r->th[k].doc;
	}
	ok(!bad && gp_nrules == 22, "%u rules, each with an id of its own, words, docs (%u bad)",
	   gp_nrules, bad);
	gp_rule_text(&gp_rule_fragmentation, "< {small_kernel} and {nope}", buf, sizeof(buf));
	ok(gp_rule_text(&gp_rule_fragmentation, "{nope}", buf, sizeof(buf)) < 0,
	   "a {name} that names no threshold is an error");
	gp_rule_text(&gp_rule_fragmentation, "< {small_kernel}", buf, sizeof(buf));
	is_str(buf, "< 10 us", "a threshold in a doc: its value and unit, from the rule");
	ok(GP_SMALL_KERNEL_US == 10 && gp_th(&gp_rule_fragmentation, 1) == GP_SMALL_KERNEL_US,
	   "small kernels: under 10 us, the one value gputime.c counts and the rule documents");
	ok(gp_finding_advice("no_such_rule") == NULL, "no advice for an unknown id");
}

/* The engine: the worst rank; a saving held to the idle time and the step; tracing out. */
static void engine_sizing(void)
{
	gp_job_t j;
	job_of(&j, 3);
	for (unsigned i = 0; i < 3; i++) /* 20, 40 and 30 % idle waiting for the host */
		j.ranks[i].gpu.idle_host_ns = (uint64_t)((i == 1 ? 4e8 : i == 2 ? 3e8 : 2e8));
	gp_job_findings(&j);
	const gp_finding_t *f = find(&j, "idle_gaps");
	ok(f && f->rank == 1 && fabs(f->saving_ms - 4) < 1e-9 && fabs(f->saving_pct - 40) < 1e-9,
	   "the worst rank is named, with its saving (rank %d, %.3f ms)", f ? f->rank : -1,
	   f ? f->saving_ms : 0);
	gp_job_free(&j);

	/* 9 ms of a 10 ms step waiting for the host, while the GPU was busy half of it */
	job_of(&j, 1);
	j.ranks[0].gpu.idle_host_ns = (uint64_t)9e8;
	j.ranks[0].gpu.span_ns = (uint64_t)1e9;
	j.ranks[0].gpu.busy_ns = (uint64_t)5e8;
	gp_job_findings(&j);
	f = find(&j, "idle_gaps");
	ok(f && fabs(f->saving_ms - 5) < 1e-9 && fabs(f->saving_pct - 50) < 1e-9,
	   "idle_gaps: no more than the step's idle time (%.3f ms of 5)", f ? f->saving_ms : 0);
	gp_job_free(&j);

	/* no kernel records: the program's own wait, 15 ms a step of 10 */
	job_of(&j, 1);
	j.ranks[0].gpu.nkernels = j.ranks[0].gpu.kernels_total = 0;
	j.ranks[0].gpu.data_waits = 100;
	j.ranks[0].gpu.data_wait_ns = (uint64_t)1.5e9;
	gp_job_findings(&j);
	f = find(&j, "input_bound");
	ok(f && fabs(f->saving_ms - 10) < 1e-9 && f->saving_pct <= 100,
	   "input_bound from the program's wait: no more than the step (%.3f ms, %.1f %%)",
	   f ? f->saving_ms : 0, f ? f->saving_pct : 0);
	gp_job_free(&j);

	/* sync idle of traced steps longer than the step's idle: held to it */
	job_of(&j, 1);
	j.ranks[0].sync.calls = 100;
	j.ranks[0].gpu.idle_sync_ns = (uint64_t)6e8;
	j.ranks[0].gpu.span_ns = (uint64_t)1.2e9;
	j.ranks[0].gpu.busy_ns = (uint64_t)6e8;
	gp_job_findings(&j);
	f = find(&j, "sync_stall");
	ok(f && fabs(f->saving_ms - 5) < 1e-9, "sync_stall: held to the step's idle time (%.3f ms)",
	   f ? f->saving_ms : 0);
	gp_job_free(&j);

	/* sizing thresholds: fp32's gain, the optimizer's saving */
	job_of(&j, 1);
	fp32(&j);
	gp_job_findings(&j);
	f = find(&j, "fp32_no_tensor_cores");
	ok(f && fabs(f->saving_ms - 0.5 * 5) < 1e-9,
	   "fp32: the saving is gain (50 %%) of the GEMMs' time on the path (%.3f ms of 5)",
	   f ? f->saving_ms : 0);
	gp_job_free(&j);
	job_of(&j, 1);
	opt(&j);
	gp_job_findings(&j);
	f = find(&j, "optimizer_state");
	ok(f && f->saving_bytes == 1e9, "optimizer_state frees half the state (%.0f B)",
	   f ? f->saving_bytes : 0);
	gp_job_free(&j);
}

/* A straggler's effects: after it, no saving of their own; causes on one rank share it */
static void engine_effects(void)
{
	gp_job_t j;
	job_of(&j, 3);
	straggler(&j, 1);
	/* rank 0 waits in its collectives; rank 2 (the straggler) idles waiting for its host */
	j.ranks[0].gpu.comm_ns = (uint64_t)3e8;
	j.ranks[0].gpu.compute_ns = (uint64_t)5e8;
	j.ranks[0].gpu.overlap_ns = 0;
	j.ranks[2].gpu.idle_host_ns = (uint64_t)2e8;
	gp_job_findings(&j);
	unsigned n = j.nf;
	bool order = n >= 3 && !strcmp(j.f[0].id, "straggler") && j.f[0].rank == 2 &&
	             !strcmp(j.f[1].effect_of, "straggler:self") && j.f[1].rank == 2 &&
	             !strcmp(j.f[2].effect_of, "straggler") && j.f[2].rank == 0;
	bool none = true;
	for (unsigned i = 0; i < n; i++)
		none &= !j.f[i].effect_of[0] ||
		        (j.f[i].saving_ms == 0 && j.f[i].saving_pct == 0 && j.f[i].score == 0);
	ok(order && none,
	   "the straggler first, its own time, then the others' waits, effects saving nothing (%s "
	   "%s %s)",
	   n > 0 ? j.f[0].id : "-", n > 1 ? j.f[1].id : "-", n > 2 ? j.f[2].id : "-");
	char buf[64];
	ok(n >= 3 &&
	       !strcmp(gp_finding_relation(&j, &j.f[1], buf, sizeof(buf)),
	               "the straggler's own time") &&
	       !strcmp(gp_finding_relation(&j, &j.f[2], buf, sizeof(buf)),
	               "an effect of finding 1"),
	   "an effect's relation in words, never an id");
	gp_job_free(&j);

	/* two causes on one rank: 60 % sync idle, 70 % host idle: together no more than 100 % */
	job_of(&j, 1);
	j.ranks[0].sync.calls = 100;
	j.ranks[0].gpu.idle_sync_ns = (uint64_t)6e8;
	j.ranks[0].gpu.idle_host_ns = (uint64_t)7e8;
	gp_job_findings(&j);
	double sum = 0;
	for (unsigned i = 0; i < j.nf; i++)
		sum += j.f[i].saving_pct;
	ok(j.nf == 2 && fabs(sum - 100) < 1e-9 && strstr(j.f[1].evidence, "findings above leave"),
	   "causes on one rank share its step (%.2f %% in %u findings)", sum, j.nf);
	gp_job_free(&j);
}

/* Advice in the program's own words (gp_words): a CUDA C program (no framework seen) is
 * never told of torch.compile or torch.cuda, a PyTorch one never of JAX or of the CUDA
 * runtime's calls, a JAX one never of torch; each is told something it can do */
static void advice_words(void)
{
	static const struct {
		const char *rule;
		void (*build)(gp_job_t *j);
	} rules[] = {{"fragmentation", frag}, {"host_ahead", ahead}, {"idle_gaps", idle_launch}};
	/* what each framework's advice must name, and what no other framework's may */
	static const char *const own[] = {"torch.", "jax.", "cudaStream"};
	static const char *const fw_name[] = {"PyTorch", "JAX", "CUDA C"};
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
		for (int fw = 0; fw < 3; fw++) {
			gp_job_t job, *j = &job;
			job_of(j, 1);
			rules[i].build(j);
			if (fw == 0)
				R0->torch.seen = true;
			else if (fw == 1)
				gp_text_set(&R0->torch.info, "jax 0.4.30", 512);
			gp_job_findings(j);
			const gp_finding_t *f = find(j, rules[i].rule);
			const char *fix = f ? f->fix : "";
			bool others = false;
			for (int o = 0; o < 3; o++)
				others |= o != fw && strstr(fix, own[o]);
			if (fw != 0)
				others |= strstr(fix, "torch") != NULL;
			ok(f && strstr(fix, own[fw]) && !others, "%s: advice to a %s program: %s",
			   rules[i].rule, fw_name[fw], fix);
			gp_job_free(j);
		}
}

/* How each rank ended: one rule of the group by precedence, rank by rank, then launchers */
static void outcomes(void)
{
	static const struct {
		bool has_end;
		int wait_status;
		bool oom, timeout;
		const char *id;
	} t[] = {
	    {true, 0, false, false, NULL},           {true, 1 << 8, false, false, "failed"},
	    {true, SIGKILL, false, false, "killed"}, {false, 0, false, false, "incomplete"},
	    {true, 1 << 8, true, false, "cuda_oom"}, {true, SIGTERM, false, true, "time_limit"},
	    {false, 0, false, true, "time_limit"},   {true, 1 << 8, true, true, "cuda_oom"},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		gp_job_t j;
		job_of(&j, 1);
		j.ranks[0].outcome.has_end = t[i].has_end;
		j.ranks[0].outcome.wait_status = t[i].wait_status;
		j.ranks[0].memory.oom_calls = t[i].oom;
		if (t[i].timeout)
			snprintf(j.sacct_state, sizeof(j.sacct_state), "TIMEOUT");
		gp_job_findings(&j);
		const char *got = j.nf && j.f[0].kind == GP_F_OUTCOME ? j.f[0].id : NULL;
		ok(t[i].id ? got && !strcmp(got, t[i].id) : !got, "ending %zu: %s (%s)", i,
		   t[i].id ? t[i].id : "none", got ? got : "none");
		gp_job_free(&j);
	}
	gp_job_t j;
	job_of(&j, 2);
	j.ranks[0].outcome.wait_status = 1 << 8;
	j.ranks[1].outcome.has_end = false;
	j.launchers = calloc(1, sizeof(*j.launchers));
	j.nlaunchers = 1;
	j.launchers[0].has_end = true;
	j.launchers[0].wait_status = SIGKILL;
	gp_job_findings(&j);
	ok(j.nf == 3 && !strcmp(j.f[0].id, "failed") && j.f[0].rank == 0 &&
	       !strcmp(j.f[1].id, "incomplete") && j.f[1].rank == 1 &&
	       !strcmp(j.f[2].id, "killed") && j.f[2].rank == -1 &&
	       strstr(j.f[2].title, "launcher"),
	   "each rank's ending in rank order, then the launcher's");
	gp_job_free(&j);

	job_of(&j, 2); /* a GPU fault; two ranks on one GPU */
	j.ranks[1].faults.nxid = 1;
	for (unsigned i = 0; i < 2; i++)
		snprintf(j.ranks[i].id.gpu_uuid, sizeof(j.ranks[i].id.gpu_uuid), "GPU-same");
	gp_job_findings(&j);
	ok(find(&j, "gpu_fault") && find(&j, "gpu_fault")->rank == 1 && find(&j, "gpu_shared"),
	   "a GPU fault and a shared GPU are found");
	gp_text_set(&j.ranks[1].id.node, "node1", 64);
	j.nf = 0;
	gp_job_findings(&j);
	ok(!find(&j, "gpu_shared"), "the same UUID on two nodes is two GPUs");
	gp_job_free(&j);
}

/* A slowdown on some ranks: one finding, on the worst rank, naming the others, with the
 * step, when, both medians and its saving over the run; on every rank it says so */
static void slowdown_ranks(void)
{
	gp_job_t j;
	job_of(&j, 3);
	for (unsigned i = 0; i < 2; i++) {
		gp_step_shift_t *sh = &j.ranks[i].steps.shift;
		sh->before_ms = 10, sh->ratio = i ? 2.9 : 1.5, sh->after_ms = 10 * sh->ratio;
		sh->nbefore = 200, sh->nafter = 100, sh->step = 203, sh->at_s = 41.25;
	}
	gp_job_findings(&j);
	const gp_finding_t *f = find(&j, "slowdown");
	unsigned n = 0;
	for (unsigned i = 0; i < j.nf; i++)
		n += !strcmp(j.f[i].id, "slowdown");
	/* rank 1: (29 - 10) x 100 / 300 = 6.33 ms a step, of its 10 ms mean step */
	ok(f && n == 1 && f->rank == 1 && strstr(f->title, "2.9x slower from step 203 on") &&
	       strstr(f->title, "(41.2 s into the run)") &&
	       strstr(f->title, "29 ms against 10 ms") && strstr(f->title, "(some ranks)") &&
	       strstr(f->evidence, "ranks that slowed: 0, 1 (2 of 3)") &&
	       fabs(f->saving_ms - 19.0 / 3) < 1e-9,
	   "slowdown on ranks 0 and 1 of 3: one finding, on rank 1, naming both (%s | %s | %.3f "
	   "ms)",
	   f ? f->title : "none", f ? f->evidence : "", f ? f->saving_ms : 0);
	gp_job_free(&j);
	job_of(&j, 2);
	for (unsigned i = 0; i < 2; i++) {
		gp_step_shift_t *sh = &j.ranks[i].steps.shift;
		sh->before_ms = 10, sh->ratio = 2, sh->after_ms = 20, sh->nbefore = 100,
		sh->nafter = 100, sh->step = 100 + i, sh->at_s = -1;
	}
	gp_job_findings(&j);
	f = find(&j, "slowdown");
	ok(f && strstr(f->title, "(every rank)") && !strstr(f->title, "into the run") &&
	       strstr(f->evidence, "every rank (2) slowed, from steps 100 to 101"),
	   "on every rank: said as a shared cause or one rank the others wait for (%s)",
	   f ? f->evidence : "none");
	gp_job_free(&j);
	/* a planned change (issue 50: a batch-size ramp at step 30): the work per step grew
	 * with the time, no finding of the node; the same shift without it fires */
	for (int work = 0; work < 2; work++) {
		job_of(&j, 1);
		gp_step_shift_t *sh = &j.ranks[0].steps.shift;
		sh->before_ms = 10, sh->ratio = 2, sh->after_ms = 20, sh->nbefore = 30,
		sh->nafter = 70, sh->step = 30, sh->at_s = -1;
		sh->work_ratio = work ? 2 : 0;
		snprintf(sh->work_what, sizeof(sh->work_what), "bytes copied or set");
		gp_job_findings(&j);
		ok((find(&j, "slowdown") == NULL) == (work != 0),
		   work ? "2x slower with 2x the bytes a step: no slowdown (a planned change)"
		        : "2x slower, the work a step the same: slowdown");
		gp_job_free(&j);
	}
	/* what the finding says of the SM clock, a staircase and alternating steps; a clock
	 * that held: nothing said of it */
	for (int held = 0; held < 2; held++) {
		job_of(&j, 1);
		gp_step_shift_t *sh = &j.ranks[0].steps.shift;
		sh->before_ms = 10, sh->ratio = 1.5, sh->after_ms = 15, sh->nbefore = 100,
		sh->nafter = 200, sh->step = 100, sh->at_s = -1, sh->nlevels = 3, sh->period = 2;
		sh->level_ms[0] = 10, sh->level_ms[1] = 15, sh->level_ms[2] = 22;
		sh->level_step[1] = 100, sh->level_step[2] = 200;
		sh->clock_before_mhz = 1980, sh->clock_after_mhz = held ? 1950 : 1410;
		gp_job_findings(&j);
		f = find(&j, "slowdown");
		if (held)
			ok(f && !strstr(f->evidence, "SM clock"), "the SM clock held: not said");
		else
			ok(f &&
			       strstr(f->evidence, "in 3 levels: 10 ms, 15 ms from step 100, 22 ms "
			                           "from step 200") &&
			       strstr(
			           f->evidence,
			           "SM clock fell at the onset, 1980 MHz before, 1410 MHz after") &&
			       strstr(f->evidence, "alternate every 2"),
			   "a staircase, its levels said; the SM clock's fall; the period (%s)",
			   f ? f->evidence : "none");
		gp_job_free(&j);
	}
	/* a staircase said by its levels (the tester, session 33: D5): 10, 15, 22 ms for 100
	 * steps each, the largest rise (10 -> 15) the shift: the title the total (2.2x, not
	 * 1.5x), the last level's median quoted (not the 200 steps' from 100, which mix 15 and
	 * 22), the saving from the levels ((5 x 100 + 12 x 100) / 300 = 5.67 ms, not 3.33) */
	job_of(&j, 1);
	{
		gp_step_shift_t *sh = &j.ranks[0].steps.shift;
		sh->before_ms = 10, sh->ratio = 1.5, sh->after_ms = 18.5, sh->nbefore = 100,
		sh->nafter = 200, sh->step = 100, sh->at_s = -1, sh->nlevels = 3;
		sh->level_ms[0] = 10, sh->level_ms[1] = 15, sh->level_ms[2] = 22;
		sh->level_step[1] = 100, sh->level_step[2] = 200;
		j.ranks[0].steps.median_ms = 20;
	}
	gp_job_findings(&j);
	f = find(&j, "slowdown");
	ok(f &&
	       strstr(f->title, "2.2x slower in 3 levels from step 100 on: 22 ms at the end "
	                        "against 10 ms before") &&
	       strstr(f->evidence, "22.000 ms over the last level's 100 steps, from step 200") &&
	       fabs(f->saving_ms - 17.0 / 3) < 0.01,
	   "a staircase: the total, the last level, the saving from the levels (%s; %s; %.3f ms)",
	   f ? f->title : "none", f ? f->evidence : "", f ? f->saving_ms : 0);
	gp_job_free(&j);
	/* ... one that recovered and slowed again (10, 20, 10, 20 ms, 100 steps each): the
	 * recovery said, the saving from the slow levels only ((10 x 100 + 10 x 100) / 400) */
	job_of(&j, 1);
	{
		gp_step_shift_t *sh = &j.ranks[0].steps.shift;
		sh->before_ms = 10, sh->ratio = 2, sh->after_ms = 20, sh->nbefore = 300,
		sh->nafter = 100, sh->step = 300, sh->at_s = -1, sh->nlevels = 4, sh->recovered = 2;
		sh->level_ms[0] = 10, sh->level_ms[1] = 20, sh->level_ms[2] = 10,
		sh->level_ms[3] = 20;
		sh->level_step[1] = 100, sh->level_step[2] = 200, sh->level_step[3] = 300;
		j.ranks[0].steps.median_ms = 15;
	}
	gp_job_findings(&j);
	f = find(&j, "slowdown");
	ok(f && strstr(f->title, "2.0x slower in 4 levels") &&
	       strstr(f->evidence, "it had recovered, 10 ms from step 200, and slowed again from "
	                           "step 300") &&
	       fabs(f->saving_ms - 5) < 0.01,
	   "a staircase that recovered and slowed again: the recovery said (%s; %.3f ms)",
	   f ? f->evidence : "none", f ? f->saving_ms : 0);
	gp_job_free(&j);
}

int main(void)
{
	bool bounded = true;
	rules_table();
	coverage();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_case(&cases[i], &bounded);
	ok(bounded, "every finding of every case saves no more than the time it is made of");
	engine_sizing();
	engine_effects();
	advice_words();
	outcomes();
	slowdown_ranks();
	return done_testing();
}
