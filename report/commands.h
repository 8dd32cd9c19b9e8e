/* The commands that live in files of their own (report/cmd_NAME.c): each one's
 * documentation (its name, synopsis and options, as report/cli.h reads them) and its
 * function, listed in main.c's two tables. */
#ifndef GP_COMMANDS_H
#define GP_COMMANDS_H

#include "cli.h"

extern const gp_cli_cmd_t gp_cmd_top_doc;
int gp_cmd_top(int argc, char **argv);

extern const gp_cli_cmd_t gp_cmd_findings_doc;
int gp_cmd_findings(int argc, char **argv);

#endif
