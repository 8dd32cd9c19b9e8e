/* One way from a job directory to the job's figures, and the writers (pipeline.h). */
#include "config.h"
#include "pipeline.h"

#include <string.h>

#include "jobref.h"

void gp_job_sacct(gp_job_t *job)
{
	static const char fields[] =
	    "JobID,JobName,State,ExitCode,Elapsed,AllocTRES,NodeList,MaxRSS,AdminComment";
	char out[4096];
	if (!job->job[0] || !gp_jobref_is_id(job->job) ||
	    gp_sacct_field(job->job, fields, out, sizeof(out)) < 1)
		return;
	out[strcspn(out, "\n")] = '\0';
	snprintf(job->sacct, sizeof(job->sacct), "%s = %.*s",
	         "JobID|JobName|State|ExitCode|"
	         "Elapsed|AllocTRES|NodeList|MaxRSS|AdminComment",
	         (int)(sizeof(job->sacct) - 100), out);
	/* the State alone (the line above holds the job's name, which may hold '|') */
	if (gp_sacct_field(job->job, "State", out, sizeof(out)) > 0) {
		out[strcspn(out, "\n")] = '\0';
		snprintf(job->sacct_state, sizeof(job->sacct_state), "%s", out);
	}
}

int gp_job_analyse(gp_job_t *job, const char *dir, const gp_analyse_opts_t *o, char *err,
                   size_t errlen)
{
	static const gp_analyse_opts_t dflt = {0};
	if (!o)
		o = &dflt;
	if (gp_job_load(job, dir, o->step, o->steps_from, err, errlen) < 0)
		return -1;
	gp_job_snapshots(job); /* PyTorch's snapshots the rank files name: still there? */
	if (o->sacct)
		gp_job_sacct(job);
	gp_job_findings(job);
	return 0;
}

/* ---- the writers ---- */

static int w_text(const gp_job_t *job, FILE *out, const char *path, const gp_write_opts_t *o)
{
	(void)path, (void)o;
	gp_report_text(job, out);
	return 0;
}

static int w_json(const gp_job_t *job, FILE *out, const char *path, const gp_write_opts_t *o)
{
	(void)path, (void)o;
	gp_report_json(job, out);
	return 0;
}

static int w_html(const gp_job_t *job, FILE *out, const char *path, const gp_write_opts_t *o)
{
	(void)path, (void)o;
	return gp_report_html(job, out);
}

static int w_chrome(const gp_job_t *job, FILE *out, const char *path, const gp_write_opts_t *o)
{
	(void)path;
	return gp_export_chrome(job, out, o->ranks, o->max_events, o->win_from, o->win_to);
}

static int w_memviz(const gp_job_t *job, FILE *out, const char *path, const gp_write_opts_t *o)
{
	(void)path;
	return gp_export_memviz(job, out, o->ranks, o->pydir, o->torch113);
}

static int w_kineto(const gp_job_t *job, FILE *out, const char *path, const gp_write_opts_t *o)
{
	(void)out;
	return gp_export_kineto(job, path, o->ranks);
}

static int w_csv(const gp_job_t *job, FILE *out, const char *path, const gp_write_opts_t *o)
{
	(void)path;
	return gp_export_csv(job, out, o->table ? o->table : "kernels");
}

const gp_writer_t gp_writers[] = {
    {"text",
     "the report for a person: findings first, then how slow, where the time and "
     "the memory go",
     true, false, w_text},
    {"json", "report.json: every figure of the job and of each rank (gpuprof fields)", true, false,
     w_json},
    {"chrome",
     "a Chrome/Perfetto trace: NVTX ranges, kernels, copies, launch flows, memory "
     "and NVML counters",
     false, false, w_chrome},
    {"memviz", "a memory_viz pickle (PyTorch's viewer): allocations, frees, call stacks", false,
     false, w_memviz},
    {"html", "one self-contained page: findings, plots, the per-rank tables", false, false, w_html},
    {"kineto", "a Kineto-layout trace per rank under a directory (HTA)", false, true, w_kineto},
    {"csv", "one table (--table): kernels, ranks or findings", false, false, w_csv},
};
const size_t gp_nwriters = sizeof(gp_writers) / sizeof(gp_writers[0]);

const gp_writer_t *gp_writer_find(const char *name, bool report)
{
	for (size_t i = 0; name && i < gp_nwriters; i++)
		if (gp_writers[i].report == report && !strcmp(gp_writers[i].name, name))
			return &gp_writers[i];
	return NULL;
}

const char *gp_writer_names(bool report, char *buf, size_t len)
{
	size_t at = 0;
	buf[0] = 0;
	for (size_t i = 0; i < gp_nwriters && at < len; i++)
		if (gp_writers[i].report == report)
			at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? ", " : "",
			                       gp_writers[i].name);
	return buf;
}
