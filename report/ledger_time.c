/* gpuprof ledger's --since and --until: Slurm's date syntax, as sacct -S/-E reads it
 * (src/common/parse_time.c, parse_time(..., past=1)), so that a date an admin types for
 * sacct means the same here, and the ledger's --from-file analysis agrees with a ledger
 * that asked sacct. Pieces in any order, blanks, '-' and 'T' between them; a later piece
 * overrides an earlier one:
 *   today, tomorrow, midnight, noon, elevenses (11:00), fika (15:00), teatime (16:00)
 *   now[{+|-}N[seconds|minutes|hours|days|weeks]]   (blanks allowed; seconds by default)
 *   HH:MM[:SS] [AM|PM]
 *   MMDD[YY], MM/DD[/YY], MM.DD[.YY], YYYY-MM-DD
 *   uts<seconds since the epoch>
 * A time without a date is today's, a date without a year this year's unless its month is
 * still to come (then last year's): sacct's "past" reading. Words are read without regard
 * to case, as Slurm does, but a 'T' is a separator first: "Today" is "oday" and refused,
 * as sacct refuses it. What is read here goes to sacct as YYYY-MM-DDTHH:MM:SS, so a
 * Slurm without "elevenses" (22.05) agrees too. gpuprof adds "yesterday", which Slurm
 * has not. */

#include "config.h"

#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "ledger.h"

typedef struct {
	int hour, min, sec;  /* -1: no time given */
	int mon, mday, year; /* tm_mon, tm_mday, tm_year; mon -1: no date given */
	bool year_given;     /* year holds one (a tm_year before 1900 is negative) */
	struct tm now;       /* now, local */
	time_t now_t;
} when_t;

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* one or two digits at *p, within lo..hi */
static bool small_number(const char **p, int lo, int hi, int *out)
{
	const char *s = *p;
	if (!is_digit(*s))
		return false;
	int v = *s++ - '0';
	if (is_digit(*s))
		v = v * 10 + (*s++ - '0');
	if (v < lo || v > hi)
		return false;
	*p = s;
	*out = v;
	return true;
}

/* exactly two digits at *p, within 0..hi */
static bool two_digits(const char **p, int hi, int *out)
{
	const char *s = *p;
	if (!is_digit(s[0]) || !is_digit(s[1]))
		return false;
	int v = (s[0] - '0') * 10 + (s[1] - '0');
	if (v > hi)
		return false;
	*p = s + 2;
	*out = v;
	return true;
}

static void set_day(when_t *w, time_t t)
{
	struct tm tm;
	localtime_r(&t, &tm);
	w->mon = tm.tm_mon, w->mday = tm.tm_mday, w->year = tm.tm_year;
	w->year_given = true;
}

/* now[{+|-}N[unit]]: the blanks, sign, digits and unit after "now" at *p */
static bool relative(const char **p, when_t *w)
{
	static const struct {
		const char *name;
		long sec;
	} units[] = {{"seconds", 1},    {"second", 1},   {"minutes", 60}, {"minute", 60},
	             {"hours", 3600},   {"hour", 3600},  {"days", 86400}, {"day", 86400},
	             {"weeks", 604800}, {"week", 604800}};
	const char *s = *p;
	long delta = 0;
	while (*s == ' ' || *s == '\t')
		s++;
	if (*s && *s != '+' && *s != '-')
		return false; /* "now" ends, or a sign follows it */
	if (*s == '+' || *s == '-') {
		int sign = *s++ == '-' ? -1 : 1;
		long n = 0, mult = 1;
		int ndig = 0;
		for (;;) {
			while (*s == ' ' || *s == '\t')
				s++;
			if (is_digit(*s)) {
				if (n > 1000000000L) /* past any date mktime can make */
					return false;
				n = n * 10 + (*s++ - '0');
				ndig++;
				continue;
			}
			size_t i;
			for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
				if (!strncasecmp(s, units[i].name, strlen(units[i].name)))
					break;
			if (i < sizeof(units) / sizeof(units[0])) {
				mult = units[i].sec;
				s += strlen(units[i].name);
			} else if (*s) {
				return false; /* neither a digit nor a unit: "now-3fortnights" */
			}
			break;
		}
		/* a century either way at most: further is no date sacct keeps a job of, and
		 * the year would pass what mktime and sacct read */
		if (!ndig || n > 100L * 366 * 86400 / mult)
			return false;
		delta = sign * n * mult;
	}
	time_t t = w->now_t + delta;
	struct tm tm;
	localtime_r(&t, &tm);
	w->mon = tm.tm_mon, w->mday = tm.tm_mday, w->year = tm.tm_year;
	w->year_given = true;
	w->hour = tm.tm_hour, w->min = tm.tm_min, w->sec = tm.tm_sec;
	*p = s;
	return true;
}

/* HH:MM[:SS] [AM|PM] */
static bool clock_time(const char **p, when_t *w)
{
	const char *s = *p;
	int h, m, sec = 0;
	if (!small_number(&s, 0, 23, &h) || *s++ != ':' || !two_digits(&s, 59, &m))
		return false;
	if (*s == ':' && (s++, !two_digits(&s, 59, &sec)))
		return false;
	const char *t = s;
	while (*t == ' ' || *t == '\t')
		t++;
	if (!strncasecmp(t, "pm", 2)) {
		if (h > 12)
			return false;
		h = h == 12 ? 12 : h + 12;
		s = t + 2;
	} else if (!strncasecmp(t, "am", 2)) {
		if (h > 12)
			return false;
		h = h == 12 ? 0 : h;
		s = t + 2;
	}
	w->hour = h, w->min = m, w->sec = sec;
	*p = s;
	return true;
}

/* YYYY-MM-DD, or MMDD[YY], MM/DD[/YY], MM.DD[.YY] */
static bool date(const char **p, when_t *w)
{
	const char *s = *p;
	int y, mo, d;
	if (strlen(s) >= 8 && s[4] == '-' && s[7] == '-') {
		for (int i = 0; i < 4; i++)
			if (!is_digit(s[i]))
				return false;
		y = atoi(s);
		s += 5;
		if (!small_number(&s, 1, 12, &mo) || *s++ != '-' || !small_number(&s, 1, 31, &d))
			return false;
		if (y < 1970)
			return false;
		w->year = y - 1900;
		w->year_given = true;
	} else {
		if (!small_number(&s, 1, 12, &mo))
			return false;
		if (*s == '.' || *s == '/')
			s++;
		if (!small_number(&s, 1, 31, &d))
			return false;
		if (*s == '.' || *s == '/')
			s++;
		if (is_digit(*s)) {
			if (!two_digits(&s, 99, &y))
				return false;
			if (y) /* as Slurm: a year 00 is none given */
				w->year = y + 100, w->year_given = true;
		}
	}
	w->mon = mo - 1, w->mday = d;
	*p = s;
	return true;
}

/* a word at *p (as Slurm, a prefix: "todaynoon" is two pieces) */
static bool word(const char **p, const char *name)
{
	size_t n = strlen(name);
	if (strncasecmp(*p, name, n))
		return false;
	*p += n;
	return true;
}

static bool piece(const char **p, when_t *w)
{
	static const struct {
		const char *name;
		int hour;
	} clocks[] = {
	    {"midnight", 0}, {"noon", 12}, {"elevenses", 11}, {"fika", 15}, {"teatime", 16}};
	if (word(p, "today")) {
		set_day(w, w->now_t);
		return true;
	}
	if (word(p, "tomorrow")) {
		set_day(w, w->now_t + 86400);
		return true;
	}
	if (word(p, "yesterday")) { /* the calendar day before today's, DST or not */
		w->mon = w->now.tm_mon, w->mday = w->now.tm_mday - 1, w->year = w->now.tm_year;
		w->year_given = true;
		return true;
	}
	for (size_t i = 0; i < sizeof(clocks) / sizeof(clocks[0]); i++)
		if (word(p, clocks[i].name)) {
			w->hour = clocks[i].hour, w->min = w->sec = 0;
			return true;
		}
	if (!strncasecmp(*p, "now", 3)) {
		*p += 3;
		return relative(p, w);
	}
	if (!is_digit(**p))
		return false;
	if ((*p)[1] == ':' || ((*p)[1] && (*p)[2] == ':'))
		return clock_time(p, w);
	return date(p, w);
}

int gp_ld_time(const char *s, time_t now, time_t *out)
{
	if (!strncasecmp(s, "uts", 3)) { /* seconds since the epoch */
		char *end;
		long v = strtol(s + 3, &end, 10);
		if (end == s + 3 || *end || v < 1000000 || v == LONG_MAX)
			return -1;
		*out = (time_t)v;
		return 0;
	}
	when_t w = {.hour = -1, .min = -1, .mon = -1, .mday = -1, .year = -1, .now_t = now};
	localtime_r(&now, &w.now);
	const char *p = s;
	while (*p) {
		if (*p == ' ' || *p == '\t' || *p == '-' || *p == 'T') {
			p++;
			continue;
		}
		if (!piece(&p, &w))
			return -1;
	}
	if (w.hour < 0 && w.mon < 0)
		return -1; /* nothing given */
	if (w.hour < 0)
		w.hour = w.min = w.sec = 0; /* a date alone: its midnight */
	if (w.mon < 0) {                    /* a time alone: today's */
		w.mon = w.now.tm_mon, w.mday = w.now.tm_mday, w.year = w.now.tm_year;
		w.year_given = true;
	}
	if (!w.year_given) /* a month still to come is last year's */
		w.year = w.mon > w.now.tm_mon ? w.now.tm_year - 1 : w.now.tm_year;
	struct tm tm = {.tm_sec = w.sec,
	                .tm_min = w.min,
	                .tm_hour = w.hour,
	                .tm_mday = w.mday,
	                .tm_mon = w.mon,
	                .tm_year = w.year,
	                .tm_isdst = -1};
	*out = mktime(&tm);
	return *out == (time_t)-1 ? -1 : 0;
}
