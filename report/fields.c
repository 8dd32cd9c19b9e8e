/* The figures of a rank the JSON report gives, listed once (fields.h): each with its JSON
 * key, the object of the rank it is in, where in gp_rank_t it lives, its type and unit,
 * and one line of doc. The rank objects of report.json are written from this table, and
 * doc/report.md's list of them is made from it (`gpuprof fields --format=markdown`,
 * checked by scripts/settings-docs --check), so a figure added here is written and
 * documented at once. Keys are only ever added. */
#include "config.h"
#include "fields.h"
#include "event.h"
#include "job.h"
#include "json.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* ---- the values no single field holds ---- */

static void v_outcome(FILE *out, const gp_rank_t *r)
{
	char b[64];
	gp_json_str(out, gp_rank_outcome(r, b, sizeof(b)));
}

static void v_durations(FILE *out, const gp_rank_t *r)
{
	fputc('[', out);
	for (unsigned s = 0; s < r->steps.nms; s++)
		if (isfinite(r->steps.ms[s])) {
			fputs(s ? ", " : "", out);
			gp_json_fixed(out, r->steps.ms[s], 4);
		} else
			fprintf(out, "%snull", s ? ", " : "");
	fputc(']', out);
}

static void v_by_library(FILE *out, const gp_rank_t *r)
{
	fputc('{', out);
	for (unsigned o = 0; o < r->memory.nowners; o++) {
		fprintf(out, "%s", o ? ", " : "");
		gp_json_str(out, gp_txt(r->memory.owners[o].module));
		fprintf(out, ": %llu", (unsigned long long)r->memory.owners[o].bytes);
	}
	fputc('}', out);
}

static double peak2(const gp_rank_t *r, int k)
{
	return r->io.peak_Bps[k] > r->io.peak_Bps[k + 1] ? r->io.peak_Bps[k]
	                                                 : r->io.peak_Bps[k + 1];
}
static void v_pcie_peak(FILE *out, const gp_rank_t *r)
{
	fprintf(out, "%.0f", peak2(r, 0));
}
static void v_nvlink_peak(FILE *out, const gp_rank_t *r)
{
	fprintf(out, "%.0f", peak2(r, 2));
}
static void v_pcie(FILE *out, const gp_rank_t *r)
{
	fputs(r->io.bits & GP_IO_PCIE ? "true" : "false", out);
}
static void v_nvlink(FILE *out, const gp_rank_t *r)
{
	fputs(r->io.bits & GP_IO_NVLINK ? "true" : "false", out);
}

static void v_losses(FILE *out, const gp_rank_t *r)
{
	fputc('{', out);
	for (unsigned c = 1, n = 0; gp_loss_key(c); c++)
		if (r->quality.loss[c])
			fprintf(out, "%s\"%s\": %llu", n++ ? ", " : "", gp_loss_key(c),
			        (unsigned long long)r->quality.loss[c]);
	fputc('}', out);
}

static void v_clock(FILE *out, const gp_rank_t *r)
{
	const gp_quality_t *q = &r->quality;
	if (!q->clock_dropped) {
		fputs("null", out);
		return;
	}
	fprintf(out, "{\"error_ns\": %lld, \"at_s\": %.3f, \"interval_s\": %.3f}",
	        (long long)q->clock_err_ns, (double)q->clock_at_ns / 1e9,
	        (double)q->clock_span_ns / 1e9);
}

static void v_not_observed(FILE *out, const gp_rank_t *r)
{
	fputs(gp_rank_unobserved(r) ? "true" : "false", out);
}

static void v_allocated_unused(FILE *out, const gp_rank_t *r)
{
	fputs(gp_rank_gpu_unused(r) ? "true" : "false", out);
}

static void owners(FILE *out, const gp_owner_t *o, unsigned n)
{
	fputc('[', out);
	for (unsigned k = 0; k < n; k++) {
		fprintf(out, "%s{\"bytes\": %llu, \"tensors\": %llu, \"stack\": ", k ? ", " : "",
		        (unsigned long long)o[k].bytes, (unsigned long long)o[k].tensors);
		gp_json_str(out, o[k].stack);
		fputc('}', out);
	}
	fputc(']', out);
}

static void v_optimizers(FILE *out, const gp_rank_t *r)
{
	const gp_torch_t *t = &r->torch;
	fputc('[', out);
	for (unsigned k = 0; k < t->nopt && k < 8; k++) {
		fprintf(out,
		        "%s{\"steps\": %llu, \"state_bytes\": %llu, \"state_device_bytes\": %llu, "
		        "\"state\": ",
		        k ? ", " : "", (unsigned long long)t->opt[k].steps,
		        (unsigned long long)t->opt[k].bytes,
		        (unsigned long long)t->opt[k].device_bytes);
		gp_json_str(out, gp_txt(t->opt[k].what));
		fputc('}', out);
	}
	fputc(']', out);
}

static void v_peak_owners(FILE *out, const gp_rank_t *r)
{
	owners(out, gp_torch_owners(&r->torch, GP_OWN_PEAK), r->torch.nowner);
}
static void v_kept(FILE *out, const gp_rank_t *r)
{
	owners(out, gp_torch_owners(&r->torch, GP_OWN_GROW), r->torch.ngrow_owner);
}

static void v_oom(FILE *out, const gp_rank_t *r)
{
	const gp_torch_t *t = &r->torch;
	if (!t->oom) {
		fputs("null", out);
		return;
	}
	fprintf(out,
	        "{\"requested_bytes\": %llu, \"total_bytes\": %llu, \"free_bytes\": %llu, "
	        "\"holders\": ",
	        (unsigned long long)t->oom_requested, (unsigned long long)t->oom_total,
	        (unsigned long long)t->oom_free);
	owners(out, gp_torch_owners(t, GP_OWN_OOM), t->noom_owner);
	fputc('}', out);
}

static void v_memviz(FILE *out, const gp_rank_t *r)
{
	fprintf(out, "{\"exit\": ");
	gp_json_str(out, gp_txt(r->torch.snap_exit));
	fprintf(out, ", \"peak\": ");
	gp_json_str(out, gp_txt(r->torch.snap_peak));
	fprintf(out, ", \"oom\": ");
	gp_json_str(out, gp_txt(r->torch.snap_oom));
	fputc('}', out);
}

static void v_memviz_gone(FILE *out, const gp_rank_t *r)
{
	const gp_text_t *nm[] = {&r->torch.snap_exit, &r->torch.snap_oom, &r->torch.snap_peak};
	unsigned n = 0;
	fputc('[', out);
	for (unsigned k = 0; k < 3; k++)
		if (r->torch.snap_gone & 1u << k && nm[k]->s) {
			fputs(n++ ? ", " : "", out);
			gp_json_str(out, gp_txt(*nm[k]));
		}
	fputc(']', out);
}

static void v_procs(FILE *out, const gp_rank_t *r)
{
	fputc('[', out);
	for (unsigned i = 0; i < r->procs.n; i++) {
		const gp_proc_t *p = &r->procs.p[i];
		fprintf(out,
		        "%s{\"pid\": %d, \"trainer\": %s, \"steps\": %u, \"optimizer_steps\": %u, "
		        "\"kernels\": %llu, \"peak_bytes\": %llu, \"outcome\": ",
		        i ? ", " : "", p->pid, p->trainer ? "true" : "false", p->steps,
		        p->opt_steps, (unsigned long long)p->kernels,
		        (unsigned long long)p->mem_peak);
		gp_rank_t o = {.outcome.has_end = p->has_end,
		               .outcome.status_unknown = p->status_unknown,
		               .outcome.wait_status = p->wait_status};
		char b[64];
		gp_json_str(out, gp_rank_outcome(&o, b, sizeof(b)));
		fprintf(out, ", \"command\": ");
		gp_json_str(out, gp_txt(p->command));
		fputc('}', out);
	}
	fputc(']', out);
}

static void v_startup_top(FILE *out, const gp_rank_t *r)
{
	fputc('[', out);
	for (unsigned k = 0; k < r->startup.ntop; k++) {
		fprintf(out, "%s{\"name\": ", k ? ", " : "");
		gp_json_str(out, gp_txt(r->startup.top[k].name));
		fprintf(out, ", \"kind\": \"%s\", \"ms\": %.3f, \"calls\": %u}",
		        r->startup.top[k].kernel ? "kernel" : "range", r->startup.top[k].ms,
		        r->startup.top[k].calls);
	}
	fputc(']', out);
}

/* PyTorch's figures: a rank its integration recorded, not JAX's (whose info line was
 * filed under "pytorch" before the framework section) */
static bool torch_seen(const gp_rank_t *r)
{
	return r->torch.seen && strcmp(r->shares.framework, "jax");
}
static bool framework_seen(const gp_rank_t *r)
{
	return r->torch.seen;
}
static bool pool_seen(const gp_rank_t *r)
{
	return r->pool.seen;
}
/* NCCL's collectives, the largest first: [{name calls ns exposed_ns}] */
static void v_collectives(FILE *out, const gp_rank_t *r)
{
	fputc('[', out);
	for (unsigned k = 0; k < r->gpu.ncoll && k < GP_COLLS; k++) {
		const struct gp_coll *c = &r->gpu.coll[k];
		fprintf(out, "%s{\"name\": ", k ? ", " : "");
		gp_json_str(out, c->name);
		fprintf(out, ", \"calls\": %llu, \"ns\": %llu, \"exposed_ns\": %llu}",
		        (unsigned long long)c->calls, (unsigned long long)c->ns,
		        (unsigned long long)c->exposed_ns);
	}
	fputc(']', out);
}

static bool slowdown_seen(const gp_rank_t *r)
{
	return r->steps.shift.ratio > 0;
}

static bool own_seen(const gp_rank_t *r)
{
	return r->own.steps > 0;
}

/* ---- what was measured (a figure not measured is null, never 0) ---- */

/* the headline's samples: none on a rank without steps */
static bool m_steps(const gp_rank_t *r)
{
	return r->steps.nall > 0;
}
/* a median's 95 % interval: 6 samples at least (gp_median_interval) */
static bool m_work(const gp_rank_t *r)
{
	return r->steps.shift.work_ratio > 0;
}

static bool m_clock(const gp_rank_t *r)
{
	return r->steps.shift.clock_before_mhz > 0;
}

static bool m_interval(const gp_rank_t *r)
{
	return r->steps.nall >= 6;
}
/* the throughput: 2 post-warm-up steps at least */
static bool m_throughput(const gp_rank_t *r)
{
	return r->steps.mean_period_ms > 0;
}
/* GPU completion to completion: none without kernel records or step markers (modes
 * without cuda, a rank without steps) */
static bool m_gpu_steps(const gp_rank_t *r)
{
	return r->steps.ngpu > 0;
}
static bool m_period_steps(const gp_rank_t *r)
{
	return r->steps.nperiod > 0;
}
/* CPU time inside a range of the program's: none for steps found from kernels or an
 * optimizer's returns */
static bool m_cpu_steps(const gp_rank_t *r)
{
	return r->shares.cpu_samples > 0;
}
static bool m_traced(const gp_rank_t *r)
{
	return r->capture.ntraced > 0;
}
static bool m_traced_interval(const gp_rank_t *r)
{
	return r->capture.ntraced >= 6;
}
static bool m_untraced(const gp_rank_t *r)
{
	return r->capture.nuntraced > 0;
}
static bool m_untraced_interval(const gp_rank_t *r)
{
	return r->capture.nuntraced >= 6;
}
/* shares of the GPU's span: none without kernel records (modes without cuda) */
static bool m_span(const gp_rank_t *r)
{
	return r->gpu.span_ns > 0;
}
static bool m_comm(const gp_rank_t *r)
{
	return r->gpu.comm_ns > 0;
}
static bool m_nvml(const gp_rank_t *r)
{
	return r->gpu.nvml_samples > 0;
}
/* device memory (the tester, session 33: D12): CUDA's allocation records or a framework's
 * figure; none where no memory was measured */
static bool m_mem(const gp_rank_t *r)
{
	return r->memory.peak > 0 || r->memory.nallocs > 0;
}
static bool m_in_use(const gp_rank_t *r)
{
	return r->shares.in_use_source[0] != 0;
}
static bool m_nvml_mem(const gp_rank_t *r)
{
	return r->gpu.nvml_samples > 0 && r->memory.nvml_max > 0;
}
static bool m_scaled(const gp_rank_t *r)
{
	return r->gpu.busy_pct_untraced > 0;
}

/* the program's start to its first step: none without steps */
static bool m_startup(const gp_rank_t *r)
{
	return r->steps.source[0] != 0;
}

/* ---- the table ---- */

#define AT(m) offsetof(gp_rank_t, m)
#define U64(sec, key, m, unit, doc)                                                                \
	{                                                                                          \
		sec, key, GP_FT_U64, AT(m), 0, 0, unit, doc, NULL, NULL                            \
	}
#define U64M(sec, key, m, unit, doc, measured)                                                     \
	{                                                                                          \
		sec, key, GP_FT_U64, AT(m), 0, 0, unit, doc, NULL, measured                        \
	}
#define U32(sec, key, m, unit, doc)                                                                \
	{                                                                                          \
		sec, key, GP_FT_U32, AT(m), 0, 0, unit, doc, NULL, NULL                            \
	}
#define I32(sec, key, m, unit, doc)                                                                \
	{                                                                                          \
		sec, key, GP_FT_I32, AT(m), 0, 0, unit, doc, NULL, NULL                            \
	}
#define F64(sec, key, m, prec, unit, doc)                                                          \
	{                                                                                          \
		sec, key, GP_FT_F64, AT(m), prec, 0, unit, doc, NULL, NULL                         \
	}
/* a figure that is not measured everywhere: null where measured(r) is false */
#define F64M(sec, key, m, prec, unit, doc, measured)                                               \
	{                                                                                          \
		sec, key, GP_FT_F64, AT(m), prec, 0, unit, doc, NULL, measured                     \
	}
#define SEC(sec, key, m, scale, unit, doc)                                                         \
	{                                                                                          \
		sec, key, GP_FT_U64, AT(m), 6, scale, unit, doc, NULL, NULL                        \
	}
#define BOOL(sec, key, m, doc)                                                                     \
	{                                                                                          \
		sec, key, GP_FT_BOOL, AT(m), 0, 0, NULL, doc, NULL, NULL                           \
	}
/* a char array (the size of its first byte checks it is one), or text (text.h) */
#define STR(sec, key, m, doc)                                                                      \
	{                                                                                          \
		sec, key, GP_FT_STR, AT(m) + 0 * sizeof(((gp_rank_t *)0)->m[0]), 0, 0, NULL, doc,  \
		    NULL, NULL                                                                     \
	}
#define TEXT(sec, key, m, doc)                                                                     \
	{                                                                                          \
		sec, key, GP_FT_TEXT, AT(m) + 0 * sizeof(((gp_rank_t *)0)->m.s), 0, 0, NULL, doc,  \
		    NULL, NULL                                                                     \
	}
#define NEG_NULL(sec, key, m, doc)                                                                 \
	{                                                                                          \
		sec, key, GP_FT_I32_NULL, AT(m), 0, 0, NULL, doc, NULL, NULL                       \
	}
#define FN(sec, key, fn, unit, doc)                                                                \
	{                                                                                          \
		sec, key, GP_FT_FN, 0, 0, 0, unit, doc, fn, NULL                                   \
	}

const gp_field_t gp_rank_fields[] = {
    I32(NULL, "rank", id.rank, NULL, "the rank (the task's, or the launcher worker's RANK)"),
    STR(NULL, "step", id.step, "the Slurm step"),
    TEXT(NULL, "node", id.node, "the node it ran on"),
    FN(NULL, "outcome", v_outcome, NULL, "how it ended: exit N, signal N, incomplete, ..."),
    BOOL(NULL, "complete", outcome.has_end, "its end was recorded"),
    SEC(NULL, "wall_s", outcome.wall_ns, 1e9, "s", "wall-clock time of the program"),
    SEC(NULL, "cpu_s", outcome.cpu_us, 1e6, "s", "CPU time of the program"),
    U64(NULL, "max_rss_kib", outcome.maxrss_kib, "KiB", "largest resident set"),

    STR("steps", "range", steps.name, "the NVTX range (or source) the steps are"),
    STR("steps", "source", steps.source, "nvtx, optimizer, profiler, kernels; empty: none"),
    TEXT("steps", "how", steps.how, "how the steps were found, and how sure"),
    STR("steps", "basis", steps.basis, "what the headline measures: gpu, period, cpu range"),
    BOOL("steps", "gpu_from_markers", steps.gpu_from_markers,
         "GPU step time from step completion markers, not kernel records"),
    U32("steps", "count", steps.n, NULL, "steps found"),
    U32("steps", "warmup", steps.warmup, NULL, "warm-up steps left out of every figure"),
    U32("steps", "last_step", steps.last_step, NULL, "the last step's number, from 0"),
    F64M("steps", "mean_ms", steps.mean_ms, 6, "ms", "headline: mean step time", m_steps),
    F64M("steps", "median_ms", steps.median_ms, 6, "ms", "headline: median step time", m_steps),
    F64M("steps", "median_low_ms", steps.median_lo_ms, 6, "ms",
         "headline: 95 % interval of the median, low end (order statistics; null under 6 steps)",
         m_interval),
    F64M("steps", "median_high_ms", steps.median_hi_ms, 6, "ms", "... high end", m_interval),
    F64M("steps", "p95_ms", steps.p95_ms, 6, "ms", "headline: 95th percentile", m_steps),
    F64M("steps", "p99_ms", steps.p99_ms, 6, "ms", "headline: 99th percentile", m_steps),
    F64M("steps", "mean_period_ms", steps.mean_period_ms, 6, "ms",
         "the throughput's step: the post-warm-up steps' wall time (the last warm-up step's "
         "completion to the last step's, its GPU work where traced), over their count (null: "
         "fewer than 2)",
         m_throughput),
    F64M("steps", "per_second", steps.per_second, 4, NULL, "steps a second: 1000 / mean_period_ms",
         m_throughput),
    STR("steps", "shape", steps.shape.shape,
        "(from every post-warm-up step, in step order) are the headline's steps alike: alike, "
        "bimodal, "
        "alternating (bimodal, changing group at most steps), drifting, uneven (the mean "
        "period far from the median), shifted (slower from one step on: slowdown)"),
    F64M("steps", "shape_low_ms", steps.shape.low_ms, 6, "ms",
         "bimodal, alternating: the faster group's median; drifting: the first quarter's; "
         "shifted: slowdown.before_ms",
         m_steps),
    F64("steps", "shape_high_ms", steps.shape.high_ms, 6, "ms",
        "bimodal, alternating: the slower group's median; drifting: the last quarter's; "
        "shifted: slowdown.after_ms"),
    F64("steps", "shape_high_share", steps.shape.high_share, 4, NULL,
        "bimodal, alternating: the share of steps in the slower group; shifted: of the "
        "steps from the onset"),
    F64M("steps", "cv", steps.cv, 6, NULL, "headline: coefficient of variation", m_steps),
    F64M("steps", "gpu_median_ms", steps.gpu_median_ms, 6, "ms",
         "GPU completion to completion, median", m_gpu_steps),
    F64M("steps", "gpu_p95_ms", steps.gpu_p95_ms, 6, "ms", "... 95th percentile", m_gpu_steps),
    U32("steps", "gpu_samples", steps.ngpu, NULL, "steps with a GPU time"),
    F64M("steps", "period_median_ms", steps.period_median_ms, 6, "ms",
         "step start to start, median", m_period_steps),
    F64M("steps", "period_p95_ms", steps.period_p95_ms, 6, "ms", "... 95th percentile",
         m_period_steps),
    U32("steps", "period_samples", steps.nperiod, NULL, "steps with a period"),
    F64M("steps", "cpu_median_ms", steps.cpu_median_ms, 6, "ms",
         "CPU time inside the step range, median", m_cpu_steps),
    F64M("steps", "cpu_p95_ms", steps.cpu_p95_ms, 6, "ms", "... 95th percentile", m_cpu_steps),
    U32("steps", "cpu_samples", shares.cpu_samples, NULL,
        "steps with a CPU time: those of a range of the program's (NVTX, "
        "cudaProfilerStart/Stop); 0 for steps found from kernels or optimizer returns"),
    U32("steps", "durations_of", steps.nall, NULL, "post-warm-up samples of the headline"),
    FN("steps", "durations_ms", v_durations, "ms",
       "the headline's samples: all up to 512, else the medians of 512 blocks of "
       "consecutive steps (mean, median, p95 are from all)"),

    /* the steps got slower at one step and stayed so (steps.shift, finding slowdown);
       null where they did not */
    F64("slowdown", "ratio", steps.shift.ratio, 4, NULL,
        "the steps got slower at one step and stayed so to the end (finding slowdown): the "
        "median from it on over the median before it (null: no such shift)"),
    U32("slowdown", "step", steps.shift.step, NULL,
        "the step they got slower from (its number, from 0)"),
    F64("slowdown", "at_s", steps.shift.at_s, 3, "s",
        "when that step began, seconds after the program's start"),
    F64("slowdown", "before_ms", steps.shift.before_ms, 6, "ms", "the median step before it"),
    F64("slowdown", "after_ms", steps.shift.after_ms, 6, "ms", "the median step from it on"),
    U32("slowdown", "before_samples", steps.shift.nbefore, NULL,
        "post-warm-up steps before it (all of them, also where more than the 512 "
        "steps.durations_ms keeps)"),
    U32("slowdown", "after_samples", steps.shift.nafter, NULL, "... from it on"),
    U32("slowdown", "period", steps.shift.period, NULL,
        "1; or the steps alternate with this period (in steps) and it was found on the "
        "medians of blocks of that many steps (over 8192 steps: of blocks of the kept "
        "medians, the period rounded to steps)"),
    U32("slowdown", "levels", steps.shift.nlevels, NULL,
        "2; more: a staircase, the shift its largest rise (the finding says each)"),
    F64M("slowdown", "work_ratio", steps.shift.work_ratio, 3, NULL,
         "the work per step grew with the time (kernels, bytes or thread blocks a step, "
         "after over before): a planned change, no finding (null: it did not)",
         m_work),
    F64M("slowdown", "sm_clock_before_mhz", steps.shift.clock_before_mhz, 0, "MHz",
         "NVML's SM clock before the onset, median (null: no samples)", m_clock),
    F64M("slowdown", "sm_clock_after_mhz", steps.shift.clock_after_mhz, 0, "MHz", "... from it on",
         m_clock),
    STR("slowdown", "sm_clock_reasons", steps.shift.clock_reasons,
        "NVML's throttle reasons (clock event reasons) that held in a quarter more of the samples "
        "from the onset on than before it, comma-separated (application_clocks, sw_power_cap, "
        "hw_slowdown, sw_thermal, hw_thermal, hw_power_brake); empty: none"),
    F64M("slowdown", "gpu_util_before_pct", steps.shift.util_before, 0, "%",
         "NVML's GPU utilisation before the onset, median (a clock that falls with it follows a "
         "GPU that waits; null: no samples)",
         m_clock),
    F64M("slowdown", "gpu_util_after_pct", steps.shift.util_after, 0, "%", "... from it on",
         m_clock),

    U64("gpu", "kernels_total", gpu.kernels_total, NULL, "kernels recorded"),
    U64("gpu", "kernels_in_steps", gpu.kernels_in_steps, NULL, "... inside the steps"),
    U64("gpu", "kernels", gpu.nkernels, NULL, "... in the steady state (post-warm-up)"),
    U64("gpu", "memcpy", gpu.nmemcpy, NULL, "copies in the steady state"),
    U64("gpu", "memset", gpu.nmemset, NULL, "memsets in the steady state"),
    U64("gpu", "span_ns", gpu.span_ns, "ns", "the steady state's length on the GPU"),
    U64("gpu", "busy_ns", gpu.busy_ns, "ns", "GPU busy (any stream) in it"),
    U64("gpu", "idle_host_wait_ns", gpu.idle_host_ns, "ns", "idle, waiting for the host"),
    U64("gpu", "idle_kernel_wait_ns", gpu.idle_kernel_ns, "ns", "idle between dependent kernels"),
    U64("gpu", "idle_sync_ns", gpu.idle_sync_ns, "ns", "idle while the host synchronised"),
    U64("gpu", "idle_other_ns", gpu.idle_other_ns, "ns", "idle, other"),
    U64("gpu", "idle_host_gaps", gpu.idle_host_gaps, NULL,
        "post-warm-up steps with a host-caused idle gap of a tenth of the median step or "
        "more (every step: the host never runs ahead)"),
    U64("gpu", "compute_ns", gpu.compute_ns, "ns", "kernel time, communication excluded"),
    U64("gpu", "comm_ns", gpu.comm_ns, "ns", "communication kernels (NCCL)"),
    U64("gpu", "memcpy_ns", gpu.memcpy_ns, "ns", "copies"),
    U64("gpu", "comm_compute_overlap_ns", gpu.overlap_ns, "ns",
        "communication overlapped by compute"),
    F64M("gpu", "busy_pct", shares.busy_pct, 2, "%",
         "busy with compute or copies: busy_ns less comm_exposed_ns, of span_ns (with "
         "comm_only_pct and the idle shares: 100)",
         m_span),
    U64("gpu", "comm_exposed_ns", shares.comm_exposed_ns, "ns",
        "communication not overlapped by compute: comm_ns less comm_compute_overlap_ns"),
    F64M("gpu", "comm_only_pct", shares.comm_only_pct, 2, "%",
         "the GPU running communication alone: comm_exposed_ns of span_ns (a rank that waits "
         "in a collective for a straggler spins there: not busy)",
         m_span),
    F64M("gpu", "idle_host_wait_pct", shares.idle_host_pct, 2, "%", "idle_host_wait_ns of span_ns",
         m_span),
    F64M("gpu", "idle_sync_pct", shares.idle_sync_pct, 2, "%", "idle_sync_ns of span_ns", m_span),
    F64M("gpu", "idle_kernel_wait_pct", shares.idle_kernel_pct, 2, "%",
         "idle_kernel_wait_ns of span_ns", m_span),
    F64M("gpu", "idle_other_pct", shares.idle_other_pct, 2, "%", "idle_other_ns of span_ns",
         m_span),
    F64M("gpu", "comm_pct", gpu.comm_pct, 2, "%",
         "communication's share of kernel time: comm_ns / (comm_ns + compute_ns)", m_span),
    F64M("gpu", "comm_overlap_pct", gpu.comm_overlap_pct, 2, "%",
         "the share of communication that compute overlapped", m_comm),
    U64("gpu", "small_kernels", gpu.small_kernels, NULL,
        "kernels under 10 us (GP_SMALL_KERNEL_US: fragmentation's small_kernel)"),
    U64("gpu", "kernels_shorter_than_launch", gpu.short_vs_launch, NULL,
        "kernels shorter than their launch call"),
    F64("gpu", "launch_latency_us_median", gpu.launch_latency_us, 3, "us",
        "a kernel's start less its launch call's (the queue), median"),
    F64("gpu", "launch_call_us_median", gpu.launch_call_us, 3, "us",
        "the launch call's own time, median"),
    F64M("gpu", "kernels_per_step", gpu.kernels_per_step, 2, NULL, "kernels per step", m_span),
    F64M("gpu", "kernel_ms_per_step", gpu.kernel_gpu_per_step_ms, 6, "ms",
         "compute kernels' GPU time per step (per traced step with capture windows)", m_span),
    F64M("gpu", "busy_pct_untraced", gpu.busy_pct_untraced, 2, "%",
         "with windows: GPU busy per traced step over the untraced steps' median (the busy "
         "share scaled to the job's own steps); null: not scaled",
         m_scaled),
    U64("gpu", "kernels_attributed_across_threads", gpu.kernels_other_thread, NULL,
        "kernels given to a range of another thread"),
    FN("gpu", "collectives", v_collectives, NULL,
       "[{name calls ns exposed_ns}]: NCCL's collectives by kernel, the largest 4; exposed: "
       "not overlapped by compute kernels"),
    U64("gpu", "host_device_copies", gpu.hd_copies, NULL,
        "host-to-device and device-to-host copies in the steady state"),
    U64("gpu", "host_device_bytes", gpu.hd_bytes, "bytes", "... their bytes"),
    U64("gpu", "pageable_copies", gpu.pageable_copies, NULL,
        "... of them from or into pageable host memory"),
    U64("gpu", "pageable_bytes", gpu.pageable_bytes, "bytes", "... their bytes"),
    U64("gpu", "pageable_ns", gpu.pageable_ns, "ns", "... their GPU time"),
    U64("gpu", "pageable_held_ns", gpu.pageable_held_ns, "ns",
        "... the host's time inside their copy calls from the transfer's start on"),
    BOOL("gpu", "pageable_inferred", gpu.pageable_inferred,
         "pageable told by the copy call holding the host (a rank file without memory kinds)"),
    U64("gpu", "fp32_simt_gemm_ns", gpu.fp32_gemm_ns, "ns",
        "GEMM kernels with fp32 inputs on CUDA cores (SIMT, FFMA), steady state"),
    U64("gpu", "fp32_simt_gemm_calls", gpu.fp32_gemm_calls, NULL, "... their launches"),
    U32("gpu", "fp32_simt_gemm_sm", gpu.fp32_gemm_sm, NULL,
        "... the architecture their names say (80: sm_80), 0: not said"),
    TEXT("gpu", "fp32_simt_gemm_top", gpu.fp32_gemm_top, "... the largest"),
    BOOL("gpu", "pytorch_kernels", gpu.torch_kernels,
         "kernels named by PyTorch (at::native): the advice speaks PyTorch"),
    BOOL("gpu", "xla_kernels", gpu.xla_kernels, "kernels named by XLA (fusions)"),
    F64M("gpu", "nvml_util_mean", gpu.nvml_util_mean, 1, "%", "NVML's utilisation, mean", m_nvml),
    U64("gpu", "nvml_samples", gpu.nvml_samples, NULL, "NVML samples"),
    U64("gpu", "nvml_process_samples", gpu.nvml_proc_samples, NULL,
        "NVML's lists of the processes on the rank's GPUs read (once a second; 0: the "
        "driver gave none)"),
    BOOL("gpu", "nvml_processes_refused", gpu.nvml_procs_refused,
         "the driver refused NVML's list of the GPU's processes"),
    U32("gpu", "nvml_task_processes", gpu.nvml_own_procs, NULL,
        "most processes of the task NVML listed on its GPUs at once"),
    U32("gpu", "nvml_other_processes", gpu.nvml_other_procs, NULL,
        "most processes of others (or of the task in another PID namespace) on them"),
    U64("gpu", "nvml_task_bytes", gpu.nvml_own_bytes, "bytes",
        "most memory NVML gave the task's processes (0: not known)"),
    U64("gpu", "nvml_rise_bytes", gpu.nvml_rise, "bytes",
        "most memory in use above a GPU's first sample (the idle baseline: an idle H100 "
        "shows ~480 MiB)"),
    U32("gpu", "cuda_inits", gpu.cuda_inits, NULL,
        "processes of the rank that initialised CUDA (cuInit reached the collector)"),
    FN("gpu", "allocated_unused", v_allocated_unused, NULL,
       "the rank had a GPU and never used it: no CUDA work recorded and no process of the "
       "task on it (rank.c)"),

    U64("sync", "calls", sync.calls, NULL, "calls that block the host on the GPU"),
    U64("sync", "ns", sync.ns, "ns", "time in them"),
    TEXT("sync", "top_range", sync.range, "the NVTX range most of it fell in"),
    U64("sync", "top_range_ns", sync.range_ns, "ns", "... and how much"),

    U64("memory", "allocs", memory.nallocs, NULL, "device allocations"),
    U64("memory", "frees", memory.nfrees, NULL, "device frees"),
    U64M("memory", "peak_bytes", memory.peak, "bytes", "device memory peak", m_mem),
    U64("memory", "peak_at_ns", memory.peak_t_ns, "ns", "when, after the rank's start"),
    U64M("memory", "final_bytes", memory.final, "bytes", "live at the end", m_mem),
    U64("memory", "static_bytes", memory.static_bytes, "bytes",
        "allocated before the first step and never freed"),
    F64("memory", "growth_bytes_per_step", memory.growth_per_step, 1, "bytes",
        "growth per post-warm-up step"),
    U64M("memory", "in_use_peak_bytes", shares.in_use_peak, "bytes",
         "the program's allocator's peak of bytes in use: PyTorch's max_memory_allocated, "
         "else a framework pool's (XLA); null: no framework figure",
         m_in_use),
    U64("memory", "pool_peak_bytes", shares.pool_peak, "bytes",
        "... what that allocator held from the device at its peak (max_memory_reserved)"),
    STR("memory", "in_use_source", shares.in_use_source, "pytorch, pool, or empty: none"),
    F64("memory", "step_growth_bytes", shares.growth_per_step, 1, "bytes",
        "growth per post-warm-up step as the tables give it: PyTorch's allocated bytes "
        "where it sampled steps, else growth_bytes_per_step (CUDA's allocations)"),
    STR("memory", "step_growth_source", shares.growth_source, "pytorch, cuda, or empty: none"),
    U64("memory", "leak_bytes", memory.leak_bytes, "bytes", "allocated in steps, never freed"),
    U64("memory", "leak_allocs", memory.leak_allocs, NULL, "... in so many allocations"),
    U64("memory", "optimizer_bytes", memory.optimizer_bytes, "bytes", "optimizer state"),
    U64("memory", "host_peak_bytes", memory.host_peak, "bytes",
        "host memory CUPTI saw allocated (pinned, pageable), at its peak"),
    U64M("memory", "nvml_used_max_bytes", memory.nvml_max, "bytes",
         "NVML's largest memory in use on the GPU", m_nvml_mem),
    TEXT("memory", "peak_stack", memory.peak_stack, "the stack that allocated most at the peak"),
    STR("memory", "peak_stack_source", memory.peak_stack_source,
        "where it came from (CUPTI callback, PyTorch allocator history)"),
    STR("memory", "optimizer_source", memory.optimizer_source,
        "where the optimizer state came from"),
    NEG_NULL("memory", "peak_step", memory.peak_step,
             "the step the peak fell in, from 0; null outside steps"),
    TEXT("memory", "peak_ranges", memory.peak_ranges,
         "NVTX ranges open at the peak, \"outer > inner\""),
    BOOL("memory", "peak_ranges_other_thread", memory.peak_ranges_other_thread,
         "the allocating thread had none open: the steps' thread's"),
    TEXT("memory", "leak_stack", memory.leak_stack, "the stack of the leaked bytes"),
    FN("memory", "bytes_by_library_at_last_step", v_by_library, "bytes",
       "device bytes live at the end, by allocating library"),

    F64("io", "pcie_tx_Bps", io.Bps[0], 0, "B/s", "PCIe sent, mean"),
    F64("io", "pcie_rx_Bps", io.Bps[1], 0, "B/s", "PCIe received, mean"),
    FN("io", "pcie_peak_Bps", v_pcie_peak, "B/s", "PCIe, highest rate of one GPU"),
    F64("io", "nvlink_tx_Bps", io.Bps[2], 0, "B/s", "NVLink sent, mean"),
    F64("io", "nvlink_rx_Bps", io.Bps[3], 0, "B/s", "NVLink received, mean"),
    FN("io", "nvlink_peak_Bps", v_nvlink_peak, "B/s", "NVLink, highest rate of one GPU"),
    FN("io", "pcie", v_pcie, NULL, "PCIe was sampled"),
    FN("io", "nvlink", v_nvlink, NULL, "NVLink was sampled"),
    TEXT("io", "not_sampled", io.nvml_limits, "what NVML could not sample on this node"),

    U64("faults", "xid", faults.nxid, NULL, "Xid errors"),
    U32("faults", "first_xid", faults.first_xid, NULL, "the first one's code"),
    U64("faults", "first_xid_ns", faults.first_xid_ns, "ns", "... when, after the start"),
    U64("faults", "ecc_uncorrected", faults.ecc_uncorrected, NULL, "uncorrected ECC errors"),
    U64("faults", "ecc_corrected", faults.ecc_corrected, NULL, "corrected ECC errors"),

    U64("cupti_overhead", "records", overhead.records, NULL, "CUPTI's overhead records"),
    U64("cupti_overhead", "ns", overhead.ns, "ns", "CUPTI's own time"),

    BOOL("capture", "window", capture.window, "kernels were traced in windows only"),
    U32("capture", "captured_steps", capture.steps, NULL, "post-warm-up steps traced"),
    U64("capture", "switches", capture.switches, NULL, "capture switches"),
    U64("capture", "switch_max_ns", capture.switch_max_ns, "ns", "the longest switch"),
    F64("capture", "traced_pct", capture.traced_pct, 2, "%",
        "share of the rank's recorded time with kernels traced (0: no windows)"),
    U32("capture", "cost_windows", capture.cost_windows, NULL,
        "windows by cost (a program whose steps were not seen), however each ended"),
    U32("capture", "cost_at_exit", capture.cost_at_exit, NULL,
        "... of them, open when the process exited"),
    U32("capture", "cost_unended", capture.cost_unended, NULL,
        "... of them, open when the process died (counted at their last cost so far)"),
    U64("capture", "cost_estimate_ns", capture.cost_estimate_ns, "ns",
        "... their estimated tracing cost (kernels at the per-kernel price, or measured)"),
    U64("capture", "cost_late_ns", capture.cost_late_ns, "ns",
        "... of it, charged after the windows' ends (late records, the detach)"),

    /* the framework whose integration recorded; null without one */
    STR("framework", "name", shares.framework, "pytorch, jax, or empty (not recognised)"),
    STR("framework", "version", shares.framework_version, "its version"),
    TEXT("framework", "info", torch.info, "how steps and memory were taken"),
    TEXT("framework", "not_collected", torch.missing, "what was not collected, and why"),

    /* PyTorch's own figures (the integration); null without it */
    TEXT("pytorch", "info", torch.info, "version, how steps and memory were taken"),
    TEXT("pytorch", "not_collected", torch.missing, "what was not collected, and why"),
    U32("pytorch", "profiler_sessions", torch.profiler_sessions, NULL,
        "torch.profiler sessions that traced CUDA (gpuprof switched no capture meanwhile)"),
    U32("pytorch", "optimizer_steps", torch.opt_steps, NULL,
        "step() calls of the optimizer that steps most"),
    F64("pytorch", "optimizer_period_median_ms", torch.opt_period_median_ms, 6, "ms",
        "end to end of those calls, median"),
    U64("pytorch", "optimizer_state_bytes", torch.opt_bytes, "bytes",
        "state tensors of every optimizer"),
    U64("pytorch", "optimizer_state_device_bytes", torch.opt_device_bytes, "bytes",
        "... on the GPU"),
    FN("pytorch", "optimizers", v_optimizers, NULL,
       "[{steps state_bytes state_device_bytes state}]"),
    U64("pytorch", "max_allocated_bytes", torch.max_allocated, "bytes",
        "PyTorch's max_memory_allocated"),
    U64("pytorch", "max_reserved_bytes", torch.max_reserved, "bytes", "max_memory_reserved"),
    U64("pytorch", "reserved_unused_at_peak_bytes", torch.frag_at_peak, "bytes",
        "reserved but unallocated at the peak; 0: not known (a peak the allocator history did not "
        "see)"),
    U64("pytorch", "allocated_end_bytes", torch.allocated_end, "bytes", "allocated at the end"),
    U64("pytorch", "reserved_end_bytes", torch.reserved_end, "bytes", "reserved at the end"),
    F64("pytorch", "growth_bytes_per_step", torch.growth_per_step, 1, "bytes",
        "allocated after each step: mean growth"),
    FN("pytorch", "peak_owners", v_peak_owners, NULL, "[{bytes tensors stack}] live at the peak"),
    FN("pytorch", "kept_by_recorded_steps", v_kept, NULL,
       "[{bytes tensors stack}] kept by the allocator history's window"),
    FN("pytorch", "oom", v_oom, NULL,
       "{requested_bytes total_bytes free_bytes holders[]}, null: no OOM"),
    FN("pytorch", "memviz", v_memviz, NULL, "{exit peak oom}: memory_viz pickles written"),
    FN("pytorch", "memviz_gone", v_memviz_gone, NULL,
       "[name] of those, the ones not beside the rank file as a regular file of the job's "
       "owner: gpuprof export --format=memviz takes the one left, or CUDA's segments"),

    U64("quality", "records", quality.records, NULL, "records read"),
    BOOL("quality", "truncated", quality.truncated, "the file ends mid-chunk"),
    U64("quality", "corrupt_chunks", quality.corrupt_chunks, NULL, "chunks skipped"),
    U64("quality", "dropped_ring", quality.drops_ring, NULL, "records the ring had no room for"),
    U64("quality", "dropped_cupti", quality.drops_cupti, NULL, "records CUPTI dropped"),
    U64("quality", "dropped_strings", quality.drops_table, NULL, "strings the table refused"),
    U64("quality", "dropped_byte_cap", quality.drops_cap, NULL, "records past the byte cap"),
    STR("quality", "wrapped", quality.wrapped, "how the program was wrapped (agent, fallback)"),
    TEXT("quality", "yielded", quality.yielded, "what was left to another CUPTI client"),
    BOOL("quality", "nvtx_cuda_tids_unrelated", quality.nvtx_cuda_tids_unrelated,
         "NVTX and CUDA thread ids cannot be matched"),
    U64("quality", "markers_not_placed", quality.markers_not_placed, NULL,
        "step markers skipped: the GPU 64 markers behind"),
    U64("quality", "bad_records", quality.bad_records, NULL,
        "impossible times, durations or sizes: ignored"),
    FN("quality", "losses", v_losses, NULL, "records lost by cause (causes with a count only)"),
    FN("quality", "clock_dropped", v_clock, NULL,
       "{error_ns at_s interval_s}: the TSC disagreed with the kernel's clock by error_ns "
       "over the interval_s before at_s and the collector went back to clock_gettime; "
       "null: it never did"),
    FN("quality", "not_observed", v_not_observed, NULL,
       "the task used its GPU (NVML listed a process of it there) while no CUDA work was "
       "recorded"),

    U32("processes", "recorded", procs.nall, NULL, "processes of the rank that recorded"),
    U32("processes", "foreign_left_out", procs.nforeign, NULL,
        "files another agent wrote beside it: left out"),
    FN("processes", "listed", v_procs, NULL,
       "[{pid trainer steps optimizer_steps kernels peak_bytes outcome command}]"),

    U32("windows", "traced_steps", capture.ntraced, NULL, "post-warm-up steps traced"),
    U32("windows", "untraced_steps", capture.nuntraced, NULL, "... and not"),
    F64M("windows", "traced_median_ms", capture.traced_median_ms, 6, "ms",
         "the traced steps' median", m_traced),
    F64M("windows", "traced_low_ms", capture.traced_lo_ms, 6, "ms",
         "its 95 % interval, low end (null: under 6 steps)", m_traced_interval),
    F64M("windows", "traced_high_ms", capture.traced_hi_ms, 6, "ms", "... high end",
         m_traced_interval),
    F64M("windows", "untraced_median_ms", capture.untraced_median_ms, 6, "ms",
         "the untraced steps' median", m_untraced),
    F64M("windows", "untraced_low_ms", capture.untraced_lo_ms, 6, "ms",
         "its 95 % interval, low end (null: under 6 steps)", m_untraced_interval),
    F64M("windows", "untraced_high_ms", capture.untraced_hi_ms, 6, "ms", "... high end",
         m_untraced_interval),
    F64("windows", "tracer_ms_per_step", capture.tracer_ms_per_step, 6, "ms",
        "what tracing added to a traced step"),

    U32("own_cost", "steps", own.steps, NULL,
        "steps of the step optimizer (the one returning most often) gpuprof's own time was "
        "read over (null: not measured, no PyTorch optimizer)"),
    U32("own_cost", "optimizer", own.optimizer, NULL, "that optimizer's index"),
    F64("own_cost", "us_per_step", own.us_median, 3, "us",
        "gpuprof's own time on the program's threads a step of it, median, timed in the "
        "process: its optimizer hooks with the step marker and allocator counters they "
        "read, and its batch timing (not its module hooks, NVTX records, kernel tracing "
        "in windows, the agent)"),
    F64("own_cost", "us_p95", own.us_p95, 3, "us", "... its 95th percentile"),
    F64("own_cost", "pct_of_step", own.pct, 4, "%",
        "us_per_step of the headline's median step (0: the headline's steps are not that "
        "optimizer's, one to one)"),

    F64M("startup", "s", startup.s, 6, "s", "the program's start to the first step's", m_startup),
    F64("startup", "gpu_busy_s", startup.gpu_busy_s, 6, "s", "GPU busy in it"),
    F64("startup", "compile_s", startup.compile_s, 6, "s", "compilations the framework reported"),
    U64("startup", "alloc_bytes", startup.alloc_bytes, "bytes", "device memory allocated in it"),
    FN("startup", "top", v_startup_top, NULL,
       "[{name kind (kernel, range) ms calls}]: what took most of it"),

    U64("host", "idle_data_wait_ns", gpu.idle_data_ns, "ns",
        "GPU idle while the host waited for the next batch"),
    U64("host", "idle_compile_ns", gpu.idle_compile_ns, "ns", "... while it compiled"),
    U64("host", "idle_in_cuda_calls_ns", gpu.idle_launch_ns, "ns", "... inside CUDA calls"),
    U64("host", "idle_tracer_ns", gpu.idle_tracer_ns, "ns", "... covered by CUPTI's own work"),
    F64("host", "cuda_calls_ms_per_step", gpu.host_busy_per_step_ms, 4, "ms",
        "host time in launch and sync calls per step"),
    U64("host", "data_wait_ns", gpu.data_wait_ns, "ns", "time waiting for batches"),
    U64("host", "data_waits", gpu.data_waits, NULL, "batches waited for"),

    STR(NULL, "gpu_uuid", id.gpu_uuid, "the rank's GPU (NVML), empty: unknown"),
    STR(NULL, "gpu_name", id.gpu_name, "its name (NVML), empty: unknown"),
    U64(NULL, "gpu_memory_bytes", id.gpu_total, "bytes",
        "its memory (NVML's total; 0: unknown): what memory findings are held against"),

    /* a framework's own pool (XLA); null where none was seen */
    U64("pool", "in_use_bytes", pool.in_use, "bytes", "in use, the last sample"),
    U64("pool", "in_use_peak_bytes", pool.in_use_peak, "bytes", "in use, the largest"),
    U64("pool", "pool_bytes", pool.pool, "bytes", "held from the device, the last sample"),
    U64("pool", "pool_peak_bytes", pool.pool_peak, "bytes", "... the largest"),
    U32("pool", "samples", pool.samples, NULL, "samples"),
    TEXT("pool", "what", pool.what, "the pool"),
};
const size_t gp_rank_nfields = sizeof(gp_rank_fields) / sizeof(gp_rank_fields[0]);

/* Sections written only on a condition, null in their place otherwise (every rank has
 * the same keys). */
static const struct {
	const char *name;
	bool (*when)(const gp_rank_t *);
} conditional[] = {{"framework", framework_seen},
                   {"pytorch", torch_seen},
                   {"pool", pool_seen},
                   {"own_cost", own_seen},
                   {"slowdown", slowdown_seen}};

static bool section_shown(const char *section, const gp_rank_t *r)
{
	for (size_t c = 0; section && c < sizeof(conditional) / sizeof(conditional[0]); c++)
		if (!strcmp(conditional[c].name, section) && !conditional[c].when(r))
			return false;
	return true;
}

const gp_field_t *gp_field_find(const char *name)
{
	const char *dot = strchr(name, '.');
	for (size_t i = 0; i < gp_rank_nfields; i++) {
		const gp_field_t *f = &gp_rank_fields[i];
		if (dot ? f->section && strlen(f->section) == (size_t)(dot - name) &&
		              !strncmp(f->section, name, (size_t)(dot - name)) &&
		              !strcmp(f->key, dot + 1)
		        : !f->section && !strcmp(f->key, name))
			return f;
	}
	return NULL;
}

const char *gp_field_text(const gp_field_t *f, const gp_rank_t *r)
{
	if (f->type == GP_FT_TEXT)
		return gp_txt(*(const gp_text_t *)(const void *)((const char *)r + f->off));
	return f->type == GP_FT_STR ? (const char *)r + f->off : NULL;
}

bool gp_field_number(const gp_field_t *f, const gp_rank_t *r, double *v)
{
	const char *p = (const char *)r + f->off;
	uint64_t u;
	unsigned w;
	int i;
	if (!section_shown(f->section, r) || (f->measured && !f->measured(r)))
		return false;
	switch (f->type) {
	case GP_FT_U64:
		memcpy(&u, p, sizeof(u));
		*v = f->scale > 0 ? (double)u / f->scale : (double)u;
		return true;
	case GP_FT_U32:
		memcpy(&w, p, sizeof(w));
		*v = w;
		return true;
	case GP_FT_I32:
	case GP_FT_I32_NULL:
		memcpy(&i, p, sizeof(i));
		*v = i;
		return f->type == GP_FT_I32 || i >= 0;
	case GP_FT_F64:
		memcpy(v, p, sizeof(*v));
		return isfinite(*v);
	case GP_FT_BOOL:
		*v = *(const bool *)(const void *)p;
		return true;
	default:
		return false;
	}
}

static void value(FILE *out, const gp_field_t *f, const gp_rank_t *r)
{
	const char *p = (const char *)r + f->off;
	uint64_t u;
	int i;
	double d;
	if (f->measured && !f->measured(r)) {
		fputs("null", out);
		return;
	}
	switch (f->type) {
	case GP_FT_U64:
		memcpy(&u, p, sizeof(u));
		if (f->scale > 0)
			gp_json_fixed(out, (double)u / f->scale, f->prec);
		else
			gp_json_uint(out, u);
		break;
	case GP_FT_U32:
		gp_json_uint(out, *(const unsigned *)(const void *)p);
		break;
	case GP_FT_I32:
		fprintf(out, "%d", *(const int *)(const void *)p);
		break;
	case GP_FT_I32_NULL:
		memcpy(&i, p, sizeof(i));
		if (i >= 0)
			fprintf(out, "%d", i);
		else
			fputs("null", out);
		break;
	case GP_FT_F64: /* JSON has no NaN or infinity: null */
		memcpy(&d, p, sizeof(d));
		if (isfinite(d))
			gp_json_fixed(out, d, f->prec);
		else
			fputs("null", out);
		break;
	case GP_FT_BOOL:
		fputs(*(const bool *)(const void *)p ? "true" : "false", out);
		break;
	case GP_FT_STR:
		gp_json_str(out, p);
		break;
	case GP_FT_TEXT:
		gp_json_str(out, gp_txt(*(const gp_text_t *)(const void *)p));
		break;
	case GP_FT_FN:
		f->fn(out, r);
		break;
	}
}

void gp_json_rank(FILE *out, const gp_rank_t *r)
{
	const char *open = NULL; /* the section being written */
	bool first = true, skip = false;
	fputc('{', out);
	for (size_t i = 0; i < gp_rank_nfields; i++) {
		const gp_field_t *f = &gp_rank_fields[i];
		if (open && (!f->section || strcmp(f->section, open))) { /* a section ends */
			if (!skip)
				fputc('}', out);
			open = NULL;
			skip = false;
		}
		if (f->section && !open) { /* a section begins */
			open = f->section;
			for (size_t c = 0; c < sizeof(conditional) / sizeof(conditional[0]); c++)
				if (!strcmp(conditional[c].name, open) && !conditional[c].when(r)) {
					skip = true;
					fprintf(out, ",\n     \"%s\": null", open);
				}
			if (!skip)
				fprintf(out, ",\n     \"%s\": {", open);
			first = true;
		}
		if (skip)
			continue;
		/* fputs, not fprintf: a key per field per rank was 9 % of a 2 000-rank report */
		fputs(first ? "\"" : ", \"", out);
		fputs(f->key, out);
		fputs("\": ", out);
		first = false;
		value(out, f, r);
	}
	if (open && !skip)
		fputc('}', out);
	fputc('}', out);
}

/* The rank table's columns (gp_json_rank_table): who the rank is, how it ended, and the
 * figures the text report gives across ranks (output.c's distributions). */
static const char *const table_keys[] = {"rank",
                                         "step",
                                         "node",
                                         "complete",
                                         "wall_s",
                                         "steps.count",
                                         "steps.median_ms",
                                         "steps.p95_ms",
                                         "steps.mean_period_ms",
                                         "gpu.busy_pct",
                                         "gpu.comm_only_pct",
                                         "gpu.idle_host_wait_pct",
                                         "sync.ns",
                                         "memory.peak_bytes",
                                         "memory.step_growth_bytes"};
#define NTABLE (sizeof(table_keys) / sizeof(table_keys[0]))

void gp_json_rank_table(FILE *out, const gp_rank_t *ranks, unsigned n)
{
	const gp_field_t *f[NTABLE];
	fputs("{\"keys\": [", out);
	for (size_t c = 0; c < NTABLE; c++) {
		f[c] = gp_field_find(table_keys[c]); /* t_synth.sh: each one a field */
		fputs(c ? ", " : "", out);
		gp_json_str(out, table_keys[c]);
	}
	fputs("], \"rows\": [", out);
	for (unsigned i = 0; i < n; i++) {
		fputs(i ? ",\n    [" : "\n    [", out);
		for (size_t c = 0; c < NTABLE; c++) {
			fputs(c ? ", " : "", out);
			if (!f[c] || !section_shown(f[c]->section, &ranks[i]))
				fputs("null", out);
			else
				value(out, f[c], &ranks[i]);
		}
		fputc(']', out);
	}
	fputs(n ? "\n  ]}" : "]}", out);
}

void gp_csv_str(FILE *out, const char *s)
{
	/* valid UTF-8 for pandas' reader, control characters but CR, LF and tab as U+FFFD */
	const unsigned char *p = (const unsigned char *)s;
	/* a cell a spreadsheet would take for a formula (=, +, -, @, tab, CR first; OWASP's
	 * CSV injection) gets a quote first, as the ledger's CSV does; "-" alone (not
	 * measured) stays */
	bool formula = *s && strchr("=+-@\t\r", *s) && strcmp(s, "-") != 0;
	bool quoted = formula || strpbrk(s, ",\"\r\n") != NULL;
	if (quoted)
		fputc('"', out);
	if (formula)
		fputc('\'', out);
	for (size_t i = 0, n = strlen(s), len, skip; i < n; i += len) {
		if (!(len = gp_utf8_shown(p + i, n - i, "\t\r\n", &skip))) {
			fputs("\xef\xbf\xbd", out);
			len = skip;
			continue;
		}
		if (p[i] == '"')
			fputc('"', out);
		fwrite(p + i, 1, len, out);
	}
	if (quoted)
		fputc('"', out);
}

void gp_csv_rank(FILE *out, const gp_rank_t *r)
{
	bool first = true;
	for (size_t i = 0; i < gp_rank_nfields; i++) {
		const gp_field_t *f = &gp_rank_fields[i];
		if (f->type == GP_FT_FN)
			continue;
		fputs(first ? "" : ",", out);
		first = false;
		if (!r) {
			fprintf(out, "%s%s%s", f->section ? f->section : "", f->section ? "." : "",
			        f->key);
			continue;
		}
		/* null in the JSON (its section, or the figure not measured): an empty cell */
		bool shown = section_shown(f->section, r) && (!f->measured || f->measured(r));
		const char *p = (const char *)r + f->off;
		double d;
		int n;
		if (!shown)
			continue;
		if (f->type == GP_FT_STR) {
			gp_csv_str(out, p);
		} else if (f->type == GP_FT_TEXT) {
			gp_csv_str(out, gp_txt(*(const gp_text_t *)(const void *)p));
		} else if (f->type == GP_FT_F64) {
			memcpy(&d, p, sizeof(d));
			if (isfinite(d))
				fprintf(out, "%.*f", f->prec, d);
		} else if (f->type == GP_FT_I32_NULL) {
			memcpy(&n, p, sizeof(n));
			if (n >= 0)
				fprintf(out, "%d", n);
		} else {
			value(out, f, r);
		}
	}
	fputs("\r\n", out);
}

void gp_fields_print(FILE *out, bool markdown)
{
	const char *open = "";
	if (markdown)
		fprintf(out, "| key | unit | what |\n|---|---|---|\n");
	for (size_t i = 0; i < gp_rank_nfields; i++) {
		const gp_field_t *f = &gp_rank_fields[i];
		const char *sec = f->section ? f->section : "";
		char key[96];
		snprintf(key, sizeof(key), "%s%s%s", sec, *sec ? "." : "", f->key);
		if (markdown && strcmp(sec, open) && *sec)
			fprintf(out, "| **`%s`** | | |\n", sec);
		open = sec;
		/* a figure not measured everywhere says so, unless its doc does */
		const char *nm =
		    f->measured && !strstr(f->doc, "null") ? " (null: not measured)" : "";
		if (markdown)
			fprintf(out, "| `%s` | %s | %s%s |\n", key, f->unit ? f->unit : "", f->doc,
			        nm);
		else
			fprintf(out, "%-40s %-6s %s%s\n", key, f->unit ? f->unit : "-", f->doc, nm);
	}
}
