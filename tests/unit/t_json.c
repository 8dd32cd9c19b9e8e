/* JSON strings are valid UTF-8 whatever the program's bytes (report/json.c): invalid
 * sequences become U+FFFD, one per maximal subpart, as Python's decoder does with
 * errors="replace"; control characters (C0, DEL, C1) are escaped; the embedded-file
 * check accepts JSON and nothing else. */
#include "config.h"
#include "json.h"
#include "tap.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#define R "\xef\xbf\xbd" /* U+FFFD */

static const struct {
	const char *in;
	size_t len; /* 0: strlen */
	const char *want;
	const char *what;
} cases[] = {
    {"plain", 0, "\"plain\"", "ASCII as it is"},
    {"a\"b\\c", 0, "\"a\\\"b\\\\c\"", "quote and backslash escaped"},
    {"t\tn\nx\x01y\x1f\x7f", 0, "\"t\\tn\\nx\\u0001y\\u001f\\u007f\"", "control characters"},
    {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 0,
     "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"", "2, 3 and 4-byte sequences kept"},
    {"a\xff"
     "b",
     0, "\"a" R "b\"", "0xff: one U+FFFD"},
    {"\x80\x81", 0, "\"" R R "\"", "lone continuation bytes: one each"},
    {"\xc0\xaf", 0, "\"" R R "\"", "overlong '/' (C0 AF): two"},
    {"\xe0\x80\xaf", 0, "\"" R R R "\"", "overlong 3-byte: E0 is no prefix of it, three"},
    {"\xed\xa0\x80", 0, "\"" R R R "\"", "a UTF-16 surrogate (ED A0 80): three"},
    {"\xf4\x90\x80\x80", 0, "\"" R R R R "\"", "above U+10FFFF: four"},
    {"\xe2\x82", 0, "\"" R "\"", "cut short at the end: one for the prefix"},
    {"\xe2\x82z", 0, "\"" R "z\"", "cut short before ASCII: one, the ASCII kept"},
    {"\xf0\x9f\x98", 0, "\"" R "\"", "a 4-byte sequence cut after 3: one"},
    {"\xf8\x88\x80\x80\x80", 0, "\"" R R R R R "\"", "5-byte form: five"},
    {"x\xe2\x80\xa8y", 0, "\"x\\u2028y\"", "U+2028 escaped (JavaScript's line separator)"},
    {"a\xc2\x80"
     "b\xc2\x9b"
     "31m\xc2\x9f\xc2\xa0",
     0, "\"a\\u0080b\\u009b31m\\u009f\xc2\xa0\"",
     "C1 controls escaped (U+009B is a CSI), U+00A0 after them kept"},
    {"ab\xc3\xa9", 3, "\"ab" R "\"", "a length that cuts a sequence"},
    {"a\xe2\x80\xaa"
     "b\xe2\x80\xae"
     "c\xe2\x81\xa6"
     "d\xe2\x81\xa9",
     0, "\"a\\u202ab\\u202ec\\u2066d\\u2069\"",
     "bidirectional controls escaped (U+202A-E, U+2066-9: Trojan Source)"},
    {"\xe2\x80\xa9\xe2\x80\xaf\xe2\x81\xa5\xe2\x81\xaa", 0,
     "\"\\u2029\xe2\x80\xaf\xe2\x81\xa5\xe2\x81\xaa\"",
     "their neighbours (U+202F, U+2065, U+206A) kept"},
};

static const struct {
	const char *text;
	int valid;
} docs[] = {
    {"{}", 1},
    {" {\"a\": [1, -2.5e+3, true, false, null, \"x\\u00e9\\n\"]}\n", 1},
    {"{\"job\": 12, \"tasks\": [{\"task\": 0}, {\"task\": 1}]}", 1},
    {"{\"a\": 1,}", 0},
    {"{\"a\" 1}", 0},
    {"{\"a\": 01}", 0},
    {"{\"a\": \"\xff\"}", 0},
    {"{\"a\": \"tab\there\"}", 0},
    {"{\"a\": \"\\x\"}", 0},
    {"{\"a\": [1, 2}", 0},
    {"{\"a\": 1} {}", 0},
    {"{\"a\": \"cut", 0},
    {"{\"a\": 1.}", 0},
    {"{\"a\": nul}", 0},
};

/* gp_json_fixed writes what printf's "%.*f" writes: d at prec into want and got. */
static bool fixed_same(double d, int prec, char *got, size_t len)
{
	char want[512], *buf = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&buf, &n);
	gp_json_fixed(m, d, prec);
	fclose(m);
	/* JSON has no inf or nan: null (a live file's 1.7e308 summed over ranks wrote inf) */
	snprintf(want, sizeof(want), isfinite(d) ? "%.*f" : "null", prec, d);
	snprintf(got, len, "%s", buf ? buf : "");
	bool same = buf && !strcmp(buf, want);
	free(buf);
	return same;
}

/* Ties, signs, zeros, the edges of the fast path and printf's own cases, then values of
 * every magnitude from a fixed generator: each as printf writes it, at precisions 0-10. */
static void fixed_numbers(void)
{
	static const double edge[] = {0.0,      -0.0,      0.5,      1.5,         2.5,    0.125,
	                              0.0625,   1.0005,    -0.00001, -0.0005,     9.9995, 0.9999999,
	                              123.4565, 1e-300,    0x1p40,   0x1p40 - 1,  0x1p53, 1e300,
	                              -1e15,    17.05,     4.35,     2.675,       1.005,  NAN,
	                              INFINITY, -INFINITY, 0.045,    1234567.891, 5e-324, 0.3};
	char got[512];
	unsigned bad = 0;
	for (size_t i = 0; i < sizeof(edge) / sizeof(edge[0]); i++)
		for (int p = 0; p <= 10; p++)
			if (!fixed_same(edge[i], p, got, sizeof(got)) && bad++ < 5)
				diag("%.17g at %d: got %s", edge[i], p, got);
	ok(!bad,
	   "fixed-point numbers at the edges as printf writes them, null where not finite (%u "
	   "differ)",
	   bad);
	uint64_t x = 88172645463325252ull;
	bad = 0;
	for (unsigned i = 0; i < 200000; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		/* a mantissa of 53 random bits at a random scale from 1e-6 to 1e14 */
		double d = (double)(x >> 11) / 0x1p53 * pow(10, (double)(x % 21) - 6);
		if (x & 1024)
			d = -d;
		if (x & 2048) /* a value with few decimals: the ties' neighbourhood */
			d = round(d * 1000) / 1000;
		if (!fixed_same(d, (int)((x >> 3) % 8), got, sizeof(got)) && bad++ < 5)
			diag("%.17g at %d: got %s", d, (int)((x >> 3) % 8), got);
	}
	ok(!bad, "200 000 numbers of every magnitude as printf writes them (%u differ)", bad);
	static const uint64_t ints[] = {
	    0, 1, 9, 10, 99, 4294967295ull, 1ull << 53, (1ull << 53) + 1, 18446744073709551615ull};
	bad = 0;
	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
		char want[32], *buf = NULL;
		size_t n = 0;
		FILE *m = open_memstream(&buf, &n);
		gp_json_uint(m, ints[i]);
		fclose(m);
		snprintf(want, sizeof(want), "%llu", (unsigned long long)ints[i]);
		bad += !buf || strcmp(buf, want);
		free(buf);
	}
	ok(!bad, "integers as printf's %%llu writes them, 2^53 + 1 and 2^64 - 1 too (%u differ)",
	   bad);
}

/* What a text output writes raw (gp_utf8_shown): a character whole, or nothing for a
 * control character or bytes that are not UTF-8, with the bytes one replacement covers. */
static void shown(void)
{
	static const struct {
		const char *s, *keep;
		size_t len, skip;
	} c[] = {
	    {"a", "", 1, 1},
	    {"\xc3\xa9", "", 2, 2},
	    {"\xe2\x82\xac", "", 3, 3},
	    {"\x1b[", "", 0, 1},
	    {"\n", "\n", 1, 1},
	    {"\n", "", 0, 1},
	    {"\t", "\t\n", 1, 1},
	    {"\x7f", "", 0, 1},
	    {"\xc2\x9b", "", 0, 2},
	    {"\xc2\xa0", "", 2, 2},
	    {"\xe2\x82", "", 0, 2},
	    {"\xff\xfe", "", 0, 1},
	    {"\xed\xa0\x80", "", 0, 1},
	    {"\xf0\x9f\x98\x80", "", 4, 4},
	    /* the bidirectional controls, U+202A-U+202E and U+2066-U+2069, reorder what a
	     * terminal or a browser shows after them; their neighbours are text */
	    {"\xe2\x80\xaa", "", 0, 3},
	    {"\xe2\x80\xae", "", 0, 3},
	    {"\xe2\x81\xa6", "", 0, 3},
	    {"\xe2\x81\xa9", "", 0, 3},
	    {"\xe2\x80\xa9", "", 3, 3},
	    {"\xe2\x80\xaf", "", 3, 3},
	    {"\xe2\x81\xa5", "", 3, 3},
	    {"\xe2\x81\xaa", "", 3, 3},
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		size_t skip = 99, len = gp_utf8_shown((const unsigned char *)c[i].s, strlen(c[i].s),
		                                      c[i].keep, &skip);
		ok(len == c[i].len && skip == c[i].skip,
		   "shown %zu: %zu and %zu (want %zu and %zu)", i, len, skip, c[i].len, c[i].skip);
	}
}

int main(void)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *buf = NULL;
		size_t n = 0;
		FILE *m = open_memstream(&buf, &n);
		size_t len = cases[i].len ? cases[i].len : strlen(cases[i].in);
		gp_json_strn(m, cases[i].in, len);
		fclose(m);
		is_str(buf, cases[i].want, "%s", cases[i].what);
		ok(gp_json_valid(buf, n), "... and the result is valid JSON");
		free(buf);
	}
	/* every two-byte input: the output is always one valid JSON string */
	unsigned bad = 0;
	for (unsigned a = 1; a < 256; a++)
		for (unsigned b = 0; b < 256; b++) {
			char in[3] = {(char)a, (char)b, 0}, *buf = NULL;
			size_t n = 0;
			FILE *m = open_memstream(&buf, &n);
			gp_json_str(m, in);
			fclose(m);
			bad += !gp_json_valid(buf, n);
			free(buf);
		}
	ok(!bad, "every 2-byte input gives a valid JSON string (%u did not)", bad);
	char *nb = NULL;
	size_t nn = 0;
	FILE *m = open_memstream(&nb, &nn);
	gp_json_str(m, NULL);
	fclose(m);
	is_str(nb, "\"\"", "NULL: the empty string");
	free(nb);
	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++)
		ok(gp_json_valid(docs[i].text, strlen(docs[i].text)) == (docs[i].valid != 0),
		   "%s: %s", docs[i].valid ? "valid" : "invalid", docs[i].text);
	char deep[200];
	memset(deep, '[', 100);
	memset(deep + 100, ']', 100);
	ok(!gp_json_valid(deep, 200), "nested 100 deep: refused (64 at most)");
	fixed_numbers();
	shown();
	return done_testing();
}
