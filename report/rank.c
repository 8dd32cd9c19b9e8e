/* A rank's lifecycle (rank.h): what a gp_rank_t owns, and the figures every output reads
 * the same way. Depends on nothing else of the report. */
#include "config.h"
#include "rank.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

void gp_rank_release(gp_rank_t *r)
{
	free(r->id.path);
	free(r->steps.ms);
	free(r->steps.no);
	free(r->steps.q);
	free(r->torch.own);
	r->id.path = NULL;
	r->steps.ms = NULL;
	r->steps.no = NULL;
	r->steps.q = NULL;
	r->torch.own = NULL;
}

gp_gpu_use_t gp_rank_gpu_use(const gp_rank_t *r)
{
	const gp_gpu_t *g = &r->gpu;
	bool rose = g->nvml_rise >= (uint64_t)GP_UNOBSERVED_MIB << 20;
	if (g->nvml_proc_samples) {
		if (g->nvml_own_procs || (g->nvml_other_procs && g->cuda_inits))
			return GP_GPU_USED;
		return GP_GPU_UNUSED;
	}
	if (!g->nvml_samples)
		return GP_GPU_UNKNOWN;
	if (rose)
		return GP_GPU_USED;
	/* a collector that writes the cuInit record (its driver refused the process list)
	 * and saw none: nothing of the task initialised CUDA. An older collector's first
	 * sample may come after the program's context (a short run): unknown. */
	return g->nvml_procs_refused && !g->cuda_inits ? GP_GPU_UNUSED : GP_GPU_UNKNOWN;
}

/* No CUDA work recorded: no kernel, copy, set or allocation, no step measured on the
 * GPU (step markers are CUDA events) */
static bool no_cuda_work(const gp_rank_t *r)
{
	return !r->gpu.kernels_total && !r->gpu.nmemcpy && !r->gpu.nmemset && !r->memory.nallocs &&
	       !r->steps.gpu_from_markers;
}

bool gp_rank_unobserved(const gp_rank_t *r)
{
	return strstr(r->id.modes, "cuda") && !r->quality.yielded.s && no_cuda_work(r) &&
	       gp_rank_gpu_use(r) == GP_GPU_USED;
}

bool gp_rank_gpu_unused(const gp_rank_t *r)
{
	return (r->id.gpu_uuid[0] || r->gpu.nvml_samples) && no_cuda_work(r) &&
	       gp_rank_gpu_use(r) == GP_GPU_UNUSED;
}

void gp_rank_compact_steps(gp_rank_t *r)
{
	if (!r->steps.no)
		return;
	for (unsigned k = 1; k < r->steps.nms; k++)
		if (r->steps.no[k] != r->steps.no[0] + k)
			return;
	r->steps.no0 = r->steps.nms ? r->steps.no[0] : 0;
	free(r->steps.no);
	r->steps.no = NULL;
}

void gp_rank_tables_free(gp_rank_tables_t *t)
{
	for (unsigned i = 0; !t->arena && i < t->nk; i++) {
		free(t->k[i].name);
		free(t->k[i].hist); /* gp_kstat_free_hist: gputime.c depends on this file */
		for (unsigned j = 0; j < GP_KRANGES; j++)
			free(t->k[i].in[j].name);
	}
	for (unsigned i = 0; !t->arena && i < t->nr; i++)
		free(t->r[i].name);
	free(t->arena);
	free(t->k);
	free(t->r);
	gp_otab_free(&t->ops);
	memset(t, 0, sizeof(*t));
}

bool gp_rank_task_failed(const gp_rank_t *r)
{
	return r->outcome.agent_end && r->outcome.agent_status != 0;
}

const char *gp_rank_outcome(const gp_rank_t *r, char *buf, size_t len)
{
	if (!r->outcome.has_end && !r->outcome.status_from_node)
		return "incomplete";
	if (r->outcome.status_unknown) /* a launcher's rank that did not exit() itself */
		return "ended (status with its launcher)";
	const char *slurm = r->outcome.status_from_node ? " (Slurm's status; no end record)" : "";
	if (WIFSIGNALED(r->outcome.wait_status))
		snprintf(buf, len, "signal %d%s", WTERMSIG(r->outcome.wait_status), slurm);
	else
		snprintf(buf, len, "exit %d%s", WEXITSTATUS(r->outcome.wait_status), slurm);
	return buf;
}

uint64_t gp_rank_in_use_peak(const gp_rank_t *r, const char **what)
{
	if (r->torch.max_allocated) {
		*what = "PyTorch's allocated memory (max_memory_allocated)";
		return r->torch.max_allocated;
	}
	if (r->pool.seen && r->pool.in_use_peak) {
		*what = "the framework's memory in use (its pool's own figure)";
		return r->pool.in_use_peak;
	}
	*what = "live device memory (CUDA's allocations)";
	return r->memory.peak;
}
