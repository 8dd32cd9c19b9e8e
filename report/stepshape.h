/* Are a rank's steps alike? (stepshape.c) A median describes steps that are alike; a loop
 * whose steps alternate between 13 and 130 ms (an input-bound loader), or slow down over
 * the run, has a median that is neither its steps nor its throughput. The shape is said,
 * and the throughput (the mean step period, steps a second) stands beside the median. */
#ifndef GP_STEPSHAPE_H
#define GP_STEPSHAPE_H

#include <stdbool.h>
#include <stddef.h>

/* Two groups of steps at least GP_SHAPE_GROUPS_RATIO apart, each holding at least
 * GP_SHAPE_GROUP_MIN of the steps, that explain GP_SHAPE_SEPARATION of the variance of
 * the log step times (Otsu's criterion): bimodal. Alternating: the steps change group at
 * GP_SHAPE_ALTERNATE of their transitions. */
#define GP_SHAPE_GROUPS_RATIO 2.0
#define GP_SHAPE_GROUP_MIN    0.10
#define GP_SHAPE_SEPARATION   0.80
#define GP_SHAPE_ALTERNATE    0.60
/* The last quarter's median GP_SHAPE_DRIFT from the first quarter's, the middle half's
 * between them: drifting. */
#define GP_SHAPE_DRIFT 0.25
/* The mean period that far from the median (either way), with no shape above: uneven. */
#define GP_SHAPE_UNEVEN 0.25
/* Fewer samples than this: no shape is said (alike). */
#define GP_SHAPE_MIN_SAMPLES 8

typedef struct gp_step_shape {
	char shape[16];         /* alike, bimodal, alternating, drifting, uneven; shifted
	                           (steps.c: a level shift found, steps.shift) */
	double low_ms, high_ms; /* bimodal/alternating: each group's median; drifting: the
	                           first and last quarters' medians; shifted: the medians
	                           before and from the onset */
	double high_share;      /* bimodal/alternating: share of steps in the slower group;
	                           shifted: of the steps from the onset */
	/* shifted: each side's own shape (bimodal or alternating, its groups' medians: of
	 * 10/30 ms, then 15/45, not one group of 10 and 15 and one of 30 and 45; else alike
	 * and its median) */
	char phase[2][16];
	double phase_low_ms[2], phase_high_ms[2];
} gp_step_shape_t;

/* The shape of v[0..n), step times in step order; mean_period_ms: the throughput's step
 * (0: not known). */
void gp_step_shape(const double *v, size_t n, double median_ms, double mean_period_ms,
                   gp_step_shape_t *out);

/* A level shift: the steps got slower at one step and stayed slower to the end (a
 * throttled GPU, a neighbour, a leak paging, a data-loader worker that died). The live
 * view's slowdown (common/live.c) with its thresholds, common/live.h's GP_LIVE_SLOW_*, one
 * truth for both: the steps from the onset on have a median >= GP_LIVE_SLOW_RATIO times
 * the median of the >= GP_LIVE_SLOW_MIN_BASE steps before it, and the onset is the change
 * point that best splits the steps into fast before and slow (that ratio or more) from it
 * on, as live.c's ivlog_onset. The final report sees the whole run, so besides:
 *   - at least GP_SHIFT_MIN_AFTER of the steps (and GP_LIVE_SLOW_MIN_STEPS) are slow
 *     from the onset on: a slow last step, a slow last few, are not a shift;
 *   - at most GP_SHIFT_MISFIT of all the steps are on the wrong side of the split
 *     (alternating or bimodal steps, gradient accumulation's, have a slow step on every
 *     side of any split);
 *   - the last quarter of the slow steps (GP_LIVE_SLOW_MIN_STEPS at least) are still slow:
 *     a slowdown that recovered is over (live.c clears it then too);
 *   - each side is one level: the second half of each side within GP_LIVE_SLOW_RATIO of
 *     its first half (a drift is no shift; stepshape's drifting says it);
 *   - host_timed (a headline of host periods: no GPU timing): the fast steps before it
 *     last at least as long as GP_LIVE_SLOW_MIN_BASE slow ones. A host that runs ahead of
 *     the GPU at the start launches until CUDA's queue is full, then each step waits for
 *     the GPU: its first steps look fast for a few ms (the nvml fixture: 15 steps of
 *     0.6 ms, then the GPU's 7 ms from step 18, every step 7 ms on the GPU). */
#define GP_SHIFT_MIN_AFTER 0.05
#define GP_SHIFT_MISFIT    0.15
/* Besides, where no one shift is found:
 *   - steps that alternate with a period of 2 to GP_SHIFT_MAX_PERIOD steps (each step near
 *     the step a period later and not the next: on the mean, the differences a period
 *     apart no more than GP_SHIFT_PERIODIC_NEAR of those of neighbours): the search on
 *     the medians of blocks of a period, the onset then placed at the step
 *     (6/18 ms, then 9/27 ms: 12, then 18);
 *   - a staircase: up to GP_SHIFT_MAX_LEVELS levels, each one level of at least
 *     GP_SHIFT_LEVEL_MIN of the steps (GP_LIVE_SLOW_MIN_STEPS), each GP_LIVE_SLOW_RATIO or
 *     more from the one before, up or down, the last to the end and that ratio above the
 *     first (10, 15, 22 ms; five levels of 1.23x; 10, 15, 12, 20; 10, 20, 10, 20: a
 *     recovery, then slower again); found by binary segmentation (stepshape.c: segment),
 *     anywhere in the run (a staircase that starts late). */
#define GP_SHIFT_MAX_PERIOD    8
#define GP_SHIFT_PERIODIC_NEAR 0.25
#define GP_SHIFT_MAX_LEVELS    8
#define GP_SHIFT_LEVEL_MIN     0.02
/* The final report's search (steps.c: level_shift) is on every step's time up to this
 * many steps, else on the medians of GP_STEP_KEEP blocks of them (steps.h): the period
 * and onset in steps; the search's cost grows with the square of the count. */
#define GP_SHIFT_RAW_MAX    8192
#define GP_SHIFT_WORK_SHARE 0.5
/* the SM clock fell at the onset: its median after below this share of its median before */
#define GP_SHIFT_CLOCK_FELL 0.9
/* a throttle reason is the clock's where it holds in this share of the samples from the
 * onset on more than in those before it; the GPU's use fell where its utilisation's median
 * after is below this share of the one before */
#define GP_SHIFT_REASON_SHARE 0.25
#define GP_SHIFT_UTIL_FELL    0.8
typedef struct gp_step_shift {
	double ratio;               /* after_ms / before_ms; 0: no shift */
	double before_ms, after_ms; /* the medians either side of the onset */
	unsigned nbefore, nafter;   /* samples either side; steps.c: steps, also where more
	                               than the kept ones */
	unsigned at;                /* the onset's index into the samples */
	unsigned step;              /* its step number, from 0 (steps.c) */
	double at_s; /* when that step began, s after the program's start (steps.c); -1 unknown */
	/* how it was found: period > 1, on the medians of blocks of that many steps (the
	 * steps alternate with that period); nlevels > 2, a staircase: each level's median
	 * and its first sample (level_step: its step number, steps.c), the shift above the
	 * largest of the rises between them */
	unsigned period, nlevels;
	/* steps.c: found on the medians of this many blocks of consecutive steps (more than
	 * GP_SHIFT_RAW_MAX steps), 0: on every step; period then in steps (rounded), the
	 * blocks' own in block_period */
	unsigned blocks, block_period;
	unsigned recovered; /* a staircase's last level (index, > 1) back within
	                       GP_LIVE_SLOW_RATIO of the first before the end's; 0: none */
	double level_ms[GP_SHIFT_MAX_LEVELS];
	unsigned level_at[GP_SHIFT_MAX_LEVELS], level_step[GP_SHIFT_MAX_LEVELS];
	/* steps.c, from the steps either side of the onset: the work per step, where it grew
	 * with the time (work_ratio >= 1 + GP_SHIFT_WORK_SHARE x (ratio - 1): a planned change,
	 * a larger batch, not a slower node; 0: it did not, or not measured) and which measure
	 * (kernels, bytes copied or set, thread blocks launched, a step's medians); NVML's SM
	 * clock's medians either side (MHz; 0: no samples) */
	double work_ratio;
	char work_what[40]; /* text, not a pointer: the summary cache (summary.c) keeps the
	                       rank's bytes, and a later process's strings lie elsewhere */
	/* the kernels a step and their thread blocks a step, after over before (0: not
	 * measured): more, smaller kernels for the same blocks are no more work (an eager
	 * fallback of a compiled graph: the tester, session 33: D13) */
	double kernels_ratio, blocks_ratio;
	double clock_before_mhz, clock_after_mhz;
	/* ... and why it fell (steps.c shift_clock): NVML's throttle reasons that hold in a
	 * quarter of the samples from the onset on more than before it (names, comma-separated;
	 * empty: none), and the GPU's utilisation's medians either side (%, -1: no samples): a
	 * clock that falls with the GPU's use follows a GPU that waits, it does not cause it */
	char clock_reasons[96];
	double util_before, util_after;
	double idle_before, idle_after; /* the share of those samples with NVML's GPU-idle reason */
} gp_step_shift_t;

/* The shift in v[0..n) (step times in step order), or false (out zeroed); out->step and
 * out->at_s are the caller's to fill. */
bool gp_step_shift(const double *v, size_t n, bool host_timed, gp_step_shift_t *out);

#endif
