/* The process's table of result text (text.h): each distinct string once, in blocks that
 * never move, found through an open-addressing table of their hashes kept at most half
 * full; one mutex (a rank sets a few dozen strings, the analysis threads seldom meet). */
#include "config.h"
#include "text.h"
#include "strhash.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK (64u << 10) /* strings are carved from blocks this large (a longer one alone) */

typedef struct slot {
	uint64_t hash; /* 0: empty */
	const char *s;
} slot_t;

static struct {
	pthread_mutex_t lock;
	slot_t *slot;
	size_t cap, n;
	char *block; /* the block strings are carved from now */
	size_t left;
	size_t bytes;
} tab = {.lock = PTHREAD_MUTEX_INITIALIZER};

static bool grow(void)
{
	size_t cap = tab.cap ? tab.cap * 2 : 1024;
	slot_t *ns = calloc(cap, sizeof(*ns));
	if (!ns)
		return false;
	for (size_t i = 0; i < tab.cap; i++) {
		if (!tab.slot[i].hash)
			continue;
		size_t j = tab.slot[i].hash & (cap - 1);
		while (ns[j].hash)
			j = (j + 1) & (cap - 1);
		ns[j] = tab.slot[i];
	}
	free(tab.slot);
	tab.bytes += (cap - tab.cap) * sizeof(*ns);
	tab.slot = ns;
	tab.cap = cap;
	return true;
}

/* A copy of s[0..len) with its NUL, carved from the current block; NULL: no memory.
 * Blocks are only ever reached through the strings in them (never freed). */
static const char *store(const char *s, size_t len)
{
	char *p;
	if (len + 1 > BLOCK / 4) { /* a long one gets its own */
		if (!(p = malloc(len + 1)))
			return NULL;
		tab.bytes += len + 1;
	} else {
		if (len + 1 > tab.left) {
			if (!(tab.block = malloc(BLOCK)))
				return tab.left = 0, NULL;
			tab.left = BLOCK;
			tab.bytes += BLOCK;
		}
		p = tab.block;
		tab.block += len + 1;
		tab.left -= len + 1;
	}
	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

static const char *intern(const char *s, size_t len)
{
	uint64_t h = gp_strhash(s, len);
	const char *got = NULL;
	pthread_mutex_lock(&tab.lock);
	if ((tab.n + 1) * 2 > tab.cap && !grow())
		goto out;
	size_t j = h & (tab.cap - 1);
	for (; tab.slot[j].hash; j = (j + 1) & (tab.cap - 1))
		if (tab.slot[j].hash == h && !strncmp(tab.slot[j].s, s, len) && !tab.slot[j].s[len])
			goto found;
	if (!(tab.slot[j].s = store(s, len)))
		goto out;
	tab.slot[j].hash = h;
	tab.n++;
found:
	got = tab.slot[j].s;
out:
	pthread_mutex_unlock(&tab.lock);
	return got;
}

void gp_text_set(gp_text_t *t, const char *s, size_t max)
{
	size_t len = s ? (max ? strnlen(s, max - 1) : strlen(s)) : 0;
	t->s = len ? intern(s, len) : NULL;
}

void gp_text_setn(gp_text_t *t, const char *s, size_t len)
{
	t->s = len ? intern(s, len) : NULL;
}

void gp_text_setf(gp_text_t *t, size_t max, const char *fmt, ...)
{
	char small[1024], *buf = small;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0) {
		t->s = NULL;
		return;
	}
	size_t want = max && (size_t)n >= max ? max - 1 : (size_t)n;
	if (want >= sizeof(small)) { /* longer than the first try held */
		if (!(buf = malloc((size_t)n + 1))) {
			t->s = NULL;
			return;
		}
		va_start(ap, fmt);
		vsnprintf(buf, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	t->s = want ? intern(buf, want) : NULL;
	if (buf != small)
		free(buf);
}

size_t gp_text_bytes(void)
{
	pthread_mutex_lock(&tab.lock);
	size_t b = tab.bytes;
	pthread_mutex_unlock(&tab.lock);
	return b;
}
