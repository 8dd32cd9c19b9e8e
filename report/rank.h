/* One rank's result: what the analysis of one rank file found, as sections named like
 * the JSON report's objects. Each section is declared beside the pass that fills it:
 *   id, outcome, quality, io, faults, overhead, pool, torch   load.h    (the loader)
 *   steps, capture                                            steps.h   (steps.c)
 *   gpu                                                       gputime.h (gputime.c)
 *   sync                                                      ranges.h  (ranges.c)
 *   memory, ts                                                memory.h  (memory.c)
 *   startup                                                   startup.h (startup.c)
 *   procs                                                     here      (analyze.c)
 *   shares (figures made from the others, once)              derive.h  (derive.c)
 * Its lifecycle is here (rank.c): a gp_rank_t is zeroed, filled by gp_rank_analyse (or
 * read from its summary, summary.c), and released with gp_rank_release. The fields the
 * report writes, and the summary keeps, are listed once in fields.c. Names, stacks and
 * sentences are gp_text_t (text.h: one copy a process, never freed with the rank), each
 * listed in summary.c's sum_texts; a rank is 6 KiB, not 16 (issue 51 item 12). */
#ifndef GP_RANK_H
#define GP_RANK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attribution.h"
#include "derive.h"
#include "gputime.h"
#include "load.h"
#include "memory.h"
#include "rankfile.h"
#include "ranges.h"
#include "startup.h"
#include "steps.h"

/* A kernel's figures by name (the job's kernel table; one rank's, merged) */
/* Durations in buckets 2^(1/16) wide (4.4 %) from 2^5 ns to 2^37 ns: a kernel's median
 * and p95 merged across ranks to within 2.2 % (gp_kstat_quantile) */
#define GP_KHIST       512
#define GP_KHIST_SHIFT 80 /* 16 * log2(32 ns): bucket 0's lower edge */
typedef struct gp_kstat {
	char *name;
	uint64_t calls, total, min, max;
	double sumsq; /* sum of squared durations (ns^2): the spread */
	/* durations by bucket (gp_khist_bucket), buckets hlo to hlo + hn - 1 of GP_KHIST: a
	 * kernel's durations span a few dozen, and 2 KiB for every kernel of every rank made
	 * a summary's reading mostly zeroing (owned; gp_kstat_free_hist) */
	uint32_t *hist;
	uint16_t hlo, hn;
	bool comm;
	/* the NVTX ranges that launched most of its GPU time (the innermost range open at the
	 * launch call, not the step range itself), with that time, most first: in[0] is the
	 * one the report names; name NULL: none (owned). Ranks merge them by name, so a
	 * range that launched a little on each of many ranks adds up. */
#define GP_KRANGES 4
	struct gp_krange {
		char *name;
		uint64_t ns;
	} in[GP_KRANGES];
} gp_kstat_t;

/* A duration's bucket (GP_KHIST) */
unsigned gp_khist_bucket(uint64_t ns);
/* Add one duration to a kernel's figures; add one kernel's figures into another's */
void gp_kstat_add(gp_kstat_t *k, uint64_t ns);
void gp_kstat_merge(gp_kstat_t *into, const gp_kstat_t *k);
/* Add n to bucket b (< GP_KHIST) of k; false: no memory. Free k's histogram. */
bool gp_kstat_hist_add(gp_kstat_t *k, unsigned b, uint32_t n);
void gp_kstat_free_hist(gp_kstat_t *k);
/* The q-quantile of a kernel's durations (0.5: median, 0.95: p95), ns: the geometric middle
 * of the bucket that holds it, within [min, max]; the standard deviation, ns. */
double gp_kstat_quantile(const gp_kstat_t *k, double q);
double gp_kstat_stddev(const gp_kstat_t *k);

/* An NVTX range's figures by name */
typedef struct gp_rstat {
	char *name;
	uint64_t count, cpu_ns, gpu_ns, sync_ns; /* over the steady state (post-warm-up steps) */
	uint64_t count_all;                      /* over the whole run, start-up included */
} gp_rstat_t;

/* The rank's processes, when more than one recorded (rankR.pidP.gpr beside rankR.gpr,
 * agent/inject): the one that trained is the rank (its figures are the rank's); the
 * rank's outcome, resources and NVML are the task's (rankR.gpr's, the agent's). */
#define GP_PROCS 8
typedef struct gp_proc {
	int pid;
	bool trainer;
	unsigned steps, opt_steps;
	uint64_t kernels, api_calls, mem_peak;
	bool has_end, status_unknown;
	int wait_status;
	gp_text_t command; /* GP_PROC_COMMAND bytes at most */
} gp_proc_t;
#define GP_PROC_COMMAND 96
typedef struct gp_procs {
	gp_proc_t p[GP_PROCS];
	unsigned n, nall;  /* listed, and in all (more than GP_PROCS: the largest) */
	unsigned nforeign; /* rankR.pidP.gpr beside it that another agent wrote (an earlier run
	                      into the same directory): left out, counted */
} gp_procs_t;

typedef struct gp_rank {
	gp_ident_t id;
	gp_outcome_t outcome;
	gp_steps_t steps;
	gp_rank_capture_t capture;
	gp_rank_own_t own;
	gp_startup_t startup;
	gp_gpu_t gpu;
	gp_sync_t sync;
	gp_memory_t memory;
	gp_pool_t pool;
	gp_torch_t torch;
	gp_io_t io;
	gp_faults_t faults;
	gp_overhead_t overhead;
	gp_procs_t procs;
	gp_quality_t quality;
	gp_series_t ts;
	gp_shares_t shares;
} gp_rank_t;

/* The step number of rank r's k-th headline sample. */
static inline unsigned gp_step_no(const gp_rank_t *r, unsigned k)
{
	return r->steps.no ? r->steps.no[k] : r->steps.no0 + k;
}
/* Drop r->steps.no where its numbers run on from the first (no0). */
void gp_rank_compact_steps(gp_rank_t *r);
/* Whether the task used its GPUs, where no CUDA activity was recorded. NVML's memory in
 * use is not that evidence (an idle H100 shows ~480 MiB with no process on it):
 *   USED    NVML listed a process of the task on them (or, where it listed only others'
 *           and a process of ours called cuInit, one NVML named from another PID
 *           namespace); without NVML's lists (older collectors, drivers that refuse),
 *           memory in use rose GP_UNOBSERVED_MIB or more above the first sample
 *   UNUSED  NVML's lists never held a process of the task (another job's on a shared
 *           GPU are not the task's, unless a process of ours called cuInit); where the
 *           driver refused the lists, no process called cuInit and memory never rose
 *   UNKNOWN no NVML sample; or an older collector (no process list, no cuInit record)
 *           whose memory never rose: its first sample may follow a short run's context */
#define GP_UNOBSERVED_MIB 256
typedef enum gp_gpu_use { GP_GPU_UNKNOWN, GP_GPU_USED, GP_GPU_UNUSED } gp_gpu_use_t;
gp_gpu_use_t gp_rank_gpu_use(const gp_rank_t *r);
/* The rank recorded no CUDA work although its modes asked for it, nothing was yielded to
 * another tool, and the task used its GPU (GP_GPU_USED): the process that used the GPU
 * was not the one recorded. Never "complete"; the first finding. */
bool gp_rank_unobserved(const gp_rank_t *r);
/* Allocated, not used: the rank had a GPU, recorded no CUDA work, and the task never used
 * it (GP_GPU_UNUSED). */
bool gp_rank_gpu_unused(const gp_rank_t *r);
/* The program the agent started (the task, what Slurm sees) ended in failure: a
 * non-zero exit or a signal, in the agent's own end record. Such a failure is the rank's
 * outcome whichever of its processes trained: a worker's or a forked trainer's own
 * "exit 0" never hides it (issue 51). */
bool gp_rank_task_failed(const gp_rank_t *r);
/* The rank's memory peak as its framework counts it (PyTorch's max allocated, a pool's
 * in-use peak: a pool is not its use), else CUDA's live device bytes; *what says which. */
uint64_t gp_rank_in_use_peak(const gp_rank_t *r, const char **what);
/* How a rank ended, in words: "exit 0", "signal 9", "incomplete", ... */
const char *gp_rank_outcome(const gp_rank_t *r, char *buf, size_t len);
/* Frees what a rank owns (its path, step samples, owners), not the rank itself. */
void gp_rank_release(gp_rank_t *r);

/* One rank's share of the job besides its gp_rank_t: its kernel and range tables and
 * what its header says of the job (the job report merges these rank by rank). */
typedef struct gp_rank_tables {
	gp_kstat_t *k;
	gp_rstat_t *r;
	unsigned nk, nr;
	gp_otab_t ops; /* kernel time by operation range (attribution.h) */
	char job[32];
	unsigned ntasks_expected;
	gp_rf_ident_t src; /* the rank file the analysis read (its summary's key) */
	bool src_ok;       /* false: it changed while read; no summary is made of it */
	/* read from a summary: its bytes, where the kernels' and ranges' names and the
	 * kernels' histograms are (summary.c), freed with the tables; NULL: each owned */
	void *arena;
} gp_rank_tables_t;
void gp_rank_tables_free(gp_rank_tables_t *t);

#endif
