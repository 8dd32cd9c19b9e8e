/* NVTX ranges (ranges.c: gp_pass_ranges): projected GPU time and synchronisation across
 * threads. Section "sync" of gp_rank_t (rank.h). */
#ifndef GP_RANGES_H
#define GP_RANGES_H

#include <stdint.h>

#include "text.h"

#define GP_SYNC_RANGE 128
typedef struct gp_sync {
	uint64_t ns, calls, records;
	gp_text_t range; /* the range the most synchronisation time fell in (GP_SYNC_RANGE) */
	uint64_t range_ns;
} gp_sync_t;

#endif
