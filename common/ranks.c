/* Parser for the rank-list grammar (see ranks.h). */
#include "config.h"
#include "ranks.h"
#include "modes.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* Parse a decimal rank at *pp; advances *pp. -1 on no digits or overflow. */
static int parse_rank(const char **pp, uint32_t *out)
{
	const char *p = *pp;
	uint64_t v = 0;
	if (!isdigit((unsigned char)*p))
		return -1;
	while (isdigit((unsigned char)*p)) {
		v = v * 10 + (uint64_t)(*p - '0');
		if (v >= GP_RANK_MAX)
			return -2;
		p++;
	}
	*pp = p;
	*out = (uint32_t)v;
	return 0;
}

int gp_ranks_parse(const char *s, gp_ranks_t *out, char *err, size_t errlen)
{
	char why[128];
	gp_ranks_t rk;
	memset(&rk, 0, sizeof(rk));
	if (!s || !*s) {
		snprintf(err, errlen, "empty rank list (example: 0,8-15)");
		return -1;
	}
	if (gp_text_check(s, 4096, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "%s (example: 0,8-15)", why);
		return -1;
	}
	if (!strcmp(s, "all")) {
		rk.all = true;
		*out = rk;
		return 0;
	}
	for (const char *p = s;;) {
		const char *item = p;
		uint32_t lo, hi;
		int rc = parse_rank(&p, &lo);
		if (rc == 0) {
			hi = lo;
			if (*p == '-') {
				p++;
				rc = parse_rank(&p, &hi);
			}
		}
		if (rc == -2) {
			snprintf(err, errlen, "rank at position %zu is too large (maximum %u)",
			         (size_t)(item - s) + 1, GP_RANK_MAX - 1);
			return -1;
		}
		if (rc < 0 || (*p != ',' && *p != '\0')) {
			char esc[64];
			size_t len = strcspn(item, ",");
			gp_text_escape(item, len > 15 ? 15 : len, esc, sizeof(esc));
			snprintf(
			    err, errlen,
			    "bad rank item '%s' at position %zu (expected N or N-M, e.g. 0,8-15)",
			    esc, (size_t)(item - s) + 1);
			return -1;
		}
		if (hi < lo) {
			snprintf(err, errlen, "reversed range %u-%u at position %zu", lo, hi,
			         (size_t)(item - s) + 1);
			return -1;
		}
		if (rk.n == GP_RANKS_MAXRANGES) {
			snprintf(err, errlen, "more than %d items in rank list",
			         GP_RANKS_MAXRANGES);
			return -1;
		}
		rk.r[rk.n].lo = lo;
		rk.r[rk.n].hi = hi;
		rk.n++;
		if (*p == '\0')
			break;
		p++;
		if (*p == '\0') {
			snprintf(err, errlen, "trailing ',' in rank list");
			return -1;
		}
	}
	*out = rk;
	return 0;
}

bool gp_ranks_contains(const gp_ranks_t *rk, uint32_t rank)
{
	if (rk->all)
		return true;
	for (unsigned i = 0; i < rk->n; i++)
		if (rank >= rk->r[i].lo && rank <= rk->r[i].hi)
			return true;
	return false;
}

uint32_t gp_ranks_count(const gp_ranks_t *rk, uint32_t ntasks)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < ntasks; i++)
		n += gp_ranks_contains(rk, i);
	return n;
}
