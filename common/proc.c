/* A forked child's fresh start, its budget, and whether a process is slurmstepd (see
 * proc.h). */
#include "config.h"
#include "proc.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/resource.h>
#include <unistd.h>

/* close [from, to]; close_range(2) where the kernel has it (5.9), else one by one */
static void close_span(unsigned from, unsigned to)
{
	if (from > to)
		return;
#ifdef SYS_close_range
	if (syscall(SYS_close_range, from, to, 0) == 0)
		return;
#endif
	long max = sysconf(_SC_OPEN_MAX);
	if (max < 0 || max > 65536)
		max = 65536;
	for (long fd = from; fd < max && (unsigned long)fd <= to; fd++)
		close((int)fd);
}

void gp_child_reset(unsigned flags, int keep)
{
	if (flags & GP_CHILD_SESSION)
		setsid();
	else if (flags & GP_CHILD_PGROUP)
		setpgid(0, 0);
	if (flags & GP_CHILD_SIGNALS) {
		struct sigaction dfl = {.sa_handler = SIG_DFL};
		sigemptyset(&dfl.sa_mask);
		for (int s = 1; s < NSIG; s++)
			if (s != SIGKILL && s != SIGSTOP)
				sigaction(s, &dfl, NULL); /* EINVAL for the C library's own: fine */
	}
	if (flags & (GP_CHILD_SIGNALS | GP_CHILD_SIGMASK)) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
	}
	if (flags & GP_CHILD_STDIO) {
		int nul = open("/dev/null", O_RDWR);
		if (nul >= 0) {
			dup2(nul, 0);
			dup2(nul, 1);
			dup2(nul, 2);
			if (nul > 2)
				close(nul);
		}
	}
	if (keep < 3) {
		close_span(3, ~0u);
	} else {
		close_span(3, (unsigned)keep - 1);
		close_span((unsigned)keep + 1, ~0u);
	}
}

int gp_child_budget(int cpu_s)
{
	struct rlimit rl = {(rlim_t)(cpu_s > 0 ? cpu_s : 1), (rlim_t)(cpu_s > 0 ? cpu_s : 1) + 5};
	struct rlimit now;
	/* never above a limit the process already has */
	if (getrlimit(RLIMIT_CPU, &now) == 0 && now.rlim_max != RLIM_INFINITY &&
	    rl.rlim_max > now.rlim_max) {
		rl.rlim_max = now.rlim_max;
		rl.rlim_cur = rl.rlim_cur < rl.rlim_max ? rl.rlim_cur : rl.rlim_max;
	}
	setpriority(PRIO_PROCESS, 0, 19);
	return setrlimit(RLIMIT_CPU, &rl);
}

/* /proc/PID/FILE into buf, NUL-terminated: its length, or -1. No stdio (a signal
 * handler calls it). */
static ssize_t proc_read(pid_t pid, const char *file, char *buf, size_t len)
{
	char path[64] = "/proc/", digits[16];
	size_t n = 6, k = 0;
	for (unsigned v = (unsigned)pid; k == 0 || v; v /= 10)
		digits[k++] = (char)('0' + v % 10);
	while (k)
		path[n++] = digits[--k];
	path[n++] = '/';
	for (; *file && n < sizeof(path) - 1; file++)
		path[n++] = *file;
	path[n] = '\0';
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t r = read(fd, buf, len - 1);
	close(fd);
	buf[r > 0 ? r : 0] = '\0';
	return r;
}

bool gp_proc_is_slurmstepd(pid_t pid)
{
	char comm[32];
	if (pid <= 0 || proc_read(pid, "comm", comm, sizeof(comm)) <= 0)
		return false;
	comm[strcspn(comm, "\n")] = '\0';
	return !strcmp(comm, "slurmstepd");
}

/* The parent of pid, from /proc/PID/stat (comm may hold spaces and parentheses); 0 when
 * it cannot be read. */
static pid_t parent_of(pid_t pid)
{
	char buf[512];
	if (proc_read(pid, "stat", buf, sizeof(buf)) <= 0)
		return 0;
	const char *p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2] || p[3] != ' ' || p[4] < '0' || p[4] > '9')
		return 0;
	pid_t ppid = 0;
	for (p += 4; *p >= '0' && *p <= '9'; p++)
		ppid = ppid * 10 + (*p - '0');
	return ppid;
}

bool gp_proc_descends_from(pid_t pid, pid_t ancestor)
{
	for (int depth = 0; pid > 1 && depth < 64; depth++) {
		if (pid == ancestor)
			return true;
		pid = parent_of(pid);
	}
	return false;
}

pid_t gp_proc_slurmstepd_above(void)
{
	pid_t pid = getppid();
	for (int depth = 0; pid > 1 && depth < 64; depth++, pid = parent_of(pid))
		if (gp_proc_is_slurmstepd(pid))
			return pid;
	return 0;
}
