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
	return done_testing();
}
