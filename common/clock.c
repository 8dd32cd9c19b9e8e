/* TSC-extrapolated CLOCK_MONOTONIC (see clock.h). */
#include "config.h"
#include "clock.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

gp_clock_t gp_clock;
static pthread_once_t clock_once = PTHREAD_ONCE_INIT;

/* The kernel keeps time with the TSC, and the TSC is invariant: CPUID leaf 0x80000007,
 * EDX bit 8, from which Linux sets both constant_tsc and nonstop_tsc. Asked of the CPU,
 * not read from /proc/cpuinfo: that file is made on each read, one block per CPU, and
 * cost every profiled process ~5 ms of CPU (13 ms of wall) at start on a 2-vCPU VM, more
 * on a node of a hundred cores. */
static bool tsc_trusted(void)
{
#if defined(__x86_64__)
	char buf[64] = "";
	unsigned a, b, c, d;
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");
	if (!f)
		return false;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	if (strncmp(buf, "tsc", 3))
		return false;
	if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
		return false;
	__get_cpuid(0x80000007u, &a, &b, &c, &d);
	return (d >> 8) & 1;
#else
	return false;
#endif
}

/* One (tsc, ns) pair: the read of CLOCK_MONOTONIC bracketed by the tightest of three
 * pairs of TSC reads, so a vCPU preemption in between does not skew the anchor. */
static void sample(uint64_t *tsc, uint64_t *ns)
{
#if defined(__x86_64__)
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 3; i++) {
		uint64_t a = __rdtsc(), n = gp_now_ns(), b = __rdtsc();
		if (b - a < best) {
			best = b - a;
			*tsc = a + (b - a) / 2;
			*ns = n;
		}
	}
#else
	*tsc = 0;
	*ns = gp_now_ns();
#endif
}

static void clock_setup(void)
{
#if defined(__x86_64__)
	if (!tsc_trusted())
		return;
	sample(&gp_clock.tsc0, &gp_clock.ns0);
	atomic_store(&gp_clock.pending, true);
#endif
}

void gp_clock_init(void)
{
	pthread_once(&clock_once, clock_setup);
}

void gp_clock_reanchor(uint64_t unused)
{
#if defined(__x86_64__)
	uint32_t expect = 0;
	uint64_t t, n;
	if (!atomic_compare_exchange_strong(&gp_clock.busy, &expect, 1))
		return; /* someone else is at it; the caller uses clock_gettime meanwhile */
	sample(&t, &n);
	/* the rate over the whole interval since the last anchor: NTP's slew included */
	if (t > gp_clock.tsc0 && n > gp_clock.ns0) {
		uint64_t mult =
		    (uint64_t)(((unsigned __int128)(n - gp_clock.ns0) << 32) / (t - gp_clock.tsc0));
		atomic_fetch_add_explicit(&gp_clock.seq, 1, memory_order_acq_rel);
		gp_clock.tsc0 = t;
		gp_clock.ns0 = n;
		gp_clock.mult = mult;
		atomic_fetch_add_explicit(&gp_clock.seq, 1, memory_order_acq_rel);
		if (atomic_load(&gp_clock.pending)) {
			atomic_store(&gp_clock.pending, false);
			atomic_store_explicit(&gp_clock.tsc, true, memory_order_release);
		}
	}
	atomic_store(&gp_clock.busy, 0);
#endif
	(void)unused;
}
