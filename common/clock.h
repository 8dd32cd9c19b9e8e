/* Fast CLOCK_MONOTONIC nanoseconds for the hot path of the injected library.
 * clock_gettime costs 26-31 ns in these VMs, rdtsc 11-28 ns. Where the kernel's own clock is
 * the TSC or a paravirtual clock made from it (clocksource "tsc", "kvm-clock" or Hyper-V's
 * "hyperv_clocksource_tsc_page": each is the TSC, scaled) and the TSC is invariant
 * (constant_tsc and nonstop_tsc), we extrapolate CLOCK_MONOTONIC from the TSC and
 * re-anchor every 2^27 ticks (about 55 ms at 2.5 GHz), the rate measured over the whole
 * interval, so the error against clock_gettime stays around a microsecond while NTP slews.
 *
 * The TSC is not taken on trust. Every re-anchor first checks the interval just ended: the
 * previous anchor and rate must predict clock_gettime within 100 us plus 0.2 % of the
 * interval (ntpd slews by at most 0.05 %; chrony correcting a large offset may slew faster,
 * which drops the TSC: the safe side). The first interval measures the rate and the
 * second checks it, so for the first ~110 ms it is plain clock_gettime. A check that fails
 * (a TSC that jumped at a VM's snapshot restore or migration, one that runs at another
 * rate than the kernel's clock, CPUs whose TSCs disagree) drops the TSC for the rest of the
 * process: clock_gettime from then on, the disagreement kept (gp_clock.drop_err) and
 * handed to gp_clock_on_drop, which the injected library turns into a record the report
 * shows. Elsewhere gp_clock_ns() is clock_gettime. All stages keep comparing like with
 * like: everything the profiler stamps goes through here or is the same clock.
 *
 * The anchor is a seqlock whose fields are all atomics (relaxed loads and stores between
 * the sequence's acquire/release, Boehm's "Can Seqlocks Get Along with Programming
 * Language Memory Models?", 2012): plain fields there were a data race under the C11
 * model that ThreadSanitizer reported on every CPU whose TSC is trusted. On x86-64 the
 * relaxed loads are the same plain moves.
 *
 * GPUPROF_TEST_CLOCK=tsc|gettime (tests only, doc/environment.md) forces one path
 * whatever the CPU, so both are tested on any machine. */
#ifndef GP_CLOCK_H
#define GP_CLOCK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "event.h"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#define GP_ENV_TEST_CLOCK "GPUPROF_TEST_CLOCK"

typedef struct gp_clock {
	_Atomic uint32_t seq;       /* seqlock: odd while anchors change */
	_Atomic uint32_t busy;      /* one re-anchoring thread at a time */
	_Atomic bool tsc;           /* TSC extrapolation in use (after the first ~110 ms) */
	_Atomic bool pending;       /* TSC trusted so far, its rate not measured and checked yet */
	_Atomic uint64_t tsc0, ns0; /* anchor */
	_Atomic uint64_t mult;      /* ns per tick, 32.32 fixed point (0: not measured yet) */
	_Atomic uint64_t reanchors; /* how many anchors were taken (tests) */
	_Atomic int64_t drop_err;   /* clock_gettime minus the TSC's prediction when the TSC
	                               was dropped (0: never dropped) */
	_Atomic uint64_t drop_at;   /* when it was dropped (CLOCK_MONOTONIC ns) */
	_Atomic uint64_t drop_span; /* the interval that check covered (ns) */
} gp_clock_t;

extern gp_clock_t gp_clock;

/* Called once, from the thread whose re-anchor found the TSC wrong, after the clock went
 * back to clock_gettime (the injected library records it: GP_EV_CLOCK). Set before the
 * first gp_clock_ns; it must not block. */
extern void (*gp_clock_on_drop)(int64_t err_ns, uint64_t at_ns, uint64_t span_ns);

/* Whether the kernel clocksource `name` (as in current_clocksource, without the newline)
 * is made from the TSC, so the TSC may stand in for it (still checked as above). */
bool gp_clock_source_tsc_based(const char *name);

/* Tests only: shift the anchor's nanoseconds by `ns`, as a TSC that jumped would look to
 * the next check. */
void gp_clock_test_skew(int64_t ns);

/* Decide whether the TSC can be trusted and take the first anchor. Idempotent, cheap. */
void gp_clock_init(void);
void gp_clock_reanchor(uint64_t tsc);
/* clock_gettime(CLOCK_MONOTONIC), out of line: the inline fast path then keeps no
 * struct timespec on its caller's stack (no stack-protector canary on the hot paths) */
uint64_t gp_clock_gettime_ns(void);

#define GP_CLK_LOAD(f) atomic_load_explicit(&gp_clock.f, memory_order_relaxed)

#ifdef GP_BENCH_FREE_CLOCK
/* bench/gpu-carry.sh's second build of the injected library only: a clock that costs a
 * load and a store (40 ns a call from the first real reading; racy across threads, and
 * one such clock per source file), so that a benchmark can split an NVTX pair's cost
 * between the clock and the rest. Never in a product build: its times are not times. */
static inline uint64_t gp_clock_ns(void)
{
	static uint64_t fake;
	uint64_t t = __atomic_load_n(&fake, __ATOMIC_RELAXED);
	if (!t)
		t = gp_clock_gettime_ns();
	__atomic_store_n(&fake, t + 40, __ATOMIC_RELAXED);
	return t + 40;
}
#elif defined(GP_BENCH_RAW_TSC) && defined(__x86_64__)
/* bench/gpu-carry.sh's third build only: the TSC's ticks as they are, with no anchor and
 * no conversion, so that a benchmark measures the floor of a pair that reads the TSC
 * (two rdtscs and the code around them). Never in a product build: ticks are not ns. */
static inline uint64_t gp_clock_ns(void)
{
	return __rdtsc();
}
#else
static inline uint64_t gp_clock_ns(void)
{
#if defined(__x86_64__)
	if (atomic_load_explicit(&gp_clock.tsc, memory_order_acquire)) {
		for (;;) {
			uint32_t s = atomic_load_explicit(&gp_clock.seq, memory_order_acquire);
			uint64_t t = __rdtsc();
			uint64_t tsc0 = GP_CLK_LOAD(tsc0), ns0 = GP_CLK_LOAD(ns0);
			uint64_t mult = GP_CLK_LOAD(mult);
			/* the loads above happen before the second read of seq */
			atomic_thread_fence(memory_order_acquire);
			if ((s & 1) ||
			    s != atomic_load_explicit(&gp_clock.seq, memory_order_relaxed))
				continue;
			uint64_t d = t - tsc0;
			if (d > (1ull << 27)) /* stale anchor: refresh, then use the real clock */
				gp_clock_reanchor(t);
			else
				return ns0 + ((d * mult) >> 32); /* <= 2^27 x < 2^36: no overflow */
			break;
		}
	} else if (atomic_load_explicit(&gp_clock.pending, memory_order_relaxed) &&
	           __rdtsc() - GP_CLK_LOAD(tsc0) > (1ull << 27)) {
		gp_clock_reanchor(0);
	}
#endif
	return gp_clock_gettime_ns();
}
#endif /* GP_BENCH_FREE_CLOCK, GP_BENCH_RAW_TSC */

#endif
