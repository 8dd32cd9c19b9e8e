/* A job's live figures (livejob.c): every rank<R>.live.json of a job directory's steps,
 * read as the report reads rank files (gp_job_file_ok: root in another user's job reads
 * only the owner's files, never through a link), and the job line made from them. Read
 * by `gpuprof top` and the report of a running job. */
#ifndef GP_LIVEJOB_H
#define GP_LIVEJOB_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "live.h"
#include "ranks.h"

typedef struct gp_live_job {
	char dir[4096];
	uid_t owner;
	gp_live_rank_t *r;
	bool *stale; /* r[i]'s agent is gone (gp_live_stale) */
	unsigned n, running, ended, nstale, unreadable;
	unsigned
	    too_big;  /* of unreadable: over GP_LIVE_MAXFILE, not a live file (its rank unseen) */
	unsigned max; /* the most live files read (0: all), the lowest ranks of each step first */
	unsigned beyond; /* live files not read for max: the job line is of the n read */
	double now;      /* Unix time the files were read */
	/* the job line */
	double started, elapsed_s;      /* the earliest rank's start; the longest run so far */
	double median_ms, now_ms;       /* medians over ranks of their medians, last medians */
	int slowest;                    /* the rank whose last interval's median is largest, -1 */
	double slowest_ratio;           /* it against now_ms */
	double busy_pct, last_busy_pct; /* means over the ranks NVML sampled (so far, last) */
	unsigned with_gpus, with_last;  /* ranks NVML sampled so far, in their last interval */
	int fullest; /* the rank whose device memory is fullest (peak of the card), -1 */
	uint64_t lost;
	int first_find; /* the rank of the first finding (slowdowns first), -1 */
} gp_live_job_t;

/* Did NVML sample r's GPUs so far (busy, idle, memory measured), in its last interval
 * (last busy measured)? A rank that saw a GPU but took no sample measured none of them:
 * '-' (null in JSON) in every live output, never 0. */
static inline bool gp_live_sampled(const gp_live_rank_t *r)
{
	return r->ngpus && r->samples;
}
static inline bool gp_live_last_sampled(const gp_live_rank_t *r)
{
	return r->ngpus && r->last_samples;
}

/* Read dir's live files (step: only that step; NULL every step), at most max of them (0:
 * every one; steps in name order, ranks by number), those left counted in j->beyond. 0,
 * with j->n possibly 0; -1 with err when dir cannot be read. */
int gp_live_job_load(gp_live_job_t *j, const char *dir, const char *step, unsigned max, char *err,
                     size_t errlen);
/* Keep only the ranks rk selects (gpuprof report --ranks), the job line made again. */
void gp_live_job_select(gp_live_job_t *j, const gp_ranks_t *rk);
/* Only the ranks whose live file names job (or no job: not under Slurm): those of
 * another job dropped, their count, the first one's job into other. */
unsigned gp_live_job_only(gp_live_job_t *j, const char *job, char *other, size_t len);
/* Does a rank of the job still run (a live file of state running, not stale)? */
bool gp_live_job_running(const gp_live_job_t *j);
void gp_live_job_free(gp_live_job_t *j);
/* "1:02:03" of s seconds into out */
const char *gp_live_hms(double s, char *out, size_t len);
/* The Unix time t as "HH:MM:SS UTC" (a date before it when not today's) into out */
const char *gp_live_clock(double t, char *out, size_t len);

#endif
