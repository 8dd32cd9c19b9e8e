/* The agent's live figures (live_writer.c): rank<R>.live.json beside the rank file every
 * live_interval seconds, from the records the rank file is written with (common/live.h). */
#ifndef GP_LIVE_WRITER_H
#define GP_LIVE_WRITER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "event.h"
#include "rankfile.h"

typedef struct gp_live_writer gp_live_writer_t;

/* Follow what w is written with, for the file dir/rank<rank>.live.json (mode: the rank
 * file's). NULL when live_interval is 0 or there is no memory: no live figures. */
gp_live_writer_t *gp_live_writer_start(gp_rf_writer_t *w, const char *dir, const char *step,
                                       const char *rank, mode_t mode);
/* Monotonic ns when the next file is due (UINT64_MAX: never). */
uint64_t gp_live_writer_due(const gp_live_writer_t *lw);
/* Write the file now: state "running" or "ended" (with the program's wait status); pid the
 * program's; lost the records lost so far by cause. The writer keeps w's observer; at the
 * end, gp_live_writer_free after the last write. */
void gp_live_writer_write(gp_live_writer_t *lw, const char *state, pid_t pid, int wait_status,
                          const uint64_t lost[GP_LOSS_N]);
void gp_live_writer_free(gp_live_writer_t *lw, gp_rf_writer_t *w);

#endif
