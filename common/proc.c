/* A forked child's fresh start (see proc.h). */
#include "config.h"
#include "proc.h"

#include <fcntl.h>
#include <signal.h>
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
