/* gpuprof ledger's dates (report/ledger_time.c) against what Debian's sacct 22.05 made of
 * the same text on the test cluster (sacct -S TEXT -E now -X -v, TZ=UTC, at 2026-12-07
 * 10:26:14, a Monday): "Jobs Eligible in the time window from ...", or "Invalid time
 * specification". Where a newer Slurm reads more (elevenses) or gpuprof adds a word
 * (yesterday), the case says so. */
#include "config.h"
#include "ledger.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static time_t utc(int y, int mo, int d, int h, int mi, int s)
{
	struct tm tm = {.tm_year = y - 1900,
	                .tm_mon = mo - 1,
	                .tm_mday = d,
	                .tm_hour = h,
	                .tm_min = mi,
	                .tm_sec = s,
	                .tm_isdst = 0};
	return timegm(&tm);
}

int main(void)
{
	setenv("TZ", "UTC", 1);
	tzset();
	const time_t now = utc(2026, 12, 7, 10, 26, 14);
	static const struct {
		const char *text;
		int y, mo, d, h, mi, s; /* y 0: refused; y -1: now + s seconds; -2, -3: below */
	} cases[] = {
	    {"today", 2026, 12, 7, 0, 0, 0},
	    {"Today", 0, 0, 0, 0, 0, 0}, /* 'T' is a separator first: sacct refuses it too */
	    {"TODAY", 0, 0, 0, 0, 0, 0},
	    {"120626", 2026, 12, 6, 0, 0, 0}, /* MMDDYY */
	    {"1206", 2026, 12, 6, 0, 0, 0},
	    {"12.06.26", 2026, 12, 6, 0, 0, 0},
	    {"12/06", 2026, 12, 6, 0, 0, 0},
	    {"12/6/26", 2026, 12, 6, 0, 0, 0},
	    {"01/15/00", 2026, 1, 15, 0, 0, 0}, /* Slurm reads a year 00 as none */
	    {"01/15", 2026, 1, 15, 0, 0, 0},    /* a month gone by: this year */
	    {"12/25", 2026, 12, 25, 0, 0, 0},   /* this month: this year */
	    {"10:00AM", 2026, 12, 7, 10, 0, 0},
	    {"10:00 pm", 2026, 12, 7, 22, 0, 0},
	    {"12:00pm", 2026, 12, 7, 12, 0, 0},
	    {"12:30am", 2026, 12, 7, 0, 30, 0},
	    {"13:00pm", 0, 0, 0, 0, 0, 0},
	    {"13:00", 2026, 12, 7, 13, 0, 0}, /* a time alone is today's, to come or not */
	    {"9:05:07", 2026, 12, 7, 9, 5, 7},
	    {"10:60", 0, 0, 0, 0, 0, 0},
	    {"noon", 2026, 12, 7, 12, 0, 0},
	    {"fika", 2026, 12, 7, 15, 0, 0},
	    {"teatime", 2026, 12, 7, 16, 0, 0},
	    {"midnight", 2026, 12, 7, 0, 0, 0},
	    {"elevenses", 2026, 12, 7, 11, 0, 0}, /* Slurm after 22.05 */
	    {"yesterday", 2026, 12, 6, 0, 0, 0},  /* gpuprof's own */
	    {"tomorrow", 2026, 12, 8, 0, 0, 0},
	    {"today-10:00", 2026, 12, 7, 10, 0, 0},
	    {"12/06-10:00", 2026, 12, 6, 10, 0, 0},
	    {"2026-12-01T10:00", 2026, 12, 1, 10, 0, 0},
	    {"2026-12-01T10:00:30", 2026, 12, 1, 10, 0, 30},
	    {"2026-12-01 10:00", 2026, 12, 1, 10, 0, 0},
	    {"2026-11-01", 2026, 11, 1, 0, 0, 0},
	    {"2026-13-01", 0, 0, 0, 0, 0, 0},
	    {"uts1765000000", -2, 0, 0, 0, 0, 0},
	    {"uts12", 0, 0, 0, 0, 0, 0},
	    {"now", -1, 0, 0, 0, 0, 0},
	    {"now-1day", -1, 0, 0, 0, 0, -86400},
	    {"now - 1 day", -1, 0, 0, 0, 0, -86400},
	    {"now+1hour", -1, 0, 0, 0, 0, 3600},
	    {"now-2weeks", -1, 0, 0, 0, 0, -14 * 86400},
	    {"now-36hours", -1, 0, 0, 0, 0, -36 * 3600},
	    {"now-90", -1, 0, 0, 0, 0, -90}, /* seconds by default */
	    {"now-3fortnights", 0, 0, 0, 0, 0, 0},
	    {"now-day", 0, 0, 0, 0, 0, 0},
	    {"now 12/06", 0, 0, 0, 0, 0, 0},
	    {"yesterdayish", 0, 0, 0, 0, 0, 0},
	    {"", 0, 0, 0, 0, 0, 0},
	    {"now-99999999999999999999days", 0, 0, 0, 0, 0, 0},
	    {"now-7000weeks", 0, 0, 0, 0, 0, 0},  /* past a century: refused (was this October) */
	    {"now-5000weeks", -3, 0, 0, 0, 0, 0}, /* 96 years back: read */
	    {"now+10000000009weeks", 0, 0, 0, 0, 0, 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		time_t got = 0;
		int rc = gp_ld_time(cases[i].text, now, &got);
		if (!cases[i].y) {
			ok(rc == -1, "'%s' refused (rc %d)", cases[i].text, rc);
			continue;
		}
		time_t want = cases[i].y == -1   ? now + cases[i].s
		              : cases[i].y == -2 ? (time_t)1765000000
		              : cases[i].y == -3 ? now - (time_t)5000 * 604800
		                                 : utc(cases[i].y, cases[i].mo, cases[i].d,
		                                       cases[i].h, cases[i].mi, cases[i].s);
		ok(rc == 0 && got == want, "'%s': %lld (want %lld)", cases[i].text, (long long)got,
		   (long long)want);
	}
	/* gpuprof's "yesterday" is the calendar day before, across a DST change (it was
	 * 24 h back: today itself after a fall-back evening, two days back after a spring-forward
	 * midnight) */
	setenv("TZ", "America/New_York", 1);
	tzset();
	struct tm nov = {.tm_year = 126,
	                 .tm_mon = 10,
	                 .tm_mday = 1,
	                 .tm_hour = 23,
	                 .tm_min = 30,
	                 .tm_isdst = -1},
	          oct31 = {.tm_year = 126, .tm_mon = 9, .tm_mday = 31, .tm_isdst = -1};
	time_t at = mktime(&nov), want = mktime(&oct31), got = 0;
	struct tm check;
	localtime_r(&at, &check);
	int rc = gp_ld_time("yesterday", at, &got);
	if (check.tm_isdst == 0 && check.tm_hour == 23) /* the zone is there: EST that evening */
		ok(rc == 0 && got == want,
		   "yesterday at 2026-11-01 23:30 New York: 2026-10-31 00:00 (%lld, want %lld)",
		   (long long)got, (long long)want);
	else
		skip("no America/New_York time zone here");
	return done_testing();
}
