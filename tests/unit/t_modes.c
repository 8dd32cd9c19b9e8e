/* Table-driven tests of the mode grammar, including bad input. */
#include "config.h"
#include "modes.h"
#include "tap.h"

#include <stdlib.h>

static const struct {
	const char *in;
	int rc;
	unsigned modes;  /* when rc == 0 */
	const char *msg; /* substring of the error when rc == -1 */
} cases[] = {
    {"timing", 0, GP_MODE_TIMING, NULL},
    {"nvtx", 0, GP_MODE_TIMING | GP_MODE_NVTX, NULL},
    {"mem,nvtx", 0, GP_MODE_TIMING | GP_MODE_NVTX | GP_MODE_MEM, NULL},
    {"cuda,cuda", 0, GP_MODE_TIMING | GP_MODE_CUDA, NULL},
    {"all", 0, GP_MODES_ALL, NULL},
    {"gpu,all", 0, GP_MODES_ALL, NULL},
    {"layers", 0, GP_MODE_TIMING | GP_MODE_LAYERS, NULL},
    {"all,layers", 0, GP_MODES_ALL | GP_MODE_LAYERS, NULL},
    {"none", 0, GP_MODE_NONE, NULL},
    {"help", 0, GP_MODE_HELP, NULL},
    {"", -1, 0, "empty value"},
    {"memm", -1, 0, "unknown mode 'memm' at position 1"},
    {"nvtx,memm", -1, 0, "unknown mode 'memm' at position 6"},
    {"nvtx,", -1, 0, "empty mode at position 6"},
    {",nvtx", -1, 0, "empty mode at position 1"},
    {"nvtx,,mem", -1, 0, "empty mode at position 6"},
    {"NVTX", -1, 0, "unknown mode 'NVTX'"},
    {"nvtx;mem", -1, 0, "unknown mode 'nvtx;mem'"},
    {"nvtx mem", -1, 0, "unknown mode 'nvtx mem'"},
    {"nvtx\n", -1, 0, "control character \\x0a at position 5"},
    {"\x1b[31m", -1, 0, "control character \\x1b"},
    {"mem\xff", -1, 0, "not valid UTF-8 at position 4"},
    {"m\xc3\xa9m", -1, 0, "unknown mode 'm\\xc3\\xa9m'"},
    {"none,nvtx", -1, 0, "'none' cannot be combined"},
    {"help,all", -1, 0, "'help' cannot be combined"},
    {"$(reboot)", -1, 0, "unknown mode '$(reboot)'"},
    {"nvtx:mem", -1, 0, "unknown mode"},
};

int main(void)
{
	char err[512];
	char big[400];
	unsigned m;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		m = 0xdead;
		err[0] = '\0';
		int rc = gp_modes_parse(cases[i].in, &m, err, sizeof(err));
		if (cases[i].rc == 0) {
			ok(rc == 0 && m == cases[i].modes, "parse '%s' -> 0x%x", cases[i].in, m);
		} else {
			ok(rc == -1 && m == 0xdead, "reject '%s' leaves output untouched",
			   cases[i].in);
			if (!ok(strstr(err, cases[i].msg) != NULL, "message for '%s'", cases[i].in))
				diag("got: %s", err);
			ok(strstr(err, GP_MODES_WORDS) != NULL, "message lists accepted words");
		}
	}
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ok(gp_modes_parse(big, &m, err, sizeof(err)) == -1 && strstr(err, "longer than"),
	   "over-long value rejected");
	ok(gp_modes_parse(NULL, &m, err, sizeof(err)) == -1, "NULL rejected");

	char buf[64];
	gp_modes_format(GP_MODE_TIMING | GP_MODE_NVTX | GP_MODE_MEM, buf, sizeof(buf));
	is_str(buf, "timing,nvtx,mem", "format round trip");
	gp_modes_format(GP_MODE_NONE, buf, sizeof(buf));
	is_str(buf, "none", "format none");
	ok(gp_modes_format(GP_MODES_ALL, buf, 4) == (int)strlen("timing,nvtx,cuda,mem,gpu") &&
	       strlen(buf) == 3,
	   "format truncates safely and reports full length");
	ok(strstr(gp_modes_help(), "nvtx") != NULL, "help lists modes");

	/* capture windows */
	static const struct {
		const char *in;
		int rc, how;
		unsigned nwin;
		unsigned long long a0, b0, a1, b1;
	} caps[] = {
	    {NULL, 0, GP_CAP_ALWAYS, 0, 0, 0, 0, 0},
	    {"", 0, GP_CAP_ALWAYS, 0, 0, 0, 0, 0},
	    {"all", 0, GP_CAP_ALWAYS, 0, 0, 0, 0, 0},
	    {"cudaprofilerapi", 0, GP_CAP_PROFILER, 0, 0, 0, 0, 0},
	    {"steps=10-20", 0, GP_CAP_STEPS, 1, 10, 20, 0, 0},
	    {"steps=5", 0, GP_CAP_STEPS, 1, 5, 5, 0, 0},
	    {"steps=0-3,100-104", 0, GP_CAP_STEPS, 2, 0, 3, 100, 104},
	    {"steps=", -1, 0, 0, 0, 0, 0, 0},
	    {"steps=20-10", -1, 0, 0, 0, 0, 0, 0},
	    {"steps=1-", -1, 0, 0, 0, 0, 0, 0},
	    {"steps=-3", -1, 0, 0, 0, 0, 0, 0},
	    {"steps=1,", -1, 0, 0, 0, 0, 0, 0},
	    {"steps=1-2x", -1, 0, 0, 0, 0, 0, 0},
	    {"step=1-2", -1, 0, 0, 0, 0, 0, 0},
	    {"cudaProfilerApi", -1, 0, 0, 0, 0, 0, 0},
	    {"sampled", 0, GP_CAP_SAMPLED, 0, 0, 0, 0, 0},
	    {"sampled=10/100", 0, GP_CAP_SAMPLED, 0, 0, 0, 0, 0},
	    {"sampled=", -1, 0, 0, 0, 0, 0, 0},
	    {"sampled=10", -1, 0, 0, 0, 0, 0, 0},
	    {"sampled=100/10", -1, 0, 0, 0, 0, 0, 0},
	    {"sampled=0/10", -1, 0, 0, 0, 0, 0, 0},
	    {"sampled=5/0", -1, 0, 0, 0, 0, 0, 0},
	    {"sampled=5/10x", -1, 0, 0, 0, 0, 0, 0},
	    {"sampledx", -1, 0, 0, 0, 0, 0, 0},
	};
	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		gp_capture_t c;
		memset(&c, 0x5a, sizeof(c));
		int rc = gp_capture_parse(caps[i].in, &c, err, sizeof(err));
		if (caps[i].rc == 0)
			ok(rc == 0 && (int)c.how == caps[i].how && c.nwin == caps[i].nwin &&
			       (c.nwin < 1 ||
			        (c.win[0][0] == caps[i].a0 && c.win[0][1] == caps[i].b0)) &&
			       (c.nwin < 2 ||
			        (c.win[1][0] == caps[i].a1 && c.win[1][1] == caps[i].b1)),
			   "capture '%s' parsed", caps[i].in ? caps[i].in : "(null)");
		else
			ok(rc == -1 && strstr(err, "steps=A-B") && strstr(err, caps[i].in),
			   "capture '%s' rejected with the grammar", caps[i].in);
	}
	static const char *huge[] = {"steps=18446744073709551616", "steps=1-18446744073709551616",
	                             "steps=99999999999999999999999-99999999999999999999999"};
	for (size_t i = 0; i < sizeof(huge) / sizeof(huge[0]); i++) {
		gp_capture_t h;
		ok(gp_capture_parse(huge[i], &h, err, sizeof(err)) == -1 &&
		       strstr(err, "past 2^64 - 1"),
		   "capture '%.40s' past 2^64 rejected (%s)", huge[i], err);
	}
	gp_capture_t c;
	gp_capture_parse("steps=0-3,100-104", &c, err, sizeof(err));
	ok(gp_capture_in(&c, 0) && gp_capture_in(&c, 3) && !gp_capture_in(&c, 4) &&
	       gp_capture_in(&c, 100) && gp_capture_in(&c, 104) && !gp_capture_in(&c, 105),
	   "window membership at both edges");
	gp_capture_parse("sampled=10/100", &c, err, sizeof(err));
	gp_capture_warmup(&c, 3);
	ok(c.len == 10 && c.every == 100 && gp_capture_in(&c, 0) && gp_capture_in(&c, 12) &&
	       !gp_capture_in(&c, 13) && !gp_capture_in(&c, 99) && gp_capture_in(&c, 100) &&
	       gp_capture_in(&c, 109) && !gp_capture_in(&c, 110) && gp_capture_in(&c, 500),
	   "sampled windows: through the warm-up and 10 more steps, then 10 of every 100");
	gp_capture_parse("sampled", &c, err, sizeof(err));
	ok(c.len == GP_SAMPLE_LEN && c.every == GP_SAMPLE_EVERY, "sampled defaults %llu/%llu",
	   c.len, c.every);
	gp_capture_parse("cudaprofilerapi", &c, err, sizeof(err));
	ok(gp_capture_in(&c, 7), "profiler windows do not depend on the step index");
	char many[256] = "steps=";
	for (int i = 0; i < 17; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many), "%s%d", i ? "," : "", i);
	ok(gp_capture_parse(many, &c, err, sizeof(err)) == -1 && strstr(err, "at most 16"),
	   "more than 16 windows rejected");
	/* what sacct's text, gpuprof ledger and prune's messages write raw (gp_utf8_char): not
	 * the bidirectional controls, which reorder a terminal's line after them */
	static const struct {
		const char *s;
		size_t len;
	} chars[] = {{"a", 1},
	             {"\xc3\xa9", 2},
	             {"\xc2\x9b", 0},
	             {"\xe2\x80\xaa", 0},
	             {"\xe2\x80\xae", 0},
	             {"\xe2\x81\xa6", 0},
	             {"\xe2\x81\xa9", 0},
	             {"\xe2\x80\xa9", 3},
	             {"\xe2\x80\xaf", 3},
	             {"\xe2\x81\xa5", 3},
	             {"\xe2\x81\xaa", 3}};
	for (size_t i = 0; i < sizeof(chars) / sizeof(chars[0]); i++)
		ok(gp_utf8_char((const unsigned char *)chars[i].s) == chars[i].len,
		   "gp_utf8_char %zu: %zu (want %zu)", i,
		   gp_utf8_char((const unsigned char *)chars[i].s), chars[i].len);
	return done_testing();
}
