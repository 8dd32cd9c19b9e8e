/* Emits NVTX records at a steady rate (push+pop pairs), and every 250 ms a uniquely named
 * mark whose CLOCK_REALTIME emission time it prints, for bench/agent-budget.sh:
 *   event_rate EVENTS_PER_SECOND SECONDS */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <nvtx3/nvToolsExt.h>

static double now(clockid_t c)
{
	struct timespec t;
	clock_gettime(c, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double rate = argc > 1 ? atof(argv[1]) : 100000, secs = argc > 2 ? atof(argv[2]) : 10;
	double t0 = now(CLOCK_MONOTONIC), next_mark = t0;
	long pairs = 0;
	int k = 0;
	char name[32];
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (now(CLOCK_MONOTONIC) - t0 < secs) {
		double el = now(CLOCK_MONOTONIC) - t0;
		while (pairs < el * rate / 2) {
			nvtxRangePushA("tick");
			nvtxRangePop();
			pairs++;
		}
		if (now(CLOCK_MONOTONIC) >= next_mark) {
			snprintf(name, sizeof(name), "mark_%d", k);
			nvtxMarkA(name);
			printf("mark %d %.6f\n", k++, now(CLOCK_REALTIME));
			next_mark += 0.25;
		}
		struct timespec p = {0, 200000}; /* 0.2 ms */
		nanosleep(&p, NULL);
	}
	printf("pairs %ld\n", pairs);
	return 0;
}
