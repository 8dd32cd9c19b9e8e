/* Symbol table of one rank file (see symtab.h). */
#include "config.h"
#include "symtab.h"

#include <string.h>

bool gp_symtab_feed(gp_symtab_t *t, const gp_event_t *e)
{
	uint64_t i, off;
	switch (e->type) {
	case GP_EV_STRING: {
		size_t at = e->u16, k = e->u8 <= 32 ? e->u8 : 32;
		if (at + k > GP_STRING_MAX)
			return true;
		if (!u64map_get(&t->str_ids, (uint64_t)e->tid + 1, &i)) {
			size_t n = t->strs.n;
			VEC_PUSH(t->strs, (char *)NULL);
			VEC_PUSH(t->cap, (uint16_t)0);
			if (t->strs.n != n + 1 || t->cap.n != n + 1) {
				t->strs.n = t->cap.n = n;
				return true;
			}
			i = n;
			u64map_put(&t->str_ids, (uint64_t)e->tid + 1, i);
		}
		if (at + k + 1 > t->cap.v[i]) { /* pieces arrive in order: grow to fit */
			size_t nc = (at + k + 1 + 31) & ~(size_t)31;
			char *ns = realloc(t->strs.v[i], nc);
			if (!ns)
				return true;
			memset(ns + t->cap.v[i], 0, nc - t->cap.v[i]);
			t->strs.v[i] = ns;
			t->cap.v[i] = (uint16_t)nc;
		}
		memcpy(t->strs.v[i] + at, &e->a, k);
		return true;
	}
	case GP_EV_FRAME:
		u64map_put(&t->frame, e->a, e->b);
		if (e->c) {
			u64map_put(&t->frame_mod, e->a, e->c);
			u64map_put(&t->frame_off, e->a, e->d);
		}
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

bool gp_symtab_frame_module(const gp_symtab_t *t, uint64_t pc, const char **module, uint64_t *off)
{
	uint64_t sid;
	if (!u64map_get(&t->frame_mod, pc, &sid) || !u64map_get(&t->frame_off, pc, off))
		return false;
	*module = gp_symtab_str(t, (uint32_t)sid);
	return *module != NULL;
}

bool gp_symtab_profiler_frame(const char *s)
{
	return strstr(s, "(libcupti") || strstr(s, "(libgpuprof") || strstr(s, "(libcuda.so");
}

void gp_symtab_reset(gp_symtab_t *t)
{
	for (size_t i = 0; i < t->strs.n; i++)
		free(t->strs.v[i]);
	t->strs.n = t->cap.n = t->pcs.n = 0;
	u64map_clear(&t->str_ids);
	u64map_clear(&t->frame);
	u64map_clear(&t->frame_mod);
	u64map_clear(&t->frame_off);
	u64map_clear(&t->stack_off);
}

void gp_symtab_free(gp_symtab_t *t)
{
	gp_symtab_reset(t);
	VEC_FREE(t->strs);
	VEC_FREE(t->cap);
	VEC_FREE(t->pcs);
	u64map_free(&t->str_ids);
	u64map_free(&t->frame);
	u64map_free(&t->frame_mod);
	u64map_free(&t->frame_off);
	u64map_free(&t->stack_off);
}
