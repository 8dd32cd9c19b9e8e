/* JSON that every reader accepts (RFC 8259): strings always valid UTF-8, whatever bytes
 * the program gave its NVTX ranges, threads or command line. A byte sequence that is not
 * UTF-8 becomes U+FFFD, one per maximal invalid subpart (Unicode's recommended practice,
 * what Python's and browsers' decoders do); control characters (C0, DEL, C1), U+2028/2029
 * and the bidirectional controls are \u escapes, which keep them in the value. */
#ifndef GP_JSON_H
#define GP_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "modes.h" /* gp_utf8_next, gp_utf8_shown */

/* s as a JSON string, quotes included (NULL: ""). */
void gp_json_str(FILE *out, const char *s);
/* The first n bytes of s as a JSON string. */
void gp_json_strn(FILE *out, const char *s, size_t n);
/* d with prec decimals, exactly as fprintf(out, "%.*f", prec, d) writes it, faster;
 * null where d is not finite (JSON has no inf or nan). */
void gp_json_fixed(FILE *out, double d, int prec);
/* The same into out (GP_FIXED_MAX bytes: DBL_MAX's 309 digits and 80 decimals fit), a
 * '\0' after it: its length. For a line built whole and written with one fwrite. */
#define GP_FIXED_MAX 400
size_t gp_fixed_fmt(char *out, double d, int prec);
/* v in decimal, as fprintf's "%llu" writes it. */
void gp_json_uint(FILE *out, uint64_t v);
/* d with prec decimals where measured, else null (not measured is never 0). */
void gp_json_num(FILE *out, bool measured, double d, int prec);
/* Is buf[0..n) one JSON value (whitespace around it allowed), its strings valid UTF-8,
 * nested at most 64 deep? For files embedded whole into ours (job.json). */
bool gp_json_valid(const char *buf, size_t n);

#endif
