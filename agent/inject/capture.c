/* Capture windows (inject_int.h).
 * CUDA activity tracing costs what CUPTI costs, so it can be limited to chosen steps:
 * GPUPROF_CAPTURE=steps=A-B[,C-D...] (0-based step indices, inclusive) or
 * cudaprofilerapi (between cudaProfilerStart and Stop, as nsys --capture-range), and the
 * ring header's `modes` word lets the agent or `gpuprof capture on|off` switch cuda/mem
 * on demand. Switches happen at a step boundary (the start of an outermost range of the
 * default domain named like the step range: GPUPROF_STEP_RANGE, else the first outermost
 * name seen twice) on the thread that begins the step, and each is recorded with what it
 * cost (GP_EV_CONTROL). mem is not windowed by steps (live bytes need every allocation),
 * only switched on demand. */
#include "config.h"
#include "inject_int.h"
#include "clock.h"
#include "costwin.h"
#include "modes.h"

#include <stdatomic.h>

/* Is CUDA activity asked for now whatever the windows say (`gpuprof capture on`)? */
static bool capture_forced(void)
{
	unsigned req = atomic_load_explicit(&gp_inj.ring.hdr->modes, memory_order_relaxed);
	return (req & GP_CAPTURE_FORCED) && (req & GP_MODE_CUDA);
}

/* The cuda/mem bits wanted now, at step idx. */
unsigned gp_inj_capture_wanted(uint64_t idx)
{
	unsigned req = atomic_load_explicit(&gp_inj.ring.hdr->modes, memory_order_relaxed);
	unsigned want = (req ? req : gp_inj.modes) & gp_inj.modes & (GP_MODE_CUDA | GP_MODE_MEM);
	bool in = gp_capture_in(&gp_inj.cap, idx);
	if (gp_inj.cap.how == GP_CAP_PROFILER)
		in = atomic_load_explicit(&gp_inj.cap_prof, memory_order_relaxed);
	/* `capture on` between windows: it said it succeeded and did nothing */
	return in || capture_forced() ? want : want & ~(unsigned)GP_MODE_CUDA;
}

/* Switch to want (cuda/mem bits) at step idx; ts: when the step began (its push), so
 * the report counts the step as captured; cost, why: a window by cost that ends (its
 * estimated tracing cost, GP_COSTWIN_*), else 0. */
static void capture_set(unsigned want, uint64_t idx, uint64_t ts, uint64_t cost, unsigned why)
{
	if (want == atomic_load_explicit(&gp_inj.cap_cur, memory_order_relaxed))
		return;
	int z = 0;
	if (!atomic_compare_exchange_strong(&gp_inj.cap_busy, &z, 1))
		return; /* another thread is switching; never wait for it */
	uint64_t t0 = gp_clock_ns();
	unsigned got = gp_inj.cupti_capture(want);
	if (got == want) { /* else the module was busy: the next boundary tries again */
		gp_event_t e = {.type = GP_EV_CONTROL,
		                .ts = ts ? ts : t0,
		                .a = want,
		                .b = idx,
		                .d = cost,
		                .u8 = (uint8_t)why};
		e.c = gp_clock_ns() - t0;
		gp_inj_emit(&e);
		atomic_store(&gp_inj.cap_cur, want);
	}
	atomic_store(&gp_inj.cap_busy, 0);
}

static void capture_check(uint64_t idx, uint64_t ts)
{
	atomic_store_explicit(&gp_inj.steps_seen, 1, memory_order_relaxed);
	capture_set(gp_inj_capture_wanted(idx), idx, ts, 0, 0);
}

/* Sampled windows for a program whose steps the collector does not see (no step range,
 * no optimizer it knows: a JAX loop, an inference loop): by cost (costwin.h), from the
 * CUPTI module's thread at each of its flushes, with what it has counted so far. Each
 * window's end records its estimated cost and why it ended (GP_EV_CONTROL d, u8), so the
 * report can say what share was traced and what it cost. Never waits. */
static gp_costwin_t costwin; /* the CUPTI module's thread only */
void gp_inj_capture_tick(uint64_t now, uint64_t kernels, uint64_t measured_ns)
{
	if (gp_inj.cap.how != GP_CAP_SAMPLED || !atomic_load(&gp_inj.cap_live) ||
	    atomic_load_explicit(&gp_inj.steps_seen, memory_order_relaxed))
		return;
	gp_costwin_seen_t seen = {.kernels = kernels, .measured_ns = measured_ns};
	if (!costwin.nwin) /* the first window: from the CUPTI module's start, counters at 0 */
		gp_costwin_start(&costwin, gp_inj.cap_t0, &(gp_costwin_seen_t){0});
	uint64_t cost = gp_costwin_cost(&costwin, &seen);
	bool was = costwin.on, on = gp_costwin_tick(&costwin, now, &seen);
	bool ended = was && !on; /* else no window's end to record */
	unsigned want = gp_inj_capture_wanted(0);
	capture_set(on || capture_forced() ? want : want & ~(unsigned)GP_MODE_CUDA, UINT32_MAX, 0,
	            ended ? cost : 0, ended ? (unsigned)costwin.why : 0);
}

/* An optimizer's step returned (the PyTorch integration): the next step begins. The
 * boundary for programs without a step range of their own. */
void gp_inj_optimizer_boundary(uint64_t ts)
{
	uint64_t n = atomic_fetch_add_explicit(&gp_inj.opt_idx, 1, memory_order_relaxed) + 1;
	if (atomic_load_explicit(&gp_inj.cap_live, memory_order_relaxed) &&
	    !atomic_load_explicit(&gp_inj.step_name, memory_order_relaxed))
		capture_check(n, ts);
}

/* Called for every outermost push of the default domain while CUPTI runs. */
void gp_inj_step_boundary(uint32_t name, uint64_t ts)
{
	uint32_t step = atomic_load_explicit(&gp_inj.step_name, memory_order_relaxed);
	if (!step) { /* learn the step range: the first outermost name seen twice */
		for (int i = 0; i < 8 && !step; i++) {
			uint64_t v = atomic_load(&gp_inj.seen0[i]);
			if (!v) {
				uint64_t mine = (uint64_t)name << 8 | 1;
				if (atomic_compare_exchange_strong(&gp_inj.seen0[i], &v, mine))
					return;
			}
			if (v >> 8 == name) {
				uint32_t z = 0;
				atomic_compare_exchange_strong(&gp_inj.step_name, &z, name);
				/* it began twice: this is step 1 */
				atomic_store(&gp_inj.step_idx, 1);
				step = name;
			}
		}
		if (!step)
			return;
	} else if (name != step) {
		return;
	}
	uint64_t idx = atomic_fetch_add_explicit(&gp_inj.step_idx, 1, memory_order_relaxed);
	capture_check(idx, ts);
}

void gp_inj_on_profiler(int start)
{
	atomic_store(&gp_inj.cap_prof, start);
	if (gp_inj.cap.how == GP_CAP_PROFILER && atomic_load(&gp_inj.cap_live))
		capture_check(atomic_load(&gp_inj.step_idx), 0);
}
