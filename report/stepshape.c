/* Are a rank's steps alike (stepshape.h)? From the headline's samples in step order. */
#include "config.h"
#include "stepshape.h"
#include "stats.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Otsu's split of sorted log values l[0..n): the index k of the first value of the upper
 * group that maximises the variance between the groups; its share of the whole variance
 * in *eta. */
static size_t otsu_split(const double *l, size_t n, double *eta)
{
	double total = 0, total2 = 0;
	for (size_t i = 0; i < n; i++)
		total += l[i], total2 += l[i] * l[i];
	double mean = total / n, var = total2 / n - mean * mean;
	double best = -1, lo_sum = 0;
	size_t k = 0;
	for (size_t i = 1; i < n; i++) {
		lo_sum += l[i - 1];
		double w0 = (double)i / n, w1 = 1 - w0;
		double m0 = lo_sum / i, m1 = (total - lo_sum) / (n - i);
		double between = w0 * w1 * (m0 - m1) * (m0 - m1);
		if (between > best)
			best = between, k = i;
	}
	*eta = var > 0 ? best / var : 0;
	return k;
}

static bool two_groups(const double *v, size_t n, gp_step_shape_t *out)
{
	double *s = malloc(n * sizeof(double)), *l = malloc(n * sizeof(double));
	bool found = false;
	if (!s || !l)
		goto out;
	memcpy(s, v, n * sizeof(double));
	qsort(s, n, sizeof(double), cmp_double);
	if (s[0] <= 0)
		goto out;
	for (size_t i = 0; i < n; i++)
		l[i] = log(s[i]);
	double eta;
	size_t k = otsu_split(l, n, &eta);
	double min_group = GP_SHAPE_GROUP_MIN * n;
	if (k < min_group || n - k < min_group || eta < GP_SHAPE_SEPARATION)
		goto out;
	double lo = gp_median(s, k), hi = gp_median(s + k, n - k);
	if (hi < GP_SHAPE_GROUPS_RATIO * lo)
		goto out;
	/* which group each step is in, in step order: how often the next is in the other */
	double cut = s[k];
	size_t changes = 0;
	for (size_t i = 1; i < n; i++)
		changes += (v[i] >= cut) != (v[i - 1] >= cut);
	snprintf(out->shape, sizeof(out->shape), "%s",
	         changes >= GP_SHAPE_ALTERNATE * (n - 1) ? "alternating" : "bimodal");
	out->low_ms = lo, out->high_ms = hi;
	out->high_share = (double)(n - k) / n;
	found = true;
out:
	free(s);
	free(l);
	return found;
}

/* The median of v[a..b) (a copy: v stays in step order). */
static double median_of(const double *v, size_t a, size_t b)
{
	size_t n = b - a;
	double *s = malloc(n * sizeof(double));
	if (!s)
		return 0;
	memcpy(s, v + a, n * sizeof(double));
	double m = gp_median(s, n);
	free(s);
	return m;
}

static bool drifting(const double *v, size_t n, gp_step_shape_t *out)
{
	size_t q = n / 4;
	double first = median_of(v, 0, q), last = median_of(v, n - q, n),
	       middle = median_of(v, q, n - q);
	if (first <= 0 || fabs(last - first) < GP_SHAPE_DRIFT * first)
		return false;
	double lo = first < last ? first : last, hi = first < last ? last : first;
	if (middle < lo || middle > hi)
		return false;
	snprintf(out->shape, sizeof(out->shape), "drifting");
	out->low_ms = first, out->high_ms = last;
	return true;
}

void gp_step_shape(const double *v, size_t n, double median_ms, double mean_period_ms,
                   gp_step_shape_t *out)
{
	memset(out, 0, sizeof(*out));
	snprintf(out->shape, sizeof(out->shape), "alike");
	if (!v || n < GP_SHAPE_MIN_SAMPLES)
		return;
	if (two_groups(v, n, out) || drifting(v, n, out))
		return;
	if (median_ms > 0 && mean_period_ms > 0 &&
	    fabs(mean_period_ms - median_ms) > GP_SHAPE_UNEVEN * median_ms)
		snprintf(out->shape, sizeof(out->shape), "uneven");
}
