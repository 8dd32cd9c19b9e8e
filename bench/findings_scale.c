/* The findings engine on many ranks (report/findings.c): N synthetic ranks, 8 to a node,
 * each on a GPU of its own, one straggler; prints the time gp_job_findings takes alone
 * (its ranks already in memory, as a loaded report has them).
 * usage: bench/findings-scale [N]   (default 100000) */
#include "config.h"
#include "findings.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 100000;
	gp_job_t j;
	memset(&j, 0, sizeof(j));
	if (!n || !(j.ranks = calloc(n, sizeof(gp_rank_t))))
		return 1;
	/* every page in, as a report that loaded them has it (calloc's are mapped on first use) */
	for (size_t b = 0; b < (size_t)n * sizeof(gp_rank_t); b += 4096)
		((volatile char *)j.ranks)[b] = 0;
	j.nranks = n;
	for (unsigned i = 0; i < n; i++) {
		gp_rank_t *r = &j.ranks[i];
		r->id.rank = (int)i;
		gp_text_setf(&r->id.node, 64, "node%u", i / 8);
		snprintf(r->id.gpu_uuid, sizeof(r->id.gpu_uuid), "GPU-%u", i % 8);
		r->outcome.has_end = true;
		r->steps.n = r->steps.n_post = r->steps.nms = 100;
		r->steps.median_ms = r->steps.mean_ms = i == n / 2 ? 15 : 10;
		r->gpu.comm_ns = r->gpu.overlap_ns = 1000;
		r->gpu.nkernels = 1000;
		r->gpu.idle_host_ns = (uint64_t)1e8 + i;
	}
	j.step_median_ms = 10;
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	gp_job_findings(&j);
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%u ranks: gp_job_findings %.3f s; %u findings, the first %s on rank %d\n", n,
	       (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9, j.nf,
	       j.nf ? j.f[0].id : "-", j.nf ? j.f[0].rank : -1);
	gp_job_free(&j);
	return 0;
}
