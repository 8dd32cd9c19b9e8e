/* The CUPTI module's switching between capture windows (agent/inject/cupti.c) against a
 * CUPTI of our own making: kinds switched with the windows; CUPTI detached after a window
 * only once the GPU has finished its work, at the exit of one of the program's own API
 * calls on the program's thread (never the module's own threads), with the light parts
 * attached again and the correlation ids of the next attach kept apart; a program that
 * makes no call leaves CUPTI attached until it does; nothing switched or detached while the
 * program's own profiler runs or another tool holds CUPTI's subscriber; the buffers handed back
 * when a profiler begins and taken back when it ends, none of ours handed out while it takes CUPTI
 * over, and a buffer of its own completed to us afterwards left alone. No GPU, no libcupti. */
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

/* the program's thread: a call every millisecond while program_calls */
static _Atomic bool program_calls = true;
static void *program(void *arg)
{
	(void)arg;
	for (;;) {
		if (atomic_load(&program_calls))
			program_call();
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	}
	return NULL;
}

/* ---- the injected library's side ---- */
static _Atomic bool profiler_runs;

static _Atomic uint64_t refused; /* GP_LOSS_CUPTI_REFUSED, as the ring adds it */
static void count_drop(unsigned c, uint64_t n)
{
	if (c == GP_LOSS_CUPTI_REFUSED)
		atomic_fetch_add(&refused, n);
}
/* the program's profiler's own buffer callbacks (kineto's) */
static uint8_t kineto_buf[4096] __attribute__((aligned(8)));
static void CUPTIAPI kineto_req(uint8_t **b, size_t *size, size_t *max)
{
	*b = kineto_buf, *size = sizeof(kineto_buf), *max = 0;
}
static void CUPTIAPI kineto_done(CUcontext c, uint32_t s, uint8_t *b, size_t size, size_t valid)
{
	(void)c, (void)s, (void)b, (void)size, (void)valid;
}
static bool foreign(void)
{
	return atomic_load(&profiler_runs);
}
/* the PyTorch integration's work on the allocator (gpuprof_fw_busy) */
static _Atomic bool allocator_busy;
static bool busy(void)
{
	return atomic_load(&allocator_busy);
}
/* the windows by cost's looks (capture.c): the cost measured so far, and the exit's */
static _Atomic uint64_t tick_measured;
static _Atomic int exit_ticks;
static void tick(uint64_t t, uint64_t k, uint64_t measured, bool at_exit)
{
	(void)t, (void)k;
	atomic_store(&tick_measured, measured);
	if (at_exit)
		atomic_fetch_add(&exit_ticks, 1);
}

/* kernels (their correlations) and detach records emitted so far */
static int kernels(uint64_t *corr, int max)
{
	int n = 0;
	pthread_mutex_lock(&ev_mu);
	for (int i = 0; i < nev; i++)
		if (evs[i].type == GP_EV_KERNEL && n < max)
			corr[n++] = evs[i].c;
	pthread_mutex_unlock(&ev_mu);
	return n;
}
static int api_records(void)
{
	int n = 0;
	pthread_mutex_lock(&ev_mu);
	for (int i = 0; i < nev; i++)
		n += evs[i].type == GP_EV_API;
	pthread_mutex_unlock(&ev_mu);
	return n;
}
static int detach_records(void)
{
	int n = 0;
	pthread_mutex_lock(&ev_mu);
	for (int i = 0; i < nev; i++)
		n += evs[i].type == GP_EV_OVERHEAD && evs[i].b == GP_OVERHEAD_DETACH;
	pthread_mutex_unlock(&ev_mu);
	return n;
}

int main(void)
{
	const unsigned CUDA = GP_MODE_CUDA, MEM = GP_MODE_MEM;
	static gp_inject_api_t api; /* the module reads it until the process exits */
	/* a framework's process: the callback slot left free; flushes come from the detach */
	api = fake_api(CUDA | MEM, emit, intern, count_drop);
	api.foreign = foreign;
	api.busy = busy;
	api.tick = tick;
	char why[128] = "";
	pthread_t prog;
	pthread_create(&prog, NULL, program, NULL);
	ok(gp_cupti_start(&api, why, sizeof(why)) == 0, "started (%s)", why);
	ok(F.kind[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL] && F.kind[CUPTI_ACTIVITY_KIND_MEMORY2] &&
	       F.kind[CUPTI_ACTIVITY_KIND_RUNTIME],
	   "a window from the start: kernels, API calls and memory enabled");
	ok(F.subscribed == 0, "no subscriber taken in a framework's process");

	/* the window ends: kinds off; no detach before the GPU has finished its work */
	F.pending = 2;
	ok(gp_cupti_capture(MEM) == MEM, "window off");
	ok(!F.kind[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL] && !F.kind[CUPTI_ACTIVITY_KIND_RUNTIME] &&
	       F.kind[CUPTI_ACTIVITY_KIND_MEMORY2],
	   "kernels and API calls off, memory on");
	nap_ms(150);
	ok(F.finalized == 0, "no detach while the GPU is still on the window's work");

	/* the step markers say the GPU is past the window's end: detached at once (the window's
	 * end woke the worker: it does not sleep out its 1.5 s flush period), light parts back */
	uint64_t t0 = now();
	atomic_store(&gpu_done_ts, t0);
	ok(wait_for(&F.finalized, 1), "detached once the GPU passed the window's end");
	ok(now() - t0 < 500000000ull, "within %.0f ms, not a flush period later",
	   (now() - t0) / 1e6);
	wait_for(&F.registered, 2); /* the re-attach follows the finalize */
	uint64_t c[8];
	int n = kernels(c, 8);
	ok(n == 2 && c[0] == (3ull << 32 | 1) && c[1] == (3ull << 32 | 2),
	   "the window's kernels delivered, under generation 3 (%d)", n);
	ok(F.registered == 2 && F.kind[CUPTI_ACTIVITY_KIND_MEMORY2] &&
	       !F.kind[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL],
	   "buffers registered again and memory records on (registered %d)", F.registered);
	ok(F.subscribed == 0, "the subscriber taken for the detach is gone with it");
	ok(pthread_equal(F.finalized_on, prog), "finalized at the exit of the program's own call, "
	                                        "on its thread");
	ok(F.finalized_at_launch == 0,
	   "... a synchronising one (cudaStreamSynchronize), never a launch's exit, where a "
	   "library's call may be under way (%d at a launch)",
	   (int)F.finalized_at_launch);
	ok(api_records() == 0, "the program's calls while every callback was on: none recorded");
	ok(detach_records() == 1, "the detach's own cost recorded (GP_OVERHEAD_DETACH)");
	for (int i = 0; i < 100 && atomic_load(&tick_measured) < 3000000; i++)
		nap_ms(10);
	ok(atomic_load(&tick_measured) >= 3000000,
	   "... and counted in the cost measured that the windows charge (%.1f ms)",
	   atomic_load(&tick_measured) / 1e6);

	/* the next window: kinds on again; CUPTI counts correlations from 1 again, the ids stay
	 * apart from the first attach's */
	ok(gp_cupti_capture(CUDA | MEM) == (CUDA | MEM) &&
	       F.kind[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL],
	   "the next window enables kernels again");
	F.pending = 1; /* a kernel of this window, delivered at the next detach's flush */

	/* torch.profiler runs: nothing switched, buffers handed over, taken back after */
	uint8_t *held = NULL, *b = (uint8_t *)&F;
	size_t size = 1, max;
	F.req(&held, &size, &max); /* one that CUPTI holds on to, through the session */
	int flushes = F.forced_flushes;
	atomic_store(&profiler_runs, true);
	gp_cupti_hand_over(1);
	ok(F.forced_flushes == flushes + 2, "a profiler beginning gets every buffer of ours back");
	F.req(&b, &size, &max);
	ok(b == NULL && size == 0 && refused == 1,
	   "none of ours handed out before the profiler's callbacks are registered");
	cuptiActivityRegisterCallbacks(kineto_req, kineto_done);
	int regs = F.registered;
	ok(gp_cupti_capture(MEM) == (CUDA | MEM) && F.kind[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL],
	   "no window switched while the program's profiler runs");
	atomic_store(&profiler_runs, false);
	gp_cupti_hand_over(0);
	ok(F.registered == regs + 1, "ours registered again once it has ended");
	ok(refused == 2, "the buffer it was completed counted lost (%llu)",
	   (unsigned long long)refused);
	/* one of its buffers, with two kernels of after its session, completed to us */
	int kbefore = kernels(c, 8);
	CUpti_ActivityKernel10 *kk = (void *)kineto_buf;
	for (int i = 0; i < 2; i++) {
		memset(&kk[i], 0, sizeof(kk[i]));
		kk[i].kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
		kk[i].start = 3000, kk[i].end = 4000, kk[i].name = "k";
		kk[i].correlationId = 900 + i;
	}
	F.done(NULL, 0, kineto_buf, sizeof(kineto_buf), 2 * sizeof(*kk)); /* a free() aborts */
	ok(kernels(c, 8) == kbefore + 2, "a profiler's buffer completed to us: its records read, "
	                                 "the buffer left to its owner");
	F.done(NULL, 0, held, size, 0);
	ok(refused == 1, "one of ours that comes back late is read and freed, not lost");
	b = NULL;
	F.req(&b, &size, &max);
	ok(b != NULL && b != kineto_buf, "and ours are handed out again");
	F.done(NULL, 0, b, size, 0);

	/* a profiler's end whose hand-over missed the lock: taken back at the next chance */
	atomic_store(&profiler_runs, true);
	gp_cupti_hand_over(1);
	cuptiActivityRegisterCallbacks(kineto_req, kineto_done);
	regs = F.registered;
	atomic_store(&profiler_runs, false); /* and no gp_cupti_hand_over(0) */
	gp_cupti_capture(CUDA | MEM);
	for (int i = 0; i < 100 && F.registered == regs; i++)
		nap_ms(10);
	ok(F.registered == regs + 1 && F.req != kineto_req,
	   "a missed end of the profiler is taken back at the next step");

	/* a profiler that never registers callbacks of its own (a CPU-only kineto): our
	 * buffers refused for a second at most */
	atomic_store(&profiler_runs, true);
	gp_cupti_hand_over(1);
	b = (uint8_t *)&F;
	F.req(&b, &size, &max);
	ok(b == NULL, "refused while the profiler takes CUPTI over");
	nap_ms(1100);
	F.req(&b, &size, &max);
	ok(b != NULL, "given again once it has had a second to register its own");
	F.done(NULL, 0, b, size, 0);
	atomic_store(&profiler_runs, false);
	gp_cupti_hand_over(0);
	ok(gp_cupti_capture(MEM) == MEM && !F.kind[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL],
	   "then the window switches off");

	/* a detach waits while the profiler runs again */
	atomic_store(&profiler_runs, true);
	atomic_store(&gpu_done_ts, now() + 1000000000000ull);
	nap_ms(150);
	ok(F.finalized == 1, "no detach while the program's profiler runs");
	atomic_store(&profiler_runs, false);
	ok(wait_for(&F.finalized, 2), "detached once it has ended");
	wait_for(&F.registered, 9);
	n = kernels(c, 8);
	ok(n == 5 && c[4] != c[0] && (uint32_t)c[4] == 1 && ((c[4] >> 32) & 0xffff) == 3,
	   "the second attach's first kernel: correlation 0x%llx apart from the first "
	   "attach's 0x%llx",
	   (unsigned long long)(n == 5 ? c[4] : 0), (unsigned long long)c[0]);

	/* another tool holds the subscriber (kineto keeps it from its first session on): the
	 * windows go on, but nothing is detached */
	F.subscribed = 2;
	ok(gp_cupti_capture(CUDA | MEM) == (CUDA | MEM) &&
	       F.kind[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL],
	   "a window begins while another tool holds CUPTI's subscriber");
	ok(gp_cupti_capture(MEM) == MEM, "and ends");
	atomic_store(&gpu_done_ts, now() + 1000000000000ull);
	nap_ms(150);
	ok(F.finalize_calls == 2 && F.subscribed == 2, "no detach: the slot is the tool's");
	F.subscribed = 0;
	gp_cupti_capture(CUDA | MEM);
	gp_cupti_capture(MEM);
	ok(wait_for(&F.finalized, 3), "the next window's end detaches, the slot free again");
	wait_for(&F.registered, 10);

	/* a program that makes no API call for a while (between steps): nothing finalized,
	 * every callback off again and the subscriber given back; detached at a later call */
	atomic_store(&program_calls, false);
	gp_cupti_capture(CUDA | MEM);
	gp_cupti_capture(MEM);
	nap_ms(800);
	ok(F.finalized == 3 && !fake_armed() && F.subscribed == 0,
	   "no call of the program's: nothing finalized, the callbacks and subscriber given back");
	atomic_store(&program_calls, true);
	ok(wait_for(&F.finalized, 4), "detached at one of its calls once it makes them again");
	wait_for(&F.registered, 11);

	/* the program's profiler begins while a detach waits for one of its calls (the worker
	 * holds the lock): the detach is called off at once, the hand-over is not held up, and
	 * nothing is finalized under the profiler; once it has ended, the detach comes */
	atomic_store(&program_calls, false);
	gp_cupti_capture(CUDA | MEM);
	gp_cupti_capture(MEM);
	for (int i = 0; i < 200 && !fake_armed(); i++)
		nap_ms(1); /* armed: every callback on, waiting for a call */
	int fl = F.forced_flushes;
	uint64_t t1 = now();
	atomic_store(&profiler_runs, true);
	gp_cupti_hand_over(1);
	uint64_t took = now() - t1;
	ok(F.forced_flushes >= fl + 2 && took < 60000000ull,
	   "a profiler beginning during a detach's wait: handed over at once (%.1f ms)",
	   took / 1e6);
	cuptiActivityRegisterCallbacks(kineto_req, kineto_done);
	atomic_store(&program_calls, true);
	nap_ms(300);
	ok(F.finalized == 4 && !fake_armed(),
	   "nothing finalized while it runs, the callbacks off again");
	atomic_store(&profiler_runs, false);
	gp_cupti_hand_over(0);
	ok(wait_for(&F.finalized, 5), "detached once it has ended");
	wait_for(&F.registered, 14);

	/* the integration works on the allocator (its snapshot, its history switched): no
	 * detach begins meanwhile, and one armed when it begins is called off at once
	 * (gp_cupti_quiesce); it comes once the work is done. 3 of 10 step-less PyTorch runs
	 * aborted where a finalize fell inside the history's end (session 30, H100) */
	atomic_store(&allocator_busy, true);
	gp_cupti_capture(CUDA | MEM);
	gp_cupti_capture(MEM);
	atomic_store(&gpu_done_ts, now() + 1000000000000ull);
	nap_ms(200);
	ok(F.finalized == 5 && !fake_armed(), "no detach begins while the allocator work runs");
	atomic_store(&allocator_busy, false);
	ok(wait_for(&F.finalized, 6), "detached once it is done");
	wait_for(&F.registered, 15);
	atomic_store(&program_calls, false); /* the detach armed, waiting for a call */
	gp_cupti_capture(CUDA | MEM);
	gp_cupti_capture(MEM);
	for (int i = 0; i < 300 && !fake_armed(); i++)
		nap_ms(1);
	bool armed = fake_armed();
	uint64_t tq = now();
	atomic_store(&allocator_busy, true); /* what gpuprof_fw_busy(1) does: count, then */
	gp_cupti_quiesce();
	uint64_t quiesced = now() - tq;
	atomic_store(&program_calls, true);
	nap_ms(300);
	ok(armed && quiesced < 60000000ull && F.finalized == 6 && !fake_armed(),
	   "an armed detach called off when the allocator work begins (%.1f ms), nothing "
	   "finalized beside it",
	   quiesced / 1e6);
	atomic_store(&allocator_busy, false);
	ok(wait_for(&F.finalized, 7), "detached once it is done");
	wait_for(&F.registered, 16);

	/* a finalize that fails: attached from then on, the detach's subscriber given back */
	F.fail_finalize = true;
	gp_cupti_capture(CUDA | MEM);
	gp_cupti_capture(MEM);
	ok(wait_for(&F.finalize_calls, 8), "the next detach tries");
	for (int i = 0; i < 300 && (F.subscribed || fake_armed()); i++)
		nap_ms(10); /* the failed path gives the subscriber back */
	ok(F.finalized == 7 && F.subscribed == 0 && !fake_armed(),
	   "a failed finalize leaves CUPTI attached, the subscriber and callback given back");
	gp_cupti_capture(CUDA | MEM);
	gp_cupti_capture(MEM);
	nap_ms(150);
	ok(F.finalize_calls == 8, "and no detach is tried again");
	ok(gp_cupti_capture(CUDA | MEM) == (CUDA | MEM), "windows still switch");

	/* the final flush: nothing of the worker's after it */
	int looks = atomic_load(&exit_ticks);
	gp_cupti_flush();
	ok(looks == 0 && atomic_load(&exit_ticks) == 1,
	   "the windows' last look comes after the final flush (a window open at exit)");
	pthread_mutex_lock(&ev_mu);
	int before = nev;
	pthread_mutex_unlock(&ev_mu);
	F.pending = 1;
	nap_ms(100);
	ok(nev == before, "no record after the final flush (%d, %d)", before, nev);
	return done_testing();
}
