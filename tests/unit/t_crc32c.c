/* CRC-32C (common/crc32c.c): the check value of the standard, and every length from 0 to
 * past three of its interleaved blocks, at every alignment, whole and in two parts,
 * against a bit-by-bit CRC-32C written from the polynomial (0x82F63B78, reflected). */
#include "config.h"
#include "crc32c.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

static uint32_t crc_bits(uint32_t crc, const unsigned char *p, size_t n)
{
	crc = ~crc;
	while (n--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = crc & 1 ? (crc >> 1) ^ 0x82f63b78u : crc >> 1;
	}
	return ~crc;
}

int main(void)
{
	ok(gp_crc32c(0, "123456789", 9) == 0xe3069283u, "the check value of \"123456789\"");
	enum { MAX = 3 * 3 * 1024 + 100 };
	unsigned char *b = malloc(MAX + 8);
	srand(7);
	for (size_t i = 0; b && i < MAX + 8; i++)
		b[i] = (unsigned char)rand();
	unsigned bad = 0, split_bad = 0, n = 0;
	for (size_t len = 0; b && len <= MAX; len += len < 200 ? 1 : 37)
		for (size_t off = 0; off < 8; off += len % 3 ? 7 : 1) {
			uint32_t want = crc_bits(0x1234u, b + off, len);
			bad += gp_crc32c(0x1234u, b + off, len) != want;
			size_t cut = len / 3;
			split_bad += gp_crc32c(gp_crc32c(0x1234u, b + off, cut), b + off + cut,
			                       len - cut) != want;
			n++;
		}
	ok(b && !bad, "every length up to %d at 8 alignments (%u of %u wrong)", MAX, bad, n);
	ok(b && !split_bad, "a buffer's CRC taken in two parts is its CRC (%u of %u wrong)",
	   split_bad, n);
	free(b);
	return done_testing();
}
