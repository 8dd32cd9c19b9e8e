/* Logging that never exits: every helper returns -1 so callers can write
 * `return gp_err("...")`. Messages start with "gpuprof: ". Inside slurmstepd the
 * plugin redirects them to Slurm's log through gp_log_set_sink(). */
#ifndef GP_LOG_H
#define GP_LOG_H

#include <stdarg.h>

enum gp_log_level {
	GP_LOG_ERROR = 0,
	GP_LOG_WARN = 1,
	GP_LOG_INFO = 2,
	GP_LOG_DEBUG = 3,
};

typedef void (*gp_log_sink_fn)(int level, const char *msg);

/* Replace the default sink (stderr). NULL restores it. Not thread-safe: call once at start. */
void gp_log_set_sink(gp_log_sink_fn fn);
/* In a task the site profiles without its user asking (GPUPROF_SITE set: profile_all_jobs),
 * the agent's and the injected library's messages go to the node's syslog (/dev/log, a
 * datagram that is dropped rather than waited for), never onto the job's stderr: a job
 * that did not ask gets nothing of gpuprof on its output (doc/admin.md). No-op otherwise. */
void gp_log_site_mode(void);
/* Messages above this level are dropped; GPUPROF_DEBUG=1 raises it to GP_LOG_DEBUG. */
void gp_log_set_level(int level);
int gp_log_level(void);

int gp_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int gp_err_errno(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int gp_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void gp_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void gp_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* What no terminal or log reader shows raw in s made '?' in place, newlines and tabs kept
 * (gp_shown, the text report's rule; gp_vlog does it to every message: names the user
 * wrote are quoted in them) */
void gp_log_shown(char *s);
void gp_vlog(int level, const char *fmt, va_list ap);

#endif
