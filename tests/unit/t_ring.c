/* The shared ring: multi-producer ordering per producer, overflow drops, crash salvage. */
#include "config.h"
#include "ring.h"
#include "tap.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define NTHREADS   4
#define PER_THREAD 200000

static gp_ring_t ring;

static void *producer(void *arg)
{
	uintptr_t id = (uintptr_t)arg;
	for (uint64_t i = 0; i < PER_THREAD;) {
		gp_event_t e = {.type = GP_EV_NVTX_PUSH, .tid = (uint32_t)id, .a = i};
		if (gp_ring_push(&ring, &e))
			i++;
	}
	return NULL;
}

int main(void)
{
	char path[64];
	pthread_t th[NTHREADS];
	uint64_t next[NTHREADS] = {0}, got = 0, order_bad = 0;
	snprintf(path, sizeof(path), "/tmp/gp-t-ring.%d", (int)getpid());
	unlink(path);

	ok(gp_ring_create(&ring, path, 1024) == 0, "create");
	ok(gp_ring_create(&ring, path, 1024) == -1, "O_EXCL: second create refused");
	gp_ring_detach(&ring);
	ok(gp_ring_attach(&ring, path) == 0, "attach");
	for (uintptr_t i = 0; i < NTHREADS; i++)
		pthread_create(&th[i], NULL, producer, (void *)i);
	/* consume concurrently */
	while (got < (uint64_t)NTHREADS * PER_THREAD) {
		gp_ring_slot_t *s = &ring.slots[ring.hdr->tail & ring.mask];
		(void)s;
		uint64_t pos = atomic_load(&ring.hdr->tail);
		gp_ring_slot_t *sl = &ring.slots[pos & ring.mask];
		if (gp_slot_seq(&ring, pos, memory_order_acquire) != pos + 1)
			continue;
		gp_event_t e = sl->ev;
		gp_slot_set_seq(&ring, pos, pos + ring.mask + 1, memory_order_release);
		atomic_store(&ring.hdr->tail, pos + 1);
		if (e.a != next[e.tid])
			order_bad++;
		next[e.tid] = e.a + 1;
		got++;
	}
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	ok(got == (uint64_t)NTHREADS * PER_THREAD && order_bad == 0,
	   "%llu records, per-producer order kept", (unsigned long long)got);

	/* overflow: push 2000 into 1024 slots without draining */
	uint64_t pushed = 0, drops0 = atomic_load(&ring.hdr->drops);
	for (int i = 0; i < 2000; i++) {
		gp_event_t e = {.type = GP_EV_NVTX_POP};
		pushed += gp_ring_push(&ring, &e);
	}
	ok(pushed == 1024 && atomic_load(&ring.hdr->drops) - drops0 == 2000 - 1024,
	   "full ring drops and counts (%llu pushed)", (unsigned long long)pushed);
	ok(gp_ring_drain(&ring, NULL, false, NULL) == 1024, "drain empties it");
	gp_ring_detach(&ring);

	/* a producer process killed: records it published survive in the file */
	pid_t pid = fork();
	if (pid == 0) {
		gp_ring_t r2;
		if (gp_ring_attach(&r2, path) < 0)
			_exit(2);
		for (int i = 0; i < 500; i++) {
			gp_event_t e = {.type = GP_EV_NVTX_MARK, .a = (uint64_t)i};
			gp_ring_push(&r2, &e);
		}
		/* claim one slot and die before publishing it */
		atomic_fetch_add(&r2.hdr->head, 1);
		raise(SIGKILL);
	}
	int st;
	waitpid(pid, &st, 0);
	ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "producer died of SIGKILL");
	ok(gp_ring_attach(&ring, path) == 0, "re-attach after death");
	uint64_t lost = 0;
	ok(gp_ring_drain(&ring, NULL, false, &lost) == 500, "500 published records salvaged");
	ok(gp_ring_drain(&ring, NULL, true, &lost) == 0 && lost == 1,
	   "forced drain skips the claimed, unpublished slot");
	gp_ring_detach(&ring);
	unlink(path);

	ok(gp_ring_create(&ring, "/proc/nope/ring", 1024) == -1, "create in a bad place fails");
	ok(gp_ring_create(&ring, path, 1000) == -1, "slot count must be a power of two");
	return done_testing();
}
