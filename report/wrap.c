/* The text report's lines cut to a width at spaces, continuations under the label (wrap.h). */
#include "config.h"
#include "wrap.h"
#include "json.h"
#include "names.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

size_t gp_wrap_chars(const char *s, size_t len)
{
	size_t n = 0;
	for (size_t i = 0; i < len; i++)
		n += ((unsigned char)s[i] & 0xc0) != 0x80; /* not a UTF-8 continuation byte */
	return n;
}

int gp_cp_cols(uint32_t cp)
{
	static const uint32_t wide[][2] = {
	    {0x1100, 0x115f},   {0x2e80, 0x303e},   {0x3041, 0x33ff},   {0x3400, 0x4dbf},
	    {0x4e00, 0x9fff},   {0xa000, 0xa4cf},   {0xa960, 0xa97f},   {0xac00, 0xd7a3},
	    {0xf900, 0xfaff},   {0xfe10, 0xfe19},   {0xfe30, 0xfe6f},   {0xff00, 0xff60},
	    {0xffe0, 0xffe6},   {0x1f300, 0x1f64f}, {0x1f900, 0x1f9ff}, {0x20000, 0x2fffd},
	    {0x30000, 0x3fffd},
	};
	for (size_t i = 0; i < sizeof(wide) / sizeof(wide[0]) && cp >= wide[i][0]; i++)
		if (cp <= wide[i][1])
			return 2;
	return 1;
}

size_t gp_text_fit(const char *s, size_t len, size_t cols, size_t *used)
{
	size_t at = 0, w = 0;
	while (at < len) {
		uint32_t cp;
		size_t bad, n = gp_utf8_next((const unsigned char *)s + at, len - at, &cp, &bad);
		int c = n ? gp_cp_cols(cp) : 1;
		if (w + (size_t)c > cols)
			break;
		w += (size_t)c;
		at += n ? n : bad;
	}
	if (used)
		*used = w;
	return at;
}

const char *gp_text_cut(const char *s, size_t cols, char *buf, size_t len, size_t *used)
{
	size_t n = strlen(s), u, at = gp_text_fit(s, n, cols, &u);
	if (at < n) /* past cols: whole characters and "..." */
		at = gp_text_fit(s, n, cols > 3 ? cols - 3 : 0, &u), u += 3;
	if (at + 4 > len)
		at = len > 4 ? gp_utf8_back(s, len - 4) : 0;
	snprintf(buf, len, "%.*s%s", (int)at, s, at < n ? "..." : "");
	if (used)
		*used = u;
	return buf;
}

#define LABEL_MAX 24 /* "peak reached by", "rank batch/12", "threshold": a label, not a clause */

/* The hang, and in *label whether it ends a label ("1. ", "word: ") that no cut may part */
static size_t hang_of(const char *s, size_t len, bool *label)
{
	size_t lead = 0, i;
	*label = false;
	while (lead < len && s[lead] == ' ')
		lead++;
	if (lead < len && s[lead] == '(') /* a legend in parentheses */
		return lead + 1;
	for (i = lead; i < len && s[i] >= '0' && s[i] <= '9'; i++)
		;
	if (i > lead && i + 1 < len && s[i] == '.' && s[i + 1] == ' ') /* "1. " */
		return *label = true, i + 2;
	for (i = lead; i + 1 < len && i - lead <= LABEL_MAX; i++)
		if (s[i] == ':' && s[i + 1] == ' ') {
			for (i++; i < len && s[i] == ' '; i++)
				;
			return *label = true, i;
		}
	return lead + 2;
}

size_t gp_wrap_hang(const char *s, size_t len)
{
	bool label;
	return hang_of(s, len, &label);
}

/* Does s[a..b) read as a number ("9.24", "+0.197", "16.758-16.810", "(54")? A space after
 * it is no place to cut: the unit or the noun after a number belongs with it. */
static bool number(const char *s, size_t a, size_t b)
{
	if (a < b && strchr("(~+-", s[a]))
		a++;
	if (a >= b || s[a] < '0' || s[a] > '9')
		return false;
	for (; a < b; a++)
		if (!((s[a] >= '0' && s[a] <= '9') || s[a] == '.' || s[a] == ',' || s[a] == '-'))
			return false;
	return true;
}

static void put_line(FILE *out, size_t indent, const char *s, size_t len)
{
	fprintf(out, "%*s%.*s\n", (int)indent, "", (int)len, s);
}

/* Where the piece that starts at `from` ends: the last space run in [from, end of the
 * piece's room] after which a cut is allowed (good) or, failing that, any space run
 * (fallback: a number and its unit parted rather than a line over the width). Returns
 * the run's first byte; *next its end; 0 with *next = len where the rest fits. */
static size_t cut_at(const char *s, size_t len, size_t from, size_t room, size_t min, size_t *next)
{
	size_t good = 0, good_next = 0, any = 0, any_next = 0, chars = 0, tok = from;
	for (size_t i = from; i < len; i++) {
		if (s[i] == ' ' && i > min && (i == from || s[i - 1] != ' ')) {
			size_t j = i;
			while (j < len && s[j] == ' ')
				j++;
			if (j < len) { /* trailing spaces are no cut */
				if (!number(s, tok, i))
					good = i, good_next = j;
				any = i, any_next = j;
			}
		}
		if (i > from && s[i - 1] == ' ' && s[i] != ' ')
			tok = i;
		chars += ((unsigned char)s[i] & 0xc0) != 0x80;
		if (chars > room) {
			if (good || any) {
				*next = good ? good_next : any_next;
				return good ? good : any;
			}
			/* a token longer than the room: cut at the first space after it */
			for (; i < len && s[i] != ' '; i++)
				;
			size_t j = i;
			while (j < len && s[j] == ' ')
				j++;
			if (j >= len)
				break;
			*next = j;
			return i;
		}
	}
	*next = len;
	return 0;
}

/* gp_wrap_line, no cut in the first line before min */
static void wrap_line(FILE *out, const char *s, size_t len, size_t width, size_t hang, size_t min)
{
	while (len && s[len - 1] == ' ')
		len--;
	if (hang * 5 > width * 3)  /* a label that leaves too little room: a plain indent, */
		hang = 4, min = 0; /* and the label may be cut */
	size_t from = 0, indent = 0;
	while (from < len) {
		size_t next, end = cut_at(s, len, from, width - indent, min, &next);
		if (!end) {
			put_line(out, indent, s + from, len - from);
			return;
		}
		put_line(out, indent, s + from, end - from);
		from = next, indent = hang, min = next;
	}
	if (!len)
		fputc('\n', out);
}

void gp_wrap_line(FILE *out, const char *s, size_t len, size_t width, size_t hang)
{
	/* the figures before the hang column stay whole: cuts come after it */
	wrap_line(out, s, len, width, hang, hang && hang < len ? hang - 1 : 0);
}

void gp_wrap_text(FILE *out, const char *buf, size_t len, size_t width)
{
	size_t at = 0;
	while (at < len) {
		const char *nl = memchr(buf + at, '\n', len - at);
		size_t n = nl ? (size_t)(nl - (buf + at)) : len - at;
		bool label;
		size_t hang = hang_of(buf + at, n, &label);
		if (gp_wrap_chars(buf + at, n) <= width)
			put_line(out, 0, buf + at, n);
		else /* a label is no place to cut (its spaces end at the hang column) */
			wrap_line(out, buf + at, n, width, hang, label ? hang - 1 : 0);
		at += n + 1;
	}
}

size_t gp_text_shown(char *buf, size_t len)
{
	return gp_shown(buf, len, "\n"); /* so a table's columns stay where they were */
}

void gp_text_emit(FILE *out, char *buf, size_t len)
{
	if (buf)
		gp_wrap_text(out, buf, gp_text_shown(buf, len), GP_TEXT_WIDTH);
}

void gp_text_put(FILE *out, const char *s, size_t len, bool hex)
{
	for (size_t i = 0, n, skip; s && i < len; i += n) {
		const unsigned char *p = (const unsigned char *)s + i;
		if ((n = gp_utf8_shown(p, len - i, hex ? "" : "\n", &skip)) &&
		    !(hex && *p == '\\')) {
			fwrite(p, 1, n, out);
			continue;
		}
		n = n ? n : skip;
		for (size_t k = 0; hex && k < n; k++)
			fprintf(out, "\\x%02x", p[k]);
		if (!hex)
			fputc('?', out);
	}
}

void gp_text_report(FILE *out, void (*write)(FILE *to, const void *arg), const void *arg)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	if (!m) {
		fprintf(out, "gpuprof: no memory for the text report\n");
		return;
	}
	write(m, arg);
	fclose(m);
	gp_text_emit(out, buf, len);
	free(buf);
}

void gp_wrapf(FILE *out, size_t hang, const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	size_t at = 0, len = (size_t)n;
	while (at < len) {
		const char *nl = memchr(s + at, '\n', len - at);
		size_t k = nl ? (size_t)(nl - (s + at)) : len - at;
		gp_wrap_line(out, s + at, k, GP_TEXT_WIDTH, hang);
		at += k + 1;
	}
	free(s);
}
