/* State of libgpuprof-inject inside the application, shared by its NVTX part and, through
 * gp_inject_api_t, by the CUPTI module (libgpuprof-cupti.so, loaded only for cuda/mem). */
#ifndef GP_INJECT_H
#define GP_INJECT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "event.h"
#include "ring.h"

typedef struct gp_inject_api {
	unsigned modes;
	/* Hot path: push one event; never blocks. */
	void (*emit)(const gp_event_t *ev);
	/* Intern a string (content-hashed); returns its id, emitting its definition once. */
	uint32_t (*intern)(const char *s, size_t len);
	/* Count records lost outside the ring (GP_LOSS_*: CUPTI drops, a table full). */
	void (*count_drop)(unsigned cause, uint64_t n);
	/* This process's generation on the ring (0 for the first recorder): string and stack
	 * ids carry it, so processes that follow one another keep their names apart. */
	uint32_t gen;
	uint32_t (*tid)(void);
	/* The clock every record is stamped with (clock.h), CUPTI's timestamps included. */
	uint64_t (*now)(void);
	/* cudaProfilerStart (1) / Stop (0) seen by the CUPTI module: a capture boundary. */
	void (*profiler)(int start);
	/* Called by the CUPTI module's thread at each of its flushes, and once more by the
	 * exiting thread after the last flush (at_exit), with its running counts of kernels
	 * recorded and of its own cost measured in ns (launch calls while traced, CUPTI's
	 * overhead records, detaches): windows by cost (costwin.h). */
	void (*tick)(uint64_t now, uint64_t kernels, uint64_t measured_ns, bool at_exit);
	/* cuda/mem bits to capture from the start (capture windows may start with cuda off). */
	unsigned capture;
	/* Take CUPTI's one callback subscriber (allocation stacks, cudaProfilerStart/Stop
	 * as they happen). Off in framework processes whose own profiler needs it. */
	bool callbacks;
	/* CUPTI's flush period in ms (0: 200 while kernels are traced, 1000 for memory only)
	 * and the benchmarks' floor (enable the same kinds, free the buffers unread):
	 * GPUPROF_CUPTI_FLUSH_MS and GPUPROF_CUPTI_DISCARD, read by the injected library. */
	unsigned flush_ms;
	bool discard;
	/* GPUPROF_CUPTI_API: 0 calls (per-callback-id records, on for the whole run),
	 * 1 windows (whole runtime and driver kinds, switched with the capture), 2 off */
	unsigned api_mode;
	/* GPUPROF_CUPTI_DETACH with sampled capture: give CUPTI back between windows */
	bool detach;
	/* The host time up to which the GPU has finished the program's work (the step
	 * markers); 0 while none is known. NULL: never known. */
	uint64_t (*gpu_done)(void);
	/* The framework's own profiler runs (the PyTorch integration says so): CUPTI's
	 * kinds are its too, so nothing is switched or detached meanwhile. */
	bool (*foreign)(void);
	/* The calling thread is one of gpuprof's (the step markers' waiter): a detach never
	 * finalizes CUPTI at the exit of one of its calls. NULL: none is. */
	bool (*own_thread)(void);
	/* GPUPROF_LAUNCH_SITES: call stacks of the first N launches of each of the first
	 * capture windows (sites.c); 0: none (a framework's process, or turned off) */
	unsigned launch_sites;
	/* The PyTorch integration works on the allocator (its snapshot, its history switched):
	 * no detach begins or finalizes meanwhile. NULL: never. */
	bool (*busy)(void);
	/* GPUPROF_CUPTI_DETACH_POLL_MS: without a step marker after a window, look this often
	 * for its kernel records and detach then; 0: wait DETACH_WAIT_NS for a marker */
	unsigned detach_poll_ms;
	/* A window that no step marker follows may be detached (by the poll above, or after
	 * the 10 s wait): not in PyTorch under GPUPROF_CUPTI_DETACH=auto, where such detaches
	 * corrupted the heap (cuda.c) */
	bool detach_markerless;
	/* A finalize at the exit of a program's call, on its thread: false where a CUDA graph
	 * is being captured that this thread's legacy or per-thread stream sees (a capture
	 * on a blocking stream of any thread: CUDA_ERROR_STREAM_CAPTURE_IMPLICIT), and the
	 * finalize waits for a later call; true with the thread's capture mode relaxed for
	 * it (*mode: the one capture_end puts back; -1 none), so that no call of CUPTI's
	 * invalidates another thread's capture in global mode. NULL: no check. */
	bool (*capture_begin)(int *mode);
	void (*capture_end)(int mode);
} gp_inject_api_t;

/* The CUPTI module's entry points (libgpuprof-cupti.so). */
typedef int (*gp_cupti_start_fn)(const gp_inject_api_t *api, char *why, unsigned whylen);
typedef void (*gp_cupti_flush_fn)(void);
/* The program's own profiler begins (1): CUPTI returns every buffer of ours before it
 * registers its own; it ended (0): ours are registered again (gp_cupti_hand_over). */
typedef void (*gp_cupti_hand_over_fn)(int begin);
/* The integration begins work on the allocator: no detach armed or under way once this
 * returns (gp_cupti_quiesce) */
typedef void (*gp_cupti_quiesce_fn)(void);
/* Switch CUDA activity (GP_MODE_CUDA) and memory tracking (GP_MODE_MEM) on or off; returns
 * the bits captured now (unchanged when the module was busy: try again later). */
typedef unsigned (*gp_cupti_capture_fn)(unsigned modes);
/* CUPTI's stream id of a CUstream/cudaStream_t handle; -1 when CUPTI does not know it. */
typedef int (*gp_cupti_stream_id_fn)(void *stream, uint32_t *id);
int gp_cupti_start(const gp_inject_api_t *api, char *why, unsigned whylen);
void gp_cupti_flush(void);
void gp_cupti_hand_over(int begin);
void gp_cupti_quiesce(void);
unsigned gp_cupti_capture(unsigned modes);
int gp_cupti_stream_id(void *stream, uint32_t *id);
/* The framework integration's calls into libgpuprof-inject.so (agent/python/_gpuprof_abi.py,
 * through ctypes): attach to the agent's ring (1: recording), the clock records carry,
 * and one GP_EV_FW record (kind GP_FW_*, text interned into b; returns what fw.c says). */
int gpuprof_fw_attach(void);
uint64_t gpuprof_fw_now(void);
const char *gpuprof_fw_rank_file(void);
/* the integration's work on the allocator begins (1) or ends (0): no detach meanwhile */
void gpuprof_fw_busy(int on);
uint64_t gpuprof_fw_event(unsigned kind, unsigned dev, uint64_t a, uint64_t c, uint64_t d,
                          const char *text);
/* Layer ranges (mode layers, or mode cuda while kernels are traced: gpuprof_fw_tracing);
 * start returns the range id (0: not recording) */
int gpuprof_fw_tracing(void);
uint64_t gpuprof_fw_range_start(const char *name);
/* ... and an operation's range ("op @ file:line (function)", domain pytorch.ops) */
uint64_t gpuprof_fw_op_start(const char *name);
void gpuprof_fw_range_end(uint64_t id);
/* Test hook: the calling thread's Python frames (CPython, GIL held) as text. */
int gp_cupti_pyframes(char *out, int len);

#endif
