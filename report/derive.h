/* Figures made from other figures of a rank (shares, the framework's or CUDA's memory,
 * whichever measured it), computed once here (derive.c) for every output: the JSON
 * fields (fields.c) and the per-rank tables of the text and HTML (tables.c) read them,
 * never recompute them. Filled for every rank a job holds, analysed or read from its
 * summary (job.c), so a summary of an older analysis gets them too. */
#ifndef GP_DERIVE_H
#define GP_DERIVE_H

#include <stdint.h>

typedef struct gp_shares {
	/* of the steady state's GPU span (gpu.span_ns), %, adding up to 100: busy with
	 * compute or copies; running communication alone (NCCL kernels not overlapped by
	 * compute: a rank waiting in a collective for a straggler spins there, and is not
	 * busy); idle waiting for the host, for a synchronising host, between dependent
	 * kernels, other */
	double busy_pct, comm_only_pct, idle_host_pct, idle_sync_pct, idle_kernel_pct,
	    idle_other_pct;
	uint64_t comm_exposed_ns; /* communication not overlapped by compute */
	/* memory in use as the program's allocator counts it: PyTorch's allocated and
	 * reserved peaks, else a framework pool's (XLA); 0: no framework figure */
	uint64_t in_use_peak, pool_peak;
	/* growth per post-warm-up step: PyTorch's allocated bytes where it sampled steps,
	 * else every device allocation CUPTI saw; its source */
	double growth_per_step;
	char growth_source[8]; /* "pytorch", "cuda" or "" */
	char in_use_source[8]; /* "pytorch", "pool" or "" */
	/* the steps' CPU time samples: only where the steps are a range of the program's (an
	 * NVTX range, cudaProfilerStart/Stop), not found from kernels or optimizer returns */
	unsigned cpu_samples;
	/* the framework whose integration recorded (the Python integration's info line):
	 * "pytorch", "jax", or "" (none); its version */
	char framework[16], framework_version[48];
} gp_shares_t;

struct gp_rank;
void gp_rank_derive(struct gp_rank *r);

#endif
