/* site_output's template split into the admin's root, the user's directory and the
 * job's part (sitedir.h). */
#include "config.h"
#include "sitedir.h"
#include "path.h"
#include "spool.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int bad(char *why, size_t whylen, const char *msg)
{
	snprintf(why, whylen,
	         "%s (an absolute template with a directory of the user's: "
	         "/srv/gpuprof/%%u/%%j)",
	         msg);
	return -1;
}

int gp_site_tmpl_split(const char *tmpl, gp_site_tmpl_t *t, char *why, size_t whylen)
{
	char copy[1024];
	char *save = NULL;
	size_t root = 0, rest = 0;
	bool user = false;
	memset(t, 0, sizeof(*t));
	if (gp_tmpl_check(tmpl, why, whylen) < 0)
		return -1;
	if (tmpl[0] != '/')
		return bad(why, whylen, "must be absolute");
	if (snprintf(copy, sizeof(copy), "%s/", tmpl) >= (int)sizeof(copy))
		return bad(why, whylen, "too long");
	if (!strstr(copy, "/%u/"))
		return bad(why, whylen, "needs a directory that is %u alone");
	for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (!strcmp(c, ".") || !strcmp(c, ".."))
			return bad(why, whylen, "'.' and '..' are not allowed");
		char *dst = user ? t->rest : t->root;
		size_t *at = user ? &rest : &root;
		if (!user && !strcmp(c, "%u")) {
			user = true;
			continue;
		}
		if (!user && strchr(c, '%'))
			return bad(why, whylen, "an escape before the user's directory %u");
		*at += (size_t)snprintf(dst + *at, sizeof(t->root) - *at, "%s%s",
		                        user && !*at ? "" : "/", c);
		t->depth += user;
	}
	if (!root)
		return bad(why, whylen, "%u cannot be a directory of / itself");
	if (!t->depth)
		return bad(why, whylen, "needs the job's directory below %u");
	return 0;
}

/* s matches the component p[0..pe) (escapes as gp_site_tmpl_level_match says): the
 * template's tokens matched from the last to the first, each over every suffix of s
 * (O(tokens x length), where trying each escape's every length was exponential in a run of
 * escapes). A name longer than a file name can be matches nothing. */
#define MATCH_MAX 1024
static bool component_match(const char *p, const char *pe, const char *s)
{
	enum { LIT, DIGITS, ANY };
	struct {
		unsigned char kind;
		char c;
	} tok[MATCH_MAX];
	size_t ntok = 0, n = strlen(s);
	bool a[MATCH_MAX + 1], b[MATCH_MAX + 1], *next = a, *cur = b;
	if (n > MATCH_MAX || pe - p > MATCH_MAX)
		return false;
	while (p < pe) { /* "%%" a '%', "%X" an escape, a lone '%' at the end itself */
		if (*p == '%' && p + 1 < pe) {
			char e = p[1];
			tok[ntok].kind = e == '%'                           ? LIT
			                 : e == 'j' || e == 't' || e == 'r' ? DIGITS
			                                                    : ANY;
			tok[ntok++].c = '%';
			p += 2;
		} else {
			tok[ntok].kind = LIT;
			tok[ntok++].c = *p++;
		}
	}
	for (size_t j = 0; j <= n; j++)
		next[j] = j == n; /* past the last token: only the end of s */
	while (ntok-- > 0) {
		for (size_t j = n + 1; j-- > 0;) {
			if (tok[ntok].kind == LIT)
				cur[j] = j < n && s[j] == tok[ntok].c && next[j + 1];
			else if (tok[ntok].kind == DIGITS) /* one digit or more */
				cur[j] = j < n && s[j] >= '0' && s[j] <= '9' &&
				         (next[j + 1] || cur[j + 1]);
			else /* any text, none too */
				cur[j] = next[j] || (j < n && cur[j + 1]);
		}
		bool *x = next;
		next = cur, cur = x;
	}
	return next[0];
}

bool gp_site_tmpl_level_match(const gp_site_tmpl_t *t, unsigned depth, const char *name)
{
	const char *c = t->rest;
	for (unsigned d = 1; d < depth && c; d++)
		if ((c = strchr(c, '/')))
			c++;
	if (!c || !depth || !*name)
		return false;
	const char *end = strchr(c, '/');
	return component_match(c, end ? end : c + strlen(c), name);
}

int gp_site_tmpl_check(const char *tmpl, char *why, size_t whylen)
{
	gp_site_tmpl_t t;
	return gp_site_tmpl_split(tmpl, &t, why, whylen);
}

bool gp_site_group_name_ok(const char *name)
{
	size_t n = strlen(name);
	if (!n || n > 64 || name[0] == '-')
		return false;
	for (const char *c = name; *c; c++)
		if ((unsigned char)*c <= ' ' || *c == '/' || *c == ':' || *c == ',' ||
		    (unsigned char)*c == 0x7f)
			return false;
	return true;
}

bool gp_site_holds_step(int dfd, bool *empty)
{
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	bool step = false;
	*empty = true;
	if (!d) {
		if (fd >= 0)
			close(fd);
		*empty = false;
		return false;
	}
	while (!step && (de = readdir(d))) {
		struct stat st;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		*empty = false;
		step = !strncmp(de->d_name, "step", 4) && gp_spool_step_name_ok(de->d_name + 4) &&
		       fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		       S_ISDIR(st.st_mode);
	}
	closedir(d);
	return step;
}
