/* JSON strings are valid UTF-8 whatever the program's bytes (report/json.c): invalid
 * sequences become U+FFFD, one per maximal subpart, as Python's decoder does with
 * errors="replace"; control characters are escaped; the embedded-file check accepts
 * JSON and nothing else. */
#include "config.h"
#include "json.h"
#include "tap.h"

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
    {"ab\xc3\xa9", 3, "\"ab" R "\"", "a length that cuts a sequence"},
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
	return done_testing();
}
