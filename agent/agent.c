/* gpuprof-agent: wraps one task. It owns the task's spool (ring + rank file), starts the
 * program with the injection variables set, forwards signals, drains the ring into the
 * rank file, samples NVML, and exits exactly as the program did. Anything that fails on
 * our side degrades to "profiled less"; the program's outcome is never changed.
 *
 *   gpuprof-agent [--modes M] [--output DIR] [--step S] [--rank R] -- PROGRAM ARGS...
 *   (Slurm 22.05 rewrite) argv[0] = the agent, GPUPROF_ARGV0 = the program, argv[1..] args */
#include "config.h"
#include "env.h"
#include "event.h"
#include "live_writer.h"
#include "log.h"
#include "modes.h"
#include "nvml.h"
#include "optenv.h"
#include "summary.h"
#include "path.h"
#include "proc.h"
#include "rankfile.h"
#include "ring.h"
#include "settings.h"
#include "spool.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const int fwd_signals[] = {SIGTERM, SIGINT,  SIGHUP,  SIGQUIT,  SIGUSR1,
                                  SIGUSR2, SIGCONT, SIGTSTP, SIGWINCH, SIGALRM};
#define NFWD (sizeof(fwd_signals) / sizeof(fwd_signals[0]))

/* A process of the task with a ring of its own (agent/inject/startup.c, proc_ring_setup):
 * a rank of the task's launcher (torchrun's workers under one task) in SPOOL/rankR,
 * published as rankR.gpr beside the task's file, or another process of rank R that used
 * CUDA or NVTX while that rank's ring was held (side: its pid) in SPOOL/rankR.pidP,
 * published as rankR.pidP.gpr (the report sets it beside rank R's file). */
typedef struct proc_file {
	long rank;
	pid_t side; /* 0: a launcher's rank */
	pid_t pid;
	gp_ring_t ring;
	gp_rf_writer_t *w;
	char dir[4300], path[4400], dest[4400];
	uint64_t t0, lost_write;
	int status; /* its wait status when seen as a zombie, else -1 */
	bool done, published;
	bool no_file; /* its spool file could not be made (no descriptor left): its records
	                 wait in its ring for the end, when one is made in the job directory */
	gp_live_writer_t *live; /* a launcher's rank's live figures (side 0) */
} proc_file_t;

#define MAX_PROCS GP_SPOOL_MAX_PROCS

typedef struct agent {
	unsigned modes;
	const char *step, *rank, *inject, *spool_root;
	char jobdir[4096], spool[4096], ring_path[4200], rank_path[4200], dest[4200];
	uint64_t max_bytes;
	long nvml_hz;
	bool group_readable;
	gp_ring_t ring;
	bool have_ring;
	gp_rf_writer_t *w;
	gp_nvml_t *nvml;
	gp_live_writer_t *live; /* rank<R>.live.json every live_interval s; NULL: none */
	uint32_t next_string;   /* agent-side string ids, from 0xfffffe00 up: above the library's
	                           (generation << 18) */
	char yielded[256];
	pid_t child;
	uint64_t t_start;
	bool write_failed;   /* the spool's rank file could not be written */
	uint64_t lost_write; /* records buffered in the writer when it failed */
	char dest_dir[4200];
	proc_file_t *procs; /* the launcher's ranks with rings of their own */
	unsigned nprocs, procs_done;
	uint32_t procs_seen; /* ring.hdr->procs when the spool was last looked at */
	uint64_t procs_look; /* when to see next whether they have ended */
	dev_t pub_dev;       /* what publish() put at dest, to remove it if renamed */
	ino_t pub_ino;
	int sfd;          /* the forwarded signals and SIGCHLD (spawn) */
	pid_t stepd;      /* the slurmstepd we run under (parent or further up), 0 outside */
	bool in_step;     /* a Slurm job's (SLURM_JOB_ID): slurmstepd may be out of sight */
	int status;       /* the program's wait status */
	struct rusage ru; /* and its resources */
} agent_t;

static char **prog_argv;

static const char *env_or(const char *name, const char *dflt)
{
	const char *v = getenv(name);
	return v && *v ? v : dflt;
}

static void usage(void)
{
	fprintf(stderr, "usage: gpuprof-agent [--modes M] [--output DIR] [--step S] [--rank R] "
	                "-- PROGRAM [ARGS...]\n");
}

/* Returns the index of PROGRAM in argv, or -1. The options become the environment the
 * plugin would have set (optenv.h), read back below as a wrapped task's. */
static int parse_args(agent_t *a, int argc, char **argv)
{
	gp_task_env_t t = {0};
	for (int i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(argv[i], "--"))
			return i + 1 < argc && gp_task_env_export(&t, gp_env_process_set, NULL) == 0
			           ? i + 1
			           : -1;
		if (!v)
			return -1;
		if (!strcmp(argv[i], "--modes"))
			t.modes = v;
		else if (!strcmp(argv[i], "--output"))
			t.jobdir = v;
		else if (!strcmp(argv[i], "--step"))
			t.step = v;
		else if (!strcmp(argv[i], "--rank"))
			t.rank = v;
		else
			return -1;
		i++;
	}
	return -1;
}

/* rank: the task's, or (pid not 0) one of its launcher's ranks, process pid */
static int build_header(agent_t *a, char *hdr, size_t len, const char *rank, pid_t pid)
{
	char lim[256];
	gp_spool_hdr_t h = {
	    .step = a->step,
	    .rank = rank,
	    .modes = a->modes,
	    .wrapped = "agent",
	    .pid = pid,
	    .launcher_rank = pid ? a->rank : NULL, /* the task that started it */
	    .gpus = a->nvml ? gp_nvml_uuids(a->nvml) : "",
	    .nvml_limits = a->nvml && (a->modes & GP_MODE_GPU)
	                       ? gp_nvml_limits(a->nvml, lim, sizeof(lim))
	                       : "",
	    .argv = prog_argv,
	};
	return gp_spool_header(hdr, len, &h);
}

/* NVIDIA tools that inject through LD_PRELOAD rather than CUDA_INJECTION64_PATH (Nsight
 * Compute refuses to run when CUDA_INJECTION64_PATH is set: "Another tool/injection
 * might be loaded"). Returns the matching LD_PRELOAD entry, or NULL. */
static const char *preloaded_tool(void)
{
	static const char *const marks[] = {
	    "TreeLauncher", "InterceptorInjection", "ToolsInjection", "sanitizer", "Nsight", "nsys",
	    "libcupti"};
	static char hit[256];
	const char *pre = getenv("LD_PRELOAD");
	for (size_t i = 0; pre && i < sizeof(marks) / sizeof(marks[0]); i++) {
		const char *m = strstr(pre, marks[i]);
		if (!m)
			continue;
		const char *beg = m, *end = m;
		while (beg > pre && beg[-1] != ':' && beg[-1] != ' ')
			beg--;
		while (*end && *end != ':' && *end != ' ')
			end++;
		snprintf(hit, sizeof(hit), "%.*s", (int)(end - beg), beg);
		return hit;
	}
	return NULL;
}

/* NVIDIA tools around us: Nsight Compute leaves no trace in the environment of the
 * processes it follows (measured: no LD_PRELOAD, no injection variable) but refuses to
 * profile when CUDA_INJECTION64_PATH is set, so look for it as the program we run and
 * among our ancestors (comm is cut to 15 characters, hence "compute-sanitiz"). */
static const char *const nv_tools[] = {"ncu", "nsys", "compute-sanitizer", "compute-sanitiz",
                                       "nv-nsight-cu-cli"};

/* The program we run is itself one of those tools (srun --gpuprof ncu python ...). */
static const char *program_tool(void)
{
	const char *base = prog_argv && prog_argv[0] ? strrchr(prog_argv[0], '/') : NULL;
	base = base ? base + 1 : prog_argv && prog_argv[0] ? prog_argv[0] : "";
	for (size_t i = 0; i < sizeof(nv_tools) / sizeof(nv_tools[0]); i++)
		if (!strcmp(base, nv_tools[i]))
			return nv_tools[i];
	return NULL;
}

static const char *ancestor_tool(void)
{
	static char hit[64];
	pid_t p = getppid();
	for (int depth = 0; p > 1 && depth < 32; depth++) {
		char path[64], buf[512];
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)p);
		FILE *f = fopen(path, "r");
		if (!f)
			break;
		size_t n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = 0;
		/* pid (comm) state ppid ...: comm may hold spaces and parentheses */
		char *lp = strchr(buf, '('), *rp = strrchr(buf, ')');
		if (!lp || !rp || rp < lp)
			break;
		*rp = 0;
		for (size_t i = 0; i < sizeof(nv_tools) / sizeof(nv_tools[0]); i++)
			if (!strcmp(lp + 1, nv_tools[i])) {
				snprintf(hit, sizeof(hit), "%s (pid %d)", nv_tools[i], (int)p);
				return hit;
			}
		int ppid = 0;
		if (sscanf(rp + 2, "%*c %d", &ppid) != 1)
			break;
		p = (pid_t)ppid;
	}
	return NULL;
}

/* The PyTorch integration (agent/python, installed beside the injected library): its
 * sitecustomize goes first on PYTHONPATH and chains to the one it hides. An empty
 * PYTHONPATH stays without an empty entry (that would put the working directory on
 * sys.path). GPUPROF_PYTORCH=0, or no recording, leaves PYTHONPATH alone. */
static void set_python_path(agent_t *a)
{
	char dir[4200], path[4300];
	const char *d = getenv(GP_ENV_PYTHON);
	if (!a->have_ring || !gp_setting_bool(GP_ENV_PYTORCH))
		return;
	if (d && *d) {
		snprintf(dir, sizeof(dir), "%s", d);
	} else {
		snprintf(dir, sizeof(dir), "%s", a->inject);
		char *slash = strrchr(dir, '/');
		if (!slash)
			return;
		snprintf(slash, sizeof(dir) - (size_t)(slash - dir), "/python");
	}
	snprintf(path, sizeof(path), "%s/sitecustomize.py", dir);
	if (access(path, R_OK) != 0 || strchr(dir, ':'))
		return;
	const char *old = getenv("PYTHONPATH");
	size_t n = strlen(dir) + (old ? strlen(old) : 0) + 2;
	char *v = malloc(n);
	if (!v)
		return;
	if (old && *old)
		snprintf(v, n, "%s:%s", dir, old);
	else
		snprintf(v, n, "%s", dir);
	setenv("PYTHONPATH", v, 1);
	free(v);
}

/* Decide what the program's environment carries. An injection path set by someone else
 * (nsys inside the job) wins: we leave it and say so in the report; so does a tool that
 * preloads itself (ncu, compute-sanitizer). */
static void set_child_env(agent_t *a)
{
	char b[GP_MODES_MAXLEN];
	/* CUDA's injection in every mode: CUPTI for cuda and mem, step completion markers
	 * (agent/inject/marker.c) otherwise */
	bool want_cuda = true;
	const char *tool = preloaded_tool(), *how = "LD_PRELOAD";
	if (!tool && (tool = program_tool()))
		how = "the task's program";
	if (!tool) {
		tool = ancestor_tool();
		how = "it started this task";
	}
	if (tool) {
		if (a->modes & (GP_MODE_CUDA | GP_MODE_MEM))
			snprintf(a->yielded + strlen(a->yielded),
			         sizeof(a->yielded) - strlen(a->yielded), "%scuda,mem to %s (%s)",
			         a->yielded[0] ? "; " : "", tool, how);
		want_cuda = false;
	}
	struct {
		const char *var;
		bool want;
		const char *what;
	} inj[] = {
	    {"CUDA_INJECTION64_PATH", want_cuda, "cuda,mem"},
	    {"NVTX_INJECTION64_PATH", true, "nvtx"},
	};
	for (size_t i = 0; i < 2; i++) {
		const char *cur = getenv(inj[i].var);
		if (!a->have_ring || !inj[i].want || access(a->inject, R_OK) != 0) {
			if (cur && !strcmp(cur, a->inject))
				unsetenv(inj[i].var);
			continue;
		}
		if (cur && *cur && strcmp(cur, a->inject)) {
			snprintf(a->yielded + strlen(a->yielded),
			         sizeof(a->yielded) - strlen(a->yielded), "%s%s to %s",
			         a->yielded[0] ? "; " : "", inj[i].what, cur);
			continue;
		}
		setenv(inj[i].var, a->inject, 1);
	}
	if (a->have_ring) {
		setenv(GP_ENV_RING, a->ring_path, 1);
		snprintf(b, sizeof(b), "%d", (int)getpid());
		setenv(GP_ENV_AGENT_PID, b, 1);
	} else {
		unsetenv(GP_ENV_RING);
	}
	setenv(GP_ENV_WRAPPED, "agent", 1);
	setenv(GP_ENV_RANK_FILE, a->dest, 1);
	/* the task's rank: a process with another RANK is one of a launcher's (startup.c) */
	setenv(GP_ENV_RANK, a->rank, 1);
	/* the values in force, as the injected library and the PyTorch integration read
	 * them (settings.h keeps the defaults; Python has no copy of them) */
	gp_modes_format(a->modes, b, sizeof(b));
	setenv(GP_ENV_MODES, b, 1);
	setenv(GP_ENV_GROUP_READABLE, a->group_readable ? "1" : "0", 1);
	snprintf(b, sizeof(b), "%lld", gp_setting_long(GP_ENV_TORCH_HISTORY));
	setenv(GP_ENV_TORCH_HISTORY, b, 1);
	setenv(GP_ENV_TORCH_LAYERS, gp_setting_bool(GP_ENV_TORCH_LAYERS) ? "1" : "0", 1);
	set_python_path(a);
	unsetenv(GP_ENV_ARGV0);
	unsetenv(GP_ENV_FALLBACK);
}

/* Spool, ring, rank file. Failure here means: run the program unprofiled. */
static int setup(agent_t *a)
{
	char udir[4096], hdr[8192], dest_dir[4200];
	const char *why = NULL;
	int fd;
	mode_t dmode = a->group_readable ? 0750 : 0700;
	mode_t fmode = a->group_readable ? 0640 : 0600;

	if (gp_spool_jobdir(a->jobdir, sizeof(a->jobdir)) < 0)
		return gp_err_errno("job directory");
	if (gp_spool_userdir(a->spool_root, udir, sizeof(udir)) < 0)
		return gp_err_errno("spool %s", a->spool_root);
	if (gp_spool_task_dir(a->spool, sizeof(a->spool), udir, getenv("SLURM_JOB_ID"), a->step,
	                      a->rank, (int)getpid()) < 0 ||
	    gp_spool_entry_make(a->spool) < 0)
		return gp_err_errno("spool %s", a->spool);
	snprintf(a->ring_path, sizeof(a->ring_path), "%s/" GP_SPOOL_RING, a->spool);
	snprintf(a->rank_path, sizeof(a->rank_path), "%s/" GP_SPOOL_RANK, a->spool);
	if (gp_spool_step_dir(dest_dir, sizeof(dest_dir), a->jobdir, a->step,
	                      getenv("SLURM_RESTART_COUNT")) < 0)
		return gp_err_errno("job directory %s", a->jobdir);
	snprintf(a->dest, sizeof(a->dest), "%s/rank%s.gpr", dest_dir, a->rank);
	snprintf(a->dest_dir, sizeof(a->dest_dir), "%s", dest_dir);
	/* The job directory is made now, as the user, so a bad one is reported early. */
	fd = gp_mkdir_p(dest_dir, dmode);
	if (fd < 0)
		return gp_err_errno("job directory %s", dest_dir);
	close(fd);
	if (gp_spool_entry_set_dest(a->spool, a->dest) < 0)
		return gp_err_errno("%s/" GP_SPOOL_DEST, a->spool);
	if (gp_ring_create(&a->ring, a->ring_path, GP_RING_DEFAULT_SLOTS) == 0) {
		a->have_ring = true;
		atomic_store(&a->ring.hdr->modes, a->modes);
		atomic_store(&a->ring.hdr->agent_pid, (uint32_t)getpid()); /* gp_ring_wake */
	} else {
		gp_warn("no event ring in %s (%s): timing only", a->spool, strerror(errno));
	}
	if (a->modes & (GP_MODE_GPU | GP_MODE_TIMING))
		a->nvml = gp_nvml_open(&why);
	fd = gp_spool_entry_create_rank(a->spool, fmode);
	if (fd < 0)
		return gp_err_errno("%s", a->rank_path);
	build_header(a, hdr, sizeof(hdr), a->rank, 0);
	a->w = gp_rf_writer_create(fd, hdr, a->max_bytes);
	if (!a->w) {
		close(fd);
		return gp_err_errno("%s", a->rank_path);
	}
	a->live = gp_live_writer_start(a->w, dest_dir, a->step, a->rank, fmode);
	a->next_string = 0xffffff00u;
	if (a->nvml)
		gp_nvml_describe(a->nvml, a->w, &a->next_string);
	else if (why && (a->modes & GP_MODE_GPU)) {
		a->next_string = 0xfffffe00u;
		gp_rf_append_string(a->w, a->next_string, why);
		gp_event_t y = {.type = GP_EV_YIELD, .a = GP_MODE_GPU, .b = a->next_string++};
		gp_rf_append(a->w, &y);
	}
	return 0;
}

static void cleanup_spool(agent_t *a);

/* A rank file that cannot be written (a full spool): closed with what it has, and what
 * its writer still held counted as lost; the task's and a launcher's ranks' alike. */
static void close_failed(gp_rf_writer_t **w, const char *path, uint64_t *lost)
{
	gp_warn("cannot write %s: %s; records are counted as lost from now on", path,
	        strerror(errno));
	/* one more try for what is buffered; then what was never written (the failed
	 * chunks' and what is still buffered) is lost, counted once */
	gp_rf_flush(*w);
	*lost += gp_rf_pending(*w);
	gp_rf_writer_close(*w, false);
	*w = NULL;
}

static void writer_failed(agent_t *a)
{
	close_failed(&a->w, a->rank_path, &a->lost_write);
	a->write_failed = true;
}

/* Returns the records moved (the caller polls sooner when the ring is busy). When the
 * rank file cannot be written (a full spool), the writer is closed with what it has,
 * and the ring is still emptied, every record counted as lost (GP_LOSS_WRITE), so the
 * program never stalls; the end records go to the job directory instead (finish). */
static long drain(agent_t *a, bool force)
{
	long n = 0;
	if (!a->have_ring)
		return 0;
	if (!a->w) {
		if (a->write_failed)
			gp_ring_drain(&a->ring, NULL, force, NULL);
		return 0;
	}
	if ((n = gp_ring_drain(&a->ring, a->w, force, NULL)) < 0) {
		writer_failed(a);
		n = 0;
	}
	return n;
}

/* Copy the rank file into the job directory; false when it could not (it stays in the
 * spool, where `gpuprof salvage` finds it). */
/* A task whose own ring no process recorded into while its launcher's ranks recorded
 * into theirs (torchrun on the second node: ranks 8-15, task 1), or whose ring its
 * launcher took while the task's rank recorded into a ring of its own (torchrun that
 * touched CUDA before its workers), is a launcher, not a rank: its file (the launcher's
 * exit status, NVML) is published as launcherT.gpr, so it cannot take the name of a
 * worker's rankT.gpr. */
static void name_main_file(agent_t *a)
{
	bool launcher = false;
	for (unsigned i = 0; i < a->nprocs; i++) /* the task's rank has a ring of its own */
		launcher |= !a->procs[i].side && a->procs[i].rank == strtol(a->rank, NULL, 10);
	if (!a->have_ring || !a->nprocs || strstr(a->dest, "/launcher") ||
	    (!launcher && atomic_load(&a->ring.hdr->generations)))
		return;
	char old[sizeof(a->dest)];
	struct stat sb;
	snprintf(old, sizeof(old), "%s", a->dest);
	if (gp_spool_launcher_dest(old, a->dest, sizeof(a->dest)) < 0)
		return;
	gp_spool_entry_set_dest(a->spool, a->dest); /* for salvage */
	/* published under the old name at a SIGTERM: remove that copy, if still ours */
	if (a->pub_ino && lstat(old, &sb) == 0 && sb.st_ino == a->pub_ino &&
	    sb.st_dev == a->pub_dev)
		unlink(old);
	a->pub_ino = 0;
}

static bool publish(agent_t *a, bool final)
{
	struct stat sb;
	if (!a->w)
		return false;
	drain(a, final);
	/* flushed, not fsynced: the copy gp_spool_publish makes is fsynced, and the spool
	 * copy only has to outlive the agent, not the node */
	if (!a->w || gp_rf_flush(a->w) < 0)
		return false;
	name_main_file(a);
	if (gp_spool_publish(a->rank_path, a->dest, a->group_readable ? 0640 : 0600,
	                     a->group_readable ? 0750 : 0700) < 0) {
		gp_warn("cannot write %s: %s (data kept in %s)", a->dest, strerror(errno),
		        a->spool);
		return false;
	}
	if (lstat(a->dest, &sb) == 0) {
		a->pub_dev = sb.st_dev;
		a->pub_ino = sb.st_ino;
	}
	return true;
}

/* ---- live figures (live_writer.h) ---- */

/* Records lost so far by cause, as the end records will count them (gp_ring_write_losses
 * and write_end): the producers' counts in the ring (NULL: none), and the agent's own. */
static void losses_so_far(const gp_ring_t *ring, gp_rf_writer_t *w, uint64_t lost_write,
                          uint64_t n[GP_LOSS_N])
{
	memset(n, 0, GP_LOSS_N * sizeof(n[0]));
	for (unsigned c = 1; ring && c < GP_LOSS_N; c++)
		n[c] = atomic_load_explicit(&ring->hdr->lost[c], memory_order_relaxed);
	if (ring)
		n[GP_LOSS_RING] += atomic_load_explicit(&ring->hdr->drops, memory_order_relaxed);
	n[GP_LOSS_WRITE] += lost_write;
	if (w)
		n[GP_LOSS_CAP] += gp_rf_dropped(w);
}

/* The task's file is a launcher's, not a rank's, as name_main_file decides at the end:
 * its live file (no steps, and rank<T> may be a worker's name on another node) goes. */
static bool task_is_launcher(const agent_t *a)
{
	bool own = false; /* the task's rank has a ring of its own */
	for (unsigned i = 0; i < a->nprocs; i++)
		own |= !a->procs[i].side && a->procs[i].rank == strtol(a->rank, NULL, 10);
	return a->have_ring && a->nprocs && (own || !atomic_load(&a->ring.hdr->generations));
}

/* The task's live figures now: state "running", or "ended" with the program's wait
 * status. */
static void live_now(agent_t *a, const char *state)
{
	uint64_t lost[GP_LOSS_N];
	if (!a->live)
		return;
	if (task_is_launcher(a)) {
		gp_live_writer_drop(a->live, a->w);
		a->live = NULL;
		return;
	}
	losses_so_far(a->have_ring ? &a->ring : NULL, a->w, a->lost_write, lost);
	gp_live_writer_write(a->live, state, a->child, a->status, lost);
}

/* A launcher's rank's (torchrun's workers): its own live file, rank<R>.live.json. */
static void proc_live_now(proc_file_t *x, const char *state)
{
	uint64_t lost[GP_LOSS_N];
	if (!x->live)
		return;
	losses_so_far(&x->ring, x->w, x->lost_write, lost);
	gp_live_writer_write(x->live, state, x->pid, x->status < 0 ? 0 : x->status, lost);
}

/* ---- the launcher's ranks (proc_file_t) ---- */

static bool proc_known(const agent_t *a, long rank, pid_t side)
{
	for (unsigned i = 0; i < a->nprocs; i++)
		if (a->procs[i].rank == rank && a->procs[i].side == side)
			return true;
	return false;
}

/* When pid started, on CLOCK_MONOTONIC (the events' clock): /proc's start time counts
 * clock ticks since boot, which CLOCK_BOOTTIME also counts. 0 when unknown. */
static uint64_t proc_start_ns(pid_t pid)
{
	char p[64], b[1024];
	unsigned long long ticks = 0;
	struct timespec bt, mt;
	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, b, sizeof(b) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	b[n] = '\0';
	const char *q = strrchr(b, ')'); /* the name may hold spaces and parentheses */
	/* after ") ": state is field 3, starttime field 22 */
	for (int f = 2; q && f < 22; f++)
		q = strchr(q + 1, ' ');
	if (!q || sscanf(q + 1, "%llu", &ticks) != 1 || ticks == 0)
		return 0;
	long hz = sysconf(_SC_CLK_TCK);
	if (hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &bt) || clock_gettime(CLOCK_MONOTONIC, &mt))
		return 0;
	uint64_t start_boot = ticks * (1000000000ull / (uint64_t)hz);
	/* time suspended; read one after the other, so a few ns either way of 0 */
	int64_t off = (int64_t)(bt.tv_sec - mt.tv_sec) * 1000000000ll + (bt.tv_nsec - mt.tv_nsec);
	if (off < 0)
		off = 0;
	return start_boot > (uint64_t)off ? start_boot - (uint64_t)off : 0;
}

/* Attach SPOOL/rankR[.pidP]/ring and start its rank file; -1 when the ring is not
 * complete yet (looked at again on the next change). */
static int proc_open(agent_t *a, long rank, pid_t side)
{
	char hdr[8192], rs[24], tail[48];
	proc_file_t *x;
	if (a->nprocs == MAX_PROCS)
		return 0;
	if (!a->procs && !(a->procs = calloc(MAX_PROCS, sizeof(*a->procs))))
		return 0;
	x = &a->procs[a->nprocs];
	memset(x, 0, sizeof(*x));
	x->rank = rank;
	x->side = side;
	x->status = -1;
	if (side)
		snprintf(tail, sizeof(tail), "rank%ld.pid%d", rank, (int)side);
	else
		snprintf(tail, sizeof(tail), "rank%ld", rank);
	snprintf(x->dir, sizeof(x->dir), "%s/%s", a->spool, tail);
	snprintf(x->path, sizeof(x->path), "%s/ring", x->dir);
	if (gp_ring_attach(&x->ring, x->path) < 0)
		return -1;
	x->pid = (pid_t)atomic_load(&x->ring.hdr->recorder_pid);
	x->t0 = gp_now_ns();
	a->nprocs++;
	snprintf(x->dest, sizeof(x->dest), "%s/%s.gpr", a->dest_dir, tail);
	snprintf(x->path, sizeof(x->path), "%s/" GP_SPOOL_RANK, x->dir);
	snprintf(rs, sizeof(rs), "%ld", rank);
	build_header(a, hdr, sizeof(hdr), rs, x->pid);
	int fd = gp_spool_entry_create_rank(x->dir, a->group_readable ? 0640 : 0600);
	if (fd < 0 || gp_spool_entry_set_dest(x->dir, x->dest) < 0 ||
	    !(x->w = gp_rf_writer_create(fd, hdr, a->max_bytes))) {
		gp_warn("rank %ld (pid %d): cannot write %s: %s; its records wait in its ring "
		        "for its end (what the ring cannot hold is counted as lost)",
		        rank, (int)x->pid, x->path, strerror(errno));
		if (fd >= 0 && !x->w)
			close(fd);
		x->no_file = true;
	}
	if (x->w && !side) /* a launcher's rank: its live figures */
		x->live = gp_live_writer_start(x->w, a->dest_dir, a->step, rs,
		                               a->group_readable ? 0640 : 0600);
	/* its first step runs from its start, as the task's from the exec */
	uint64_t born = proc_start_ns(x->pid);
	if (!born || born > x->ring.hdr->created_ns)
		born = x->ring.hdr->created_ns < x->t0 ? x->ring.hdr->created_ns : x->t0;
	x->t0 = born; /* its wall time, in its end record, from there */
	gp_event_t st = {.type = GP_EV_START, .ts = born, .a = (uint64_t)x->pid};
	if (x->w)
		gp_rf_append(x->w, &st);
	return 0;
}

/* The library bumps hdr->procs once a rank's ring is complete: only then is the spool
 * listed. */
static void find_procs(agent_t *a)
{
	uint32_t n;
	bool all = true;
	struct dirent *de;
	if (!a->have_ring || (n = atomic_load(&a->ring.hdr->procs)) == a->procs_seen)
		return;
	DIR *d = opendir(a->spool);
	if (!d)
		return;
	while ((de = readdir(d))) {
		char *end;
		long side = 0;
		if (strncmp(de->d_name, "rank", 4) || !isdigit((unsigned char)de->d_name[4]))
			continue;
		long r = strtol(de->d_name + 4, &end, 10);
		if (!strncmp(end, ".pid", 4) && isdigit((unsigned char)end[4]))
			side = strtol(end + 4, &end, 10);
		if (*end || side < 0 || side > INT32_MAX || proc_known(a, r, (pid_t)side))
			continue;
		if (proc_open(a, r, (pid_t)side) < 0)
			all = false;
	}
	closedir(d);
	if (all)
		a->procs_seen = n;
}

static void proc_drain(proc_file_t *x, bool force)
{
	if (x->done || (x->no_file && !x->w && !force))
		return;
	if (x->w && gp_ring_drain(&x->ring, x->w, force, NULL) < 0)
		close_failed(&x->w, x->path, &x->lost_write);
	if (!x->w)
		gp_ring_drain(&x->ring, NULL, force, NULL);
}

static bool proc_publish(agent_t *a, proc_file_t *x)
{
	if (!x->w || gp_rf_flush(x->w) < 0) /* as publish() */
		return false;
	if (gp_spool_publish(x->path, x->dest, a->group_readable ? 0640 : 0600,
	                     a->group_readable ? 0750 : 0700) < 0) {
		gp_warn("cannot write %s: %s (data kept in %s)", x->dest, strerror(errno), x->dir);
		return false;
	}
	return true;
}

/* The process has gone (or the task has ended): what is left on its ring, the losses,
 * an end record, and the file into the job directory. Its exit status is its parent's
 * (the launcher's) to know: the library's own end record carries what exit() was given;
 * this one carries the status when the agent saw the zombie before the launcher reaped
 * it, else only that the process ended (u8 = 1). */
/* The process's file could not be written in the spool (full, or no descriptor left when
 * it began): its copy in the job directory, to finish there, as the task's own
 * (finish_after_write_failure): what fit in the spool published first, else a file of
 * its header alone. Its whole file was never published, and its losses never said. The
 * writer, or NULL (said). */
static gp_rf_writer_t *proc_writer_in_jobdir(agent_t *a, proc_file_t *x)
{
	char err[512], hdr[8192], rs[24];
	struct stat st;
	mode_t fmode = a->group_readable ? 0640 : 0600, dmode = a->group_readable ? 0750 : 0700;
	if (lstat(x->path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
		if (gp_spool_publish(x->path, x->dest, fmode, dmode) < 0) {
			gp_warn("cannot write %s: %s (data kept in %s)", x->dest, strerror(errno),
			        x->dir);
			return NULL;
		}
		gp_rf_writer_t *w = gp_rf_reopen(x->dest, err, sizeof(err));
		if (!w)
			gp_warn("%s", err);
		return w;
	}
	const char *name = strrchr(x->dest, '/') + 1;
	int dfd = gp_mkdir_p(a->dest_dir, dmode), fd = -1;
	if (dfd >= 0)
		fd = gp_open_at(dfd, name, O_CREAT | O_TRUNC, fmode);
	int e = errno;
	if (dfd >= 0)
		close(dfd);
	snprintf(rs, sizeof(rs), "%ld", x->rank);
	build_header(a, hdr, sizeof(hdr), rs, x->pid);
	gp_rf_writer_t *w = fd >= 0 ? gp_rf_writer_create(fd, hdr, a->max_bytes) : NULL;
	if (!w) {
		gp_warn("cannot write %s: %s", x->dest, strerror(fd >= 0 ? errno : e));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	gp_event_t start = {.type = GP_EV_START, .ts = x->t0, .a = (uint64_t)x->pid};
	gp_rf_append(w, &start); /* as proc_open's */
	return w;
}

static void proc_finish(agent_t *a, proc_file_t *x)
{
	if (x->done)
		return;
	bool in_jobdir = !x->w && (x->w = proc_writer_in_jobdir(a, x));
	proc_drain(x, true);
	if (x->w) {
		uint64_t extra[GP_LOSS_N] = {0};
		extra[GP_LOSS_WRITE] = x->lost_write;
		gp_ring_write_losses(&x->ring, x->w, extra);
		uint64_t now = gp_now_ns();
		/* u8 1: ended, status unknown; a zombie's status (a signal death included) is
		 * known, and the last end record is the one the report keeps */
		gp_event_t e = {.type = GP_EV_END,
		                .u8 = x->status < 0,
		                .a = x->status < 0 ? 0 : (uint64_t)x->status,
		                .ts = now,
		                .d = now - x->t0};
		gp_rf_append(x->w, &e);
	}
	proc_live_now(x, "ended");
	gp_live_writer_free(x->live, x->w);
	x->live = NULL;
	bool published;
	if (in_jobdir) {
		published = x->w && gp_rf_writer_close(x->w, true) == 0;
		if (!published)
			gp_warn("cannot write %s: %s", x->dest, strerror(errno));
	} else {
		published = proc_publish(a, x);
		if (x->w)
			gp_rf_writer_close(x->w, false);
	}
	x->published = published;
	x->w = NULL;
	gp_ring_detach(&x->ring);
	if (published)
		gp_spool_entry_remove(x->dir);
	x->done = true;
	a->procs_done++;
}

/* Has the process ended (gone, or a zombie its launcher has not reaped yet)? For a
 * zombie, *status is its wait status (/proc's exit_code, field 52), else -1. */
static bool proc_ended(pid_t pid, int *status)
{
	char p[64], b[1024];
	*status = -1;
	if (kill(pid, 0) < 0 && errno == ESRCH)
		return true;
	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, b, sizeof(b) - 1);
	close(fd);
	if (n <= 0)
		return false;
	b[n] = '\0';
	const char *q = strrchr(b, ')'); /* the name may hold spaces and parentheses */
	if (!q || q[1] != ' ' || q[2] != 'Z')
		return false;
	for (int f = 2; q && f < 52; f++) /* after ") ": field 3 ... field 52 */
		q = strchr(q + 1, ' ');
	int v;
	if (q && sscanf(q + 1, "%d", &v) == 1)
		*status = v;
	return true;
}

/* Between looks at quiet rings: ask their producers to wake us (gp_ring_wake), or, with
 * sleepy false (a busy turn), tell them we are awake so they do not signal in vain.
 * Returns whether a long sleep is safe: every ring can wake us. */
static bool arm_one(gp_ring_hdr_t *h, bool sleepy)
{
	atomic_store(&h->agent_idle, sleepy);
	return !atomic_load(&h->wake_off);
}

static bool arm_wake(agent_t *a, bool sleepy)
{
	if (!a->have_ring)
		return false;
	bool ok = arm_one(a->ring.hdr, sleepy);
	for (unsigned i = 0; i < a->nprocs; i++)
		if (!a->procs[i].done)
			ok &= arm_one(a->procs[i].ring.hdr, sleepy);
	return sleepy && ok;
}

/* One turn of the loop for every rank: new rings, records, the file, the ended. */
static void procs_tick(agent_t *a, bool flush)
{
	find_procs(a);
	/* whether they have ended: every 100 ms, not on every 5 ms turn of a busy ring */
	uint64_t now = gp_now_ns();
	bool look = now >= a->procs_look;
	if (look)
		a->procs_look = now + 100000000ull;
	for (unsigned i = 0; i < a->nprocs; i++) {
		proc_file_t *x = &a->procs[i];
		if (x->done)
			continue;
		int st;
		if (look && proc_ended(x->pid, &st)) {
			x->status = st;
			proc_finish(a, x);
			continue;
		}
		proc_drain(x, false);
		if (flush && x->w && gp_ring_commit(&x->ring, x->w) < 0)
			close_failed(&x->w, x->path, &x->lost_write);
		if (now >= gp_live_writer_due(x->live))
			proc_live_now(x, "running");
	}
}

/* The losses by cause and the END record (exit status, resources) into w. */
static void end_records(agent_t *a, gp_rf_writer_t *w, int status, const struct rusage *ru)
{
	gp_event_t e = {.type = GP_EV_END, .ts = gp_now_ns(), .a = (uint64_t)status};
	uint64_t extra[GP_LOSS_N] = {0};
	extra[GP_LOSS_WRITE] = a->lost_write;
	extra[GP_LOSS_NO_RING] = !a->have_ring;
	gp_ring_write_losses(a->have_ring ? &a->ring : NULL, w, extra);
	e.b = (uint64_t)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1000000ull +
	      (uint64_t)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec);
	e.c = (uint64_t)ru->ru_maxrss;
	e.d = gp_now_ns() - a->t_start;
	gp_rf_append(w, &e);
}

static void write_end(agent_t *a, int status, const struct rusage *ru)
{
	drain(a, true);
	if (a->w)
		end_records(a, a->w, status, ru);
}

/* The spool's rank file could not be written: publish what it holds and add the losses
 * and the exit status to the copy in the job directory, so the outcome is not lost. */
static void finish_after_write_failure(agent_t *a, int status, const struct rusage *ru)
{
	char err[512];
	if (gp_spool_publish(a->rank_path, a->dest, a->group_readable ? 0640 : 0600,
	                     a->group_readable ? 0750 : 0700) < 0) {
		gp_warn("cannot write %s: %s (what was captured stays in %s)", a->dest,
		        strerror(errno), a->spool);
		return;
	}
	gp_rf_writer_t *w = gp_rf_reopen(a->dest, err, sizeof(err));
	if (!w) {
		gp_warn("%s", err);
		return;
	}
	end_records(a, w, status, ru);
	if (gp_rf_writer_close(w, true) < 0)
		gp_warn("cannot write %s: %s", a->dest, strerror(errno));
	else
		cleanup_spool(a);
}

static void cleanup_spool(agent_t *a)
{
	if (a->have_ring)
		gp_ring_detach(&a->ring);
	if (a->spool[0])
		gp_spool_entry_remove(a->spool);
}

/* Each published rank file's summary (report/summary.c), so the job report reads a small
 * file per rank instead of every event (only for a rank file of GPUPROF_SUMMARY_MIN_BYTES
 * or more: a smaller one is read as fast, and its summary would be the larger). Made by the
 * report's own code linked into the agent (gp_rank_summarize), in a forked child: no exec of the
 * CLI and its libraries, which was ~4 ms of every task's CPU (~12 ms with 64 tasks on 2 cores), and
 * a fault in the analysis ends that child, never the agent. The child runs as the user, in a
 * session of its own, with nothing of the agent's open. The agent waits for it up to
 * SUMMARY_WAIT_MS: once the last task of a step has exited, Slurm kills whatever is
 * left in the step's cgroup, a summariser the agent did not wait for included (0.12 s
 * for a rank of 100 000 kernels; well under 1 ms for a small one). Past the wait it goes
 * on detached; a summary never written is made by the report from the rank file. */
#define SUMMARY_WAIT_MS 2000
static bool has_side(const agent_t *a, long rank)
{
	for (unsigned i = 0; i < a->nprocs; i++)
		if (a->procs[i].side && a->procs[i].rank == rank)
			return true;
	return false;
}

static void summarize(agent_t *a, bool task_published, int sfd)
{
	const char *files[MAX_PROCS + 1];
	unsigned n = 0;
	if (!gp_setting_bool(GP_ENV_REPORT_SUMMARIES))
		return;
	/* a launcher's file is no rank; a small rank file is worth no summary; a rank with
	 * other processes beside it is analysed with them by the report (analyze.c) */
	long task = strtol(a->rank, NULL, 10);
	if (task_published && !strstr(a->dest, "/launcher") && !has_side(a, task) &&
	    gp_summary_wanted(a->dest))
		files[n++] = a->dest;
	for (unsigned i = 0; i < a->nprocs && n < MAX_PROCS + 1; i++)
		if (a->procs[i].published && !a->procs[i].side && !has_side(a, a->procs[i].rank) &&
		    gp_summary_wanted(a->procs[i].dest))
			files[n++] = a->procs[i].dest;
	if (n == 0)
		return;
	pid_t pid = fork();
	if (pid < 0)
		return;
	if (pid > 0) { /* its SIGCHLD comes through the signalfd (main) */
		uint64_t t0 = gp_now_ns();
		for (;;) {
			pid_t w = waitpid(pid, NULL, WNOHANG);
			if (w == pid || (w < 0 && errno != EINTR))
				return;
			int64_t left = SUMMARY_WAIT_MS - (int64_t)((gp_now_ns() - t0) / 1000000);
			if (left <= 0)
				return; /* detached from here: the agent exits as the program did */
			struct pollfd pfd = {.fd = sfd, .events = POLLIN};
			if (sfd < 0 || poll(&pfd, 1, (int)left) < 0) {
				struct timespec nap = {0, 1000 * 1000};
				nanosleep(&nap, NULL);
			}
			struct signalfd_siginfo si; /* a signal now is for a program that is gone */
			while (sfd >= 0 && read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
				;
		}
	}
	/* the agent installs no handlers (its signals come through a signalfd): unblocking
	 * them is the whole reset */
	gp_child_reset(GP_CHILD_SESSION | GP_CHILD_SIGMASK | GP_CHILD_STDIO, -1);
	prctl(PR_SET_NAME, "gpuprof-summary", 0, 0, 0);
	for (unsigned i = 0; i < n; i++) {
		char err[512];
		gp_rank_summarize(files[i], err, sizeof(err));
	}
	_exit(0);
}

/* Exit exactly as the program did: same code, or death by the same signal. */
static void __attribute__((noreturn)) mirror_exit(int status)
{
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		struct sigaction sa = {.sa_handler = SIG_DFL};
		sigset_t set;
		/* never dump a core of our own: the program's (when it dumped one) would be
		 * replaced by the agent's in the same place. The cost: our status lacks the
		 * "core dumped" bit the program's had. */
		struct rlimit rl = {0, 0};
		setrlimit(RLIMIT_CORE, &rl);
		sigaction(sig, &sa, NULL);
		sigemptyset(&set);
		sigaddset(&set, sig);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		raise(sig);
		_exit(128 + sig);
	}
	_exit(WEXITSTATUS(status));
}

/* Did this signal reach the program without us? Then forwarding it would deliver it
 * twice (a trainer that checkpoints on the first SIGTERM and exits at once on the second
 * would lose its checkpoint). Two senders are known to signal every process:
 *   the kernel for the terminal (Ctrl-C, Ctrl-\\, SIGWINCH, hang-up): the foreground
 *   process group, which the program shares with us;
 *   slurmstepd, our parent under Slurm or above it: scancel, time limits and srun
 *   --signal go to every process of the step (proctrack cgroup, pgid and linuxproc
 *   alike; under Slurm the program stays in our process group).
 * The program itself, or a process it started, signals our process group (a script's
 * `kill 0`, a launcher stopping its workers): the program is in that group, and a
 * signal it meant for us alone would only come back to it.
 * Anyone else (kill of our pid, a launcher's terminate()) may have meant us alone. */
static bool from_program(const agent_t *a, pid_t sender)
{
	return gp_proc_descends_from(sender, a->child);
}

static bool reached_program(const agent_t *a, const struct signalfd_siginfo *si)
{
	if (si->ssi_code == SI_KERNEL && getpgid(a->child) == getpgrp())
		return true;
	if (si->ssi_code == SI_USER && getpgid(a->child) == getpgrp() &&
	    from_program(a, (pid_t)si->ssi_pid))
		return true;
	/* slurmstepd: our parent (the plugin's task), or above it (a batch script's or an
	 * srun's gpuprof run, which keeps us in its process group under Slurm); in a
	 * container's PID namespace (pyxis, enroot) it is not seen, and its signals come from
	 * pid 0, the sender outside the namespace */
	if (si->ssi_code != SI_USER)
		return false;
	return (a->stepd && (pid_t)si->ssi_pid == a->stepd) || (!si->ssi_pid && a->in_step);
}

static void __attribute__((noreturn)) exec_program(char **argv)
{
	execvp(argv[0], argv);
	int e = errno;
	fprintf(stderr, "gpuprof-agent: execve(): %s: %s\n", argv[0], strerror(e));
	/* slurmstepd exits with errno when execve fails; do the same */
	_exit(e ? e : 1);
}

/* ---- the driver: setup, spawn, loop, finish ---- */

/* The program's command line and the agent's options. 22.05's rewrite ran us in place of
 * the program: argv[1..] are the program's own arguments and must not be parsed. -1: a
 * usage error. */
static int read_args(agent_t *a, int argc, char **argv)
{
	const char *argv0 = getenv(GP_ENV_ARGV0);
	if (argv0 && *argv0) {
		argv[0] = strdup(argv0);
		prog_argv = argv;
	} else {
		int i = parse_args(a, argc, argv);
		if (i < 0)
			return -1;
		prog_argv = argv + i;
	}
	unsetenv(GP_ENV_ARGV0);
	return 0;
}

/* The modes and settings in force. Modes that profile nothing (none, help, or a value
 * that does not parse) run the program unprofiled. */
static void read_settings(agent_t *a)
{
	char err[256];
	if (gp_modes_parse(env_or(GP_ENV_MODES, gp_setting_env(GP_ENV_MODES)->def), &a->modes, err,
	                   sizeof(err)) < 0 ||
	    (a->modes & (GP_MODE_NONE | GP_MODE_HELP))) {
		if (!(a->modes & GP_MODE_NONE))
			gp_warn("%s: %s; not profiling", GP_ENV_MODES, err);
		exec_program(prog_argv);
	}
	a->step = env_or(GP_ENV_STEP, env_or("SLURM_STEP_ID", "0"));
	a->rank = env_or(GP_ENV_RANK, env_or("SLURM_PROCID", "0"));
	a->inject = gp_setting_str(GP_ENV_INJECT);
	static char spool_root[4096]; /* without the plugin's: the same fallback (spool.h) */
	a->spool_root = env_or(GP_ENV_SPOOL, gp_spool_root(spool_root, sizeof(spool_root), NULL,
	                                                   getenv("TMPDIR"), NULL, 0));
	a->max_bytes = (uint64_t)gp_setting_long(GP_ENV_MAXBYTES);
	a->nvml_hz = (long)gp_setting_long(GP_ENV_NVML_HZ);
	a->group_readable = gp_setting_bool(GP_ENV_GROUP_READABLE);
}

/* What set_child_env yielded to another tool, decided after the header was written: a
 * record. */
static void record_yielded(agent_t *a)
{
	if (!a->yielded[0] || !a->w)
		return;
	uint32_t id = a->next_string++;
	gp_rf_append_string(a->w, id, a->yielded);
	gp_event_t y = {
	    .type = GP_EV_YIELD, .ts = gp_now_ns(), .a = GP_MODE_CUDA | GP_MODE_MEM, .b = id};
	gp_rf_append(a->w, &y);
}

/* Spool, ring, rank file and the program's environment. A setup that fails runs the
 * program unprofiled, unless the site requires profiling: -1, the task is not started. */
static int start(agent_t *a)
{
	if (setup(a) < 0) {
		if (gp_setting_bool(GP_ENV_REQUIRED)) {
			gp_err("profiling is required by site policy; not starting the task");
			return -1;
		}
		gp_warn("running %s unprofiled", prog_argv[0]);
		cleanup_spool(a);
		exec_program(prog_argv);
	}
	set_child_env(a);
	record_yielded(a);
	return 0;
}

/* Start the program with the forwarded signals and SIGCHLD blocked in the agent, read
 * from a signalfd (a->sfd). A fork that fails runs the program unprofiled in our place. */
static void spawn(agent_t *a)
{
	sigset_t fwd, old;
	sigemptyset(&fwd);
	for (size_t i = 0; i < NFWD; i++)
		sigaddset(&fwd, fwd_signals[i]);
	sigaddset(&fwd, SIGCHLD);
	sigprocmask(SIG_BLOCK, &fwd, &old);
	a->sfd = signalfd(-1, &fwd, SFD_CLOEXEC | SFD_NONBLOCK);

	a->t_start = gp_now_ns();
	a->stepd = gp_proc_slurmstepd_above();
	a->in_step = getenv("SLURM_JOB_ID") && *getenv("SLURM_JOB_ID");
	pid_t agent_pid = getpid();
	volatile int exec_errno = 0;
	/* vfork: the agent's page tables are not copied nor its pages made copy-on-write
	 * for a child that only execs (64 agents of /bin/true at once on 2 vCPUs: 1.63 ->
	 * 1.43 s of CPU, 8 interleaved rounds). The child makes system calls only until its
	 * exec; a failed exec's errno it leaves in exec_errno, for the agent to report. */
	a->child = vfork();
	if (a->child < 0) {
		gp_warn("fork: %s; running unprofiled", strerror(errno));
		sigprocmask(SIG_SETMASK, &old, NULL);
		cleanup_spool(a);
		exec_program(prog_argv);
	}
	if (a->child == 0) {
		/* the program does not outlive a killed agent (kill -9, timeout -s KILL): it
		 * would be orphaned with nobody to record or report its status */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != agent_pid)
			_exit(128 + SIGKILL);
		sigprocmask(SIG_SETMASK, &old, NULL);
		execvp(prog_argv[0], prog_argv);
		exec_errno = errno ? errno : 1; /* the agent's memory: it says so (below) */
		_exit(exec_errno);
	}
	if (exec_errno) /* as exec_program would have */
		fprintf(stderr, "gpuprof-agent: execve(): %s: %s\n", prog_argv[0],
		        strerror(exec_errno));
	gp_event_t st = {.type = GP_EV_START, .ts = a->t_start, .a = (uint64_t)a->child};
	gp_rf_append(a->w, &st);
}

/* The signals read from the signalfd: forwarded to the program unless they reached it
 * without us, each recorded. Time limit / scancel: TERM comes first, KILL KillWait
 * later, so what we have goes to the job directory now. */
static void on_signals(agent_t *a, uint64_t now)
{
	struct signalfd_siginfo si;
	while (read(a->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if ((int)si.ssi_signo == SIGCHLD)
			continue;
		bool direct = reached_program(a, &si);
		if (!direct)
			kill(a->child, (int)si.ssi_signo);
		if (a->w) {
			/* b: 1 when it reached the program directly (not forwarded) */
			gp_event_t s = {
			    .type = GP_EV_SIGNAL, .ts = now, .a = si.ssi_signo, .b = direct};
			gp_rf_append(a->w, &s);
		}
		if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
			for (unsigned i = 0; i < a->nprocs; i++) {
				proc_drain(&a->procs[i], false);
				if (!a->procs[i].done) {
					proc_publish(a, &a->procs[i]);
					proc_live_now(&a->procs[i], "running");
				}
			}
			publish(a, false);
			live_now(a, "running"); /* a time limit's KILL may follow */
		}
	}
}

/* When the loop looks next. A ring more than 1/16 full since the last look: in 5 ms, so
 * bursts of NVTX or CUPTI records are not dropped. Quiet rings: at the next flush (0.5
 * s), woken sooner by a producer once a sixteenth of a ring has filled (gp_ring_wake);
 * every 100 ms when a producer cannot wake us. 64 agents looking every 100 ms took ~0.4 s
 * of CPU in 10 s (bench/results/performance-history.md, session 11). The next NVML
 * sample may be due sooner. */
static int next_wait_ms(agent_t *a, bool busy, uint64_t next_flush, uint64_t next_sample)
{
	int wait_ms;
	if (busy) {
		wait_ms = 5;
		arm_wake(a, false);
	} else if (!arm_wake(a, true)) {
		wait_ms = 100;
	} else { /* up to the next flush, so records reach the file within ~0.5 s */
		uint64_t t = gp_now_ns();
		wait_ms = next_flush > t ? (int)((next_flush - t) / 1000000) + 1 : 1;
	}
	if (a->nvml && a->w) {
		uint64_t t = gp_now_ns();
		long due = next_sample > t ? (long)((next_sample - t) / 1000000) + 1 : 1;
		wait_ms = due < wait_ms ? (int)due : wait_ms;
	}
	return wait_ms;
}

/* Until the program exits (its status and resources into a): signals, the rings into
 * the rank files, NVML samples, and every 0.5 s what was drained made durable. */
static void watch(agent_t *a)
{
	uint64_t period = 1000000000ull / (uint64_t)a->nvml_hz, next_sample = a->t_start;
	uint64_t next_flush = a->t_start + 500000000ull;
	bool sample_all = a->modes & GP_MODE_GPU;
	int wait_ms = 100;
	for (;;) {
		struct pollfd pfd = {.fd = a->sfd, .events = POLLIN};
		int r = poll(&pfd, 1, wait_ms);
		uint64_t now = gp_now_ns();
		if (r > 0)
			on_signals(a, now);
		if (wait4(a->child, &a->status, WNOHANG, &a->ru) == a->child)
			return;
		long moved = drain(a, false);
		procs_tick(a, now >= next_flush);
		bool busy = a->have_ring && moved > (long)(a->ring.mask + 1) / 16;
		if (a->nvml && a->w && now >= next_sample) {
			gp_nvml_sample(a->nvml, a->w, false);
			/* timing mode keeps a light 1 Hz memory/utilisation trace */
			next_sample = now + (sample_all ? period : 1000000000ull);
		}
		if (now >= gp_live_writer_due(a->live))
			live_now(a, "running");
		if (now >= next_flush) {
			/* in the file (survives our death), and only then off the ring */
			if (a->w && (a->have_ring ? gp_ring_commit(&a->ring, a->w) < 0
			                          : gp_rf_flush(a->w) < 0))
				writer_failed(a);
			next_flush = now + 500000000ull;
		}
		wait_ms = next_wait_ms(a, busy, next_flush, next_sample);
	}
}

/* The program has exited: the launcher's ranks (ended with it, or orphans we stop
 * recording), the end records, the files into the job directory, the summaries, and
 * the agent's exit as the program's. */
static void __attribute__((noreturn)) finish(agent_t *a)
{
	/* twice: a ring that could not be attached while every descriptor was taken (ulimit
	 * -n) is attached once the others' files are closed; left, it leaked in the spool */
	for (int pass = 0; pass < 2; pass++) {
		a->procs_seen = UINT32_MAX;
		find_procs(a);
		for (unsigned i = 0; i < a->nprocs; i++)
			proc_finish(a, &a->procs[i]);
	}
	if (a->nvml && a->w)
		gp_nvml_sample(a->nvml, a->w, true); /* Xid/ECC up to the program's end */
	write_end(a, a->status, &a->ru);
	if (a->write_failed && !a->w) {
		live_now(a, "ended");
		gp_live_writer_free(a->live, NULL);
		finish_after_write_failure(a, a->status, &a->ru);
		gp_nvml_close(a->nvml);
		mirror_exit(a->status);
	}
	bool published = publish(a, true);
	live_now(a, "ended"); /* after the last drain: every record seen */
	gp_live_writer_free(a->live, a->w);
	a->live = NULL;
	if (a->w) {
		gp_rf_writer_close(a->w, false);
		a->w = NULL;
		if (published) /* else the spool keeps the only copy */
			cleanup_spool(a);
	}
	gp_nvml_close(a->nvml);
	summarize(a, published, a->sfd);
	mirror_exit(a->status);
}

int main(int argc, char **argv)
{
	agent_t a;
	memset(&a, 0, sizeof(a));
	gp_log_site_mode(); /* a job the site profiles unasked: nothing on its stderr */
	if (read_args(&a, argc, argv) < 0) {
		usage();
		return 2;
	}
	read_settings(&a); /* modes that profile nothing: the program in our place */
	if (start(&a) < 0)
		return 1; /* profiling required by the site and not possible */
	spawn(&a);
	watch(&a);
	finish(&a);
}
