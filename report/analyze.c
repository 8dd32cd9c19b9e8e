/* The report's analysis of a job: each rank file is loaded into typed arrays (load.c)
 * and run through the passes of rankdata.h in order; only the per-rank results
 * (gp_rank_t) and the merged kernel and range tables stay in memory. */
#include "config.h"
#include "env.h"
#include "settings.h"
#include "analyze.h"
#include "log.h"
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
#include <sys/stat.h>
#include <unistd.h>

struct hdr_ctx {
	gp_job_t *job;
	gp_rank_t *r;
	rank_data_t *d;
};

/* The header values the analysis and the outputs use. */
static void read_header(void *arg, gp_rf_reader_t *rd)
{
	struct hdr_ctx *c = arg;
	gp_job_t *job = c->job;
	gp_rank_t *r = c->r;
	const char *h;
	r->rank = (h = gp_rf_header(rd, GP_HDR_RANK)) ? atoi(h) : 0;
	r->pid = (h = gp_rf_header(rd, GP_HDR_PID)) ? atoi(h) : 0;
	r->agent_pid = (h = gp_rf_header(rd, GP_HDR_AGENT_PID)) ? atoi(h) : 0;
	if ((h = gp_rf_header(rd, GP_HDR_NODE)))
		snprintf(r->node, sizeof(r->node), "%s", h);
	if ((h = gp_rf_header(rd, GP_HDR_STEP)))
		snprintf(r->step, sizeof(r->step), "%s", h);
	if ((h = gp_rf_header(rd, GP_HDR_WRAPPED)))
		snprintf(r->wrapped, sizeof(r->wrapped), "%s", h);
	if ((h = gp_rf_header(rd, GP_HDR_NVML_LIMITS)))
		snprintf(r->nvml_limits, sizeof(r->nvml_limits), "%s", h);
	if ((h = gp_rf_header(rd, GP_HDR_COMMAND)))
		snprintf(r->command, sizeof(r->command), "%s", h);
	if ((h = gp_rf_header(rd, GP_HDR_USER)))
		snprintf(r->user, sizeof(r->user), "%s", h);
	if ((h = gp_rf_header(rd, GP_HDR_MODES)))
		snprintf(r->modes, sizeof(r->modes), "%s", h);
	if ((h = gp_rf_header(rd, GP_HDR_JOB_NAME)))
		snprintf(r->job_name, sizeof(r->job_name), "%s", h);
	if (!job->job[0] && (h = gp_rf_header(rd, GP_HDR_JOB)))
		snprintf(job->job, sizeof(job->job), "%s", h);
	if ((h = gp_rf_header(rd, GP_HDR_NTASKS)))
		job->ntasks_expected = (unsigned)atoi(h) > job->ntasks_expected
		                           ? (unsigned)atoi(h)
		                           : job->ntasks_expected;
	gp_rd_header_steps(c->d, rd);
}

void gp_rd_header_steps(rank_data_t *d, gp_rf_reader_t *rd)
{
	const char *h;
	if ((h = gp_rf_header(rd, GP_HDR_STEP_RANGE)))
		snprintf(d->want_step, sizeof(d->want_step), "%s", h);
	d->warmup = (h = gp_rf_header(rd, GP_HDR_WARMUP_STEPS))
	                ? (unsigned)atoi(h)
	                : (unsigned)gp_setting_default_long("warmup_steps");
}

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
	if (gp_rf_open(path, &rd, err, sizeof(err)) < 0) {
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

static int load_rank(gp_job_t *job, const char *path, gp_rank_t *r, rank_data_t *dp)
{
	char err[512];
#define d (*dp)
	memset(r, 0, sizeof(*r));
	if (!(r->path = strdup(path)))
		return -1;
	struct hdr_ctx ctx = {job, r, dp};
	if (gp_rd_load_file(path, dp, r, read_header, &ctx, err, sizeof(err)) < 0) {
		if (!job->nunreadable++)
			snprintf(job->unreadable, sizeof(job->unreadable), "%s", err);
		return gp_warn("%s", err);
	}
	r->start_realtime_ns = d.hdr_realtime;
	r->t0_realtime_ns =
	    d.hdr_realtime + (d.first_ts > d.hdr_monotonic ? d.first_ts - d.hdr_monotonic : 0);

	gp_pass_steps(r, dp);
	gp_pass_capture(r, dp);
	gp_pass_gpu(r, dp);
	gp_pass_ranges(job, r, dp);
	gp_pass_memory(r, dp);
	gp_pass_startup(r, dp);
	gp_pass_time_series(r, dp);
	r->snapshot_ns = d.win_hi ? d.win_hi : d.last_ts;
	if (r->nsteps)
		r->kernel_gpu_per_step_ms = (double)r->compute_ns / 1e6 / r->nsteps;
	r->oom_calls = d.oom_count;
	r->oom_step = -1;
	if (d.oom_count) {
		size_t s = gp_step_at(dp, d.oom_ts);
		r->oom_step =
		    s ? (int)s - 1
		      : (d.steps.n && d.oom_ts > d.steps.v[0].start ? (int)d.steps.n - 1 : -1);
		r->oom_t_ns = d.oom_ts > d.first_ts ? d.oom_ts - d.first_ts : 0;
	}
	gp_merge_kernels(job, dp);
	return 0;
#undef d
}

static int cmp_rank(const void *a, const void *b)
{
	const gp_rank_t *x = a, *y = b;
	int c = strcmp(x->step, y->step);
	return c ? c : x->rank - y->rank;
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

int gp_steps_from_name(const char *s)
{
	if (!s || !strcmp(s, "auto"))
		return GP_STEPS_AUTO;
	if (!strcmp(s, "nvtx"))
		return GP_STEPS_NVTX;
	if (!strcmp(s, "profiler"))
		return GP_STEPS_PROFILER;
	if (!strcmp(s, "kernels"))
		return GP_STEPS_KERNELS;
	if (!strcmp(s, "optimizer"))
		return GP_STEPS_OPTIMIZER;
	return -1;
}

/* One rank analysed on its own, as the job merges it: the rank and its tables. Ranks are
 * analysed in parallel a batch at a time, then merged in the order their files were
 * found, so the report does not depend on the threads, and only one batch of per-rank
 * tables is ever held (a job of 10 000 ranks holds 10 000 gp_rank_t and the merged
 * tables, not 10 000 copies of them). */
typedef struct rank_sum {
	char *path;
	char **sides; /* the rank's other processes' files (rankR.pidP.gpr) */
	unsigned nsides;
	bool ok, summary; /* analysed; from its summary */
	gp_rank_t r;
	gp_rank_tables_t t;
	unsigned nunreadable; /* not analysed: why (the rank file's reader) */
	char *unreadable;
} rank_sum_t;

typedef struct pool {
	rank_sum_t *sums;
	unsigned n;
	_Atomic unsigned next;
	int steps_from;
} pool_t;

void gp_rank_release(gp_rank_t *r)
{
	free(r->path);
	free(r->step_ms);
	free(r->step_no);
	free(r->torch.own);
	r->path = NULL;
	r->step_ms = NULL;
	r->step_no = NULL;
	r->torch.own = NULL;
}

bool gp_rank_unobserved(const gp_rank_t *r)
{
	return strstr(r->modes, "cuda") && !r->yielded[0] && !r->kernels_total && !r->nmemcpy &&
	       !r->nmemset && r->nvml_mem_max >= (uint64_t)GP_UNOBSERVED_MIB << 20;
}

void gp_rank_compact_steps(gp_rank_t *r)
{
	if (!r->step_no)
		return;
	for (unsigned k = 1; k < r->nstep_ms; k++)
		if (r->step_no[k] != r->step_no[0] + k)
			return;
	r->step_no0 = r->nstep_ms ? r->step_no[0] : 0;
	free(r->step_no);
	r->step_no = NULL;
}

void gp_rank_tables_free(gp_rank_tables_t *t)
{
	for (unsigned i = 0; i < t->nk; i++)
		free(t->k[i].name);
	for (unsigned i = 0; i < t->nr; i++)
		free(t->r[i].name);
	free(t->k);
	free(t->r);
	memset(t, 0, sizeof(*t));
}

/* Analyse one rank file into r and t through a job of this rank alone (scratch, whose
 * tables move into t). */
static int analyse_file(const char *path, gp_rank_t *r, gp_rank_tables_t *t, gp_job_t *scratch,
                        rank_data_t *rd, int steps_from)
{
	memset(scratch, 0, sizeof(*scratch));
	scratch->steps_from = steps_from;
	int rc = load_rank(scratch, path, r, rd);
	u64map_free(&scratch->kidx);
	u64map_free(&scratch->ridx);
	memset(t, 0, sizeof(*t));
	t->k = scratch->k, t->nk = scratch->nk;
	t->r = scratch->r, t->nr = scratch->nr;
	memcpy(t->job, scratch->job, sizeof(t->job));
	t->ntasks_expected = scratch->ntasks_expected;
	t->src = rd->src;
	t->src_ok = rc == 0 && rd->src_ok;
	scratch->k = NULL, scratch->nk = 0;
	scratch->r = NULL, scratch->nr = 0;
	if (rc < 0)
		gp_rank_release(r);
	return rc;
}

/* Which of a rank's processes trained: the one whose optimizer stepped most, else the
 * one with the most GPU work, then the most API calls, then steps; the task's own file
 * (index 0) among equals. */
static bool trained_more(const gp_rank_t *a, const gp_rank_t *b)
{
	if (a->torch.opt_steps != b->torch.opt_steps)
		return a->torch.opt_steps > b->torch.opt_steps;
	if (a->kernels_total != b->kernels_total)
		return a->kernels_total > b->kernels_total;
	if (a->nsteps != b->nsteps)
		return a->nsteps > b->nsteps;
	return false;
}

/* The task's own figures, which no other process of the rank has: how the task ended,
 * what it used, and the GPUs the agent sampled. */
static void take_task_figures(gp_rank_t *r, const gp_rank_t *task)
{
	r->has_end = task->has_end;
	r->wait_status = task->wait_status;
	r->status_unknown = task->status_unknown;
	r->wall_ns = task->wall_ns;
	r->cpu_us = task->cpu_us;
	r->maxrss_kib = task->maxrss_kib;
	r->nvml_mem_max = task->nvml_mem_max;
	r->nvml_samples = task->nvml_samples;
	r->nvml_util_mean = task->nvml_util_mean;
	memcpy(r->io_Bps, task->io_Bps, sizeof(r->io_Bps));
	memcpy(r->io_peak_Bps, task->io_peak_Bps, sizeof(r->io_peak_Bps));
	r->io_bits = task->io_bits;
	r->nxid = task->nxid;
	r->ecc_corrected = task->ecc_corrected;
	r->ecc_uncorrected = task->ecc_uncorrected;
	r->first_xid = task->first_xid;
	r->first_xid_ns = task->first_xid_ns;
	memcpy(r->nvml_limits, task->nvml_limits, sizeof(r->nvml_limits));
	if (!r->gpu_uuid[0]) {
		memcpy(r->gpu_uuid, task->gpu_uuid, sizeof(r->gpu_uuid));
		r->gpu_total = task->gpu_total;
	}
	for (int k = 0; k < GP_LOSS_N && k < 16; k++)
		if (task->loss[k] > r->loss[k])
			r->loss[k] = task->loss[k];
	r->lost_any |= task->lost_any;
}

static void describe_proc(struct gp_proc *p, const gp_rank_t *r, bool trainer)
{
	p->pid = r->pid;
	p->trainer = trainer;
	p->steps = r->nsteps;
	p->opt_steps = r->torch.opt_steps;
	p->kernels = r->kernels_total;
	p->api_calls = r->launches_matched;
	p->mem_peak = r->mem_peak;
	p->has_end = r->has_end;
	p->status_unknown = r->status_unknown;
	p->wait_status = r->wait_status;
	snprintf(p->command, sizeof(p->command), "%s", r->command);
}

/* A rank whose task ran more than one process that recorded (rankR.gpr and
 * rankR.pidP.gpr): each analysed on its own, the one that trained taken for the rank
 * with the task's outcome and NVML, the others listed beside it. */
static void analyse_procs(rank_sum_t *s, gp_job_t *scratch, rank_data_t *rd, int steps_from)
{
	unsigned n = s->nsides + 1, best = 0, ok = 0, foreign = 0;
	gp_rank_t *r = calloc(n, sizeof(*r));
	gp_rank_tables_t *t = calloc(n, sizeof(*t));
	bool *good = calloc(n, sizeof(*good));
	if (!r || !t || !good)
		goto out;
	for (unsigned i = 0; i < n; i++) {
		good[i] = analyse_file(i ? s->sides[i - 1] : s->path, &r[i], &t[i], scratch, rd,
		                       steps_from) == 0;
		/* a file another agent wrote (an earlier run into the same directory) is not a
		 * process of this rank */
		if (good[i] && i && good[0] && r[0].agent_pid && r[i].agent_pid &&
		    r[i].agent_pid != r[0].agent_pid) {
			gp_rank_release(&r[i]);
			gp_rank_tables_free(&t[i]);
			good[i] = false;
			foreign++;
		}
		ok += good[i];
		if (good[i] && (!good[best] || trained_more(&r[i], &r[best])))
			best = i;
	}
	if (!ok) {
		s->nunreadable = scratch->nunreadable;
		s->unreadable = scratch->nunreadable ? strdup(scratch->unreadable) : NULL;
		goto out;
	}
	struct {
		bool has, unknown;
		int status;
	} trainer_end = {r[best].has_end, r[best].status_unknown, r[best].wait_status};
	s->r = r[best];
	s->t = t[best];
	memset(&r[best], 0, sizeof(r[best]));
	memset(&t[best], 0, sizeof(t[best]));
	if (best && good[0]) {
		take_task_figures(&s->r, &r[0]);
		/* the trainer is the program the agent started: the agent's status is its own;
		 * else (a process it started) the trainer's own end record, where it left one */
		if (s->r.pid && s->r.pid == r[0].child_pid && r[0].agent_end) {
			s->r.wait_status = r[0].agent_status;
			s->r.has_end = true;
			s->r.status_unknown = false;
		} else if (trainer_end.has) {
			s->r.wait_status = trainer_end.status;
			s->r.has_end = true;
			s->r.status_unknown = trainer_end.unknown;
		}
	}
	s->r.nprocs_all = ok;
	s->r.nprocs_foreign = foreign;
	/* the trainer first, then the others by their GPU work */
	describe_proc(&s->r.procs[s->r.nprocs++], &s->r, true);
	s->r.procs[0].has_end = trainer_end.has; /* its own end, not the task's */
	s->r.procs[0].status_unknown = trainer_end.unknown;
	s->r.procs[0].wait_status = trainer_end.status;
	for (unsigned k = 1; k < GP_PROCS; k++) {
		int pick = -1;
		for (unsigned i = 0; i < n; i++)
			if (good[i] && i != best && r[i].path &&
			    (pick < 0 || trained_more(&r[i], &r[pick])))
				pick = (int)i;
		if (pick < 0)
			break;
		describe_proc(&s->r.procs[s->r.nprocs++], &r[pick], false);
		gp_rank_release(&r[pick]);
		good[pick] = false;
	}
	s->ok = true;
out:
	for (unsigned i = 0; r && t && i < n; i++) {
		if (good && good[i])
			gp_rank_release(&r[i]);
		gp_rank_tables_free(&t[i]);
	}
	free(r);
	free(t);
	free(good);
}

static void analyse_one(rank_sum_t *s, gp_job_t *scratch, rank_data_t *rd, int steps_from)
{
	if (s->nsides) {
		analyse_procs(s, scratch, rd, steps_from);
		return;
	}
	/* summaries hold the default analysis only */
	bool sums = steps_from == GP_STEPS_AUTO && gp_setting_bool(GP_ENV_REPORT_SUMMARIES);
	if (sums && gp_summary_read(s->path, &s->r, &s->t) == 0) {
		s->ok = s->summary = true;
		return;
	}
	s->ok = analyse_file(s->path, &s->r, &s->t, scratch, rd, steps_from) == 0;
	if (!s->ok && scratch->nunreadable) {
		s->nunreadable = scratch->nunreadable;
		s->unreadable = strdup(scratch->unreadable);
	}
	/* for the next report; where the directory is not ours to write, not at all */
	if (sums && s->ok && gp_summary_wanted(s->path))
		gp_summary_write(s->path, &s->r, &s->t);
}

int gp_rank_summarize(const char *gpr, char *err, size_t errlen)
{
	gp_rank_t r;
	gp_rank_tables_t t;
	rank_data_t rd;
	gp_job_t *scratch = calloc(1, sizeof(*scratch));
	if (!scratch) {
		snprintf(err, errlen, "%s: out of memory", gpr);
		return -1;
	}
	memset(&rd, 0, sizeof(rd));
	rd.steps_from = GP_STEPS_AUTO;
	bool ok = analyse_file(gpr, &r, &t, scratch, &rd, GP_STEPS_AUTO) == 0;
	gp_rd_free(&rd);
	int rc = -1;
	if (!ok)
		snprintf(err, errlen, "%s", scratch->unreadable[0] ? scratch->unreadable : gpr);
	else if ((rc = gp_summary_write(gpr, &r, &t)) < 0 && errno == ESTALE) {
		/* replaced or changed while read: the report reads the file there now */
		gp_debug("%s changed while it was read; no summary of it", gpr);
		rc = 0;
	} else if (rc < 0)
		snprintf(err, errlen, "%s: cannot write its summary: %s", gpr, strerror(errno));
	if (ok)
		gp_rank_release(&r);
	gp_rank_tables_free(&t);
	free(scratch);
	return rc;
}

static void *pool_worker(void *arg)
{
	pool_t *p = arg;
	rank_data_t rd;
	gp_job_t *scratch = calloc(1, sizeof(*scratch));
	memset(&rd, 0, sizeof(rd));
	rd.steps_from = p->steps_from;
	for (unsigned i; scratch && (i = atomic_fetch_add(&p->next, 1)) < p->n;)
		analyse_one(&p->sums[i], scratch, &rd, p->steps_from);
	gp_rd_free(&rd);
	free(scratch);
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

static void analyse_batch(rank_sum_t *sums, unsigned n, unsigned nt, int steps_from)
{
	pool_t p = {.sums = sums, .n = n, .steps_from = steps_from};
	unsigned started = 0;
	pthread_t *t = calloc(nt ? nt : 1, sizeof(pthread_t));
	for (unsigned i = 1; t && i < nt; i++) /* this thread is the first worker */
		if (pthread_create(&t[started], NULL, pool_worker, &p) == 0)
			started++;
	pool_worker(&p);
	for (unsigned i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	free(t);
}

/* Merge one analysed rank into the job (in the order found), freeing its tables. */
static void merge_one(gp_job_t *job, rank_sum_t *s, unsigned *from_sum)
{
	if (s->ok) {
		*from_sum += s->summary;
		/* what the ranks' headers say of the job: its id (the first found), tasks */
		if (!job->job[0])
			snprintf(job->job, sizeof(job->job), "%s", s->t.job);
		if (s->t.ntasks_expected > job->ntasks_expected)
			job->ntasks_expected = s->t.ntasks_expected;
		job->ranks[job->nranks++] = s->r;
		gp_job_add_kernels(job, s->t.k, s->t.nk);
		gp_job_add_ranges(job, s->t.r, s->t.nr);
	} else if (s->nunreadable) {
		if (!job->nunreadable) /* the first one's reason */
			snprintf(job->unreadable, sizeof(job->unreadable), "%s",
			         s->unreadable ? s->unreadable : "");
		job->nunreadable += s->nunreadable;
	}
	gp_rank_tables_free(&s->t);
	free(s->unreadable);
}

/* A rank file to analyse, with the files of the rank's other processes. */
typedef struct rank_in {
	char *path;
	char **sides;
	unsigned nsides;
} rank_in_t;

static void (*progress_fn)(unsigned done, unsigned total);

void gp_job_set_progress(void (*fn)(unsigned done, unsigned total))
{
	progress_fn = fn;
}

/* Analyse and merge every rank of paths, a batch of a few per thread at a time. */
static void analyse_all(gp_job_t *job, rank_in_t *paths, unsigned n)
{
	unsigned nt = report_threads(n), from_sum = 0;
	unsigned batch = nt * 32 < 256 ? 256 : nt * 32;
	if (batch > n)
		batch = n;
	rank_sum_t *sums = calloc(batch ? batch : 1, sizeof(*sums));
	job->ranks = malloc((n ? n : 1) * sizeof(gp_rank_t));
	if (!sums || !job->ranks) {
		gp_warn("report: out of memory for %u ranks", n);
		free(sums);
		return;
	}
	for (unsigned lo = 0; lo < n; lo += batch) {
		unsigned m = n - lo < batch ? n - lo : batch;
		memset(sums, 0, m * sizeof(*sums));
		for (unsigned i = 0; i < m; i++) {
			sums[i].path = paths[lo + i].path;
			sums[i].sides = paths[lo + i].sides;
			sums[i].nsides = paths[lo + i].nsides;
		}
		analyse_batch(sums, m, nt < m ? nt : m, job->steps_from);
		for (unsigned i = 0; i < m; i++)
			merge_one(job, &sums[i], &from_sum);
		if (progress_fn)
			progress_fn(lo + m, n);
	}
	free(sums);
	gp_debug("report: %u rank(s) from their summaries, %u from their rank files", from_sum,
	         job->nranks - from_sum);
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
	if (!summary && strncmp(t - 4, ".gpr", 4))
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
		if (!strcmp(r->step, "batch") && !r->kernels_total && !r->nmemcpy && !r->nsteps &&
		    job->nranks > 1 && !job->batch.seen) {
			job->batch.seen = true;
			job->batch.has_end = r->has_end;
			job->batch.wait_status = r->wait_status;
			job->batch.wall_ns = r->wall_ns;
			snprintf(job->batch.command, sizeof(job->batch.command), "%s", r->command);
			gp_rank_release(r);
			continue;
		}
		job->ranks[n++] = *r;
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
		const char *slash = r->path ? strrchr(r->path, '/') : NULL;
		if (r->has_end || !strcmp(r->wrapped, "agent") || r->pid <= 0 || !slash)
			continue;
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - r->path), r->path);
		if (node_status(job, dir, r->rank, r->pid, &r->wait_status))
			r->status_from_node = true;
	}
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
		sd = opendir(sub);
		if (!sd)
			continue;
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
	if (paths.n)
		analyse_all(job, paths.v, (unsigned)paths.n);
	node_statuses(job);
	for (size_t i = 0; i < paths.n; i++) {
		free(paths.v[i].path);
		for (unsigned k = 0; k < paths.v[i].nsides; k++)
			free(paths.v[i].sides[k]);
		free(paths.v[i].sides);
	}
	VEC_FREE(paths);
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
	if (job->nr)
		qsort(job->r, job->nr, sizeof(gp_rstat_t), cmp_rstat);
	double *med = calloc(job->nranks, sizeof(double));
	unsigned nm = 0;
	for (unsigned i = 0; med && i < job->nranks; i++) {
		const gp_rank_t *r = &job->ranks[i];
		if (!r->nstep_ms)
			continue;
		med[nm++] = r->step_median_ms;
		if (!job->step_basis[0])
			snprintf(job->step_basis, sizeof(job->step_basis), "%s", r->step_basis);
		else if (strcmp(job->step_basis, r->step_basis))
			snprintf(job->step_basis, sizeof(job->step_basis), "mixed");
	}
	job->step_median_ms = gp_median(med, nm);
	free(med);
	return 0;
}

void gp_job_free(gp_job_t *job)
{
	for (unsigned i = 0; i < job->nranks; i++)
		gp_rank_release(&job->ranks[i]);
	free(job->ranks);
	free(job->launchers);
	for (unsigned i = 0; i < job->nk; i++)
		free(job->k[i].name);
	free(job->k);
	for (unsigned i = 0; i < job->nr; i++)
		free(job->r[i].name);
	free(job->r);
	u64map_free(&job->kidx);
	u64map_free(&job->ridx);
	memset(job, 0, sizeof(*job));
}
