/* String interning (inject_int.h): content hash -> id, lock-free open addressing. A
 * string's definition (GP_EV_STRING pieces) is emitted by the thread that first claims
 * its slot; later callers get the id alone. */
#include "config.h"
#include "inject_int.h"

#include <stdatomic.h>
#include <string.h>

#define STR_PROBES 64
/* ids carry the process's generation on the ring (gp_inj.gen): processes that follow one
 * another under one agent intern into their own tables and must not share ids */
_Atomic uint64_t gp_inj_str_tbl[GP_INJ_STR_SLOTS];

static void emit_string(uint32_t id, const char *s, size_t len)
{
	size_t off = 0;
	if (len > GP_STRING_MAX)
		len = GP_STRING_MAX;
	do {
		gp_event_t e = {.type = GP_EV_STRING, .tid = id, .u16 = (uint16_t)off};
		size_t k = len - off > GP_STRING_CHUNK ? GP_STRING_CHUNK : len - off;
		e.u8 = (uint8_t)k;
		memcpy(&e.a, s + off, k);
		gp_inj_emit(&e);
		off += k;
	} while (off < len);
}

uint32_t gp_inj_intern(const char *s, size_t len)
{
	return gp_inj_intern_inl(s, len);
}

uint32_t gp_inj_intern_miss(const char *s, size_t len, uint64_t h)
{
	uint32_t idx = (uint32_t)h & (GP_INJ_STR_SLOTS - 1);
	for (int p = 0; p < STR_PROBES; p++, idx = (idx + 1) & (GP_INJ_STR_SLOTS - 1)) {
		uint64_t v = atomic_load_explicit(&gp_inj_str_tbl[idx], memory_order_relaxed);
		if (v == h)
			return GP_INJ_STR_ID(idx);
		if (v == 0) {
			uint64_t zero = 0;
			if (atomic_compare_exchange_strong_explicit(&gp_inj_str_tbl[idx], &zero, h,
			                                            memory_order_relaxed,
			                                            memory_order_relaxed)) {
				emit_string(GP_INJ_STR_ID(idx), s, len);
				return GP_INJ_STR_ID(idx);
			}
			if (zero == h)
				return GP_INJ_STR_ID(idx);
		}
	}
	gp_inj_count_drop(GP_LOSS_STRINGS, 1);
	return 0;
}

uint32_t gp_inj_intern_wstr(const wchar_t *ws)
{
	char buf[GP_STRING_MAX + 4];
	size_t o = 0;
	if (!ws)
		return 0;
	for (; *ws && o + 4 < GP_STRING_MAX; ws++) {
		uint32_t c = (uint32_t)*ws;
		if (c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
			c = 0xfffd;
		if (c < 0x80) {
			buf[o++] = (char)c;
		} else if (c < 0x800) {
			buf[o++] = (char)(0xc0 | c >> 6);
			buf[o++] = (char)(0x80 | (c & 0x3f));
		} else if (c < 0x10000) {
			buf[o++] = (char)(0xe0 | c >> 12);
			buf[o++] = (char)(0x80 | ((c >> 6) & 0x3f));
			buf[o++] = (char)(0x80 | (c & 0x3f));
		} else {
			buf[o++] = (char)(0xf0 | c >> 18);
			buf[o++] = (char)(0x80 | ((c >> 12) & 0x3f));
			buf[o++] = (char)(0x80 | ((c >> 6) & 0x3f));
			buf[o++] = (char)(0x80 | (c & 0x3f));
		}
	}
	return gp_inj_intern(buf, o);
}

void gp_inj_intern_reset(void)
{
	memset((void *)gp_inj_str_tbl, 0, sizeof(gp_inj_str_tbl));
}
