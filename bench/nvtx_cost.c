/* NVTX push+pop cost: ns per pair over bursts of 50k pairs (or PAIRS) with pauses between bursts
 * (the agent drains the ring meanwhile, so the timed loop takes the full recording path,
 * not the full-ring drop path). Run with and without gpuprof (bench/nvtx-cost.sh). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nvtx3/nvToolsExt.h>

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int bursts = argc > 1 ? atoi(argv[1]) : 20;
	/* "const": the names of a fixed table (a C++ or PyTorch program's literals), so the
	 * figure is the push+pop alone; default: f-string-like names made in the loop */
	int lit = argc > 2 && !strcmp(argv[2], "const");
	static const char *const names[8] = {"layer_0", "layer_1", "layer_2", "layer_3",
	                                     "layer_4", "layer_5", "layer_6", "layer_7"};
	/* pairs per burst: 50 000 (100 000 records, which a thread's own lane of the ring,
	 * 32 768 records, does not hold while the agent drains: bench/nvtx-cost.sh) */
	const int per = argc > 3 && atoi(argv[3]) > 0 ? atoi(argv[3]) : 50000;
	double best = 1e30, total = 0;
	double *each = calloc((size_t)(bursts > 0 ? bursts : 1), sizeof(double));
	char name[32];
	for (int b = 0; b < bursts; b++) {
		double t0 = now_ns();
		for (int i = 0; i < per; i++) {
			if (lit) {
				nvtxRangePushA(names[i & 7]);
			} else {
				snprintf(name, sizeof(name), "layer_%d", i & 7); /* f-string-like */
				nvtxRangePushA(name);
			}
			nvtxRangePop();
		}
		double ns = (now_ns() - t0) / per;
		if (getenv("NVTX_COST_BURSTS")) /* each burst's figure, on stderr */
			fprintf(stderr, "burst %d %.1f\n", b, ns);
		total += ns;
		if (each)
			each[b] = ns;
		if (ns < best)
			best = ns;
		struct timespec p = {0, 150 * 1000000L};
		nanosleep(&p, NULL);
	}
	/* the median burst: the steady cost, past the first bursts' page faults and before
	 * the tool's clock has its rate (those are in the mean) */
	double med = 0;
	if (each && bursts > 0) {
		qsort(each, (size_t)bursts, sizeof(double), cmp_double);
		med = each[bursts / 2];
	}
	free(each);
	printf("ns_per_pair_mean %.1f best %.1f median %.1f\n", total / bursts, best, med);
	return 0;
}
