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

/* The last window's cost from its start to seen: the larger of model and measure over
 * the whole stretch, so charges made at its end and after it add up to exactly this */
static uint64_t stretch_cost(const gp_costwin_t *w, const gp_costwin_seen_t *seen)
{
	uint64_t model = model_ns(w, seen);
	uint64_t measured = since(seen->measured_ns, w->at0.measured_ns);
	return model > measured ? model : measured;
}

uint64_t gp_costwin_cost(const gp_costwin_t *w, const gp_costwin_seen_t *seen)
{
	return w->on || w->closing ? stretch_cost(w, seen) : 0;
}

/* The cost the windows may have spent by now: the first window's and RATE of the time */
static uint64_t allowance(const gp_costwin_t *w, uint64_t now)
{
	return GP_COSTWIN_FIRST_NS + since(now, w->t0) / 1000000ull * GP_COSTWIN_RATE_PPM;
}

/* What the last window's stretch cost beyond its charges so far, charged now */
static uint64_t charge(gp_costwin_t *w, const gp_costwin_seen_t *seen)
{
	uint64_t c = since(stretch_cost(w, seen), w->charged_ns);
	w->charged_ns += c;
	w->spent_ns += c;
	return c;
}

uint64_t gp_costwin_end(gp_costwin_t *w, uint64_t now, const gp_costwin_seen_t *seen, int why)
{
	if (!w->on && !w->closing)
		return 0;
	/* a closing window keeps its budget's reason when its switch-off takes effect; at
	 * exit or at the steps nothing switched it off: that is why it ended */
	if (w->on || why == GP_COSTWIN_AT_EXIT || why == GP_COSTWIN_BY_STEPS)
		w->why = why;
	w->traced_ns += since(now, w->win_t0);
	w->on = w->closing = false;
	w->nended++;
	return charge(w, seen);
}

uint64_t gp_costwin_late(gp_costwin_t *w, const gp_costwin_seen_t *seen)
{
	uint64_t c = w->unrecorded_ns;
	w->unrecorded_ns = 0;
	return w->on || w->closing || !w->nwin ? c : c + charge(w, seen);
}

bool gp_costwin_tick(gp_costwin_t *w, uint64_t now, const gp_costwin_seen_t *seen)
{
	if (w->closing) /* its end is awaited (gp_costwin_end): no other window meanwhile */
		return false;
	if (w->on) {
		bool first = w->nwin == 1;
		uint64_t budget = first ? GP_COSTWIN_FIRST_NS : GP_COSTWIN_WIN_NS;
		uint64_t max_len = first ? GP_COSTWIN_FIRST_MAX_NS : GP_COSTWIN_WIN_MAX_NS;
		uint64_t measured = since(seen->measured_ns, w->at0.measured_ns);
		int why = GP_COSTWIN_OPEN;
		if (stretch_cost(w, seen) >= budget)
			why = measured > model_ns(w, seen) ? GP_COSTWIN_BY_MEASURED
			                                   : GP_COSTWIN_BY_KERNELS;
		else if (since(now, w->win_t0) >= max_len)
			why = GP_COSTWIN_BY_TIME;
		if (why != GP_COSTWIN_OPEN) {
			w->on = false;
			w->closing = true;
			w->why = why;
		}
		return w->on;
	}
	/* the next window: EVERY after the last one began, once the time since the start
	 * has paid for what the windows spent (the last one's late cost, charged or not) and
	 * for one more */
	uint64_t spent = w->spent_ns + since(stretch_cost(w, seen), w->charged_ns);
	if (since(now, w->win_t0) < GP_COSTWIN_EVERY_NS ||
	    spent + GP_COSTWIN_WIN_NS > allowance(w, now))
		return false;
	w->unrecorded_ns += charge(w, seen); /* the last one's, before its stretch ends */
	w->on = true;
	w->win_t0 = now;
	w->at0 = *seen;
	w->charged_ns = 0;
	w->nwin++;
	w->why = GP_COSTWIN_OPEN;
	return true;
}
