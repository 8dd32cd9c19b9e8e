/* The text of a rank's result (gp_text_t): names, stacks and sentences the passes write and
 * the report prints, held once for the whole process (text.c). A job's ranks say the same
 * things (one command, a few nodes, the same stacks and start-up kernels), so each rank
 * keeps a pointer, not a fixed array: the result of a rank was 16.3 KiB, 10 of them such
 * arrays mostly empty, and 100 000 ranks needed 1.6 GB to report (issue 51 item 12).
 * Strings are never freed before the process ends (a report, an export, a diff: one
 * command per process); the table is safe to fill from the report's analysis threads. */
#ifndef GP_TEXT_H
#define GP_TEXT_H

#include <stddef.h>

/* NULL is the empty string: a zeroed result reads "" everywhere. Read through gp_txt. */
typedef struct gp_text {
	const char *s;
} gp_text_t;

static inline const char *gp_txt(gp_text_t t)
{
	return t.s ? t.s : "";
}

/* t = s, at most max - 1 bytes of it (the size of the array it replaced, so a report says
 * exactly what it said before; 0: all of it). "" or NULL: none. On no memory t is none. */
void gp_text_set(gp_text_t *t, const char *s, size_t max);
/* t = s[0..len) (which need not end there: a summary's bytes). */
void gp_text_setn(gp_text_t *t, const char *s, size_t len);
/* t = the formatted string, at most max - 1 bytes (as snprintf into char[max]). */
void gp_text_setf(gp_text_t *t, size_t max, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The bytes the table holds, strings and slots (bench/report-scale.sh, tests). */
size_t gp_text_bytes(void);

#endif
