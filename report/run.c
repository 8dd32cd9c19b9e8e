/* gpuprof run outside Slurm (run.h): the run's own directory, the agent as a child whose
 * end we wait for, signals passed on, the program's status passed on. */
#include "config.h"
#include "log.h"
#include "run.h"
#include "proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static bool set(const char *var)
{
	const char *v = getenv(var);
	return v && *v;
}

bool gp_run_alone(void)
{
	/* a restart count or a rank belongs with the job's other attempts and ranks, in the
	 * job's directory (a requeue adds step<S>.attemptN beside the first attempt); a
	 * parent that is slurmstepd makes us a task of a step, whatever the environment says */
	return !set("SLURM_JOB_ID") && !set("SLURM_STEP_ID") && !set("SLURM_PROCID") &&
	       !set("SLURM_RESTART_COUNT") && !gp_proc_is_slurmstepd(getppid());
}

/* what gpuprof writes into a job directory: the report's files and step directories */
static bool run_file(const char *name)
{
	return !strcmp(name, "report.txt") || !strcmp(name, "report.json") ||
	       !strcmp(name, "job.json");
}

static bool step_dir(const char *name)
{
	return !strncmp(name, "step", 4) && name[4];
}

bool gp_run_dir_used(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	bool used = false;
	while (d && !used && (de = readdir(d)))
		used = run_file(de->d_name) || step_dir(de->d_name);
	if (d)
		closedir(d);
	return used;
}

/* the earlier run's files in a step directory: rank and launcher files, their summaries
 * and PyTorch snapshots, node summaries, writers' leftovers; nothing else of the user's */
static void clear_step(int dfd, const char *name)
{
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	struct dirent *de;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d))) {
		const char *n = de->d_name[0] == '.' ? de->d_name + 1 : de->d_name;
		if (!strncmp(n, "rank", 4) || !strncmp(n, "launcher", 8) || !strncmp(n, "node", 4))
			unlinkat(dirfd(d), de->d_name, 0); /* a link is removed, not followed */
	}
	closedir(d);
	unlinkat(dfd, name, AT_REMOVEDIR); /* left when something else is in it */
}

static int clear_run(const char *dir)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -1;
	int fd = dup(dfd);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (run_file(de->d_name))
			unlinkat(dfd, de->d_name, 0);
		else if (step_dir(de->d_name))
			clear_step(dfd, de->d_name);
	}
	if (d)
		closedir(d);
	else if (fd >= 0)
		close(fd);
	close(dfd);
	return 0;
}

int gp_run_pick_dir(char *dir, size_t len, bool force)
{
	struct stat st;
	if (!gp_run_dir_used(dir))
		return 0;
	if (force)
		return clear_run(dir);
	char base[4096];
	if (snprintf(base, sizeof(base), "%s", dir) >= (int)sizeof(base))
		return errno = ENAMETOOLONG, -1;
	for (int n = 1; n < 1000; n++) {
		if (snprintf(dir, len, "%s.%d", base, n) >= (int)len)
			return errno = ENAMETOOLONG, -1;
		/* lstat: a dangling link under the name is taken too */
		if (lstat(dir, &st) < 0 && errno == ENOENT)
			return 0;
		if (S_ISDIR(st.st_mode) && !gp_run_dir_used(dir))
			return 0;
	}
	snprintf(dir, len, "%s", base);
	return errno = EEXIST, -1;
}

/* the signals a person or a script sends to stop or poke a program */
static const int fwd_signals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM};
#define NFWD (sizeof(fwd_signals) / sizeof(fwd_signals[0]))
static volatile pid_t child_pid;
static pid_t stepd;  /* the slurmstepd we run under, 0 outside Slurm */
static bool in_step; /* SLURM_JOB_ID: a sender outside our PID namespace (pid 0, a
                      * container's) is slurmstepd signalling the whole step */

static void pass_on(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	/* the terminal's signals (Ctrl-C, Ctrl-\, hang-up) went to the whole foreground
	 * process group, the agent and the program included: passing them on would deliver
	 * them twice. So did a signal the program (or what it started: the agent's
	 * descendants) sent to its process group, which holds us: the agent does not forward
	 * it (agent.c, reached_program), and neither do we; and slurmstepd's, which reach
	 * every process of the step (a batch script's or an srun's gpuprof run) */
	if (si->si_code == SI_KERNEL || child_pid <= 0)
		return;
	int e = errno;
	if (si->si_code != SI_USER || getpgid(child_pid) != getpgrp() ||
	    !(gp_proc_descends_from(si->si_pid, child_pid) || (stepd && si->si_pid == stepd) ||
	      (!si->si_pid && in_step)))
		kill(child_pid, sig);
	errno = e;
}

/* The agent, the program and gpuprof run stay in one process group, the terminal's job:
 * Ctrl-C and Ctrl-Z reach all of it (a driver script above us too), and a killpg of the
 * job takes the program's own children with it. A shell's signal to that group
 * (kill %1) therefore reaches the program directly and again through the agent and
 * through us: doc/reliability.md, "Left open", says why that stays. */
int gp_run_supervise(char **argv)
{
	sigset_t fwd, old;
	struct sigaction sa = {.sa_sigaction = pass_on, .sa_flags = SA_SIGINFO | SA_RESTART},
	                 prev[NFWD];
	sigemptyset(&fwd);
	for (size_t i = 0; i < NFWD; i++)
		sigaddset(&fwd, fwd_signals[i]);
	stepd = gp_proc_slurmstepd_above();
	in_step = getenv("SLURM_JOB_ID") && *getenv("SLURM_JOB_ID");
	sigprocmask(SIG_BLOCK, &fwd, &old); /* none lost, none acted on before we are ready */
	pid_t parent = getpid(), pid = fork();
	if (pid < 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		return -1;
	}
	if (pid == 0) {
		/* killed with us: `kill -9` of gpuprof run ends the run as it did when gpuprof
		 * run was the agent itself */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		sigprocmask(SIG_SETMASK, &old, NULL);
		execv(argv[0], argv);
		gp_err("cannot run %s: %s; running the program unprofiled", argv[0],
		       strerror(errno));
		execvp(argv[2], argv + 2); /* argv: AGENT -- PROGRAM ARGS */
		gp_err("%s: %s", argv[2], strerror(errno));
		_exit(127);
	}
	child_pid = pid;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < NFWD; i++)
		sigaction(fwd_signals[i], &sa, &prev[i]);
	sigprocmask(SIG_SETMASK, &old, NULL);
	int st = 0;
	pid_t w;
	while ((w = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
		;
	/* from here on a signal is for us: Ctrl-C stops the report */
	sigprocmask(SIG_BLOCK, &fwd, NULL);
	child_pid = 0;
	for (size_t i = 0; i < NFWD; i++)
		sigaction(fwd_signals[i], &prev[i], NULL);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return w == pid ? st : -1;
}

void gp_run_exit_as(int status)
{
	fflush(NULL);
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		/* the program's core (if any) is dumped: not one of ours beside it */
		struct rlimit no = {0, 0};
		setrlimit(RLIMIT_CORE, &no);
		struct sigaction sa = {.sa_handler = SIG_DFL};
		sigaction(sig, &sa, NULL);
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, sig);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		raise(sig);
		_exit(128 + sig);
	}
	exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}
