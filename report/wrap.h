/* The text report's lines at most GP_TEXT_WIDTH characters (wrap.c): the one place prose
 * is cut into lines, so a sentence added anywhere in the text writers cannot bring back a
 * line a terminal or a mail folds (issue 49 item 6: lines of 290-644 characters). A line
 * is cut at spaces only, never between a number and the word after it ("9.24 ms",
 * "95 % intervals") nor inside a token (a file:line, a path, a kernel's name has no
 * space); its continuation lines hang under its label ("   evidence:  ", "rank 0: ",
 * "1. ", "(") so the label column stays clear. Only a token longer than a line can make
 * a longer line. Tables are laid out to fit and pass through unchanged.
 *
 * The rule a reader uses to join the lines back (tests/integration/textwidth.py): a line
 * that begins with a space continues the line before it when that line's length, a space
 * and the next line's first unit (its first token, with the token after it when that
 * one is a number) exceed the width. */
#ifndef GP_WRAP_H
#define GP_WRAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define GP_TEXT_WIDTH 100

/* Characters (UTF-8 code points) of s[0..len). */
size_t gp_wrap_chars(const char *s, size_t len);
/* The columns a terminal gives code point cp: 2 for the East Asian wide and fullwidth
 * ones (CJK, kana, Hangul, fullwidth forms, the wide emoji blocks), else 1 (combining
 * marks too: one column is enough for a screen of figures). */
int gp_cp_cols(uint32_t cp);
/* The longest start of s[0..len) made of whole characters within cols terminal columns:
 * its bytes, with *used its columns (a run of bytes that is not UTF-8 counts one, as the
 * '?' gp_text_shown makes of it). Never cuts inside a character: a wide one that would
 * straddle the edge is left out. */
size_t gp_text_fit(const char *s, size_t len, size_t cols, size_t *used);
/* s for a column of cols terminal columns, in buf: whole where it fits, else cut to whole
 * characters (gp_text_fit) and "..."; *used (if not NULL) its columns. Returns buf. */
const char *gp_text_cut(const char *s, size_t cols, char *buf, size_t len, size_t *used);
/* The column a line's continuations start at: after its label ("word(s): " of at most
 * 24 characters and its spaces), its number ("1. "), its "("; else its indent + 2. */
size_t gp_wrap_hang(const char *line, size_t len);
/* line[0..len) (no newline) to out as lines of at most width characters, continuations
 * indented by hang spaces; a line that fits goes out unchanged. Each line ends in '\n'. */
void gp_wrap_line(FILE *out, const char *line, size_t len, size_t width, size_t hang);
/* Every line of buf[0..len) through gp_wrap_line with its own gp_wrap_hang. */
void gp_wrap_text(FILE *out, const char *buf, size_t len, size_t width);
/* A text report written whole in buf[0..len) to out: every control character but the
 * newline made '?' (the text carries the program's own strings, range, thread and kernel
 * names, paths, to a terminal, an admin's too), then every line through gp_wrap_text at
 * GP_TEXT_WIDTH. buf is changed. */
void gp_text_emit(FILE *out, char *buf, size_t len);
/* buf[0..len) with what no terminal shows raw made '?' as gp_text_emit does (the newline
 * kept), in place; its new length. */
size_t gp_text_shown(char *buf, size_t len);
/* s[0..n) to out by the same rule, unwrapped, for what prints a program's strings to a
 * terminal outside the report (gpuprof dump, gpuprof top): hex: each byte of what is not
 * shown, a newline and a '\' too (one line a string, escapes that read back), as \xNN;
 * else one '?' for it. */
void gp_text_put(FILE *out, const char *s, size_t n, bool hex);
/* A text report: write(to, arg) prints it whole into memory, then gp_text_emit puts it to
 * out. Where no memory is left for it, one error line and nothing raw. */
void gp_text_report(FILE *out, void (*write)(FILE *to, const void *arg), const void *arg);
/* printf, then gp_wrap_line at GP_TEXT_WIDTH with the hang given (a writer that knows
 * its column: a stack after its figures). The text may hold several lines. */
void gp_wrapf(FILE *out, size_t hang, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
