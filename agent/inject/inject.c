/* libgpuprof-inject: the only gpuprof code inside the user's process. Loaded by the CUDA
 * driver (CUDA_INJECTION64_PATH -> InitializeInjection, in cuInit) and by every copy of
 * nvtx3 (NVTX_INJECTION64_PATH -> InitializeInjectionNvtx2). It writes events straight
 * into the agent's shared ring: one CAS per record, no lock, no allocation on the hot
 * path, and what is published survives the process's death. Without an agent (the
 * plugin's environment-only fallback) it creates its own ring and drains it from a
 * background thread into a rank file. It never exits, aborts or blocks the application. */
#include "config.h"
#include "inject.h"
#include "marker.h"
#include "clock.h"
#include "env.h"
#include "log.h"
#include "modes.h"
#include "path.h"
#include "rankfile.h"
#include "settings.h"
#include "spool.h"

#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get);
int InitializeInjection(void);

/* ---- global state ---- */

static struct {
	_Atomic int enabled; /* relaxed check first on every hot path */
	unsigned modes;
	pid_t owner; /* events from forked children are not ours */
	gp_ring_t ring;
	bool own_ring; /* fallback: no agent, we drain ourselves */
	gp_rf_writer_t *w;
	pthread_t drainer;
	_Atomic int stop;
	char spool[4096], dest[4200];
	_Atomic uint64_t next_range;
	uint32_t gen; /* this process's generation on the ring (string and stack ids) */
	void *cupti_mod;
	gp_cupti_flush_fn cupti_flush;
	gp_cupti_capture_fn cupti_capture;
	gp_cupti_stream_id_fn cupti_stream_id;
	/* capture windows: cuda (and mem) switched at step boundaries (section below) */
	gp_capture_t cap;           /* GPUPROF_CAPTURE */
	_Atomic int cap_live;       /* the CUPTI module is running: boundaries matter */
	_Atomic unsigned cap_cur;   /* cuda/mem bits capturing now */
	_Atomic int cap_busy;       /* one thread switches at a time; the others go on */
	_Atomic int cap_prof;       /* between cudaProfilerStart and Stop */
	_Atomic uint32_t step_name; /* interned name of the step range; 0: not known yet */
	_Atomic uint64_t step_idx;  /* steps begun so far */
	_Atomic uint64_t seen0[8];  /* first outermost names (id << 8 | 1, never 0), to learn it */
	bool forked; /* a fork of a process that had this library: silent until its cuInit */
	_Atomic int steps_seen;   /* a step boundary was seen (no windows by time then) */
	_Atomic uint64_t opt_idx; /* optimizer steps returned so far */
	uint64_t cap_t0;          /* when the CUPTI module started (windows by time) */
} g;

static unsigned capture_wanted(uint64_t idx);

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static pthread_once_t cuda_once = PTHREAD_ONCE_INIT;
static __thread uint32_t t_tid;
/* push/pop nesting per thread, the default domain apart from the others: NVTX keeps a
 * stack per domain, and a library's unbalanced ranges in its own domain (NCCL leaves
 * some open) must not push the program's step ranges off the outermost level */
static __thread int t_depth[2];

static uint32_t my_tid(void)
{
	/* CUPTI's API records name threads by (uint32_t)pthread_self(); use the same id so
	 * launch calls fall inside the NVTX ranges of their thread */
	if (!t_tid)
		t_tid = (uint32_t)(uintptr_t)pthread_self();
	return t_tid;
}

static void emit(const gp_event_t *ev)
{
	gp_ring_push(&g.ring, ev);
}

static void count_drop(unsigned cause, uint64_t n);

/* ---- string interning: content hash -> id, lock-free open addressing ---- */

#define STR_BITS   18
#define STR_SLOTS  (1u << STR_BITS)
#define STR_PROBES 64
/* ids carry the process's generation on the ring (g.gen): processes that follow one
 * another under one agent intern into their own tables and must not share ids */
#define STR_ID(idx) ((g.gen << STR_BITS) + (uint32_t)(idx) + 1)
#define MAX_GEN     4000 /* (MAX_GEN << STR_BITS) stays below the agent's own ids */
static _Atomic uint64_t str_tbl[STR_SLOTS];

static uint64_t hash_bytes(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull ^ len;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
	h ^= h >> 29;
	return h ? h : 1;
}

static void emit_string(uint32_t id, const char *s, size_t len)
{
	size_t off = 0;
	if (len > GP_STRING_MAX)
		len = GP_STRING_MAX;
	do {
		gp_event_t e = {.type = GP_EV_STRING, .tid = id, .u16 = (uint16_t)off};
		size_t k = len - off > GP_STRING_CHUNK ? GP_STRING_CHUNK : len - off;
		e.u8 = (uint8_t)k;
		memcpy(&e.a, s + off, k);
		emit(&e);
		off += k;
	} while (off < len);
}

static uint32_t intern(const char *s, size_t len)
{
	uint64_t h = hash_bytes(s, len);
	uint32_t idx = (uint32_t)h & (STR_SLOTS - 1);
	for (int p = 0; p < STR_PROBES; p++, idx = (idx + 1) & (STR_SLOTS - 1)) {
		uint64_t v = atomic_load_explicit(&str_tbl[idx], memory_order_relaxed);
		if (v == h)
			return STR_ID(idx);
		if (v == 0) {
			uint64_t zero = 0;
			if (atomic_compare_exchange_strong_explicit(&str_tbl[idx], &zero, h,
			                                            memory_order_relaxed,
			                                            memory_order_relaxed)) {
				emit_string(STR_ID(idx), s, len);
				return STR_ID(idx);
			}
			if (zero == h)
				return STR_ID(idx);
		}
	}
	count_drop(GP_LOSS_STRINGS, 1);
	return 0;
}

static uint32_t intern_cstr(const char *s)
{
	return s ? intern(s, strnlen(s, GP_STRING_MAX)) : 0;
}

static uint32_t intern_wstr(const wchar_t *ws)
{
	char buf[GP_STRING_MAX + 4];
	size_t o = 0;
	if (!ws)
		return 0;
	for (; *ws && o + 4 < GP_STRING_MAX; ws++) {
		uint32_t c = (uint32_t)*ws;
		if (c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
			c = 0xfffd;
		if (c < 0x80) {
			buf[o++] = (char)c;
		} else if (c < 0x800) {
			buf[o++] = (char)(0xc0 | c >> 6);
			buf[o++] = (char)(0x80 | (c & 0x3f));
		} else if (c < 0x10000) {
			buf[o++] = (char)(0xe0 | c >> 12);
			buf[o++] = (char)(0x80 | ((c >> 6) & 0x3f));
			buf[o++] = (char)(0x80 | (c & 0x3f));
		} else {
			buf[o++] = (char)(0xf0 | c >> 18);
			buf[o++] = (char)(0x80 | ((c >> 12) & 0x3f));
			buf[o++] = (char)(0x80 | ((c >> 6) & 0x3f));
			buf[o++] = (char)(0x80 | (c & 0x3f));
		}
	}
	return intern(buf, o);
}

static void count_drop(unsigned cause, uint64_t n)
{
	gp_ring_lost(&g.ring, cause, n); /* in the shared header: the agent writes it out */
}

static uint64_t clock_ns(void)
{
	return gp_clock_ns();
}

static void on_profiler(int start);
static void capture_tick(uint64_t now);
static const gp_inject_api_t api_template = {.emit = emit,
                                             .intern = intern,
                                             .count_drop = count_drop,
                                             .tid = my_tid,
                                             .now = clock_ns,
                                             .profiler = on_profiler,
                                             .tick = capture_tick};

/* ---- start-up ---- */

static void child_after_fork(void)
{
	/* A DataLoader worker or a subprocess: the parent's ring and buffers are not its to
	 * write; it stays silent (its own exec would inject again, cleanly). A child that
	 * goes on to use CUDA itself (a training process started with fork before its parent
	 * touched CUDA) gets a ring of its own at its cuInit (child_attach). */
	atomic_store_explicit(&g.enabled, 0, memory_order_relaxed);
	g.forked = true;
}

static void *drain_thread(void *arg)
{
	while (!atomic_load(&g.stop)) {
		struct timespec ts = {0, 200 * 1000 * 1000};
		nanosleep(&ts, NULL);
		if (g.w)
			gp_ring_drain(&g.ring, g.w, false, NULL);
	}
	return NULL;
}

static void fallback_finish(int exit_code, void *arg)
{
	(void)arg;
	if (!g.own_ring || getpid() != g.owner || !g.w)
		return;
	if (g.cupti_flush)
		g.cupti_flush();
	atomic_store(&g.stop, 1);
	pthread_join(g.drainer, NULL);
	gp_ring_drain(&g.ring, g.w, true, NULL);
	gp_ring_write_losses(&g.ring, g.w, NULL);
	/* the status exit() was given (W_EXITCODE form, as the agent's wait status) */
	gp_event_t e = {
	    .type = GP_EV_END, .ts = gp_clock_ns(), .a = (uint64_t)(exit_code & 0xff) << 8};
	gp_rf_append(g.w, &e);
	gp_rf_fsync(g.w);
	char src[4300];
	snprintf(src, sizeof(src), "%s/" GP_SPOOL_RANK, g.spool);
	if (gp_spool_publish(src, g.dest, 0600, 0700) == 0) {
		gp_rf_writer_close(g.w, false);
		g.w = NULL;
		gp_spool_entry_remove(g.spool);
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
	if (gp_spool_task_dir(g.spool, sizeof(g.spool), udir, job, step, rank, (int)getpid()) < 0 ||
	    gp_spool_entry_make(g.spool) < 0)
		return -1;
	/* the agent's names: a requeued job's attempt its own step directory */
	if (gp_spool_jobdir(jobdir, sizeof(jobdir)) < 0 ||
	    gp_spool_step_dir(sdir, sizeof(sdir), jobdir, step, getenv("SLURM_RESTART_COUNT")) < 0)
		return -1;
	snprintf(g.dest, sizeof(g.dest), "%s/rank%s.gpr", sdir, rank);
	snprintf(path, sizeof(path), "%s/" GP_SPOOL_RING, g.spool);
	if (gp_spool_entry_set_dest(g.spool, g.dest) < 0 ||
	    gp_ring_create(&g.ring, path, GP_RING_DEFAULT_SLOTS) < 0)
		return -1;
	atomic_store(&g.ring.hdr->modes, g.modes);
	int fd = gp_spool_entry_create_rank(g.spool, 0600);
	if (fd < 0)
		return -1;
	/* the agent's header, with what it knows that this process does not (NVML) empty */
	gp_spool_hdr_t h = {.step = step,
	                    .rank = rank,
	                    .modes = g.modes,
	                    .wrapped = "env",
	                    .fallback =
	                        getenv(GP_ENV_FALLBACK) ? getenv(GP_ENV_FALLBACK) : "no agent",
	                    .pid = getpid()};
	gp_spool_header(hdr, sizeof(hdr), &h);
	/* the byte cap the plugin set for the agent holds here too */
	g.w = gp_rf_writer_create(fd, hdr, (uint64_t)gp_setting_long(GP_ENV_MAXBYTES));
	if (!g.w) {
		close(fd);
		return -1;
	}
	g.own_ring = true;
	if (pthread_create(&g.drainer, NULL, drain_thread, NULL) != 0)
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
	gp_ring_hdr_t *h = g.ring.hdr;
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
	if (gen >= MAX_GEN)
		return false;
	g.gen = gen;
	return true;
}

static void proc_exit(int exit_code, void *arg)
{
	(void)arg;
	if (getpid() != g.owner || !atomic_load(&g.enabled))
		return;
	if (g.cupti_flush)
		g.cupti_flush();
	/* the status exit() was given; a worker killed by a signal leaves none, and the
	 * agent (not its parent) marks the status unknown */
	gp_event_t e = {
	    .type = GP_EV_END, .ts = gp_clock_ns(), .a = (uint64_t)(exit_code & 0xff) << 8};
	emit(&e);
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
	atomic_store(&r.hdr->modes, atomic_load(&g.ring.hdr->modes));
	atomic_store(&r.hdr->recorder_pid, (uint32_t)getpid());
	atomic_store(&r.hdr->generations, 1);
	atomic_store(&r.hdr->writer_pid, (uint32_t)getpid());
	/* the same agent drains it. Marked asleep: the first record wakes the agent, which
	 * then finds this ring (hdr->procs) at once, not at its next look */
	atomic_store(&r.hdr->agent_pid, atomic_load(&g.ring.hdr->agent_pid));
	atomic_store(&r.hdr->agent_idle, 1);
	gp_ring_wake_init(&r);
	atomic_fetch_add(&g.ring.hdr->procs, 1);
	gp_ring_detach(&g.ring);
	g.ring = r;
	g.gen = 0;
	/* where the agent publishes it (the PyTorch integration writes its pickles beside) */
	const char *rs = rf ? strrchr(rf, '/') : NULL;
	if (rs)
		snprintf(g.dest, sizeof(g.dest), "%.*s/%s.gpr", (int)(rs - rf), rf, tail);
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
		gp_ring_lost(&g.ring, GP_LOSS_PROCESSES, 1);
		gp_ring_detach(&g.ring);
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
	                .b = n ? intern(cmd, (size_t)n) : 0};
	emit(&e);
}

/* A fork of a process that had this library (silent since the fork) calls cuInit: it
 * trains (or otherwise uses the GPU) on its own, so it records into a ring of its own
 * under a clean string table, the inherited mapping of its parent's ring left alone. */
static void child_attach(void)
{
	const char *ring = getenv(GP_ENV_RING);
	if (!g.forked || !ring || g.own_ring || !g.ring.hdr)
		return;
	g.forked = false;
	g.owner = getpid();
	memset((void *)str_tbl, 0, sizeof(str_tbl)); /* its parent's names are not in its file */
	t_depth[0] = t_depth[1] = 0;
	if (proc_ring_setup(ring, own_rank(), getpid()) < 0) {
		gp_ring_lost(&g.ring, GP_LOSS_PROCESSES, 1);
		gp_ring_detach(&g.ring);
		return;
	}
	atomic_store(&g.ring.hdr->writer_pid, (uint32_t)g.owner);
	atomic_store_explicit(&g.enabled, 1, memory_order_release);
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
		if (atomic_load(&g.ring.hdr->recorder_unranked))
			lr = process_rank();
	}
	if (lr < 0 && atomic_load(&g.ring.hdr->recorder_pid) == (uint32_t)getpid()) {
		gp_ring_wake_init(&g.ring); /* the task's ring */
		gp_debug("pid %d records into the task's ring", (int)getpid());
		/* a process the program started (a launcher's worker with the task's RANK):
		 * its own exit status is the rank's, not the launcher's the agent sees */
		if (getppid() != (pid_t)atomic_load(&g.ring.hdr->agent_pid))
			on_exit(proc_exit, NULL);
		return true;
	}
	if (lr >= 0 && !forked_copy() && proc_ring_setup(ring, lr, 0) == 0) {
		gp_debug("pid %d records rank %ld of its launcher", (int)getpid(), lr);
		return true;
	}
	/* that rank's ring is another live process's: one of this process's own */
	unsigned holder = atomic_load(&g.ring.hdr->recorder_pid);
	bool ok = side_ring(ring, cuda);
	gp_debug("pid %d: the rank's ring is held by pid %u; %s", (int)getpid(), holder,
	         ok ? "a ring of its own" : "not recorded (counted)");
	return ok;
}

static bool init_from_cuda; /* do_init called from cuInit (InitializeInjection) */

static void do_init(void)
{
	char err[256];
	const char *ring = getenv(GP_ENV_RING);
	const char *m = getenv(GP_ENV_MODES);
	/* the agent, the plugin and `gpuprof run` pass the modes in force; by hand, the
	 * settings table's default */
	if (!m || gp_modes_parse(m, &g.modes, err, sizeof(err)) < 0)
		gp_modes_parse(gp_setting_env(GP_ENV_MODES)->def, &g.modes, err, sizeof(err));
	if (g.modes & (GP_MODE_NONE | GP_MODE_HELP))
		return;
	if (gp_capture_parse(gp_setting_str(GP_ENV_CAPTURE), &g.cap, err, sizeof(err)) < 0)
		gp_warn("GPUPROF_CAPTURE: %s; capturing every step", err);
	gp_capture_warmup(&g.cap, (unsigned long long)gp_setting_long(GP_ENV_WARMUP));
	g.owner = getpid();
	gp_clock_init();
	if (ring && gp_ring_attach(&g.ring, ring) == 0) {
		if (!attach_agent_ring(ring, init_from_cuda))
			return;
		atomic_store(&g.ring.hdr->writer_pid, (uint32_t)g.owner);
	} else if (fallback_setup() < 0) {
		gp_warn("no agent ring and no spool of our own: not profiling this process");
		return;
	}
	const char *sr = getenv(GP_ENV_STEP_RANGE);
	if (sr && *sr)
		atomic_store(&g.step_name, intern_cstr(sr));
	atomic_store_explicit(&g.enabled, 1, memory_order_release);
	announce();
}

/* At load, before any fork can happen in a process that has us: a child forked without
 * exec (a DataLoader worker) never records into its parent's ring. */
__attribute__((constructor)) static void install_fork_handler(void)
{
	pthread_atfork(NULL, NULL, child_after_fork);
}

static inline bool on(void)
{
	return atomic_load_explicit(&g.enabled, memory_order_relaxed);
}

/* ---- NVTX ---- */

static inline uint64_t color_cat(const nvtxEventAttributes_t *a)
{
	return (a->colorType == NVTX_COLOR_ARGB ? (uint64_t)a->color << 32 | 1ull << 63 : 0) |
	       a->category;
}

static inline uint64_t payload(const nvtxEventAttributes_t *a)
{
	switch (a->payloadType) {
	case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64:
		return a->payload.ullValue;
	case NVTX_PAYLOAD_TYPE_INT64:
		return (uint64_t)a->payload.llValue;
	case NVTX_PAYLOAD_TYPE_DOUBLE: {
		uint64_t v;
		memcpy(&v, &a->payload.dValue, 8);
		return v;
	}
	case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32:
		return a->payload.uiValue;
	case NVTX_PAYLOAD_TYPE_INT32:
		return (uint64_t)(int64_t)a->payload.iValue;
	case NVTX_PAYLOAD_TYPE_FLOAT: {
		uint32_t v;
		memcpy(&v, &a->payload.fValue, 4);
		return v;
	}
	default:
		return 0;
	}
}

static uint32_t attr_name(const nvtxEventAttributes_t *a)
{
	if (!a)
		return 0;
	switch (a->messageType) {
	case NVTX_MESSAGE_TYPE_ASCII:
		return intern_cstr(a->message.ascii);
	case NVTX_MESSAGE_TYPE_UNICODE:
		return intern_wstr(a->message.unicode);
	case NVTX_MESSAGE_TYPE_REGISTERED:
		return (uint32_t)(uintptr_t)a->message.registered;
	default:
		return 0;
	}
}

/* ---- capture windows ----
 * CUDA activity tracing costs what CUPTI costs, so it can be limited to chosen steps:
 * GPUPROF_CAPTURE=steps=A-B[,C-D...] (0-based step indices, inclusive) or
 * cudaprofilerapi (between cudaProfilerStart and Stop, as nsys --capture-range), and the
 * ring header's `modes` word lets the agent or `gpuprof capture on|off` switch cuda/mem
 * on demand. Switches happen at a step boundary (the start of an outermost range of the
 * default domain named like the step range: GPUPROF_STEP_RANGE, else the first outermost
 * name seen twice) on the thread that begins the step, and each is recorded with what it
 * cost (GP_EV_CONTROL). mem is not windowed by steps (live bytes need every allocation),
 * only switched on demand. */

/* The cuda/mem bits wanted now, at step idx. */
static unsigned capture_wanted(uint64_t idx)
{
	unsigned req = atomic_load_explicit(&g.ring.hdr->modes, memory_order_relaxed);
	unsigned want = (req ? req : g.modes) & g.modes & (GP_MODE_CUDA | GP_MODE_MEM);
	bool in = gp_capture_in(&g.cap, idx);
	if (g.cap.how == GP_CAP_PROFILER)
		in = atomic_load_explicit(&g.cap_prof, memory_order_relaxed);
	return in ? want : want & ~(unsigned)GP_MODE_CUDA;
}

/* Switch to want (cuda/mem bits) at step idx; ts: when the step began (its push), so
 * the report counts the step as captured. */
static void capture_set(unsigned want, uint64_t idx, uint64_t ts)
{
	if (want == atomic_load_explicit(&g.cap_cur, memory_order_relaxed))
		return;
	int z = 0;
	if (!atomic_compare_exchange_strong(&g.cap_busy, &z, 1))
		return; /* another thread is switching; never wait for it */
	uint64_t t0 = gp_clock_ns();
	g.cupti_capture(want);
	gp_event_t e = {.type = GP_EV_CONTROL, .ts = ts ? ts : t0, .a = want, .b = idx};
	e.c = gp_clock_ns() - t0;
	emit(&e);
	atomic_store(&g.cap_cur, want);
	atomic_store(&g.cap_busy, 0);
}

static void capture_check(uint64_t idx, uint64_t ts)
{
	atomic_store_explicit(&g.steps_seen, 1, memory_order_relaxed);
	capture_set(capture_wanted(idx), idx, ts);
}

/* Sampled windows for a program whose steps the collector does not see (no step range,
 * no optimizer it knows: a JAX loop): by time, from the CUPTI module's thread. Kernels
 * are traced through the first SAMPLE_FIRST_S seconds (start-up and the first steps,
 * whose kernels tell the report what a step is), then SAMPLE_ON_S of every
 * SAMPLE_EVERY_S (4 % of the time). Idempotent, never waits. */
#define SAMPLE_FIRST_S 60
#define SAMPLE_ON_S    5
#define SAMPLE_EVERY_S 120
static void capture_tick(uint64_t now)
{
	if (g.cap.how != GP_CAP_SAMPLED || !atomic_load(&g.cap_live) ||
	    atomic_load_explicit(&g.steps_seen, memory_order_relaxed))
		return;
	uint64_t t = now > g.cap_t0 ? (now - g.cap_t0) / 1000000000ull : 0;
	bool in = t < SAMPLE_FIRST_S || (t - SAMPLE_FIRST_S) % SAMPLE_EVERY_S < SAMPLE_ON_S;
	unsigned want = capture_wanted(0);
	capture_set(in ? want : want & ~(unsigned)GP_MODE_CUDA, UINT32_MAX, 0);
}

/* An optimizer's step returned (the PyTorch integration): the next step begins. The
 * boundary for programs without a step range of their own. */
static void optimizer_boundary(uint64_t ts)
{
	uint64_t n = atomic_fetch_add_explicit(&g.opt_idx, 1, memory_order_relaxed) + 1;
	if (atomic_load_explicit(&g.cap_live, memory_order_relaxed) &&
	    !atomic_load_explicit(&g.step_name, memory_order_relaxed))
		capture_check(n, ts);
}

/* Called for every outermost push of the default domain while CUPTI runs. */
static void step_boundary(uint32_t name, uint64_t ts)
{
	uint32_t step = atomic_load_explicit(&g.step_name, memory_order_relaxed);
	if (!step) { /* learn the step range: the first outermost name seen twice */
		for (int i = 0; i < 8 && !step; i++) {
			uint64_t v = atomic_load(&g.seen0[i]);
			if (!v) {
				uint64_t mine = (uint64_t)name << 8 | 1;
				if (atomic_compare_exchange_strong(&g.seen0[i], &v, mine))
					return;
			}
			if (v >> 8 == name) {
				uint32_t z = 0;
				atomic_compare_exchange_strong(&g.step_name, &z, name);
				/* it began twice: this is step 1 */
				atomic_store(&g.step_idx, 1);
				step = name;
			}
		}
		if (!step)
			return;
	} else if (name != step) {
		return;
	}
	uint64_t idx = atomic_fetch_add_explicit(&g.step_idx, 1, memory_order_relaxed);
	capture_check(idx, ts);
}

static void on_profiler(int start)
{
	atomic_store(&g.cap_prof, start);
	if (g.cap.how == GP_CAP_PROFILER && atomic_load(&g.cap_live))
		capture_check(atomic_load(&g.step_idx), 0);
}

#define MAX_DEPTH 4096 /* runaway nesting: deeper pushes are counted, not recorded */

static int push_common(uint32_t domain, uint32_t name, const nvtxEventAttributes_t *a)
{
	int level = t_depth[domain != 0]++;
	if (level >= MAX_DEPTH) {
		count_drop(GP_LOSS_DEPTH, 1);
		return level;
	}
	/* timing alone keeps only the outermost ranges: they delimit steps */
	if (!(g.modes & GP_MODE_NVTX) && level > 0)
		return level;
	gp_event_t e = {
	    .type = GP_EV_NVTX_PUSH, .tid = my_tid(), .ts = gp_clock_ns(), .a = name, .b = domain};
	if (a) {
		e.c = payload(a);
		e.d = color_cat(a);
	}
	emit(&e);
	if (level == 0 && domain == 0 && atomic_load_explicit(&g.cap_live, memory_order_relaxed))
		step_boundary(name, e.ts);
	return level;
}

static int pop_common(uint32_t domain)
{
	if (t_depth[domain != 0] == 0)
		return -1; /* pop without push: NVTX returns a negative level */
	int level = --t_depth[domain != 0];
	if (level >= MAX_DEPTH || (!(g.modes & GP_MODE_NVTX) && level > 0))
		return level;
	gp_event_t e = {.type = GP_EV_NVTX_POP, .tid = my_tid(), .ts = gp_clock_ns(), .b = domain};
	emit(&e);
	if (level == 0 && domain == 0)
		gp_marker_step_end(e.ts);
	return level;
}

static nvtxRangeId_t start_common(uint32_t domain, uint32_t name, const nvtxEventAttributes_t *a)
{
	uint64_t id = atomic_fetch_add_explicit(&g.next_range, 1, memory_order_relaxed) + 1;
	if (!(g.modes & GP_MODE_NVTX))
		return id;
	gp_event_t e = {.type = GP_EV_NVTX_START,
	                .tid = my_tid(),
	                .ts = gp_clock_ns(),
	                .a = name,
	                .b = domain,
	                .c = id};
	if (a)
		e.d = color_cat(a);
	emit(&e);
	return id;
}

static void mark_common(uint32_t domain, uint32_t name, const nvtxEventAttributes_t *a)
{
	if (!(g.modes & GP_MODE_NVTX))
		return;
	gp_event_t e = {
	    .type = GP_EV_NVTX_MARK, .tid = my_tid(), .ts = gp_clock_ns(), .a = name, .b = domain};
	if (a) {
		e.c = payload(a);
		e.d = color_cat(a);
	}
	emit(&e);
}

static void NVTX_API h_MarkEx(const nvtxEventAttributes_t *a)
{
	if (on())
		mark_common(0, attr_name(a), a);
}
static void NVTX_API h_MarkA(const char *m)
{
	if (on())
		mark_common(0, intern_cstr(m), NULL);
}
static void NVTX_API h_MarkW(const wchar_t *m)
{
	if (on())
		mark_common(0, intern_wstr(m), NULL);
}
static nvtxRangeId_t NVTX_API h_RangeStartEx(const nvtxEventAttributes_t *a)
{
	return on() ? start_common(0, attr_name(a), a) : 0;
}
static nvtxRangeId_t NVTX_API h_RangeStartA(const char *m)
{
	return on() ? start_common(0, intern_cstr(m), NULL) : 0;
}
static nvtxRangeId_t NVTX_API h_RangeStartW(const wchar_t *m)
{
	return on() ? start_common(0, intern_wstr(m), NULL) : 0;
}
static void NVTX_API h_RangeEnd(nvtxRangeId_t id)
{
	if (!on() || !(g.modes & GP_MODE_NVTX))
		return;
	gp_event_t e = {.type = GP_EV_NVTX_END, .tid = my_tid(), .ts = gp_clock_ns(), .c = id};
	emit(&e);
}
static int NVTX_API h_RangePushEx(const nvtxEventAttributes_t *a)
{
	return on() ? push_common(0, attr_name(a), a) : 0;
}
static int NVTX_API h_RangePushA(const char *m)
{
	return on() ? push_common(0, intern_cstr(m), NULL) : 0;
}
static int NVTX_API h_RangePushW(const wchar_t *m)
{
	return on() ? push_common(0, intern_wstr(m), NULL) : 0;
}
static int NVTX_API h_RangePop(void)
{
	return on() ? pop_common(0) : 0;
}
static void name_thread(uint32_t tid, uint32_t name)
{
	gp_event_t e = {.type = GP_EV_THREAD_NAME, .tid = tid, .ts = gp_clock_ns(), .a = name};
	emit(&e);
}
static void NVTX_API h_NameCategoryA(uint32_t cat, const char *n)
{
	if (on()) {
		gp_event_t e = {.type = GP_EV_NVTX_MARK,
		                .u8 = 1,
		                .tid = my_tid(),
		                .ts = gp_clock_ns(),
		                .a = intern_cstr(n),
		                .d = cat};
		emit(&e); /* u8=1: a category name, not a mark */
	}
}
static void NVTX_API h_NameCategoryW(uint32_t cat, const wchar_t *n)
{
	if (on()) {
		gp_event_t e = {.type = GP_EV_NVTX_MARK,
		                .u8 = 1,
		                .tid = my_tid(),
		                .ts = gp_clock_ns(),
		                .a = intern_wstr(n),
		                .d = cat};
		emit(&e);
	}
}
static void NVTX_API h_NameOsThreadA(uint32_t tid, const char *n)
{
	if (on())
		name_thread(tid, intern_cstr(n));
}
static void NVTX_API h_NameOsThreadW(uint32_t tid, const wchar_t *n)
{
	if (on())
		name_thread(tid, intern_wstr(n));
}

/* CUDA / CUDA runtime resource naming (nvtxNameCuStreamA, nvtxNameCudaStreamA, ...):
 * streams keep the names users gave them. The handle is mapped to CUPTI's stream id,
 * which kernel records carry, when the CUPTI module runs. Devices, contexts and events
 * are not shown anywhere in the report and are left to the no-op. */
static void name_stream(void *stream, uint32_t name)
{
	uint32_t id = 0;
	gp_event_t e = {.type = GP_EV_STREAM_NAME,
	                .ts = gp_clock_ns(),
	                .a = (uint64_t)(uintptr_t)stream,
	                .b = name,
	                .c = (uint64_t)(uintptr_t)stream};
	if (g.cupti_stream_id && g.cupti_stream_id(stream, &id) == 0) {
		e.a = id;
		e.u8 = 1;
	}
	emit(&e);
}
static void NVTX_API h_NameCuStreamA(void *stream, const char *n)
{
	if (on() && n)
		name_stream(stream, intern_cstr(n));
}
static void NVTX_API h_NameCuStreamW(void *stream, const wchar_t *n)
{
	if (on() && n)
		name_stream(stream, intern_wstr(n));
}
#define h_NameCudaStreamA h_NameCuStreamA
#define h_NameCudaStreamW h_NameCuStreamW

/* Core2: domains. A domain handle is the interned id of its name (never 0). */
static uint32_t dom(nvtxDomainHandle_t d)
{
	return (uint32_t)(uintptr_t)d;
}
static void NVTX_API h_DomainMarkEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	if (on())
		mark_common(dom(d), attr_name(a), a);
}
static nvtxRangeId_t NVTX_API h_DomainRangeStartEx(nvtxDomainHandle_t d,
                                                   const nvtxEventAttributes_t *a)
{
	return on() ? start_common(dom(d), attr_name(a), a) : 0;
}
static void NVTX_API h_DomainRangeEnd(nvtxDomainHandle_t d, nvtxRangeId_t id)
{
	h_RangeEnd(id);
}
static int NVTX_API h_DomainRangePushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	return on() ? push_common(dom(d), attr_name(a), a) : 0;
}
static int NVTX_API h_DomainRangePop(nvtxDomainHandle_t d)
{
	return on() ? pop_common(dom(d)) : 0;
}
static void NVTX_API h_DomainNameCategoryA(nvtxDomainHandle_t d, uint32_t cat, const char *n)
{
	h_NameCategoryA(cat, n);
}
static void NVTX_API h_DomainNameCategoryW(nvtxDomainHandle_t d, uint32_t cat, const wchar_t *n)
{
	h_NameCategoryW(cat, n);
}
static nvtxStringHandle_t NVTX_API h_DomainRegisterStringA(nvtxDomainHandle_t d, const char *s)
{
	return (nvtxStringHandle_t)(uintptr_t)(on() ? intern_cstr(s) : 0);
}
static nvtxStringHandle_t NVTX_API h_DomainRegisterStringW(nvtxDomainHandle_t d, const wchar_t *s)
{
	return (nvtxStringHandle_t)(uintptr_t)(on() ? intern_wstr(s) : 0);
}
static nvtxDomainHandle_t NVTX_API h_DomainCreateA(const char *n)
{
	uint32_t id = on() ? intern_cstr(n) : 0;
	return (nvtxDomainHandle_t)(uintptr_t)(id ? id : 0xfffffffeu);
}
static nvtxDomainHandle_t NVTX_API h_DomainCreateW(const wchar_t *n)
{
	uint32_t id = on() ? intern_wstr(n) : 0;
	return (nvtxDomainHandle_t)(uintptr_t)(id ? id : 0xfffffffeu);
}
static void NVTX_API h_DomainDestroy(nvtxDomainHandle_t d)
{
}

typedef struct {
	unsigned id;
	NvtxFunctionPointer fn;
} slot_t;

static int patch_module(const NvtxExportTableCallbacks *cb, NvtxCallbackModule mod,
                        const slot_t *slots, size_t n)
{
	NvtxFunctionTable table = NULL;
	unsigned size = 0;
	if (!cb->GetModuleFunctionTable(mod, &table, &size) || !table)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (slots[i].id < size && table[slots[i].id])
			*table[slots[i].id] = slots[i].fn;
	return 0;
}

#define S(mod, name)                                                                               \
	{                                                                                          \
		NVTX_CBID_##mod##_##name, (NvtxFunctionPointer)h_##name                            \
	}

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get)
{
	static const slot_t core[] = {
	    S(CORE, MarkEx),        S(CORE, MarkA),         S(CORE, MarkW),
	    S(CORE, RangeStartEx),  S(CORE, RangeStartA),   S(CORE, RangeStartW),
	    S(CORE, RangeEnd),      S(CORE, RangePushEx),   S(CORE, RangePushA),
	    S(CORE, RangePushW),    S(CORE, RangePop),      S(CORE, NameCategoryA),
	    S(CORE, NameCategoryW), S(CORE, NameOsThreadA), S(CORE, NameOsThreadW),
	};
	static const slot_t core2[] = {
	    S(CORE2, DomainMarkEx),          S(CORE2, DomainRangeStartEx),
	    S(CORE2, DomainRangeEnd),        S(CORE2, DomainRangePushEx),
	    S(CORE2, DomainRangePop),        S(CORE2, DomainNameCategoryA),
	    S(CORE2, DomainNameCategoryW),   S(CORE2, DomainRegisterStringA),
	    S(CORE2, DomainRegisterStringW), S(CORE2, DomainCreateA),
	    S(CORE2, DomainCreateW),         S(CORE2, DomainDestroy),
	};
	static const slot_t cuda[] = {S(CUDA, NameCuStreamA), S(CUDA, NameCuStreamW)};
	static const slot_t cudart[] = {S(CUDART, NameCudaStreamA), S(CUDART, NameCudaStreamW)};
	const NvtxExportTableCallbacks *cb;
	pthread_once(&init_once, do_init);
	if (!on() || !get)
		return 0; /* 0: NVTX stays a no-op in this library */
	cb = get(NVTX_ETID_CALLBACKS);
	if (!cb || cb->struct_size < sizeof(*cb))
		return 0;
	if (patch_module(cb, NVTX_CB_MODULE_CORE, core, sizeof(core) / sizeof(core[0])) < 0)
		return 0;
	patch_module(cb, NVTX_CB_MODULE_CORE2, core2, sizeof(core2) / sizeof(core2[0]));
	patch_module(cb, NVTX_CB_MODULE_CUDA, cuda, sizeof(cuda) / sizeof(cuda[0]));
	patch_module(cb, NVTX_CB_MODULE_CUDART, cudart, sizeof(cudart) / sizeof(cudart[0]));
	return 1;
}

/* ---- CUDA: CUPTI lives in a module loaded only when cuda or mem is asked for ---- */

/* Frameworks whose own profiler subscribes to CUPTI's callback API when the user starts
 * it (torch.profiler/kineto, jax.profiler/XLA, TensorFlow): CUPTI has one subscriber per
 * process, and kineto drops every CUDA activity when it cannot subscribe. In their
 * processes gpuprof leaves the slot free unless GPUPROF_ALLOC_STACKS=1. */
static int framework_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	static const char *const libs[] = {"libtorch_cpu.so", "libkineto", "xla_extension",
	                                   "libtensorflow_framework", "libjax"};
	(void)size;
	for (size_t i = 0; info->dlpi_name && i < sizeof(libs) / sizeof(libs[0]); i++)
		if (strstr(info->dlpi_name, libs[i])) {
			*(const char **)data = libs[i];
			return 1;
		}
	return 0;
}

#ifndef GP_CUPTI_SONAME
#define GP_CUPTI_SONAME "libcupti.so"
#endif
#ifndef GP_CUDA_LIBDIR
#define GP_CUDA_LIBDIR "/usr/local/cuda/lib64"
#endif

/* The collector module needs libcupti (GP_CUPTI_SONAME) and carries no RUNPATH into the
 * toolkit of the machine it was built on: the one the process already has (a PyTorch
 * wheel brings its own), else GPUPROF_CUPTI (a path), else the dynamic linker's search
 * path, else the toolkit gpuprof was built against, else /usr/local/cuda. The module's
 * dependency then resolves to it by its soname; RTLD_LOCAL keeps its symbols out of the
 * program's global scope. */
static bool preload_cupti(char *why, size_t len)
{
	const char *env = getenv(GP_ENV_CUPTI);
	const char *dirs[] = {GP_CUDA_LIBDIR, "/usr/local/cuda/lib64",
	                      "/usr/local/cuda/extras/CUPTI/lib64"};
	char p[4200];
	if (dlopen(GP_CUPTI_SONAME, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD))
		return true;
	if (env && *env) {
		if (dlopen(env, RTLD_NOW | RTLD_LOCAL))
			return true;
		snprintf(why, len, "%s=%s: %s", GP_ENV_CUPTI, env, dlerror());
		return false;
	}
	if (dlopen(GP_CUPTI_SONAME, RTLD_NOW | RTLD_LOCAL))
		return true;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", dirs[i], GP_CUPTI_SONAME);
		if (dlopen(p, RTLD_NOW | RTLD_LOCAL))
			return true;
	}
	snprintf(why, len,
	         "%s not found (not loaded, not on the library path, not in %s or "
	         "/usr/local/cuda): set %s to its path",
	         GP_CUPTI_SONAME, GP_CUDA_LIBDIR, GP_ENV_CUPTI);
	return false;
}

static void load_cupti(void)
{
	char path[4200], why[256] = "";
	gp_inject_api_t *api;
	Dl_info info;
	if (!(g.modes & (GP_MODE_CUDA | GP_MODE_MEM)))
		return;
	if (!dladdr((void *)load_cupti, &info) || !info.dli_fname)
		return;
	snprintf(path, sizeof(path), "%s", info.dli_fname);
	char *slash = strrchr(path, '/');
	if (!slash)
		return;
	snprintf(slash + 1, sizeof(path) - (size_t)(slash + 1 - path), "libgpuprof-cupti.so");
	if (!preload_cupti(why, sizeof(why))) {
		gp_warn("%s; CUDA activity not captured", why);
		return;
	}
	g.cupti_mod = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!g.cupti_mod) {
		gp_warn("cannot load %s: %s; CUDA activity not captured", path, dlerror());
		return;
	}
	gp_cupti_start_fn start = (gp_cupti_start_fn)dlsym(g.cupti_mod, "gp_cupti_start");
	g.cupti_flush = (gp_cupti_flush_fn)dlsym(g.cupti_mod, "gp_cupti_flush");
	g.cupti_capture = (gp_cupti_capture_fn)dlsym(g.cupti_mod, "gp_cupti_capture");
	g.cupti_stream_id = (gp_cupti_stream_id_fn)dlsym(g.cupti_mod, "gp_cupti_stream_id");
	api = malloc(sizeof(*api));
	if (!start || !api)
		return;
	*api = api_template;
	api->modes = g.modes;
	api->gen = g.gen;
	/* before the first step: step index 0 decides (a window from step 0 starts on) */
	api->capture = capture_wanted(0);
	const char *fw = NULL;
	dl_iterate_phdr(framework_cb, &fw);
	api->callbacks = g.cap.how == GP_CAP_PROFILER ||
	                 ((g.modes & GP_MODE_MEM) && (!fw || gp_setting_bool(GP_ENV_ALLOC_STACKS)));
	api->flush_ms = (unsigned)gp_setting_long(GP_ENV_CUPTI_FLUSH_MS);
	api->discard = gp_setting_bool(GP_ENV_CUPTI_DISCARD);
	const char *am = gp_setting_str(GP_ENV_CUPTI_API);
	api->api_mode = am && !strcmp(am, "windows")  ? 1
	                : am && !strcmp(am, "off")    ? 2
	                : am && !strcmp(am, "calls")  ? 0
	                : g.cap.how == GP_CAP_SAMPLED ? 1 /* auto: no cost between windows */
	                                              : 0;
	if ((g.modes & GP_MODE_MEM) && !api->callbacks) {
		char msg[256];
		snprintf(msg, sizeof(msg), GP_YIELD_STACKS_FMT,
		         strstr(fw, "torch") || strstr(fw, "kineto") ? "torch.profiler"
		         : strstr(fw, "jax") || strstr(fw, "xla")    ? "jax.profiler"
		                                                     : fw);
		gp_event_t y = {
		    .type = GP_EV_YIELD, .ts = gp_clock_ns(), .b = intern(msg, strlen(msg))};
		emit(&y);
	}
	g.cap_t0 = gp_clock_ns();
	if (start(api, why, sizeof(why)) == 0) {
		atomic_store(&g.cap_cur, api->capture);
		if (g.cupti_capture)
			atomic_store(&g.cap_live, 1);
		if (api->capture != (g.modes & (GP_MODE_CUDA | GP_MODE_MEM))) {
			gp_event_t c = {
			    .type = GP_EV_CONTROL, .ts = gp_clock_ns(), .a = api->capture};
			emit(&c);
		}
	} else {
		/* another CUPTI client (nsys, ncu, sanitizer) holds it: the user's tool wins */
		gp_event_t y = {.type = GP_EV_YIELD,
		                .ts = gp_clock_ns(),
		                .a = g.modes & (GP_MODE_CUDA | GP_MODE_MEM),
		                .b = intern(why, strlen(why))};
		emit(&y);
		gp_warn("CUDA activity not captured: %s", why);
	}
}

static void cuda_init(void)
{
	init_from_cuda = true;
	pthread_once(&init_once, do_init);
	if (g.forked && getpid() != g.owner)
		child_attach();
	if (!on())
		return;
	load_cupti();
	/* without CUDA activity records, markers are the only GPU clock for the steps; with
	 * sampled windows, they are the clock of the steps between the windows */
	if ((!(g.modes & GP_MODE_CUDA) || g.cap.how == GP_CAP_SAMPLED) &&
	    gp_setting_bool(GP_ENV_STEP_MARKERS) &&
	    gp_marker_enable(emit, gp_clock_ns, intern_cstr(GP_OWN_THREAD_PREFIX "step markers")) !=
	        0)
		gp_warn("step markers unavailable (no CUDA driver functions); step times are "
		        "host periods");
}

__attribute__((visibility("default"))) int InitializeInjection(void)
{
	pthread_once(&cuda_once, cuda_init);
	return 1;
}

/* ---- framework integration (agent/python/_gpuprof.py, through ctypes) ----
 * The Python hook loads this library itself: a CPU-only PyTorch never starts CUDA or
 * NVTX, which is how the library is otherwise loaded. It attaches on its first record,
 * not at import, so a launcher that imports torch but trains nothing (torchrun) never
 * takes the ring from the workers it starts. */
__attribute__((visibility("default"))) int gpuprof_fw_attach(void)
{
	pthread_once(&init_once, do_init);
	/* a fork whose framework records (its optimizer steps): it trains, on the GPU or
	 * not, so it records into a ring of its own as at its cuInit */
	if (g.forked && getpid() != g.owner)
		child_attach();
	return on() && getpid() == g.owner;
}

/* Where this process's rank file ends up: the task's (GPUPROF_RANK_FILE), or, for one
 * of a launcher's ranks with a ring of its own, its own beside it. NULL when not
 * recording. */
__attribute__((visibility("default"))) const char *gpuprof_fw_rank_file(void)
{
	if (!on() || getpid() != g.owner)
		return NULL;
	return g.dest[0] ? g.dest : getenv(GP_ENV_RANK_FILE);
}

__attribute__((visibility("default"))) uint64_t gpuprof_fw_now(void)
{
	return gp_clock_ns();
}

/* One GP_EV_FW record (event.h lists the kinds); text, when given, is interned into b.
 * The end of an optimizer step is a step boundary: without CUDA activity records it
 * gets a completion marker, as the end of an outermost NVTX range does. */
__attribute__((visibility("default"))) void
gpuprof_fw_event(unsigned kind, unsigned dev, uint64_t a, uint64_t c, uint64_t d, const char *text)
{
	if (!on() || getpid() != g.owner || kind == 0 || kind >= GP_FW_N)
		return;
	gp_event_t e = {.type = GP_EV_FW,
	                .u8 = (uint8_t)kind,
	                .u16 = (uint16_t)(dev > 0xffff ? 0xffff : dev),
	                .tid = my_tid(),
	                .ts = gp_clock_ns(),
	                .a = a,
	                .c = c,
	                .d = d};
	if (text && *text)
		e.b = intern_cstr(text);
	emit(&e);
	if (kind == GP_FW_OPT_END) {
		gp_marker_step_end(e.ts);
		optimizer_boundary(e.ts);
	}
}

/* Layer ranges (mode layers): one start/end range per module forward or backward, in the
 * "pytorch.layers" domain (never taken for steps). Start and end may come from different
 * threads: a backward range starts in a gradient hook and may end in the autograd
 * engine's end-of-pass callback. Returns the range id, 0 when not recording. */
__attribute__((visibility("default"))) uint64_t gpuprof_fw_range_start(const char *name)
{
	static _Atomic uint32_t domain;
	if (!on() || getpid() != g.owner || !(g.modes & GP_MODE_LAYERS) || !name)
		return 0;
	uint32_t d = atomic_load_explicit(&domain, memory_order_relaxed);
	if (!d) {
		d = intern_cstr("pytorch.layers");
		atomic_store_explicit(&domain, d, memory_order_relaxed);
	}
	uint64_t id = atomic_fetch_add_explicit(&g.next_range, 1, memory_order_relaxed) + 1;
	gp_event_t e = {.type = GP_EV_NVTX_START,
	                .tid = my_tid(),
	                .ts = gp_clock_ns(),
	                .a = intern_cstr(name),
	                .b = d,
	                .c = id};
	emit(&e);
	return id;
}

__attribute__((visibility("default"))) void gpuprof_fw_range_end(uint64_t id)
{
	if (!id || !on() || getpid() != g.owner)
		return;
	gp_event_t e = {.type = GP_EV_NVTX_END, .tid = my_tid(), .ts = gp_clock_ns(), .c = id};
	emit(&e);
}
