/* Minimal TAP producer for the unit tier (header-only; one per test program). */
#ifndef GP_TAP_H
#define GP_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int tap_n, tap_fail;

static inline void tap_vok(int cond, const char *fmt, va_list ap)
{
	tap_n++;
	if (!cond)
		tap_fail++;
	printf("%sok %d - ", cond ? "" : "not ", tap_n);
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
}

static inline int ok(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline int ok(int cond, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	tap_vok(cond, fmt, ap);
	va_end(ap);
	return cond;
}

/* A test that cannot run here: counted as skipped by scripts/test. */
static inline void skip(const char *why)
{
	printf("ok %d # SKIP %s\n", ++tap_n, why);
	fflush(stdout);
}

static inline void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void diag(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("# ");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
}

static inline int done_testing(void)
{
	printf("1..%d\n", tap_n);
	return tap_fail ? 1 : 0;
}

#define is_str(got, want, ...)                                                                     \
	do {                                                                                       \
		const char *g_ = (got), *w_ = (want);                                              \
		if (!ok(g_ && w_ && !strcmp(g_, w_), __VA_ARGS__))                                 \
			diag("got '%s', want '%s'", g_ ? g_ : "(null)", w_ ? w_ : "(null)");       \
	} while (0)

#endif
