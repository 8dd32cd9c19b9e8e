/* Ring creation, attachment and draining (see ring.h). */
#include "config.h"
#include "ring.h"
#include "log.h"

#include <errno.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

_Static_assert(sizeof(gp_ring_slot_t) == 64, "ring slot is one cache line");
_Static_assert(sizeof(gp_ring_hdr_t) <= GP_RING_DATA_OFF, "ring header fits its page");

/* PREFETCHW where the CPU has it (every x86-64 CPU of the last decade; the instruction
 * is not used on one that says it has not). */
static bool cpu_prefetchw(void)
{
#if defined(__x86_64__)
	unsigned a, b, c, d;
	return __get_cpuid(0x80000001u, &a, &b, &c, &d) && (c & (1u << 8));
#else
	return false;
#endif
}

_Static_assert(sizeof(gp_ring_lane_t) % 64 == 0, "a lane's header is whole cache lines");

/* This process's mappings of rings, numbered (gp_ring_t.id) */
static _Atomic uint32_t ring_ids;

static uint64_t page_up(uint64_t n)
{
	return (n + GP_RING_DATA_OFF - 1) & ~(uint64_t)(GP_RING_DATA_OFF - 1);
}

/* The file's length for a ring of nslots shared slots and nlanes lanes of lane_slots */
static uint64_t ring_len(uint64_t nslots, unsigned nlanes, uint64_t lane_slots)
{
	uint64_t len = GP_RING_DATA_OFF + nslots * sizeof(gp_ring_slot_t);
	if (nlanes)
		len += page_up(nlanes * sizeof(gp_ring_lane_t)) +
		       nlanes * lane_slots * sizeof(gp_ring_slot_t);
	return len;
}

static int ring_map(gp_ring_t *ring, int fd, size_t len, uint64_t nslots, unsigned nlanes,
                    uint64_t lane_slots)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -1;
	ring->hdr = p;
	ring->slots = (gp_ring_slot_t *)((char *)p + GP_RING_DATA_OFF);
	ring->mask = nslots - 1;
	ring->maplen = len;
	ring->prefetchw = cpu_prefetchw();
	ring->nlanes = nlanes;
	if (nlanes) {
		char *l = (char *)ring->slots + nslots * sizeof(gp_ring_slot_t);
		ring->lanes = (gp_ring_lane_t *)l;
		ring->lslots = (gp_ring_slot_t *)(l + page_up(nlanes * sizeof(gp_ring_lane_t)));
		ring->lmask = lane_slots - 1;
	}
	ring->id = atomic_fetch_add(&ring_ids, 1) + 1;
	return 0;
}

int gp_ring_create(gp_ring_t *ring, const char *path, uint64_t nslots)
{
	bool lanes = nslots >= GP_RING_LANES_MIN;
	return gp_ring_create_lanes(ring, path, nslots, lanes ? GP_RING_LANES : 0,
	                            !lanes             ? 0
	                            : nslots / 32 < 64 ? 64
	                                               : nslots / 32);
}

int gp_ring_create_lanes(gp_ring_t *ring, const char *path, uint64_t nslots, unsigned nlanes,
                         uint64_t lane_slots)
{
	size_t len;
	int fd, e;
	memset(ring, 0, sizeof(*ring));
	if (nslots < 64 || nslots > GP_RING_MAX_SLOTS || (nslots & (nslots - 1)) ||
	    nlanes > GP_RING_LANES ||
	    (nlanes && (lane_slots < 64 || lane_slots > GP_RING_MAX_SLOTS ||
	                (lane_slots & (lane_slots - 1)))))
		return errno = EINVAL, -1;
	len = ring_len(nslots, nlanes, lane_slots);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	e = posix_fallocate(fd, 0, (off_t)len);
	if (e) {
		close(fd);
		unlink(path);
		return errno = e, -1;
	}
	if (ring_map(ring, fd, len, nslots, nlanes, lane_slots) < 0) {
		e = errno;
		close(fd);
		unlink(path);
		return errno = e, -1;
	}
	/* The first MiB of the ring (its header and the first 16 384 records) is read into
	 * the page cache now (zeroed: the file's space is reserved, not written), so the
	 * program's first records do not fault pages in: without it (MADV_RANDOM alone) the
	 * PyTorch integration's ~2 ms steps ran ~4 % longer on the H200. It used to be the
	 * header's first touch that read ahead, as far as the disk's read_ahead_kb says:
	 * 8 MiB on the test VM (zeroing and later evicting 2 048 pages, ~2.5 ms of each
	 * task's start and end), 128 KiB on a typical node. The creator's mapping reads no
	 * further ahead (MADV_RANDOM): the agent's later faults are reads of slots not yet
	 * written; a program that made a ring of its own (a launcher's worker) faults its
	 * pages past the first MiB one at a time. */
	posix_fadvise(fd, 0, (off_t)(len < GP_RING_PREREAD ? len : GP_RING_PREREAD),
	              POSIX_FADV_WILLNEED);
	/* the lanes' headers and each lane's first 64 KiB likewise (a thread's first ranges) */
	for (unsigned k = 0; k < nlanes; k++) {
		uint64_t off = (uint64_t)((char *)gp_lane_slot(ring, k, 0) - (char *)ring->hdr);
		posix_fadvise(fd, (off_t)off,
		              (off_t)(lane_slots * sizeof(gp_ring_slot_t) < 65536
		                          ? lane_slots * sizeof(gp_ring_slot_t)
		                          : 65536),
		              POSIX_FADV_WILLNEED);
	}
	if (nlanes)
		posix_fadvise(fd, (off_t)((char *)ring->lanes - (char *)ring->hdr),
		              (off_t)(nlanes * sizeof(gp_ring_lane_t)), POSIX_FADV_WILLNEED);
	close(fd);
	madvise(ring->hdr, len, MADV_RANDOM);
	/* every slot's sequence is its index: the file's zeros; every lane free and empty */
	ring->hdr->nlanes = nlanes;
	ring->hdr->lane_slots = (uint32_t)lane_slots;
	ring->hdr->lanes_off = nlanes ? (uint64_t)((char *)ring->lanes - (char *)ring->hdr) : 0;
	ring->hdr->version = GP_RING_VERSION;
	ring->hdr->slot_size = sizeof(gp_ring_slot_t);
	ring->hdr->nslots = nslots;
	ring->hdr->created_ns = gp_now_ns();
	atomic_thread_fence(memory_order_release);
	ring->hdr->magic = GP_RING_MAGIC;
	return 0;
}

int gp_ring_attach(gp_ring_t *ring, const char *path)
{
	struct stat sb;
	int fd, e;
	gp_ring_hdr_t h;
	memset(ring, 0, sizeof(*ring));
	fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &sb) < 0 || (size_t)sb.st_size < GP_RING_DATA_OFF ||
	    pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h)) {
		close(fd);
		return errno = EINVAL, -1;
	}
	/* version 5 is version 6 without lanes: its header's lane fields are the header
	 * page's zeros (a spool left by the agent before, salvaged by this one) */
	if (h.magic == GP_RING_MAGIC && h.version == 5)
		h.nlanes = h.lane_slots = 0, h.lanes_off = 0;
	if (h.magic != GP_RING_MAGIC || (h.version != GP_RING_VERSION && h.version != 5) ||
	    h.slot_size != sizeof(gp_ring_slot_t) || h.nslots < 64 ||
	    h.nslots > GP_RING_MAX_SLOTS || (h.nslots & (h.nslots - 1)) ||
	    h.nlanes > GP_RING_LANES ||
	    (h.nlanes && (h.lane_slots < 64 || h.lane_slots > GP_RING_MAX_SLOTS ||
	                  (h.lane_slots & (h.lane_slots - 1)) ||
	                  h.lanes_off != GP_RING_DATA_OFF + h.nslots * sizeof(gp_ring_slot_t))) ||
	    (uint64_t)sb.st_size != ring_len(h.nslots, h.nlanes, h.lane_slots)) {
		close(fd);
		return errno = EINVAL, -1;
	}
	if (ring_map(ring, fd, (size_t)sb.st_size, h.nslots, h.nlanes, h.lane_slots) < 0) {
		e = errno;
		close(fd);
		return errno = e, -1;
	}
	close(fd);
	return 0;
}

/* The lane's process has ended (its pid no longer exists). errno kept. */
static bool lane_dead_owner(uint64_t owner)
{
	pid_t pid = (pid_t)(owner >> 32);
	int e = errno;
	bool dead = pid > 0 && pid != getpid() && kill(pid, 0) < 0 && errno == ESRCH;
	errno = e;
	return dead;
}

int gp_ring_lane_claim(gp_ring_t *ring, uint32_t owner)
{
	if (!owner || !ring->hdr)
		return -1;
	uint64_t me = (uint64_t)(uint32_t)getpid() << 32 | owner;
	for (int pass = 0; pass < 2; pass++) {
		for (unsigned k = 0; k < ring->nlanes; k++) {
			gp_ring_lane_t *l = &ring->lanes[k];
			uint64_t z = atomic_load_explicit(&l->owner, memory_order_acquire);
			/* the second pass: lanes whose process is gone with nothing open on
			 * them (a program that ran before this one under the same agent) */
			if (z && (pass == 0 || !lane_dead_owner(z) ||
			          atomic_load_explicit(&l->depth, memory_order_relaxed)))
				continue;
			/* acquire: the last owner's head and depth come before ours */
			if (atomic_compare_exchange_strong_explicit(
			        &l->owner, &z, me, memory_order_acquire, memory_order_relaxed)) {
				atomic_store_explicit(&l->closed, 0, memory_order_relaxed);
				return (int)k;
			}
		}
	}
	return -1;
}

/* Lane k's open range at level i as the push record it would have been */
static bool lane_open_event(const gp_ring_lane_t *l, unsigned i, uint32_t tid, gp_event_t *e)
{
	const gp_lane_open_t *o = &l->open[i];
	if (!o->ts)
		return false;
	*e = (gp_event_t){.type = GP_EV_NVTX_PUSH,
	                  .u16 = (uint16_t)(i + 1),
	                  .tid = tid,
	                  .ts = o->ts,
	                  .a = o->name,
	                  .c = o->payload,
	                  .d = o->color};
	return true;
}

static unsigned lane_depth(const gp_ring_lane_t *l)
{
	unsigned n = atomic_load_explicit(&l->depth, memory_order_acquire);
	return n < GP_LANE_STACK ? n : GP_LANE_STACK;
}

void gp_ring_lane_release(gp_ring_t *ring, unsigned k)
{
	if (!ring->hdr || k >= ring->nlanes)
		return;
	gp_ring_lane_t *l = &ring->lanes[k];
	uint32_t tid = (uint32_t)atomic_load_explicit(&l->owner, memory_order_relaxed);
	gp_event_t e;
	for (unsigned i = 0, n = lane_depth(l); i < n; i++)
		if (lane_open_event(l, i, tid, &e))
			gp_ring_push(ring, &e);
	atomic_store_explicit(&l->depth, 0, memory_order_relaxed);
	/* release: our head and depth before the next owner's claim */
	atomic_store_explicit(&l->owner, 0, memory_order_release);
}

void gp_ring_detach(gp_ring_t *ring)
{
	if (ring && ring->hdr) {
		munmap(ring->hdr, ring->maplen);
		ring->hdr = NULL;
		/* no lane of it is reached again: a thread's lane names a ring id that is gone */
		ring->nlanes = 0;
		ring->lanes = NULL;
		ring->lslots = NULL;
		ring->id = atomic_fetch_add(&ring_ids, 1) + 1;
	}
}

void gp_ring_wake_init(gp_ring_t *ring)
{
	gp_ring_hdr_t *h = ring->hdr;
	pid_t agent = (pid_t)atomic_load(&h->agent_pid);
	ring->wake = false;
	ring->wake_fd = -1;
	if (agent <= 0)
		return;
	int e = errno;                                   /* the program's, whose call we are in */
	int fd = (int)syscall(SYS_pidfd_open, agent, 0); /* always close-on-exec */
	errno = e;
	if (fd < 0 && getppid() != agent) {
		atomic_store(&h->wake_off, 1);
		return;
	}
	ring->wake_fd = fd;
	/* a sixteenth of the ring: at 2 M records/s, 8 ms of its 131; a quarter of a lane */
	ring->wake_mask = (ring->mask + 1) / 16 - 1;
	ring->lwake_mask = ring->nlanes ? (ring->lmask + 1) / 4 - 1 : 0;
	ring->wake = true;
}

void gp_ring_wake(gp_ring_t *ring)
{
	gp_ring_hdr_t *h = ring->hdr;
	if (!atomic_load_explicit(&h->agent_idle, memory_order_relaxed) ||
	    !atomic_exchange(&h->agent_idle, 0))
		return;
	/* SIGCHLD: blocked and read from a signalfd by the agent, which then looks at its
	 * rings; ignored by default, so harmless to anyone else */
	int e = errno, r = ring->wake_fd >= 0 ? (int)syscall(SYS_pidfd_send_signal, ring->wake_fd,
	                                                     SIGCHLD, NULL, 0)
	                                      : kill((pid_t)atomic_load(&h->agent_pid), SIGCHLD);
	if (r < 0) { /* gone, or not ours to signal: it looks every 100 ms */
		atomic_store(&h->wake_off, 1);
		ring->wake = false;
	}
	errno = e;
}

/* The prefaulting thread: the ring's pages from the one after pos to the ring's end,
 * then from its start, a mebibyte a call
 * (each call holds the process's mmap lock for reading, briefly: a thread of the
 * program's that maps memory meanwhile waits for one mebibyte at most). A kernel
 * before 5.14 has no MADV_POPULATE_WRITE: the pages are then read into the page cache
 * (MADV_WILLNEED), so that the faults left are minor ones. */
typedef struct prefault_job {
	char *from, *end, *start; /* [from, end), then [start, from): the lap after pos */
} prefault_job_t;

static int prefault_range(char *p, char *end)
{
	for (; p < end; p += 1u << 20) {
		size_t n = (size_t)(end - p) < (1u << 20) ? (size_t)(end - p) : 1u << 20;
		if (madvise(p, n, MADV_POPULATE_WRITE) != 0)
			return errno; /* EINVAL: an older kernel; ENOMEM: no longer mapped */
	}
	return 0;
}

static void *prefault_main(void *arg)
{
	prefault_job_t j = *(prefault_job_t *)arg;
	/* only on a CPU the program leaves idle (it inherited the caller's policy and
	 * affinity): where there is none, the producer faults its pages in itself, as before */
	struct sched_param sp = {0};
	if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp) != 0)
		setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
	int e = prefault_range(j.from, j.end);
	if (!e)
		e = prefault_range(j.start, j.from);
	if (e == EINVAL) /* no MADV_POPULATE_WRITE: the whole ring into the page cache */
		madvise(j.start, (size_t)(j.end - j.start), MADV_WILLNEED);
	return NULL;
}

void gp_ring_prefault_init(gp_ring_t *ring)
{
	ring->wake_mask = (ring->mask + 1) / 16 - 1;
	ring->lwake_mask = ring->nlanes ? (ring->lmask + 1) / 4 - 1 : 0;
	atomic_store(&ring->prefault, true);
}

/* The rest of the ring after pos, by a detached thread with every signal blocked (the
 * program's handlers are not for it); never waits, errno kept: this runs inside one of
 * the program's calls. */
static void prefault_start(gp_ring_t *ring, uint64_t pos)
{
	/* no malloc of ours on the program's path; one job a process (gp_ring_tick starts it
	 * once: ring->prefault). Where no thread can be made, the producer faults its pages
	 * in itself, as before. */
	static prefault_job_t job;
	const long pg = sysconf(_SC_PAGESIZE) > 0 ? sysconf(_SC_PAGESIZE) : 4096;
	uintptr_t a = (uintptr_t)&ring->slots[(pos & ring->mask) + 1];
	pthread_attr_t at;
	pthread_t t;
	sigset_t all, old;
	int e = errno;
	job.from = (char *)((a + (uintptr_t)pg - 1) & ~((uintptr_t)pg - 1));
	job.end = (char *)ring->hdr + ring->maplen;
	job.start = (char *)ring->slots;
	if (job.from > job.end)
		job.from = job.end;
	sigfillset(&all);
	if (pthread_attr_init(&at) == 0) {
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&at, 64 * 1024);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		pthread_create(&t, &at, prefault_main, &job);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		pthread_attr_destroy(&at);
	}
	errno = e;
}

void gp_ring_tick(gp_ring_t *ring, uint64_t pos)
{
	if (ring->wake)
		gp_ring_wake(ring);
	/* the first sixteenth is full (the agent read its first mebibyte in already) */
	if (pos && atomic_load_explicit(&ring->prefault, memory_order_relaxed) &&
	    atomic_exchange(&ring->prefault, false))
		prefault_start(ring, pos);
}

void gp_ring_lane_tick(gp_ring_t *ring, uint64_t pos)
{
	if (ring->wake)
		gp_ring_wake(ring);
	/* a quarter of a lane is full (not its first record: a process that records little
	 * never pays): the rest of the ring's pages, the lanes' among them */
	if (pos && atomic_load_explicit(&ring->prefault, memory_order_relaxed) &&
	    atomic_exchange(&ring->prefault, false))
		prefault_start(ring, atomic_load_explicit(&ring->hdr->head, memory_order_relaxed));
}

/* Give the slots of records up to ring->rd (lrd[k] in lane k) back to the producers: tail
 * moves (release: our reads of those slots come before a producer's next write of them).
 * Whatever the program scribbled over tail, our own cursor is what is stored. */
static void release(gp_ring_t *ring)
{
	atomic_store_explicit(&ring->hdr->tail, ring->rd, memory_order_release);
	for (unsigned k = 0; k < ring->nlanes; k++) {
		atomic_store_explicit(&ring->lanes[k].tail, ring->lrd[k], memory_order_release);
		/* its open ranges are in the file now (if the lane has not changed hands) */
		if (ring->lforced[k] &&
		    ring->lforced[k] ==
		        atomic_load_explicit(&ring->lanes[k].owner, memory_order_relaxed))
			atomic_store_explicit(&ring->lanes[k].closed, 1, memory_order_relaxed);
	}
}

/* One record taken off the ring into w (NULL: counted lost). held: how far the cursor is
 * ahead of what was released. -1 on a write error. */
static int take(gp_ring_t *ring, gp_rf_writer_t *w, const gp_event_t *ev, uint64_t held,
                uint64_t quarter)
{
	if (!w) { /* nowhere to write: taken off the ring and counted */
		gp_ring_lost(ring, GP_LOSS_WRITE, 1);
		release(ring);
		return 0;
	}
	if (gp_rf_append(w, ev) < 0) /* it is among w's pending records, which */
		return -1;           /* the caller counts when it gives w up */
	/* written (an automatic flush), or a quarter of the ring held back */
	if (!gp_rf_pending(w) || held > quarter)
		return gp_ring_commit(ring, w);
	return 0;
}

/* The lanes' records, then with force (their threads are gone) the ranges left open on
 * them, as pushes. A head the program scribbled over moves the cursor one lane's worth at
 * most a call. */
static long drain_lanes(gp_ring_t *ring, gp_rf_writer_t *w, bool force)
{
	long moved = 0;
	uint64_t lslots = ring->lmask + 1;
	for (unsigned k = 0; k < ring->nlanes; k++) {
		gp_ring_lane_t *l = &ring->lanes[k];
		uint64_t head = atomic_load_explicit(&l->head, memory_order_acquire);
		for (uint64_t budget = lslots; budget-- > 0 && ring->lrd[k] != head;) {
			if (head - ring->lrd[k] > lslots) { /* not a head a producer wrote: */
				ring->lrd[k] = head; /* what it skips is lost (released with */
				gp_ring_lost(ring, GP_LOSS_DEAD_THREAD, 1); /* the next commit) */
				break;
			}
			gp_event_t ev = gp_lane_slot(ring, k, ring->lrd[k])->ev;
			ring->lrd[k]++;
			moved++;
			uint64_t held =
			    ring->lrd[k] - atomic_load_explicit(&l->tail, memory_order_relaxed);
			if (take(ring, w, &ev, held, lslots / 4) < 0)
				return -1;
		}
		/* once per lane and consumer, once in the file whatever consumer comes later,
		 * and only for a process that has ended (ours: at its exit): a live one's open
		 * ranges are still to be closed, and written here they would be twice */
		uint64_t own = atomic_load_explicit(&l->owner, memory_order_relaxed);
		uint32_t tid = (uint32_t)own;
		if (!force || !tid || ring->lforced[k] == own ||
		    atomic_load_explicit(&l->closed, memory_order_relaxed) ||
		    ((pid_t)(own >> 32) != getpid() && !lane_dead_owner(own)))
			continue;
		ring->lforced[k] = own;
		unsigned n = lane_depth(l);
		gp_event_t e, last = {0};
		/* a death between a pop's record and its depth store: the record is there */
		if (n && head)
			last = gp_lane_slot(ring, k, head - 1)->ev;
		for (unsigned i = 0; i < n; i++) {
			if (!lane_open_event(l, i, tid, &e))
				continue;
			if (i == n - 1 && last.type == GP_EV_NVTX_RANGE && last.tid == tid &&
			    last.ts == e.ts && last.u16 == i)
				continue;
			moved++;
			if (take(ring, w, &e, 0, 0) < 0)
				return -1;
		}
	}
	return moved;
}

int gp_ring_commit(gp_ring_t *ring, gp_rf_writer_t *w)
{
	if (w && gp_rf_flush(w) < 0)
		return -1;
	if (ring->rd_set)
		release(ring);
	return 0;
}

long gp_ring_drain(gp_ring_t *ring, gp_rf_writer_t *w, bool force, uint64_t *lost)
{
	gp_ring_hdr_t *h = ring->hdr;
	uint64_t nslots = ring->mask + 1;
	long moved = 0;
	if (!ring->rd_set) {
		ring->rd = atomic_load_explicit(&h->tail, memory_order_relaxed);
		for (unsigned k = 0; k < ring->nlanes; k++)
			ring->lrd[k] =
			    atomic_load_explicit(&ring->lanes[k].tail, memory_order_relaxed);
		ring->rd_set = true;
	}
	for (uint64_t budget = nslots; budget-- > 0;) {
		uint64_t pos = ring->rd;
		gp_ring_slot_t *s = &ring->slots[pos & ring->mask];
		uint64_t seq = gp_slot_seq(ring, pos, memory_order_acquire);
		if (seq == pos + 1) {
			gp_event_t ev = s->ev;
			ring->rd++;
			moved++;
			if (take(ring, w, &ev,
			         ring->rd - atomic_load_explicit(&h->tail, memory_order_relaxed),
			         nslots / 4) < 0)
				return -1;
			continue;
		}
		/* Not published. With force, skip slots a dead producer had claimed: at most
		 * one ring's worth, whatever a corrupted head says. */
		if (force && pos < atomic_load_explicit(&h->head, memory_order_acquire)) {
			ring->rd++;
			gp_ring_lost(ring, GP_LOSS_DEAD_THREAD, 1);
			if (lost)
				(*lost)++;
			continue;
		}
		break;
	}
	long lm = drain_lanes(ring, w, force);
	if (lm < 0)
		return -1;
	moved += lm;
	if (force && gp_ring_commit(ring, w) < 0)
		return -1;
	return moved;
}

void gp_ring_write_losses(const gp_ring_t *ring, gp_rf_writer_t *w, const uint64_t *extra)
{
	uint64_t n[GP_LOSS_N] = {0};
	if (!w)
		return;
	if (ring && ring->hdr) {
		for (unsigned c = 1; c < GP_LOSS_N; c++)
			n[c] = atomic_load_explicit(&ring->hdr->lost[c], memory_order_relaxed);
		n[GP_LOSS_RING] += atomic_load_explicit(&ring->hdr->drops, memory_order_relaxed);
	}
	for (unsigned c = 1; extra && c < GP_LOSS_N; c++)
		n[c] += extra[c];
	uint64_t now = gp_now_ns();
	for (unsigned c = 1; c < GP_LOSS_N; c++) {
		if (c == GP_LOSS_CAP)
			n[c] += gp_rf_dropped(w);
		if (!n[c])
			continue;
		gp_event_t e = {.type = GP_EV_LOSS, .ts = now, .u8 = (uint8_t)c, .a = n[c]};
		gp_rf_append(w, &e);
	}
}
