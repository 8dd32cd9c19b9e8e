/* The rank-list grammar of --gpuprof-ranks:  LIST := ITEM (',' ITEM)*,
 * ITEM := N | N-M  (0 <= N <= M < GP_RANK_MAX), or `all`. */
#ifndef GP_RANKS_H
#define GP_RANKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GP_RANK_MAX        16777216u /* 2^24 ranks is beyond any Slurm job */
#define GP_RANKS_MAXRANGES 256

typedef struct gp_ranks {
	bool all;
	unsigned n;
	struct {
		uint32_t lo, hi;
	} r[GP_RANKS_MAXRANGES];
} gp_ranks_t;

int gp_ranks_parse(const char *s, gp_ranks_t *out, char *err, size_t errlen);
bool gp_ranks_contains(const gp_ranks_t *rk, uint32_t rank);
/* Number of ranks selected among 0..ntasks-1. */
uint32_t gp_ranks_count(const gp_ranks_t *rk, uint32_t ntasks);

#endif
