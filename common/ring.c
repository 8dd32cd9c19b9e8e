/* Ring creation, attachment and draining (see ring.h). */
#include "config.h"
#include "ring.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

_Static_assert(sizeof(gp_ring_slot_t) == 64, "ring slot is one cache line");
_Static_assert(sizeof(gp_ring_hdr_t) <= GP_RING_DATA_OFF, "ring header fits its page");

static int ring_map(gp_ring_t *ring, int fd, size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -1;
	ring->hdr = p;
	ring->slots = (gp_ring_slot_t *)((char *)p + GP_RING_DATA_OFF);
	ring->maplen = len;
	return 0;
}

int gp_ring_create(gp_ring_t *ring, const char *path, uint64_t nslots)
{
	size_t len;
	int fd, e;
	memset(ring, 0, sizeof(*ring));
	if (nslots < 64 || (nslots & (nslots - 1)))
		return errno = EINVAL, -1;
	len = GP_RING_DATA_OFF + nslots * sizeof(gp_ring_slot_t);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	e = posix_fallocate(fd, 0, (off_t)len);
	if (e) {
		close(fd);
		unlink(path);
		return errno = e, -1;
	}
	if (ring_map(ring, fd, len) < 0) {
		e = errno;
		close(fd);
		unlink(path);
		return errno = e, -1;
	}
	close(fd);
	ring->mask = nslots - 1;
	for (uint64_t i = 0; i < nslots; i++)
		atomic_store_explicit(&ring->slots[i].seq, i, memory_order_relaxed);
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
	if (h.magic != GP_RING_MAGIC || h.version != GP_RING_VERSION ||
	    h.slot_size != sizeof(gp_ring_slot_t) || h.nslots < 64 || (h.nslots & (h.nslots - 1)) ||
	    (uint64_t)sb.st_size != GP_RING_DATA_OFF + h.nslots * sizeof(gp_ring_slot_t)) {
		close(fd);
		return errno = EINVAL, -1;
	}
	if (ring_map(ring, fd, (size_t)sb.st_size) < 0) {
		e = errno;
		close(fd);
		return errno = e, -1;
	}
	close(fd);
	ring->mask = h.nslots - 1;
	return 0;
}

void gp_ring_detach(gp_ring_t *ring)
{
	if (ring && ring->hdr) {
		munmap(ring->hdr, ring->maplen);
		ring->hdr = NULL;
	}
}

long gp_ring_drain(gp_ring_t *ring, gp_rf_writer_t *w, bool force, uint64_t *lost)
{
	gp_ring_hdr_t *h = ring->hdr;
	uint64_t pos = atomic_load_explicit(&h->tail, memory_order_relaxed);
	uint64_t nslots = ring->mask + 1;
	long moved = 0;
	for (;;) {
		gp_ring_slot_t *s = &ring->slots[pos & ring->mask];
		uint64_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
		if (seq == pos + 1) {
			gp_event_t ev = s->ev;
			atomic_store_explicit(&s->seq, pos + nslots, memory_order_release);
			pos++;
			atomic_store_explicit(&h->tail, pos, memory_order_relaxed);
			if (w && gp_rf_append(w, &ev) < 0)
				return -1;
			moved++;
			continue;
		}
		/* Not published. With force, skip slots a dead producer had claimed. */
		if (force && pos < atomic_load_explicit(&h->head, memory_order_acquire)) {
			atomic_store_explicit(&s->seq, pos + nslots, memory_order_release);
			pos++;
			atomic_store_explicit(&h->tail, pos, memory_order_relaxed);
			if (lost)
				(*lost)++;
			continue;
		}
		break;
	}
	return moved;
}
