/* Readable kernel names (names.h). */
#include "config.h"
#include "names.h"

#include <dlfcn.h>
#include <stdio.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);
static demangle_fn demangler;
static pthread_once_t demangle_once = PTHREAD_ONCE_INIT;

static void load_demangler(void)
{
	void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
	if (h)
		*(void **)&demangler = dlsym(h, "__cxa_demangle");
}

const char *gp_demangle(const char *name, char **buf, size_t *len)
{
	int st = -1;
	if (!name || strncmp(name, "_Z", 2))
		return NULL;
	pthread_once(&demangle_once, load_demangler);
	if (!demangler)
		return NULL;
	char *r = demangler(name, *buf, len, &st);
	if (st != 0 || !r)
		return NULL;
	*buf = r; /* realloc'd by the demangler when it needed more */
	return r;
}

char *gp_readable_name(const char *name)
{
	char *buf = NULL;
	size_t len = 0;
	const char *d = gp_demangle(name, &buf, &len);
	char *out = strdup(d ? d : name);
	free(buf);
	return out;
}

/* Remove [at, at + n) from s. */
static void cut(char *s, size_t at, size_t n)
{
	memmove(s + at, s + at + n, strlen(s + at + n) + 1);
}

/* The function's signature around the name: a leading "void " and the trailing
 * parameter list (the last top-level parentheses that end the name). */
static void drop_signature(char *s)
{
	if (!strncmp(s, "void ", 5))
		cut(s, 0, 5);
	size_t n = strlen(s);
	if (n && s[n - 1] == ')') {
		int depth = 0;
		for (size_t i = n; i-- > 0;) {
			depth += s[i] == ')' ? 1 : s[i] == '(' ? -1 : 0;
			if (!depth) {
				/* "(anonymous namespace)" is part of a name, not parameters */
				if (i > 0)
					s[i] = '\0';
				break;
			}
		}
	}
}

static void drop_all(char *s, const char *what)
{
	size_t n = strlen(what);
	for (char *p; (p = strstr(s, what));)
		cut(s, (size_t)(p - s), n);
}

/* Template arguments nested deeper than one level become "<..>". */
static void fold_nested(char *s)
{
	int depth = 0;
	for (size_t i = 0; s[i]; i++) {
		if (s[i] == '<' && ++depth == 2) {
			size_t j = i + 1;
			for (int d = 1; s[j] && d; j++)
				d += s[j] == '<' ? 1 : s[j] == '>' ? -1 : 0;
			/* s[i..j) is "<...>"; keep "<..>" */
			if (j - i > 4) {
				s[i + 1] = s[i + 2] = '.';
				s[i + 3] = '>';
				cut(s, i + 4, j - (i + 4));
			}
			depth = 1;
			i += 3;
		} else if (s[i] == '>') {
			depth--;
		}
	}
}

/* Inside template arguments, "a::b::C" becomes "C". */
static void drop_inner_namespaces(char *s)
{
	int depth = 0;
	size_t word = 0; /* where the current qualified name began */
	for (size_t i = 0; s[i]; i++) {
		char c = s[i];
		if (c == '<' || c == ',' || c == ' ' || c == '(') {
			depth += c == '<';
			word = i + 1;
		} else if (c == '>') {
			depth--;
			word = i + 1;
		} else if (depth > 0 && c == ':' && s[i + 1] == ':') {
			cut(s, word, i + 2 - word);
			i = word - 1;
		}
	}
}

void gp_display_name(const char *name, char *out, size_t width)
{
	char *s = gp_readable_name(name ? name : "");
	size_t n;
	if (!width)
		goto out;
	if (!s) {
		snprintf(out, width, "%s", name ? name : "");
		return;
	}
	if (strlen(s) >= width) {
		drop_signature(s);
		drop_all(s, "(anonymous namespace)::");
	}
	if (strlen(s) >= width)
		fold_nested(s);
	if (strlen(s) >= width)
		drop_inner_namespaces(s);
	n = strlen(s);
	if (n >= width && width > 8) { /* the middle cut: both ends kept */
		size_t keep = width - 1 - 2, head = keep / 2, tail = keep - head;
		memmove(s + head + 2, s + n - tail, tail + 1);
		s[head] = s[head + 1] = '.';
	}
	snprintf(out, width, "%s", s);
out:
	free(s);
}
