/* The command line's shared grammar: each command's options are one table, from which
 * getopt_long's arguments, `gpuprof COMMAND --help` and the OPTIONS section of gpuprof(1)
 * are made, so an option is described once. Usage errors are one line on stderr and exit
 * status 2 (GNU coding standards: --help and --version on stdout, status 0). */
#ifndef GP_CLI_H
#define GP_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define GP_CLI_USAGE 2 /* the exit status of a usage error */

typedef struct gp_cli_opt {
	const char *name; /* the long name, without "--"; NULL ends a table */
	int key;          /* the short letter, or a code >= 256 for a long-only option */
	const char *arg;  /* the value's name in the help ("FILE"); NULL: takes no value */
	const char *help; /* what it does and its default */
} gp_cli_opt_t;

typedef struct gp_cli_cmd {
	const char *name;         /* "report" */
	const char *synopsis;     /* what follows "gpuprof NAME ": "[OPTION]... JOBDIR|JOBID" */
	const char *about;        /* what the command does, one sentence */
	const gp_cli_opt_t *opts; /* its options (-h, --help is added to every command) */
	const char *more;         /* operands, environment, exit status; NULL: none */
	bool stop_at_operand;     /* options end at the first operand (run's program) */
} gp_cli_cmd_t;

#define GP_CLI_MAXOPT 24
typedef struct gp_cli {
	const gp_cli_cmd_t *cmd;
	int argc;
	char **argv;
	const char *arg; /* the value of the option gp_cli_next returned */
	int ind;         /* after gp_cli_next returned 0: argv[ind..argc-1] are the operands */
	int status;      /* after it returned -1: the command's exit status */
	struct option lo[GP_CLI_MAXOPT + 2];
	char so[3 * GP_CLI_MAXOPT + 8];
} gp_cli_t;

/* Start parsing argv (argv[0] the command's name) against cmd's table. */
void gp_cli_begin(gp_cli_t *c, const gp_cli_cmd_t *cmd, int argc, char **argv);
/* The next option's key (c->arg its value); 0 when the options have ended ("--"
 * included); -1 when the command must end now with c->status: 0 after --help printed the
 * help, GP_CLI_USAGE after an unknown option or a missing value said so. */
int gp_cli_next(gp_cli_t *c);

/* "gpuprof: CMD: <message>" on stderr, one line; returns GP_CLI_USAGE. */
int gp_cli_usage(const gp_cli_cmd_t *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A missing operand: the problem and the command's synopsis, one line; GP_CLI_USAGE. */
int gp_cli_missing(const gp_cli_cmd_t *cmd, const char *what);

/* After the options (gp_cli_next returned 0): from min to max operands (max < 0: any
 * number), else a usage error saying which are missing or extra ("which job?", "one job,
 * not 'a' and 'b'"): 0 or GP_CLI_USAGE. what names one operand ("job directory"). */
int gp_cli_operands(const gp_cli_t *c, int min, int max, const char *what);

/* The help of one command (`gpuprof CMD --help`), to f. */
void gp_cli_help(const gp_cli_cmd_t *cmd, FILE *f);
/* The command's synopsis and its options in man(7) markup, for gpuprof(1)'s OPTIONS. */
void gp_cli_man(const gp_cli_cmd_t *cmd, FILE *f);

/* Option values, strictly (usage errors name the option and the value):
 * a whole number 0..max in decimal; */
int gp_cli_count(const gp_cli_cmd_t *cmd, const char *option, const char *v, uint64_t max,
                 uint64_t *out);
/* a finite decimal number in [lo, hi] (lo_open/hi_open: the bound itself excluded):
 * no "nan", "inf", hexadecimal or trailing text, which strtod would take. */
int gp_cli_number(const gp_cli_cmd_t *cmd, const char *option, const char *v, double lo,
                  bool lo_open, double hi, bool hi_open, const char *example, double *out);

#endif
