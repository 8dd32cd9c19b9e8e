/* The shared ring: multi-producer ordering per producer, overflow drops, crash salvage,
 * the producer's wake-up of a sleeping agent. */
#include "config.h"
#include "ring.h"
#include "tap.h"

#include <pthread.h>
#include <signal.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
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

/* SIGCHLDs queued for us (blocked, read from a signalfd as the agent does); each one's
 * sender's pid in *from */
static int wakes(int sfd, pid_t *from)
{
	struct signalfd_siginfo si;
	int n = 0;
	while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGCHLD && si.ssi_code == SI_USER) {
			n++;
			*from = (pid_t)si.ssi_pid;
		}
	}
	return n;
}

static void push_n(gp_ring_t *r, int n)
{
	for (int i = 0; i < n; i++) {
		gp_event_t e = {.type = GP_EV_NVTX_MARK, .a = (uint64_t)i};
		gp_ring_push(r, &e);
	}
}

/* The agent (here: this process) sleeps with agent_idle set; a producer crossing a
 * sixteenth of the ring wakes it once, with SIGCHLD; none while it is awake; a producer
 * that cannot reach the agent says so (wake_off), never signals anyone else. */
static void wake_tests(const char *path)
{
	sigset_t ss;
	pid_t from = 0;
	int e;
	gp_ring_t r;
	sigemptyset(&ss);
	sigaddset(&ss, SIGCHLD);
	sigprocmask(SIG_BLOCK, &ss, NULL);
	int sfd = signalfd(-1, &ss, SFD_NONBLOCK | SFD_CLOEXEC);
	ok(sfd >= 0 && gp_ring_create(&r, path, 1024) == 0, "ring for the wake-up");
	atomic_store(&r.hdr->agent_pid, (uint32_t)getpid());
	gp_ring_wake_init(&r);
	ok(r.wake && r.wake_mask == 1024 / 16 - 1 && !atomic_load(&r.hdr->wake_off),
	   "producer can wake the agent (a pidfd or its parent)");
	push_n(&r, 200); /* crosses 0, 64, 128, 192: agent awake, no signal */
	ok(wakes(sfd, &from) == 0, "no signal while the agent is awake");
	gp_ring_drain(&r, NULL, false, NULL);
	atomic_store(&r.hdr->agent_idle, 1);
	push_n(&r, 50); /* 200..249: no boundary */
	ok(wakes(sfd, &from) == 0 && atomic_load(&r.hdr->agent_idle) == 1,
	   "under a sixteenth of the ring: the agent sleeps on");
	push_n(&r, 150); /* 250..399: crosses 256 (and 320, 384) */
	ok(wakes(sfd, &from) == 1 && from == getpid() && atomic_load(&r.hdr->agent_idle) == 0,
	   "crossing a sixteenth wakes the sleeping agent once");
	errno = 4242;
	atomic_store(&r.hdr->agent_idle, 1);
	push_n(&r, 64);
	e = errno; /* the program's errno, after a push that signalled */
	ok(wakes(sfd, &from) == 1 && e == 4242, "woken again after it slept again; errno kept");
	gp_ring_detach(&r);
	unlink(path);

	/* an agent that has gone (and was not our parent): nobody is signalled */
	pid_t dead = fork();
	if (dead == 0)
		_exit(0);
	waitpid(dead, NULL, 0);
	ok(gp_ring_create(&r, path, 1024) == 0, "second ring");
	atomic_store(&r.hdr->agent_pid, (uint32_t)dead);
	gp_ring_wake_init(&r);
	ok(!r.wake && atomic_load(&r.hdr->wake_off) == 1,
	   "agent gone: no wake-up, wake_off tells the agent to keep looking");
	atomic_store(&r.hdr->agent_idle, 1);
	push_n(&r, 100);
	ok(wakes(sfd, &from) == 0, "and no signal is sent");
	/* no agent at all (the library drains its own ring) */
	atomic_store(&r.hdr->agent_pid, 0);
	atomic_store(&r.hdr->wake_off, 0);
	gp_ring_wake_init(&r);
	ok(!r.wake && !atomic_load(&r.hdr->wake_off), "no agent: nothing to wake");
	gp_ring_detach(&r);
	unlink(path);
	close(sfd);
	sigprocmask(SIG_UNBLOCK, &ss, NULL);
}

/* KiB of the mapping at addr this process has in its page tables (smaps' Rss) */
static long mapped_kib(const void *addr)
{
	char line[512], want[32];
	long kib = -1;
	bool in = false;
	FILE *f = fopen("/proc/self/smaps", "r");
	if (!f)
		return -1;
	snprintf(want, sizeof(want), "%lx-", (unsigned long)(uintptr_t)addr);
	while (fgets(line, sizeof(line), f)) {
		if (strchr(line, '-') && strchr(line, '-') < strchr(line, ' ') && line[0] != ' ')
			in = !strncmp(line, want, strlen(want));
		else if (in && sscanf(line, "Rss: %ld kB", &kib) == 1)
			break;
	}
	fclose(f);
	return kib;
}

/* A producer that has filled a sixteenth of the ring has the rest of its pages faulted
 * in by a thread of ours (gp_ring_prefault_init); one that records less does not. */
static void prefault_tests(const char *path)
{
	gp_ring_t c, r;
	const long total = (4096 + 4096 * 64) / 1024; /* header page + 4 096 slots, KiB */
	ok(gp_ring_create(&c, path, 4096) == 0 && gp_ring_attach(&r, path) == 0,
	   "a ring and a fresh mapping of it");
	gp_ring_prefault_init(&r);
	push_n(&r, 200); /* under 256, a sixteenth */
	usleep(200000);
	long small = mapped_kib(r.hdr);
	ok(small > 0 && small < total / 4,
	   "under a sixteenth: only what was written is mapped (%ld of %ld KiB)", small, total);
	errno = 4242;
	push_n(&r, 100); /* crosses 256 */
	int e = errno;
	long kib = 0;
	for (int i = 0; i < 500 && (kib = mapped_kib(r.hdr)) < total; i++)
		usleep(10000);
	ok(kib == total && e == 4242,
	   "past a sixteenth: the whole ring is mapped (%ld of %ld KiB); errno kept", kib, total);
	ok(!atomic_load(&r.prefault), "once");
	gp_ring_detach(&r);
	gp_ring_detach(&c);
	unlink(path);
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
		atomic_store_explicit(&ring.hdr->tail, pos + 1, memory_order_release);
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

	wake_tests(path);
	prefault_tests(path);

	ok(gp_ring_create(&ring, "/proc/nope/ring", 1024) == -1, "create in a bad place fails");
	ok(gp_ring_create(&ring, path, 1000) == -1, "slot count must be a power of two");
	return done_testing();
}
