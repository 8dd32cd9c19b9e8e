/* The shared event ring: a file-backed mapping in the node-local spool, written by the
 * application's threads (multi-producer), drained by the agent (single consumer).
 * Bounded MPMC queue after D. Vyukov: each slot carries a sequence number; a producer
 * claims a slot with one CAS on head and publishes it with a release store; a full ring
 * drops the record and counts it. Producers never block and take no lock. Because the
 * mapping is a file, records published before the application died are still there for
 * the agent or for `gpuprof salvage`. */
#ifndef GP_RING_H
#define GP_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "event.h"
#include "rankfile.h"

#define GP_RING_MAGIC         0x474e495250475047ull /* "GPGPRING" */
#define GP_RING_VERSION       1
#define GP_RING_DEFAULT_SLOTS (1u << 18) /* 16 MiB */

typedef struct gp_ring_slot {
	_Atomic uint64_t seq;
	gp_event_t ev;
	uint64_t pad;
} gp_ring_slot_t;

typedef struct gp_ring_hdr {
	uint64_t magic;
	uint32_t version;
	uint32_t slot_size;
	uint64_t nslots;
	uint64_t created_ns;
	_Atomic uint32_t writer_pid; /* last process that attached as producer */
	_Atomic uint32_t modes;      /* modes the agent asks the library to capture */
	_Atomic uint64_t drops;      /* records lost to a full ring */
	char pad0[64];
	_Atomic uint64_t head __attribute__((aligned(64)));
	char pad1[56];
	_Atomic uint64_t tail __attribute__((aligned(64)));
	char pad2[56];
} gp_ring_hdr_t;

#define GP_RING_DATA_OFF 4096

typedef struct gp_ring {
	gp_ring_hdr_t *hdr;
	gp_ring_slot_t *slots;
	uint64_t mask;
	size_t maplen;
} gp_ring_t;

/* Create the ring file at path (O_EXCL, mode 0600) with its space reserved up front
 * (posix_fallocate) so that a full spool fails here, in the agent, and never later as a
 * SIGBUS inside the application. nslots must be a power of two. */
int gp_ring_create(gp_ring_t *ring, const char *path, uint64_t nslots);
/* Map an existing ring (the injected library, salvage). Validates the header. */
int gp_ring_attach(gp_ring_t *ring, const char *path);
void gp_ring_detach(gp_ring_t *ring);

/* Producer side: never blocks; false when the ring was full (counted in hdr->drops). */
static inline bool gp_ring_push(gp_ring_t *ring, const gp_event_t *ev)
{
	gp_ring_hdr_t *h = ring->hdr;
	uint64_t pos = atomic_load_explicit(&h->head, memory_order_relaxed);
	gp_ring_slot_t *s;
	for (;;) {
		s = &ring->slots[pos & ring->mask];
		uint64_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
		int64_t dif = (int64_t)(seq - pos);
		if (dif == 0) {
			if (atomic_compare_exchange_weak_explicit(&h->head, &pos, pos + 1,
			                                          memory_order_relaxed,
			                                          memory_order_relaxed))
				break;
		} else if (dif < 0) {
			atomic_fetch_add_explicit(&h->drops, 1, memory_order_relaxed);
			return false;
		} else {
			pos = atomic_load_explicit(&h->head, memory_order_relaxed);
		}
	}
	s->ev = *ev;
	atomic_store_explicit(&s->seq, pos + 1, memory_order_release);
	return true;
}

/* Consumer side: move every published record into the writer. With force (the
 * producers are gone), a claimed-but-unpublished slot is skipped instead of waited for.
 * Returns records moved, -1 on a write error. */
long gp_ring_drain(gp_ring_t *ring, gp_rf_writer_t *w, bool force, uint64_t *lost);

#endif
