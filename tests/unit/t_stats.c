/* The report's integer median (report/stats.c): right on every shape of input and linear
 * on all of them. A million equal launch latencies took the Lomuto quickselect 533 s;
 * every case below must take well under a second (O(n^2) of 10^6 is hours). */
#include "config.h"
#include "stats.h"
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
	return done_testing();
}
