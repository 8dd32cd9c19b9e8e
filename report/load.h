/* What the loader (load.c: gp_rd_feed, gp_rd_load_file) takes from a rank file's header
 * and records as it reads: who and where the rank is, how it ended, the quality of its
 * data, NVML's I/O and faults, CUPTI's own cost, and what PyTorch and a framework's pool
 * said of themselves. Sections of gp_rank_t (rank.h). */
#ifndef GP_LOAD_H
#define GP_LOAD_H

#include <stdbool.h>
#include <stdint.h>

#include "text.h"

/* Who: the header (section "id"; top-level keys of a JSON rank) */
#define GP_ID_NODE     128
#define GP_ID_COMMAND  256
#define GP_ID_JOB_NAME 128
typedef struct gp_ident {
	char *path; /* the rank file (owned; gp_rank_release) */
	char step[32];
	gp_text_t node, command, job_name; /* GP_ID_NODE, _COMMAND, _JOB_NAME bytes at most */
	char user[64], modes[64];
	uint64_t start_realtime_ns; /* CLOCK_REALTIME when the agent started */
	int rank;
	int pid; /* the recorded process (the header's, else the program the agent started) */
	char gpu_uuid[64];        /* the rank's first GPU (NVML), "" unknown */
	uint64_t gpu_total;       /* its memory, bytes (0 unknown) */
	char gpu_name[64];        /* its name (NVML's), "" unknown */
	int child_pid, agent_pid; /* the program the agent started; the agent (header) */
	uint64_t t0_realtime_ns;  /* realtime of the first event, for cross-rank alignment */
} gp_ident_t;

/* How the rank ended, and what it used (top-level keys of a JSON rank) */
typedef struct gp_outcome {
	bool has_end;
	int wait_status;
	bool status_unknown; /* one of a launcher's ranks: its status is the launcher's */
	int launcher_status; /* the rank's process was its launcher's worker: the launcher's
	                        wait status (the agent's), -1 none; 0 otherwise */
	bool agent_end;      /* the agent's own end record: agent_status is its */
	int agent_status;
	bool status_from_node; /* no end record; wait_status is Slurm's for the task, from the
	                          plugin's step<S>/node<N>.json (a fallback task: analyze.c) */
	uint64_t wall_ns, cpu_us, maxrss_kib;
} gp_outcome_t;

/* Data quality (section "quality") */
#define GP_YIELDED 256
typedef struct gp_quality {
	uint64_t records, corrupt_chunks;
	bool truncated;
	uint64_t bad_records; /* impossible times, durations or sizes: ignored */
	uint64_t drops_ring, drops_cupti, drops_table, drops_cap;
	uint64_t loss[16]; /* records lost by cause (GP_LOSS_* of event.h), newer collectors */
	bool lost_any;     /* any loss at all, of any cause (gp_rd_losses) */
	uint64_t markers_not_placed;   /* step markers skipped: the GPU 64 markers behind */
	uint64_t nvtx_ranges;          /* ranges.c */
	bool nvtx_cuda_tids_unrelated; /* ranges.c */
	char wrapped[16];
	gp_text_t yielded; /* GP_YIELDED bytes at most */
	/* the collector's TSC disagreed with the kernel's clock and was dropped (GP_EV_CLOCK):
	 * clock_gettime minus the TSC's prediction, when (ns after the rank's start) and over
	 * what interval; the times of that interval may be off by up to the error */
	bool clock_dropped;
	int64_t clock_err_ns;
	uint64_t clock_at_ns, clock_span_ns;
} gp_quality_t;

/* PCIe tx, PCIe rx, NVLink tx, NVLink rx (GP_EV_NVML_IO): mean bytes per second (summed
 * over the rank's GPUs), and the highest rate of one GPU between two samples (section
 * "io") */
#define GP_NVML_LIMITS 256
typedef struct gp_io {
	double Bps[4], peak_Bps[4];
	unsigned bits;         /* GP_IO_* seen */
	gp_text_t nvml_limits; /* what NVML could not sample on this node (GP_NVML_LIMITS) */
} gp_io_t;

/* GPU faults (GP_EV_GPU_FAULT), section "faults" */
typedef struct gp_faults {
	uint64_t nxid, ecc_corrected, ecc_uncorrected, first_xid_ns; /* since the rank's start */
	unsigned first_xid;
} gp_faults_t;

/* CUPTI's own cost (CUPTI_ACTIVITY_KIND_OVERHEAD), section "cupti_overhead" */
typedef struct gp_overhead {
	uint64_t ns, records;
} gp_overhead_t;

/* Device memory PyTorch's allocator holds for one Python stack (agent/python) */
typedef struct gp_owner {
	uint64_t bytes, tensors;
	char stack[320];
} gp_owner_t;
#define GP_OWNERS 8
enum { GP_OWN_PEAK = 0, GP_OWN_OOM = 1, GP_OWN_GROW = 2 };

/* A framework's device memory pool (GP_FW_POOL: XLA's allocator), its own figures: what
 * it holds from the device and what of it is in use (section "pool") */
typedef struct gp_pool {
	bool seen;
	unsigned samples;
	uint64_t in_use, in_use_peak, pool, pool_peak; /* the last sample; the largest */
	gp_text_t what;                                /* GP_POOL_WHAT bytes at most */
} gp_pool_t;
#define GP_POOL_WHAT 128

/* What PyTorch itself said (GP_EV_FW, agent/python): steps from its
 * optimizers, their state tensors, its caching allocator's own figures (section
 * "pytorch") */
/* the longest text of each (bytes + 1: what the arrays held before, text.h) */
#define GP_TORCH_INFO    256
#define GP_TORCH_MISSING 512
#define GP_TORCH_OPT     192
#define GP_TORCH_SNAP    96
typedef struct gp_torch {
	bool seen;
	gp_text_t info;             /* version, how steps and memory were taken */
	gp_text_t missing;          /* what was not collected, and why */
	unsigned nopt;              /* optimizers that stepped */
	unsigned profiler_sessions; /* torch.profiler sessions (GP_FW_PROFILER begins) */
	struct {
		uint64_t bytes, device_bytes, steps;
		gp_text_t what;
	} opt[8];
	uint64_t opt_bytes, opt_device_bytes; /* state tensors of every optimizer */
	unsigned opt_steps;                   /* step() calls of the optimizer that steps most */
	double opt_period_median_ms;          /* end to end of those calls, post-warm-up */
	uint64_t max_allocated, max_reserved, frag_at_peak; /* bytes, PyTorch's counters */
	uint64_t allocated_end, reserved_end;
	double growth_per_step; /* allocated after each step: mean growth, post-warm-up */
	unsigned nmem_steps;
	/* PyTorch's owners of device memory, GP_OWNERS of each kind (GP_OWN_*): NULL until
	 * the first (owned; gp_rank_release). A rank of 10 000 holds no 8 KiB of empty
	 * stacks. */
	gp_owner_t *own;
	unsigned nowner, noom_owner, ngrow_owner; /* live at the peak / at the OOM / kept
	                                             from a window */
	bool grow_stale;     /* loading: a new picture came after the last window's */
	unsigned grow_steps; /* the steps that window held (0: not said, older files) */
	bool oom;
	uint64_t oom_requested, oom_total, oom_free;
	gp_text_t snap_peak, snap_oom, snap_exit; /* memory_viz pickles written */
	/* Of those, the ones the memviz export cannot take (gone from beside the rank file,
	 * or not a regular file of the job's owner): bit 0 exit, 1 OOM, 2 peak. Looked at
	 * once, by the pipeline (gp_job_snapshots), for every writer to say. */
	unsigned snap_gone;
	/* why each of them (by the same bit's index) could not be taken: an errno of the
	 * open (ENOENT gone; ELOOP a link; EINVAL not a regular file; EPERM not the job
	 * owner's; another, that error) */
	int snap_errno[3];
} gp_torch_t;

/* The owners of one kind; NULL when the rank has none of any kind. */
static inline gp_owner_t *gp_torch_owners(const gp_torch_t *t, int kind)
{
	return t->own ? t->own + kind * GP_OWNERS : NULL;
}

#endif
