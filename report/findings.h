/* The findings engine's contract (findings.c): a rule is data (its id, the words a person
 * reads, its tier, whether it is sized, its thresholds each with a name, value, unit and
 * doc) and two functions: size() measures one rank, describe() words the finding. The
 * engine does the rest once for every rule: it chooses the rank, takes gpuprof's own
 * tracing out of a time saving, holds the saving to the time it is made of and to the
 * step, marks a cause's effects, orders the list and keeps the causes of one rank from
 * saving more than its step. Caliper's s_spec is the model: a rule carries its options,
 * their defaults and their docs beside its code, and `gpuprof findings` (cmd_findings.c)
 * prints them, the table of doc/report.md included. */
#ifndef GP_FINDINGS_H
#define GP_FINDINGS_H

#include "job.h"

#include <stdbool.h>
#include <stdio.h>

/* What a rule's findings are: a cause (a fix saves something, or a failure to act on), or
 * data quality (a warning about what the figures measure). Whether a finding is an effect
 * is a relation between two findings, not a rule's property: the same comm_not_overlapped
 * is a cause in one job and a straggler's effect in another (gp_rule_t.explains). */
enum gp_rule_role { GP_ROLE_CAUSE = 0, GP_ROLE_QUALITY = 1 };

/* How the engine picks where a rule fires: the one rank where it is worst (its saving, or
 * rank_by), or every rank where it fires (how each rank ended). */
enum gp_rule_select { GP_SELECT_WORST = 0, GP_SELECT_EACH = 1 };

typedef struct gp_threshold {
	const char *name; /* as {name} in the rule's doc, and in `gpuprof findings` */
	double value;     /* in unit: a share is written in % (50, not 0.5) */
	const char *unit; /* "%", "us", "kernels", "B", ... */
	const char *doc;  /* one line: what it holds against what */
} gp_threshold_t;

/* What size() measured on one rank, and what the engine made of it.
 * Time rules: ms per step of the time the saving is made of, tracer_ms of it gpuprof's own
 * (the engine takes it out), bound_ms the most that time can be (the step's idle time for
 * idle time; < 0: no bound of its own, the step is), step_ms the step its share is of.
 * Memory rules: bytes a fix frees and score (its share of the peak). Unsized rules:
 * rank_by (the worst rank has the largest, the first among equals) and score. */
typedef struct gp_size {
	double ms, tracer_ms, bound_ms, step_ms;
	const char *tracer_how;
	double bytes, score, rank_by;
	/* the engine's: the saving (ms per step, % of step_ms) once tracing is out and the
	 * bound applied; whether the bound cut it; on how many ranks the rule fired */
	double saving_ms, saving_pct;
	bool bounded;
	unsigned nfired;
} gp_size_t;

typedef struct gp_rule gp_rule_t;

/* One evaluation of the rules over a job; state: the running rule's prepare() */
typedef struct gp_rule_ctx {
	gp_job_t *job;
	void *state;
	const struct gp_rule *rule; /* the rule whose size() runs: rules that share one */
} gp_rule_ctx_t;

struct gp_rule {
	const char *id;   /* report.json's findings[].id: for programs, never for a person */
	const char *name; /* what a person reads for it (a diff, gpuprof findings) */
	enum gp_finding_kind tier;
	enum gp_rule_role role;
	bool sized; /* its findings state a saving (time or memory) */
	enum gp_rule_select select;
	const gp_threshold_t *th;
	unsigned nth;
	int saving_th; /* time: the threshold the saving's % of the step must reach; -1: none */
	/* docs: when it fires (prose; {name} is the threshold's value and unit), what it
	 * saves, and its advice for any job in one sentence (gpuprof ledger) */
	const char *fires, *saves, *advice;
	/* job-wide figures size() needs (the straggler's baseline), freed by the engine */
	void *(*prepare)(const gp_job_t *job);
	void (*release)(void *state);
	/* r (job->ranks[i]) as the rule sees it: false where it does not fire */
	bool (*size)(const gp_rule_ctx_t *c, const gp_rank_t *r, unsigned i, gp_size_t *s);
	/* title, evidence, threshold and fix of the finding f on r, sized as s */
	void (*describe)(const gp_rule_ctx_t *c, gp_finding_t *f, const gp_rank_t *r,
	                 const gp_size_t *s);
	/* findings of its own after the ranks (a failed launcher's); NULL: none */
	void (*job_findings)(gp_rule_ctx_t *c);
	/* a finding of this rule explains these rules' time findings on other ranks (its
	 * effects) and on its own rank (its own time, told under it): NULL-terminated */
	const gp_rule_t *const *explains, *const *explains_own;
	const char *own_words; /* how a finding of its own time is told: "the straggler's ..." */
};

/* Every rule, in the order they run (a cause that explains others first) */
extern const gp_rule_t *const gp_rules[];
extern const unsigned gp_nrules;
const gp_rule_t *gp_rule_by_id(const char *id);
/* a rule's threshold's value as a fraction where its unit is % (50 % -> 0.5), else as is */
double gp_th(const gp_rule_t *rule, unsigned k);

/* A finding of rule on r (NULL: the job), added by the engine or a rule's job_findings;
 * NULL when the job's list is full. */
gp_finding_t *gp_rule_add(gp_rule_ctx_t *c, const gp_rule_t *rule, const gp_rank_t *r);

/* The rules (only: that one; NULL: all), their thresholds and docs: text, or markdown
 * (doc/report.md's tables) */
void gp_rules_print(FILE *out, const gp_rule_t *only, bool markdown);
/* text (a rule's fires or saves) into buf with every {name} replaced by the rule's
 * threshold's value and unit; -1 when a {name} names no threshold of the rule (written
 * "?"; the unit test holds every rule to 0) */
int gp_rule_text(const gp_rule_t *rule, const char *text, char *buf, size_t len);

/* ---- helpers the rules share (findings.c) ---- */

/* steps the rank's GPU statistics cover (its window's, else the post-warm-up ones) */
unsigned gp_gsteps(const gp_rank_t *r);
/* the step a rank's time shares are of: its mean step, else its median */
double gp_step_of(const gp_rank_t *r);
/* t (ns over the GPU window) in ms per step; 0 without steps */
double gp_per_step_ms(const gp_rank_t *r, uint64_t t);
/* the idle time (ms) of the step savings are a share of (gp_step_of): that step less its
 * GPU busy share (the untraced steps' where known); < 0 where the busy share is not known */
double gp_idle_bound_ms(const gp_rank_t *r);
/* exposed communication per step (ms): NCCL time not overlapped by compute */
double gp_exposed_comm_ms(const gp_rank_t *r);
/* what gpuprof's tracing added to a traced step (ms), and how that was known */
double gp_tracer_ms(const gp_rank_t *r, const char **how);
/* one of three sentences, by the rank's framework (PyTorch, JAX, CUDA C) */
const char *gp_words(const gp_rank_t *r, const char *torch, const char *jax, const char *cuda);
/* the rank's framework is JAX (its integration said so) */
bool gp_is_jax(const gp_rank_t *r);
/* bytes as the findings have always said them: B, KiB, MiB (one decimal), GiB (two) */
void gp_rule_bytes(double b, char *out, size_t len);
/* append to a fixed buffer */
void gp_cat(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* the rules, each declared beside its code (rules_*.c) */
extern const gp_rule_t gp_rule_not_observed, gp_rule_gpu_unused, gp_rule_cuda_oom,
    gp_rule_time_limit, gp_rule_incomplete, gp_rule_killed, gp_rule_failed, gp_rule_gpu_fault,
    gp_rule_gpu_shared, gp_rule_straggler, gp_rule_slowdown, gp_rule_sync_stall,
    gp_rule_input_bound, gp_rule_idle_gaps, gp_rule_fragmentation, gp_rule_comm, gp_rule_pageable,
    gp_rule_fp32, gp_rule_host_ahead, gp_rule_memory_leak, gp_rule_optimizer_state,
    gp_rule_near_limit;

#define GP_NTH(a) (sizeof(a) / sizeof((a)[0]))

#endif
