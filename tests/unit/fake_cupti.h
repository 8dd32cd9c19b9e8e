/* A CUPTI of our own making for the CUPTI module's unit tests (t_cupti_detach.c,
 * t_cupti_sites.c): what was enabled, registered, subscribed (and how often), which
 * callbacks are on, finalized. One program includes it once: it defines CUPTI's entry
 * points in place of libcupti's. */
#ifndef GP_FAKE_CUPTI_H
#define GP_FAKE_CUPTI_H

#include <cupti.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#define FAKE_CBIDS 1024
static struct {
	pthread_mutex_t mu;
	int subscribed; /* 0 none, 1 the module, 2 another tool */
	CUpti_CallbackFunc cb;
	bool domains; /* every runtime and driver callback on */
	pthread_t finalized_on;
	bool kind[CUPTI_ACTIVITY_KIND_COUNT];
	_Atomic int finalized, registered, forced_flushes, finalize_calls;
	_Atomic int finalized_at_launch; /* finalizes at a launch's exit (program_call) */
	bool fail_finalize;
	CUpti_BuffersCallbackRequestFunc req;
	CUpti_BuffersCallbackCompleteFunc done;
	uint32_t next_corr;
	int pending;          /* kernel records to deliver at the next flush */
	int pending_launches; /* cudaLaunchKernel API records to deliver at the next flush */
	_Atomic int subscribes, unsubscribes; /* successful calls */
	/* the subscriber's callbacks enabled one by one: [0] runtime, [1] driver */
	bool cb_on[2][FAKE_CBIDS];
} F = {.mu = PTHREAD_MUTEX_INITIALIZER, .next_corr = 1};

CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind k)
{
	F.kind[k] = true;
	return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind k)
{
	F.kind[k] = false;
	return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityEnableRuntimeApi(CUpti_CallbackId c, uint8_t e)
{
	(void)c, (void)e;
	return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityEnableDriverApi(CUpti_CallbackId c, uint8_t e)
{
	(void)c, (void)e;
	return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc r,
                                                    CUpti_BuffersCallbackCompleteFunc d)
{
	F.req = r;
	F.done = d;
	F.registered++;
	return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc f)
{
	(void)f;
	return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag)
{
	pthread_mutex_lock(&F.mu);
	if (flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)
		F.forced_flushes++;
	if (F.req && (F.pending || F.pending_launches)) {
		uint8_t *b;
		size_t size, max;
		F.req(&b, &size, &max);
		/* every record in a kernel record's slot (cuptiActivityGetNextRecord's stride) */
		CUpti_ActivityKernel10 *k = (void *)b;
		int n = F.pending, l = F.pending_launches;
		for (int i = 0; i < n + l; i++)
			memset(&k[i], 0, sizeof(k[i]));
		for (int i = 0; i < l; i++) { /* the launch calls first, as CUPTI has them */
			CUpti_ActivityAPI *a = (void *)&k[i];
			a->kind = CUPTI_ACTIVITY_KIND_RUNTIME;
			a->cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
			a->start = 1000;
			a->end = 1100;
			a->correlationId = F.next_corr + (uint32_t)i;
		}
		for (int i = l; i < n + l; i++) {
			k[i].kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
			k[i].start = 1000;
			k[i].end = 2000;
			k[i].name = "k";
			k[i].correlationId = F.next_corr++;
		}
		F.pending = F.pending_launches = 0;
		F.done(NULL, 0, b, size, (size_t)(n + l) * sizeof(*k));
	}
	pthread_mutex_unlock(&F.mu);
	return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t *b, size_t valid, CUpti_Activity **r)
{
	uint8_t *next = *r ? (uint8_t *)*r + sizeof(CUpti_ActivityKernel10) : b;
	if (next >= b + valid)
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	*r = (CUpti_Activity *)next;
	return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext c, uint32_t s, size_t *n)
{
	(void)c, (void)s;
	*n = 0;
	return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle *h, CUpti_CallbackFunc cb, void *u)
{
	(void)u;
	if (F.subscribed)
		return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
	F.subscribed = 1;
	F.subscribes++;
	F.cb = cb;
	*h = (CUpti_SubscriberHandle)&F;
	return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle h)
{
	(void)h;
	F.subscribed = 0;
	F.domains = false;
	memset(F.cb_on, 0, sizeof(F.cb_on));
	F.unsubscribes++;
	return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t en, CUpti_SubscriberHandle h,
                                         CUpti_CallbackDomain d, CUpti_CallbackId c)
{
	(void)h;
	if ((d == CUPTI_CB_DOMAIN_RUNTIME_API || d == CUPTI_CB_DOMAIN_DRIVER_API) && c < FAKE_CBIDS)
		F.cb_on[d == CUPTI_CB_DOMAIN_DRIVER_API][c] = en;
	return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t en, CUpti_SubscriberHandle h,
                                       CUpti_CallbackDomain d)
{
	(void)h;
	if (d == CUPTI_CB_DOMAIN_RUNTIME_API)
		F.domains = en;
	if (d == CUPTI_CB_DOMAIN_RUNTIME_API || d == CUPTI_CB_DOMAIN_DRIVER_API)
		memset(F.cb_on[d == CUPTI_CB_DOMAIN_DRIVER_API], en,
		       sizeof(F.cb_on[0])); /* every callback of the domain, as CUPTI */
	return CUPTI_SUCCESS;
}
/* A detach armed: the callbacks it finalizes at on (the synchronising calls), or the
 * whole runtime domain */
static inline bool fake_armed(void)
{
	return F.domains || F.cb_on[0][CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020];
}
CUptiResult CUPTIAPI cuptiFinalize(void)
{
	F.finalize_calls++;
	if (F.fail_finalize)
		return CUPTI_ERROR_UNKNOWN;
	nanosleep(&(struct timespec){0, 3000000}, NULL); /* a finalize takes time */
	F.finalized++;
	F.finalized_on = pthread_self();
	F.subscribed = 0;
	F.domains = false;
	memset(F.cb_on, 0, sizeof(F.cb_on));
	memset(F.kind, 0, sizeof(F.kind));
	F.req = NULL;
	F.done = NULL;
	F.next_corr = 1; /* a new CUPTI counts from 1 again */
	return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult r, const char **s)
{
	(void)r;
	*s = "fake";
	return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiGetStreamIdEx(CUcontext c, CUstream s, uint8_t p, uint32_t *id)
{
	(void)c, (void)s, (void)p;
	*id = 0;
	return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiGetVersion(uint32_t *v)
{
	*v = 130001;
	return CUPTI_SUCCESS;
}

/* ---- the injected library's services both tests give the module ---- */
static _Atomic uint64_t gpu_done_ts; /* the step markers: the GPU is past this time */
static uint32_t tid(void)
{
	return 1;
}
static uint64_t now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}
static uint64_t gpu_done(void)
{
	return atomic_load(&gpu_done_ts);
}

/* The injected library's API as the tests give it to the CUPTI module: modes traced from
 * the start (the first window), CUPTI detached between windows, its flushes from the
 * detach (a 1.5 s period), the callback slot left free unless a test takes it */
static inline gp_inject_api_t fake_api(unsigned modes, void (*emit)(const gp_event_t *),
                                       uint32_t (*intern)(const char *, size_t),
                                       void (*count_drop)(unsigned, uint64_t))
{
	return (gp_inject_api_t){.modes = modes,
	                         .emit = emit,
	                         .intern = intern,
	                         .count_drop = count_drop,
	                         .gen = 3,
	                         .tid = tid,
	                         .now = now,
	                         .capture = modes,
	                         .callbacks = false,
	                         .flush_ms = 1500,
	                         .api_mode = 1,
	                         .detach = true,
	                         .gpu_done = gpu_done};
}
/* up to 3 s for a counter of the fake's to reach want */
static bool wait_for(_Atomic int *v, int want)
{
	for (int i = 0; i < 300 && atomic_load(v) < want; i++)
		nanosleep(&(struct timespec){0, 10000000}, NULL);
	return atomic_load(v) >= want;
}

#ifdef FAKE_CUPTI_EVENTS
/* The injected library's side, for a test that keeps what the module emits: its events
 * (up to 1024) and interned strings (all one id) */
static pthread_mutex_t ev_mu = PTHREAD_MUTEX_INITIALIZER;
static gp_event_t evs[1024];
static int nev;
static void emit(const gp_event_t *e)
{
	pthread_mutex_lock(&ev_mu);
	if (nev < 1024)
		evs[nev++] = *e;
	pthread_mutex_unlock(&ev_mu);
}
static uint32_t intern(const char *s, size_t n)
{
	(void)s, (void)n;
	return 7;
}
static void nap_ms(long ms)
{
	nanosleep(&(struct timespec){ms / 1000, (ms % 1000) * 1000000}, NULL);
}
uint32_t gp_stack_capture(void)
{
	return 0;
}
uint32_t gp_site_stack_capture(void)
{
	return 0;
}
/* One runtime API call of the program's thread, with CUPTI's callbacks at its entry and
 * exit where the subscriber has them on (its domain or the call) */
static void program_api(CUpti_CallbackId cbid)
{
	if (F.subscribed == 1 && (F.domains || F.cb_on[0][cbid])) {
		CUpti_CallbackData d = {.callbackSite = CUPTI_API_ENTER};
		F.cb(NULL, CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &d);
		d.callbackSite = CUPTI_API_EXIT;
		F.cb(NULL, CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &d);
	}
}
/* The program's calls of one turn of its loop: launches (a library's calls, where a
 * finalize crashed CUPTI), then what it synchronises with (.item(): cudaMemcpyAsync,
 * cudaStreamSynchronize); F.launch_exits counts the launches' exits our callback saw
 * while a detach was armed */
static void program_call(void)
{
	for (int i = 0; i < 3; i++) {
		int before = F.finalize_calls;
		program_api(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
		if (F.finalize_calls != before)
			F.finalized_at_launch++;
	}
	program_api(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020);
	program_api(CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020);
}
#endif

#endif
