/* JSON strings that are valid UTF-8, and a check for JSON embedded from elsewhere
 * (json.h). */
#include "config.h"
#include "json.h"
#include "modes.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void gp_json_strn(FILE *out, const char *str, size_t n)
{
	const unsigned char *p = (const unsigned char *)(str ? str : "");
	fputc('"', out);
	for (size_t i = 0; i < n && p[i];) {
		uint32_t cp;
		size_t bad, len = gp_utf8_next(p + i, n - i, &cp, &bad);
		if (!len) {
			fputs("\xef\xbf\xbd", out); /* U+FFFD for the invalid subpart */
			i += bad;
			continue;
		}
		if (cp == '"' || cp == '\\')
			fprintf(out, "\\%c", (int)cp);
		else if (cp == '\n')
			fputs("\\n", out);
		else if (cp == '\t')
			fputs("\\t", out);
		else if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0) || cp == 0x2028 || cp == 0x2029 ||
		         gp_bidi_control(cp))
			/* 2028/2029: JavaScript's newlines; DEL, C1 (U+009B is a CSI) and the
			 * bidirectional controls kept as they were, but not raw where a terminal
			 * shows the file: every JSON output (report.json, the Chrome and Kineto
			 * traces) writes them so */
			fprintf(out, "\\u%04x", (unsigned)cp);
		else
			fwrite(p + i, 1, len, out);
		i += len;
	}
	fputc('"', out);
}

void gp_json_str(FILE *out, const char *s)
{
	gp_json_strn(out, s, s ? strlen(s) : 0);
}

/* ---- the check: a recursive descent over RFC 8259's grammar ---- */

typedef struct {
	const unsigned char *p, *end;
	int depth;
} jp_t;

static void ws(jp_t *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

static bool lit(jp_t *j, const char *w)
{
	size_t n = strlen(w);
	if ((size_t)(j->end - j->p) < n || memcmp(j->p, w, n))
		return false;
	j->p += n;
	return true;
}

static bool hex4(jp_t *j)
{
	for (int i = 0; i < 4; i++, j->p++)
		if (j->p >= j->end || !strchr("0123456789abcdefABCDEF", *j->p) || !*j->p)
			return false;
	return true;
}

static bool string(jp_t *j)
{
	if (j->p >= j->end || *j->p != '"')
		return false;
	for (j->p++; j->p < j->end;) {
		unsigned char c = *j->p;
		uint32_t cp;
		size_t bad;
		if (c == '"')
			return j->p++, true;
		if (c < 0x20)
			return false;
		if (c == '\\') {
			j->p++;
			if (j->p >= j->end)
				return false;
			c = *j->p++;
			if (c == 'u') {
				if (!hex4(j))
					return false;
			} else if (!strchr("\"\\/bfnrt", c) || !c) {
				return false;
			}
			continue;
		}
		size_t len = gp_utf8_next(j->p, (size_t)(j->end - j->p), &cp, &bad);
		if (!len)
			return false;
		j->p += len;
	}
	return false;
}

static bool digits(jp_t *j)
{
	const unsigned char *s = j->p;
	while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
		j->p++;
	return j->p > s;
}

static bool number(jp_t *j)
{
	if (j->p < j->end && *j->p == '-')
		j->p++;
	if (j->p < j->end && *j->p == '0')
		j->p++;
	else if (!digits(j))
		return false;
	if (j->p < j->end && *j->p == '.' && (j->p++, !digits(j)))
		return false;
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
		j->p++;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		if (!digits(j))
			return false;
	}
	return true;
}

static bool value(jp_t *j);

static bool members(jp_t *j, bool object)
{
	char close = object ? '}' : ']';
	j->p++; /* { or [ */
	if (++j->depth > 64)
		return false;
	ws(j);
	if (j->p < j->end && *j->p == close)
		return j->p++, j->depth--, true;
	for (;;) {
		if (object) {
			if (!string(j))
				return false;
			ws(j);
			if (j->p >= j->end || *j->p++ != ':')
				return false;
			ws(j);
		}
		if (!value(j))
			return false;
		ws(j);
		if (j->p >= j->end)
			return false;
		if (*j->p == ',') {
			j->p++;
			ws(j);
			continue;
		}
		if (*j->p != close)
			return false;
		j->p++;
		j->depth--;
		return true;
	}
}

static bool value(jp_t *j)
{
	if (j->p >= j->end)
		return false;
	switch (*j->p) {
	case '{':
		return members(j, true);
	case '[':
		return members(j, false);
	case '"':
		return string(j);
	case 't':
		return lit(j, "true");
	case 'f':
		return lit(j, "false");
	case 'n':
		return lit(j, "null");
	default:
		return number(j);
	}
}

bool gp_json_valid(const char *buf, size_t n)
{
	jp_t j = {(const unsigned char *)buf, (const unsigned char *)buf + n, 0};
	ws(&j);
	if (!value(&j))
		return false;
	ws(&j);
	return j.p == j.end;
}

/* Where it cannot go wrong: |d| * 10^prec below 2^40 (the product's rounding error is
 * then under 2^-13) and not within 2^-10 of a tie, the digits of the nearest integer;
 * elsewhere (ties, huge values, NaN, infinities) printf itself. printf's "%.3f" was 7 %
 * of a 2 000-rank report's CPU (glibc converts through multi-precision arithmetic). */
size_t gp_fixed_fmt(char *out, double d, int prec)
{
	static const double p10[] = {1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9};
	double a = fabs(d) * (prec >= 0 && prec <= 9 ? p10[prec] : 0);
	double fl = floor(a), frac = a - fl;
	if (prec < 0 || prec > 9 || !(a < 0x1p40) || fabs(frac - 0.5) < 0x1p-10) {
		int n = snprintf(out, GP_FIXED_MAX, "%.*f", prec, d);
		return n < 0 ? 0 : (size_t)n < GP_FIXED_MAX ? (size_t)n : GP_FIXED_MAX - 1;
	}
	uint64_t v = (uint64_t)fl + (frac > 0.5), scale = (uint64_t)p10[prec];
	char buf[48], *p = buf + sizeof(buf);
	uint64_t ip = v / scale, fp = v % scale;
	for (int i = 0; i < prec; i++, fp /= 10)
		*--p = (char)('0' + fp % 10);
	if (prec)
		*--p = '.';
	do
		*--p = (char)('0' + ip % 10);
	while (ip /= 10);
	if (signbit(d)) /* as printf: "-0.000" for a negative that rounds to zero */
		*--p = '-';
	size_t n = (size_t)(buf + sizeof(buf) - p);
	memcpy(out, p, n);
	out[n] = '\0';
	return n;
}

void gp_json_fixed(FILE *out, double d, int prec)
{
	char buf[GP_FIXED_MAX];
	if (!isfinite(d)) { /* JSON has no inf or nan */
		fputs("null", out);
		return;
	}
	fwrite(buf, 1, gp_fixed_fmt(buf, d, prec), out);
}

void gp_json_num(FILE *out, bool measured, double d, int prec)
{
	if (measured)
		gp_json_fixed(out, d, prec);
	else
		fputs("null", out);
}

void gp_json_uint(FILE *out, uint64_t v)
{
	char buf[24], *p = buf + sizeof(buf);
	do
		*--p = (char)('0' + v % 10);
	while (v /= 10);
	fwrite(p, 1, (size_t)(buf + sizeof(buf) - p), out);
}
