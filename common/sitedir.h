/* The site's directory of the jobs it profiles without their asking (gpuprof.yaml's
 * site_output): an absolute template /ROOT/%u/REST. ROOT is the admin's and holds no
 * escape; the component %u is the user's own directory, made by root for the user (the
 * plugin, spank/site.c), which the quota measures and `gpuprof prune` works inside; REST
 * (one component or more) is the job's, made by the job's user. */
#ifndef GP_SITEDIR_H
#define GP_SITEDIR_H

#include <stdbool.h>
#include <stddef.h>

typedef struct gp_site_tmpl {
	char root[1024]; /* "/srv/gpuprof" */
	char rest[1024]; /* "%j", "%x/%j" */
	unsigned depth;  /* REST's components: a job directory's depth below ROOT/USER */
} gp_site_tmpl_t;

/* Split tmpl into t: 0, or -1 with why ("must be absolute", "needs a directory %u of the
 * user's", ...). */
int gp_site_tmpl_split(const char *tmpl, gp_site_tmpl_t *t, char *why, size_t whylen);
/* Whether name may be the directory at depth (1: just below the user's) of t's job part:
 * its literal text where the template's component has one, each escape's value where it
 * has one (%j, %t, %r: one digit or more; the others: any text, an empty job name too). prune
 * walks only what the template could have made (a user's directory also holds their own
 * files: ~/thesis beside ~/gpuprof). */
bool gp_site_tmpl_level_match(const gp_site_tmpl_t *t, unsigned depth, const char *name);
/* Whether the open directory dfd holds a step's directory (step0, stepbatch,
 * step3.attempt1: what the agent makes); *empty: it holds nothing at all. What makes a job
 * directory gpuprof's, for prune (which removes only those) and the quota (which counts
 * only those). dfd is read from its start and left open. */
bool gp_site_holds_step(int dfd, bool *empty);
/* The same check, for the loader. */
int gp_site_tmpl_check(const char *tmpl, char *why, size_t whylen);
/* A group name as groupadd takes it (no '/', ':', space or control character). */
bool gp_site_group_name_ok(const char *name);

#endif
