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

void (*gp_clock_on_drop)(int64_t, uint64_t, uint64_t);

/* The kernel's clocksources that are the TSC, scaled: the TSC itself, KVM's pvclock (also
 * what other hypervisors give Linux guests under that name) and Hyper-V's reference TSC
 * page. Clouds run their GPU VMs on the last two (kvm-clock is GCP's default). */
bool gp_clock_source_tsc_based(const char *name)
{
	static const char *const ok[] = {"tsc", "kvm-clock", "hyperv_clocksource_tsc_page"};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (!strcmp(name, ok[i]))
			return true;
	return false;
}

/* The kernel keeps time with the TSC, or with a clock made from it, and the TSC is
 * invariant: CPUID leaf 0x80000007, EDX bit 8, from which Linux sets both constant_tsc and
 * nonstop_tsc. Asked of the CPU, not read from /proc/cpuinfo: that file is made on each
 * read, one block per CPU, and cost every profiled process ~5 ms of CPU (13 ms of wall) at
 * start on a 2-vCPU VM, more on a node of a hundred cores. Trusted only until the first
 * check says otherwise (gp_clock_reanchor). */
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
	buf[strcspn(buf, "\n")] = '\0';
	if (!gp_clock_source_tsc_based(buf))
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
 * pairs of TSC reads, so a vCPU preemption in between does not skew the anchor. Returns
 * the bracket's width in ticks. */
static uint64_t sample(uint64_t *tsc, uint64_t *ns)
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
	return best;
#else
	*tsc = 0;
	*ns = gp_now_ns();
	return 0;
#endif
}

/* GPUPROF_TEST_CLOCK (tests only): "tsc" takes the TSC path on any x86-64 CPU (a machine
 * whose TSC the kernel does not trust gets wrong times from it: never for real runs),
 * "gettime" never takes it. CI otherwise tested the path of the CPU it landed on.
 * "tsc-jump" is "tsc" with the TSC's time put 5 ms ahead as soon as it is in use, as a
 * TSC that jumped would be: the next check drops it (the report's tests). */
static bool test_jump;
static bool tsc_wanted(void)
{
	const char *t = getenv(GP_ENV_TEST_CLOCK);
	if (t && !strcmp(t, "tsc-jump"))
		test_jump = true;
	if (t && (!strcmp(t, "tsc") || test_jump))
		return true;
	if (t && !strcmp(t, "gettime"))
		return false;
	return tsc_trusted();
}

/* The widest bracket a sample may have: three preempted tries in a row say nothing about
 * the TSC (20 000 ticks: 5-20 us at 1-4 GHz). */
#define SAMPLE_WIDTH_MAX 20000u

/* A fork while another thread re-anchored: the child has that thread's busy and, mid-way,
 * an odd sequence over half-written fields. Free busy; with an odd sequence, keep to
 * clock_gettime (no record: the drop is not the TSC's). */
#if defined(__x86_64__)
static void clock_atfork_child(void)
{
	if (atomic_load(&gp_clock.seq) & 1) {
		atomic_store(&gp_clock.pending, false);
		atomic_store(&gp_clock.tsc, false);
		atomic_store(&gp_clock.seq, atomic_load(&gp_clock.seq) + 1);
	}
	atomic_store(&gp_clock.busy, 0);
}
#endif

static void clock_setup(void)
{
#if defined(__x86_64__)
	uint64_t t, n;
	int tries = 0;
	if (!tsc_wanted())
		return;
	pthread_atfork(NULL, NULL, clock_atfork_child);
	while (sample(&t, &n) > SAMPLE_WIDTH_MAX)
		if (++tries == 16)
			return; /* never a narrow sample: clock_gettime */
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

/* The check of an interval: how far the TSC's prediction may be from clock_gettime. ntpd
 * slews by at most 500 ppm; the bound is four times that, plus 100 us for the samples.
 * chrony may slew faster while it corrects a large offset (its maxslewrate): that drops
 * the TSC, the safe side (clock_gettime's times from then on). */
static bool within(int64_t err, uint64_t span)
{
	uint64_t e = err < 0 ? -(uint64_t)err : (uint64_t)err;
	return e <= 100000u + span / 500;
}

static void drop(int64_t err, uint64_t at, uint64_t span)
{
	atomic_store(&gp_clock.drop_err, err ? err : 1); /* 0 says never */
	atomic_store(&gp_clock.drop_at, at);
	atomic_store(&gp_clock.drop_span, span);
	atomic_store(&gp_clock.pending, false);
	atomic_store_explicit(&gp_clock.tsc, false, memory_order_release);
}

void gp_clock_reanchor(uint64_t unused)
{
#if defined(__x86_64__)
	uint32_t expect = 0;
	uint64_t t = 0, n = 0, tsc0, ns0, mult0;
	bool dropped = false;
	if (!atomic_compare_exchange_strong(&gp_clock.busy, &expect, 1))
		return; /* someone else is at it; the caller uses clock_gettime meanwhile */
	if (!atomic_load(&gp_clock.pending) && !atomic_load(&gp_clock.tsc))
		goto out; /* dropped: a reader that saw the TSC in use just before */
	if (sample(&t, &n) > SAMPLE_WIDTH_MAX)
		goto out; /* preempted: the next read tries again */
	/* the rate over the whole interval since the last anchor: NTP's slew included (only
	 * this thread writes the anchor while it holds busy) */
	tsc0 = GP_CLK_LOAD(tsc0);
	ns0 = GP_CLK_LOAD(ns0);
	mult0 = GP_CLK_LOAD(mult);
	/* a reader that saw the old anchor stale while another thread replaced it comes
	 * here right after: a rate over those few microseconds is mostly the samples' own
	 * jitter (seen: 0.3 ms off and steps back after 55 ms, with 4 threads on 2 vCPUs).
	 * The anchor is fresh again: keep it. */
	if (t >= tsc0 && t - tsc0 <= (1ull << 27))
		goto out;
	/* the check: what the last anchor and rate say it is now, against the kernel's clock
	 * (a TSC that went back predicts a time before the anchor) */
	if (mult0) {
		__int128 pred =
		    (__int128)ns0 + (((__int128)(int64_t)(t - tsc0) * (__int128)mult0) >> 32);
		__int128 err = (__int128)n - pred;
		if (err > INT64_MAX)
			err = INT64_MAX;
		if (err < -INT64_MAX)
			err = -INT64_MAX;
		if (!within((int64_t)err, n - ns0)) {
			drop((int64_t)err, n, n - ns0);
			dropped = true;
			goto out;
		}
	}
	if (t < tsc0)
		goto out; /* a CPU whose TSC is a little behind the anchor's: keep the anchor */
	if (t > tsc0 && n > ns0) {
		uint64_t mult = (uint64_t)(((unsigned __int128)(n - ns0) << 32) / (t - tsc0));
		/* gp_clock_ns multiplies in 64 bits: at most 2^27 ticks by under 2^36 (a TSC
		 * over 62.5 MHz; every invariant TSC is) */
		if (mult >> 36) { /* clock_gettime from now on */
			atomic_store(&gp_clock.pending, false);
			atomic_store_explicit(&gp_clock.tsc, false, memory_order_release);
			goto out;
		}
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
		/* in use once a rate has been measured and then checked */
		if (mult0 && atomic_load(&gp_clock.pending)) {
			if (test_jump)
				gp_clock_test_skew(5000000);
			atomic_store(&gp_clock.pending, false);
			atomic_store_explicit(&gp_clock.tsc, true, memory_order_release);
		}
	}
out:
	atomic_store(&gp_clock.busy, 0);
	if (dropped && gp_clock_on_drop)
		gp_clock_on_drop(GP_CLK_LOAD(drop_err), n, GP_CLK_LOAD(drop_span));
#endif
	(void)unused;
}

void gp_clock_test_skew(int64_t ns)
{
	uint32_t s = atomic_load(&gp_clock.seq);
	atomic_store(&gp_clock.seq, s + 1);
	atomic_store(&gp_clock.ns0, GP_CLK_LOAD(ns0) + (uint64_t)ns);
	atomic_store(&gp_clock.seq, s + 2);
}
