/* NVTX ranges (ranges.c: gp_pass_ranges): projected GPU time and synchronisation across
 * threads. Section "sync" of gp_rank_t (rank.h). */
#ifndef GP_RANGES_H
#define GP_RANGES_H

#include <stdint.h>

typedef struct gp_sync {
	uint64_t ns, calls, records;
	char range[128]; /* the range the most synchronisation time fell in */
	uint64_t range_ns;
} gp_sync_t;

#endif
