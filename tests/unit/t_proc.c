/* The budget of work done after a job (common/proc.c, gp_child_budget; the detached
 * report, spank/finish.c): nice 19 and a CPU limit that stops a report that spins, in
 * what it forks and execs too. */
#include "config.h"
#include "proc.h"
#include "tap.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
	int p[2];
	if (pipe(p) < 0)
		return 1;
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		int rc = gp_child_budget(1);
		/* what an exec'd report inherits: the child of the budgeted process */
		pid_t g = fork();
		if (g == 0) {
			errno = 0;
			int nice = getpriority(PRIO_PROCESS, 0);
			struct rlimit rl;
			getrlimit(RLIMIT_CPU, &rl);
			int v[3] = {rc, nice, (int)rl.rlim_cur};
			(void)!write(p[1], v, sizeof(v));
			for (volatile unsigned long i = 0;; i++) /* a report that never ends */
				;
		}
		int st = 0;
		waitpid(g, &st, 0);
		_exit(WIFSIGNALED(st) ? WTERMSIG(st) : 100 + WEXITSTATUS(st));
	}
	close(p[1]);
	int v[3] = {-9, -9, -9};
	ssize_t n = read(p[0], v, sizeof(v));
	int st = 0;
	waitpid(pid, &st, 0);
	struct rusage rc;
	getrusage(RUSAGE_CHILDREN, &rc);
	double ccpu = rc.ru_utime.tv_sec + rc.ru_utime.tv_usec / 1e6 + rc.ru_stime.tv_sec +
	              rc.ru_stime.tv_usec / 1e6;
	ok(n == (ssize_t)sizeof(v) && v[0] == 0, "the budget is set (%d)", v[0]);
	ok(v[1] == 19, "what runs under it has nice 19 (%d)", v[1]);
	ok(v[2] == 1, "and a CPU limit of the seconds given (%d s)", v[2]);
	ok(WIFEXITED(st) && WEXITSTATUS(st) == SIGXCPU,
	   "a report that spins is stopped by SIGXCPU (status %d)",
	   WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	ok(ccpu > 0.8 && ccpu < 3.0, "after about its budget of CPU (%.2f s)", ccpu);
	/* slurmstepd told by its name: not this test, nor a process that is not there */
	ok(!gp_proc_is_slurmstepd(getpid()) && !gp_proc_is_slurmstepd(0x7ffffff0),
	   "gp_proc_is_slurmstepd: neither this process nor a missing one is slurmstepd");
	int named[2], go[2];
	pid = -1;
	if (pipe(named) == 0 && pipe(go) == 0 && (pid = fork()) == 0) {
		prctl(PR_SET_NAME, "slurmstepd");
		close(go[1]); /* EOF on go once the test closes its end */
		char c = 1;
		if (write(named[1], &c, 1) != 1 || read(go[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	char c;
	bool is = pid > 0 && read(named[0], &c, 1) == 1 && gp_proc_is_slurmstepd(pid);
	bool below = pid > 0 && gp_proc_descends_from(pid, getpid()) &&
	             gp_proc_descends_from(pid, pid) && gp_proc_descends_from(getpid(), getppid());
	bool above = pid > 0 && (gp_proc_descends_from(getpid(), pid) ||
	                         gp_proc_descends_from(getppid(), getpid()));
	if (pid > 0) {
		close(go[1]);
		waitpid(pid, &st, 0);
	}
	ok(is, "... and a process named slurmstepd is");
	ok(below, "gp_proc_descends_from: a child of ours, and we of our parent");
	ok(!above, "... and not the other way round");
	/* the slurmstepd above a process: its grandparent here (a batch script's gpuprof run) */
	int res[2];
	pid_t found = -1;
	if (pipe(res) == 0 && (pid = fork()) == 0) {
		prctl(PR_SET_NAME, "slurmstepd");
		pid_t g = fork();
		if (g == 0) {
			pid_t s = gp_proc_slurmstepd_above();
			_exit(write(res[1], &s, sizeof(s)) == sizeof(s) ? 0 : 1);
		}
		waitpid(g, NULL, 0);
		_exit(0);
	}
	if (pid > 0) {
		if (read(res[0], &found, sizeof(found)) != sizeof(found))
			found = -1;
		waitpid(pid, &st, 0);
	}
	ok(found == pid, "gp_proc_slurmstepd_above: the one above a process's parent (%d, %d)",
	   (int)found, (int)pid);
	return done_testing();
}
