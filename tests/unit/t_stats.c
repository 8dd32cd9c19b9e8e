/* The report's integer median (report/stats.c): right on every shape of input and linear
 * on all of them. A million equal launch latencies took the Lomuto quickselect 533 s;
 * every case below must take well under a second (O(n^2) of 10^6 is hours). */
#include "config.h"
#include <math.h>
#include <stdbool.h>
#include "stats.h"
#include "stepshape.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* fill v[0..n) with shape s */
static void fill(uint64_t *v, size_t n, int s)
{
	uint64_t x = 88172645463325252ull;
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		switch (s) {
		case 0:
			v[i] = 4242;
			break; /* all equal */
		case 1:
			v[i] = i;
			break; /* sorted */
		case 2:
			v[i] = n - i;
			break; /* reversed */
		case 3:
			v[i] = i < n / 2 ? i : n - i;
			break; /* organ pipe */
		case 4:
			v[i] = i & 1;
			break; /* two values */
		case 5:
			v[i] = x % 3;
			break; /* few distinct */
		case 6:
			v[i] = x;
			break; /* random */
		case 7:
			v[i] = (i % 2 ? n / 2 + i / 2 : i / 2 % 4) + 7;
			break; /* interleaved */
		default:
			v[i] = i % 5 == 0 ? 1 : 1000 + (i % 977);
			break;
		}
	}
}

/* gp_step_shape on step series in step order, each made to one shape, and at the edges
 * of each threshold (stepshape.h) */
static void shape_case(const char *name, const double *v, size_t n, double median, double period,
                       const char *want, double lo, double hi)
{
	gp_step_shape_t sh;
	gp_step_shape(v, n, median, period, &sh);
	bool good = !strcmp(sh.shape, want) && (lo == 0 || fabs(sh.low_ms - lo) < 1e-9) &&
	            (hi == 0 || fabs(sh.high_ms - hi) < 1e-9);
	ok(good, "step shape of %s: %s (want %s), %g / %g ms", name, sh.shape, want, sh.low_ms,
	   sh.high_ms);
}

static void test_step_shape(void)
{
	double v[64];
	for (int i = 0; i < 40; i++) /* alike: 10 ms +- 2 % */
		v[i] = 10 + 0.2 * ((i * 7) % 5 - 2) / 2;
	shape_case("alike steps", v, 40, 10, 10, "alike", 0, 0);
	for (int i = 0; i < 40; i++) /* an input-bound loader: 13, 130, 13, 130 ... */
		v[i] = i % 2 ? 130 : 13;
	shape_case("alternating 13/130", v, 40, 71.5, 71.5, "alternating", 13, 130);
	for (int i = 0; i < 40; i++) /* every fifth step slow: bimodal, not alternating */
		v[i] = i % 5 == 4 ? 50 : 10;
	shape_case("one in five at 5x", v, 40, 10, 18, "bimodal", 10, 50);
	for (int i = 0; i < 40; i++) /* two groups 1.8x apart: under the ratio */
		v[i] = i % 2 ? 18 : 10;
	shape_case("groups 1.8x apart", v, 40, 14, 14, "alike", 0, 0);
	for (int i = 0; i < 40; i++) /* 1 slow step in 40 (2.5 %): under the group minimum */
		v[i] = i == 20 ? 200 : 10;
	shape_case("one long step in 40", v, 40, 10, 14.75, "uneven", 0, 0);
	for (int i = 0; i < 40; i++) /* slowing down: 10 ms to 20 ms */
		v[i] = 10 + 10.0 * i / 39;
	shape_case("a slowdown from 10 to 20 ms", v, 40, 15, 15, "drifting", 0, 0);
	for (int i = 0; i < 40; i++) /* 10 to 12 ms: under the drift threshold */
		v[i] = 10 + 2.0 * i / 39;
	shape_case("10 to 12 ms", v, 40, 11, 11, "alike", 0, 0);
	for (int i = 0; i < 7; i++)
		v[i] = i % 2 ? 130 : 13;
	shape_case("7 samples", v, 7, 13, 70, "alike", 0, 0);
	shape_case("no samples", NULL, 0, 0, 0, "alike", 0, 0);
}

int main(void)
{
	static const char *shape[] = {"equal",      "sorted",      "reversed",
	                              "organ pipe", "two values",  "few distinct values",
	                              "random",     "interleaved", "mostly one run"};
	const size_t big = 1000000;
	uint64_t *v = malloc(big * sizeof(*v)), *s = malloc(big * sizeof(*s));
	if (!v || !s)
		return 1;
	ok(gp_median_u64(v, 0) == 0, "no values: 0");
	/* right: against a sort, every size up to 300 and shape (the small-array path and the
	 * partitions' edges) */
	unsigned wrong = 0;
	for (size_t n = 1; n <= 300; n++)
		for (int sh = 0; sh < 9; sh++) {
			fill(v, n, sh);
			memcpy(s, v, n * sizeof(*v));
			qsort(s, n, sizeof(*s), cmp_u64);
			wrong += gp_median_u64(v, n) != s[n / 2];
		}
	ok(wrong == 0, "the upper middle of every size 1..300 and shape (%u wrong)", wrong);
	for (int sh = 0; sh < 9; sh++) {
		fill(v, big, sh);
		memcpy(s, v, big * sizeof(*v));
		qsort(s, big, sizeof(*s), cmp_u64);
		double t0 = now_s();
		uint64_t m = gp_median_u64(v, big);
		double dt = now_s() - t0;
		ok(m == s[big / 2] && dt < 1.0, "10^6 %s values: right (%llu) in %.3f s", shape[sh],
		   (unsigned long long)m, dt);
	}
	free(v);
	free(s);

	/* the median's 95 % interval: the binomial tables' ranks (n = 100: the 40th and the
	 * 61st; n = 6: the extremes, 96.9 % coverage), any order of the samples */
	double d[100], med, lo, hi;
	for (int i = 0; i < 100; i++)
		d[i] = (double)((i * 37) % 100 + 1); /* 1..100, shuffled */
	gp_median_interval(d, 100, &med, &lo, &hi);
	ok(lo == 40 && hi == 61, "median interval of 1..100: %g-%g (tables: 40-61)", lo, hi);
	ok(med == 50.5 && med == gp_median(d, 100), "its median from the same sort: %g", med);
	gp_median_interval(d, 6, &med, &lo, &hi);
	double mn = d[0], mx = d[0];
	for (int i = 1; i < 6; i++)
		mn = d[i] < mn ? d[i] : mn, mx = d[i] > mx ? d[i] : mx;
	ok(lo == mn && hi == mx, "6 samples: their extremes (%g-%g)", lo, hi);
	gp_median_interval(d, 5, &med, &lo, &hi);
	ok(lo == 0 && hi == 0 && med == gp_median(d, 5), "5 samples: the median (%g), no interval",
	   med);
	/* coverage: of 2 000 draws of 51 uniform samples, about 95 % hold the true median */
	unsigned held = 0, seed = 12345;
	for (int t = 0; t < 2000; t++) {
		for (int i = 0; i < 51; i++) {
			seed = seed * 1103515245u + 12345u;
			d[i] = (double)(seed >> 8) / (double)(1u << 24);
		}
		gp_median_interval(d, 51, &med, &lo, &hi);
		held += lo <= 0.5 && 0.5 <= hi;
	}
	ok(held >= 1860 && held <= 1990, "it holds the true median in %u of 2000 draws", held);
	test_step_shape();
	return done_testing();
}
