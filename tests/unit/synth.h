/* Synthetic events for the unit tests of the analysis: fed to a rank's data as the loader
 * would read them from a rank file, every time shifted by T0 (a clock never reads 0). */
#ifndef GP_T_SYNTH_H
#define GP_T_SYNTH_H

#include "attribution.h"
#include "rankdata.h"

#include <string.h>

#define T0 1000000000ull

static inline void synth_feed(rank_data_t *d, gp_rank_t *r, gp_event_t e)
{
	if (e.type != GP_EV_STRING && e.type != GP_EV_STACK && e.type != GP_EV_FRAME)
		e.ts += T0;
	gp_rd_feed(d, r, &e);
}

/* string id's definition, in the pieces the ring carries (an empty string: one piece) */
static inline void synth_str(rank_data_t *d, gp_rank_t *r, uint32_t id, const char *s)
{
	size_t n = strlen(s);
	for (size_t off = 0; off < n || off == 0; off += GP_STRING_CHUNK) {
		gp_event_t e = {.type = GP_EV_STRING, .tid = id, .u16 = (uint16_t)off};
		size_t k = n - off < GP_STRING_CHUNK ? n - off : GP_STRING_CHUNK;
		e.u8 = (uint8_t)k;
		memcpy(&e.a, s + off, k);
		synth_feed(d, r, e);
		if (!n)
			break;
	}
}

/* A kernel launch on thread tid at ts (its API record, 2 us, correlation corr) and its kernel
 * from start for dur (name: a string id) */
static inline void synth_launch(rank_data_t *d, gp_rank_t *r, uint32_t tid, uint64_t ts,
                                uint64_t corr, uint64_t start, uint64_t dur, uint32_t name)
{
	synth_feed(d, r,
	           (gp_event_t){.type = GP_EV_API,
	                        .tid = tid,
	                        .ts = ts,
	                        .a = 2000,
	                        .c = corr,
	                        .u8 = 1,
	                        .u16 = GP_API_LAUNCH});
	synth_feed(d, r,
	           (gp_event_t){.type = GP_EV_KERNEL, .ts = start, .a = dur, .b = name, .c = corr});
}

/* A test's one rank: its data d, its result r, the job, and feed() and str() on them */
#define SYNTH_ONE_RANK()                                                                           \
	static rank_data_t d;                                                                      \
	static gp_rank_t r;                                                                        \
	static gp_job_t job;                                                                       \
	static void feed(gp_event_t e)                                                             \
	{                                                                                          \
		synth_feed(&d, &r, e);                                                             \
	}                                                                                          \
	static void str(uint32_t id, const char *s)                                                \
	{                                                                                          \
		synth_str(&d, &r, id, s);                                                          \
	}

/* The rank read: its steps, capture, GPU time, ranges and the attribution pass into job */
static inline void synth_attribute(rank_data_t *d, gp_rank_t *r, gp_job_t *job)
{
	gp_rd_finish(d);
	gp_pass_steps(r, d);
	gp_pass_capture(r, d);
	gp_pass_gpu(r, d);
	gp_pass_ranges(job, r, d);
	gp_pass_attribution(&job->ops, d);
}

#endif
