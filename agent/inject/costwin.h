/* Capture windows by cost for a program whose steps the collector does not see (no step
 * range, no optimizer it knows: an inference loop, Hugging Face generate(), a JAX loop).
 * Pure: no clock, no CUPTI, no global state; capture.c feeds it the CUPTI module's
 * counters at each of its flushes, tests/unit/t_costwin.c a fake clock.
 *
 * Tracing such a program costs what its kernels cost to trace: measured on an H100, a
 * ResNet-50 inference loop traced throughout ran x1.71 and a generate() loop x1.6, and
 * a 60 s first window held most short jobs whole. So every window here ends on a budget
 * of estimated tracing cost, not on time alone, and the cost estimate is the larger of
 *   - the kernels traced at GP_COSTWIN_NS_PER_KERNEL (what tracing added per kernel to a
 *     host-bound loop, module hooks and allocator history included: bench/gpu-site.sh),
 *   - what this process measured: its threads' time inside kernel launch calls while
 *     traced (an upper bound on what CUPTI adds there), CUPTI's own overhead records and
 *     the detach's cuptiFinalize (its thread's time in it, cupti.c).
 * The first window (start-up, whose kernels tell the report what a step is) ends at
 * GP_COSTWIN_FIRST_NS of cost or GP_COSTWIN_FIRST_MAX_NS of time; then one window every
 * GP_COSTWIN_EVERY_NS at most, each ending at GP_COSTWIN_WIN_NS of cost or
 * GP_COSTWIN_WIN_MAX_NS of time, and opened only while the cost spent stays within
 * GP_COSTWIN_FIRST_NS + GP_COSTWIN_RATE_PPM of the time elapsed. A window's length is
 * thus its cost budget over the program's tracing slowdown: a launch-bound loop gets a
 * short one, a compute-bound one (few kernels) the whole GP_COSTWIN_WIN_MAX_NS.
 *
 * Every window that opened is charged exactly once, whichever way it ends:
 *   - its budget or time reached, tick asks for kernels off, but the window ends only when
 *     the caller says the switch-off took effect (gp_costwin_end): one refused (CUPTI busy,
 *     the program's profiler running, `gpuprof capture on`) is asked again at the next
 *     tick, no other window opens meanwhile, and the kernels traced meanwhile are its own;
 *   - the process ends, or the program's steps are seen, with it open: gp_costwin_end
 *     with GP_COSTWIN_AT_EXIT or GP_COSTWIN_BY_STEPS.
 * What comes after a window's end is still its cost (gp_costwin_late): the activity
 * records the switch-off's flush delivers later (kernels that ran in it), the detach's
 * cuptiFinalize, and anything traced while no window is open (`gpuprof capture on`). A
 * window's charge is its whole cost from its start up to the next window, the larger of
 * model and measure over that whole stretch, so it is never counted twice.
 * capture.c records each end, each late charge and, once a second, the open window's cost
 * so far (GP_EV_CONTROL, common/event.h GP_CTRL_*), so a process killed in a window leaves
 * its cost in the rank file; its last look comes at exit, after the CUPTI module's last
 * flush (cupti.c at_exit_flush: atexit, and the library's on_exit). A program whose steps
 * are seen before the first look has no window by cost; seen later, they end the open
 * window (GP_COSTWIN_BY_STEPS, unswitched: it goes on as the steps' start-up window). */
#ifndef GP_COSTWIN_H
#define GP_COSTWIN_H

#include "event.h"

#include <stdbool.h>
#include <stdint.h>

#define GP_COSTWIN_NS_PER_KERNEL 20000ull              /* 20 us a traced kernel */
#define GP_COSTWIN_FIRST_NS      (150ull * 1000000ull) /* 0.5 % of a 30 s job */
#define GP_COSTWIN_FIRST_MAX_NS  (60ull * 1000000000ull)
#define GP_COSTWIN_WIN_NS        (300ull * 1000000ull) /* 0.25 % of EVERY */
#define GP_COSTWIN_WIN_MAX_NS    (5ull * 1000000000ull)
#define GP_COSTWIN_EVERY_NS      (120ull * 1000000000ull)
#define GP_COSTWIN_RATE_PPM      5000ull /* 0.5 % of the time elapsed */

/* Cumulative counters of the CUPTI module (never reset): kernels recorded, and the ns it
 * measured of its own cost (launch calls while traced, overhead records, detaches). */
typedef struct gp_costwin_seen {
	uint64_t kernels;
	uint64_t measured_ns;
} gp_costwin_seen_t;

/* Why a window ended: GP_EV_CONTROL u8 of its end record (common/event.h) */
enum {
	GP_COSTWIN_OPEN,
	GP_COSTWIN_BY_KERNELS = GP_CTRL_BY_KERNELS,
	GP_COSTWIN_BY_MEASURED = GP_CTRL_BY_MEASURED,
	GP_COSTWIN_BY_TIME = GP_CTRL_BY_TIME,
	GP_COSTWIN_AT_EXIT = GP_CTRL_AT_EXIT,
	GP_COSTWIN_BY_STEPS = GP_CTRL_BY_STEPS,
};

typedef struct gp_costwin {
	uint64_t t0;            /* the first window's start (CUPTI's) */
	uint64_t win_t0;        /* the open (or last) window's start */
	gp_costwin_seen_t at0;  /* the counters at its start */
	uint64_t charged_ns;    /* what the open (or last) window has been charged so far */
	uint64_t spent_ns;      /* estimated cost charged, every window */
	uint64_t unrecorded_ns; /* of it, late cost charged as a window opened: the next
	                         * gp_costwin_late returns it */
	uint64_t traced_ns;     /* time traced in the ended windows */
	unsigned nwin;          /* windows opened, the first included */
	unsigned nended;        /* of them, ended (charged by gp_costwin_end) */
	bool on;                /* kernels wanted traced now */
	bool closing;           /* its budget or time reached: kernels off asked, not yet done */
	int why;                /* GP_COSTWIN_*: why the last one ended (or is ending) */
} gp_costwin_t;

/* The first window opens at now. */
void gp_costwin_start(gp_costwin_t *w, uint64_t now, const gp_costwin_seen_t *seen);
/* The estimated cost of the open (or closing) window so far, from its start (0 when none). */
uint64_t gp_costwin_cost(const gp_costwin_t *w, const gp_costwin_seen_t *seen);
/* One look, at any period: should kernels be traced now? Opens windows, and asks for a
 * window's end (closing) once its budget or time is reached; never opens one while the
 * last one's end is still awaited. */
bool gp_costwin_tick(gp_costwin_t *w, uint64_t now, const gp_costwin_seen_t *seen);
/* The open or closing window ends now (its switch-off took effect; why: the reason when it
 * was still open: GP_COSTWIN_AT_EXIT, GP_COSTWIN_BY_STEPS): charges its cost from its start
 * and returns it; 0 and nothing done when none is open or closing. */
uint64_t gp_costwin_end(gp_costwin_t *w, uint64_t now, const gp_costwin_seen_t *seen, int why);
/* With no window open or closing: the cost the last one's stretch gained since it was last
 * charged (late records, a detach), charged to it now; 0 when none. Late cost that a new
 * window's opening charged (tick) is returned by the next call, whenever it comes. */
uint64_t gp_costwin_late(gp_costwin_t *w, const gp_costwin_seen_t *seen);

#endif
