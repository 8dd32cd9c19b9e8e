/* Table-driven tests of the rank-list grammar. */
#include "config.h"
#include "ranks.h"
#include "tap.h"

static const struct {
	const char *in;
	int rc;
	const char *msg;
	unsigned yes[4], no[4]; /* ranks that must (not) be selected; 99999 ends */
} cases[] = {
    {"0", 0, NULL, {0, 99999}, {1, 99999}},
    {"0,8-15", 0, NULL, {0, 8, 15, 99999}, {1, 7, 16, 99999}},
    {"3-3", 0, NULL, {3, 99999}, {2, 4, 99999}},
    {"all", 0, NULL, {0, 1000000, 99999}, {99999}},
    {"", -1, "empty rank list", {99999}, {99999}},
    {"5-2", -1, "reversed range 5-2", {99999}, {99999}},
    {"1,", -1, "trailing ','", {99999}, {99999}},
    {",1", -1, "bad rank item '' at position 1", {99999}, {99999}},
    {"a", -1, "bad rank item 'a'", {99999}, {99999}},
    {"1-", -1, "bad rank item '1-'", {99999}, {99999}},
    {"-1", -1, "bad rank item '-1'", {99999}, {99999}},
    {"1--2", -1, "bad rank item", {99999}, {99999}},
    {"99999999999999999999", -1, "too large", {99999}, {99999}},
    {"16777216", -1, "too large", {99999}, {99999}},
    {"1 2", -1, "bad rank item '1 2'", {99999}, {99999}},
    {"0x10", -1, "bad rank item '0x10'", {99999}, {99999}},
    {"1\t", -1, "control character", {99999}, {99999}},
    {"1;rm", -1, "bad rank item", {99999}, {99999}},
};

int main(void)
{
	char err[256];
	static gp_ranks_t rk;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err[0] = '\0';
		int rc = gp_ranks_parse(cases[i].in, &rk, err, sizeof(err));
		if (cases[i].rc == -1) {
			ok(rc == -1, "reject '%s'", cases[i].in);
			if (!ok(strstr(err, cases[i].msg) != NULL, "message for '%s'", cases[i].in))
				diag("got: %s", err);
			continue;
		}
		ok(rc == 0, "parse '%s'", cases[i].in);
		for (int k = 0; cases[i].yes[k] != 99999; k++)
			ok(gp_ranks_contains(&rk, cases[i].yes[k]), "'%s' selects %u", cases[i].in,
			   cases[i].yes[k]);
		for (int k = 0; cases[i].no[k] != 99999; k++)
			ok(!gp_ranks_contains(&rk, cases[i].no[k]), "'%s' skips %u", cases[i].in,
			   cases[i].no[k]);
	}
	gp_ranks_parse("0,8-15", &rk, err, sizeof(err));
	ok(gp_ranks_count(&rk, 12) == 5, "count over 12 tasks");
	/* 257 items */
	char many[2048] = "";
	for (int i = 0; i < 257; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many), "%s%d", i ? "," : "", i);
	ok(gp_ranks_parse(many, &rk, err, sizeof(err)) == -1 && strstr(err, "more than"),
	   "too many items");
	return done_testing();
}
