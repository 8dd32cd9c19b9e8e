/* Findings: the seed's diagnostic workflow as rules. Each rule states its threshold, the
 * evidence it saw and the fix the seed recommends; findings are ranked by the share of
 * step time (or device memory) at stake. Thresholds are named constants, documented in
 * doc/report.md. */
#include "config.h"
#include "analyze.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SYNC_SHARE_MIN          0.05 /* sync stalls >= 5% of the GPU span */
#define IDLE_HOST_SHARE_MIN     0.20 /* host-side idle >= 20% of the GPU span */
#define FRAG_SMALL_SHARE        0.50 /* >= 50% of kernels under 10 us ... */
#define FRAG_BUSY_MAX           0.70 /* ... while the GPU is busy < 70% of the span */
#define LEAK_MIN_BYTES_PER_STEP 1024.0
#define OPT_STATE_SHARE         0.25 /* optimizer state >= 25% of peak device memory */
#define STRAGGLER_RATIO                                                                            \
	1.30 /* a rank's median step >= 130% of the job median; two ranks                          \
	      sharing one H200 differed by 21% with nothing planted */
#define COMM_SHARE_MIN   0.10
#define COMM_OVERLAP_MAX 0.30

static gp_finding_t *add(gp_job_t *job, const char *id, double score)
{
	if (job->nf == sizeof(job->f) / sizeof(job->f[0]))
		return NULL;
	gp_finding_t *f = &job->f[job->nf++];
	memset(f, 0, sizeof(*f));
	snprintf(f->id, sizeof(f->id), "%s", id);
	f->score = score;
	return f;
}

static int cmp_f(const void *a, const void *b)
{
	const gp_finding_t *x = a, *y = b;
	return x->score > y->score ? -1 : x->score < y->score;
}

/* Xid events and uncorrected ECC errors: the hardware, not the program. Ranked first
 * (score 1.0): every other number of that rank is suspect. Corrected ECC errors alone are
 * evidence, not a finding. */
static void gpu_fault(gp_job_t *job)
{
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
	if (!w || !(f = add(job, "gpu_fault", 1.0)))
		return;
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

void gp_job_findings(gp_job_t *job)
{
	gp_finding_t *f;
	/* per-rank rules report the worst rank */
	const gp_rank_t *wsync = NULL, *widle = NULL, *wfrag = NULL, *wleak = NULL, *wopt = NULL,
	                *wcomm = NULL;
	for (unsigned i = 0; i < job->nranks; i++) {
		const gp_rank_t *r = &job->ranks[i];
		double span = (double)r->span_ns;
		if (span > 0 && r->sync_ns / span >= SYNC_SHARE_MIN &&
		    (!wsync || r->sync_ns > wsync->sync_ns))
			wsync = r;
		if (span > 0 && r->idle_host_ns / span >= IDLE_HOST_SHARE_MIN &&
		    (!widle || r->idle_host_ns > widle->idle_host_ns))
			widle = r;
		if (r->nkernels >= 100 &&
		    (double)r->small_kernels / r->nkernels >= FRAG_SMALL_SHARE && span > 0 &&
		    r->busy_ns / span < FRAG_BUSY_MAX && (!wfrag || r->nkernels > wfrag->nkernels))
			wfrag = r;
		if (r->mem_growth_per_step >= LEAK_MIN_BYTES_PER_STEP && r->leak_allocs >= 2 &&
		    (!wleak || r->mem_growth_per_step > wleak->mem_growth_per_step))
			wleak = r;
		if (r->mem_peak && (double)r->optimizer_bytes / r->mem_peak >= OPT_STATE_SHARE &&
		    (!wopt || r->optimizer_bytes > wopt->optimizer_bytes))
			wopt = r;
		if (r->compute_ns + r->comm_ns > 0 &&
		    (double)r->comm_ns / (r->compute_ns + r->comm_ns) >= COMM_SHARE_MIN &&
		    (double)r->overlap_ns / (r->comm_ns ? r->comm_ns : 1) < COMM_OVERLAP_MAX &&
		    (!wcomm || r->comm_ns > wcomm->comm_ns))
			wcomm = r;
	}
	if (wsync && (f = add(job, "sync_stall", (double)wsync->sync_ns / wsync->span_ns))) {
		snprintf(f->title, sizeof(f->title),
		         "Synchronisation stalls: %.1f%% of GPU time on rank %d",
		         100.0 * wsync->sync_ns / wsync->span_ns, wsync->rank);
		snprintf(
		    f->evidence, sizeof(f->evidence),
		    "%llu blocking calls (stream/device/event synchronize, blocking device-to-host "
		    "copies) took %.1f ms; most inside NVTX range '%s' (%.1f ms)",
		    (unsigned long long)wsync->sync_calls, wsync->sync_ns / 1e6,
		    wsync->sync_range[0] ? wsync->sync_range : "(none)",
		    wsync->sync_range_ns / 1e6);
		snprintf(f->threshold, sizeof(f->threshold), "sync time >= %.0f%% of the GPU span",
		         SYNC_SHARE_MIN * 100);
		snprintf(
		    f->fix, sizeof(f->fix),
		    "Each blocking read of a GPU value (loss.item(), .cpu(), printing a tensor, "
		    "'if loss < x') drains the pipeline. Log every N steps or asynchronously "
		    "(non_blocking copy into pinned memory, read it a step later).");
	}
	if (widle && (f = add(job, "idle_gaps", (double)widle->idle_host_ns / widle->span_ns))) {
		snprintf(f->title, sizeof(f->title),
		         "GPU idle waiting for the host: %.1f%% of the span on rank %d",
		         100.0 * widle->idle_host_ns / widle->span_ns, widle->rank);
		snprintf(
		    f->evidence, sizeof(f->evidence),
		    "GPU busy %.1f%%; idle %.1f ms waiting for launches that came after the GPU "
		    "had finished (host_wait), %.1f ms short gaps, %.1f ms other",
		    100.0 * widle->busy_ns / widle->span_ns, widle->idle_host_ns / 1e6,
		    widle->idle_kernel_ns / 1e6, widle->idle_other_ns / 1e6);
		snprintf(f->threshold, sizeof(f->threshold),
		         "host_wait idle >= %.0f%% of the GPU span", IDLE_HOST_SHARE_MIN * 100);
		snprintf(
		    f->fix, sizeof(f->fix),
		    "The CPU is the bottleneck between steps: data loading or Python overhead. "
		    "Prefetch (DataLoader num_workers, pin_memory, prefetch_factor), move "
		    "preprocessing off the critical path, or overlap it with the GPU.");
	}
	if (wfrag && (f = add(job, "fragmentation",
	                      (double)wfrag->small_kernels / wfrag->nkernels *
	                          (1.0 - (double)wfrag->busy_ns / wfrag->span_ns)))) {
		snprintf(f->title, sizeof(f->title),
		         "Kernel fragmentation: %.0f%% of kernels shorter than 10 us on rank %d",
		         100.0 * wfrag->small_kernels / wfrag->nkernels, wfrag->rank);
		snprintf(f->evidence, sizeof(f->evidence),
		         "%llu kernels, mean %.1f us, %.0f per step; %llu ran shorter than their "
		         "launch call; median launch latency %.1f us; GPU busy %.1f%%",
		         (unsigned long long)wfrag->nkernels, wfrag->kernel_mean_us,
		         wfrag->kernels_per_step, (unsigned long long)wfrag->short_vs_launch,
		         wfrag->launch_latency_us, 100.0 * wfrag->busy_ns / wfrag->span_ns);
		snprintf(f->threshold, sizeof(f->threshold),
		         ">= %.0f%% of kernels < 10 us while GPU busy < %.0f%%",
		         FRAG_SMALL_SHARE * 100, FRAG_BUSY_MAX * 100);
		snprintf(f->fix, sizeof(f->fix),
		         "Launch overhead dominates: fuse the elementwise chain (torch.compile, a "
		         "fused kernel) or capture the step in a CUDA graph.");
	}
	if (wleak && (f = add(job, "memory_leak", 0.5))) {
		snprintf(f->title, sizeof(f->title),
		         "Device memory grows %.1f KiB per step on rank %d",
		         wleak->mem_growth_per_step / 1024.0, wleak->rank);
		snprintf(f->evidence, sizeof(f->evidence),
		         "%llu allocations (%.1f MiB) made after warm-up were never freed; most "
		         "came from: %s",
		         (unsigned long long)wleak->leak_allocs, wleak->leak_bytes / 1048576.0,
		         wleak->leak_stack[0] ? wleak->leak_stack
		                              : "(no stack: run with mode mem)");
		snprintf(f->threshold, sizeof(f->threshold),
		         "live device memory grows >= %.0f B per step after warm-up",
		         LEAK_MIN_BYTES_PER_STEP);
		snprintf(
		    f->fix, sizeof(f->fix),
		    "Something keeps a reference each step (tensors appended to a list, loss kept "
		    "with its graph, a cache): free it or detach()/item() what you keep. The "
		    "stack above is where the growing allocations are made.");
	}
	if (wopt &&
	    (f = add(job, "optimizer_state", 0.2 * wopt->optimizer_bytes / wopt->mem_peak))) {
		snprintf(f->title, sizeof(f->title),
		         "Optimizer state holds %.0f%% of peak device memory on rank %d",
		         100.0 * wopt->optimizer_bytes / wopt->mem_peak, wopt->rank);
		snprintf(f->evidence, sizeof(f->evidence),
		         "%.1f MiB allocated inside the optimizer step and kept; peak %.1f MiB",
		         wopt->optimizer_bytes / 1048576.0, wopt->mem_peak / 1048576.0);
		snprintf(f->threshold, sizeof(f->threshold), "optimizer state >= %.0f%% of peak",
		         OPT_STATE_SHARE * 100);
		snprintf(
		    f->fix, sizeof(f->fix),
		    "Adam keeps two extra tensors per parameter. Use a fused or lower-precision "
		    "optimizer (8-bit Adam, bf16 states), or shard optimizer state across ranks "
		    "(ZeRO/FSDP).");
	}
	if (wcomm && (f = add(job, "comm_not_overlapped",
	                      (double)wcomm->comm_ns / (wcomm->comm_ns + wcomm->compute_ns)))) {
		snprintf(f->title, sizeof(f->title),
		         "Communication not overlapped with compute on rank %d", wcomm->rank);
		snprintf(
		    f->evidence, sizeof(f->evidence),
		    "NCCL kernels %.1f ms (%.0f%% of kernel time), overlapped with compute %.1f ms",
		    wcomm->comm_ns / 1e6,
		    100.0 * wcomm->comm_ns / (wcomm->comm_ns + wcomm->compute_ns),
		    wcomm->overlap_ns / 1e6);
		snprintf(f->threshold, sizeof(f->threshold),
		         "comm >= %.0f%% and overlap < %.0f%% of comm", COMM_SHARE_MIN * 100,
		         COMM_OVERLAP_MAX * 100);
		snprintf(f->fix, sizeof(f->fix),
		         "Overlap gradient all-reduce with backward (DDP bucketing, "
		         "bucket_cap_mb), or reduce communication (gradient accumulation, "
		         "compression).");
	}
	/* straggler: a rank whose median step is well above the job median */
	const gp_rank_t *slow = NULL;
	unsigned with_steps = 0;
	for (unsigned i = 0; i < job->nranks; i++)
		with_steps += job->ranks[i].nstep_ms > 0;
	for (unsigned i = 0; with_steps >= 2 && i < job->nranks; i++) {
		const gp_rank_t *r = &job->ranks[i];
		if (r->nstep_ms && job->step_median_ms > 0 &&
		    r->step_median_ms >= STRAGGLER_RATIO * job->step_median_ms &&
		    (!slow || r->step_median_ms > slow->step_median_ms))
			slow = r;
	}
	/* In synchronous data parallelism the others wait for the straggler inside their
	 * collectives: it is the rank with by far the least NCCL kernel time. */
	const gp_rank_t *least_comm = NULL;
	uint64_t comm_med = 0;
	{
		uint64_t v[1024];
		unsigned n = 0;
		for (unsigned i = 0; i < job->nranks && n < 1024; i++)
			if (job->ranks[i].comm_ns)
				v[n++] = job->ranks[i].comm_ns;
		for (unsigned i = 1; i < n; i++) /* small n: insertion sort */
			for (unsigned k = i; k > 0 && v[k] < v[k - 1]; k--) {
				uint64_t t = v[k];
				v[k] = v[k - 1];
				v[k - 1] = t;
			}
		if (n >= 2) {
			comm_med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
			for (unsigned i = 0; i < job->nranks; i++) {
				const gp_rank_t *r = &job->ranks[i];
				if (r->comm_ns && r->comm_ns * 2 < comm_med &&
				    (comm_med - r->comm_ns) * 20 >= r->span_ns &&
				    (!least_comm || r->comm_ns < least_comm->comm_ns))
					least_comm = r;
			}
		}
	}
	if (!slow && least_comm)
		slow = least_comm;
	if (slow &&
	    (f = add(job, "straggler",
	             job->step_median_ms > 0 ? slow->step_median_ms / job->step_median_ms - 1.0
	                                     : 0.3))) {
		if (slow->step_median_ms >= STRAGGLER_RATIO * job->step_median_ms &&
		    job->step_median_ms > 0)
			snprintf(f->title, sizeof(f->title),
			         "Straggler: rank %d on %s is %.0f%% slower per step", slow->rank,
			         slow->node,
			         100.0 * (slow->step_median_ms / job->step_median_ms - 1));
		else
			snprintf(f->title, sizeof(f->title),
			         "Straggler: the other ranks wait for rank %d on %s", slow->rank,
			         slow->node);
		int n =
		    snprintf(f->evidence, sizeof(f->evidence),
		             "median step %.2f ms on rank %d vs %.2f ms job median over %u ranks",
		             slow->step_median_ms, slow->rank, job->step_median_ms, with_steps);
		if (comm_med && n > 0 && (size_t)n < sizeof(f->evidence))
			snprintf(f->evidence + n, sizeof(f->evidence) - (size_t)n,
			         "; its NCCL kernels took %.1f ms against a median of %.1f ms: the "
			         "other "
			         "ranks wait for it inside their collectives",
			         slow->comm_ns / 1e6, comm_med / 1e6);
		snprintf(
		    f->threshold, sizeof(f->threshold),
		    "rank median step >= %.0f%% of the job median, or NCCL time < half the median",
		    STRAGGLER_RATIO * 100);
		snprintf(
		    f->fix, sizeof(f->fix),
		    "Every collective waits for the slowest rank. Look at that rank's node "
		    "(GPU clocks/throttling in NVML, other jobs), its data shard, or uneven work.");
	}
	gpu_fault(job);
	qsort(job->f, job->nf, sizeof(gp_finding_t), cmp_f);
}
