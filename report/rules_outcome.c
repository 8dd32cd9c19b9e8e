/* Findings about how the job ended and what it ran on (findings.h): the process that used
 * the GPU not recorded, a GPU allocated and never used, out of memory, the time limit, a
 * rank or launcher that failed, was killed or left no end record, and GPU faults. They
 * come first, before any time or memory finding, and are not sized. */
#include "config.h"
#include "findings.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

/* ---- the process that used the GPU was not the one recorded ---- */

static const gp_threshold_t unobserved_th[] = {
    {"memory_rise", GP_UNOBSERVED_MIB, "MiB",
     "without NVML's process lists: NVML's memory in use this far above its first sample "
     "means the task used the GPU (rank.h, GP_UNOBSERVED_MIB)"},
};

static bool unobserved_size(const gp_rule_ctx_t *c, const gp_rank_t *r, unsigned i, gp_size_t *s)
{
	s->rank_by = (double)r->memory.nvml_max;
	s->score = 1;
	return gp_rank_unobserved(r);
}

static void unobserved_describe(const gp_rule_ctx_t *c, gp_finding_t *f, const gp_rank_t *w,
                                const gp_size_t *s)
{
	unsigned n = s->nfired;
	snprintf(f->title, sizeof(f->title),
	         "Rank %d used its GPU, but no CUDA work of it was recorded%s", w->id.rank,
	         n > 1 ? " (and on other ranks)" : "");
	char used[200], own[32], rise[32], max[32];
	gp_rule_bytes(w->gpu.nvml_own_bytes, own, sizeof(own));
	gp_rule_bytes(w->gpu.nvml_rise, rise, sizeof(rise));
	gp_rule_bytes(w->memory.nvml_max, max, sizeof(max));
	if (w->gpu.nvml_proc_samples)
		snprintf(used, sizeof(used),
		         "NVML listed %u process(es) of the task on the rank's GPU (%s)%s",
		         w->gpu.nvml_own_procs, own,
		         w->gpu.nvml_own_procs ? ""
		                               : " and others' while a process of ours "
		                                 "initialised CUDA");
	else
		snprintf(used, sizeof(used),
		         "NVML's memory in use rose %s above its first sample (no process list "
		         "from this driver)",
		         rise);
	snprintf(f->evidence, sizeof(f->evidence),
	         "%s, up to %s in use (mean utilisation %.0f%%), while the %u recorded "
	         "process(es) of the rank made no kernel, copy or set (modes %s); %llu other "
	         "process(es) of the task were not recorded; %u rank(s) like this",
	         used, max, w->gpu.nvml_util_mean, w->procs.n ? w->procs.n : 1, w->id.modes,
	         (unsigned long long)w->quality.loss[GP_LOSS_PROCESSES], n);
	snprintf(f->threshold, sizeof(f->threshold),
	         "modes with cuda, nothing yielded, no CUDA activity recorded, a process of the "
	         "task in NVML's list of the GPU's processes (without that list: memory in use "
	         ">= %.0f MiB above the first sample)",
	         unobserved_th[0].value);
	snprintf(f->fix, sizeof(f->fix),
	         "The figures below do not describe the program that used the GPU. Report this "
	         "with the rank file (gpuprof dump --events) and the task's process tree; "
	         "GPUPROF_DEBUG=1 logs which process took the rank's ring.");
}

const gp_rule_t gp_rule_not_observed = {
    .id = "not_observed",
    .name = "GPU used by a process that was not recorded",
    .tier = GP_F_OUTCOME,
    .role = GP_ROLE_QUALITY,
    .th = unobserved_th,
    .nth = GP_NTH(unobserved_th),
    .saving_th = -1,
    .fires = "modes with cuda, nothing yielded, no CUDA activity recorded, and the task used "
             "its GPU: NVML listed a process of it there (without NVML's process lists: "
             "memory in use >= {memory_rise} above the first sample)",
    .saves = "-",
    .advice = "The process that used the GPU was not the one recorded: see the job's report "
              "for its process tree.",
    .size = unobserved_size,
    .describe = unobserved_describe,
};

/* ---- allocated, not used ---- */

/* A rank had a GPU and the task never used it (rank.h: no CUDA work, no process of the
 * task in NVML's lists). What a site that profiles every GPU job wants named first:
 * GPU-hours held for nothing. The first such rank. */
static bool unused_size(const gp_rule_ctx_t *c, const gp_rank_t *r, unsigned i, gp_size_t *s)
{
	s->score = 0.5; /* after a failure or a GPU fault, which say why it was not used */
	return gp_rank_gpu_unused(r);
}

static void unused_describe(const gp_rule_ctx_t *c, gp_finding_t *f, const gp_rank_t *w,
                            const gp_size_t *s)
{
	unsigned n = s->nfired;
	const gp_job_t *job = c->job;
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

const gp_rule_t gp_rule_gpu_unused = {
    .id = "gpu_unused",
    .name = "GPU allocated, never used",
    .tier = GP_F_OUTCOME,
    .role = GP_ROLE_CAUSE,
    .th = unobserved_th,
    .nth = GP_NTH(unobserved_th),
    .saving_th = -1,
    .fires = "allocated, not used: a rank had a GPU, recorded no CUDA work, and NVML's lists "
             "(once a second) never held a process of the task on it (without the lists: "
             "memory in use never {memory_rise} above the first sample). NVML's memory in "
             "use alone is no evidence: an idle H100 shows ~480 MiB with no process",
    .saves = "-",
    .advice = "The job held a GPU it never used: ask for the GPUs the program uses "
              "(--gres=gpu:N), or none for CPU work.",
    .size = unused_size,
    .describe = unused_describe,
};

/* ---- how each rank ended ---- */

/* How a rank ended, as the outcome findings tell it. */
struct ending {
	bool ended, sig, oom, timeout;
	int code;
	char reached[96];
};

static struct ending ending_of(const gp_job_t *job, const gp_rank_t *r)
{
	/* its end record, or Slurm's status where it left none (analyze.c: a fallback task's
	 * node summary) */
	struct ending x = {.ended = r->outcome.has_end || r->outcome.status_from_node};
	x.sig = x.ended && WIFSIGNALED(r->outcome.wait_status);
	x.code =
	    x.ended && WIFEXITED(r->outcome.wait_status) ? WEXITSTATUS(r->outcome.wait_status) : 0;
	/* Slurm's word on the job, when the report has it (--sacct, or a job id) */
	x.timeout = !strncmp(job->sacct_state, "TIMEOUT", 7);
	x.oom = (r->memory.oom_calls || r->torch.oom) && (x.code || x.sig);
	if (r->steps.n)
		snprintf(x.reached, sizeof(x.reached), "after reaching step %u (%u steps begun)",
		         r->steps.last_step, r->steps.n);
	else
		snprintf(x.reached, sizeof(x.reached), "before any step was recognised");
	return x;
}

/* The one outcome rule that tells a rank's end, in this order of precedence; NULL: the
 * rank ended cleanly. */
static const gp_rule_t *outcome_rule(const gp_job_t *job, const gp_rank_t *r)
{
	struct ending x = ending_of(job, r);
	if (x.ended && !x.sig && !x.code)
		return NULL;
	return x.oom       ? &gp_rule_cuda_oom
	       : x.timeout ? &gp_rule_time_limit
	       : !x.ended  ? &gp_rule_incomplete
	       : x.sig     ? &gp_rule_killed
	                   : &gp_rule_failed;
}

/* The five share one size: the rank's ending is the rule's (outcome_rule). */
static bool outcome_size(const gp_rule_ctx_t *c, const gp_rank_t *r, unsigned i, gp_size_t *s)
{
	s->score = 1;
	return outcome_rule(c->job, r) == c->rule;
}

static const char outcome_threshold[] =
    "any rank that exits non-zero, dies of a signal or leaves no end record";

/* Out of device memory: the refused allocations, PyTorch's own account. */
static void oom_describe(const gp_rule_ctx_t *c, gp_finding_t *f, const gp_rank_t *r,
                         const gp_size_t *s)
{
	struct ending x = ending_of(c->job, r);
	snprintf(f->title, sizeof(f->title),
	         "Rank %d ran out of device memory (CUDA out of memory) and exited %s", r->id.rank,
	         x.sig ? "on a signal" : "non-zero");
	if (r->memory.oom_calls)
		gp_cat(
		    f->evidence, sizeof(f->evidence),
		    "%llu device allocation(s) refused for lack of memory, the last at %.3f s%s; ",
		    (unsigned long long)r->memory.oom_calls, r->memory.oom_t_ns / 1e9,
		    r->memory.oom_step >= 0 ? " in the last step" : "");
	char rq[32], fr[32], tot[32], pk[32]; /* scaled: "5.00 GiB", never "5120.0 MiB" */
	gp_rule_bytes(r->torch.oom_requested, rq, sizeof(rq));
	gp_rule_bytes(r->torch.oom_free, fr, sizeof(fr));
	gp_rule_bytes(r->torch.oom_total, tot, sizeof(tot));
	gp_rule_bytes(r->memory.peak ? r->memory.peak : r->torch.max_reserved, pk, sizeof(pk));
	if (r->torch.oom) /* PyTorch's own account of the failed request */
		gp_cat(f->evidence, sizeof(f->evidence),
		       "PyTorch asked for %s with %s free of %s%s%s; ", rq, fr, tot,
		       r->torch.noom_owner ? "; largest holder: " : "",
		       r->torch.noom_owner ? gp_torch_owners(&r->torch, GP_OWN_OOM)[0].stack : "");
	gp_cat(f->evidence, sizeof(f->evidence), "the program then %s %d %s; peak device memory %s",
	       x.sig ? "died of signal" : "exited with status",
	       x.sig ? WTERMSIG(r->outcome.wait_status) : x.code, x.reached, pk);
	snprintf(f->fix, sizeof(f->fix),
	         "See 'Where the memory goes': the peak's stack and growth per step say "
	         "what filled the GPU. Reduce the batch or sequence, free what is kept "
	         "across steps, or use activation checkpointing or sharding.");
	snprintf(f->threshold, sizeof(f->threshold), "%s", outcome_threshold);
}

/* Stopped at the time limit (sacct said TIMEOUT). */
static void time_limit_describe(const gp_rule_ctx_t *c, gp_finding_t *f, const gp_rank_t *r,
                                const gp_size_t *s)
{
	struct ending x = ending_of(c->job, r);
	snprintf(f->title, sizeof(f->title), "Rank %d was stopped at the job's time limit %s",
	         r->id.rank, x.reached);
	snprintf(f->evidence, sizeof(f->evidence), "sacct: State %s; the rank %s",
	         c->job->sacct_state,
	         !x.ended ? "left no end record"
	         : x.sig  ? "was killed by signal"
	                  : "exited with status");
	if (x.ended)
		gp_cat(f->evidence, sizeof(f->evidence), " %d",
		       x.sig ? WTERMSIG(r->outcome.wait_status) : x.code);
	snprintf(f->fix, sizeof(f->fix),
	         "Ask for the time the run needs (--time; the median step times the "
	         "steps still to go), or checkpoint on SIGTERM (srun --signal, "
	         "sbatch --signal=B:TERM@60) and resubmit from the checkpoint.");
	snprintf(f->threshold, sizeof(f->threshold), "%s", outcome_threshold);
}

/* No end record: killed with its agent, or salvaged. */
static void incomplete_describe(const gp_rule_ctx_t *c, gp_finding_t *f, const gp_rank_t *r,
                                const gp_size_t *s)
{
	struct ending x = ending_of(c->job, r);
	snprintf(f->title, sizeof(f->title),
	         "Rank %d ended without a record of how (killed with its agent, or salvaged)",
	         r->id.rank);
	snprintf(f->evidence, sizeof(f->evidence),
	         "the rank file has no end record; what was captured %s is kept", x.reached);
	snprintf(f->fix, sizeof(f->fix),
	         "Check sacct's State (TIMEOUT, CANCELLED, NODE_FAIL, OUT_OF_MEMORY) for the "
	         "job; a time limit needs --time or checkpointing.");
	snprintf(f->threshold, sizeof(f->threshold), "%s", outcome_threshold);
}

/* A non-zero exit or a signal. */
static void failed_describe(const gp_rule_ctx_t *c, gp_finding_t *f, const gp_rank_t *r,
                            const gp_size_t *s)
{
	struct ending x = ending_of(c->job, r);
	int sig = x.sig ? WTERMSIG(r->outcome.wait_status) : 0;
	snprintf(f->title, sizeof(f->title), "Rank %d %s %d", r->id.rank,
	         x.sig ? "was killed by signal" : "exited with status", x.sig ? sig : x.code);
	snprintf(f->evidence, sizeof(f->evidence), "the program %s %s%s",
	         x.sig ? "was killed" : "failed", x.reached,
	         r->outcome.status_from_node ? "; Slurm's status for the task (its rank file "
	                                       "has no end record: no agent, and the "
	                                       "library's exit hook did not run)"
	                                     : "");
	snprintf(f->fix, sizeof(f->fix), "%s",
	         x.sig && (sig == SIGTERM || sig == SIGKILL)
	             ? "SIGTERM/SIGKILL come from Slurm at the time limit or scancel (see "
	               "sacct State), or from the kernel's OOM killer (host memory)."
	             : "Read the task's stderr; the figures below cover the run up to the "
	               "failure.");
	snprintf(f->threshold, sizeof(f->threshold), "%s", outcome_threshold);
}

/* A launcher (torchrun) that failed: its workers' statuses were its to see. Run after the
 * ranks' own endings. */
static void launcher_findings(gp_rule_ctx_t *c)
{
	gp_job_t *job = c->job;
	for (unsigned i = 0; i < job->nlaunchers; i++) {
		const struct gp_launcher *l = &job->launchers[i];
		bool sig = l->has_end && WIFSIGNALED(l->wait_status);
		int code =
		    l->has_end && WIFEXITED(l->wait_status) ? WEXITSTATUS(l->wait_status) : 0;
		if (l->has_end && !sig && !code)
			continue;
		gp_finding_t *f = gp_rule_add(c,
		                              !l->has_end ? &gp_rule_incomplete
		                              : sig       ? &gp_rule_killed
		                                          : &gp_rule_failed,
		                              NULL);
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

#define OUTCOME_RULE(ID, NAME, FIRES, ADVICE, DESCRIBE, JOB)                                       \
	{                                                                                          \
		.id = ID, .name = NAME, .tier = GP_F_OUTCOME, .role = GP_ROLE_CAUSE,               \
		.select = GP_SELECT_EACH, .saving_th = -1, .fires = FIRES, .saves = "-",           \
		.advice = ADVICE, .size = outcome_size, .describe = DESCRIBE, .job_findings = JOB, \
	}

/* The five are one group run rank by rank (a rank's ending is one of them, in this order
 * of precedence), the launchers after the ranks. */
const gp_rule_t gp_rule_cuda_oom = OUTCOME_RULE(
    "cuda_oom", "out of device memory",
    "a rank exits non-zero or dies of a signal after a CUDA allocation was refused for lack "
    "of memory (API record return value 2), or PyTorch said it ran out",
    "The GPU ran out of memory: reduce the batch or sequence, free what is kept across steps, "
    "or use activation checkpointing or sharding.",
    oom_describe, NULL);
const gp_rule_t gp_rule_time_limit = OUTCOME_RULE(
    "time_limit", "stopped at the time limit",
    "sacct's State is TIMEOUT (the report has it with `--sacct` or a job id) and a rank did "
    "not end cleanly; with the last step reached",
    "Ask for the time the run needs (--time), or checkpoint on SIGTERM (sbatch "
    "--signal=B:TERM@60) and resubmit from the checkpoint.",
    time_limit_describe, NULL);
const gp_rule_t gp_rule_incomplete = OUTCOME_RULE(
    "incomplete", "ended without a record of how",
    "a rank (or a launcher, torchrun) leaves no end record; with the last step reached",
    "The program did not end: check sacct's State (TIMEOUT, CANCELLED, NODE_FAIL) for the "
    "job.",
    incomplete_describe, NULL);
const gp_rule_t gp_rule_killed = OUTCOME_RULE(
    "killed", "killed by a signal",
    "a rank (or a launcher) dies of a signal; with the last step reached",
    "A signal ended the program: Slurm at the time limit or scancel, or the kernel's OOM "
    "killer.",
    failed_describe, NULL);
const gp_rule_t gp_rule_failed = OUTCOME_RULE(
    "failed", "exited non-zero",
    "a rank (or a launcher) exits non-zero; with the last step reached (a launcher's worker "
    "holding the task's rank: its own exit status)",
    "The program failed: read its output; the report's figures cover the run up to the "
    "failure.",
    failed_describe, launcher_findings);

/* ---- GPU faults ---- */

/* Xid events and uncorrected ECC errors: the hardware, not the program. The rank with the
 * most. */
static bool fault_size(const gp_rule_ctx_t *c, const gp_rank_t *r, unsigned i, gp_size_t *s)
{
	s->rank_by = (double)(r->faults.nxid + r->faults.ecc_uncorrected);
	s->score = 1;
	return r->faults.nxid || r->faults.ecc_uncorrected;
}

static void fault_describe(const gp_rule_ctx_t *c, gp_finding_t *f, const gp_rank_t *w,
                           const gp_size_t *s)
{
	snprintf(f->title, sizeof(f->title), "GPU fault on %s: %s", gp_txt(w->id.node),
	         w->faults.nxid ? "Xid error reported by the driver" : "uncorrected ECC errors");
	snprintf(f->evidence, sizeof(f->evidence),
	         "rank %d: %llu Xid event(s)%s%u%s, %llu uncorrected and %llu corrected ECC "
	         "errors during the run; %u rank(s) affected",
	         w->id.rank, (unsigned long long)w->faults.nxid,
	         w->faults.nxid ? " (first: Xid " : "", w->faults.nxid ? w->faults.first_xid : 0,
	         w->faults.nxid ? ")" : "", (unsigned long long)w->faults.ecc_uncorrected,
	         (unsigned long long)w->faults.ecc_corrected, s->nfired);
	snprintf(f->threshold, sizeof(f->threshold),
	         "any Xid event or uncorrected ECC error on a task's GPU (NVML)");
	snprintf(f->fix, sizeof(f->fix),
	         "Tell the cluster admins (node %s, the Xid code; NVIDIA's Xid catalogue says "
	         "whether it is the application, the driver or the hardware) and resubmit with "
	         "--exclude=%s; timings from this rank are not trustworthy.",
	         gp_txt(w->id.node), gp_txt(w->id.node));
}

const gp_rule_t gp_rule_gpu_fault = {
    .id = "gpu_fault",
    .name = "GPU fault (Xid, ECC)",
    .tier = GP_F_OUTCOME,
    .role = GP_ROLE_CAUSE,
    .saving_th = -1,
    .fires = "any Xid event or uncorrected ECC error on a task's GPU",
    .saves = "-",
    .advice = "A GPU fault (Xid): tell the cluster admins and resubmit excluding the node.",
    .size = fault_size,
    .describe = fault_describe,
};
