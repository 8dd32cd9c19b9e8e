/* The fast clock agrees with CLOCK_MONOTONIC and never goes backwards. */
#include "config.h"
#include "clock.h"
#include "tap.h"

#include <stdlib.h>
#include <time.h>

int main(void)
{
	gp_clock_init();
	int64_t worst = 0;
	uint64_t prev = 0, back = 0;
	for (int i = 0; i < 2000000; i++) {
		uint64_t a = gp_now_ns(), f = gp_clock_ns(), b = gp_now_ns();
		int64_t err = f < a ? (int64_t)(a - f) : f > b ? (int64_t)(f - b) : 0;
		if (err > worst)
			worst = err;
		back += f < prev;
		prev = f;
		if (i % 200000 == 0) {
			struct timespec p = {0, 30 * 1000000L}; /* let anchors go stale */
			nanosleep(&p, NULL);
		}
	}
	diag("TSC extrapolation %s", gp_clock.tsc ? "in use" : "not used here: clock_gettime");
	ok(back == 0, "monotonic over 2e6 reads (%llu steps back)", (unsigned long long)back);
	ok(worst < 2000, "within 2 us of clock_gettime (worst %lld ns)", (long long)worst);
	return done_testing();
}
