/* gpuprof's entry in a job's AdminComment, beside other tools' ("; "-separated entries,
 * `KEY:value` each, which sites' accounting scripts split on "; "). Ours is one entry,
 * "gpuprof: ...", last; a re-run replaces it and nothing else. */
#ifndef GP_ADMINCOMMENT_H
#define GP_ADMINCOMMENT_H

#include <stdbool.h>
#include <stddef.h>

/* Our summary line s made one entry that nothing in it can end: each ';' (the job
 * directory is the user's to name: '/x; JS1:...; site:tag=999' forged two entries in an
 * admin-only field) becomes "%3B"; quotes, backslashes and backticks become '_' (a path
 * of the user's is never quoting for anyone's parser). -1 when s is not ours ("gpuprof:"
 * first), holds a control character, or does not fit. */
int gp_ac_entry(const char *s, char *out, size_t len);
/* Remove our entries from an AdminComment, keeping every other entry, before and after
 * ours (an admin tool's entry after ours was cut with it). */
void gp_ac_strip_ours(char *s);
/* others (ours removed first) then "; " and ours; -1 when that does not fit (others' text
 * is never cut). */
int gp_ac_compose(char *others, const char *ours, char *val, size_t len);
/* Does the field hold jobstats' summary (an entry "JS1:...", in any case)? Its reader decodes everything
 * after the field's first four characters: nothing may be added to such a field. */
bool gp_ac_has_js1(const char *s);

#endif
