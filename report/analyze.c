/* One rank's analysis (analyze.h): the only way from a rank file to figures. The file is
 * loaded into typed arrays (load.c) and run through the passes in order (rankdata.h):
 * steps, capture, GPU time, ranges, memory, start-up, time series. A rank whose task ran
 * more than one process that recorded is analysed process by process, and the one that
 * trained is the rank. The job report (job.c), the agent's summary (summary.c) and every
 * export call gp_rank_analyse, so a step is decided once, with the header's step range. */
#include "config.h"
#include "analyze.h"
#include "job.h"
#include "log.h"
#include "rankdata.h"
#include "rankfile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	r->id.rank = (h = gp_rf_header(rd, GP_HDR_RANK)) ? atoi(h) : 0;
	r->id.pid = (h = gp_rf_header(rd, GP_HDR_PID)) ? atoi(h) : 0;
	r->id.agent_pid = (h = gp_rf_header(rd, GP_HDR_AGENT_PID)) ? atoi(h) : 0;
	if ((h = gp_rf_header(rd, GP_HDR_NODE)))
		snprintf(r->id.node, sizeof(r->id.node), "%s", h);
	if ((h = gp_rf_header(rd, GP_HDR_STEP)))
		snprintf(r->id.step, sizeof(r->id.step), "%s", h);
	if ((h = gp_rf_header(rd, GP_HDR_WRAPPED)))
		snprintf(r->quality.wrapped, sizeof(r->quality.wrapped), "%s", h);
	if ((h = gp_rf_header(rd, GP_HDR_NVML_LIMITS)))
		snprintf(r->io.nvml_limits, sizeof(r->io.nvml_limits), "%s", h);
	if ((h = gp_rf_header(rd, GP_HDR_COMMAND)))
		snprintf(r->id.command, sizeof(r->id.command), "%s", h);
	if ((h = gp_rf_header(rd, GP_HDR_USER)))
		snprintf(r->id.user, sizeof(r->id.user), "%s", h);
	if ((h = gp_rf_header(rd, GP_HDR_MODES)))
		snprintf(r->id.modes, sizeof(r->id.modes), "%s", h);
	if ((h = gp_rf_header(rd, GP_HDR_JOB_NAME)))
		snprintf(r->id.job_name, sizeof(r->id.job_name), "%s", h);
	if (!job->job[0] && (h = gp_rf_header(rd, GP_HDR_JOB)))
		snprintf(job->job, sizeof(job->job), "%s", h);
	if ((h = gp_rf_header(rd, GP_HDR_NTASKS)))
		job->ntasks_expected = (unsigned)atoi(h) > job->ntasks_expected
		                           ? (unsigned)atoi(h)
		                           : job->ntasks_expected;
	gp_rd_header_steps(c->d, rd);
}

static int load_rank(gp_job_t *job, const char *path, gp_rank_t *r, rank_data_t *dp)
{
	char err[512];
#define d (*dp)
	memset(r, 0, sizeof(*r));
	if (!(r->id.path = strdup(path)))
		return -1;
	struct hdr_ctx ctx = {job, r, dp};
	if (gp_rd_load_file(path, dp, r, read_header, &ctx, err, sizeof(err)) < 0) {
		if (!job->nunreadable++)
			snprintf(job->unreadable, sizeof(job->unreadable), "%s", err);
		return gp_warn("%s", err);
	}
	r->id.start_realtime_ns = d.hdr_realtime;
	r->id.t0_realtime_ns =
	    d.hdr_realtime + (d.first_ts > d.hdr_monotonic ? d.first_ts - d.hdr_monotonic : 0);

	gp_pass_steps(r, dp);
	gp_pass_capture(r, dp);
	gp_pass_own(r, dp);
	gp_pass_gpu(r, dp);
	gp_pass_ranges(job, r, dp);
	gp_pass_memory(r, dp);
	gp_pass_startup(r, dp);
	gp_pass_time_series(r, dp);
	r->steps.snapshot_ns = d.win_hi ? d.win_hi : d.last_ts;
	/* the post-warm-up steps whose kernels compute_ns holds: with windows the traced */
	unsigned per = r->capture.window ? r->capture.steps : r->steps.n_post;
	if (per)
		r->gpu.kernel_gpu_per_step_ms = (double)r->gpu.compute_ns / 1e6 / per;
	/* only where the traced steps are the untraced ones stretched by tracing: where they
	 * ran faster, the steps are not alike across the run (an input-bound job's first
	 * window) and no share carries over */
	if (r->capture.window && r->capture.steps && r->capture.nuntraced &&
	    r->capture.untraced_median_ms > 0 && r->capture.tracer_ms_per_step > 0 &&
	    r->gpu.busy_ns) {
		double busy = (double)r->gpu.busy_ns / 1e6 / r->capture.steps;
		double pct = 100 * busy / r->capture.untraced_median_ms;
		r->gpu.busy_pct_untraced = pct < 100 ? pct : 100;
	}
	r->memory.oom_calls = d.oom_count;
	r->memory.oom_step = -1;
	if (d.oom_count) {
		size_t s = gp_step_at(dp, d.oom_ts);
		r->memory.oom_step =
		    s ? (int)s - 1
		      : (d.steps.n && d.oom_ts > d.steps.v[0].start ? (int)d.steps.n - 1 : -1);
		r->memory.oom_t_ns = d.oom_ts > d.first_ts ? d.oom_ts - d.first_ts : 0;
	}
	gp_merge_kernels(job, r, dp);
	return 0;
#undef d
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

/* Analyse one rank file into r and t through a job of this rank alone (scratch, whose
 * tables move into t). */
static int analyse_file(const char *path, gp_rank_t *r, gp_rank_tables_t *t, gp_job_t *scratch,
                        rank_data_t *rd)
{
	int steps_from = scratch->steps_from;
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

/* The process is the program the agent started (program: its pid, from the task's own
 * file; a process's file of its own names itself there), not a helper or worker it
 * started, and it has steps. */
static bool started_and_stepped(const gp_rank_t *r, int program)
{
	return program && r->id.pid == program && r->steps.n;
}

/* Which of a rank's processes trained: the one whose optimizer stepped most, else the
 * one with the most GPU work; with neither to tell them apart (modes without cuda), the
 * program the agent started where it has steps (a helper repeating more, shorter ranges,
 * 'prefetch', is not the trainer: issue 51), then the most steps; the task's own file
 * (index 0) among equals. */
static bool trained_more(const gp_rank_t *a, const gp_rank_t *b, int program)
{
	if (a->torch.opt_steps != b->torch.opt_steps)
		return a->torch.opt_steps > b->torch.opt_steps;
	if (a->gpu.kernels_total != b->gpu.kernels_total)
		return a->gpu.kernels_total > b->gpu.kernels_total;
	if (started_and_stepped(a, program) != started_and_stepped(b, program))
		return started_and_stepped(a, program);
	if (a->steps.n != b->steps.n)
		return a->steps.n > b->steps.n;
	return false;
}

/* The task's own figures, which no other process of the rank has: how the task ended,
 * what it used, and the GPUs the agent sampled. */
static void take_task_figures(gp_rank_t *r, const gp_rank_t *task)
{
	r->outcome.has_end = task->outcome.has_end;
	r->outcome.wait_status = task->outcome.wait_status;
	r->outcome.status_unknown = task->outcome.status_unknown;
	r->outcome.wall_ns = task->outcome.wall_ns;
	r->outcome.cpu_us = task->outcome.cpu_us;
	r->outcome.maxrss_kib = task->outcome.maxrss_kib;
	r->memory.nvml_max = task->memory.nvml_max;
	r->gpu.nvml_samples = task->gpu.nvml_samples;
	r->gpu.nvml_util_mean = task->gpu.nvml_util_mean;
	r->gpu.nvml_proc_samples = task->gpu.nvml_proc_samples;
	r->gpu.nvml_procs_refused = task->gpu.nvml_procs_refused;
	r->gpu.nvml_own_procs = task->gpu.nvml_own_procs;
	r->gpu.nvml_other_procs = task->gpu.nvml_other_procs;
	r->gpu.nvml_own_bytes = task->gpu.nvml_own_bytes;
	r->gpu.nvml_rise = task->gpu.nvml_rise;
	memcpy(r->io.Bps, task->io.Bps, sizeof(r->io.Bps));
	memcpy(r->io.peak_Bps, task->io.peak_Bps, sizeof(r->io.peak_Bps));
	r->io.bits = task->io.bits;
	r->faults.nxid = task->faults.nxid;
	r->faults.ecc_corrected = task->faults.ecc_corrected;
	r->faults.ecc_uncorrected = task->faults.ecc_uncorrected;
	r->faults.first_xid = task->faults.first_xid;
	r->faults.first_xid_ns = task->faults.first_xid_ns;
	memcpy(r->io.nvml_limits, task->io.nvml_limits, sizeof(r->io.nvml_limits));
	if (!r->id.gpu_uuid[0]) {
		memcpy(r->id.gpu_uuid, task->id.gpu_uuid, sizeof(r->id.gpu_uuid));
		r->id.gpu_total = task->id.gpu_total;
		memcpy(r->id.gpu_name, task->id.gpu_name, sizeof(r->id.gpu_name));
	}
	for (int k = 0; k < GP_LOSS_N && k < 16; k++)
		if (task->quality.loss[k] > r->quality.loss[k])
			r->quality.loss[k] = task->quality.loss[k];
	r->quality.lost_any |= task->quality.lost_any;
}

/* Another process's losses added to the rank's (each process has a ring of its own) */
static void add_losses(gp_rank_t *r, const gp_rank_t *other)
{
	for (int k = 0; k < GP_LOSS_N && k < 16; k++)
		r->quality.loss[k] += other->quality.loss[k];
	r->quality.drops_ring += other->quality.drops_ring;
	r->quality.drops_cupti += other->quality.drops_cupti;
	r->quality.drops_table += other->quality.drops_table;
	r->quality.drops_cap += other->quality.drops_cap;
	r->quality.lost_any |= other->quality.lost_any;
}

static void describe_proc(struct gp_proc *p, const gp_rank_t *r, bool trainer)
{
	p->pid = r->id.pid;
	p->trainer = trainer;
	p->steps = r->steps.n;
	p->opt_steps = r->torch.opt_steps;
	p->kernels = r->gpu.kernels_total;
	p->api_calls = r->gpu.launches_matched;
	p->mem_peak = r->memory.peak;
	p->has_end = r->outcome.has_end;
	p->status_unknown = r->outcome.status_unknown;
	p->wait_status = r->outcome.wait_status;
	snprintf(p->command, sizeof(p->command), "%s", r->id.command);
}

/* A rank whose task ran more than one process that recorded (rankR.gpr and
 * rankR.pidP.gpr): each analysed on its own, the one that trained taken for the rank
 * with the task's outcome and NVML, the others listed beside it. */
static int analyse_procs(const char *path, const gp_rank_opts_t *o, gp_rank_t *out,
                         gp_rank_tables_t *tout, gp_job_t *scratch, rank_data_t *rd)
{
	unsigned n = o->nsides + 1, best = 0, ok = 0, foreign = 0;
	int program = 0; /* the program the agent started, as the task's own file says */
	gp_rank_t *r = calloc(n, sizeof(*r));
	gp_rank_tables_t *t = calloc(n, sizeof(*t));
	bool *good = calloc(n, sizeof(*good));
	int rc = -1;
	if (!r || !t || !good)
		goto out;
	for (unsigned i = 0; i < n; i++) {
		good[i] = analyse_file(i ? o->sides[i - 1] : path, &r[i], &t[i], scratch, rd) == 0;
		/* a file another agent wrote (an earlier run into the same directory) is not a
		 * process of this rank */
		if (good[i] && i && good[0] && r[0].id.agent_pid && r[i].id.agent_pid &&
		    r[i].id.agent_pid != r[0].id.agent_pid) {
			gp_rank_release(&r[i]);
			gp_rank_tables_free(&t[i]);
			good[i] = false;
			foreign++;
		}
		ok += good[i];
		if (i == 0 && good[0])
			program = r[0].id.child_pid;
		if (good[i] && (!good[best] || trained_more(&r[i], &r[best], program)))
			best = i;
	}
	if (!ok)
		goto out;
	struct {
		bool has, unknown;
		int status;
	} trainer_end = {r[best].outcome.has_end, r[best].outcome.status_unknown,
	                 r[best].outcome.wait_status};
	*out = r[best];
	*tout = t[best];
	memset(&r[best], 0, sizeof(r[best]));
	memset(&t[best], 0, sizeof(t[best]));
	if (best && good[0]) {
		take_task_figures(out, &r[0]);
		/* the trainer is the program the agent started: the agent's status is its own;
		 * else (a process it started) the trainer's own end record, where it left one,
		 * unless the task failed: its failure is the rank's (the trainer's own end is
		 * listed with the processes) */
		if (out->id.pid && out->id.pid == r[0].id.child_pid && r[0].outcome.agent_end) {
			out->outcome.wait_status = r[0].outcome.agent_status;
			out->outcome.has_end = true;
			out->outcome.status_unknown = false;
		} else if (trainer_end.has && !gp_rank_task_failed(&r[0])) {
			out->outcome.wait_status = trainer_end.status;
			out->outcome.has_end = true;
			out->outcome.status_unknown = trainer_end.unknown;
		}
	}
	/* what the rank's other processes lost is the rank's loss too: a helper whose file
	 * the spool could not hold lost 777 000 records while the report said "complete,
	 * nothing dropped" (the task's file, r[0], was taken above) */
	for (unsigned i = 0; i < n; i++)
		if (good[i] && i != best && !(i == 0 && best))
			add_losses(out, &r[i]);
	out->procs.nall = ok;
	out->procs.nforeign = foreign;
	for (unsigned i = 0; i < n; i++) /* any process of the task that initialised CUDA */
		if (good[i] && i != best)
			out->gpu.cuda_inits += r[i].gpu.cuda_inits;
	/* the trainer first, then the others by their GPU work */
	describe_proc(&out->procs.p[out->procs.n++], out, true);
	out->procs.p[0].has_end = trainer_end.has; /* its own end, not the task's */
	out->procs.p[0].status_unknown = trainer_end.unknown;
	out->procs.p[0].wait_status = trainer_end.status;
	for (unsigned k = 1; k < GP_PROCS; k++) {
		int pick = -1;
		for (unsigned i = 0; i < n; i++)
			if (good[i] && i != best && r[i].id.path &&
			    (pick < 0 || trained_more(&r[i], &r[pick], program)))
				pick = (int)i;
		if (pick < 0)
			break;
		describe_proc(&out->procs.p[out->procs.n++], &r[pick], false);
		gp_rank_release(&r[pick]);
		good[pick] = false;
	}
	rc = 0;
out:
	for (unsigned i = 0; r && t && i < n; i++) {
		if (good && good[i])
			gp_rank_release(&r[i]);
		gp_rank_tables_free(&t[i]);
	}
	free(r);
	free(t);
	free(good);
	return rc;
}

int gp_rank_analyse(const char *path, const gp_rank_opts_t *o, gp_rank_t *r, gp_rank_tables_t *t,
                    rank_data_t *d, char *err, size_t errlen)
{
	static const gp_rank_opts_t defaults = {.steps_from = GP_STEPS_AUTO};
	if (!o)
		o = &defaults;
	memset(r, 0, sizeof(*r));
	memset(t, 0, sizeof(*t));
	/* a job of this rank alone: gp_pass_ranges and gp_merge_kernels fill its tables,
	 * which move into t */
	gp_job_t *scratch = calloc(1, sizeof(*scratch));
	if (!scratch) {
		snprintf(err, errlen, "%s: out of memory", path);
		return -1;
	}
	scratch->steps_from = o->steps_from;
	d->steps_from = o->steps_from;
	d->owner = o->owned ? o->owner : (uid_t)-1;
	int rc = o->nsides ? analyse_procs(path, o, r, t, scratch, d)
	                   : analyse_file(path, r, t, scratch, d);
	if (rc < 0)
		snprintf(err, errlen, "%s", scratch->unreadable[0] ? scratch->unreadable : path);
	else
		gp_rank_derive(r);
	free(scratch);
	return rc;
}
