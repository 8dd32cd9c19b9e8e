/* The accounting record's text: written, found among a field's entries, parsed strictly
 * (acctrec.h). */
#include "config.h"
#include "acctrec.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const gp_cause_key[GP_NCAUSES] = {"compute", "comm", "input",  "launch",    "sync",
                                              "startup", "idle", "unused", "unprofiled"};
const char *const gp_cause_words[GP_NCAUSES] = {
    "computing",         "exposed communication", "waiting for input",
    "launch-bound host", "sync stalls",           "start-up/compilation",
    "other GPU idle",    "allocated, unused",     "unprofiled"};

/* bytes of a directory kept raw; everything else is %XX */
static bool dir_raw(unsigned char c)
{
	switch (c) { /* a switch: strchr per byte was a tenth of the ledger's million records */
	case '/':
	case '.':
	case '_':
	case '-':
	case '+':
	case '~':
	case ',':
	case ':':
	case '@':
		return true;
	default:
		return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
	}
}

static void encode_dir(const char *dir, char *out, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;
	for (const unsigned char *c = (const unsigned char *)dir; *c; c++) {
		size_t need = dir_raw(*c) ? 1 : 3;
		if (o + need + 4 > len) { /* cut: the record says so */
			memcpy(out + o, "%7E", 3);
			o += 3;
			break;
		}
		if (need == 1) {
			out[o++] = (char)*c;
		} else {
			out[o++] = '%';
			out[o++] = hex[*c >> 4];
			out[o++] = hex[*c & 15];
		}
	}
	out[o] = '\0';
}

int gp_rec_format(const gp_acct_rec_t *r, char *out, size_t len)
{
	char dir[GP_REC_DIR_MAX + 1];
	encode_dir(r->dir, dir, sizeof(dir));
	int o =
	    snprintf(out, len, GP_REC_TAG "%d ranks=%u gpus=%u", GP_REC_VERSION, r->ranks, r->gpus);
	for (int i = 0; i < GP_NCAUSES && o > 0 && (size_t)o < len; i++)
		o += snprintf(out + o, len - (size_t)o, " %s=%.3f", gp_cause_key[i], r->s[i]);
	if (o > 0 && (size_t)o < len)
		o += snprintf(out + o, len - (size_t)o,
		              " step_ms=%.3f peak=%llu card=%llu top=%s dir=%s", r->step_ms,
		              (unsigned long long)r->peak_bytes, (unsigned long long)r->card_bytes,
		              r->top[0] ? r->top : "none", dir);
	return o < 0 || (size_t)o >= len || (size_t)o >= GP_REC_MAX ? -1 : 0;
}

static int fail(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return -1;
}

/* a decimal with at most 3 decimals, 0..max: nothing strtod would also take ("nan",
 * "1e9", "0x10", "+1", " 1"). Read as thousandths, an integer held exactly, over 1000:
 * the double nearest the decimal, as strtod's, without its cost per field (the ledger
 * reads a million records) */
static int parse_decimal(const char *v, double max, double *out)
{
	size_t i = 0, digits = 0, decimals = 0;
	uint64_t x = 0;
	for (; v[i] >= '0' && v[i] <= '9' && digits < 13; i++, digits++)
		x = x * 10 + (uint64_t)(v[i] - '0');
	if (v[i] == '.')
		for (i++; v[i] >= '0' && v[i] <= '9' && decimals < 4; i++, decimals++)
			x = x * 10 + (uint64_t)(v[i] - '0');
	if (!digits || v[i] || decimals > 3 || digits > 12)
		return -1;
	for (size_t k = decimals; k < 3; k++)
		x *= 10;
	*out = (double)x / 1000.0;
	return *out <= max ? 0 : -1;
}

static int parse_u64(const char *v, uint64_t max, uint64_t *out)
{
	size_t i = 0;
	while (v[i] >= '0' && v[i] <= '9')
		i++;
	if (!i || v[i] || i > 20 || (i > 1 && v[0] == '0'))
		return -1;
	errno = 0;
	unsigned long long x = strtoull(v, NULL, 10);
	if (errno || x > max)
		return -1;
	*out = x;
	return 0;
}

static int decode_dir(const char *v, char *out, size_t len)
{
	size_t o = 0;
	if (strlen(v) > GP_REC_DIR_MAX || !v[0])
		return -1;
	for (const char *c = v; *c; c++) {
		unsigned x;
		if (o + 1 >= len)
			return -1;
		if (*c != '%') {
			if (!dir_raw((unsigned char)*c))
				return -1;
			out[o++] = *c;
			continue;
		}
		if (sscanf(c + 1, "%2x", &x) != 1 || !c[1] || !c[2] || !x)
			return -1;
		out[o++] = (char)x;
		c += 2;
	}
	out[o] = '\0';
	return 0;
}

static int parse_top(const char *v, char *out, size_t len)
{
	size_t n = strlen(v);
	if (!n || n >= len)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (!((v[i] >= 'a' && v[i] <= 'z') || (v[i] >= '0' && v[i] <= '9') || v[i] == '_'))
			return -1;
	memcpy(out, v, n + 1);
	return 0;
}

enum { K_RANKS = GP_NCAUSES, K_GPUS, K_STEP, K_PEAK, K_CARD, K_TOP, K_DIR, NKEYS };
static const char *const other_keys[] = {"ranks", "gpus", "step_ms", "peak", "card", "top", "dir"};

static int key_index(const char *k, size_t n)
{
	for (int i = 0; i < NKEYS; i++) {
		const char *name = i < GP_NCAUSES ? gp_cause_key[i] : other_keys[i - GP_NCAUSES];
		if (name[0] == k[0] && !strncmp(k, name, n) && !name[n])
			return i;
	}
	return -1;
}

static int set_value(gp_acct_rec_t *r, int k, const char *v)
{
	uint64_t u;
	if (k < GP_NCAUSES)
		return parse_decimal(v, GP_REC_SEC_MAX, &r->s[k]);
	switch (k) {
	case K_RANKS:
	case K_GPUS:
		if (parse_u64(v, 10000000, &u) < 0)
			return -1;
		*(k == K_RANKS ? &r->ranks : &r->gpus) = (unsigned)u;
		return 0;
	case K_STEP:
		return parse_decimal(v, 1e9, &r->step_ms);
	case K_PEAK:
		return parse_u64(v, 1ULL << 50, &r->peak_bytes);
	case K_CARD:
		return parse_u64(v, 1ULL << 50, &r->card_bytes);
	case K_TOP:
		return parse_top(v, r->top, sizeof(r->top));
	default:
		return decode_dir(v, r->dir, sizeof(r->dir));
	}
}

int gp_rec_parse(const char *s, size_t n, gp_acct_rec_t *r, char *err, size_t errlen)
{
	char buf[GP_REC_MAX + 1];
	memset(r, 0, sizeof(*r));
	if (n > GP_REC_MAX)
		return fail(err, errlen, "%zu bytes (at most %d)", n, GP_REC_MAX);
	memcpy(buf, s, n);
	buf[n] = '\0';
	size_t tl = strlen(GP_REC_TAG);
	if (strncmp(buf, GP_REC_TAG, tl))
		return fail(err, errlen, "not a gpuprof record");
	char *sp = strchr(buf, ' ');
	if (sp)
		*sp = '\0';
	if (strcmp(buf + tl, "1"))
		return fail(err, errlen, "version '%.16s' not understood (this gpuprof reads 1)",
		            buf + tl);
	unsigned seen = 0;
	for (char *t = sp ? sp + 1 : NULL; t && *t;) {
		char *end = t, *eq = NULL; /* the token's end and its first '=', in one pass */
		for (; *end && *end != ' '; end++)
			if (*end == '=' && !eq)
				eq = end;
		if (*end)
			*end = '\0';
		else
			end = NULL;
		int k = eq ? key_index(t, (size_t)(eq - t)) : -1;
		if (k < 0)
			return fail(err, errlen, "unknown token '%.24s'", t);
		if (seen & (1u << k))
			return fail(err, errlen, "key '%.*s' twice", (int)(eq - t), t);
		seen |= 1u << k;
		if (set_value(r, k, eq + 1) < 0)
			return fail(err, errlen, "%.*s: bad value '%.24s'", (int)(eq - t), t,
			            eq + 1);
		t = end ? end + 1 : NULL;
	}
	if (seen != (1u << NKEYS) - 1) {
		for (int k = 0; k < NKEYS; k++)
			if (!(seen & (1u << k)))
				return fail(err, errlen, "key '%s' missing",
				            k < GP_NCAUSES ? gp_cause_key[k]
				                           : other_keys[k - GP_NCAUSES]);
	}
	if (r->gpus > r->ranks && r->ranks)
		return fail(err, errlen, "gpus=%u but ranks=%u", r->gpus, r->ranks);
	return 0;
}

/* Is field + i the start of an entry (the field's start, or after "; ")? */
static bool entry_at(const char *field, size_t i)
{
	return i == 0 || (i >= 2 && field[i - 2] == ';' && field[i - 1] == ' ');
}

int gp_rec_find(const char *field, const char **at, size_t *n, char *err, size_t errlen)
{
	int found = 0;
	for (const char *p = field; (p = strstr(p, GP_REC_TAG)); p++) {
		if (!entry_at(field, (size_t)(p - field)))
			continue;
		if (found++)
			return fail(err, errlen, "more than one gpuprof record");
		const char *end = strstr(p, "; ");
		*at = p;
		*n = end ? (size_t)(end - p) : strlen(p);
	}
	return found;
}

int gp_rec_compose(const char *field, const char *rec, char *out, size_t len)
{
	size_t o = 0;
	const char *p = field;
	while (*p) { /* each entry but ours, in order */
		const char *end = strstr(p, "; ");
		size_t n = end ? (size_t)(end - p) : strlen(p);
		if (n && strncmp(p, GP_REC_TAG, strlen(GP_REC_TAG))) {
			int w = snprintf(out + o, len - o, "%s%.*s", o ? "; " : "", (int)n, p);
			if (w < 0 || o + (size_t)w >= len)
				return -1;
			o += (size_t)w;
		}
		p += n + (end ? 2 : 0);
	}
	int w = snprintf(out + o, len - o, "%s%s", o ? "; " : "", rec);
	return w < 0 || o + (size_t)w >= len ? -1 : 0;
}
