/* The text report's line cutter (report/wrap.c), table-driven: where a line hangs, where
 * it is cut (never between a number and its unit, never inside a token), that nothing
 * is lost or reordered, and that no line is longer than the width but a lone token. */
#include "config.h"
#include "wrap.h"
#include "log.h"
#include "tap.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *wrap(const char *in, size_t width)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	gp_wrap_text(m, in, strlen(in), width);
	fclose(m);
	return buf;
}

/* the words of s, one space apart (what a reader joins back) */
static void words(const char *s, char *out, size_t len)
{
	size_t n = 0;
	for (; *s && n + 1 < len; s++)
		if (*s != ' ' && *s != '\n')
			out[n++] = *s;
		else if (n && out[n - 1] != ' ')
			out[n++] = ' ';
	while (n && out[n - 1] == ' ')
		n--;
	out[n] = 0;
}

static size_t longest(const char *s)
{
	size_t best = 0;
	for (const char *l = s; *l;) {
		const char *e = strchr(l, '\n');
		size_t n = gp_wrap_chars(l, e ? (size_t)(e - l) : strlen(l));
		best = n > best ? n : best;
		l = e ? e + 1 : l + strlen(l);
	}
	return best;
}

static void hangs(void)
{
	static const struct {
		const char *line;
		size_t hang;
	} t[] = {
	    {"   evidence:  62 blocking calls", 14},
	    {"   fix:       Pin the host side", 14},
	    {"rank 0: the headline is", 8},
	    {"rank batch/12: the headline", 15},
	    {"1. Synchronisation stalls: 9 ms", 3},
	    {"12. A title", 4},
	    {"(shares of the span: busy)", 1},
	    {"       peak reached by: 0x41b5e (libcudart.so.13)", 24},
	    {"       the card, NVIDIA H100 80GB HBM3 has 79.6 GiB: the peak", 9},
	    {"Top kernels by total GPU time (all ranks, post-warm-up steps):", 2},
	    {"no label at all", 2},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		size_t h = gp_wrap_hang(t[i].line, strlen(t[i].line));
		ok(h == t[i].hang, "hang of '%.40s' is %zu (got %zu)", t[i].line, t[i].hang, h);
	}
}

static void cuts(void)
{
	static const struct {
		const char *in;
		size_t width;
		const char *want;
	} t[] = {
	    /* fits: unchanged, spaces inside kept */
	    {"rank   calls  total ms\n", 30, "rank   calls  total ms\n"},
	    /* cut at a space, the continuation under the label */
	    {"   fix:       aaa bbb ccc ddd\n", 28,
	     "   fix:       aaa bbb ccc\n              ddd\n"},
	    /* a number keeps its unit: "9.24 ms" moves whole */
	    {"rank 0: idle 9.24 ms a step\n", 19,
	     "rank 0: idle\n        9.24 ms a\n        step\n"},
	    /* the label is no place to cut, even when the first word is long */
	    {"1. abcdefghijklmnop qr\n", 10, "1. abcdefghijklmnop\n   qr\n"},
	    /* a token longer than the line stands alone, unbroken */
	    {"x: a /a/very/long/path:123 b\n", 12, "x: a\n   /a/very/long/path:123\n   b\n"},
	    /* only numbers: parted rather than a line over the width */
	    {"n: 1 2 3 4 5 6 7 8\n", 10, "n: 1 2 3 4\n   5 6 7 8\n"},
	    /* several lines, each its own hang; an empty line kept */
	    {"a: bb cc dd\n\n(ee ff gg)\n", 8, "a: bb cc\n   dd\n\n(ee ff\n gg)\n"},
	    /* UTF-8: characters, not bytes */
	    {"r: \xc3\xa9\xc3\xa9\xc3\xa9 \xc3\xa9\xc3\xa9\n", 9,
	     "r: \xc3\xa9\xc3\xa9\xc3\xa9 \xc3\xa9\xc3\xa9\n"},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		char *got = wrap(t[i].in, t[i].width);
		is_str(got, t[i].want, "wrap case %zu at %zu", i, t[i].width);
		free(got);
	}
}

/* A long finding-like paragraph: no word lost, none longer than the width, numbers with
 * their units, file:line whole. */
static void paragraph(void)
{
	const char *in =
	    "   evidence:  62 blocking calls (stream/device/event synchronize, blocking "
	    "device-to-host copies) held the host 103.2 ms in all, most outside any "
	    "NVTX range at c_sync_loop.py:45; after they returned the GPU sat idle "
	    "193.4 ms waiting for the next launch; the saving is held to the step's "
	    "idle time: the mean step less its GPU busy share (9.24 ms per step)\n";
	char *got = wrap(in, 100);
	char a[2048], b[2048];
	words(in, a, sizeof(a));
	words(got, b, sizeof(b));
	is_str(b, a, "a wrapped paragraph has every word, in order");
	ok(longest(got) <= 100, "no line over 100 (longest %zu)", longest(got));
	ok(strchr(got, '\n') != got + strlen(got) - 1, "it was cut (over 100 characters)");
	bool apart = false;
	for (const char *p = got; (p = strchr(p, '\n')) && p[1]; p++) {
		const char *q = p - 1;
		while (q > got && *q != ' ' && *q != '\n')
			q--;
		/* the last token of a cut line is no number */
		apart |= q[1] >= '0' && q[1] <= '9' && strchr("0123456789", p[-1]);
		ok(!strncmp(p + 1, "              ", 14) && p[15] != ' ',
		   "continuation hangs at the evidence column: '%.30s'", p + 1);
	}
	ok(!apart, "no number left at a line's end without its unit");
	ok(strstr(got, "c_sync_loop.py:45") != NULL, "file:line whole");
	free(got);
}

static void formatted(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	gp_wrapf(
	    m, 42, "       %-22s %9.1f MiB %6u tensors  %s\n", "live at the peak", 392.3, 8u,
	    "train.py:145 forward <- train.py:98 main <- train.py:80 main <- adam.py:238 step");
	fclose(m);
	char *nl = strchr(buf, '\n'), pad[43];
	memset(pad, ' ', 42);
	pad[42] = 0;
	ok(nl && gp_wrap_chars(buf, (size_t)(nl - buf)) <= GP_TEXT_WIDTH &&
	       !strncmp(nl + 1, pad, 42) && nl[43] != ' ',
	   "gp_wrapf hangs at the column it is given:\n%s", buf);
	free(buf);
}

/* gp_text_fit: a terminal's columns (gpuprof top's screen), never inside a character */
static void fits(void)
{
	static const struct {
		const char *s;
		size_t cols, bytes, used;
		const char *what;
	} c[] = {
	    {"abcdef", 4, 4, 4, "ASCII: a byte a column"},
	    {"n\xc5\x93ud-\xc3\xa9x", 6, 8, 6, "2-byte characters one column each"},
	    {"ab\xe7\xaf\x80\xe9\xbb\x9e", 5, 5, 4,
	     "a wide character that would straddle the edge left out"},
	    {"ab\xe7\xaf\x80\xe9\xbb\x9e", 6, 8, 6, "two wide characters, two columns each"},
	    {"\xe3\x82\xb9\xe3\x83", 4, 5, 3, "a character cut short: its bytes one column"},
	    {"a\xff"
	     "b",
	     3, 3, 3, "a byte that is not UTF-8 one column (its '?')"},
	    {"\xf0\x9f\x98\x80x", 2, 4, 2, "an emoji two columns"},
	    {"\xce\xb1\xce\xb2", 10, 4, 2, "all of it within the width"},
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		size_t used = 99, n = gp_text_fit(c[i].s, strlen(c[i].s), c[i].cols, &used);
		ok(n == c[i].bytes && used == c[i].used,
		   "%s: %zu bytes, %zu columns (want %zu, %zu)", c[i].what, n, used, c[i].bytes,
		   c[i].used);
	}
}

/* gp_text_cut: a table's cell (a node's name, a text column) whole or cut with "..." */
static void cell_cuts(void)
{
	static const struct {
		const char *s;
		size_t cols;
		const char *want;
		size_t used;
	} c[] = {
	    {"node007", 8, "node007", 7},
	    {"dgx-h100-rack07-n004", 20, "dgx-h100-rack07-n004", 20},
	    {"dgx-h100-rack07-n004", 12, "dgx-h100-...", 12},
	    {"n\xc5\x93ud-\xc3\xa9xyz", 7, "n\xc5\x93ud...", 7},
	    {"ab\xe7\xaf\x80\xe9\xbb\x9e\xe9\xbb\x9e", 6, "ab...", 5},
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		char buf[64];
		size_t used = 99;
		gp_text_cut(c[i].s, c[i].cols, buf, sizeof(buf), &used);
		ok(!strcmp(buf, c[i].want) && used == c[i].used, "%s in %zu columns: %s, %zu",
		   c[i].s, c[i].cols, buf, used);
	}
	char small[8];
	gp_text_cut("a-long-node-name", 40, small, sizeof(small), NULL);
	ok(strlen(small) < sizeof(small) && strstr(small, "..."), "a small buffer: cut (%s)",
	   small);
}

/* The text report and the log make the same '?' of what no terminal shows raw (gp_shown):
 * an escape, a C1 control, a bidirectional override, bytes that are not UTF-8; the log
 * keeps a tab */
static void shown_alike(void)
{
	static const char in[] = "a\x1b[31mb\xc2\x9b"
	                         "c\xe2\x80\xae"
	                         "d\xff\xfe"
	                         "e\xe2\x82"
	                         "f\xce\xb1";
	char t[64], l[64];
	memcpy(t, in, sizeof(in));
	memcpy(l, in, sizeof(in));
	t[gp_text_shown(t, strlen(t))] = '\0';
	gp_log_shown(l);
	ok(!strcmp(t, l) && !strcmp(t, "a?[31mb?c?d??e?f\xce\xb1"), "text %s and log %s alike", t,
	   l);
	char tab[] = "x\ty";
	gp_log_shown(tab);
	char ttab[] = "x\ty";
	ttab[gp_text_shown(ttab, strlen(ttab))] = '\0';
	ok(!strcmp(tab, "x\ty") && !strcmp(ttab, "x?y"), "a tab: kept in the log, '?' in the text");
}

int main(void)
{
	hangs();
	cuts();
	paragraph();
	formatted();
	fits();
	cell_cuts();
	shown_alike();
	return done_testing();
}
