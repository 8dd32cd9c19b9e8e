/* A job as a user names it on the command line: its directory, or its Slurm job id --
 * 1234, an array task 1234_5, a heterogeneous job's component 1234+1 -- found through
 * sacct: the dir= that gpuprof's summary put into the job's AdminComment (whatever
 * --gpuprof-output said), else the default job directory, gpuprof-<id> in its WorkDir. */
#ifndef GP_JOBREF_H
#define GP_JOBREF_H

#include <stdbool.h>
#include <stddef.h>

/* 1234, 1234_5 or 1234+1 */
bool gp_jobref_is_id(const char *s);
/* The job directory of arg (an existing directory is itself) into dir. -1 with the
 * reason in err; *by_id tells whether arg was taken as a job id. */
int gp_jobref_resolve(const char *arg, char *dir, size_t len, bool *by_id, char *err,
                      size_t errlen);
/* The job directory that an AdminComment's gpuprof summary names, into dir; -1: none.
 * (Other tools' text may come before or after it, separated by "; ".) */
int gp_jobref_admin_dir(const char *comment, char *dir, size_t len);
/* One sacct field of job id (sacct -j ID -X -n -P -o FIELD), each allocation's on a line
 * of out (at most len bytes, NUL-terminated); run without a shell. Lines, or -1 when sacct
 * fails, -2 when there is no sacct to run (not a Slurm machine). */
int gp_sacct_field(const char *id, const char *field, char *out, size_t len);

#endif
