/* The per-rank tables of the text and HTML reports (how slow, where the time goes, the
 * host's side, where the memory goes), defined once (tables.c): each column shows one
 * field of report.json (fields.c) by its JSON name, with a heading, a scale and digits,
 * so the text, the HTML and the JSON cannot give a rank two different figures, and a
 * figure joins a table with one line here. `gpuprof fields --tables` lists the columns;
 * the formats tier reads every fixture's text and HTML back through it and holds each
 * cell to its JSON field. */
#ifndef GP_TABLES_H
#define GP_TABLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "rank.h"

enum {
	GP_COL_LEFT = 1,  /* text, left-aligned */
	GP_COL_CUT = 2,   /* text cut to the width */
	GP_COL_BYTES = 4, /* bytes, scaled to B, KiB, MiB, GiB, TiB with three digits */
};

typedef struct gp_col {
	const char *head;
	const char *key;  /* the JSON field shown ("section.key"); NULL: the row's label */
	const char *when; /* a JSON field that must be nonzero (a string: not empty) for the
	                     cell to hold a figure, else "-" (not measured, never a 0 that
	                     reads as one); "=": the field itself; NULL: always */
	int width, prec;
	double scale; /* shown = the JSON value / scale; 0: 1 */
	unsigned flags;
} gp_col_t;

typedef struct gp_rank_table {
	const char *id, *title;
	const gp_col_t *cols;
	size_t ncols;
	const char *legend; /* what the headings mean, printed under the table */
} gp_rank_table_t;

enum { GP_TABLE_SLOW, GP_TABLE_TIME, GP_TABLE_HOST, GP_TABLE_MEMORY, GP_NTABLES };
extern const gp_rank_table_t gp_rank_tables[GP_NTABLES];

/* A cell of rank r as shown (the label's column: label), in buf. */
const char *gp_col_cell(const gp_col_t *c, const gp_rank_t *r, const char *label, char *buf,
                        size_t len);
/* Bytes as a person reads them: "0 B", "512 B", "1.23 GiB", "12.3 MiB", "123 KiB". */
const char *gp_human_bytes(double bytes, char *buf, size_t len);
/* The text's layout of a table for one job: each column as wide as its widest cell among
 * the ranks listed (never narrower than the table's width or its heading), a text cell
 * over GP_COL_TEXT_MAX characters cut there with "..." (a node's name, an outcome: never
 * cut short of that); the columns in blocks of at most GP_TEXT_WIDTH characters a line,
 * each block with the label column in front (a wide job's table becomes two tables, as
 * a wide data frame prints, rather than lines a terminal folds). */
#define GP_COL_TEXT_MAX  40
#define GP_TABLE_MAXCOLS 16
typedef struct gp_table_layout {
	int width[GP_TABLE_MAXCOLS];
	unsigned nblocks;
	size_t from[GP_TABLE_MAXCOLS + 1]; /* block b: columns from[b]..from[b+1]-1 after 0 */
} gp_table_layout_t;
void gp_table_layout_init(gp_table_layout_t *lay, const gp_rank_table_t *t);
/* A rank to be listed, with its label: its cells widen the columns. */
void gp_table_layout_add(gp_table_layout_t *lay, const gp_rank_table_t *t, const gp_rank_t *r,
                         const char *label);
/* The blocks, once every rank is added. */
void gp_table_layout_end(gp_table_layout_t *lay, const gp_rank_table_t *t);
/* The heading line and a rank's line of block b (cells one space apart). */
void gp_table_text_head(FILE *out, const gp_rank_table_t *t, const gp_table_layout_t *lay,
                        unsigned b);
void gp_table_text_row(FILE *out, const gp_rank_table_t *t, const gp_table_layout_t *lay,
                       unsigned b, const gp_rank_t *r, const char *label);
/* The columns, a line each: table, heading, JSON field, condition, width (the least the
 * text gives it), scale, flags, the most characters a cell shows (GP_COL_TEXT_MAX for
 * text cut there, "-": never cut);
 * then the attribution tables' (table "attribution", attribution.h: keys of their rows) */
void gp_tables_print(FILE *out);

#endif
