/* Path templates and safe file creation as the current user.
 * The one template grammar of gpuprof (doc/admin.md, "Templates"): %j job id, %u user,
 * %x job name, %s step, %n node (host name), %h host's short name, %t task, %r rank,
 * %% '%'. The job directory (output, --gpuprof-output, GPUPROF_OUTPUT, gpuprof run
 * --output) takes every escape; a node's directories (spool_dir, plugstack.conf's
 * state_dir), known before any job, take the node's alone: %n %h %%. */
#ifndef GP_PATH_H
#define GP_PATH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

typedef struct gp_tmpl_vars {
	const char *job;  /* %j */
	const char *user; /* %u */
	const char *name; /* %x */
	const char *step; /* %s */
	const char *node; /* %n */
	const char *task; /* %t */
	const char *rank; /* %r */
	const char *host; /* %h */
} gp_tmpl_vars_t;

/* Which escapes a template may hold: every one, or the node's alone. */
typedef enum gp_tmpl_kind { GP_TMPL_JOB, GP_TMPL_NODE } gp_tmpl_kind_t;

/* Check a job-directory template's syntax without expanding it: -1 with a message on an
 * unknown % escape, a trailing '%', control characters, non-UTF-8 or an over-long value. */
int gp_tmpl_check(const char *tmpl, char *err, size_t errlen);
/* The same for a template of the given kind: an escape of the job's in a node's directory
 * is refused, naming the escapes it may hold. */
int gp_tmpl_check_kind(const char *tmpl, gp_tmpl_kind_t kind, char *err, size_t errlen);
/* This host's names, for %n (gethostname) and %h (its first label), in storage of the
 * caller's; v->node and v->host point into it. */
typedef struct gp_tmpl_hostbuf {
	char node[256], host[256];
} gp_tmpl_hostbuf_t;
void gp_tmpl_this_host(gp_tmpl_vars_t *v, gp_tmpl_hostbuf_t *buf);
/* The codes a job step's environment gives outside the plugin (the agent by hand,
 * gpuprof run): %j SLURM_JOB_ID (else "local"), %u USER, %x SLURM_JOB_NAME, %s
 * SLURM_STEP_ID, %r SLURM_PROCID; the others unset. */
void gp_tmpl_vars_from_env(gp_tmpl_vars_t *v);
/* Expand tmpl into out. A variable that is NULL or empty expands to "unknown". Every value
 * is made harmless as a path's part, so that a job name (%x is the user's to choose) can
 * never leave the directory the template's own text names: '/' and control characters
 * become '_', a value is cut to 128 bytes (whole UTF-8 characters), and a component that
 * a value made "." or ".." gets '_' for its first dot. */
int gp_tmpl_expand(const char *tmpl, const gp_tmpl_vars_t *v, char *out, size_t outlen);

/* mkdir -p as the current user: every component opened with O_NOFOLLOW|O_DIRECTORY via
 * openat, created with mode when missing. Returns an O_DIRECTORY fd of the last
 * component, or -1 with errno set (ELOOP when a component is a symlink). */
int gp_mkdir_p(const char *path, mode_t mode);
/* Open a file for writing below dirfd without following links. flags add to
 * O_WRONLY|O_CLOEXEC|O_NOFOLLOW. */
int gp_open_at(int dirfd, const char *name, int flags, mode_t mode);
/* Write all of buf; -1 on error (errno kept). */
int gp_write_all(int fd, const void *buf, size_t len);
/* Atomically write name below dirfd from buf (tmp file, renameat): readers see the old
 * file or the whole new one. durable: fsync the data before the rename, so a crash of
 * the node cannot leave an empty file under the name (records nothing can remake); a
 * file that can be remade, or that is checksummed and rebuilt when torn, needs no fsync
 * (an fsync is ~2 ms of a VM's CPU, paid by every task). */
int gp_write_file_at(int dirfd, const char *name, const void *buf, size_t len, mode_t mode,
                     bool durable);
/* Open for reading a file that a user may have named or planted (root reading a job, the
 * epilog's salvage): never through a link (O_NOFOLLOW), never waiting on a FIFO or a
 * device (O_NONBLOCK; it is cleared again on the descriptor), a regular file only, and
 * where owner is not (uid_t)-1 one of owner's or the caller's own. dirfd as openat's.
 * The descriptor (O_CLOEXEC) with *st filled when st is not NULL, or -1: ELOOP a link,
 * EINVAL not a regular file, EPERM another user's. */
int gp_open_regular(int dirfd, const char *path, uid_t owner, struct stat *st);
/* Root's rule for a job directory a user may have named (report, top, ledger --running):
 * no component of dir is a link a user made (not root's) to a directory of another uid
 * (alice's link to bob's job would be shown as alice's, or an intermediate one of hers,
 * alice/x -> /home/bob, walk root into bob's). 0; -1 with err said; a caller not root: 0. */
int gp_root_link_check(const char *dir, char *err, size_t errlen);
/* Whether a file (or step directory) of file_uid in a job directory of owner is read:
 * root reads only the owner's in another user's job directory (what a link or a hard
 * link put there is another user's), and anything in its own; any other caller reads
 * what the kernel lets it (a group member of a group-readable job, a user's own job
 * assembled from links). owner (uid_t)-1: no owner, anything. */
bool gp_job_file_ok(uid_t file_uid, uid_t owner);
/* path as one absolute spelling of plain components, as the job directory is recorded
 * (the spool's dest, the report's dir): relative to the current directory, no empty
 * component, no "." nor "..", no trailing '/'. A ".." is its directory's parent as the
 * kernel finds it (the existing part resolved, links and all), else the name before it.
 * -1 (ENAMETOOLONG, or getcwd's errno). */
int gp_path_normalise(const char *path, char *out, size_t outlen);
/* Join dir and name into out, -1 on overflow. */
int gp_path_join(char *out, size_t outlen, const char *dir, const char *name);

#endif
