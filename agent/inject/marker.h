/* Step completion markers (marker.c): CUDA events at the end of outermost NVTX ranges,
 * for the GPU step time in modes without CUDA activity records. */
#ifndef GP_MARKER_H
#define GP_MARKER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "event.h"

/* Look up the driver's functions in the loaded libcuda (call from within cuInit, i.e.
 * CUDA's InitializeInjection). 0 when markers can be placed. */
/* name: the interned name the waiter thread announces itself with (GP_EV_THREAD_NAME),
 * so the report leaves its CUDA calls (event synchronisations) out of the program's */
int gp_marker_enable(void (*emit)(const gp_event_t *), uint64_t (*now)(void), uint32_t name);
#ifdef __cuda_cuda_h__
/* The driver functions the markers call (tests give their own: t_marker). */
typedef struct gp_marker_cuda {
	CUresult (*ctx_get)(CUcontext *);
	CUresult (*ctx_set)(CUcontext);
	CUresult (*ev_create)(CUevent *, unsigned);
	CUresult (*ev_record)(CUevent, CUstream);
	CUresult (*ev_sync)(CUevent);
	CUresult (*ev_elapsed)(float *, CUevent, CUevent);
	CUresult (*capturing)(CUstream, CUstreamCaptureStatus *);
	CUresult (*capture_mode)(CUstreamCaptureMode *); /* optional */
} gp_marker_cuda_t;
int gp_marker_enable_with(const gp_marker_cuda_t *cu, void (*emit)(const gp_event_t *),
                          uint64_t (*now)(void), uint32_t name);
#endif
/* An outermost range of the program's own domain ended at ts: place a marker. Skipped
 * when another thread is placing one. Returns the ns the marker's record waited for room
 * in CUDA's launch queue (a GPU-bound program's host, ahead by a full queue, waits there
 * at whatever launch comes next: that wait is the program's, not gpuprof's), 0 when it
 * took no longer than a record does (GP_MARKER_WAIT_NS). */
#define GP_MARKER_WAIT_NS 20000
/* 0 off, 1 ready, -1 failed: read inline on every outermost pop, so a program without
 * markers (no CUDA, or a mode without them) pays a load, not a call (bench/nvtx_cost) */
extern _Atomic int gp_marker_state __attribute__((visibility("hidden")));
uint64_t gp_marker_step_end_slow(uint64_t ts) __attribute__((visibility("hidden")));
static inline uint64_t gp_marker_step_end(uint64_t ts)
{
	if (atomic_load_explicit(&gp_marker_state, memory_order_relaxed) <= 0)
		return 0;
	return gp_marker_step_end_slow(ts);
}
/* The host time (the clock of ts above) of the last step end the GPU has finished the
 * work before: the CUDA work launched before it is done. 0: no marker has completed. */
uint64_t gp_marker_done(void);
/* The calling thread is in gpuprof's own CUDA calls: the markers' waiter, or a
 * program's thread placing a marker. */
bool gp_marker_own_thread(void);
/* gp_inject_api_t's capture_begin and capture_end, on the calling thread (CUDA's
 * cuStreamIsCapturing and cuThreadExchangeStreamCaptureMode as the markers have them:
 * no check before they are enabled) */
bool gp_marker_capture_begin(int *mode);
void gp_marker_capture_end(int mode);

#endif
