/* LD_PRELOAD diagnostic for bench/gpu-abort.sh: on SIGABRT or SIGSEGV, the native stack of the
 * thread that died, its name and the time since the process began, on stderr (glibc's
 * backtrace, loaded at start-up so the handler allocates nothing), then the default action.
 * Never linked into gpuprof. */
#define _GNU_SOURCE
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static struct timespec t0;

static void on_signal(int sig)
{
	void *pcs[64];
	char name[32] = "", line[160];
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	prctl(PR_GET_NAME, name, 0, 0, 0);
	int n = snprintf(line, sizeof(line), "ABORT_BT signal %d thread '%s' tid %d at %.3f s\n",
	                 sig, name, gettid(),
	                 (double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9);
	if (write(2, line, (size_t)n) < 0)
		return;
	int k = backtrace(pcs, 64);
	backtrace_symbols_fd(pcs, k, 2);
	signal(sig, SIG_DFL);
	raise(sig);
}

__attribute__((constructor)) static void init(void)
{
	void *pcs[4];
	clock_gettime(CLOCK_MONOTONIC, &t0);
	backtrace(pcs, 4); /* libgcc_s loaded now, not in the handler */
	signal(SIGABRT, on_signal);
	signal(SIGSEGV, on_signal);
}
