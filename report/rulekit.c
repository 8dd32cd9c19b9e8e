/* What the rules share (findings.h): a threshold's value, a rank's time per step and the
 * step it is a share of, the step's idle time, gpuprof's own tracing, the framework's
 * words, bytes for a person, and adding a finding to the job. Apart from the engine and
 * the table, so that rules, engine and table depend on it and never on one another. */
#include "config.h"
#include "findings.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

double gp_th(const gp_rule_t *rule, unsigned k)
{
	const gp_threshold_t *t = &rule->th[k];
	return !strcmp(t->unit, "%") ? t->value / 100 : t->value;
}

void gp_cat(char *buf, size_t len, const char *fmt, ...)
{
	size_t l = strnlen(buf, len);
	if (l + 1 >= len)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf + l, len - l, fmt, ap);
	va_end(ap);
}

unsigned gp_gsteps(const gp_rank_t *r)
{
	return r->capture.window ? r->capture.steps : r->steps.n_post;
}

/* of the mean step: savings add up in time (the median is the headline's) */
double gp_step_of(const gp_rank_t *r)
{
	return r->steps.mean_ms > 0 ? r->steps.mean_ms : r->steps.median_ms;
}

/* over the steps the window holds (the traced post-warm-up steps) */
double gp_per_step_ms(const gp_rank_t *r, uint64_t t)
{
	unsigned n = gp_gsteps(r);
	return n && r->steps.median_ms > 0 ? (double)t / 1e6 / n : 0;
}

/* the busy share of the untraced steps where known, else the traced span's, applied to the
 * step the savings are a share of (gp_step_of) */
double gp_idle_bound_ms(const gp_rank_t *r)
{
	double busy = r->gpu.busy_pct_untraced > 0 ? r->gpu.busy_pct_untraced
	              : r->gpu.span_ns ? 100.0 * (double)r->gpu.busy_ns / (double)r->gpu.span_ns
	                               : 0;
	double idle = gp_step_of(r) * (1 - busy / 100);
	return busy > 0 && idle >= 0 ? idle : -1;
}

double gp_exposed_comm_ms(const gp_rank_t *r)
{
	return gp_per_step_ms(
	    r, r->gpu.comm_ns > r->gpu.overlap_ns ? r->gpu.comm_ns - r->gpu.overlap_ns : 0);
}

/* Measured against the untraced steps of the same run where there are any, else CUPTI's
 * overhead records per step. The host-caused idle time of traced steps holds it; no finding
 * is sized with it. */
double gp_tracer_ms(const gp_rank_t *r, const char **how)
{
	unsigned n = gp_gsteps(r);
	if (r->capture.tracer_ms_per_step > 0) {
		*how = "the traced steps took that much longer than the untraced ones";
		return r->capture.tracer_ms_per_step;
	}
	*how = r->capture.ntraced && !r->capture.nuntraced
	           ? "CUPTI's own overhead records inside those gaps; every step was traced, so "
	             "the rest of tracing's cost could not be measured and is still in these "
	             "figures"
	           : "CUPTI's own overhead records inside those gaps";
	return n ? (double)r->gpu.idle_tracer_ns / 1e6 / n : 0;
}

bool gp_is_jax(const gp_rank_t *r)
{
	return !strncmp(gp_txt(r->torch.info), "jax ", 4);
}

/* The framework a rank's advice speaks: its integration's own word (PyTorch's or JAX's),
 * else its kernels' names (at::native: PyTorch; XLA's fusions: JAX), else CUDA C. */
const char *gp_words(const gp_rank_t *r, const char *torch, const char *jax, const char *cuda)
{
	if (gp_is_jax(r))
		return jax;
	if (r->torch.seen || r->gpu.torch_kernels)
		return torch;
	return r->gpu.xla_kernels ? jax : cuda;
}

void gp_rule_bytes(double b, char *out, size_t len)
{
	if (b >= 1073741824.0)
		snprintf(out, len, "%.2f GiB", b / 1073741824.0);
	else if (b >= 1048576.0)
		snprintf(out, len, "%.1f MiB", b / 1048576.0);
	else if (b >= 1024.0)
		snprintf(out, len, "%.1f KiB", b / 1024.0);
	else
		snprintf(out, len, "%.0f B", b);
}

gp_finding_t *gp_rule_add(gp_rule_ctx_t *c, const gp_rule_t *rule, const gp_rank_t *r)
{
	gp_job_t *job = c->job;
	if (job->nf == sizeof(job->f) / sizeof(job->f[0]))
		return NULL;
	gp_finding_t *f = &job->f[job->nf++];
	memset(f, 0, sizeof(*f));
	snprintf(f->id, sizeof(f->id), "%s", rule->id);
	f->rule = rule;
	f->kind = rule->tier;
	f->rank = r ? r->id.rank : -1;
	return f;
}
