/* Start-up (startup.c: gp_pass_startup): from the program's start to the first step's
 * (DESIGN.md rule 9), and what filled it. Section "startup" of gp_rank_t (rank.h). */
#ifndef GP_STARTUP_H
#define GP_STARTUP_H

#include <stdbool.h>
#include <stdint.h>

#include "text.h"

#define GP_STARTUP_NAME 512
typedef struct gp_startup {
	double s, gpu_busy_s, compile_s;
	uint64_t alloc_bytes;
	struct {
		gp_text_t name; /* demangled, whole up to GP_STARTUP_NAME - 1 bytes (report.json) */
		double ms;
		unsigned calls;
		bool kernel; /* a kernel (else an NVTX range or a compilation) */
	} top[6];
	unsigned ntop;
} gp_startup_t;

#endif
