/* Our AdminComment entry among other tools' (common/admincomment.c): a job directory of
 * the user's naming cannot forge entries, a re-run replaces ours and nothing else, and an
 * admin tool's entry after ours survives the job end's re-run. */
#include "config.h"
#include "admincomment.h"
#include "tap.h"

#include <stdio.h>
#include <string.h>

/* the entries of an AdminComment as a "; "-splitting accounting script sees them */
static unsigned entries(const char *s, const char *key, unsigned *with_key)
{
	unsigned n = 0;
	*with_key = 0;
	for (const char *p = s; p && *p;) {
		n++;
		*with_key += !strncmp(p, key, strlen(key));
		const char *e = strstr(p, "; ");
		p = e ? e + 2 : NULL;
	}
	return n;
}

int main(void)
{
	char e[1024], val[4096], others[4096];
	unsigned k;
	const char *forged = "gpuprof: ranks=2 busy=98% top=none dir=/x; JS1:Zm9yZ2Vk; "
	                     "site:tag=999; d1234";
	ok(gp_ac_entry(forged, e, sizeof(e)) == 0, "a summary line with ';' in its directory is "
	                                           "made an entry");
	ok(!strchr(e, ';'), "no ';' left in it (%s)", e);
	ok(strstr(e, "dir=/x%3B JS1:Zm9yZ2Vk%3B site:tag=999%3B d1234") != NULL,
	   "the directory kept, its ';' as %%3B");
	ok(strstr(e, "busy=98%") != NULL, "figures untouched");
	snprintf(others, sizeof(others), "site:tag=1");
	ok(gp_ac_compose(others, e, val, sizeof(val)) == 0, "composed: %s", val);
	ok(entries(val, "site:tag=", &k) == 2 && k == 1,
	   "two entries, one site:tag (was: JS1 and site:tag=999 forged)");
	ok(entries(val, "JS1:", &k) == 2 && k == 0, "no JS1: entry");
	is_str(gp_ac_entry("gpuprof: dir=/a'b\"c\\d`e", e, sizeof(e)) == 0 ? e : NULL,
	       "gpuprof: dir=/a_b_c_d_e", "quotes, backslash, backtick made '_'");
	ok(gp_ac_entry("gpuprof: dir=/a\nb", e, sizeof(e)) < 0, "a control character: refused");
	ok(gp_ac_entry("JS1: forged", e, sizeof(e)) < 0, "a line not ours: refused");
	/* C1 controls reach the terminal of an admin running sacct -o AdminComment: CSI as
	 * UTF-8 (U+009B) and as a raw byte, which xterm acts on as ESC [ */
	ok(gp_ac_entry("gpuprof: dir=/a\xc2\x9b"
	               "2J",
	               e, sizeof(e)) < 0 ||
	       !strstr(e, "\x9b"),
	   "a C1 control (U+009B): refused or replaced");
	ok(gp_ac_entry("gpuprof: dir=/a\x9b"
	               "31m",
	               e, sizeof(e)) < 0 ||
	       !strstr(e, "\x9b"),
	   "a raw 9b byte: refused or replaced");
	is_str(gp_ac_entry("gpuprof: dir=/caf\xc3\xa9", e, sizeof(e)) == 0 ? e : NULL,
	       "gpuprof: dir=/caf\xc3\xa9", "UTF-8 text kept (e acute)");

	/* re-runs: the step end's report, then an admin tool's entry, then the job end's */
	snprintf(others, sizeof(others), "site:tag=1; gpuprof: ranks=1 dir=/j; tool:z=3");
	ok(gp_ac_compose(others, "gpuprof: ranks=2 dir=/j", val, sizeof(val)) == 0 &&
	       !strcmp(val, "site:tag=1; tool:z=3; gpuprof: ranks=2 dir=/j"),
	   "ours replaced, the tool's entry after it kept (%s)", val);
	static const char *strips[][3] = {
	    {"gpuprof: ranks=1 dir=/j; tool:z=3", "tool:z=3", "ours first: the rest kept"},
	    {"gpuprof: ranks=1 dir=/j", "", "ours alone: nothing left"},
	    {"a:1; gpuprof: x; b:2; gpuprof: y", "a:1; b:2", "two of ours: both go"},
	    {"note:see gpuprof: docs", "note:see gpuprof: docs",
	     "'gpuprof:' inside another tool's entry kept"},
	};
	for (size_t i = 0; i < sizeof(strips) / sizeof(strips[0]); i++) {
		snprintf(others, sizeof(others), "%s", strips[i][0]);
		gp_ac_strip_ours(others);
		is_str(others, strips[i][1], "%s", strips[i][2]);
	}
	char big[4096];
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	snprintf(others, sizeof(others), "%s", big);
	ok(gp_ac_compose(others, "gpuprof: x", val, sizeof(val)) < 0,
	   "no room: refused, others' text never cut");
	return done_testing();
}
