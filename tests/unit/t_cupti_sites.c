/* Kernel launch call sites (agent/inject/sites.c) in the CUPTI module (agent/inject/cupti.c)
 * against a CUPTI of our own making (fake_cupti.h), in a plain CUDA program (no callbacks
 * of its own: the subscriber is taken for the sites alone): the launch callbacks on in the
 * first two windows only, a runtime launch's own driver launch not taken twice, a runtime
 * launch whose exit callback was lost at a window's end leaving the thread's direct driver
 * launches of the next window counted, the subscriber taken again after the first window's
 * detach but given back once the second window ends (and not taken again by the detach that
 * follows), so a CUPTI tool the program starts then can subscribe; launch stacks taken from
 * a table of their own. No GPU, no libcupti. */
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

#include "fake_cupti.h"

#define RT_LAUNCH  CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000
#define DRV_LAUNCH CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel

/* a callback of the launch's, if the subscriber has it on (one by one, or every one for
 * a detach) */
static void callback(bool driver, uint32_t cbid, CUpti_ApiCallbackSite site)
{
	if (F.subscribed != 1 || !(F.cb_on[driver][cbid] || F.domains))
		return;
	static _Atomic uint32_t corr = 1;
	CUpti_CallbackData d = {.callbackSite = site, .correlationId = corr++};
	F.cb(NULL, driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &d);
}

/* cudaLaunchKernel: its entry, the cuLaunchKernel it makes, its exit (lost: none) */
static void rt_launch(bool exit_lost)
{
	callback(false, RT_LAUNCH, CUPTI_API_ENTER);
	callback(true, DRV_LAUNCH, CUPTI_API_ENTER);
	callback(true, DRV_LAUNCH, CUPTI_API_EXIT);
	if (!exit_lost)
		callback(false, RT_LAUNCH, CUPTI_API_EXIT);
}

static void drv_launch(void)
{
	callback(true, DRV_LAUNCH, CUPTI_API_ENTER);
	callback(true, DRV_LAUNCH, CUPTI_API_EXIT);
}

/* the program's other thread: API calls while a detach has every callback on */
static void *program(void *arg)
{
	(void)arg;
	for (;;) {
		if (fake_armed() && F.subscribed == 1) {
			CUpti_CallbackData d = {.callbackSite = CUPTI_API_EXIT};
			F.cb(NULL, CUPTI_CB_DOMAIN_RUNTIME_API,
			     CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, &d);
		}
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	}
	return NULL;
}

#define SITE_STACK 0x80000005u
static _Atomic int alloc_stacks, site_stacks;
uint32_t gp_stack_capture(void)
{
	alloc_stacks++;
	return 5;
}
uint32_t gp_site_stack_capture(void)
{
	site_stacks++;
	return SITE_STACK;
}

/* ---- the injected library's side ---- */
static pthread_mutex_t ev_mu = PTHREAD_MUTEX_INITIALIZER;
static int nsites, ncapped;
static void emit(const gp_event_t *e)
{
	pthread_mutex_lock(&ev_mu);
	if (e->type == GP_EV_API && GP_API_CLASS(e->u16) == GP_API_LAUNCH_SITE) {
		if (GP_API_RET(e->u16) == GP_SITE_CAP_REACHED)
			ncapped++;
		else if (e->d == SITE_STACK)
			nsites++;
	}
	pthread_mutex_unlock(&ev_mu);
}
static int sites(void)
{
	pthread_mutex_lock(&ev_mu);
	int n = nsites;
	pthread_mutex_unlock(&ev_mu);
	return n;
}
static uint32_t intern(const char *s, size_t n)
{
	(void)s, (void)n;
	return 7;
}
static void count_drop(unsigned c, uint64_t n)
{
	(void)c, (void)n;
}
static void CUPTIAPI tool_cb(void *u, CUpti_CallbackDomain d, CUpti_CallbackId c, const void *p)
{
	(void)u, (void)d, (void)c, (void)p;
}

int main(void)
{
	const unsigned CUDA = GP_MODE_CUDA;
	static gp_inject_api_t api; /* the module reads it until the process exits */
	api = fake_api(CUDA, emit, intern, count_drop); /* the first window from the start */
	api.launch_sites = 4;
	char why[128] = "";
	pthread_t prog;
	pthread_create(&prog, NULL, program, NULL);
	ok(gp_cupti_start(&api, why, sizeof(why)) == 0, "started (%s)", why);
	ok(F.subscribed == 1 && F.subscribes == 1, "the subscriber taken for launch sites");
	ok(F.cb_on[0][RT_LAUNCH] && F.cb_on[1][DRV_LAUNCH],
	   "window 1: the runtime and driver launch callbacks on");
	ok(!F.cb_on[0][CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000],
	   "cudaProfilerStart left to API records (the subscriber is the sites' alone)");

	/* window 1: a runtime launch (its own driver launch is no other), then one whose exit
	 * callback is lost: the window ends inside it */
	rt_launch(false);
	ok(sites() == 1 && site_stacks == 1 && alloc_stacks == 0,
	   "a runtime launch: one site, from the sites' own stack table (%d)", sites());
	rt_launch(true);
	ok(sites() == 2, "a second launch, whose exit comes after the window (%d)", sites());
	ok(gp_cupti_capture(0) == 0, "window 1 off");
	ok(!F.cb_on[0][RT_LAUNCH] && !F.cb_on[1][DRV_LAUNCH], "the launch callbacks off");
	ok(F.subscribed == 1 && F.unsubscribes == 0,
	   "the subscriber kept between the sites' windows (a second is to come)");

	/* the GPU is past the window: detached (CUPTI's subscriber goes with the finalize), and
	 * taken again at the attach for the second window's sites */
	atomic_store(&gpu_done_ts, now());
	ok(wait_for(&F.finalized, 1), "detached after window 1");
	wait_for(&F.registered, 2);
	ok(F.subscribed == 1 && F.subscribes == 2,
	   "subscribed again after the detach, for the second window (subscribes %d)",
	   (int)F.subscribes);

	/* window 2: this thread's direct driver launch counts, the lost exit notwithstanding */
	ok(gp_cupti_capture(CUDA) == CUDA && F.cb_on[1][DRV_LAUNCH], "window 2 on");
	drv_launch();
	ok(sites() == 3,
	   "a direct driver launch of the thread whose runtime launch lost its exit "
	   "callback: its site taken (%d)",
	   sites());
	rt_launch(false);
	ok(sites() == 4, "and a runtime launch after it, once (%d)", sites());

	/* the sites' last window ends: the subscriber given back at once */
	ok(gp_cupti_capture(0) == 0, "window 2 off");
	ok(F.subscribed == 0 && F.unsubscribes == 1,
	   "the subscriber given back after the sites' last window (subscribed %d, "
	   "unsubscribes %d)",
	   F.subscribed, (int)F.unsubscribes);

	/* the detach that follows takes it for its finalize only, and the attach after it
	 * takes none */
	int subs = F.subscribes;
	atomic_store(&gpu_done_ts, now());
	ok(wait_for(&F.finalized, 2), "detached after window 2");
	wait_for(&F.registered, 3);
	nanosleep(&(struct timespec){0, 50000000}, NULL);
	ok(F.subscribes == subs + 1 && F.subscribed == 0,
	   "the detach's own subscriber gone with it, none taken again (subscribes %d)",
	   (int)F.subscribes - subs);

	/* a CUPTI tool the program starts now subscribes; the windows go on without sites */
	CUpti_SubscriberHandle h;
	ok(cuptiSubscribe(&h, (CUpti_CallbackFunc)tool_cb, NULL) == CUPTI_SUCCESS,
	   "a CUPTI tool started by the program takes the subscriber");
	F.subscribed = 2; /* the tool's */
	ok(gp_cupti_capture(CUDA) == CUDA && F.subscribed == 2,
	   "window 3 begins, the tool keeps the subscriber");
	ok(gp_cupti_capture(0) == 0 && F.subscribed == 2 && F.unsubscribes == 1,
	   "window 3 ends, nothing of the tool's touched");
	ok(sites() == 4 && ncapped == 0, "no site past the sites' two windows");
	gp_cupti_flush();
	return done_testing();
}
