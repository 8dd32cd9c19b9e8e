/* The report's integer median (report/stats.c): right on every shape of input and linear
 * on all of them. A million equal launch latencies took the Lomuto quickselect 533 s;
 * every case below must take well under a second (O(n^2) of 10^6 is hours). */
#include "config.h"
#include <math.h>
#include <stdbool.h>
#include "stats.h"
#include "live.h"
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

/* gp_step_shift (stepshape.h): a level shift, its onset and medians, at the edges of its
 * thresholds (common/live.h's and stepshape.h's), and the shapes that are none */
static double sv[4000];
static void shift_case(const char *name, size_t n, bool want, unsigned at)
{
	gp_step_shift_t sh;
	bool got = gp_step_shift(sv, n, false, &sh);
	ok(got == want && (!want || !at || sh.at == at),
	   "level shift, %s: %s (want %s), onset at %u, %g -> %g ms", name, got ? "found" : "none",
	   want ? "found" : "none", sh.at, sh.before_ms, sh.after_ms);
}
/* n steps: noisy 10 ms (+-1 %), from step k on times r */
static void shift_fill(size_t n, size_t k, double r)
{
	for (size_t i = 0; i < n; i++)
		sv[i] = (10 + 0.1 * ((double)((i * 7) % 5) - 2) / 2) * (i >= k ? r : 1);
}

static void test_step_shift(void)
{
	gp_step_shift_t sh;
	shift_fill(300, 200, 2.9);
	ok(gp_step_shift(sv, 300, false, &sh) && sh.at == 200 && fabs(sh.before_ms - 10) < 0.1 &&
	       fabs(sh.after_ms - 29) < 0.3 && fabs(sh.ratio - 2.9) < 0.05 && sh.nbefore == 200 &&
	       sh.nafter == 100,
	   "2.9x slower from step 200 of 300: onset %u, %g -> %g ms (%.3fx), %u + %u", sh.at,
	   sh.before_ms, sh.after_ms, sh.ratio, sh.nbefore, sh.nafter);
	sv[150] = 40, sv[60] = 35; /* two hiccups before it do not move it */
	shift_case("2.9x with two slow steps before it", 300, true, 200);
	/* the ratio (GP_LIVE_SLOW_RATIO) */
	for (size_t i = 0; i < 200; i++)
		sv[i] = i < 100 ? 10 : 10 * (GP_LIVE_SLOW_RATIO + 1e-9);
	shift_case("steady steps, then x1.2", 200, true, 100);
	for (size_t i = 100; i < 200; i++)
		sv[i] = 10 * (GP_LIVE_SLOW_RATIO - 1e-9);
	shift_case("steady steps, then just under x1.2", 200, false, 0);
	/* the steps before (GP_LIVE_SLOW_MIN_BASE): slow from the 10th, or from the 9th (then
	 * the tenth is the first it can name) */
	shift_fill(200, GP_LIVE_SLOW_MIN_BASE, 2.9);
	shift_case("slow from the 10th step", 200, true, GP_LIVE_SLOW_MIN_BASE);
	shift_fill(200, GP_LIVE_SLOW_MIN_BASE - 1, 2.9);
	ok(!gp_step_shift(sv, 200, false, &sh) || sh.at >= GP_LIVE_SLOW_MIN_BASE,
	   "slow from the 9th: never named before the 10th (%u)", sh.at);
	/* the slow steps' share (GP_SHIFT_MIN_AFTER of 200: 10) */
	shift_fill(200, 190, 2.9);
	shift_case("the last 10 of 200 slow", 200, true, 190);
	shift_fill(200, 191, 2.9);
	shift_case("the last 9 of 200 slow", 200, false, 0);
	/* the steps on the wrong side (GP_SHIFT_MISFIT of 200: 30 slow before the onset) */
	for (unsigned m = 30; m <= 31; m++) {
		shift_fill(200, 100, 2.9);
		for (unsigned q = 0; q < m; q++)
			sv[q * 100 / m] = 29;
		shift_case(m == 30 ? "30 of 200 on the wrong side" : "31 of 200 on the wrong side",
		           200, m == 30, 100);
	}
	/* none of these is a shift */
	shift_fill(300, 300, 1);
	shift_case("steady steps", 300, false, 0);
	for (size_t i = 0; i < 300; i++) /* a warm-up: slow, then fast */
		sv[i] = i < 30 ? 40 - i : 10;
	shift_case("a warm-up of 30 slow steps", 300, false, 0);
	for (size_t i = 0; i < 300; i++)
		sv[i] = i % 2 ? 30 : 10;
	shift_case("alternating 10/30", 300, false, 0);
	for (size_t i = 0; i < 300; i++) /* gradient accumulation: every 4th step the optimizer's */
		sv[i] = i % 4 == 3 ? 30 : 10;
	shift_case("every 4th step 3x", 300, false, 0);
	for (size_t i = 0; i < 300; i++) /* ... with the slow one 3 of 4 */
		sv[i] = i % 4 ? 30 : 10;
	shift_case("3 of every 4 steps 3x", 300, false, 0);
	shift_fill(300, 299, 5);
	shift_case("a slow last step", 300, false, 0);
	shift_fill(300, 297, 5);
	shift_case("three slow last steps", 300, false, 0);
	shift_fill(300, 300, 1);
	for (size_t i = 150; i < 155; i++)
		sv[i] = 30;
	shift_case("5 slow steps, then recovered", 300, false, 0);
	shift_fill(300, 100, 3);
	for (size_t i = 200; i < 300; i++)
		sv[i] = 10;
	shift_case("100 slow steps in the middle, then recovered", 300, false, 0);
	shift_fill(300, 200, 3);
	for (size_t i = 280; i < 300; i++)
		sv[i] = 10;
	shift_case("slow from 200, recovered for the last 20", 300, false, 0);
	for (size_t i = 0; i < 300; i++) /* a drift: 10 to 30 ms */
		sv[i] = 10 + 20.0 * (double)i / 299;
	shift_case("a drift from 10 to 30 ms", 300, false, 0);
	shift_case("too few steps", 12, false, 0);
	/* a shift while the steps alternate (issue 50, the report32 tester): 6/18 ms, then
	 * 9/27 ms from step 150: found on the medians of pairs, 12 then 18 ms */
	for (size_t i = 0; i < 300; i++)
		sv[i] = (i % 2 ? 18 : 6) * (i >= 150 ? 1.5 : 1) *
		        (1 + 0.01 * (double)((i * 7) % 5) / 4);
	ok(gp_step_shift(sv, 300, false, &sh) && sh.period == 2 && sh.at == 150 &&
	       fabs(sh.ratio - 1.5) < 0.03,
	   "alternating 6/18, then 9/27 ms from step 150: found on pairs (period %u, onset %u, "
	   "%.2fx)",
	   sh.period, sh.at, sh.ratio);
	for (size_t i = 0; i < 300; i++) /* every 3rd step slow, then all three 1.5x */
		sv[i] = (i % 3 == 2 ? 30 : 10) * (i >= 150 ? 1.5 : 1);
	ok(gp_step_shift(sv, 300, false, &sh) && sh.period == 3 && sh.at == 150,
	   "every 3rd step 3x, all 1.5x from step 150: found on blocks of 3 (period %u, onset %u)",
	   sh.period, sh.at);
	/* the cut between fast and slow moved by the shift (the tester, session 33: D2, D6):
	 * 10/18 alternating, 2x from step 120 of 300 (no finding before); every 3rd step 3x,
	 * 2x from 100 of 200 with noise; the onset at the step, not the block edge (41 for
	 * 40 before); 4 of every 8 steps 2x, 1.5x from step 150 (155 before) */
	static const struct {
		const char *name;
		size_t n, at, p;
		double r;
	} pc[] = {{"10/18 alternating, 2x from step 120 of 300", 300, 120, 2, 2},
	          {"every 3rd step 3x, 2x from step 100 of 200", 200, 100, 3, 2},
	          {"10/30 alternating, 1.5x from step 41 of 300", 300, 41, 2, 1.5},
	          {"4 of every 8 steps 2x, 1.5x from step 150 of 300", 300, 150, 8, 1.5}};
	for (size_t c = 0; c < sizeof(pc) / sizeof(pc[0]); c++) {
		for (size_t i = 0; i < pc[c].n; i++) {
			double slow = pc[c].p == 8   ? (i % 8 >= 4 ? 2 : 1)
			              : pc[c].p == 3 ? (i % 3 == 2 ? 3 : 1)
			              : c == 0       ? (i % 2 ? 1.8 : 1)
			                             : (i % 2 ? 3 : 1);
			sv[i] = 10 * slow * (i >= pc[c].at ? pc[c].r : 1) *
			        (1 + 0.001 * (double)((i * 7) % 5) / 4);
		}
		bool got = gp_step_shift(sv, pc[c].n, false, &sh);
		ok(got && sh.period == pc[c].p && sh.at == pc[c].at &&
		       fabs(sh.ratio - pc[c].r) < 0.05,
		   "%s: period %u, onset %u, %.2fx", pc[c].name, sh.period, sh.at, sh.ratio);
	}
	/* the steps before the onset counted in steps, not periods (the tester, session 33:
	 * D6: 10 periods were needed: 4 of every 8 steps 2x, 1.5x from step 20, 40 or 60 of
	 * 300, and every 4th, 1.5x from 20, were none) */
	static const struct {
		size_t p, slow, at;
	} early[] = {{8, 4, 20}, {8, 4, 40}, {8, 4, 60}, {4, 1, 20}};
	for (size_t c = 0; c < sizeof(early) / sizeof(early[0]); c++) {
		size_t p = early[c].p;
		for (size_t i = 0; i < 300; i++)
			sv[i] = 10 * (i % p >= p - early[c].slow ? 2 : 1) *
			        (i >= early[c].at ? 1.5 : 1) *
			        (1 + 0.001 * (double)((i * 7) % 5) / 4);
		bool got = gp_step_shift(sv, 300, false, &sh);
		/* (every 4th slow: the raw search finds it, period 1; its onset a slow step
		 * early, 19: D6's misdating, left) */
		ok(got && (sh.period == p || p == 4) && sh.at + p / 2 >= early[c].at &&
		       sh.at <= early[c].at + p / 2 && fabs(sh.ratio - 1.5) < 0.05,
		   "%zu of every %zu steps 2x, 1.5x from step %zu of 300: %s, period %u, onset %u, "
		   "%.2fx",
		   early[c].slow, p, early[c].at, got ? "found" : "none", sh.period, sh.at,
		   sh.ratio);
	}
	for (size_t i = 0; i < 300; i++) /* 30 % of steps 3x, by no period: none */
		sv[i] = ((i * 2654435761u) >> 8) % 10 < 3 ? 30 : 10;
	shift_case("30 % of the steps 3x, no period", 300, false, 0);
	for (size_t i = 0; i < 300; i++) /* ... but the slow steps of an alternation longer */
		sv[i] = i % 2 ? 18 + (i >= 150 ? 2 : 0) : 6;
	shift_case("alternating 6/18, then 6/20 (pairs 12, then 13)", 300, false, 0);
	for (size_t i = 0; i < 300; i++) /* alternating, 9/27 for 50 steps, then back */
		sv[i] = (i % 2 ? 18 : 6) * (i >= 150 && i < 200 ? 1.5 : 1);
	shift_case("alternating, 1.5x for 50 steps, then recovered", 300, false, 0);
	/* a staircase: 10, then 15 from step 100, then 22 from 200: each rise said, the
	 * largest (10 -> 15, 1.5x) the shift; not a drift */
	for (size_t i = 0; i < 300; i++)
		sv[i] = (i < 100 ? 10 : i < 200 ? 15 : 22) * (1 + 0.01 * (double)((i * 7) % 5) / 4);
	ok(gp_step_shift(sv, 300, false, &sh) && sh.nlevels == 3 && sh.level_at[1] == 100 &&
	       sh.level_at[2] == 200 && sh.at == 100 && fabs(sh.ratio - 1.5) < 0.02,
	   "a staircase 10, 15, 22 ms: %u levels from %u and %u, the largest rise at %u (%.2fx)",
	   sh.nlevels, sh.level_at[1], sh.level_at[2], sh.at, sh.ratio);
	for (size_t i = 0; i < 300; i++) /* ... that comes back down: no shift */
		sv[i] = i < 100 ? 10 : i < 200 ? 15 : 11;
	shift_case("10, 15, then 11 ms", 300, false, 0);
	for (size_t i = 0; i < 300; i++) /* rises under the ratio: 10, 11, 12.1 */
		sv[i] = i < 100 ? 10 : i < 200 ? 11 : 12.1;
	shift_case("10, 11, 12.1 ms (each under x1.2)", 300, false, 0);
	/* staircases the search on one split of the whole missed (the tester, session 33: D5):
	 * five levels of 1.23x, 100 steps each; 10, 20, 10, 20 (recovered, then slower again
	 * to the end: the shift the last rise, the recovery said); 10, 15, 12, 20; one that
	 * starts late (10 ms for 300 steps, then 13, 16, 20 for 40 each) */
	static const struct {
		const char *name;
		double ms[5];
		unsigned len[5], n, levels, at, recovered;
	} st[] = {{"five levels of 1.23x",
	           {10, 12.3, 15.13, 18.61, 22.89},
	           {100, 100, 100, 100, 100},
	           5,
	           5,
	           0,
	           0},
	          {"10, 20, 10, 20 ms", {10, 20, 10, 20}, {100, 100, 100, 100}, 4, 4, 300, 2},
	          {"10, 15, 12, 20 ms", {10, 15, 12, 20}, {100, 100, 100, 100}, 4, 4, 300, 0},
	          /* faster first, then slow: no recovery (nothing was slow before it; the
	           * reviewer, session 34) */
	          {"10, 7, 12.5 ms", {10, 7, 12.5}, {100, 100, 100}, 3, 3, 200, 0},
	          {"10 ms for 300 steps, then 13, 16, 20",
	           {10, 13, 16, 20},
	           {300, 40, 40, 40},
	           4,
	           4,
	           300,
	           0}};
	for (size_t c = 0; c < sizeof(st) / sizeof(st[0]); c++) {
		size_t i = 0;
		for (unsigned l = 0; l < st[c].n; l++)
			for (unsigned k = 0; k < st[c].len[l]; k++, i++)
				sv[i] = st[c].ms[l] * (1 + 0.01 * (double)((i * 7) % 5) / 4);
		bool got = gp_step_shift(sv, i, false, &sh), lv = got && sh.nlevels == st[c].levels;
		for (unsigned l = 0, a = 0; lv && l < st[c].n; a += st[c].len[l++])
			lv = sh.level_at[l] == a && fabs(sh.level_ms[l] / st[c].ms[l] - 1) < 0.02;
		ok(lv && (!st[c].at || sh.at == st[c].at) && sh.recovered == st[c].recovered,
		   "a staircase, %s: %s, %u levels, the largest rise at %u, recovered at level %u",
		   st[c].name, got ? "found" : "none", sh.nlevels, sh.at, sh.recovered);
	}
	/* ... and none in noise (2 % and 5 %, 300 and 3000 steps: a sum of uniforms) */
	for (unsigned c = 0; c < 4; c++) {
		size_t n = c % 2 ? 3000 : 300;
		uint32_t x = 12345 + c;
		for (size_t i = 0; i < n; i++) {
			double u = 0;
			for (int k = 0; k < 12; k++)
				x = x * 1664525u + 1013904223u, u += (double)(x >> 8) / (1u << 24);
			sv[i] = 10 * (1 + (c < 2 ? 0.02 : 0.05) * (u - 6));
		}
		char name[64];
		snprintf(name, sizeof(name), "%u steps of 10 ms, %u %% noise", (unsigned)n,
		         c < 2 ? 2 : 5);
		shift_case(name, n, false, 0);
	}
	for (size_t i = 0; i < 400; i++) /* every 16th step 4x (gradient accumulation) */
		sv[i] = (i % 16 == 15 ? 40 : 10) * (1 + 0.01 * (double)((i * 7) % 5) / 4);
	shift_case("every 16th step 4x", 400, false, 0);
	for (size_t i = 0; i < 400; i++) /* an eval every 50 steps */
		sv[i] = (i % 50 == 49 ? 100 : 10) * (1 + 0.01 * (double)((i * 7) % 5) / 4);
	shift_case("an eval every 50 steps", 400, false, 0);
	for (size_t i = 0; i < 300; i++) /* 3 of every 10 steps 3x */
		sv[i] = i % 10 == 2 || i % 10 == 5 || i % 10 == 8 ? 30 : 10;
	shift_case("3 of every 10 steps 3x", 300, false, 0);
	/* host-timed: a host that ran ahead until CUDA's queue was full (the nvml fixture's
	 * 15 steps of 0.6 ms, then 7 ms), against a shift whose fast steps lasted long */
	for (size_t i = 0; i < 40; i++)
		sv[i] = i < 15 ? 0.6 : 7;
	ok(gp_step_shift(sv, 40, false, &sh) && !gp_step_shift(sv, 40, true, &sh),
	   "15 steps of 0.6 ms, then 7 ms: a shift on the GPU's clock, none on the host's");
	shift_fill(300, 200, 2.9);
	ok(gp_step_shift(sv, 300, true, &sh) && sh.at == 200,
	   "2.9x from step 200, host-timed: 2 s of fast steps, a shift (%u)", sh.at);
	shift_case("no steps", 0, false, 0);
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
	test_step_shift();
	return done_testing();
}
