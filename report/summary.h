/* Per-rank summaries (summary.c): rankR.gps beside rankR.gpr, one rank's analysis as the
 * job report merges it, read in place of the rank file while the file is unchanged. */
#ifndef GP_SUMMARY_H
#define GP_SUMMARY_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "rank.h"

/* Written from a rank's
 * analysis and read in its place while the rank file is unchanged (-1: none, stale or
 * not valid). gp_rank_summarize analyses one rank file and writes its summary. */
int gp_summary_write(const char *gpr, const gp_rank_t *r, const gp_rank_tables_t *t);
/* owner: the rank file's owner that the reader takes ((uid_t)-1: anyone; the caller's
 * own are always taken) */
int gp_summary_read(const char *gpr, uid_t owner, gp_rank_t *out, gp_rank_tables_t *t);
int gp_rank_summarize(const char *gpr, char *err, size_t errlen);
/* Is gpr large enough to be worth a summary (GPUPROF_SUMMARY_MIN_BYTES)? A small rank
 * file is read as fast as a summary would be, and its summary would be the larger. */
bool gp_summary_wanted(const char *gpr);

/* The sections of gp_rank_t a summary holds, each by name: where it is in gp_rank_t and
 * its size (the unit test checks that they cover every byte of it but padding). */
typedef struct gp_sum_section {
	const char *name;
	size_t off, size;
} gp_sum_section_t;
const gp_sum_section_t *gp_summary_sections(size_t *n);
/* Where gp_rank_t holds text (text.h), which a summary keeps as strings: n offsets. */
const size_t *gp_summary_texts(size_t *n);

#endif
