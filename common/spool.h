/* The node-local spool of one profiled task, and how its rank file reaches the job
 * directory. Layout (all created by the task's user, 0700/0600):
 *   <root>/gpuprof-<uid>/job<J>.<step>.<rank>.<agentpid>/
 *       ring      the shared event ring (ring.h)
 *       rank.gpr  the rank file being written (rankfile.h)
 *       dest      the final path: <jobdir>/step<S>/rank<R>.gpr
 *       rank<N>/  one per rank of a launcher under the task (torchrun's workers), each
 *                 with its own ring, rank.gpr and dest (<jobdir>/step<S>/rank<N>.gpr);
 *                 the task's own file is then launcher<R>.gpr when no process recorded
 *                 into the task's ring
 * The agent publishes at exit (and a snapshot on SIGTERM); `gpuprof salvage` publishes
 * what a dead agent left behind. */
#ifndef GP_SPOOL_H
#define GP_SPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The one spelling of the names every stage shares (agent, the injected library's
 * fallback, the plugin, salvage): a step's directory in the job directory,
 * <jobdir>/step<S>[.attempt<N>] (N: SLURM_RESTART_COUNT, when not 0), and a task's
 * spool under the user's, <udir>/job<J>.<S>.<R>.<pid>. -1 (ENAMETOOLONG) when cut. */
int gp_spool_step_dir(char *out, size_t len, const char *jobdir, const char *step,
                      const char *attempt);
/* S of a step directory step<S>: what the plugin names steps, a number, batch,
 * interactive or extern, with .attemptN for a requeued job's later attempts. */
bool gp_spool_step_name_ok(const char *s);
int gp_spool_task_dir(char *out, size_t len, const char *udir, const char *job, const char *step,
                      const char *rank, int pid);
/* The job directory: GPUPROF_JOBDIR (the plugin's or `gpuprof run`'s, expanded), else
 * (an agent or a fallback library started by hand) the output template in force
 * (GPUPROF_OUTPUT, else the settings table's) expanded by gp_tmpl_expand with this
 * process's job (SLURM_JOB_ID, else "local"), user, job name, step and rank; made one
 * absolute spelling of plain components (gp_path_normalise), the one every dest has. */
int gp_spool_jobdir(char *out, size_t len);
/* Rings of a task's other processes (SPOOL/rank<N>[.pid<P>]/) at most: the library
 * makes no more (counted as GP_LOSS_PROCESSES), so the agent drains every one made */
#define GP_SPOOL_MAX_PROCS 1024
/* The files of one spool entry (a task's directory, or a launcher's rank's under it). */
#define GP_SPOOL_RING "ring"
#define GP_SPOOL_RANK "rank.gpr"
#define GP_SPOOL_DEST "dest"
/* Make the entry's directory (0700; it must not exist yet). */
int gp_spool_entry_make(const char *dir);
/* Record (or change) where the entry's rank file is published; salvage reads it back. */
int gp_spool_entry_set_dest(const char *dir, const char *dest);
/* Create the entry's rank file (new, never through a link): its descriptor. */
int gp_spool_entry_create_rank(const char *dir, mode_t fmode);
/* Remove the entry: its ring, rank file and dest, then the directory (left in place when
 * anything else is in it, a launcher's rank not yet published). */
void gp_spool_entry_remove(const char *dir);
/* The header every rank file starts with (rankfile.h's key=value lines): the job, step
 * and node from the environment and this host, and what the writer knows. The agent and
 * the injected library's fallback (no agent) write the same keys. */
typedef struct gp_spool_hdr {
	const char *step, *rank;
	unsigned modes;
	const char *wrapped;  /* "agent" or "env" (fallback) */
	const char *fallback; /* why there is no agent (fallback only) */
	pid_t pid; /* the recording process when known (a launcher's rank, the fallback's own),
	              else 0; its command line is read from /proc */
	const char *launcher_rank; /* that process's task */
	const char *gpus, *nvml_limits;
	char *const *argv; /* the command line when pid is 0 */
} gp_spool_hdr_t;
int gp_spool_header(char *hdr, size_t len, const gp_spool_hdr_t *h);
/* Where a node's spools go, decided once for the plugin (which passes it to the agent as
 * GPUPROF_SPOOL) and the agent (without one): site, the site's spool_dir, with its %n and
 * %h expanded (path.h), when set; else tmpdir (the job's $TMPDIR) when it is absolute;
 * else /tmp. Returns out; NULL when site is set but not a node's template (why says so)
 * or its expansion too long, out then holding the fallback. */
const char *gp_spool_root(char *out, size_t len, const char *site, const char *tmpdir, char *why,
                          size_t whylen);
/* Create (or reuse, if owned by us and not a link) <root>/gpuprof-<uid>; another user's
 * directory, a link or one open to others under that name is passed over for
 * gpuprof-<uid>.1 ... .9; all ten planted, for one of ours named gpuprof-<uid>.rXXXXXX
 * (the first by name, else a new one from mkdtemp, 0700), which no one can plant.
 * gp_spool_salvage_all walks them all. */
int gp_spool_userdir(const char *root, char *out, size_t outlen);
/* Copy src into dest atomically (tmp + fsync + rename), creating dest's directory. */
int gp_spool_publish(const char *src, const char *dest, mode_t fmode, mode_t dmode);
/* dest with its last "/rank" made "/launcher" (a task whose launcher's ranks recorded
 * into rank files of their own). */
int gp_spool_launcher_dest(const char *dest, char *out, size_t outlen);
/* Where a spool entry's rank file goes: its dest (the user's to write) when it has the
 * agent's shape, <absolute jobdir of plain components>/step<S>/{rank,launcher}<N>.gpr,
 * moved under into (when not NULL) as into/step<S>/<file>. -1 (EINVAL) for any other. */
int gp_spool_dest_check(const char *dest, const char *into, char *out, size_t outlen);
/* Salvage one task spool (and its other processes' files, SPOOL/rank<N>/ of a
 * launcher's ranks and SPOOL/rank<N>.pid<P>/): drain each ring into its rank file
 * (forced), publish it to dest, remove what was published. 1 (said) when the owning
 * agent is still alive (nothing done); -1 (said) when any of its files could not be
 * published (they stay). */
int gp_spool_salvage(const char *dir, const char *into, bool verbose);
/* Salvage every spool of job (NULL: all) under root. Returns the number salvaged
 * whole; *failed (when not NULL) gets the number not, or not whole. */
int gp_spool_salvage_all(const char *root, const char *job, const char *into, bool verbose,
                         int *failed);

#endif
