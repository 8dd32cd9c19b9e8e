/* The live figures (common/live.c) from records of known timing: steps and their median,
 * the slowdown and when it began, the step markers' GPU times, NVML's busy and memory,
 * losses, and the file's round trip through the reader. */
#include "config.h"
#include "live.h"
#include "tap.h"

#include <math.h>
#include <stdlib.h>

#define MS 1000000ull

static gp_live_t *l;
static uint64_t t; /* the records' clock, ns */

static void rec(gp_event_t e)
{
	gp_live_observe(l, &e);
}

static void name(uint32_t id, const char *s)
{
	for (size_t off = 0, n = strlen(s); off < n; off += GP_STRING_CHUNK) {
		gp_event_t e = {.type = GP_EV_STRING, .tid = id, .u16 = (uint16_t)off};
		e.u8 = (uint8_t)(n - off > GP_STRING_CHUNK ? GP_STRING_CHUNK : n - off);
		memcpy(&e.a, s + off, e.u8);
		rec(e);
	}
}

/* n steps of step_ms each (outermost ranges of name 5, with a nested one) */
static void steps(int n, double step_ms)
{
	for (int i = 0; i < n; i++) {
		rec((gp_event_t){.type = GP_EV_NVTX_RANGE, .ts = t, .tid = 7, .a = 5, .u16 = 0});
		rec((gp_event_t){
		    .type = GP_EV_NVTX_RANGE, .ts = t + 1, .tid = 7, .a = 6, .u16 = 1});
		t += (uint64_t)(step_ms * MS);
	}
}

static bool near(double x, double want, double rel)
{
	return fabs(x - want) <= rel * want;
}

static void test_steps_and_slowdown(void)
{
	gp_live_rank_t r = {0};
	l = gp_live_new(1.0, 3, NULL);
	t = 1000 * MS;
	rec((gp_event_t){.type = GP_EV_START, .ts = t});
	name(5, "train_step \"q\"");
	name(6, "fwd");
	steps(100, 10);
	gp_live_tick(l, t, false, &r);
	ok(r.steps == 100 && !strcmp(r.step_name, "train_step \"q\"") &&
	       !strcmp(r.step_source, "nvtx") && !strcmp(r.step_basis, "period"),
	   "100 steps of the outermost range, by name, period basis (%u %s %s)", r.steps,
	   r.step_name, r.step_basis);
	ok(near(r.median_ms, 10, 0.004) && near(r.last_median_ms, 10, 0.004) && r.last_steps == 96,
	   "median 10 ms within 0.4 %% (%.4f), the interval's 96 after the warm-up", r.median_ms);
	ok(r.slow_since_s < 0 && r.nfind == 0, "no slowdown, no finding");
	steps(5, 10);
	steps(1, 16); /* a hiccup before the slowdown */
	steps(5, 10);
	uint64_t onset = t;
	steps(40, 15);
	gp_live_tick(l, t, false, &r);
	ok(r.slow_since_s >= 0 && near(r.slow_ratio, 1.5, 0.01) && near(r.slow_base_ms, 10, 0.004),
	   "a slowdown: 1.5x the 10 ms before it (%.3f, %.3f)", r.slow_ratio, r.slow_base_ms);
	ok(fabs(r.slow_since_s - (double)(onset - 1000 * MS) / 1e9) < 1e-6,
	   "dated at its first slow step's start, not at a hiccup before it (%.3f s)",
	   r.slow_since_s);
	ok(r.nfind == 1 && !strcmp(r.find[0].id, "slowdown"), "the slowdown is a finding");
	steps(150, 15); /* the median so far turns slow: the base stays the one before */
	gp_live_tick(l, t, false, &r);
	ok(r.slow_since_s >= 0 && near(r.slow_base_ms, 10, 0.004) && near(r.median_ms, 15, 0.004),
	   "held against the median before it while the job's moves (%.2f)", r.median_ms);
	steps(50, 10);
	gp_live_tick(l, t, false, &r);
	ok(r.slow_since_s < 0 && r.nfind == 0, "over when the steps are fast again");
	t += 5000 * MS;
	gp_live_tick(l, t, false, &r);
	ok(r.nfind == 1 && !strcmp(r.find[0].id, "no_progress"), "no step for 5 s: no_progress");
	gp_live_tick(l, t, true, &r);
	ok(r.nfind == 0, "not once the program has ended");
	gp_live_free(l);
}

static void test_markers_pushes_nvml(void)
{
	gp_live_rank_t r = {0};
	l = gp_live_new(1.0, 0, "step");
	t = 50 * MS;
	rec((gp_event_t){.type = GP_EV_START, .ts = t});
	name(1, "step");
	name(2, "other");
	rec((gp_event_t){.type = GP_EV_GPU, .u8 = 0, .b = 1000});
	for (int i = 0; i < 20; i++) { /* push/pop ranges, another outermost range between */
		rec((gp_event_t){.type = GP_EV_NVTX_PUSH, .ts = t, .tid = 3, .a = 1});
		rec((gp_event_t){.type = GP_EV_NVTX_PUSH, .ts = t + 1, .tid = 3, .a = 2});
		rec((gp_event_t){.type = GP_EV_NVTX_POP, .ts = t + 2, .tid = 3});
		rec((gp_event_t){.type = GP_EV_NVTX_POP, .ts = t + 3, .tid = 3});
		rec((gp_event_t){.type = GP_EV_NVTX_PUSH, .ts = t + 4, .tid = 3, .a = 2});
		rec((gp_event_t){.type = GP_EV_NVTX_POP, .ts = t + 5, .tid = 3});
		rec((gp_event_t){
		    .type = GP_EV_STEP_MARK, .ts = t + 3, .a = 25 * MS, .d = i ? 1 : 0});
		rec((gp_event_t){.type = GP_EV_NVML, .ts = t, .a = i < 10 ? 100 : 20, .b = 960});
		t += 20 * MS;
	}
	gp_live_tick(l, t, false, &r);
	ok(r.steps == 20 && !strcmp(r.step_name, "step"),
	   "GPUPROF_STEP_RANGE's range counted, not the other outermost one (%u)", r.steps);
	ok(!strcmp(r.step_basis, "gpu") && near(r.median_ms, 25, 0.004),
	   "one marker a step: the GPU's 25 ms, not the host's 20 (%s %.3f)", r.step_basis,
	   r.median_ms);
	ok(r.ngpus == 1 && r.samples == 20 && near(r.busy_pct, 60, 1e-9) && r.mem_total == 1000 &&
	       r.mem_peak == 960,
	   "NVML: busy 60 %% (%.1f), memory 960 of 1000", r.busy_pct);
	uint64_t lost[GP_LOSS_N] = {0};
	lost[GP_LOSS_RING] = 12;
	lost[GP_LOSS_CUPTI] = 3;
	gp_live_set_losses(l, lost);
	for (int i = 0; i < 5; i++, t += 20 * MS)
		rec((gp_event_t){.type = GP_EV_NVML, .ts = t, .a = 10, .b = 100});
	gp_live_tick(l, t, false, &r);
	bool idle = false, full = false, lostf = false;
	for (unsigned i = 0; i < r.nfind; i++) {
		idle |= !strcmp(r.find[i].id, "gpu_idle");
		full |= !strcmp(r.find[i].id, "memory_near_limit");
		lostf |= !strcmp(r.find[i].id, "records_lost");
	}
	ok(r.ngpus == 1 && r.mem_total == 1000, "a second file: one GPU still (%u)", r.ngpus);
	ok(idle && full && lostf && r.lost == 15 && !strcmp(r.lost_by, "ring full 12, cupti 3"),
	   "findings gpu_idle, memory_near_limit, records_lost (%s)", r.lost_by);
	ok(r.idle_startup_s == 0 && r.idle_steps_s > 0, "idle time once steps ran, none before");
	/* a short interval: two samples (NVML's are 1 s apart; GPUPROF_LIVE_INTERVAL=2) are
	 * enough once five were taken, one is not */
	for (int k = 1; k <= 2; k++) {
		for (int i = 0; i < k; i++, t += 20 * MS)
			rec((gp_event_t){.type = GP_EV_NVML, .ts = t, .a = 18, .b = 100});
		gp_live_tick(l, t, false, &r);
		idle = false;
		for (unsigned i = 0; i < r.nfind; i++)
			idle |= !strcmp(r.find[i].id, "gpu_idle");
		ok(idle == (k == 2), "%d sample(s) of 18 %% busy in an interval: gpu_idle %s", k,
		   idle ? "fires" : "waits");
	}
	gp_live_free(l);
}

static void test_optimizer(void)
{
	gp_live_rank_t r = {0};
	l = gp_live_new(1.0, 0, NULL);
	t = MS;
	rec((gp_event_t){.type = GP_EV_START, .ts = t});
	for (int i = 0; i < 10; i++, t += 30 * MS)
		rec((gp_event_t){.type = GP_EV_FW, .u8 = GP_FW_OPT_END, .ts = t, .a = 0});
	gp_live_tick(l, t, false, &r);
	ok(r.steps == 10 && !strcmp(r.step_source, "optimizer") && near(r.median_ms, 30, 0.004),
	   "no NVTX: the optimizer's steps (%s %.2f)", r.step_source, r.median_ms);
	gp_live_free(l);
}

/* A worker thread's loop inside the main thread's steps (bench/mt_streams.cu's shape): the
 * worker's 4 iterations a step repeat more often, but the steps are the main thread's. */
static void test_worker_loop(void)
{
	gp_live_rank_t r = {0};
	l = gp_live_new(1.0, 0, NULL);
	t = 1000 * MS;
	rec((gp_event_t){.type = GP_EV_START, .ts = t});
	name(5, "train_step");
	name(6, "worker_iter");
	name(7, "monitor");
	for (int i = 0; i < 50; i++) {
		rec((gp_event_t){.type = GP_EV_NVTX_PUSH, .ts = t, .tid = 1, .a = 5});
		for (int k = 0; k < 4; k++) {
			uint64_t at = t + (uint64_t)(k + 1) * 2 * MS;
			rec((gp_event_t){.type = GP_EV_NVTX_PUSH, .ts = at, .tid = 2, .a = 6});
			rec((gp_event_t){.type = GP_EV_NVTX_POP, .ts = at + MS / 2, .tid = 2});
		}
		rec((gp_event_t){.type = GP_EV_NVTX_POP, .ts = t + 9 * MS, .tid = 1});
		t += 10 * MS;
	}
	gp_live_tick(l, t, false, &r);
	ok(r.steps == 50 && !strcmp(r.step_name, "train_step") && near(r.median_ms, 10, 0.004),
	   "a worker's loop inside the steps is not the step: %s, %u steps, median %.3f ms",
	   r.step_name, r.steps, r.median_ms);
	gp_live_free(l);
}

static void test_file(void)
{
	gp_live_rank_t r = {0}, back;
	char buf[8192];
	l = gp_live_new(2.0, 0, NULL);
	t = MS;
	rec((gp_event_t){.type = GP_EV_START, .ts = t});
	name(5, "a\\b\"c\x01\xc3\xa9");
	steps(30, 10);
	t += 5 * MS;
	steps(30, 20);
	gp_live_tick(l, t, false, &r);
	snprintf(r.job, sizeof(r.job), "123");
	snprintf(r.state, sizeof(r.state), "running");
	r.rank = 7, r.pid = 99, r.written = 1.5e9, r.seq = 3;
	size_t n = gp_live_format(&r, buf, sizeof(buf));
	ok(n > 0 && gp_live_parse(buf, &back) == 0, "written and read back (%zu bytes)", n);
	ok(!strcmp(back.step_name, "a\\b\"c???") && back.rank == 7 && back.pid == 99 &&
	       back.steps == r.steps && fabs(back.median_ms - r.median_ms) < 1e-3 &&
	       back.nfind == r.nfind && !strcmp(back.find[0].text, r.find[0].text) &&
	       fabs(back.slow_since_s - r.slow_since_s) < 1e-3,
	   "the same figures, findings and name (%s)", back.step_name);
	ok(gp_live_format(&r, buf, 100) == 0, "a file that does not fit is not written");
	static const char *const bad[] = {"", "{}", "{\"gpuprof_live\": 0}", "[1]",
	                                  "{\"gpuprof_live\": 1, \"step_name\": \"abc"};
	int rejected = 0;
	for (size_t i = 0; i < 4; i++)
		rejected += gp_live_parse(bad[i], &back) < 0;
	ok(rejected == 4 && gp_live_parse(bad[4], &back) == 0 && !back.step_name[0],
	   "not a live file: rejected; a string cut short: empty");
	ok(gp_live_parse("{\"gpuprof_live\": 1, \"rank\": 1e300, \"pid\": -5, \"median_ms\": nan, "
	                 "\"p95_ms\": -inf}",
	                 &back) == 0 &&
	       back.rank == INT32_MAX && back.pid == 0 && back.median_ms == 0 && back.p95_ms == 0,
	   "numbers out of range clamped, not finite ones 0 (a user's file, read by root)");
	/* finite but absurd figures of a user's file: busy_pct 1.7e308 summed over 3 ranks
	 * gave inf in the JSON; -50 counted; 2^40 steps read as 0; -1 bytes as 2^64 - 1 */
	ok(gp_live_parse("{\"gpuprof_live\": 1, \"busy_pct\": 1.7e308, \"last_busy_pct\": -50, "
	                 "\"elapsed_s\": 1.7e308, \"median_ms\": -3, \"started\": 1e300, "
	                 "\"steps\": 1099511627776, \"warmup\": -1, \"lost\": -1, "
	                 "\"mem_peak_bytes\": 18446744073709551616, \"faults\": 4294967296, "
	                 "\"first_step_s\": 1e300, \"slow_ratio\": 1e300, \"slow_since_s\": -7, "
	                 " \"gpus\": 2}",
	                 &back) == 0 &&
	       back.busy_pct == 0 && back.last_busy_pct == 0 && back.elapsed_s == 0 &&
	       back.median_ms == 0 && back.started == 0 && back.steps == 0 && back.warmup == 0 &&
	       back.lost == 0 && back.mem_peak == 0 && back.faults == 0 &&
	       back.first_step_s == -1 && back.slow_ratio == 0 && back.slow_since_s == -1 &&
	       back.ngpus == 2,
	   "figures out of their range dropped at parse: busy %% in 0..100, times finite and "
	   ">= 0, counts in their type (steps %u, busy %g, lost %llu)",
	   back.steps, back.busy_pct, (unsigned long long)back.lost);
	ok(gp_live_parse("{\"gpuprof_live\": 1, \"busy_pct\": 100, \"steps\": 4294967295, "
	                 "\"elapsed_s\": 3e9, \"lost\": 18446744073709551615}",
	                 &back) == 0 &&
	       back.busy_pct == 100 && back.steps == UINT32_MAX && back.elapsed_s == 3e9 &&
	       back.lost == UINT64_MAX,
	   "figures at the edge of their range kept");
	ok(gp_live_parse("{\"gpuprof_live\": 1, \"node\": \"n\x1b]52;c;x\x07\", "
	                 "\"step_name\": \"s\\u001b[2Jt\x7f\"}",
	                 &back) == 0 &&
	       !strchr(back.node, 0x1b) && !strchr(back.node, 0x07) &&
	       !strchr(back.step_name, 0x7f),
	   "control bytes a job wrote (escapes for root's terminal) are never kept (%s, %s)",
	   back.node, back.step_name);
	back.written = 100, back.interval_s = 30;
	snprintf(back.state, sizeof(back.state), "running");
	ok(!gp_live_stale(&back, 150) && gp_live_stale(&back, 201),
	   "stale after 3 intervals and 10 s without a new file");
	snprintf(back.state, sizeof(back.state), "ended");
	ok(!gp_live_stale(&back, 1e9), "an ended rank is never stale");
	gp_live_free(l);
}

int main(void)
{
	test_steps_and_slowdown();
	test_markers_pushes_nvml();
	test_optimizer();
	test_worker_loop();
	test_file();
	return done_testing();
}
