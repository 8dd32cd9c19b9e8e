/* The figures of a rank the JSON report gives, listed once (fields.c): key, the JSON
 * object of the rank it is in, where in gp_rank_t it lives, type, unit, one line of doc.
 * report.json's rank objects are written from the table and doc/report.md's list of them
 * is made from it, so the two cannot drift apart. */
#ifndef GP_FIELDS_H
#define GP_FIELDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "rank.h"

enum gp_field_type {
	GP_FT_U64,      /* uint64_t; with scale, printed as value / scale, prec digits */
	GP_FT_U32,      /* unsigned */
	GP_FT_I32,      /* int */
	GP_FT_I32_NULL, /* int, null when negative */
	GP_FT_F64,      /* double, prec digits */
	GP_FT_BOOL,
	GP_FT_STR,  /* char[], NUL-terminated */
	GP_FT_TEXT, /* gp_text_t (text.h) */
	GP_FT_FN    /* written by fn: what no single field holds (lists, derived values) */
};

typedef struct gp_field {
	const char *section; /* the rank's JSON object it is in; NULL: the rank's own keys */
	const char *key;
	enum gp_field_type type;
	size_t off; /* offsetof(gp_rank_t, ...) */
	int prec;   /* digits after the point (F64, a scaled U64) */
	double scale;
	const char *unit; /* NULL: a count, a name or a flag */
	const char *doc;
	void (*fn)(FILE *out, const gp_rank_t *r);
	/* was the figure measured on r? NULL: always. Where not, it is not 0: null in the
	 * JSON, an empty CSV cell, "-" in the text and HTML tables (gp_field_number false) */
	bool (*measured)(const gp_rank_t *r);
} gp_field_t;

extern const gp_field_t gp_rank_fields[];
extern const size_t gp_rank_nfields;

/* A field by its JSON name ("section.key", or "key" for the rank's own); NULL: none. */
const gp_field_t *gp_field_find(const char *name);
/* Its value as the JSON gives it, as a number (a scaled U64 divided by its scale, a flag
 * 0 or 1); false: null in the JSON (its section written as null, a negative I32_NULL, not
 * finite, not measured) or not a number (a string, a list). */
bool gp_field_number(const gp_field_t *f, const gp_rank_t *r, double *v);
/* Its value as text (STR); NULL: not a string. */
const char *gp_field_text(const gp_field_t *f, const gp_rank_t *r);

/* One rank as a JSON object, from the table. */
void gp_json_rank(FILE *out, const gp_rank_t *r);
/* Every rank as a row of a few figures (report.json's rank_table: {"keys": [section.key,
 * ...], "rows": [[...], ...]}, a value as the rank's object gives it, null where that gives
 * its section as null), for a job too large for an object a rank. */
void gp_json_rank_table(FILE *out, const gp_rank_t *ranks, unsigned n);
/* One rank as a CSV row of the table's single values (lists left out), in the table's
 * order; r NULL: the header row (section.key). */
void gp_csv_rank(FILE *out, const gp_rank_t *r);
/* A CSV cell: quoted where it holds a comma, a quote or a line break (RFC 4180). */
void gp_csv_str(FILE *out, const char *s);
/* The table, one line a field: as text, or as markdown (doc/report.md, between its
 * gpuprof fields markers). */
void gp_fields_print(FILE *out, bool markdown);

#endif
