/* A job directory from a job id, through sacct (jobref.h). */
#include "config.h"
#include "jobref.h"
#include "acctrec.h"
#include "log.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SACCT_TIMEOUT_MS 30000 /* slurmdbd away: sacct's own retries end sooner */

static const char *digits(const char *s)
{
	if (!isdigit((unsigned char)*s))
		return NULL;
	while (isdigit((unsigned char)*s))
		s++;
	return s;
}

bool gp_jobref_is_id(const char *s)
{
	const char *p = digits(s);
	if (p && (*p == '_' || *p == '+'))
		p = digits(p + 1);
	return p && !*p && strlen(s) < 32;
}

int gp_sacct_field(const char *id, const char *field, char *out, size_t len)
{
	int fd[2], rc = -1;
	size_t n = 0;
	if (!gp_jobref_is_id(id) || len < 1 || pipe2(fd, O_CLOEXEC) < 0)
		return -1;
	char *argv[] = {"sacct", "-j",         (char *)id, "-X",          "-n", "-P",
	                "-S",    "2000-01-01", "-o",       (char *)field, NULL};
	pid_t pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		dup2(fd[1], 1);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 2);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	close(fd[1]);
	if (pid < 0) {
		close(fd[0]);
		return -1;
	}
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		long left = SACCT_TIMEOUT_MS -
		            ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
		struct pollfd p = {fd[0], POLLIN, 0};
		if (left <= 0 || (poll(&p, 1, (int)left) < 0 && errno != EINTR)) {
			kill(pid, SIGKILL);
			break;
		}
		char buf[4096];
		ssize_t k = read(fd[0], buf, sizeof(buf));
		if (k < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (k <= 0)
			break;
		size_t take = (size_t)k < len - 1 - n ? (size_t)k : len - 1 - n;
		memcpy(out + n, buf, take);
		n += take;
	}
	out[n] = '\0';
	close(fd[0]);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 127 && !n)
		rc = -2; /* the child's execvp failed */
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		rc = 0;
		for (size_t i = 0; i < n; i++)
			rc += out[i] == '\n';
	}
	return rc;
}

int gp_jobref_admin_dir(const char *comment, char *dir, size_t len)
{
	/* ours is "gpuprof: ... dir=PATH", at the start or after another tool's "; " */
	const char *ours = NULL;
	for (const char *q = comment; (q = strstr(q, "gpuprof:")); q++)
		if (q == comment || (q >= comment + 2 && !strncmp(q - 2, "; ", 2)))
			ours = q;
	const char *d = ours ? strstr(ours, " dir=") : NULL;
	if (!d)
		return -1;
	d += 5;
	/* PATH runs to the end, or to a later tool's "; " where that leaves a directory */
	char path[PATH_MAX];
	struct stat st;
	size_t n = strcspn(d, "\n");
	while (n) {
		if (n < sizeof(path)) {
			memcpy(path, d, n);
			path[n] = '\0';
			if (path[0] == '/' && stat(path, &st) == 0 && S_ISDIR(st.st_mode))
				return snprintf(dir, len, "%s", path) < (int)len ? 0 : -1;
		}
		const char *cut = NULL;
		for (const char *s = d; s + 1 < d + n; s++)
			if (s[0] == ';' && s[1] == ' ')
				cut = s;
		if (!cut)
			break;
		n = (size_t)(cut - d);
	}
	return -1;
}

/* the only line of out, or NULL (none, or several: said in err) */
static const char *one_line(const char *id, char *out, int lines, char *err, size_t errlen)
{
	if (lines < 0) {
		snprintf(err, errlen, "%s is not a directory, and sacct could not look it up", id);
		return NULL;
	}
	if (lines == 0 || !out[0]) {
		snprintf(err, errlen, "%s: no such directory, and sacct knows no job %s", id, id);
		return NULL;
	}
	if (lines > 1) {
		/* an array (1234 with tasks 1234_N) or a heterogeneous job (1234+N): each
		 * allocation may have a directory of its own */
		snprintf(err, errlen,
		         "job %s has %d allocations (an array or heterogeneous job): name one, as "
		         "%s_N or %s+N",
		         id, lines, id, id);
		return NULL;
	}
	out[strcspn(out, "\n")] = '\0';
	return out;
}

/* The directory of job id arg from sacct: 0; 1 sacct knows no such job, 2 there is no
 * sacct (both with err said); -1 with err said. */
static int resolve_id(const char *arg, char *dir, size_t len, char *err, size_t errlen)
{
	struct stat st;
	char out[8192], raw[64], work[PATH_MAX];
	int n = gp_sacct_field(arg, "JobIDRaw", out, sizeof(out));
	const char *l = one_line(arg, out, n, err, errlen);
	if (!l && (n == 0 || (n > 0 && !out[0])))
		return 1;
	if (!l && n == -2)
		return 2;
	if (!l)
		return -1;
	snprintf(raw, sizeof(raw), "%s", l);
	/* the record gpuprof wrote at the job's end names the directory wherever it is
	 * (SystemComment, which only root and SlurmUser write), else its summary line */
	if (gp_sacct_field(arg, "SystemComment", out, sizeof(out)) > 0) {
		const char *at;
		size_t rn;
		gp_acct_rec_t rec;
		char why[160];
		out[strcspn(out, "\n")] = '\0';
		if (gp_rec_find(out, &at, &rn, why, sizeof(why)) == 1 &&
		    gp_rec_parse(at, rn, &rec, why, sizeof(why)) == 0 && strlen(rec.dir) < len) {
			snprintf(dir, len, "%s", rec.dir);
			return 0;
		}
	}
	if (gp_sacct_field(arg, "AdminComment", out, sizeof(out)) > 0) {
		out[strcspn(out, "\n")] = '\0';
		if (gp_jobref_admin_dir(out, dir, len) == 0)
			return 0;
	}
	/* no summary (the job runs, or its report failed): the default template */
	n = gp_sacct_field(arg, "WorkDir", out, sizeof(out));
	if (n > 0 && (l = one_line(arg, out, n, err, errlen))) {
		snprintf(work, sizeof(work), "%s", l);
		if (snprintf(dir, len, "%s/gpuprof-%s", work, raw) < (int)len &&
		    stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
			return 0;
		snprintf(
		    err, errlen,
		    "job %s (%s): its AdminComment names no gpuprof directory, and %s/gpuprof-%s "
		    "does not exist",
		    arg, raw, work, raw);
		return -1;
	}
	snprintf(err, errlen,
	         "job %s (%s): sacct gives neither its gpuprof directory nor its WorkDir", arg,
	         raw);
	return -1;
}

/* A job id is looked up as one before a directory of the same name is taken: a
 * directory "94" that someone made in the current directory (root's /tmp, a shared
 * project directory) must not stand in for job 94, whose report an admin or `gpuprof diff
 * --fail-on-regression` asked for. "./94" names the directory. A directory of the
 * caller's own is taken at once (no sacct to wait for: nobody else made it); another
 * user's only where sacct knows no such job, or there is no sacct. */
int gp_jobref_resolve(const char *arg, char *dir, size_t len, bool *by_id, char *err, size_t errlen)
{
	struct stat st;
	*by_id = false;
	errno = 0;
	bool isdir = stat(arg, &st) == 0 && S_ISDIR(st.st_mode);
	int e = errno;
	if (!gp_jobref_is_id(arg)) {
		if (isdir)
			return snprintf(dir, len, "%s", arg) < (int)len ? 0 : -1;
		snprintf(err, errlen, "%s: %s", arg,
		         e == ENOENT ? "no such job directory, nor a job id (1234, 1234_5, "
		                       "1234+1)"
		                     : strerror(e ? e : ENOTDIR));
		return -1;
	}
	if (isdir && st.st_uid == geteuid())
		return snprintf(dir, len, "%s", arg) < (int)len ? 0 : -1;
	int rc = resolve_id(arg, dir, len, err, errlen);
	if (rc == 0) {
		*by_id = true;
		if (isdir)
			gp_warn("%s is job %s's directory, not the directory %s here (./%s names "
			        "that)",
			        dir, arg, arg, arg);
		return 0;
	}
	if (isdir && rc > 0) { /* no such job, or not a Slurm machine: the directory */
		gp_warn("%s: %s; the directory %s here (uid %u's) is read", arg,
		        rc == 1 ? "sacct knows no such job" : "no sacct to ask", arg,
		        (unsigned)st.st_uid);
		return snprintf(dir, len, "%s", arg) < (int)len ? 0 : -1;
	}
	if (isdir) { /* sacct knows the job but not its directory, or failed */
		size_t l = strlen(err);
		snprintf(err + l, errlen - l, " (./%s names the directory %s here)", arg, arg);
	}
	return -1;
}
