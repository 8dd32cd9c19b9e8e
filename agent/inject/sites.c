/* Kernel launch call sites (GPUPROF_LAUNCH_SITES), for programs whose launches no
 * framework names (CUDA C/C++): in the first SITE_WINDOWS capture windows, the call stack
 * of the first `cap` kernel launches of each window, taken in CUPTI's callback at the
 * launch's entry (libunwind, as allocation stacks, in a table of their own: stacks.c,
 * defined once per distinct stack) and recorded against the launch's correlation id
 * (GP_EV_API of class GP_API_LAUNCH_SITE). The report names the program's innermost frame
 * outside CUDA and gpuprof, from the module's DWARF (report/symbolize.c), and charges the
 * kernel to it. Bounded: nothing outside those windows (the callbacks are off), at most cap
 * unwinds a window; the launch past the cap records once that the window's sites end
 * there, and the CUPTI module's worker switches the callbacks off at its next wake-up
 * (200 ms at most). CUPTI's one callback subscriber is held for them only until their last
 * window ends (gp_sites_pending): then cupti.c gives it back, as after a detach, and a
 * CUPTI tool the program starts later can take it. */
#include "config.h"
#include "cupti_int.h"

#include <stdatomic.h>

#define SITE_WINDOWS 2

static unsigned cap;           /* launches a window with a call site; 0: none taken */
static unsigned windows;       /* windows whose launch callbacks were switched on */
static _Atomic bool on;        /* the launch callbacks are on now */
static _Atomic uint64_t taken; /* launches of this window so far (past cap: none taken) */
/* Inside a runtime launch (its driver call is no other): the switch generation at its
 * entry, 0 outside one. The exit callback of a launch under way when the callbacks go off
 * never comes; a flag would stay set, and the thread's direct driver launches of the next
 * window would be skipped uncounted. Every switch moves the generation on, so a mark of
 * an earlier one is stale. */
static _Atomic uint32_t switch_gen = 1;
static __thread uint32_t in_rt;

void gp_sites_init(unsigned launches_per_window)
{
	cap = launches_per_window;
}

static bool is_launch(CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
	uint8_t d = domain == CUPTI_CB_DOMAIN_RUNTIME_API  ? GP_CB_RUNTIME
	            : domain == CUPTI_CB_DOMAIN_DRIVER_API ? GP_CB_DRIVER
	                                                   : 0;
	return d && gp_cbid_class(d, cbid) == GP_API_LAUNCH;
}

bool gp_sites_wanted(CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
	return atomic_load_explicit(&on, memory_order_relaxed) && is_launch(domain, cbid);
}

bool gp_sites_spent(void)
{
	return atomic_load_explicit(&on, memory_order_relaxed) &&
	       atomic_load_explicit(&taken, memory_order_relaxed) > cap;
}

bool gp_sites_pending(void)
{
	return cap && (atomic_load(&on) || windows < SITE_WINDOWS);
}

void gp_sites_switch(CUpti_SubscriberHandle sub, bool have_sub, bool cuda_on)
{
	bool want = cuda_on && cap && have_sub && windows < SITE_WINDOWS;
	if (want == atomic_load(&on))
		return;
	if (want) {
		windows++;
		atomic_store(&taken, 0);
	}
	atomic_fetch_add(&switch_gen, 1);
	atomic_store(&on, want);
	for (unsigned i = 0; have_sub && i < gp_ncbids; i++)
		if (gp_cbids[i].cls == GP_API_LAUNCH)
			cuptiEnableCallback(want, sub,
			                    gp_cbids[i].domain == GP_CB_RUNTIME
			                        ? CUPTI_CB_DOMAIN_RUNTIME_API
			                        : CUPTI_CB_DOMAIN_DRIVER_API,
			                    gp_cbids[i].cbid);
}

void gp_sites_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                       const CUpti_CallbackData *cb, uint64_t corr)
{
	bool rt = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
	uint32_t gen = atomic_load_explicit(&switch_gen, memory_order_relaxed);
	if (cb->callbackSite == CUPTI_API_EXIT) {
		if (rt)
			in_rt = 0;
		return;
	}
	if (rt)
		in_rt = gen; /* set, not counted: a switch-off between entry and exit loses none */
	else if (in_rt == gen) /* cudaLaunchKernel's own cuLaunchKernel: the site is taken */
		return;
	uint64_t n = atomic_fetch_add_explicit(&taken, 1, memory_order_relaxed);
	if (n > cap)
		return;
	gp_event_t e = {.type = GP_EV_API,
	                .ts = gp_cu_api->now(),
	                .b = cbid,
	                .c = corr,
	                .tid = gp_cu_api->tid(),
	                .u8 = rt ? GP_CB_RUNTIME : GP_CB_DRIVER,
	                .u16 = GP_API_LAUNCH_SITE};
	if (n < cap)
		e.d = gp_site_stack_capture();
	else /* the first launch past the cap: the window's sites end here */
		e.u16 |= GP_SITE_CAP_REACHED << 8;
	gp_cu_api->emit(&e);
}
