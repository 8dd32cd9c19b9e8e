/* gpuprof ledger: the command (ledger.h). Reads sacct's job records of a time range (the
 * cluster's own accounting database; no daemon of ours) or a file of them, and writes the
 * GPU-hours by cause per group in one of the formats. */
#include "config.h"
#include "cli.h"
#include "findings.h"
#include "ledger.h"
#include "ledger_running.h"
#include "log.h"
#include "outfile.h"
#include "siteconf.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

enum {
	OPT_SINCE = 300,
	OPT_UNTIL,
	OPT_BY,
	OPT_FROM_FILE,
	OPT_PRINT_FIELDS,
	OPT_TOP,
	OPT_CONFIG,
	OPT_RUNNING
};

static const gp_cli_opt_t ledger_opts[] = {
    {"since", OPT_SINCE, "WHEN",
     "jobs that ended at WHEN or later, in Slurm's date syntax (2026-11-01, "
     "2026-11-01T08:00, now-7days, today, ...; default: 14 days before --until, so the "
     "week-over-week change has two weeks)"},
    {"until", OPT_UNTIL, "WHEN", "jobs that ended at WHEN or before (default: now)"},
    {"by", OPT_BY, "LIST",
     "group by one or several of user, account, partition, name, node, as user,partition "
     "(default: user; a job's GPU-hours are shared evenly by its nodes)"},
    {"from-file", OPT_FROM_FILE, "FILE",
     "read FILE (- for standard input) instead of running sacct: what sacct -a -X -D -P "
     "--delimiter='|#NNNNNNNNNNNN#|' -o $(gpuprof ledger --print-fields) prints (12 digits "
     "of one's own, read from its header; with plain -P a job name can forge a line: "
     "doc/admin.md), with its header or in --print-fields' order without"},
    {"print-fields", OPT_PRINT_FIELDS, NULL, "print the sacct fields the ledger reads, and exit"},
    {"running", OPT_RUNNING, NULL,
     "the running profiled jobs instead, with their live figures (step time now against "
     "the median, GPU busy, the first finding), the least busy first: squeue's running jobs "
     "(--from-file: its lines, squeue -h -t RUNNING -o '%i|%u|%a|%P|%M|%Z'), each one's "
     "gpuprof-<id> in its WorkDir; --format text or json"},
    {"format", 'f', "FORMAT", "text (the default), json, csv, html or openmetrics"},
    {"output", 'o', "FILE", "write to FILE instead of standard output"},
    {"top", OPT_TOP, "N", "jobs in each list of jobs (default 10, at most 1000)"},
    {"config", OPT_CONFIG, "FILE",
     "the site's gpuprof.yaml, for finding_notes (default: the installed one, if any)"},
    {NULL, 0, NULL, NULL}};

const gp_cli_cmd_t gp_cmd_ledger_doc = {
    "ledger",
    "[OPTION]...",
    "The cluster's GPU-hours over a time range, grouped by user, account, partition, job "
    "name or node: allocated, used, and wasted by cause (from each job's gpuprof record in "
    "the accounting database), the jobs that wasted most with their first finding, jobs "
    "that held GPUs they never used, and GPU-hours of jobs that ended badly (failed, out of "
    "memory, timed out, cancelled, preempted), with the change week over week.",
    ledger_opts,
    "Records are read only from SystemComment, which only root and SlurmUser can write "
    "(the plugin puts each profiled job's record there at its end); a record that is not "
    "well formed is refused with a line on standard error and its job counted unprofiled. "
    "Running sacct -a needs an operator's or administrator's rights where the site "
    "restricts what users see (PrivateData=jobs).\n\n"
    "Exit status: 0 done, 1 sacct or the file could not be read, 2 a usage error.",
    false};

static int parse_by(const gp_cli_cmd_t *cmd, const char *v, gp_ledger_t *l)
{
	char buf[128];
	snprintf(buf, sizeof(buf), "%s", v);
	l->nby = 0;
	for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
		int k = -1;
		for (int i = 0; i < GP_NBY; i++)
			if (!strcmp(t, gp_by_name[i]))
				k = i;
		for (unsigned i = 0; k >= 0 && i < l->nby; i++)
			if (l->by[i] == k)
				return gp_cli_usage(cmd, "--by: '%s' twice", t);
		if (k < 0)
			return gp_cli_usage(
			    cmd,
			    "--by: '%s' is not a grouping (user, account, partition, "
			    "name, node; one or several, as user,partition)",
			    t);
		l->by[l->nby++] = k;
	}
	if (!l->nby || strlen(v) >= sizeof(buf) || v[strlen(v) - 1] == ',')
		return gp_cli_usage(cmd, "--by: '%s' (user, account, partition, name, node)", v);
	return 0;
}

static int parse_when(const gp_cli_cmd_t *cmd, const char *opt, const char *v, time_t now,
                      time_t *out)
{
	if (gp_ld_time(v, now, out) == 0)
		return 0;
	return gp_cli_usage(cmd,
	                    "%s: '%s' is not a date (Slurm's syntax: YYYY-MM-DD[THH:MM[:SS]], "
	                    "MMDD[YY], MM/DD[/YY], MM.DD[.YY], HH:MM[:SS][AM|PM], "
	                    "now[{+|-}N[seconds|minutes|hours|days|weeks]], today, tomorrow, "
	                    "midnight, noon, elevenses, fika, teatime, uts<epoch seconds>; and "
	                    "yesterday)",
	                    opt, v);
}

/* Every line of f into the ledger. -1 when the header lacks a field. */
static int read_lines(gp_ledger_t *l, FILE *f, const char *what)
{
	char *line = NULL, err[256];
	size_t cap = 0;
	ssize_t n;
	int rc = 0;
	while ((n = getline(&line, &cap, f)) > 0) {
		if (line[n - 1] == '\n')
			line[--n] = '\0';
		if (n && line[n - 1] == '\r')
			line[--n] = '\0';
		if (gp_ledger_line(l, line, (size_t)n, err, sizeof(err)) < 0) {
			rc = gp_err("ledger: %s: %s", what, err);
			break;
		}
	}
	free(line);
	if (!rc && ferror(f))
		rc = gp_err("ledger: %s: %s", what, strerror(errno));
	return rc;
}

static int from_file(gp_ledger_t *l, const char *path)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "re") : stdin;
	if (!f)
		return gp_err("ledger: --from-file %s: %s", path, strerror(errno));
	int rc = read_lines(l, f, path);
	if (f != stdin)
		fclose(f);
	if (!rc && l->dlen == 1 && l->lines > 1)
		gp_warn(
		    "ledger: %s: fields apart by '|': a job name holding '|' and a newline can "
		    "pass for another job's line; sacct --delimiter='|#NNNNNNNNNNNN#|' (12 random "
		    "digits) seals them (doc/admin.md)",
		    path);
	return rc;
}

/* sacct -a -X -D -P --delimiter=SEAL -S SINCE -E UNTIL -o FIELDS, its output read as it
 * comes: fields apart by a fresh sealed delimiter (gp_ld_seal), so that a job name holding
 * '|' and a newline (sbatch -J, scontrol update name=) cannot make another job's line */
static int from_sacct(gp_ledger_t *l)
{
	char s[32], e[32], seal[32], delim[48];
	struct tm tm;
	strftime(s, sizeof(s), "%Y-%m-%dT%H:%M:%S", localtime_r(&l->since, &tm));
	strftime(e, sizeof(e), "%Y-%m-%dT%H:%M:%S", localtime_r(&l->until, &tm));
	gp_ld_seal(seal, sizeof(seal));
	snprintf(delim, sizeof(delim), "--delimiter=%s", seal);
	/* -D: every run of a requeued or preempted job (without it, the last alone) */
	char *argv[] = {"sacct", "-a", "-X", "-D", "-P",         delim, "-S",
	                s,       "-E", e,    "-o", GP_LD_FIELDS, NULL};
	int fd[2];
	if (pipe2(fd, O_CLOEXEC) < 0)
		return gp_err("ledger: pipe: %s", strerror(errno));
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
	pid_t pid;
	/* End as the ledger reads it, whatever the caller's own format (a site's profile.d
	 * SLURM_TIME_FORMAT made every End unreadable); this process runs nothing else */
	setenv("SLURM_TIME_FORMAT", "standard", 1);
	int e2 = posix_spawnp(&pid, "sacct", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(fd[1]);
	if (e2) {
		close(fd[0]);
		return gp_err("ledger: sacct: %s (or use --from-file)", strerror(e2));
	}
	FILE *f = fdopen(fd[0], "r");
	int rc = f ? read_lines(l, f, "sacct") : gp_err("ledger: %s", strerror(errno));
	if (f)
		fclose(f);
	else
		close(fd[0]);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (!rc && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
		rc = gp_err("ledger: sacct failed (%s %d); its message is above",
		            WIFEXITED(st) ? "exit status" : "signal",
		            WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	return rc;
}

typedef struct args {
	const char *from, *format, *output, *config;
	bool fields, stop, running;
} args_t;

static int parse_args(int argc, char **argv, gp_ledger_t *l, args_t *a)
{
	const gp_cli_cmd_t *cmd = &gp_cmd_ledger_doc;
	const char *since = NULL, *until = NULL, *by = "user";
	time_t now = time(NULL);
	uint64_t top = 10;
	gp_cli_t c;
	int k;
	gp_cli_begin(&c, cmd, argc, argv);
	while ((k = gp_cli_next(&c)) > 0) {
		switch (k) {
		case OPT_SINCE:
			since = c.arg;
			break;
		case OPT_UNTIL:
			until = c.arg;
			break;
		case OPT_BY:
			by = c.arg;
			break;
		case OPT_FROM_FILE:
			a->from = c.arg;
			break;
		case OPT_PRINT_FIELDS:
			a->fields = true;
			break;
		case OPT_RUNNING:
			a->running = true;
			break;
		case 'f':
			a->format = c.arg;
			break;
		case 'o':
			a->output = c.arg;
			break;
		case OPT_CONFIG:
			a->config = c.arg;
			break;
		case OPT_TOP:
			if (gp_cli_count(cmd, "--top", c.arg, GP_LD_TOP_MAX, &top))
				return GP_CLI_USAGE;
			break;
		}
	}
	if (k < 0) { /* --help printed (0), or a usage error said */
		a->stop = true;
		return c.status;
	}
	if (gp_cli_operands(&c, 0, 0, "option"))
		return GP_CLI_USAGE;
	if (a->running && strcmp(a->format, "text") && strcmp(a->format, "json"))
		return gp_cli_usage(cmd, "--running: --format '%s' (text, json)", a->format);
	if (!gp_ld_writer(a->format))
		return gp_cli_usage(cmd, "--format: '%s' (" GP_LD_FORMATS ")", a->format);
	if (parse_by(cmd, by, l))
		return GP_CLI_USAGE;
	l->until = now;
	if (until && parse_when(cmd, "--until", until, now, &l->until))
		return GP_CLI_USAGE;
	l->since = l->until - 14 * 86400;
	if (since && parse_when(cmd, "--since", since, now, &l->since))
		return GP_CLI_USAGE;
	l->bounded = true; /* --until 1970-01-01 is a window, not none (the hostile admin) */
	if (l->since > l->until)
		return gp_cli_usage(cmd, "--since '%s' comes after --until '%s'", since,
		                    until ? until : "now");
	l->top = (unsigned)top;
	return 0;
}

int gp_cmd_ledger(int argc, char **argv)
{
	gp_ledger_t l = {0};
	args_t a = {.format = "text"};
	gp_config_t cfg;
	char err[512];
	int rc = parse_args(argc, argv, &l, &a);
	if (rc || a.stop)
		return rc;
	if (a.fields) {
		puts(GP_LD_FIELDS);
		return fflush(stdout) ? 1 : 0;
	}
	if (a.running) {
		gp_outfile_t ro;
		if (!gp_outfile_open(&ro, a.output ? a.output : "-"))
			return gp_err("ledger: %s: %s", a.output ? a.output : "-", strerror(errno)),
			       1;
		/* the site's template, for the jobs it profiles unasked (no file: none) */
		bool have = gp_config_load(&cfg, a.config ? a.config : GP_SYSCONF_PATH, !a.config,
		                           err, sizeof(err)) == 0;
		if (!have && a.config)
			gp_warn("ledger: --running: %s; site_output not read", err);
		rc = gp_ledger_running(a.from, a.format, have ? cfg.site_output : NULL, ro.f) < 0;
		gp_config_free(&cfg);
		if (gp_outfile_close(&ro, !rc) < 0 && !rc)
			rc = gp_err("ledger: %s: %s", a.output ? a.output : "-", strerror(errno)) <
			     0;
		return rc;
	}
	if (gp_config_load(&cfg, a.config ? a.config : GP_SYSCONF_PATH, !a.config, err,
	                   sizeof(err)) < 0) {
		gp_err("ledger: %s", err);
		gp_config_free(&cfg);
		return 1;
	}
	l.cfg = &cfg;
	for (unsigned i = 0; i < cfg.finding_notes.n; i++) /* a typo'd id: never shown */
		if (!gp_rule_by_id(cfg.finding_notes.key[i]))
			gp_warn("ledger: %s: finding_notes: '%s' is no finding's id (`gpuprof "
			        "findings` lists them); its note is never shown",
			        a.config ? a.config : GP_SYSCONF_PATH, cfg.finding_notes.key[i]);
	gp_ledger_init(&l);
	rc = a.from ? from_file(&l, a.from) : from_sacct(&l);
	gp_outfile_t out;
	if (!rc) {
		gp_ledger_finish(&l);
		if (!gp_outfile_open(&out, a.output ? a.output : "-"))
			rc = gp_err("ledger: %s: %s", a.output ? a.output : "-", strerror(errno));
		else {
			/* a million groups' OpenMetrics are 1.5 GB: written a MiB at a time, not
			 * stdio's 4 KiB (the buffer outlives the stream: stdout's too) */
			static char obuf[1 << 20];
			setvbuf(out.f, obuf, _IOFBF, sizeof(obuf));
			gp_ld_writer(a.format)(&l, out.f);
			if (gp_outfile_close(&out, true) < 0)
				rc = gp_err("ledger: %s: %s", a.output ? a.output : "-",
				            strerror(errno));
		}
		/* nothing read at all but unreadable lines: no empty ledger passed as the truth
		 * (a cron job's metrics file), exit 1 */
		if (!rc && l.bad_lines && !l.total.jobs && !l.steps && !l.not_gpu && !l.running &&
		    !l.out_of_range)
			rc =
			    gp_err("ledger: none of the %llu lines read was a job the ledger could "
			           "read (above)",
			           (unsigned long long)l.bad_lines);
	}
	gp_ledger_free(&l);
	gp_config_free(&cfg);
	return rc ? 1 : 0;
}
