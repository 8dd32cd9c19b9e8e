/* Names a person can read: kernel names demangled (libstdc++'s __cxa_demangle, loaded at
 * run time so the report links no C++ runtime), and folded to a width for tables. The
 * whole demangled name goes into JSON and the traces; tables show the folded one. */
#ifndef GP_NAMES_H
#define GP_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* The demangled name in *buf (realloc'd as __cxa_demangle does; the caller frees it), or
 * NULL: not a mangled name, or no demangler. */
const char *gp_demangle(const char *name, char **buf, size_t *len);
/* A malloc'd copy of name, demangled where it is a mangled C++ name. NULL: no memory. */
char *gp_readable_name(const char *name);
/* name for a column of width-1 bytes: the return type and parameter list dropped,
 * anonymous namespaces and nested template arguments folded, namespaces inside template
 * arguments dropped, then the middle cut (".."), so names that differ at their end (the
 * tile sizes of three GEMMs) stay apart. */
void gp_display_name(const char *name, char *out, size_t width);
/* The rows of a table (n names into out, width bytes each): as gp_display_name, except
 * that rows that would read the same are cut around where their names differ (three GEMMs
 * that differ only in the middle of their names stay three names). */
void gp_display_names(const char *const *names, const bool *kernel, unsigned n, char *out,
                      size_t width);
/* A name that is no kernel's (a stack frame's function, an NVTX range the user wrote) for
 * a column of width-1 bytes: readable (demangled), a function's parameter list dropped
 * where it does not fit whole, its scope kept, then the middle cut. kernel[] of
 * gp_display_names (NULL: every row a kernel) says which rows are these. */
void gp_display_label(const char *name, char *out, size_t width);
/* A cut at i of s moved back to the start of the UTF-8 character there (never half a
 * character in a table). */
size_t gp_utf8_back(const char *s, size_t i);
/* What a terminal would act on (escape sequences, bells, carriage returns) made '?':
 * names are the program's strings, and an admin may read a user's report. */
void gp_text_safe(char *s);
/* The first n bytes of s (up to its end) for HTML text or an attribute value. */
void gp_html_escn(FILE *o, const char *s, size_t n);

/* What kind of work a kernel does, read from its (demangled) name alone: "GEMM",
 * "convolution", "attention", "softmax", "normalisation", "optimizer", "reduction/scan/sort",
 * "indexing", "copy/transpose/fill", "elementwise", "XLA fusion", "communication" or "other". A
 * static string. Names say what a kernel is, not which operation launched it: a cast inside a
 * GEMM's epilogue is a GEMM. */
const char *gp_kernel_kind(const char *name);

#endif
