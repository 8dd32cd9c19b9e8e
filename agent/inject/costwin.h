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
 *     the detach's cuptiFinalize.
 * The first window (start-up, whose kernels tell the report what a step is) ends at
 * GP_COSTWIN_FIRST_NS of cost or GP_COSTWIN_FIRST_MAX_NS of time; then one window every
 * GP_COSTWIN_EVERY_NS at most, each ending at GP_COSTWIN_WIN_NS of cost or
 * GP_COSTWIN_WIN_MAX_NS of time, and opened only while the cost spent stays within
 * GP_COSTWIN_FIRST_NS + GP_COSTWIN_RATE_PPM of the time elapsed. A window's length is
 * thus its cost budget over the program's tracing slowdown: a launch-bound loop gets a
 * short one, a compute-bound one (few kernels) the whole GP_COSTWIN_WIN_MAX_NS. */
#ifndef GP_COSTWIN_H
#define GP_COSTWIN_H

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

/* Why the last window ended */
enum { GP_COSTWIN_OPEN, GP_COSTWIN_BY_KERNELS, GP_COSTWIN_BY_MEASURED, GP_COSTWIN_BY_TIME };

typedef struct gp_costwin {
	uint64_t t0;           /* the first window's start (CUPTI's) */
	uint64_t win_t0;       /* the open (or last) window's start */
	gp_costwin_seen_t at0; /* the counters at its start */
	uint64_t spent_ns;     /* estimated cost of the closed windows */
	uint64_t traced_ns;    /* time traced in the closed windows */
	unsigned nwin;         /* windows opened, the first included */
	bool on;
	int why; /* GP_COSTWIN_*: why the last one ended */
} gp_costwin_t;

/* The first window opens at now. */
void gp_costwin_start(gp_costwin_t *w, uint64_t now, const gp_costwin_seen_t *seen);
/* The estimated cost of the open window so far (0 when none is open). */
uint64_t gp_costwin_cost(const gp_costwin_t *w, const gp_costwin_seen_t *seen);
/* One look, at any period: should kernels be traced now? Opens and closes windows. */
bool gp_costwin_tick(gp_costwin_t *w, uint64_t now, const gp_costwin_seen_t *seen);

#endif
