/* The accounting record's text (common/acctrec.c): written and read back to the digit, a
 * job directory of the user's naming cannot end the entry or forge another, every
 * malformed record refused with its reason, our entry found and replaced among others';
 * and jobstats' JS1: value seen in AdminComment (common/admincomment.c). */
#include "config.h"
#include "acctrec.h"
#include "admincomment.h"
#include "tap.h"

#include <stdio.h>
#include <string.h>

static const char *good = "gpuprof-record/1 ranks=2 gpus=2 compute=0.561 comm=2.113 input=0.000 "
                          "launch=0.106 sync=0.059 startup=27.755 idle=2.434 unused=0.000 "
                          "unprofiled=0.000 step_ms=26.256 peak=2407794688 card=150754820096 "
                          "top=straggler dir=/scratch/a%20b";

/* good with one token's text replaced */
static const char *with(const char *from, const char *to)
{
	static char buf[4096];
	const char *p = strstr(good, from);
	snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(p - good), good, to, p + strlen(from));
	return buf;
}

static const struct {
	const char *from, *to, *why;
} bad[] = {
    {"gpuprof-record/1", "gpuprof-record/2", "version '2' not understood"},
    {"gpuprof-record/1", "gpuprof-record/01", "version '01' not understood"},
    {"gpuprof-record/1", "gpuprof-recordx", "not a gpuprof record"},
    {" ranks=2", " ranks=2 ranks=2", "key 'ranks' twice"},
    {" idle=2.434", "", "key 'idle' missing"},
    {" top=", " colour=red top=", "unknown token 'colour=red'"},
    {" top=", "  top=", "unknown token ''"},
    {"sync=0.059", "sync=nan", "sync: bad value 'nan'"},
    {"sync=0.059", "sync=inf", "sync: bad value 'inf'"},
    {"sync=0.059", "sync=-1", "sync: bad value '-1'"},
    {"sync=0.059", "sync=+1", "sync: bad value '+1'"},
    {"sync=0.059", "sync=1e3", "sync: bad value '1e3'"},
    {"sync=0.059", "sync=0x10", "sync: bad value '0x10'"},
    {"sync=0.059", "sync=1.2345", "sync: bad value '1.2345'"},
    {"sync=0.059", "sync=.5", "sync: bad value '.5'"},
    {"sync=0.059", "sync=99999999999.000", "sync: bad value"},
    {"sync=0.059", "sync=", "sync: bad value ''"},
    {"ranks=2", "ranks=02", "ranks: bad value '02'"},
    {"ranks=2 gpus=2", "ranks=1 gpus=2", "gpus=2 but ranks=1"},
    {"peak=2407794688", "peak=99999999999999999999999", "peak: bad value"},
    {"top=straggler", "top=Straggler", "top: bad value"},
    {"top=straggler", "top=a;b", "top: bad value"},
    {"dir=/scratch/a%20b", "dir=/scratch/a b", "unknown token 'b'"},
    {"dir=/scratch/a%20b", "dir=/x;y", "dir: bad value"},
    {"dir=/scratch/a%20b", "dir=/x%2", "dir: bad value"},
    {"dir=/scratch/a%20b", "dir=/x%00y", "dir: bad value"},
    {"dir=/scratch/a%20b", "dir=", "dir: bad value"},
};

static void test_round_trip(void)
{
	gp_acct_rec_t r, back;
	char line[GP_REC_MAX + 1], err[200] = "";
	ok(gp_rec_parse(good, strlen(good), &r, err, sizeof(err)) == 0, "a record parses (%s)",
	   err);
	ok(r.ranks == 2 && r.gpus == 2 && r.s[GP_CAUSE_COMM] == 2.113 &&
	       r.s[GP_CAUSE_STARTUP] == 27.755 && r.peak_bytes == 2407794688ULL &&
	       r.card_bytes == 150754820096ULL && r.step_ms == 26.256 &&
	       !strcmp(r.top, "straggler") && !strcmp(r.dir, "/scratch/a b"),
	   "its figures, the directory decoded");
	ok(gp_rec_format(&r, line, sizeof(line)) == 0 && !strcmp(line, good),
	   "written again, it is the same text");
	/* a directory the user named to forge entries and break parsers */
	snprintf(r.dir, sizeof(r.dir),
	         "/home/u/x; gpuprof-record/1 compute=9=9 'q\" %%41\\`\xc3\xa9\t");
	ok(gp_rec_format(&r, line, sizeof(line)) == 0 && !strchr(line, ';') &&
	       !strpbrk(line, "'\"\\`\t") && strstr(line, "dir=/home/u/x%3B%20gpuprof-record/1"),
	   "a forging directory is encoded: no ';', quote, space or control byte raw (%s)",
	   strstr(line, "dir="));
	const char *at;
	size_t n;
	ok(gp_rec_find(line, &at, &n, err, sizeof(err)) == 1 && at == line && n == strlen(line),
	   "... and the field holds one record");
	ok(gp_rec_parse(line, strlen(line), &back, err, sizeof(err)) == 0 &&
	       !strcmp(back.dir, r.dir),
	   "... which reads back the directory byte for byte");
	memset(r.dir, 'd', sizeof(r.dir) - 1);
	r.dir[0] = '/';
	r.dir[sizeof(r.dir) - 1] = '\0';
	ok(gp_rec_format(&r, line, sizeof(line)) == 0 && strlen(line) <= GP_REC_MAX &&
	       gp_rec_parse(line, strlen(line), &back, err, sizeof(err)) == 0 &&
	       back.dir[strlen(back.dir) - 1] == '~',
	   "a directory too long is cut, marked '~', and the record stays within %d bytes",
	   GP_REC_MAX);
}

static void test_refused(void)
{
	gp_acct_rec_t r;
	char err[200];
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *s = with(bad[i].from, bad[i].to);
		int rc = gp_rec_parse(s, strlen(s), &r, err, sizeof(err));
		ok(rc == -1 && strstr(err, bad[i].why), "refused: %s -> %s (%s)", bad[i].from,
		   bad[i].to, err);
	}
	char huge[2000];
	snprintf(huge, sizeof(huge), "%s%0900d", good, 0);
	ok(gp_rec_parse(huge, strlen(huge), &r, err, sizeof(err)) == -1 &&
	       strstr(err, "bytes (at most 1024)"),
	   "refused: a record over 1024 bytes (%s)", err);
}

static void test_fields(void)
{
	const char *at;
	size_t n;
	char err[200], field[4096], out[4096];
	ok(gp_rec_find("bb_error=x", &at, &n, err, sizeof(err)) == 0,
	   "no record in another's field");
	ok(gp_rec_find("xgpuprof-record/1 a=b", &at, &n, err, sizeof(err)) == 0,
	   "a tag inside another entry is not an entry");
	snprintf(field, sizeof(field), "bb=1; %s; other=2", good);
	ok(gp_rec_find(field, &at, &n, err, sizeof(err)) == 1 && n == strlen(good) &&
	       !strncmp(at, good, n),
	   "our entry between others");
	snprintf(field, sizeof(field), "%s; %s", good, good);
	ok(gp_rec_find(field, &at, &n, err, sizeof(err)) == -1 && strstr(err, "more than one"),
	   "two records: refused");
	snprintf(field, sizeof(field), "bb=1; gpuprof-record/1 old=1; other=2");
	ok(gp_rec_compose(field, good, out, sizeof(out)) == 0 &&
	       !strncmp(out, "bb=1; other=2; gpuprof-record/1 ranks=2", 39),
	   "compose: ours replaced, others kept in order (%.60s)", out);
	ok(gp_rec_compose("", good, out, sizeof(out)) == 0 && !strcmp(out, good),
	   "compose: an empty field gets ours alone");
	ok(gp_rec_compose(field, good, out, 60) == -1, "compose: -1 when it does not fit");
	ok(gp_ac_has_js1("JS1:H4sIAAAA") && gp_ac_has_js1("site=1; JS1:H4sI") &&
	       gp_ac_has_js1("js1:h4siaaaa") && !gp_ac_has_js1("gpuprof: dir=/x/JS1:y") &&
	       !gp_ac_has_js1(""),
	   "jobstats' JS1: value is seen as an entry, not inside another");
}

int main(void)
{
	test_round_trip();
	test_refused();
	test_fields();
	return done_testing();
}
