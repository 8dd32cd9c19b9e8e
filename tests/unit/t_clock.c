/* The fast clock agrees with CLOCK_MONOTONIC and never goes backwards, on both of its
 * paths whatever the CPU (GPUPROF_TEST_CLOCK forces one: a machine whose TSC the clock
 * does not trust never ran the TSC path, so CI passed or failed by the CPU it landed on),
 * from one thread and from four at once while the anchor is replaced under them (the
 * ThreadSanitizer tier builds this file: tests/tsan/run.sh). The TSC is taken only after
 * its rate was measured and checked, and dropped for good when a check fails. */
#include "config.h"
#include "clock.h"
#include "tap.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct result {
	int in_use;
	uint64_t back, reanchors;
	int64_t worst, worst_threads;
} result_t;

typedef struct th {
	uint64_t back;
	int64_t worst;
} th_t;

/* One read of the fast clock between two of clock_gettime: its error against them, and
 * whether it went back from the previous read. */
static void read_once(th_t *t, uint64_t *prev)
{
	uint64_t a = gp_now_ns(), f = gp_clock_ns(), b = gp_now_ns();
	int64_t e = f < a ? (int64_t)(a - f) : f > b ? (int64_t)(f - b) : 0;
	if (e > t->worst)
		t->worst = e;
	t->back += f < *prev;
	*prev = f;
}

static void *reader(void *arg)
{
	th_t *t = arg;
	uint64_t prev = 0, end = gp_now_ns() + 300 * 1000000ull; /* ~5 anchors' worth */
	while (gp_now_ns() < end)
		read_once(t, &prev);
	return NULL;
}

static void run(const char *mode, result_t *r)
{
	setenv(GP_ENV_TEST_CLOCK, mode, 1);
	gp_clock_init();
	uint64_t prev = 0;
	th_t one = {0, 0};
	for (int i = 0; i < 2000000; i++) {
		read_once(&one, &prev);
		if (i % 200000 == 0) {
			struct timespec p = {0, 30 * 1000000L}; /* let anchors go stale */
			nanosleep(&p, NULL);
		}
	}
	r->back = one.back;
	r->worst = one.worst;
	pthread_t t[4];
	th_t res[4] = {{0, 0}};
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, reader, &res[i]);
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		r->back += res[i].back;
		if (res[i].worst > r->worst_threads)
			r->worst_threads = res[i].worst;
	}
	r->in_use = atomic_load(&gp_clock.tsc);
	r->reanchors = atomic_load(&gp_clock.reanchors);
}

/* Each path in a process of its own: the clock decides once per process. */
static int run_forked(const char *mode, result_t *r)
{
	int p[2];
	if (pipe(p) < 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		result_t x = {0};
		close(p[0]);
		run(mode, &x);
		_exit(write(p[1], &x, sizeof(x)) == (ssize_t)sizeof(x) ? 0 : 1);
	}
	close(p[1]);
	ssize_t n = pid > 0 ? read(p[0], r, sizeof(*r)) : -1;
	close(p[0]);
	int st = 0;
	if (pid > 0)
		waitpid(pid, &st, 0);
	return n == (ssize_t)sizeof(*r) && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* The TSC comes into use only after two intervals (a rate, then its check); a jump of
 * the TSC's time (a snapshot restore) fails the next check: clock_gettime from then on,
 * the error handed to the hook once. Returns a bitmask of failed expectations (0: all
 * held), in a child of its own. */
static int64_t hook_err;
static unsigned hook_calls;
static void on_drop(int64_t err, uint64_t at, uint64_t span)
{
	(void)at;
	(void)span;
	hook_err = err;
	hook_calls++;
}

static void nap_ms(long ms)
{
	struct timespec p = {0, ms * 1000000L};
	nanosleep(&p, NULL);
}

static int drop_child(void)
{
	int bad = 0;
	setenv(GP_ENV_TEST_CLOCK, "tsc", 1);
	gp_clock_on_drop = on_drop;
	gp_clock_init();
	/* 2^27 ticks is 32-134 ms at 1-4 GHz: 150 ms between reads is past it */
	gp_clock_ns();
	nap_ms(150);
	gp_clock_ns(); /* the first interval: a rate, not in use yet */
	if (atomic_load(&gp_clock.tsc) || !atomic_load(&gp_clock.pending) ||
	    !atomic_load(&gp_clock.mult))
		bad |= 1;
	nap_ms(150);
	gp_clock_ns(); /* the second: the rate checked, in use */
	if (!atomic_load(&gp_clock.tsc) || atomic_load(&gp_clock.pending))
		bad |= 2;
	/* a quiet interval passes its check, and the TSC stays */
	nap_ms(150);
	gp_clock_ns();
	if (!atomic_load(&gp_clock.tsc) || hook_calls)
		bad |= 4;
	/* a read on a CPU whose TSC is a little behind the anchor's (here: the anchor moved
	 * 20 000 ticks into the future, its time with it) checks out and keeps the TSC */
	uint32_t sq = atomic_load(&gp_clock.seq);
	atomic_store(&gp_clock.seq, sq + 1);
	atomic_store(&gp_clock.ns0,
	             atomic_load(&gp_clock.ns0) + ((20000ull * atomic_load(&gp_clock.mult)) >> 32));
	atomic_store(&gp_clock.tsc0, atomic_load(&gp_clock.tsc0) + 20000);
	atomic_store(&gp_clock.seq, sq + 2);
	gp_clock_reanchor(0);
	if (!atomic_load(&gp_clock.tsc) || hook_calls)
		bad |= 128;
	nap_ms(150);
	gp_clock_ns();
	gp_clock_test_skew(5000000); /* the TSC's time now 5 ms ahead of the kernel's */
	nap_ms(150);
	uint64_t prev = 0;
	th_t one = {0, 0};
	gp_clock_ns(); /* the check fails here */
	for (int i = 0; i < 100000; i++)
		read_once(&one, &prev);
	if (atomic_load(&gp_clock.tsc) || atomic_load(&gp_clock.pending))
		bad |= 8;
	if (hook_calls != 1 || hook_err > -4900000 || hook_err < -5100000 ||
	    atomic_load(&gp_clock.drop_err) != hook_err)
		bad |= 16;
	if (one.back || one.worst > 2000) /* clock_gettime's own from then on */
		bad |= 32;
	nap_ms(150);
	gp_clock_ns(); /* dropped for good: no second call, no way back */
	if (atomic_load(&gp_clock.tsc) || hook_calls != 1)
		bad |= 64;
	return bad;
}

int main(void)
{
	static const char *modes[] = {"tsc", "gettime"};
	for (int m = 0; m < 2; m++) {
		result_t r = {0};
		bool tsc = m == 0;
#if !defined(__x86_64__)
		if (tsc) {
			skip("no TSC path on this architecture");
			continue;
		}
#endif
		ok(run_forked(modes[m], &r) == 0, "%s path: the run finished", modes[m]);
		ok(r.in_use == tsc, "%s path: TSC extrapolation %s (forced by %s=%s)", modes[m],
		   r.in_use ? "in use" : "not used", GP_ENV_TEST_CLOCK, modes[m]);
		if (tsc)
			ok(r.reanchors >= 4,
			   "tsc path: the anchor was replaced under the readers "
			   "(%llu times)",
			   (unsigned long long)r.reanchors);
		ok(r.back == 0, "%s path: monotonic over 2e6 reads and 4 threads (%llu steps back)",
		   modes[m], (unsigned long long)r.back);
		ok(r.worst < 2000, "%s path: within 2 us of clock_gettime (worst %lld ns)",
		   modes[m], (long long)r.worst);
		/* four threads on two vCPUs: a read is preempted between its brackets, not
		 * inside the extrapolation, so the bound holds there too */
		ok(r.worst_threads < 2000, "%s path, 4 threads: within 2 us (worst %lld ns)",
		   modes[m], (long long)r.worst_threads);
	}
#if defined(__x86_64__)
	{
		pid_t pid = fork();
		if (pid == 0)
			_exit(drop_child());
		int st = 0;
		waitpid(pid, &st, 0);
		int bad = WIFEXITED(st) ? WEXITSTATUS(st) : 255;
		ok(!(bad & 1), "the first interval measures a rate; the TSC is not used yet");
		ok(!(bad & 2),
		   "the second interval checks that rate; the TSC is used from then on");
		ok(!(bad & 4), "an interval that agrees with the kernel's clock keeps the TSC");
		ok(!(bad & 128), "a TSC a little behind the anchor's keeps its place");
		ok(!(bad & 8), "a TSC 5 ms off the kernel's clock is dropped at the next check");
		ok(!(bad & 16), "the hook is told once, with the error (-5 ms)");
		ok(!(bad & 32), "after the drop: clock_gettime, monotonic, within 2 us");
		ok(!(bad & 64), "a dropped TSC stays dropped");
	}
#else
	skip("no TSC path on this architecture");
#endif
	ok(gp_clock_source_tsc_based("tsc") && gp_clock_source_tsc_based("kvm-clock") &&
	       gp_clock_source_tsc_based("hyperv_clocksource_tsc_page"),
	   "clocksources made from the TSC: tsc, kvm-clock, Hyper-V's TSC page");
	ok(!gp_clock_source_tsc_based("hpet") && !gp_clock_source_tsc_based("acpi_pm") &&
	       !gp_clock_source_tsc_based("xen") && !gp_clock_source_tsc_based("") &&
	       !gp_clock_source_tsc_based("tsc-early") &&
	       !gp_clock_source_tsc_based("arch_sys_counter"),
	   "others are not: hpet, acpi_pm, xen, tsc-early, arm's counter, none");
	return done_testing();
}
