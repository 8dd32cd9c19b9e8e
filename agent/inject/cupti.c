/* libgpuprof-cupti: CUPTI activity and callbacks for libgpuprof-inject, loaded only when
 * cuda or mem capture is asked for, so NVTX-only processes never map libcupti.
 * Buffers: 8 MiB, at most 32 outstanding (kineto/Caliper practice); the completion
 * callback only pushes the buffer on a lock-free list; one processing thread flushes
 * every 200 ms (CUPTI delivers nothing until a flush) and turns records into events.
 * The parts of the module: cupti_int.h.
 * Locks: flush_lock serialises process_all (the worker, a context's destruction and the
 * final flush); cupti_lock serialises every change of CUPTI's state (switching kinds, the
 * worker's flushes, the detach between windows): the application's threads only ever
 * try-lock it, and retry at the next step; pyframes.c's cache lock is only ever
 * try-locked (the frame walker never waits). Everything else shared is atomic.
 *
 * Detached between windows (gp_inject_api_t.detach): once CUPTI has traced kernels, every
 * later launch costs the host about 1.5 us more (H200, CUDA 13.0, bench/cupti_floor.cu),
 * whether the kinds are disabled or not; only cuptiFinalize gives that back. So after a
 * window, once the step markers say the GPU has finished the window's work, the worker
 * flushes, subscribes (in a framework process only if the slot is free: a running
 * torch.profiler or jax.profiler holds it, and then nothing is detached), and enables every
 * runtime and driver callback: cuptiFinalize runs at the exit of the program's next API
 * call, on its thread, where NVIDIA's cupti_finalize sample and kineto's TEARDOWN_CUPTI
 * call it. Only after sampled windows: after a steps= window a detach crashed PyTorch
 * wherever it finalized (cuda.c, bench/results/performance-history.md). The light parts
 * (buffers, memory records, allocation callbacks) are attached again at once (they cost
 * a launch nothing measurable); the next window only enables the kinds again. CUPTI's
 * correlation ids may start again after a re-attach: each attach has its epoch in the
 * ids' top bits. */
#include "config.h"
#include "costwin.h"
#include "cupti_int.h"
#include "modes.h"
#include "strhash.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BUF_SIZE            (8u << 20)
#define BUF_MAX_OUTSTANDING 32

typedef struct buf_node {
	struct buf_node *next;
	uint8_t *buf;
	size_t valid;
} buf_node_t;

static _Atomic(buf_node_t *) completed;
static _Atomic int outstanding;
static _Atomic int stop;
static pthread_t worker;
static CUpti_SubscriberHandle subscriber;
static bool have_sub; /* we hold CUPTI's callback subscriber */
static bool api_captured(uint64_t ts);
/* the translation of records: process_all, and a foreign buffer's (buffer_completed) */
static pthread_mutex_t flush_lock = PTHREAD_MUTEX_INITIALIZER;
/* recursive: cuptiFinalize, called with it held, may call back into this module */
static pthread_mutex_t cupti_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;

static uint64_t CUPTIAPI timestamp(void)
{
	return gp_cu_api->now();
}

/* CUPTI accepts a NULL buffer (it drops the records and counts them) from API version
 * 27 on; older ones are always given one, whatever the bound on outstanding buffers. */
static bool may_refuse;

/* The buffers CUPTI holds of ours: a profiler of the program's that registers its own
 * callbacks is completed the ones CUPTI had, and drops them; once it has gone, those
 * still listed here after a forced flush are forgotten (forget_lost) into gone[], where a
 * late one is still known as ours (the oldest entry makes room: kineto keeps, and never
 * frees, a buffer it does not know, so most entries there are dead). CUPTI may as well
 * complete one of the profiler's buffers to us once ours are registered again: neither
 * table has it; its records are read where they are and the buffer is left to its owner
 * (a free() here would corrupt the program's heap). */
#define OURS_MAX (BUF_MAX_OUTSTANDING + 8)
static _Atomic(uint8_t *) ours[OURS_MAX], gone[OURS_MAX];
static unsigned gone_next; /* the oldest entry of gone[] when it is full (cupti_lock) */

static bool table_put(_Atomic(uint8_t *) *t, uint8_t *b)
{
	for (size_t i = 0; i < OURS_MAX; i++) {
		uint8_t *z = NULL;
		if (atomic_compare_exchange_strong(&t[i], &z, b))
			return true;
	}
	return false;
}

static bool table_take(_Atomic(uint8_t *) *t, uint8_t *b)
{
	for (size_t i = 0; i < OURS_MAX; i++) {
		uint8_t *x = b;
		if (atomic_compare_exchange_strong(&t[i], &x, NULL))
			return true;
	}
	return false;
}

static void forget_lost(void)
{
	for (size_t i = 0; i < OURS_MAX; i++) {
		uint8_t *b = atomic_exchange(&ours[i], NULL);
		if (!b)
			continue;
		atomic_fetch_sub(&outstanding, 1); /* kineto keeps a buffer it did not know */
		gp_cu_api->count_drop(GP_LOSS_CUPTI_REFUSED, 1);
		if (!table_put(gone, b)) { /* full: the oldest is forgotten for good */
			atomic_store(&gone[gone_next], b);
			gone_next = (gone_next + 1) % OURS_MAX;
		}
	}
}

/* From the hand-over of CUPTI to a profiler of the program's until it has its own buffer
 * callbacks: no buffer of ours, or CUPTI fills the one it asks for now for the whole of
 * the profiler's session and completes it to the profiler, which drops it (H200,
 * torch.profiler over 40 steps: one thread's launches and kernels, 1 480 of 2 920,
 * bench/gpu-between-windows.sh). What CUPTI records meanwhile it drops and counts.
 * handing_over holds the hand-over's start: a profiler that never registers callbacks of
 * its own (a CPU-only kineto) leaves us refusing HANDING_OVER_NS at most; requesting
 * counts the requests in progress, which the hand-over waits out before its last flush. */
#define HANDING_OVER_NS (1000ull * 1000000ull)
static _Atomic uint64_t handing_over;
static _Atomic int requesting;

static bool refusing(void)
{
	uint64_t t = atomic_load(&handing_over); /* seq_cst: against the hand-over's store */
	return t && gp_cu_api->now() - t < HANDING_OVER_NS;
}

static void buffer_request(uint8_t **buffer, size_t *size);

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *maxRecords)
{
	*maxRecords = 0;
	atomic_fetch_add(&requesting, 1);
	buffer_request(buffer, size);
	atomic_fetch_sub(&requesting, 1);
}

static void buffer_request(uint8_t **buffer, size_t *size)
{
	*buffer = NULL;
	*size = 0;
	if (may_refuse && refusing()) {
		gp_cu_api->count_drop(GP_LOSS_CUPTI_REFUSED, 1);
		return;
	}
	if (atomic_fetch_add(&outstanding, 1) >= BUF_MAX_OUTSTANDING && may_refuse) {
		atomic_fetch_sub(&outstanding, 1);
		gp_cu_api->count_drop(GP_LOSS_CUPTI_REFUSED, 1); /* the records: CUPTI's count */
		return;
	}
	if (posix_memalign((void **)buffer, 8, BUF_SIZE) != 0) {
		atomic_fetch_sub(&outstanding, 1);
		gp_cu_api->count_drop(GP_LOSS_CUPTI_REFUSED, 1);
		*buffer = NULL;
		return;
	}
	if (!table_put(ours, *buffer)) { /* more than the table: only without may_refuse */
		free(*buffer);
		*buffer = NULL;
		atomic_fetch_sub(&outstanding, 1);
		gp_cu_api->count_drop(GP_LOSS_CUPTI_REFUSED, 1);
		return;
	}
	*size = BUF_SIZE;
}

/* Records CUPTI had to drop for the buffer's context and stream (no buffer to put them
 * in): read at every completed buffer, as CUPTI's documentation asks. */
static void count_cupti_drops(CUcontext ctx, uint32_t streamId)
{
	size_t dropped = 0;
	if (cuptiActivityGetNumDroppedRecords(ctx, streamId, &dropped) == CUPTI_SUCCESS && dropped)
		gp_cu_api->count_drop(GP_LOSS_CUPTI, dropped);
}

static bool discard; /* the CUPTI floor for overhead benchmarks (gp_inject_api_t) */
static void emit_record(const CUpti_Activity *r);

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t streamId, uint8_t *buffer,
                                      size_t size, size_t validSize)
{
	count_cupti_drops(ctx, streamId);
	if (!table_take(ours, buffer)) {
		if (!table_take(gone, buffer)) {
			/* the program's profiler's: its records read here (they came after its
			 * session: ours, or nobody's), the buffer left to its owner */
			CUpti_Activity *rec = NULL;
			pthread_mutex_lock(&flush_lock);
			while (!discard &&
			       cuptiActivityGetNextRecord(buffer, validSize, &rec) == CUPTI_SUCCESS)
				emit_record(rec);
			pthread_mutex_unlock(&flush_lock);
			return;
		}
		/* counted lost when forgotten; it was not: -1, modulo 2^64 */
		gp_cu_api->count_drop(GP_LOSS_CUPTI_REFUSED, UINT64_MAX);
		atomic_fetch_add(&outstanding, 1);
	}
	if (discard) {
		free(buffer);
		atomic_fetch_sub(&outstanding, 1);
		return;
	}
	buf_node_t *n = malloc(sizeof(*n));
	if (!n) {
		free(buffer);
		atomic_fetch_sub(&outstanding, 1);
		return;
	}
	n->buf = buffer;
	n->valid = validSize;
	n->next = atomic_load(&completed);
	while (!atomic_compare_exchange_weak(&completed, &n->next, n))
		;
}

static gp_xlate_t xlate; /* set once by gp_cupti_start */

/* Kernels' launch configurations (records.c) share the string table with the kernel names;
 * a program whose shapes change from call to call (variable batch or sequence lengths) has
 * as many grids as shapes. Past LAUNCH_KEEP distinct ones in a process a kernel's record
 * names none (tid 0), so they never crowd the names out, and is counted as a string lost
 * (GP_LOSS_STRINGS). A set of their hashes, lock-free; a forked child starts with its
 * parent's. */
#define LAUNCH_KEEP 4096
static _Atomic uint64_t launch_seen[2 * LAUNCH_KEEP];
static _Atomic uint32_t launch_kept;

static uint32_t intern_launch(const char *s, size_t len)
{
	uint64_t h = gp_strhash(s, len) | 1; /* 0 marks a free slot */
	uint32_t idx = (uint32_t)h & (2 * LAUNCH_KEEP - 1);
	for (int p = 0; p < 32; p++, idx = (idx + 1) & (2 * LAUNCH_KEEP - 1)) {
		uint64_t v = atomic_load_explicit(&launch_seen[idx], memory_order_relaxed);
		if (v == h)
			return xlate.intern(s, len);
		if (v)
			continue;
		/* read first: a full set's misses do not wrap the count past the bound */
		if (atomic_load_explicit(&launch_kept, memory_order_relaxed) >= LAUNCH_KEEP ||
		    atomic_fetch_add_explicit(&launch_kept, 1, memory_order_relaxed) >= LAUNCH_KEEP)
			break;
		uint64_t zero = 0;
		if (atomic_compare_exchange_strong_explicit(
		        &launch_seen[idx], &zero, h, memory_order_relaxed, memory_order_relaxed) ||
		    zero == h)
			return xlate.intern(s, len);
	}
	/* named none: counted as a name the string table could not hold */
	gp_cu_api->count_drop(GP_LOSS_STRINGS, 1);
	return 0;
}

/* A window's kernel launch calls and the kernel records that came of them: CUPTI writes
 * a kernel's record when it has run, so a detach waits until every launch has one (a
 * graph's launch has several; a failed launch none: DETACH_WAIT_NS then). */
static _Atomic uint64_t win_launches, win_kernels;
/* when the last window ended, while a detach is to follow it (0: none, or a window open) */
static _Atomic uint64_t window_end;
/* Running counts for the windows by cost (gp_inject_api_t.tick): kernels recorded, and
 * what this process measured of tracing's cost: its threads' time in launch calls while
 * traced (CUPTI's added time is inside them), CUPTI's overhead records, detaches. */
static _Atomic uint64_t all_kernels, measured_ns;

/* CUPTI's own work (not the driver's compiler or module loading, which the program pays
 * traced or not) */
static bool tracing_overhead(uint64_t kind)
{
	return kind == CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH ||
	       kind == CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION ||
	       kind == CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE ||
	       kind == CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST;
}

static void emit_record(const CUpti_Activity *r)
{
	gp_event_t e;
	if (gp_cupti_translate(r, &xlate, &e)) {
		if (e.type == GP_EV_KERNEL) {
			atomic_fetch_add_explicit(&win_kernels, 1, memory_order_relaxed);
			atomic_fetch_add_explicit(&all_kernels, 1, memory_order_relaxed);
		} else if (e.type == GP_EV_API && (e.u16 & 0xff) == GP_API_LAUNCH) {
			/* a launch call's own time, at most what the model charges a kernel: a
			 * call that waited for a full launch queue or loaded a module lazily
			 * waited for the program's own work, not for the tracing */
			uint64_t own =
			    e.a < GP_COSTWIN_NS_PER_KERNEL ? e.a : GP_COSTWIN_NS_PER_KERNEL;
			/* a detach waits for the kernels of the calls that ended inside the window:
			 * one still in the driver when the kinds went off may have none */
			uint64_t end = atomic_load(&window_end);
			if (!end || e.ts + e.a <= end)
				atomic_fetch_add_explicit(&win_launches, 1, memory_order_relaxed);
			atomic_fetch_add_explicit(&measured_ns, own, memory_order_relaxed);
		} else if (e.type == GP_EV_OVERHEAD && tracing_overhead(e.b)) {
			atomic_fetch_add_explicit(&measured_ns, e.a, memory_order_relaxed);
		}
		gp_cu_api->emit(&e);
	}
}

static void process_all(void)
{
	buf_node_t *list, *rev = NULL;
	pthread_mutex_lock(&flush_lock);
	list = atomic_exchange(&completed, NULL);
	while (list) { /* oldest first */
		buf_node_t *n = list->next;
		list->next = rev;
		rev = list;
		list = n;
	}
	while (rev) {
		buf_node_t *n = rev->next;
		CUpti_Activity *rec = NULL;
		while (cuptiActivityGetNextRecord(rev->buf, rev->valid, &rec) == CUPTI_SUCCESS)
			emit_record(rec);
		free(rev->buf);
		free(rev);
		atomic_fetch_sub(&outstanding, 1);
		rev = n;
	}
	pthread_mutex_unlock(&flush_lock);
}

/* Flush period: 200 ms while kernels are traced (CUPTI delivers nothing until a flush,
 * and the ring should not see bursts); 1 s when only memory records are collected (they
 * are rare after warm-up, and each flush costs the application; the seed MLP measured
 * +9 % with 200 ms against +3 % with 1 s, inside this machine's +-10 % noise).
 * GPUPROF_CUPTI_FLUSH_MS sets both. */
static long flush_ms = 200, flush_mem_ms = 1000;
static _Atomic unsigned capturing; /* GP_MODE_CUDA | GP_MODE_MEM now on; one writer at a time */

static void maybe_detach(void);
static void settle(void);
static void give_back_sites(void);
static atomic_bool foreign_seen; /* a profiler of the program's took CUPTI's buffers */
/* posted when a window ends (set_capture), so that the worker does not sleep out a flush
 * period first: measured, windows 300 ms apart were detached after one in two or three */
static sem_t wake;
static pid_t owner;    /* the process that started CUPTI: a forked child never touches it */
static pthread_t self; /* the worker, which never finalizes */

/* realtime deadline ms from now, for sem_timedwait and pthread_mutex_timedlock (glibc
 * before 2.30 has no monotonic variant; a clock step only lengthens one wait) */
static struct timespec deadline(long ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000 * 1000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return ts;
}

/* cupti_lock for a thread that must not wait long (the program's, the exit): false when
 * it could not be had in ms */
static bool lock_within(long ms)
{
	struct timespec ts = deadline(ms);
	return pthread_mutex_timedlock(&cupti_lock, &ts) == 0;
}

/* Every flush period: flush, process, windows by time. While a detach waits for the GPU
 * (window_end), it wakes every 10 ms to look, flushing at its usual period only. The
 * periodic flush needs no lock: CUPTI's calls are thread-safe, and the one call that
 * must not overlap a flush, cuptiFinalize, is this thread's own. */
static void *worker_main(void *arg)
{
	uint64_t last = 0;
	__atomic_store_n(&self, pthread_self(), __ATOMIC_RELEASE);
	while (!atomic_load(&stop)) {
		long ms = (capturing & GP_MODE_CUDA) ? flush_ms : flush_mem_ms;
		long nap = atomic_load(&window_end) && ms > 10 ? 10 : ms;
		struct timespec ts = deadline(nap);
		while (sem_timedwait(&wake, &ts) != 0 && errno == EINTR)
			;
		if (atomic_load(&stop))
			break;
		maybe_detach();
		if (gp_sites_spent() && pthread_mutex_trylock(&cupti_lock) == 0) {
			gp_sites_switch(subscriber, have_sub, false); /* the window's cap reached */
			give_back_sites();
			pthread_mutex_unlock(&cupti_lock);
		}
		if (atomic_load(&foreign_seen) && pthread_mutex_trylock(&cupti_lock) == 0) {
			settle();
			pthread_mutex_unlock(&cupti_lock);
		}
		uint64_t now = gp_cu_api->now();
		if (now - last < (uint64_t)ms * 1000000u - 5000000u && atomic_load(&window_end))
			continue;
		last = now;
		cuptiActivityFlushAll(0);
		process_all();
		if (gp_cu_api->tick)
			gp_cu_api->tick(gp_cu_api->now(), atomic_load(&all_kernels),
			                atomic_load(&measured_ns), false);
	}
	return NULL;
}

/* A detach (maybe_detach) turns on the callbacks of the runtime's synchronising calls
 * (finalize_cbids) and asks (finalize_now) for cuptiFinalize at the exit of the first of
 * them the program makes, on that call's thread: CUPTI's own recommendation for a dynamic detach
 * (NVIDIA's cupti_finalize sample) and kineto's TEARDOWN_CUPTI. (Session 15 finalized on
 * our own thread at our own call's exit and suspected that site of its crashes; the same
 * seed runs crashed as often at the program's call, after steps= windows only.)
 * all_domains: those callbacks are on for this alone (the domains were, before session
 * 32), so their entries are no allocation of ours to record. */
enum { FIN_IDLE, FIN_ARMED, FIN_CANCELLED };
/* FIN_*: armed by the worker, taken (back to idle) by the first API exit, cancelled by
 * the program's profiler beginning */
static _Atomic int finalize_now;
static _Atomic int finalize_rc; /* what cuptiFinalize returned; -1: not called */
/* finalize_rc: the call's thread saw a graph being captured and left the finalize to a
 * later call (gp_inject_api_t.capture_begin) */
#define FINALIZE_NOT_NOW (-2)
static _Atomic bool all_domains;                  /* the detach's callbacks on (finalize_cbids) */
static _Atomic uint64_t finalize_t0, finalize_ns; /* when, and how long, the program's
                                                   * thread spent in it */
static sem_t finalized;                           /* posted once cuptiFinalize has returned */

/* The calls whose exit a detach finalizes at: the runtime's synchronising calls, which a
 * program mostly makes itself (PyTorch's .item() and torch.cuda.synchronize(), a CUDA C
 * loop's cudaDeviceSynchronize; a library that links the runtime statically may make them
 * too: cuDNN's algorithm search, NCCL's start-up), not a library's launches and driver
 * calls in the middle of its work. At the exit of whatever call came
 * next, the finalize often fell inside cuBLASLt's own driver calls (cublasLtMatmul ->
 * libcuda -> CUPTI's dispatch), and CUPTI then crashed in that dispatch or corrupted the
 * heap: on the H100, 5 of 7 step-less PyTorch loops without the allocator history, 1 of
 * 5 with it, and 1 of 3 capturing CUDA graphs (bench/gpu-abort.sh, session 32), none of
 * 14 with no detach. A program that never synchronises is never detached (the slower
 * launches of an attached CUPTI rather than a crash). */
static const CUpti_CallbackId finalize_cbids[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaThreadSynchronize_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020,
    /* the same with --default-stream per-thread */
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000,
};

static bool finalize_site(CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
	if (domain != CUPTI_CB_DOMAIN_RUNTIME_API)
		return false;
	for (size_t i = 0; i < sizeof(finalize_cbids) / sizeof(finalize_cbids[0]); i++)
		if (finalize_cbids[i] == cbid)
			return true;
	return false;
}

/* a callback gpuprof enabled for itself (an allocation's stack, cudaProfilerStart/Stop) */
static bool wanted_cbid(CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
	    (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000 ||
	     cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000))
		return true;
	if (!(capturing & GP_MODE_MEM))
		return false;
	uint8_t d = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? GP_CB_RUNTIME : GP_CB_DRIVER;
	for (unsigned i = 0; i < gp_ncbids; i++)
		if (gp_cbids[i].domain == d && gp_cbids[i].cbid == cbid)
			return gp_cbids[i].flags & GP_CB_STACK;
	return false;
}

static void CUPTIAPI on_callback(void *ud, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void *data)
{
	if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
		/* not across a detach (which flushes itself), and never for long */
		if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING && getpid() == owner &&
		    lock_within(200)) {
			cuptiActivityFlushAll(0);
			pthread_mutex_unlock(&cupti_lock);
			process_all();
		}
		return;
	}
	const CUpti_CallbackData *cb = data;
	int armed = FIN_ARMED;
	if (atomic_load_explicit(&all_domains, memory_order_acquire) &&
	    cb->callbackSite == CUPTI_API_EXIT && finalize_site(domain, cbid) &&
	    getpid() == owner &&
	    atomic_load_explicit(&finalize_now, memory_order_relaxed) == FIN_ARMED &&
	    !pthread_equal(pthread_self(), __atomic_load_n(&self, __ATOMIC_ACQUIRE)) &&
	    !(gp_cu_api->own_thread && gp_cu_api->own_thread()) &&
	    !(gp_cu_api->foreign && gp_cu_api->foreign()) &&
	    !(gp_cu_api->busy && gp_cu_api->busy()) &&
	    atomic_compare_exchange_strong(&finalize_now, &armed, FIN_IDLE)) {
		/* taken first: the CUDA calls of the capture check come back here, and find
		 * nothing armed */
		int mode = -1;
		if (gp_cu_api->capture_begin && !gp_cu_api->capture_begin(&mode)) {
			atomic_store(&finalize_rc, FINALIZE_NOT_NOW);
			sem_post(&finalized);
			return;
		}
		uint64_t t0 = gp_cu_api->now();
		atomic_store(&finalize_rc, (int)cuptiFinalize());
		atomic_store(&finalize_ns, gp_cu_api->now() - t0);
		atomic_store(&finalize_t0, t0);
		if (gp_cu_api->capture_end)
			gp_cu_api->capture_end(mode);
		sem_post(&finalized);
		return;
	}
	if (gp_sites_wanted(domain, cbid)) { /* a launch in the first windows (sites.c) */
		gp_sites_callback(domain, cbid, cb, GP_CORR(GP_XGEN(&xlate), cb->correlationId));
		return;
	}
	/* only the callbacks of ours: whole domains may be on for a detach, or have been a
	 * moment ago (a callback already under way when they went off) */
	if (!wanted_cbid(domain, cbid))
		return;
	if (cb->callbackSite != CUPTI_API_ENTER)
		return;
	gp_event_t e = {.type = GP_EV_API,
	                .ts = gp_cu_api->now(),
	                .b = cbid,
	                .c = GP_CORR(GP_XGEN(&xlate), cb->correlationId),
	                .tid = gp_cu_api->tid(),
	                .u8 = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? 1 : 2};
	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
	    (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000 ||
	     cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000)) {
		gp_event_t p = {.type = GP_EV_PROFILER,
		                .ts = e.ts,
		                .a = cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000};
		gp_cu_api->emit(&p);
		if (gp_cu_api->profiler)
			gp_cu_api->profiler((int)p.a);
		return;
	}
	e.d = gp_stack_capture();
	e.u16 = GP_API_ALLOC_STACK;
	gp_cu_api->emit(&e);
}

#define N(a) (sizeof(a) / sizeof(a[0]))

/* Kinds and callbacks of each switchable part. OVERHEAD records CUPTI's own cost
 * (buffer flushes, instrumentation), so the report can say what tracing cost. */
static const CUpti_ActivityKind cuda_kinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,   CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,   CUPTI_ACTIVITY_KIND_OVERHEAD,
};
#define MAX_SWITCH 4096
static uint64_t switch_ts[MAX_SWITCH]; /* cuda switches: time << 1 | on, in order */
static _Atomic unsigned nswitch;
static _Atomic bool switch_full; /* more switches than the table holds: keep later records */

/* Was cuda being captured at time ts (an API record's start)? Binary search for the last
 * switch at or before ts: records arrive by the million, switches are few. */
static bool api_captured(uint64_t ts)
{
	unsigned n = atomic_load(&nswitch), lo = 0, hi = n;
	if (!n)
		return true;
	while (lo < hi) { /* first switch after ts */
		unsigned mid = (lo + hi) / 2;
		if (switch_ts[mid] >> 1 <= ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo == 0 || (lo == n && atomic_load(&switch_full)) || (switch_ts[lo - 1] & 1);
}

/* Memory records and the allocation callbacks (with cupti_lock held). */
static void switch_mem(int en)
{
	(en ? cuptiActivityEnable : cuptiActivityDisable)(CUPTI_ACTIVITY_KIND_MEMORY2);
	for (unsigned i = 0; have_sub && i < gp_ncbids; i++)
		if (gp_cbids[i].flags & GP_CB_STACK)
			cuptiEnableCallback((uint32_t)en, subscriber,
			                    gp_cbids[i].domain == GP_CB_RUNTIME
			                        ? CUPTI_CB_DOMAIN_RUNTIME_API
			                        : CUPTI_CB_DOMAIN_DRIVER_API,
			                    gp_cbids[i].cbid);
}

/* Detaching between windows (the file's comment). window_end: when kernels were last
 * switched off, 0 when there is nothing to detach. */
#define DETACH_WAIT_NS (10ull * 1000000000ull) /* no step marker passed: detach anyway */
/* A program whose steps place no marker (an inference loop, a generate() call: windows by
 * cost) has none to wait for: with GPUPROF_CUPTI_DETACH_POLL_MS the worker looks that often
 * whether every launch of the window has its kernel record (a forced flush each time).
 * Waiting out DETACH_WAIT_NS there leaves CUPTI attached through a short job after its one
 * window (session 29's generate() runs had no detach record); the poll detached 0.1 s
 * after the window on the H100, but 3 of 10 PyTorch runs in mode mem aborted at exit
 * (heap corruption) where the detach fell inside the allocator history's end. With the
 * busy guard (gpuprof_fw_busy: no detach begins, no finalize runs, while the integration
 * works on the allocator) 13 of 13 such runs exited 0 on the H200 (session 31), one of
 * them after a detach that waited 2 looks for the program's call: on by default (100 ms).
 * 0 of 13 bounds the abort rate only below ~21 % (95 %), on two single-process loops; a
 * step-based job detaches at the same point of its start-up by its markers either way. */
static uint64_t detach_poll_ns;
static bool detach_on;
static uint64_t polled_at; /* the worker's last look without a marker (its thread only) */

static void set_capture(unsigned want) /* cupti_lock held */
{
	unsigned on = want & ~capturing, off = capturing & ~want;
	if ((on | off) & GP_MODE_CUDA) {
		int en = !!(on & GP_MODE_CUDA);
		/* A window's end is stamped before its kinds go off: a launch made between the
		 * two had its API record kept and no kernel record (H100: 4 such launches of
		 * 13 301 kept a detach waiting, api_captured and emit_record) */
		uint64_t now = gp_cu_api->now();
		for (size_t i = 0; i < N(cuda_kinds); i++)
			(en ? cuptiActivityEnable : cuptiActivityDisable)(cuda_kinds[i]);
		if (gp_cu_api->api_mode == 1) { /* API calls only while kernels are traced */
			(en ? cuptiActivityEnable
			    : cuptiActivityDisable)(CUPTI_ACTIVITY_KIND_RUNTIME);
			(en ? cuptiActivityEnable
			    : cuptiActivityDisable)(CUPTI_ACTIVITY_KIND_DRIVER);
		}
		/* Per-call API records stay enabled: re-enabled ones never arrived again
		 * (H200, CUDA 13.0, with a callback subscriber), and neither did ones first
		 * enabled mid-run: gp_cupti_start enables them once. Records of calls made
		 * while cuda is off are dropped when they are read (api_captured). */
		unsigned n = atomic_load(&nswitch);
		if (en) /* ... and a beginning after they are on */
			now = gp_cu_api->now();
		if (n < MAX_SWITCH) {
			switch_ts[n] = now << 1 | (uint64_t)en;
			atomic_store(&nswitch, n + 1);
		} else {
			atomic_store(&switch_full, true);
		}
		atomic_store(&window_end, !en && detach_on ? now : 0);
		if (en) { /* the window's launches and kernels, counted afresh */
			atomic_store(&win_launches, 0);
			atomic_store(&win_kernels, 0);
		}
		if (!en && detach_on)
			sem_post(&wake); /* never blocks */
		gp_sites_switch(subscriber, have_sub, en);
		give_back_sites();
	}
	if ((on | off) & GP_MODE_MEM)
		switch_mem(!!(on & GP_MODE_MEM));
	capturing = want;
}

/* A profiler the program runs itself (torch.profiler's kineto) shares CUPTI with us.
 * CUPTI's kinds are the process's, not ours: switching them off at a window's end took
 * every kernel from a torch.profiler running across it (H200: 0 of 2 880;
 * bench/field/profiler_mid.py), and a detach in its session leaves it nothing. So while
 * one runs (the PyTorch integration says so: GP_FW_PROFILER; or another tool holds
 * CUPTI's subscriber) we switch and detach nothing, and the next step tries again. Its
 * buffer callbacks replaced ours: once it has gone, ours are registered again, and the
 * buffers it was handed are forgotten (cupti_lock held). */
static bool foreign_profiler(void)
{
	/* Only the integration's word: kineto keeps CUPTI's subscriber from its first
	 * session on, so a refused subscription says nothing about a session running now */
	if (gp_cu_api->foreign && gp_cu_api->foreign()) {
		foreign_seen = true;
		return true;
	}
	return false;
}

/* The program's profiler has ended: its buffers are flushed (our forced flush hands it
 * what CUPTI still held), the ones of ours it was completed are forgotten, ours are
 * registered again, and the kinds it switched off at its end are switched on again as
 * far as our capture has them (cupti_lock held). */
static void take_back(void)
{
	foreign_seen = false;
	atomic_store(&handing_over, 0);
	cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	forget_lost(); /* what the flush gave back is off the table: the rest went to it */
	cuptiActivityRegisterTimestampCallback(timestamp);
	cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
	if (capturing & GP_MODE_CUDA) {
		for (size_t i = 0; i < N(cuda_kinds); i++)
			cuptiActivityEnable(cuda_kinds[i]);
		if (gp_cu_api->api_mode == 1) {
			cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME);
			cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER);
		}
	}
	if (capturing & GP_MODE_MEM)
		switch_mem(1);
}

/* The program's profiler is about to register its buffer callbacks (begin): hand back
 * every buffer CUPTI holds of ours first. CUPTI goes on filling a buffer it was given, and
 * once the profiler's callbacks are registered that buffer is completed to them, which
 * drop it as unknown: 0 of 2 880 kernels reached a torch.profiler started inside a
 * window. It has ended (!begin): take_back. On the program's thread, so never for long. */
__attribute__((visibility("default"))) void gp_cupti_hand_over(int begin)
{
	if (!gp_cu_api || getpid() != owner)
		return;
	/* a detach waiting for one of the program's calls: off, and the worker woken (it
	 * holds the lock while it waits), so the profiler never starts on a finalized CUPTI */
	int armed = FIN_ARMED;
	if (begin && atomic_compare_exchange_strong(&finalize_now, &armed, FIN_CANCELLED))
		sem_post(&finalized);
	if (!lock_within(100))
		return;
	if (begin) { /* the buffers come back to the list; the worker reads them */
		/* a flush moves the device's records into buffers it may ask for: the second
		 * hands back any asked for during the first or while the refusal began (the
		 * requests in progress are waited out, 10 ms at most), and from then on none is
		 * given */
		cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
		atomic_store(&handing_over, gp_cu_api->now() | 1);
		for (int i = 0; i < 200 && atomic_load(&requesting); i++)
			nanosleep(&(struct timespec){0, 50000}, NULL);
		cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
		foreign_seen = true;
	} else if (foreign_seen) {
		take_back();
	}
	pthread_mutex_unlock(&cupti_lock);
}

/* The integration begins work on PyTorch's allocator (gpuprof_fw_busy, after it raised the
 * count that keeps new detaches off): a detach armed now is called off (its worker woken,
 * as for a profiler), and one under way is waited out -- the worker holds cupti_lock from
 * before it arms to after CUPTI is attached again -- 2 s at most. Without this, a finalize
 * another thread of the program had just taken (an NCCL watchdog's cudaEventQuery) ran
 * beside the allocator's snapshot (the review). On the program's thread: what it waits is
 * a detach's own milliseconds. */
__attribute__((visibility("default"))) void gp_cupti_quiesce(void)
{
	if (!gp_cu_api || getpid() != owner || !detach_on)
		return;
	int armed = FIN_ARMED;
	if (atomic_compare_exchange_strong(&finalize_now, &armed, FIN_CANCELLED))
		sem_post(&finalized);
	if (lock_within(2000))
		pthread_mutex_unlock(&cupti_lock);
}

/* A profiler's end whose hand-over missed the lock (the worker was in a flush or a
 * detach): taken back at the next chance, or its callbacks would keep CUPTI's records
 * for the rest of the run (cupti_lock held). */
static void settle(void)
{
	if (foreign_seen && !(gp_cu_api->foreign && gp_cu_api->foreign()))
		take_back();
}

__attribute__((visibility("default"))) unsigned gp_cupti_capture(unsigned modes)
{
	if (!gp_cu_api || getpid() != owner)
		return 0;
	if (pthread_mutex_trylock(&cupti_lock) != 0)
		return capturing; /* the worker is detaching: the next step retries */
	settle();
	unsigned want = modes & gp_cu_api->modes & (GP_MODE_CUDA | GP_MODE_MEM);
	if (want != capturing && !foreign_profiler())
		set_capture(want);
	pthread_mutex_unlock(&cupti_lock);
	return capturing;
}

__attribute__((visibility("default"))) int gp_cupti_stream_id(void *stream, uint32_t *id)
{
	if (getpid() != owner || pthread_mutex_trylock(&cupti_lock) != 0)
		return -1;
	int rc = cuptiGetStreamIdEx(NULL, (CUstream)stream, 0, id) == CUPTI_SUCCESS ? 0 : -1;
	pthread_mutex_unlock(&cupti_lock);
	return rc;
}

static void at_exit_flush(void)
{
	/* a forked child has no worker, and may have been forked while the worker held
	 * the locks: its exit must never wait for them */
	if (!gp_cu_api || getpid() != owner)
		return;
	atomic_store(&stop, 1);
	/* the worker may be in a detach: wait for it, not for a CUPTI stuck on a hung GPU */
	if (lock_within(2000)) {
		cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
		pthread_mutex_unlock(&cupti_lock);
		process_all();
	} /* else a flush now could overlap its finalize: what is queued is lost */
	/* the window open at exit, and what came after the last one's end, charged with
	 * what was counted (the exit path calls this twice: the second charges nothing) */
	if (gp_cu_api->tick)
		gp_cu_api->tick(gp_cu_api->now(), atomic_load(&all_kernels),
		                atomic_load(&measured_ns), true);
}

__attribute__((visibility("default"))) void gp_cupti_flush(void)
{
	at_exit_flush();
}

static int fail(char *why, unsigned len, const char *what, CUptiResult rc)
{
	const char *s = NULL;
	cuptiGetResultString(rc, &s);
	snprintf(why, len, "%s: %s", what, s ? s : "error");
	return -1;
}

/* Subscribe (when the api asks for callbacks, or launch sites are still to be taken),
 * register the buffers and the clock: the parts that cost a launch nothing. first: at
 * start (a subscriber refused is an error); later: again after a detach, with memory
 * records as they were (cupti_lock held). A subscriber held for launch sites alone leaves
 * cudaProfilerStart/Stop to API records, as without one: it is given back after the
 * sites' last window (give_back_sites), and nothing changes then. */
static int attach(const gp_inject_api_t *a, bool first, char *why, unsigned whylen)
{
	CUptiResult rc;
	if (a->callbacks || gp_sites_pending()) {
		rc = cuptiSubscribe(&subscriber, (CUpti_CallbackFunc)on_callback, NULL);
		/* launch sites alone are not worth failing the capture for: profiled without */
		if (rc != CUPTI_SUCCESS && first && a->callbacks) {
			if (rc == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
				snprintf(why, whylen,
				         "CUPTI is held by another tool (nsys, ncu, "
				         "compute-sanitizer or a profiler in the program)");
			else
				fail(why, whylen, "cuptiSubscribe", rc);
			return -1;
		}
		have_sub = rc == CUPTI_SUCCESS; /* later: taken in between, stacks lost */
		xlate.profiler_by_callback = have_sub && a->callbacks;
	}
	if (have_sub)
		cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE,
		                    CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
	if (have_sub && a->callbacks) {
		/* cudaProfilerStart/Stop mark steps for programs without NVTX */
		cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
		                    CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000);
		cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
		                    CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000);
	} else {
		/* no callbacks: cudaProfilerStart/Stop arrive as API activity records */
		cuptiActivityEnableRuntimeApi(CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000, 1);
		cuptiActivityEnableRuntimeApi(CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000, 1);
	}
	/* timestamps on the host clock NVTX uses, registered before any kind is enabled */
	cuptiActivityRegisterTimestampCallback(timestamp);
	rc = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
	if (rc != CUPTI_SUCCESS && first && have_sub) {
		/* the start fails and gp_cu_api goes: no callback of ours may come after it
		 * (the cudaProfilerStart one reads gp_cu_api) */
		cuptiUnsubscribe(subscriber);
		have_sub = false;
	}
	if (rc != CUPTI_SUCCESS)
		return first ? fail(why, whylen, "cuptiActivityRegisterCallbacks", rc) : -1;
	atomic_store(&handing_over, 0); /* ours are the callbacks now */
	if (!first && (capturing & GP_MODE_MEM))
		switch_mem(1);
	return 0;
}

/* Launch sites have had their last window (or stopped at its cap): a subscriber taken for
 * them alone is given back now, as a detach gives back the one it takes, so a CUPTI tool
 * the program starts later can subscribe (CUPTI has one subscriber); it is not taken
 * again in this process (attach: nothing pending). Not while a detach has every callback
 * on (cupti_lock held: none is waiting now). */
static void give_back_sites(void)
{
	if (!have_sub || gp_cu_api->callbacks || gp_sites_pending() || atomic_load(&all_domains))
		return;
	cuptiUnsubscribe(subscriber);
	have_sub = false;
}

/* Our own callbacks as they were before a detach that did not happen (cupti_lock held):
 * the whole domains off, the few we keep on again, or the subscriber given back. */
static void domains_off(bool own)
{
	cuptiEnableDomain(0, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API);
	cuptiEnableDomain(0, subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
	atomic_store(&all_domains, false);
	if (!own) {
		cuptiUnsubscribe(subscriber);
		have_sub = false;
		return;
	}
	if (gp_cu_api->callbacks) { /* held for launch sites alone: API records say them */
		cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
		                    CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000);
		cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
		                    CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000);
	}
	if (capturing & GP_MODE_MEM)
		switch_mem(1);
}

/* How long a detach waits for one of the program's API calls, with cupti_lock held (a
 * program that makes none for that long is between steps: the worker tries again
 * FINALIZE_RETRY_NS later). Once a program's thread has taken it, the worker waits for
 * its finalize to return, however long: that thread is in it. */
#define FINALIZE_CALL_WAIT_MS 100
#define FINALIZE_RETRY_NS     (1000ull * 1000000ull)
static uint64_t retry_at;
/* a detach's looks before it: the window's kernel records not all in, no call of the
 * program's to finalize at (its record's c and d; the worker's thread only) */
static uint64_t tries_kernels, tries_calls, tries_for;

/* After a window, once the GPU has finished its work (a step marker placed after the
 * window's end has completed; without one, every launch of the window has its kernel
 * record, looked at every detach_poll_ns where set; or DETACH_WAIT_NS passed): flush, have the
 * program's next API call finalize at its exit, attach the light parts again. The
 * worker's thread. */
static void maybe_detach(void)
{
	uint64_t end = atomic_load(&window_end), now = gp_cu_api->now();
	uint64_t done = gp_cu_api->gpu_done ? gp_cu_api->gpu_done() : 0;
	bool waited = now - end >= DETACH_WAIT_NS;
	/* not while the integration works on the allocator: a detach then (the snapshot of a
	 * step-less program's history end, seconds of imports with no call to finalize at)
	 * corrupted the heap, 3 of 10 runs on the H100 (malloc abort at exit) */
	if (!end || now < retry_at || foreign_profiler() || (gp_cu_api->busy && gp_cu_api->busy()))
		return;
	if (end != tries_for) { /* a new window's detach: its own looks */
		tries_for = end;
		tries_kernels = tries_calls = 0;
	}
	if (done < end && !gp_cu_api->detach_markerless)
		return;              /* only a step marker's detach here (PyTorch: cuda.c) */
	if (done < end && !waited) { /* no marker yet: look for the window's kernels */
		if (!detach_poll_ns || now - end < detach_poll_ns ||
		    now - polled_at < detach_poll_ns)
			return;
		polled_at = now;
	}
	pthread_mutex_lock(&cupti_lock);
	if (atomic_load(&stop) || atomic_load(&window_end) != end || (capturing & GP_MODE_CUDA) ||
	    foreign_profiler()) {
		pthread_mutex_unlock(&cupti_lock);
		return; /* the process is ending, a window began again, a profiler began */
	}
	cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	process_all();
	/* the legacy stream's marker says nothing of other streams and devices: every
	 * launch of the window has its kernel record first */
	if (atomic_load(&win_kernels) < atomic_load(&win_launches) && !waited) {
		tries_kernels++;
		pthread_mutex_unlock(&cupti_lock);
		return;
	}
	bool own = have_sub;
	if (!own) { /* a framework's profiler may hold the slot: then leave it be */
		if (cuptiSubscribe(&subscriber, (CUpti_CallbackFunc)on_callback, NULL) !=
		    CUPTI_SUCCESS) {
			atomic_store(&window_end, 0);
			pthread_mutex_unlock(&cupti_lock);
			return;
		}
		have_sub = true;
	}
	while (sem_trywait(&finalized) == 0) /* a late cancel's post, of an attempt before */
		;
	atomic_store(&finalize_rc, -1);
	atomic_store(&finalize_now, FIN_ARMED);
	atomic_store(&all_domains, true);
	for (size_t i = 0; i < sizeof(finalize_cbids) / sizeof(finalize_cbids[0]); i++)
		cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, finalize_cbids[i]);
	struct timespec ts = deadline(FINALIZE_CALL_WAIT_MS);
	int w;
	while ((w = sem_timedwait(&finalized, &ts)) != 0 && errno == EINTR)
		;
	/* no call of the program's came, or a profiler of its began, or the call's thread
	 * saw a graph being captured: as before, and again a little later */
	bool taken = atomic_exchange(&finalize_now, FIN_IDLE) == FIN_IDLE;
	while (taken && w != 0 && (w = sem_wait(&finalized)) != 0 && errno == EINTR)
		; /* a program's thread took it just now: its finalize is running */
	int rc = taken ? atomic_load(&finalize_rc) : FINALIZE_NOT_NOW;
	if (rc == FINALIZE_NOT_NOW) {
		domains_off(own);
		retry_at = gp_cu_api->now() + FINALIZE_RETRY_NS;
		tries_calls++;
		pthread_mutex_unlock(&cupti_lock);
		return;
	}
	atomic_store(&window_end, 0);
	if (rc != CUPTI_SUCCESS) { /* CUPTI attached as it was: no more detaches */
		domains_off(own);
		detach_on = false;
		pthread_mutex_unlock(&cupti_lock);
		return;
	}
	atomic_store(&all_domains, false);
	have_sub = false;
	process_all(); /* what the finalize flushed, under the epoch it belongs to */
	/* the next attach's correlation ids apart from the last one's; at the last epoch
	 * this is the last detach */
	uint32_t gen = GP_XGEN(&xlate) + (1u << 16);
	__atomic_store_n(&xlate.gen, gen, __ATOMIC_RELAXED);
	if (gen >> 16 == 0xffff)
		detach_on = false;
	if (!foreign_profiler())
		attach(gp_cu_api, false, NULL,
		       0); /* a profiler begun meanwhile: taken back after */
	pthread_mutex_unlock(&cupti_lock);
	/* what it cost the program: its thread's time in cuptiFinalize, where it was */
	gp_event_t o = {.type = GP_EV_OVERHEAD,
	                .ts = atomic_load(&finalize_t0),
	                .a = atomic_load(&finalize_ns),
	                .b = GP_OVERHEAD_DETACH,
	                .c = tries_kernels,
	                .d = tries_calls};
	tries_kernels = tries_calls = 0;
	atomic_fetch_add(&measured_ns, o.a);
	gp_cu_api->emit(&o);
}

__attribute__((visibility("default"))) int gp_cupti_start(const gp_inject_api_t *a, char *why,
                                                          unsigned whylen)
{
	discard = a->discard;
	owner = getpid();
	if (sem_init(&wake, 0, 0) != 0)
		return fail(why, whylen, "sem_init", CUPTI_ERROR_UNKNOWN);
	if (a->flush_ms >= 10)
		flush_ms = flush_mem_ms = a->flush_ms;
	detach_poll_ns = (uint64_t)a->detach_poll_ms * 1000000u;
	gp_cu_api = a;
	xlate = (gp_xlate_t){.gen = a->gen,
	                     .intern = a->intern,
	                     .intern_launch = intern_launch,
	                     .api_captured = api_captured,
	                     .profiler_by_callback = false};
	uint32_t ver = 0;
	may_refuse = cuptiGetVersion(&ver) == CUPTI_SUCCESS && ver >= 27;
	/* the CUPTI of CUDA 12.6 (API version 24) or later: kineto tears CUPTI down by default
	 * from there on; before, a re-initialised CUPTI crashed with CUDA graphs */
	detach_on = a->detach && a->api_mode == 1 && ver >= 24 && sem_init(&finalized, 0, 0) == 0;
	gp_sites_init(a->launch_sites); /* before attach: they may want the subscriber */
	pthread_mutex_lock(&cupti_lock);
	if (attach(a, true, why, whylen) != 0) {
		pthread_mutex_unlock(&cupti_lock);
		gp_cu_api = NULL;
		return -1;
	}
	xlate.api_listed_only = a->api_mode == 1;
	if (a->modes & GP_MODE_CUDA) {
		/* only the API records the report reads, not whole domains */
		for (unsigned i = 0; a->api_mode == 0 && i < gp_ncbids; i++) {
			if (!(gp_cbids[i].flags & GP_CB_TRACED))
				continue;
			if (gp_cbids[i].domain == GP_CB_RUNTIME)
				cuptiActivityEnableRuntimeApi(gp_cbids[i].cbid, 1);
			else
				cuptiActivityEnableDriverApi(gp_cbids[i].cbid, 1);
		}
		if (!(a->capture & GP_MODE_CUDA)) { /* a window that starts later */
			switch_ts[0] = gp_cu_api->now() << 1;
			atomic_store(&nswitch, 1);
		}
	}
	set_capture(a->capture);
	pthread_mutex_unlock(&cupti_lock);
	/* the worker takes no signal of the program's: a handler that calls exit() on it
	 * would wait in at_exit_flush for the flush lock the worker holds */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&worker, NULL, worker_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
		return fail(why, whylen, "pthread_create", CUPTI_ERROR_UNKNOWN);
	pthread_detach(worker);
	atexit(at_exit_flush);
	return 0;
}
