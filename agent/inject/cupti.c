/* libgpuprof-cupti: CUPTI activity and callbacks for libgpuprof-inject, loaded only when
 * cuda or mem capture is asked for, so NVTX-only processes never map libcupti.
 * Buffers: 8 MiB, at most 32 outstanding (kineto/Caliper practice); the completion
 * callback only pushes the buffer on a lock-free list; one processing thread flushes
 * every 200 ms (CUPTI delivers nothing until a flush) and turns records into events.
 * The parts of the module: cupti_int.h.
 * Locks: flush_lock serialises process_all (the worker, a context's destruction and the
 * final flush); pyframes.c's cache lock is only ever try-locked (the frame walker never
 * waits). Everything else shared is atomic. */
#include "config.h"
#include "cupti_int.h"
#include "modes.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
static pthread_mutex_t flush_lock = PTHREAD_MUTEX_INITIALIZER; /* process_all only */

static uint64_t CUPTIAPI timestamp(void)
{
	return gp_cu_api->now();
}

/* CUPTI accepts a NULL buffer (it drops the records and counts them) from API version
 * 27 on; older ones are always given one, whatever the bound on outstanding buffers. */
static bool may_refuse;

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *maxRecords)
{
	*maxRecords = 0;
	*buffer = NULL;
	*size = 0;
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

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t streamId, uint8_t *buffer,
                                      size_t size, size_t validSize)
{
	count_cupti_drops(ctx, streamId);
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

static void emit_record(const CUpti_Activity *r)
{
	gp_event_t e;
	if (gp_cupti_translate(r, &xlate, &e))
		gp_cu_api->emit(&e);
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

static void *worker_main(void *arg)
{
	while (!atomic_load(&stop)) {
		long ms = (capturing & GP_MODE_CUDA) ? flush_ms : flush_mem_ms;
		struct timespec ts = {ms / 1000, (ms % 1000) * 1000 * 1000};
		nanosleep(&ts, NULL);
		cuptiActivityFlushAll(0);
		process_all();
		if (gp_cu_api->tick)
			gp_cu_api->tick(gp_cu_api->now());
	}
	return NULL;
}

static void CUPTIAPI on_callback(void *ud, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void *data)
{
	if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
		if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
			cuptiActivityFlushAll(0);
			process_all();
		}
		return;
	}
	const CUpti_CallbackData *cb = data;
	if (cb->callbackSite != CUPTI_API_ENTER)
		return;
	gp_event_t e = {.type = GP_EV_API,
	                .ts = gp_cu_api->now(),
	                .b = cbid,
	                .c = GP_CORR(gp_cu_api->gen, cb->correlationId),
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

static void set_capture(unsigned want)
{
	unsigned on = want & ~capturing, off = capturing & ~want;
	if ((on | off) & GP_MODE_CUDA) {
		int en = !!(on & GP_MODE_CUDA);
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
		if (n < MAX_SWITCH) {
			switch_ts[n] = gp_cu_api->now() << 1 | (uint64_t)en;
			atomic_store(&nswitch, n + 1);
		} else {
			atomic_store(&switch_full, true);
		}
	}
	if ((on | off) & GP_MODE_MEM) {
		int en = !!(on & GP_MODE_MEM);
		(en ? cuptiActivityEnable : cuptiActivityDisable)(CUPTI_ACTIVITY_KIND_MEMORY2);
		for (unsigned i = 0; have_sub && i < gp_ncbids; i++)
			if (gp_cbids[i].flags & GP_CB_STACK)
				cuptiEnableCallback((uint32_t)en, subscriber,
				                    gp_cbids[i].domain == GP_CB_RUNTIME
				                        ? CUPTI_CB_DOMAIN_RUNTIME_API
				                        : CUPTI_CB_DOMAIN_DRIVER_API,
				                    gp_cbids[i].cbid);
	}
	capturing = want;
}

__attribute__((visibility("default"))) void gp_cupti_capture(unsigned modes)
{
	if (gp_cu_api)
		set_capture(modes & gp_cu_api->modes & (GP_MODE_CUDA | GP_MODE_MEM));
}

__attribute__((visibility("default"))) int gp_cupti_stream_id(void *stream, uint32_t *id)
{
	return cuptiGetStreamIdEx(NULL, (CUstream)stream, 0, id) == CUPTI_SUCCESS ? 0 : -1;
}

static void at_exit_flush(void)
{
	if (!gp_cu_api)
		return;
	atomic_store(&stop, 1);
	cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	process_all();
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

__attribute__((visibility("default"))) int gp_cupti_start(const gp_inject_api_t *a, char *why,
                                                          unsigned whylen)
{
	CUptiResult rc;
	discard = a->discard;
	if (a->flush_ms >= 10)
		flush_ms = flush_mem_ms = a->flush_ms;
	gp_cu_api = a;
	xlate = (gp_xlate_t){.gen = a->gen,
	                     .intern = a->intern,
	                     .api_captured = api_captured,
	                     .profiler_by_callback = false};
	uint32_t ver = 0;
	may_refuse = cuptiGetVersion(&ver) == CUPTI_SUCCESS && ver >= 27;
	if (a->callbacks) {
		rc = cuptiSubscribe(&subscriber, (CUpti_CallbackFunc)on_callback, NULL);
		if (rc != CUPTI_SUCCESS) {
			gp_cu_api = NULL;
			if (rc == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
				snprintf(why, whylen,
				         "CUPTI is held by another tool (nsys, ncu, "
				         "compute-sanitizer or a profiler in the program)");
			else
				fail(why, whylen, "cuptiSubscribe", rc);
			return -1;
		}
		have_sub = true;
		xlate.profiler_by_callback = true;
		cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE,
		                    CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
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
	if (rc != CUPTI_SUCCESS)
		return fail(why, whylen, "cuptiActivityRegisterCallbacks", rc);
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
	if (pthread_create(&worker, NULL, worker_main, NULL) != 0)
		return fail(why, whylen, "pthread_create", CUPTI_ERROR_UNKNOWN);
	pthread_detach(worker);
	atexit(at_exit_flush);
	return 0;
}
