/* The report of a running job, from its live figures (live_report.c). */
#ifndef GP_LIVE_REPORT_H
#define GP_LIVE_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "livejob.h"

void gp_live_report_text(const gp_live_job_t *j, FILE *f);
void gp_live_report_json(const gp_live_job_t *j, FILE *f);
/* One line, as `gpuprof report --summary-line` gives for a finished job. */
void gp_live_report_line(const gp_live_job_t *j, char *out, size_t len);

#endif
