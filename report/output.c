/* Report renderers: text for people, JSON for machines (schema in doc/report.md), and the
 * one-line summary that goes into the job's AdminComment. */
#include "config.h"
#include "admincomment.h"
#include "job.h"
#include "names.h"
#include "stats.h"
#include "event.h"
#include "fields.h"
#include "json.h"
#include "tables.h"
#include "wrap.h"

#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

/* "3" for a job of one step, "batch/0" when several steps are in the report */
static const char *label(const gp_job_t *job, const gp_rank_t *r)
{
	static char buf[4][48];
	static int k;
	char *b = buf[k++ & 3];
	bool steps = false;
	for (unsigned i = 1; i < job->nranks && !steps; i++)
		steps = strcmp(job->ranks[i].id.step, job->ranks[0].id.step) != 0;
	if (steps)
		snprintf(b, sizeof(buf[0]), "%.20s/%d", r->id.step, r->id.rank);
	else
		snprintf(b, sizeof(buf[0]), "%d", r->id.rank);
	return b;
}

static double pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0.0;
}

static void shorten(const char *name, char *out, size_t len)
{
	size_t n = strlen(name);
	if (n < len) {
		memcpy(out, name, n + 1);
	} else {
		size_t k = gp_utf8_back(name, len - 4);
		memcpy(out, name, k);
		strcpy(out + k, "...");
	}
	gp_text_safe(out);
}

static double io_rate(const gp_rank_t *r, int k)
{
	return r->io.Bps[k];
}

/* PCIe/NVLink traffic and GPU faults (mode gpu), only when something was sampled or
 * NVML said what it could not sample. */
/* Bytes scaled for a person ("392 MiB", "1.26 GiB", "64.0 MiB"), never "117760.0 MiB":
 * eight at a time in one printf (the exact bytes are report.json's) */
static const char *hb(double b)
{
	static char buf[8][24];
	static unsigned k;
	return gp_human_bytes(b, buf[k++ & 7], sizeof(buf[0]));
}

/* ---- large jobs: distributions across ranks and nodes, outliers named ---- */

/* Is rank r listed line by line? Every rank of a job up to GP_TEXT_RANKS, else only
 * those `report --ranks LIST` names. */
static bool listed(const gp_job_t *job, const gp_rank_t *r)
{
	if (job->have_detail)
		return gp_ranks_contains(&job->detail, (uint32_t)r->id.rank);
	return job->nranks <= GP_TEXT_RANKS;
}

static unsigned unlisted(const gp_job_t *job)
{
	unsigned n = 0;
	for (unsigned i = 0; i < job->nranks; i++)
		n += !listed(job, &job->ranks[i]);
	return n;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double q_of(const gp_fig_t *f, unsigned n, double q)
{
	return f[(unsigned)(q * (n - 1) + 0.5)].v;
}

/* A figure of a distribution: bytes scaled (unit "B"), else as it is with 3 decimals */
static const char *dist_fig(double v, const char *unit)
{
	static char buf[8][32];
	static unsigned k;
	char *b = buf[k++ & 7];
	if (!strcmp(unit, "B"))
		return gp_human_bytes(v, b, sizeof(buf[0]));
	snprintf(b, sizeof(buf[0]), "%.3f%s", v, unit);
	return b;
}

/* "  what: min V (rank a), median V, p95 V, max V (rank b); outliers: rank r V, ..."
 * over the ranks that have the figure (has: nonzero); outliers lie beyond the median by
 * more than 3 median absolute deviations, 10 % and floor (in the figure's unit), on the
 * side that is bad (bad > 0: high is bad), the 5 furthest first. */
static void dist_line(FILE *out, const gp_job_t *job, const char *what, const char *unit,
                      double (*get)(const gp_rank_t *), int bad, double floor)
{
	unsigned n = 0;
	gp_fig_t *f = malloc((job->nranks ? job->nranks : 1) * sizeof(*f));
	if (!f)
		return;
	for (unsigned i = 0; i < job->nranks; i++) {
		double v = get(&job->ranks[i]);
		if (v > 0)
			f[n++] = (gp_fig_t){v, i};
	}
	if (!n) {
		free(f);
		return;
	}
	qsort(f, n, sizeof(*f), gp_fig_cmp);
	double med = q_of(f, n, 0.5);
	fprintf(out, "  %-22s min %s (rank %d), median %s, p95 %s, max %s (rank %d) over %u ranks",
	        what, dist_fig(f[0].v, unit), job->ranks[f[0].i].id.rank, dist_fig(med, unit),
	        dist_fig(q_of(f, n, 0.95), unit), dist_fig(f[n - 1].v, unit),
	        job->ranks[f[n - 1].i].id.rank, n);
	double *dev = malloc(n * sizeof(double));
	if (dev) {
		for (unsigned k = 0; k < n; k++)
			dev[k] = fabs(f[k].v - med);
		qsort(dev, n, sizeof(double), cmp_double);
		double mad = dev[n / 2], lim = fmax(fmax(3 * mad, 0.10 * med), floor);
		unsigned shown = 0;
		for (unsigned k = 0; k < n && shown < 5; k++) {
			const gp_fig_t *x = bad > 0 ? &f[n - 1 - k] : &f[k];
			if ((bad > 0 ? x->v - med : med - x->v) <= lim)
				break;
			fprintf(out, "%s rank %d %s",
			        shown++ ? "," : "; outliers:", job->ranks[x->i].id.rank,
			        dist_fig(x->v, unit));
		}
		free(dev);
	}
	fprintf(out, "\n");
	free(f);
}

/* Per node: ranks, their median headline step and the largest device-memory peak; with
 * more than 32 nodes, the node medians' distribution with the slowest named. */

/* A node's name in a column of w columns: padded, or past w cut to whole characters
 * and "..." (gp_text_cut, in buf) */
static const char *node_cell(const char *name, int w, char *buf, size_t len)
{
	size_t used;
	char cut[256];
	gp_text_cut(name, (size_t)w, cut, sizeof(cut), &used);
	snprintf(buf, len, "%s%*s", cut, w - (int)used, "");
	return buf;
}
static void node_lines(FILE *out, const gp_job_t *job)
{
	const struct gp_node *nd = job->nodes;
	unsigned nn = job->nnodes;
	int nw = 4; /* the node names' column: the widest, 40 characters at most ("...") */
	for (unsigned k = 0; k < nn; k++) {
		int w = (int)gp_wrap_chars(nd[k].name, strlen(nd[k].name));
		nw = w > nw ? (w > 40 ? 40 : w) : nw;
	}
	for (unsigned k = 0; k < nn && nn <= 32; k++) {
		char nb[256];
		char ms[32] = "-"; /* no rank of it with steps: not measured */
		if (nd[k].step_median_ms > 0)
			snprintf(ms, sizeof(ms), "%.3f ms", nd[k].step_median_ms);
		fprintf(out, "  node %s %5u rank%s, median step %s, largest peak %s\n",
		        node_cell(nd[k].name, nw, nb, sizeof(nb)), nd[k].ranks,
		        nd[k].ranks == 1 ? "" : "s", ms, nd[k].peak ? hb((double)nd[k].peak) : "-");
	}
	if (nn > 32 && job->nnodes_timed) {
		const unsigned *by = job->node_by_step;
		unsigned nt = job->nnodes_timed; /* the nodes with steps: by[0 .. nt) */
		fprintf(out,
		        "  %u nodes%s: median step per node min %.3f, median %.3f, max %.3f ms; "
		        "slowest:",
		        nt, nt < nn ? " with steps" : "", nd[by[0]].step_median_ms,
		        job->node_step_median_ms, nd[by[nt - 1]].step_median_ms);
		for (unsigned k = 0; k < 5 && k < nt; k++)
			fprintf(out, "%s %s %.3f", k ? "," : "", nd[by[nt - 1 - k]].name,
			        nd[by[nt - 1 - k]].step_median_ms);
		fprintf(out, "\n");
	}
}

static double f_step(const gp_rank_t *r)
{
	return r->steps.median_ms;
}
static double f_step_p95(const gp_rank_t *r)
{
	return r->steps.p95_ms;
}
static double f_wall(const gp_rank_t *r)
{
	return r->outcome.wall_ns / 1e9;
}
/* the tables' figures (derive.c), across the ranks */
static double f_busy(const gp_rank_t *r)
{
	return r->shares.busy_pct;
}
static double f_hostwait(const gp_rank_t *r)
{
	return r->shares.idle_host_pct;
}
static double f_comm(const gp_rank_t *r)
{
	return r->shares.comm_only_pct;
}
static double f_sync(const gp_rank_t *r)
{
	return r->sync.ns / 1e6;
}
static double f_peak(const gp_rank_t *r)
{
	return (double)r->memory.peak;
}
static double f_growth(const gp_rank_t *r)
{
	return r->shares.growth_per_step;
}

/* After a table that listed some ranks only: the figures of all of them. */
static bool dist_header(FILE *out, const gp_job_t *job)
{
	unsigned u = unlisted(job);
	if (!u)
		return false;
	fprintf(out,
	        "%u of %u ranks not listed (report --ranks LIST lists them); across all ranks:\n",
	        u, job->nranks);
	return true;
}

/* ---- notes a rank at a time, said once for the ranks they hold for ---- */

/* A writer of one rank's notes: each a line "rank LABEL: ..." with its continuation lines
 * (indented) under it. */
typedef void (*rank_note_fn)(FILE *out, const char *label, const gp_rank_t *r);

#define NOTE_LABEL "\001" /* where a note's rank goes, until its group is known */

/* "rank 3", "ranks 0-2,5", "both ranks" or "all 64 ranks": the ranks of a group (the
 * job's order) */
static void group_phrase(const gp_job_t *job, const unsigned *who, unsigned n, char *b, size_t len)
{
	if (n == 1) {
		snprintf(b, len, "rank %s", label(job, &job->ranks[who[0]]));
		return;
	}
	if (n == job->nranks) {
		if (n == 2)
			snprintf(b, len, "both ranks");
		else
			snprintf(b, len, "all %u ranks", n);
		return;
	}
	size_t w = (size_t)snprintf(b, len, "ranks "), room = len > 32 ? len - 32 : 0;
	for (unsigned k = 0; k < n && w < len; k++) {
		const gp_rank_t *r = &job->ranks[who[k]];
		unsigned z = k; /* a run of consecutive ranks of one step: "4-9" */
		while (z + 1 < n &&
		       job->ranks[who[z + 1]].id.rank == job->ranks[who[z]].id.rank + 1 &&
		       !strcmp(job->ranks[who[z + 1]].id.step, r->id.step))
			z++;
		if (w >= room) { /* no list that reads complete when it is not */
			snprintf(b + w, len - w, ", ... (%u ranks)", n);
			return;
		}
		w += (size_t)snprintf(b + w, len - w, "%s%s", k ? "," : "", label(job, r));
		if (z > k && w < len)
			w += (size_t)snprintf(b + w, len - w, "-%d", job->ranks[who[z]].id.rank);
		k = z;
	}
}

/* Each listed rank's notes from fn, a note said once for all the ranks whose note reads
 * the same ("all 64 ranks: all 37 post-warm-up steps were traced ..."), in the order the
 * ranks first have them. */
static void rank_notes(FILE *out, const gp_job_t *job, rank_note_fn fn)
{
	unsigned n = job->nranks, nn = 0;
	char **note = calloc(n * 16 + 1, sizeof(char *)); /* up to 16 notes a rank */
	unsigned *of = calloc(n * 16 + 1, sizeof(unsigned)), *who = calloc(n + 1, sizeof(unsigned));
	if (!note || !of || !who)
		goto out;
	for (unsigned i = 0; i < n; i++) {
		char *buf = NULL;
		size_t len = 0;
		FILE *m;
		if (!listed(job, &job->ranks[i]) || !(m = open_memstream(&buf, &len)))
			continue;
		fn(m, NOTE_LABEL, &job->ranks[i]);
		fclose(m);
		/* cut into notes: a line that names the rank and the lines under it */
		for (char *p = buf, *q; p && *p && nn < n * 16; p = q) {
			q = strstr(p + 1, "\nrank " NOTE_LABEL);
			q = q ? q + 1 : p + strlen(p);
			note[nn] = strndup(p, (size_t)(q - p));
			of[nn++] = i;
		}
		free(buf);
	}
	for (unsigned a = 0; a < nn; a++) {
		if (!note[a])
			continue;
		unsigned g = 0;
		for (unsigned b = a; b < nn; b++)
			if (note[b] && (b == a || (of[b] != of[a] && !strcmp(note[b], note[a])))) {
				if (!g || who[g - 1] != of[b])
					who[g++] = of[b];
				if (b != a)
					free(note[b]), note[b] = NULL;
			}
		char phrase[256];
		group_phrase(job, who, g, phrase, sizeof(phrase));
		for (const char *p = note[a], *at; *p; p = at + strlen("rank " NOTE_LABEL)) {
			if (!(at = strstr(p, "rank " NOTE_LABEL))) {
				fputs(p, out);
				break;
			}
			fprintf(out, "%.*s%s", (int)(at - p), p, phrase);
		}
		free(note[a]), note[a] = NULL;
	}
out:
	for (unsigned a = 0; note && a < nn; a++)
		free(note[a]);
	free(note);
	free(of);
	free(who);
}

/* an owner's stack starts at this column; its frames go on under it */
#define OWNER_STACK 56
static void print_owners(FILE *out, const char *what, const gp_owner_t *o, unsigned n)
{
	for (unsigned k = 0; k < n; k++)
		if (o[k].tensors) /* 0: bytes no block accounts for (a peak the history missed) */
			gp_wrapf(out, OWNER_STACK, "       %-22s %9s %6llu tensors  %s\n", what,
			         hb((double)o[k].bytes), (unsigned long long)o[k].tensors,
			         o[k].stack);
		else
			gp_wrapf(out, OWNER_STACK, "       %-22s %9s %6s tensors  %s\n", what,
			         hb((double)o[k].bytes), "-", o[k].stack);
}

/* What PyTorch said about one rank: its steps from its optimizers, their state, its
 * caching allocator's figures and the owners of its peak, an out-of-memory error. */
static void torch_notes(FILE *out, const char *label, const gp_rank_t *r)
{
	const struct gp_torch *t = &r->torch;
	if (!t->seen)
		return;
	fprintf(out, "rank %s: %s\n", label, t->info.s ? gp_txt(t->info) : "(no summary)");
	if (t->opt_steps)
		fprintf(out,
		        "       optimizer.step(): %u calls, %.3f ms apart (median after "
		        "warm-up)%s\n",
		        t->opt_steps, t->opt_period_median_ms,
		        strcmp(r->steps.source, "optimizer") && r->steps.source[0]
		            ? "; the steps above are the program's own"
		            : "");
	for (unsigned k = 0; k < t->nopt && k < 8; k++)
		if (t->opt[k].what.s)
			fprintf(out,
			        "       optimizer %u state: %s (%s on the "
			        "GPU): %s\n",
			        k, hb(t->opt[k].bytes), hb(t->opt[k].device_bytes),
			        gp_txt(t->opt[k].what));
	if (t->max_allocated || t->max_reserved) {
		/* 0: not known (the peak's moment was not in the allocator history) */
		char unused[80] = "";
		if (t->frag_at_peak)
			snprintf(unused, sizeof(unused), ", reserved but unused at the peak %s",
			         hb(t->frag_at_peak));
		fprintf(out,
		        "       allocator: peak allocated %s, peak reserved %s%s; at the "
		        "end %s "
		        "/ %s; growth %s/step\n",
		        hb(t->max_allocated), hb(t->max_reserved), unused, hb(t->allocated_end),
		        hb(t->reserved_end), hb(t->growth_per_step));
	}
	if ((t->max_allocated || t->max_reserved) && r->memory.peak)
		fprintf(
		    out,
		    "       CUDA's own peak (every allocation CUPTI saw) %s: %s "
		    "outside PyTorch's caching allocator (NCCL buffers, libraries "
		    "calling cudaMalloc themselves)\n",
		    hb(r->memory.peak),
		    hb(r->memory.peak > t->max_reserved ? r->memory.peak - t->max_reserved : 0));
	print_owners(out, "live at the peak", gp_torch_owners(t, GP_OWN_PEAK), t->nowner);
	print_owners(out, "kept by recorded steps", gp_torch_owners(t, GP_OWN_GROW),
	             t->ngrow_owner);
	if (t->oom) {
		fprintf(out, "       CUDA out of memory: %s requested with %s free of %s\n",
		        hb(t->oom_requested), hb(t->oom_free), hb(t->oom_total));
		print_owners(out, "held at the OOM", gp_torch_owners(t, GP_OWN_OOM), t->noom_owner);
	}
	if (t->snap_peak.s || t->snap_oom.s || t->snap_exit.s) {
		/* the ones still there (the pipeline looked: snap_gone, bit 0 exit, 1 OOM,
		 * 2 peak); the gone ones are named in the data quality */
		const gp_text_t *nm[] = {&t->snap_exit, &t->snap_peak, &t->snap_oom};
		const unsigned bit[] = {1, 4, 2};
		unsigned shown = 0, gone = 0;
		fprintf(out, "       memory_viz pickles:");
		for (unsigned k = 0; k < 3; k++) {
			if (!nm[k]->s)
				continue;
			if (t->snap_gone & bit[k]) {
				gone++;
				continue;
			}
			fprintf(out, "%s %s", shown++ ? "," : "", gp_txt(*nm[k]));
		}
		if (shown)
			fprintf(out, " (open in pytorch.org/memory_viz)");
		if (gone)
			fprintf(out, "%s%u named by the rank file %s (data quality)",
			        shown ? "; " : " ", gone,
			        gp_snapshots_refused(r) ? "not readable beside it"
			                                : "gone from beside it");
		fprintf(out, "\n");
	}
	if (t->missing.s)
		fprintf(out, "       not collected: %s\n", gp_txt(t->missing));
}

/* What PyTorch said about itself (agent/python), rank by rank. */
static void print_torch(FILE *out, const gp_job_t *job)
{
	bool any = false; /* no heading with nothing under it: only listed ranks are said */
	for (unsigned i = 0; i < job->nranks; i++)
		any |= job->ranks[i].torch.seen && listed(job, &job->ranks[i]);
	if (!any)
		return;
	fprintf(out, "\n== The framework (its own figures: PyTorch, JAX) ==\n");
	rank_notes(out, job, torch_notes);
}

static void print_io(FILE *out, const gp_job_t *job)
{
	bool any = false;
	for (unsigned i = 0; i < job->nranks; i++) {
		const gp_rank_t *r = &job->ranks[i];
		any |= r->io.bits || r->faults.nxid || r->faults.ecc_corrected ||
		       r->faults.ecc_uncorrected || r->io.nvml_limits.s;
	}
	if (!any)
		return;
	fprintf(out, "\n== GPU I/O and health (NVML; transfer rates in MB/s) ==\n");
	fprintf(out, "%-8s %10s %10s %10s %10s %10s %10s %6s %8s\n", "rank", "PCIe tx", "PCIe rx",
	        "PCIe peak", "NVLink tx", "NVLink rx", "NVL peak", "Xid", "ECC u/c");
	for (unsigned i = 0; i < job->nranks; i++) {
		const gp_rank_t *r = &job->ranks[i];
		char ecc[32];
		snprintf(ecc, sizeof(ecc), "%llu/%llu",
		         (unsigned long long)r->faults.ecc_uncorrected,
		         (unsigned long long)r->faults.ecc_corrected);
		fprintf(out, "%-8s", label(job, r));
		for (int k = 0; k < 4; k += 2) {
			double pk = r->io.peak_Bps[k] > r->io.peak_Bps[k + 1]
			                ? r->io.peak_Bps[k]
			                : r->io.peak_Bps[k + 1];
			if (r->io.bits & (k ? GP_IO_NVLINK : GP_IO_PCIE))
				fprintf(out, " %10.1f %10.1f %10.1f", io_rate(r, k) / 1e6,
				        io_rate(r, k + 1) / 1e6, pk / 1e6);
			else
				fprintf(out, " %10s %10s %10s", "-", "-", "-");
		}
		fprintf(out, " %6llu %8s\n", (unsigned long long)r->faults.nxid, ecc);
		if (r->faults.nxid)
			fprintf(out, "       first Xid %u at %.3f s\n", r->faults.first_xid,
			        r->faults.first_xid_ns / 1e9);
		if (r->io.nvml_limits.s)
			fprintf(out, "       not sampled: %s\n", gp_txt(r->io.nvml_limits));
	}
}

/* The rank's processes in words, when more than one recorded. */
static void text_procs(FILE *out, const char *label, const gp_rank_t *r)
{
	if (r->procs.nforeign)
		fprintf(
		    out,
		    "rank %s: %u process file(s) beside it written by another agent (an earlier "
		    "run into this directory) left out\n",
		    label, r->procs.nforeign);
	if (r->procs.n < 2)
		return;
	fprintf(out,
	        "rank %s: %u processes recorded; the rank's figures are the one that trained:\n",
	        label, r->procs.nall);
	for (unsigned i = 0; i < r->procs.n; i++) {
		const struct gp_proc *p = &r->procs.p[i];
		gp_rank_t o = {.outcome.has_end = p->has_end,
		               .outcome.status_unknown = p->status_unknown,
		               .outcome.wait_status = p->wait_status};
		char b[64];
		gp_wrapf(out, 11,
		         "       pid %-7d %-7s %-10s %5u steps, %u optimizer steps, %llu kernels: "
		         "%.60s\n",
		         p->pid, p->trainer ? "trained" : "", gp_rank_outcome(&o, b, sizeof(b)),
		         p->steps, p->opt_steps, (unsigned long long)p->kernels,
		         gp_txt(p->command));
	}
}

/* Did any rank's framework say what its memory held (PyTorch's or XLA's figures)? */
static bool any_fw(const gp_job_t *job)
{
	for (unsigned i = 0; i < job->nranks; i++)
		if (job->ranks[i].torch.max_allocated || job->ranks[i].pool.seen)
			return true;
	return false;
}

/* Did any rank trace kernels in windows only (sampled or chosen steps)? */
static bool any_window(const gp_job_t *job)
{
	for (unsigned i = 0; i < job->nranks; i++)
		if (job->ranks[i].capture.window)
			return true;
	return false;
}

/* Start-up, per listed rank: how long from the program's start to its first step, and
 * what filled it (never part of the step figures). */
/* The rank recorded CUDA activity (kernels, copies, sets): its GPU figures are measured;
 * without it they are '-', never 0.000 (a CPU-only job, modes without cuda) */
static bool rank_cuda(const gp_rank_t *r)
{
	return r->gpu.kernels_total || r->gpu.nmemcpy || r->gpu.nmemset;
}

static void text_startup(const gp_job_t *job, FILE *out)
{
	bool any = false;
	for (unsigned i = 0; i < job->nranks; i++)
		any |= job->ranks[i].startup.s > 0 && listed(job, &job->ranks[i]);
	if (!any)
		return;
	fprintf(out, "\n== Start-up (the program's start to its first step; not in any step "
	             "figure) ==\n");
	for (unsigned i = 0; i < job->nranks; i++) {
		const gp_rank_t *r = &job->ranks[i];
		if (r->startup.s <= 0 || !listed(job, r))
			continue;
		char gb[32] = "-"; /* not measured: no CUDA activity recorded */
		if (rank_cuda(r))
			snprintf(gb, sizeof(gb), "%.3f s", r->startup.gpu_busy_s);
		fprintf(out, "rank %s: %.2f s; GPU busy %s of it", label(job, r), r->startup.s, gb);
		if (r->startup.compile_s > 0)
			fprintf(out, "; compilation the framework reported %.2f s",
			        r->startup.compile_s);
		if (r->startup.alloc_bytes)
			fprintf(out, "; %s of device memory allocated", hb(r->startup.alloc_bytes));
		fprintf(out, "\n");
		/* cut to the column as the kernels' table is: rows that share a long prefix
		 * keep what tells them apart (gp_display_names) */
		enum { NT = sizeof(r->startup.top) / sizeof(r->startup.top[0]), W = 53 };
		const char *full[NT];
		bool kern[NT];
		char nm[NT][W];
		for (unsigned k = 0; k < r->startup.ntop; k++)
			full[k] = gp_txt(r->startup.top[k].name),
			kern[k] = r->startup.top[k].kernel;
		gp_display_names(full, kern, r->startup.ntop, &nm[0][0],
		                 W); /* ranges: the user's */
		for (unsigned k = 0; k < r->startup.ntop; k++)
			fprintf(out, "       %-8s %-52s %10.1f ms %6u time%s\n",
			        r->startup.top[k].kernel ? "kernel" : "range", nm[k],
			        r->startup.top[k].ms, r->startup.top[k].calls,
			        r->startup.top[k].calls > 1 ? "s" : "");
	}
}

/* The job line and the findings, most important first. */
static void text_findings(const gp_job_t *job, FILE *out)
{
	fprintf(out, "gpuprof report: job %s, %u rank file(s) in %s\n",
	        job->job[0] ? job->job : "?", job->nranks, job->dir);
	if (job->other_ranks)
		fprintf(out,
		        "warning: %u of them are of another job (job %s first): the figures below "
		        "mix the jobs\n",
		        job->other_ranks, job->other_job);
	if (job->copies)
		fprintf(
		    out,
		    "warning: %u copies of a rank's file (the same process's record) left out\n",
		    job->copies);
	if (job->sacct[0])
		fprintf(out, "sacct: %s\n", job->sacct);
	fprintf(out, "\n== Findings (most important first) ==\n");
	if (!job->nf)
		fprintf(out, "  none: no rule fired (see thresholds in doc/report.md)\n");
	for (unsigned i = 0; i < job->nf; i++) {
		const gp_finding_t *f = &job->f[i];
		char sav[128] = "";
		if (f->kind == GP_F_TIME && f->saving_ms > 0)
			snprintf(sav, sizeof(sav),
			         "   saving:    about %.2f ms per step (%.1f%% of the step)\n",
			         f->saving_ms, f->saving_pct);
		else if (f->kind == GP_F_MEMORY && f->saving_bytes > 0)
			snprintf(sav, sizeof(sav), "   saving:    about %s of device memory\n",
			         hb(f->saving_bytes));
		char relb[320];
		const char *rel = gp_finding_relation(job, f, relb, sizeof(relb));
		if (!gp_finding_has_saving(f)) /* effects add nothing to the savings */
			snprintf(sav, sizeof(sav), "%s",
			         f->kind == GP_F_TIME
			             ? "   saving:    none of its own (part of the finding above)\n"
			             : "");
		/* the id is report.json's, for programs: a person reads the title */
		fprintf(out,
		        "%u. %s%s%s%s\n%s   evidence:  %s\n   threshold: %s\n   fix:       "
		        "%s\n",
		        i + 1, rel[0] ? "(" : "", rel, rel[0] ? ") " : "", f->title, sav,
		        f->evidence, f->threshold, f->fix);
	}
}

/* ---- the per-rank tables: defined once for the text and the HTML (tables.c) ---- */

/* The table's columns as wide as this job's cells (tables.h), in blocks that fit a line */
static void rank_layout(gp_table_layout_t *lay, const gp_job_t *job, unsigned which)
{
	const gp_rank_table_t *t = &gp_rank_tables[which];
	gp_table_layout_init(lay, t);
	for (unsigned i = 0; i < job->nranks; i++)
		if (listed(job, &job->ranks[i]))
			gp_table_layout_add(lay, t, &job->ranks[i], label(job, &job->ranks[i]));
	gp_table_layout_end(lay, t);
}

/* The table's heading and a line for each rank listed, block by block. */
static void rank_table(FILE *out, const gp_job_t *job, unsigned which)
{
	const gp_rank_table_t *t = &gp_rank_tables[which];
	gp_table_layout_t lay;
	rank_layout(&lay, job, which);
	for (unsigned b = 0; b < lay.nblocks; b++) {
		gp_table_text_head(out, t, &lay, b);
		for (unsigned i = 0; i < job->nranks; i++)
			if (listed(job, &job->ranks[i]))
				gp_table_text_row(out, t, &lay, b, &job->ranks[i],
				                  label(job, &job->ranks[i]));
	}
}

static void rank_legend(FILE *out, unsigned which)
{
	fprintf(out, "(%s)\n", gp_rank_tables[which].legend);
}

/* A rank's steps that are not alike (steps.shape, steps.shift): its note, or nothing */
static void shape_note(FILE *out, const char *lb, const gp_rank_t *r)
{
	const gp_step_shape_t *sh = &r->steps.shape;
	const gp_step_shift_t *sf = &r->steps.shift;
	if ((!strcmp(sh->shape, "alike") || !sh->shape[0]) && !(sf->ratio > 0))
		return;
	fprintf(out, "rank %s: steps not alike: ", lb);
	if (sf->ratio > 0 && sf->work_ratio > 0) /* a planned change: no finding */
		fprintf(out,
		        "%.3f ms, then %.3f ms from step %u on (%.2fx, with %.2fx the %s "
		        "a step: more work each step, not a slower node)",
		        sf->before_ms, sf->after_ms, sf->step, sf->ratio, sf->work_ratio,
		        sf->work_what);
	else if (sf->ratio > 0 && sf->nlevels > 2) { /* a staircase: each level */
		fprintf(out, "%u levels: %.3f ms", sf->nlevels, sf->level_ms[0]);
		for (unsigned i = 1; i < sf->nlevels && i < GP_SHIFT_MAX_LEVELS; i++)
			fprintf(out, ", %.3f ms from step %u", sf->level_ms[i], sf->level_step[i]);
		fprintf(out, " (%.2fx first to last: finding slowdown)",
		        sf->level_ms[sf->nlevels - 1] / sf->level_ms[0]);
	} else if (sf->ratio > 0 && !strcmp(sh->shape, "shifted") &&
	           (strcmp(sh->phase[0], "alike") || strcmp(sh->phase[1], "alike")))
		/* each side's own groups (steps.c: throughput) */
		fprintf(out,
		        "%s between %.3f and %.3f ms, then %s between %.3f and %.3f ms from step "
		        "%u on (%.2fx: finding slowdown)",
		        sh->phase[0], sh->phase_low_ms[0], sh->phase_high_ms[0], sh->phase[1],
		        sh->phase_low_ms[1], sh->phase_high_ms[1], sf->step, sf->ratio);
	else if (sf->ratio > 0) /* two levels in time, not two kinds of step */
		fprintf(out, "%.3f ms, then %.3f ms from step %u on (%.2fx: finding slowdown)",
		        sf->before_ms, sf->after_ms, sf->step, sf->ratio);
	else if (!strcmp(sh->shape, "drifting"))
		fprintf(out, "drifting from %.3f ms (first quarter) to %.3f ms (last quarter)",
		        sh->low_ms, sh->high_ms);
	else if (!strcmp(sh->shape, "uneven"))
		fprintf(out, "uneven (a few long steps)");
	else
		fprintf(out, "%s between %.3f and %.3f ms (%.0f %% of them slow)", sh->shape,
		        sh->low_ms, sh->high_ms, 100 * sh->high_share);
	fprintf(out, "; its median %.3f ms is not its throughput: %.3f ms a step\n",
	        r->steps.median_ms, r->steps.mean_period_ms);
}

/* The ranks' shape notes, every rank's (not the listed ones' only: a shape is said of
 * any), ranks whose notes read the same said once ("ranks 16-23: ..."); at most
 * GP_SHAPE_NOTES lines, then how many more ranks there are */
#define GP_SHAPE_NOTES 8
typedef struct {
	const char *s;
	unsigned i;
} snote_t;

static int snote_cmp(const void *a, const void *b) /* by note, then rank index */
{
	const snote_t *x = a, *y = b;
	int c = strcmp(x->s, y->s);
	return c ? c : (x->i > y->i) - (x->i < y->i);
}

typedef struct {
	unsigned first, at, size; /* its first rank's index; its notes v[at..at+size) */
} sgroup_t;

static int sgroup_cmp(const void *a, const void *b) /* groups by their first rank */
{
	const sgroup_t *x = a, *y = b;
	return (x->first > y->first) - (x->first < y->first);
}

/* (grouped by a sort, not by comparing each note with every other: 100 000 ranks whose
 * steps alternate each their own way would be 5e9 comparisons) */
static void shape_notes(FILE *out, const gp_job_t *job)
{
	unsigned n = job->nranks, m = 0, ng = 0, said = 0, more = 0;
	char **note = calloc(n + 1, sizeof(char *));
	snote_t *v = calloc(n + 1, sizeof(*v));
	sgroup_t *grp = calloc(n + 1, sizeof(*grp));
	unsigned *who = calloc(n + 1, sizeof(unsigned));
	if (!note || !v || !grp || !who)
		goto out;
	for (unsigned i = 0; i < n; i++) {
		size_t len = 0;
		FILE *f = open_memstream(&note[i], &len);
		if (!f)
			continue;
		shape_note(f, NOTE_LABEL, &job->ranks[i]);
		fclose(f);
		if (note[i] && *note[i])
			v[m++] = (snote_t){note[i], i};
	}
	qsort(v, m, sizeof(*v), snote_cmp);
	for (unsigned a = 0, z; a < m; a = z) { /* a group: v[a..z), its first rank v[a].i */
		for (z = a + 1; z < m && !strcmp(v[z].s, v[a].s); z++)
			;
		grp[ng++] = (sgroup_t){v[a].i, a, z - a};
	}
	qsort(grp, ng, sizeof(*grp), sgroup_cmp);
	for (unsigned k = 0; k < ng; k++) {
		unsigned a = grp[k].at, g = grp[k].size;
		if (said == GP_SHAPE_NOTES) {
			more += g;
			continue;
		}
		for (unsigned j = 0; j < g; j++) /* its ranks, in the job's order */
			who[j] = v[a + j].i;
		char phrase[256];
		group_phrase(job, who, g, phrase, sizeof(phrase));
		const char *rest = strstr(v[a].s, "rank " NOTE_LABEL);
		fprintf(out, "%s%s", phrase, rest ? rest + strlen("rank " NOTE_LABEL) : v[a].s);
		said++;
	}
	if (more)
		fprintf(out,
		        "and %u more ranks whose steps are not alike (report.json: steps.shape, "
		        "slowdown)\n",
		        more);
out:
	for (unsigned i = 0; note && i < n; i++)
		free(note[i]);
	free(note);
	free(v);
	free(grp);
	free(who);
}

/* The throughput beside the median, and the ranks whose steps are not alike, for which
 * the median describes neither their steps nor their throughput (steps.shape). */
static void text_throughput(FILE *out, const gp_job_t *job)
{
	if (job->step_period_rank < 0 || (unsigned)job->step_period_rank >= job->nranks ||
	    !(job->step_mean_period_ms > 0))
		return;
	const gp_rank_t *slow = &job->ranks[job->step_period_rank];
	char lb[64];
	fprintf(out,
	        "throughput: %.4g steps/s, a step every %.3f ms on average (post-warm-up wall time "
	        "over the steps%s%s)\n",
	        job->steps_per_second, job->step_mean_period_ms, job->nranks > 1 ? "; " : "",
	        job->nranks > 1
	            ? (snprintf(lb, sizeof(lb), "rank %s, the slowest", label(job, slow)), lb)
	            : "");
	shape_notes(out, job);
}

/* Where the headline is the untraced steps': what tracing cost the traced ones. */
static void text_windows(FILE *out, const char *label, const gp_rank_t *r)
{
	if (r->capture.ntraced && !r->capture.nuntraced) {
		/* nothing to hold the traced steps against: say the headline holds the tracing */
		fprintf(
		    out,
		    "rank %s: all %u post-warm-up steps were traced at kernel level (the run "
		    "ended inside its first capture window, or every step was asked for): the "
		    "headline includes gpuprof's kernel tracing, which this run cannot measure "
		    "(no untraced step to hold the traced ones against); on launch-bound steps "
		    "tracing has added from 10 %% to more than 100 %%, so time a longer run, or "
		    "one with "
		    "--modes=timing,nvtx,mem, for the program's own speed\n",
		    label, r->capture.ntraced);
		return;
	}
	if (!r->capture.ntraced || !r->capture.nuntraced || !r->capture.untraced_median_ms)
		return;
	/* no step marker between the windows: the untraced steps' host period (steps.c) */
	const char *how = strcmp(r->steps.basis, "period")
	                      ? "timed by step markers"
	                      : "timed by their period on the host (no step markers between them)";
	if (r->capture.tracer_ms_per_step <= 0) {
		fprintf(
		    out,
		    "rank %s: the headline is the %u post-warm-up steps between the capture "
		    "windows, %s (median %.3f ms); the %u steps traced at kernel "
		    "level took %.3f ms: no faster than those, so the steps are not alike across "
		    "the run and no cost of tracing can be read from them\n",
		    label, r->capture.nuntraced, how, r->capture.untraced_median_ms,
		    r->capture.ntraced, r->capture.traced_median_ms);
		return;
	}
	fprintf(out,
	        "rank %s: the headline is the %u post-warm-up steps between the capture windows, "
	        "%s (median %.3f ms); the %u steps traced at kernel "
	        "level took %.3f ms (%+.3f ms, x%.3f): gpuprof's kernel tracing, measured in "
	        "this run and taken out of the host-caused idle findings\n",
	        label, r->capture.nuntraced, how, r->capture.untraced_median_ms, r->capture.ntraced,
	        r->capture.traced_median_ms,
	        r->capture.traced_median_ms - r->capture.untraced_median_ms,
	        r->capture.traced_median_ms / r->capture.untraced_median_ms);
	const gp_rank_capture_t *c = &r->capture;
	if (c->traced_lo_ms > 0 && c->untraced_lo_ms > 0)
		fprintf(out,
		        "rank %s: how sure: 95 %% intervals of the medians, untraced %.3f-%.3f ms, "
		        "traced %.3f-%.3f ms, so tracing added %+.3f to %+.3f ms a step; the "
		        "kernel-level figures come from %u of the %u post-warm-up steps\n",
		        label, c->untraced_lo_ms, c->untraced_hi_ms, c->traced_lo_ms,
		        c->traced_hi_ms, c->traced_lo_ms - c->untraced_hi_ms,
		        c->traced_hi_ms - c->untraced_lo_ms, c->ntraced, c->ntraced + c->nuntraced);
	else
		fprintf(out,
		        "rank %s: how sure: the kernel-level figures come from %u of the %u "
		        "post-warm-up steps, too few for an interval of their median\n",
		        label, c->ntraced, c->ntraced + c->nuntraced);
}

/* What gpuprof's own work cost the program's thread, timed in the process. */
static void text_own(FILE *out, const char *label, const gp_rank_t *r)
{
	if (!r->own.steps)
		return;
	fprintf(out,
	        "rank %s: gpuprof's own work on the program's thread (its optimizer hooks with "
	        "the step marker, its batch timing; not its module hooks, NVTX records or "
	        "kernel tracing), timed in the process: median %.1f us a step",
	        label, r->own.us_median);
	if (r->own.pct > 0)
		fprintf(out, " (%.2f %% of the median step)", r->own.pct);
	fprintf(out, ", p95 %.1f us, over %u steps of optimizer %u\n", r->own.us_p95, r->own.steps,
	        r->own.optimizer);
}

/* The steps line's how and count: the job's count (step_counts), said once where every
 * rank has it, else its range and the ranks that differ, with how rank 0 found its own. */
static void text_step_counts(FILE *out, const gp_job_t *job)
{
	const struct gp_step_counts *sc = &job->step_counts;
	const char *how = gp_txt(job->ranks[0].steps.how);
	if (sc->ranks < 2) {
		fputs(how, out);
		return;
	}
	if (!sc->ndiffer) {
		if (sc->ranks == job->nranks && sc->ranks == 2)
			fprintf(out, "%s, the same on both ranks", how);
		else if (sc->ranks == job->nranks)
			fprintf(out, "%s, the same on all %u ranks", how, sc->ranks);
		else
			fprintf(out, "%s, the same on the %u ranks that have steps", how,
			        sc->ranks);
		return;
	}
	fprintf(out, "%u to %u a rank (%u on %u of the %u ranks with steps; ", sc->min, sc->max,
	        sc->common, sc->ranks - sc->ndiffer, sc->ranks);
	unsigned shown = 0; /* runs of consecutive ranks with one count: "ranks 16-23: 2" */
	for (unsigned i = 0; i < sc->nruns; i++) {
		if (sc->differ[i].last > sc->differ[i].rank)
			fprintf(out, "%sranks %d-%d: %u", i ? ", " : "", sc->differ[i].rank,
			        sc->differ[i].last, sc->differ[i].count);
		else
			fprintf(out, "%srank %d: %u", i ? ", " : "", sc->differ[i].rank,
			        sc->differ[i].count);
		shown += (unsigned)(sc->differ[i].last - sc->differ[i].rank) + 1;
	}
	fprintf(out, "%s); rank %s's: %s", sc->ndiffer > shown ? ", ..." : "",
	        label(job, &job->ranks[0]), how);
}

static void slow_notes(FILE *out, const char *label, const gp_rank_t *r)
{
	text_windows(out, label, r);
	text_own(out, label, r);
}

/* How slow: each rank's steps and what the headline measures. */
static void text_how_slow(const gp_job_t *job, FILE *out)
{
	fprintf(out, "\n== How slow ==\n");
	bool rows = unlisted(job) < job->nranks; /* some rank is listed line by line */
	if (rows)
		rank_table(out, job, GP_TABLE_SLOW);
	rank_notes(out, job, slow_notes);
	if (dist_header(out, job)) {
		dist_line(out, job, "step median (ms)", "", f_step, 1, 0);
		dist_line(out, job, "step p95 (ms)", "", f_step_p95, 1, 0);
		dist_line(out, job, "wall (s)", "", f_wall, 1, 0);
		node_lines(out, job);
	}
	bool cuda = false;
	for (unsigned i = 0; i < job->nranks; i++)
		cuda |= strstr(job->ranks[i].id.modes, "cuda") != NULL;
	if (job->nranks && job->ranks[0].steps.source[0]) {
		const gp_rank_t *r0 = &job->ranks[0];
		fprintf(out, "steps: ");
		text_step_counts(out, job);
		fprintf(out, "; warm-up steps excluded; job median %.3f ms (%s)%s\n",
		        job->step_median_ms, job->step_basis,
		        job->step_median_left_out ? "; damaged ranks left out of it (data quality)"
		                                  : "");
		text_throughput(out, job);
		fprintf(
		    out,
		    "basis: gpu = completion of a step's last GPU work to the next step's%s; "
		    "period = step start to next step start (the host's view); CPU = time inside "
		    "the step range, which measures launches when the host runs ahead; - = not "
		    "measured\n",
		    r0->steps.gpu_from_markers ? " (step completion markers: CUDA events at "
		                                 "the end of each step)"
		                               : "");
	} else if (job->steps_from != GP_STEPS_AUTO) {
		static const char *const asked[] = {
		    [GP_STEPS_NVTX] = "no repeated outermost NVTX range",
		    [GP_STEPS_PROFILER] = "no cudaProfilerStart/Stop windows",
		    [GP_STEPS_KERNELS] = "no repeating sequence of GPU launches",
		    [GP_STEPS_OPTIMIZER] = "no optimizer.step() recorded"};
		unsigned k = (unsigned)job->steps_from;
		fprintf(out,
		        "steps: none found from the source asked for (--steps-from): %s; no "
		        "per-step figure is given\n",
		        k < sizeof(asked) / sizeof(*asked) && asked[k] ? asked[k] : "none");
	} else
		fprintf(
		    out,
		    "steps: none found: no repeated outermost NVTX range, no optimizer.step(), no "
		    "cudaProfilerStart/Stop windows, and no repeating sequence of GPU launches%s; "
		    "no per-step figure is given\n",
		    cuda ? " in the kernels recorded (GPUPROF_STEP_RANGE names a range)"
		         : " (mode cuda finds steps from the kernels; GPUPROF_STEP_RANGE names a "
		           "range)");
}

/* An NVTX range's row name: XLA's thunk ranges ("Thunk:#name=jit(step),hlo_op=OP,
 * unique_hlo_op_id=N#") all begin alike, so their row leads with the HLO op, then the
 * jitted function ("OP in jit(step)"); the JSON keeps the whole name */
static const char *xla_row(const char *name, char *buf, size_t len)
{
	const char *op = strstr(name, "hlo_op="), *fn = strstr(name, "name=");
	if (strncmp(name, "Thunk:#", 7) || !op)
		return name;
	int no = (int)strcspn(op + 7, ",#"), nf = fn ? (int)strcspn(fn + 5, ",#") : 0;
	snprintf(buf, len, "%.*s%s%.*s", no, op + 7, nf ? " in " : "", nf, fn ? fn + 5 : "");
	return buf;
}

/* What a rank's time figures rest on: its capture windows, tracing's cost, CUPTI's. */
static void time_notes(FILE *out, const char *label, const gp_rank_t *r)
{
	if (r->gpu.kernels_other_thread)
		fprintf(out,
		        "rank %s: %llu kernels launched by threads without a range of their "
		        "own "
		        "(PyTorch's autograd threads) count in the ranges open on the steps' "
		        "thread\n",
		        label, (unsigned long long)r->gpu.kernels_other_thread);
	if (r->capture.window)
		fprintf(out,
		        "rank %s: CUDA activity captured in %u of %u post-warm-up steps "
		        "(capture window), %.1f%% of its time; %llu switch(es), the "
		        "slowest took "
		        "%.3f ms in the application\n",
		        label, r->capture.steps, r->steps.n_post, r->capture.traced_pct,
		        (unsigned long long)r->capture.switches, r->capture.switch_max_ns / 1e6);
	if (r->capture.cost_windows)
		fprintf(out,
		        "rank %s: kernels were traced in %u window(s) by cost (while its "
		        "steps were not seen; %u open at its exit, %u at its death), "
		        "estimated %.1f ms "
		        "in all, %.1f ms of it after the windows' ends (late records, "
		        "detaches)\n",
		        label, r->capture.cost_windows, r->capture.cost_at_exit,
		        r->capture.cost_unended, (double)r->capture.cost_estimate_ns / 1e6,
		        (double)r->capture.cost_late_ns / 1e6);
	if (r->gpu.busy_pct_untraced > 0)
		fprintf(out,
		        "rank %s: scaled to the job's untraced steps (the headline): GPU busy "
		        "about %.1f%% (%.3f ms of GPU work per step in a %.3f ms step); the "
		        "table's shares are the traced steps', which tracing stretched to "
		        "%.3f ms\n",
		        label, r->gpu.busy_pct_untraced,
		        (double)r->gpu.busy_ns / 1e6 / r->capture.steps,
		        r->capture.untraced_median_ms, r->capture.traced_median_ms);
	if (r->overhead.records)
		fprintf(out, "rank %s: CUPTI's own overhead: %.3f ms in %llu records\n", label,
		        r->overhead.ns / 1e6, (unsigned long long)r->overhead.records);
}

/* Where the time goes: the GPU over the steady state, kernels and ranges. */
static void text_time(const gp_job_t *job, FILE *out)
{
	bool rows = unlisted(job) < job->nranks; /* some rank is listed line by line */
	fprintf(out, "\n== Where the time goes ==\n");
	uint64_t any_gpu = 0, any_mem = 0;
	for (unsigned i = 0; i < job->nranks; i++) {
		any_gpu += job->ranks[i].gpu.kernels_total + job->ranks[i].gpu.nmemcpy;
		any_mem += job->ranks[i].memory.nallocs + job->ranks[i].gpu.nvml_samples;
	}
	if (!any_gpu)
		fprintf(out, "no CUDA activity recorded (no GPU, no CUDA in the program, or modes "
		             "without cuda)\n");
	rows &= any_gpu > 0; /* nothing measured: no table of zeros */
	if (rows) {
		rank_table(out, job, GP_TABLE_TIME);
		rank_legend(out, GP_TABLE_TIME);
		rank_table(out, job, GP_TABLE_HOST);
		rank_legend(out, GP_TABLE_HOST);
	}
	if (any_gpu && dist_header(out, job)) {
		dist_line(out, job, "GPU busy (%)", "", f_busy, -1, 2.0);
		dist_line(out, job, "host wait (%)", "", f_hostwait, 1, 2.0);
		dist_line(out, job, "communication alone (%)", "", f_comm, 1, 2.0);
		dist_line(out, job, "sync (ms)", "", f_sync, 1, 0);
	}
	rank_notes(out, job, time_notes);
	if (job->nk) {
		fprintf(out,
		        "\nTop kernels by total GPU time (all ranks, post-warm-up steps%s; "
		        "names demangled, the whole name in report.json):\n",
		        any_window(job) ? " traced at kernel level" : "");
		/* the columns a person reads at a glance, in 100 characters; median, p95, sd,
		 * min and max of each kernel are report.json's (and the CSV's); the name gets
		 * what the other columns leave */
		enum { MAXNAME = 64, IN = 23 };
		const char *names[15];
		char shown[15 * (MAXNAME + 1)], in[15][IN + 1];
		unsigned nshow = job->nk < 15 ? job->nk : 15;
		int inw = 0; /* a column of the NVTX range that launched each, if any */
		for (unsigned i = 0; i < nshow; i++) {
			const gp_kstat_t *k = &job->k[i];
			char rn[IN + 1];
			names[i] = k->name;
			in[i][0] = '\0';
			if (k->in[0].name) { /* with its share where others launched it too */
				double sh = pct(k->in[0].ns, k->total);
				shorten(k->in[0].name, rn, sh < 95 ? IN + 1 - 6 : IN + 1);
				snprintf(in[i], sizeof(in[i]), sh < 95 ? "%s (%.0f%%)" : "%s", rn,
				         sh);
				inw = (int)strlen(in[i]) > inw ? (int)strlen(in[i]) : inw;
			}
		}
		int name_w = 100 - 35 - (inw ? 2 + (inw > 11 ? inw : 11) : 0);
		name_w = name_w > MAXNAME ? MAXNAME : name_w;
		fprintf(out, "%-*s %7s %9s %9s %6s%s\n", name_w, "name", "calls", "total ms",
		        "mean us", "share", inw ? "  launched in" : "");
		gp_display_names(names, NULL, nshow, shown, (size_t)name_w + 1);
		for (unsigned i = 0; i < nshow; i++) {
			const gp_kstat_t *k = &job->k[i];
			fprintf(out, "%-*s %7llu %9.3f %9.2f %5.1f%%%s%s\n", name_w,
			        shown + i * ((size_t)name_w + 1), (unsigned long long)k->calls,
			        k->total / 1e6, k->total / 1e3 / (double)k->calls,
			        100 * gp_job_kernel_share(job, i), in[i][0] ? "  " : "", in[i]);
		}
		fprintf(out, "mean: the total over the calls; each kernel's median, p95, standard "
		             "deviation, min and max are in report.json\n");
		gp_kind_t kd[16];
		unsigned nkd = gp_job_kernel_kinds(job, kd, 16);
		fprintf(out, "\nKernel time by kind (read from the kernels' names, not from the "
		             "operations that launched them):\n");
		fprintf(out, "%-24s %11s %6s %10s %8s\n", "kind", "total ms", "share", "calls",
		        "kernels");
		for (unsigned i = 0; i < nkd; i++)
			fprintf(out, "%-24s %11.3f %5.1f%% %10llu %8llu\n", kd[i].kind,
			        kd[i].total / 1e6, 100 * kd[i].share,
			        (unsigned long long)kd[i].calls, (unsigned long long)kd[i].kernels);
	}
	if (job->nr) {
		fprintf(out, "\nNVTX ranges (all ranks): CPU time and projected GPU time\n");
		fprintf(out, "%-40s %8s %11s %11s %10s\n", "range", "count", "CPU ms", "GPU ms",
		        "sync ms");
		/* the rows' names as the kernel table's: told apart where they differ
		 * (PyTorch's emit_nvtx: "autograd::engine::evaluate_function: AddmmBackward0"
		 * and "...: MulBackward0" read alike when cut at the end), the user's scope kept
		 * (gp_display_label) */
		enum { NR = 20, RW = 41 };
		char xb[NR][300], shown[NR * RW];
		const char *names[NR];
		bool kern[NR] = {false};
		unsigned nrow = job->nr < NR ? job->nr : NR;
		for (unsigned i = 0; i < nrow; i++)
			names[i] = xla_row(job->r[i].name, xb[i], sizeof(xb[i]));
		gp_display_names(names, kern, nrow, shown, RW);
		bool cuda = false; /* GPU and sync time measured: some rank's CUDA activity */
		for (unsigned i = 0; i < job->nranks && !cuda; i++)
			cuda = rank_cuda(&job->ranks[i]);
		for (unsigned i = 0; i < nrow; i++) {
			const gp_rstat_t *r = &job->r[i];
			if (cuda)
				fprintf(out, "%-40s %8llu %11.3f %11.3f %10.3f\n", shown + i * RW,
				        (unsigned long long)r->count, r->cpu_ns / 1e6,
				        r->gpu_ns / 1e6, r->sync_ns / 1e6);
			else /* not measured: '-', not 0.000 */
				fprintf(out, "%-40s %8llu %11.3f %11s %10s\n", shown + i * RW,
				        (unsigned long long)r->count, r->cpu_ns / 1e6, "-", "-");
		}
	}
	gp_attr_text(job, out);
}

/* The rank's peak against its card, and what that leaves: room for a larger batch or
 * model, or how close to out of memory (the thresholds are findings.c's). */
static void text_card(FILE *out, const gp_rank_t *r)
{
	const char *what;
	uint64_t p = gp_rank_in_use_peak(r, &what);
	if (!r->id.gpu_total || !p)
		return;
	double share = (double)p / (double)r->id.gpu_total;
	fprintf(out,
	        "       the card%s%s has %.1f GiB: the peak in use (%s) is %.1f%% of it, %.1f GiB "
	        "left%s\n",
	        r->id.gpu_name[0] ? ", " : "", r->id.gpu_name, r->id.gpu_total / 1073741824.0, what,
	        100 * share, p < r->id.gpu_total ? (r->id.gpu_total - p) / 1073741824.0 : 0.0,
	        share < 0.5   ? ": memory is no constraint here (a larger batch or model fits)"
	        : share < 0.9 ? ""
	                      : ": close to out of memory");
}

/* Where the memory goes: peaks, their stacks, what is live. */
static void text_memory(const gp_job_t *job, FILE *out)
{
	bool rows = unlisted(job) < job->nranks; /* some rank is listed line by line */
	uint64_t any_mem = 0;
	for (unsigned i = 0; i < job->nranks; i++)
		any_mem += job->ranks[i].memory.nallocs + job->ranks[i].gpu.nvml_samples;
	fprintf(out, "\n== Where the memory goes ==\n");
	if (!any_mem)
		fprintf(out, "no device memory activity recorded (modes without mem or gpu, or no "
		             "GPU)\n");
	rows &= any_mem > 0 || any_fw(job); /* nothing measured: no table of zeros */
	const gp_rank_table_t *t = &gp_rank_tables[GP_TABLE_MEMORY];
	gp_table_layout_t lay;
	rank_layout(&lay, job, GP_TABLE_MEMORY);
	if (rows)
		rank_legend(out, GP_TABLE_MEMORY);
	for (unsigned b = 0; rows && b + 1 < lay.nblocks; b++) { /* all but the last block */
		gp_table_text_head(out, t, &lay, b);
		for (unsigned i = 0; i < job->nranks; i++)
			if (listed(job, &job->ranks[i]))
				gp_table_text_row(out, t, &lay, b, &job->ranks[i],
				                  label(job, &job->ranks[i]));
	}
	if (rows) /* the last, with each rank's lines under its row */
		gp_table_text_head(out, t, &lay, lay.nblocks - 1);
	for (unsigned i = 0; i < job->nranks; i++) {
		const gp_rank_t *r = &job->ranks[i];
		if (!rows || !listed(job, r))
			continue;
		bool pq = r->pool.seen;
		gp_table_text_row(out, t, &lay, lay.nblocks - 1, r, label(job, r));
		if (pq)
			fprintf(out,
			        "       %s: in use %s at its peak, %s at the last sample; the pool "
			        "holds %s of the device\n",
			        gp_txt(r->pool.what), hb(r->pool.in_use_peak), hb(r->pool.in_use),
			        hb(r->pool.pool));
		text_card(out, r);
		if (r->memory.peak_stack.s)
			fprintf(
			    out, "       peak reached by: %s%s%s%s\n", gp_txt(r->memory.peak_stack),
			    r->memory.peak_stack_source[0] ? " (stack from " : "",
			    r->memory.peak_stack_source, r->memory.peak_stack_source[0] ? ")" : "");
		if (r->memory.peak_step >= 0 || r->memory.peak_ranges.s) {
			fprintf(out, "       peak reached");
			if (r->memory.peak_step >= 0)
				fprintf(out, " in step %d%s", r->memory.peak_step,
				        (unsigned)r->memory.peak_step < r->steps.warmup
				            ? " (warm-up)"
				            : "");
			if (r->memory.peak_ranges.s)
				fprintf(
				    out, " inside %s%s", gp_txt(r->memory.peak_ranges),
				    r->memory.peak_ranges_other_thread
				        ? " (ranges of the steps' thread: the allocating thread "
				          "had none open)"
				        : "");
			fprintf(out, "\n");
		}
		for (unsigned o = 0; o < r->memory.nowners; o++)
			fprintf(out, "       live at the last step from %-20s %10s\n",
			        gp_txt(r->memory.owners[o].module), hb(r->memory.owners[o].bytes));
	}
	if (any_mem && dist_header(out, job)) {
		dist_line(out, job, "peak", "B", f_peak, 1, 0);
		dist_line(out, job, "growth per step", "B", f_growth, 1, 0);
	}
}

/* PyTorch's memory snapshots the rank file names (rankR.torch-{exit,oom,peak}.pickle,
 * written beside it by the integration) that the memviz export cannot take (the
 * pipeline's torch.snap_gone): it then falls back to CUDA's segments, so the report says
 * which are gone rather than leave it to that export's stderr. */
static void text_snapshots(FILE *out, const char *label, const gp_rank_t *r)
{
	char gone[600];
	unsigned named, n = gp_snapshots_gone(r, gone, sizeof(gone), &named);
	if (n)
		fprintf(out,
		        "rank %s: PyTorch's memory snapshot%s %s, named by the rank file, %s: "
		        "gpuprof export --format=memviz %s\n",
		        label, n > 1 ? "s" : "", gone, gp_snapshots_verb(r, n),
		        n < named ? "takes the one left" : "shows CUDA's segments instead");
}

/* Does rank r have a data-quality note (anything lost, yielded, not observed)? */
static bool quality_noted(const gp_rank_t *r)
{
	return !r->outcome.has_end || r->quality.truncated || r->quality.corrupt_chunks ||
	       r->quality.lost_any || r->quality.yielded.s || strcmp(r->quality.wrapped, "agent") ||
	       r->quality.nvtx_cuda_tids_unrelated || r->quality.markers_not_placed ||
	       r->quality.bad_records || r->quality.clock_dropped || gp_rank_unobserved(r);
}

/* A listed rank's data quality: its processes, its snapshots, what it lost. */
static void quality_notes(FILE *out, const char *label, const gp_rank_t *r)
{
	text_procs(out, label, r);
	text_snapshots(out, label, r);
	if (!quality_noted(r))
		return;
	bool unobserved = gp_rank_unobserved(r);
	char bad[96] = "";
	if (r->quality.bad_records)
		snprintf(bad, sizeof(bad), "; %llu records with impossible times or sizes ignored",
		         (unsigned long long)r->quality.bad_records);
	fprintf(
	    out,
	    "rank %s: %s%s%s; records dropped: %llu with the ring full, %llu by "
	    "CUPTI, %llu names (string table full), %llu past the cap; %llu "
	    "corrupt "
	    "chunks%s%s%s%s%s\n",
	    label,
	    unobserved ? "not observed (a process of the task used its GPU, no CUDA "
	                 "work was recorded)"
	    : r->quality.corrupt_chunks
	        ? "damaged (its corrupt chunks' records are lost: its figures "
	          "undercount, and it is left out of the job's step median where a "
	          "whole rank has steps)"
	    : r->outcome.has_end ? "complete"
	                         : "incomplete (salvaged or killed)",
	    r->quality.truncated ? ", truncated tail" : "",
	    strcmp(r->quality.wrapped, "agent") ? ", not wrapped (environment-only)" : "",
	    (unsigned long long)r->quality.drops_ring, (unsigned long long)r->quality.drops_cupti,
	    (unsigned long long)r->quality.drops_table, (unsigned long long)r->quality.drops_cap,
	    (unsigned long long)r->quality.corrupt_chunks,
	    r->quality.yielded.s ? "; left to other tools: " : "", gp_txt(r->quality.yielded),
	    r->quality.nvtx_cuda_tids_unrelated
	        ? "; NVTX and CUDA API records name threads differently (an older "
	          "collector): GPU work is matched to ranges by time on the steps' "
	          "thread"
	        : "",
	    r->quality.markers_not_placed ? "; step markers not placed (GPU too far behind): "
	                                    "their steps' GPU times merge with the next"
	                                  : "",
	    bad);
	for (unsigned c = 1; gp_loss_key(c); c++)
		if (r->quality.loss[c])
			fprintf(out, "       lost: %llu %s\n",
			        (unsigned long long)r->quality.loss[c], gp_loss_words(c));
	if (r->quality.clock_dropped)
		fprintf(out,
		        "       clock: the TSC was %.1f us off the kernel's clock at "
		        "%.3f s; times in the %.3f s before it may be off by up to "
		        "that, those after it are clock_gettime's\n",
		        (double)r->quality.clock_err_ns / 1e3, (double)r->quality.clock_at_ns / 1e9,
		        (double)r->quality.clock_span_ns / 1e9);
}

/* Data quality: what was lost, yielded or not observed, by rank. */
static void text_quality(const gp_job_t *job, FILE *out)
{
	fprintf(out, "\n== Data quality ==\n");
	unsigned incomplete = 0, quiet_n = 0;
	char quiet[160] = "";
	rank_notes(out, job, quality_notes);
	for (unsigned i = 0; i < job->nranks; i++) {
		const gp_rank_t *r = &job->ranks[i];
		if (!quality_noted(r))
			continue;
		incomplete++;
		if (!listed(job, r) && quiet_n++ < 10) /* large jobs: named, not one line each */
			snprintf(quiet + strlen(quiet), sizeof(quiet) - strlen(quiet), "%s%d",
			         quiet_n > 1 ? ", " : "", r->id.rank);
	}
	if (quiet_n)
		fprintf(out,
		        "%u more rank%s with a data-quality note (ranks %s%s; report --ranks LIST "
		        "for each one's line)\n",
		        quiet_n, quiet_n > 1 ? "s" : "", quiet, quiet_n > 10 ? ", ..." : "");
	if (job->batch.seen) {
		char how[48] = "no end record";
		if (job->batch.has_end && WIFSIGNALED(job->batch.wait_status))
			snprintf(how, sizeof(how), "signal %d", WTERMSIG(job->batch.wait_status));
		else if (job->batch.has_end)
			snprintf(how, sizeof(how), "exit %d", WEXITSTATUS(job->batch.wait_status));
		fprintf(
		    out,
		    "the batch script (%.80s): %s after %.2f s; not a rank (no GPU work or steps "
		    "of its own)\n",
		    job->batch.command, how, job->batch.wall_ns / 1e9);
	}
	if (job->ntasks_expected > job->nranks)
		fprintf(out,
		        "%u of %u tasks have no rank file (not selected by --gpuprof-ranks, "
		        "or lost)\n",
		        job->ntasks_expected - job->nranks, job->ntasks_expected);
	if (job->nunreadable)
		fprintf(out, "%u rank file%s could not be read (left out of every figure): %s%s\n",
		        job->nunreadable, job->nunreadable > 1 ? "s" : "", job->unreadable,
		        job->nunreadable > 1 ? ", ..." : "");
	for (unsigned i = 0; i < job->nlaunchers && i < 8; i++) {
		const struct gp_launcher *l = &job->launchers[i];
		char how[48];
		if (!l->has_end)
			snprintf(how, sizeof(how), "no end record");
		else if (WIFSIGNALED(l->wait_status))
			snprintf(how, sizeof(how), "signal %d", WTERMSIG(l->wait_status));
		else
			snprintf(how, sizeof(how), "exit %d", WEXITSTATUS(l->wait_status));
		fprintf(out,
		        "task %d on %s was a launcher (%s; its ranks recorded their own files): "
		        "%s%s",
		        l->task, l->node, l->command, how, l->other_processes ? "; " : "\n");
		if (l->other_processes)
			fprintf(out, "%llu process(es) it started not recorded (same rank twice)\n",
			        (unsigned long long)l->other_processes);
	}
	if (job->nlaunchers > 8)
		fprintf(out, "%u more launcher tasks\n", job->nlaunchers - 8);
	for (unsigned i = 0; i < job->nlaunchers; i++)
		incomplete += job->launchers[i].other_processes > 0 || !job->launchers[i].has_end;
	if (!incomplete && !job->nunreadable)
		fprintf(out, "all %u rank files complete, nothing dropped\n", job->nranks);
}

static void text_all(FILE *to, const void *arg)
{
	const gp_job_t *job = arg;
	text_findings(job, to);
	text_how_slow(job, to);
	text_startup(job, to);
	text_time(job, to);
	print_io(to, job);
	text_memory(job, to);
	print_torch(to, job);
	text_quality(job, to);
}

void gp_report_text(const gp_job_t *job, FILE *out)
{
	/* made safe for a terminal and cut into lines in one place (gp_text_report),
	 * whichever writer above printed them */
	gp_text_report(out, text_all, job);
}

void gp_report_summary_line(const gp_job_t *job, char *buf, size_t len)
{
	char line[8192], step[64], busy_s[16], idle_s[16], peak_s[32] = "-";
	/* not measured is "-", never 0: no rank's steps (a step time), no kernel records (the
	 * GPU's busy and idle shares: modes without cuda) */
	if (job->step_median_ms > 0)
		snprintf(step, sizeof(step), "%.2fms(%s)", job->step_median_ms,
		         job->step_basis[0] ? job->step_basis : "none");
	else
		snprintf(step, sizeof(step), "-");
	snprintf(busy_s, sizeof(busy_s), "-");
	snprintf(idle_s, sizeof(idle_s), "-");
	if (job->gpu_span_ns) { /* the pipeline's (job.c), report.json's busy_pct, idle_pct */
		snprintf(busy_s, sizeof(busy_s), "%.0f%%", job->busy_pct);
		snprintf(idle_s, sizeof(idle_s), "%.0f%%", job->idle_pct);
	}
	if (job->acct.peak_bytes) /* the record's: one figure (acct.c); 0: not measured */
		snprintf(peak_s, sizeof(peak_s), "%.1fGiB", job->acct.peak_bytes / 1073741824.0);
	snprintf(line, sizeof(line),
	         "gpuprof: ranks=%u busy=%s idle=%s peak=%s step=%s top=%s dir=%s", job->nranks,
	         busy_s, idle_s, peak_s, step, job->nf ? job->f[0].id : "none", job->dir);
	/* one AdminComment entry (common/admincomment.h): the directory is the user's text;
	 * the plugin does the same root-side, where it counts */
	if (gp_ac_entry(line, buf, len) < 0)
		snprintf(buf, len, "%s", line);
}

/* Is rank r written whole (an object of every field) into report.json's ranks[]? Every
 * rank of a job of up to GP_JSON_RANKS; of a larger one, those a finding names and those
 * `report --ranks LIST` names: 5.6 KiB a rank made 100 000 ranks' report.json 570 MB and
 * its writing 25 % of the report's CPU (perf, 10 240 ranks from summaries), for objects
 * nobody reads a hundred thousand of. Every rank is a row of rank_table. */
static bool json_listed(const gp_job_t *job, const gp_rank_t *r)
{
	if (job->nranks <= GP_JSON_RANKS ||
	    (job->have_detail && gp_ranks_contains(&job->detail, (uint32_t)r->id.rank)))
		return true;
	for (unsigned i = 0; i < job->nf; i++)
		if (job->f[i].rank == r->id.rank)
			return true;
	return false;
}

/* A figure that is measured where it is positive (a step time, a rate): null where not */
static void json_measured(FILE *out, double v, int prec)
{
	if (v > 0 && isfinite(v))
		gp_json_fixed(out, v, prec);
	else
		fputs("null", out);
}

/* report.json's node figures (the pipeline's job_nodes): null where not measured */
static void json_nodes(FILE *out, const gp_job_t *job)
{
	fprintf(out, ",\n  \"node_step_median_ms\": ");
	json_measured(out, job->node_step_median_ms, 6);
	fprintf(out, ", \"nodes\": [");
	for (unsigned k = 0; k < job->nnodes; k++) {
		fprintf(out, "%s\n    {\"node\": ", k ? "," : "");
		gp_json_str(out, job->nodes[k].name);
		fprintf(out, ", \"ranks\": %u, \"step_median_ms\": ", job->nodes[k].ranks);
		json_measured(out, job->nodes[k].step_median_ms, 6);
		fprintf(out, ", \"peak_bytes\": "); /* null: no rank's memory measured ('-') */
		json_measured(out, (double)job->nodes[k].peak, 0);
		fputc('}', out);
	}
	fprintf(out, "%s]", job->nnodes ? "\n  " : "");
}

void gp_report_json(const gp_job_t *job, FILE *out)
{
	fprintf(out, "{\n  \"schema\": \"gpuprof-report/1\",\n  \"job\": ");
	gp_json_str(out, job->job);
	fprintf(out, ",\n  \"dir\": ");
	gp_json_str(out, job->dir);
	/* the job's step figures: null where no rank's steps were measured (never 0) */
	fputs(",\n  \"step_median_ms\": ", out);
	json_measured(out, job->step_median_ms, 6);
	fprintf(out, ",\n  \"step_median_left_out\": %u,\n  \"step_mean_period_ms\": ",
	        job->step_median_left_out);
	json_measured(out, job->step_mean_period_ms, 6);
	fputs(",\n  \"steps_per_second\": ", out);
	json_measured(out, job->steps_per_second, 4);
	fputs(",\n  \"step_basis\": ", out);
	gp_json_str(out, job->step_basis);
	/* the summary line's busy and idle (job.c): null without kernel records */
	fputs(",\n  \"busy_pct\": ", out);
	gp_json_num(out, job->gpu_span_ns > 0, job->busy_pct, 4);
	fputs(", \"idle_pct\": ", out);
	gp_json_num(out, job->gpu_span_ns > 0, job->idle_pct, 4);
	const struct gp_step_counts *sc = &job->step_counts;
	fprintf(out,
	        ",\n  \"step_counts\": {\"ranks\": %u, \"common\": %u, \"min\": %u, \"max\": %u, "
	        "\"ranks_differing\": %u, \"differing\": [",
	        sc->ranks, sc->common, sc->min, sc->max, sc->ndiffer);
	for (unsigned i = 0; i < sc->nruns; i++)
		fprintf(out, "%s{\"rank\": %d, \"last\": %d, \"count\": %u}", i ? ", " : "",
		        sc->differ[i].rank, sc->differ[i].last, sc->differ[i].count);
	fprintf(out, "]}");
	json_nodes(out, job);
	fprintf(out, ",\n  \"accounting\": ");
	gp_acct_json(job, out);
	fprintf(out, ",\n  \"sacct\": ");
	gp_json_str(out, job->sacct);
	fprintf(out,
	        ",\n  \"unreadable_rank_files\": %u, \"first_unreadable\": ", job->nunreadable);
	gp_json_str(out, job->unreadable);
	fprintf(out, ",\n  \"other_job_rank_files\": %u, \"other_job\": ", job->other_ranks);
	gp_json_str(out, job->other_job);
	fprintf(out, ", \"copies_left_out\": %u", job->copies);
	fprintf(out, ",\n  \"batch_script\": ");
	if (job->batch.seen) {
		fprintf(out,
		        "{\"complete\": %s, \"wait_status\": %d, \"wall_s\": %.6f, \"command\": ",
		        job->batch.has_end ? "true" : "false", job->batch.wait_status,
		        job->batch.wall_ns / 1e9);
		gp_json_str(out, job->batch.command);
		fprintf(out, "}");
	} else {
		fprintf(out, "null");
	}
	fprintf(out, ",\n  \"launchers\": [");
	for (unsigned i = 0; i < job->nlaunchers; i++) {
		const struct gp_launcher *l = &job->launchers[i];
		fprintf(out, "%s\n    {\"task\": %d, \"node\": ", i ? "," : "", l->task);
		gp_json_str(out, l->node);
		fprintf(out, ", \"command\": ");
		gp_json_str(out, l->command);
		fprintf(out, ", \"complete\": %s, \"wait_status\": %d, \"other_processes\": %llu}",
		        l->has_end ? "true" : "false", l->wait_status,
		        (unsigned long long)l->other_processes);
	}
	fprintf(out, "%s],\n  \"findings\": [", job->nlaunchers ? "\n  " : "");
	for (unsigned i = 0; i < job->nf; i++) {
		const gp_finding_t *f = &job->f[i];
		fprintf(out, "%s\n    {\"id\": ", i ? "," : "");
		gp_json_str(out, f->id);
		fprintf(out,
		        ", \"kind\": \"%s\", \"rank\": %d, \"score\": %.4f, \"saving_ms\": %.4f, "
		        "\"saving_pct\": %.2f, \"saving_bytes\": %.0f, \"effect_of\": ",
		        f->kind == GP_F_OUTCOME ? "outcome"
		        : f->kind == GP_F_TIME  ? "time"
		                                : "memory",
		        f->rank, f->score, f->saving_ms, f->saving_pct, f->saving_bytes);
		if (f->effect_of[0])
			gp_json_str(out, f->effect_of);
		else
			fputs("null", out);
		fprintf(out, ", \"title\": ");
		gp_json_str(out, f->title);
		fprintf(out, ", \"evidence\": ");
		gp_json_str(out, f->evidence);
		fprintf(out, ", \"threshold\": ");
		gp_json_str(out, f->threshold);
		fprintf(out, ", \"fix\": ");
		gp_json_str(out, f->fix);
		fprintf(out, "}");
	}
	fprintf(out, "\n  ],\n  \"ranks\": [");
	unsigned written = 0;
	for (unsigned i = 0; i < job->nranks; i++) {
		if (!json_listed(job, &job->ranks[i]))
			continue;
		fprintf(out, "%s\n    ", written++ ? "," : "");
		gp_json_rank(out, &job->ranks[i]);
	}
	fprintf(out, "\n  ],\n  \"ranks_total\": %u, \"ranks_written\": %u,\n  \"rank_table\": ",
	        job->nranks, written);
	gp_json_rank_table(out, job->ranks, job->nranks);
	fprintf(out, ",\n  \"kernels\": [");
	for (unsigned i = 0; i < job->nk && i < 200; i++) {
		const gp_kstat_t *k = &job->k[i];
		fprintf(out, "%s\n    {\"name\": ", i ? "," : "");
		gp_json_str(out, k->name);
		fprintf(
		    out,
		    ", \"calls\": %llu, \"total_ns\": %llu, \"min_ns\": %llu, \"max_ns\": %llu, "
		    "\"median_ns\": %.0f, \"p95_ns\": %.0f, \"stddev_ns\": %.0f, \"comm\": %s, "
		    "\"launched_in\": ",
		    (unsigned long long)k->calls, (unsigned long long)k->total,
		    (unsigned long long)k->min, (unsigned long long)k->max,
		    gp_kstat_quantile(k, 0.5), gp_kstat_quantile(k, 0.95), gp_kstat_stddev(k),
		    k->comm ? "true" : "false");
		if (k->in[0].name)
			gp_json_str(out, k->in[0].name);
		else
			fputs("null", out);
		fprintf(out, ", \"launched_in_ns\": %llu, \"share\": %.6f, \"kind\": ",
		        (unsigned long long)k->in[0].ns, gp_job_kernel_share(job, i));
		gp_json_str(out, gp_kernel_kind(k->name));
		fputc('}', out);
	}
	gp_kind_t kd[16];
	unsigned nkd = gp_job_kernel_kinds(job, kd, 16);
	fprintf(out, "\n  ],\n  \"kernel_kinds\": [");
	for (unsigned i = 0; i < nkd; i++) {
		fprintf(out, "%s\n    {\"kind\": ", i ? "," : "");
		gp_json_str(out, kd[i].kind);
		fprintf(
		    out,
		    ", \"total_ns\": %llu, \"share\": %.6f, \"calls\": %llu, \"kernels\": %llu}",
		    (unsigned long long)kd[i].total, kd[i].share, (unsigned long long)kd[i].calls,
		    (unsigned long long)kd[i].kernels);
	}
	fprintf(out, "\n  ],\n  \"nvtx\": [");
	for (unsigned i = 0; i < job->nr && i < 500; i++) {
		const gp_rstat_t *r = &job->r[i];
		fprintf(out, "%s\n    {\"name\": ", i ? "," : "");
		gp_json_str(out, r->name);
		fprintf(out,
		        ", \"count\": %llu, \"cpu_ns\": %llu, \"gpu_ns\": %llu, \"sync_ns\": %llu, "
		        "\"count_all\": %llu}",
		        (unsigned long long)r->count, (unsigned long long)r->cpu_ns,
		        (unsigned long long)r->gpu_ns, (unsigned long long)r->sync_ns,
		        (unsigned long long)r->count_all);
	}
	fprintf(out, "\n  ]");
	gp_attr_json(job, out);
	fprintf(out, "\n}\n");
}

/* Append a small JSON file we wrote ourselves (the plugin's node summary) verbatim: a
 * regular file of the job directory's owner, never through a link nor waiting on a
 * FIFO (root reading a user's job). */
static bool embed_file(FILE *out, const gp_job_t *job, const char *path)
{
	char buf[65536];
	size_t n = gp_read_job_file(job, path, buf, sizeof(buf));
	if (n == (size_t)-1)
		return false;
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		n--;
	/* the file is the user's (the plugin writes it as the user): embedded only when it is
	 * one JSON object, valid UTF-8 and not cut at our 64 KiB, so job.json stays JSON */
	if (!n || buf[0] != '{' || buf[n - 1] != '}' || !gp_json_valid(buf, n))
		return false;
	fwrite(buf, 1, n, out);
	return true;
}

void gp_job_json(const gp_job_t *job, FILE *out)
{
	char b[64];
	uint64_t start = UINT64_MAX, end = 0;
	const gp_rank_t *r0 = job->nranks ? &job->ranks[0] : NULL;
	for (unsigned i = 0; i < job->nranks; i++) {
		const gp_rank_t *r = &job->ranks[i];
		if (r->id.start_realtime_ns && r->id.start_realtime_ns < start)
			start = r->id.start_realtime_ns;
		if (r->id.start_realtime_ns + r->outcome.wall_ns > end)
			end = r->id.start_realtime_ns + r->outcome.wall_ns;
	}
	fprintf(out, "{\n  \"schema\": \"gpuprof-job/1\",\n  \"job\": ");
	gp_json_str(out, job->job);
	fprintf(out, ",\n  \"job_name\": ");
	gp_json_str(out, r0 ? gp_txt(r0->id.job_name) : "");
	fprintf(out, ",\n  \"user\": ");
	gp_json_str(out, r0 ? r0->id.user : "");
	fprintf(out, ",\n  \"modes\": ");
	gp_json_str(out, r0 ? r0->id.modes : "");
	fprintf(out, ",\n  \"start_unix_ns\": %llu,\n  \"end_unix_ns\": %llu,\n  \"nodes\": [",
	        (unsigned long long)(start == UINT64_MAX ? 0 : start), (unsigned long long)end);
	u64map_t seen = {0}; /* nodes listed: one pointer a name (text.h) */
	for (unsigned i = 0, n = 0; i < job->nranks; i++) {
		uint64_t key = (uint64_t)(uintptr_t)job->ranks[i].id.node.s + 1, had;
		if (u64map_get(&seen, key, &had))
			continue;
		u64map_put(&seen, key, 1);
		fprintf(out, "%s", n++ ? ", " : "");
		gp_json_str(out, gp_txt(job->ranks[i].id.node));
	}
	u64map_free(&seen);
	fprintf(out, "],\n  \"profiled_ranks\": [");
	for (unsigned i = 0; i < job->nranks; i++) {
		const gp_rank_t *r = &job->ranks[i];
		fprintf(out, "%s\n    {\"step\": ", i ? "," : "");
		gp_json_str(out, r->id.step);
		fprintf(out, ", \"rank\": %d, \"node\": ", r->id.rank);
		gp_json_str(out, gp_txt(r->id.node));
		fprintf(out, ", \"outcome\": ");
		gp_json_str(out, gp_rank_outcome(r, b, sizeof(b)));
		fprintf(out,
		        ", \"complete\": %s, \"wrapped\": ", r->outcome.has_end ? "true" : "false");
		gp_json_str(out, r->quality.wrapped);
		fprintf(out, ", \"fallback\": %s}",
		        strcmp(r->quality.wrapped, "agent") ? "true" : "false");
	}
	fprintf(out, "\n  ],\n  \"node_summaries\": [");
	/* step<S>[.attemptN]/node<N>.json, written by the plugin as the user at step end */
	unsigned n = 0;
	DIR *top = opendir(job->dir);
	struct dirent *de;
	while (top && (de = readdir(top))) {
		char sub[4400];
		if (strncmp(de->d_name, "step", 4))
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", job->dir, de->d_name);
		DIR *sd = gp_job_step_dir(job, dirfd(top), de->d_name, sub, false);
		struct dirent *fe;
		while (sd && (fe = readdir(sd))) {
			char path[4700];
			if (strncmp(fe->d_name, "node", 4) || !strstr(fe->d_name, ".json"))
				continue;
			snprintf(path, sizeof(path), "%s/%s", sub, fe->d_name);
			fprintf(out, "%s\n    ", n ? "," : "");
			if (embed_file(out, job, path))
				n++;
			else
				fprintf(out, "null"), n++;
		}
		if (sd)
			closedir(sd);
	}
	if (top)
		closedir(top);
	fprintf(out, "\n  ]\n}\n");
}
