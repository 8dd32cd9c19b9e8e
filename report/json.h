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

/* The UTF-8 sequence at s (n bytes left): its length (1-4) with *cp its code point, or 0
 * when it is not valid UTF-8 (overlong, a surrogate, above U+10FFFF, cut short), with
 * *bad the length of its maximal invalid subpart (>= 1), which stands for one U+FFFD. */
size_t gp_utf8_next(const unsigned char *s, size_t n, uint32_t *cp, size_t *bad);
/* The length of the UTF-8 character at s (n bytes left) where a text output may write it
 * as it is; 0 where no reader shows it raw, with *skip the bytes that stand for one
 * replacement: a maximal invalid subpart, or a control character (C0 other than the
 * characters in keep, DEL, C1, a bidirectional control: gp_bidi_control). */
size_t gp_utf8_shown(const unsigned char *s, size_t n, const char *keep, size_t *skip);
/* s as a JSON string, quotes included (NULL: ""). */
void gp_json_str(FILE *out, const char *s);
/* The first n bytes of s as a JSON string. */
void gp_json_strn(FILE *out, const char *s, size_t n);
/* d with prec decimals, exactly as fprintf(out, "%.*f", prec, d) writes it, faster. */
void gp_json_fixed(FILE *out, double d, int prec);
/* v in decimal, as fprintf's "%llu" writes it. */
void gp_json_uint(FILE *out, uint64_t v);
/* Is buf[0..n) one JSON value (whitespace around it allowed), its strings valid UTF-8,
 * nested at most 64 deep? For files embedded whole into ours (job.json). */
bool gp_json_valid(const char *buf, size_t n);

#endif
