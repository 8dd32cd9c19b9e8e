/* Are a rank's steps alike? (stepshape.c) A median describes steps that are alike; a loop
 * whose steps alternate between 13 and 130 ms (an input-bound loader), or slow down over
 * the run, has a median that is neither its steps nor its throughput. The shape is said,
 * and the throughput (the mean step period, steps a second) stands beside the median. */
#ifndef GP_STEPSHAPE_H
#define GP_STEPSHAPE_H

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
	char shape[16];         /* alike, bimodal, alternating, drifting, uneven */
	double low_ms, high_ms; /* bimodal/alternating: each group's median; drifting: the
	                           first and last quarters' medians */
	double high_share;      /* bimodal/alternating: share of steps in the slower group */
} gp_step_shape_t;

/* The shape of v[0..n), step times in step order; mean_period_ms: the throughput's step
 * (0: not known). */
void gp_step_shape(const double *v, size_t n, double median_ms, double mean_period_ms,
                   gp_step_shape_t *out);

#endif
