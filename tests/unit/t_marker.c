/* The step markers (agent/inject/marker.c) against a CUDA driver of our own making: every
 * step end gives one marker record, in order, chained with the GPU time between markers;
 * the program's thread wakes the waiter only from its idle sleep or when half the slots
 * wait (a semaphore posted at every step cost the program's thread a futex wake, an IPI in
 * the H200's VM); a marker after an idle second is still taken at once; nothing is placed
 * while a stream is being captured into a graph. No GPU, no libcuda. */
#include "config.h"

#include <cuda.h>

#include "marker.h"
#include "tap.h"

#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- the program's thread's semaphore posts, counted (this definition wins over libc's
 * for marker.c, linked into this executable) ---- */
static _Atomic int posts;
int sem_post(sem_t *s)
{
	static int (*real)(sem_t *);
	if (!real)
		real = (int (*)(sem_t *))dlsym(RTLD_NEXT, "sem_post");
	atomic_fetch_add(&posts, 1);
	return real(s);
}

/* ---- the fake driver: events complete at once, 1.5 ms of GPU time apart ---- */
static _Atomic int capturing_now, records;
static CUresult ctx_get(CUcontext *c)
{
	*c = (CUcontext)0x1234;
	return CUDA_SUCCESS;
}
static CUresult ctx_set(CUcontext c)
{
	(void)c;
	return CUDA_SUCCESS;
}
static CUresult ev_create(CUevent *e, unsigned f)
{
	static uintptr_t n = 1;
	(void)f;
	*e = (CUevent)n++;
	return CUDA_SUCCESS;
}
static CUresult ev_record(CUevent e, CUstream s)
{
	(void)e;
	(void)s;
	atomic_fetch_add(&records, 1);
	return CUDA_SUCCESS;
}
static CUresult ev_sync(CUevent e)
{
	(void)e;
	return CUDA_SUCCESS;
}
static CUresult ev_elapsed(float *ms, CUevent a, CUevent b)
{
	(void)a;
	(void)b;
	*ms = 1.5f;
	return CUDA_SUCCESS;
}
static _Atomic bool implicit_capture; /* a blocking stream of another thread captures */
static CUresult is_capturing(CUstream s, CUstreamCaptureStatus *st)
{
	*st = atomic_load(&capturing_now) ? CU_STREAM_CAPTURE_STATUS_ACTIVE
	                                  : CU_STREAM_CAPTURE_STATUS_NONE;
	if (s == CU_STREAM_LEGACY && atomic_load(&implicit_capture))
		return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
	return CUDA_SUCCESS;
}
/* the calling thread's capture mode (cuThreadExchangeStreamCaptureMode) */
static __thread CUstreamCaptureMode thread_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
static CUresult exchange_mode(CUstreamCaptureMode *mode)
{
	CUstreamCaptureMode old = thread_mode;
	thread_mode = *mode;
	*mode = old;
	return CUDA_SUCCESS;
}

/* ---- the records the markers emit ---- */
#define MAXREC 4096
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static gp_event_t recs[MAXREC];
static _Atomic int nrec;
static void emit(const gp_event_t *e)
{
	pthread_mutex_lock(&mu);
	if (e->type == GP_EV_STEP_MARK && nrec < MAXREC)
		recs[atomic_fetch_add(&nrec, 1)] = *e;
	pthread_mutex_unlock(&mu);
}
static uint64_t now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
static void sleep_us(long us)
{
	struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
	nanosleep(&ts, NULL);
}
/* wait up to 2 s for n records */
static int wait_recs(int n)
{
	for (int i = 0; i < 2000 && atomic_load(&nrec) < n; i++)
		sleep_us(1000);
	return atomic_load(&nrec);
}

int main(void)
{
	gp_marker_cuda_t cu = {ctx_get, ctx_set,    ev_create,    ev_record,
	                       ev_sync, ev_elapsed, is_capturing, exchange_mode};
	gp_marker_cuda_t bad = cu;
	bad.ev_sync = NULL;
	ok(gp_marker_enable_with(&bad, emit, now, 7) < 0,
	   "a driver without a function: no markers");
	ok(gp_marker_enable_with(&cu, emit, now, 7) == 0, "markers enabled");

	/* 300 steps of 200 us: the waiter looks on its own */
	uint64_t t0 = now();
	for (int i = 0; i < 300; i++) {
		gp_marker_step_end(t0 + (uint64_t)i);
		sleep_us(200);
	}
	int n = wait_recs(300), order = 0, chained = 0;
	for (int i = 0; i < n; i++) {
		order += recs[i].c == (uint64_t)i && recs[i].ts == t0 + (uint64_t)i;
		chained += recs[i].d == 1 && recs[i].a == 1500000;
	}
	ok(n == 300 && order == 300, "300 step ends: 300 markers, in order (%d, %d in order)", n,
	   order);
	ok(chained == 299, "each after the first carries the GPU time since the one before (%d)",
	   chained);
	int p = atomic_load(&posts);
	ok(p <= 2,
	   "the program's thread woke the waiter %d times in 300 steps (a post a step before)", p);

	/* idle for more than a second: the waiter sleeps until the next marker posts */
	sleep_us(1300000);
	p = atomic_load(&posts);
	uint64_t t1 = now();
	gp_marker_step_end(t1);
	n = wait_recs(301);
	uint64_t took = now() - t1;
	ok(n == 301 && recs[300].ts == t1 && atomic_load(&posts) == p + 1,
	   "after an idle second a marker wakes the waiter once, taken in %.1f ms", took / 1e6);

	/* 200 step ends back to back, faster than the waiter looks: every one is accounted
	 * for (placed, or said not placed: d = 2), a post only when half the slots wait */
	p = atomic_load(&posts);
	for (int i = 0; i < 200; i++) {
		gp_marker_step_end(t1 + 1 + (uint64_t)i);
		if (i % 16 == 15)
			sleep_us(50);
	}
	n = wait_recs(501);
	int placed = 0, dropped = 0;
	for (int i = 301; i < n; i++) {
		placed += recs[i].d != 2;
		dropped += recs[i].d == 2;
	}
	int fast_posts = atomic_load(&posts) - p;
	ok(n == 501, "200 quick step ends: 200 records (%d placed, %d not placed)", placed,
	   dropped);
	ok(fast_posts <= 200 / 32 + 2, "%d posts for 200 quick markers", fast_posts);

	/* a stream being captured into a graph: no event recorded, no record */
	atomic_store(&capturing_now, 1);
	int r0 = atomic_load(&records), n0 = atomic_load(&nrec);
	gp_marker_step_end(now());
	sleep_us(20000);
	ok(atomic_load(&records) == r0 && atomic_load(&nrec) == n0,
	   "while a stream is captured: no marker");

	/* a CUPTI finalize at the exit of this thread's call (gp_marker_capture_begin): not
	 * while a graph is captured that its streams see, its capture mode relaxed for it
	 * and put back after */
	int mode = 5;
	ok(!gp_marker_capture_begin(&mode) && mode == -1 &&
	       thread_mode == CU_STREAM_CAPTURE_MODE_GLOBAL,
	   "no finalize while this thread's stream is captured");
	atomic_store(&capturing_now, 0);
	atomic_store(&implicit_capture, true);
	ok(!gp_marker_capture_begin(&mode), "... nor while another thread captures a blocking "
	                                    "stream (the legacy stream's query refused)");
	atomic_store(&implicit_capture, false);
	bool may = gp_marker_capture_begin(&mode);
	ok(may && mode == CU_STREAM_CAPTURE_MODE_GLOBAL &&
	       thread_mode == CU_STREAM_CAPTURE_MODE_RELAXED,
	   "otherwise a finalize may run, the thread relaxed for it (mode %d)", mode);
	gp_marker_capture_end(mode);
	ok(thread_mode == CU_STREAM_CAPTURE_MODE_GLOBAL, "... and its mode put back after");
	return done_testing();
}
