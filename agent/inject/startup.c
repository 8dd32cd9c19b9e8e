/* The injected library's start-up (inject_int.h): its state, and the ring it records
 * into. With an agent (GPUPROF_RING) one process of the task records into the task's
 * ring; a launcher's ranks and other processes that use CUDA or NVTX get rings of their
 * own beside it, which the same agent drains. Without one (the plugin's environment-only
 * fallback) it creates its own ring and drains it from a background thread into a rank
 * file. A forked child stays silent until it records on its own. */
#include "config.h"
#include "inject_int.h"
#include "clock.h"
#include "env.h"
#include "log.h"
#include "modes.h"
#include "path.h"
#include "rankfile.h"
#include "settings.h"
#include "spool.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void child_after_fork(void)
{
	/* A DataLoader worker or a subprocess: the parent's ring and buffers are not its to
	 * write; it stays silent (its own exec would inject again, cleanly). A child that
	 * goes on to use CUDA itself (a training process started with fork before its parent
	 * touched CUDA) gets a ring of its own at its cuInit (gp_inj_child_attach). */
	atomic_store_explicit(&gp_inj.enabled, 0, memory_order_relaxed);
	gp_inj.forked = true;
	gp_inj_thr_fork_child();
}

static void *drain_thread(void *arg)
{
	while (!atomic_load(&gp_inj.stop)) {
		struct timespec ts = {0, 200 * 1000 * 1000};
		nanosleep(&ts, NULL);
		if (gp_inj.w)
			gp_ring_drain(&gp_inj.ring, gp_inj.w, false, NULL);
	}
	return NULL;
}

/* The clock found the TSC wrong and went back to clock_gettime (common/clock.h): the
 * report says which times may be off, and by how much. */
static _Atomic bool clock_record_lost; /* the ring was full at the drop */

static void clock_dropped(int64_t err_ns, uint64_t at_ns, uint64_t span_ns)
{
	/* only the recording process writes (not a forked child, not one whose set-up
	 * failed and left no ring) */
	if (!gp_inj_on() || getpid() != gp_inj.owner || !gp_inj.ring.hdr)
		return;
	gp_event_t e = {.type = GP_EV_CLOCK, .ts = at_ns, .a = (uint64_t)err_ns, .b = span_ns};
	if (!gp_ring_push(&gp_inj.ring, &e))
		atomic_store(&clock_record_lost, true);
}

/* At the process's exit: a clock record the full ring dropped goes in again (with none
 * the report would say the TSC held) */
static void clock_record_again(void)
{
	int64_t err = atomic_load(&gp_clock.drop_err);
	if (err && atomic_exchange(&clock_record_lost, false))
		clock_dropped(err, atomic_load(&gp_clock.drop_at),
		              atomic_load(&gp_clock.drop_span));
}

static void fallback_finish(int exit_code, void *arg)
{
	(void)arg;
	if (!gp_inj.own_ring || getpid() != gp_inj.owner || !gp_inj.w)
		return;
	if (gp_inj.cupti_flush)
		gp_inj.cupti_flush();
	clock_record_again();
	atomic_store(&gp_inj.stop, 1);
	pthread_join(gp_inj.drainer, NULL);
	gp_ring_drain(&gp_inj.ring, gp_inj.w, true, NULL);
	gp_ring_write_losses(&gp_inj.ring, gp_inj.w, NULL);
	/* the status exit() was given (W_EXITCODE form, as the agent's wait status) */
	gp_event_t e = {
	    .type = GP_EV_END, .ts = gp_clock_ns(), .a = (uint64_t)(exit_code & 0xff) << 8};
	gp_rf_append(gp_inj.w, &e);
	gp_rf_fsync(gp_inj.w);
	char src[4300];
	snprintf(src, sizeof(src), "%s/" GP_SPOOL_RANK, gp_inj.spool);
	if (gp_spool_publish(src, gp_inj.dest, 0600, 0700) == 0) {
		gp_rf_writer_close(gp_inj.w, false);
		gp_inj.w = NULL;
		gp_spool_entry_remove(gp_inj.spool);
	}
}

/* The process's own rank when a launcher started it as one of several ranks of this
 * task (torchrun, and launchers like it, set RANK): -1 otherwise. */
static long process_rank(void)
{
	const char *r = getenv("RANK");
	char *end;
	if (!r || !*r)
		return -1;
	errno = 0;
	long v = strtol(r, &end, 10);
	return errno || *end || v < 0 || v > 16777215 ? -1 : v;
}

static long launcher_rank(void)
{
	const char *t = getenv(GP_ENV_RANK);
	char *end;
	long v = process_rank();
	if (v >= 0 && t && *t && strtol(t, &end, 10) == v && !*end)
		return -1; /* the task's own rank: the task's ring */
	return v;
}

/* No agent: own spool, ring and rank file, drained by a thread. */
static int fallback_setup(void)
{
	char udir[4096], hdr[8192], path[4300], jobdir[4096];
	const char *root = getenv(GP_ENV_SPOOL);
	const char *job = getenv("SLURM_JOB_ID");
	const char *step = getenv(GP_ENV_STEP);
	const char *rank = getenv(GP_ENV_RANK);
	if (!root)
		root = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	if (!rank)
		rank = getenv("SLURM_PROCID") ? getenv("SLURM_PROCID") : "0";
	char lrb[24];
	if (launcher_rank() >= 0) { /* one of a launcher's ranks: its own file */
		snprintf(lrb, sizeof(lrb), "%ld", launcher_rank());
		rank = lrb;
	}
	if (!step)
		step = getenv("SLURM_STEP_ID") ? getenv("SLURM_STEP_ID") : "0";
	if (gp_spool_userdir(root, udir, sizeof(udir)) < 0)
		return -1;
	char sdir[4100];
	if (gp_spool_task_dir(gp_inj.spool, sizeof(gp_inj.spool), udir, job, step, rank,
	                      (int)getpid()) < 0 ||
	    gp_spool_entry_make(gp_inj.spool) < 0)
		return -1;
	/* the agent's names: a requeued job's attempt its own step directory */
	if (gp_spool_jobdir(jobdir, sizeof(jobdir)) < 0 ||
	    gp_spool_step_dir(sdir, sizeof(sdir), jobdir, step, getenv("SLURM_RESTART_COUNT")) < 0)
		return -1;
	snprintf(gp_inj.dest, sizeof(gp_inj.dest), "%s/rank%s.gpr", sdir, rank);
	snprintf(path, sizeof(path), "%s/" GP_SPOOL_RING, gp_inj.spool);
	if (gp_spool_entry_set_dest(gp_inj.spool, gp_inj.dest) < 0 ||
	    gp_ring_create(&gp_inj.ring, path, GP_RING_DEFAULT_SLOTS) < 0)
		return -1;
	atomic_store(&gp_inj.ring.hdr->modes, gp_inj.modes);
	int fd = gp_spool_entry_create_rank(gp_inj.spool, 0600);
	if (fd < 0)
		return -1;
	/* the agent's header, with what it knows that this process does not (NVML) empty */
	gp_spool_hdr_t h = {.step = step,
	                    .rank = rank,
	                    .modes = gp_inj.modes,
	                    .wrapped = "env",
	                    .fallback =
	                        getenv(GP_ENV_FALLBACK) ? getenv(GP_ENV_FALLBACK) : "no agent",
	                    .pid = getpid()};
	gp_spool_header(hdr, sizeof(hdr), &h);
	/* the byte cap the plugin set for the agent holds here too */
	gp_inj.w = gp_rf_writer_create(fd, hdr, (uint64_t)gp_setting_long(GP_ENV_MAXBYTES));
	if (!gp_inj.w) {
		close(fd);
		return -1;
	}
	gp_inj.own_ring = true;
	if (pthread_create(&gp_inj.drainer, NULL, drain_thread, NULL) != 0)
		return -1;
	on_exit(fallback_finish, NULL); /* on_exit, not atexit: it is told the exit status */
	return 0;
}

/* Is this process a forked copy of its parent (same program, same command line)? A
 * worker forked before the library was loaded in its parent loads it afresh, with the
 * parent's environment: it must not take the parent's place on the ring. */
static bool forked_copy(void)
{
	char a[4096], b[4096], p[64];
	ssize_t na, nb;
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	na = read(fd, a, sizeof(a));
	close(fd);
	snprintf(p, sizeof(p), "/proc/%d/cmdline", (int)getppid());
	if ((fd = open(p, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	nb = read(fd, b, sizeof(b));
	close(fd);
	if (na <= 0 || na != nb || memcmp(a, b, (size_t)na))
		return false;
	char ea[4096], eb[4096];
	snprintf(p, sizeof(p), "/proc/%d/exe", (int)getppid());
	na = readlink("/proc/self/exe", ea, sizeof(ea));
	nb = readlink(p, eb, sizeof(eb));
	return na > 0 && na == nb && !memcmp(ea, eb, (size_t)na);
}

/* One process of the task records into the agent's ring: the first to attach that is
 * not a forked copy of its parent; a later one takes over only when that process has
 * exited (a script running programs one after another), under a new generation so its
 * string and stack ids stay apart. The others are counted (GP_LOSS_PROCESSES). Every
 * process on one ring would need ids, thread ids and correlation ids kept apart per
 * process through the whole report: one rank file is one process. */
static bool claim_ring(void)
{
	gp_ring_hdr_t *h = gp_inj.ring.hdr;
	uint32_t me = (uint32_t)getpid();
	uint32_t cur = atomic_load(&h->recorder_pid);
	if (forked_copy())
		return false;
	for (;;) {
		if (cur == me)
			return true;
		if (cur && (kill((pid_t)cur, 0) == 0 || errno != ESRCH))
			return false; /* alive (or not ours to signal): it keeps the ring */
		if (atomic_compare_exchange_strong(&h->recorder_pid, &cur, me))
			break;
	}
	atomic_store(&h->recorder_unranked, process_rank() < 0);
	/* generation: 0 for the first recorder, one more for each that follows */
	uint32_t gen = atomic_fetch_add(&h->generations, 1);
	if (gen >= GP_INJ_MAX_GEN)
		return false;
	gp_inj.gen = gen;
	return true;
}

static void proc_exit(int exit_code, void *arg)
{
	(void)arg;
	if (getpid() != gp_inj.owner || !atomic_load(&gp_inj.enabled))
		return;
	if (gp_inj.cupti_flush)
		gp_inj.cupti_flush();
	clock_record_again();
	/* the status exit() was given; a worker killed by a signal leaves none, and the
	 * agent (not its parent) marks the status unknown */
	gp_event_t e = {
	    .type = GP_EV_END, .ts = gp_clock_ns(), .a = (uint64_t)(exit_code & 0xff) << 8};
	gp_inj_emit(&e);
}

/* A ring of this process's own beside the task's, which the agent finds (hdr->procs),
 * drains into a rank file and publishes beside the task's:
 *   SPOOL/rankR/ring        one of several ranks of a launcher under one agent (torchrun's
 *                           workers, each with a RANK of its own): rankR.gpr;
 *   SPOOL/rankR.pidP/ring   any other process of rank R that uses CUDA or NVTX while
 *                           another one holds that rank's ring (a helper or a worker the
 *                           trainer started, a re-exec'd interpreter, a spawned process):
 *                           rankR.pidP.gpr, which the report sets beside rank R's file and
 *                           takes for the rank when it is the one that trained.
 * side: 0 for the first kind, else this process's pid. */
static int proc_ring_setup(const char *task_ring, long rank, pid_t side)
{
	char dir[4200], path[4300], tail[48];
	const char *slash = strrchr(task_ring, '/');
	const char *rf = getenv(GP_ENV_RANK_FILE);
	gp_ring_t r;
	if (!slash || (size_t)(slash - task_ring) > 4000)
		return -1;
	/* a bound on the rings: past the agent's table they were never drained (1.5 GB left
	 * in the spool for 1 100 processes), and their records never counted */
	if (atomic_fetch_add(&gp_inj.ring.hdr->procs_claimed, 1) >= GP_SPOOL_MAX_PROCS)
		return -1;
	if (side)
		snprintf(tail, sizeof(tail), "rank%ld.pid%d", rank, (int)side);
	else
		snprintf(tail, sizeof(tail), "rank%ld", rank);
	snprintf(dir, sizeof(dir), "%.*s/%s", (int)(slash - task_ring), task_ring, tail);
	if (gp_spool_entry_make(dir) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/" GP_SPOOL_RING, dir);
	if (gp_ring_create(&r, path, GP_RING_DEFAULT_SLOTS) < 0) {
		rmdir(dir);
		return -1;
	}
	atomic_store(&r.hdr->modes, atomic_load(&gp_inj.ring.hdr->modes));
	atomic_store(&r.hdr->recorder_pid, (uint32_t)getpid());
	atomic_store(&r.hdr->generations, 1);
	atomic_store(&r.hdr->writer_pid, (uint32_t)getpid());
	/* the same agent drains it. Marked asleep: the first record wakes the agent, which
	 * then finds this ring (hdr->procs) at once, not at its next look */
	atomic_store(&r.hdr->agent_pid, atomic_load(&gp_inj.ring.hdr->agent_pid));
	atomic_store(&r.hdr->agent_idle, 1);
	gp_ring_wake_init(&r);
	atomic_fetch_add(&gp_inj.ring.hdr->procs, 1);
	gp_ring_detach(&gp_inj.ring);
	gp_inj.ring = r;
	gp_inj.gen = 0;
	/* where the agent publishes it (the PyTorch integration writes its pickles beside) */
	const char *rs = rf ? strrchr(rf, '/') : NULL;
	if (rs)
		snprintf(gp_inj.dest, sizeof(gp_inj.dest), "%.*s/%s.gpr", (int)(rs - rf), rf, tail);
	on_exit(proc_exit, NULL);
	return 0;
}

/* This process's rank for a ring of its own: its launcher's RANK, else the task's. */
static long own_rank(void)
{
	long lr = launcher_rank();
	const char *t = getenv(GP_ENV_RANK);
	return lr >= 0 ? lr : t && *t ? strtol(t, NULL, 10) : 0;
}

/* A process that found the task's (or its RANK's) ring held by another live process:
 * a ring of its own, unless it is a forked copy of its parent that only uses NVTX (a
 * DataLoader worker forked before the library was loaded: a ring per worker would
 * record nothing of use). Those are counted (GP_LOSS_PROCESSES). */
static bool side_ring(const char *task_ring, bool cuda)
{
	if ((!cuda && forked_copy()) || proc_ring_setup(task_ring, own_rank(), getpid()) < 0) {
		gp_ring_lost(&gp_inj.ring, GP_LOSS_PROCESSES, 1);
		gp_ring_detach(&gp_inj.ring);
		return false;
	}
	return true;
}

/* Say which process records here (GP_EV_START, u8 1): its pid and command line, so a
 * rank whose file holds another process than the program the agent started names it. */
static void announce(void)
{
	char cmd[512];
	ssize_t n = 0;
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, cmd, sizeof(cmd) - 1);
		close(fd);
	}
	n = n > 0 ? n : 0;
	for (ssize_t i = 0; i < n; i++)
		if (!cmd[i])
			cmd[i] = ' ';
	while (n > 0 && cmd[n - 1] == ' ')
		n--;
	gp_event_t e = {.type = GP_EV_START,
	                .u8 = 1,
	                .ts = gp_clock_ns(),
	                .a = (uint64_t)getpid(),
	                .b = n ? gp_inj_intern(cmd, (size_t)n) : 0};
	gp_inj_emit(&e);
}

/* A fork of a process that had this library (silent since the fork) calls cuInit: it
 * trains (or otherwise uses the GPU) on its own, so it records into a ring of its own
 * under a clean string table, the inherited mapping of its parent's ring left alone. */
void gp_inj_child_attach(void)
{
	const char *ring = getenv(GP_ENV_RING);
	if (!gp_inj.forked || getpid() == gp_inj.owner || !ring || gp_inj.own_ring ||
	    !gp_inj.ring.hdr)
		return;
	gp_inj.forked = false;
	gp_inj.owner = getpid();
	gp_inj_intern_reset(); /* its parent's names are not in its file */
	gp_inj_thr_t *t = gp_inj_thr_get();
	t->depth[0] = t->depth[1] = 0;
	t->lane = -1; /* its parent's lane is its parent's */
	t->lane_ring = 0;
	if (proc_ring_setup(ring, own_rank(), getpid()) < 0) {
		gp_ring_lost(&gp_inj.ring, GP_LOSS_PROCESSES, 1);
		gp_ring_detach(&gp_inj.ring);
		return;
	}
	atomic_store(&gp_inj.ring.hdr->writer_pid, (uint32_t)gp_inj.owner);
	gp_ring_prefault_init(&gp_inj.ring);
	atomic_store_explicit(&gp_inj.enabled, 1, memory_order_release);
	announce();
}

/* Attach to the agent's ring: the task's (claim_ring), a launcher's rank's, or one of
 * this process's own (side_ring). cuda: called from cuInit. False: not recording. */
static bool attach_agent_ring(const char *ring, bool cuda)
{
	long lr = launcher_rank(); /* a RANK of its own, not the task's */
	if (lr < 0 && !claim_ring()) {
		/* the task's ring is held by a live process. A launcher without a RANK
		 * (torchrun touches CUDA before its workers start): the worker with the
		 * task's RANK records into a ring of its own. */
		if (atomic_load(&gp_inj.ring.hdr->recorder_unranked))
			lr = process_rank();
	}
	if (lr < 0 && atomic_load(&gp_inj.ring.hdr->recorder_pid) == (uint32_t)getpid()) {
		gp_ring_wake_init(&gp_inj.ring); /* the task's ring */
		gp_debug("pid %d records into the task's ring", (int)getpid());
		/* a process the program started (a launcher's worker with the task's RANK):
		 * its own exit status is the rank's, not the launcher's the agent sees */
		if (getppid() != (pid_t)atomic_load(&gp_inj.ring.hdr->agent_pid))
			on_exit(proc_exit, NULL);
		return true;
	}
	if (lr >= 0 && !forked_copy() && proc_ring_setup(ring, lr, 0) == 0) {
		gp_debug("pid %d records rank %ld of its launcher", (int)getpid(), lr);
		return true;
	}
	/* that rank's ring is another live process's: one of this process's own */
	unsigned holder = atomic_load(&gp_inj.ring.hdr->recorder_pid);
	bool ok = side_ring(ring, cuda);
	gp_debug("pid %d: the rank's ring is held by pid %u; %s", (int)getpid(), holder,
	         ok ? "a ring of its own" : "not recorded (counted)");
	return ok;
}

static bool init_from_cuda; /* do_init called from cuInit (InitializeInjection) */
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void do_init(void)
{
	char err[256];
	const char *ring = getenv(GP_ENV_RING);
	const char *m = getenv(GP_ENV_MODES);
	gp_log_site_mode(); /* a job the site profiles unasked: nothing on its stderr */
	/* the agent, the plugin and `gpuprof run` pass the modes in force; by hand, the
	 * settings table's default */
	if (!m || gp_modes_parse(m, &gp_inj.modes, err, sizeof(err)) < 0)
		gp_modes_parse(gp_setting_env(GP_ENV_MODES)->def, &gp_inj.modes, err, sizeof(err));
	if (gp_inj.modes & (GP_MODE_NONE | GP_MODE_HELP))
		return;
	if (gp_capture_parse(gp_setting_str(GP_ENV_CAPTURE), &gp_inj.cap, err, sizeof(err)) < 0)
		gp_warn("GPUPROF_CAPTURE: %s; capturing every step", err);
	gp_capture_warmup(&gp_inj.cap, (unsigned long long)gp_setting_long(GP_ENV_WARMUP));
	gp_inj.owner = getpid();
	gp_clock_on_drop = clock_dropped;
	gp_clock_init();
	if (ring && gp_ring_attach(&gp_inj.ring, ring) == 0) {
		if (!attach_agent_ring(ring, init_from_cuda))
			return;
		atomic_store(&gp_inj.ring.hdr->writer_pid, (uint32_t)gp_inj.owner);
	} else if (fallback_setup() < 0) {
		gp_warn("no agent ring and no spool of our own: not profiling this process");
		return;
	}
	gp_ring_prefault_init(&gp_inj.ring);
	const char *sr = getenv(GP_ENV_STEP_RANGE);
	if (sr && *sr)
		atomic_store(&gp_inj.step_name, gp_inj_intern_cstr(sr));
	atomic_store_explicit(&gp_inj.enabled, 1, memory_order_release);
	announce();
}

/* At load, before any fork can happen in a process that has us: a child forked without
 * exec (a DataLoader worker) never records into its parent's ring. */
__attribute__((constructor)) static void install_fork_handler(void)
{
	pthread_atfork(NULL, NULL, child_after_fork);
}

void gp_inj_init(bool from_cuda)
{
	if (from_cuda)
		init_from_cuda = true;
	pthread_once(&init_once, do_init);
}
