/* gpuprof: the command line. run (the agent without Slurm), report, export, salvage, diff. */
#include "config.h"
#include "settings.h"
#include "analyze.h"
#include "env.h"
#include "log.h"
#include "modes.h"
#include "outfile.h"
#include "path.h"
#include "rankfile.h"
#include "ranks.h"
#include "ring.h"
#include "spool.h"
#include "stats.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const struct {
	const char *cmd, *text;
} usages[] = {
    {"run", "gpuprof run [--modes=MODES] [-o|--output=DIR] [--ranks=LIST] [--capture=WINDOW]\n"
            "                   -- PROGRAM [ARGS]\n"},
    {"capture", "gpuprof capture on|off [--mem] PID\n"},
    {"report", "gpuprof report [--step=S] [--format=text|json] [-o|--output=FILE|-] [--sacct]\n"
               "                      [--steps-from=auto|nvtx|optimizer|profiler|kernels]\n"
               "                      [--ranks=LIST] [--quiet] [--summary-line] JOBDIR|JOBID\n"},
    {"export", "gpuprof export --format=chrome|memviz|html|kineto [--ranks=LIST] [--max-events=N]\n"
               "                      [--window=FROM:TO] -o|--output=FILE|- JOBDIR\n"},
    {"salvage", "gpuprof salvage [--job=ID] [--spool=ROOT] [--into=DIR] [SPOOLDIR...]\n"},
    {"diff", "gpuprof diff [--threshold=PCT] [--alpha=P] [--fail-on-regression]\n"
             "                    JOBDIR_A JOBDIR_B\n"},
    {"dump", "gpuprof dump [--events] [--strings] RANKFILE\n"},
    {"settings", "gpuprof settings [--env] [--format=text|markdown|man]\n"},
    {"summarize", "gpuprof summarize RANKFILE...\n"},
};
#define NUSAGE (sizeof(usages) / sizeof(usages[0]))

/* Exit statuses (all subcommands): 0 done, 1 the work failed (unreadable job, write error),
 * 2 a usage error, 3 diff --fail-on-regression found one; run: the program's own status,
 * 126 not executable, 127 not found. */
static int usage(FILE *f)
{
	for (size_t i = 0; i < NUSAGE; i++)
		fprintf(f, "%s%s", i ? "       " : "usage: ", usages[i].text);
	fprintf(f, "       gpuprof --version | --help | COMMAND --help\nmodes:\n%s",
	        gp_modes_help());
	return 2;
}

static int usage_of(const char *cmd)
{
	for (size_t i = 0; i < NUSAGE; i++)
		if (!strcmp(usages[i].cmd, cmd))
			printf("usage: %s", usages[i].text);
	if (!strcmp(cmd, "run"))
		printf("modes:\n%s", gp_modes_help());
	printf("exit status: 0 done, 1 failed, 2 usage error%s\n",
	       !strcmp(cmd, "run")    ? "; otherwise the program's own (126: not executable, "
	                                "127: not found)"
	       : !strcmp(cmd, "diff") ? ", 3 a regression with --fail-on-regression"
	                              : "");
	return 0;
}

/* A whole non-negative number, or -1 with a message naming the option. */
static int parse_count(const char *cmd, const char *option, const char *v, uint64_t *out)
{
	char *end;
	errno = 0;
	if (!v || *v < '0' || *v > '9' || (*out = strtoull(v, &end, 10), errno) || *end)
		return gp_err("%s: %s: '%s' is not a whole number", cmd, option, v ? v : ""), -1;
	return 0;
}

/* --key=value or --key value; returns the value or NULL. */
static const char *opt(int argc, char **argv, int *i, const char *key)
{
	size_t kl = strlen(key);
	if (!strcmp(key, "--output") && !strcmp(argv[*i], "-o")) /* as GNU tools have it */
		return *i + 1 < argc ? argv[++*i] : NULL;
	if (strncmp(argv[*i], key, kl))
		return NULL;
	if (argv[*i][kl] == '=')
		return argv[*i] + kl + 1;
	if (argv[*i][kl] == '\0' && *i + 1 < argc)
		return argv[++*i];
	return NULL;
}

/* A file installed or built next to this executable (a build tree or an install), unless
 * the environment names it; else the configured default. */
static const char *beside_us(const char *env, const char *rel, const char *dflt, int mode)
{
	static char buf[2][PATH_MAX];
	static int k;
	char *b = buf[k++ & 1];
	const char *e = getenv(env);
	if (e)
		return e;
	ssize_t n = readlink("/proc/self/exe", b, PATH_MAX - 64);
	if (n > 0) {
		b[n] = '\0';
		char *slash = strrchr(b, '/');
		if (slash) {
			snprintf(slash + 1, PATH_MAX - (size_t)(slash + 1 - b), "%s", rel);
			if (access(b, mode) == 0)
				return b;
		}
	}
	return dflt;
}

static const char *agent_path(void)
{
	return beside_us(GP_ENV_AGENT, "gpuprof-agent", GP_AGENT_PATH, X_OK);
}

static const char *inject_path(void)
{
	return beside_us(GP_ENV_INJECT, ".libs/libgpuprof-inject.so", GP_INJECT_PATH, R_OK);
}

/* The PyTorch integration's directory (agent/python; a build tree copies it to python/) */
static const char *python_dir(void)
{
	return beside_us(GP_ENV_PYTHON, "python", GP_PYTHON_DIR, R_OK);
}

/* gpuprof capture on|off [--mem] PID: switch CUDA activity tracing (and with --mem,
 * memory tracking) of a running profiled process. The request goes into the ring header
 * the process shares with its agent; the process applies it at its next step boundary
 * (GP_EV_CONTROL in its rank file). Works for the caller's own processes only: it reads
 * /proc/PID/environ and opens the ring, both of which the kernel restricts to the owner. */
static int cmd_capture(int argc, char **argv)
{
	bool on, mem = false;
	const char *pidarg = NULL;
	if (argc < 3 || (strcmp(argv[1], "on") && strcmp(argv[1], "off")))
		return gp_err("capture: say on or off"), usage(stderr);
	on = !strcmp(argv[1], "on");
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--mem"))
			mem = true;
		else if (argv[i][0] == '-' || pidarg)
			return gp_err("capture: unexpected '%s'", argv[i]), usage(stderr);
		else
			pidarg = argv[i];
	}
	char *end;
	long pid = pidarg ? strtol(pidarg, &end, 10) : 0;
	if (!pidarg || *end || pid <= 0)
		return gp_err("capture: '%s' is not a process id", pidarg ? pidarg : ""), 2;
	/* the ring's path comes from the process's environment, which its owner controls:
	 * root must not open and write it for another user's process */
	char proc[64];
	struct stat pst;
	snprintf(proc, sizeof(proc), "/proc/%ld", pid);
	if (stat(proc, &pst) < 0)
		return gp_err_errno("capture: %s", proc), 1;
	if (geteuid() == 0 && pst.st_uid != 0)
		return gp_err("capture: process %ld belongs to uid %u: run this as that user, not "
		              "as root",
		              pid, (unsigned)pst.st_uid),
		       2;
	char path[64], ring[PATH_MAX] = "";
	snprintf(path, sizeof(path), "/proc/%ld/environ", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return gp_err_errno("capture: %s", path), 1;
	size_t n = 0, cap = 1 << 16;
	char *env = malloc(cap + 1);
	while (env && (n += fread(env + n, 1, cap - n, f)) == cap && cap < (16u << 20)) {
		char *more = realloc(env, 2 * cap + 1); /* environments can be large */
		if (!more)
			break;
		env = more;
		cap *= 2;
	}
	fclose(f);
	if (!env)
		return gp_err("capture: out of memory"), 1;
	env[n] = 0;
	static const char key[] = GP_ENV_RING "=";
	for (size_t o = 0; o < n; o += strlen(env + o) + 1)
		if (!strncmp(env + o, key, sizeof(key) - 1))
			snprintf(ring, sizeof(ring), "%s", env + o + sizeof(key) - 1);
	free(env);
	if (!ring[0])
		return gp_err("capture: process %ld was not started by gpuprof's agent (no %s)",
		              pid, GP_ENV_RING),
		       1;
	gp_ring_t r;
	if (gp_ring_attach(&r, ring) < 0)
		return gp_err_errno("capture: %s (has the process ended?)", ring), 1;
	unsigned bits = GP_MODE_CUDA | (mem ? GP_MODE_MEM : 0);
	unsigned prev =
	    on ? atomic_fetch_or(&r.hdr->modes, bits) : atomic_fetch_and(&r.hdr->modes, ~bits);
	gp_ring_detach(&r);
	if (!(prev & (GP_MODE_CUDA | GP_MODE_MEM)) && !on)
		gp_warn("capture: process %ld was not capturing cuda", pid);
	printf("gpuprof: %s %s for process %ld; it takes effect at the process's next step\n",
	       mem ? "cuda and mem capture" : "cuda capture", on ? "on" : "off", pid);
	return 0;
}

/* 0 when file (a path, or a name looked up in PATH) can be executed; else 127 (not
 * found) or 126 (found, not executable or not a file). */
static int program_status(const char *file)
{
	struct stat st;
	if (strchr(file, '/'))
		return stat(file, &st) < 0       ? 127
		       : S_ISDIR(st.st_mode)     ? 126
		       : access(file, X_OK) != 0 ? 126
		                                 : 0;
	const char *path = getenv("PATH");
	char buf[PATH_MAX];
	int best = 127;
	for (const char *p = path ? path : "/usr/local/bin:/usr/bin:/bin";; p++) {
		size_t n = strcspn(p, ":");
		if (snprintf(buf, sizeof(buf), "%.*s%s%s", (int)n, n ? p : ".", "/", file) <
		        (int)sizeof(buf) &&
		    stat(buf, &st) == 0) {
			if (!S_ISDIR(st.st_mode) && access(buf, X_OK) == 0)
				return 0;
			best = 126;
		}
		p += n;
		if (!*p)
			break;
	}
	return best;
}

static int cmd_run(int argc, char **argv)
{
	const char *modes = getenv(GP_ENV_MODES), *output = getenv(GP_ENV_OUTPUT),
	           *ranks = getenv(GP_ENV_RANKS);
	char err[512], dir[PATH_MAX], expanded[PATH_MAX];
	unsigned m;
	int i;
	for (i = 1; i < argc; i++) {
		const char *v;
		if (!strcmp(argv[i], "--")) {
			i++;
			break;
		}
		if ((v = opt(argc, argv, &i, "--modes")))
			modes = v;
		else if ((v = opt(argc, argv, &i, "--output")))
			output = v;
		else if ((v = opt(argc, argv, &i, "--ranks")))
			ranks = v;
		else if ((v = opt(argc, argv, &i, "--capture"))) {
			gp_capture_t c;
			if (gp_capture_parse(v, &c, err, sizeof(err)) < 0)
				return gp_err("run: --capture: %s", err), 2;
			setenv(GP_ENV_CAPTURE, v, 1);
		} else if (argv[i][0] == '-')
			return gp_err("run: unknown option '%s'", argv[i]), usage(stderr);
		else
			break;
	}
	if (!modes)
		modes = gp_setting_env(GP_ENV_MODES)->def;
	if (gp_modes_parse(modes, &m, err, sizeof(err)) < 0)
		return gp_err("run: --modes: %s", err), 2;
	if (m & GP_MODE_HELP) {
		printf("modes:\n%s", gp_modes_help());
		return 0;
	}
	if (i >= argc)
		return gp_err("run: no program given"), usage(stderr);
	/* as a shell would: 127 when the program is not found, 126 when it cannot be run,
	 * said before any agent starts (the agent under Slurm mirrors slurmstepd instead) */
	int found = program_status(argv[i]);
	if (found)
		return gp_err("run: %s: %s", argv[i],
		              found == 127 ? "command not found" : "not executable"),
		       found;
	if (ranks) {
		gp_ranks_t rk;
		if (gp_ranks_parse(ranks, &rk, err, sizeof(err)) < 0)
			return gp_err("run: --ranks: %s", err), 2;
		const char *me = getenv("SLURM_PROCID");
		if (!gp_ranks_contains(&rk, me ? (uint32_t)atoi(me) : 0))
			m = GP_MODE_NONE;
	}
	if (m & GP_MODE_NONE) {
		execvp(argv[i], argv + i);
		return gp_err_errno("execvp %s", argv[i]), 127;
	}
	if (!output)
		output = gp_setting_key("output")->def;
	if (gp_tmpl_check(output, err, sizeof(err)) < 0)
		return gp_err("run: --output: %s", err), 2;
	const char *job = getenv("SLURM_JOB_ID");
	gp_tmpl_vars_t vars = {.job = job ? job : "local",
	                       .user = getenv("USER"),
	                       .name = getenv("SLURM_JOB_NAME"),
	                       .step = getenv("SLURM_STEP_ID"),
	                       .rank = getenv("SLURM_PROCID")};
	if (gp_tmpl_expand(output, &vars, expanded, sizeof(expanded)) < 0)
		return gp_err("run: --output: too long"), 2;
	if (expanded[0] != '/') {
		char cwd[PATH_MAX];
		if (!getcwd(cwd, sizeof(cwd)) ||
		    snprintf(dir, sizeof(dir), "%s/%s", cwd, expanded) >= (int)sizeof(dir))
			return gp_err("run: output path too long"), 2;
	} else {
		snprintf(dir, sizeof(dir), "%s", expanded);
	}
	gp_modes_format(m, err, sizeof(err));
	setenv(GP_ENV_MODES, err, 1);
	setenv(GP_ENV_JOBDIR, dir, 1);
	setenv(GP_ENV_INJECT, inject_path(), 0);
	setenv(GP_ENV_PYTHON, python_dir(), 0);
	const char *agent = agent_path();
	char **av = calloc((size_t)(argc - i) + 3, sizeof(char *));
	if (!av)
		return 1;
	av[0] = (char *)agent;
	av[1] = "--";
	for (int k = i; k < argc; k++)
		av[2 + k - i] = argv[k];
	execv(agent, av);
	gp_err_errno("cannot run %s; running the program unprofiled", agent);
	execvp(argv[i], argv + i);
	return gp_err_errno("execvp %s", argv[i]), 127;
}

/* Find the job directory of a job id through sacct's WorkDir and the default template. */
static int jobdir_from_id(const char *id, char *out, size_t len)
{
	char cmd[256], line[PATH_MAX];
	FILE *p;
	for (const char *c = id; *c; c++)
		if (*c < '0' || *c > '9')
			return -1;
	snprintf(cmd, sizeof(cmd), "sacct -j %s -n -X -P -o WorkDir -S 2000-01-01 2>/dev/null", id);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	int rc = -1;
	if (fgets(line, sizeof(line), p)) {
		line[strcspn(line, "\n")] = '\0';
		if (snprintf(out, len, "%s/gpuprof-%s", line, id) < (int)len &&
		    access(out, R_OK) == 0)
			rc = 0;
	}
	pclose(p);
	return rc;
}

static void fetch_sacct(gp_job_t *job)
{
	char cmd[256];
	FILE *p;
	for (const char *c = job->job; *c; c++)
		if (*c < '0' || *c > '9')
			return;
	if (!job->job[0])
		return;
	snprintf(cmd, sizeof(cmd),
	         "sacct -j %s -n -X -P -S 2000-01-01 -o JobID,JobName,State,ExitCode,Elapsed,"
	         "AllocTRES,NodeList,MaxRSS,AdminComment 2>/dev/null",
	         job->job);
	p = popen(cmd, "r");
	if (!p)
		return;
	if (fgets(job->sacct, sizeof(job->sacct), p))
		job->sacct[strcspn(job->sacct, "\n")] = '\0';
	pclose(p);
	/* the State alone (the line above holds the job's name, which may hold '|') */
	snprintf(cmd, sizeof(cmd), "sacct -j %s -n -X -P -S 2000-01-01 -o State 2>/dev/null",
	         job->job);
	if ((p = popen(cmd, "r"))) {
		if (fgets(job->sacct_state, sizeof(job->sacct_state), p))
			job->sacct_state[strcspn(job->sacct_state, "\n")] = '\0';
		pclose(p);
	}
	if (job->sacct[0]) {
		char tmp[2200];
		snprintf(tmp, sizeof(tmp),
		         "JobID|JobName|State|ExitCode|Elapsed|AllocTRES|NodeList|MaxRSS|"
		         "AdminComment = %s",
		         job->sacct);
		snprintf(job->sacct, sizeof(job->sacct), "%s", tmp);
	}
}

/* name in dfd, written by fn as it goes (report.json of 10 000 ranks is 100 MiB: never
 * all in memory), then renamed into place: whole or not at all */
static void write_streamed(int dfd, const char *name, const gp_job_t *job,
                           void (*fn)(const gp_job_t *, FILE *))
{
	char tmp[128];
	snprintf(tmp, sizeof(tmp), ".%s.tmp.%d", name, (int)getpid());
	int fd = gp_open_at(dfd, tmp, O_CREAT | O_EXCL | O_TRUNC, 0600);
	FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
	if (!f) {
		if (fd >= 0)
			close(fd);
		gp_warn("cannot write %s/%s: %s", job->dir, name, strerror(errno));
		return;
	}
	fn(job, f);
	bool ok = fflush(f) == 0 && !ferror(f) && fsync(fileno(f)) == 0;
	int e = errno;
	if (fclose(f) != 0 && ok)
		ok = false, e = errno;
	if (ok && renameat(dfd, tmp, dfd, name) == 0)
		return;
	unlinkat(dfd, tmp, 0);
	gp_warn("cannot write %s/%s: %s", job->dir, name, strerror(ok ? errno : e));
}

/* report.txt, report.json and job.json refreshed in the job directory. Root never
 * writes into a directory someone else owns (an admin reading a user's job replaced the
 * user's report with root's 0600 files the user could not read; summary.c refuses the
 * same): the report is printed, the files are left to their owner. */
static void write_into_jobdir(const gp_job_t *job)
{
	struct stat st;
	int dfd = open(job->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return;
	if (geteuid() == 0 && (fstat(dfd, &st) < 0 || st.st_uid != 0)) {
		gp_info("report: %s is uid %u's: its report files are left as they are (run "
		        "`gpuprof report` as that user to refresh them)",
		        job->dir, (unsigned)st.st_uid);
		close(dfd);
		return;
	}
	write_streamed(dfd, "report.txt", job, gp_report_text);
	write_streamed(dfd, "report.json", job, gp_report_json);
	write_streamed(dfd, "job.json", job, gp_job_json);
	close(dfd);
}

static int cmd_report(int argc, char **argv)
{
	const char *step = NULL, *format = "text", *output = NULL, *target = NULL;
	const char *steps_from = NULL, *ranks = NULL;
	bool quiet = false, summary = false, sacct = false;
	char err[512], dir[PATH_MAX];
	gp_job_t job;
	for (int i = 1; i < argc; i++) {
		const char *v;
		if ((v = opt(argc, argv, &i, "--steps-from")))
			steps_from = v;
		else if ((v = opt(argc, argv, &i, "--step")))
			step = v;
		else if ((v = opt(argc, argv, &i, "--format")))
			format = v;
		else if ((v = opt(argc, argv, &i, "--output")))
			output = v;
		else if ((v = opt(argc, argv, &i, "--ranks")))
			ranks = v;
		else if (!strcmp(argv[i], "--quiet"))
			quiet = true;
		else if (!strcmp(argv[i], "--summary-line"))
			summary = true;
		else if (!strcmp(argv[i], "--sacct"))
			sacct = true;
		else if (argv[i][0] == '-')
			return gp_err("report: unknown option '%s'", argv[i]), 2;
		else if (target)
			return gp_err("report: one job directory or job id, not '%s' and '%s'",
			              target, argv[i]),
			       2;
		else
			target = argv[i];
	}
	if (!target)
		return gp_err("report: which job directory or job id?"), usage(stderr);
	if (strcmp(format, "text") && strcmp(format, "json"))
		return gp_err("report: --format: '%s' (formats: text, json)", format), 2;
	gp_ranks_t detail;
	if (ranks && gp_ranks_parse(ranks, &detail, err, sizeof(err)) < 0)
		return gp_err("report: --ranks: %s", err), 2;
	snprintf(dir, sizeof(dir), "%s", target);
	struct stat st;
	if (stat(dir, &st) < 0 && jobdir_from_id(target, dir, sizeof(dir)) < 0)
		return gp_err("report: %s is neither a job directory nor a job id with one",
		              target),
		       1;
	if (gp_job_load(&job, dir, step, steps_from, err, sizeof(err)) < 0)
		return gp_err("report: %s", err), 1;
	/* sacct first: how the job ended (a time limit) is a finding */
	if (sacct || (target[0] >= '0' && target[0] <= '9' && stat(target, &st) < 0))
		fetch_sacct(&job);
	gp_job_findings(&job);
	if (!step)
		write_into_jobdir(&job);
	gp_outfile_t of;
	FILE *out = stdout;
	if (output && !(out = gp_outfile_open(&of, output))) {
		gp_job_free(&job);
		return gp_err_errno(
		           "report: %s%s", output,
		           errno == ELOOP ? " (a link: not written through; '-' for stdout)" : ""),
		       1;
	}
	if (ranks) { /* the printed text lists these ranks; report.txt keeps the default view */
		job.have_detail = true;
		job.detail = detail;
	}
	if (summary) {
		char line[600];
		gp_report_summary_line(&job, line, sizeof(line));
		fprintf(out, "%s\n", line);
	} else if (!quiet) {
		if (!strcmp(format, "json"))
			gp_report_json(&job, out);
		else
			gp_report_text(&job, out);
	}
	int rc = 0;
	if (output && gp_outfile_close(&of, true) < 0)
		rc = (gp_err_errno("report: %s", output), 1);
	gp_job_free(&job);
	return rc;
}

static int cmd_export(int argc, char **argv)
{
	const char *format = NULL, *output = NULL, *ranks = NULL, *target = NULL;
	uint64_t max_events = 0;
	double win_from = 0, win_to = 0;
	char err[512];
	gp_job_t job;
	for (int i = 1; i < argc; i++) {
		const char *v;
		if ((v = opt(argc, argv, &i, "--format")))
			format = v;
		else if ((v = opt(argc, argv, &i, "--output")))
			output = v;
		else if ((v = opt(argc, argv, &i, "--ranks")))
			ranks = v;
		else if ((v = opt(argc, argv, &i, "--max-events"))) {
			if (parse_count("export", "--max-events", v, &max_events) < 0)
				return 2;
		} else if ((v = opt(argc, argv, &i, "--window"))) {
			char *end;
			win_from = strtod(v, &end);
			if (*end != ':' || (win_to = strtod(end + 1, &end), *end) ||
			    win_to <= win_from || win_from < 0)
				return gp_err("export: --window: '%s' (FROM:TO in seconds from the "
				              "job's "
				              "first event, e.g. 10:12.5)",
				              v),
				       2;
		} else if (argv[i][0] == '-')
			return gp_err("export: unknown option '%s'", argv[i]), 2;
		else if (target)
			return gp_err("export: one job directory, not '%s' and '%s'", target,
			              argv[i]),
			       2;
		else
			target = argv[i];
	}
	if (!format || (strcmp(format, "chrome") && strcmp(format, "html") &&
	                strcmp(format, "memviz") && strcmp(format, "kineto")))
		return gp_err("export: --format: '%s' (formats: chrome, memviz, html, kineto)",
		              format ? format : ""),
		       2;
	if (!target || !output)
		return gp_err("export: need --output FILE (a directory for kineto) and a job "
		              "directory"),
		       2;
	if (gp_job_load(&job, target, NULL, NULL, err, sizeof(err)) < 0)
		return gp_err("export: %s", err), 1;
	if (!strcmp(format, "kineto")) { /* a directory of files, one per rank */
		int rc = gp_export_kineto(&job, output, ranks);
		gp_job_free(&job);
		return rc ? 1 : 0;
	}
	gp_outfile_t of;
	FILE *out = gp_outfile_open(&of, output);
	if (!out) {
		gp_job_free(&job);
		return gp_err_errno(
		           "export: %s%s", output,
		           errno == ELOOP ? " (a link: not written through; '-' for stdout)" : ""),
		       1;
	}
	int rc;
	if (!strcmp(format, "html")) {
		gp_job_findings(&job);
		rc = gp_report_html(&job, out);
	} else if (!strcmp(format, "memviz")) {
		rc = gp_export_memviz(&job, out, ranks, python_dir());
	} else {
		rc = gp_export_chrome(&job, out, ranks, max_events, win_from, win_to);
	}
	/* whole or not at all: a failed export leaves the target as it was */
	if (gp_outfile_close(&of, rc == 0) < 0 && rc == 0)
		rc = gp_err_errno("export: %s", output);
	gp_job_free(&job);
	return rc ? 1 : 0;
}

/* Root salvaging the spool of another user's agent: done by a child running as the
 * spool's owner, so it reads and writes only what that user may (root's salvage wrote a
 * user's file where the user's dest said and made root-owned directories on its word).
 * The epilog's salvage runs as the job's user already (spank/epilog.c). */
static int salvage_as_owner(const char *dir, const char *into)
{
	struct stat st;
	int status = 0;
	if (geteuid() != 0)
		return gp_spool_salvage(dir, into, true);
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return errno = e, gp_err_errno("salvage: %s", dir);
	}
	close(fd);
	if (st.st_uid == 0)
		return gp_spool_salvage(dir, into, true);
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0)
		return gp_err_errno("salvage: fork");
	if (pid == 0) {
		struct passwd *pw = getpwuid(st.st_uid);
		gid_t g = pw ? pw->pw_gid : st.st_gid;
		if ((pw ? initgroups(pw->pw_name, g) : setgroups(1, &g)) < 0 || setgid(g) < 0 ||
		    setuid(st.st_uid) < 0 || setuid(0) == 0)
			_exit(125);
		_exit(gp_spool_salvage(dir, into, true) == 0 ? 0 : 1);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 125)
		gp_err("salvage: %s: could not become its owner (uid %u)", dir,
		       (unsigned)st.st_uid);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static int cmd_salvage(int argc, char **argv)
{
	const char *job = NULL, *spool = NULL, *into = NULL;
	int n = 0, explicit = 0;
	for (int i = 1; i < argc; i++) {
		const char *v;
		if ((v = opt(argc, argv, &i, "--job")))
			job = v;
		else if ((v = opt(argc, argv, &i, "--spool")))
			spool = v;
		else if ((v = opt(argc, argv, &i, "--into")))
			into = v;
		else if (argv[i][0] == '-')
			return gp_err("salvage: unknown option '%s'", argv[i]), 2;
		else {
			explicit ++;
			n += salvage_as_owner(argv[i], into) == 0;
		}
	}
	if (!explicit)
		n = gp_spool_salvage_all(spool ? spool
		                               : (getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp"),
		                         job, into, true);
	printf("gpuprof: salvaged %d spool(s)\n", n);
	return explicit && n < explicit ? 1 : 0;
}

/* gpuprof dump FILE: what a rank file holds (header, records per type, strings, drops);
 * --events prints every record, --strings every interned string. */
static int cmd_dump(int argc, char **argv)
{
	bool events = false, strings = false;
	const char *path = NULL;
	char err[512];
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--events"))
			events = true;
		else if (!strcmp(argv[i], "--strings"))
			strings = true;
		else if (argv[i][0] == '-')
			return gp_err("dump: unknown option '%s'", argv[i]), 2;
		else if (path)
			return gp_err("dump: one rank file, not '%s' and '%s'", path, argv[i]), 2;
		else
			path = argv[i];
	}
	if (!path)
		return gp_err("dump: which rank file?"), 2;
	gp_rf_reader_t *r;
	if (gp_rf_open(path, &r, err, sizeof(err)) < 0)
		return gp_err("dump: %s", err), 1;
	uint64_t count[GP_EV_MAX + 1] = {0}, distinct = 0;
	gp_event_t e;
	printf("%s", gp_rf_header_text(r));
	while (gp_rf_next(r, &e) == 1) {
		count[e.type < GP_EV_MAX ? e.type : GP_EV_MAX]++;
		if (e.type == GP_EV_STRING && e.u16 == 0)
			distinct++;
		if (strings && e.type == GP_EV_STRING)
			printf("string %u +%u %.*s\n", e.tid, e.u16, e.u8 <= 32 ? e.u8 : 32,
			       (const char *)&e.a);
		if (events)
			printf("%s tid=%u ts=%llu a=%llu b=%llu c=%llu d=%llu u8=%u u16=%u\n",
			       gp_ev_type_name(e.type), e.tid, (unsigned long long)e.ts,
			       (unsigned long long)e.a, (unsigned long long)e.b,
			       (unsigned long long)e.c, (unsigned long long)e.d, e.u8, e.u16);
	}
	for (unsigned t = 0; t < GP_EV_MAX; t++)
		if (count[t])
			printf("count %s %llu\n", gp_ev_type_name(t), (unsigned long long)count[t]);
	const gp_rf_stats_t *st = gp_rf_stats(r);
	printf(
	    "distinct_strings %llu\nchunks %llu\nrecords %llu\ncorrupt_chunks %llu\ntruncated %d\n"
	    "complete %d\n",
	    (unsigned long long)distinct, (unsigned long long)st->chunks,
	    (unsigned long long)st->records, (unsigned long long)st->corrupt_chunks, st->truncated,
	    st->end_seen);
	gp_rf_close(r);
	return 0;
}

/* All ranks' post-warm-up step samples of a job (each rank's headline basis). */
static double *job_samples(const gp_job_t *j, size_t *n)
{
	size_t tot = 0, k = 0;
	for (unsigned i = 0; i < j->nranks; i++)
		tot += j->ranks[i].nstep_ms;
	double *v = malloc((tot ? tot : 1) * sizeof(double));
	for (unsigned i = 0; v && i < j->nranks; i++)
		for (unsigned s = 0; s < j->ranks[i].nstep_ms; s++)
			v[k++] = j->ranks[i].step_ms[s];
	*n = v ? k : 0;
	return v;
}

static unsigned job_steps(const gp_job_t *j)
{
	unsigned n = 0;
	for (unsigned i = 0; i < j->nranks; i++)
		n += j->ranks[i].capture_window ? j->ranks[i].captured_steps
		                                : j->ranks[i].nsteps_post;
	return n;
}

/* gpuprof diff A B: is B slower than A beyond noise? Per-step samples of both jobs are
 * compared with a Mann-Whitney test; a change is a regression only when it is both
 * significant (p < --alpha) and larger than --threshold on the median. Kernel time is
 * compared per step, so runs of different lengths compare. */
/* Each rank file's summary (rankR.gps beside it, report/summary.c): what the job report
 * reads in its place. The agent runs this when a rank's capture ends. */
static int cmd_summarize(int argc, char **argv)
{
	char err[1024];
	int rc = 0;
	if (argc < 2)
		return gp_err("summarize: no rank file given"), usage(stderr);
	for (int i = 1; i < argc; i++)
		if (gp_rank_summarize(argv[i], err, sizeof(err)) < 0) {
			gp_err("summarize: %s", err);
			rc = 1;
		}
	return rc;
}

/* Every setting with its site key, variable, type, default and meaning (settings.h):
 * gpuprof.yaml's keys, or with --env the GPUPROF_* variables a user may set. The
 * documentation's tables are this command's output (tests/tree/t_tree.sh compares). */
static int cmd_settings(int argc, char **argv)
{
	const char *format = "text", *which = "site", *v;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--env"))
			which = "env";
		else if ((v = opt(argc, argv, &i, "--format")))
			format = v;
		else
			return gp_err("settings: unknown argument '%s'", argv[i]), usage(stderr);
	}
	if (strcmp(format, "text") && strcmp(format, "markdown") && strcmp(format, "man"))
		return gp_err("settings: --format: '%s' is not text, markdown or man", format), 2;
	return gp_settings_print(stdout, which, format) < 0 || fflush(stdout) ? 1 : 0;
}

static int cmd_diff(int argc, char **argv)
{
	gp_job_t a, b;
	char err[512];
	const char *pa_dir = NULL, *pb_dir = NULL;
	double thr = 5, alpha = 0.01;
	bool fail = false;
	for (int i = 1; i < argc; i++) {
		const char *v;
		char *end;
		if ((v = opt(argc, argv, &i, "--threshold"))) {
			thr = strtod(v, &end);
			if (*end || thr < 0)
				return gp_err("diff: --threshold: '%s' (a percentage, e.g. 5)", v),
				       2;
		} else if ((v = opt(argc, argv, &i, "--alpha"))) {
			alpha = strtod(v, &end);
			if (*end || alpha <= 0 || alpha >= 1)
				return gp_err("diff: --alpha: '%s' (a p-value, e.g. 0.01)", v), 2;
		} else if (!strcmp(argv[i], "--fail-on-regression"))
			fail = true;
		else if (argv[i][0] == '-')
			return gp_err("diff: unknown option '%s'", argv[i]), 2;
		else if (!pa_dir)
			pa_dir = argv[i];
		else if (!pb_dir)
			pb_dir = argv[i];
		else
			return gp_err("diff: one job A and one job B, not '%s' too", argv[i]), 2;
	}
	if (!pb_dir)
		return usage(stderr);
	if (gp_job_load(&a, pa_dir, NULL, NULL, err, sizeof(err)) < 0)
		return gp_err("diff: %s", err), 1;
	if (gp_job_load(&b, pb_dir, NULL, NULL, err, sizeof(err)) < 0) {
		gp_job_free(&a);
		return gp_err("diff: %s", err), 1;
	}
	gp_job_findings(&a);
	gp_job_findings(&b);
	bool regress = false;
	size_t na, nb;
	double *sa = job_samples(&a, &na), *sb = job_samples(&b, &nb), eff = 0.5;
	double p = gp_mann_whitney(sa, na, sb, nb, &eff);
	double ma = gp_median(sa, na), mb = gp_median(sb, nb);
	double ds = ma > 0 ? 100 * (mb / ma - 1) : 0;
	bool sig = p < alpha, big = fabs(ds) >= thr;
	const char *verdict = !na || !nb             ? "no steps to compare"
	                      : sig && big && ds > 0 ? "REGRESSION"
	                      : sig && big           ? "improvement"
	                      : sig                  ? "significant, below the threshold"
	                                             : "within noise";
	regress |= sig && big && ds > 0;
	printf("%-28s %14s %14s %9s\n", "", "A", "B", "change");
	printf("%-28s %14.3f %14.3f %+8.1f%%  %s\n", "median step ms", ma, mb, ds, verdict);
	printf("%-28s %14s %14s\n", "  measured as", a.step_basis[0] ? a.step_basis : "-",
	       b.step_basis[0] ? b.step_basis : "-");
	printf("%-28s %14zu %14zu   Mann-Whitney p=%.3g, P(B step > A step)=%.2f\n",
	       "  step samples (all ranks)", na, nb, p, eff);
	if (strcmp(a.step_basis, b.step_basis))
		printf("  note: A and B measure steps differently (%s vs %s): compare with care\n",
		       a.step_basis, b.step_basis);
	free(sa);
	free(sb);
	uint64_t pa = 0, pb = 0;
	for (unsigned i = 0; i < a.nranks; i++)
		pa = a.ranks[i].mem_peak > pa ? a.ranks[i].mem_peak : pa;
	for (unsigned i = 0; i < b.nranks; i++)
		pb = b.ranks[i].mem_peak > pb ? b.ranks[i].mem_peak : pb;
	double dm = pa ? 100.0 * ((double)pb / pa - 1) : 0;
	printf("%-28s %14.1f %14.1f %+8.1f%%%s\n", "peak device MiB", pa / 1048576.0,
	       pb / 1048576.0, dm, dm >= thr ? "  REGRESSION" : "");
	regress |= dm >= thr;
	unsigned sta = job_steps(&a), stb = job_steps(&b);
	printf("\ntop kernels (GPU ms per step, %u and %u steps):\n", sta, stb);
	for (unsigned i = 0; sta && stb && i < b.nk && i < 10; i++) {
		uint64_t ta = 0;
		for (unsigned j = 0; j < a.nk; j++)
			if (!strcmp(a.k[j].name, b.k[i].name))
				ta = a.k[j].total;
		double pa_ms = ta / 1e6 / sta, pb_ms = b.k[i].total / 1e6 / stb;
		printf("  %-60.60s %10.3f %10.3f%s\n", b.k[i].name, pa_ms, pb_ms,
		       ta && pb_ms > pa_ms * (1 + thr / 100) ? "  slower"
		       : ta                                  ? ""
		                                             : "  NEW");
	}
	printf("\nfindings:\n");
	for (unsigned i = 0; i < b.nf; i++) {
		bool old = false;
		for (unsigned j = 0; j < a.nf; j++)
			old |= !strcmp(a.f[j].id, b.f[i].id);
		printf("  %-22s %s\n", b.f[i].id, old ? "in both" : "NEW in B");
	}
	for (unsigned j = 0; j < a.nf; j++) {
		bool still = false;
		for (unsigned i = 0; i < b.nf; i++)
			still |= !strcmp(a.f[j].id, b.f[i].id);
		if (!still)
			printf("  %-22s %s\n", a.f[j].id, "gone in B");
	}
	printf("\nverdict: %s (regression: p < %g and a change of %g%% or more)\n",
	       regress ? "REGRESSION" : "no regression", alpha, thr);
	gp_job_free(&a);
	gp_job_free(&b);
	return fail && regress ? 3 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return usage(stderr);
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("gpuprof %s\n", PACKAGE_VERSION);
		return 0;
	}
	/* COMMAND -h|--help: that command's usage (run's program arguments are its own) */
	for (int i = 2; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[1], "run") && argv[i][0] != '-')
			break; /* the program: "gpuprof run python -h" runs python -h */
		if (strcmp(argv[i], "-h") && strcmp(argv[i], "--help"))
			continue;
		for (size_t k = 0; k < NUSAGE; k++)
			if (!strcmp(argv[1], usages[k].cmd))
				return usage_of(argv[1]);
		break;
	}
	if (!strcmp(argv[1], "run"))
		return cmd_run(argc - 1, argv + 1);
	if (!strcmp(argv[1], "report"))
		return cmd_report(argc - 1, argv + 1);
	if (!strcmp(argv[1], "export"))
		return cmd_export(argc - 1, argv + 1);
	if (!strcmp(argv[1], "salvage"))
		return cmd_salvage(argc - 1, argv + 1);
	if (!strcmp(argv[1], "diff"))
		return cmd_diff(argc - 1, argv + 1);
	if (!strcmp(argv[1], "capture"))
		return cmd_capture(argc - 1, argv + 1);
	if (!strcmp(argv[1], "dump"))
		return cmd_dump(argc - 1, argv + 1);
	if (!strcmp(argv[1], "settings"))
		return cmd_settings(argc - 1, argv + 1);
	if (!strcmp(argv[1], "summarize"))
		return cmd_summarize(argc - 1, argv + 1);
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	gp_err("unknown command '%s'", argv[1]);
	return usage(stderr);
}
