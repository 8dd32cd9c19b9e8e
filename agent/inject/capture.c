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

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

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

/* Switch to want (cuda/mem bits): 1 switched (*took: the ns it took in the application),
 * 0 already so, -1 refused (another thread switching, or the module busy: CUPTI's lock
 * held by its worker, the program's profiler running; the next boundary tries again). */
static int capture_switch(unsigned want, uint64_t *took)
{
	if (want == atomic_load_explicit(&gp_inj.cap_cur, memory_order_relaxed))
		return 0;
	int z = 0, rc = -1;
	if (!atomic_compare_exchange_strong(&gp_inj.cap_busy, &z, 1))
		return -1; /* another thread is switching; never wait for it */
	uint64_t t0 = gp_clock_ns();
	if (gp_inj.cupti_capture(want) == want) {
		*took = gp_clock_ns() - t0;
		atomic_store(&gp_inj.cap_cur, want);
		rc = 1;
	}
	atomic_store(&gp_inj.cap_busy, 0);
	return rc;
}

/* A capture record (GP_EV_CONTROL): modes capturing from ts on, at step idx (UINT32_MAX:
 * windows by cost); for those, cost and kind (GP_COSTWIN_*) and the window's number. The
 * modes are the switch's own (the caller's want), not cap_cur read after cap_busy was let
 * go: another thread's switch may have changed it since. */
static void capture_record(uint64_t ts, unsigned modes, uint64_t idx, uint64_t took, uint64_t cost,
                           unsigned kind, unsigned win)
{
	gp_event_t e = {.type = GP_EV_CONTROL,
	                .ts = ts,
	                .a = modes,
	                .b = idx,
	                .c = took,
	                .d = cost,
	                .u8 = (uint8_t)kind,
	                .u16 = (uint16_t)win};
	gp_inj_emit(&e);
}

/* Switch to want at step idx, recorded with what it cost; ts: when the step began (its
 * push), so the report counts the step as captured. */
static void capture_set(unsigned want, uint64_t idx, uint64_t ts)
{
	uint64_t t0 = gp_clock_ns(), took = 0;
	if (capture_switch(want, &took) == 1)
		capture_record(ts ? ts : t0, want, idx, took, 0, 0, 0);
}

static void capture_check(uint64_t idx, uint64_t ts)
{
	atomic_store_explicit(&gp_inj.steps_seen, 1, memory_order_relaxed);
	capture_set(gp_inj_capture_wanted(idx), idx, ts);
}

/* Sampled windows for a program whose steps the collector does not see (no step range,
 * no optimizer it knows: a JAX loop, an inference loop): by cost (costwin.h), from the
 * CUPTI module's thread at each of its flushes, with what it has counted so far, and once
 * more at the process's exit (after the last flush). Every window is recorded once
 * (GP_EV_CONTROL u8: why it ended, d: its estimated cost): when its switch-off takes
 * effect (one refused is asked again at each flush), when the program's steps are seen,
 * or at exit; what comes after its end (late records, the detach's cuptiFinalize) as a
 * late charge; while it is open its cost so far once a second, which stands for it when
 * the process dies with it open. Never waits for the application. */
#define SO_FAR_EVERY_NS 1000000000ull
static gp_costwin_t costwin; /* under costwin_lock: the CUPTI module's thread, the exit */
static pthread_mutex_t costwin_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t so_far_at; /* when the open window's cost so far was last recorded */
static bool finished;      /* recorded at exit: nothing opens after */
static bool to_steps;      /* finished as the steps were seen: what is traced after is theirs */

/* Record a window's end (kind: why), a late charge or its cost so far, if any */
static void cost_record(uint64_t now, uint64_t took, uint64_t cost, unsigned kind)
{
	if (cost || kind <= GP_COSTWIN_BY_STEPS)
		capture_record(now, atomic_load(&gp_inj.cap_cur), UINT32_MAX, took, cost, kind,
		               costwin.nwin);
}

/* No more windows by cost (the process ends, or its steps were seen: windows by steps from
 * then on): the open one ends where it is, unswitched, and what came after is charged */
static void costwin_finish(uint64_t now, const gp_costwin_seen_t *seen, int why)
{
	if (costwin.on || costwin.closing) {
		uint64_t c = gp_costwin_end(&costwin, now, seen, why);
		cost_record(now, 0, c, (unsigned)costwin.why);
	}
	cost_record(now, 0, gp_costwin_late(&costwin, seen), GP_CTRL_LATE);
	finished = true;
}

/* One look at the windows (costwin_lock held) */
static void costwin_look(uint64_t now, const gp_costwin_seen_t *seen)
{
	bool on = gp_costwin_tick(&costwin, now, seen);
	unsigned want = gp_inj_capture_wanted(0);
	uint64_t took = 0;
	want = on || capture_forced() ? want : want & ~(unsigned)GP_MODE_CUDA;
	int sw = capture_switch(want, &took);
	/* its switch-off took effect (a `gpuprof capture on` keeps it waiting: traced on,
	 * charged to it) */
	if (costwin.closing && !(atomic_load(&gp_inj.cap_cur) & GP_MODE_CUDA)) {
		uint64_t c = gp_costwin_end(&costwin, now, seen, GP_COSTWIN_OPEN);
		cost_record(now, took, c, (unsigned)costwin.why);
		return;
	}
	if (sw == 1) /* a window opened (or `gpuprof capture on|off`) */
		capture_record(now, want, UINT32_MAX, took, 0, 0, 0);
	/* the last window's cost after its end, to this look or to the next one's opening */
	cost_record(now, 0, gp_costwin_late(&costwin, seen), GP_CTRL_LATE);
	if ((costwin.on || costwin.closing) && now - so_far_at >= SO_FAR_EVERY_NS) {
		so_far_at = now;
		cost_record(now, 0, gp_costwin_cost(&costwin, seen), GP_CTRL_SO_FAR);
	}
}

void gp_inj_capture_tick(uint64_t now, uint64_t kernels, uint64_t measured_ns, bool at_exit)
{
	if (gp_inj.cap.how != GP_CAP_SAMPLED || !atomic_load(&gp_inj.cap_live))
		return;
	/* the worker's look may be under way as the process exits: the exit waits for it
	 * (microseconds; a second at most), the application's threads never */
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 1;
	if (pthread_mutex_timedlock(&costwin_lock, &dl) != 0)
		return;
	gp_costwin_seen_t seen = {.kernels = kernels, .measured_ns = measured_ns};
	bool steps = atomic_load_explicit(&gp_inj.steps_seen, memory_order_relaxed);
	/* steps seen before the first look: the windows are theirs from the start, and no
	 * window by cost was had. Once a window has been looked at (its cost so far may be
	 * on record), steps seen end it (GP_CTRL_BY_STEPS, unswitched: it goes on as theirs),
	 * so every window on record has its end: a PyTorch job's first step comes seconds
	 * after the first look, and its start-up window read as one its process died in. */
	bool steps_from_start = steps && !costwin.nwin;
	if (finished || steps_from_start) {
		/* after the exit's look only what came after is charged (the exit path looks
		 * twice); nothing opens */
		if (finished && at_exit && !to_steps)
			cost_record(now, 0, gp_costwin_late(&costwin, &seen), GP_CTRL_LATE);
		finished = true;
		to_steps = to_steps || steps;
	} else {
		if (!costwin.nwin) /* the first window: from the CUPTI module's start, at 0 */
			gp_costwin_start(&costwin, gp_inj.cap_t0, &(gp_costwin_seen_t){0});
		if (steps || at_exit) { /* steps seen just before the exit: theirs too */
			costwin_finish(now, &seen,
			               steps ? GP_COSTWIN_BY_STEPS : GP_COSTWIN_AT_EXIT);
			to_steps = steps;
		} else {
			costwin_look(now, &seen);
		}
	}
	pthread_mutex_unlock(&costwin_lock);
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
