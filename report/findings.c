/* Findings: the seed's diagnostic workflow as a table of rules. Each rule looks at every
 * rank, sizes what a fix would save on it (time per step from the timeline, or bytes),
 * and reports the rank where that saving is largest, with its threshold, evidence and
 * the fix the seed recommends. The list comes in tiers: how the job ended first, then
 * time findings by their saving, then memory findings by theirs; a straggler's effects
 * on the other ranks (their waits in collectives and synchronisation) follow it, marked
 * as its effects, instead of standing as advice of their own. Thresholds are named
 * constants here and documented in doc/report.md. */
#include "config.h"
#include "job.h"
#include "event.h"
#include "stats.h"
#include "kernelclass.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define MIN_SAVING_PCT    1.0 /* a time finding must save >= 1 % of the step */
#define SYNC_MIN_PER_STEP 0.5 /* sync_stall: a blocking call in half the steps ... */
#define SYNC_MIN_PCT                                                                               \
	0.25                  /* ... leaving the GPU idle >= 0.25 % of the step: found,            \
	                         and sized (a GPU-bound step hides most of its cost) */
#define IDLE_HOST_PCT    10.0 /* idle_gaps: host waits >= 10 % of the step */
#define FRAG_SMALL_SHARE 0.50 /* >= 50% of kernels under 10 us ... */
#define FRAG_BUSY_MAX    0.70 /* ... while the GPU is busy < 70% of the span */
#define COMM_SHARE_MIN   0.10
#define COMM_OVERLAP_MAX 0.30
#define STRAGGLER_EXCESS                                                                           \
	0.30                        /* own work >= 130 % of the other ranks' (two ranks            \
	                               sharing one H200 differed by 21 % with nothing planted) */
#define HOST_AHEAD_RATIO        0.5 /* the step range's CPU time < half the GPU step */
#define LEAK_MIN_BYTES_PER_STEP 1024.0
#define OPT_STATE_SHARE         0.25 /* optimizer state >= 25% of peak device memory ... */
#define MEM_PRESSURE_SHARE                                                                         \
	0.50 /* ... with that peak >= 50 % of the card's memory: below it, memory is no constraint \
	        and freeing some buys nothing */
#define MEM_NEAR_LIMIT 0.90 /* memory_near_limit: the peak >= 90 % of the card, no OOM (yet) */
#define FP32_GEMM_SHARE                                                                            \
	0.10 /* fp32_no_tensor_cores: GEMMs on CUDA cores >= 10 % of the kernels' time ... */
#define FP32_TF32_GAIN                                                                             \
	0.5 /* ... sized as half their time: TF32 tensor cores run fp32 matmuls at 7-8 times the   \
	       FFMA rate (A100 156 against 19.5 TFLOPS, H100 SXM 495 against 67, dense) */

/* GPU window of a rank: steps its GPU statistics cover (0: no steps known) */
static unsigned gsteps(const gp_rank_t *r)
{
	return r->capture.window ? r->capture.steps : r->steps.n_post;
}

/* A rank's time t (ns, over its GPU window) as ms per step and % of its step; without
 * steps, as a share of the GPU span. Per step: over the steps the window holds (the
 * traced post-warm-up steps); % of the step: of the headline step time. */
static void per_step(const gp_rank_t *r, uint64_t t, double *ms, double *pct)
{
	unsigned n = gsteps(r);
	if (n && r->steps.median_ms > 0) {
		*ms = (double)t / 1e6 / n;
		/* of the mean step: savings add up in time (the median is the headline's) */
		double step = r->steps.mean_ms > 0 ? r->steps.mean_ms : r->steps.median_ms;
		*pct = 100.0 * *ms / step;
	} else { /* no steps: no per-step figure, no time finding sized by one */
		*ms = 0;
		*pct = 0;
	}
}

/* exposed communication: NCCL kernel time not overlapped by compute, per step (ms) */
static double exposed_comm_ms(const gp_rank_t *r)
{
	double ms, pct;
	per_step(r, r->gpu.comm_ns > r->gpu.overlap_ns ? r->gpu.comm_ns - r->gpu.overlap_ns : 0,
	         &ms, &pct);
	return gsteps(r) ? ms : 0;
}

typedef struct rule_ctx {
	gp_job_t *job;
	const gp_rank_t *straggler;
} rule_ctx_t;

static gp_finding_t *add(gp_job_t *job, const char *id, int kind, const gp_rank_t *r)
{
	if (job->nf == sizeof(job->f) / sizeof(job->f[0]))
		return NULL;
	gp_finding_t *f = &job->f[job->nf++];
	memset(f, 0, sizeof(*f));
	snprintf(f->id, sizeof(f->id), "%s", id);
	f->kind = kind;
	f->rank = r ? r->id.rank : -1;
	return f;
}

static gp_finding_t *add_time(gp_job_t *job, const char *id, const gp_rank_t *r, double ms,
                              double pct)
{
	gp_finding_t *f = add(job, id, GP_F_TIME, r);
	if (f) {
		f->saving_ms = ms;
		f->saving_pct = pct;
		f->score = pct / 100;
	}
	return f;
}

/* The framework a rank's advice speaks: its integration's own word (PyTorch's or JAX's),
 * else its kernels' names (at::native: PyTorch; XLA's fusions: JAX), else CUDA C. */
enum framework { FW_CUDA = 0, FW_TORCH = 1, FW_JAX = 2 };
static enum framework framework_of(const gp_rank_t *r)
{
	if (!strncmp(gp_txt(r->torch.info), "jax ", 4))
		return FW_JAX;
	if (r->torch.seen || r->gpu.torch_kernels)
		return FW_TORCH;
	return r->gpu.xla_kernels ? FW_JAX : FW_CUDA;
}

/* One of three sentences by the rank's framework */
static const char *words(const gp_rank_t *r, const char *torch, const char *jax, const char *cuda)
{
	enum framework fw = framework_of(r);
	return fw == FW_TORCH ? torch : fw == FW_JAX ? jax : cuda;
}

/* ---- how the job ended ---- */

/* How a rank ended, as the outcome findings tell it. */
struct ending {
	bool ended, sig;
	int code;
	char reached[96];
};

/* Out of device memory: the refused allocations, PyTorch's own account. */
static void outcome_oom(gp_finding_t *f, const gp_job_t *job, const gp_rank_t *r,
                        const struct ending *x)
{
	snprintf(f->title, sizeof(f->title),
	         "Rank %d ran out of device memory (CUDA out of memory) and exited %s", r->id.rank,
	         x->sig ? "on a signal" : "non-zero");
	if (r->memory.oom_calls)
		snprintf(f->evidence, sizeof(f->evidence),
		         "%llu device allocation(s) refused for lack of memory, the "
		         "last at %.3f s%s; ",
		         (unsigned long long)r->memory.oom_calls, r->memory.oom_t_ns / 1e9,
		         r->memory.oom_step >= 0 ? " in the last step" : "");
	if (r->torch.oom) /* PyTorch's own account of the failed request */
		snprintf(
		    f->evidence + strlen(f->evidence), sizeof(f->evidence) - strlen(f->evidence),
		    "PyTorch asked for %.1f MiB with %.1f MiB free of %.1f "
		    "MiB%s%s; ",
		    r->torch.oom_requested / 1048576.0, r->torch.oom_free / 1048576.0,
		    r->torch.oom_total / 1048576.0, r->torch.noom_owner ? "; largest holder: " : "",
		    r->torch.noom_owner ? gp_torch_owners(&r->torch, GP_OWN_OOM)[0].stack : "");
	snprintf(f->evidence + strlen(f->evidence), sizeof(f->evidence) - strlen(f->evidence),
	         "the program then %s %d %s; peak device memory %.1f MiB",
	         x->sig ? "died of signal" : "exited with status",
	         x->sig ? WTERMSIG(r->outcome.wait_status) : x->code, x->reached,
	         (r->memory.peak ? r->memory.peak : r->torch.max_reserved) / 1048576.0);
	snprintf(f->fix, sizeof(f->fix),
	         "See 'Where the memory goes': the peak's stack and growth per step say "
	         "what filled the GPU. Reduce the batch or sequence, free what is kept "
	         "across steps, or use activation checkpointing or sharding.");
}

/* Stopped at the time limit (sacct said TIMEOUT). */
static void outcome_time_limit(gp_finding_t *f, const gp_job_t *job, const gp_rank_t *r,
                               const struct ending *x)
{
	snprintf(f->title, sizeof(f->title), "Rank %d was stopped at the job's time limit %s",
	         r->id.rank, x->reached);
	snprintf(f->evidence, sizeof(f->evidence), "sacct: State %s; the rank %s%s",
	         job->sacct_state,
	         !x->ended ? "left no end record"
	         : x->sig  ? "was killed by signal"
	                   : "exited with status",
	         "");
	if (x->ended)
		snprintf(f->evidence + strlen(f->evidence),
		         sizeof(f->evidence) - strlen(f->evidence), " %d",
		         x->sig ? WTERMSIG(r->outcome.wait_status) : x->code);
	snprintf(f->fix, sizeof(f->fix),
	         "Ask for the time the run needs (--time; the median step times the "
	         "steps still to go), or checkpoint on SIGTERM (srun --signal, "
	         "sbatch --signal=B:TERM@60) and resubmit from the checkpoint.");
}

/* No end record: killed with its agent, or salvaged. */
static void outcome_incomplete(gp_finding_t *f, const gp_job_t *job, const gp_rank_t *r,
                               const struct ending *x)
{
	snprintf(f->title, sizeof(f->title),
	         "Rank %d ended without a record of how (killed with its agent, or "
	         "salvaged)",
	         r->id.rank);
	snprintf(f->evidence, sizeof(f->evidence),
	         "the rank file has no end record; what was captured %s is kept", x->reached);
	snprintf(f->fix, sizeof(f->fix),
	         "Check sacct's State (TIMEOUT, CANCELLED, NODE_FAIL, "
	         "OUT_OF_MEMORY) for "
	         "the job; a time limit needs --time or checkpointing.");
}

/* A non-zero exit or a signal. */
static void outcome_failed(gp_finding_t *f, const gp_job_t *job, const gp_rank_t *r,
                           const struct ending *x)
{
	snprintf(f->title, sizeof(f->title), "Rank %d %s %d", r->id.rank,
	         x->sig ? "was killed by signal" : "exited with status",
	         x->sig ? WTERMSIG(r->outcome.wait_status) : x->code);
	snprintf(f->evidence, sizeof(f->evidence), "the program %s %s%s",
	         x->sig ? "was killed" : "failed", x->reached,
	         r->outcome.status_from_node ? "; Slurm's status for the task (its rank file "
	                                       "has no end record: no agent, and the "
	                                       "library's exit hook did not run)"
	                                     : "");
	snprintf(f->fix, sizeof(f->fix),
	         x->sig && (WTERMSIG(r->outcome.wait_status) == SIGTERM ||
	                    WTERMSIG(r->outcome.wait_status) == SIGKILL)
	             ? "SIGTERM/SIGKILL come from Slurm at the time limit or scancel "
	               "(see "
	               "sacct State), or from the kernel's OOM killer (host memory)."
	             : "Read the task's stderr; the figures below cover the run up to "
	               "the "
	               "failure.");
}

/* A launcher (torchrun) that failed: its workers' statuses were its to see. */
static void outcome_launchers(gp_job_t *job)
{
	for (unsigned i = 0; i < job->nlaunchers; i++) {
		const struct gp_launcher *l = &job->launchers[i];
		bool sig = l->has_end && WIFSIGNALED(l->wait_status);
		int code =
		    l->has_end && WIFEXITED(l->wait_status) ? WEXITSTATUS(l->wait_status) : 0;
		if (l->has_end && !sig && !code)
			continue;
		gp_finding_t *f = add(job,
		                      !l->has_end ? "incomplete"
		                      : sig       ? "killed"
		                                  : "failed",
		                      GP_F_OUTCOME, NULL);
		if (!f)
			return;
		f->score = 1;
		if (l->has_end)
			snprintf(f->title, sizeof(f->title), "Task %d's launcher %s %d", l->task,
			         sig ? "was killed by signal" : "exited with status",
			         sig ? WTERMSIG(l->wait_status) : code);
		else
			snprintf(f->title, sizeof(f->title),
			         "Task %d's launcher ended without a record of how", l->task);
		snprintf(f->evidence, sizeof(f->evidence),
		         "the launcher (%s, on %s) started ranks that recorded files of their "
		         "own; how each of them ended is the launcher's to see",
		         l->command, l->node);
		snprintf(f->fix, sizeof(f->fix),
		         "Read the launcher's output (torchrun names the failed rank and its "
		         "exit code); the ranks' figures below cover the run up to the failure.");
		snprintf(f->threshold, sizeof(f->threshold),
		         "any launcher that exits non-zero, dies of a signal or leaves no end "
		         "record");
	}
}

static void rule_outcome(rule_ctx_t *c)
{
	gp_job_t *job = c->job;
	for (unsigned i = 0; i < job->nranks; i++) {
		const gp_rank_t *r = &job->ranks[i];
		/* how it ended: its end record, or Slurm's status where it left none (analyze.c:
		 * a fallback task's node summary) */
		struct ending x = {.ended = r->outcome.has_end || r->outcome.status_from_node};
		x.sig = x.ended && WIFSIGNALED(r->outcome.wait_status);
		x.code = x.ended && WIFEXITED(r->outcome.wait_status)
		             ? WEXITSTATUS(r->outcome.wait_status)
		             : 0;
		if (x.ended && !x.sig && !x.code)
			continue;
		/* Slurm's word on the job, when the report has it (--sacct, or a job id) */
		bool timeout = !strncmp(job->sacct_state, "TIMEOUT", 7);
		bool oom = (r->memory.oom_calls || r->torch.oom) && (x.code || x.sig);
		const char *id = oom        ? "cuda_oom"
		                 : timeout  ? "time_limit"
		                 : !x.ended ? "incomplete"
		                 : x.sig    ? "killed"
		                            : "failed";
		gp_finding_t *f = add(job, id, GP_F_OUTCOME, r);
		if (!f)
			return;
		f->score = 1;
		if (r->steps.n)
			snprintf(x.reached, sizeof(x.reached),
			         "after reaching step %u (%u steps begun)", r->steps.last_step,
			         r->steps.n);
		else
			snprintf(x.reached, sizeof(x.reached), "before any step was recognised");
		if (oom)
			outcome_oom(f, job, r, &x);
		else if (timeout)
			outcome_time_limit(f, job, r, &x);
		else if (!x.ended)
			outcome_incomplete(f, job, r, &x);
		else
			outcome_failed(f, job, r, &x);
		snprintf(f->threshold, sizeof(f->threshold),
		         "any rank that exits non-zero, dies of a signal or leaves no end record");
	}
	outcome_launchers(job);
}

/* The GPU was in use but no process of the rank that was recorded used it: the report's
 * figures describe the wrong process, or none. */
static void rule_unobserved(rule_ctx_t *c)
{
	gp_job_t *job = c->job;
	const gp_rank_t *w = NULL;
	unsigned n = 0;
	for (unsigned i = 0; i < job->nranks; i++) {
		const gp_rank_t *r = &job->ranks[i];
		if (!gp_rank_unobserved(r))
			continue;
		n++;
		if (!w || r->memory.nvml_max > w->memory.nvml_max)
			w = r;
	}
	gp_finding_t *f;
	if (!w || !(f = add(job, "not_observed", GP_F_OUTCOME, w)))
		return;
	f->score = 1;
	snprintf(f->title, sizeof(f->title),
	         "Rank %d used its GPU, but no CUDA work of it was recorded%s", w->id.rank,
	         n > 1 ? " (and on other ranks)" : "");
	char used[200];
	if (w->gpu.nvml_proc_samples)
		snprintf(used, sizeof(used),
		         "NVML listed %u process(es) of the task on the rank's GPU (%.0f MiB)%s",
		         w->gpu.nvml_own_procs, w->gpu.nvml_own_bytes / 1048576.0,
		         w->gpu.nvml_own_procs ? ""
		                               : " and others' while a process of ours "
		                                 "initialised CUDA");
	else
		snprintf(
		    used, sizeof(used),
		    "NVML's memory in use rose %.0f MiB above its first sample (no process list "
		    "from this driver)",
		    w->gpu.nvml_rise / 1048576.0);
	snprintf(f->evidence, sizeof(f->evidence),
	         "%s, up to %.0f MiB in use (mean utilisation %.0f%%), while the %u recorded "
	         "process(es) of the rank made no kernel, copy or set (modes %s); %llu other "
	         "process(es) of the task were not recorded; %u rank(s) like this",
	         used, w->memory.nvml_max / 1048576.0, w->gpu.nvml_util_mean,
	         w->procs.n ? w->procs.n : 1, w->id.modes,
	         (unsigned long long)w->quality.loss[GP_LOSS_PROCESSES], n);
	snprintf(f->threshold, sizeof(f->threshold),
	         "modes with cuda, nothing yielded, no CUDA activity recorded, a process of the "
	         "task in NVML's list of the GPU's processes (without that list: memory in use "
	         ">= %d MiB above the first sample)",
	         GP_UNOBSERVED_MIB);
	snprintf(f->fix, sizeof(f->fix),
	         "The figures below do not describe the program that used the GPU. Report this "
	         "with the rank file (gpuprof dump --events) and the task's process tree; "
	         "GPUPROF_DEBUG=1 logs which process took the rank's ring.");
}

/* Allocated, not used: a rank had a GPU and the task never used it (rank.h: no CUDA work,
 * no process of the task in NVML's lists). What a site that profiles every GPU job wants
 * named first: GPU-hours held for nothing. */
static void rule_unused(rule_ctx_t *c)
{
	gp_job_t *job = c->job;
	const gp_rank_t *w = NULL;
	unsigned n = 0;
	for (unsigned i = 0; i < job->nranks; i++)
		if (gp_rank_gpu_unused(&job->ranks[i]) && n++ == 0)
			w = &job->ranks[i];
	gp_finding_t *f;
	if (!w || !(f = add(job, "gpu_unused", GP_F_OUTCOME, w)))
		return;
	f->score = 0.5; /* after a failure or a GPU fault, which say why it was not used */
	if (n > 1 && n == job->nranks)
		snprintf(f->title, sizeof(f->title),
		         "Every rank was allocated a GPU it never used (%u ranks)", n);
	else
		snprintf(f->title, sizeof(f->title), "Rank %d was allocated a GPU it never used%s",
		         w->id.rank, n > 1 ? " (and other ranks)" : "");
	char why[240];
	if (w->gpu.nvml_proc_samples)
		snprintf(why, sizeof(why),
		         "NVML listed no process of the task on it in %llu lists (once a second; "
		         "others' processes at most %u)",
		         (unsigned long long)w->gpu.nvml_proc_samples, w->gpu.nvml_other_procs);
	else
		snprintf(why, sizeof(why),
		         "NVML's memory in use never rose %d MiB above its first sample (%.0f MiB "
		         "at most; no process list from this driver)",
		         GP_UNOBSERVED_MIB, w->gpu.nvml_rise / 1048576.0);
	snprintf(f->evidence, sizeof(f->evidence),
	         "no kernel, copy or set was recorded, and %s; %u process(es) of the rank "
	         "initialised CUDA; the %.0f MiB NVML showed in use is the idle GPU's own; %u of "
	         "%u rank(s) like this",
	         why, w->gpu.cuda_inits, w->memory.nvml_max / 1048576.0, n, job->nranks);
	snprintf(f->threshold, sizeof(f->threshold),
	         "a GPU, no CUDA work recorded, no process of the task in NVML's lists of the "
	         "GPU's processes (without them: memory in use never %d MiB above the first "
	         "sample)",
	         GP_UNOBSERVED_MIB);
	snprintf(f->fix, sizeof(f->fix),
	         "The job held a GPU it did not use. A job that runs on the CPU should ask for "
	         "none (no --gres=gpu or --gpus); a program meant for the GPU did not find it (a "
	         "framework that sees no GPU falls back to the CPU silently): check "
	         "CUDA_VISIBLE_DEVICES and, in PyTorch, torch.cuda.is_available() in the job.");
}

/* Ranks on one node that run on the same GPU (the same NVML UUID in their headers): each
 * gets a share of it, and their step times say more about the sharing than about the
 * program. Not sized: what a rank would run at alone is not in the capture. */
static void rule_gpu_shared(rule_ctx_t *c)
{
	gp_job_t *job = c->job;
	unsigned best = 0, wi = 0;
	for (unsigned i = 0; i < job->nranks; i++) {
		const gp_rank_t *r = &job->ranks[i];
		unsigned n = 0;
		if (!r->id.gpu_uuid[0] || !r->steps.nms)
			continue;
		for (unsigned k = 0; k < job->nranks; k++)
			n += job->ranks[k].steps.nms &&
			     !strcmp(job->ranks[k].id.gpu_uuid, r->id.gpu_uuid) &&
			     !strcmp(gp_txt(job->ranks[k].id.node), gp_txt(r->id.node));
		if (n > best)
			best = n, wi = i;
	}
	gp_finding_t *f;
	if (best < 2 || !(f = add_time(job, "gpu_shared", &job->ranks[wi], 0, 0)))
		return;
	const gp_rank_t *w = &job->ranks[wi];
	char list[128] = "";
	for (unsigned k = 0, m = 0; k < job->nranks; k++)
		if (!strcmp(job->ranks[k].id.gpu_uuid, w->id.gpu_uuid) &&
		    !strcmp(gp_txt(job->ranks[k].id.node), gp_txt(w->id.node)))
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%d",
			         m++ ? ", " : "", job->ranks[k].id.rank);
	f->score = 0.99; /* the first time finding: it explains the others' figures */
	snprintf(f->title, sizeof(f->title), "%u ranks share one GPU on %s (ranks %s)", best,
	         gp_txt(w->id.node), list);
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

/* Xid events and uncorrected ECC errors: the hardware, not the program. */
static void rule_gpu_fault(rule_ctx_t *c)
{
	gp_job_t *job = c->job;
	const gp_rank_t *w = NULL;
	unsigned nbad = 0;
	for (unsigned i = 0; i < job->nranks; i++) {
		const gp_rank_t *r = &job->ranks[i];
		if (!r->faults.nxid && !r->faults.ecc_uncorrected)
			continue;
		nbad++;
		if (!w || r->faults.nxid + r->faults.ecc_uncorrected >
		              w->faults.nxid + w->faults.ecc_uncorrected)
			w = r;
	}
	gp_finding_t *f;
	if (!w || !(f = add(job, "gpu_fault", GP_F_OUTCOME, w)))
		return;
	f->score = 1;
	snprintf(f->title, sizeof(f->title), "GPU fault on %s: %s", gp_txt(w->id.node),
	         w->faults.nxid ? "Xid error reported by the driver" : "uncorrected ECC errors");
	snprintf(f->evidence, sizeof(f->evidence),
	         "rank %d: %llu Xid event(s)%s%u%s, %llu uncorrected and %llu corrected ECC "
	         "errors during the run; %u rank(s) affected",
	         w->id.rank, (unsigned long long)w->faults.nxid,
	         w->faults.nxid ? " (first: Xid " : "", w->faults.nxid ? w->faults.first_xid : 0,
	         w->faults.nxid ? ")" : "", (unsigned long long)w->faults.ecc_uncorrected,
	         (unsigned long long)w->faults.ecc_corrected, nbad);
	snprintf(f->threshold, sizeof(f->threshold),
	         "any Xid event or uncorrected ECC error on a task's GPU (NVML)");
	snprintf(f->fix, sizeof(f->fix),
	         "Tell the cluster admins (node %s, the Xid code; NVIDIA's Xid catalogue says "
	         "whether it is the application, the driver or the hardware) and resubmit with "
	         "--exclude=%s; timings from this rank are not trustworthy.",
	         gp_txt(w->id.node), gp_txt(w->id.node));
}

/* ---- time: each sized by the GPU idle time (or exposed work) a fix would remove ---- */

/* The straggler: the rank whose own work per step (step time less its exposed waits in
 * collectives) exceeds the other ranks'. In synchronous data parallelism every rank has
 * the straggler's step time; the others spend the difference waiting inside NCCL. The
 * baseline is the median of the other ranks (the other one, of two). */
static void rule_straggler(rule_ctx_t *c)
{
	gp_job_t *job = c->job;
	unsigned n = 0;
	double *work = calloc(job->nranks ? job->nranks : 1, sizeof(double));
	double *others = calloc(job->nranks ? job->nranks : 1, sizeof(double));
	const gp_rank_t *slow = NULL;
	double excess = 0, base = 0;
	if (!work || !others)
		goto out;
	/* only ranks that wait for one another: a collective recorded (NCCL's kernels).
	 * Ranks that never synchronise are nobody's stragglers, whatever their speed. */
	for (unsigned i = 0; i < job->nranks; i++) {
		const gp_rank_t *r = &job->ranks[i];
		bool syncs = r->gpu.comm_ns > 0;
		work[i] = r->steps.nms && syncs ? r->steps.median_ms - exposed_comm_ms(r) : -1;
		n += r->steps.nms > 0 && syncs;
	}
	/* the median of the others, for every rank: the sorted values without the rank's
	 * own (one sort, not one per rank: 10 000 ranks) */
	unsigned k = 0;
	for (unsigned j = 0; j < job->nranks; j++)
		if (work[j] >= 0)
			others[k++] = work[j];
	gp_sort_doubles(others, k);
	for (unsigned i = 0; n >= 2 && i < job->nranks; i++) {
		if (work[i] < 0)
			continue;
		double b = gp_median_without(others, k, work[i]);
		if (b > 0 && work[i] - b >= STRAGGLER_EXCESS * b && work[i] - b > excess) {
			excess = work[i] - b;
			base = b;
			slow = &job->ranks[i];
		}
	}
	gp_finding_t *f;
	if (!slow ||
	    !(f = add_time(job, "straggler", slow, excess,
	                   job->step_median_ms > 0 ? 100 * excess / job->step_median_ms : 0)))
		goto out;
	c->straggler = slow;
	snprintf(f->title, sizeof(f->title),
	         "Straggler: rank %d on %s does %.0f%% more work per step than the others",
	         slow->id.rank, gp_txt(slow->id.node), 100 * excess / base);
	snprintf(f->evidence, sizeof(f->evidence),
	         "rank %d: %.2f ms of its own work per step (%s step %.2f ms, %.2f ms of it "
	         "exposed communication) against %.2f ms on the other ranks (%u)%s",
	         slow->id.rank, slow->steps.median_ms - exposed_comm_ms(slow), slow->steps.basis,
	         slow->steps.median_ms, exposed_comm_ms(slow), base, n - 1,
	         slow->gpu.comm_ns ? "; the others wait for it inside their collectives" : "");
	snprintf(f->threshold, sizeof(f->threshold),
	         "a rank's step time less its exposed communication >= %.0f%% of the other "
	         "ranks' median",
	         (1 + STRAGGLER_EXCESS) * 100);
	snprintf(f->fix, sizeof(f->fix),
	         "Every collective waits for the slowest rank. Look at that rank's node (GPU "
	         "clocks and throttling in NVML, other jobs), its data shard, or uneven work.");
out:
	free(work);
	free(others);
}

static void rule_sync(rule_ctx_t *c)
{
	gp_job_t *job = c->job;
	const gp_rank_t *w = NULL;
	double best = 0, best_pct = 0;
	for (unsigned i = 0; i < job->nranks; i++) {
		const gp_rank_t *r = &job->ranks[i];
		double ms, pct;
		per_step(r, r->gpu.idle_sync_ns, &ms, &pct);
		unsigned n = gsteps(r);
		if (!r->sync.calls || (n && r->sync.calls < SYNC_MIN_PER_STEP * n) ||
		    pct < SYNC_MIN_PCT || ms <= best)
			continue;
		best = ms, best_pct = pct, w = r;
	}
	gp_finding_t *f;
	if (!w || !(f = add_time(job, "sync_stall", w, best, best_pct)))
		return;
	snprintf(f->title, sizeof(f->title),
	         "Synchronisation stalls leave the GPU idle: %.2f ms per step (%.1f%%) on rank %d",
	         best, best_pct, w->id.rank);
	snprintf(f->evidence, sizeof(f->evidence),
	         "%llu blocking calls (stream/device/event synchronize, blocking device-to-host "
	         "copies) held the host %.1f ms in all, most %s%s%s; after they "
	         "returned the GPU sat idle %.1f ms waiting for the next launch",
	         (unsigned long long)w->sync.calls, w->sync.ns / 1e6,
	         w->sync.range.s ? "inside NVTX range '" : "outside any NVTX range",
	         gp_txt(w->sync.range), w->sync.range.s ? "'" : "", w->gpu.idle_sync_ns / 1e6);
	gp_attr_sync_evidence(job, f->evidence, sizeof(f->evidence));
	snprintf(f->threshold, sizeof(f->threshold),
	         "a blocking call in >= %.0f%% of steps and GPU idle after them >= %.2g%% of the "
	         "step",
	         SYNC_MIN_PER_STEP * 100, SYNC_MIN_PCT);
	snprintf(f->fix, sizeof(f->fix),
	         "Each blocking read of a GPU value (loss.item(), .cpu(), printing a tensor, 'if "
	         "loss < x') drains the pipeline. Log every N steps or asynchronously "
	         "(non_blocking copy into pinned memory, read it a step later).");
}

/* What gpuprof's own tracing added to a traced step (ms): measured against the untraced
 * steps of the same run where there are any, else CUPTI's overhead records per step. The
 * host-caused idle time of traced steps holds it; no finding is sized with it. */
static double tracer_ms(const gp_rank_t *r, const char **how)
{
	unsigned n = gsteps(r);
	if (r->capture.tracer_ms_per_step > 0) {
		*how = "the traced steps took that much longer than the untraced ones";
		return r->capture.tracer_ms_per_step;
	}
	*how = r->capture.ntraced && !r->capture.nuntraced
	           ? "CUPTI's own overhead records inside those gaps; every step was traced, so "
	             "the rest of tracing's cost could not be measured and is still in these "
	             "figures"
	           : "CUPTI's own overhead records inside those gaps";
	return n ? (double)r->gpu.idle_tracer_ns / 1e6 / n : 0;
}

/* The GPU idle because the program was waiting for its next batch (the PyTorch
 * integration times DataLoader.__next__). */
static void rule_input(rule_ctx_t *c)
{
	gp_job_t *job = c->job;
	const gp_rank_t *w = NULL;
	double best = 0, best_pct = 0;
	for (unsigned i = 0; i < job->nranks; i++) {
		const gp_rank_t *r = &job->ranks[i];
		double ms, pct;
		per_step(r, r->gpu.idle_data_ns, &ms, &pct);
		/* without kernel records (modes without cuda) the GPU's idle is not seen: the
		 * program's own wait per step, against its step, stands for it */
		if (!r->gpu.nkernels && r->steps.n_post && r->gpu.data_waits &&
		    r->steps.mean_ms > 0) {
			ms = r->gpu.data_wait_ns / 1e6 / r->steps.n_post;
			pct = 100 * ms / r->steps.mean_ms;
		}
		if (!r->steps.n_post || pct < IDLE_HOST_PCT || ms <= best)
			continue;
		best = ms, best_pct = pct > 100 ? 100 : pct, w = r;
	}
	gp_finding_t *f;
	if (!w || !(f = add_time(job, "input_bound", w, best, best_pct)))
		return;
	unsigned n = gsteps(w);
	snprintf(
	    f->title, sizeof(f->title),
	    "Input-bound: the GPU waits %.2f ms per step (%.1f%%) for the next batch on rank %d",
	    best, best_pct, w->id.rank);
	snprintf(f->evidence, sizeof(f->evidence),
	         "the program waited in DataLoader.__next__ %.2f ms per step on average (%llu "
	         "batches in the post-warm-up steps) while the GPU was busy %.1f%% of the steps; "
	         "the GPU sat idle %.1f ms in %u traced steps while the host waited for data",
	         w->gpu.data_waits
	             ? w->gpu.data_wait_ns / 1e6 / (w->steps.n_post ? w->steps.n_post : 1)
	             : 0,
	         (unsigned long long)w->gpu.data_waits,
	         w->gpu.span_ns ? 100.0 * w->gpu.busy_ns / w->gpu.span_ns : 0,
	         w->gpu.idle_data_ns / 1e6, n);
	snprintf(f->threshold, sizeof(f->threshold),
	         "GPU idle while waiting for the next batch >= %.0f%% of the step", IDLE_HOST_PCT);
	snprintf(f->fix, sizeof(f->fix),
	         "The input pipeline is the bottleneck: more DataLoader workers (num_workers), "
	         "persistent_workers=True and a larger prefetch_factor; pin_memory=True with "
	         "non_blocking copies; decode and augment on the GPU or preprocess offline.");
}

/* The GPU idle because the host had not launched the next work yet (no synchronisation
 * pending, not waiting for data), sized without gpuprof's own tracing. What the host was
 * doing chooses the advice: compiling, launching (many short kernels, time in launch
 * calls), or something gpuprof cannot see. */
static void rule_idle(rule_ctx_t *c)
{
	gp_job_t *job = c->job;
	const gp_rank_t *w = NULL;
	double best = 0, best_pct = 0, w_meas = 0, w_tr = 0;
	const char *how = "", *w_how = "";
	for (unsigned i = 0; i < job->nranks; i++) {
		const gp_rank_t *r = &job->ranks[i];
		double ms, pct, tr;
		uint64_t host = r->gpu.idle_host_ns > r->gpu.idle_data_ns
		                    ? r->gpu.idle_host_ns - r->gpu.idle_data_ns
		                    : 0;
		per_step(r, host, &ms, &pct);
		tr = gsteps(r) ? tracer_ms(r, &how) : 0;
		tr = tr < ms ? tr : ms;
		double net = ms - tr, net_pct = pct * (ms > 0 ? net / ms : 0);
		/* never more than the idle time the headline's step has: the busy share of the
		 * untraced steps where known, else the traced span's, applied to the median (a
		 * torch.compile program was told 10.95 ms of an 11.46 ms step whose GPU was busy
		 * 36 % of it: issue 49) */
		double busy = r->gpu.busy_pct_untraced > 0 ? r->gpu.busy_pct_untraced
		              : r->gpu.span_ns
		                  ? 100.0 * (double)r->gpu.busy_ns / (double)r->gpu.span_ns
		                  : 0;
		double cap = r->steps.median_ms * (1 - busy / 100);
		if (busy > 0 && cap >= 0 && net > cap) {
			net_pct = net > 0 ? net_pct * cap / net : 0;
			net = cap;
		}
		if (net_pct < IDLE_HOST_PCT || net <= best)
			continue;
		best = net, best_pct = net_pct, w = r, w_meas = ms, w_tr = tr, w_how = how;
	}
	gp_finding_t *f;
	if (!w || !(f = add_time(job, "idle_gaps", w, best, best_pct)))
		return;
	uint64_t host = w->gpu.idle_host_ns -
	                (w->gpu.idle_data_ns < w->gpu.idle_host_ns ? w->gpu.idle_data_ns : 0);
	double step = w->steps.median_ms > 0 ? w->steps.median_ms : 1;
	bool compiling = host && w->gpu.idle_compile_ns * 2 >= host;
	bool launching = !compiling && w->gpu.kernels_per_step >= 50 &&
	                 (w->gpu.host_busy_per_step_ms >= 0.25 * step ||
	                  (w->gpu.kernels_per_step >= 100 && w->gpu.kernel_mean_us < 20));
	/* the GPU idle before (nearly) every step's launch: the host never ran ahead. In JAX,
	 * whose dispatch is asynchronous, that is a wait for the GPU each step (its
	 * block_until_ready is no CUDA call gpuprof sees) */
	unsigned traced = w->capture.window ? w->capture.steps : w->steps.n_post;
	bool never_ahead = traced >= 5 && w->gpu.idle_host_gaps * 10 >= (uint64_t)traced * 8;
	bool jax_waits =
	    !compiling && !launching && never_ahead && !strncmp(gp_txt(w->torch.info), "jax ", 4);
	snprintf(f->title, sizeof(f->title),
	         "GPU idle waiting for the host%s: %.2f ms per step (%.1f%%) on rank %d",
	         compiling   ? " (compiling)"
	         : launching ? " (launch-bound)"
	         : jax_waits ? " (it waits for every step)"
	                     : "",
	         best, best_pct, w->id.rank);
	char tr[400] = "", ahead[120] = "";
	if (never_ahead)
		snprintf(
		    ahead, sizeof(ahead),
		    "; the GPU idled before %llu of %u steps' launches: the host never ran ahead",
		    (unsigned long long)(w->gpu.idle_host_gaps < traced ? w->gpu.idle_host_gaps
		                                                        : traced),
		    traced);
	if (w_tr > 0.005)
		snprintf(
		    tr, sizeof(tr),
		    "; of the %.2f ms measured per traced step, %.2f ms is gpuprof's own tracing "
		    "(%s) and is not counted",
		    w_meas, w_tr, w_how);
	snprintf(f->evidence, sizeof(f->evidence),
	         "GPU busy %.1f%% of the traced steps; idle %.1f ms waiting for launches that came "
	         "after it had finished (no synchronisation pending, not waiting for data), of "
	         "which %.1f ms with the host inside CUDA calls and %.1f ms compiling; the host "
	         "spent %.2f ms per step in launch calls for %.0f kernels of %.1f us%s%s",
	         w->gpu.span_ns ? 100.0 * w->gpu.busy_ns / w->gpu.span_ns : 0, host / 1e6,
	         w->gpu.idle_launch_ns / 1e6, w->gpu.idle_compile_ns / 1e6,
	         w->gpu.host_busy_per_step_ms, w->gpu.kernels_per_step, w->gpu.kernel_mean_us,
	         ahead, tr);
	snprintf(f->threshold, sizeof(f->threshold),
	         "host-caused idle, gpuprof's tracing taken out, >= %.0f%% of the step",
	         IDLE_HOST_PCT);
	if (compiling)
		snprintf(
		    f->fix, sizeof(f->fix),
		    "The host compiles during the steps: keep shapes and dtypes stable (pad or "
		    "bucket sequence lengths), mark static arguments (jax.jit static_argnums, "
		    "torch.compile dynamic=True), and warm up every shape before timing.");
	else if (jax_waits)
		snprintf(
		    f->fix, sizeof(f->fix),
		    "JAX dispatches asynchronously, so a host that starts each step only once the "
		    "GPU has finished the last is waiting for it: a block_until_ready, "
		    "jax.device_get, float() or print of a device value in every step. Let "
		    "dispatch run ahead: fetch and log metrics every N steps (or keep them on "
		    "the device), and block only where a step is timed.");
	else if (launching)
		snprintf(
		    f->fix, sizeof(f->fix),
		    "Launch-bound: the host cannot issue %.0f kernels per step as fast as the GPU "
		    "runs them. Capture the step in a CUDA graph (torch.compile "
		    "mode=\"reduce-overhead\", torch.cuda.graphs, jax.jit), fuse small kernels "
		    "(torch.compile), or give each kernel more work (a larger batch).",
		    w->gpu.kernels_per_step);
	else
		snprintf(
		    f->fix, sizeof(f->fix),
		    "The host was busy elsewhere between launches, neither in a CUDA call nor "
		    "waiting for a DataLoader batch: Python work, I/O, logging or a sleep that "
		    "gpuprof cannot see. Profile the host (py-spy dump/record on the rank's "
		    "process) and move that work off the step or overlap it with the GPU.");
}

static void rule_frag(rule_ctx_t *c)
{
	gp_job_t *job = c->job;
	const gp_rank_t *w = NULL;
	double best = 0, best_pct = 0, w_meas = 0, w_tr = 0;
	const char *how = "", *w_how = "";
	for (unsigned i = 0; i < job->nranks; i++) {
		const gp_rank_t *r = &job->ranks[i];
		double ms, pct;
		if (r->gpu.nkernels < 100 || !r->gpu.span_ns ||
		    (double)r->gpu.small_kernels / r->gpu.nkernels < FRAG_SMALL_SHARE ||
		    (double)r->gpu.busy_ns / r->gpu.span_ns >= FRAG_BUSY_MAX)
			continue;
		per_step(r, r->gpu.idle_kernel_ns, &ms, &pct);
		/* the gaps of traced steps hold gpuprof's own tracing (its cost per launch),
		 * which the untraced steps do not pay: these gaps' share of it (their share of
		 * the traced steps' idle time) is not counted, as in idle_gaps */
		unsigned n = gsteps(r);
		double idle = n && r->gpu.span_ns > r->gpu.busy_ns
		                  ? (double)(r->gpu.span_ns - r->gpu.busy_ns) / 1e6 / n
		                  : 0;
		double tr = n && idle > 0 ? tracer_ms(r, &how) * ms / (ms > idle ? ms : idle) : 0;
		tr = tr < ms ? tr : ms;
		double net = ms - tr, net_pct = pct * (ms > 0 ? net / ms : 0);
		if (net_pct < MIN_SAVING_PCT || net <= best)
			continue;
		best = net, best_pct = net_pct, w = r, w_meas = ms, w_tr = tr, w_how = how;
	}
	gp_finding_t *f;
	if (!w || !(f = add_time(job, "fragmentation", w, best, best_pct)))
		return;
	char tr[400] = "";
	if (w_tr > 0.005)
		snprintf(tr, sizeof(tr),
		         "; of the %.2f ms of such gaps per traced step, %.2f ms is gpuprof's own "
		         "tracing (their share of the traced steps' idle time, of what tracing "
		         "cost: %s) and is not counted",
		         w_meas, w_tr, w_how);
	snprintf(f->title, sizeof(f->title),
	         "Kernel fragmentation: %.0f%% of kernels shorter than 10 us on rank %d; %.2f ms "
	         "per step (%.1f%%) lost between them",
	         100.0 * w->gpu.small_kernels / w->gpu.nkernels, w->id.rank, best, best_pct);
	snprintf(f->evidence, sizeof(f->evidence),
	         "%llu kernels, mean %.1f us, %.0f per step; %llu ran shorter than their launch "
	         "call; median launch latency %.1f us; GPU busy %.1f%%; gaps under 30 us between "
	         "kernels %.1f ms%s",
	         (unsigned long long)w->gpu.nkernels, w->gpu.kernel_mean_us,
	         w->gpu.kernels_per_step, (unsigned long long)w->gpu.short_vs_launch,
	         w->gpu.launch_latency_us, 100.0 * w->gpu.busy_ns / w->gpu.span_ns,
	         w->gpu.idle_kernel_ns / 1e6, tr);
	snprintf(f->threshold, sizeof(f->threshold),
	         ">= %.0f%% of kernels < 10 us while GPU busy < %.0f%%, gaps >= %.0f%% of the step",
	         FRAG_SMALL_SHARE * 100, FRAG_BUSY_MAX * 100, MIN_SAVING_PCT);
	snprintf(f->fix, sizeof(f->fix),
	         "Launch overhead dominates: fuse the elementwise chain (torch.compile, a fused "
	         "kernel) or capture the step in a CUDA graph.");
}

static void rule_comm(rule_ctx_t *c)
{
	gp_job_t *job = c->job;
	const gp_rank_t *w = NULL;
	double best = 0, best_pct = 0;
	for (unsigned i = 0; i < job->nranks; i++) {
		const gp_rank_t *r = &job->ranks[i];
		if (r->gpu.compute_ns + r->gpu.comm_ns == 0 ||
		    (double)r->gpu.comm_ns / (r->gpu.compute_ns + r->gpu.comm_ns) <
		        COMM_SHARE_MIN ||
		    (double)r->gpu.overlap_ns / (r->gpu.comm_ns ? r->gpu.comm_ns : 1) >=
		        COMM_OVERLAP_MAX)
			continue;
		double ms, pct;
		per_step(r,
		         r->gpu.comm_ns - (r->gpu.overlap_ns < r->gpu.comm_ns ? r->gpu.overlap_ns
		                                                              : r->gpu.comm_ns),
		         &ms, &pct);
		if (pct < MIN_SAVING_PCT || ms <= best)
			continue;
		best = ms, best_pct = pct, w = r;
	}
	gp_finding_t *f;
	if (!w || !(f = add_time(job, "comm_not_overlapped", w, best, best_pct)))
		return;
	snprintf(f->title, sizeof(f->title),
	         "Communication not overlapped with compute on rank %d: %.2f ms per step (%.1f%%)",
	         w->id.rank, best, best_pct);
	snprintf(f->evidence, sizeof(f->evidence),
	         "NCCL kernels %.1f ms (%.0f%% of kernel time), overlapped with compute %.1f ms",
	         w->gpu.comm_ns / 1e6,
	         100.0 * w->gpu.comm_ns / (w->gpu.comm_ns + w->gpu.compute_ns),
	         w->gpu.overlap_ns / 1e6);
	/* by collective (HTA's comm_comp_overlap, per kernel): which ones are exposed */
	for (unsigned k = 0; k < w->gpu.ncoll && k < GP_COLLS; k++) {
		const struct gp_coll *x = &w->gpu.coll[k];
		size_t l = strlen(f->evidence);
		snprintf(f->evidence + l, sizeof(f->evidence) - l,
		         "%s%s: %llu calls, %.2f ms per step, %.0f%% of it exposed",
		         k ? "; " : "; by collective: ", x->name, (unsigned long long)x->calls,
		         gsteps(w) ? x->ns / 1e6 / gsteps(w) : 0,
		         x->ns ? 100.0 * x->exposed_ns / x->ns : 0);
	}
	snprintf(f->threshold, sizeof(f->threshold), "comm >= %.0f%% and overlap < %.0f%% of comm",
	         COMM_SHARE_MIN * 100, COMM_OVERLAP_MAX * 100);
	snprintf(f->fix, sizeof(f->fix),
	         "Overlap gradient all-reduce with backward (DDP bucketing, bucket_cap_mb), or "
	         "reduce communication (gradient accumulation, compression).");
}

/* Copies between host and device from or into pageable memory (gputime.c): the driver
 * stages them through a buffer of its own while the call holds the host, and an async copy
 * from pageable memory is no longer async. Sized by the host's time inside those calls,
 * which a non-blocking copy from pinned memory gives back (the copy itself then runs while
 * the host goes on). nsys analyze's cuda_memcpy_async rule; HTA has no rule for it. */
/* The rank where a time rule saves most: saving(r, &pct) is its saving per step in ms
 * (0: the rule does not fire there); NULL when it fires nowhere. */
static const gp_rank_t *most_saved(const gp_job_t *job,
                                   double (*saving)(const gp_rank_t *, double *), double *ms,
                                   double *pct)
{
	const gp_rank_t *w = NULL;
	*ms = *pct = 0;
	for (unsigned i = 0; i < job->nranks; i++) {
		double p = 0, m = saving(&job->ranks[i], &p);
		if (m > *ms)
			*ms = m, *pct = p, w = &job->ranks[i];
	}
	return w;
}

static double pageable_saving(const gp_rank_t *r, double *pct)
{
	double ms;
	per_step(r, r->gpu.pageable_held_ns, &ms, pct);
	return r->gpu.pageable_copies && *pct >= MIN_SAVING_PCT ? ms : 0;
}

static void rule_pageable(rule_ctx_t *c)
{
	gp_job_t *job = c->job;
	double best, best_pct;
	const gp_rank_t *w = most_saved(job, pageable_saving, &best, &best_pct);
	gp_finding_t *f;
	if (!w || !(f = add_time(job, "pageable_copies", w, best, best_pct)))
		return;
	unsigned n = gsteps(w);
	double gpu_ms, gpu_pct;
	per_step(w, w->gpu.pageable_ns, &gpu_ms, &gpu_pct);
	snprintf(f->title, sizeof(f->title),
	         "Copies from pageable host memory hold the host %.2f ms per step (%.1f%%) on "
	         "rank %d",
	         best, best_pct, w->id.rank);
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
	    w->gpu.pageable_ns ? (double)w->gpu.pageable_bytes / w->gpu.pageable_ns : 0, best);
	snprintf(f->threshold, sizeof(f->threshold),
	         "copies from or into pageable memory holding the host >= %.0f%% of the step",
	         MIN_SAVING_PCT);
	snprintf(f->fix, sizeof(f->fix), "%s",
	         words(w,
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

/* fp32 matrix multiplies on CUDA cores on a card with tensor cores for them (TF32, sm_80
 * on): the kernels' names say SIMT or FFMA (kernelclass.c). Sized as FP32_TF32_GAIN of
 * their time, a saving of the step where the GPU's work is on its path (GPU-bound, or a
 * step that waits for the GPU). nsys analyze has no such rule; HTA's kernel breakdown
 * shows the GEMMs' time, not their precision. */
/* How much of the GPU's work is on the step's path: all of it where the GPU is busy (GPU-
 * bound), else the share of its idle time that the host spent waiting for it (blocked in a
 * synchronisation) rather than the GPU waiting for the host (launches, data, Python): a
 * faster kernel shortens the first kind of step, not the second. */
static double on_path(const gp_rank_t *r)
{
	const gp_gpu_t *g = &r->gpu;
	uint64_t waits = g->idle_sync_ns + g->idle_host_ns;
	if (!g->span_ns || (double)g->busy_ns >= 0.9 * (double)g->span_ns || !waits)
		return 1;
	return (double)g->idle_sync_ns / (double)waits;
}

static double fp32_saving(const gp_rank_t *r, double *pct)
{
	double ms;
	bool tf32 = r->gpu.fp32_gemm_sm >= 80 || gp_gpu_has_tf32(r->id.gpu_name);
	if (!tf32 || !r->gpu.fp32_gemm_ns ||
	    (double)r->gpu.fp32_gemm_ns < FP32_GEMM_SHARE * (double)r->gpu.compute_ns)
		return 0;
	per_step(r, (uint64_t)(FP32_TF32_GAIN * on_path(r) * (double)r->gpu.fp32_gemm_ns), &ms,
	         pct);
	return *pct >= MIN_SAVING_PCT ? ms : 0;
}

static void rule_fp32(rule_ctx_t *c)
{
	gp_job_t *job = c->job;
	double best, best_pct;
	const gp_rank_t *w = most_saved(job, fp32_saving, &best, &best_pct);
	gp_finding_t *f;
	if (!w || !(f = add_time(job, "fp32_no_tensor_cores", w, best, best_pct)))
		return;
	double ms, pct;
	per_step(w, w->gpu.fp32_gemm_ns, &ms, &pct);
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
	snprintf(f->evidence, sizeof(f->evidence),
	         "%llu GEMM kernels with fp32 inputs on CUDA cores (SIMT/FFMA, no TF32, bf16 or "
	         "fp16 tensor-core kernel) took %.2f ms per step (%.1f%% of the step, %.1f%% of "
	         "the kernels' time); the largest: %.160s; the card has TF32 tensor cores (%s); "
	         "the saving is half their time (TF32 runs fp32 matmuls 7-8 times faster) on the "
	         "step's path (%.0f%%: the GPU busy, or the host waiting for it, not it for the "
	         "host)",
	         (unsigned long long)w->gpu.fp32_gemm_calls, ms, pct, share,
	         gp_txt(w->gpu.fp32_gemm_top), card, 100 * on_path(w));
	snprintf(f->threshold, sizeof(f->threshold),
	         "fp32 GEMMs on CUDA cores >= %.0f%% of kernel time on an sm_80+ card, half their "
	         "time >= %.0f%% of the step",
	         FP32_GEMM_SHARE * 100, MIN_SAVING_PCT);
	snprintf(f->fix, sizeof(f->fix), "%s",
	         words(w,
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

/* The host runs ahead: the step range closes long before its GPU work does, so timing
 * the range (or any host timer without synchronisation) measures launches. Not a cost:
 * a warning about measurements, ranked after the time findings. */
static void rule_host_ahead(rule_ctx_t *c)
{
	gp_job_t *job = c->job;
	const gp_rank_t *w = NULL;
	for (unsigned i = 0; i < job->nranks; i++) {
		const gp_rank_t *r = &job->ranks[i];
		/* a warning about timing a GPU-bound step with a host timer: not where the rank
		 * mostly waits for others (exposed communication) */
		if (strcmp(r->steps.basis, "gpu") || r->steps.cpu_median_ms <= 0 ||
		    r->steps.cpu_median_ms >= HOST_AHEAD_RATIO * r->steps.median_ms ||
		    exposed_comm_ms(r) >= 0.2 * r->steps.median_ms ||
		    (r->gpu.span_ns &&
		     r->gpu.busy_ns < 0.7 * r->gpu.span_ns)) /* the GPU waits: not GPU-bound */
			continue;
		if (!w || r->steps.cpu_median_ms / r->steps.median_ms <
		              w->steps.cpu_median_ms / w->steps.median_ms)
			w = r;
	}
	gp_finding_t *f;
	if (!w || !(f = add_time(job, "host_ahead", w, 0, 0)))
		return;
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
	         HOST_AHEAD_RATIO * 100);
	snprintf(f->fix, sizeof(f->fix),
	         "Nothing to fix in the program: the GPU is the bottleneck. Time steps with "
	         "torch.cuda.synchronize() or CUDA events, not a host timer around the step "
	         "(this report already does).");
}

/* ---- memory ---- */

/* The rank's device memory peak: CUDA's (CUPTI's records), else PyTorch's reserved. */
static uint64_t peak_of(const gp_rank_t *r)
{
	return r->memory.peak ? r->memory.peak : r->torch.max_reserved;
}

/* bytes as a person reads them: B, KiB, MiB, GiB */
static void human_bytes(double b, char *out, size_t len)
{
	if (b >= 1073741824.0)
		snprintf(out, len, "%.2f GiB", b / 1073741824.0);
	else if (b >= 1048576.0)
		snprintf(out, len, "%.1f MiB", b / 1048576.0);
	else if (b >= 1024.0)
		snprintf(out, len, "%.1f KiB", b / 1024.0);
	else
		snprintf(out, len, "%.0f B", b);
}

/* The leak's growth per step: PyTorch's allocated bytes where it said them (tensors, not
 * the caching allocator's segments), else the device allocations CUPTI saw. */
static double leak_growth(const gp_rank_t *r)
{
	return r->torch.nmem_steps >= 3 ? r->torch.growth_per_step : r->memory.growth_per_step;
}

/* The owner of the growth: of what a window of the allocator history kept (PyTorch), the
 * stack whose bytes are nearest what the growth would leave in that many steps, with a
 * tensor or more per step; else CUPTI's most frequent stack of the allocations never
 * freed. bytes per step in *per (0: not known). */
static const char *leak_owner(const gp_rank_t *r, double growth, double *per)
{
	const gp_owner_t *g = gp_torch_owners(&r->torch, GP_OWN_GROW), *best = NULL;
	unsigned steps = r->torch.grow_steps ? r->torch.grow_steps : 2;
	double want = growth * steps, dist = 0;
	*per = 0;
	for (unsigned k = 0; g && k < r->torch.ngrow_owner; k++) {
		if (g[k].stack[0] == '(' || g[k].tensors < steps)
			continue;
		double d = fabs((double)g[k].bytes - want);
		if (!best || d < dist)
			best = &g[k], dist = d;
	}
	if (best && dist <= 0.5 * want) {
		*per = (double)best->bytes / steps;
		return best->stack;
	}
	return r->memory.leak_stack.s ? gp_txt(r->memory.leak_stack) : NULL;
}

static void rule_leak(rule_ctx_t *c)
{
	gp_job_t *job = c->job;
	const gp_rank_t *w = NULL;
	for (unsigned i = 0; i < job->nranks; i++) {
		const gp_rank_t *r = &job->ranks[i];
		if (leak_growth(r) >= LEAK_MIN_BYTES_PER_STEP &&
		    (r->memory.leak_allocs >= 2 || r->torch.nmem_steps >= 3) &&
		    (!w || leak_growth(r) > leak_growth(w)))
			w = r;
	}
	gp_finding_t *f;
	if (!w || !(f = add(job, "memory_leak", GP_F_MEMORY, w)))
		return;
	double growth = leak_growth(w), per = 0;
	bool torch = w->torch.nmem_steps >= 3;
	const char *who = leak_owner(w, growth, &per);
	unsigned left = w->steps.n_post > 1 ? w->steps.n_post - 1 : 1;
	f->saving_bytes = growth * left; /* what the post-warm-up steps kept */
	f->score = peak_of(w) ? f->saving_bytes / peak_of(w) : 0;
	char gs[32];
	human_bytes(growth, gs, sizeof(gs));
	snprintf(f->title, sizeof(f->title), "Device memory grows %s per step on rank %d%s%.120s",
	         gs, w->id.rank, who ? ": " : "", who ? who : "");
	char fill[200] = "";
	uint64_t total = w->id.gpu_total ? w->id.gpu_total : w->torch.oom_total;
	uint64_t now = torch && w->torch.allocated_end ? w->torch.allocated_end : w->memory.final;
	if (total > now && growth > 0)
		snprintf(fill, sizeof(fill),
		         "; at this rate the device's %.1f GiB fill after about %.0f more steps",
		         total / 1073741824.0, (double)(total - now) / growth);
	if (who && per > 0)
		snprintf(
		    f->evidence, sizeof(f->evidence),
		    "%s grows %.1f KiB per step after warm-up; the allocator history's window of "
		    "%u steps kept %.1f KiB per step allocated at %s, not freed%s",
		    torch ? "PyTorch's allocated memory (tensors)" : "live device memory",
		    growth / 1024.0, w->torch.grow_steps ? w->torch.grow_steps : 2, per / 1024.0,
		    who, fill);
	else
		snprintf(
		    f->evidence, sizeof(f->evidence),
		    "%s grows %.1f KiB per step after warm-up; %llu device allocations (%.1f MiB) "
		    "made after warm-up were never freed; most came from: %s%s",
		    torch ? "PyTorch's allocated memory (tensors)" : "live device memory",
		    growth / 1024.0, (unsigned long long)w->memory.leak_allocs,
		    w->memory.leak_bytes / 1048576.0,
		    who     ? who
		    : torch ? "(no stack: the allocator history recorded no growing allocation; "
		              "it records in windows when the peak grows)"
		            : "(no stack: allocation call stacks need mode mem with CUPTI's "
		              "callbacks)",
		    fill);
	snprintf(f->threshold, sizeof(f->threshold),
	         "allocated memory grows >= %.0f B per step after warm-up",
	         LEAK_MIN_BYTES_PER_STEP);
	snprintf(f->fix, sizeof(f->fix), "%s",
	         words(w,
	               "Something keeps a reference each step (tensors appended to a list, a loss "
	               "kept with its graph, a cache): free it, or keep .item()/.detach().cpu() of "
	               "what you need. The line named is where the kept tensors are made.",
	               "Something keeps device arrays alive each step (a list of outputs or "
	               "metrics, a cache of jitted functions over new shapes): keep "
	               "jax.device_get() of what you need, or delete the references. The stack is "
	               "where they are made.",
	               "Device allocations made each step are never freed: free them (cudaFree, "
	               "or the allocator's own free) when the step is done, or allocate once "
	               "outside the loop. The stack is where they are made."));
}

/* The rank's peak against its card: "peak 1.41 GiB of the card's 79.6 GiB (1.8 %)", and
 * what is left. Empty when the card's memory is not known. */
static void against_card(const gp_rank_t *r, uint64_t peak, char *out, size_t len)
{
	char p[32], t[32], left[32];
	out[0] = 0;
	if (!r->id.gpu_total || !peak)
		return;
	human_bytes((double)peak, p, sizeof(p));
	human_bytes((double)r->id.gpu_total, t, sizeof(t));
	human_bytes(peak < r->id.gpu_total ? (double)(r->id.gpu_total - peak) : 0, left,
	            sizeof(left));
	snprintf(out, len, "; the peak is %s of the card's %s (%.1f%%), %s left", p, t,
	         100.0 * peak / r->id.gpu_total, left);
}

static void rule_optimizer(rule_ctx_t *c)
{
	gp_job_t *job = c->job;
	const gp_rank_t *w = NULL;
	for (unsigned i = 0; i < job->nranks; i++) {
		const gp_rank_t *r = &job->ranks[i];
		/* known only from the framework's own figures (PyTorch's state tensors), or, in a
		 * program that is not PyTorch, from what its first optimizer range allocated */
		bool known = !strcmp(r->memory.optimizer_source, "PyTorch optimizer state") ||
		             !r->torch.seen;
		/* held against the card: at a small share of it, the state costs nothing */
		bool pressed = !r->id.gpu_total ||
		               (double)peak_of(r) >= MEM_PRESSURE_SHARE * (double)r->id.gpu_total;
		if (known && pressed && peak_of(r) &&
		    (double)r->memory.optimizer_bytes / peak_of(r) >= OPT_STATE_SHARE &&
		    (!w || r->memory.optimizer_bytes > w->memory.optimizer_bytes))
			w = r;
	}
	gp_finding_t *f;
	if (!w || !(f = add(job, "optimizer_state", GP_F_MEMORY, w)))
		return;
	uint64_t peak = peak_of(w);
	bool torch = !strcmp(w->memory.optimizer_source, "PyTorch optimizer state");
	f->saving_bytes = w->memory.optimizer_bytes / 2.0; /* bf16 states, or 2-way sharding */
	f->score = (double)w->memory.optimizer_bytes / peak;
	snprintf(f->title, sizeof(f->title),
	         "Optimizer state holds %.0f%% of peak device memory on rank %d",
	         100.0 * w->memory.optimizer_bytes / peak, w->id.rank);
	bool low = false; /* states already in 16 bits: then only sharding or 8 bits help */
	for (unsigned k = 0; k < w->torch.nopt && k < 8; k++)
		low |= strstr(gp_txt(w->torch.opt[k].what), "bfloat16") ||
		       strstr(gp_txt(w->torch.opt[k].what), "float16");
	bool multi = job->nranks > 1; /* ranks to shard over */
	char card[160];
	against_card(w, peak, card, sizeof(card));
	snprintf(f->evidence, sizeof(f->evidence),
	         "%.1f MiB %s; peak %.1f MiB; %s%s would free about %.1f MiB%s",
	         w->memory.optimizer_bytes / 1048576.0,
	         torch ? "in the optimizers' state tensors on the GPU (PyTorch's own figures)"
	               : "allocated in the first optimizer step and still held at the last step",
	         peak / 1048576.0, low ? "8-bit states" : "bf16 states",
	         multi ? " or sharding over 2 ranks" : "", f->saving_bytes / 1048576.0, card);
	snprintf(f->threshold, sizeof(f->threshold),
	         "optimizer state >= %.0f%% of peak, the peak >= %.0f%% of the card's memory",
	         OPT_STATE_SHARE * 100, MEM_PRESSURE_SHARE * 100);
	/* what the optimizer keeps, by its class ("SGD: 391.9 MiB float32 on cuda") */
	char kind[40] = "";
	for (unsigned k = 0; k < w->torch.nopt && k < 8 && !kind[0]; k++)
		sscanf(gp_txt(w->torch.opt[k].what), "%39[A-Za-z0-9_]", kind);
	char keeps[120];
	if (strstr(kind, "Adam") || strstr(kind, "Lamb") || strstr(kind, "Lion") == kind)
		snprintf(keeps, sizeof(keeps), "%s keeps %s per parameter. ", kind,
		         strstr(kind, "Lion") == kind ? "one momentum tensor"
		                                      : "two extra tensors (its moments)");
	else if (!strcmp(kind, "SGD"))
		snprintf(keeps, sizeof(keeps), "SGD keeps one momentum buffer per parameter. ");
	else if (kind[0])
		snprintf(keeps, sizeof(keeps), "%s keeps state tensors beside the parameters. ",
		         kind);
	else
		keeps[0] = 0;
	snprintf(f->fix, sizeof(f->fix), "%s%s%s", keeps,
	         low ? "The optimizer's states are already 16-bit: an 8-bit optimizer "
	               "(bitsandbytes) halves them"
	             : "Keep the optimizer's states in lower precision (bf16 states, an 8-bit "
	               "optimizer)",
	         multi ? ", or shard them across the ranks (ZeRO, FSDP, "
	                 "torch.distributed.optim.ZeroRedundancyOptimizer)."
	               : "; on several GPUs, sharding them (ZeRO, FSDP) divides them among "
	                 "the ranks.");
}

/* The peak close to the card's memory in a run that did not run out (yet): a longer
 * sequence, a larger batch or fragmentation will. The rank nearest the limit. */
static void rule_near_limit(rule_ctx_t *c)
{
	gp_job_t *job = c->job;
	const gp_rank_t *w = NULL;
	double best = 0;
	const char *what = "";
	for (unsigned i = 0; i < job->nranks; i++) {
		const gp_rank_t *r = &job->ranks[i];
		const char *wh;
		uint64_t p = gp_rank_in_use_peak(r, &wh);
		double share = r->id.gpu_total ? (double)p / (double)r->id.gpu_total : 0;
		if (share < MEM_NEAR_LIMIT || r->memory.oom_calls || r->torch.oom || share <= best)
			continue;
		best = share, w = r, what = wh;
	}
	gp_finding_t *f;
	if (!w || !(f = add(job, "memory_near_limit", GP_F_MEMORY, w)))
		return;
	f->score = best;
	uint64_t p = gp_rank_in_use_peak(w, &what);
	char card[160];
	against_card(w, p, card, sizeof(card));
	snprintf(f->title, sizeof(f->title),
	         "Device memory peaks at %.0f%% of the GPU on rank %d: close to out of memory",
	         100 * best, w->id.rank);
	snprintf(f->evidence, sizeof(f->evidence), "%s peaked at %.1f MiB%s%s%.120s", what,
	         p / 1048576.0, card, w->memory.peak_stack.s ? "; the peak reached by: " : "",
	         gp_txt(w->memory.peak_stack));
	snprintf(f->threshold, sizeof(f->threshold),
	         "the memory in use at its peak >= %.0f%% of the card's, no allocation refused",
	         MEM_NEAR_LIMIT * 100);
	snprintf(f->fix, sizeof(f->fix), "%s",
	         words(w,
	               "A longer sequence, a larger batch or fragmentation will run out: keep "
	               "headroom with activation checkpointing (torch.utils.checkpoint), a "
	               "smaller micro-batch with gradient accumulation, or "
	               "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True against fragmentation.",
	               "A larger batch or a new shape will run out: rematerialise activations "
	               "(jax.checkpoint), use smaller micro-batches with gradient accumulation "
	               "(optax.MultiSteps), or shard the state over devices.",
	               "A larger problem will run out: free buffers as soon as they are done "
	               "with, reuse them across steps, or split the work into smaller pieces."));
}

/* The table: run in this order (the straggler first: the rules after it know it). */
static const struct rule {
	const char *id;
	void (*run)(rule_ctx_t *c);
} rules[] = {
    {"not_observed", rule_unobserved},
    {"gpu_unused", rule_unused},
    {"outcome", rule_outcome},
    {"gpu_fault", rule_gpu_fault},
    {"gpu_shared", rule_gpu_shared},
    {"straggler", rule_straggler},
    {"sync_stall", rule_sync},
    {"input_bound", rule_input},
    {"idle_gaps", rule_idle},
    {"fragmentation", rule_frag},
    {"comm_not_overlapped", rule_comm},
    {"pageable_copies", rule_pageable},
    {"fp32_no_tensor_cores", rule_fp32},
    {"host_ahead", rule_host_ahead},
    {"memory_leak", rule_leak},
    {"optimizer_state", rule_optimizer},
    {"memory_near_limit", rule_near_limit},
};

/* Each finding's advice for any job, in one sentence (gpuprof ledger lists many jobs; a
 * job's own report gives the advice with its figures) */
static const struct {
	const char *id, *advice;
} advice[] = {
    {"not_observed", "The process that used the GPU was not the one recorded: see the job's "
                     "report for its process tree."},
    {"cuda_oom", "The GPU ran out of memory: reduce the batch or sequence, free what is kept "
                 "across steps, or use activation checkpointing or sharding."},
    {"time_limit", "Ask for the time the run needs (--time), or checkpoint on SIGTERM "
                   "(sbatch --signal=B:TERM@60) and resubmit from the checkpoint."},
    {"incomplete", "The program did not end: check sacct's State (TIMEOUT, CANCELLED, "
                   "NODE_FAIL) for the job."},
    {"killed", "A signal ended the program: Slurm at the time limit or scancel, or the "
               "kernel's OOM killer."},
    {"failed", "The program failed: read its output; the report's figures cover the run up "
               "to the failure."},
    {"gpu_fault", "A GPU fault (Xid): tell the cluster admins and resubmit excluding the node."},
    {"gpu_shared", "Ranks shared a GPU: give each rank a GPU of its own (--gpus-per-task=1) "
                   "unless the sharing is meant (MPS)."},
    {"straggler", "Every collective waits for the slowest rank: look at its node, its data "
                  "shard, or uneven work."},
    {"sync_stall", "A blocking read of a GPU value every step (loss.item(), .cpu(), print) "
                   "drains the pipeline: log every N steps or asynchronously."},
    {"input_bound", "The input pipeline is the bottleneck: more DataLoader workers, "
                    "persistent_workers, prefetching, pinned memory with non_blocking copies."},
    {"idle_gaps", "The GPU waits for the host between launches: host work, I/O or logging in "
                  "the step, or too many small kernels (CUDA graphs, torch.compile)."},
    {"fragmentation", "Many tiny kernels per step: fuse them or capture the step in a CUDA "
                      "graph (torch.compile mode=reduce-overhead)."},
    {"comm_not_overlapped", "Communication is not overlapped with compute: bucket gradients, "
                            "overlap all-reduce with backward, or use fewer, larger messages."},
    {"host_ahead", "The host runs far ahead of the GPU: the GPU is the limit; measure kernels, "
                   "not host time."},
    {"memory_leak", "Device memory grows every step: something is kept across steps (a "
                    "tensor with its graph, a growing list)."},
    {"gpu_unused", "The job held a GPU it never used: ask for the GPUs the program uses "
                   "(--gres=gpu:N), or none for CPU work."},
    {"pageable_copies", "Host-device copies from pageable memory hold the host: pin the "
                        "host buffers (pin_memory=True) and copy non-blocking."},
    {"fp32_no_tensor_cores", "fp32 matrix work runs on CUDA cores: enable TF32 "
                             "(torch.backends.cuda.matmul.allow_tf32) or train in bf16."},
    {"memory_near_limit", "The memory peak is close to the card's: leave headroom (a smaller "
                          "batch, activation checkpointing) before a longer input fails."},
    {"optimizer_state", "The optimizer's state holds much of the memory: a lighter optimizer "
                        "or sharded state (ZeRO, FSDP) frees it."},
};

const char *gp_finding_advice(const char *id)
{
	for (size_t i = 0; i < sizeof(advice) / sizeof(advice[0]); i++)
		if (!strcmp(advice[i].id, id))
			return advice[i].advice;
	return NULL;
}

static int cmp_f(const void *a, const void *b)
{
	const gp_finding_t *x = a, *y = b;
	if (x->kind != y->kind)
		return x->kind - y->kind;
	/* a straggler explains the others' waits: it leads the time findings */
	if (!strcmp(x->id, "straggler") != !strcmp(y->id, "straggler"))
		return strcmp(x->id, "straggler") ? 1 : -1;
	return x->score > y->score ? -1 : x->score < y->score;
}

/* The causes' savings on one rank never add past its step: each, in order, saves at most
 * what the ones before it left (they overlap: the same idle time seen twice). Effects
 * (a straggler's on the other ranks) add nothing of their own. */
/* Time findings that are not sized by a saving: a warning about measurements, a setup */
static bool unsized(const gp_finding_t *f)
{
	return !strcmp(f->id, "host_ahead") || !strcmp(f->id, "gpu_shared");
}

static void cap_savings(gp_job_t *job)
{
	for (unsigned i = 0; i < job->nf; i++) {
		gp_finding_t *f = &job->f[i];
		if (f->kind != GP_F_TIME || f->effect_of[0] || f->saving_pct <= 0)
			continue;
		double used = 0;
		for (unsigned k = 0; k < i; k++) {
			const gp_finding_t *g = &job->f[k];
			if (g->kind == GP_F_TIME && !g->effect_of[0] && g->rank == f->rank)
				used += g->saving_pct;
		}
		double left = used < 100 ? 100 - used : 0;
		if (f->saving_pct <= left)
			continue;
		double k = left / f->saving_pct;
		f->saving_ms *= k;
		f->saving_pct = left;
		f->score = left / 100;
		snprintf(
		    f->evidence + strlen(f->evidence), sizeof(f->evidence) - strlen(f->evidence),
		    "; the saving is what the findings above leave of the step (they share its "
		    "time)");
	}
	unsigned n = 0; /* a cause left with nothing to save is no finding */
	for (unsigned i = 0; i < job->nf; i++)
		if (!(job->f[i].kind == GP_F_TIME && !job->f[i].effect_of[0] &&
		      !unsized(&job->f[i]) && job->f[i].saving_pct <= 0))
			job->f[n++] = job->f[i];
	job->nf = n;
}

void gp_job_findings(gp_job_t *job)
{
	rule_ctx_t c = {.job = job};
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
		rules[i].run(&c);
	/* a straggler explains the other ranks' waits: their communication, synchronisation
	 * and idle findings are its effects, listed right after it */
	for (unsigned i = 0; c.straggler && i < job->nf; i++) {
		gp_finding_t *f = &job->f[i];
		if (f->kind == GP_F_TIME && f->rank != c.straggler->id.rank &&
		    (!strcmp(f->id, "comm_not_overlapped") || !strcmp(f->id, "sync_stall") ||
		     !strcmp(f->id, "idle_gaps")))
			snprintf(f->effect_of, sizeof(f->effect_of), "straggler");
		/* the straggler's own idle time is what makes it slow: the same cause, told
		 * under it, saving nothing more */
		else if (f->kind == GP_F_TIME && f->rank == c.straggler->id.rank &&
		         (!strcmp(f->id, "idle_gaps") || !strcmp(f->id, "sync_stall") ||
		          !strcmp(f->id, "input_bound")))
			snprintf(f->effect_of, sizeof(f->effect_of), "straggler:self");
	}
	if (job->nf)
		qsort(job->f, job->nf, sizeof(gp_finding_t), cmp_f);
	cap_savings(job);
	/* each effect right after its cause, in rank order among themselves */
	gp_finding_t out[sizeof(job->f) / sizeof(job->f[0])];
	unsigned n = 0;
	for (unsigned i = 0; i < job->nf; i++) {
		if (job->f[i].effect_of[0])
			continue;
		out[n++] = job->f[i];
		if (strcmp(job->f[i].id, "straggler"))
			continue;
		for (unsigned j = 0; j < job->nf; j++) /* its own time first, then its effects */
			if (!strcmp(job->f[j].effect_of, "straggler:self"))
				out[n++] = job->f[j];
		for (unsigned j = 0; j < job->nf; j++)
			if (!strcmp(job->f[j].effect_of, "straggler"))
				out[n++] = job->f[j];
	}
	memcpy(job->f, out, n * sizeof(gp_finding_t));
	job->nf = n;
	gp_job_accounting(job);
}

const char *gp_finding_relation(const gp_job_t *job, const gp_finding_t *f, char *buf, size_t len)
{
	if (!f->effect_of[0])
		return "";
	if (!strcmp(f->effect_of, "straggler:self"))
		return "the straggler's own time";
	for (unsigned i = 0; i < job->nf; i++)
		if (!strcmp(job->f[i].id, f->effect_of)) {
			snprintf(buf, len, "an effect of finding %u", i + 1);
			return buf;
		}
	return "an effect of the finding above";
}
