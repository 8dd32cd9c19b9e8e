/* The CUPTI module's detach after a window that no step marker follows (an inference loop,
 * generate() calls: windows by cost, no optimizer step), with GPUPROF_CUPTI_DETACH_POLL_MS
 * on as it ships (100 ms): every poll period the worker flushes and looks whether every
 * launch of the window has its kernel record, and detaches then, at one of the program's
 * own calls; a launch still without its record holds the detach (the record's c counts
 * those looks), and nothing is detached before a period has passed. Without the poll a
 * short job outlasted its 10 s wait with CUPTI attached (session 29: every later launch
 * paid ~1.5 us). Its own program: the module's state is the process's. No GPU. */
#include "config.h"
#include "cupti_int.h"
#include "modes.h"
#include "tap.h"

#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FAKE_CUPTI_EVENTS
#include "fake_cupti.h"

static void *program(void *arg) /* the program's thread: a launch every millisecond */
{
	(void)arg;
	for (;;) {
		program_call();
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	}
	return NULL;
}

static void count_drop(unsigned c, uint64_t n)
{
	(void)c, (void)n;
}
/* the nth detach record (1-based): its looks for kernel records (c) and for a call (d);
 * waited for up to 3 s: the worker writes it after the finalize, the re-attach and its
 * unlock, later than the fake's counters move */
static bool nth_detach(int n, gp_event_t *out)
{
	for (int tries = 0; tries < 300; tries++) {
		int k = 0;
		pthread_mutex_lock(&ev_mu);
		for (int i = 0; i < nev && k < n; i++)
			if (evs[i].type == GP_EV_OVERHEAD && evs[i].b == GP_OVERHEAD_DETACH &&
			    ++k == n)
				*out = evs[i];
		pthread_mutex_unlock(&ev_mu);
		if (k == n)
			return true;
		nanosleep(&(struct timespec){0, 10000000}, NULL);
	}
	return false;
}
/* a CUDA graph being captured, as the program's thread sees it (capture_begin), and the
 * capture modes put back after a finalize (capture_end) */
static _Atomic bool graph_capturing;
static _Atomic int capture_asks, capture_restored = -1;
static bool capture_begin(int *mode)
{
	atomic_fetch_add(&capture_asks, 1);
	*mode = 0; /* CU_STREAM_CAPTURE_MODE_GLOBAL, the thread's before */
	return !atomic_load(&graph_capturing);
}
static void capture_end(int mode)
{
	atomic_store(&capture_restored, mode);
}
/* kernel and launch records for the next flush (the worker's flush reads them) */
static void deliver(int kernels, int launches)
{
	pthread_mutex_lock(&F.mu);
	F.pending += kernels;
	F.pending_launches += launches;
	pthread_mutex_unlock(&F.mu);
}
/* a window switched, once the worker has let go of the module's lock (a capture call
 * that finds it held changes nothing and says so) */
static unsigned capture(unsigned want)
{
	unsigned got = 0;
	for (int tries = 0; tries < 300 && (got = gp_cupti_capture(want)) != want; tries++)
		nanosleep(&(struct timespec){0, 10000000}, NULL);
	return got;
}
static int count(unsigned type)
{
	int n = 0;
	pthread_mutex_lock(&ev_mu);
	for (int i = 0; i < nev; i++)
		n += evs[i].type == type;
	pthread_mutex_unlock(&ev_mu);
	return n;
}

int main(void)
{
	const unsigned CUDA = GP_MODE_CUDA, MEM = GP_MODE_MEM;
	static gp_inject_api_t api;
	api = fake_api(CUDA | MEM, emit, intern, count_drop);
	api.detach_poll_ms = 100;     /* the shipped default (common/settings.c) */
	api.detach_markerless = true; /* a plain CUDA program's (cuda.c) */
	api.capture_begin = capture_begin;
	api.capture_end = capture_end;
	/* no step marker ever completes: gpu_done stays 0 */
	char why[128] = "";
	pthread_t prog;
	pthread_create(&prog, NULL, program, NULL);
	ok(gp_cupti_start(&api, why, sizeof(why)) == 0, "started (%s)", why);

	/* the window's three launches, two of their kernels recorded so far */
	deliver(2, 3);
	uint64_t t0 = now();
	ok(gp_cupti_capture(MEM) == MEM, "the window ends, no marker placed");
	nap_ms(700);
	ok(F.finalized == 0, "a launch without its kernel record holds the detach (700 ms)");
	ok(count(GP_EV_KERNEL) == 2 && count(GP_EV_API) == 3,
	   "the looks flushed the window's records (%d kernels, %d launches)", count(GP_EV_KERNEL),
	   count(GP_EV_API));
	deliver(1, 0); /* the third kernel's record comes */
	ok(wait_for(&F.finalized, 1), "detached once every launch has its kernel record");
	gp_event_t d = {0};
	bool got = nth_detach(1, &d); /* and the worker done with this detach */
	ok(got && d.c >= 3 && d.c <= 9,
	   "its record counts the looks that found a record missing (c=%llu: one a 100 ms period)",
	   (unsigned long long)d.c);
	ok(pthread_equal(F.finalized_on, prog),
	   "finalized at the program's own call, on its thread");

	/* a window whose kernels are all in at its end: detached after one period, not 10 s */
	ok(capture(CUDA | MEM) == (CUDA | MEM), "the next window");
	deliver(4, 4);
	t0 = now();
	capture(MEM);
	ok(wait_for(&F.finalized, 2), "detached after a window with no marker");
	uint64_t took = now() - t0;
	ok(took >= 90000000ull && took < 1500000000ull,
	   "one poll period after the window's end or a little more (%.0f ms; the wait without "
	   "the poll: 10 s)",
	   took / 1e6);
	got = nth_detach(2, &d);
	ok(got && d.c == 0, "no look found a record missing (c=%llu)", (unsigned long long)d.c);

	/* a window with launches and none of its kernels yet: never detached within the
	 * periods, whatever the looks */
	capture(CUDA | MEM);
	deliver(0, 2);
	capture(MEM);
	nap_ms(500);
	ok(F.finalized == 2, "no detach while none of the window's kernels has come");

	/* the kernels come while the program captures a CUDA graph: nothing finalized at its
	 * calls meanwhile (a finalize's calls could invalidate the capture), once it ends */
	atomic_store(&graph_capturing, true);
	int asks = atomic_load(&capture_asks);
	deliver(2, 0);
	nap_ms(1500);
	ok(F.finalized == 2 && atomic_load(&capture_asks) > asks,
	   "no finalize while a graph is captured (asked %d times)",
	   atomic_load(&capture_asks) - asks);
	int off = 0;
	for (int i = 0; i < 20; i++, nap_ms(10))
		off += !fake_armed();
	ok(off >= 15, "the detach's callbacks off again between its tries (%d of 20 looks)", off);
	atomic_store(&graph_capturing, false);
	ok(wait_for(&F.finalized, 3), "finalized once the capture has ended");
	got = nth_detach(3, &d);
	ok(got && d.d >= 1, "its record counts the calls it let pass (d=%llu)",
	   (unsigned long long)d.d);
	ok(atomic_load(&capture_restored) == 0, "the thread's capture mode put back after it");

	/* PyTorch (detach_markerless off): a window no step marker follows is never detached,
	 * neither by the poll nor after the 10 s wait; such detaches corrupted the heap */
	api.detach_markerless = false;
	int fin = F.finalize_calls;
	capture(CUDA | MEM);
	deliver(4, 4);
	capture(MEM);
	nap_ms(600);
	ok(F.finalize_calls == fin && !fake_armed(),
	   "PyTorch: no detach after a window no marker follows (%d tries in 600 ms)",
	   F.finalize_calls - fin);
	gp_cupti_flush();
	return done_testing();
}
