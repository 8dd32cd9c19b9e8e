/* Live figures of a running rank (live.c): the agent sees every record it writes into the
 * rank file (gp_rf_writer_observe) and keeps running figures -- steps and step time, NVML's
 * busy and memory, losses, the findings that already fire -- for the rank so far and for
 * the last interval; every live_interval seconds it writes them as rank<R>.live.json
 * beside the rank file. `gpuprof top` and the report of a running job read them back
 * (gp_live_read). Both sides are here, so a key is named once.
 *
 * Cost: gp_live_observe is a switch and a few adds per record; a candidate's step times
 * go into log-spaced histograms (0.6 % wide: medians within 0.3 %), so memory stays
 * fixed however long the job runs. */
#ifndef GP_LIVE_H
#define GP_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "event.h"

#define GP_LIVE_VERSION 1
#define GP_LIVE_SUFFIX  ".live.json" /* rank<R>.live.json */
#define GP_LIVE_MAXFILE 65536        /* a live file larger than this is not one */
#define GP_LIVE_GPUS    8            /* devices followed per rank */
#define GP_LIVE_FINDS   6            /* findings kept per rank */
/* A step interval that slows by this factor against the rank's median is a slowdown, with
 * at least SLOW_MIN_STEPS steps in the interval and SLOW_MIN_BASE before it. */
#define GP_LIVE_SLOW_RATIO     1.2
#define GP_LIVE_SLOW_MIN_STEPS 3
#define GP_LIVE_SLOW_MIN_BASE  10
/* A live file not rewritten for this many intervals (and 10 s more) belongs to an agent
 * that is gone (killed, node down): its figures are the last it wrote. */
#define GP_LIVE_STALE_INTERVALS 3

typedef struct gp_live_finding {
	char id[32];
	char text[256];
} gp_live_finding_t;

/* What a live file holds (the writer fills it from its running figures; the reader from
 * the file). Times: seconds; *_s relative to the program's start (started, Unix time). */
typedef struct gp_live_rank {
	int version;
	char job[32], step[48], node[64];
	char state[16]; /* running, ended */
	int rank, pid;
	int wait_status; /* ended: the program's wait status */
	unsigned seq;    /* files written so far */
	double started, written, elapsed_s, interval_s;
	/* steps: which they are (source nvtx, optimizer; empty: none yet) and what their time
	 * measures (basis gpu: completion to completion from the step markers; period: start
	 * to start on the host) */
	char step_name[96], step_source[16], step_basis[16];
	unsigned steps;                    /* every step so far, warm-up included */
	unsigned warmup;                   /* left out of the figures so far */
	double median_ms, p95_ms, mean_ms; /* so far, after the warm-up */
	unsigned last_steps;               /* steps whose time ended in the last interval */
	double last_median_ms, last_from_s, last_to_s;
	double first_step_s; /* when the first step ended (start-up before it); -1 none */
	/* the current slowdown: since when (-1: none), its interval's median against the
	 * median of the steps before it */
	double slow_since_s, slow_ratio, slow_base_ms;
	/* NVML: mean utilisation so far and in the last interval, and the idle share split by
	 * cause: before the first step (start-up) and once steps run */
	unsigned ngpus, samples, last_samples;
	double busy_pct, last_busy_pct, idle_startup_s, idle_steps_s;
	uint64_t mem_used, mem_peak, mem_total; /* the fullest device's bytes (NVML) */
	uint64_t torch_allocated, torch_reserved, torch_peak; /* PyTorch's allocator, 0: none */
	uint64_t lost;                                        /* records lost, all causes */
	char lost_by[128];                                    /* "ring full 12, cupti 3" */
	unsigned faults;                       /* Xid and uncorrected ECC errors seen */
	double agent_cpu_s, agent_cpu_last_ms; /* the agent's own CPU so far, last interval */
	unsigned nfind;
	gp_live_finding_t find[GP_LIVE_FINDS];
} gp_live_rank_t;

/* ---- the writer's side (the agent) ---- */
typedef struct gp_live gp_live_t;

/* interval_s: seconds between files; warmup: steps left out; step_range: the NVTX range
 * that is a step ("" or NULL: the most repeated outermost one). NULL on no memory. */
gp_live_t *gp_live_new(double interval_s, unsigned warmup, const char *step_range);
void gp_live_free(gp_live_t *l);
/* Every record written into the rank file (a gp_rf_observe_fn). */
void gp_live_observe(void *l, const gp_event_t *ev);
/* Records lost so far by cause (GP_LOSS_*; n[0] unused), as the agent counts them. */
void gp_live_set_losses(gp_live_t *l, const uint64_t n[GP_LOSS_N]);
/* Close the interval that ends at now (monotonic ns) and fill out (identity fields are
 * the caller's: job, step, node, rank, pid, state, started, agent CPU). */
void gp_live_tick(gp_live_t *l, uint64_t now, gp_live_rank_t *out);
/* out as the file's JSON into buf; its length, or 0 when it does not fit. */
size_t gp_live_format(const gp_live_rank_t *r, char *buf, size_t len);

/* ---- the reader's side (top, the report of a running job) ---- */
/* Parse a live file's text (NUL-terminated). -1 when it is not one. */
int gp_live_parse(const char *text, gp_live_rank_t *out);
/* Is the rank's agent gone (no file for GP_LIVE_STALE_INTERVALS intervals) at now (Unix
 * time)? */
bool gp_live_stale(const gp_live_rank_t *r, double now);

#endif
