/* One way from a job directory to the job's figures, and the writers that render them
 * (pipeline.c). Every command that reports a job (report, run, export, diff, the
 * ledger's record) takes it through gp_job_analyse, in this order: the rank files read
 * and analysed (gp_job_load: per-rank passes, merge, the job's figures), the job's sacct
 * record where asked (how it ended is a finding: a time limit), the findings (and the
 * accounting record made from them). A command only chooses writers, by name, from
 * gp_writers: report's and export's --format lists, errors and help come from it. */
#ifndef GP_PIPELINE_H
#define GP_PIPELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "job.h"

typedef struct gp_analyse_opts {
	const char *step;       /* one Slurm step; NULL: every step */
	const char *steps_from; /* --steps-from; NULL: found */
	bool sacct;             /* add the job's sacct record (named by its id, or --sacct) */
} gp_analyse_opts_t;

/* The job in dir, analysed; 0, or -1 with the reason in err (nothing to free then). */
int gp_job_analyse(gp_job_t *job, const char *dir, const gp_analyse_opts_t *o, char *err,
                   size_t errlen);
/* The job's sacct record (JobID ... AdminComment, and its State alone), by the job id its
 * rank files carry; nothing where sacct knows none. */
void gp_job_sacct(gp_job_t *job);

typedef struct gp_write_opts {
	const char *ranks; /* the ranks a per-rank export takes (--ranks); NULL: its default */
	const char *pydir; /* agent/python, for memory_viz's merge of PyTorch's snapshots */
	const char *table; /* csv: kernels, ranks, findings */
	bool torch113;     /* memviz: PyTorch 1.13's layout */
	uint64_t max_events;
	double win_from, win_to; /* chrome: a window of the job, s; 0 0: all */
} gp_write_opts_t;

typedef struct gp_writer {
	const char *name;
	const char *help;
	bool report; /* a format of gpuprof report (else of gpuprof export) */
	bool to_dir; /* writes a directory of files (path), not one stream */
	/* 0, or -1 (said on stderr) */
	int (*write)(const gp_job_t *job, FILE *out, const char *path, const gp_write_opts_t *o);
} gp_writer_t;

extern const gp_writer_t gp_writers[];
extern const size_t gp_nwriters;
/* The writer of that name among report's (report true) or export's formats; NULL: none */
const gp_writer_t *gp_writer_find(const char *name, bool report);
/* Their names, ", " between: for a usage error */
const char *gp_writer_names(bool report, char *buf, size_t len);

#endif
