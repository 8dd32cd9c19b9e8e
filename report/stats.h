/* The report's statistics, one implementation each: medians and percentiles of samples,
 * and the two-sample test `gpuprof diff` uses to call a change real. */
#ifndef GP_STATS_H
#define GP_STATS_H

#include <stddef.h>
#include <stdint.h>

/* The q-quantile (0..1) of n doubles by the nearest-rank rule (q = 0.5 of an even count:
 * the mean of the two middle values). Reorders nothing: works on a sorted copy. 0 when
 * n is 0. */
double gp_quantile(const double *v, size_t n, double q);
static inline double gp_median(const double *v, size_t n)
{
	return gp_quantile(v, n, 0.5);
}
/* Sort n doubles in place, ascending. */
void gp_sort_doubles(double *v, size_t n);
/* gp_median of sorted s[0..n) with one element equal to v left out (the median of the
 * other ranks, for every rank, from one sort); 0 when nothing is left. */
double gp_median_without(const double *s, size_t n, double v);
/* The same on integers, in place (introselect: O(n) on every input, equal values included;
 * reorders v). The upper middle of an even count. 0 when n is 0. */
uint64_t gp_median_u64(uint64_t *v, size_t n);
double gp_mean(const double *v, size_t n);
/* A figure of one of many (a rank's, a node's): its value and its index. */
typedef struct gp_fig {
	double v;
	unsigned i;
} gp_fig_t;
/* qsort's order of figures: by value, then index (equal values keep their order). */
int gp_fig_cmp(const void *a, const void *b);
/* The median (as gp_median) and a 95 % interval of it from the samples' order statistics
 * (distribution-free: the ranks n/2 -+ 0.98 sqrt(n) of the sorted values, as binomial
 * tables give them), from one sort; *lo = *hi = 0 below 6 samples, where no such interval
 * exists; all 0 without samples. */
void gp_median_interval(const double *v, size_t n, double *med, double *lo, double *hi);
/* Coefficient of variation (sample standard deviation / mean); 0 below 2 samples. */
double gp_cv(const double *v, size_t n);

/* Mann-Whitney U test of "b's values tend to be larger than a's" against "neither
 * tends to be larger": normal approximation with the tie correction (fine from about
 * 8 samples a side; below that the p-value is returned as 1). *effect gets the common
 * language effect size P(b > a) + P(b = a)/2. Returns the two-sided p-value. */
/* the fewest samples a side gp_mann_whitney tests (fewer: p = 1) */
#define GP_MW_MIN 8
double gp_mann_whitney(const double *a, size_t na, const double *b, size_t nb, double *effect);

#endif
