/* The one event record every stage shares: the injected library and the agent produce
 * it, the ring carries it, the rank file stores it (delta/varint encoded, see
 * rankfile.c), the report consumes it. Field meanings per type are listed below and in
 * doc/format.md. All timestamps are CLOCK_MONOTONIC nanoseconds of the node. */
#ifndef GP_EVENT_H
#define GP_EVENT_H

#include <stdint.h>
#include <time.h>

enum gp_ev_type {
	GP_EV_NONE = 0,
	GP_EV_STRING = 1,      /* tid=string id, u16=byte offset, u8=bytes here; a..d = bytes */
	GP_EV_NVTX_PUSH = 2,   /* ts tid a=name b=domain c=payload d=color<<32|category
	                          u16=level + 1 (0: not given; the reader's stack says) */
	GP_EV_NVTX_POP = 3,    /* ts tid b=domain */
	GP_EV_NVTX_START = 4,  /* ts tid a=name b=domain c=range id d=color<<32|category */
	GP_EV_NVTX_END = 5,    /* ts tid c=range id */
	GP_EV_NVTX_MARK = 6,   /* ts tid a=name b=domain d=color<<32|category */
	GP_EV_THREAD_NAME = 7, /* tid a=name */
	GP_EV_KERNEL = 8,      /* ts=start a=duration b=name c=correlation d=stream, u8=device
	                          tid=launch configuration string id (GP_LAUNCH_FMT; 0: not
	                          recorded: collectors before issue 50) */
	GP_EV_MEMCPY = 9,  /* ts a=duration b=bytes c=correlation d=stream u8=device u16=copy kind
	                      | source memory kind << 8 | destination memory kind << 12 (CUPTI's
	                      kinds: 1 pageable, 2 pinned, 3 device ...; 0: not recorded) */
	GP_EV_MEMSET = 10, /* ts a=duration b=bytes c=correlation d=stream u8=device */
	GP_EV_SYNC = 11,   /* ts a=duration b=sync type c=correlation d=stream u8=device */
	GP_EV_API = 12,    /* ts a=duration b=cbid c=correlation tid, u8=1 runtime 2 driver,
	                      u16=GP_API_* class | return value << 8 (activity records:
	                      0 success, 1-127 the CUDA error, 127 for larger ones),
	                      d=stack id (GP_API_ALLOC_STACK, GP_API_LAUNCH_SITE) */
	GP_EV_ALLOC =
	    13, /* ts a=address b=bytes c=correlation d=stack id u8=device u16=memory kind */
	GP_EV_FREE = 14,  /* same fields as ALLOC */
	GP_EV_STACK = 15, /* tid=stack id u16=index of first frame u8=frames here (<=3) b,c,d=pcs */
	GP_EV_FRAME = 16, /* a=pc b=symbol string id; native frames: c=module path string
	                     id, d=pc's offset from the module's load address (0, 0: unknown) */
	GP_EV_NVML = 17,  /* ts u8=device a=util_gpu|util_mem<<8|temp_C<<16 b=mem used bytes
	                     c=power_mW|sm_MHz<<32 d=mem_MHz|throttle reasons<<32 */
	GP_EV_DROPS = 18, /* a=ring full b=cupti dropped c=string table full d=byte cap */
	GP_EV_END = 19,   /* ts a=wait status b=cpu us c=max rss KiB d=wall ns */
	GP_EV_STREAM_NAME = 20, /* a=stream id b=name */
	GP_EV_YIELD = 21,       /* a=modes yielded b=holder string id */
	GP_EV_GPU = 22,         /* u8=device a=uuid string b=total bytes c=name string */
	GP_EV_PROFILER = 23,    /* ts a=1 start / 0 stop (cudaProfilerStart/Stop) */
	GP_EV_START = 24,       /* ts: program exec'd; a=pid (u8 0, the agent's); u8 1: the
	                           process recording into this file attached (the library's):
	                           a=its pid b=its command line */
	GP_EV_SIGNAL = 25,      /* ts a=signal received b=1: it reached the program directly (sent
	                           to the step or the terminal group), not forwarded */
	GP_EV_CONTROL = 26,     /* ts a=modes now capturing b=step index (capture windows;
	                           UINT32_MAX: windows by cost) c=ns the switch took; a window
	                           by cost that ends: d=its estimated tracing cost in ns,
	                           u8=why it ended (agent/inject/costwin.h GP_COSTWIN_*) */
	GP_EV_NVML_IO = 27,     /* ts u8=device u16=GP_IO_* valid bits; cumulative counters:
	                           a=PCIe tx bytes b=PCIe rx bytes c=NVLink tx KiB d=NVLink rx KiB */
	GP_EV_GPU_FAULT = 28,   /* ts u8=device a=GP_FAULT_* b=Xid code or new errors c=total */
	GP_EV_OVERHEAD = 29,    /* ts a=duration b=CUPTI overhead kind (profiler's own cost),
	                         * or GP_OVERHEAD_DETACH (c, d: the looks it waited for the
	                         * window's kernel records and for a call of the program's) */
	GP_EV_STEP_MARK = 30,   /* ts=end of an outermost NVTX range (a step) on the host;
	                           d=1: a=GPU ns since the previous marker completed (CUDA
	                           events), d=0: first of a chain, d=2: not placed (GPU too
	                           far behind); b=host time it was seen complete; c=sequence */
	GP_EV_LOSS = 31,        /* u8=GP_LOSS_* a=records lost to that cause so far (a running
	                           total: the reader keeps the largest of each cause) */
	GP_EV_FW = 32,          /* framework integration (agent/python): u8=GP_FW_*
	                           ts tid, u16=device; a..d per kind (below) */
	GP_EV_NVTX_RANGE = 33,  /* a push/pop range of the default domain in one record (a
	                           thread's lane of the ring): ts=start tid a=name b=duration
	                           c=payload d=color<<32|category u16=level (0 outermost) */
	GP_EV_CLOCK = 34,       /* the TSC was dropped (common/clock.h): ts=when, a=clock_gettime
	                           minus the TSC's prediction (ns, signed) b=the interval that
	                           check covered (ns) */
	GP_EV_CUDA_INIT = 35,   /* ts a=pid: cuInit reached the injected library in that process
	                           (InitializeInjection; one per process) */
	GP_EV_GPU_PROCS = 36,   /* ts u8=device: NVML's compute processes on it (once a second):
	                           a=processes b=of them the task's (the agent or under it)
	                           c=bytes the task's use d=bytes all use (0: not known);
	                           u16=1: the driver refused the list (once, nothing else) */
	GP_EV_MAX = 37,
};

/* GP_EV_OVERHEAD b for gpuprof's own work on CUPTI, outside CUPTI's overhead kinds (theirs
 * are n << 16 for small n: CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH is 1 << 16):
 * detaching it after a capture window and attaching its light parts again. */
#define GP_OVERHEAD_DETACH 0x40000000u

/* GP_EV_CONTROL u8 for windows by cost (agent/inject/costwin.h), 0 for any other switch.
 * 1-5: a window's end, d its estimated cost, u16 its number; 1-3 switched kernels off, 4-5
 * switched nothing. 6-7 are no switch: charges beside the windows' ends. */
enum gp_ctrl_cost {
	GP_CTRL_BY_KERNELS = 1,  /* its kernels at the per-kernel price reached its budget */
	GP_CTRL_BY_MEASURED = 2, /* the cost measured in the process did */
	GP_CTRL_BY_TIME = 3,     /* its time did */
	GP_CTRL_AT_EXIT = 4,     /* the process ended with it open */
	GP_CTRL_BY_STEPS = 5,    /* the program's steps were seen: windows by steps from then */
	GP_CTRL_LATE = 6,        /* d: charged to the window that ended last, after its end
	                          * (activity records flushed after it, the detach) */
	GP_CTRL_SO_FAR = 7,      /* d: the open window u16's cost so far; the last one stands
	                          * for a window the process's death left open */
};

/* GP_EV_FW kinds. Byte counts are the framework's own (PyTorch's caching allocator and
 * optimizer state), not CUDA's. b is a string id wherever the kind carries text. */
enum gp_fw {
	GP_FW_INFO = 1,       /* b=what the integration is doing ("torch 2.6.0; steps: ...") */
	GP_FW_MISSING = 2,    /* b=what was not collected, and why */
	GP_FW_OPT_BEGIN = 3,  /* an optimizer's step() begins: a=optimizer index (written by
	                       * gpuprof 0.1.1 and before; no reader used it) */
	GP_FW_OPT_END = 4,    /* it returned: a=optimizer index c=its steps so far d=the
	                       * integration's own ns on the program's threads so far (0: untimed) */
	GP_FW_OPT_STATE = 5,  /* its state tensors: a=optimizer index c=bytes on CUDA devices
	                         d=bytes in all b="Adam: 512.0 MiB float32 on cuda" */
	GP_FW_MEM_STEP = 6,   /* after optimizer step d (0: at exit): a=allocated c=reserved */
	GP_FW_MEM_PEAK = 7,   /* the allocator's peak: a=max allocated c=max reserved
	                         d=reserved minus allocated at the peak (fragmentation) */
	GP_FW_OWNER = 8,      /* live at the peak (d=1), at an OOM (d=2), or allocated during
	                         a recording window and still live at its end (d=3), by
	                         Python stack: a=bytes c=tensors b=stack text */
	GP_FW_OOM = 9,        /* CUDA out of memory: a=requested c=allocated on the device
	                         d=free on the device (bytes, PyTorch's figures) */
	GP_FW_SNAPSHOT = 10,  /* a memory_viz pickle written: b=file name a=GP_SNAP_* */
	GP_FW_MEM_MAX = 11,   /* the allocator's peak counters at exit: a=max allocated
	                         c=max reserved (the owners stay those of the last picture) */
	GP_FW_DATA_WAIT = 12, /* the program waited a ns for its next batch (DataLoader's
	                         __next__); ts: when it got it */
	GP_FW_COMPILE = 13,   /* a compilation of the framework's (JAX's jax.monitoring
	                         durations) took a ns, ending at ts; b=what */
	GP_FW_POOL = 14,      /* a framework's device memory pool (XLA's allocator): a=bytes
	                         in use c=bytes the pool holds d=peak in use; b=which pool */
	GP_FW_PROFILER = 15,  /* the program's own profiler (torch.profiler: kineto) began
	                         (a=1) or ended (a=0; c=1: its start failed, no session); it
	                         shares CUPTI, so gpuprof switches no CUDA capture while it
	                         runs */
	GP_FW_N = 16
};
enum { GP_SNAP_PEAK = 1, GP_SNAP_OOM = 2, GP_SNAP_EXIT = 3, GP_SNAP_SIGTERM = 4 };

/* Where records were lost, counted where it happens (GP_EV_LOSS; the producers' counts
 * live in the ring header so the agent and salvage see them). GP_EV_DROPS is the older,
 * four-cause form. */
enum gp_loss {
	GP_LOSS_RING = 1,          /* the shared ring was full */
	GP_LOSS_CUPTI = 2,         /* CUPTI dropped activity records (no buffer to put them in) */
	GP_LOSS_CUPTI_REFUSED = 3, /* CUPTI buffers we refused (memory bound) or failed to get,
	                            * or that CUPTI handed to the program's own profiler */
	GP_LOSS_STRINGS = 4,       /* the string table was full: names recorded as unnamed */
	GP_LOSS_DEPTH = 5,         /* ranges nested deeper than the 4096 recorded */
	GP_LOSS_STACKS = 6,        /* a call-stack table was full: an allocation or a launch site
	                              without stack (stacks.c: a table each) */
	GP_LOSS_DEAD_THREAD = 7,   /* a thread died between claiming a ring slot and filling it */
	GP_LOSS_WRITE = 8,         /* records the agent could not write (spool full, I/O error) */
	GP_LOSS_CAP = 9,           /* past max_bytes_per_rank */
	GP_LOSS_PROCESSES = 10,    /* other processes of the task, not recorded (a=processes) */
	GP_LOSS_NO_RING = 11,      /* no ring could be made: the program was not observed (a=1) */
	GP_LOSS_N = 12
};

/* GP_EV_NVML_IO valid bits and GP_EV_GPU_FAULT kinds */
enum { GP_IO_PCIE = 1, GP_IO_NVLINK = 2 };
enum { GP_FAULT_XID = 1, GP_FAULT_ECC_CORRECTED = 2, GP_FAULT_ECC_UNCORRECTED = 3 };

/* Classes of GP_EV_API records (u16), set by the collector that knows the callback ids. */
enum gp_api_class {
	GP_API_OTHER = 0,
	GP_API_ALLOC_STACK = 1,   /* allocation call at entry, with its call stack in d */
	GP_API_SYNC = 2,          /* device/stream/event synchronize */
	GP_API_BLOCKING_COPY = 3, /* cudaMemcpy: blocks the host; a stall when device-to-host */
	GP_API_LAUNCH = 4,        /* kernel or graph launch */
	GP_API_ALLOC = 5,         /* device allocation (cudaMalloc, cuMemAlloc, cuMemCreate ...) */
	GP_API_LAUNCH_SITE = 6,   /* a kernel launch's call stack (GPUPROF_LAUNCH_SITES), taken at
	                           * its entry: c=the launch's correlation d=stack id; return
	                           * value GP_SITE_CAP_REACHED (d=0): the window's cap, no more */
};
#define GP_SITE_CAP_REACHED 1u
/* GP_EV_API u16: the class in the low byte, the call's return value above it. Runtime
 * and driver both number "out of memory" 2 (cudaErrorMemoryAllocation,
 * CUDA_ERROR_OUT_OF_MEMORY). */
#define GP_API_CLASS(u16) ((unsigned)(u16)&0xffu)
#define GP_API_RET(u16)   ((unsigned)(u16) >> 8)
#define GP_API_RET_OOM    2u

/* The record (GP_EV_YIELD) of CUPTI's callback slot kept free in a framework's process:
 * %s is the framework's profiler, which may or may not be started. */
#define GP_YIELD_STACKS_FMT                                                                        \
	"CUDA allocation call stacks not taken: CUPTI's one callback slot is kept free for %s, "   \
	"should the program start it (GPUPROF_ALLOC_STACKS=1 takes it)"

/* Threads of gpuprof's own inside the program are named so (GP_EV_THREAD_NAME): their
 * CUDA calls are the profiler's, left out of the program's figures. */
#define GP_OWN_THREAD_PREFIX "gpuprof: "

typedef struct gp_event {
	uint8_t type;
	uint8_t u8;
	uint16_t u16;
	uint32_t tid;
	uint64_t ts;
	uint64_t a, b, c, d;
} gp_event_t;

/* A kernel's launch configuration, the string a kernel record's tid names: CUPTI's grid
 * and block dimensions, registers per thread, static and dynamic shared memory per block
 * (bytes). GP_LAUNCH_MAX holds the longest (nine 10-digit numbers and the words). */
#define GP_LAUNCH_FMT "grid %u,%u,%u block %u,%u,%u regs %u smem %u+%u"
#define GP_LAUNCH_MAX 160

/* Bytes of string carried by one GP_EV_STRING record, and the longest string kept. */
#define GP_STRING_CHUNK 32
#define GP_STRING_MAX   1024

static inline uint64_t gp_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

const char *gp_ev_type_name(unsigned type);

#endif
