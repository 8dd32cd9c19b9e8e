/* One rank file loaded into typed arrays, and the analysis passes that run over them.
 * The loader (load.c) fills a rank_data_t from the events; each pass then does one job
 * and writes its results into the public gp_rank_t (analyze.h):
 *   steps.c    which intervals are the training steps, and how long each really took
 *   gputime.c  GPU busy/idle and why it idled, communication vs compute, kernel table
 *   ranges.c   NVTX ranges: projected GPU time and synchronisation, across threads
 *   memory.c   device memory: peak, growth, leaks, optimizer state, time series
 * The passes run in that order (load_rank in analyze.c); the unit tests feed synthetic
 * events through gp_rd_feed and call the passes one by one. Internal to report/. */
#ifndef GP_RANKDATA_H
#define GP_RANKDATA_H

#include "analyze.h"
#include "job.h"
#include "event.h"
#include "symtab.h"
#include "vec.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct range {
	uint64_t start, end, gpu_ns, sync_ns;
	uint32_t name, tid, depth, domain; /* domain 0: the default one, the program's own */
} range_t;
typedef struct kern {
	uint64_t start, dur;
	uint64_t corr; /* CUPTI's id; bits 32+: the process's generation (cupti.c) */
	uint32_t name, stream;
	uint32_t range;   /* the innermost range open at its launch, push/pop or start/end
	                     (its name id; 0: none), set by gp_pass_ranges */
	uint8_t kind;     /* 0 kernel 1 memcpy 2 memset */
	uint8_t copykind; /* CUPTI memcpy kind: 1 HtoD 2 DtoH 8 DtoD ... */
	uint8_t device;
	uint8_t memkinds; /* a copy's source memory kind | destination's << 4 (GP_MEM_*; 0:
	                     not recorded, files of gpuprof 0.1.1 and before) */
	union {
		uint64_t bytes;  /* copies and sets: bytes */
		uint64_t launch; /* kernels: the launch configuration's string id (GP_LAUNCH_FMT;
		                    0: not recorded) */
	};
} kern_t;
/* What only the exports draw: NVML samples, NVTX marks. */
typedef struct nvml_sample {
	uint64_t ts, mem_bytes;
	uint32_t power_mw, sm_mhz;
	uint32_t reasons; /* NVML's clock event (throttle) reasons, its bits; 0: none, or an
	                   * agent that did not record them */
	uint8_t device, util;
} nvml_sample_t;
typedef struct nvtx_mark {
	uint64_t ts;
	uint32_t tid, name;
} nvtx_mark_t;
typedef struct api {
	uint64_t start, dur, corr;
	uint32_t tid, cbid, stack;
	uint8_t domain, alloc, cls, ret; /* ret: the call's return value (0 success) */
	bool sync; /* blocks the host on the GPU (set once loaded, see load.c) */
} api_t;
typedef struct mem {
	uint64_t ts, addr, bytes, corr;
	uint32_t stream;
	uint16_t kind; /* CUPTI memory kind: 3 device, 5 managed, 6 host ... */
	uint8_t is_free, device;
} mem_t;
typedef struct open_range {
	uint64_t start;
	uint32_t name, tid, domain;
	uint32_t level; /* a push's level + 1 as recorded (0: not recorded: the stack's) */
	uint64_t id;
} open_t;
typedef VEC(open_t) open_stack_t;
/* One training step. start/end: the CPU interval (the step range, or for steps found
 * without one, from its first launch to the next step's); gpu_end: completion of the
 * last GPU work launched in it (0: none recorded). */
/* What the headline's sample of a step is (steps.c step_timing; the Chrome trace's step
 * tracks draw each as it was timed) */
enum gp_head_kind {
	GP_HEAD_NONE = 0, /* not one of the headline's samples (warm-up, no time) */
	GP_HEAD_KERNELS,  /* GPU: its kernels' completion to the step before's */
	GP_HEAD_MARKERS,  /* GPU: the step markers' clock (untraced steps, modes without cuda) */
	GP_HEAD_PERIOD,   /* the host: its start to the next step's */
	GP_HEAD_CPU       /* the host: its range's own time (a single post-warm-up step) */
};
typedef struct step {
	uint64_t start, end, gpu_end;
	bool traced;    /* inside a stretch where kernels were traced (capture windows) */
	uint8_t head;   /* gp_head_kind: whether (and how) the headline counted it */
	float mark_ms;  /* its GPU time by the step markers' clock; 0: none */
	double head_ms; /* the headline's sample of it (ms), where head */
} step_t;

/* A step completion marker (GP_EV_STEP_MARK): placed at ts on the host; gpu: GPU ns
 * since the previous marker when chained. */
typedef struct mark {
	uint64_t ts, gpu;
	uint8_t chained, dropped;
} mark_t;

typedef struct rank_data {
	gp_symtab_t sym;
	VEC(range_t) ranges; /* sorted by (tid, start) once loaded */
	VEC(kern_t) kerns;   /* kernels, memcpy, memset; sorted by start in the GPU pass */
	VEC(api_t) apis;     /* sorted by start */
	VEC(mem_t) mems;     /* sorted by time */
	/* while loading: open push ranges, one stack per (thread, domain) so that a pop costs
	 * O(1) whatever the file holds; started ranges by id (index + 1 in started) */
	VEC(open_stack_t) stacks;
	u64map_t stack_of; /* (tid << 32 | domain) + 1 -> index + 1 into stacks */
	VEC(open_t) started;
	u64map_t started_of;
	/* plausible record times from the header (0: no bound), see gp_rd_feed */
	uint64_t ts_lo, ts_hi;
	uint64_t hdr_realtime, hdr_monotonic; /* the header's clocks at the agent's start */
	uint64_t start_ts;                    /* the program's exec (GP_EV_START), 0: none */
	VEC(nvml_sample_t) nvml;
	VEC(nvtx_mark_t) nvtx_marks;
	u64map_t stream_name; /* CUPTI stream id + 1 -> string id (nvtxNameCudaStream) */
	u64map_t thread_name; /* tid + 1 -> string id (nvtxNameOsThread) */
	uint64_t nvml_mem_max, nvml_samples, nvml_util_sum;
	uint64_t nvml_mem_first[8]; /* per device: its first sample + 1 (0: none yet) */
	uint64_t nvml_rise;         /* memory in use above a device's first sample, most */
	/* NVML's compute processes (GP_EV_GPU_PROCS) and the processes that called cuInit */
	uint64_t procs_samples, procs_own_max, procs_other_max, procs_own_bytes, cuda_inits;
	bool procs_refused; /* a GP_EV_GPU_PROCS with u16 1: the driver refused the list */
	struct io_prev {
		uint64_t ts, v[4];
		unsigned bits;
		double bytes[4], secs[4];
	} io_prev[8]; /* PCIe/NVLink counters per device: the last sample, sums */
	uint64_t first_ts, last_ts;
	uint64_t win_lo, win_hi; /* post-warm-up steps, when steps are known */
	uint64_t gpu_lo, gpu_hi; /* GPU statistics: the hull of gwin (0, 0: everything) */
	VEC(uint64_t)
	gwin; /* ... exactly: lo, hi, lo, hi, ... (sorted, disjoint): the
	         post-warm-up steps where kernels were traced */
	VEC(uint64_t)
	cuda_on;                /* when kernels were traced at all: lo, hi, ... (the capture
	                           switches; one stretch over the run without any) */
	VEC(uint64_t) ctrl;     /* capture switches: ts, modes, ts, modes, ... */
	uint32_t cost_open_win; /* a window by cost open as far as the records go: its number
	                           + 1 (0: none), and its cost so far (GP_CTRL_SO_FAR) */
	uint64_t cost_open_ns;
	u64map_t alloc_api;     /* correlation -> index + 1 of the allocation call (its stack) */
	u64map_t corr_api;      /* correlation -> index + 1 of the other API calls */
	u64map_t launch_site;   /* correlation -> stack id + 1 of a kernel launch's call site
	                           (GPUPROF_LAUNCH_SITES; 1: taken, no stack) */
	unsigned sites_capped;  /* windows whose launch sites stopped at their cap */
	VEC(uint64_t) prof;     /* cudaProfilerStart/Stop: ts << 1 | start */
	VEC(step_t) steps;      /* sorted by start */
	VEC(mark_t) marks;      /* in the order they completed */
	VEC(uint64_t) opt_ends; /* optimizer.step() returns: ts << 8 | optimizer index */
	VEC(uint64_t)
	opt_own;                 /* at each, in file order: the integration's own ns so far << 8
	                            | optimizer index (GP_FW_OPT_END d) */
	VEC(uint64_t) torch_mem; /* optimizer step, allocated bytes after it (PyTorch's): pairs */
	VEC(uint64_t) data_wait; /* waits for the next batch (GP_FW_DATA_WAIT): end ts, ns */
	VEC(uint64_t) compiles;  /* framework compilations (GP_FW_COMPILE): end ts, ns, name */
	VEC(uint64_t) overhead;  /* CUPTI's own work (GP_EV_OVERHEAD): start, end */
	uint32_t gpu_uuid[8];    /* the GPUs the agent sees (GP_EV_GPU): UUID string ids */
	uint32_t gpu_name[8];    /* ... and their names' */
	uint64_t child_pid, recorder_pid; /* the agent's program; the process recording here */
	VEC(uint64_t)
	proc_changes;   /* when another process took over the file (a script
	                   running programs one after another) */
	bool agent_end; /* the agent's end record (its program's status) */
	int agent_status;
	bool lib_end;          /* the recording process's own end record ... */
	int lib_status;        /* ... and what exit() was given */
	uint64_t gpu_bytes[8]; /* ... and their memory */
	uint32_t step_tid;     /* the thread that ran the step ranges (0: none/unknown) */
	/* the outermost ranges of loops other threads run beside NVTX steps (indices into
	 * ranges, in its order): what is launched in them is their work, not a step's */
	VEC(size_t) side_loops;
	bool tid_mismatch; /* NVTX and CUDA API records carry unrelated thread ids */
	/* the rank's CUDA allocation that failed for lack of memory, if any */
	uint64_t oom_ts, oom_count;
	/* pending: header values the passes need */
	char want_step[128];
	unsigned warmup;
	int steps_from; /* GP_STEPS_* */
	uid_t owner;    /* whose rank files are read ((uid_t)-1: anyone's; gp_rank_opts_t) */
	/* the identity of the file read (gp_rf_ident); src_ok false when it changed under
	 * the reader */
	gp_rf_ident_t src;
	bool src_ok;
} rank_data_t;

/* load.c */
void gp_rd_reset(rank_data_t *d);
void gp_rd_free(rank_data_t *d);
/* Take one event of the rank file (strings, records, the end record). */
void gp_rd_feed(rank_data_t *d, gp_rank_t *r, const gp_event_t *e);
/* After the last event of a process (and of the file): a window by cost it left open
 * counted at its last cost so far (gp_rd_load_file calls it). */
void gp_rd_cost_unended(rank_data_t *d, gp_rank_t *r);
/* After the last event: close what is open, sort, build the correlation maps. */
void gp_rd_finish(rank_data_t *d);
/* Read one rank file into d (reset first) and r's data-quality fields: the bounds from
 * the header, header(arg, reader) for the caller's own header values (may be NULL),
 * every event, the losses, then gp_rd_finish. -1 with a message in err. */
typedef struct gp_rf_reader gp_rf_reader_t;
int gp_rd_load_file(const char *path, rank_data_t *d, gp_rank_t *r,
                    void (*header)(void *, gp_rf_reader_t *), void *arg, char *err, size_t errlen);
const char *gp_rd_str(const rank_data_t *d, uint32_t id);
/* What the rank file's header says of its steps (the step range it names, its warm-up):
 * every reader that finds steps takes them from here, so a step is decided once. */
void gp_rd_header_steps(rank_data_t *d, gp_rf_reader_t *rd);
/* After the last event: the per-cause losses folded into the totals (lost_any). */
void gp_rd_losses(gp_rank_t *r);
/* The API call (launch) that made GPU work k, or NULL. */
const api_t *gp_rd_launch(const rank_data_t *d, const kern_t *k);
/* When GPU work k was launched: its API call's start, else its own start. */
uint64_t gp_rd_launch_ts(const rank_data_t *d, const kern_t *k);
bool gp_is_comm(const char *name);
/* A hash of a name (strhash.h), never 0 (a u64map key). */
uint64_t gp_name_hash(const char *s);

/* steps.c */
void gp_pass_steps(gp_rank_t *r, rank_data_t *d);
/* Capture windows: GPU statistics cover the longest captured stretch of the steps. */
void gp_pass_capture(gp_rank_t *r, rank_data_t *d);
/* gpuprof's own time on the program's threads per step (after gp_pass_capture) */
void gp_pass_own(gp_rank_t *r, rank_data_t *d);
/* 1 + the index of the step that time t falls in (its CPU interval); 0 when none. */
size_t gp_step_at(const rank_data_t *d, uint64_t t);
/* The end of step i's span, the one every reader of a step's whole time takes: its start
 * to the next step's start (the period the report's period_median_ms measures; a step
 * range that ends before the next begins leaves its tail, logging, the data, in no step
 * otherwise), the last step to its own end; never past the next step's start. The
 * Chrome trace's step slices and the Kineto export's ProfilerStep#N (as PyTorch's
 * profiler and HTA draw steps) are these spans. */
uint64_t gp_step_span_end(const rank_data_t *d, size_t i);
/* Is t inside one of the GPU statistics' stretches (gwin; everything when there are
 * none)? */
bool gp_in_gwin(const rank_data_t *d, uint64_t t);
/* Index + 1 of the pair of v (lo, hi, ...) that holds t; 0 when none. */
size_t gp_interval_of(const uint64_t *v, size_t n, uint64_t t);

/* gputime.c */
void gp_pass_gpu(gp_rank_t *r, rank_data_t *d);
void gp_merge_kernels(gp_job_t *job, const gp_rank_t *r, rank_data_t *d);
/* Add one rank's tables (its own analysis) into the job's, by name. */
void gp_job_add_kernels(gp_job_t *job, const gp_kstat_t *k, unsigned n);
void gp_job_add_ranges(gp_job_t *job, const gp_rstat_t *r, unsigned n);

/* ranges.c */
/* The range that owns a call made on thread tid at ts: the innermost range open on that
 * thread, else (a thread without a range of its own, as PyTorch's autograd threads) the
 * innermost one open on the steps' thread. NULL when none. */
range_t *gp_owner_range(rank_data_t *d, uint32_t tid, uint64_t ts, size_t *from);
void gp_pass_ranges(gp_job_t *job, gp_rank_t *r, rank_data_t *d);
/* The program's ranges open on thread tid at ts, outermost first ("a > b"); false: none */
bool gp_open_ranges(rank_data_t *d, uint32_t tid, uint64_t ts, char *out, size_t len);

/* startup.c: the program's start to its first step, and what filled it */
void gp_pass_startup(gp_rank_t *r, rank_data_t *d);

/* CUPTI's memory kinds (CUpti_ActivityMemoryKind): what the device's memory is. Pageable
 * and pinned host memory (a DataLoader's pin_memory buffers), managed memory and module
 * globals (DEVICE_STATIC) are counted apart from the device allocations. */
enum {
	GP_MEM_UNKNOWN = 0,
	GP_MEM_PAGEABLE = 1,
	GP_MEM_PINNED = 2,
	GP_MEM_DEVICE = 3,
	GP_MEM_ARRAY = 4,
	GP_MEM_MANAGED = 5,
	GP_MEM_DEVICE_STATIC = 6,
	GP_MEM_MANAGED_STATIC = 7
};
static inline bool gp_mem_is_device(unsigned kind)
{
	return kind == GP_MEM_DEVICE || kind == GP_MEM_ARRAY || kind == GP_MEM_UNKNOWN;
}

/* memory.c */
void gp_pass_memory(gp_rank_t *r, rank_data_t *d);
void gp_pass_time_series(gp_rank_t *r, rank_data_t *d);

#endif
