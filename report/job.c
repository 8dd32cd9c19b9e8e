/* The job report's analysis (job.h): every rank file of a job directory found, each
 * rank analysed on its own (gp_rank_analyse, or its summary) on worker threads, and
 * merged in the order found while they read on; then how each task ended from the
 * plugin's node records. Only the per-rank results and the merged kernel and range
 * tables stay in memory. */
#include "config.h"
#include "env.h"
#include "settings.h"
#include "job.h"
#include "log.h"
#include "names.h"
#include "path.h"
#include "rankdata.h"
#include "rankfile.h"
#include "stats.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* A launcher's file (the task's own, when its launcher's ranks recorded files of their
 * own): only how the task ended and what it did not record. */
static void load_launcher(gp_job_t *job, const char *path)
{
	char err[512];
	gp_rf_reader_t *rd;
	gp_event_t e;
	const char *h;
	struct gp_launcher *n = realloc(job->launchers, (job->nlaunchers + 1) * sizeof(*n));
	if (!n)
		return;
	job->launchers = n;
	struct gp_launcher *l = &n[job->nlaunchers];
	memset(l, 0, sizeof(*l));
	if (gp_rf_open_owned(path, job->owner, &rd, err, sizeof(err)) < 0) {
		if (!job->nunreadable++)
			snprintf(job->unreadable, sizeof(job->unreadable), "%s", err);
		gp_warn("%s", err);
		return;
	}
	l->task = (h = gp_rf_header(rd, GP_HDR_RANK)) ? atoi(h) : -1;
	if ((h = gp_rf_header(rd, GP_HDR_NODE)))
		snprintf(l->node, sizeof(l->node), "%s", h);
	if ((h = gp_rf_header(rd, GP_HDR_COMMAND)))
		snprintf(l->command, sizeof(l->command), "%s", h);
	while (gp_rf_next(rd, &e) > 0) {
		if (e.type == GP_EV_END) {
			l->has_end = true;
			l->wait_status = (int)e.a;
		} else if (e.type == GP_EV_LOSS && e.u8 == GP_LOSS_PROCESSES &&
		           e.a > l->other_processes) {
			l->other_processes = e.a;
		}
	}
	gp_rf_close(rd);
	job->nlaunchers++;
}

static int cmp_rank(const void *a, const void *b)
{
	const gp_rank_t *x = a, *y = b;
	int c = strcmp(x->id.step, y->id.step);
	return c ? c : x->id.rank - y->id.rank;
}

static int cmp_kstat(const void *a, const void *b)
{
	const gp_kstat_t *x = a, *y = b;
	return x->total > y->total ? -1 : x->total < y->total;
}

static int cmp_rstat(const void *a, const void *b)
{
	const gp_rstat_t *x = a, *y = b;
	return x->cpu_ns > y->cpu_ns ? -1 : x->cpu_ns < y->cpu_ns;
}

/* One rank analysed on its own, as the job merges it: the rank and its tables, in a slot
 * of the pipeline's window (pool_t, below) until it is merged. */
typedef struct rank_sum {
	char *path;
	char **sides; /* the rank's other processes' files (rankR.pidP.gpr) */
	unsigned nsides;
	bool ok, summary; /* analysed; from its summary */
	/* its slot of job->ranks, filled in place: a copy of every rank's result into the
	 * job's array was 12 % of a 2 000-rank report from summaries (perf, rep movs and the
	 * page faults of first touching the array), and on the merging thread */
	gp_rank_t *r;
	gp_rank_tables_t t;
	unsigned nunreadable; /* not analysed: why (the rank file's reader) */
	char *unreadable;
} rank_sum_t;

/* A rank file to analyse, with the files of the rank's other processes. */
typedef struct rank_in {
	char *path;
	char **sides;
	unsigned nsides;
} rank_in_t;

/* The ranks' pipeline: worker threads analyse the ranks in the order of a shared counter,
 * each into its slot of a window of WINDOW rank_sum_t, while the calling thread merges them
 * in the order found (so the report does not depend on the threads). A worker waits while
 * its rank is WINDOW or more ahead of the merge: only WINDOW ranks' tables are held at once
 * (a job of 10 000 ranks holds 10 000 gp_rank_t and the merged tables, not 10 000 copies
 * of them). Batch by batch instead, the workers idled while one thread merged: the merge
 * was 30 % of a report from summaries (perf, 10 240 ranks). */
#define WINDOW 256
typedef struct pool {
	rank_sum_t *win; /* rank i's in win[i % WINDOW] */
	const rank_in_t *paths;
	gp_rank_t *ranks; /* the job's array: rank i analysed into ranks[i] */
	unsigned n;
	_Atomic unsigned next; /* the next rank to analyse */
	pthread_mutex_t mu;
	pthread_cond_t changed; /* a rank analysed, or one merged */
	unsigned merged;        /* ranks merged (under mu) */
	unsigned *done;         /* i + 1 in done[i % WINDOW] once rank i is analysed (under mu) */
	int steps_from;
	uid_t owner;
} pool_t;

static void analyse_one(rank_sum_t *s, rank_data_t *rd, int steps_from, uid_t owner)
{
	char err[768];
	gp_rank_opts_t o = {.steps_from = steps_from,
	                    .sides = (const char *const *)s->sides,
	                    .nsides = s->nsides,
	                    .owned = true,
	                    .owner = owner};
	/* summaries hold the default analysis of a rank of one process only */
	bool sums =
	    !s->nsides && steps_from == GP_STEPS_AUTO && gp_setting_bool(GP_ENV_REPORT_SUMMARIES);
	if (sums && gp_summary_read(s->path, owner, s->r, &s->t) == 0) {
		s->ok = s->summary = true;
		return;
	}
	s->ok = gp_rank_analyse(s->path, &o, s->r, &s->t, rd, err, sizeof(err)) == 0;
	if (!s->ok) {
		s->nunreadable = 1;
		s->unreadable = strdup(err);
	}
	/* for the next report; where the directory is not ours to write, not at all */
	if (sums && s->ok && gp_summary_wanted(s->path))
		gp_summary_write(s->path, s->r, &s->t);
}

/* The same process's record as rank a's, in the same step directory: a copy of its file
 * (same step, rank, pid, agent and start; a requeued attempt's directory is its own) */
static bool same_record(const gp_ident_t *a, const gp_ident_t *b)
{
	if (a->rank != b->rank || a->pid != b->pid || a->agent_pid != b->agent_pid ||
	    a->start_realtime_ns != b->start_realtime_ns || strcmp(a->step, b->step))
		return false;
	const char *sa = a->path ? strrchr(a->path, '/') : NULL;
	const char *sb = b->path ? strrchr(b->path, '/') : NULL;
	size_t na = sa ? (size_t)(sa - a->path) : 0, nb = sb ? (size_t)(sb - b->path) : 0;
	return na == nb && (!na || !memcmp(a->path, b->path, na));
}

static uint64_t ident_hash(const gp_ident_t *a)
{
	uint64_t h = a->start_realtime_ns ^ ((uint64_t)(unsigned)a->pid << 32) ^ (unsigned)a->rank;
	return h * 0x9e3779b97f4a7c15ull;
}

/* Whether r is a copy of a rank already merged (a file copied beside itself: one process
 * twice would double its kernels and read as two ranks on one GPU); else r is remembered
 * as job->ranks[at]. A table that cannot grow remembers nothing. */
static bool copy_of_merged(gp_job_t *job, const gp_rank_t *r, unsigned at)
{
	if (2 * (at + 1) > job->seen_cap) { /* grow and rehash */
		unsigned cap = job->seen_cap ? 2 * job->seen_cap : 64, *t = calloc(cap, sizeof(*t));
		if (!t)
			return false;
		for (unsigned i = 0; i < job->seen_cap; i++)
			for (unsigned k = job->seen[i] ? (unsigned)ident_hash(
			                                     &job->ranks[job->seen[i] - 1].id) &
			                                     (cap - 1)
			                               : 0;
			     job->seen[i]; k = (k + 1) & (cap - 1))
				if (!t[k]) {
					t[k] = job->seen[i];
					break;
				}
		free(job->seen);
		job->seen = t, job->seen_cap = cap;
	}
	unsigned k = (unsigned)ident_hash(&r->id) & (job->seen_cap - 1);
	for (; job->seen[k]; k = (k + 1) & (job->seen_cap - 1))
		if (same_record(&job->ranks[job->seen[k] - 1].id, &r->id))
			return true;
	job->seen[k] = at + 1;
	return false;
}

/* Merge one analysed rank into the job (in the order found), freeing its tables. */
static void merge_one(gp_job_t *job, rank_sum_t *s, unsigned *from_sum)
{
	if (s->ok && copy_of_merged(job, s->r, job->nranks)) {
		if (!job->copies++)
			gp_warn(
			    "%s: a copy of rank %d's file (the same process's record): left out",
			    s->path, s->r->id.rank);
		gp_rank_release(s->r);
		memset(s->r, 0, sizeof(*s->r));
		s->ok = false;
	}
	if (s->ok) {
		*from_sum += s->summary;
		/* what the ranks' headers say of the job: its id (the first found), tasks */
		if (!job->job[0]) {
			snprintf(job->job, sizeof(job->job), "%s", s->t.job);
		} else if (s->t.job[0] && strcmp(s->t.job, job->job)) {
			/* rank files of two jobs in one directory (a copy, a reused --output):
			 * merged all the same, and said wherever the job is named */
			if (!job->other_ranks++) {
				snprintf(job->other_job, sizeof(job->other_job), "%s", s->t.job);
				gp_warn("%s: rank file of job %s in job %s's directory: the report "
				        "mixes "
				        "the figures of both",
				        s->path, s->t.job, job->job);
			}
		}
		if (s->t.ntasks_expected > job->ntasks_expected)
			job->ntasks_expected = s->t.ntasks_expected;
		gp_rank_derive(s->r);
		/* into the first free slot: those before it were merged or are unread ranks' */
		if (s->r != &job->ranks[job->nranks])
			job->ranks[job->nranks] = *s->r;
		job->nranks++;
		gp_job_add_kernels(job, s->t.k, s->t.nk);
		gp_job_add_ranges(job, s->t.r, s->t.nr);
		gp_otab_merge(&job->ops, &s->t.ops);
	} else if (s->nunreadable) {
		if (!job->nunreadable) /* the first one's reason */
			snprintf(job->unreadable, sizeof(job->unreadable), "%s",
			         s->unreadable ? s->unreadable : "");
		job->nunreadable += s->nunreadable;
	}
	gp_rank_tables_free(&s->t);
	free(s->unreadable);
}

static void (*progress_fn)(unsigned done, unsigned total);

void gp_job_set_progress(void (*fn)(unsigned done, unsigned total))
{
	progress_fn = fn;
}

/* The ranks' results, a slot each that the threads fill in place: 6 KiB a rank, 600 MB
 * for 100 000 ranks, whose first touch faulted every 4 KiB (a page fault was 15 % of a
 * 2 000-rank report's CPU in this VM): in huge pages where the kernel gives them on
 * request (transparent huge pages "madvise", Debian's default). */
static gp_rank_t *ranks_alloc(unsigned n)
{
	size_t len = (size_t)(n ? n : 1) * sizeof(gp_rank_t), huge = 2u << 20;
	void *p = NULL;
	if (len < huge || posix_memalign(&p, huge, len) != 0)
		return malloc(len);
	madvise(p, len, MADV_HUGEPAGE); /* advice: without it, small pages */
	return p;
}

/* Rank i analysed into slot s */
static void analyse_rank(pool_t *p, unsigned i, rank_sum_t *s, rank_data_t *rd)
{
	memset(s, 0, sizeof(*s));
	s->path = p->paths[i].path;
	s->sides = p->paths[i].sides;
	s->nsides = p->paths[i].nsides;
	s->r = &p->ranks[i];
	analyse_one(s, rd, p->steps_from, p->owner);
}

static void *pool_worker(void *arg)
{
	pool_t *p = arg;
	rank_data_t rd;
	memset(&rd, 0, sizeof(rd));
	for (unsigned i; (i = atomic_fetch_add(&p->next, 1)) < p->n;) {
		rank_sum_t *s = &p->win[i % WINDOW];
		pthread_mutex_lock(&p->mu);
		while (i >= p->merged + WINDOW) /* its slot still holds rank i - WINDOW */
			pthread_cond_wait(&p->changed, &p->mu);
		pthread_mutex_unlock(&p->mu);
		analyse_rank(p, i, s, &rd);
		pthread_mutex_lock(&p->mu);
		p->done[i % WINDOW] = i + 1;
		pthread_cond_broadcast(&p->changed);
		pthread_mutex_unlock(&p->mu);
	}
	gp_rd_free(&rd);
	return NULL;
}

/* Threads for reading rank files: GPUPROF_REPORT_THREADS, else every online core. */
static unsigned report_threads(unsigned work)
{
	long n = (long)gp_setting_long(GP_ENV_REPORT_THREADS);
	if (n <= 0)
		n = sysconf(_SC_NPROCESSORS_ONLN);
	if (n < 1)
		n = 1;
	return (unsigned)(n > (long)work ? (long)work : n);
}

/* Merge the ranks in order as the workers analyse them (pool_t); with no worker (none
 * could start: a process or thread limit), analyse each here first, one at a time. */
static void merge_in_order(gp_job_t *job, pool_t *p, bool workers)
{
	unsigned from_sum = 0;
	rank_data_t rd;
	memset(&rd, 0, sizeof(rd));
	for (unsigned i = 0; i < p->n; i++) {
		if (!workers)
			analyse_rank(p, i, &p->win[i % WINDOW], &rd);
		pthread_mutex_lock(&p->mu);
		while (workers && p->done[i % WINDOW] != i + 1)
			pthread_cond_wait(&p->changed, &p->mu);
		pthread_mutex_unlock(&p->mu);
		merge_one(job, &p->win[i % WINDOW], &from_sum);
		pthread_mutex_lock(&p->mu);
		p->merged = i + 1;
		pthread_cond_broadcast(&p->changed);
		pthread_mutex_unlock(&p->mu);
		if (progress_fn && ((i + 1) % WINDOW == 0 || i + 1 == p->n))
			progress_fn(i + 1, p->n);
	}
	gp_rd_free(&rd);
	gp_debug("report: %u rank(s) from their summaries, %u from their rank files", from_sum,
	         job->nranks - from_sum);
}

/* Analyse and merge every rank of paths: GPUPROF_REPORT_THREADS workers besides this
 * thread, which merges (and analyses too where no worker starts). -1 (ENOMEM) when the
 * ranks' results do not fit in memory (nothing read). */
static int analyse_all(gp_job_t *job, rank_in_t *paths, unsigned n)
{
	pool_t p = {.paths = paths, .n = n, .steps_from = job->steps_from, .owner = job->owner};
	unsigned nt = report_threads(n), started = 0;
	pthread_t *t = calloc(nt ? nt : 1, sizeof(pthread_t));
	p.win = calloc(WINDOW, sizeof(*p.win));
	p.done = calloc(WINDOW, sizeof(*p.done));
	p.ranks = job->ranks = ranks_alloc(n);
	pthread_mutex_init(&p.mu, NULL);
	pthread_cond_init(&p.changed, NULL);
	for (unsigned i = 0; t && p.win && p.done && p.ranks && i < nt; i++)
		if (pthread_create(&t[started], NULL, pool_worker, &p) == 0)
			started++;
	bool fit = t && p.win && p.done && p.ranks;
	if (fit)
		merge_in_order(job, &p, started > 0);
	for (unsigned i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	pthread_cond_destroy(&p.changed);
	pthread_mutex_destroy(&p.mu);
	free(t);
	free(p.win);
	free(p.done);
	if (!fit) {
		free(job->ranks);
		job->ranks = NULL;
		return errno = ENOMEM, -1;
	}
	return 0;
}

/* A writer killed between creating its temporary file and renaming it into place leaves
 * ".rankR.gps.tmp.PID" (a summary: written whole in one go, so stale after seconds) or
 * ".rankR.gpr.tmp.PID" (a rank file's copy into the job directory; the spool keeps the
 * data for `gpuprof salvage`). Removed here, when old enough to be nobody's work in
 * progress, and only one's own: root reading a user's job leaves them. */
static void drop_stale_tmp(DIR *d, const char *name)
{
	struct stat sb;
	const char *t = strstr(name, ".tmp.");
	if (name[0] != '.' || strncmp(name + 1, "rank", 4) || !t || t - name < 5)
		return;
	bool summary = !strncmp(t - 4, ".gps", 4);
	/* a live file's (common/live.h) left by an agent killed while writing it */
	bool live = t - name > 14 && !strncmp(t - 10, ".live.json", 10);
	if (!summary && !live && strncmp(t - 4, ".gpr", 4))
		return;
	if (fstatat(dirfd(d), name, &sb, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(sb.st_mode) ||
	    sb.st_uid != geteuid())
		return;
	if (time(NULL) - sb.st_mtime > (summary ? 30 : 600) && unlinkat(dirfd(d), name, 0) == 0)
		gp_debug("report: removed %s, left by a writer that did not finish", name);
}

/* Set each rankR.pidP.gpr beside its rankR.gpr (same directory); one with no rankR.gpr
 * (its agent's file lost) stands for the rank itself. Takes the side paths. */
static int cmp_rank_in(const void *a, const void *b)
{
	return strcmp(((const rank_in_t *)a)->path, ((const rank_in_t *)b)->path);
}

static void group_sides(rank_in_t **v, size_t *n, size_t *cap, char **sides, size_t ns)
{
	size_t sorted = *n; /* the rank files, sorted for the lookups; orphans after them */
	if (ns && *n)
		qsort(*v, *n, sizeof(**v), cmp_rank_in);
	for (size_t i = 0; i < ns; i++) {
		const char *pid = strstr(strrchr(sides[i], '/'), ".pid");
		size_t base = (size_t)(pid - sides[i]); /* ".../rankR" */
		char key[4800];
		snprintf(key, sizeof(key), "%.*s.gpr", (int)base, sides[i]);
		rank_in_t k0 = {.path = key}, *in = NULL;
		if (sorted)
			in = bsearch(&k0, *v, sorted, sizeof(**v), cmp_rank_in);
		for (size_t k = sorted; k < *n && !in; k++) /* an orphan's first side */
			if (!strncmp((*v)[k].path, sides[i], base + 4))
				in = &(*v)[k];
		if (!in) {
			if (*n == *cap) {
				size_t nc = *cap ? *cap * 2 : 16;
				rank_in_t *nv = realloc(*v, nc * sizeof(**v));
				if (!nv) {
					free(sides[i]);
					continue;
				}
				*v = nv, *cap = nc;
			}
			(*v)[(*n)++] = (rank_in_t){.path = sides[i]};
			continue;
		}
		char **ns2 = realloc(in->sides, (in->nsides + 1) * sizeof(char *));
		if (!ns2) {
			free(sides[i]);
			continue;
		}
		in->sides = ns2;
		in->sides[in->nsides++] = sides[i];
	}
}

/* The batch script of an sbatch job (step "batch") that ran no GPU work and no steps of
 * its own (its sruns did): a line of the report, not a rank with zeros in every table. */
static void drop_batch_script(gp_job_t *job)
{
	unsigned n = 0;
	for (unsigned i = 0; i < job->nranks; i++) {
		gp_rank_t *r = &job->ranks[i];
		if (!strcmp(r->id.step, "batch") && !r->gpu.kernels_total && !r->gpu.nmemcpy &&
		    !r->steps.n && job->nranks > 1 && !job->batch.seen) {
			job->batch.seen = true;
			job->batch.has_end = r->outcome.has_end;
			job->batch.wait_status = r->outcome.wait_status;
			job->batch.wall_ns = r->outcome.wall_ns;
			snprintf(job->batch.command, sizeof(job->batch.command), "%s",
			         gp_txt(r->id.command));
			gp_rank_release(r);
			continue;
		}
		if (n != i) /* 6 KiB a rank: copied only where one was dropped before it */
			job->ranks[n] = *r;
		n++;
	}
	job->nranks = n;
}

size_t gp_read_job_file(const gp_job_t *job, const char *path, char *buf, size_t len)
{
	int fd = gp_open_regular(AT_FDCWD, path, job->owner, NULL);
	size_t n = 0;
	ssize_t k = 0;
	if (fd < 0 || !len) {
		if (fd >= 0)
			close(fd);
		return (size_t)-1;
	}
	while (n + 1 < len &&
	       ((k = read(fd, buf + n, len - 1 - n)) > 0 || (k < 0 && errno == EINTR)))
		n += k > 0 ? (size_t)k : 0;
	close(fd);
	buf[n] = '\0';
	return k < 0 ? (size_t)-1 : n;
}

/* Slurm's wait status of task rank/pid from the node summaries in dir (stepd.c:
 * node<N>.json, {"task": T, "rank": R, "pid": P, "wait_status": W, ...} per task). */
static bool node_status(const gp_job_t *job, const char *dir, int rank, int pid, int *status)
{
	static char buf[65536];
	bool found = false;
	DIR *d = opendir(dir);
	struct dirent *de;
	while (d && !found && (de = readdir(d))) {
		char path[4400];
		size_t l = strlen(de->d_name);
		if (strncmp(de->d_name, "node", 4) || l < 9 ||
		    strcmp(de->d_name + l - 5, ".json") ||
		    snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= (int)sizeof(path) ||
		    gp_read_job_file(job, path, buf, sizeof(buf)) == (size_t)-1)
			continue;
		for (const char *p = buf; !found && (p = strstr(p, "{\"task\": ")); p++) {
			unsigned t, r;
			int tp, w;
			if (sscanf(p,
			           "{\"task\": %u, \"rank\": %u, \"pid\": %d, \"wait_status\": %d",
			           &t, &r, &tp, &w) == 4 &&
			    (int)r == rank && tp == pid)
				found = true, *status = w;
		}
	}
	if (d)
		closedir(d);
	return found;
}

/* A task of the environment-only fallback (no agent) that died where its library's exit
 * hook never ran (SIGSEGV, _exit) leaves a rank file with no end record, and it was
 * reported "killed with its agent"; Slurm's wait status for the task is in the plugin's
 * node summary beside it. Matched by rank and pid: a fallback file is the task's own
 * only when its process is the task's (a launcher's worker, or a program a batch script
 * started, is another process and keeps "incomplete"). */
static void node_statuses(gp_job_t *job)
{
	for (unsigned i = 0; i < job->nranks; i++) {
		gp_rank_t *r = &job->ranks[i];
		char dir[4200];
		const char *slash = r->id.path ? strrchr(r->id.path, '/') : NULL;
		if (r->outcome.has_end || !strcmp(r->quality.wrapped, "agent") || r->id.pid <= 0 ||
		    !slash)
			continue;
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - r->id.path), r->id.path);
		if (node_status(job, dir, r->id.rank, r->id.pid, &r->outcome.wait_status))
			r->outcome.status_from_node = true;
	}
}

DIR *gp_job_step_dir(const gp_job_t *job, int topfd, const char *name, const char *path, bool warn)
{
	/* root in another user's job: the owner's step directory, never through a link (a
	 * user's step1 -> another user's job would have root read that job as theirs; the
	 * rank files are checked again as they are opened, gp_rf_open_owned, should one be
	 * swapped in meanwhile) */
	bool strict = !gp_job_file_ok((uid_t)-2, job->owner);
	int fd =
	    openat(topfd, name,
	           O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC | (strict ? O_NOFOLLOW : 0));
	struct stat ss, ls;
	if (fd < 0 || fstat(fd, &ss) < 0 || !gp_job_file_ok(ss.st_uid, job->owner)) {
		/* a link is ENOTDIR with O_DIRECTORY, as a file is */
		bool refused =
		    fd >= 0 || errno == ELOOP ||
		    (fstatat(topfd, name, &ls, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(ls.st_mode));
		if (warn && refused)
			gp_warn("%s: %s; not read as root", path,
			        fd >= 0 ? "not the job directory's owner's" : "a link");
		if (fd >= 0)
			close(fd);
		errno = refused ? EPERM : ENOTDIR;
		return NULL;
	}
	DIR *d = fdopendir(fd);
	if (!d)
		close(fd);
	return d;
}

static int cmp_unsigned(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
	return (x > y) - (x < y);
}

/* The steps' count across the ranks that found steps: the common one, its range, the
 * ranks that differ (job.h: step_counts). */
static void step_counts(gp_job_t *job)
{
	struct gp_step_counts *sc = &job->step_counts;
	unsigned *c = calloc(job->nranks + 1, sizeof(unsigned)), n = 0;
	if (!c)
		return;
	for (unsigned i = 0; i < job->nranks; i++)
		if (job->ranks[i].steps.source[0])
			c[n++] = job->ranks[i].steps.n;
	qsort(c, n, sizeof(unsigned), cmp_unsigned);
	sc->ranks = n;
	sc->min = n ? c[0] : 0;
	sc->max = n ? c[n - 1] : 0;
	for (unsigned a = 0, best = 0, z; a < n; a = z) { /* the longest run; the later on a tie */
		for (z = a; z < n && c[z] == c[a]; z++)
			;
		if (z - a >= best)
			best = z - a, sc->common = c[a];
	}
	free(c);
	unsigned nrun = 0;
	for (unsigned i = 0; i < job->nranks; i++) {
		const gp_rank_t *r = &job->ranks[i];
		if (!r->steps.source[0] || r->steps.n == sc->common)
			continue;
		sc->ndiffer++;
		if (nrun && sc->differ[nrun - 1].count == r->steps.n &&
		    sc->differ[nrun - 1].last + 1 == r->id.rank) {
			sc->differ[nrun - 1].last = r->id.rank; /* the run goes on: "ranks 16-23" */
			continue;
		}
		if (nrun < sizeof(sc->differ) / sizeof(sc->differ[0]))
			sc->differ[nrun].rank = sc->differ[nrun].last = r->id.rank,
			sc->differ[nrun++].count = r->steps.n;
	}
	sc->nruns = nrun;
}

/* The job's nodes: each one's ranks, their median step and largest peak, and the nodes
 * by that median (job.h: nodes). */
/* The job's busy and idle shares (job.h): computed once, for the summary line and
 * report.json alike */
static void job_shares(gp_job_t *job)
{
	uint64_t busy = 0, span = 0, idle = 0;
	for (unsigned i = 0; i < job->nranks; i++) {
		/* the report's busy and idle (its time table, derive.c): communication running
		 * alone is not busy, and the idle a synchronising host caused is idle */
		const gp_rank_t *r = &job->ranks[i];
		busy += r->gpu.busy_ns - r->shares.comm_exposed_ns;
		span += r->gpu.span_ns;
		idle += r->gpu.idle_host_ns + r->gpu.idle_sync_ns + r->gpu.idle_other_ns +
		        r->gpu.idle_kernel_ns;
	}
	job->gpu_span_ns = span;
	job->busy_pct = span ? 100.0 * (double)busy / (double)span : 0;
	job->idle_pct = span ? 100.0 * (double)idle / (double)span : 0;
}

static void job_nodes(gp_job_t *job)
{
	unsigned n = job->nranks, nn = 0;
	struct gp_node *nd = calloc(n + 1, sizeof(*nd));
	unsigned *of = calloc(n + 1, sizeof(unsigned)), *by = calloc(n + 1, sizeof(unsigned)),
	         *from = calloc(n + 2, sizeof(unsigned));
	double *v = calloc(n + 1, sizeof(double));
	gp_fig_t *f = calloc(n + 1, sizeof(gp_fig_t));
	u64map_t at = {0}; /* a node's name -> index + 1: one pointer a name (text.h) */
	if (!nd || !of || !by || !from || !v || !f)
		goto out;
	for (unsigned i = 0; i < n; i++) { /* node index of each rank */
		uint64_t key = (uint64_t)(uintptr_t)job->ranks[i].id.node.s + 1, k;
		if (!u64map_get(&at, key, &k)) {
			nd[nn].name = gp_txt(job->ranks[i].id.node);
			u64map_put(&at, key, k = ++nn);
		}
		of[i] = (unsigned)k - 1;
	}
	for (unsigned i = 0; i < n; i++) /* the ranks of node k: by[from[k]..from[k+1]) */
		from[of[i] + 1]++;
	for (unsigned k = 0; k < nn; k++)
		from[k + 1] += from[k];
	for (unsigned i = 0; i < n; i++) /* from[k] ends as node k's end */
		by[from[of[i]]++] = i;
	for (unsigned k = nn; k > 0; k--) /* back to each node's start */
		from[k] = from[k - 1];
	from[0] = 0;
	for (unsigned k = 0; k < nn; k++) {
		unsigned m = 0;
		for (unsigned j = from[k]; j < from[k + 1]; j++) {
			const gp_rank_t *r = &job->ranks[by[j]];
			if (r->steps.nms) /* a rank without steps: no 0 pulling its node down */
				v[m++] = r->steps.median_ms;
			if (r->memory.peak > nd[k].peak)
				nd[k].peak = r->memory.peak;
		}
		nd[k].ranks = from[k + 1] - from[k];
		nd[k].step_median_ms = m ? gp_median(v, m) : 0; /* 0: not measured */
	}
	unsigned nf = 0; /* the nodes with steps, by their median; then the others */
	for (unsigned k = 0; k < nn; k++)
		if (nd[k].step_median_ms > 0)
			f[nf++] = (gp_fig_t){nd[k].step_median_ms, k};
	qsort(f, nf, sizeof(*f), gp_fig_cmp);
	for (unsigned k = 0, u = nf; k < nn; k++)
		if (!(nd[k].step_median_ms > 0))
			f[u++] = (gp_fig_t){0, k};
	for (unsigned k = 0; k < nn; k++)
		by[k] = f[k].i;
	job->node_step_median_ms = nf ? f[(unsigned)(0.5 * (nf - 1) + 0.5)].v : 0;
	job->nnodes_timed = nf;
	job->nodes = nd, nd = NULL;
	job->node_by_step = by, by = NULL;
	job->nnodes = nn;
out:
	u64map_free(&at);
	free(nd);
	free(of);
	free(by);
	free(from);
	free(v);
	free(f);
}

/* The job's step figures from its ranks': the throughput (its slowest rank's period),
 * the headline median (leaving out damaged ranks where a whole rank has steps), its basis */
static void job_steps(gp_job_t *job)
{
	double *med = calloc(job->nranks, sizeof(double));
	unsigned nm = 0;
	job->step_period_rank = -1;
	for (unsigned i = 0; i < job->nranks; i++)
		if (job->ranks[i].steps.mean_period_ms > job->step_mean_period_ms) {
			job->step_mean_period_ms = job->ranks[i].steps.mean_period_ms;
			job->step_period_rank = (int)i;
		}
	if (job->step_mean_period_ms > 0)
		job->steps_per_second = 1000 / job->step_mean_period_ms;
	bool whole = false; /* a rank with steps and no corrupt chunk */
	for (unsigned i = 0; i < job->nranks; i++)
		whole |= job->ranks[i].steps.nms && !job->ranks[i].quality.corrupt_chunks;
	for (unsigned i = 0; med && i < job->nranks; i++) {
		const gp_rank_t *r = &job->ranks[i];
		if (!r->steps.nms)
			continue;
		if (whole && r->quality.corrupt_chunks) {
			job->step_median_left_out++;
			continue;
		}
		med[nm++] = r->steps.median_ms;
		if (!job->step_basis[0])
			snprintf(job->step_basis, sizeof(job->step_basis), "%s", r->steps.basis);
		else if (strcmp(job->step_basis, r->steps.basis))
			snprintf(job->step_basis, sizeof(job->step_basis), "mixed");
	}
	job->step_median_ms = gp_median(med, nm);
	free(med);
}

int gp_job_load(gp_job_t *job, const char *dir, const char *step, const char *steps_from, char *err,
                size_t errlen)
{
	DIR *top;
	struct dirent *de;
	memset(job, 0, sizeof(*job));
	snprintf(job->dir, sizeof(job->dir), "%s", dir);
	if ((job->steps_from = gp_steps_from_name(steps_from)) < 0) {
		snprintf(err, errlen,
		         "--steps-from: '%s' (auto, nvtx, optimizer, profiler, kernels)",
		         steps_from);
		return -1;
	}
	/* root does not follow a link to another user's job directory that a third user made
	 * (a user's job -> the victim's job would be reported as the user's), at any component */
	if (gp_root_link_check(dir, err, errlen) < 0)
		return -1;
	top = opendir(dir);
	struct stat ds;
	if (!top || fstat(dirfd(top), &ds) < 0) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		if (top)
			closedir(top);
		return -1;
	}
	VEC(rank_in_t) paths = {0};
	VEC(char *) sides = {0};
	job->owner = ds.st_uid;
	while ((de = readdir(top))) {
		char sub[4400];
		DIR *sd;
		struct dirent *fe;
		if (strncmp(de->d_name, "step", 4))
			continue;
		if (step && strcmp(de->d_name + 4, step))
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name);
		if (!(sd = gp_job_step_dir(job, dirfd(top), de->d_name, sub, true))) {
			/* a step left out as root's policy: counted with the unreadable files */
			if (errno == EPERM && !job->nunreadable++)
				snprintf(job->unreadable, sizeof(job->unreadable),
				         "%s: not read as root (a link, or not the owner's)", sub);
			continue;
		}
		while ((fe = readdir(sd))) {
			size_t l = strlen(fe->d_name);
			char path[4700];
			if (fe->d_name[0] == '.') {
				drop_stale_tmp(sd, fe->d_name);
				continue;
			}
			if (!strncmp(fe->d_name, "launcher", 8) && l > 12 &&
			    !strcmp(fe->d_name + l - 4, ".gpr")) {
				snprintf(path, sizeof(path), "%s/%s", sub, fe->d_name);
				load_launcher(job, path);
				continue;
			}
			if (strncmp(fe->d_name, "rank", 4) || l < 8 ||
			    strcmp(fe->d_name + l - 4, ".gpr"))
				continue;
			snprintf(path, sizeof(path), "%s/%s", sub, fe->d_name);
			char *p = strdup(path);
			if (!p)
				continue;
			if (strstr(fe->d_name, ".pid")) { /* another process of a rank */
				VEC_PUSH(sides, p);
			} else {
				rank_in_t in = {.path = p};
				VEC_PUSH(paths, in);
			}
		}
		closedir(sd);
	}
	closedir(top);
	group_sides(&paths.v, &paths.n, &paths.cap, sides.v, sides.n);
	VEC_FREE(sides);
	/* each rank's results are held to the end (the text, JSON and exports read them): a
	 * job of more ranks than memory holds is said as such, not as "no rank files" */
	bool oom = paths.n && analyse_all(job, paths.v, (unsigned)paths.n) < 0;
	if (oom)
		snprintf(err, errlen,
		         "%s: out of memory: the results of %zu rank files need %zu MiB (%zu KiB a "
		         "rank) before any is read; report a step at a time (--step) or give the "
		         "report more memory",
		         dir, paths.n, (paths.n * sizeof(gp_rank_t) + (1u << 20) - 1) >> 20,
		         sizeof(gp_rank_t) >> 10);
	node_statuses(job);
	for (size_t i = 0; i < paths.n; i++) {
		free(paths.v[i].path);
		for (unsigned k = 0; k < paths.v[i].nsides; k++)
			free(paths.v[i].sides[k]);
		free(paths.v[i].sides);
	}
	VEC_FREE(paths);
	if (oom) {
		gp_job_free(job);
		return -1;
	}
	if (!job->nranks) {
		if (job->nunreadable)
			snprintf(err, errlen, "%s: no readable rank file (%s)", dir,
			         job->unreadable);
		else
			snprintf(err, errlen, "%s: no rank files (step*/rank*.gpr)", dir);
		gp_job_free(job);
		return -1;
	}
	drop_batch_script(job);
	u64map_free(&job->kidx); /* indices of the unsorted tables */
	u64map_free(&job->ridx);
	qsort(job->ranks, job->nranks, sizeof(gp_rank_t), cmp_rank);
	if (job->nk)
		qsort(job->k, job->nk, sizeof(gp_kstat_t), cmp_kstat);
	job->k_total = 0;
	for (unsigned i = 0; i < job->nk; i++)
		job->k_total += job->k[i].total;
	if (job->nr)
		qsort(job->r, job->nr, sizeof(gp_rstat_t), cmp_rstat);
	job_steps(job);
	step_counts(job);
	job_nodes(job);
	job_shares(job);
	return 0;
}

void gp_job_free(gp_job_t *job)
{
	for (unsigned i = 0; i < job->nranks; i++)
		gp_rank_release(&job->ranks[i]);
	free(job->ranks);
	free(job->nodes);
	free(job->node_by_step);
	free(job->seen);
	free(job->launchers);
	for (unsigned i = 0; i < job->nk; i++) {
		free(job->k[i].name);
		gp_kstat_free_hist(&job->k[i]);
		for (unsigned j = 0; j < GP_KRANGES; j++)
			free(job->k[i].in[j].name);
	}
	free(job->k);
	for (unsigned i = 0; i < job->nr; i++)
		free(job->r[i].name);
	free(job->r);
	u64map_free(&job->kidx);
	u64map_free(&job->ridx);
	gp_otab_free(&job->ops);
	memset(job, 0, sizeof(*job));
}

int gp_job_rank_records(const gp_job_t *job, const gp_rank_t *rk, rank_data_t *d, char *err,
                        size_t errlen)
{
	gp_rank_t r;
	gp_rank_tables_t t;
	gp_rank_opts_t o = {.steps_from = job->steps_from, .owned = true, .owner = job->owner};
	int rc = gp_rank_analyse(rk->id.path, &o, &r, &t, d, err, errlen);
	if (rc == 0)
		gp_rank_release(&r);
	gp_rank_tables_free(&t);
	return rc;
}

double gp_job_kernel_share(const gp_job_t *job, unsigned i)
{
	return i < job->nk && job->k_total ? (double)job->k[i].total / (double)job->k_total : 0;
}

unsigned gp_job_kernel_kinds(const gp_job_t *job, gp_kind_t *k, unsigned max)
{
	unsigned n = 0;
	for (unsigned i = 0; i < job->nk; i++) {
		const char *kd = gp_kernel_kind(job->k[i].name);
		unsigned j = 0;
		while (j < n && strcmp(k[j].kind, kd))
			j++;
		if (j == n) {
			if (n == max)
				continue;
			k[n++] = (gp_kind_t){.kind = kd};
		}
		k[j].total += job->k[i].total;
		k[j].calls += job->k[i].calls;
		k[j].kernels++;
	}
	for (unsigned i = 0; i < n; i++)
		k[i].share = job->k_total ? (double)k[i].total / (double)job->k_total : 0;
	for (unsigned i = 1; i < n; i++) /* a handful: insertion sort, most time first */
		for (unsigned j = i; j > 0 && k[j].total > k[j - 1].total; j--) {
			gp_kind_t t = k[j];
			k[j] = k[j - 1];
			k[j - 1] = t;
		}
	return n;
}
