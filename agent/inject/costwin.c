/* Capture windows by cost for programs whose steps the collector does not see
 * (costwin.h says why and how). */
#include "config.h"
#include "costwin.h"

void gp_costwin_start(gp_costwin_t *w, uint64_t now, const gp_costwin_seen_t *seen)
{
	*w = (gp_costwin_t){.t0 = now, .win_t0 = now, .at0 = *seen, .nwin = 1, .on = true};
}

/* The counters only grow; one that went back (a module started again) counts as 0. */
static uint64_t since(uint64_t now, uint64_t then)
{
	return now > then ? now - then : 0;
}

/* The open window's kernels at the price of one, saturating */
static uint64_t model_ns(const gp_costwin_t *w, const gp_costwin_seen_t *seen)
{
	uint64_t k = since(seen->kernels, w->at0.kernels);
	return k > UINT64_MAX / GP_COSTWIN_NS_PER_KERNEL ? UINT64_MAX
	                                                 : k * GP_COSTWIN_NS_PER_KERNEL;
}

uint64_t gp_costwin_cost(const gp_costwin_t *w, const gp_costwin_seen_t *seen)
{
	if (!w->on)
		return 0;
	uint64_t model = model_ns(w, seen);
	uint64_t measured = since(seen->measured_ns, w->at0.measured_ns);
	return model > measured ? model : measured;
}

/* The cost the windows may have spent by now: the first window's and RATE of the time */
static uint64_t allowance(const gp_costwin_t *w, uint64_t now)
{
	return GP_COSTWIN_FIRST_NS + since(now, w->t0) / 1000000ull * GP_COSTWIN_RATE_PPM;
}

static void close_window(gp_costwin_t *w, uint64_t now, const gp_costwin_seen_t *seen, int why)
{
	w->spent_ns += gp_costwin_cost(w, seen);
	w->traced_ns += since(now, w->win_t0);
	w->on = false;
	w->why = why;
}

bool gp_costwin_tick(gp_costwin_t *w, uint64_t now, const gp_costwin_seen_t *seen)
{
	if (w->on) {
		bool first = w->nwin == 1;
		uint64_t budget = first ? GP_COSTWIN_FIRST_NS : GP_COSTWIN_WIN_NS;
		uint64_t max_len = first ? GP_COSTWIN_FIRST_MAX_NS : GP_COSTWIN_WIN_MAX_NS;
		uint64_t measured = since(seen->measured_ns, w->at0.measured_ns);
		if (gp_costwin_cost(w, seen) >= budget)
			close_window(w, now, seen,
			             measured > model_ns(w, seen) ? GP_COSTWIN_BY_MEASURED
			                                          : GP_COSTWIN_BY_KERNELS);
		else if (since(now, w->win_t0) >= max_len)
			close_window(w, now, seen, GP_COSTWIN_BY_TIME);
		return w->on;
	}
	/* the next window: EVERY after the last one began, once the time since the start
	 * has paid for what the windows spent and for one more */
	if (since(now, w->win_t0) < GP_COSTWIN_EVERY_NS ||
	    w->spent_ns + GP_COSTWIN_WIN_NS > allowance(w, now))
		return false;
	w->on = true;
	w->win_t0 = now;
	w->at0 = *seen;
	w->nwin++;
	w->why = GP_COSTWIN_OPEN;
	return true;
}
