/* CRC32C: table-driven fallback plus the SSE4.2 crc32 instruction. */
#include "config.h"
#include "crc32c.h"

#include <pthread.h>
#include <string.h>

static uint32_t table[256];
static int have_sse42;
static pthread_once_t once = PTHREAD_ONCE_INIT;

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
#endif
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const unsigned char *p,
                                                         size_t len)
{
	uint64_t c = crc;
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
