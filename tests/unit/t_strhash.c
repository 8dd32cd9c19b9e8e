/* The string table's hash (common/strhash.h): the injected library knows a string by its
 * hash alone, so names that differ must hash apart, and a hash read a word at a time must
 * never read a byte outside the string (a name at the very end of a mapping). */
#include "config.h"
#include "strhash.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int main(void)
{
	/* every length 0..128, the string's last byte the last of a readable page (a PROT_NONE
	 * page follows), and its first the first of a page (one precedes): a read past either
	 * end faults */
	long pg = sysconf(_SC_PAGESIZE);
	char *m =
	    mmap(NULL, 3 * (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ok(m != MAP_FAILED && mprotect(m, (size_t)pg, PROT_NONE) == 0 &&
	       mprotect(m + 2 * pg, (size_t)pg, PROT_NONE) == 0,
	   "guard pages around a page of strings");
	memset(m + pg, 'x', (size_t)pg);
	uint64_t at_end[129], at_start[129];
	for (size_t len = 0; len <= 128; len++) {
		at_end[len] = gp_strhash(m + 2 * pg - len, len);
		at_start[len] = gp_strhash(m + pg, len);
	}
	ok(memcmp(at_end, at_start, sizeof(at_end)) == 0,
	   "lengths 0-128 read within the string only (no fault), the same hash wherever it is");

	/* names as programs make them: one million, no two alike, no two hashes alike */
	enum { N = 1000000 };
	uint64_t *h = malloc(N * sizeof(*h));
	size_t n = 0;
	for (int i = 0; i < 200000; i++) {
		int w[5];
		char b[5][160];
		w[0] = snprintf(b[0], sizeof(b[0]), "layer_%d", i);
		w[1] = snprintf(b[1], sizeof(b[1]), "step%d", i);
		w[2] = snprintf(b[2], sizeof(b[2]), "model.layers.%d.self_attn.q_proj", i);
		w[3] = snprintf(b[3], sizeof(b[3]), "%d", i);
		w[4] = snprintf(b[4], sizeof(b[4]),
		                "fwd/bwd iteration %08d of the training loop with a name longer "
		                "than sixty-four bytes",
		                i);
		for (int k = 0; k < 5; k++)
			h[n++] = gp_strhash(b[k], (size_t)w[k]);
	}
	qsort(h, n, sizeof(*h), cmp_u64);
	size_t dup = 0, zero = h[0] == 0;
	for (size_t i = 1; i < n; i++)
		dup += h[i] == h[i - 1];
	ok(dup == 0 && !zero, "%zu program-like names: %zu equal hashes, %s a zero", n, dup,
	   zero ? "" : "not");

	/* every bit of every byte counts, at every length up to 64, and the length itself */
	srand(7);
	size_t missed = 0, tried = 0;
	for (size_t len = 1; len <= 64; len++) {
		char s[64];
		for (size_t i = 0; i < len; i++)
			s[i] = (char)(rand() & 0xff);
		uint64_t base = gp_strhash(s, len);
		for (size_t i = 0; i < len; i++)
			for (int bit = 0; bit < 8; bit++) {
				s[i] ^= (char)(1 << bit);
				missed += gp_strhash(s, len) == base;
				s[i] ^= (char)(1 << bit);
				tried++;
			}
		missed += len > 1 && gp_strhash(s, len - 1) == base;
	}
	ok(missed == 0, "a one-bit change anywhere, or a byte fewer, changes the hash (%zu of %zu)",
	   missed, tried);
	ok(gp_strhash("", 0) != 0 && gp_strhash("a", 1) != gp_strhash("b", 1) &&
	       gp_strhash("ab", 2) != gp_strhash("ba", 2),
	   "short strings: empty not 0, order counts");
	free(h);
	return done_testing();
}
