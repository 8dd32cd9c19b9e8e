/* Growable arrays and a string-keyed hash map for the report (one rank at a time). */
#ifndef GP_VEC_H
#define GP_VEC_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define VEC(T)                                                                                     \
	struct {                                                                                   \
		T *v;                                                                              \
		size_t n, cap;                                                                     \
	}
#define VEC_PUSH(vec, item)                                                                        \
	do {                                                                                       \
		if ((vec).n == (vec).cap) {                                                        \
			size_t nc_ = (vec).cap ? (vec).cap * 2 : 256;                              \
			void *nv_ = realloc((vec).v, nc_ * sizeof(*(vec).v));                      \
			if (!nv_)                                                                  \
				break;                                                             \
			(vec).v = nv_;                                                             \
			(vec).cap = nc_;                                                           \
		}                                                                                  \
		(vec).v[(vec).n++] = (item);                                                       \
	} while (0)
#define VEC_FREE(vec)                                                                              \
	do {                                                                                       \
		free((vec).v);                                                                     \
		(vec).v = NULL;                                                                    \
		(vec).n = (vec).cap = 0;                                                           \
	} while (0)

/* Records arrive almost in order (per-thread CUPTI buffers interleave): sort only what
 * is not sorted yet, and never call qsort on an empty array (NULL base is UB). */
#define SORT_IF_NEEDED(vec, cmp)                                                                   \
	do {                                                                                       \
		size_t i_;                                                                         \
		for (i_ = 1; i_ < (vec).n && cmp(&(vec).v[i_ - 1], &(vec).v[i_]) <= 0; i_++)       \
			;                                                                          \
		if (i_ < (vec).n)                                                                  \
			qsort((vec).v, (vec).n, sizeof(*(vec).v), cmp);                            \
	} while (0)

/* u64 -> u64 open-addressing map (0 key reserved). */
typedef struct {
	uint64_t *k, *v;
	size_t cap, n;
} u64map_t;

static inline uint64_t u64mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

static inline void u64map_put(u64map_t *m, uint64_t k, uint64_t v);
static inline void u64map_grow(u64map_t *m)
{
	u64map_t n = {calloc(m->cap ? m->cap * 2 : 1024, 8), calloc(m->cap ? m->cap * 2 : 1024, 8),
	              m->cap ? m->cap * 2 : 1024, 0};
	if (!n.k || !n.v) {
		free(n.k);
		free(n.v);
		return;
	}
	for (size_t i = 0; i < m->cap; i++)
		if (m->k[i])
			u64map_put(&n, m->k[i], m->v[i]);
	free(m->k);
	free(m->v);
	*m = n;
}
static inline void u64map_put(u64map_t *m, uint64_t k, uint64_t v)
{
	if (!k)
		return;
	if ((m->n + 1) * 2 > m->cap)
		u64map_grow(m);
	if (!m->cap)
		return;
	for (size_t i = u64mix(k) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		if (m->k[i] == k) {
			m->v[i] = v;
			return;
		}
		if (!m->k[i]) {
			m->k[i] = k;
			m->v[i] = v;
			m->n++;
			return;
		}
	}
}
static inline int u64map_get(const u64map_t *m, uint64_t k, uint64_t *v)
{
	if (!k || !m->cap)
		return 0;
	for (size_t i = u64mix(k) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		if (m->k[i] == k) {
			*v = m->v[i];
			return 1;
		}
		if (!m->k[i])
			return 0;
	}
}
/* Forget every key, keep the memory (the next rank reuses it). */
static inline void u64map_clear(u64map_t *m)
{
	if (m->cap) {
		memset(m->k, 0, m->cap * sizeof(*m->k));
		m->n = 0;
	}
}
static inline void u64map_free(u64map_t *m)
{
	free(m->k);
	free(m->v);
	memset(m, 0, sizeof(*m));
}

#endif
