/* Logging helpers: format into a bounded buffer, hand to the sink, keep errno. */
#include "config.h"
#include "log.h"
#include "env.h"
#include "settings.h"

#include <errno.h>
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

/* RFC 3164 to /dev/log, non-blocking: a full or absent log socket drops the line */
static void syslog_sink(int level, const char *msg)
{
	static int fd = -2;
	struct sockaddr_un a = {.sun_family = AF_UNIX, .sun_path = "/dev/log"};
	if (fd == -2)
		fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	char line[1100];
	int pri = 8 /* LOG_USER */ + (level == GP_LOG_ERROR ? 3 : level == GP_LOG_WARN ? 4 : 6);
	int n = snprintf(line, sizeof(line), "<%d>gpuprof[%d]: %s%s (job %s, profiled by the site)",
	                 pri, (int)getpid(), level == GP_LOG_WARN ? "warning: " : "", msg,
	                 getenv("SLURM_JOB_ID") ? getenv("SLURM_JOB_ID") : "?");
	if (n > (int)sizeof(line) - 1)
		n = sizeof(line) - 1;
	if (sendto(fd, line, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&a,
	           sizeof(a)) < 0)
		return;
}

void gp_log_site_mode(void)
{
	const char *site = getenv(GP_ENV_SITE);
	if (site && *site && !log_sink)
		log_sink = syslog_sink;
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
