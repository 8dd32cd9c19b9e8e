/* The rank's steps (steps.c: gp_pass_steps, gp_pass_capture): which intervals are the
 * training steps, how long each really took, and what the capture windows covered.
 * Sections of gp_rank_t (rank.h); JSON objects "steps" and "capture". */
#ifndef GP_STEPS_H
#define GP_STEPS_H

#include <stdbool.h>
#include <stdint.h>

#include "stepshape.h"
#include "text.h"

#define GP_STEPS_HOW 256

/* Step samples kept per rank: the job report holds every rank's, and 10 240 ranks x
 * 100 000 steps would be 12 GiB of them; 512 draw a rank's step-time plot as well and
 * keep it under 64 MiB at 10 240 ranks. */
#define GP_STEP_KEEP 512

/* How slow: the headline per-step figure is basis: "gpu" (completion of a step's GPU
 * work to the next one's), "period" (start to start) where no CUDA activity was
 * recorded, "cpu range" with a single post-warm-up step. */
typedef struct gp_steps {
	char name[128];
	char source[16]; /* nvtx, profiler, kernels; empty: no steps found */
	gp_text_t how;   /* how the steps were found, and how sure (GP_STEPS_HOW bytes at most) */
	char basis[16];
	unsigned n, warmup, n_post, last_step;
	double mean_ms, median_ms, p95_ms, p99_ms, cv; /* the headline */
	double median_lo_ms, median_hi_ms;             /* its median's 95 % interval; 0: too few */
	/* the headline's post-warm-up samples, in step order: all of them up to
	 * GP_STEP_KEEP, else the medians of GP_STEP_KEEP blocks of consecutive steps of the
	 * nall there were, each numbered by its block's first step (keep_samples; the
	 * figures above are from all); owned (gp_rank_release) */
	double *ms;
	unsigned *no; /* each one's step number, from 0; NULL when they run on from no0
	                 (the usual case: 10 240 ranks x 1 000 steps is 40 MiB of numbers
	                 that say nothing); read through gp_step_no */
	unsigned no0;
	unsigned nms, nall;
	/* the same steps as a distribution, for what compares runs (`gpuprof diff`): all of
	 * them, sorted, up to GP_STEP_KEEP, else GP_STEP_KEEP quantiles of all of them (at
	 * (i + 0.5) / GP_STEP_KEEP). Blocks' medians are no sample of the steps' times (of 2
	 * steps, their mean; a periodic step's phase, block after block); owned */
	double *q;
	unsigned nq;
	double cpu_median_ms, cpu_p95_ms;       /* CPU time inside the step range */
	double period_median_ms, period_p95_ms; /* start to start */
	double gpu_median_ms, gpu_p95_ms;       /* GPU completion to completion */
	unsigned nperiod, ngpu;
	bool gpu_from_markers; /* gpu from step completion markers, not kernel records */
	uint64_t snapshot_ns;  /* end of the last step (monotonic ns): memory_viz snapshot time */
	/* the throughput: the post-warm-up steps' wall time (the last warm-up step's
	 * completion to the last step's, its GPU work where traced; traced steps included:
	 * the job as it ran) over their count, and steps a second; 0: fewer than 2 steps */
	double mean_period_ms, per_second;
	gp_step_shape_t shape; /* are the headline's steps alike (stepshape.h) */
	gp_step_shift_t shift; /* did they get slower at one step and stay so (stepshape.h) */
} gp_steps_t;

/* Capture windows (GP_EV_CONTROL): GPU statistics cover steps captured steps. With
 * untraced steps between windows (sampled capture) the headline is the untraced steps'
 * (step markers), the traced ones' beside it. */
typedef struct gp_rank_capture {
	bool window;
	unsigned steps, first, last; /* step numbers, from 0 */
	uint64_t switches, switch_max_ns;
	/* the share of the rank's time with kernels traced (0 without switches); windows by
	 * cost (a program whose steps were not seen), and their estimated cost, every charge
	 * (agent/inject/costwin.h): of the windows, those open at the process's exit and those
	 * its death left open (at their last cost so far); of the cost, the charges after the
	 * windows' ends (late activity records, the detach's cuptiFinalize) */
	double traced_pct;
	unsigned cost_windows, cost_at_exit, cost_unended;
	uint64_t cost_estimate_ns, cost_late_ns;
	unsigned ntraced, nuntraced;                 /* post-warm-up samples of each */
	double traced_median_ms, untraced_median_ms; /* 0: not measured */
	double tracer_ms_per_step; /* what tracing added to a traced step (their difference, or
	                              CUPTI's overhead records where no step was untraced) */
	/* 95 % intervals of the two medians, and the difference's widest reading of them:
	 * the traced interval's ends less the untraced one's far ends; 0: too few steps */
	double traced_lo_ms, traced_hi_ms, untraced_lo_ms, untraced_hi_ms;
} gp_rank_capture_t;

/* gpuprof's own time on the program's threads, timed in the process it is paid in: the
 * PyTorch integration's optimizer hooks (with the step marker they place and the
 * allocator counters they read) and its batch timing, from the running total each
 * optimizer step's record carries, over the steps of the optimizer that returns most
 * often (the headline's, when its steps are the optimizer's). Not in it: its module hooks
 * (mode layers; in windows), NVTX records (tens of ns each), CUPTI's work inside capture
 * windows (capture.tracer_ms_per_step), the agent (another process). JSON object
 * "own_cost", null where not measured. */
typedef struct gp_rank_own {
	unsigned steps;           /* steps of that optimizer it was read over (0: not measured) */
	unsigned optimizer;       /* which (its index) */
	double us_median, us_p95; /* per step of it */
	double pct; /* us_median of the headline's median step, in % (0: the headline's
	               steps are not that optimizer's, one to one) */
} gp_rank_own_t;

#endif
