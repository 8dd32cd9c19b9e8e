/* Figures made from other figures of a rank, once (derive.h). */
#include "derive.h"

#include <stdio.h>
#include <string.h>

#include "rank.h"

static double pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0.0;
}

/* "torch 2.11.0+cu130; steps: ..." or "jax 0.11.2; compilation ...": the name and the
 * version its integration wrote first */
static void framework(gp_shares_t *s, const char *info)
{
	static const struct {
		const char *prefix, *name;
	} known[] = {{"torch ", "pytorch"}, {"jax ", "jax"}};
	s->framework[0] = s->framework_version[0] = 0;
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		size_t n = strlen(known[i].prefix);
		if (strncmp(info, known[i].prefix, n))
			continue;
		snprintf(s->framework, sizeof(s->framework), "%s", known[i].name);
		snprintf(s->framework_version, sizeof(s->framework_version), "%.*s",
		         (int)strcspn(info + n, "; "), info + n);
		return;
	}
}

void gp_rank_derive(gp_rank_t *r)
{
	gp_shares_t *s = &r->shares;
	const gp_gpu_t *g = &r->gpu;
	s->comm_exposed_ns = g->comm_ns > g->overlap_ns ? g->comm_ns - g->overlap_ns : 0;
	if (s->comm_exposed_ns > g->busy_ns) /* collectives on two streams at once */
		s->comm_exposed_ns = g->busy_ns;
	s->busy_pct = pct(g->busy_ns - s->comm_exposed_ns, g->span_ns);
	s->comm_only_pct = pct(s->comm_exposed_ns, g->span_ns);
	s->idle_host_pct = pct(g->idle_host_ns, g->span_ns);
	s->idle_sync_pct = pct(g->idle_sync_ns, g->span_ns);
	s->idle_kernel_pct = pct(g->idle_kernel_ns, g->span_ns);
	s->idle_other_pct = pct(g->idle_other_ns, g->span_ns);
	framework(s, r->torch.info);
	s->in_use_source[0] = 0;
	if (r->torch.max_allocated) {
		s->in_use_peak = r->torch.max_allocated;
		s->pool_peak = r->torch.max_reserved;
		snprintf(s->in_use_source, sizeof(s->in_use_source), "pytorch");
	} else if (r->pool.seen) {
		s->in_use_peak = r->pool.in_use_peak;
		s->pool_peak = r->pool.pool_peak;
		snprintf(s->in_use_source, sizeof(s->in_use_source), "pool");
	}
	s->cpu_samples = !strcmp(r->steps.source, "nvtx") || !strcmp(r->steps.source, "profiler")
	                     ? r->steps.nall
	                     : 0;
	if (r->torch.max_allocated && r->torch.nmem_steps) {
		s->growth_per_step = r->torch.growth_per_step;
		snprintf(s->growth_source, sizeof(s->growth_source), "pytorch");
	} else {
		s->growth_per_step = r->memory.growth_per_step;
		snprintf(s->growth_source, sizeof(s->growth_source), "%s",
		         r->memory.nallocs ? "cuda" : "");
	}
}
