/* Least privilege for root-side code: anything that touches the job's files runs in a
 * forked child that has dropped to the job's uid/gid first (and proved it cannot get
 * back). The parent only waits, with a deadline, so a stuck child never holds up
 * slurmstepd or the epilog. */
#include "config.h"
#include "plugin.h"
#include "log.h"
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Drop to the job's uid and gid with its supplementary groups (as slurmstepd gave them,
 * else from the user database), and prove there is no way back. */
static int drop_to(const gp_creds_t *who)
{
	uid_t uid = who->uid;
	gid_t gid = who->gid;
	if (getuid() == 0) {
		int rc;
		if (who->ngroups >= 0 && who->groups) {
			rc = setgroups((size_t)who->ngroups, who->groups);
		} else {
			struct passwd *pw = getpwuid(uid);
			rc = pw ? initgroups(pw->pw_name, gid) : setgroups(1, &gid);
		}
		if (rc < 0 || setgid(gid) < 0 || setuid(uid) < 0)
			return -1;
		if (uid != 0 && setuid(0) == 0)
			return -1; /* privileges not really dropped */
	} else if (getuid() != uid) {
		return -1;
	}
	return 0;
}

/* In a child about to run code as the user: nothing of root's stays open (a root-only
 * file slurmstepd had open was readable by the helper), signals as a new process has
 * them (slurmstepd's mask would outlive an exec), and the helper leads its own process
 * group so a deadline kills its descendants too. */
static void child_hygiene(int keep)
{
	gp_child_reset(GP_CHILD_PGROUP | GP_CHILD_SIGNALS, keep);
}

static void read_some(int fd, char *out, size_t outlen, size_t *got)
{
	char tmp[512];
	ssize_t n;
	while ((n = read(fd, tmp, sizeof(tmp))) > 0) {
		if (out && *got + 1 < outlen) {
			size_t k = (size_t)n < outlen - 1 - *got ? (size_t)n : outlen - 1 - *got;
			memcpy(out + *got, tmp, k);
			*got += k;
		}
	}
}

/* Wait for pid until deadline (seconds), reading its stdout from fd (non-blocking) into
 * out. The pipe is read only while the deadline holds: a descendant that keeps the
 * write end open (a daemon the helper started) can no longer hold us past it. */
static int wait_child(pid_t pid, int fd, char *out, size_t outlen, int timeout_s)
{
	struct timespec t0, t_exit = {0, 0};
	size_t got = 0;
	int status = 0;
	bool exited = false;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (fd >= 0)
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	for (;;) {
		struct timespec now;
		if (!exited) {
			pid_t w = waitpid(pid, &status, WNOHANG);
			if (w == pid)
				exited = true;
			else if (w < 0 && errno != EINTR)
				return -1;
		}
		if (fd >= 0) {
			struct pollfd pfd = {.fd = fd, .events = POLLIN};
			if (poll(&pfd, 1, 20) > 0) {
				if (pfd.revents & POLLIN)
					read_some(fd, out, outlen, &got);
				if ((pfd.revents & (POLLHUP | POLLERR)) &&
				    !(pfd.revents & POLLIN)) {
					close(fd);
					fd = -1;
				}
			}
		} else if (!exited) {
			struct timespec ts = {0, 20 * 1000 * 1000};
			nanosleep(&ts, NULL);
		}
		if (exited && fd < 0)
			break;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (exited && !t_exit.tv_sec)
			t_exit = now;
		if (exited && now.tv_sec - t_exit.tv_sec >= 2) {
			/* the helper is done; a descendant of its holds the pipe: a second
			 * more is all it gets, then its process group goes */
			kill(-pid, SIGKILL);
			close(fd);
			break;
		}
		if (now.tv_sec - t0.tv_sec > timeout_s) {
			kill(-pid, SIGKILL); /* the helper's process group: descendants too */
			kill(pid, SIGKILL);
			if (!exited)
				waitpid(pid, &status, 0);
			if (fd >= 0)
				close(fd);
			if (exited) /* done in time, only a descendant kept the pipe */
				break;
			return gp_err("helper pid %d killed after %d s", (int)pid, timeout_s);
		}
	}
	if (out && outlen)
		out[got] = '\0';
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int gp_run_as_user(const gp_creds_t *who, int (*fn)(void *), void *arg, int timeout_s)
{
	pid_t pid = fork();
	if (pid < 0)
		return gp_err_errno("fork");
	if (pid == 0) {
		child_hygiene(-1);
		if (drop_to(who) < 0)
			_exit(125);
		_exit(fn(arg) == 0 ? 0 : 1);
	}
	return wait_child(pid, -1, NULL, 0, timeout_s);
}

int gp_run_isolated(int (*fn)(void *, int), void *arg, char *out, size_t outlen, int timeout_s)
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
		close(p[0]);
		child_hygiene(p[1]);
		_exit(fn(arg, p[1]) == 0 ? 0 : 1);
	}
	close(p[1]);
	return wait_child(pid, p[0], out, outlen, timeout_s);
}

struct dropped_arg {
	const gp_creds_t *who;
	int (*fn)(void *, int);
	void *arg;
};

static int dropped_child(void *arg, int fd)
{
	const struct dropped_arg *a = arg;
	if (drop_to(a->who) < 0)
		_exit(125);
	return a->fn(a->arg, fd);
}

int gp_run_as_user_out(const gp_creds_t *who, int (*fn)(void *, int), void *arg, char *out,
                       size_t outlen, int timeout_s)
{
	struct dropped_arg a = {who, fn, arg};
	return gp_run_isolated(dropped_child, &a, out, outlen, timeout_s);
}

/* The helper programs, run through gp_run_isolated: stdout into the pipe, stdin from
 * /dev/null, dropped to the user where asked, then exec. */
struct exec_arg {
	const gp_creds_t *drop; /* NULL: stay who we are */
	char *const *argv;
};

static int exec_child(void *arg, int fd)
{
	const struct exec_arg *a = arg;
	dup2(fd, STDOUT_FILENO);
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull >= 0)
		dup2(devnull, STDIN_FILENO);
	if (a->drop && drop_to(a->drop) < 0)
		_exit(125);
	execv(a->argv[0], a->argv);
	_exit(127);
}

static int exec_common(const gp_creds_t *drop, char *const argv[], char *out, size_t outlen,
                       int timeout_s)
{
	struct exec_arg a = {drop, argv};
	return gp_run_isolated(exec_child, &a, out, outlen, timeout_s);
}

int gp_exec_as_user(const gp_creds_t *who, char *const argv[], char *out, size_t outlen,
                    int timeout_s)
{
	return exec_common(who, argv, out, outlen, timeout_s);
}

int gp_exec_capture(char *const argv[], char *out, size_t outlen, int timeout_s)
{
	return exec_common(NULL, argv, out, outlen, timeout_s);
}
