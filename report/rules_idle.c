/* Findings about the GPU's idle time (findings.h): synchronisation stalls, waiting for the
 * input, waiting for the host, and the gaps between many short kernels. Each is sized by
 * the idle time a fix would remove, per step; the engine takes gpuprof's own tracing out
 * and holds the saving to the headline step's idle time (gp_idle_bound_ms). */
#include "config.h"
#include "attribution.h"
#include "findings.h"
#include "gputime.h"

#include <stdio.h>
#include <string.h>

/* ---- sync_stall ---- */

enum { SYNC_PER_STEP, SYNC_MIN_IDLE };
static const gp_threshold_t sync_th[] = {
    [SYNC_PER_STEP] = {"calls_per_step", 50, "%",
                       "blocking calls (stream, device or event synchronize, blocking "
                       "device-to-host copies) in at least this share of the steps"},
    [SYNC_MIN_IDLE] = {"min_idle", 0.25, "%",
                       "the GPU's idle time after them, of the step: found and sized at this "
                       "much (a GPU-bound step hides most of its cost)"},
};

static bool sync_size(const gp_rule_ctx_t *c, const gp_rank_t *r, unsigned i, gp_size_t *s)
{
	const gp_rule_t *rule = &gp_rule_sync_stall;
	unsigned n = gp_gsteps(r);
	s->ms = gp_per_step_ms(r, r->gpu.idle_sync_ns);
	s->step_ms = gp_step_of(r);
	s->bound_ms = gp_idle_bound_ms(r);
	return r->sync.calls && !(n && r->sync.calls < gp_th(rule, SYNC_PER_STEP) * n);
}

static void sync_describe(const gp_rule_ctx_t *c, gp_finding_t *f, const gp_rank_t *w,
                          const gp_size_t *s)
{
	snprintf(f->title, sizeof(f->title),
	         "Synchronisation stalls leave the GPU idle: %.2f ms per step (%.1f%%) on rank %d",
	         s->saving_ms, s->saving_pct, w->id.rank);
	snprintf(f->evidence, sizeof(f->evidence),
	         "%llu blocking calls (stream/device/event synchronize, blocking device-to-host "
	         "copies) held the host %.1f ms in all, most %s%s%s; after they "
	         "returned the GPU sat idle %.1f ms waiting for the next launch",
	         (unsigned long long)w->sync.calls, w->sync.ns / 1e6,
	         w->sync.range.s ? "inside NVTX range '" : "outside any NVTX range",
	         gp_txt(w->sync.range), w->sync.range.s ? "'" : "", w->gpu.idle_sync_ns / 1e6);
	gp_attr_sync_evidence(c->job, f->evidence, sizeof(f->evidence));
	snprintf(f->threshold, sizeof(f->threshold),
	         "a blocking call in >= %.0f%% of steps and GPU idle after them >= %.2g%% of the "
	         "step",
	         sync_th[SYNC_PER_STEP].value, sync_th[SYNC_MIN_IDLE].value);
	snprintf(f->fix, sizeof(f->fix), "%s",
	         gp_words(w,
	                  "Each blocking read of a GPU value (loss.item(), .cpu(), printing a "
	                  "tensor, 'if loss < x') drains the pipeline. Log every N steps or "
	                  "asynchronously (non_blocking copy into pinned memory, read it a step "
	                  "later).",
	                  "Each read of a device value on the host (jax.device_get, float(), "
	                  "printing an array, np.asarray) waits for the GPU's queue to drain. "
	                  "Fetch metrics every N steps or keep them on the device, and block "
	                  "only where a step is timed.",
	                  "Each cudaDeviceSynchronize, cudaStreamSynchronize or "
	                  "cudaEventSynchronize, and each blocking cudaMemcpy to the host, "
	                  "drains the pipeline. Synchronise only where the host needs a result "
	                  "(wait on a step's event a step later) and copy results with "
	                  "cudaMemcpyAsync into pinned memory."));
}

const gp_rule_t gp_rule_sync_stall = {
    .id = "sync_stall",
    .name = "synchronisation stalls",
    .tier = GP_F_TIME,
    .sized = true,
    .th = sync_th,
    .nth = GP_NTH(sync_th),
    .saving_th = SYNC_MIN_IDLE,
    .fires = "a blocking call in >= {calls_per_step} of steps and GPU idle after them (class "
             "*sync*) >= {min_idle} of the step",
    .saves = "that idle per step",
    .advice = "A blocking read of a GPU value every step (loss.item(), .cpu(), print) drains "
              "the pipeline: log every N steps or asynchronously.",
    .size = sync_size,
    .describe = sync_describe,
};

/* ---- input_bound ---- */

/* The GPU idle because the program was waiting for its next batch (the PyTorch
 * integration times DataLoader.__next__). */
enum { INPUT_MIN_IDLE };
static const gp_threshold_t input_th[] = {
    [INPUT_MIN_IDLE] = {"min_idle", 10, "%",
                        "the GPU's idle time while the program waited for its next batch, "
                        "of the step"},
};

static bool input_size(const gp_rule_ctx_t *c, const gp_rank_t *r, unsigned i, gp_size_t *s)
{
	s->ms = gp_per_step_ms(r, r->gpu.idle_data_ns);
	s->step_ms = gp_step_of(r);
	s->bound_ms = gp_idle_bound_ms(r);
	/* without kernel records (modes without cuda) the GPU's idle is not seen: the
	 * program's own wait per step, against its step, stands for it */
	if (!r->gpu.nkernels && r->steps.n_post && r->gpu.data_waits && r->steps.mean_ms > 0) {
		s->ms = r->gpu.data_wait_ns / 1e6 / r->steps.n_post;
		s->step_ms = r->steps.mean_ms;
		s->bound_ms = -1;
	}
	return r->steps.n_post > 0;
}

static void input_describe(const gp_rule_ctx_t *c, gp_finding_t *f, const gp_rank_t *w,
                           const gp_size_t *s)
{
	unsigned n = gp_gsteps(w);
	snprintf(
	    f->title, sizeof(f->title),
	    "Input-bound: the GPU waits %.2f ms per step (%.1f%%) for the next batch on rank %d",
	    s->saving_ms, s->saving_pct, w->id.rank);
	snprintf(f->evidence, sizeof(f->evidence),
	         "the program waited in DataLoader.__next__ %.2f ms per step on average (%llu "
	         "batches in the post-warm-up steps) while the GPU was busy %.1f%% of the steps; "
	         "the GPU sat idle %.1f ms in %u traced steps while the host waited for data",
	         w->gpu.data_waits
	             ? w->gpu.data_wait_ns / 1e6 / (w->steps.n_post ? w->steps.n_post : 1)
	             : 0,
	         (unsigned long long)w->gpu.data_waits, w->shares.busy_pct,
	         w->gpu.idle_data_ns / 1e6, n);
	snprintf(f->threshold, sizeof(f->threshold),
	         "GPU idle while waiting for the next batch >= %.0f%% of the step",
	         input_th[INPUT_MIN_IDLE].value);
	snprintf(f->fix, sizeof(f->fix),
	         "The input pipeline is the bottleneck: more DataLoader workers (num_workers), "
	         "persistent_workers=True and a larger prefetch_factor; pin_memory=True with "
	         "non_blocking copies; decode and augment on the GPU or preprocess offline.");
}

const gp_rule_t gp_rule_input_bound = {
    .id = "input_bound",
    .name = "input-bound",
    .tier = GP_F_TIME,
    .sized = true,
    .th = input_th,
    .nth = GP_NTH(input_th),
    .saving_th = INPUT_MIN_IDLE,
    .fires = "GPU idle while the program waited in `DataLoader.__next__` >= {min_idle} of the "
             "step (without kernel records: the program's own wait per step)",
    .saves = "that idle per step, at most the step's idle time",
    .advice = "The input pipeline is the bottleneck: more DataLoader workers, "
              "persistent_workers, prefetching, pinned memory with non_blocking copies.",
    .size = input_size,
    .describe = input_describe,
};

/* ---- idle_gaps ---- */

/* The GPU idle because the host had not launched the next work yet (no synchronisation
 * pending, not waiting for data), sized without gpuprof's own tracing. What the host was
 * doing chooses the advice: compiling, launching (many short kernels, time in launch
 * calls), or something gpuprof cannot see. */
enum {
	IDLE_MIN,
	IDLE_COMPILING,
	IDLE_LAUNCH_GATE,
	IDLE_LAUNCH_HOST,
	IDLE_LAUNCH_KERNELS,
	IDLE_LAUNCH_US,
	IDLE_AHEAD_STEPS,
	IDLE_AHEAD_SHARE
};
static const gp_threshold_t idle_th[] = {
    [IDLE_MIN] = {"min_idle", 10, "%",
                  "host-caused idle, gpuprof's tracing taken out, of the step"},
    [IDLE_COMPILING] = {"compiling", 50, "%",
                        "titled compiling where at least this share of that idle was "
                        "inside a compilation"},
    [IDLE_LAUNCH_GATE] = {"launch_kernels_min", 50, "kernels",
                          "launch-bound needs at least this many kernels per step"},
    [IDLE_LAUNCH_HOST] = {"launch_host", 25, "%",
                          "launch-bound: the host inside launch calls this share of the "
                          "step, or ..."},
    [IDLE_LAUNCH_KERNELS] = {"launch_kernels", 100, "kernels",
                             "... at least this many kernels per step ..."},
    [IDLE_LAUNCH_US] = {"launch_kernel_us", 20, "us", "... averaging under this long"},
    [IDLE_AHEAD_STEPS] = {"waits_steps", 5, "steps",
                          "a JAX program waits for every step: at least this many traced "
                          "steps ..."},
    [IDLE_AHEAD_SHARE] = {"waits_share", 80, "%",
                          "... with the GPU idle before this share of their launches (the "
                          "host never ran ahead)"},
};

static bool idle_size(const gp_rule_ctx_t *c, const gp_rank_t *r, unsigned i, gp_size_t *s)
{
	uint64_t host = r->gpu.idle_host_ns > r->gpu.idle_data_ns
	                    ? r->gpu.idle_host_ns - r->gpu.idle_data_ns
	                    : 0;
	s->ms = gp_per_step_ms(r, host);
	s->tracer_ms = gp_gsteps(r) ? gp_tracer_ms(r, &s->tracer_how) : 0;
	s->step_ms = gp_step_of(r);
	/* never more than the idle time the headline's step has (a torch.compile program was
	 * told 10.95 ms of an 11.46 ms step whose GPU was busy 36 % of it: issue 49) */
	s->bound_ms = gp_idle_bound_ms(r);
	return true;
}

/* what the host was doing while the GPU waited: the title's words and the advice */
enum idle_why { IDLE_UNSEEN, IDLE_COMPILE, IDLE_LAUNCH, IDLE_JAX_WAITS };
static enum idle_why idle_why(const gp_rank_t *w, uint64_t host, unsigned traced, bool *never_ahead)
{
	double step = w->steps.median_ms > 0 ? w->steps.median_ms : 1;
	const gp_rule_t *rule = &gp_rule_idle_gaps;
	bool compiling = host && w->gpu.idle_compile_ns >= gp_th(rule, IDLE_COMPILING) * host;
	bool launching = !compiling && w->gpu.kernels_per_step >= idle_th[IDLE_LAUNCH_GATE].value &&
	                 (w->gpu.host_busy_per_step_ms >= gp_th(rule, IDLE_LAUNCH_HOST) * step ||
	                  (w->gpu.kernels_per_step >= idle_th[IDLE_LAUNCH_KERNELS].value &&
	                   w->gpu.kernel_mean_us < idle_th[IDLE_LAUNCH_US].value));
	/* the GPU idle before (nearly) every step's launch: the host never ran ahead. In JAX,
	 * whose dispatch is asynchronous, that is a wait for the GPU each step (its
	 * block_until_ready is no CUDA call gpuprof sees) */
	*never_ahead = traced >= idle_th[IDLE_AHEAD_STEPS].value &&
	               (double)w->gpu.idle_host_gaps >= gp_th(rule, IDLE_AHEAD_SHARE) * traced;
	return compiling                      ? IDLE_COMPILE
	       : launching                    ? IDLE_LAUNCH
	       : *never_ahead && gp_is_jax(w) ? IDLE_JAX_WAITS
	                                      : IDLE_UNSEEN;
}

/* IDLE_UNSEEN's advice in each framework's words (gp_words) */
static const char *const unseen_fix[] = {
    "The host was busy elsewhere between launches, neither in a CUDA call nor waiting for a "
    "DataLoader batch: Python work, I/O, logging or a sleep that gpuprof cannot see. Profile "
    "the host (py-spy dump/record on the rank's process) and move that work off the step or "
    "overlap it with the GPU.",
    "The host was busy elsewhere between launches, not in a CUDA call: Python work, input "
    "preparation, I/O or logging that gpuprof cannot see. Profile the host (py-spy "
    "dump/record on the rank's process) and prepare the next batch while the step runs "
    "(jax.device_put of batch N+1 before step N returns).",
    "The host was busy elsewhere between launches, not in a CUDA call: host code, I/O, "
    "logging or a sleep that gpuprof cannot see. Profile the host (perf record -g -p on the "
    "rank's process) and move that work off the step or overlap it with the GPU (issue the "
    "next step's launches first).",
};

/* IDLE_LAUNCH's advice, after the kernels per step, in each framework's words */
static const char *const launch_fix[] = {
    "Capture the step in a CUDA graph (torch.compile mode=\"reduce-overhead\", "
    "torch.cuda.graphs), fuse small kernels (torch.compile), or give each kernel more work "
    "(a larger batch).",
    "Put the whole step under one jax.jit (XLA fuses its small operations and launches the "
    "step as a CUDA graph) rather than calling jitted pieces or jnp operations one by one, or "
    "give each kernel more work (a larger batch).",
    "Capture the step's launches once in a CUDA graph (cudaStreamBeginCapture and "
    "cudaStreamEndCapture, cudaGraphInstantiate, then one cudaGraphLaunch per step), fuse "
    "small kernels into larger ones, or give each kernel more work (a larger batch).",
};

static const char *idle_fix[] = {
    [IDLE_UNSEEN] = NULL, /* unseen_fix, by framework */
    [IDLE_COMPILE] = "The host compiles during the steps: keep shapes and dtypes stable (pad "
                     "or bucket sequence lengths), mark static arguments (jax.jit "
                     "static_argnums, torch.compile dynamic=True), and warm up every shape "
                     "before timing.",
    [IDLE_JAX_WAITS] = "JAX dispatches asynchronously, so a host that starts each step only "
                       "once the GPU has finished the last is waiting for it: a "
                       "block_until_ready, jax.device_get, float() or print of a device value "
                       "in every step. Let dispatch run ahead: fetch and log metrics every N "
                       "steps (or keep them on the device), and block only where a step is "
                       "timed.",
};

static void idle_describe(const gp_rule_ctx_t *c, gp_finding_t *f, const gp_rank_t *w,
                          const gp_size_t *s)
{
	uint64_t host = w->gpu.idle_host_ns -
	                (w->gpu.idle_data_ns < w->gpu.idle_host_ns ? w->gpu.idle_data_ns : 0);
	unsigned traced = w->capture.window ? w->capture.steps : w->steps.n_post;
	bool never_ahead;
	enum idle_why why = idle_why(w, host, traced, &never_ahead);
	static const char *const said[] = {[IDLE_UNSEEN] = "",
	                                   [IDLE_COMPILE] = " (compiling)",
	                                   [IDLE_LAUNCH] = " (launch-bound)",
	                                   [IDLE_JAX_WAITS] = " (it waits for every step)"};
	snprintf(f->title, sizeof(f->title),
	         "GPU idle waiting for the host%s: %.2f ms per step (%.1f%%) on rank %d", said[why],
	         s->saving_ms, s->saving_pct, w->id.rank);
	char tr[400] = "", ahead[120] = "";
	if (never_ahead)
		snprintf(
		    ahead, sizeof(ahead),
		    "; the GPU idled before %llu of %u steps' launches: the host never ran ahead",
		    (unsigned long long)(w->gpu.idle_host_gaps < traced ? w->gpu.idle_host_gaps
		                                                        : traced),
		    traced);
	double w_tr = s->tracer_ms < s->ms ? s->tracer_ms : s->ms;
	if (w_tr > 0.005)
		snprintf(
		    tr, sizeof(tr),
		    "; of the %.2f ms measured per traced step, %.2f ms is gpuprof's own tracing "
		    "(%s) and is not counted",
		    s->ms, w_tr, s->tracer_how);
	snprintf(f->evidence, sizeof(f->evidence),
	         "GPU busy %.1f%% of the traced steps; idle %.1f ms waiting for launches that came "
	         "after it had finished (no synchronisation pending, not waiting for data), of "
	         "which %.1f ms with the host inside CUDA calls and %.1f ms compiling; the host "
	         "spent %.2f ms per step in launch calls for %.0f kernels of %.1f us%s%s",
	         w->shares.busy_pct, host / 1e6, w->gpu.idle_launch_ns / 1e6,
	         w->gpu.idle_compile_ns / 1e6, w->gpu.host_busy_per_step_ms,
	         w->gpu.kernels_per_step, w->gpu.kernel_mean_us, ahead, tr);
	snprintf(f->threshold, sizeof(f->threshold),
	         "host-caused idle, gpuprof's tracing taken out, >= %.0f%% of the step",
	         idle_th[IDLE_MIN].value);
	if (why == IDLE_LAUNCH) {
		snprintf(f->fix, sizeof(f->fix),
		         "Launch-bound: the host cannot issue %.0f kernels per step as fast as the "
		         "GPU runs them. ",
		         w->gpu.kernels_per_step);
		gp_cat(f->fix, sizeof(f->fix), "%s",
		       gp_words(w, launch_fix[0], launch_fix[1], launch_fix[2]));
	} else
		snprintf(f->fix, sizeof(f->fix), "%s",
		         why == IDLE_UNSEEN
		             ? gp_words(w, unseen_fix[0], unseen_fix[1], unseen_fix[2])
		             : idle_fix[why]);
}

const gp_rule_t gp_rule_idle_gaps = {
    .id = "idle_gaps",
    .name = "GPU idle waiting for the host",
    .tier = GP_F_TIME,
    .sized = true,
    .th = idle_th,
    .nth = GP_NTH(idle_th),
    .saving_th = IDLE_MIN,
    .fires = "host-caused idle (no sync pending, not waiting for data), gpuprof's tracing "
             "taken out, >= {min_idle} of the step; titled and advised by what the host did: "
             "compiling (>= {compiling} of the idle inside a compilation), launch-bound (with "
             ">= {launch_kernels_min} per step: launch calls >= {launch_host} of the step, or "
             ">= {launch_kernels} per step averaging < {launch_kernel_us}), in a JAX process "
             "whose GPU idled before >= {waits_share} of its traced steps (at least "
             "{waits_steps}; `gpu.idle_host_gaps`: its host never ran ahead) a wait for every "
             "step (block_until_ready, device_get: no CUDA call), else work gpuprof cannot see",
    .saves = "that idle per step, tracing taken out, at most the step's idle time",
    .advice = "The GPU waits for the host between launches: host work, I/O or logging in the "
              "step, or too many small kernels (CUDA graphs, torch.compile).",
    .size = idle_size,
    .describe = idle_describe,
};

/* ---- fragmentation ---- */

enum { FRAG_MIN_KERNELS, FRAG_SMALL_US, FRAG_SMALL_SHARE, FRAG_BUSY_MAX, FRAG_MIN_SAVING };
static const gp_threshold_t frag_th[] = {
    [FRAG_MIN_KERNELS] = {"min_kernels", 100, "kernels",
                          "kernels recorded in the steady state, at least"},
    [FRAG_SMALL_US] = {"small_kernel", GP_SMALL_KERNEL_US, "us",
                       "a kernel shorter than this is small (`gpu.small_kernels`; gputime.h, "
                       "GP_SMALL_KERNEL_US)"},
    [FRAG_SMALL_SHARE] = {"small_share", 50, "%", "small kernels' share of the kernels, at least"},
    [FRAG_BUSY_MAX] = {"busy_max", 70, "%", "the GPU busy less than this share of the span"},
    [FRAG_MIN_SAVING] = {"min_saving", 1, "%",
                         "the gaps between dependent kernels, tracing's share out, of the step"},
};

static bool frag_size(const gp_rule_ctx_t *c, const gp_rank_t *r, unsigned i, gp_size_t *s)
{
	const gp_rule_t *rule = &gp_rule_fragmentation;
	if (r->gpu.nkernels < frag_th[FRAG_MIN_KERNELS].value || !r->gpu.span_ns ||
	    (double)r->gpu.small_kernels / r->gpu.nkernels < gp_th(rule, FRAG_SMALL_SHARE) ||
	    (double)r->gpu.busy_ns / r->gpu.span_ns >= gp_th(rule, FRAG_BUSY_MAX))
		return false;
	double ms = gp_per_step_ms(r, r->gpu.idle_kernel_ns);
	/* the gaps of traced steps hold gpuprof's own tracing (its cost per launch), which the
	 * untraced steps do not pay: these gaps' share of it (their share of the traced steps'
	 * idle time) is not counted, as in idle_gaps */
	unsigned n = gp_gsteps(r);
	double idle = n && r->gpu.span_ns > r->gpu.busy_ns
	                  ? (double)(r->gpu.span_ns - r->gpu.busy_ns) / 1e6 / n
	                  : 0;
	s->ms = ms;
	s->tracer_ms =
	    n && idle > 0 ? gp_tracer_ms(r, &s->tracer_how) * ms / (ms > idle ? ms : idle) : 0;
	s->step_ms = gp_step_of(r);
	s->bound_ms = gp_idle_bound_ms(r);
	return true;
}

static void frag_describe(const gp_rule_ctx_t *c, gp_finding_t *f, const gp_rank_t *w,
                          const gp_size_t *s)
{
	char tr[400] = "";
	double w_tr = s->tracer_ms < s->ms ? s->tracer_ms : s->ms;
	if (w_tr > 0.005)
		snprintf(tr, sizeof(tr),
		         "; of the %.2f ms of such gaps per traced step, %.2f ms is gpuprof's own "
		         "tracing (their share of the traced steps' idle time, of what tracing "
		         "cost: %s) and is not counted",
		         s->ms, w_tr, s->tracer_how);
	snprintf(f->title, sizeof(f->title),
	         "Kernel fragmentation: %.0f%% of kernels shorter than %.0f us on rank %d; %.2f ms "
	         "per step (%.1f%%) lost between them",
	         100.0 * w->gpu.small_kernels / w->gpu.nkernels, frag_th[FRAG_SMALL_US].value,
	         w->id.rank, s->saving_ms, s->saving_pct);
	snprintf(f->evidence, sizeof(f->evidence),
	         "%llu kernels, mean %.1f us, %.0f per step; %llu ran shorter than their launch "
	         "call; median launch latency %.1f us; GPU busy %.1f%%; gaps under 30 us between "
	         "kernels %.1f ms%s",
	         (unsigned long long)w->gpu.nkernels, w->gpu.kernel_mean_us,
	         w->gpu.kernels_per_step, (unsigned long long)w->gpu.short_vs_launch,
	         w->gpu.launch_latency_us, w->shares.busy_pct, w->gpu.idle_kernel_ns / 1e6, tr);
	snprintf(f->threshold, sizeof(f->threshold),
	         ">= %.0f%% of kernels < %.0f us while GPU busy < %.0f%%, gaps >= %.0f%% of the "
	         "step",
	         frag_th[FRAG_SMALL_SHARE].value, frag_th[FRAG_SMALL_US].value,
	         frag_th[FRAG_BUSY_MAX].value, frag_th[FRAG_MIN_SAVING].value);
	snprintf(
	    f->fix, sizeof(f->fix), "%s",
	    gp_words(w,
	             "Launch overhead dominates: fuse the elementwise chain with torch.compile "
	             "(mode=\"reduce-overhead\" also captures the step in a CUDA graph), and use "
	             "fused implementations (torch.optim's fused=True or foreach=True, "
	             "torch.nn.functional.scaled_dot_product_attention).",
	             "Launch overhead dominates: put more of the step under one jax.jit (XLA "
	             "fuses the elementwise chain inside it and launches the step as a CUDA "
	             "graph) rather than calling jnp operations or small jitted functions one by "
	             "one from Python.",
	             "Launch overhead dominates: fuse the chain of small kernels into fewer, "
	             "larger ones (a kernel that does several elementwise steps, cuBLASLt "
	             "epilogues, CUTLASS), or capture the step once in a CUDA graph "
	             "(cudaStreamBeginCapture and cudaStreamEndCapture, cudaGraphInstantiate, then "
	             "one cudaGraphLaunch per step)."));
}

const gp_rule_t gp_rule_fragmentation = {
    .id = "fragmentation",
    .name = "kernel fragmentation",
    .tier = GP_F_TIME,
    .sized = true,
    .th = frag_th,
    .nth = GP_NTH(frag_th),
    .saving_th = FRAG_MIN_SAVING,
    .fires = ">= {min_kernels}, >= {small_share} of them < {small_kernel}, GPU busy < "
             "{busy_max}, kernel_wait, tracing's share out, >= {min_saving} of the step",
    .saves = "kernel_wait per step, less these gaps' share of gpuprof's tracing (their share "
             "of the traced steps' idle time, times what tracing cost a step), at most the "
             "step's idle time",
    .advice = "Many tiny kernels per step: fuse them or capture the step in a CUDA graph "
              "(torch.compile mode=reduce-overhead).",
    .size = frag_size,
    .describe = frag_describe,
};
