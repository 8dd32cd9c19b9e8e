/* Per-rank analysis and job-wide aggregation behind `gpuprof report` and `diff`.
 * Rank files are read one at a time through the common reader; only per-rank summaries
 * and the merged kernel/range tables stay in memory. */
#ifndef GP_ANALYZE_H
#define GP_ANALYZE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "rankfile.h"
#include "ranks.h"
#include "vec.h"

typedef struct gp_kstat {
	char *name;
	uint64_t calls, total, min, max;
	bool comm;
} gp_kstat_t;

typedef struct gp_rstat {
	char *name;
	uint64_t count, cpu_ns, gpu_ns, sync_ns; /* over the steady state (post-warm-up steps) */
	uint64_t count_all;                      /* over the whole run, start-up included */
} gp_rstat_t;

/* Device memory PyTorch's allocator holds for one Python stack (agent/python) */
typedef struct gp_owner {
	uint64_t bytes, tensors;
	char stack[320];
} gp_owner_t;

typedef struct gp_rank {
	char *path; /* the rank file (owned; gp_rank_release) */
	char node[128], step[32], wrapped[16], yielded[256], command[256];
	char user[64], modes[64], job_name[128];
	uint64_t start_realtime_ns; /* CLOCK_REALTIME when the agent started */
	int rank;
	int pid; /* the recorded process (the header's, else the program the agent started) */
	char gpu_uuid[64];  /* the rank's first GPU (NVML), "" unknown */
	uint64_t gpu_total; /* its memory, bytes (0 unknown) */
	bool has_end, truncated;
	uint64_t corrupt_chunks, records;
	uint64_t bad_records; /* impossible times, durations or sizes: ignored (load.c) */
	int wait_status;
	bool status_unknown; /* one of a launcher's ranks: its status is the launcher's (load.c) */
	int launcher_status; /* the rank's process was its launcher's worker: the launcher's
	                        wait status (the agent's), -1 none; 0 otherwise */
	int child_pid, agent_pid; /* the program the agent started; the agent (header) */
	bool agent_end;           /* the agent's own end record: agent_status is its */
	int agent_status;
	bool status_from_node; /* no end record; wait_status is Slurm's for the task, from the
	                          plugin's step<S>/node<N>.json (a fallback task: analyze.c) */
	uint64_t wall_ns, cpu_us, maxrss_kib;
	uint64_t t0_realtime_ns; /* realtime of the first event, for cross-rank alignment */
	/* how slow (steps.c): the headline per-step figure is step_basis: "gpu" (completion
	 * of a step's GPU work to the next one's), "period" (start to start) where no CUDA
	 * activity was recorded, "cpu range" with a single post-warm-up step */
	char step_name[128];
	char step_source[16]; /* nvtx, profiler, kernels; empty: no steps found */
	char step_how[256];   /* how the steps were found, and how sure */
	char step_basis[16];
	unsigned nsteps, warmup, nsteps_post, last_step;
	double step_mean_ms, step_median_ms, step_p95_ms, step_cv; /* the headline */
	/* the headline's post-warm-up samples, in step order: all of them up to
	 * GP_STEP_KEEP, else GP_STEP_KEEP evenly spaced over the nstep_all there were (the
	 * figures above are from all) */
	double *step_ms;
	unsigned *step_no; /* each one's step number, from 0; NULL when they run on from
	                      step_no0 (the usual case: 10 240 ranks x 1 000 steps is 40 MiB
	                      of numbers that say nothing); read through gp_step_no */
	unsigned step_no0;
	unsigned nstep_ms, nstep_all;
	double cpu_median_ms, cpu_p95_ms;       /* CPU time inside the step range */
	double period_median_ms, period_p95_ms; /* start to start */
	double gpu_median_ms, gpu_p95_ms;       /* GPU completion to completion */
	unsigned nperiod, ngpu;
	bool step_gpu_from_markers; /* gpu from step completion markers, not kernel records */
	/* where the time goes */
	uint64_t kernels_total, kernels_in_steps, nkernels, span_ns, busy_ns, idle_host_ns,
	    idle_kernel_ns, idle_other_ns, idle_sync_ns;
	uint64_t kernels_other_thread; /* attributed to a range of another thread */
	bool nvtx_cuda_tids_unrelated;
	uint64_t comm_ns, compute_ns, memcpy_ns, overlap_ns, nmemcpy, nmemset;
	uint64_t sync_ns, sync_calls, nsync_records;
	char sync_range[128];
	uint64_t sync_range_ns;
	uint64_t small_kernels, short_vs_launch, launches_matched;
	/* launch_latency_us: a kernel's start less its launch call's start (the queue: how far
	 * the host runs ahead, not what launching costs); launch_call_us: the launch call's
	 * own duration (the host's cost of a launch); medians, 0 when not measured */
	double launch_latency_us, launch_call_us, kernel_mean_us, kernels_per_step,
	    kernel_gpu_per_step_ms;
	/* where the memory goes */
	uint64_t snapshot_ns; /* end of the last step (monotonic ns): memory_viz snapshot time */
	uint64_t nallocs, nfrees, mem_peak, mem_peak_t_ns, mem_final, mem_static;
	uint64_t mem_host_peak, mem_managed_peak; /* pinned/pageable host, managed: apart */
	char mem_peak_stack[1024];
	char mem_peak_stack_source[48];    /* "CUPTI allocation callback", "PyTorch allocator
	                                      history" (the peak's largest owner), "" */
	int mem_peak_step;                 /* the step the peak fell in, from 0; -1: none */
	char mem_peak_ranges[256];         /* NVTX ranges open at the peak, outermost first */
	bool mem_peak_ranges_other_thread; /* ... on the steps' thread, not the allocating one */
	double mem_growth_per_step;
	uint64_t leak_bytes, leak_allocs;
	char leak_stack[1024];
	uint64_t optimizer_bytes;
	char optimizer_source[48]; /* "PyTorch optimizer state" (its state tensors on the GPU)
	                              or "first optimizer range" (allocations still held) */
	struct {
		char module[64];
		uint64_t bytes;
	} owners[8]; /* device bytes live at the end, by allocating library */
	unsigned nowners;
	uint64_t nvml_mem_max, nvml_samples;
	double nvml_util_mean;
	/* PCIe tx, PCIe rx, NVLink tx, NVLink rx (GP_EV_NVML_IO): mean bytes per second
	 * (summed over the rank's GPUs), and the highest rate of one GPU between two samples */
	double io_Bps[4], io_peak_Bps[4];
	unsigned io_bits; /* GP_IO_* seen */
	/* GPU faults (GP_EV_GPU_FAULT) */
	uint64_t nxid, ecc_corrected, ecc_uncorrected, first_xid_ns; /* since the rank's start */
	unsigned first_xid;
	char nvml_limits[256]; /* what NVML could not sample on this node */
	/* capture windows (GP_EV_CONTROL): GPU statistics cover captured_steps steps */
	bool capture_window;
	unsigned captured_steps, capture_first, capture_last; /* step numbers, from 0 */
	uint64_t capture_switches, capture_switch_max_ns;
	/* The rank's processes, when more than one recorded (rankR.pidP.gpr beside rankR.gpr,
	 * agent/inject): the one that trained is the rank (its figures above); the rank's
	 * outcome, resources and NVML are the task's (rankR.gpr's, the agent's) */
#define GP_PROCS 8
	struct gp_proc {
		int pid;
		bool trainer;
		unsigned steps, opt_steps;
		uint64_t kernels, api_calls, mem_peak;
		bool has_end, status_unknown;
		int wait_status;
		char command[96];
	} procs[GP_PROCS];
	unsigned nprocs, nprocs_all; /* listed, and in all (more than GP_PROCS: the largest) */
	unsigned nprocs_foreign;     /* rankR.pidP.gpr beside it that another agent wrote (an
	                                earlier run into the same directory): left out, counted */
	/* CUPTI's own cost (CUPTI_ACTIVITY_KIND_OVERHEAD) */
	uint64_t overhead_ns, overhead_records;
	/* time series for the HTML plots: GP_TS buckets over the rank's steps (first step's
	 * start to the last one's end; the whole run when no steps were found), so start-up
	 * and teardown do not take the width */
#define GP_TS 120
	double ts_span_s;     /* the window's length */
	double ts_from_s;     /* its start, after the rank's first record (not drawn before) */
	double ts_warm_s;     /* the end of the warm-up steps, into the window (0: none) */
	float util[GP_TS];    /* GPU busy fraction (kernel records) */
	float mem_mib[GP_TS]; /* device memory live at the bucket's end */
	float nvml_util[GP_TS], nvml_w[GP_TS], nvml_mhz[GP_TS]; /* NVML means; -1: no sample */
	/* data quality */
	uint64_t drops_ring, drops_cupti, drops_table, drops_cap;
	uint64_t loss[16]; /* records lost by cause (GP_LOSS_* of event.h), newer collectors */
	bool lost_any;     /* any loss at all, of any cause */
	uint64_t markers_not_placed; /* step markers skipped: the GPU 64 markers behind */
	uint64_t nvtx_ranges;
	/* CUDA allocations refused for lack of device memory, and the last one's time */
	uint64_t oom_calls, oom_t_ns;
	int oom_step; /* the step the last refusal fell in, -1: none */
	/* a framework's device memory pool (GP_FW_POOL: XLA's allocator), its own figures:
	 * what it holds from the device and what of it is in use */
	struct gp_pool {
		bool seen;
		unsigned samples;
		uint64_t in_use, in_use_peak, pool, pool_peak; /* the last sample; the largest */
		char what[128];
	} pool;
	/* where the steps' GPU idled, by what the host did (gputime.c): waiting for the next
	 * batch (GP_FW_DATA_WAIT), inside a framework's compilation, in a launch call, or
	 * none of those (time in Python, a slow host, or what gpuprof cannot see) */
	uint64_t idle_data_ns, idle_compile_ns, idle_launch_ns;
	uint64_t idle_tracer_ns; /* ... covered by CUPTI's own work (its overhead records) */
	uint64_t data_wait_ns, data_waits; /* inside the post-warm-up steps */
	double host_busy_per_step_ms;      /* host time inside launch and sync calls per step */
	/* capture windows with untraced steps between them (sampled capture): the headline
	 * is the untraced steps' (step markers), the traced ones' beside it */
	unsigned ntraced, nuntraced;                 /* post-warm-up samples of each */
	double traced_median_ms, untraced_median_ms; /* 0: not measured */
	double tracer_ms_per_step; /* what tracing added to a traced step (their difference, or
	                              CUPTI's overhead records where no step was untraced) */
	/* start-up: from the program's start to the first step's (rule 9) */
	double startup_s, startup_gpu_busy_s, startup_compile_s;
	uint64_t startup_alloc_bytes;
	struct {
		char name[96];
		double ms;
		unsigned calls;
		bool kernel; /* a kernel (else an NVTX range or a compilation) */
	} startup_top[6];
	unsigned nstartup_top;
	/* what PyTorch itself said (GP_EV_FW, agent/python/_gpuprof.py): steps from its
	 * optimizers, their state tensors, its caching allocator's own figures */
	struct gp_torch {
		bool seen;
		char info[256];    /* version, how steps and memory were taken */
		char missing[512]; /* what was not collected, and why */
		unsigned nopt;     /* optimizers that stepped */
		struct {
			uint64_t bytes, device_bytes, steps;
			char what[192];
		} opt[8];
		uint64_t opt_bytes, opt_device_bytes; /* state tensors of every optimizer */
		unsigned opt_steps;          /* step() calls of the optimizer that steps most */
		double opt_period_median_ms; /* end to end of those calls, post-warm-up */
		uint64_t max_allocated, max_reserved, frag_at_peak; /* bytes, PyTorch's counters */
		uint64_t allocated_end, reserved_end;
		double growth_per_step; /* allocated after each step: mean growth, post-warm-up */
		unsigned nmem_steps;
		/* PyTorch's owners of device memory, GP_OWNERS of each kind (GP_OWN_*): NULL
		 * until the first (owned; gp_rank_release). A rank of 10 000 holds no 8 KiB
		 * of empty stacks. */
		gp_owner_t *own;
		unsigned nowner, noom_owner, ngrow_owner; /* live at the peak / at the OOM /
		                                             kept from a window */
		bool grow_stale;     /* loading: a new picture came after the last window's */
		unsigned grow_steps; /* the steps that window held (0: not said, older files) */
		bool oom;
		uint64_t oom_requested, oom_total, oom_free;
		char snap_peak[96], snap_oom[96], snap_exit[96]; /* memory_viz pickles written */
	} torch;
} gp_rank_t;

/* Step samples kept per rank: the job report holds every rank's, and 10 240 ranks x
 * 100 000 steps would be 12 GiB of them; 512 draw a rank's step-time plot as well and
 * keep it under 64 MiB at 10 240 ranks. */
#define GP_STEP_KEEP 512

#define GP_OWNERS 8
enum { GP_OWN_PEAK = 0, GP_OWN_OOM = 1, GP_OWN_GROW = 2 };
/* The owners of one kind; NULL when the rank has none of any kind. */
static inline gp_owner_t *gp_torch_owners(const struct gp_torch *t, int kind)
{
	return t->own ? t->own + kind * GP_OWNERS : NULL;
}
/* The step number of rank r's k-th headline sample. */
static inline unsigned gp_step_no(const gp_rank_t *r, unsigned k)
{
	return r->step_no ? r->step_no[k] : r->step_no0 + k;
}
/* Drop r->step_no where its numbers run on from the first (step_no0). */
void gp_rank_compact_steps(gp_rank_t *r);
/* The rank recorded no CUDA work although its modes asked for it, nothing was yielded to
 * another tool, and NVML saw its GPU in use (GP_UNOBSERVED_MIB or more): the process that
 * used the GPU was not the one recorded. Never "complete"; the first finding. */
#define GP_UNOBSERVED_MIB 256
bool gp_rank_unobserved(const gp_rank_t *r);
/* Frees what a rank owns (its path, step samples, owners), not the rank itself. */
void gp_rank_release(gp_rank_t *r);

/* Findings come in tiers, listed in this order: how the job ended, then what costs time
 * (ranked by the time a fix would save), then what costs memory (by the bytes). */
enum gp_finding_kind { GP_F_OUTCOME = 0, GP_F_TIME = 1, GP_F_MEMORY = 2 };

typedef struct gp_finding {
	char id[32];
	int kind;            /* gp_finding_kind */
	int rank;            /* the rank it is about, -1: the job */
	double score;        /* the saving's share: of step time (time), of peak memory (memory) */
	double saving_ms;    /* time findings: estimated saving per step */
	double saving_pct;   /* ... as % of the step time */
	double saving_bytes; /* memory findings: bytes a fix would free */
	char effect_of[32];  /* id of the finding that causes this one, "" if none */
	char title[256];
	char evidence[1024];
	char threshold[256];
	char fix[512];
} gp_finding_t;

typedef struct gp_job {
	char dir[4096];
	uid_t owner; /* the job directory's: the only user whose files in it are read */
	char job[32];
	gp_rank_t *ranks;
	unsigned nranks;
	gp_kstat_t *k;
	unsigned nk, kcap;
	gp_rstat_t *r;
	unsigned nr, rcap;
	/* while loading: name hash -> index + 1 into k and r (10^5 distinct range names
	 * made the linear lookup quadratic); freed before k and r are sorted */
	u64map_t kidx, ridx;
	/* tasks that were launchers (torchrun) whose ranks recorded files of their own:
	 * launcher<T>.gpr, read for how the task ended (analyze.c) */
	struct gp_launcher {
		int task;
		bool has_end;
		int wait_status;
		uint64_t other_processes; /* processes it started that were not recorded */
		char node[64], command[160];
	} * launchers;
	unsigned nlaunchers;
	gp_finding_t f[24];
	unsigned nf;
	unsigned missing_ranks, ntasks_expected;
	/* the batch script, when it ran no GPU work of its own (analyze.c): not a rank */
	struct {
		bool seen, has_end;
		int wait_status;
		uint64_t wall_ns;
		char command[160];
	} batch;
	/* rank files that could not be read: how many, and the first one with its reason */
	unsigned nunreadable;
	char unreadable[768];
	char sacct[2048];
	char sacct_state[64]; /* sacct's State of the job (TIMEOUT, CANCELLED by U, ...), "" unknown
	                       */
	double step_median_ms; /* median over ranks of rank medians (each rank's headline) */
	char step_basis[16];   /* what the ranks' headlines measure (gpu, period, mixed) */
	int steps_from;        /* 0 auto, 1 nvtx, 2 profiler, 3 kernels (see rankdata.h) */
	/* text report: ranks listed line by line. With more than GP_TEXT_RANKS ranks and no
	 * list, the tables give distributions across ranks and nodes with outliers named */
	bool have_detail;
	gp_ranks_t detail;
} gp_job_t;
#define GP_TEXT_RANKS 32

/* One rank's share of the job besides its gp_rank_t: its kernel and range tables and
 * what its header says of the job (the job report merges these rank by rank). */
typedef struct gp_rank_tables {
	gp_kstat_t *k;
	gp_rstat_t *r;
	unsigned nk, nr;
	char job[32];
	unsigned ntasks_expected;
	gp_rf_ident_t src; /* the rank file the analysis read (its summary's key) */
	bool src_ok;       /* false: it changed while read; no summary is made of it */
} gp_rank_tables_t;
void gp_rank_tables_free(gp_rank_tables_t *t);
/* A small file of the job directory (a node summary) into buf, NUL-terminated: a regular
 * file of the directory's owner (or the caller's), never through a link nor waiting on a
 * FIFO. Its length, or (size_t)-1. */
size_t gp_read_job_file(const gp_job_t *job, const char *path, char *buf, size_t len);

/* Per-rank summaries (summary.c): rankR.gps beside rankR.gpr, written from a rank's
 * analysis and read in its place while the rank file is unchanged (-1: none, stale or
 * not valid). gp_rank_summarize analyses one rank file and writes its summary. */
int gp_summary_write(const char *gpr, const gp_rank_t *r, const gp_rank_tables_t *t);
int gp_summary_read(const char *gpr, gp_rank_t *out, gp_rank_tables_t *t);
int gp_rank_summarize(const char *gpr, char *err, size_t errlen);
/* Is gpr large enough to be worth a summary (GPUPROF_SUMMARY_MIN_BYTES)? A small rank
 * file is read as fast as a summary would be, and its summary would be the larger. */
bool gp_summary_wanted(const char *gpr);

/* Load every rank file under dir (step* subdirectories), optionally one step only.
 * Each rank comes from its summary where one is valid (GPUPROF_REPORT_SUMMARIES), else
 * from its rank file, read on GPUPROF_REPORT_THREADS threads, its summary then written.
 * steps_from: where steps come from, "auto" (or NULL), "nvtx", "profiler", "kernels". */
/* --steps-from's names (auto, nvtx, optimizer, profiler, kernels; NULL: auto) as
 * GP_STEPS_*; -1 for any other. */
int gp_steps_from_name(const char *s);
/* fn(done, total) after each batch of rank files gp_job_load has read, on the calling
 * thread (a progress line); NULL: none. */
void gp_job_set_progress(void (*fn)(unsigned done, unsigned total));
int gp_job_load(gp_job_t *job, const char *dir, const char *step, const char *steps_from, char *err,
                size_t errlen);
void gp_job_findings(gp_job_t *job);
void gp_job_free(gp_job_t *job);

void gp_report_text(const gp_job_t *job, FILE *out);
/* How a rank ended, in words: "exit 0", "signal 9", "incomplete", ... */
const char *gp_rank_outcome(const gp_rank_t *r, char *buf, size_t len);
void gp_report_json(const gp_job_t *job, FILE *out);
/* job.json: who, where, when, which ranks were profiled and how they ended, and the
 * plugin's per-node step summaries (step*\/node*.json) embedded as they are. */
void gp_job_json(const gp_job_t *job, FILE *out);
void gp_report_summary_line(const gp_job_t *job, char *buf, size_t len);
/* PyTorch memory_viz snapshot (pickle protocol 2) of one rank (first of ranks, else the
 * first rank), as torch.cuda.memory._dump_snapshot writes it. */
/* pydir: agent/python (its _gpuprof_merge.py merges PyTorch's own snapshots when the
 * ranks have them); NULL: the CUDA records alone. torch113: the layout PyTorch 1.13's
 * _memory_viz reads (a list of segments, each block with its history) instead of 2.x's
 * dictionary of segments and device_traces. */
int gp_export_memviz(const gp_job_t *job, FILE *out, const char *ranks, const char *pydir,
                     bool torch113);
/* Self-contained HTML with SVG plots. */
int gp_report_html(const gp_job_t *job, FILE *out);
/* Chrome/Perfetto trace of the job (re-reads the rank files). */
/* One Kineto-layout trace per rank under dir/stepS/rankR.json, for HTA */
int gp_export_kineto(const gp_job_t *job, const char *dir, const char *ranks);
int gp_export_chrome(const gp_job_t *job, FILE *out, const char *ranks, uint64_t max_events,
                     double win_from_s, double win_to_s);

/* The name of a GP_LOSS_* cause in JSON and in words; NULL past the last. */
const char *gp_loss_key(unsigned cause);
const char *gp_loss_words(unsigned cause);

#endif
