/* `gpuprof capture on` against the capture windows (agent/inject/capture.c), with a
 * CUPTI module of our own making that records what it is asked for: "on" asks for CUDA
 * activity now, between a program's step windows and between the windows by time of a
 * program whose steps are not seen; "off" stops it again; without "on" the windows rule
 * (issue 51: "on" between windows said it succeeded and did nothing). No GPU. */
#include "config.h"
#include "inject_int.h"
#include "clock.h"
#include "rankfile.h"
#include "tap.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

gp_inj_state_t gp_inj;

static unsigned asked = 0xff; /* what the module was last asked for */
static unsigned fake_capture(unsigned want)
{
	return asked = want;
}

/* what `gpuprof capture on|off` does to the ring header (report/main.c) */
static void cli(bool on)
{
	unsigned bits = GP_MODE_CUDA | GP_CAPTURE_FORCED;
	if (on)
		atomic_fetch_or(&gp_inj.ring.hdr->modes, bits);
	else
		atomic_fetch_and(&gp_inj.ring.hdr->modes, ~bits);
}

int main(void)
{
	char path[] = "/tmp/gp-tcap.XXXXXX", ring[64], err[256];
	if (!mkdtemp(path))
		return 1;
	snprintf(ring, sizeof(ring), "%s/ring", path);
	ok(gp_ring_create(&gp_inj.ring, ring, 1024) == 0, "a ring");
	gp_inj.modes = GP_MODE_TIMING | GP_MODE_NVTX | GP_MODE_CUDA;
	atomic_store(&gp_inj.ring.hdr->modes, gp_inj.modes);
	gp_inj.cupti_capture = fake_capture;
	atomic_store(&gp_inj.cap_live, 1);
	atomic_store(&gp_inj.cap_cur, GP_MODE_CUDA); /* started capturing (a first window) */
	ok(gp_capture_parse("steps=5-6", &gp_inj.cap, err, sizeof(err)) == 0, "windows steps=5-6");

	/* a program's steps: its step range begins twice (step 1), then again (step 2) */
	gp_inj_step_boundary(7, 100);
	gp_inj_step_boundary(7, 200);
	gp_inj_step_boundary(7, 300);
	ok(!(asked & GP_MODE_CUDA), "outside the window: no CUDA activity (%#x)", asked);
	cli(true);
	gp_inj_step_boundary(7, 400);
	ok(asked & GP_MODE_CUDA, "capture on between windows: CUDA activity at the next step (%#x)",
	   asked);
	cli(false);
	gp_inj_step_boundary(7, 500);
	ok(!(asked & GP_MODE_CUDA), "capture off: none again (%#x)", asked);
	atomic_store(&gp_inj.ring.hdr->modes, gp_inj.modes); /* as the agent made it */
	gp_inj_step_boundary(7, 600);                        /* step 5: the window */
	ok(asked & GP_MODE_CUDA, "the window still switches it on (%#x)", asked);
	gp_inj_step_boundary(7, 700);
	gp_inj_step_boundary(7, 800);
	ok(!(asked & GP_MODE_CUDA), "and off after it (%#x)", asked);

	/* a program whose steps are not seen: windows by cost (costwin.h), 60 s at most for
	 * the first, then at most 300 ms of estimated cost or 5 s of every 120 s */
	memset(&gp_inj.cap, 0, sizeof(gp_inj.cap));
	ok(gp_capture_parse("sampled", &gp_inj.cap, err, sizeof(err)) == 0, "sampled");
	atomic_store(&gp_inj.steps_seen, 0);
	uint64_t now = gp_clock_ns();
	gp_inj.cap_t0 = now - 70ull * 1000000000; /* 70 s in, few kernels: between windows */
	gp_inj_capture_tick(now, 10, 0, false);
	ok(!(asked & GP_MODE_CUDA), "past the first window's 60 s: none (%#x)", asked);
	cli(true);
	gp_inj_capture_tick(now, 10, 0, false);
	ok(asked & GP_MODE_CUDA, "capture on between windows: CUDA activity (%#x)", asked);
	cli(false);
	gp_inj_capture_tick(now, 10, 0, false);
	ok(!(asked & GP_MODE_CUDA), "capture off: none (%#x)", asked);
	atomic_store(&gp_inj.ring.hdr->modes, gp_inj.modes); /* as the agent made it */
	now += 60ull * 1000000000;                           /* 130 s in: the next window */
	gp_inj_capture_tick(now, 10, 0, false);
	ok(asked & GP_MODE_CUDA, "120 s after the first: a window (%#x)", asked);
	now += 200000000;
	gp_inj_capture_tick(now, 10 + 20000, 0, false); /* 20 000 kernels: 400 ms at 20 us */
	ok(!(asked & GP_MODE_CUDA), "it ends on its cost, not after 5 s (%#x)", asked);

	/* the program's steps are seen while a later window is open: that window ends there,
	 * charged, and no window by cost opens after */
	now += 120ull * 1000000000;
	gp_inj_capture_tick(now, 20010, 0, false);
	ok(asked & GP_MODE_CUDA, "the next window, 120 s on (%#x)", asked);
	gp_inj_step_boundary(7, now + 1); /* the step range (learnt above) begins: steps seen */
	gp_inj_capture_tick(now + 3, 20010 + 1000, 0, false); /* 20 ms more */
	gp_inj_capture_tick(now + 300ull * 1000000000, 30000, 0, false);
	unsigned by_steps = 0, after = 0;
	uint64_t cost = 0;
	char rf[64];
	snprintf(rf, sizeof(rf), "%s/rank.gpr", path);
	int fd = open(rf, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	gp_rf_writer_t *w = gp_rf_writer_create(fd, "", 0);
	gp_ring_drain(&gp_inj.ring, w, true, NULL);
	gp_rf_writer_close(w, false);
	gp_rf_reader_t *rd = NULL;
	gp_event_t e;
	if (gp_rf_open(rf, &rd, err, sizeof(err)) == 0) {
		while (gp_rf_next(rd, &e) == 1) {
			if (e.type != GP_EV_CONTROL)
				continue;
			if (e.u8 == GP_CTRL_BY_STEPS) {
				by_steps++;
				cost = e.d;
			} else if (by_steps) {
				after++;
			}
		}
		gp_rf_close(rd);
	}
	ok(by_steps == 1 && cost == 1000 * 20000ull,
	   "steps seen in a window: it ends there, once, charged %llu ms (%u)",
	   (unsigned long long)(cost / 1000000), by_steps);
	ok(after == 0, "no window by cost after it (%u records)", after);
	unlink(rf);

	gp_ring_detach(&gp_inj.ring);
	unlink(ring);
	rmdir(path);
	return done_testing();
}
