/* Logging helpers: format into a bounded buffer, hand to the sink, keep errno. */
#include "config.h"
#include "log.h"
#include "modes.h"
#include "env.h"
#include "settings.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static gp_log_sink_fn log_sink;
static int log_level = -1;

void gp_log_set_sink(gp_log_sink_fn fn)
{
	log_sink = fn;
}

void gp_log_set_level(int level)
{
	log_level = level;
}

int gp_log_level(void)
{
	if (log_level < 0) {
		log_level = gp_setting_bool(GP_ENV_DEBUG) ? GP_LOG_DEBUG : GP_LOG_INFO;
	}
	return log_level;
}

static void stderr_sink(int level, const char *msg)
{
	char line[1100];
	int n = snprintf(line, sizeof(line), "gpuprof: %s%s\n",
	                 level == GP_LOG_WARN ? "warning: " : "", msg);
	if (n > (int)sizeof(line) - 1)
		n = sizeof(line) - 1;
	/* One write() so lines from several ranks do not interleave. */
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		return;
}

/* The log socket, made once however many threads log at once (a second one made in a race
 * is closed, never one in use); -1 where none can be had (for good where no socket can be
 * made; a stream whose connect failed is tried again at the next line). */
static int log_socket(_Atomic int *slot, int type)
{
	int fd = atomic_load(slot);
	if (fd != -2)
		return fd;
	int nfd = socket(AF_UNIX, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (nfd >= 0 && type == SOCK_STREAM) {
		struct sockaddr_un a = {.sun_family = AF_UNIX, .sun_path = "/dev/log"};
		if (connect(nfd, (struct sockaddr *)&a, sizeof(a)) < 0) { /* never waited for */
			close(nfd); /* a full backlog (EAGAIN): the next line tries again */
			return -1;
		}
	}
	int expect = -2;
	if (!atomic_compare_exchange_strong(slot, &expect, nfd)) {
		if (nfd >= 0)
			close(nfd);
		return expect;
	}
	return nfd;
}

/* RFC 3164 to /dev/log, non-blocking: a full or absent log socket drops the line. A
 * datagram socket, as syslog(3) tries first; where /dev/log is a stream (syslog-ng's
 * unix-stream()), a connected stream, each line ended by a newline. A line the stream took
 * only part of leaves it for good: what followed would be read as that line's rest. */
static void syslog_sink(int level, const char *msg)
{
	static _Atomic int dgram = -2, stream = -2;
	static atomic_bool stream_broken;
	struct sockaddr_un a = {.sun_family = AF_UNIX, .sun_path = "/dev/log"};
	char line[1100];
	int pri = 8 /* LOG_USER */ + (level == GP_LOG_ERROR ? 3 : level == GP_LOG_WARN ? 4 : 6);
	int n =
	    snprintf(line, sizeof(line) - 1, "<%d>gpuprof[%d]: %s%s (job %s, profiled by the site)",
	             pri, (int)getpid(), level == GP_LOG_WARN ? "warning: " : "", msg,
	             getenv("SLURM_JOB_ID") ? getenv("SLURM_JOB_ID") : "?");
	if (n < 0)
		return;
	if (n > (int)sizeof(line) - 2)
		n = sizeof(line) - 2;
	int fd = log_socket(&dgram, SOCK_DGRAM);
	if (fd >= 0 && sendto(fd, line, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL,
	                      (struct sockaddr *)&a, sizeof(a)) >= 0)
		return;
	if ((fd >= 0 && errno != EPROTOTYPE) || atomic_load(&stream_broken))
		return;
	if ((fd = log_socket(&stream, SOCK_STREAM)) < 0)
		return;
	line[n++] = '\n';
	ssize_t w = send(fd, line, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (w >= 0 && w < n)
		atomic_store(&stream_broken, true);
}

void gp_log_site_mode(void)
{
	const char *site = getenv(GP_ENV_SITE);
	if (site && *site && !log_sink)
		log_sink = syslog_sink;
}

/* What no terminal or log reader shows raw made '?' in place (a C0 control but newline
 * and tab, DEL, C1, a bidirectional control, a byte that is not UTF-8, one for each
 * character): a message quotes names the user wrote (a job id, a file name, a rank file's
 * header), and one with "\e]0;...\a\e[2J" cleared the screen of the admin reading it. */
void gp_log_shown(char *s)
{
	s[gp_shown(s, strlen(s), "\n\t")] = '\0';
}

void gp_vlog(int level, const char *fmt, va_list ap)
{
	int saved = errno;
	char msg[1024];
	if (level > gp_log_level()) {
		errno = saved;
		return;
	}
	vsnprintf(msg, sizeof(msg), fmt, ap);
	gp_log_shown(msg);
	(log_sink ? log_sink : stderr_sink)(level, msg);
	errno = saved;
}

int gp_err(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	gp_vlog(GP_LOG_ERROR, fmt, ap);
	va_end(ap);
	return -1;
}

int gp_err_errno(const char *fmt, ...)
{
	int saved = errno;
	char msg[900];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	gp_err("%s: %s", msg, strerror(saved));
	errno = saved;
	return -1;
}

int gp_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	gp_vlog(GP_LOG_WARN, fmt, ap);
	va_end(ap);
	return -1;
}

void gp_info(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	gp_vlog(GP_LOG_INFO, fmt, ap);
	va_end(ap);
}

void gp_debug(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	gp_vlog(GP_LOG_DEBUG, fmt, ap);
	va_end(ap);
}
