/* Where the time goes on the GPU (gputime.c: gp_pass_gpu): busy/idle and why it idled,
 * communication vs compute, launches. Section "gpu" of gp_rank_t (rank.h). */
#ifndef GP_GPUTIME_H
#define GP_GPUTIME_H

#include <stdbool.h>
#include <stdint.h>

#include "text.h"

#define GP_GEMM_TOP 160
/* A kernel shorter than this is small (gpu.small_kernels; fragmentation's threshold) */
#define GP_SMALL_KERNEL_US 10

typedef struct gp_gpu {
	uint64_t kernels_total, kernels_in_steps, nkernels, span_ns, busy_ns, idle_host_ns,
	    idle_kernel_ns, idle_other_ns, idle_sync_ns;
	uint64_t kernels_other_thread; /* attributed to a range of another thread */
	/* the devices the rank ran kernels on (kernel records' device, 0..7): one process may
	 * drive several (JAX's local devices, HF device_map="auto", DataParallel); and each
	 * one's busy time (any stream) in the steady state's span, as busy_ns is the union's */
	unsigned devices, main_dev; /* main_dev: the one it ran most on (id.gpu_uuid's) */
	uint8_t dev_ran;            /* bit k: it ran kernels on device k */
	uint64_t dev_busy_ns[8];
	uint64_t dev_uuid_h[8]; /* each device's NVML UUID (GP_EV_GPU) as gp_strhash, 0
	                           unknown: 64 bytes a rank, not 512 (100 000 ranks) */
	uint64_t comm_ns, compute_ns, memcpy_ns, overlap_ns, nmemcpy, nmemset;
	/* communication's share of kernel time (comm / (comm + compute)), and the share of it
	 * compute overlapped: computed once here, shown by every writer (issue 49: the text
	 * said 30.5 % and the HTML 4.7 % of one rank, each its own ratio) */
	double comm_pct, comm_overlap_pct;
	/* small_kernels: kernels shorter than GP_SMALL_KERNEL_US (the fragmentation rule's
	 * small_kernel threshold, findings.h) */
	uint64_t small_kernels, short_vs_launch, launches_matched;
	/* launch_latency_us: a kernel's start less its launch call's start (the queue: how far
	 * the host runs ahead, not what launching costs); launch_call_us: the launch call's
	 * own duration (the host's cost of a launch); medians, 0 when not measured */
	double launch_latency_us, launch_call_us, kernel_mean_us, kernels_per_step,
	    kernel_gpu_per_step_ms; /* compute per step: per traced step with capture windows */
	/* With windows and a headline from the untraced steps: the GPU's busy time per traced
	 * step over the headline, the busy share scaled to the job's own steps (tracing
	 * stretches the traced steps' host side, not the GPU's work); 0: not scaled (no
	 * windows, or traced steps no slower than the untraced: steps not alike) */
	double busy_pct_untraced;
	/* where the steps' GPU idled, by what the host did: waiting for the next batch
	 * (GP_FW_DATA_WAIT), inside a framework's compilation, in a launch call, or none of
	 * those (time in Python, a slow host, or what gpuprof cannot see) */
	uint64_t idle_data_ns, idle_compile_ns, idle_launch_ns;
	uint64_t idle_tracer_ns; /* ... covered by CUPTI's own work (its overhead records) */
	/* post-warm-up steps with a host-caused idle gap of a tenth of the median step or
	 * more before one of their launches: (nearly) every step is a host that never runs
	 * ahead */
	uint64_t idle_host_gaps;
	uint64_t data_wait_ns, data_waits; /* inside the post-warm-up steps */
	double host_busy_per_step_ms;      /* host time inside launch and sync calls per step */
	double nvml_util_mean;             /* NVML's utilisation (analyze.c, from the loader) */
	uint64_t nvml_samples;
	/* host<->device copies of the steady state, and those from or into pageable host
	 * memory (staged by the driver, holding the host: pageable_copies): the recorded memory
	 * kinds, or, in files without them (pageable_inferred), an async copy of
	 * GP_PAGEABLE_MIN_BYTES or more whose call held the host through most of the transfer.
	 * held: the host's time inside those calls from the transfer's start on */
	uint64_t hd_copies, hd_bytes;
	uint64_t pageable_copies, pageable_bytes, pageable_ns, pageable_held_ns;
	bool pageable_inferred;
	/* fp32 matrix work on CUDA cores (SIMT/FFMA GEMM kernels, gp_fp32_simt_gemm): their
	 * time, the architecture they were built for (80: sm_80; 0 unknown) and the largest */
	uint64_t fp32_gemm_ns, fp32_gemm_calls;
	unsigned fp32_gemm_sm;
	gp_text_t fp32_gemm_top; /* GP_GEMM_TOP bytes at most */
	/* kernels whose names are PyTorch's (at::native) or XLA's (fusions): whose words the
	 * advice speaks where the framework's integration did not say itself */
	bool torch_kernels, xla_kernels;
	/* NCCL's collectives by kernel (the largest GP_COLLS by time): their time and what of
	 * it no compute kernel overlapped */
#define GP_COLLS 4
	struct gp_coll {
		char name[48];
		uint64_t calls, ns, exposed_ns;
	} coll[GP_COLLS];
	unsigned ncoll;
	/* whether the task used its GPUs where no CUDA activity says (rank.c), from the loader:
	 * NVML's compute processes (read once a second), the processes that called cuInit,
	 * and NVML's memory in use over its first sample */
	uint64_t nvml_proc_samples; /* NVML's process lists read (0: the driver gave none) */
	bool nvml_procs_refused;    /* the driver refused them (a collector that asks) */
	unsigned nvml_own_procs;    /* most processes of the task on its GPUs at once */
	unsigned nvml_other_procs;  /* most processes of others on them */
	uint64_t nvml_own_bytes;    /* most memory the task's processes held (0: not known) */
	uint64_t nvml_rise;         /* most memory in use above a GPU's first sample */
	unsigned cuda_inits;        /* processes of the rank that called cuInit */
} gp_gpu_t;
#define GP_PAGEABLE_MIN_BYTES (1u << 20)

#endif
