/* Step completion markers. Without CUDA activity records (modes timing, nvtx, mem) the
 * host's NVTX ranges say when steps were launched, not when the GPU finished them: a host
 * that never synchronises runs dozens of steps ahead. At the end of every outermost NVTX
 * range of the program's own domain (a step, in the usual loop) we record a CUDA event on
 * the legacy default stream, which completes once all work launched before it on the
 * blocking streams has finished; a thread of ours waits for each event in turn and emits
 * GP_EV_STEP_MARK with the GPU time elapsed since the previous marker (cuEventElapsedTime,
 * the GPU's own clock). Cost on the application's thread: one cuEventRecord per step, and
 * no wake-up of ours: while markers come the waiter looks on its own, every quarter of the
 * time between the last two markers, 2 to 100 ms (a semaphore posted at each marker cost
 * the program's thread a futex wake, an IPI in these VMs, at every step of a host-bound
 * loop); idle for a second, it sleeps until the next marker posts, and a marker posts when
 * half the slots are waiting. At exit the markers placed are waited for (50 ms at most),
 * as the waiter that was woken at each marker took them.
 *
 * What it may change, and how that is avoided: nothing waits for our events (they are
 * never waited on by the program's streams); a marker is skipped while the legacy or
 * per-thread stream is being captured into a CUDA graph, while another thread is placing
 * one, in a forked child, and in another CUDA context than the first one seen. The
 * driver's functions are looked up in the already loaded libcuda (we are called from
 * within cuInit), so nothing links or loads CUDA here. GPUPROF_STEP_MARKERS=0 turns it off. */
#include "config.h"

#include <cuda.h>

#include "marker.h"
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NSLOT        64         /* markers outstanding at most (the GPU that far behind: dropped) */
#define LOOK_MIN_NS  2000000ull /* the waiter's look while markers come: from */
#define LOOK_MAX_NS  100000000ull  /* ... to */
#define WAIT_IDLE_NS 1000000000ull /* no marker that long: sleep until posted */
#define EXIT_WAIT_MS 50            /* at exit, for the markers placed to be taken */

static struct {
	gp_marker_cuda_t cu; /* the driver's functions */
	void (*emit)(const gp_event_t *);
	uint64_t (*now)(void);
	_Atomic int busy; /* one thread places a marker at a time; the others skip */
	pid_t pid;
	CUcontext ctx;
	CUevent ev[NSLOT];
	uint64_t ts[NSLOT];
	_Atomic int full[NSLOT];
	uint64_t head;           /* under busy */
	_Atomic uint64_t placed; /* head, for at_exit */
	_Atomic uint64_t tail;   /* markers the waiter has taken (head - tail: waiting) */
	_Atomic int idle;        /* the waiter sleeps until posted */
	_Atomic int kicked;      /* posted since the waiter last woke: one post a wake */
	_Atomic uint64_t taken;  /* markers the waiter has emitted (or given up on) */
	/* sem_clockwait (glibc 2.30): a wait on the monotonic clock, which a step of the wall
	 * clock does not stretch; looked up, so the library still loads on an older glibc */
	int (*clockwait)(sem_t *, clockid_t, const struct timespec *);
	_Atomic uint64_t done; /* host time of the last marker the GPU has passed */
	uint32_t name;         /* the waiter's thread name (string id) */
	sem_t sem;
	pthread_t thr;
} m;
_Atomic int gp_marker_state; /* 0 off, 1 ready, -1 failed (marker.h) */

static void *sym(void *lib, const char *a, const char *b)
{
	void *p = dlsym(lib, a);
	return p || !b ? p : dlsym(lib, b);
}

int gp_marker_enable(void (*emit)(const gp_event_t *), uint64_t (*now)(void), uint32_t name)
{
	gp_marker_cuda_t cu;
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (!lib)
		return -1;
	cu.ctx_get = (CUresult(*)(CUcontext *))sym(lib, "cuCtxGetCurrent", NULL);
	cu.ctx_set = (CUresult(*)(CUcontext))sym(lib, "cuCtxSetCurrent", NULL);
	cu.ev_create = (CUresult(*)(CUevent *, unsigned))sym(lib, "cuEventCreate", NULL);
	cu.ev_record = (CUresult(*)(CUevent, CUstream))sym(lib, "cuEventRecord", NULL);
	cu.ev_sync = (CUresult(*)(CUevent))sym(lib, "cuEventSynchronize", NULL);
	cu.ev_elapsed = (CUresult(*)(float *, CUevent, CUevent))sym(lib, "cuEventElapsedTime_v2",
	                                                            "cuEventElapsedTime");
	cu.capturing =
	    (CUresult(*)(CUstream, CUstreamCaptureStatus *))sym(lib, "cuStreamIsCapturing", NULL);
	cu.capture_mode =
	    (CUresult(*)(CUstreamCaptureMode *))sym(lib, "cuThreadExchangeStreamCaptureMode", NULL);
	dlclose(lib); /* NOLOAD: only our reference goes; libcuda stays */
	return gp_marker_enable_with(&cu, emit, now, name);
}

int gp_marker_enable_with(const gp_marker_cuda_t *cu, void (*emit)(const gp_event_t *),
                          uint64_t (*now)(void), uint32_t name)
{
	if (!cu->ctx_get || !cu->ctx_set || !cu->ev_create || !cu->ev_record || !cu->ev_sync ||
	    !cu->ev_elapsed || !cu->capturing)
		return -1;
	m.cu = *cu;
	m.clockwait = (int (*)(sem_t *, clockid_t, const struct timespec *))dlsym(RTLD_DEFAULT,
	                                                                          "sem_clockwait");
	m.name = name;
	m.emit = emit;
	m.now = now;
	m.pid = getpid();
	atomic_store(&gp_marker_state, 1);
	return 0;
}

static __thread bool is_waiter; /* the waiter thread */
static __thread bool in_marker; /* a program's thread placing a marker (our CUDA calls) */

bool gp_marker_own_thread(void)
{
	return is_waiter || in_marker;
}

/* No graph is being captured that the calling thread's legacy or per-thread stream sees
 * (the legacy stream's query fails while a blocking stream of any thread captures) */
static bool capture_free(void)
{
	CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
	return m.cu.capturing(CU_STREAM_LEGACY, &st) == CUDA_SUCCESS &&
	       st == CU_STREAM_CAPTURE_STATUS_NONE &&
	       m.cu.capturing(CU_STREAM_PER_THREAD, &st) == CUDA_SUCCESS &&
	       st == CU_STREAM_CAPTURE_STATUS_NONE;
}

bool gp_marker_capture_begin(int *mode)
{
	*mode = -1;
	if (atomic_load(&gp_marker_state) <= 0 || getpid() != m.pid)
		return true;
	if (!capture_free())
		return false;
	CUstreamCaptureMode cm = CU_STREAM_CAPTURE_MODE_RELAXED;
	if (m.cu.capture_mode && m.cu.capture_mode(&cm) == CUDA_SUCCESS)
		*mode = (int)cm;
	return true;
}

void gp_marker_capture_end(int mode)
{
	CUstreamCaptureMode cm = (CUstreamCaptureMode)mode;
	if (mode >= 0 && m.cu.capture_mode)
		m.cu.capture_mode(&cm);
}

/* One look's wait: on the semaphore (a post ends it early) with a monotonic deadline where
 * glibc has sem_clockwait; else a sleep, then whatever was posted meanwhile taken. */
static void look_wait(uint64_t ns)
{
	struct timespec ts;
	if (m.clockwait && clock_gettime(CLOCK_MONOTONIC, &ts) == 0) {
		uint64_t t = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + ns;
		ts.tv_sec = (time_t)(t / 1000000000ull);
		ts.tv_nsec = (long)(t % 1000000000ull);
		m.clockwait(&m.sem, CLOCK_MONOTONIC, &ts);
		return;
	}
	ts.tv_sec = (time_t)(ns / 1000000000ull);
	ts.tv_nsec = (long)(ns % 1000000000ull);
	nanosleep(&ts, NULL);
	while (sem_trywait(&m.sem) == 0)
		;
}

/* At the program's exit (atexit, registered after CUDA's own: it runs first): the markers
 * placed are taken before the library's last records go, EXIT_WAIT_MS at most (a GPU still
 * busy then finishes none of them anyway). */
static void at_exit(void)
{
	if (getpid() != m.pid || atomic_load(&gp_marker_state) <= 0)
		return;
	for (int i = 0; i < EXIT_WAIT_MS && atomic_load(&m.taken) < atomic_load(&m.placed); i++) {
		if (!atomic_exchange(&m.kicked, 1))
			sem_post(&m.sem);
		struct timespec ts = {0, 1000000L};
		nanosleep(&ts, NULL);
	}
}

static void *waiter(void *arg)
{
	uint64_t tail = 0;
	size_t prev = 0;
	bool have_prev = false;
	(void)arg;
	is_waiter = true;
	if (m.cu.ctx_set(m.ctx) != CUDA_SUCCESS)
		return NULL;
	/* its calls are gpuprof's, not the program's: the report leaves them out */
	gp_event_t tn = {.type = GP_EV_THREAD_NAME,
	                 .tid = (uint32_t)(uintptr_t)pthread_self(),
	                 .ts = m.now(),
	                 .a = m.name};
	m.emit(&tn);
	/* While another thread captures a graph in global mode, "potentially unsafe" calls
	 * from any other thread fail and invalidate that capture; our synchronize and
	 * elapsed-time calls touch none of its streams: this thread is relaxed. Measured
	 * without it: a non-blocking-stream capture failed when a wait overlapped it. */
	if (m.cu.capture_mode) {
		CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
		m.cu.capture_mode(&mode);
	}
	uint64_t last = m.now(), look = LOOK_MIN_NS, prev_ts = 0;
	for (;;) {
		size_t k = tail % NSLOT;
		if (!atomic_load_explicit(&m.full[k], memory_order_seq_cst)) {
			if (m.now() - last < WAIT_IDLE_NS) {
				look_wait(look);
				atomic_store(&m.kicked, 0);
				continue;
			}
			/* idle: the next marker posts (seq_cst on both sides: either it sees
			 * idle, or this sees its slot full) */
			atomic_store_explicit(&m.idle, 1, memory_order_seq_cst);
			if (!atomic_load_explicit(&m.full[k], memory_order_seq_cst))
				while (sem_wait(&m.sem) != 0 && errno == EINTR)
					;
			atomic_store_explicit(&m.idle, 0, memory_order_relaxed);
			atomic_store(&m.kicked, 0);
			last = m.now();
			continue;
		}
		last = m.now();
		/* the next look: a quarter of the time between the last two markers */
		if (prev_ts && m.ts[k] > prev_ts) {
			uint64_t q = (m.ts[k] - prev_ts) / 4;
			look = q < LOOK_MIN_NS ? LOOK_MIN_NS : q > LOOK_MAX_NS ? LOOK_MAX_NS : q;
		}
		prev_ts = m.ts[k];
		gp_event_t e = {.type = GP_EV_STEP_MARK, .ts = m.ts[k], .c = tail++};
		atomic_store_explicit(&m.tail, tail, memory_order_relaxed);
		if (m.cu.ev_sync(m.ev[k]) != CUDA_SUCCESS) { /* context going away: stop chaining */
			atomic_store_explicit(&m.full[k], 0, memory_order_release);
			if (have_prev)
				atomic_store_explicit(&m.full[prev], 0, memory_order_release);
			have_prev = false;
			atomic_fetch_add(&m.taken, 1);
			continue;
		}
		e.b = m.now();
		atomic_store_explicit(&m.done, m.ts[k], memory_order_release);
		float ms = 0;
		if (have_prev && m.cu.ev_elapsed(&ms, m.ev[prev], m.ev[k]) == CUDA_SUCCESS &&
		    ms >= 0) {
			e.a = (uint64_t)((double)ms * 1e6);
			e.d = 1; /* a is the GPU time since the previous marker */
		}
		m.emit(&e);
		atomic_fetch_add(&m.taken, 1);
		if (have_prev) /* the previous event is free once its successor is measured */
			atomic_store_explicit(&m.full[prev], 0, memory_order_release);
		prev = k;
		have_prev = true;
	}
	return NULL;
}

/* First marker, on the application's thread with its context current: the events and
 * our waiting thread (all signals blocked: the program's handlers are not for us). */
static int first_use(CUcontext c)
{
	for (int i = 0; i < NSLOT; i++)
		if (m.cu.ev_create(&m.ev[i], CU_EVENT_BLOCKING_SYNC) != CUDA_SUCCESS)
			return -1;
	if (sem_init(&m.sem, 0, 0) != 0)
		return -1;
	m.ctx = c;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&m.thr, NULL, waiter, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
		return -1;
	pthread_detach(m.thr);
	atexit(at_exit);
	return 0;
}

uint64_t gp_marker_done(void)
{
	return atomic_load_explicit(&m.done, memory_order_acquire);
}

uint64_t gp_marker_step_end_slow(uint64_t ts)
{
	int z = 0;
	uint64_t waited = 0;
	if (atomic_load_explicit(&gp_marker_state, memory_order_relaxed) <= 0 ||
	    getpid() != m.pid || !atomic_compare_exchange_strong(&m.busy, &z, 1))
		return 0;
	CUcontext c = NULL;
	in_marker = true;
	if (m.cu.ctx_get(&c) != CUDA_SUCCESS || !c)
		goto out;
	if (!m.ctx && first_use(c) != 0) {
		atomic_store(&gp_marker_state, -1);
		goto out;
	}
	if (c != m.ctx)
		goto out;
	if (!capture_free())
		goto out;
	size_t k = m.head % NSLOT;
	if (atomic_load_explicit(&m.full[k], memory_order_acquire)) {
		/* the GPU is NSLOT markers behind: say so (the next marker's GPU time then
		 * spans this step too, which the report's running sum absorbs) */
		gp_event_t e = {.type = GP_EV_STEP_MARK, .ts = ts, .d = 2};
		m.emit(&e);
		goto out;
	}
	/* the program's thread may be capturing another stream in global mode: our record
	 * on the legacy stream is not part of it, so relax the thread for that one call */
	CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
	bool swapped = m.cu.capture_mode && m.cu.capture_mode(&mode) == CUDA_SUCCESS;
	uint64_t t0 = m.now();
	CUresult rec = m.cu.ev_record(m.ev[k], CU_STREAM_LEGACY);
	uint64_t took = m.now() - t0;
	if (took > GP_MARKER_WAIT_NS)
		waited = took;
	if (swapped)
		m.cu.capture_mode(&mode);
	if (rec != CUDA_SUCCESS)
		goto out;
	m.ts[k] = ts;
	atomic_store_explicit(&m.full[k], 1, memory_order_seq_cst);
	m.head++;
	atomic_store_explicit(&m.placed, m.head, memory_order_relaxed);
	/* the waiter looks on its own while markers come: wake it only from its idle sleep,
	 * or when half the slots wait (markers faster than its look), once a wake */
	if ((atomic_load_explicit(&m.idle, memory_order_seq_cst) ||
	     m.head - atomic_load_explicit(&m.tail, memory_order_relaxed) > NSLOT / 2) &&
	    !atomic_exchange(&m.kicked, 1))
		sem_post(&m.sem);
out:
	in_marker = false;
	atomic_store_explicit(&m.busy, 0, memory_order_release);
	return waited;
}
