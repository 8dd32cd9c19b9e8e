/* Symbol table of one rank file (see symtab.h). */
#include "config.h"
#include "symtab.h"

#include <string.h>

bool gp_symtab_feed(gp_symtab_t *t, const gp_event_t *e)
{
	uint64_t i, off;
	switch (e->type) {
	case GP_EV_STRING:
		if (!u64map_get(&t->str_ids, (uint64_t)e->tid + 1, &i)) {
			char *s = calloc(1, GP_STRING_MAX + 1);
			if (!s)
				return true;
			VEC_PUSH(t->strs, s);
			i = t->strs.n - 1;
			u64map_put(&t->str_ids, (uint64_t)e->tid + 1, i);
		}
		if ((size_t)e->u16 + e->u8 <= GP_STRING_MAX)
			memcpy(t->strs.v[i] + e->u16, &e->a, e->u8 <= 32 ? e->u8 : 32);
		return true;
	case GP_EV_FRAME:
		u64map_put(&t->frame, e->a, e->b);
		return true;
	case GP_EV_STACK: {
		if (!u64map_get(&t->stack_off, e->tid, &off)) {
			VEC_PUSH(t->pcs, (uint64_t)0);
			u64map_put(&t->stack_off, e->tid, t->pcs.n);
			off = t->pcs.n;
		}
		const uint64_t pcs[3] = {e->b, e->c, e->d};
		/* one producer thread writes a stack's pieces in order; a piece of another
		 * stack in between ends this one where it is */
		for (int k = 0; k < e->u8 && k < 3; k++) {
			if (off + t->pcs.v[off - 1] != t->pcs.n)
				break;
			VEC_PUSH(t->pcs, pcs[k]);
			t->pcs.v[off - 1]++;
		}
		return true;
	}
	default:
		return false;
	}
}

const char *gp_symtab_str(const gp_symtab_t *t, uint32_t id)
{
	uint64_t i;
	if (!id || !u64map_get(&t->str_ids, (uint64_t)id + 1, &i))
		return NULL;
	return t->strs.v[i];
}

size_t gp_symtab_stack(const gp_symtab_t *t, uint32_t stack, const uint64_t **pcs)
{
	uint64_t off;
	if (!stack || !u64map_get(&t->stack_off, stack, &off))
		return 0;
	*pcs = &t->pcs.v[off];
	return t->pcs.v[off - 1];
}

const char *gp_symtab_frame(const gp_symtab_t *t, uint64_t pc)
{
	uint64_t sid;
	const char *s = u64map_get(&t->frame, pc, &sid) ? gp_symtab_str(t, (uint32_t)sid) : NULL;
	return s ? s : "?";
}

bool gp_symtab_profiler_frame(const char *s)
{
	return strstr(s, "(libcupti") || strstr(s, "(libgpuprof") || strstr(s, "(libcuda.so");
}

static void map_clear(u64map_t *m)
{
	if (m->cap) {
		memset(m->k, 0, m->cap * sizeof(*m->k));
		m->n = 0;
	}
}

void gp_symtab_reset(gp_symtab_t *t)
{
	for (size_t i = 0; i < t->strs.n; i++)
		free(t->strs.v[i]);
	t->strs.n = t->pcs.n = 0;
	map_clear(&t->str_ids);
	map_clear(&t->frame);
	map_clear(&t->stack_off);
}

void gp_symtab_free(gp_symtab_t *t)
{
	gp_symtab_reset(t);
	VEC_FREE(t->strs);
	VEC_FREE(t->pcs);
	u64map_free(&t->str_ids);
	u64map_free(&t->frame);
	u64map_free(&t->stack_off);
}
