/* A job's live figures: the live files of its steps, read with the report's permission
 * rules, and the job line (livejob.h). */
#include "config.h"
#include "livejob.h"
#include "job.h"
#include "path.h"
#include "stats.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double wall_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* One live file below the step directory sd: into r, 0; -1 when it is none of ours to
 * read or not a live file. */
static int read_one(int sd, const char *name, uid_t owner, gp_live_rank_t *r)
{
	static char buf[GP_LIVE_MAXFILE + 1];
	struct stat st;
	int fd = gp_open_regular(sd, name, owner, &st);
	size_t n = 0;
	ssize_t k;
	if (fd < 0)
		return -1;
	if (!gp_job_file_ok(st.st_uid, owner)) { /* root's own file in a user's job */
		close(fd);
		return -1;
	}
	while (n < GP_LIVE_MAXFILE &&
	       ((k = read(fd, buf + n, GP_LIVE_MAXFILE - n)) > 0 || (k < 0 && errno == EINTR)))
		n += k > 0 ? (size_t)k : 0;
	close(fd);
	buf[n] = '\0';
	return n < GP_LIVE_MAXFILE ? gp_live_parse(buf, r) : -1;
}

static bool live_name(const char *s)
{
	size_t l = strlen(s), sl = strlen(GP_LIVE_SUFFIX);
	return !strncmp(s, "rank", 4) && l > 4 + sl && !strcmp(s + l - sl, GP_LIVE_SUFFIX) &&
	       strspn(s + 4, "0123456789") == l - 4 - sl;
}

static void read_step(gp_live_job_t *j, gp_job_t *owner, int top, const char *name)
{
	char path[4400];
	snprintf(path, sizeof(path), "%s/%s", j->dir, name);
	DIR *sd = gp_job_step_dir(owner, top, name, path, false);
	struct dirent *de;
	if (!sd)
		return;
	while ((de = readdir(sd))) {
		gp_live_rank_t r;
		if (!live_name(de->d_name))
			continue;
		if (read_one(dirfd(sd), de->d_name, j->owner, &r) < 0) {
			j->unreadable++;
			continue;
		}
		gp_live_rank_t *nr = realloc(j->r, (j->n + 1) * sizeof(*nr));
		bool *ns = realloc(j->stale, (j->n + 1) * sizeof(*ns));
		if (nr)
			j->r = nr;
		if (ns)
			j->stale = ns;
		if (!nr || !ns)
			break;
		if (!r.step[0]) /* the directory says which step */
			snprintf(r.step, sizeof(r.step), "%s", name + 4);
		j->r[j->n++] = r;
	}
	closedir(sd);
}

static int cmp_rank(const void *a, const void *b)
{
	const gp_live_rank_t *x = a, *y = b;
	int s = strcmp(x->step, y->step);
	return s ? s : (x->rank > y->rank) - (x->rank < y->rank);
}

/* Where a finding is more urgent: a slowdown and a stop before the rest. */
static int find_rank(const gp_live_rank_t *r)
{
	if (!r->nfind)
		return 9;
	return !strcmp(r->find[0].id, "slowdown")      ? 0
	       : !strcmp(r->find[0].id, "no_progress") ? 1
	                                               : 2;
}

static void job_line(gp_live_job_t *j)
{
	double *med = calloc(j->n + 1, sizeof(double)), *last = calloc(j->n + 1, sizeof(double));
	unsigned nm = 0, nl = 0;
	double fullest = -1;
	j->slowest = j->fullest = j->first_find = -1;
	for (unsigned i = 0; med && last && i < j->n; i++) {
		const gp_live_rank_t *r = &j->r[i];
		j->started = !j->started || r->started < j->started ? r->started : j->started;
		j->elapsed_s = r->elapsed_s > j->elapsed_s ? r->elapsed_s : j->elapsed_s;
		if (r->median_ms > 0)
			med[nm++] = r->median_ms;
		if (r->last_steps && r->last_median_ms > 0) {
			last[nl++] = r->last_median_ms;
			if (j->slowest < 0 || r->last_median_ms > j->r[j->slowest].last_median_ms)
				j->slowest = (int)i;
		}
		if (r->ngpus) {
			j->with_gpus++;
			j->busy_pct += r->busy_pct;
			j->last_busy_pct += r->last_busy_pct;
		}
		double full = r->mem_total ? (double)r->mem_peak / (double)r->mem_total : -1;
		if (r->mem_peak && full > fullest)
			fullest = full, j->fullest = (int)i;
		j->lost += r->lost;
		if (find_rank(r) < 9 &&
		    (j->first_find < 0 || find_rank(r) < find_rank(&j->r[j->first_find])))
			j->first_find = (int)i;
	}
	j->median_ms = gp_median(med, nm);
	j->now_ms = gp_median(last, nl);
	j->slowest_ratio =
	    j->slowest >= 0 && j->now_ms > 0 ? j->r[j->slowest].last_median_ms / j->now_ms : 0;
	if (j->with_gpus)
		j->busy_pct /= j->with_gpus, j->last_busy_pct /= j->with_gpus;
	free(med);
	free(last);
}

int gp_live_job_load(gp_live_job_t *j, const char *dir, const char *step, char *err, size_t errlen)
{
	static gp_job_t owner; /* gp_job_step_dir's rules read its owner only */
	struct stat ds;
	struct dirent *de;
	memset(j, 0, sizeof(*j));
	snprintf(j->dir, sizeof(j->dir), "%s", dir);
	DIR *top = opendir(dir);
	if (!top || fstat(dirfd(top), &ds) < 0) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		if (top)
			closedir(top);
		return -1;
	}
	j->owner = owner.owner = ds.st_uid;
	while ((de = readdir(top)))
		if (!strncmp(de->d_name, "step", 4) && (!step || !strcmp(de->d_name + 4, step)))
			read_step(j, &owner, dirfd(top), de->d_name);
	closedir(top);
	if (j->n)
		qsort(j->r, j->n, sizeof(*j->r), cmp_rank);
	j->now = wall_now();
	for (unsigned i = 0; i < j->n; i++) {
		j->stale[i] = gp_live_stale(&j->r[i], j->now);
		j->nstale += j->stale[i];
		j->running += !j->stale[i] && !strcmp(j->r[i].state, "running");
		j->ended += !strcmp(j->r[i].state, "ended");
	}
	job_line(j);
	return 0;
}

bool gp_live_job_running(const gp_live_job_t *j)
{
	return j->running > 0;
}

void gp_live_job_free(gp_live_job_t *j)
{
	free(j->r);
	free(j->stale);
	j->r = NULL;
	j->stale = NULL;
	j->n = 0;
}

const char *gp_live_hms(double s, char *out, size_t len)
{
	long t = s > 0 ? lround(s) : 0;
	snprintf(out, len, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
	return out;
}

const char *gp_live_clock(double t, char *out, size_t len)
{
	time_t tt = (time_t)t, now = time(NULL);
	struct tm tm, tn;
	gmtime_r(&tt, &tm);
	gmtime_r(&now, &tn);
	if (tm.tm_yday == tn.tm_yday && tm.tm_year == tn.tm_year)
		strftime(out, len, "%H:%M:%S UTC", &tm);
	else
		strftime(out, len, "%Y-%m-%d %H:%M:%S UTC", &tm);
	return out;
}
