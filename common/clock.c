/* TSC-extrapolated CLOCK_MONOTONIC (see clock.h). */
#include "config.h"
#include "clock.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
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

/* GPUPROF_TEST_CLOCK (tests only): "tsc" takes the TSC path on any x86-64 CPU (a machine
 * whose TSC the kernel does not trust gets wrong times from it: never for real runs),
 * "gettime" never takes it. CI otherwise tested the path of the CPU it landed on. */
static bool tsc_wanted(void)
{
	const char *t = getenv(GP_ENV_TEST_CLOCK);
	if (t && !strcmp(t, "tsc"))
		return true;
	if (t && !strcmp(t, "gettime"))
		return false;
	return tsc_trusted();
}

static void clock_setup(void)
{
#if defined(__x86_64__)
	uint64_t t, n;
	if (!tsc_wanted())
		return;
	sample(&t, &n);
	atomic_store_explicit(&gp_clock.tsc0, t, memory_order_relaxed);
	atomic_store_explicit(&gp_clock.ns0, n, memory_order_relaxed);
	atomic_store_explicit(&gp_clock.pending, true, memory_order_release);
#endif
}

void gp_clock_init(void)
{
	pthread_once(&clock_once, clock_setup);
}

uint64_t gp_clock_gettime_ns(void)
{
	return gp_now_ns();
}

void gp_clock_reanchor(uint64_t unused)
{
#if defined(__x86_64__)
	uint32_t expect = 0;
	uint64_t t, n;
	if (!atomic_compare_exchange_strong(&gp_clock.busy, &expect, 1))
		return; /* someone else is at it; the caller uses clock_gettime meanwhile */
	sample(&t, &n);
	/* the rate over the whole interval since the last anchor: NTP's slew included (only
	 * this thread writes the anchor while it holds busy) */
	uint64_t tsc0 = GP_CLK_LOAD(tsc0), ns0 = GP_CLK_LOAD(ns0);
	/* a reader that saw the old anchor stale while another thread replaced it comes
	 * here right after: a rate over those few microseconds is mostly the samples' own
	 * jitter (seen: 0.3 ms off and steps back after 55 ms, with 4 threads on 2 vCPUs).
	 * The anchor is fresh again: keep it. */
	if (!atomic_load(&gp_clock.pending) && t - tsc0 <= (1ull << 27)) {
		atomic_store(&gp_clock.busy, 0);
		return;
	}
	if (t > tsc0 && n > ns0) {
		uint64_t mult = (uint64_t)(((unsigned __int128)(n - ns0) << 32) / (t - tsc0));
		/* odd, then the fields, then even: a reader that saw any new field sees an odd
		 * or a changed sequence and retries */
		uint32_t s = atomic_load_explicit(&gp_clock.seq, memory_order_relaxed);
		atomic_store_explicit(&gp_clock.seq, s + 1, memory_order_relaxed);
		atomic_thread_fence(memory_order_release);
		atomic_store_explicit(&gp_clock.tsc0, t, memory_order_relaxed);
		atomic_store_explicit(&gp_clock.ns0, n, memory_order_relaxed);
		atomic_store_explicit(&gp_clock.mult, mult, memory_order_relaxed);
		atomic_store_explicit(&gp_clock.seq, s + 2, memory_order_release);
		atomic_fetch_add_explicit(&gp_clock.reanchors, 1, memory_order_relaxed);
		if (atomic_load(&gp_clock.pending)) {
			atomic_store(&gp_clock.pending, false);
			atomic_store_explicit(&gp_clock.tsc, true, memory_order_release);
		}
	}
	atomic_store(&gp_clock.busy, 0);
#endif
	(void)unused;
}
