/* CRC32C: table-driven fallback plus the SSE4.2 crc32 instruction. */
#include "config.h"
#include "crc32c.h"

#include <pthread.h>
#include <string.h>

static uint32_t table[256];
static int have_sse42;
static pthread_once_t once = PTHREAD_ONCE_INIT;

#if defined(__x86_64__)
static void shift_init(void);
#endif

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		table[i] = c;
	}
#if defined(__x86_64__)
	__builtin_cpu_init();
	have_sse42 = __builtin_cpu_supports("sse4.2");
	if (have_sse42)
		shift_init();
#endif
}

#if defined(__x86_64__)
/* Three streams at once: the crc32 instruction takes 3 cycles and can start one a cycle,
 * so one dependent chain runs at a third of its rate. Each 3 x BLK bytes are three
 * chains (the first from the running CRC, the others from 0), joined by the CRC being
 * linear: crc(A B) = shift(crc(A)) ^ crc(0, B), shift being BLK zero bytes fed to the
 * register (shift_tab, made at start with the instruction itself). A summary's CRC
 * (39 KB a rank) was 7 % of a 100 000-rank report from summaries (perf). */
#define BLK 1024
static uint32_t shift_tab[4][256];

__attribute__((target("sse4.2"))) static uint32_t crc_zeros(uint32_t crc, size_t n)
{
	uint64_t c = crc;
	for (size_t i = 0; i < n / 8; i++)
		c = __builtin_ia32_crc32di(c, 0);
	return (uint32_t)c;
}

static void shift_init(void)
{
	for (unsigned k = 0; k < 4; k++)
		for (uint32_t b = 0; b < 256; b++)
			shift_tab[k][b] = crc_zeros(b << (8 * k), BLK);
}

static uint32_t shift(uint32_t c)
{
	return shift_tab[0][c & 0xff] ^ shift_tab[1][(c >> 8) & 0xff] ^
	       shift_tab[2][(c >> 16) & 0xff] ^ shift_tab[3][c >> 24];
}

__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const unsigned char *p,
                                                         size_t len)
{
	uint64_t c = crc;
	for (; len >= 3 * BLK; p += 3 * BLK, len -= 3 * BLK) {
		uint64_t a = c, b = 0, d = 0, va, vb, vd;
		for (size_t i = 0; i < BLK; i += 8) {
			memcpy(&va, p + i, 8);
			memcpy(&vb, p + BLK + i, 8);
			memcpy(&vd, p + 2 * BLK + i, 8);
			a = __builtin_ia32_crc32di(a, va);
			b = __builtin_ia32_crc32di(b, vb);
			d = __builtin_ia32_crc32di(d, vd);
		}
		c = shift(shift((uint32_t)a) ^ (uint32_t)b) ^ (uint32_t)d;
	}
	while (len >= 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		c = __builtin_ia32_crc32di(c, v);
		p += 8;
		len -= 8;
	}
	crc = (uint32_t)c;
	while (len--)
		crc = __builtin_ia32_crc32qi(crc, *p++);
	return crc;
}
#endif

uint32_t gp_crc32c(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	pthread_once(&once, crc_init);
	crc = ~crc;
#if defined(__x86_64__)
	if (have_sse42)
		return ~crc_hw(crc, p, len);
#endif
	while (len--)
		crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}
