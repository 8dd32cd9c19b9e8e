/* gpuprof prune (cmd_prune.c): age-based removal of job directories under the site's
 * directory (site_output), so that profiling every GPU job stays bounded. */
#ifndef GP_PRUNE_H
#define GP_PRUNE_H

#include "cli.h"

extern const gp_cli_cmd_t gp_cmd_prune_doc;
int gp_cmd_prune(int argc, char **argv);
/* "30d", "12h", "90m", "3600s", "2w" -> seconds; -1 when it is not a positive age. */
long long gp_prune_age(const char *text);

#endif
