/* Our AdminComment entry among other tools' (see admincomment.h). */
#include "config.h"
#include "admincomment.h"
#include "modes.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#define OURS "gpuprof:"

int gp_ac_entry(const char *s, char *out, size_t len)
{
	size_t o = 0;
	if (strncmp(s, OURS, strlen(OURS)) || !len)
		return -1;
	for (const char *c = s; *c;) {
		const char *put = *c == ';' ? "%3B" : NULL;
		char one[5] = {*c, '\0'};
		size_t k = (unsigned char)*c < 0x20 || *c == 0x7f ? 0 : 1;
		if (!k)
			return -1;
		if ((unsigned char)*c >= 0x80) { /* a C1 control or no UTF-8: '_' (a terminal
			                          * acts on U+009B, and a raw 9b, as on ESC [) */
			k = gp_utf8_char((const unsigned char *)c);
			if (k)
				memcpy(one, c, k), one[k] = '\0';
			else
				k = 1, one[0] = '_';
		}
		c += k;
		if (*one == '\'' || *one == '"' || *one == '\\' || *one == '`')
			one[0] = '_';
		if (!put)
			put = one;
		size_t n = strlen(put);
		if (o + n >= len)
			return -1;
		memcpy(out + o, put, n);
		o += n;
	}
	out[o] = '\0';
	return 0;
}

/* Is s + i the start of an entry of ours (the field's start, or after "; ")? */
static int ours_at(const char *s, size_t i)
{
	return !strncmp(s + i, OURS, strlen(OURS)) &&
	       (i == 0 || (i >= 2 && !strncmp(s + i - 2, "; ", 2)));
}

void gp_ac_strip_ours(char *s)
{
	for (size_t i = 0; s[i];) {
		if (!ours_at(s, i)) {
			i++;
			continue;
		}
		/* our entry runs to the next separator (it holds none: gp_ac_entry) */
		char *end = strstr(s + i, "; ");
		if (i == 0) { /* "ours; next..." -> "next..." */
			memmove(s, end ? end + 2 : s + strlen(s), strlen(end ? end + 2 : "") + 1);
			continue;
		}
		/* "...prev; ours[; next...]" -> "...prev[; next...]" */
		size_t from = i - 2;
		memmove(s + from, end ? end : "", strlen(end ? end : "") + 1);
		i = from;
	}
	/* an older gpuprof left a bare separator at the end */
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == ';'))
		s[--n] = '\0';
}

int gp_ac_compose(char *others, const char *ours, char *val, size_t len)
{
	gp_ac_strip_ours(others);
	int n = snprintf(val, len, "%s%s%s", others, others[0] ? "; " : "", ours);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

bool gp_ac_has_js1(const char *s)
{
	/* any case: Slurm 22.05's sacctmgr lowercases the value jobstats' epilog sets
	 * ("js1:h4si..."); such a field is jobstats' still, and nothing is added to it */
	for (const char *p = s; *p; p++)
		if (!strncasecmp(p, "JS1:", 4) &&
		    (p == s || (p - s >= 2 && !strncmp(p - 2, "; ", 2))))
			return true;
	return false;
}
