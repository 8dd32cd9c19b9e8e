/* Windows by cost from the collector to the report: agent/inject/capture.c's records of
 * each window (its end, late charges, its cost so far) pushed into a real ring on a fake
 * clock, drained into a rank file as the agent does, and read by the report's loader
 * (report/load.c): a window whose switch-off is refused is charged once when it does end,
 * the detach's finalize after it is charged, a window open at exit is recorded, and one
 * that a killed process left open is counted at its last cost so far. A CUPTI module of
 * our own making that can refuse a switch. No GPU. */
#include "config.h"
#include "inject_int.h"
#include "costwin.h"
#include "rankdata.h"
#include "rankfile.h"
#include "tap.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

gp_inj_state_t gp_inj;

#define MS  1000000ull
#define SEC 1000000000ull

static bool refuse; /* the module busy: CUPTI's lock held, the program's profiler on */
static unsigned cur_modes;
static unsigned fake_capture(unsigned want)
{
	if (!refuse)
		cur_modes = want;
	return cur_modes;
}

static char dir[] = "/tmp/gp-tcostrec.XXXXXX";
static gp_rf_writer_t *w;

/* what the agent does: the ring's records into the rank file, flushed */
static void drain(void)
{
	gp_ring_drain(&gp_inj.ring, w, true, NULL);
	gp_rf_flush(w);
}

/* the report's capture figures of a rank file */
static gp_rank_t load(const char *path)
{
	static rank_data_t d;
	gp_rank_t r = {0};
	char err[256] = "";
	if (gp_rd_load_file(path, &d, &r, NULL, NULL, err, sizeof(err)) < 0)
		diag("load %s: %s", path, err);
	return r;
}

static int copy(const char *from, const char *to)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "cp %s %s", from, to);
	return system(cmd);
}

/* 0. (a child: the windows' state is the process's) a program whose steps are seen after
 * the first look at its first window (a PyTorch job: its first step comes seconds after
 * the CUPTI module's start): that window ends there, with an end on record, so the report
 * does not read it as one the process died in */
static void steps_after_first_look(const char *ring, const char *path, bool at_exit)
{
	pid_t pid = fork();
	if (pid == 0) {
		char err[256];
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (gp_ring_create(&gp_inj.ring, ring, 1024) != 0 || fd < 0)
			_exit(1);
		w = gp_rf_writer_create(fd, "", 0);
		gp_inj.modes = GP_MODE_TIMING | GP_MODE_CUDA;
		atomic_store(&gp_inj.ring.hdr->modes, gp_inj.modes);
		gp_inj.cupti_capture = fake_capture;
		if (gp_capture_parse("sampled", &gp_inj.cap, err, sizeof(err)) != 0)
			_exit(1);
		atomic_store(&gp_inj.cap_live, 1);
		cur_modes = GP_MODE_CUDA;
		atomic_store(&gp_inj.cap_cur, GP_MODE_CUDA);
		gp_inj.cap_t0 = 1000 * SEC;
		gp_inj_capture_tick(gp_inj.cap_t0 + 1500 * MS, 100, 2 * MS, false); /* so far */
		atomic_store(&gp_inj.steps_seen, 1);
		/* at_exit: the steps were seen between the worker's last look and the exit */
		gp_inj_capture_tick(gp_inj.cap_t0 + 2000 * MS, 150, 3 * MS, at_exit);
		gp_inj_capture_tick(gp_inj.cap_t0 + 9000 * MS, 900, 9 * MS, true); /* exit */
		drain();
		gp_rf_writer_close(w, false);
		gp_ring_detach(&gp_inj.ring);
		_exit(0);
	}
	int st = -1;
	waitpid(pid, &st, 0);
	gp_rank_t r = load(path);
	ok(WIFEXITED(st) && !WEXITSTATUS(st) && r.capture.cost_windows == 1 &&
	       r.capture.cost_unended == 0 && r.capture.cost_at_exit == 0,
	   "steps seen after the first window's first look%s: it ends there, not at a death "
	   "(%u windows, %u unended, %u at exit)",
	   at_exit ? ", then the exit" : "", r.capture.cost_windows, r.capture.cost_unended,
	   r.capture.cost_at_exit);
	ok(r.capture.cost_estimate_ns == 3 * MS,
	   "... charged what it measured until the steps (%.1f ms)",
	   r.capture.cost_estimate_ns / 1e6);
	gp_rank_release(&r);
	unlink(ring);
	unlink(path);
}

int main(void)
{
	char ring[64], path[64], crash[64], err[256], hdr[256] = "";
	if (!mkdtemp(dir))
		return 1;
	snprintf(ring, sizeof(ring), "%s/ring", dir);
	snprintf(path, sizeof(path), "%s/rank0.gpr", dir);
	snprintf(crash, sizeof(crash), "%s/crash.gpr", dir);
	steps_after_first_look(ring, path, false);
	steps_after_first_look(ring, path, true);
	ok(gp_ring_create(&gp_inj.ring, ring, 1024) == 0, "a ring");
	gp_rf_hdr_add(hdr, sizeof(hdr), "job", "1");
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	w = gp_rf_writer_create(fd, hdr, 0);
	ok(w != NULL, "a rank file");
	gp_inj.modes = GP_MODE_TIMING | GP_MODE_CUDA;
	atomic_store(&gp_inj.ring.hdr->modes, gp_inj.modes);
	gp_inj.cupti_capture = fake_capture;
	ok(gp_capture_parse("sampled", &gp_inj.cap, err, sizeof(err)) == 0, "sampled");
	atomic_store(&gp_inj.cap_live, 1);
	cur_modes = GP_MODE_CUDA;
	atomic_store(&gp_inj.cap_cur, GP_MODE_CUDA); /* the first window, from the start */
	const uint64_t T = 1000 * SEC;
	gp_inj.cap_t0 = T;

	/* 1. the first window reaches its budget on the cost measured (launch calls), but
	 * the switch-off is refused twice; it takes effect at the third look */
	refuse = true;
	gp_inj_capture_tick(T + 200 * MS, 1000, 160 * MS, false);
	gp_inj_capture_tick(T + 400 * MS, 1200, 170 * MS, false);
	ok(cur_modes & GP_MODE_CUDA, "switch-off refused: still tracing");
	refuse = false;
	gp_inj_capture_tick(T + 600 * MS, 1300, 175 * MS, false);
	ok(!(cur_modes & GP_MODE_CUDA), "it takes effect at the next look");
	/* 2. after it: its late records (50 kernels: 1 ms at the model, under the measure)
	 * and the detach's cuptiFinalize (5 ms on the program's thread) */
	gp_inj_capture_tick(T + 800 * MS, 1350, 180 * MS, false);
	gp_inj_capture_tick(T + 1000 * MS, 1350, 180 * MS, false); /* nothing new */
	drain();
	gp_rank_t r = load(path);
	ok(r.capture.cost_windows == 1,
	   "one window (%u): recorded though its switch-off was "
	   "refused",
	   r.capture.cost_windows);
	ok(r.capture.cost_estimate_ns == 180 * MS,
	   "its cost: 175 ms at its end, 5 ms of detach after (%.1f ms)",
	   r.capture.cost_estimate_ns / 1e6);
	ok(r.capture.cost_late_ns == 5 * MS, "... of it after its end: %.1f ms",
	   r.capture.cost_late_ns / 1e6);
	ok(r.capture.switches == 1, "one switch (%llu)", (unsigned long long)r.capture.switches);
	gp_rank_release(&r);

	/* 3. the next window, 120 s after the first (1 ms more of the first's measured just
	 * before: its own, though it comes as the next opens); its cost so far recorded once a
	 * second */
	gp_inj_capture_tick(T + 121 * SEC, 1400, 181 * MS, false);
	ok(cur_modes & GP_MODE_CUDA, "the next window opens at 121 s");
	gp_inj_capture_tick(T + 122 * SEC, 6400, 181 * MS, false); /* 100 ms so far */
	drain();
	ok(copy(path, crash) == 0, "the rank file as a killed process leaves it");
	r = load(crash);
	ok(r.capture.cost_windows == 2 && r.capture.cost_unended == 1,
	   "killed in a window: it counts, at its last cost so far (%u windows, %u unended)",
	   r.capture.cost_windows, r.capture.cost_unended);
	ok(r.capture.cost_estimate_ns == 281 * MS, "... 181 + 100 ms (%.1f ms)",
	   r.capture.cost_estimate_ns / 1e6);
	gp_rank_release(&r);

	/* 4. the process exits inside it: recorded at exit with all it counted */
	gp_inj_capture_tick(T + 122500 * MS, 7400, 181 * MS, true);
	gp_inj_capture_tick(T + 122600 * MS, 9000, 181 * MS, true); /* the exit's second call */
	gp_inj_capture_tick(T + 300 * SEC, 9000, 181 * MS, false);  /* a late worker's look */
	drain();
	r = load(path);
	ok(r.capture.cost_windows == 2 && r.capture.cost_at_exit == 1 &&
	       r.capture.cost_unended == 0,
	   "exited in a window: %u windows, %u at exit, %u unended", r.capture.cost_windows,
	   r.capture.cost_at_exit, r.capture.cost_unended);
	ok(r.capture.cost_estimate_ns == 181 * MS + 120 * MS + 32 * MS,
	   "... 181 + 120 ms, and 32 ms counted after, at the exit's second call (%.1f ms)",
	   r.capture.cost_estimate_ns / 1e6);
	ok(r.capture.switches == 2, "no switch at exit (%llu)",
	   (unsigned long long)r.capture.switches);
	gp_rank_release(&r);

	gp_rf_writer_close(w, false);
	gp_ring_detach(&gp_inj.ring);
	unlink(ring);
	unlink(path);
	unlink(crash);
	rmdir(dir);
	return done_testing();
}
