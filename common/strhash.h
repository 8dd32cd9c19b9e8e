/* A 64-bit hash of a short string, for the injected library's string table
 * (agent/inject/intern.c), which knows a string by its hash alone: every NVTX push of a
 * name hashes it, so it reads the bytes a word at a time (two overlapping loads for up to
 * 16 bytes, 16 a round above that), never past s + len, and mixes with a 64x64->128-bit
 * multiply folded to 64 bits (the "mum" step of wyhash). Byte-at-a-time FNV-1a took about
 * a quarter of a push+pop (perf, CPU machine). 0 is never returned (an empty slot). */
#ifndef GP_STRHASH_H
#define GP_STRHASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t gp_strhash_mum(uint64_t a, uint64_t b)
{
	unsigned __int128 r = (unsigned __int128)a * b;
	return (uint64_t)r ^ (uint64_t)(r >> 64);
}

static inline uint64_t gp_strhash_r64(const char *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

static inline uint64_t gp_strhash_r32(const char *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static inline uint64_t gp_strhash(const char *s, size_t len)
{
	const uint64_t k0 = 0xa0761d6478bd642full, k1 = 0xe7037ed1a0b428dbull;
	uint64_t seed = k0, a, b; /* the length comes in at the end, off the critical path */
	if (len <= 16) {
		if (len >= 4) { /* the first and last 4 (or 8) bytes, overlapping when short */
			size_t m = (len >> 3) << 2;
			a = gp_strhash_r32(s) << 32 | gp_strhash_r32(s + m);
			b = gp_strhash_r32(s + len - 4) << 32 | gp_strhash_r32(s + len - 4 - m);
		} else if (len) {
			a = (uint64_t)(uint8_t)s[0] << 16 | (uint64_t)(uint8_t)s[len >> 1] << 8 |
			    (uint8_t)s[len - 1];
			b = 0;
		} else {
			a = b = 0;
		}
	} else {
		const char *p = s;
		size_t n = len;
		while (n > 16) {
			seed = gp_strhash_mum(gp_strhash_r64(p) ^ k1, gp_strhash_r64(p + 8) ^ seed);
			p += 16;
			n -= 16;
		}
		a = gp_strhash_r64(s + len - 16); /* the last 16 bytes, overlapping the rounds */
		b = gp_strhash_r64(s + len - 8);
	}
	uint64_t h = gp_strhash_mum(k1 ^ len, gp_strhash_mum(a ^ k1, b ^ seed));
	return h ? h : 1;
}

#endif
