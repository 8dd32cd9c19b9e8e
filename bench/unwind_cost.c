/* What a kernel launch's call site costs the launching thread (GPUPROF_LAUNCH_SITES,
 * agent/inject/sites.c): libunwind's unw_backtrace of up to 27 frames, as stacks.c takes it,
 * from call chains DEPTH deep, against glibc's backtrace(); the median of 7 rounds of
 * 200 000 calls each, ns per call. The CUPTI callback itself is not here (no GPU): its cost
 * is bench/gpu-sites.sh's. Build: gcc -O2 -o unwind_cost bench/unwind_cost.c -lunwind */
#define UNW_LOCAL_ONLY
#include <execinfo.h>
#include <libunwind.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define FRAMES 27
#define CALLS  200000
#define ROUNDS 7

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static volatile int sink;

static double take(int glibc)
{
	void *pcs[FRAMES];
	double t0 = now_ns();
	for (int i = 0; i < CALLS; i++)
		sink += glibc ? backtrace(pcs, FRAMES) : unw_backtrace(pcs, FRAMES);
	return (now_ns() - t0) / CALLS;
}

/* a chain of depth frames (not a tail call: each frame stays) */
__attribute__((noinline)) static double chain(int depth, int glibc)
{
	if (depth > 0) {
		double r = chain(depth - 1, glibc);
		sink++;
		return r;
	}
	return take(glibc);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(void)
{
	static const int depths[] = {8, 16, 32};
	printf("%-8s %-10s %12s\n", "depth", "unwinder", "ns per call");
	for (unsigned d = 0; d < sizeof(depths) / sizeof(depths[0]); d++) {
		for (int glibc = 0; glibc < 2; glibc++) {
			double r[ROUNDS];
			chain(depths[d], glibc); /* warm: libunwind's caches, the pages */
			for (int i = 0; i < ROUNDS; i++)
				r[i] = chain(depths[d], glibc);
			qsort(r, ROUNDS, sizeof(r[0]), cmp);
			printf("%-8d %-10s %12.0f\n", depths[d], glibc ? "backtrace" : "libunwind",
			       r[ROUNDS / 2]);
		}
	}
	return 0;
}
