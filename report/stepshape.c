/* Are a rank's steps alike (stepshape.h)? From the headline's samples in step order. */
#include "config.h"
#include "stepshape.h"
#include "stats.h"
#include "live.h"

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

/* ---- a level shift (stepshape.h) ---- */

/* The median of v[a..b) (b > a), and whether its second half stays within the ratio of
 * its first half (one level, not a drift). */
static bool one_level(const double *v, size_t a, size_t b)
{
	size_t h = (b - a) / 2;
	if (h < GP_LIVE_SLOW_MIN_STEPS)
		return true; /* too few to see a trend in */
	double x = median_of(v, a, a + h), y = median_of(v, b - h, b);
	double lo = x < y ? x : y, hi = x < y ? y : x;
	return lo > 0 && hi < GP_LIVE_SLOW_RATIO * lo;
}

/* How many of sorted s[0..n) are below x */
static size_t below(const double *s, size_t n, double x)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (s[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The best split k of v[0..n) (min_base <= k, n - k >= min_after): the median of the
 * steps before k is the base, the ratio times it the threshold; the steps on the wrong side
 * of it (slow before k, fast from k on) counted, the fewest wins; the onset step itself slow
 * (live.c's ivlog_onset). O(n log n) but the insertion (memmove of at most
 * GP_SHIFT_RAW_MAX doubles). 0: none; *wrong: its count. */
static size_t best_split(const double *v, size_t n, size_t min_base, size_t min_after,
                         size_t *wrong)
{
	double *s = malloc(n * sizeof(double)), *all = malloc(n * sizeof(double));
	size_t best_k = 0, best_wrong = SIZE_MAX;
	if (!s || !all)
		goto out;
	memcpy(all, v, n * sizeof(double));
	qsort(all, n, sizeof(double), cmp_double);
	for (size_t k = 1; k < n; k++) {
		size_t j = below(s, k - 1, v[k - 1]); /* insert v[k - 1] */
		memmove(s + j + 1, s + j, (k - 1 - j) * sizeof(double));
		s[j] = v[k - 1];
		if (k < min_base || n - k < min_after)
			continue;
		double thr =
		    GP_LIVE_SLOW_RATIO * (k % 2 ? s[k / 2] : (s[k / 2 - 1] + s[k / 2]) / 2);
		if (v[k] < thr)
			continue;
		size_t fast_before = below(s, k, thr), fast_all = below(all, n, thr);
		size_t w = (k - fast_before) + (fast_all - fast_before);
		if (w < best_wrong)
			best_wrong = w, best_k = k;
	}
out:
	free(all);
	free(s);
	*wrong = best_wrong;
	return best_k;
}

static size_t min_after_of(size_t n)
{
	size_t min_after = (size_t)ceil(GP_SHIFT_MIN_AFTER * (double)n);
	return min_after < GP_LIVE_SLOW_MIN_STEPS ? GP_LIVE_SLOW_MIN_STEPS : min_after;
}

/* host_timed: the fast steps before k last at least as long as GP_LIVE_SLOW_MIN_BASE slow
 * ones (stepshape.h) */
static bool long_enough(const double *v, size_t k, bool host_timed, double after)
{
	double fast_ms = 0;
	for (size_t i = 0; i < k; i++)
		fast_ms += v[i];
	return !host_timed || fast_ms >= GP_LIVE_SLOW_MIN_BASE * after;
}

/* One shift, each side one level (stepshape.h) */
static bool one_shift(const double *v, size_t n, size_t base, bool host_timed, gp_step_shift_t *out)
{
	size_t min_after = min_after_of(n), best_wrong;
	if (!v || n < base + min_after)
		return false;
	size_t best_k = best_split(v, n, base, min_after, &best_wrong);
	if (!best_k || (double)best_wrong > GP_SHIFT_MISFIT * (double)n)
		return false;
	double before = median_of(v, 0, best_k), after = median_of(v, best_k, n);
	size_t tail = (n - best_k) / 4;
	if (tail < GP_LIVE_SLOW_MIN_STEPS)
		tail = GP_LIVE_SLOW_MIN_STEPS;
	if (!(before > 0) || after < GP_LIVE_SLOW_RATIO * before ||
	    median_of(v, n - tail, n) < GP_LIVE_SLOW_RATIO * before || !one_level(v, 0, best_k) ||
	    !one_level(v, best_k, n) || !long_enough(v, best_k, host_timed, after))
		return false;
	out->ratio = after / before;
	out->before_ms = before, out->after_ms = after;
	out->nbefore = (unsigned)best_k, out->nafter = (unsigned)(n - best_k);
	out->at = (unsigned)best_k;
	out->nlevels = 2, out->period = 1;
	out->level_ms[0] = before, out->level_ms[1] = after;
	out->level_at[0] = 0, out->level_at[1] = (unsigned)best_k;
	return true;
}

/* A staircase (stepshape.h), by binary segmentation: each piece split where the log step
 * times' squared error about each side's mean is least, kept where the two sides' medians
 * are GP_LIVE_SLOW_RATIO apart (either way) and the steps just either side of the cut are
 * sqrt of that apart (a step, not a drift cut in two); then adjacent levels closer than
 * the ratio merged. The steps' log times' prefix sums in cum[0..n]. */
static void segment(const double *v, const double *cum, size_t a, size_t b, size_t minlen,
                    size_t base, size_t *cut, size_t *nc)
{
	size_t lmin = a ? minlen : base, best_k = 0;
	if (*nc >= GP_SHIFT_MAX_LEVELS + 1 || b - a < lmin + minlen)
		return;
	double best = -INFINITY;
	for (size_t k = a + lmin; k + minlen <= b; k++) {
		double s1 = cum[k] - cum[a], s2 = cum[b] - cum[k];
		double g = s1 * s1 / (double)(k - a) + s2 * s2 / (double)(b - k);
		if (g > best)
			best = g, best_k = k;
	}
	if (!best_k)
		return;
	double l = median_of(v, a, best_k), r = median_of(v, best_k, b);
	size_t m = GP_LIVE_SLOW_MIN_BASE;
	m = best_k - a < m ? best_k - a : m;
	m = b - best_k < m ? b - best_k : m;
	double x = median_of(v, best_k - m, best_k), y = median_of(v, best_k, best_k + m);
	double lr = l < r ? r / l : l / r, xy = (x < y) == (l < r) ? (x < y ? y / x : x / y) : 1;
	if (!(l > 0 && r > 0 && x > 0 && y > 0) || lr < GP_LIVE_SLOW_RATIO ||
	    xy < sqrt(GP_LIVE_SLOW_RATIO))
		return;
	cut[(*nc)++] = best_k;
	segment(v, cum, a, best_k, minlen, base, cut, nc);
	segment(v, cum, best_k, b, minlen, base, cut, nc);
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	return (x > y) - (x < y);
}

/* The levels between cuts c[0..nc) (0 and n among them, sorted): their medians in lv,
 * adjacent ones closer than GP_LIVE_SLOW_RATIO merged; the count of levels */
static size_t levels_of(const double *v, size_t *c, size_t nc, double *lv)
{
	for (bool merged = true; merged;) {
		merged = false;
		for (size_t i = 0; i + 1 < nc; i++)
			lv[i] = median_of(v, c[i], c[i + 1]);
		for (size_t i = 1; i + 1 < nc; i++) {
			double lo = lv[i - 1] < lv[i] ? lv[i - 1] : lv[i],
			       hi = lv[i - 1] < lv[i] ? lv[i] : lv[i - 1];
			if (hi < GP_LIVE_SLOW_RATIO * lo) {
				memmove(c + i, c + i + 1, (nc - i - 1) * sizeof(size_t));
				nc--, merged = true;
				break;
			}
		}
	}
	return nc - 1;
}

/* A staircase (stepshape.h): more than two levels, each one level, the steps nearer their
 * own level than a neighbour's but for GP_SHIFT_MISFIT of them, the last to the end
 * GP_LIVE_SLOW_RATIO or more above the first; the levels may fall between (a recovery:
 * 10, 20, 10, 20 ms), the shift the largest rise after the last level back near the
 * first (out->recovered: that level's index) */
static bool staircase(const double *v, size_t n, size_t base, bool host_timed, gp_step_shift_t *out)
{
	size_t cut[GP_SHIFT_MAX_LEVELS + 1], nc = 0, min_after = min_after_of(n);
	double lv[GP_SHIFT_MAX_LEVELS], *cum = NULL;
	bool found = false;
	if (!v || n < base + min_after || !(cum = malloc((n + 1) * sizeof(double))))
		goto out;
	cum[0] = 0;
	for (size_t i = 0; i < n; i++) {
		if (!(v[i] > 0))
			goto out;
		cum[i + 1] = cum[i] + log(v[i]);
	}
	size_t minlen = (size_t)ceil(GP_SHIFT_LEVEL_MIN * (double)n);
	if (minlen < GP_LIVE_SLOW_MIN_STEPS)
		minlen = GP_LIVE_SLOW_MIN_STEPS;
	cut[nc++] = 0;
	cut[nc++] = n;
	segment(v, cum, 0, n, minlen, base, cut, &nc);
	qsort(cut, nc, sizeof(size_t), cmp_size);
	size_t nl = levels_of(v, cut, nc, lv), wrong = 0, top = 0, rec = 0;
	bool slow_before = false;
	if (nl < 3 || n - cut[nl - 1] < min_after || lv[nl - 1] < GP_LIVE_SLOW_RATIO * lv[0] ||
	    !(lv[0] > 0))
		goto out;
	for (size_t i = 0; i < nl; i++) {
		if (!one_level(v, cut[i], cut[i + 1]))
			goto out;
		for (size_t j = cut[i]; j < cut[i + 1]; j++) {
			double d = fabs(log(v[j] / lv[i]));
			wrong += (i && fabs(log(v[j] / lv[i - 1])) < d) ||
			         (i + 1 < nl && fabs(log(v[j] / lv[i + 1])) < d);
		}
		/* a recovery: back near the first after a level that was slow (10, 7, 12.5 ms
		 * sped up first: no recovery, the reviewer, session 34) */
		if (i && i + 1 < nl && lv[i] < GP_LIVE_SLOW_RATIO * lv[0] && slow_before)
			rec = i;
		slow_before |= lv[i] >= GP_LIVE_SLOW_RATIO * lv[0];
	}
	if ((double)wrong > GP_SHIFT_MISFIT * (double)n)
		goto out;
	for (size_t i = rec + 1; i < nl; i++)
		if (!top || lv[i] / lv[i - 1] > lv[top] / lv[top - 1])
			top = i;
	if (!long_enough(v, cut[1], host_timed, lv[1]))
		goto out;
	for (size_t i = 0; i < nl; i++)
		out->level_ms[i] = lv[i], out->level_at[i] = (unsigned)cut[i];
	out->nlevels = (unsigned)nl, out->period = 1, out->recovered = (unsigned)rec;
	out->before_ms = lv[top - 1], out->after_ms = lv[top];
	out->ratio = out->after_ms / out->before_ms;
	out->at = (unsigned)cut[top];
	out->nbefore = (unsigned)cut[top], out->nafter = (unsigned)(n - cut[top]);
	found = true;
out:
	free(cum);
	return found;
}

/* base: the fewest samples before the onset (GP_LIVE_SLOW_MIN_BASE steps; of blocks of p
 * steps, that many steps' worth, 2 blocks at least) */
static bool shift_or_stairs(const double *v, size_t n, size_t base, bool host_timed,
                            gp_step_shift_t *out)
{
	return one_shift(v, n, base, host_timed, out) || staircase(v, n, base, host_timed, out);
}

/* The period of steps that alternate (stepshape.h): the smallest p of 2 ..
 * GP_SHIFT_MAX_PERIOD where each step is near the step p on and not near the next: the
 * mean of |v[i] - v[i+p]| no more than GP_SHIFT_PERIODIC_NEAR of that of |v[i] - v[i+1]|.
 * Each step against its own neighbours, not against one cut at the overall median: a
 * shift moves that median, and 10/18 ms alternating, 2x from step 120 of 300, read as
 * "not alternating" (the tester, session 33: D2); a shift adds only p terms to the
 * first mean. 0: none */
static size_t period_of(const double *v, size_t n)
{
	double d1 = 0;
	for (size_t i = 0; i + 1 < n; i++)
		d1 += fabs(v[i] - v[i + 1]);
	if (n < 8 || d1 <= 0)
		return 0;
	d1 /= (double)(n - 1);
	for (size_t p = 2; p <= GP_SHIFT_MAX_PERIOD && 4 * p <= n; p++) {
		double dp = 0;
		for (size_t i = 0; i + p < n; i++)
			dp += fabs(v[i] - v[i + p]);
		if (dp / (double)(n - p) <= GP_SHIFT_PERIODIC_NEAR * d1)
			return p;
	}
	return 0;
}

/* The onset of a shift found on blocks of p steps (at: a block edge, in steps), placed at
 * the step: the first step of the blocks around it that is ratio^(1/2) or more above the
 * step a period before it (the same phase, before the shift), with the next period's
 * alike; at where none is */
static size_t periodic_onset(const double *v, size_t n, size_t p, size_t at, double ratio)
{
	double thr = sqrt(ratio > 1 ? ratio : 1);
	size_t a = at > p ? at - p : p, z = at + p < n ? at + p : n;
	for (size_t i = a < p ? p : a; i < z; i++) {
		bool up = v[i - p] > 0 && v[i] >= thr * v[i - p];
		for (size_t j = i + 1; up && j < i + p && j < n; j++)
			up = v[j - p] > 0 && v[j] >= thr * v[j - p];
		if (up)
			return i;
	}
	return at;
}

bool gp_step_shift(const double *v, size_t n, bool host_timed, gp_step_shift_t *out)
{
	memset(out, 0, sizeof(*out));
	out->at_s = -1;
	if (!v || !n)
		return false;
	if (shift_or_stairs(v, n, GP_LIVE_SLOW_MIN_BASE, host_timed, out))
		return true;
	size_t p = period_of(v, n), m = p ? n / p : 0;
	double *bm = m ? malloc(m * sizeof(double)) : NULL;
	if (!bm)
		return false;
	for (size_t b = 0; b < m; b++)
		bm[b] = median_of(v, b * p, b * p + p);
	gp_step_shift_t t;
	memset(&t, 0, sizeof(t));
	/* the steps before the onset GP_LIVE_SLOW_MIN_BASE, not as many periods (the tester,
	 * session 33: D6: 4 of every 8 steps 2x, 1.5x from step 20, 40 or 60 of 300: none) */
	size_t base = (GP_LIVE_SLOW_MIN_BASE + p - 1) / p;
	bool found = shift_or_stairs(bm, m, base < 2 ? 2 : base, host_timed, &t);
	free(bm);
	if (!found)
		return false;
	*out = t;
	out->at_s = -1;
	out->period = (unsigned)p;
	for (unsigned i = 0; i < out->nlevels; i++)
		out->level_at[i] *= (unsigned)p;
	size_t at = periodic_onset(v, n, p, (size_t)out->at * p, out->ratio);
	for (unsigned i = 0; i < out->nlevels; i++)
		if (out->level_at[i] == out->at * p)
			out->level_at[i] = (unsigned)at;
	out->at = (unsigned)at;
	out->nbefore = out->at, out->nafter = (unsigned)n - out->at;
	return true;
}
