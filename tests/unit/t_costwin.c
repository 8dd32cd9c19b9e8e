/* Capture windows by cost (agent/inject/costwin.c) against simulated programs whose steps
 * the collector does not see, on a fake clock ticked as the CUPTI module's thread does
 * (every 200 ms while traced, every second between windows). A program launches kernels
 * at a rate; while traced it runs S times slower (so launches 1/S as many a second) and
 * each kernel costs its tracing price; the tracing cost it pays is the time traced times
 * (1 - 1/S). The budget: that cost <= 1 % of the wall time of a 30 s job and of long ones,
 * and every window ends on its cost or its time. No GPU. */
#include "config.h"
#include "costwin.h"
#include "tap.h"

#define MS  1000000ull
#define SEC 1000000000ull

typedef struct prog {
	double kps;         /* kernels a second, untraced */
	double slow;        /* traced: this many times slower */
	double meas_per_k;  /* measured ns a traced kernel (launch call time) */
	uint64_t kernels;   /* counted by the module: traced kernels only */
	double measured;    /* ns */
	uint64_t traced_ns; /* time traced */
	double cost_ns;     /* what tracing cost the program */
	unsigned opened, closed, by[4];
	uint64_t first_end, max_win_cost, max_win_len;
} prog_t;

/* Run prog for len ns; returns the window state at the end. */
static gp_costwin_t run(prog_t *p, uint64_t len)
{
	gp_costwin_t w;
	gp_costwin_seen_t seen = {0};
	uint64_t now = 1000 * SEC, t0 = now, win_start = now;
	gp_costwin_start(&w, now, &seen);
	double kfrac = 0;
	while (now - t0 < len) {
		uint64_t dt = w.on ? 200 * MS : 1000 * MS;
		if (w.on) {
			double k = p->kps / p->slow * (double)dt / 1e9 + kfrac;
			p->kernels += (uint64_t)k;
			kfrac = k - (double)(uint64_t)k;
			p->measured += (double)(uint64_t)k * p->meas_per_k;
			p->traced_ns += dt;
			p->cost_ns += (double)dt * (1 - 1 / p->slow);
		}
		now += dt;
		seen.kernels = p->kernels;
		seen.measured_ns = (uint64_t)p->measured;
		bool was = w.on;
		bool on = gp_costwin_tick(&w, now, &seen);
		/* the switch-off takes effect at once: the window ends, charged its cost */
		uint64_t cost = was && !on ? gp_costwin_end(&w, now, &seen, GP_COSTWIN_OPEN) : 0;
		if (was && !on) {
			p->closed++;
			p->by[w.why]++;
			if (!p->first_end)
				p->first_end = now - t0;
			if (cost > p->max_win_cost && p->closed > 1)
				p->max_win_cost = cost;
			if (now - win_start > p->max_win_len && p->closed > 1)
				p->max_win_len = now - win_start;
		} else if (!was && on) {
			p->opened++;
			win_start = now;
		}
	}
	return w;
}

/* generate(): ~20 000 kernels a second, x1.6 slower traced; its tracing price about the
 * model's (28 us a kernel traced: 0.6 of 47 us) */
static prog_t generate_like(void)
{
	return (prog_t){.kps = 21000, .slow = 1.6, .meas_per_k = 6000};
}

int main(void)
{
	/* 1. a 30 s job of a launch-bound loop whose steps are not seen (issue 48: x1.6) */
	prog_t p = generate_like();
	gp_costwin_t w = run(&p, 30 * SEC);
	ok(p.closed == 1 && p.opened == 0,
	   "30 s generate(): the first window only (%u closed, %u opened)", p.closed, p.opened);
	ok(p.by[GP_COSTWIN_BY_KERNELS] == 1, "... ended by its kernels' cost");
	ok(p.first_end <= 1 * SEC, "... within 1 s (%.1f s), not 60 s", (double)p.first_end / 1e9);
	ok(p.kernels * GP_COSTWIN_NS_PER_KERNEL >= GP_COSTWIN_FIRST_NS &&
	       p.kernels * GP_COSTWIN_NS_PER_KERNEL < GP_COSTWIN_FIRST_NS + 100 * MS,
	   "... after its budget and at most a tick past it (%llu kernels)",
	   (unsigned long long)p.kernels);
	ok(w.spent_ns >= GP_COSTWIN_FIRST_NS, "the cost spent is counted (%llu ms)",
	   (unsigned long long)(w.spent_ns / MS));
	ok(w.traced_ns == p.traced_ns, "the time traced is counted (%llu ms)",
	   (unsigned long long)(w.traced_ns / MS));
	ok(p.cost_ns <= 0.01 * 30 * SEC, "tracing cost %.2f %% of the 30 s job (budget 1 %%)",
	   100 * p.cost_ns / (30.0 * SEC));

	/* 2. the same loop for an hour: a window every 120 s, each on its cost */
	p = generate_like();
	w = run(&p, 3600 * SEC);
	ok(p.opened >= 28 && p.opened <= 30, "1 h generate(): a window every 120 s (%u)", p.opened);
	ok(p.by[GP_COSTWIN_BY_KERNELS] == p.closed && p.by[GP_COSTWIN_BY_TIME] == 0,
	   "... each ended by its cost (%u of %u)", p.by[GP_COSTWIN_BY_KERNELS], p.closed);
	ok(p.max_win_cost < GP_COSTWIN_WIN_NS + 100 * MS,
	   "... none past its budget by a tick (%llu ms)",
	   (unsigned long long)(p.max_win_cost / MS));
	ok(p.cost_ns <= 0.01 * 3600 * SEC, "tracing cost %.2f %% of the hour (budget 1 %%)",
	   100 * p.cost_ns / (3600.0 * SEC));
	ok(w.spent_ns <= GP_COSTWIN_FIRST_NS + 3600 * SEC / 1000000 * GP_COSTWIN_RATE_PPM,
	   "the estimate spent stays within the allowance (%llu ms)",
	   (unsigned long long)(w.spent_ns / MS));

	/* 3. a compute-bound loop (40 kernels a second, barely slower traced): windows by time */
	p = (prog_t){.kps = 40, .slow = 1.002, .meas_per_k = 5000};
	w = run(&p, 1800 * SEC);
	ok(p.first_end == GP_COSTWIN_FIRST_MAX_NS,
	   "compute-bound: the first window runs its 60 s (%.1f s)", (double)p.first_end / 1e9);
	ok(p.by[GP_COSTWIN_BY_TIME] == p.closed, "... every window ends on its time (%u of %u)",
	   p.by[GP_COSTWIN_BY_TIME], p.closed);
	ok(p.max_win_len == GP_COSTWIN_WIN_MAX_NS, "... later ones 5 s (%.1f s)",
	   (double)p.max_win_len / 1e9);
	ok(p.opened >= 13 && p.opened <= 15, "... one every 120 s (%u in 30 min)", p.opened);

	/* 4. launch calls measured slower than the model says a kernel costs: the measure rules */
	p = (prog_t){.kps = 5000, .slow = 1.5, .meas_per_k = 60000};
	w = run(&p, 30 * SEC);
	ok(p.by[GP_COSTWIN_BY_MEASURED] == 1, "measured cost over the model: ended by the measure");
	ok(p.measured >= GP_COSTWIN_FIRST_NS && p.measured < GP_COSTWIN_FIRST_NS + 200 * MS,
	   "... at its budget (%.0f ms measured)", p.measured / 1e6);

	/* 5. a window that overshot (its records came late): the next waits for the allowance */
	gp_costwin_seen_t s = {0};
	gp_costwin_start(&w, 0, &s);
	s.kernels = 100000; /* 2 s of estimated cost in one flush */
	ok(!gp_costwin_tick(&w, 1 * SEC, &s), "a flush past the budget closes the first window");
	uint64_t c = gp_costwin_end(&w, 1 * SEC, &s, GP_COSTWIN_OPEN);
	ok(c == 100000 * GP_COSTWIN_NS_PER_KERNEL && w.spent_ns == c,
	   "... with its whole cost (%llu ms)", (unsigned long long)(c / MS));
	ok(!gp_costwin_tick(&w, 130 * SEC, &s), "no window at 130 s: the time has not paid for it");
	/* (2 000 + 300 - 150) ms at 0.5 % of the time: 430 s */
	ok(!gp_costwin_tick(&w, 429 * SEC, &s), "... nor at 429 s");
	ok(gp_costwin_tick(&w, 431 * SEC, &s), "... at 431 s it opens");
	ok(w.nwin == 2 && gp_costwin_cost(&w, &s) == 0, "its cost counted from its start");

	/* 6. counters that went back (a module started again) cost nothing, break nothing */
	s.kernels = 10;
	s.measured_ns = 0;
	ok(gp_costwin_tick(&w, 432 * SEC, &s) && gp_costwin_cost(&w, &s) == 0,
	   "counters that went back: no cost, still open");
	ok(!gp_costwin_tick(&w, 437 * SEC, &s) && w.why == GP_COSTWIN_BY_TIME,
	   "... and it ends on its time (5 s)");

	/* 7. a switch-off refused (CUPTI busy, the program's profiler): the window is charged
	 * once, when it does end, with what was traced meanwhile; no window opens before */
	s = (gp_costwin_seen_t){0};
	gp_costwin_start(&w, 0, &s);
	s.kernels = 10000; /* 200 ms at 20 us: past the first window's budget */
	ok(!gp_costwin_tick(&w, 200 * MS, &s) && w.closing && w.nended == 0 && w.spent_ns == 0,
	   "budget reached: kernels off asked, nothing charged before the switch-off");
	s.kernels = 15000; /* refused: traced on */
	ok(!gp_costwin_tick(&w, 400 * MS, &s) && !gp_costwin_tick(&w, 200 * SEC, &s) && w.nwin == 1,
	   "no other window while its end is awaited, 200 s on (%u opened)", w.nwin);
	c = gp_costwin_end(&w, 200 * SEC, &s, GP_COSTWIN_OPEN); /* capture.c's: it took effect */
	ok(c == 15000 * GP_COSTWIN_NS_PER_KERNEL && w.why == GP_COSTWIN_BY_KERNELS &&
	       w.nended == 1 && w.traced_ns == 200 * SEC,
	   "it ends when the switch-off takes effect: %llu ms, its kernels traced meanwhile "
	   "included, why it ended kept",
	   (unsigned long long)(c / MS));
	ok(gp_costwin_end(&w, 201 * SEC, &s, GP_COSTWIN_AT_EXIT) == 0 && w.nended == 1,
	   "... and only once");

	/* 8. after its end: late records and the detach's cuptiFinalize are its cost too */
	s.kernels += 500; /* records the switch-off's flush delivered later: 10 ms */
	c = gp_costwin_late(&w, &s);
	ok(c == 500 * GP_COSTWIN_NS_PER_KERNEL && w.spent_ns == 310 * MS,
	   "late records charged to it (%llu ms)", (unsigned long long)(c / MS));
	ok(gp_costwin_late(&w, &s) == 0, "... once");
	gp_costwin_start(&w, 0, &(gp_costwin_seen_t){0});
	s = (gp_costwin_seen_t){.kernels = 100, .measured_ns = 160 * MS}; /* launch calls */
	gp_costwin_tick(&w, 200 * MS, &s);
	ok(w.why == GP_COSTWIN_BY_MEASURED && gp_costwin_end(&w, 200 * MS, &s, 0) == 160 * MS,
	   "a window ended on the cost measured: 160 ms");
	s.measured_ns += 7 * MS; /* the detach: its thread's time in cuptiFinalize */
	c = gp_costwin_late(&w, &s);
	ok(c == 7 * MS && w.spent_ns == 167 * MS, "the detach's finalize charged to it (%llu ms)",
	   (unsigned long long)(c / MS));
	s.measured_ns += 3 * MS; /* one more, uncharged, as the next window opens */
	ok(gp_costwin_tick(&w, 130 * SEC, &s) && w.nwin == 2 && gp_costwin_cost(&w, &s) == 0,
	   "the next window opens, counted from its start");
	ok(gp_costwin_late(&w, &s) == 3 * MS && w.spent_ns == 170 * MS,
	   "what the last one gained before it opened is still charged, to it");

	/* 8b. a window whose switch-off is still refused when the process exits: nothing
	 * switched it off, so it ended at exit (not on its budget: no switch to record) */
	gp_costwin_start(&w, 0, &(gp_costwin_seen_t){0});
	s = (gp_costwin_seen_t){.kernels = 10000};
	gp_costwin_tick(&w, 200 * MS, &s);
	ok(w.closing && gp_costwin_end(&w, 300 * MS, &s, GP_COSTWIN_AT_EXIT) == 200 * MS &&
	       w.why == GP_COSTWIN_AT_EXIT,
	   "closing at exit: charged once, ended at exit");

	/* 9. the process ends with a window open (a short job inside its first window) */
	gp_costwin_start(&w, 0, &(gp_costwin_seen_t){0});
	s = (gp_costwin_seen_t){.kernels = 4000};
	ok(gp_costwin_tick(&w, 10 * SEC, &s), "30 s job, 80 ms of cost: its first window open");
	c = gp_costwin_end(&w, 30 * SEC, &s, GP_COSTWIN_AT_EXIT);
	ok(c == 80 * MS && w.why == GP_COSTWIN_AT_EXIT && w.nended == 1 && !w.on,
	   "at exit: charged %llu ms, ended at exit", (unsigned long long)(c / MS));
	return done_testing();
}
