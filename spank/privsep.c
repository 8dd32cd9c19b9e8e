/* Least privilege for root-side code: anything that touches the job's files runs in a
 * forked child that has dropped to the job's uid/gid first (and proved it cannot get
 * back). The parent only waits, with a deadline, so a stuck child never holds up
 * slurmstepd or the epilog. */
#include "config.h"
#include "plugin.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int drop_to(uid_t uid, gid_t gid)
{
	if (getuid() == 0) {
		if (setgroups(1, &gid) < 0 || setgid(gid) < 0 || setuid(uid) < 0)
			return -1;
		if (uid != 0 && setuid(0) == 0)
			return -1; /* privileges not really dropped */
	} else if (getuid() != uid) {
		return -1;
	}
	return 0;
}

/* Wait for pid until deadline (seconds), reading its stdout from fd into out. */
static int wait_child(pid_t pid, int fd, char *out, size_t outlen, int timeout_s)
{
	struct timespec t0;
	size_t got = 0;
	int status;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct timespec now;
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR)
			return -1;
		if (fd >= 0) {
			struct pollfd pfd = {.fd = fd, .events = POLLIN};
			if (poll(&pfd, 1, 20) > 0) {
				char tmp[512];
				ssize_t n = read(fd, tmp, sizeof(tmp));
				if (n > 0 && out && got + 1 < outlen) {
					size_t k = (size_t)n < outlen - 1 - got ? (size_t)n
					                                        : outlen - 1 - got;
					memcpy(out + got, tmp, k);
					got += k;
				} else if (n == 0) {
					close(fd);
					fd = -1;
				}
			}
		} else {
			struct timespec ts = {0, 20 * 1000 * 1000};
			nanosleep(&ts, NULL);
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - t0.tv_sec > timeout_s) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			if (fd >= 0)
				close(fd);
			return gp_err("helper pid %d killed after %d s", (int)pid, timeout_s);
		}
	}
	/* the child is gone: whatever it wrote is still in the pipe */
	while (fd >= 0) {
		char tmp[512];
		ssize_t n = read(fd, tmp, sizeof(tmp));
		if (n <= 0)
			break;
		if (out && got + 1 < outlen) {
			size_t k = (size_t)n < outlen - 1 - got ? (size_t)n : outlen - 1 - got;
			memcpy(out + got, tmp, k);
			got += k;
		}
	}
	if (fd >= 0)
		close(fd);
	if (out && outlen)
		out[got] = '\0';
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int gp_run_as_user(uid_t uid, gid_t gid, int (*fn)(void *), void *arg, int timeout_s)
{
	pid_t pid = fork();
	if (pid < 0)
		return gp_err_errno("fork");
	if (pid == 0) {
		if (drop_to(uid, gid) < 0)
			_exit(125);
		_exit(fn(arg) == 0 ? 0 : 1);
	}
	return wait_child(pid, -1, NULL, 0, timeout_s);
}

static int exec_common(bool drop, uid_t uid, gid_t gid, char *const argv[], char *out,
                       size_t outlen, int timeout_s)
{
	int p[2];
	pid_t pid;
	if (pipe2(p, O_CLOEXEC) < 0)
		return gp_err_errno("pipe");
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return gp_err_errno("fork");
	}
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDWR);
		if (drop && drop_to(uid, gid) < 0)
			_exit(125);
		if (devnull >= 0)
			dup2(devnull, STDIN_FILENO);
		dup2(p[1], STDOUT_FILENO);
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	return wait_child(pid, p[0], out, outlen, timeout_s);
}

int gp_exec_as_user(uid_t uid, gid_t gid, char *const argv[], char *out, size_t outlen,
                    int timeout_s)
{
	return exec_common(true, uid, gid, argv, out, outlen, timeout_s);
}

int gp_exec_capture(char *const argv[], char *out, size_t outlen, int timeout_s)
{
	return exec_common(false, 0, 0, argv, out, outlen, timeout_s);
}
