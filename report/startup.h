/* Start-up (startup.c: gp_pass_startup): from the program's start to the first step's
 * (DESIGN.md rule 9), and what filled it. Section "startup" of gp_rank_t (rank.h). */
#ifndef GP_STARTUP_H
#define GP_STARTUP_H

#include <stdbool.h>
#include <stdint.h>

typedef struct gp_startup {
	double s, gpu_busy_s, compile_s;
	uint64_t alloc_bytes;
	struct {
		char name[512]; /* demangled, whole as far as it fits (report.json) */
		double ms;
		unsigned calls;
		bool kernel; /* a kernel (else an NVTX range or a compilation) */
	} top[6];
	unsigned ntop;
} gp_startup_t;

#endif
