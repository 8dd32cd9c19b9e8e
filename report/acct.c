/* The job's accounting figures (report.json "accounting", the accounting record of
 * common/acctrec.h): each profiled rank's wall time on its GPU split by cause, computed
 * once here from the rank's own sections, summed over ranks. The ledger sums these and
 * nothing else.
 *
 * A rank that ran kernels: its start-up (program start to the first step) is start-up;
 * the rest of its wall time is split in the shares the GPU timeline measured over the
 * steady state's span (gpu.span_ns: busy, exposed communication, and the idle time by
 * what the host did). Sampled capture measures the shares over its windows and applies
 * them to the untraced steps between (their step times are measured by markers, their
 * GPU timeline is not): the record says so in doc/admin.md. Where the report scaled the
 * windows' busy share to the untraced steps (gpu.busy_pct_untraced: tracing stretched the
 * windows' steps with idle time of its own), that share is the busy one, and the idle
 * causes keep their proportions in the rest: the job is charged its own time, not
 * gpuprof's, as the report's headline says it. A rank with a GPU and no
 * kernel is unused where the evidence says the task never used it (gp_rank_gpu_unused:
 * NVML's process lists, cuInit records), else unprofiled. A rank without a GPU adds
 * nothing. A rank that ran kernels on several devices (one process driving them) is each
 * device's wall time, split by what that device did (rank_causes). */
#include "config.h"
#include "job.h"
#include "json.h"
#include "strhash.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The rank's wall time on one device whose busy time in the span was busy (the union's,
 * g->busy_ns, for a rank of one device) */
static void device_causes(const gp_rank_t *r, uint64_t busy, double s[GP_NCAUSES])
{
	const gp_gpu_t *g = &r->gpu;
	double wall = (double)r->outcome.wall_ns / 1e9;
	double st = r->startup.s < wall ? r->startup.s : wall, rest = wall - st;
	s[GP_CAUSE_STARTUP] += st;
	if (!g->span_ns || g->busy_ns > g->span_ns) {
		s[GP_CAUSE_UNPROFILED] += rest;
		return;
	}
	if (busy > g->span_ns)
		busy = g->span_ns;
	uint64_t exposed = g->comm_ns > g->overlap_ns ? g->comm_ns - g->overlap_ns : 0;
	if (exposed > g->busy_ns)
		exposed = g->busy_ns;
	uint64_t idle = g->span_ns - g->busy_ns;
	uint64_t known = g->idle_data_ns + g->idle_launch_ns + g->idle_sync_ns + g->idle_compile_ns;
	double per_ns = rest / (double)g->span_ns, busy_k = 1, idle_k = 1;
	double traced = (double)g->busy_ns / (double)g->span_ns, own = g->busy_pct_untraced / 100;
	if (own > 0 && traced > 0 && traced < 1) { /* the untraced steps' own busy share */
		busy_k = own / traced;
		idle_k = (1 - own) / (1 - traced);
	}
	if (busy != g->busy_ns) {
		/* one of a rank's several devices: its own busy time, communication in the
		 * rank's share of it; its idle time by the causes' shares of the rank's (what
		 * the host did, which all its devices waited on); the untraced steps' busy
		 * share scaled as the rank's, at most the whole span */
		double b = (double)busy, k = g->busy_ns ? b / (double)g->busy_ns : 0;
		double di = (double)(g->span_ns - busy), ik = idle ? di / (double)idle : 0;
		double tr = b / (double)g->span_ns, ow = tr * busy_k;
		if (ow > 1)
			ow = 1;
		busy_k = 1, idle_k = 1;
		if (own > 0 && tr > 0 && tr < 1)
			busy_k = ow / tr, idle_k = (1 - ow) / (1 - tr);
		s[GP_CAUSE_COMPUTE] += (b - (double)exposed * k) * per_ns * busy_k;
		s[GP_CAUSE_COMM] += (double)exposed * k * per_ns * busy_k;
		s[GP_CAUSE_INPUT] += (double)g->idle_data_ns * ik * per_ns * idle_k;
		s[GP_CAUSE_LAUNCH] += (double)g->idle_launch_ns * ik * per_ns * idle_k;
		s[GP_CAUSE_SYNC] += (double)g->idle_sync_ns * ik * per_ns * idle_k;
		s[GP_CAUSE_STARTUP] += (double)g->idle_compile_ns * ik * per_ns * idle_k;
		s[GP_CAUSE_IDLE] +=
		    (idle ? (double)(idle > known ? idle - known : 0) * ik : di) * per_ns * idle_k;
		return;
	}
	s[GP_CAUSE_COMPUTE] += (double)(g->busy_ns - exposed) * per_ns * busy_k;
	s[GP_CAUSE_COMM] += (double)exposed * per_ns * busy_k;
	s[GP_CAUSE_INPUT] += (double)g->idle_data_ns * per_ns * idle_k;
	s[GP_CAUSE_LAUNCH] += (double)g->idle_launch_ns * per_ns * idle_k;
	s[GP_CAUSE_SYNC] += (double)g->idle_sync_ns * per_ns * idle_k;
	s[GP_CAUSE_STARTUP] += (double)g->idle_compile_ns * per_ns * idle_k;
	s[GP_CAUSE_IDLE] += (double)(idle > known ? idle - known : 0) * per_ns * idle_k;
}

/* The GPUs of a job's ranks that drive several devices, by NVML UUID (gp_strhash | 1):
 * the devices ranks ran most on, sorted, and the other devices counted so far, an
 * open-addressed set; built only where a rank ran kernels on several devices */
typedef struct devset {
	uint64_t *mains, *counted;
	size_t nmains, cap;
} devset_t;

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void devset_init(devset_t *ds, const gp_job_t *job)
{
	memset(ds, 0, sizeof(*ds));
	bool several = false;
	for (unsigned i = 0; i < job->nranks; i++)
		several |= job->ranks[i].gpu.devices > 1;
	if (!several || !(ds->mains = calloc(job->nranks, sizeof(uint64_t))))
		return;
	for (unsigned i = 0; i < job->nranks; i++) {
		const gp_rank_t *r = &job->ranks[i];
		if (r->gpu.kernels_total && r->id.gpu_uuid[0])
			ds->mains[ds->nmains++] =
			    gp_strhash(r->id.gpu_uuid, strlen(r->id.gpu_uuid)) | 1;
	}
	qsort(ds->mains, ds->nmains, sizeof(uint64_t), cmp_u64);
	for (ds->cap = 16; ds->cap < 16 * (size_t)job->nranks; ds->cap *= 2)
		;
	if (!(ds->counted = calloc(ds->cap, sizeof(uint64_t))))
		ds->cap = 0;
}

/* Device dv of rank r, not the one it ran most on, is a GPU of its own: unless a rank runs
 * mostly on it (a DDP rank's stray kernels on GPU 0 are rank 0's GPU) or an earlier rank
 * counted it already (by NVML UUID); a device of no known UUID is one of its own */
static bool own_device(devset_t *ds, const gp_rank_t *r, unsigned dv)
{
	uint64_t u = r->gpu.dev_uuid_h[dv];
	if (!u)
		return true;
	if (ds->nmains && bsearch(&u, ds->mains, ds->nmains, sizeof(uint64_t), cmp_u64))
		return false;
	if (!ds->cap)
		return true;
	size_t k = u & (ds->cap - 1);
	for (; ds->counted[k]; k = (k + 1) & (ds->cap - 1))
		if (ds->counted[k] == u)
			return false;
	ds->counted[k] = u; /* at most 8 a rank: the set stays half empty */
	return true;
}

/* A rank's wall time on each device it ran kernels on (gpu.devices: one process may drive
 * several, JAX's local devices, HF device_map="auto", DataParallel): each device's compute
 * and idle time by what that device did (gpu.dev_busy_ns), its idle time split by the
 * rank's causes (the host the devices waited on is one), so a rank of 8 devices is 8 GPUs'
 * wall time, never 1 used and 7 "allocated, unused". A device another rank runs on
 * (own_device) is that rank's. The GPUs it adds beyond its own main one: the result. */
static unsigned rank_causes(devset_t *ds, const gp_rank_t *r, double s[GP_NCAUSES])
{
	const gp_gpu_t *g = &r->gpu;
	double wall = (double)r->outcome.wall_ns / 1e9;
	if (!g->kernels_total) {
		/* unused only where the evidence says the task never used its GPU (NVML's
		 * process lists, cuInit records: gp_rank_gpu_unused); without it, unprofiled */
		s[gp_rank_gpu_unused(r) ? GP_CAUSE_UNUSED : GP_CAUSE_UNPROFILED] += wall;
		return 0;
	}
	unsigned extra = 0;
	bool own[8] = {false};
	for (unsigned d = 0; g->devices > 1 && d < 8; d++)
		if (d != g->main_dev && (g->dev_ran >> d & 1) && own_device(ds, r, d))
			own[d] = true, extra++;
	if (!extra) {
		device_causes(r, g->busy_ns, s);
		return 0;
	}
	device_causes(r, g->dev_busy_ns[g->main_dev], s);
	for (unsigned d = 0; d < 8; d++)
		if (own[d])
			device_causes(r, g->dev_busy_ns[d], s);
	return extra;
}

/* a rank that had a GPU: NVML named one, or it ran kernels */
static bool had_gpu(const gp_rank_t *r)
{
	return r->id.gpu_uuid[0] || r->gpu.kernels_total;
}

void gp_job_accounting(gp_job_t *job)
{
	gp_acct_rec_t *a = &job->acct;
	memset(a, 0, sizeof(*a));
	devset_t ds;
	devset_init(&ds, job);
	for (unsigned i = 0; i < job->nranks; i++) {
		const gp_rank_t *r = &job->ranks[i];
		a->ranks++;
		/* the program's memory in use at its peak, as the report's card line says it
		 * (PyTorch's allocated, a framework pool's own figure): XLA's preallocated pool
		 * (75 % of the card, field-jax's 105 GiB of 876 MiB in use) is no need */
		const char *what;
		uint64_t peak = gp_rank_in_use_peak(r, &what);
		if (peak > a->peak_bytes) {
			a->peak_bytes = peak;
			a->card_bytes = r->id.gpu_total;
		}
		if (!had_gpu(r))
			continue;
		unsigned extra = rank_causes(&ds, r, a->s);
		if (!r->gpu.kernels_total)
			continue;
		/* GPUs by UUID (the device the rank ran most on); a rank without one is a GPU
		 * of its own; and the other devices of a rank that drives several (extra) */
		bool seen = false;
		for (unsigned k = 0; k < i && r->id.gpu_uuid[0]; k++)
			seen |= job->ranks[k].gpu.kernels_total &&
			        !strcmp(job->ranks[k].id.gpu_uuid, r->id.gpu_uuid);
		a->gpus += !seen + extra;
	}
	free(ds.mains);
	free(ds.counted);
	/* to the record's precision, so report.json and the record carry the same figures */
	for (int c = 0; c < GP_NCAUSES; c++) {
		char b[64];
		snprintf(b, sizeof(b), "%.3f", a->s[c]);
		sscanf(b, "%lf", &a->s[c]);
	}
	char b[64];
	snprintf(b, sizeof(b), "%.3f", job->step_median_ms);
	sscanf(b, "%lf", &a->step_ms);
	snprintf(a->top, sizeof(a->top), "%s", job->nf ? job->f[0].id : "none");
	snprintf(a->dir, sizeof(a->dir), "%s", job->dir);
}

void gp_acct_json(const gp_job_t *job, FILE *out)
{
	const gp_acct_rec_t *a = &job->acct;
	fprintf(out, "{\"schema\": \"" GP_REC_TAG "%d\", \"ranks\": %u, \"gpus\": %u, \"gpu_s\": {",
	        GP_REC_VERSION, a->ranks, a->gpus);
	for (int c = 0; c < GP_NCAUSES; c++)
		fprintf(out, "%s\"%s\": %.3f", c ? ", " : "", gp_cause_key[c], a->s[c]);
	/* not measured is null here (the record line's 0, its format's: every key a number,
	 * and a ledger of an earlier version refuses any other value): no rank's steps, no
	 * rank's memory, a card of unknown size */
	fprintf(out, "}, \"step_ms\": ");
	gp_json_num(out, a->step_ms > 0, a->step_ms, 3);
	fprintf(out, ", \"peak_bytes\": ");
	gp_json_num(out, a->peak_bytes > 0, (double)a->peak_bytes, 0);
	fprintf(out, ", \"card_bytes\": ");
	gp_json_num(out, a->card_bytes > 0, (double)a->card_bytes, 0);
	fprintf(out, ", \"top\": \"%s\"}", a->top);
}
