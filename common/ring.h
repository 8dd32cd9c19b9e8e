/* The shared event ring: a file-backed mapping in the node-local spool, written by the
 * application's threads (multi-producer), drained by the agent (single consumer).
 * Bounded multi-producer queue: a producer claims a position with one CAS on head, where
 * the consumer's tail says the slot is free, and publishes it with a release store of the
 * slot's sequence number (position + 1); a full ring drops the record and counts it.
 * The consumer never writes a slot (it moves tail once what it read is in the rank file):
 * the lines a producer writes were last written by itself, not by the agent's core (after
 * Vyukov, whose consumer rewrites every slot's sequence: each push then fetched its line
 * from the agent's cache). Producers never block and take no lock. Because the
 * mapping is a file, records published before the application died are still there for
 * the agent or for `gpuprof salvage`.
 *
 * Lanes (version 6): after the shared slots, GP_RING_LANES lanes of one producer each.
 * A thread takes one at its first outermost NVTX push and gives it back when it ends;
 * its push records nothing in the ring (the range's start waits in the lane's open[],
 * which is in the file too), and its pop writes the whole range as one record
 * (GP_EV_NVTX_RANGE) into the lane with a plain store of the lane's head: no locked
 * instruction and one record a pair instead of two on the library's hottest path. A
 * lane's records are self-contained, so their order against the shared slots' does not
 * matter; a full lane sends the record to the shared slots (nothing is dropped that the
 * shared slots would have held), and ranges the program left open when it died are in
 * open[] for the agent's last drain (gp_ring_drain with force) to write as pushes. */
#ifndef GP_RING_H
#define GP_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "event.h"
#include "rankfile.h"

#define GP_RING_MAGIC 0x474e495250475047ull /* "GPGPRING" */
/* 3: slots hold their sequence less their index; 4: the agent sleeps until woken
 * (agent_pid, agent_idle, wake_off); 5: free slots known from tail, the consumer writes
 * no slot; 6: lanes of one producer each */
#define GP_RING_VERSION       6
#define GP_RING_DEFAULT_SLOTS (1u << 18) /* 16 MiB */
/* The most slots (shared, or one lane's) a ring that is attached may say it has: four times
 * what any agent has made. Root's salvage walks a ring's slots, and a user's spool may hold
 * a ring of their own making: one of 2^36 slots on a sparse 4 TiB file held the node's
 * epilog a minute per step record (and faulted in tmpfs pages outside any cgroup). */
#define GP_RING_MAX_SLOTS (1u << 20)
#define GP_RING_PREREAD   (1u << 20) /* bytes read into the page cache at creation */
#define GP_RING_LANES     8          /* lanes of one producer each (at most) */
#define GP_RING_LANES_MIN 1024       /* a ring of fewer slots has no lanes */
#define GP_LANE_STACK     64         /* a lane's open ranges kept in the file */

typedef struct gp_ring_slot {
	/* the position + 1 of the record last published here, less the slot's index
	 * (gp_slot_seq): a new ring's slot i reads sequence i, "not published at position
	 * i", which a freshly allocated (zeroed) file already says, so creating a ring
	 * touches none of its 16 MiB (it took 58 ms of page faults per task, more than the
	 * rest of the agent's start) */
	_Atomic uint64_t seq;
	gp_event_t ev;
	uint64_t pad;
} gp_ring_slot_t;

/* A range pushed on a lane's thread and not yet popped (level = its index in open[]) */
typedef struct gp_lane_open {
	uint64_t ts; /* 0: not a paired range (the lane was taken above it) */
	uint32_t name;
	uint32_t pad;
	uint64_t payload, color;
} gp_lane_open_t;

/* One producer's lane: owner, head, depth and open[] written by the thread that owns it
 * (taken with a CAS on owner, given back with owner 0); tail by the consumer alone. head
 * moves only once the record before it is written: a lane has no claimed slot to wait
 * for or to skip. */
typedef struct gp_ring_lane {
	/* the owning thread's record tid, its process's pid above bit 32 (one word: taken
	 * with one CAS); 0: free. A lane of a process that has ended with nothing open on
	 * it is taken again (a main thread never gives its lane back). */
	_Atomic uint64_t owner;
	char pad0[56];
	_Atomic uint64_t head __attribute__((aligned(64)));
	_Atomic uint32_t depth; /* entries of open[] in use */
	char pad1[52];
	_Atomic uint64_t tail __attribute__((aligned(64)));
	/* the consumer's: 1 once the ranges open on the lane when its process ended are in
	 * the rank file (a later consumer, salvage, writes them no second time); 0 again
	 * when a thread takes the lane */
	_Atomic uint32_t closed;
	char pad2[52];
	gp_lane_open_t open[GP_LANE_STACK];
} gp_ring_lane_t;

typedef struct gp_ring_hdr {
	uint64_t magic;
	uint32_t version;
	uint32_t slot_size;
	uint64_t nslots;
	uint64_t created_ns;
	_Atomic uint32_t writer_pid; /* last process that attached as producer */
	_Atomic uint32_t modes;      /* modes the agent asks the library to capture */
	_Atomic uint64_t drops;      /* records lost to a full ring */
	/* records lost by cause (GP_LOSS_*), counted by whoever lost them: the producers
	 * (table full, nesting, CUPTI), the consumer (a dead producer's slot) */
	_Atomic uint64_t lost[GP_LOSS_N];
	/* the one process of the task whose records this ring carries (the first to attach,
	 * see agent/inject/startup.c); the others count in lost[GP_LOSS_PROCESSES] */
	_Atomic uint32_t recorder_pid;
	_Atomic uint32_t generations; /* recorders so far */
	/* rings of the task's other processes (a launcher's workers: agent/inject/startup.c), each
	 * in SPOOL/rankR/ring: bumped once such a ring is complete, so the agent looks */
	_Atomic uint32_t procs;
	/* 1: the recorder has no RANK of its own (a launcher, like torchrun, that touched
	 * CUDA or NVTX before its workers): a worker whose RANK is the task's then records
	 * into a ring of its own (agent/inject/startup.c) */
	_Atomic uint32_t recorder_unranked;
	/* The agent looks at quiet rings once per flush (0.5 s), and a producer wakes it
	 * (gp_ring_wake) when it crosses a sixteenth of the ring while the agent sleeps: an
	 * idle agent costs nothing between looks, a busy ring is drained within
	 * milliseconds. agent_pid: whom to wake (0: nobody, the library drains itself);
	 * agent_idle: 1 while the agent sleeps, taken by the producer that wakes it;
	 * wake_off: 1 once a producer could not wake it (no pidfd, not permitted): the
	 * agent then looks every 100 ms, as before there was a wake-up. */
	_Atomic uint32_t agent_pid;
	_Atomic uint32_t agent_idle;
	_Atomic uint32_t wake_off;
	/* rings of other processes begun (the library takes one before it makes a ring,
	 * agent/inject/startup.c): at most GP_SPOOL_MAX_PROCS are made */
	_Atomic uint32_t procs_claimed;
	char pad0[40];
	_Atomic uint64_t head __attribute__((aligned(64)));
	char pad1[56];
	_Atomic uint64_t tail __attribute__((aligned(64)));
	char pad2[56];
	/* lanes: nlanes (0: none) of lane_slots slots each; their gp_ring_lane_t array at
	 * lanes_off (after the shared slots), their slots after it from the next page */
	uint32_t nlanes;
	uint32_t lane_slots;
	uint64_t lanes_off;
} gp_ring_hdr_t;

#define GP_RING_DATA_OFF 4096

typedef struct gp_ring {
	gp_ring_hdr_t *hdr;
	gp_ring_slot_t *slots;
	uint64_t mask;
	size_t maplen;
	/* consumer: records before rd are in the writer; the slots between the header's tail
	 * and rd are released only once the writer has written them to its file, so a
	 * consumer killed with records in its buffer leaves them in the ring for salvage */
	uint64_t rd;
	bool rd_set;
	/* producer: wake the agent at every wake_mask + 1 positions (gp_ring_wake_init) */
	bool wake;
	int wake_fd; /* a pidfd of the agent, or -1: kill() the parent agent */
	uint64_t wake_mask;
	/* producer: fault the ring's pages in ahead of its first lap (gp_ring_prefault_init) */
	_Atomic bool prefault;
	bool prefetchw; /* producer: the CPU has PREFETCHW (CPUID 80000001h ECX bit 8) */
	/* lanes (0 of them in a ring without) */
	unsigned nlanes;
	gp_ring_lane_t *lanes;
	gp_ring_slot_t *lslots; /* lane k's slots: lslots + k * (lmask + 1) */
	uint64_t lmask;
	uint64_t lwake_mask;         /* producer: tick at every quarter of a lane */
	uint64_t lrd[GP_RING_LANES]; /* consumer: as rd, a lane's */
	/* consumer: the owner word whose open ranges on the lane were written (closed in the
	 * ring once they are in the file); 0: none */
	uint64_t lforced[GP_RING_LANES];
	uint32_t id; /* this process's mapping of it, numbered (a thread's lane names its
	              * ring by it: a ring mapped later may land at the same address) */
} gp_ring_t;

/* Create the ring file at path (O_EXCL, mode 0600) with its space reserved up front
 * (posix_fallocate) so that a full spool fails here, in the agent, and never later as a
 * SIGBUS inside the application. nslots must be a power of two. */
int gp_ring_create(gp_ring_t *ring, const char *path, uint64_t nslots);
/* The same with nlanes lanes of lane_slots slots (a power of two, at least 64); nlanes
 * 0: none. gp_ring_create gives a ring of GP_RING_LANES_MIN slots or more 8 lanes of a
 * thirty-second of its slots each (8 192 of the default's 262 144: 4 MiB more). */
int gp_ring_create_lanes(gp_ring_t *ring, const char *path, uint64_t nslots, unsigned nlanes,
                         uint64_t lane_slots);
/* Map an existing ring (the injected library, salvage). Validates the header. */
int gp_ring_attach(gp_ring_t *ring, const char *path);
void gp_ring_detach(gp_ring_t *ring);

/* A slot's sequence number (ring positions), loaded and stored through its index. */
static inline uint64_t gp_slot_seq(const gp_ring_t *ring, uint64_t pos, memory_order mo)
{
	return atomic_load_explicit(&ring->slots[pos & ring->mask].seq, mo) + (pos & ring->mask);
}
static inline void gp_slot_set_seq(gp_ring_t *ring, uint64_t pos, uint64_t seq, memory_order mo)
{
	atomic_store_explicit(&ring->slots[pos & ring->mask].seq, seq - (pos & ring->mask), mo);
}

/* Producer side: make pushes into ring wake its sleeping agent (hdr->agent_pid), through
 * a pidfd of it. Without one (a kernel before 5.3) the agent is woken with kill() when it
 * is this process's parent, else not at all (hdr->wake_off: the agent keeps looking every
 * 100 ms). The pidfd is close-on-exec and never closed: a process records into one ring
 * for as long as it lives. */
void gp_ring_wake_init(gp_ring_t *ring);
/* Wake the agent if it sleeps (one signal per sleep; never blocks). */
void gp_ring_wake(gp_ring_t *ring);
/* Producer side: once this process has filled a sixteenth of the ring (it records a lot),
 * a thread of ours faults the rest of the ring's pages into this process's page tables
 * (MADV_POPULATE_WRITE, a mebibyte at a time, at SCHED_IDLE: only on a CPU the program
 * leaves idle), so the program's own writes of the first
 * lap do not each take a page fault (bench/nvtx-cost.sh: a fault every 64 records cost
 * ~100 ns a push+pop through the first 262 144 records). A process that records little
 * never pays for it. */
void gp_ring_prefault_init(gp_ring_t *ring);
/* What a producer does at each sixteenth of the ring (wake_mask): out of line. */
void gp_ring_tick(gp_ring_t *ring, uint64_t pos);

/* Producer side, a record written in place: claim a slot (NULL when the ring was full,
 * counted in hdr->drops; never blocks), fill its ev, then publish it. A claimed slot must
 * be published: the consumer waits for it (or, once the producers are gone, skips it as
 * a dead thread's). */
static inline gp_ring_slot_t *gp_ring_claim(gp_ring_t *ring, uint64_t *posp)
{
	gp_ring_hdr_t *h = ring->hdr;
	uint64_t pos = atomic_load_explicit(&h->head, memory_order_relaxed);
	for (;;) {
		/* free where the consumer has taken it off (tail; acquire: its reads of the
		 * slot's last record come before our write) */
		if (pos - atomic_load_explicit(&h->tail, memory_order_acquire) > ring->mask) {
			atomic_fetch_add_explicit(&h->drops, 1, memory_order_relaxed);
			return NULL;
		}
		if (atomic_compare_exchange_weak_explicit(
		        &h->head, &pos, pos + 1, memory_order_relaxed, memory_order_relaxed))
			break;
	}
	/* the next records' slots, fetched for writing now: lines the consumer read a lap ago,
	 * taken with write intent where the CPU can (PREFETCHW), so that a later record's
	 * stores, and the locked CAS that waits for them, do not wait for the line. Measured
	 * (bench/nvtx-cost.sh): 16 slots ahead with PREFETCHW, -12 % a push+pop against 8
	 * ahead without; 32 ahead gained nothing. */
	const gp_ring_slot_t *next = &ring->slots[(pos + 16) & ring->mask];
#if defined(__x86_64__)
	if (ring->prefetchw)
		__asm__ volatile("prefetchw %0" ::"m"(*next));
	else
#endif
		__builtin_prefetch(next, 1, 3);
	*posp = pos;
	return &ring->slots[pos & ring->mask];
}

static inline void gp_ring_publish(gp_ring_t *ring, uint64_t pos)
{
	gp_slot_set_seq(ring, pos, pos + 1, memory_order_release);
	if (!(pos & ring->wake_mask) && ring->wake_mask)
		gp_ring_tick(ring, pos);
}

/* Producer side, a record built elsewhere: false when the ring was full. */
static inline bool gp_ring_push(gp_ring_t *ring, const gp_event_t *ev)
{
	uint64_t pos;
	gp_ring_slot_t *s = gp_ring_claim(ring, &pos);
	if (!s)
		return false;
	s->ev = *ev;
	gp_ring_publish(ring, pos);
	return true;
}

/* Producer side, lanes. Take a free lane for the calling thread, whose record tid is
 * owner (never 0): its index, or -1 when none is free (the thread writes to the shared
 * slots). The thread is the lane's only writer until it gives it back. */
int gp_ring_lane_claim(gp_ring_t *ring, uint32_t owner);
/* Give lane k back (its thread ends): ranges still open on it are written to the shared
 * slots as pushes first (the thread ended inside them). */
void gp_ring_lane_release(gp_ring_t *ring, unsigned k);
/* What a producer does at each quarter of a lane (pos: the lane's): out of line. */
void gp_ring_lane_tick(gp_ring_t *ring, uint64_t pos);

static inline gp_ring_slot_t *gp_lane_slot(const gp_ring_t *ring, unsigned k, uint64_t pos)
{
	return &ring->lslots[(uint64_t)k * (ring->lmask + 1) + (pos & ring->lmask)];
}

/* Write one record into lane k, whose owner calls this: claim its slot (NULL when the
 * lane is full: the caller sends the record to the shared slots), fill the record in
 * place, publish it. *lim is the owner's cached limit (the consumer's tail plus the
 * lane's size, read again only when the head reaches it: the consumer's line is fetched
 * once in a while, not at every record). */
static inline gp_event_t *gp_ring_lane_claim_slot(gp_ring_t *ring, unsigned k, uint64_t *lim,
                                                  uint64_t *posp)
{
	gp_ring_lane_t *l = &ring->lanes[k];
	uint64_t pos = atomic_load_explicit(&l->head, memory_order_relaxed);
	if (pos - *lim < (1ull << 63)) { /* pos >= lim: look at the consumer's tail again */
		*lim = atomic_load_explicit(&l->tail, memory_order_acquire) + ring->lmask + 1;
		if (pos - *lim < (1ull << 63))
			return NULL;
	}
	*posp = pos;
	return &gp_lane_slot(ring, k, pos)->ev;
}

static inline void gp_ring_lane_publish(gp_ring_t *ring, unsigned k, uint64_t pos)
{
	/* release: the record before the head that says it is there */
	atomic_store_explicit(&ring->lanes[k].head, pos + 1, memory_order_release);
	if (!(pos & ring->lwake_mask) && ring->lwake_mask)
		gp_ring_lane_tick(ring, pos);
}

static inline void gp_ring_lost(gp_ring_t *ring, unsigned cause, uint64_t n)
{
	if (ring->hdr && cause < GP_LOSS_N)
		atomic_fetch_add_explicit(&ring->hdr->lost[cause], n, memory_order_relaxed);
}

/* Consumer side: move published records into the writer (w NULL: count them as
 * GP_LOSS_WRITE). A slot is released once the writer has put its record in the file
 * (gp_rf_pending() is 0: an automatic flush, or gp_ring_commit). With force (the
 * producers are gone), a claimed-but-unpublished slot is skipped instead of waited for,
 * counted as GP_LOSS_DEAD_THREAD, and everything is flushed and released. One call moves
 * at most one ring's worth, so a header scribbled over by the program cannot make it
 * spin. Returns records moved, -1 on a write error (the records w had not written,
 * gp_rf_pending(), are the caller's to count as GP_LOSS_WRITE). */
long gp_ring_drain(gp_ring_t *ring, gp_rf_writer_t *w, bool force, uint64_t *lost);
/* Flush the writer and release the slots of what it wrote. -1 on a write error. */
int gp_ring_commit(gp_ring_t *ring, gp_rf_writer_t *w);

/* Append the running loss totals as GP_EV_LOSS records: the ring's causes (ring full
 * included) plus extra[] from the caller (NULL: none) and w's own byte-cap drops. */
void gp_ring_write_losses(const gp_ring_t *ring, gp_rf_writer_t *w, const uint64_t *extra);

#endif
