/* The job report at the end of a step (node 0) and in the epilog, and the AdminComment
 * line that links the job to it, detached from slurmstepd: srun returns, and the node's
 * teardown goes on, as fast as without gpuprof; a report of 10 000 ranks may take its
 * time. The finisher is a grandchild of slurmstepd in a session of its own:
 *
 *   - root, only to wait and to write AdminComment (a field only an administrator may
 *     set); the report itself runs as the job's user (privsep.c), with a deadline
 *     (report_timeout);
 *   - out of the step's cgroup (Slurm removes it when the step ends: a process left in
 *     it would keep it, and the job's, for as long as it runs), into the place
 *     slurmstepd itself waits in while a step ends (cgroup v2: the scope's "system"
 *     cgroup) or the hierarchy's root (v1);
 *   - one per job at a time: a lock in the root-owned state directory, so the step-end
 *     report and the epilog's (after salvage) never write the same files together; the
 *     later one waits and then reports what is there by then;
 *   - on a budget, since it runs outside every job's cgroup after the job has ended, on a
 *     node the next job may already use (6 reports in 2 min took ~2 cores): one report
 *     per node at a time (a second lock, waited for up to report_timeout), nice 19, two
 *     reading threads, and report_timeout seconds of CPU (RLIMIT_CPU: one core over its
 *     deadline); the user it runs as can lower none of them;
 *   - its messages go to syslog (slurmstepd's log is gone when it ends).
 *
 * AdminComment: slurmctld takes it while the job runs; once the job has ended, its
 * accounting record does, after slurmctld's completion has reached it (slurmapi.c). */
#include "config.h"
#include "plugin.h"
#include "acctrec.h"
#include "cgroup.h"
#include "env.h"
#include "log.h"
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

static int log_fd = -1;   /* state_dir/finish.log */
static int state_fd = -1; /* state_dir, once seen to be root's alone */

/* syslog, and a line in state_dir/finish.log (root's; a node without a syslog daemon
 * still keeps them; cut back to nothing past 1 MiB) */
static void finish_sink(int level, const char *msg)
{
	static const int prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};
	syslog(prio[level >= 0 && level <= GP_LOG_DEBUG ? level : GP_LOG_DEBUG], "%s", msg);
	if (log_fd >= 0) {
		char line[1200], when[32];
		struct timespec ts;
		struct tm tm;
		clock_gettime(CLOCK_REALTIME, &ts);
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", localtime_r(&ts.tv_sec, &tm));
		int n = snprintf(line, sizeof(line), "%s.%03ld [%d] %s\n", when,
		                 ts.tv_nsec / 1000000, (int)getpid(), msg);
		struct stat st;
		bool full = fstat(log_fd, &st) == 0 && st.st_size > (1 << 20);
		if ((!full || ftruncate(log_fd, 0) == 0) && n > 0)
			(void)!write(log_fd, line,
			             (size_t)n < sizeof(line) ? (size_t)n : sizeof(line));
	}
}

/* The state directory, for the log and the job's lock, only where it is root's and
 * nobody else can write it (plugstack.conf names it; a directory a user could write
 * would let them point root's log or lock at a file of their choosing). Otherwise the
 * finisher logs to syslog alone and reports unlocked. */
static void open_state_dir(const char *state_dir)
{
	struct stat st;
	int fd = open(state_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fstat(fd, &st) < 0 || st.st_uid != 0 || (st.st_mode & 022)) {
		close(fd);
		return;
	}
	state_fd = fd;
	log_fd =
	    openat(fd, "finish.log", O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
}

/* A lock in the state directory (when open_state_dir found it root's alone): held until
 * this process ends. Waits up to wait_s for another finisher. */
static int lock_named(const char *name, int wait_s)
{
	if (state_fd < 0)
		return -1;
	int fd = openat(state_fd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	for (int i = 0; i <= wait_s * 10; i++) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return fd;
		struct timespec ts = {0, 100 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	close(fd);
	return -1;
}

/* The job's lock: the step end's report and the epilog's never together. */
static int lock_job(uint32_t job, int wait_s)
{
	char name[64];
	snprintf(name, sizeof(name), "report-%u.lock", job);
	return lock_named(name, wait_s);
}

/* The node's: one detached report at a time, whichever job (named so the epilog's sweep
 * of "JOB.*" records does not take it). Past wait_s it reports anyway, on its budget. */
static int lock_node(int wait_s)
{
	return lock_named("reports-node.lock", wait_s);
}

/* The report's output, as the user ran it: the summary line, then the accounting record.
 * The record is parsed and written anew here, root-side (its text is the user's process's
 * output: only a well-formed record of known keys goes into SystemComment, with root's own
 * job directory); its figures are the report's, computed as the user from the user's rank
 * files. summary keeps its first line. */
static void take_record(uint32_t job, const char *jobdir, char *summary, char *record, size_t len)
{
	char *nl = strchr(summary, '\n');
	const char *rec = nl ? nl + 1 : "";
	size_t n = strcspn(rec, "\n");
	gp_acct_rec_t r;
	char why[160];
	if (n && gp_rec_parse(rec, n, &r, why, sizeof(why)) == 0) {
		/* the job directory is root's word, never the user's process's: readers of the
		 * record (gpuprof report JOBID) trust its dir= because only root writes it */
		snprintf(r.dir, sizeof(r.dir), "%s", jobdir);
		if (gp_rec_format(&r, record, len) < 0)
			record[0] = '\0';
	} else if (n) {
		gp_warn("job %u: the report's accounting record is refused: %s", job, why);
	}
	if (nl)
		*nl = '\0';
}

static void finisher(const gp_plugin_t *p, uint32_t job, const gp_creds_t *who, const char *jobdir,
                     bool ended)
{
	const gp_config_t *cfg = &p->cfg;
	int timeout = (int)cfg->report_timeout;
	char summary[ADMIN_COMMENT_MAX + GP_REC_MAX + 4] = "", record[GP_REC_MAX + 1] = "";
	char *argv[] = {cfg->cli_path,   "report",       "--quiet", "--summary-line",
	                "--record-line", (char *)jobdir, NULL};
	int lock = lock_job(job, timeout);
	gp_debug("job %u: %s, reporting %s", job, lock < 0 ? "no lock" : "lock held", jobdir);
	if (lock < 0 && state_fd < 0)
		gp_warn("job %u: state directory %s missing or not root's alone; reporting "
		        "unlocked",
		        job, p->state_dir);
	else if (lock < 0)
		gp_warn("job %u: another report of the job still runs; reporting anyway", job);
	int node_lock = lock_node(timeout);
	if (node_lock < 0 && state_fd >= 0)
		gp_warn("job %u: another job's report still runs on this node after %d s; "
		        "reporting anyway",
		        job, timeout);
	/* the budget the report inherits (this process waits, it uses next to nothing) */
	if (gp_child_budget(timeout) < 0)
		gp_warn("job %u: no CPU limit for the report: %s", job, strerror(errno));
	if (!getenv(GP_ENV_REPORT_THREADS))
		setenv(GP_ENV_REPORT_THREADS, "2", 1);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int rc = gp_exec_as_user(who, argv, summary, sizeof(summary), timeout);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (node_lock >= 0) /* the node's next report may start; AdminComment is no work */
		close(node_lock);
	if (rc != 0) {
		char why[64];
		if (t1.tv_sec - t0.tv_sec >= timeout)
			snprintf(why, sizeof(why), "not done in %d s (report_timeout)", timeout);
		else if (rc > 0)
			snprintf(why, sizeof(why), "exit status %d", rc);
		else
			snprintf(why, sizeof(why), "killed (its CPU budget is %d s)", timeout);
		gp_warn("job %u: the report of %s failed: %s", job, jobdir, why);
		/* the epilog's attempt is the last: sacct then says there is none, and how to
		 * make it (the step end's failure is left for the epilog to mend) */
		if (ended)
			snprintf(summary, sizeof(summary), "gpuprof: no report (%s) dir=%.400s",
			         why, jobdir);
		else
			summary[0] = '\0';
	} else {
		take_record(job, jobdir, summary, record, sizeof(record));
		gp_info("job %u: report of %s done (%s)", job, jobdir,
		        ended ? "epilog" : "step end");
	}
	bool line = summary[0] && cfg->admin_comment && !strncmp(summary, "gpuprof:", 8);
	if (line || record[0]) {
		rc = gp_set_job_comments(job, line ? summary : NULL, record[0] ? record : NULL,
		                         ended, 300);
		if (rc == 1)
			gp_info("job %u: AdminComment written; the record at the job's end", job);
		else if (rc != 0)
			gp_warn("job %u: AdminComment/SystemComment not written (%d)", job, rc);
		else
			gp_info("job %u: %s written", job,
			        line && record[0] ? "AdminComment and SystemComment"
			        : line            ? "AdminComment"
			                          : "SystemComment");
	}
	if (lock >= 0) {
		char name[64];
		snprintf(name, sizeof(name), "report-%u.lock", job);
		if (ended)
			unlinkat(state_fd, name, 0); /* the epilog's is the job's last */
		close(lock);
	}
}

void gp_finish_detached(const gp_plugin_t *p, uint32_t job, const gp_creds_t *who,
                        const char *jobdir, bool ended)
{
	pid_t pid = fork();
	if (pid < 0) {
		gp_err_errno("job %u: fork for the report", job);
		return;
	}
	if (pid > 0) { /* slurmstepd: only until the first child has forked again */
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		return;
	}
	/* a session of its own, then the grandchild goes on, orphaned */
	setsid();
	pid_t g = fork();
	if (g != 0)
		_exit(0);
	/* nothing of slurmstepd's: signals as a new process has them, no descriptor of its
	 * open (the log, the job's sockets), /dev/null for the standard ones */
	gp_child_reset(GP_CHILD_SIGNALS | GP_CHILD_STDIO, -1);
	if (chdir("/") < 0)
		_exit(0);
	umask(077);
	openlog("gpuprof", LOG_PID, LOG_DAEMON);
	open_state_dir(p->state_dir);
	gp_log_set_sink(finish_sink);
	gp_log_set_level(GP_LOG_DEBUG);
	/* out of the step's cgroup, which Slurm removes (killing what is in it) */
	if (gp_cgroup_leave_jobs("/proc/self/cgroup", "/sys/fs/cgroup", getpid()) < 0)
		gp_debug("job %u: /proc/self/cgroup unreadable; the report stays in the step's "
		         "cgroup",
		         job);
	finisher(p, job, who, jobdir, ended);
	_exit(0);
}
