/* gpuprof: the command line. run (the agent without Slurm), report, export, salvage, diff. */
#include "config.h"
#include "settings.h"
#include "fields.h"
#include "findings.h"
#include "pipeline.h"
#include "tables.h"
#include "job.h"
#include "cli.h"
#include "commands.h"
#include "wrap.h"
#include "jobref.h"
#include "live_report.h"
#include "ledger.h"
#include "outfile.h"
#include "prune.h"
#include "run.h"
#include "env.h"
#include "log.h"
#include "modes.h"
#include "optenv.h"
#include "path.h"
#include "rankfile.h"
#include "ranks.h"
#include "ring.h"
#include "spool.h"
#include "stats.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <pwd.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- the commands' options: --help and gpuprof(1)'s OPTIONS are made from these ---- */

enum { /* long-only options */
       OPT_STEPS_FROM = 256,
       OPT_SACCT,
       OPT_SUMMARY_LINE,
       OPT_RECORD_LINE,
       OPT_TORCH,
       OPT_FAIL,
       OPT_SPOOL,
       OPT_INTO,
       OPT_MEM,
       OPT_EVENTS,
       OPT_STRINGS,
       OPT_ENV,
       OPT_TABLE,
};

static const gp_cli_opt_t run_opts[] = {
    {"modes", 'm', "MODES",
     "what to record: a comma list of timing (always on), nvtx, cuda, mem, gpu, layers, all, "
     "none; help lists them (default: GPUPROF_MODES, else timing,nvtx,cuda,mem)"},
    {"output", 'o', "DIR",
     "the job directory, a template of %j (the job id; local outside Slurm), %u, %x, %s and "
     "%n (default: GPUPROF_OUTPUT, else gpuprof-%j). A run never replaces an earlier one: "
     "when DIR holds one, this run goes to DIR.1, DIR.2, ..."},
    {"force-overwrite", 'f', NULL,
     "write into DIR even when it holds an earlier run, whose report and rank files are "
     "removed first"},
    {"ranks", 'r', "LIST",
     "profile only the tasks whose SLURM_PROCID is in LIST, as 0,8-15 (default: "
     "GPUPROF_RANKS, else every task)"},
    {"capture", 'c', "WINDOW",
     "when kernels are traced (mode cuda): sampled[=LEN/EVERY] (the start-up, the warm-up "
     "and 20 more steps, then 20 of every 500), all, steps=A-B[,C-D...] (0-based, "
     "inclusive) or cudaprofilerapi (between cudaProfilerStart and cudaProfilerStop); "
     "default: GPUPROF_CAPTURE, else sampled"},
    {"quiet", 'q', NULL,
     "print nothing of gpuprof's own after the program (the report is "
     "still written)"},
    {NULL, 0, NULL, NULL}};

static const gp_cli_cmd_t cmd_run_doc = {
    "run",
    "[OPTION]... [--] PROGRAM [ARG]...",
    "Run PROGRAM under gpuprof's agent without Slurm, as the plugin runs each task of a "
    "job, then write the job directory's report.txt, report.json and job.json and print "
    "where, with the report's headline.",
    run_opts,
    "Options end at PROGRAM: its own options are its own (gpuprof run python -h runs "
    "python -h).\n\n"
    "Under Slurm (inside a job or step, or one task of several by SLURM_PROCID) the job "
    "directory is the job's: the run writes its rank file there and leaves the report to "
    "the plugin or to gpuprof report.\n\n"
    "Exit status: the program's own (a death by a signal is re-raised), 126 when it cannot "
    "be executed, 127 when it is not found, 2 on a usage error.",
    true};

static const gp_cli_opt_t report_opts[] = {
    {"format", 'f', "FORMAT", "text (the default) or json (the schema is in report.md)"},
    {"output", 'o', "FILE",
     "write the report to FILE instead of standard output (- is standard output; a name "
     "ending in .gz is written gzip-compressed)"},
    {"step", 's', "S",
     "only step S: a number, batch, interactive or extern, with .attemptN for a requeued "
     "attempt (the job directory's own report files are then left as they are)"},
    {"steps-from", OPT_STEPS_FROM, "HOW",
     "where steps come from: auto (the default: NVTX step ranges, else optimizer.step(), "
     "else cudaProfilerStart/Stop, else the repeating kernel sequence), nvtx, optimizer, "
     "profiler or kernels (other than auto, the job directory's own report files are left "
     "as they are)"},
    {"ranks", 'r', "LIST",
     "list these ranks line by line in the text, as 0,8-15 (above 32 "
     "ranks the text gives distributions; report.txt keeps that view)"},
    {"sacct", OPT_SACCT, NULL,
     "add the job's sacct record (done anyway when the job is named by its id)"},
    {"quiet", 'q', NULL,
     "print nothing: only write report.txt, report.json and job.json into the job directory"},
    {"summary-line", OPT_SUMMARY_LINE, NULL,
     "print the one-line summary that goes into the job's AdminComment"},
    {"record-line", OPT_RECORD_LINE, NULL,
     "print the accounting record that goes into the job's SystemComment (gpuprof ledger "
     "reads it; after the summary line when both are asked)"},
    {NULL, 0, NULL, NULL}};

static const gp_cli_cmd_t cmd_report_doc = {
    "report",
    "[OPTION]... JOBDIR|JOBID",
    "Read every rank file of a job and report how slow its steps are, where the GPU time "
    "goes and where the device memory goes, with findings ranked by what they cost; "
    "report.txt, report.json and job.json are written into the job directory too.",
    report_opts,
    "JOBID is a Slurm job id (1234, an array task 1234_5, a heterogeneous job's component "
    "1234+1): its directory is the one gpuprof's record names in the job's SystemComment "
    "(sacct -o SystemComment), else its summary in AdminComment, else gpuprof-ID in its "
    "working directory. An operand shaped "
    "like a job id is asked of sacct first, unless it is a directory of the caller's own "
    "(./1234 names the directory); another user's directory of that name is read only "
    "where sacct knows no such job.\n\n"
    "A progress line goes to standard error while a long report reads rank files, when "
    "standard error is a terminal.\n\n"
    "Exit status: 0 done, 1 the job could not be read or a file not written, 2 a usage "
    "error.",
    false};

static const gp_cli_opt_t export_opts[] = {
    {"format", 'f', "FORMAT",
     "chrome (a Chrome/Perfetto trace, JSON), memviz (a PyTorch memory snapshot pickle for "
     "memory_viz), html (one self-contained page of plots and tables), kineto (a "
     "directory of Kineto traces, one per rank, for Holistic Trace Analysis) or csv (one of "
     "the report's tables, --table)"},
    {"output", 'o', "FILE",
     "where to write (- is standard output, except for kineto, which writes a directory); "
     "a name ending in .gz is written gzip-compressed, which Perfetto and HTA read"},
    {"ranks", 'r', "LIST", "only these ranks, as 0,8-15 (default: every rank)"},
    {"max-events", 'n', "N",
     "chrome: at most N events in all, shared across the ranks (default 0: no limit)"},
    {"window", 'w', "FROM:TO",
     "chrome: only events between FROM and TO seconds after the job's first event, as "
     "10:12.5"},
    {"table", OPT_TABLE, "TABLE",
     "csv: kernels (the default: every kernel with its whole demangled name, calls, total, "
     "mean, median, p95, standard deviation, min, max), ranks (every single value of a "
     "rank in report.json) or findings"},
    {"torch", OPT_TORCH, "VERSION",
     "memviz: the snapshot layout of PyTorch VERSION: 2 (the default: the dictionary of "
     "segments and device_traces of PyTorch 2.0 and later and of the memory_viz web page) "
     "or 1.13 (the list of segments that PyTorch 1.13's python -m torch.cuda._memory_viz "
     "reads, with each block's allocation history)"},
    {NULL, 0, NULL, NULL}};

static const gp_cli_cmd_t cmd_export_doc = {
    "export",
    "--format=FORMAT --output=FILE [OPTION]... JOBDIR|JOBID",
    "Write a job's records for another tool to read.",
    export_opts,
    "JOBID is found as for gpuprof report. A file is written under a temporary name and "
    "renamed into place when whole: a failed export leaves what was there. A symbolic "
    "link at FILE is refused, never written through (- is standard output); a FIFO or a "
    "device is written in place.\n\n"
    "Exit status: 0 done, 1 the job could not be read or the file not written, 2 a usage "
    "error.",
    false};

static const gp_cli_opt_t diff_opts[] = {
    {"threshold", 't', "PCT",
     "a change of the mean step (the throughput's) or the memory peak counts from PCT "
     "percent (default 5)"},
    {"alpha", 'a', "P",
     "a step change is significant when the Mann-Whitney test's p-value is below P, "
     "between 0 and 1 (default 0.01)"},
    {"fail-on-regression", OPT_FAIL, NULL,
     "exit with status 3 when B regresses on A, 4 when their steps are not comparable (one "
     "measured none or fewer than 8, or they were found by different means)"},
    {NULL, 0, NULL, NULL}};

static const gp_cli_cmd_t cmd_diff_doc = {
    "diff",
    "[OPTION]... JOB_A JOB_B",
    "Compare two jobs (directories or job ids): is B slower than A beyond the noise, does it "
    "use more memory, which kernels and findings are new.",
    diff_opts,
    "Exit status: 0 done, 1 a job could not be read, 2 a usage error, 3 a regression with "
    "--fail-on-regression, 4 with it where the steps are not comparable and nothing "
    "regressed.",
    false};

static const gp_cli_opt_t salvage_opts[] = {
    {"job", 'j', "ID", "only the spools of job ID"},
    {"spool", OPT_SPOOL, "ROOT",
     "look for spools under ROOT (default: $TMPDIR when absolute, else /tmp)"},
    {"into", OPT_INTO, "DIR",
     "put the rank files under DIR instead of the job directory each spool names"},
    {NULL, 0, NULL, NULL}};

static const gp_cli_cmd_t cmd_salvage_doc = {
    "salvage",
    "[OPTION]... [SPOOLDIR]...",
    "Turn the spools that killed agents left behind into rank files in their job "
    "directories (the job epilog does this on every node).",
    salvage_opts,
    "Without SPOOLDIR, every spool found under ROOT is salvaged.\n\n"
    "Exit status: 0 done, 1 a spool (or one of its processes' files) could not be "
    "salvaged, 2 a usage error.",
    false};

static const gp_cli_opt_t capture_opts[] = {
    {"mem", OPT_MEM, NULL, "switch memory tracking too (mode mem), not only CUDA activity"},
    {NULL, 0, NULL, NULL}};

static const gp_cli_cmd_t cmd_capture_doc = {
    "capture",
    "[OPTION]... on|off PID",
    "Switch CUDA activity tracing of a running profiled process on or off; it takes effect "
    "at the process's next step. On holds between capture windows too, until off.",
    capture_opts,
    "Only the process's owner can do it: the request goes through the ring the process "
    "shares with its agent.\n\n"
    "Exit status: 0 done, 1 the process could not be reached, 2 a usage error.",
    false};

static const gp_cli_opt_t dump_opts[] = {
    {"events", OPT_EVENTS, NULL, "print every record"},
    {"strings", OPT_STRINGS, NULL, "print every interned string"},
    {NULL, 0, NULL, NULL}};

static const gp_cli_cmd_t cmd_dump_doc = {
    "dump",
    "[OPTION]... RANKFILE",
    "Show what a rank file holds: its header, records by type, strings and losses.",
    dump_opts,
    "Exit status: 0 done, 1 the file could not be read, 2 a usage error.",
    false};

static const gp_cli_cmd_t cmd_summarize_doc = {
    "summarize",
    "RANKFILE...",
    "Write each rank file's summary beside it (rankR.gps), which the report reads in the "
    "rank file's place while the rank file is unchanged; the agent does it when a rank's "
    "capture ends.",
    NULL,
    "Exit status: 0 done, 1 a summary could not be written, 2 a usage error.",
    false};

static const gp_cli_opt_t settings_opts[] = {
    {"env", OPT_ENV, NULL,
     "the GPUPROF_* variables a user may set, instead of gpuprof.yaml's site keys"},
    {"format", 'f', "FORMAT", "text (the default), markdown or man"},
    {NULL, 0, NULL, NULL}};

static const gp_cli_cmd_t cmd_settings_doc = {
    "settings",
    "[OPTION]...",
    "List every setting with its type, default and meaning: the site keys of gpuprof.yaml, "
    "or the GPUPROF_* variables.",
    settings_opts,
    NULL,
    false};

static const gp_cli_opt_t fields_opts[] = {
    {"format", 'f', "FORMAT",
     "text (the default), markdown, or tables: the columns of the per-rank tables of the "
     "text and HTML reports, a line each (table, heading, the JSON field shown, the field "
     "that must be nonzero for a figure, the text's least width, scale, kind, the most "
     "characters a text cell shows or -), tab-separated"},
    {NULL, 0, NULL, NULL}};

static const gp_cli_cmd_t cmd_fields_doc = {
    "fields",
    "[OPTION]...",
    "List every figure of a rank that report.json gives: its key (object.key), unit and "
    "meaning, from the one table the JSON is written from.",
    fields_opts,
    NULL,
    false};

static const gp_cli_opt_t help_opts[] = {
    {"format", 'f', "FORMAT",
     "text (the default), or man: every command's options in man(7) markup, which is how "
     "gpuprof(1)'s OPTIONS section is made"},
    {NULL, 0, NULL, NULL}};

static const gp_cli_cmd_t cmd_help_doc = {"help",
                                          "[OPTION]... [COMMAND]",
                                          "Print the help of gpuprof, or of one COMMAND.",
                                          help_opts,
                                          NULL,
                                          false};

static const gp_cli_cmd_t *const commands[] = {
    &cmd_run_doc,       &cmd_report_doc,   &gp_cmd_top_doc,  &cmd_export_doc,
    &cmd_diff_doc,      &cmd_salvage_doc,  &cmd_capture_doc, &cmd_dump_doc,
    &cmd_summarize_doc, &cmd_settings_doc, &cmd_fields_doc,  &gp_cmd_findings_doc,
    &gp_cmd_ledger_doc, &gp_cmd_prune_doc, &cmd_help_doc};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

/* gpuprof --help */
static void help_all(FILE *f)
{
	fprintf(f, "usage: gpuprof COMMAND [OPTION]... [ARG]...\n"
	           "GPU profiling of Slurm jobs: how slow, where the time goes, where the memory "
	           "goes.\n\ncommands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-10s %s %s\n", commands[i]->name, commands[i]->name,
		        commands[i]->synopsis);
	fprintf(f,
	        "\ngpuprof COMMAND --help describes a command and its options; gpuprof "
	        "--version prints the version.\nmodes (--gpuprof=MODES, gpuprof run "
	        "--modes):\n%s",
	        gp_modes_help());
}

/* gpuprof alone, or an unknown command: one short line */
static int usage_line(void)
{
	fprintf(stderr, "usage: gpuprof COMMAND [OPTION]... (commands:");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(stderr, " %s", commands[i]->name);
	fprintf(stderr, "; gpuprof --help)\n");
	return GP_CLI_USAGE;
}

/* -o FILE: "-" is standard output, FILE.gz gzip-compressed, a link refused (outfile.h) */
static FILE *open_out(const gp_cli_cmd_t *cmd, gp_outfile_t *o, const char *path)
{
	if (!*path || path[strlen(path) - 1] == '/') {
		gp_err("%s: -o: '%s' names no file ('-' for standard output)", cmd->name, path);
		return NULL;
	}
	FILE *f = gp_outfile_open(o, path);
	if (!f)
		gp_err_errno("%s: %s%s", cmd->name, path,
		             errno == ELOOP ? " (a link: not written through; '-' for stdout)"
		                            : "");
	return f;
}

/* ok: into place (-1 said when it could not be); !ok: the name keeps what it held */
static int close_out(const gp_cli_cmd_t *cmd, gp_outfile_t *o, bool ok)
{
	if (gp_outfile_close(o, ok) < 0 && ok)
		return gp_err_errno("%s: %s", cmd->name, o->path);
	return 0;
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

/* The ring process pid records into, beside task_ring (its agent's: GPUPROF_RING in its
 * environment): the task's, or one of SPOOL/rank<N>[.pid<P>]/ring (a launcher's worker,
 * another process of the rank), the one whose recorder it is; else the task's when it
 * has no live recorder and pid is the agent's own child (the program, which takes it at
 * its first CUDA or NVTX call). 0 with out set, -1 said. */
static int capture_ring(const char *task_ring, long pid, char *out, size_t len)
{
	gp_ring_t r;
	if (gp_ring_attach(&r, task_ring) < 0)
		return gp_err_errno("capture: %s (has the process ended?)", task_ring);
	long rec = (long)atomic_load(&r.hdr->recorder_pid), agent = atomic_load(&r.hdr->agent_pid);
	gp_ring_detach(&r);
	snprintf(out, len, "%s", task_ring);
	if (rec == pid)
		return 0;
	char dir[PATH_MAX], sub[PATH_MAX + 300];
	const char *slash = strrchr(task_ring, '/');
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - task_ring) : 1,
	         slash ? task_ring : ".");
	DIR *d = opendir(dir);
	struct dirent *de;
	bool found = false;
	while (d && !found && (de = readdir(d))) {
		if (strncmp(de->d_name, "rank", 4) || !isdigit((unsigned char)de->d_name[4]))
			continue;
		snprintf(sub, sizeof(sub), "%s/%s/" GP_SPOOL_RING, dir, de->d_name);
		if (gp_ring_attach(&r, sub) < 0)
			continue;
		found = (long)atomic_load(&r.hdr->recorder_pid) == pid;
		gp_ring_detach(&r);
		if (found)
			snprintf(out, len, "%s", sub);
	}
	if (d)
		closedir(d);
	if (found)
		return 0;
	char ppath[64], stat[512] = "";
	snprintf(ppath, sizeof(ppath), "/proc/%ld/stat", pid);
	FILE *f = fopen(ppath, "r");
	if (f && !fgets(stat, sizeof(stat), f))
		stat[0] = '\0';
	if (f)
		fclose(f);
	const char *q = strrchr(stat, ')');
	long ppid = 0;
	if (q && sscanf(q + 1, " %*c %ld", &ppid) == 1 && ppid == agent &&
	    (!rec || (kill((pid_t)rec, 0) < 0 && errno == ESRCH)))
		return 0;
	return gp_err("capture: process %ld records into none of its agent's rings (it has not "
	              "used CUDA or NVTX, or another process of its rank records there): nothing "
	              "switched",
	              pid);
}

/* gpuprof capture on|off [--mem] PID: switch CUDA activity tracing (and with --mem,
 * memory tracking) of a running profiled process. The request goes into the ring header
 * the process shares with its agent; the process applies it at its next step boundary
 * (GP_EV_CONTROL in its rank file). Works for the caller's own processes only: it reads
 * /proc/PID/environ and opens the ring, both of which the kernel restricts to the owner. */
static int cmd_capture(int argc, char **argv)
{
	const gp_cli_cmd_t *cmd = &cmd_capture_doc;
	bool on, mem = false;
	gp_cli_t c;
	int k;
	gp_cli_begin(&c, cmd, argc, argv);
	while ((k = gp_cli_next(&c)) > 0)
		if (k == OPT_MEM)
			mem = true;
	if (k < 0)
		return c.status;
	argv += c.ind;
	argc -= c.ind;
	if (argc < 1 || (strcmp(argv[0], "on") && strcmp(argv[0], "off")))
		return gp_cli_missing(cmd, argc < 1 ? "say on or off" : "say on or off first");
	on = !strcmp(argv[0], "on");
	if (argc < 2)
		return gp_cli_missing(cmd, "which process?");
	if (argc > 2)
		return gp_cli_usage(cmd, "one process, not '%s' too", argv[2]);
	const char *pidarg = argv[1];
	char *end;
	errno = 0;
	long pid = strtol(pidarg, &end, 10);
	if (*end || errno || pid <= 0 || pid > INT_MAX)
		return gp_cli_usage(cmd, "'%s' is not a process id", pidarg);
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
	/* the process's own ring: the task's switched a launcher's worker or another
	 * process of the rank, and said it succeeded */
	char own[PATH_MAX];
	if (capture_ring(ring, pid, own, sizeof(own)) < 0)
		return 1;
	gp_ring_t r;
	if (gp_ring_attach(&r, own) < 0)
		return gp_err_errno("capture: %s (has the process ended?)", own), 1;
	/* on: now, inside capture windows or not (GP_CAPTURE_FORCED); off: until asked */
	unsigned bits = GP_MODE_CUDA | (mem ? GP_MODE_MEM : 0) | GP_CAPTURE_FORCED;
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

static void write_into_jobdir(const gp_job_t *job);

/* After a run of its own: the job's report, and what was written where, as nsys says
 * "Generated: ..." (on stderr: the program's standard output stays its own) */
static void run_report(const char *dir, bool quiet)
{
	gp_job_t job;
	char err[512];
	if (gp_job_analyse(&job, dir, NULL, err, sizeof(err)) < 0) {
		gp_warn("run: no report: %s (a killed agent's spool is recovered by gpuprof "
		        "salvage)",
		        err);
		return;
	}
	write_into_jobdir(&job);
	if (!quiet) {
		fprintf(stderr, "gpuprof: wrote %s (report.txt, report.json, job.json)\n", dir);
		fprintf(stderr, "gpuprof: %u rank%s", job.nranks, job.nranks == 1 ? "" : "s");
		if (job.step_median_ms > 0)
			fprintf(stderr, ", median step %.3f ms (%s)", job.step_median_ms,
			        job.step_basis);
		else
			fprintf(stderr, ", no steps found");
		if (job.nf)
			fprintf(stderr, "; first finding: %s\n", job.f[0].title);
		else
			fprintf(stderr, "; no finding\n");
	}
	gp_job_free(&job);
}

static int cmd_run(int argc, char **argv)
{
	const gp_cli_cmd_t *cmd = &cmd_run_doc;
	static const gp_opt_names_t names = {"--modes", "--output", "--ranks", "--capture"};
	gp_opt_given_t given = {0};
	gp_opt_defaults_t dflt = {.output = gp_setting_key("output")->def};
	gp_opts_t *o = calloc(1, sizeof(*o));
	char err[512], dir[PATH_MAX], modes[128];
	bool force = false, quiet = false;
	gp_cli_t c;
	int k;
	if (!o)
		return 1;
	gp_cli_begin(&c, cmd, argc, argv);
	while ((k = gp_cli_next(&c)) > 0) {
		switch (k) {
		case 'm':
			given.modes_given = true;
			given.modes = c.arg;
			break;
		case 'o':
			given.output = c.arg;
			break;
		case 'r':
			given.ranks = c.arg;
			break;
		case 'c':
			given.capture = c.arg;
			break;
		case 'f':
			force = true;
			break;
		case 'q':
			quiet = true;
			break;
		}
	}
	if (k < 0)
		return free(o), c.status;
	gp_modes_parse(gp_setting_env(GP_ENV_MODES)->def, &dflt.unset_modes, err, sizeof(err));
	dflt.bare_modes = dflt.unset_modes;
	if (gp_opts_resolve(o, &given, &names, &dflt, gp_env_process_get, NULL, err, sizeof(err)) <
	    0)
		return free(o), gp_cli_usage(cmd, "%s", err);
	if (o->modes & GP_MODE_HELP) {
		printf("modes:\n%s", gp_modes_help());
		return free(o), 0;
	}
	int i = c.ind;
	if (i >= argc)
		return free(o), gp_cli_missing(cmd, "no program given");
	/* as a shell would: 127 when the program is not found, 126 when it cannot be run,
	 * said before any agent starts (the agent under Slurm mirrors slurmstepd instead) */
	int found = program_status(argv[i]);
	if (found)
		return free(o),
		       gp_err("run: %s: %s", argv[i],
		              found == 127 ? "command not found" : "not executable"),
		       found;
	const char *me = getenv("SLURM_PROCID");
	if (!gp_ranks_contains(&o->ranks, me ? (uint32_t)atoi(me) : 0))
		o->modes = GP_MODE_NONE;
	if (o->modes & GP_MODE_NONE) {
		execvp(argv[i], argv + i);
		return gp_err_errno("execvp %s", argv[i]), 127;
	}
	gp_tmpl_vars_t vars;
	gp_tmpl_vars_from_env(&vars);
	gp_tmpl_hostbuf_t hb;
	gp_tmpl_this_host(&vars, &hb);
	char cwd[PATH_MAX];
	if (gp_opts_jobdir(o->output, &vars, getcwd(cwd, sizeof(cwd)), dir, sizeof(dir)) < 0)
		return free(o), gp_cli_usage(cmd, "--output: the path is too long");
	bool alone = gp_run_alone();
	if (alone) { /* never over an earlier run, unless asked */
		char asked[PATH_MAX];
		snprintf(asked, sizeof(asked), "%s", dir);
		if (gp_run_pick_dir(dir, sizeof(dir), force) < 0)
			return gp_err_errno("run: %s holds an earlier run, and so does every %s.N",
			                    asked, asked),
			       1;
		if (strcmp(asked, dir) && !quiet)
			gp_info("run: %s holds an earlier run; this one goes to %s "
			        "(--force-overwrite replaces it)",
			        asked, dir);
	}
	gp_task_env_t t;
	gp_opts_task_env(o, &t, modes, sizeof(modes));
	t.jobdir = dir;
	gp_task_env_export(&t, gp_env_process_set, NULL);
	free(o);
	setenv(GP_ENV_INJECT, inject_path(), 0);
	setenv(GP_ENV_PYTHON, python_dir(), 0);
	const char *agent = agent_path();
	char **av = calloc((size_t)(argc - i) + 3, sizeof(char *));
	if (!av)
		return 1;
	av[0] = (char *)agent;
	av[1] = "--";
	for (int a = i; a < argc; a++)
		av[2 + a - i] = argv[a];
	if (alone) { /* the agent as our child: the report when it ends */
		int st = gp_run_supervise(av);
		free(av);
		if (st < 0)
			return gp_err_errno("run: cannot start %s", agent), 1;
		run_report(dir, quiet);
		gp_run_exit_as(st);
	}
	/* a task of a Slurm job: the agent itself, as the plugin runs it */
	execv(agent, av);
	gp_err_errno("cannot run %s; running the program unprofiled", agent);
	execvp(argv[i], argv + i);
	return gp_err_errno("execvp %s", argv[i]), 127;
}

/* A job named on the command line: its directory, or its id through sacct (jobref.h);
 * 1 (the work failed) with the reason said when there is none */
static int find_job(const gp_cli_cmd_t *cmd, const char *arg, char *dir, size_t len, bool *by_id)
{
	char err[PATH_MAX + 256];
	if (gp_jobref_resolve(arg, dir, len, by_id, err, sizeof(err)) < 0)
		return gp_err("%s: %s", cmd->name, err), 1;
	return 0;
}

/* A progress line for a long report, where a person watches: stderr a terminal, and
 * a second gone or a thousand rank files to read (2 048 ranks took 7.5 s in silence);
 * redrawn in place, cleared at the end */
static struct timespec progress_t0;
static bool progress_shown;

static void progress(unsigned done, unsigned total)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	double s =
	    (double)(t.tv_sec - progress_t0.tv_sec) + (t.tv_nsec - progress_t0.tv_nsec) / 1e9;
	if (done < total && s < 1.0 && total < 1024)
		return;
	if (done >= total) {
		if (progress_shown)
			fputs("\r\033[K", stderr);
		progress_shown = false;
		return;
	}
	fprintf(stderr, "\rgpuprof: reading rank files: %u of %u (%.0f%%), %.0f s\033[K", done,
	        total, 100.0 * done / total, s);
	progress_shown = true;
}

static void progress_arm(void)
{
	if (!isatty(STDERR_FILENO))
		return;
	clock_gettime(CLOCK_MONOTONIC, &progress_t0);
	gp_job_set_progress(progress);
}

/* name in dfd, written by fn as it goes (report.json of 10 000 ranks is 100 MiB: never
 * all in memory), then renamed into place: whole or not at all */
static void write_streamed(int dfd, const char *name, const gp_job_t *job,
                           void (*fn)(const gp_job_t *, FILE *), mode_t mode)
{
	char tmp[128];
	snprintf(tmp, sizeof(tmp), ".%s.tmp.%d", name, (int)getpid());
	int fd = gp_open_at(dfd, tmp, O_CREAT | O_EXCL | O_TRUNC, mode);
	if (fd >= 0 && (mode & S_IRGRP))
		fchmod(fd, mode); /* the group's to read whatever the umask (the finisher's: 077) */
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
	/* readable by the group where the job directory is (group_readable, site_group) */
	mode_t mode = fstat(dfd, &st) == 0 && (st.st_mode & S_IRGRP) ? 0640 : 0600;
	write_streamed(dfd, "report.txt", job, gp_report_text, mode);
	write_streamed(dfd, "report.json", job, gp_report_json, mode);
	write_streamed(dfd, "job.json", job, gp_job_json, mode);
	close(dfd);
}

/* A job that still runs (or whose agents left live files and no rank files): its report
 * from the live figures (live_report.h), printed, never written into the job directory
 * (report.txt is the finished job's). -1 when the rank files make the report. */
static int report_live(const gp_cli_cmd_t *cmd, const char *dir, const char *step,
                       const gp_ranks_t *ranks, const char *format, const char *output,
                       bool summary, bool quiet, bool no_rank_files)
{
	gp_live_job_t lj;
	char err[512];
	gp_outfile_t out;
	if (gp_live_job_load(&lj, dir, step, 0, err, sizeof(err)) < 0 || !lj.n ||
	    (!gp_live_job_running(&lj) && !no_rank_files)) {
		gp_live_job_free(&lj);
		return -1;
	}
	if (ranks) /* the job line of those ranks */
		gp_live_job_select(&lj, ranks);
	if (!open_out(cmd, &out, output ? output : "-")) {
		gp_live_job_free(&lj);
		return 1;
	}
	if (summary) {
		char line[600];
		gp_live_report_line(&lj, line, sizeof(line));
		fprintf(out.f, "%s\n", line);
	} else if (!quiet) {
		if (!strcmp(format, "json"))
			gp_live_report_json(&lj, out.f);
		else
			gp_live_report_text(&lj, out.f);
	}
	gp_live_job_free(&lj);
	return close_out(cmd, &out, true) < 0 ? 1 : 0;
}

static int cmd_report(int argc, char **argv)
{
	const gp_cli_cmd_t *cmd = &cmd_report_doc;
	const char *step = NULL, *format = "text", *output = NULL;
	const char *steps_from = NULL, *ranks = NULL;
	bool quiet = false, summary = false, sacct = false, by_id = false, record = false;
	char err[512], dir[PATH_MAX];
	gp_job_t job;
	gp_cli_t c;
	int k;
	gp_cli_begin(&c, cmd, argc, argv);
	while ((k = gp_cli_next(&c)) > 0) {
		switch (k) {
		case 'f':
			format = c.arg;
			break;
		case 'o':
			output = c.arg;
			break;
		case 's':
			step = c.arg;
			break;
		case 'r':
			ranks = c.arg;
			break;
		case 'q':
			quiet = true;
			break;
		case OPT_STEPS_FROM:
			steps_from = c.arg;
			break;
		case OPT_SACCT:
			sacct = true;
			break;
		case OPT_SUMMARY_LINE:
			summary = true;
			break;
		case OPT_RECORD_LINE:
			record = true;
			break;
		}
	}
	if (k < 0)
		return c.status;
	if (gp_cli_operands(&c, 1, 1, "job directory or job id"))
		return GP_CLI_USAGE;
	const char *target = argv[c.ind];
	char names[128];
	if (!gp_writer_find(format, true))
		return gp_cli_usage(cmd, "--format: '%s' (formats: %s)", format,
		                    gp_writer_names(true, names, sizeof(names)));
	if (step && !gp_spool_step_name_ok(step))
		return gp_cli_usage(cmd,
		                    "--step: '%s' is not a step (a number, batch, interactive or "
		                    "extern, with .attemptN for a requeued attempt)",
		                    step);
	if (gp_steps_from_name(steps_from) < 0)
		return gp_cli_usage(cmd,
		                    "--steps-from: '%s' (auto, nvtx, optimizer, profiler, kernels)",
		                    steps_from);
	gp_ranks_t detail;
	if (ranks && gp_ranks_parse(ranks, &detail, err, sizeof(err)) < 0)
		return gp_cli_usage(cmd, "--ranks: %s", err);
	if (find_job(cmd, target, dir, sizeof(dir), &by_id))
		return 1;
	int live = report_live(cmd, dir, step, ranks ? &detail : NULL, format, output, summary,
	                       quiet, false);
	if (live >= 0)
		return live;
	progress_arm();
	/* sacct before the findings: how the job ended (a time limit) is one */
	gp_analyse_opts_t ao = {.step = step, .steps_from = steps_from, .sacct = sacct || by_id};
	if (gp_job_analyse(&job, dir, &ao, err, sizeof(err)) < 0) {
		/* agents killed with the node, say: their last live figures */
		if ((live = report_live(cmd, dir, step, ranks ? &detail : NULL, format, output,
		                        summary, quiet, true)) >= 0)
			return live;
		return gp_err("report: %s", err), 1;
	}
	/* the job directory's own report is the job's view: not one step's, nor steps from a
	 * source asked for (--steps-from=optimizer rewrote it with "steps: none found") */
	if (!step && gp_steps_from_name(steps_from) == GP_STEPS_AUTO)
		write_into_jobdir(&job);
	gp_outfile_t out;
	if (!open_out(cmd, &out, output ? output : "-")) {
		gp_job_free(&job);
		return 1;
	}
	if (ranks) { /* the printed text lists these ranks; report.txt keeps the default view */
		job.have_detail = true;
		job.detail = detail;
	}
	if (summary) {
		char line[600];
		gp_report_summary_line(&job, line, sizeof(line));
		fprintf(out.f, "%s\n", line);
	}
	if (record) {
		char line[GP_REC_MAX + 1];
		if (gp_rec_format(&job.acct, line, sizeof(line)) == 0)
			fprintf(out.f, "%s\n", line);
	}
	int rc = 0;
	if (!summary && !record && !quiet)
		rc = gp_writer_find(format, true)->write(&job, out.f, output, NULL) < 0;
	rc |= close_out(cmd, &out, rc == 0) < 0;
	gp_job_free(&job);
	return rc;
}

/* --window=FROM:TO: seconds after the job's first event, finite, FROM < TO (a bound of
 * 10^9 s keeps the nanoseconds within 64 bits) */
static int parse_window(const gp_cli_cmd_t *cmd, const char *v, double *from, double *to)
{
	char a[64], b[64];
	const char *colon = strchr(v, ':');
	if (!colon || (size_t)(colon - v) >= sizeof(a) || strlen(colon + 1) >= sizeof(b))
		return gp_cli_usage(cmd,
		                    "--window: '%s' is not FROM:TO (seconds after the job's first "
		                    "event, e.g. 10:12.5)",
		                    v);
	snprintf(a, sizeof(a), "%.*s", (int)(colon - v), v);
	snprintf(b, sizeof(b), "%s", colon + 1);
	if (gp_cli_number(cmd, "--window FROM", a, 0, false, 1e9, false, "10:12.5", from) ||
	    gp_cli_number(cmd, "--window TO", b, 0, false, 1e9, false, "10:12.5", to))
		return GP_CLI_USAGE;
	if (*to <= *from)
		return gp_cli_usage(cmd, "--window: '%s': TO must come after FROM (e.g. 10:12.5)",
		                    v);
	return 0;
}

static int cmd_export(int argc, char **argv)
{
	const gp_cli_cmd_t *cmd = &cmd_export_doc;
	const char *format = NULL, *output = NULL, *ranks = NULL, *torch = "2";
	const char *table = "kernels";
	uint64_t max_events = 0;
	double win_from = 0, win_to = 0;
	char err[512], dir[PATH_MAX];
	bool by_id;
	gp_job_t job;
	gp_cli_t c;
	int k;
	gp_cli_begin(&c, cmd, argc, argv);
	while ((k = gp_cli_next(&c)) > 0) {
		switch (k) {
		case 'f':
			format = c.arg;
			break;
		case 'o':
			output = c.arg;
			break;
		case 'r':
			ranks = c.arg;
			break;
		case OPT_TORCH:
			torch = c.arg;
			break;
		case OPT_TABLE:
			table = c.arg;
			break;
		case 'n':
			if (gp_cli_count(cmd, "--max-events", c.arg, UINT64_MAX, &max_events))
				return GP_CLI_USAGE;
			break;
		case 'w':
			if (parse_window(cmd, c.arg, &win_from, &win_to))
				return GP_CLI_USAGE;
			break;
		}
	}
	if (k < 0)
		return c.status;
	const gp_writer_t *w = gp_writer_find(format, false);
	char names[256];
	if (!w)
		return gp_cli_usage(cmd, "--format: '%s' (formats: %s)", format ? format : "",
		                    gp_writer_names(false, names, sizeof(names)));
	if (strcmp(table, "kernels") && strcmp(table, "ranks") && strcmp(table, "findings"))
		return gp_cli_usage(cmd, "--table: '%s' (tables: kernels, ranks, findings)", table);
	if (strcmp(torch, "2") && strcmp(torch, "1.13"))
		return gp_cli_usage(cmd, "--torch: '%s' (2 for PyTorch 2.0 and later, or 1.13)",
		                    torch);
	if (!output)
		return gp_cli_missing(cmd, "--output FILE is needed (a directory for kineto)");
	if (w->to_dir && !strcmp(output, "-"))
		return gp_cli_usage(
		    cmd,
		    "--format=%s writes a directory of files, one per rank: -o DIR, "
		    "not standard output",
		    w->name);
	if (w->to_dir && gp_outfile_gzip_name(output))
		return gp_cli_usage(cmd, "--format=%s writes a directory, not one .gz file: -o DIR",
		                    w->name);
	if (gp_cli_operands(&c, 1, 1, "job directory or job id"))
		return GP_CLI_USAGE;
	if (find_job(cmd, argv[c.ind], dir, sizeof(dir), &by_id))
		return 1;
	progress_arm();
	/* as the report: named by its id, with its sacct record (a time limit is a finding) */
	gp_analyse_opts_t ao = {.sacct = by_id};
	if (gp_job_analyse(&job, dir, &ao, err, sizeof(err)) < 0)
		return gp_err("export: %s", err), 1;
	gp_write_opts_t wo = {.ranks = ranks,
	                      .pydir = python_dir(),
	                      .table = table,
	                      .torch113 = !strcmp(torch, "1.13"),
	                      .max_events = max_events,
	                      .win_from = win_from,
	                      .win_to = win_to};
	int rc;
	if (w->to_dir) { /* a directory of files, one per rank */
		rc = w->write(&job, NULL, output, &wo);
		gp_job_free(&job);
		return rc ? 1 : 0;
	}
	gp_outfile_t out;
	if (!open_out(cmd, &out, output)) {
		gp_job_free(&job);
		return 1;
	}
	rc = w->write(&job, out.f, output, &wo);
	/* nothing half-written is left behind: the file named by -o keeps what it held */
	if (close_out(cmd, &out, rc == 0) < 0)
		rc = -1;
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
	int n = 0, explicit = 0, failed = 0;
	gp_cli_t c;
	int k;
	gp_cli_begin(&c, &cmd_salvage_doc, argc, argv);
	while ((k = gp_cli_next(&c)) > 0) {
		switch (k) {
		case 'j':
			job = c.arg;
			break;
		case OPT_SPOOL:
			spool = c.arg;
			break;
		case OPT_INTO:
			into = c.arg;
			break;
		}
	}
	if (k < 0)
		return c.status;
	for (int i = c.ind; i < argc; i++) {
		explicit ++;
		if (salvage_as_owner(argv[i], into) == 0)
			n++;
		else
			failed++;
	}
	char root[4096]; /* the agent's fallback: an absolute $TMPDIR, else /tmp (spool.h) */
	if (!explicit)
		n = gp_spool_salvage_all(
		    spool ? spool
		          : gp_spool_root(root, sizeof(root), NULL, getenv("TMPDIR"), NULL, 0),
		    job, into, true, &failed);
	/* the epilog reads the count from the line's start (spank/epilog.c) */
	if (failed)
		printf("gpuprof: salvaged %d spool(s); %d not, or not whole (kept in the spool: "
		       "see above)\n",
		       n, failed);
	else
		printf("gpuprof: salvaged %d spool(s)\n", n);
	return failed ? 1 : 0;
}

/* gpuprof dump FILE: what a rank file holds (header, records per type, strings, drops);
 * --events prints every record, --strings every interned string. */
static int cmd_dump(int argc, char **argv)
{
	const gp_cli_cmd_t *cmd = &cmd_dump_doc;
	bool events = false, strings = false;
	char err[512];
	gp_cli_t c;
	int k;
	gp_cli_begin(&c, cmd, argc, argv);
	while ((k = gp_cli_next(&c)) > 0) {
		events |= k == OPT_EVENTS;
		strings |= k == OPT_STRINGS;
	}
	if (k < 0)
		return c.status;
	if (gp_cli_operands(&c, 1, 1, "rank file"))
		return GP_CLI_USAGE;
	const char *path = argv[c.ind];
	gp_rf_reader_t *r;
	if (gp_rf_open(path, &r, err, sizeof(err)) < 0)
		return gp_err("dump: %s", err), 1;
	uint64_t count[GP_EV_MAX + 1] = {0}, distinct = 0;
	gp_event_t e;
	const char *hdr = gp_rf_header_text(r); /* its values are the job's: node, command */
	gp_text_put(stdout, hdr, strlen(hdr), false);
	while (gp_rf_next(r, &e) == 1) {
		count[e.type < GP_EV_MAX ? e.type : GP_EV_MAX]++;
		if (e.type == GP_EV_STRING && e.u16 == 0)
			distinct++;
		if (strings && e.type == GP_EV_STRING) { /* the program's bytes: never raw */
			printf("string %u +%u ", e.tid, e.u16);
			gp_text_put(stdout, (const char *)&e.a, e.u8 <= 32 ? e.u8 : 32, true);
			putchar('\n');
		}
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

/* All ranks' post-warm-up steps of a job as a distribution (steps.q: each rank's steps,
 * or GP_STEP_KEEP quantiles of them where it had more): never the kept medians of blocks,
 * which are no sample of the steps' times (of a run whose every third step is slow,
 * blocks of 2 read the mean of a fast and a slow step: 1536 against 1024 steps of one
 * program read +75 % REGRESSION, the reviewer); *more: a rank had more steps than that. */
static double *job_samples(const gp_job_t *j, size_t *n, bool *more)
{
	size_t tot = 0, k = 0;
	for (unsigned i = 0; i < j->nranks; i++)
		tot += j->ranks[i].steps.nq;
	double *v = malloc((tot ? tot : 1) * sizeof(double));
	for (unsigned i = 0; v && i < j->nranks; i++) {
		const gp_steps_t *s = &j->ranks[i].steps;
		memcpy(v + k, s->q, s->nq * sizeof(double));
		k += s->nq;
		*more |= s->nq && s->nall > s->nq;
	}
	*n = v ? k : 0;
	return v;
}

/* Where a job's steps came from (steps.source: nvtx, profiler, kernels, ...): its
 * ranks', "mixed" where they differ, "" where none has steps. */
static const char *job_source(const gp_job_t *j)
{
	const char *src = "";
	for (unsigned i = 0; i < j->nranks; i++) {
		const char *s = j->ranks[i].steps.source;
		if (!s[0] || !j->ranks[i].steps.nms)
			continue;
		if (src[0] && strcmp(src, s))
			return "mixed";
		src = s;
	}
	return src;
}

static unsigned job_steps(const gp_job_t *j)
{
	unsigned n = 0;
	for (unsigned i = 0; i < j->nranks; i++)
		n += j->ranks[i].capture.window ? j->ranks[i].capture.steps
		                                : j->ranks[i].steps.n_post;
	return n;
}

/* a figure of diff's table, or '-' where it was not measured (null in report.json) */
static const char *diff_fig(char *buf, bool measured, int prec, double v)
{
	if (!measured)
		return "-";
	snprintf(buf, 32, "%.*f", prec, v);
	return buf;
}

/* ... a change in per cent */
static const char *diff_pct(char *buf, bool measured, double v)
{
	if (!measured)
		return "-";
	snprintf(buf, 32, "%+.1f%%", v);
	return buf;
}

/* a finding as a person names it: its rule's name (the id is report.json's) */
static const char *finding_name(const gp_finding_t *f)
{
	return f->rule ? f->rule->name : f->id;
}

/* gpuprof diff A B: is B slower than A beyond noise? Per-step samples of both jobs are
 * compared with a Mann-Whitney test; a change is a regression only when it is significant
 * (p < --alpha), its mean step rose by --threshold or more and the test says B's steps
 * tend to be the longer. Kernel time is compared per step, so runs of different lengths
 * compare. */
/* Each rank file's summary (rankR.gps beside it, report/summary.c): what the job report
 * reads in its place. The agent runs this when a rank's capture ends. */
static int cmd_summarize(int argc, char **argv)
{
	const gp_cli_cmd_t *cmd = &cmd_summarize_doc;
	char err[1024];
	int rc = 0;
	gp_cli_t c;
	int k;
	gp_cli_begin(&c, cmd, argc, argv);
	while ((k = gp_cli_next(&c)) > 0)
		;
	if (k < 0)
		return c.status;
	if (gp_cli_operands(&c, 1, -1, "rank file"))
		return GP_CLI_USAGE;
	for (int i = c.ind; i < argc; i++)
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
	const gp_cli_cmd_t *cmd = &cmd_settings_doc;
	const char *format = "text", *which = "site";
	gp_cli_t c;
	int k;
	gp_cli_begin(&c, cmd, argc, argv);
	while ((k = gp_cli_next(&c)) > 0) {
		if (k == OPT_ENV)
			which = "env";
		else if (k == 'f')
			format = c.arg;
	}
	if (k < 0)
		return c.status;
	if (c.ind < argc)
		return gp_cli_usage(cmd, "unexpected '%s' (settings takes no operand)",
		                    argv[c.ind]);
	if (strcmp(format, "text") && strcmp(format, "markdown") && strcmp(format, "man"))
		return gp_cli_usage(cmd, "--format: '%s' is not text, markdown or man", format);
	return gp_settings_print(stdout, which, format) < 0 || fflush(stdout) ? 1 : 0;
}

/* gpuprof fields: the rank figures of report.json (report/fields.c) */
static int cmd_fields(int argc, char **argv)
{
	const gp_cli_cmd_t *cmd = &cmd_fields_doc;
	const char *format = "text";
	gp_cli_t c;
	int k;
	gp_cli_begin(&c, cmd, argc, argv);
	while ((k = gp_cli_next(&c)) > 0)
		if (k == 'f')
			format = c.arg;
	if (k < 0)
		return c.status;
	if (c.ind < argc)
		return gp_cli_usage(cmd, "unexpected '%s' (fields takes no operand)", argv[c.ind]);
	if (strcmp(format, "text") && strcmp(format, "markdown") && strcmp(format, "tables"))
		return gp_cli_usage(cmd, "--format: '%s' is not text, markdown or tables", format);
	if (!strcmp(format, "tables"))
		gp_tables_print(stdout);
	else
		gp_fields_print(stdout, !strcmp(format, "markdown"));
	return fflush(stdout) ? 1 : 0;
}

/* gpuprof help [COMMAND]; --format=man: every command's options for gpuprof(1) */
static int cmd_help(int argc, char **argv)
{
	const gp_cli_cmd_t *cmd = &cmd_help_doc;
	const char *format = "text";
	gp_cli_t c;
	int k;
	gp_cli_begin(&c, cmd, argc, argv);
	while ((k = gp_cli_next(&c)) > 0)
		if (k == 'f')
			format = c.arg;
	if (k < 0)
		return c.status;
	bool man = !strcmp(format, "man");
	if (!man && strcmp(format, "text"))
		return gp_cli_usage(cmd, "--format: '%s' is not text or man", format);
	if (gp_cli_operands(&c, 0, 1, "command"))
		return GP_CLI_USAGE;
	for (size_t i = 0; i < NCOMMANDS; i++) {
		if (c.ind < argc && strcmp(argv[c.ind], commands[i]->name))
			continue;
		if (man)
			gp_cli_man(commands[i], stdout);
		else if (c.ind < argc)
			gp_cli_help(commands[i], stdout);
		if (c.ind < argc)
			return fflush(stdout) ? 1 : 0;
	}
	if (c.ind < argc)
		return gp_cli_usage(cmd, "no command '%s'", argv[c.ind]);
	if (!man)
		help_all(stdout);
	return fflush(stdout) ? 1 : 0;
}

/* diff's step rows and notes: B's steps against A's (cmd_diff); *regress, *apart (not
 * comparable) set where so */
static void diff_steps(const gp_job_t *a, const gp_job_t *b, double thr, double alpha,
                       bool *regress, bool *apart)
{
	size_t na, nb;
	bool qa = false, qb = false; /* a side's rank kept quantiles of its steps */
	double *sa = job_samples(a, &na, &qa), *sb = job_samples(b, &nb, &qb), eff = 0.5;
	const char *srca = job_source(a), *srcb = job_source(b);
	/* steps found by different means (an NVTX range, a kernel sequence, the optimizer,
	 * host markers) are not the same stretch of work: their times are not a change */
	bool mixed = !strcmp(srca, "mixed") || !strcmp(srcb, "mixed");
	/* "mixed" (a side's ranks found their steps by different means) pools unlike steps
	 * into one sample: not comparable either, even against another "mixed" */
	bool othersrc = na && nb && (strcmp(srca, srcb) || mixed);
	double p = gp_mann_whitney(sa, na, sb, nb, &eff);
	/* the jobs' own medians, as their reports say them */
	double ma = a->step_median_ms > 0 ? a->step_median_ms : gp_median(sa, na),
	       mb = b->step_median_ms > 0 ? b->step_median_ms : gp_median(sb, nb);
	double ds = ma > 0 ? 100 * (mb / ma - 1) : 0;
	/* the verdict's size is the mean step's change (the throughput's: of steps that
	 * alternate fast and slow, the median is either kind by the count's parity, and a
	 * 1.5x slower run read -1.5 %), its direction the test's (P(B step > A step)): a
	 * change the two read apart is no regression (the tester, session 33) */
	double ua = gp_mean(sa, na), ub = gp_mean(sb, nb);
	double du = ua > 0 ? 100 * (ub / ua - 1) : 0;
	bool few = na && nb && (na < GP_MW_MIN || nb < GP_MW_MIN);
	bool sig = p < alpha, big = fabs(du) >= thr;
	bool slower = du > 0 && eff > 0.5, faster = du < 0 && eff < 0.5;
	const char *verdict = !na || !nb             ? "not comparable: no steps in one"
	                      : othersrc             ? "not comparable: steps found apart"
	                      : few                  ? "not comparable: too few steps to test"
	                      : sig && big && slower ? "REGRESSION"
	                      : sig && big && faster ? "improvement"
	                      : sig && big           ? "significant, the mean and the test disagree"
	                      : sig                  ? "significant, below the threshold"
	                                             : "within noise";
	*apart |= !na || !nb || othersrc || few;
	*regress |= !*apart && sig && big && slower;
	char fa[32], fb[32], fd[32];
	printf("%-28s %14s %14s %9s\n", "", "A", "B", "change");
	printf("%-28s %14s %14s %9s\n", "median step ms", diff_fig(fa, na, 3, ma),
	       diff_fig(fb, nb, 3, mb), diff_pct(fd, na && nb, ds));
	printf("%-28s %14s %14s %9s  %s\n", "mean step ms", diff_fig(fa, na, 3, ua),
	       diff_fig(fb, nb, 3, ub), diff_pct(fd, na && nb, du), verdict);
	printf("%-28s %14s %14s\n", "  measured as",
	       a->step_basis[0] ? a->step_basis : "not measured",
	       b->step_basis[0] ? b->step_basis : "not measured");
	printf("%-28s %14s %14s\n", "  steps from", srca[0] ? srca : "none",
	       srcb[0] ? srcb : "none");
	if (na && nb)
		printf("%-28s %14zu %14zu   Mann-Whitney p=%.3g, P(B step > A step)=%.2f\n",
		       "  step samples (all ranks)", na, nb, p, eff);
	else
		printf("%-28s %14zu %14zu   no test\n", "  step samples (all ranks)", na, nb);
	if (na && nb && (qa || qb))
		printf("  note: a rank of more than %d steps is tested by %d quantiles of its "
		       "steps' times (%s)\n",
		       GP_STEP_KEEP, GP_STEP_KEEP,
		       qa && qb ? "both"
		       : qa     ? "A"
		                : "B");
	if (!na || !nb)
		printf("  note: %s: not comparable\n", !na && !nb ? "neither measured steps"
		                                       : !na      ? "A measured no steps"
		                                                  : "B measured no steps");
	if (few)
		printf("  note: fewer than %d step samples on a side: no test tells a change from "
		       "noise there\n",
		       GP_MW_MIN);
	if (othersrc && mixed)
		printf("  note: %s's ranks found their steps by different means (steps.source "
		       "differs by rank): their steps are not one kind of work, not comparable\n",
		       !strcmp(srca, "mixed") && !strcmp(srcb, "mixed") ? "A's and B"
		       : !strcmp(srca, "mixed")                         ? "A"
		                                                        : "B");
	else if (othersrc)
		printf("  note: A's steps come from %s, B's from %s: not the same work a step, "
		       "not comparable\n",
		       srca, srcb);
	if (a->step_basis[0] && b->step_basis[0] && strcmp(a->step_basis, b->step_basis))
		printf("  note: A and B measure steps differently (%s vs %s): compare with care\n",
		       a->step_basis, b->step_basis);
	free(sa);
	free(sb);
}

/* Is rank (step, rank) among the job's ranks read? They are sorted by step, then rank
 * (job.c: cmp_rank): a binary search, not a scan per listed rank (60 000 ranks a side) */
static bool job_has_rank(const gp_job_t *j, const char *step, int rank)
{
	size_t lo = 0, hi = j->nranks;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const gp_rank_t *r = &j->ranks[mid];
		int c = strcmp(r->id.step, step);
		if (!c)
			c = (r->id.rank > rank) - (r->id.rank < rank);
		if (!c)
			return true;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* diff's note on a side whose job directory lists ranks that were not read: those of its
 * job.json (the last report's: "profiled_ranks") whose rank files are gone or unreadable,
 * else tasks of the job with no rank file; the diff's figures are of the ranks read. */
static void diff_unread(const gp_job_t *j, const char *side)
{
	char path[4200], *buf = NULL, shown[160] = "";
	size_t len = 0, o = 0;
	unsigned listed = 0, gone = 0;
	snprintf(path, sizeof(path), "%s/job.json", j->dir);
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
	if (fd >= 0 && !f)
		close(fd);
	if (f) {
		buf = malloc(8u << 20);
		len = buf ? fread(buf, 1, (8u << 20) - 1, f) : 0;
		fclose(f);
	}
	const char *p = buf ? (buf[len] = '\0', strstr(buf, "\"profiled_ranks\": [")) : NULL;
	const char *end = p ? strstr(p, "\"node_summaries\"") : NULL;
	while (p && (p = strstr(p, "{\"step\": \"")) && (!end || p < end)) {
		char step[32];
		p += 10;
		size_t n = strcspn(p, "\"");
		snprintf(step, sizeof(step), "%.*s", (int)(n < 31 ? n : 31), p);
		const char *r = strstr(p, "\"rank\": ");
		if (!r || (end && r > end))
			break;
		int rank = atoi(r + 8);
		listed++;
		if (job_has_rank(j, step, rank))
			continue;
		if (gone++ < 6 && o < sizeof(shown))
			o += (size_t)snprintf(shown + o, sizeof(shown) - o, "%sstep %s rank %d",
			                      gone > 1 ? ", " : "", step, rank);
	}
	free(buf);
	/* the step names are job.json's, which its owner may write: shown as the text is */
	gp_text_shown(shown, strnlen(shown, sizeof(shown)));
	if (gone)
		printf("  note: %s: its job.json lists %u rank(s), %u of them not read (rank file "
		       "gone or unreadable: %s%s): its figures are the %u read\n",
		       side, listed, gone, shown, gone > 6 ? ", ..." : "", j->nranks);
	else if (j->ntasks_expected > j->nranks)
		printf("  note: %s: %u of its %u tasks have no rank file: its figures are the %u "
		       "read\n",
		       side, j->ntasks_expected - j->nranks, j->ntasks_expected, j->nranks);
}

static int cmd_diff(int argc, char **argv)
{
	const gp_cli_cmd_t *cmd = &cmd_diff_doc;
	gp_job_t a, b;
	char err[512], da[PATH_MAX], db[PATH_MAX];
	double thr = 5, alpha = 0.01;
	bool fail = false, by_id;
	gp_cli_t c;
	int k;
	gp_cli_begin(&c, cmd, argc, argv);
	while ((k = gp_cli_next(&c)) > 0) {
		switch (k) {
		case 't': /* NaN would compare false with everything: never a regression */
			if (gp_cli_number(cmd, "--threshold", c.arg, 0, false, 1e6, false, "5",
			                  &thr))
				return GP_CLI_USAGE;
			break;
		case 'a':
			if (gp_cli_number(cmd, "--alpha", c.arg, 0, true, 1, true, "0.01", &alpha))
				return GP_CLI_USAGE;
			break;
		case OPT_FAIL:
			fail = true;
			break;
		}
	}
	if (k < 0)
		return c.status;
	if (gp_cli_operands(&c, 2, 2, "job"))
		return GP_CLI_USAGE;
	if (find_job(cmd, argv[c.ind], da, sizeof(da), &by_id) ||
	    find_job(cmd, argv[c.ind + 1], db, sizeof(db), &by_id))
		return 1;
	progress_arm();
	if (gp_job_analyse(&a, da, NULL, err, sizeof(err)) < 0)
		return gp_err("diff: %s", err), 1;
	if (gp_job_analyse(&b, db, NULL, err, sizeof(err)) < 0) {
		gp_job_free(&a);
		return gp_err("diff: %s", err), 1;
	}
	bool regress = false, apart = false; /* apart: not comparable */
	diff_steps(&a, &b, thr, alpha, &regress, &apart);
	diff_unread(&a, "A");
	diff_unread(&b, "B");
	char fa[32], fb[32], fd[32];
	/* the job's peak as the summary line and the accounting record say it (acct.c: the
	 * in-use peak, not an allocator's preallocated pool); 0: not measured */
	uint64_t pa = a.acct.peak_bytes, pb = b.acct.peak_bytes;
	double dm = pa && pb ? 100.0 * ((double)pb / pa - 1) : 0; /* 0: not measured */
	printf("%-28s %14s %14s %9s%s\n", "peak device MiB",
	       diff_fig(fa, pa != 0, 1, pa / 1048576.0), diff_fig(fb, pb != 0, 1, pb / 1048576.0),
	       diff_pct(fd, pa && pb, dm),
	       !pa || !pb            ? "  not measured"
	       : dm > 0 && dm >= thr ? "  REGRESSION"
	                             : "");
	regress |= pa && pb && dm > 0 && dm >= thr; /* --threshold=0: a rise, not equal */
	unsigned sta = job_steps(&a), stb = job_steps(&b);
	printf("\ntop kernels (GPU ms per step, %u and %u steps):\n", sta, stb);
	if (!sta || !stb)
		printf("  none: %s no steps to count them by\n", !sta && !stb ? "neither has"
		                                                 : !sta       ? "A has"
		                                                              : "B has");
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
		printf("  %-44s %s\n", finding_name(&b.f[i]), old ? "in both" : "NEW in B");
	}
	for (unsigned j = 0; j < a.nf; j++) {
		bool still = false;
		for (unsigned i = 0; i < b.nf; i++)
			still |= !strcmp(a.f[j].id, b.f[i].id);
		if (!still)
			printf("  %-44s %s\n", finding_name(&a.f[j]), "gone in B");
	}
	printf("\nverdict: %s (regression: p < %g and a change of %g%% or more)\n",
	       regress ? "REGRESSION"
	       : apart ? "not comparable (steps)"
	               : "no regression",
	       alpha, thr);
	gp_job_free(&a);
	gp_job_free(&b);
	return fail && regress ? 3 : fail && apart ? 4 : 0;
}

int main(int argc, char **argv)
{
	static int (*const run[])(int, char **) = {
	    cmd_run,     cmd_report,      gp_cmd_top,    cmd_export,    cmd_diff,
	    cmd_salvage, cmd_capture,     cmd_dump,      cmd_summarize, cmd_settings,
	    cmd_fields,  gp_cmd_findings, gp_cmd_ledger, gp_cmd_prune,  cmd_help};
	_Static_assert(sizeof(run) / sizeof(run[0]) == NCOMMANDS, "a function per command");
	if (argc < 2)
		return usage_line();
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf(
		    "gpuprof %s\nCopyright (C) 2026 gpuprof developers\nLicense GPL-2.0-or-later "
		    "<https://www.gnu.org/licenses/old-licenses/gpl-2.0.html>, with exceptions for "
		    "OpenSSL and NVIDIA's CUDA libraries.\nThis is free software: you are free to "
		    "change and redistribute it. There is NO WARRANTY.\n",
		    PACKAGE_VERSION);
		return fflush(stdout) ? 1 : 0;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		help_all(stdout);
		return fflush(stdout) ? 1 : 0;
	}
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(argv[1], commands[i]->name))
			return run[i](argc - 1, argv + 1);
	gp_err("unknown command '%s'", argv[1]);
	return usage_line();
}
