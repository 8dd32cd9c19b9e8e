/* What a rank file says about names: interned strings (arriving in pieces), allocation
 * call stacks and the symbol of each frame. One table per rank file, shared by the
 * analysis and the exports. */
#ifndef GP_SYMTAB_H
#define GP_SYMTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "event.h"
#include "vec.h"

typedef struct gp_symtab {
	u64map_t str_ids;   /* string id + 1 -> index into strs */
	VEC(char *) strs;   /* each as long as its pieces reach (memory follows the file) */
	VEC(uint16_t) cap;  /* bytes allocated for strs[i] */
	u64map_t frame;     /* pc -> string id of "symbol+0xoff (library)" */
	u64map_t frame_mod; /* pc -> module path string id */
	u64map_t frame_off; /* pc -> offset in the module (native frames of newer files) */
	u64map_t stack_off; /* stack id -> offset + 1 into pcs, where [offset - 1] = count */
	VEC(uint64_t) pcs;
} gp_symtab_t;

/* Take a string, stack or frame record; false for any other type. */
bool gp_symtab_feed(gp_symtab_t *t, const gp_event_t *e);
/* The string, or NULL when the id is 0 or was never defined. */
const char *gp_symtab_str(const gp_symtab_t *t, uint32_t id);
/* Frames of a stack (count returned, *pcs set), 0 when unknown. */
size_t gp_symtab_stack(const gp_symtab_t *t, uint32_t stack, const uint64_t **pcs);
/* "symbol+0xoff (library)" of a pc, or "?" */
const char *gp_symtab_frame(const gp_symtab_t *t, uint64_t pc);
/* A native frame's module path and offset in it; false when the file did not say. */
bool gp_symtab_frame_module(const gp_symtab_t *t, uint64_t pc, const char **module, uint64_t *off);
/* Frames of the profiler, the driver and CUPTI say nothing about the program. */
bool gp_symtab_profiler_frame(const char *sym);
/* Forget everything but keep the memory (the next rank reuses it). */
void gp_symtab_reset(gp_symtab_t *t);
void gp_symtab_free(gp_symtab_t *t);

#endif
