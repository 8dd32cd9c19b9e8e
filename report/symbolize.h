/* Native frames to function and file:line at report time, from the modules' DWARF
 * (elfutils' libdwfl), for the memory_viz export. The collector records each native
 * frame's module path and its offset from the module's load address (stacks.c); the
 * report reads the same module where it runs (the job's node, or a machine with the
 * same software). One libdwfl session per module, kept for the report's life. Without
 * libdw at build time, or when the module is gone or has no line table, nothing is
 * found and the caller keeps the collector's symbol+offset. */
#ifndef GP_SYMBOLIZE_H
#define GP_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct gp_symbolizer gp_symbolizer_t;

gp_symbolizer_t *gp_symbolizer_new(void);
void gp_symbolizer_free(gp_symbolizer_t *s);
/* off: a return address's offset from the module's load address (the call is the
 * instruction before it). func and file are "" when unknown; false when nothing at all
 * was found (no libdw, no module, no symbol). */
bool gp_symbolize(gp_symbolizer_t *s, const char *module, uint64_t off, bool return_address,
                  char *func, size_t funclen, char *file, size_t filelen, int *line);
/* A pc's frames with the functions inlined there, innermost first: each one's function
 * (its linkage name where DWARF has one, mangled; else its name), and the file and line
 * in it (for a function another was inlined into, the line of that call). Returns how
 * many (at most max); 0 when the module has no DWARF for the pc. */
typedef struct gp_sym_frame {
	char func[256], file[256];
	int line;
} gp_sym_frame_t;
int gp_symbolize_inlined(gp_symbolizer_t *s, const char *module, uint64_t off, bool return_address,
                         gp_sym_frame_t *out, int max);
/* Was the report built with a symboliser (libdw)? */
bool gp_symbolizer_available(void);

#endif
