/* The shared ring: multi-producer ordering per producer, overflow drops, crash salvage,
 * the producer's wake-up of a sleeping agent; its lanes of one producer each. */
#include "config.h"
#include "ring.h"
#include "tap.h"

#include <pthread.h>
#include <signal.h>
#include <errno.h>
#include <fcntl.h>
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
	ok(gp_ring_create(&c, path, 4096) == 0 && gp_ring_attach(&r, path) == 0,
	   "a ring and a fresh mapping of it");
	/* header page, 4 096 shared slots, the lanes' headers and slots (KiB) */
	const long total = (long)(r.maplen / 1024);
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

/* ---- lanes: one producer each, ranges in one record, open ranges kept in the file ---- */

static gp_ring_t lring;
static _Atomic int lanes_done;
#define LANE_N 50000

static void lane_put(gp_ring_t *r, unsigned k, uint64_t *lim, const gp_event_t *ev)
{
	uint64_t pos;
	gp_event_t *e = gp_ring_lane_claim_slot(r, k, lim, &pos);
	if (e) {
		*e = *ev;
		gp_ring_lane_publish(r, k, pos);
	} else { /* a full lane: the shared slots, as nvtx.c does */
		gp_ring_push(r, ev);
	}
}

static void *lane_producer(void *arg)
{
	unsigned owner = (unsigned)(uintptr_t)arg;
	int k = gp_ring_lane_claim(&lring, owner);
	uint64_t lim = 0;
	for (uint64_t i = 0; i < LANE_N && k >= 0; i++) {
		gp_event_t e = {
		    .type = GP_EV_NVTX_RANGE, .tid = owner, .ts = i + 1, .a = i, .b = 5};
		lane_put(&lring, (unsigned)k, &lim, &e);
	}
	if (k >= 0)
		gp_ring_lane_release(&lring, (unsigned)k);
	atomic_fetch_add(&lanes_done, 1);
	return (void *)(intptr_t)k;
}

/* Records a writer put in a rank file, read back: counts by type into n[] */
static uint64_t read_back(const char *file, uint64_t *n, gp_event_t *last_push)
{
	gp_rf_reader_t *rd;
	char err[256];
	gp_event_t e;
	uint64_t all = 0;
	if (gp_rf_open(file, &rd, err, sizeof(err)) < 0)
		return 0;
	while (gp_rf_next(rd, &e) > 0) {
		if (e.type < GP_EV_MAX)
			n[e.type]++;
		if (e.type == GP_EV_NVTX_PUSH && last_push)
			*last_push = e;
		all++;
	}
	gp_rf_close(rd);
	return all;
}

static gp_rf_writer_t *writer_at(const char *file)
{
	unlink(file);
	int fd = open(file, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	return fd < 0 ? NULL : gp_rf_writer_create(fd, "job=1\n", 0);
}

static void lane_tests(const char *path)
{
	char file[96];
	snprintf(file, sizeof(file), "%s.gpr", path);
	unlink(path);
	ok(gp_ring_create_lanes(&lring, path, 1024, 9, 64) == -1 &&
	       gp_ring_create_lanes(&lring, path, 1024, 2, 48) == -1,
	   "lanes: more than %d, or a lane not a power of two of 64 slots or more, refused",
	   GP_RING_LANES);
	ok(gp_ring_create_lanes(&lring, path, 1024, 4, 256) == 0 && lring.nlanes == 4,
	   "a ring of 1 024 shared slots and 4 lanes of 256");
	gp_ring_detach(&lring);
	ok(gp_ring_attach(&lring, path) == 0 && lring.nlanes == 4 && lring.lmask == 255,
	   "attached, its lanes read from its header");

	/* claim and release */
	int k1 = gp_ring_lane_claim(&lring, 11), k2 = gp_ring_lane_claim(&lring, 12);
	int k3 = gp_ring_lane_claim(&lring, 13), k4 = gp_ring_lane_claim(&lring, 14);
	ok(k1 >= 0 && k2 >= 0 && k3 >= 0 && k4 >= 0 && k1 != k2 && k3 != k4 && k1 != k4 &&
	       gp_ring_lane_claim(&lring, 15) == -1 && gp_ring_lane_claim(&lring, 0) == -1,
	   "four owners, four lanes; a fifth has none (the shared slots); owner 0 refused");
	gp_ring_lane_release(&lring, (unsigned)k2);
	ok(gp_ring_lane_claim(&lring, 16) == k2, "a lane given back is taken by the next thread");
	for (int k = 0; k < 4; k++)
		gp_ring_lane_release(&lring, (unsigned)k);

	/* 4 producers on lanes of 256 slots while the consumer drains: every record, each
	 * lane's in order, the overflow in the shared slots */
	pthread_t th[4];
	/* before any producer runs (under ThreadSanitizer they drop before we look) */
	uint64_t drops0 = atomic_load(&lring.hdr->drops);
	for (uintptr_t i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, lane_producer, (void *)(i + 1));
	uint64_t got = 0, lane_bad = 0, next[5] = {0}, shared = 0;
	uint64_t rd[4] = {0};
	for (bool last = false;;) {
		bool done = atomic_load(&lanes_done) == 4; /* then one more pass takes the rest */
		for (unsigned k = 0; k < 4; k++) {
			uint64_t head =
			    atomic_load_explicit(&lring.lanes[k].head, memory_order_acquire);
			for (; rd[k] != head; rd[k]++, got++) {
				gp_event_t e = gp_lane_slot(&lring, k, rd[k])->ev;
				if (e.tid < 1 || e.tid > 4 || e.a < next[e.tid])
					lane_bad++;
				else
					next[e.tid] = e.a + 1;
			}
			atomic_store_explicit(&lring.lanes[k].tail, rd[k], memory_order_release);
		}
		for (;;) {
			uint64_t pos = atomic_load(&lring.hdr->tail);
			if (gp_slot_seq(&lring, pos, memory_order_acquire) != pos + 1)
				break;
			atomic_store_explicit(&lring.hdr->tail, pos + 1, memory_order_release);
			got++;
			shared++;
		}
		if (last)
			break;
		last = done;
	}
	uint64_t dropped = lring.hdr->drops - drops0;
	int claimed = 0;
	for (int i = 0; i < 4; i++) {
		void *rv;
		pthread_join(th[i], &rv);
		claimed += (intptr_t)rv >= 0;
	}
	ok(claimed == 4 && got + dropped == 4ull * LANE_N && lane_bad == 0 && got > 0,
	   "4 lanes x %d records with the consumer draining: %llu taken, each lane's in its "
	   "order (%llu through the shared slots while a lane was full, %llu dropped there)",
	   LANE_N, (unsigned long long)got, (unsigned long long)shared,
	   (unsigned long long)dropped);

	/* a full lane: nothing written past it until the consumer takes some */
	int k = gp_ring_lane_claim(&lring, 21);
	uint64_t lim = 0, pos, n = 0;
	while (gp_ring_lane_claim_slot(&lring, (unsigned)k, &lim, &pos))
		gp_ring_lane_publish(&lring, (unsigned)k, pos), n++;
	ok(n == 256, "a lane holds its 256 records, then says it is full (%llu)",
	   (unsigned long long)n);
	gp_rf_writer_t *w = writer_at(file);
	lring.rd_set = false;
	long moved = w ? gp_ring_drain(&lring, w, false, NULL) : -1;
	gp_ring_commit(&lring, w);
	ok(moved == 256 && gp_ring_lane_claim_slot(&lring, (unsigned)k, &lim, &pos) != NULL,
	   "drained (%ld records) and released: the lane takes records again", moved);

	/* ranges left open: the thread ends inside two (given back: pushes in the shared
	 * slots); the process dies inside three (the forced drain writes them) */
	gp_ring_lane_t *l = &lring.lanes[k];
	l->open[0] = (gp_lane_open_t){.ts = 1000, .name = 7};
	l->open[1] = (gp_lane_open_t){.ts = 2000, .name = 8, .payload = 42};
	atomic_store(&l->depth, 2);
	gp_ring_lane_release(&lring, (unsigned)k);
	uint64_t cnt[GP_EV_MAX] = {0};
	gp_ring_drain(&lring, w, true, NULL);
	gp_rf_writer_close(w, false);
	gp_event_t last = {0};
	read_back(file, cnt, &last);
	ok(cnt[GP_EV_NVTX_PUSH] == 2 && last.ts == 2000 && last.u16 == 2 && last.c == 42 &&
	       last.tid == 21 && atomic_load(&l->depth) == 0 && atomic_load(&l->owner) == 0,
	   "a thread that ends inside two ranges: they are pushes, with their levels (%llu)",
	   (unsigned long long)cnt[GP_EV_NVTX_PUSH]);
	gp_ring_detach(&lring);

	pid_t pid = fork();
	if (pid == 0) {
		gp_ring_t r2;
		if (gp_ring_attach(&r2, path) < 0)
			_exit(2);
		int c = gp_ring_lane_claim(&r2, 77);
		uint64_t lm = 0;
		for (int i = 0; i < 100 && c >= 0; i++) {
			gp_event_t e = {.type = GP_EV_NVTX_RANGE, .tid = 77, .ts = 10 + i, .b = 1};
			lane_put(&r2, (unsigned)c, &lm, &e);
		}
		for (unsigned i = 0; i < 3 && c >= 0; i++) {
			r2.lanes[c].open[i] = (gp_lane_open_t){.ts = 5000 + i, .name = 9};
			atomic_store(&r2.lanes[c].depth, i + 1);
		}
		raise(SIGKILL);
	}
	int st;
	waitpid(pid, &st, 0);
	memset(cnt, 0, sizeof(cnt));
	w = writer_at(file);
	ok(WIFSIGNALED(st) && gp_ring_attach(&lring, path) == 0 && w &&
	       gp_ring_drain(&lring, w, false, NULL) == 100,
	   "a producer killed on its lane: its 100 records are there");
	ok(gp_ring_drain(&lring, w, true, NULL) == 3 && gp_ring_drain(&lring, w, true, NULL) == 0,
	   "the forced drain writes the 3 ranges it died inside, once");
	gp_rf_writer_close(w, false);
	read_back(file, cnt, &last);
	ok(cnt[GP_EV_NVTX_RANGE] == 100 && cnt[GP_EV_NVTX_PUSH] == 3 && last.ts == 5002 &&
	       last.u16 == 3 && last.tid == 77,
	   "in the rank file: 100 ranges, 3 pushes open at the death, innermost at level 3");
	gp_ring_detach(&lring);

	/* a producer alive on its lane when the forced drain runs (a process that outlives
	 * the agent's child): its open ranges are not written as ended; once it is gone,
	 * they are, once, and the lane (nothing open after a release) is taken again */
	/* two pipes: over one, the child could read back its own byte (it did under
	 * ThreadSanitizer, and both sides then waited for ever) */
	int up[2], down[2];
	if (pipe(up) < 0)
		up[0] = up[1] = -1;
	if (pipe(down) < 0)
		down[0] = down[1] = -1;
	pid = fork();
	if (pid == 0) {
		gp_ring_t r3;
		char c = 0;
		if (gp_ring_attach(&r3, path) < 0)
			_exit(2);
		int q = gp_ring_lane_claim(&r3, 88);
		for (unsigned i = 0; i < 2 && q >= 0; i++) {
			r3.lanes[q].open[i] = (gp_lane_open_t){.ts = 7000 + i, .name = 9};
			atomic_store(&r3.lanes[q].depth, i + 1);
		}
		(void)!write(up[1], "x", 1);
		(void)!read(down[0], &c, 1); /* until the parent says */
		_exit(0);
	}
	char c;
	(void)!read(up[0], &c, 1);
	gp_ring_detach(&lring);
	memset(cnt, 0, sizeof(cnt));
	w = writer_at(file);
	ok(gp_ring_attach(&lring, path) == 0 && w && gp_ring_drain(&lring, w, true, NULL) == 0,
	   "a live producer's open ranges are not written by a forced drain");
	(void)!write(down[1], "x", 1);
	waitpid(pid, &st, 0);
	ok(gp_ring_drain(&lring, w, true, NULL) == 2, "once it has ended, they are (2)");
	gp_rf_writer_close(w, false);
	gp_ring_detach(&lring);
	for (int i = 0; i < 2; i++) {
		close(up[i]);
		close(down[i]);
	}

	/* a header that lies about its lanes is refused */
	int fd = open(path, O_RDWR);
	gp_ring_hdr_t h;
	if (fd >= 0 && pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h)) {
		h.nlanes = 200;
		(void)!pwrite(fd, &h, sizeof(h), 0);
	}
	if (fd >= 0)
		close(fd);
	ok(gp_ring_attach(&lring, path) == -1 && errno == EINVAL,
	   "a ring whose header says 200 lanes is refused");
	unlink(path);
	/* 9 lanes in a file of exactly the size 9 lanes would need (the consumer keeps 8
	 * cursors) */
	ok(gp_ring_create_lanes(&lring, path, 1024, 8, 64) == 0, "a ring of 8 lanes of 64");
	gp_ring_detach(&lring);
	fd = open(path, O_RDWR);
	if (fd >= 0 && pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h)) {
		h.nlanes = 9;
		(void)!pwrite(fd, &h, sizeof(h), 0);
		size_t lh = (9 * sizeof(gp_ring_lane_t) + 4095) & ~(size_t)4095;
		(void)!ftruncate(fd, (off_t)(4096 + 1024 * 64 + lh + 9 * 64 * 64));
	}
	if (fd >= 0)
		close(fd);
	ok(gp_ring_attach(&lring, path) == -1 && errno == EINVAL,
	   "9 lanes, the file the size of 9: refused");
	unlink(path);
	/* a ring of a user's making, its header and sparse file agreeing on 2^36 slots (or on
	 * lanes of 2^36): root's salvage walked every slot, a minute per step record in the
	 * epilog. Nothing larger than GP_RING_MAX_SLOTS is attached. */
	for (int lanes = 0; lanes < 2; lanes++) {
		/* lanes: 8 of 2^31 slots (the header's lane_slots is 32 bits), a 1 TiB file */
		uint64_t big = lanes ? 1ull << 31 : 1ull << 36, ns = lanes ? 1024 : big;
		ok(gp_ring_create_lanes(&lring, path, 1024, lanes ? 8 : 0, lanes ? 64 : 0) == 0,
		   "a ring to rewrite");
		gp_ring_detach(&lring);
		fd = open(path, O_RDWR);
		int sized = -1;
		if (fd >= 0 && pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h)) {
			h.nslots = ns;
			if (lanes) {
				h.lane_slots = big;
				h.lanes_off = 4096 + ns * 64;
			}
			(void)!pwrite(fd, &h, sizeof(h), 0);
			size_t lh = (8 * sizeof(gp_ring_lane_t) + 4095) & ~(size_t)4095;
			sized = ftruncate(
			    fd, (off_t)(4096 + ns * 64 + (lanes ? lh + 8 * big * 64 : 0)));
		}
		if (fd >= 0)
			close(fd);
		if (sized < 0) {
			skip("ftruncate to a sparse ring failed");
		} else {
			struct timespec t0, t1;
			clock_gettime(CLOCK_MONOTONIC, &t0);
			int rc = gp_ring_attach(&lring, path);
			int e = errno;
			clock_gettime(CLOCK_MONOTONIC, &t1);
			ok(rc == -1 && e == EINVAL,
			   "a sparse ring whose header and size agree on %s slots is refused (%.3f "
			   "s)",
			   lanes ? "lanes of 2^31" : "2^36",
			   (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
			if (rc == 0)
				gp_ring_detach(&lring);
		}
		unlink(path);
	}
	ok(gp_ring_create(&lring, path, (uint64_t)GP_RING_MAX_SLOTS << 1) == -1 && errno == EINVAL,
	   "nor is one made larger than GP_RING_MAX_SLOTS");
	unlink(path);
	/* a version-5 ring (the agent before lanes; salvage after an upgrade) is read */
	ok(gp_ring_create_lanes(&lring, path, 1024, 0, 0) == 0, "a ring without lanes");
	push_n(&lring, 10);
	lring.hdr->version = 5;
	gp_ring_detach(&lring);
	ok(gp_ring_attach(&lring, path) == 0 && lring.nlanes == 0 &&
	       gp_ring_drain(&lring, NULL, true, NULL) == 10,
	   "a version-5 ring is attached without lanes and its 10 records drained");
	gp_ring_detach(&lring);
	unlink(path);
	/* a process that records one range does not start the prefault */
	gp_ring_t c5, r5;
	ok(gp_ring_create(&c5, path, 4096) == 0 && gp_ring_attach(&r5, path) == 0 && r5.nlanes,
	   "a ring with lanes and a fresh mapping of it");
	gp_ring_prefault_init(&r5);
	int q = gp_ring_lane_claim(&r5, 5);
	uint64_t lm = 0, p5;
	gp_event_t *e5 = q >= 0 ? gp_ring_lane_claim_slot(&r5, (unsigned)q, &lm, &p5) : NULL;
	if (e5) {
		*e5 = (gp_event_t){.type = GP_EV_NVTX_RANGE, .ts = 1};
		gp_ring_lane_publish(&r5, (unsigned)q, p5);
	}
	usleep(200000);
	long kib5 = mapped_kib(r5.hdr);
	ok(e5 && kib5 < (long)(r5.maplen / 1024 / 4),
	   "one lane record: the ring is not faulted in (%ld of %zu KiB mapped)", kib5,
	   r5.maplen / 1024);
	gp_ring_detach(&r5);
	gp_ring_detach(&c5);
	unlink(path);
	unlink(file);
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
	lane_tests(path);

	ok(gp_ring_create(&ring, "/proc/nope/ring", 1024) == -1, "create in a bad place fails");
	ok(gp_ring_create(&ring, path, 1000) == -1, "slot count must be a power of two");
	return done_testing();
}
