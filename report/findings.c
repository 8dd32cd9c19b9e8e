/* Findings: the seed's diagnostic workflow as a table of rules. Each rule looks at every
 * rank, sizes what a fix would save on it (time per step from the timeline, or bytes),
 * and reports the rank where that saving is largest, with its threshold, evidence and
 * the fix the seed recommends. The list comes in tiers: how the job ended first, then
 * time findings by their saving, then memory findings by theirs; a straggler's effects
 * on the other ranks (their waits in collectives and synchronisation) follow it, marked
 * as its effects, instead of standing as advice of their own. Thresholds are named
 * constants here and documented in doc/report.md. */
#include "config.h"
#include "analyze.h"
#include "event.h"
#include "stats.h"

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
#define OPT_STATE_SHARE         0.25 /* optimizer state >= 25% of peak device memory */

/* GPU window of a rank: steps its GPU statistics cover (0: no steps known) */
static unsigned gsteps(const gp_rank_t *r)
{
	return r->capture_window ? r->captured_steps : r->nsteps_post;
}

/* A rank's time t (ns, over its GPU window) as ms per step and % of its step; without
 * steps, as a share of the GPU span. The window spans span_ns: that many steps' worth
 * of the rank's step time (the GPU statistics cover from the first launch of the first
 * post-warm-up step to the end of the last one's work, one step period less than the
 * steps counted). */
static void per_step(const gp_rank_t *r, uint64_t t, double *ms, double *pct)
{
	unsigned n = gsteps(r);
	if (n && r->step_median_ms > 0) {
		double steps = r->span_ns ? (double)r->span_ns / 1e6 / r->step_median_ms : n;
		*ms = (double)t / 1e6 / (steps >= 1 ? steps : 1);
		*pct = 100.0 * *ms / r->step_median_ms;
	} else {
		*ms = (double)t / 1e6;
		*pct = r->span_ns ? 100.0 * (double)t / (double)r->span_ns : 0;
	}
}

/* exposed communication: NCCL kernel time not overlapped by compute, per step (ms) */
static double exposed_comm_ms(const gp_rank_t *r)
{
	double ms, pct;
	per_step(r, r->comm_ns > r->overlap_ns ? r->comm_ns - r->overlap_ns : 0, &ms, &pct);
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
	f->rank = r ? r->rank : -1;
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

/* ---- how the job ended ---- */

static void rule_outcome(rule_ctx_t *c)
{
	gp_job_t *job = c->job;
	for (unsigned i = 0; i < job->nranks; i++) {
		const gp_rank_t *r = &job->ranks[i];
		/* how it ended: its end record, or Slurm's status where it left none (analyze.c:
		 * a fallback task's node summary) */
		bool ended = r->has_end || r->status_from_node;
		bool sig = ended && WIFSIGNALED(r->wait_status);
		int code = ended && WIFEXITED(r->wait_status) ? WEXITSTATUS(r->wait_status) : 0;
		if (ended && !sig && !code)
			continue;
		/* Slurm's word on the job, when the report has it (--sacct, or a job id) */
		bool timeout = !strncmp(job->sacct_state, "TIMEOUT", 7);
		bool oom = (r->oom_calls || r->torch.oom) && (code || sig);
		const char *id = oom       ? "cuda_oom"
		                 : timeout ? "time_limit"
		                 : !ended  ? "incomplete"
		                 : sig     ? "killed"
		                           : "failed";
		gp_finding_t *f = add(job, id, GP_F_OUTCOME, r);
		if (!f)
			return;
		f->score = 1;
		char reached[96];
		if (r->nsteps)
			snprintf(reached, sizeof(reached),
			         "after reaching step %u (%u steps begun)", r->last_step,
			         r->nsteps);
		else
			snprintf(reached, sizeof(reached), "before any step was recognised");
		if (!strcmp(id, "cuda_oom")) {
			snprintf(
			    f->title, sizeof(f->title),
			    "Rank %d ran out of device memory (CUDA out of memory) and exited %s",
			    r->rank, sig ? "on a signal" : "non-zero");
			if (r->oom_calls)
				snprintf(
				    f->evidence, sizeof(f->evidence),
				    "%llu device allocation(s) refused for lack of memory, the "
				    "last at %.3f s%s; ",
				    (unsigned long long)r->oom_calls, r->oom_t_ns / 1e9,
				    r->oom_step >= 0 ? " in the last step" : "");
			if (r->torch.oom) /* PyTorch's own account of the failed request */
				snprintf(f->evidence + strlen(f->evidence),
				         sizeof(f->evidence) - strlen(f->evidence),
				         "PyTorch asked for %.1f MiB with %.1f MiB free of %.1f "
				         "MiB%s%s; ",
				         r->torch.oom_requested / 1048576.0,
				         r->torch.oom_free / 1048576.0,
				         r->torch.oom_total / 1048576.0,
				         r->torch.noom_owner ? "; largest holder: " : "",
				         r->torch.noom_owner
				             ? gp_torch_owners(&r->torch, GP_OWN_OOM)[0].stack
				             : "");
			snprintf(f->evidence + strlen(f->evidence),
			         sizeof(f->evidence) - strlen(f->evidence),
			         "the program then %s %d %s; peak device memory %.1f MiB",
			         sig ? "died of signal" : "exited with status",
			         sig ? WTERMSIG(r->wait_status) : code, reached,
			         (r->mem_peak ? r->mem_peak : r->torch.max_reserved) / 1048576.0);
			snprintf(
			    f->fix, sizeof(f->fix),
			    "See 'Where the memory goes': the peak's stack and growth per step say "
			    "what filled the GPU. Reduce the batch or sequence, free what is kept "
			    "across steps, or use activation checkpointing or sharding.");
		} else if (!strcmp(id, "time_limit")) {
			snprintf(f->title, sizeof(f->title),
			         "Rank %d was stopped at the job's time limit %s", r->rank,
			         reached);
			snprintf(f->evidence, sizeof(f->evidence), "sacct: State %s; the rank %s%s",
			         job->sacct_state,
			         !ended ? "left no end record"
			         : sig  ? "was killed by signal"
			                : "exited with status",
			         "");
			if (ended)
				snprintf(f->evidence + strlen(f->evidence),
				         sizeof(f->evidence) - strlen(f->evidence), " %d",
				         sig ? WTERMSIG(r->wait_status) : code);
			snprintf(
			    f->fix, sizeof(f->fix),
			    "Ask for the time the run needs (--time; the median step times the "
			    "steps still to go), or checkpoint on SIGTERM (srun --signal, "
			    "sbatch --signal=B:TERM@60) and resubmit from the checkpoint.");
		} else if (!strcmp(id, "incomplete")) {
			snprintf(f->title, sizeof(f->title),
			         "Rank %d ended without a record of how (killed with its agent, or "
			         "salvaged)",
			         r->rank);
			snprintf(f->evidence, sizeof(f->evidence),
			         "the rank file has no end record; what was captured %s is kept",
			         reached);
			snprintf(f->fix, sizeof(f->fix),
			         "Check sacct's State (TIMEOUT, CANCELLED, NODE_FAIL, "
			         "OUT_OF_MEMORY) for "
			         "the job; a time limit needs --time or checkpointing.");
		} else {
			snprintf(f->title, sizeof(f->title), "Rank %d %s %d", r->rank,
			         sig ? "was killed by signal" : "exited with status",
			         sig ? WTERMSIG(r->wait_status) : code);
			snprintf(f->evidence, sizeof(f->evidence), "the program %s %s%s",
			         sig ? "was killed" : "failed", reached,
			         r->status_from_node
			             ? "; Slurm's status for the task (its rank file "
			               "has no end record: no agent, and the "
			               "library's exit hook did not run)"
			             : "");
			snprintf(
			    f->fix, sizeof(f->fix),
			    sig && (WTERMSIG(r->wait_status) == SIGTERM ||
			            WTERMSIG(r->wait_status) == SIGKILL)
			        ? "SIGTERM/SIGKILL come from Slurm at the time limit or scancel "
			          "(see "
			          "sacct State), or from the kernel's OOM killer (host memory)."
			        : "Read the task's stderr; the figures below cover the run up to "
			          "the "
			          "failure.");
		}
		snprintf(f->threshold, sizeof(f->threshold),
		         "any rank that exits non-zero, dies of a signal or leaves no end record");
	}
	/* a launcher (torchrun) that failed: its workers' statuses were its to see */
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
		if (!w || r->nvml_mem_max > w->nvml_mem_max)
			w = r;
	}
	gp_finding_t *f;
	if (!w || !(f = add(job, "not_observed", GP_F_OUTCOME, w)))
		return;
	f->score = 1;
	snprintf(f->title, sizeof(f->title),
	         "Rank %d used its GPU, but no CUDA work of it was recorded%s", w->rank,
	         n > 1 ? " (and on other ranks)" : "");
	snprintf(f->evidence, sizeof(f->evidence),
	         "NVML saw up to %.0f MiB in use on the rank's GPU (mean utilisation %.0f%%), "
	         "while the %u recorded process(es) of the rank made no kernel, copy or set "
	         "(modes %s); %llu other process(es) of the task were not recorded; %u rank(s) "
	         "like this",
	         w->nvml_mem_max / 1048576.0, w->nvml_util_mean, w->nprocs ? w->nprocs : 1,
	         w->modes, (unsigned long long)w->loss[GP_LOSS_PROCESSES], n);
	snprintf(f->threshold, sizeof(f->threshold),
	         "modes with cuda, nothing yielded, no CUDA activity recorded, NVML memory in "
	         "use >= %d MiB",
	         GP_UNOBSERVED_MIB);
	snprintf(f->fix, sizeof(f->fix),
	         "The figures below do not describe the program that used the GPU. Report this "
	         "with the rank file (gpuprof dump --events) and the task's process tree; "
	         "GPUPROF_DEBUG=1 logs which process took the rank's ring.");
}

/* Xid events and uncorrected ECC errors: the hardware, not the program. */
static void rule_gpu_fault(rule_ctx_t *c)
{
	gp_job_t *job = c->job;
	const gp_rank_t *w = NULL;
	unsigned nbad = 0;
	for (unsigned i = 0; i < job->nranks; i++) {
		const gp_rank_t *r = &job->ranks[i];
		if (!r->nxid && !r->ecc_uncorrected)
			continue;
		nbad++;
		if (!w || r->nxid + r->ecc_uncorrected > w->nxid + w->ecc_uncorrected)
			w = r;
	}
	gp_finding_t *f;
	if (!w || !(f = add(job, "gpu_fault", GP_F_OUTCOME, w)))
		return;
	f->score = 1;
	snprintf(f->title, sizeof(f->title), "GPU fault on %s: %s", w->node,
	         w->nxid ? "Xid error reported by the driver" : "uncorrected ECC errors");
	snprintf(f->evidence, sizeof(f->evidence),
	         "rank %d: %llu Xid event(s)%s%u%s, %llu uncorrected and %llu corrected ECC "
	         "errors during the run; %u rank(s) affected",
	         w->rank, (unsigned long long)w->nxid, w->nxid ? " (first: Xid " : "",
	         w->nxid ? w->first_xid : 0, w->nxid ? ")" : "",
	         (unsigned long long)w->ecc_uncorrected, (unsigned long long)w->ecc_corrected,
	         nbad);
	snprintf(f->threshold, sizeof(f->threshold),
	         "any Xid event or uncorrected ECC error on a task's GPU (NVML)");
	snprintf(f->fix, sizeof(f->fix),
	         "Tell the cluster admins (node %s, the Xid code; NVIDIA's Xid catalogue says "
	         "whether it is the application, the driver or the hardware) and resubmit with "
	         "--exclude=%s; timings from this rank are not trustworthy.",
	         w->node, w->node);
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
	for (unsigned i = 0; i < job->nranks; i++) {
		const gp_rank_t *r = &job->ranks[i];
		work[i] = r->nstep_ms ? r->step_median_ms - exposed_comm_ms(r) : -1;
		n += r->nstep_ms > 0;
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
	         slow->rank, slow->node, 100 * excess / base);
	snprintf(f->evidence, sizeof(f->evidence),
	         "rank %d: %.2f ms of its own work per step (%s step %.2f ms, %.2f ms of it "
	         "exposed communication) against %.2f ms on the other ranks (%u)%s",
	         slow->rank, slow->step_median_ms - exposed_comm_ms(slow), slow->step_basis,
	         slow->step_median_ms, exposed_comm_ms(slow), base, n - 1,
	         slow->comm_ns ? "; the others wait for it inside their collectives" : "");
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
		per_step(r, r->idle_sync_ns, &ms, &pct);
		unsigned n = gsteps(r);
		if (!r->sync_calls || (n && r->sync_calls < SYNC_MIN_PER_STEP * n) ||
		    pct < SYNC_MIN_PCT || ms <= best)
			continue;
		best = ms, best_pct = pct, w = r;
	}
	gp_finding_t *f;
	if (!w || !(f = add_time(job, "sync_stall", w, best, best_pct)))
		return;
	snprintf(f->title, sizeof(f->title),
	         "Synchronisation stalls leave the GPU idle: %.2f ms per step (%.1f%%) on rank %d",
	         best, best_pct, w->rank);
	snprintf(f->evidence, sizeof(f->evidence),
	         "%llu blocking calls (stream/device/event synchronize, blocking device-to-host "
	         "copies) held the host %.1f ms in all, most inside NVTX range '%s'; after they "
	         "returned the GPU sat idle %.1f ms waiting for the next launch",
	         (unsigned long long)w->sync_calls, w->sync_ns / 1e6,
	         w->sync_range[0] ? w->sync_range : "(none)", w->idle_sync_ns / 1e6);
	snprintf(f->threshold, sizeof(f->threshold),
	         "a blocking call in >= %.0f%% of steps and GPU idle after them >= %.2g%% of the "
	         "step",
	         SYNC_MIN_PER_STEP * 100, SYNC_MIN_PCT);
	snprintf(f->fix, sizeof(f->fix),
	         "Each blocking read of a GPU value (loss.item(), .cpu(), printing a tensor, 'if "
	         "loss < x') drains the pipeline. Log every N steps or asynchronously "
	         "(non_blocking copy into pinned memory, read it a step later).");
}

static void rule_idle(rule_ctx_t *c)
{
	gp_job_t *job = c->job;
	const gp_rank_t *w = NULL;
	double best = 0, best_pct = 0;
	for (unsigned i = 0; i < job->nranks; i++) {
		const gp_rank_t *r = &job->ranks[i];
		double ms, pct;
		per_step(r, r->idle_host_ns, &ms, &pct);
		if (pct < IDLE_HOST_PCT || ms <= best)
			continue;
		best = ms, best_pct = pct, w = r;
	}
	gp_finding_t *f;
	if (!w || !(f = add_time(job, "idle_gaps", w, best, best_pct)))
		return;
	snprintf(f->title, sizeof(f->title),
	         "GPU idle waiting for the host: %.2f ms per step (%.1f%%) on rank %d", best,
	         best_pct, w->rank);
	snprintf(f->evidence, sizeof(f->evidence),
	         "GPU busy %.1f%% of the steps; idle %.1f ms waiting for launches that came after "
	         "it had finished (no synchronisation pending), %.1f ms after synchronisation, "
	         "%.1f ms in gaps under 30 us, %.1f ms other",
	         w->span_ns ? 100.0 * w->busy_ns / w->span_ns : 0, w->idle_host_ns / 1e6,
	         w->idle_sync_ns / 1e6, w->idle_kernel_ns / 1e6, w->idle_other_ns / 1e6);
	snprintf(f->threshold, sizeof(f->threshold), "host-wait idle >= %.0f%% of the step",
	         IDLE_HOST_PCT);
	snprintf(f->fix, sizeof(f->fix),
	         "The CPU is the bottleneck between launches: data loading or Python overhead. "
	         "Prefetch (DataLoader num_workers, pin_memory, prefetch_factor), move "
	         "preprocessing off the critical path, or overlap it with the GPU.");
}

static void rule_frag(rule_ctx_t *c)
{
	gp_job_t *job = c->job;
	const gp_rank_t *w = NULL;
	double best = 0, best_pct = 0;
	for (unsigned i = 0; i < job->nranks; i++) {
		const gp_rank_t *r = &job->ranks[i];
		double ms, pct;
		if (r->nkernels < 100 || !r->span_ns ||
		    (double)r->small_kernels / r->nkernels < FRAG_SMALL_SHARE ||
		    (double)r->busy_ns / r->span_ns >= FRAG_BUSY_MAX)
			continue;
		per_step(r, r->idle_kernel_ns, &ms, &pct);
		if (pct < MIN_SAVING_PCT || ms <= best)
			continue;
		best = ms, best_pct = pct, w = r;
	}
	gp_finding_t *f;
	if (!w || !(f = add_time(job, "fragmentation", w, best, best_pct)))
		return;
	snprintf(f->title, sizeof(f->title),
	         "Kernel fragmentation: %.0f%% of kernels shorter than 10 us on rank %d; %.2f ms "
	         "per step (%.1f%%) lost between them",
	         100.0 * w->small_kernels / w->nkernels, w->rank, best, best_pct);
	snprintf(f->evidence, sizeof(f->evidence),
	         "%llu kernels, mean %.1f us, %.0f per step; %llu ran shorter than their launch "
	         "call; median launch latency %.1f us; GPU busy %.1f%%; gaps under 30 us between "
	         "kernels %.1f ms",
	         (unsigned long long)w->nkernels, w->kernel_mean_us, w->kernels_per_step,
	         (unsigned long long)w->short_vs_launch, w->launch_latency_us,
	         100.0 * w->busy_ns / w->span_ns, w->idle_kernel_ns / 1e6);
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
		if (r->compute_ns + r->comm_ns == 0 ||
		    (double)r->comm_ns / (r->compute_ns + r->comm_ns) < COMM_SHARE_MIN ||
		    (double)r->overlap_ns / (r->comm_ns ? r->comm_ns : 1) >= COMM_OVERLAP_MAX)
			continue;
		double ms, pct;
		per_step(r, r->comm_ns - (r->overlap_ns < r->comm_ns ? r->overlap_ns : r->comm_ns),
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
	         w->rank, best, best_pct);
	snprintf(f->evidence, sizeof(f->evidence),
	         "NCCL kernels %.1f ms (%.0f%% of kernel time), overlapped with compute %.1f ms",
	         w->comm_ns / 1e6, 100.0 * w->comm_ns / (w->comm_ns + w->compute_ns),
	         w->overlap_ns / 1e6);
	snprintf(f->threshold, sizeof(f->threshold), "comm >= %.0f%% and overlap < %.0f%% of comm",
	         COMM_SHARE_MIN * 100, COMM_OVERLAP_MAX * 100);
	snprintf(f->fix, sizeof(f->fix),
	         "Overlap gradient all-reduce with backward (DDP bucketing, bucket_cap_mb), or "
	         "reduce communication (gradient accumulation, compression).");
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
		if (strcmp(r->step_basis, "gpu") || r->cpu_median_ms <= 0 ||
		    r->cpu_median_ms >= HOST_AHEAD_RATIO * r->step_median_ms)
			continue;
		if (!w ||
		    r->cpu_median_ms / r->step_median_ms < w->cpu_median_ms / w->step_median_ms)
			w = r;
	}
	gp_finding_t *f;
	if (!w || !(f = add_time(job, "host_ahead", w, 0, 0)))
		return;
	snprintf(f->title, sizeof(f->title),
	         "The host runs ahead of the GPU on rank %d: the step range takes %.2f ms of CPU "
	         "time, the GPU %.2f ms per step",
	         w->rank, w->cpu_median_ms, w->step_median_ms);
	snprintf(f->evidence, sizeof(f->evidence),
	         "median CPU time inside '%s' %.3f ms; GPU step %.3f ms (%s)", w->step_name,
	         w->cpu_median_ms, w->step_median_ms,
	         w->step_gpu_from_markers ? "from step completion markers"
	                                  : "completion of the step's last GPU work to the next");
	snprintf(f->threshold, sizeof(f->threshold), "CPU range < %.0f%% of the GPU step",
	         HOST_AHEAD_RATIO * 100);
	snprintf(f->fix, sizeof(f->fix),
	         "Nothing to fix in the program: the GPU is the bottleneck. Time steps with "
	         "torch.cuda.synchronize() or CUDA events, not a host timer around the step "
	         "(this report already does).");
}

/* ---- memory ---- */

static void rule_leak(rule_ctx_t *c)
{
	gp_job_t *job = c->job;
	const gp_rank_t *w = NULL;
	for (unsigned i = 0; i < job->nranks; i++) {
		const gp_rank_t *r = &job->ranks[i];
		if (r->mem_growth_per_step >= LEAK_MIN_BYTES_PER_STEP && r->leak_allocs >= 2 &&
		    (!w || r->leak_bytes > w->leak_bytes))
			w = r;
	}
	gp_finding_t *f;
	if (!w || !(f = add(job, "memory_leak", GP_F_MEMORY, w)))
		return;
	f->saving_bytes = (double)w->leak_bytes;
	f->score = w->mem_peak ? (double)w->leak_bytes / w->mem_peak : 0;
	snprintf(f->title, sizeof(f->title), "Device memory grows %.1f KiB per step on rank %d",
	         w->mem_growth_per_step / 1024.0, w->rank);
	snprintf(f->evidence, sizeof(f->evidence),
	         "%llu allocations (%.1f MiB, %.0f%% of the peak) made after warm-up were never "
	         "freed; most came from: %s",
	         (unsigned long long)w->leak_allocs, w->leak_bytes / 1048576.0, 100 * f->score,
	         w->leak_stack[0] ? w->leak_stack : "(no stack: run with mode mem)");
	snprintf(f->threshold, sizeof(f->threshold),
	         "live device memory grows >= %.0f B per step after warm-up",
	         LEAK_MIN_BYTES_PER_STEP);
	snprintf(f->fix, sizeof(f->fix),
	         "Something keeps a reference each step (tensors appended to a list, loss kept "
	         "with its graph, a cache): free it or detach()/item() what you keep. The stack "
	         "above is where the growing allocations are made.");
}

/* The rank's device memory peak: CUDA's (CUPTI's records), else PyTorch's reserved. */
static uint64_t peak_of(const gp_rank_t *r)
{
	return r->mem_peak ? r->mem_peak : r->torch.max_reserved;
}

static void rule_optimizer(rule_ctx_t *c)
{
	gp_job_t *job = c->job;
	const gp_rank_t *w = NULL;
	for (unsigned i = 0; i < job->nranks; i++) {
		const gp_rank_t *r = &job->ranks[i];
		if (peak_of(r) && (double)r->optimizer_bytes / peak_of(r) >= OPT_STATE_SHARE &&
		    (!w || r->optimizer_bytes > w->optimizer_bytes))
			w = r;
	}
	gp_finding_t *f;
	if (!w || !(f = add(job, "optimizer_state", GP_F_MEMORY, w)))
		return;
	uint64_t peak = peak_of(w);
	bool torch = !strcmp(w->optimizer_source, "PyTorch optimizer state");
	f->saving_bytes = w->optimizer_bytes / 2.0; /* bf16 states, or 2-way sharding */
	f->score = (double)w->optimizer_bytes / peak;
	snprintf(f->title, sizeof(f->title),
	         "Optimizer state holds %.0f%% of peak device memory on rank %d",
	         100.0 * w->optimizer_bytes / peak, w->rank);
	snprintf(f->evidence, sizeof(f->evidence),
	         "%.1f MiB %s; peak %.1f MiB; bf16 states or sharding over 2 ranks would free "
	         "about %.1f MiB",
	         w->optimizer_bytes / 1048576.0,
	         torch ? "in the optimizers' state tensors on the GPU (PyTorch's own figures)"
	               : "allocated in the first optimizer step and still held at the last step",
	         peak / 1048576.0, f->saving_bytes / 1048576.0);
	snprintf(f->threshold, sizeof(f->threshold), "optimizer state >= %.0f%% of peak",
	         OPT_STATE_SHARE * 100);
	snprintf(f->fix, sizeof(f->fix),
	         "Adam keeps two extra tensors per parameter. Use a fused or lower-precision "
	         "optimizer (8-bit Adam, bf16 states), or shard optimizer state across ranks "
	         "(ZeRO/FSDP).");
}

/* The table: run in this order (the straggler first: the rules after it know it). */
static const struct rule {
	const char *id;
	void (*run)(rule_ctx_t *c);
} rules[] = {
    {"not_observed", rule_unobserved},  {"outcome", rule_outcome},
    {"gpu_fault", rule_gpu_fault},
    {"straggler", rule_straggler},      {"sync_stall", rule_sync},
    {"idle_gaps", rule_idle},           {"fragmentation", rule_frag},
    {"comm_not_overlapped", rule_comm}, {"host_ahead", rule_host_ahead},
    {"memory_leak", rule_leak},         {"optimizer_state", rule_optimizer},
};

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

void gp_job_findings(gp_job_t *job)
{
	rule_ctx_t c = {.job = job};
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
		rules[i].run(&c);
	/* a straggler explains the other ranks' waits: their communication, synchronisation
	 * and idle findings are its effects, listed right after it */
	for (unsigned i = 0; c.straggler && i < job->nf; i++) {
		gp_finding_t *f = &job->f[i];
		if (f->kind == GP_F_TIME && f->rank != c.straggler->rank &&
		    (!strcmp(f->id, "comm_not_overlapped") || !strcmp(f->id, "sync_stall") ||
		     !strcmp(f->id, "idle_gaps")))
			snprintf(f->effect_of, sizeof(f->effect_of), "straggler");
	}
	if (job->nf)
		qsort(job->f, job->nf, sizeof(gp_finding_t), cmp_f);
	/* each effect right after its cause, in rank order among themselves */
	gp_finding_t out[sizeof(job->f) / sizeof(job->f[0])];
	unsigned n = 0;
	for (unsigned i = 0; i < job->nf; i++) {
		if (job->f[i].effect_of[0])
			continue;
		out[n++] = job->f[i];
		if (strcmp(job->f[i].id, "straggler"))
			continue;
		for (unsigned j = 0; j < job->nf; j++)
			if (!strcmp(job->f[j].effect_of, "straggler"))
				out[n++] = job->f[j];
	}
	memcpy(job->f, out, n * sizeof(gp_finding_t));
	job->nf = n;
}
