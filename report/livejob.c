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
 * read or not a live file, -2 when it is over GP_LIVE_MAXFILE. */
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
	return n < GP_LIVE_MAXFILE ? gp_live_parse(buf, r) : -2;
}

static bool live_name(const char *s)
{
	size_t l = strlen(s), sl = strlen(GP_LIVE_SUFFIX);
	return !strncmp(s, "rank", 4) && l > 4 + sl && !strcmp(s + l - sl, GP_LIVE_SUFFIX) &&
	       strspn(s + 4, "0123456789") == l - 4 - sl;
}

/* A live file's name and its rank number, to read the lowest ranks first. */
typedef struct live_name {
	long rank;
	char *name;
} live_name_t;

static int cmp_live_name(const void *a, const void *b)
{
	const live_name_t *x = a, *y = b;
	return (x->rank > y->rank) - (x->rank < y->rank);
}

/* Room for one more rank in j (grown by halves: a job of 100 000 ranks is not copied
 * 100 000 times); false on no memory. */
static bool room_for_one(gp_live_job_t *j, unsigned *cap)
{
	if (j->n < *cap)
		return true;
	unsigned want = *cap ? *cap + *cap / 2 : 64;
	gp_live_rank_t *nr = realloc(j->r, want * sizeof(*nr));
	if (nr)
		j->r = nr;
	bool *ns = realloc(j->stale, want * sizeof(*ns));
	if (ns)
		j->stale = ns;
	if (!nr || !ns)
		return false;
	*cap = want;
	return true;
}

/* The live files' names of the step directory sd, sorted by rank: their count, -1. */
static long step_names(DIR *sd, live_name_t **out)
{
	struct dirent *de;
	live_name_t *v = NULL;
	size_t n = 0, cap = 0;
	while ((de = readdir(sd))) {
		if (!live_name(de->d_name))
			continue;
		if (n == cap) {
			live_name_t *nv = realloc(v, (cap = cap ? cap * 2 : 64) * sizeof(*v));
			if (!nv)
				break;
			v = nv;
		}
		v[n].rank = strtol(de->d_name + 4, NULL, 10);
		if (!(v[n].name = strdup(de->d_name)))
			break;
		n++;
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_live_name);
	*out = v;
	return (long)n;
}

static void read_step(gp_live_job_t *j, gp_job_t *owner, int top, const char *name, unsigned *cap)
{
	char path[4400];
	live_name_t *names = NULL;
	snprintf(path, sizeof(path), "%s/%s", j->dir, name);
	DIR *sd = gp_job_step_dir(owner, top, name, path, false);
	if (!sd)
		return;
	long n = step_names(sd, &names);
	for (long i = 0; i < n; i++) {
		gp_live_rank_t r;
		if (j->max && j->n >= j->max) {
			j->beyond++;
			continue;
		}
		int rc = read_one(dirfd(sd), names[i].name, j->owner, &r);
		if (rc < 0) {
			j->unreadable++;
			j->too_big += rc == -2;
			continue;
		}
		if (!room_for_one(j, cap)) {
			j->beyond += (unsigned)(n - i);
			break;
		}
		if (!r.step[0]) /* the directory says which step */
			snprintf(r.step, sizeof(r.step), "%s", name + 4);
		j->r[j->n++] = r;
	}
	for (long i = 0; i < n; i++)
		free(names[i].name);
	free(names);
	closedir(sd);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The step directories' names of top (only step when given), sorted: their count. */
static size_t step_dirs(DIR *top, const char *step, char ***out)
{
	struct dirent *de;
	char **v = NULL;
	size_t n = 0;
	while ((de = readdir(top))) {
		if (strncmp(de->d_name, "step", 4) || (step && strcmp(de->d_name + 4, step)))
			continue;
		char **nv = realloc(v, (n + 1) * sizeof(*v));
		if (!nv)
			break;
		v = nv;
		if (!(v[n] = strdup(de->d_name)))
			break;
		n++;
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_str);
	*out = v;
	return n;
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
	j->nstale = j->running = j->ended = j->with_gpus = j->with_last = 0;
	j->started = j->elapsed_s = j->busy_pct = j->last_busy_pct = 0;
	j->lost = 0;
	for (unsigned i = 0; i < j->n; i++) {
		j->stale[i] = gp_live_stale(&j->r[i], j->now);
		j->nstale += j->stale[i];
		j->running += !j->stale[i] && !strcmp(j->r[i].state, "running");
		j->ended += !strcmp(j->r[i].state, "ended");
	}
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
		if (gp_live_sampled(r))
			j->with_gpus++, j->busy_pct += r->busy_pct;
		if (gp_live_last_sampled(r))
			j->with_last++, j->last_busy_pct += r->last_busy_pct;
		double full = r->mem_total ? (double)r->mem_peak / (double)r->mem_total : -1;
		if (gp_live_sampled(r) && r->mem_peak && full > fullest)
			fullest = full, j->fullest = (int)i;
		j->lost = r->lost > UINT64_MAX - j->lost ? UINT64_MAX : j->lost + r->lost;
		if (find_rank(r) < 9 &&
		    (j->first_find < 0 || find_rank(r) < find_rank(&j->r[j->first_find])))
			j->first_find = (int)i;
	}
	j->median_ms = gp_median(med, nm);
	j->now_ms = gp_median(last, nl);
	j->slowest_ratio =
	    j->slowest >= 0 && j->now_ms > 0 ? j->r[j->slowest].last_median_ms / j->now_ms : 0;
	if (j->with_gpus)
		j->busy_pct /= j->with_gpus;
	if (j->with_last)
		j->last_busy_pct /= j->with_last;
	free(med);
	free(last);
}

int gp_live_job_load(gp_live_job_t *j, const char *dir, const char *step, unsigned max, char *err,
                     size_t errlen)
{
	static gp_job_t owner; /* gp_job_step_dir's rules read its owner only */
	struct stat ds;
	char **steps = NULL;
	unsigned cap = 0;
	memset(j, 0, sizeof(*j));
	j->max = max;
	snprintf(j->dir, sizeof(j->dir), "%s", dir);
	if (gp_root_link_check(dir, err, errlen) < 0) /* as the report (gp_job_load) */
		return -1;
	DIR *top = opendir(dir);
	if (!top || fstat(dirfd(top), &ds) < 0) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		if (top)
			closedir(top);
		return -1;
	}
	j->owner = owner.owner = ds.st_uid;
	size_t nsteps = step_dirs(top, step, &steps);
	for (size_t i = 0; i < nsteps; i++) {
		read_step(j, &owner, dirfd(top), steps[i], &cap);
		free(steps[i]);
	}
	free(steps);
	closedir(top);
	if (j->n)
		qsort(j->r, j->n, sizeof(*j->r), cmp_rank);
	j->now = wall_now();
	job_line(j);
	return 0;
}

unsigned gp_live_job_only(gp_live_job_t *j, const char *job, char *other, size_t len)
{
	unsigned k = 0, gone = 0;
	for (unsigned i = 0; i < j->n; i++) {
		if (!j->r[i].job[0] || !strcmp(j->r[i].job, job)) {
			j->r[k++] = j->r[i];
			continue;
		}
		if (!gone++)
			snprintf(other, len, "%s", j->r[i].job);
	}
	j->n = k;
	if (gone)
		job_line(j);
	return gone;
}

void gp_live_job_select(gp_live_job_t *j, const gp_ranks_t *rk)
{
	unsigned k = 0;
	for (unsigned i = 0; i < j->n; i++)
		if (j->r[i].rank >= 0 && gp_ranks_contains(rk, (uint32_t)j->r[i].rank))
			j->r[k++] = j->r[i];
	j->n = k;
	job_line(j);
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
	long t = s > 0 && s < 1e15 ? lround(s) : 0; /* lround past a long: undefined */
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
