/* One rank's analysis (analyze.c): the only way from a rank file to figures. The job
 * report, the agent's summary and every export call gp_rank_analyse, so a step is
 * decided once, with the rank file header's step range and warm-up. */
#ifndef GP_ANALYZE_H
#define GP_ANALYZE_H

#include <stddef.h>
#include <sys/types.h>

#include "rank.h"

/* Where steps come from: the first source that yields two or more (auto), or one. */
enum { GP_STEPS_AUTO = 0, GP_STEPS_NVTX, GP_STEPS_PROFILER, GP_STEPS_KERNELS, GP_STEPS_OPTIMIZER };
/* --steps-from's names (auto, nvtx, optimizer, profiler, kernels; NULL: auto) as
 * GP_STEPS_*; -1 for any other. */
int gp_steps_from_name(const char *s);

typedef struct gp_rank_opts {
	int steps_from;           /* GP_STEPS_* */
	const char *const *sides; /* the files of the rank's other processes (rankR.pidP.gpr) */
	unsigned nsides;
	/* owned: read only rank files of user owner (or the caller's own): a job directory's
	 * files are its owner's, and root's report of it reads no other user's file that a
	 * link of a step directory, or a hard link, put there */
	bool owned;
	uid_t owner;
} gp_rank_opts_t;

typedef struct rank_data rank_data_t;
/* Analyse the rank file at path (with its processes' files, o->sides) into r and its
 * kernel and range tables into t (both zeroed first; gp_rank_release and
 * gp_rank_tables_free after). d: the loader's buffers, reused from call to call
 * (zeroed before the first, gp_rd_free after the last); after a call on one file they
 * hold its records, as the exports draw them. o NULL: the defaults. 0, or -1 with the
 * reason in err. */
int gp_rank_analyse(const char *path, const gp_rank_opts_t *o, gp_rank_t *r, gp_rank_tables_t *t,
                    rank_data_t *d, char *err, size_t errlen);

#endif
