/* LD_PRELOAD for t_cli.sh's prune cases: a child of `gpuprof prune` that stops or hangs, as
 * a user's SIGSTOP to the child that runs as them, or a file system that does not answer,
 * make it. fstatat of an entry named "gp-stop" stops the process (SIGSTOP); of one named
 * "gp-hang" waits for ever. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int fstatat(int dirfd, const char *name, struct stat *st, int flags)
{
	static int (*real)(int, const char *, struct stat *, int);
	if (!real)
		real = (int (*)(int, const char *, struct stat *, int))dlsym(RTLD_NEXT, "fstatat");
	if (!strcmp(name, "gp-stop"))
		raise(SIGSTOP);
	while (!strcmp(name, "gp-hang"))
		pause();
	return real(dirfd, name, st, flags);
}
