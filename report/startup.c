/* Start-up: from the program's start to its first step (DESIGN.md rule 9), reported on
 * its own and never averaged into the steps. What filled it: the kernels it ran (XLA's
 * and cuBLAS's autotuning, first-use initialisation), the program's outermost NVTX ranges
 * (a framework's compilation ranges: XlaCompile ...), the compilations a framework
 * reported (GP_FW_COMPILE: jax.monitoring), and the device memory it allocated. */
#include "config.h"
#include "names.h"
#include "rankdata.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct item {
	uint32_t name;
	bool kernel;
	unsigned calls;
	uint64_t ns;
} item_t;

static int cmp_item(const void *a, const void *b)
{
	const item_t *x = a, *y = b;
	return x->ns > y->ns ? -1 : x->ns < y->ns;
}

/* add ns to the item (name, kernel) in v, by a map of name << 1 | kernel -> index + 1 */
static void add_item(void *vp, u64map_t *at, uint32_t name, bool kernel, uint64_t ns)
{
	VEC(item_t) *v = vp;
	uint64_t key = ((uint64_t)name << 1 | kernel) + 1, i;
	if (!u64map_get(at, key, &i)) {
		item_t it = {.name = name, .kernel = kernel};
		VEC_PUSH(*v, it);
		i = v->n;
		u64map_put(at, key, i);
	}
	v->v[i - 1].calls++;
	v->v[i - 1].ns += ns;
}

void gp_pass_startup(gp_rank_t *r, rank_data_t *d)
{
	if (!d->steps.n)
		return;
	uint64_t t0 = d->start_ts ? d->start_ts : d->first_ts, t1 = d->steps.v[0].start;
	if (t1 <= t0)
		return;
	r->startup.s = (double)(t1 - t0) / 1e9;
	VEC(item_t) items = {0};
	u64map_t at = {0};
	uint64_t busy = 0;
	for (size_t i = 0; i < d->kerns.n; i++) {
		const kern_t *k = &d->kerns.v[i];
		if (gp_rd_launch_ts(d, k) >= t1)
			continue;
		busy += k->dur;
		if (k->kind == 0)
			add_item(&items, &at, k->name, true, k->dur);
	}
	r->startup.gpu_busy_s = (double)busy / 1e9;
	for (size_t i = 0; i < d->ranges.n; i++) {
		const range_t *rg = &d->ranges.v[i];
		if (rg->depth == 0 && rg->start < t1 && gp_symtab_str(&d->sym, rg->name))
			add_item(&items, &at, rg->name, false,
			         (rg->end < t1 ? rg->end : t1) - rg->start);
	}
	uint64_t comp = 0;
	for (size_t i = 0; i + 2 < d->compiles.n; i += 3)
		if (d->compiles.v[i] <= t1) {
			comp += d->compiles.v[i + 1];
			add_item(&items, &at, (uint32_t)d->compiles.v[i + 2], false,
			         d->compiles.v[i + 1]);
		}
	r->startup.compile_s = (double)comp / 1e9;
	for (size_t i = 0; i < d->mems.n && d->mems.v[i].ts < t1; i++)
		if (!d->mems.v[i].is_free && d->mems.v[i].kind == 3)
			r->startup.alloc_bytes += d->mems.v[i].bytes;
	if (items.n)
		qsort(items.v, items.n, sizeof(item_t), cmp_item);
	/* the longest compilations and ranges, then the kernels that took most GPU time (a
	 * framework's autotuning): each kind has its own share of the rows */
	unsigned max = sizeof(r->startup.top) / sizeof(r->startup.top[0]), nk = 0, nr = 0;
	for (size_t i = 0; i < items.n && r->startup.ntop < max; i++) {
		const char *s = gp_rd_str(d, items.v[i].name);
		if (!s[0] || (items.v[i].kernel ? nk : nr) >= max / 2)
			continue;
		nk += items.v[i].kernel;
		nr += !items.v[i].kernel;
		__typeof__(r->startup.top[0]) *t = &r->startup.top[r->startup.ntop++];
		char *rn = gp_readable_name(s); /* demangled before it is cut to the field */
		gp_text_set(&t->name, rn ? rn : s, GP_STARTUP_NAME);
		free(rn);
		t->ms = (double)items.v[i].ns / 1e6;
		t->calls = items.v[i].calls;
		t->kernel = items.v[i].kernel;
	}
	VEC_FREE(items);
	u64map_free(&at);
}
