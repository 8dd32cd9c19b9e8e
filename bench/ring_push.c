/* What a record costs the producer in the shared ring (common/ring.h), alone on its thread
 * and with no consumer: gp_ring_push itself (a CAS on the ring's head per record), against
 * the same record written by a single producer that owns its positions (a plain store of
 * its head: what per-thread regions of the ring would cost), and that without the clock
 * read (gp_clock_ns) each record carries. Slots are freed behind the
 * producer every half lap without being read (the consumer's cost is not measured).
 *   ring_push [ROUNDS]   (prints ns per record of each, the median of the rounds) */
#include "config.h"
#include "clock.h"
#include "ring.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define N_RECORDS (4u << 20)

static uint64_t now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* gp_ring_push without the CAS: one producer, its head its own */
static inline void push_single(gp_ring_t *ring, const gp_event_t *ev)
{
	gp_ring_hdr_t *h = ring->hdr;
	uint64_t pos = atomic_load_explicit(&h->head, memory_order_relaxed);
	if (pos - atomic_load_explicit(&h->tail, memory_order_acquire) > ring->mask)
		return;
	atomic_store_explicit(&h->head, pos + 1, memory_order_relaxed);
	gp_ring_slot_t *s = &ring->slots[pos & ring->mask];
	__builtin_prefetch(&ring->slots[(pos + 16) & ring->mask], 1, 3);
	s->ev = *ev;
	gp_slot_set_seq(ring, pos, pos + 1, memory_order_release);
}

/* single: 0 gp_ring_push, 1 one producer, 2 one producer and no clock read */
static double run(gp_ring_t *ring, int single)
{
	gp_event_t e = {.type = GP_EV_NVTX_PUSH, .tid = 1, .a = 7};
	uint64_t half = (ring->mask + 1) / 2, t0 = now();
	for (uint64_t i = 0; i < N_RECORDS; i++) {
		e.ts = single == 2 ? i : gp_clock_ns();
		if (single)
			push_single(ring, &e);
		else
			gp_ring_push(ring, &e);
		if (!(i & (half - 1))) /* free what is behind, unread */
			atomic_store(&ring->hdr->tail, atomic_load(&ring->hdr->head));
	}
	return (double)(now() - t0) / N_RECORDS;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 5;
	if (rounds < 1 || rounds > 100)
		rounds = 5;
	char path[] = "/dev/shm/gpuprof-ring-push-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0) {
		perror("mkstemp");
		return 1;
	}
	close(fd);
	unlink(path);
	gp_ring_t ring;
	if (gp_ring_create(&ring, path, GP_RING_DEFAULT_SLOTS) != 0) {
		fprintf(stderr, "ring_push: cannot create %s\n", path);
		return 1;
	}
	unlink(path);
	/* the library's clock: the TSC path once its rate was measured and checked, two
	 * intervals of 2^27 ticks (clock.h) */
	gp_clock_init();
	for (int i = 0; i < 3; i++) {
		usleep(150000);
		gp_clock_ns();
	}
	double t[3][100];
	for (int r = 0; r < rounds; r++) /* interleaved */
		for (int k = 0; k < 3; k++)
			t[k][r] = run(&ring, k);
	for (int k = 0; k < 3; k++)
		qsort(t[k], rounds, sizeof(double), cmp);
	printf("ns_per_record shared_cas %.1f single_producer %.1f single_no_clock %.1f "
	       "(median of %d rounds of %u; clock %s)\n",
	       t[0][rounds / 2], t[1][rounds / 2], t[2][rounds / 2], rounds, N_RECORDS,
	       atomic_load(&gp_clock.tsc) ? "tsc" : "clock_gettime");
	gp_ring_detach(&ring);
	return 0;
}
