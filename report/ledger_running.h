/* gpuprof ledger --running (ledger_running.c): the running profiled jobs' live figures. */
#ifndef GP_LEDGER_RUNNING_H
#define GP_LEDGER_RUNNING_H

#include <stdio.h>

/* from: a file of squeue -h -t RUNNING -o '%i|%u|%a|%P|%M|%Z' lines ("-": standard
 * input; NULL: run squeue); format "text" or "json". 0, or -1 said on stderr. */
/* site_output: the site's template (gpuprof.yaml), where a job profile_all_jobs profiled
 * without asking writes; NULL or "" when none */
int gp_ledger_running(const char *from, const char *format, const char *site_output, FILE *out);

#endif
