/* The operation table (attribution.h): rows by range name, merged across ranks, kept in
 * the ranks' summaries. Apart from the pass (attribution.c), so that the rank's tables
 * (rank.c) and the summary (summary.c) use it without the analysis. */
#include "config.h"
#include "attribution.h"

#include <stdlib.h>
#include <string.h>

/* a name's key in the index (never 0: the map's empty key); its own, not load.c's, so
 * that the rank's tables need nothing of the analysis */
static uint64_t name_key(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h ? h : 1;
}

int gp_otab_add(gp_otab_t *t, const gp_ostat_t *row)
{
	const char *name = row->name;
	uint64_t h = name_key(name), at = 0;
	gp_ostat_t *o = NULL;
	if (u64map_get(&t->idx, h, &at) && at && !strcmp(t->v[at - 1].name, name))
		o = &t->v[at - 1];
	for (unsigned i = 0; !o && at && i < t->n; i++) /* two names, one hash */
		if (!strcmp(t->v[i].name, name))
			o = &t->v[i];
	if (!o) {
		if (t->n == t->cap) {
			unsigned nc = t->cap ? t->cap * 2 : 64;
			gp_ostat_t *nv = realloc(t->v, nc * sizeof(*nv));
			if (!nv)
				return -1;
			t->v = nv, t->cap = nc;
		}
		char *nm = strdup(name);
		if (!nm)
			return -1;
		o = &t->v[t->n++];
		memset(o, 0, sizeof(*o));
		o->name = nm;
		if (!at)
			u64map_put(&t->idx, h, t->n);
	}
	o->calls += row->calls, o->kernels += row->kernels, o->gpu_ns += row->gpu_ns;
	o->syncs += row->syncs, o->sync_ns += row->sync_ns;
	return 0;
}

void gp_otab_merge(gp_otab_t *t, const gp_otab_t *from)
{
	for (unsigned i = 0; i < from->n; i++)
		gp_otab_add(t, &from->v[i]);
	t->ranks += from->ranks;
	t->xla += from->xla;
	t->native += from->native;
	t->site_missed += from->site_missed;
}

void gp_otab_free(gp_otab_t *t)
{
	for (unsigned i = 0; i < t->n; i++)
		free(t->v[i].name);
	free(t->v);
	u64map_free(&t->idx);
	memset(t, 0, sizeof(*t));
}

/* rows: u32 count, u32 ranks, u32 XLA ranks, u32 native ranks, u64 kernels with no launch
 * site, then each: u16 name length, name, u64 calls, kernels,
 * gpu_ns, syncs, sync_ns */
void gp_otab_write(FILE *f, const gp_otab_t *t)
{
	uint32_t n[4] = {t->n, t->ranks, t->xla, t->native};
	fwrite(n, sizeof(n), 1, f);
	fwrite(&t->site_missed, sizeof(t->site_missed), 1, f);
	for (unsigned i = 0; i < t->n; i++) {
		uint16_t l = (uint16_t)strnlen(t->v[i].name, 65535);
		uint64_t v[5] = {t->v[i].calls, t->v[i].kernels, t->v[i].gpu_ns, t->v[i].syncs,
		                 t->v[i].sync_ns};
		fwrite(&l, 2, 1, f);
		fwrite(t->v[i].name, 1, l, f);
		fwrite(v, sizeof(v), 1, f);
	}
}

int gp_otab_read(const unsigned char **p, const unsigned char *end, gp_otab_t *t)
{
	const unsigned char *q = *p;
	uint32_t n[4];
	uint64_t missed;
	memset(t, 0, sizeof(*t));
	if (end - q < (long)(sizeof(n) + sizeof(missed)))
		return -1;
	memcpy(n, q, sizeof(n));
	memcpy(&missed, q + sizeof(n), sizeof(missed));
	q += sizeof(n) + sizeof(missed);
	if ((uint64_t)n[0] * 42 > (uint64_t)(end - q)) /* a row takes 42 bytes or more */
		return -1;
	for (uint32_t i = 0; i < n[0]; i++) {
		uint16_t l;
		uint64_t v[5];
		char name[65536];
		if (end - q < 2)
			goto bad;
		memcpy(&l, q, 2);
		q += 2;
		if (end - q < (long)l + (long)sizeof(v))
			goto bad;
		memcpy(name, q, l);
		name[l] = '\0';
		memcpy(v, q + l, sizeof(v));
		q += l + sizeof(v);
		gp_ostat_t row = {name, v[0], v[1], v[2], v[3], v[4]};
		if (gp_otab_add(t, &row) < 0)
			goto bad;
	}
	t->ranks = n[1];
	t->xla = n[2];
	t->native = n[3];
	t->site_missed = missed;
	*p = q;
	return 0;
bad:
	gp_otab_free(t);
	return -1;
}

bool gp_is_ops_domain(const char *domain)
{
	return domain && !strcmp(domain, GP_OPS_DOMAIN);
}
