/* Where the memory goes (memory.c: gp_pass_memory, gp_pass_time_series): device memory
 * peak, growth, leaks, optimizer state, and the time series the HTML plots draw.
 * Sections "memory" and "ts" of gp_rank_t (rank.h). */
#ifndef GP_MEMORY_H
#define GP_MEMORY_H

#include <stdbool.h>
#include <stdint.h>

#include "text.h"

#define GP_MEM_STACK  1024
#define GP_MEM_RANGES 256
#define GP_MEM_MODULE 64
typedef struct gp_memory {
	uint64_t nallocs, nfrees, peak, peak_t_ns, final, static_bytes;
	uint64_t host_peak, managed_peak; /* pinned/pageable host, managed: apart */
	gp_text_t peak_stack;             /* up to GP_MEM_STACK - 1 bytes, as leak_stack */
	char peak_stack_source[48];       /* "CUPTI allocation callback", "PyTorch allocator
	                                     history" (the peak's largest owner), "" */
	int peak_step;                    /* the step the peak fell in, from 0; -1: none */
	gp_text_t peak_ranges; /* NVTX ranges open at the peak, outermost first (GP_MEM_RANGES) */
	bool peak_ranges_other_thread; /* ... on the steps' thread, not the allocating one */
	double growth_per_step;
	uint64_t leak_bytes, leak_allocs;
	gp_text_t leak_stack;
	uint64_t optimizer_bytes;
	char optimizer_source[48]; /* "PyTorch optimizer state" (its state tensors on the GPU)
	                              or "first optimizer range" (allocations still held) */
	struct {
		gp_text_t module; /* up to GP_MEM_MODULE - 1 bytes */
		uint64_t bytes;
	} owners[8]; /* device bytes live at the end, by allocating library */
	unsigned nowners;
	uint64_t nvml_max; /* NVML's largest memory in use (analyze.c, from the loader) */
	/* CUDA allocations refused for lack of device memory, and the last one's time */
	uint64_t oom_calls, oom_t_ns;
	int oom_step; /* the step the last refusal fell in, -1: none */
} gp_memory_t;

/* Time series for the HTML plots: GP_TS buckets over the rank's steps (first step's start
 * to the last one's end; the whole run when no steps were found), so start-up and
 * teardown do not take the width. */
#define GP_TS 120
typedef struct gp_series {
	double span_s;        /* the window's length */
	double from_s;        /* its start, after the rank's first record (not drawn before) */
	double warm_s;        /* the end of the warm-up steps, into the window (0: none) */
	float util[GP_TS];    /* GPU busy fraction (kernel records) */
	float mem_mib[GP_TS]; /* device memory live at the bucket's end */
	float nvml_util[GP_TS], nvml_w[GP_TS], nvml_mhz[GP_TS]; /* NVML means; -1: no sample */
} gp_series_t;

#endif
