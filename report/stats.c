/* Statistics for the report (see stats.h). */
#include "config.h"
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

double gp_quantile(const double *v, size_t n, double q)
{
	if (!n)
		return 0;
	double *s = malloc(n * sizeof(double));
	if (!s)
		return 0;
	memcpy(s, v, n * sizeof(double));
	qsort(s, n, sizeof(double), cmp_double);
	double r;
	if (q == 0.5)
		r = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	else {
		size_t k = (size_t)ceil(q * (double)n);
		r = s[k ? k - 1 : 0];
	}
	free(s);
	return r;
}

void gp_sort_doubles(double *v, size_t n)
{
	if (n > 1)
		qsort(v, n, sizeof(double), cmp_double);
}

void gp_median_interval(const double *v, size_t n, double *med, double *lo, double *hi)
{
	*med = *lo = *hi = 0;
	if (!n)
		return;
	double *s = malloc(n * sizeof(double));
	if (!s)
		return;
	memcpy(s, v, n * sizeof(double));
	qsort(s, n, sizeof(double), cmp_double);
	*med = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	if (n < 6) {
		free(s);
		return;
	}
	double h = 0.98 * sqrt((double)n); /* 1.96 / 2 standard deviations of Bin(n, 1/2) */
	size_t j = (size_t)floor((double)n / 2 - h), k = (size_t)ceil((double)n / 2 + 1 + h);
	*lo = s[(j ? j : 1) - 1]; /* 1-based ranks j and k */
	*hi = s[(k < n ? k : n) - 1];
	free(s);
}

double gp_median_without(const double *s, size_t n, double v)
{
	size_t lo = 0, hi = n; /* the first element >= v: the one left out */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s[mid] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t p = lo, m = n ? n - 1 : 0;
	if (!m)
		return 0;
#define T(j) ((j) < p ? s[(j)] : s[(j) + 1])
	return m % 2 ? T(m / 2) : (T(m / 2 - 1) + T(m / 2)) / 2;
#undef T
}

static inline void swap_u64(uint64_t *a, uint64_t *b)
{
	uint64_t t = *a;
	*a = *b, *b = t;
}

static void insertion_sort_u64(uint64_t *v, size_t n)
{
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--)
			swap_u64(&v[j - 1], &v[j]);
}

static uint64_t select_u64(uint64_t *v, size_t n, size_t k, unsigned depth);

/* The median of medians of five (Blum, Floyd, Pratt, Rivest, Tarjan 1973): a pivot with
 * at least 3/10 of the values on each side, so the selection stays linear whatever the
 * input. The groups' medians are moved to the front of v. */
static uint64_t mom_pivot(uint64_t *v, size_t n)
{
	size_t ng = 0;
	for (size_t g = 0; g < n; g += 5, ng++) {
		size_t m = n - g < 5 ? n - g : 5;
		insertion_sort_u64(v + g, m);
		swap_u64(&v[ng], &v[g + m / 2]);
	}
	return select_u64(v, ng, ng / 2, 0);
}

/* The k-th smallest of v (reorders v): quickselect with a three-way partition (values
 * equal to the pivot are done with at once: a million equal launch latencies were
 * quadratic under the Lomuto partition, 533 s), the median of three as pivot, and the
 * median of medians once the partitions stop shrinking (introselect, Musser 1997): O(n)
 * on every input. depth: partitions left before that fallback. */
static uint64_t select_u64(uint64_t *v, size_t n, size_t k, unsigned depth)
{
	while (n > 16) {
		uint64_t p;
		if (depth == 0) {
			p = mom_pivot(v, n);
		} else {
			depth--;
			uint64_t a = v[0], b = v[n / 2], c = v[n - 1];
			p = a < b ? (b < c ? b : a < c ? c : a) : (a < c ? a : b < c ? c : b);
		}
		/* [0, lt) < p, [lt, i) == p, (gt, n) > p */
		size_t lt = 0, i = 0, gt = n;
		while (i < gt) {
			if (v[i] < p)
				swap_u64(&v[lt++], &v[i++]);
			else if (v[i] > p)
				swap_u64(&v[i], &v[--gt]);
			else
				i++;
		}
		if (k < lt) {
			n = lt;
		} else if (k < gt) {
			return p;
		} else {
			v += gt, k -= gt, n -= gt;
		}
	}
	insertion_sort_u64(v, n);
	return v[k];
}

uint64_t gp_median_u64(uint64_t *v, size_t n)
{
	unsigned depth = 0;
	if (!n)
		return 0;
	for (size_t m = n; m > 1; m >>= 1)
		depth += 2; /* 2 log2(n): what a fair pivot needs many times over */
	return select_u64(v, n, n / 2, depth);
}

double gp_mean(const double *v, size_t n)
{
	double s = 0;
	for (size_t i = 0; i < n; i++)
		s += v[i];
	return n ? s / (double)n : 0;
}

double gp_cv(const double *v, size_t n)
{
	double m = gp_mean(v, n), sq = 0;
	if (n < 2 || m <= 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		sq += (v[i] - m) * (v[i] - m);
	return sqrt(sq / (double)(n - 1)) / m;
}

int gp_fig_cmp(const void *a, const void *b)
{
	const gp_fig_t *x = a, *y = b;
	return x->v < y->v ? -1 : x->v > y->v ? 1 : (x->i > y->i) - (x->i < y->i);
}

typedef struct {
	double v;
	int from_b;
} tagged_t;

static int cmp_tagged(const void *a, const void *b)
{
	const tagged_t *x = a, *y = b;
	return x->v < y->v ? -1 : x->v > y->v;
}

double gp_mann_whitney(const double *a, size_t na, const double *b, size_t nb, double *effect)
{
	size_t n = na + nb;
	*effect = 0.5;
	if (!na || !nb)
		return 1;
	tagged_t *t = malloc(n * sizeof(*t));
	if (!t)
		return 1;
	for (size_t i = 0; i < na; i++)
		t[i] = (tagged_t){a[i], 0};
	for (size_t i = 0; i < nb; i++)
		t[na + i] = (tagged_t){b[i], 1};
	qsort(t, n, sizeof(*t), cmp_tagged);
	/* mid-ranks for ties; the tie term sum(t^3 - t) corrects the variance */
	double rank_b = 0, ties = 0;
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j < n && t[j].v == t[i].v)
			j++;
		double mid = (double)(i + j + 1) / 2, cnt = (double)(j - i);
		for (size_t k = i; k < j; k++)
			if (t[k].from_b)
				rank_b += mid;
		ties += cnt * cnt * cnt - cnt;
		i = j;
	}
	free(t);
	double u = rank_b - (double)nb * (double)(nb + 1) / 2; /* pairs (a, b) with b > a */
	double nn = (double)na * (double)nb;
	*effect = u / nn;
	if (na < GP_MW_MIN || nb < GP_MW_MIN)
		return 1;
	double var = nn / 12.0 * ((double)(n + 1) - ties / ((double)n * (double)(n - 1)));
	if (var <= 0)
		return 1;
	double z = (fabs(u - nn / 2) - 0.5) / sqrt(var); /* continuity correction */
	if (z < 0)
		z = 0;
	return erfc(z / sqrt(2.0));
}
