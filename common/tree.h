/* A directory tree measured or removed without ever following a link or leaving its file
 * system: every directory is opened relative to its parent's descriptor with O_NOFOLLOW
 * (a link is counted as itself and removed as itself), and one on another device (a
 * mount point) is neither entered nor removed. For the site's quota (spank/site.c) and
 * `gpuprof prune` (report/cmd_prune.c), which run over directories users write. */
#ifndef GP_TREE_H
#define GP_TREE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

typedef struct gp_tree_usage {
	uint64_t bytes;     /* disk usage (st_blocks), as du */
	uint64_t entries;   /* entries seen, the top one included */
	time_t newest;      /* the latest modification time of any entry */
	time_t newest_file; /* the same of any entry but a non-empty directory (which a removal in
	                     * it changes): 0 where none */
	bool cut;           /* stopped at max_entries, or a level too deep: a lower bound */
	unsigned skipped;   /* entries not entered or not removed: mount points, errors */
} gp_tree_usage_t;

#define GP_TREE_MAX_DEPTH 48

/* Add what dirfd/name holds (itself included; a directory recursively) to u, stopping once
 * u->entries reaches max_entries (0: no limit). 0, or -1 with errno when name itself
 * cannot be read. */
int gp_tree_measure(int dirfd, const char *name, uint64_t max_entries, gp_tree_usage_t *u);
/* Remove dirfd/name and everything below it, each entry relative to its parent's
 * descriptor; what it freed is added to u (bytes and entries). 0 when it is gone, -1 with
 * errno when it could not all be removed (the rest stays, counted in u->skipped). */
int gp_tree_remove(int dirfd, const char *name, gp_tree_usage_t *u);
/* The same, where name itself must be on dirfd's file system: a mount point at name (a
 * user's bind mount or FUSE file system where a job directory was) is -1 with EXDEV,
 * neither entered nor removed; what the walk opens is checked against dirfd's device, so
 * a mount made after the check is not entered either. For `gpuprof prune`. */
int gp_tree_measure_within(int dirfd, const char *name, uint64_t max_entries, gp_tree_usage_t *u);
int gp_tree_remove_within(int dirfd, const char *name, gp_tree_usage_t *u);

#endif
