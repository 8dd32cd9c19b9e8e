/* The report's passes on synthetic events (report/rankdata.h): steps and their GPU time,
 * steps found from the launch sequence, step markers, cross-thread attribution, the idle
 * classes, and the statistics. Each case builds a timeline whose answer is known. */
#include "config.h"
#include "rankdata.h"
#include "stats.h"
#include "synth.h"
#include "modes.h"
#include "tap.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MS 1000000ull
#define US 1000ull

SYNTH_ONE_RANK()

static void push(uint32_t tid, uint64_t ts, uint32_t name)
{
	feed((gp_event_t){.type = GP_EV_NVTX_PUSH, .tid = tid, .ts = ts, .a = name});
}
static void pop(uint32_t tid, uint64_t ts)
{
	feed((gp_event_t){.type = GP_EV_NVTX_POP, .tid = tid, .ts = ts});
}
static void launch(uint32_t tid, uint64_t ts, uint64_t corr, uint64_t start, uint64_t dur,
                   uint32_t name)
{
	synth_launch(&d, &r, tid, ts, corr, start, dur, name);
}

static void begin(void)
{
	gp_rd_reset(&d);
	gp_rank_release(&r);
	memset(&r, 0, sizeof(r));
	gp_job_free(&job);
	memset(&job, 0, sizeof(job));
	d.warmup = 2;
	str(1, "train_step");
	str(2, "gemm");
	str(3, "relu");
	str(4, "sgd");
	str(5, "backward");
}

static void run(void)
{
	gp_rd_finish(&d);
	gp_pass_steps(&r, &d);
	gp_pass_capture(&r, &d);
	gp_pass_gpu(&r, &d);
	gp_pass_ranges(&job, &r, &d);
	gp_pass_memory(&r, &d);
}

static bool near(double got, double want, double tol)
{
	return fabs(got - want) <= tol;
}

/* The host launches a step in 0.5 ms and moves on; each step's kernel runs 5 ms. */
static void gpu_bound(void)
{
	begin();
	for (uint32_t i = 0; i < 10; i++) {
		uint64_t s = i * MS;
		push(7, s, 1);
		launch(7, s + 100 * US, 100 + i, 200 * US + i * 5 * MS, 5 * MS, 2);
		pop(7, s + 500 * US);
	}
	run();
	ok(r.steps.n == 10 && !strcmp(r.steps.source, "nvtx"), "NVTX steps: 10 (%u, %s)", r.steps.n,
	   r.steps.source);
	ok(!strcmp(r.steps.basis, "gpu") && near(r.steps.median_ms, 5.0, 1e-6),
	   "headline is the GPU step, 5 ms (%s %.4f)", r.steps.basis, r.steps.median_ms);
	ok(near(r.steps.cpu_median_ms, 0.5, 1e-6) && near(r.steps.period_median_ms, 1.0, 1e-6),
	   "CPU range 0.5 ms and period 1 ms kept beside it (%.4f %.4f)", r.steps.cpu_median_ms,
	   r.steps.period_median_ms);
	ok(r.steps.ngpu == 8 && r.steps.nms == 8, "one GPU sample per post-warm-up step (%u)",
	   r.steps.ngpu);
}

/* No NVTX: a 4-launch sequence repeats 12 times with a 2 ms host pause before each. */
static void kernel_steps(void)
{
	begin();
	uint64_t t = 0, g = 0;
	uint32_t corr = 1;
	static const uint32_t seq[] = {4, 2, 3, 2};
	launch(9, t, corr++, g, 50 * US, 3); /* one launch of initialisation first */
	for (int i = 0; i < 12; i++) {
		t += 2 * MS;
		if (g < t)
			g = t + 10 * US;
		for (int k = 0; k < 4; k++) {
			launch(9, t, corr++, g, 300 * US, seq[k]);
			t += 20 * US;
			g += 300 * US;
		}
	}
	run();
	ok(!strcmp(r.steps.source, "kernels") && r.steps.n >= 11 && r.steps.n <= 13,
	   "steps found from the repeating launch sequence: %u (want 12 +- 1), %s", r.steps.n,
	   gp_txt(r.steps.how));
	/* each step: 2 ms + 4 x 20 us of host time; the GPU follows the host */
	ok(near(r.steps.median_ms, 2.08, 0.01), "GPU step of the found steps %.4f ms (2.08)",
	   r.steps.median_ms);
}

/* Markers: no kernel records; GPU time between step ends from CUDA events. */
static void markers(void)
{
	begin();
	for (uint32_t i = 0; i < 8; i++) {
		push(7, i * MS, 1);
		pop(7, i * MS + 300 * US);
		feed((gp_event_t){.type = GP_EV_STEP_MARK,
		                  .ts = i * MS + 300 * US,
		                  .a = i ? 3 * MS : 0,
		                  .d = i ? 1 : 0});
	}
	run();
	ok(!strcmp(r.steps.basis, "gpu") && r.steps.gpu_from_markers &&
	       near(r.steps.median_ms, 3, 1e-6),
	   "step markers give the GPU step, 3 ms (%s %.4f)", r.steps.basis, r.steps.median_ms);
}

/* n steps, kernels traced from the start to step a and from b to c (capture switches as
 * the collector writes them); a traced step takes 5 ms and runs a kernel through it, an
 * untraced one its own length (ms[i % nms]); from step slow on, each twice as long; marked:
 * a step marker at each step's end with its GPU time (its length), else none */
static void windowed_at(uint32_t n, uint32_t a, uint32_t b, uint32_t c, const uint64_t *ms,
                        uint32_t nms, uint32_t slow, bool marked)
{
	uint64_t t = 0;
	uint32_t corr = 1;
	begin();
	feed((gp_event_t){.type = GP_EV_CONTROL, .ts = 1, .a = GP_MODE_CUDA | GP_MODE_MEM});
	for (uint32_t i = 0; i < n; i++) {
		bool traced = i < a || (i >= b && i < c);
		if (i == a || i == c || i == b)
			feed((gp_event_t){.type = GP_EV_CONTROL,
			                  .ts = t,
			                  .a = i == b ? GP_MODE_CUDA : GP_MODE_MEM,
			                  .b = i});
		uint64_t len = (traced ? 5 * MS : ms[i % nms]) * (i >= slow ? 2 : 1);
		push(7, t + 10 * US, 1);
		if (traced)
			launch(7, t + 100 * US, corr++, t + 200 * US, len - 300 * US, 2);
		pop(7, t + len - 10 * US);
		if (marked)
			feed((gp_event_t){.type = GP_EV_STEP_MARK,
			                  .ts = t + len - 10 * US,
			                  .a = len,
			                  .d = i ? 1 : 0});
		t += len;
	}
	run();
}

static void windowed(uint32_t n, uint32_t a, uint32_t b, uint32_t c, const uint64_t *ms,
                     uint32_t nms)
{
	windowed_at(n, a, b, c, ms, nms, n, false);
}

/* Capture windows without step markers between them (GPUPROF_STEP_MARKERS=0, a context
 * the markers do not follow): a host-bound step of 3 ms, which tracing stretches to 5 ms in
 * the windows (steps 0-3 and 12-16). The headline is the untraced steps' period, not the
 * traced steps' GPU time (the seed MLP on the H200: 5.4 ms for 3.6). */
static void windows_no_markers(void)
{
	static const uint64_t three[] = {3 * MS}, fifth[] = {MS, MS, MS, MS, 7 * MS};
	windowed(30, 4, 12, 17, three, 1);
	ok(!strcmp(r.steps.basis, "period") && near(r.steps.median_ms, 3.0, 1e-3),
	   "headline: the untraced steps' period, 3 ms (%s %.4f)", r.steps.basis,
	   r.steps.median_ms);
	ok(r.capture.nuntraced == 17 && near(r.capture.untraced_median_ms, 3.0, 1e-3) &&
	       near(r.capture.tracer_ms_per_step, 2.0, 0.01),
	   "the traced steps' GPU time set against it: +%.3f ms over %u untraced steps (those "
	   "next to a window left out: 17)",
	   r.capture.tracer_ms_per_step, r.capture.nuntraced);
	/* the untraced loop waits for the GPU only every fifth step: four 1 ms launches, then
	 * a 7 ms wait. Its periods' median (1 ms) is not its throughput (2.2 ms): the traced
	 * steps' GPU time stays the headline */
	windowed(40, 4, 20, 25, fifth, 5);
	ok(!strcmp(r.steps.basis, "gpu") && near(r.steps.median_ms, 5.0, 1e-3),
	   "a loop that waits every fifth step: its period is no headline, the traced GPU time is "
	   "(%s %.4f)",
	   r.steps.basis, r.steps.median_ms);
}

/* Capture windows with step markers between them, the traced steps no slower than the
 * untraced: every step is the headline, the traced ones timed from kernel records and the
 * others from the markers. The loop slows from 5 to 10 ms at step 14, between the windows
 * (traced: steps 0-9 and 20-33): the level shift's onset is step 14, found on the samples
 * in step order (the traced ones first, then the untraced, made a shift at step 21 of it). */
static void windows_shift(void)
{
	static const uint64_t five[] = {5 * MS};
	windowed_at(44, 10, 20, 34, five, 1, 14, true);
	ok(!strcmp(r.steps.basis, "gpu") && r.capture.ntraced == 21 && r.capture.nuntraced == 21 &&
	       r.capture.tracer_ms_per_step <= 0 && r.steps.nms == 42,
	   "traced and untraced steps alike: all 42 in the headline (%s, %u traced, %u untraced, "
	   "%u kept)",
	   r.steps.basis, r.capture.ntraced, r.capture.nuntraced, r.steps.nms);
	bool ordered = r.steps.nms > 0;
	for (unsigned j = 1; j < r.steps.nms; j++)
		ordered &= gp_step_no(&r, j) > gp_step_no(&r, j - 1);
	ok(ordered, "the kept samples in step order (%u .. %u)", gp_step_no(&r, 0),
	   gp_step_no(&r, r.steps.nms - 1));
	ok(r.steps.shift.ratio > 1.9 && r.steps.shift.step == 14,
	   "the slowdown's onset: step 14 (step %u, x%.2f)", r.steps.shift.step,
	   r.steps.shift.ratio);
}

/* More steps than are kept (GP_STEP_KEEP): the shift is searched on the medians of blocks
 * of consecutive steps, not on evenly spaced samples, which alias with a periodic step
 * (the tester, session 32: 10/30 ms alternating over 1024 steps read as "3.0x slower from
 * step 513"); a real shift among them is still placed at its step */
static void many_steps_shift(void)
{
	static const uint64_t alt[] = {10 * MS, 30 * MS}, ten[] = {10 * MS};
	unsigned fired = 0, first = 0;
	for (uint32_t n = 1020; n <= 1030; n++) { /* the aliasing depends on the exact count */
		windowed_at(n, 0, n, n, alt, 2, n, true);
		if (r.steps.shift.ratio > 0 && !fired++)
			first = n;
	}
	ok(r.steps.nall > GP_STEP_KEEP && !fired,
	   "1020-1030 steps alternating 10/30 ms: no slowdown (%u of 11 fired, the first at %u "
	   "steps)",
	   fired, first);
	windowed_at(1200, 0, 1200, 1200, ten, 1, 600, true);
	ok(r.steps.shift.ratio > 1.9 && r.steps.shift.step == 600,
	   "1200 steps, twice as long from step 600: found there (step %u, x%.2f)",
	   r.steps.shift.step, r.steps.shift.ratio);
	/* the counts either side are the steps', not the blocks' */
	ok(near(r.steps.shift.before_ms, 10, 1e-3) && near(r.steps.shift.after_ms, 20, 1e-3) &&
	       r.steps.shift.nbefore + r.steps.shift.nafter == r.steps.nall,
	   "... its medians 10 and 20 ms over %u + %u of the %u steps (%.3f, %.3f)",
	   r.steps.shift.nbefore, r.steps.shift.nafter, r.steps.nall, r.steps.shift.before_ms,
	   r.steps.shift.after_ms);
}

/* 80 steps of one 5 ms kernel and a 1 MiB copy, the kernel 10 ms from step 30; bytes: the
 * copy 2 MiB from then (a batch-size ramp); clock: NVML's SM clock 1980 MHz, 1400 from
 * then (else 1980 throughout), with (CLK_THROTTLE) the software power cap's reason from
 * then, or (CLK_IDLE) the GPU's utilisation falling 90 -> 35 % and its idle reason
 * (CLK_IDLE_REASON: the reason alone); the
 * application clocks' reason holds throughout (an H100's default: no reason of the fall) */
enum { CLK_NONE, CLK_FELL, CLK_THROTTLE, CLK_IDLE, CLK_IDLE_REASON };
static void ramp_at(bool bytes, int clock)
{
	uint64_t g = 1 * MS, corr = 1;
	begin();
	for (uint32_t i = 0; i < 80; i++) {
		uint64_t s = g, dur = (i >= 30 ? 10 : 5) * MS;
		bool late = clock && i >= 30;
		uint64_t why = 0x2 | (late && clock == CLK_THROTTLE ? 0x4 : 0) |
		               (late && clock >= CLK_IDLE ? 0x1 : 0);
		feed((gp_event_t){.type = GP_EV_NVML,
		                  .ts = s,
		                  .a = late && clock == CLK_IDLE ? 35 : 90,
		                  .b = 1 << 30,
		                  .c = 300000ull | (uint64_t)(late ? 1400 : 1980) << 32,
		                  .d = 1593ull | why << 32});
		push(7, s, 1);
		launch(7, s + 100 * US, corr++, s + 200 * US, dur, 2);
		feed((gp_event_t){.type = GP_EV_API,
		                  .tid = 7,
		                  .ts = s + 150 * US,
		                  .a = 2000,
		                  .c = corr,
		                  .u8 = 1,
		                  .u16 = GP_API_OTHER});
		feed((gp_event_t){.type = GP_EV_MEMCPY,
		                  .ts = s + 200 * US + dur,
		                  .a = 10 * US,
		                  .b = (bytes && i >= 30 ? 2 : 1) << 20,
		                  .c = corr++,
		                  .u16 = 1});
		g = s + 300 * US + dur;
		pop(7, g - 50 * US);
	}
	run();
}

/* Steps of one kernel each, the kernel ms[i / per] ms long (levels of per steps) */
static void levels_run(const double *ms, unsigned nlev, unsigned per)
{
	uint64_t g = 1 * MS, corr = 1;
	begin();
	for (uint32_t i = 0; i < nlev * per; i++) {
		uint64_t s = g, dur = (uint64_t)(ms[i / per] * (double)MS);
		push(7, s, 1);
		launch(7, s + 100 * US, corr++, s + 200 * US, dur, 2);
		g = s + 300 * US + dur;
		pop(7, g - 50 * US);
	}
	run();
}

/* A staircase's step shape is its first level and its last (10, 15, 22 ms: 22 ms the last
 * third, not the largest rise's 15 ms: the reviewer, session 34), as the finding says */
static void stair_shape(void)
{
	static const double ms[] = {10, 15, 22};
	levels_run(ms, 3, 60);
	const gp_step_shape_t *sh = &r.steps.shape;
	ok(r.steps.shift.nlevels == 3 && !strcmp(sh->shape, "shifted") &&
	       near(sh->low_ms, 10.4, 0.3) && near(sh->high_ms, 22.4, 0.3) &&
	       near(sh->high_share, 60.0 / 178, 0.02),
	   "a staircase's shape: its first level and its last, the last's share (%u levels, %s "
	   "%.2f / %.2f ms, %.3f)",
	   r.steps.shift.nlevels, sh->shape, sh->low_ms, sh->high_ms, sh->high_share);
}

/* The slowdown finding's evidence of the rank just run (r), or "" */
static const char *shift_evidence(void)
{
	static char ev[sizeof(((gp_finding_t *)0)->evidence)];
	gp_job_t j;
	memset(&j, 0, sizeof(j));
	j.ranks = &r;
	j.nranks = 1;
	gp_job_findings(&j);
	ev[0] = '\0';
	for (unsigned i = 0; i < j.nf; i++)
		if (!strcmp(j.f[i].id, "slowdown"))
			snprintf(ev, sizeof(ev), "%s", j.f[i].evidence);
	j.ranks = NULL, j.nranks = 0;
	gp_job_free(&j);
	return ev;
}

/* The work per step either side of a shift (issue 50: a batch-size ramp at step 30 was
 * blamed on the node) and NVML's SM clock either side */
static void shift_work(void)
{
	ramp_at(true, CLK_NONE);
	ok(r.steps.shift.ratio > 1.8 && r.steps.shift.step == 30 &&
	       near(r.steps.shift.work_ratio, 2, 0.01) &&
	       !strcmp(r.steps.shift.work_what, "bytes copied or set"),
	   "2x the bytes a step from step 30, the step 2x as long: more work, not the node "
	   "(x%.2f from %u, work x%.2f: %s)",
	   r.steps.shift.ratio, r.steps.shift.step, r.steps.shift.work_ratio,
	   r.steps.shift.work_what);
	ramp_at(false, CLK_FELL);
	ok(r.steps.shift.ratio > 1.8 && r.steps.shift.step == 30 &&
	       !(r.steps.shift.work_ratio > 0) &&
	       near(r.steps.shift.clock_before_mhz, 1980, 1e-9) &&
	       near(r.steps.shift.clock_after_mhz, 1400, 1e-9),
	   "the same work a step, slower from step 30: a shift of the node, the SM clock 1980 then "
	   "1400 MHz (work x%.2f, %.0f / %.0f MHz)",
	   r.steps.shift.work_ratio, r.steps.shift.clock_before_mhz, r.steps.shift.clock_after_mhz);
	const char *ev = shift_evidence();
	ok(!r.steps.shift.clock_reasons[0] && near(r.steps.shift.util_before, 90, 1e-9) &&
	       near(r.steps.shift.util_after, 90, 1e-9) && strstr(ev, "NVML gave no reason"),
	   "... no reason came with it (the application clocks' held throughout), the GPU as "
	   "busy: a fall of no known reason ('%s', %.0f / %.0f %%)",
	   r.steps.shift.clock_reasons, r.steps.shift.util_before, r.steps.shift.util_after);
	ramp_at(false, CLK_THROTTLE);
	ev = shift_evidence();
	ok(!strcmp(r.steps.shift.clock_reasons, "sw_power_cap") &&
	       strstr(ev, "throttle reasons sw_power_cap from it on: the GPU slowed"),
	   "... the power cap's reason from the onset on: named, the GPU slowed ('%s')",
	   r.steps.shift.clock_reasons);
	ramp_at(false, CLK_IDLE);
	ev = shift_evidence();
	ok(!r.steps.shift.clock_reasons[0] && near(r.steps.shift.util_after, 35, 1e-9) &&
	       strstr(ev, "utilisation 90 % before, 35 % after; NVML's idle reason in 0 % of the "
	                  "samples before, 100 % after") &&
	       strstr(ev, "not its cause") && !strstr(ev, "the GPU slowed"),
	   "... the clock fell with the GPU's use (idle, no throttle reason): a consequence, not "
	   "the cause ('%s', %.0f / %.0f %%)",
	   r.steps.shift.clock_reasons, r.steps.shift.util_before, r.steps.shift.util_after);
	ramp_at(false, CLK_IDLE_REASON);
	ev = shift_evidence();
	ok(near(r.steps.shift.util_after, 90, 1e-9) && strstr(ev, "not its cause"),
	   "... NVML's idle reason from the onset on, the utilisation the same (a GPU idle between "
	   "busy samples): a consequence too");
}

/* 80 steps of one 6 ms kernel of 300 thread blocks; from step 30 either three kernels of
 * 100 blocks, 3 ms each (a compiled graph fallen back to eager kernels: the same work in
 * 1.5x the time) or one of 600 blocks, 12 ms (a batch 2x) */
static void kernels_at(bool fallback)
{
	uint64_t g = 1 * MS, corr = 1;
	begin();
	str(20, "grid 300,1,1 block 256,1,1 regs 32 smem 0+0");
	str(21, "grid 100,1,1 block 256,1,1 regs 32 smem 0+0");
	str(22, "grid 600,1,1 block 256,1,1 regs 32 smem 0+0");
	for (uint32_t i = 0; i < 80; i++) {
		uint64_t s = g, t = s + 200 * US;
		unsigned nk = i >= 30 && fallback ? 3 : 1;
		uint64_t dur = (i < 30 ? 6 : fallback ? 3 : 12) * MS;
		uint32_t cfg = i < 30 ? 20 : fallback ? 21 : 22;
		push(7, s, 1);
		for (unsigned k = 0; k < nk; k++, t += dur) {
			feed((gp_event_t){.type = GP_EV_API,
			                  .tid = 7,
			                  .ts = s + 100 * US + k * US,
			                  .a = 500,
			                  .c = corr,
			                  .u8 = 1,
			                  .u16 = GP_API_LAUNCH});
			feed((gp_event_t){.type = GP_EV_KERNEL,
			                  .tid = cfg,
			                  .ts = t,
			                  .a = dur,
			                  .b = 2,
			                  .c = corr++});
		}
		g = t + 100 * US;
		pop(7, g - 50 * US);
	}
	run();
}

/* More, smaller kernels for the same thread blocks are a slowdown, not more work (the
 * tester, session 33: D13: an eager fallback was "more work", the kernel count); 2x the
 * blocks in 2x the time still is */
static void shift_kernels(void)
{
	kernels_at(true);
	const gp_step_shift_t *sh = &r.steps.shift;
	ok(near(sh->ratio, 1.5, 0.05) && sh->step == 30 && !(sh->work_ratio > 0) &&
	       near(sh->kernels_ratio, 3, 0.01) && near(sh->blocks_ratio, 1, 0.01),
	   "3 kernels of a third of the blocks from step 30, 1.5x the time: a slowdown, not "
	   "more work (x%.2f from %u, work x%.2f %s, kernels x%.2f, blocks x%.2f)",
	   sh->ratio, sh->step, sh->work_ratio, sh->work_what, sh->kernels_ratio, sh->blocks_ratio);
	kernels_at(false);
	ok(near(sh->ratio, 2, 0.05) && sh->step == 30 && near(sh->work_ratio, 2, 0.01) &&
	       !strcmp(sh->work_what, "thread blocks"),
	   "2x the blocks from step 30, 2x the time: more work (x%.2f from %u, work x%.2f %s)",
	   sh->ratio, sh->step, sh->work_ratio, sh->work_what);
}

/* What `gpuprof diff` compares: the kept samples of two runs of one program whose steps
 * alternate 10/30 ms. Evenly spaced ones alias: 1025 steps kept every 2nd (all 10 ms),
 * 1026 half of them 30 ms, read as "+200 % REGRESSION" (the report32 tester); the medians
 * of blocks of consecutive steps are alike */
static void kept_alias(void)
{
	static const uint64_t alt[] = {10 * MS, 30 * MS};
	double worst = 1, *k[2] = {NULL, NULL};
	unsigned nk[2] = {0, 0}, at = 0;
	for (uint32_t n = 1020; n <= 1040; n++) {
		for (int j = 0; j < 2; j++) {
			windowed_at(n + (uint32_t)j, 0, n + j, n + j, alt, 2, n + j, true);
			free(k[j]);
			nk[j] = r.steps.nms;
			k[j] = malloc(nk[j] * sizeof(double));
			memcpy(k[j], r.steps.ms, nk[j] * sizeof(double));
		}
		double eff = 0.5, p = gp_mann_whitney(k[0], nk[0], k[1], nk[1], &eff);
		double ch = gp_median(k[1], nk[1]) / gp_median(k[0], nk[0]);
		if (p < worst)
			worst = p, at = n;
		if (p < 0.01 && fabs(ch - 1) >= 0.05)
			break;
	}
	ok(worst >= 0.01,
	   "alternating 10/30 ms, n against n+1 steps (n 1020-1040): the kept "
	   "samples alike (the lowest Mann-Whitney p %.3g, at %u steps)",
	   worst, at);
	free(k[0]);
	free(k[1]);
}

/* A thread without a range of its own (autograd) launches inside the step's range. */
static void cross_thread(void)
{
	begin();
	for (uint32_t i = 0; i < 4; i++) {
		uint64_t s = i * 10 * MS;
		push(7, s, 1);
		push(7, s + 1 * MS, 5);
		launch(8, s + 2 * MS, 10 + i, s + 3 * MS, 1 * MS, 2); /* on thread 8 */
		pop(7, s + 6 * MS);
		pop(7, s + 8 * MS);
	}
	run();
	uint64_t bw = 0;
	for (unsigned i = 0; i < job.nr; i++)
		if (!strcmp(job.r[i].name, "backward"))
			bw = job.r[i].gpu_ns;
	/* the range table is the steady state's: its post-warm-up steps */
	ok(r.steps.n_post >= 1 && bw == r.steps.n_post * MS,
	   "the other thread's kernels count in 'backward' (%llu ns over %u steps)",
	   (unsigned long long)bw, r.steps.n_post);
	ok(r.gpu.kernels_other_thread == 4, "and are counted as attributed across threads (%llu)",
	   (unsigned long long)r.gpu.kernels_other_thread);
}

/* The GPU runs dry while the host waits in a synchronize: that idle is the sync's. */
static void sync_idle(void)
{
	begin();
	launch(7, 0, 1, 10 * US, 1 * MS, 2);
	feed((gp_event_t){.type = GP_EV_API,
	                  .tid = 7,
	                  .ts = 100 * US,
	                  .a = 920 * US,
	                  .c = 2,
	                  .u8 = 1,
	                  .u16 = GP_API_SYNC});
	launch(7, 1500 * US, 3, 1600 * US, 1 * MS, 2); /* 590 us after the GPU went idle */
	launch(7, 4 * MS, 4, 4100 * US, 1 * MS, 2);    /* no sync: host wait of 1.5 ms */
	run();
	ok(r.gpu.idle_sync_ns == 590 * US && r.gpu.idle_host_ns == 1500 * US,
	   "idle after a synchronize (%llu) apart from host waits (%llu)",
	   (unsigned long long)r.gpu.idle_sync_ns, (unsigned long long)r.gpu.idle_host_ns);
}

static void stats(void)
{
	double v[] = {5, 1, 4, 2, 3};
	ok(gp_median(v, 5) == 3 && gp_median(v, 4) == 3 && gp_quantile(v, 5, 0.95) == 5,
	   "median and p95 (nearest rank)");
	uint64_t u[] = {9, 2, 7, 4, 5};
	ok(gp_median_u64(u, 5) == 5, "integer median by quickselect");
	{ /* the median of the others, for each one, from one sort: as by brute force */
		double all[9] = {4, 1, 7, 7, 2, 9, 1, 3, 7}, sorted[9], others[8];
		bool same = true;
		for (size_t n = 1; n <= 9; n++) {
			memcpy(sorted, all, n * sizeof(double));
			gp_sort_doubles(sorted, n);
			for (size_t i = 0; i < n; i++) {
				size_t k = 0;
				for (size_t j = 0; j < n; j++)
					if (j != i)
						others[k++] = all[j];
				same &=
				    gp_median(others, k) == gp_median_without(sorted, n, all[i]);
			}
		}
		ok(same, "leave-one-out median from one sort equals the brute force one");
	}
	double a[20], b[20], c[20], eff;
	for (int i = 0; i < 20; i++) {
		a[i] = 10 + (i % 5) * 0.01;
		b[i] = 10.5 + (i % 5) * 0.01;
		c[i] = 10 + ((i + 2) % 5) * 0.01;
	}
	double p1 = gp_mann_whitney(a, 20, b, 20, &eff);
	ok(p1 < 1e-6 && eff > 0.99, "Mann-Whitney: a shift is significant (p %.3g, P %.2f)", p1,
	   eff);
	double p2 = gp_mann_whitney(a, 20, c, 20, &eff);
	ok(p2 > 0.5, "Mann-Whitney: the same distribution is not (p %.3g)", p2);
	ok(gp_mann_whitney(a, 3, b, 3, &eff) == 1, "too few samples: no claim");
}

/* How the job ended comes first: a rank killed at the time limit (sacct: TIMEOUT) is
 * named as such, with the last step it reached; without sacct's word it is "killed". */
static void time_limit(void)
{
	gp_job_t j;
	memset(&j, 0, sizeof(j));
	gp_rank_t *rk = calloc(1, sizeof(*rk));
	rk->outcome.has_end = true;
	rk->outcome.wait_status = SIGTERM; /* a wait status: killed by SIGTERM */
	rk->steps.n = 120;
	rk->steps.last_step = 119;
	j.ranks = rk;
	j.nranks = 1;
	snprintf(j.sacct_state, sizeof(j.sacct_state), "TIMEOUT");
	gp_job_findings(&j);
	ok(j.nf >= 1 && !strcmp(j.f[0].id, "time_limit") && strstr(j.f[0].title, "step 119"),
	   "a time-limit kill is the first finding, with the last step (%s: %s)",
	   j.nf ? j.f[0].id : "-", j.nf ? j.f[0].title : "");
	j.sacct_state[0] = '\0';
	j.nf = 0;
	gp_job_findings(&j);
	ok(j.nf >= 1 && !strcmp(j.f[0].id, "killed"), "without sacct's State it is 'killed' (%s)",
	   j.nf ? j.f[0].id : "-");
	gp_job_free(&j);
}

/* Memory held against the card: the same optimizer state (30 % of the peak) is a finding
 * on a card the peak nearly fills and none where the peak is 2 % of it; a peak at 95 % of
 * the card without an OOM is memory_near_limit; the advice speaks the program's framework
 * (PyTorch's kernels: never cudaFree). */
static void memory_against_card(void)
{
	const uint64_t gib = 1ull << 30;
	for (int big = 0; big < 2; big++) {
		gp_job_t j;
		memset(&j, 0, sizeof(j));
		gp_rank_t *rk = calloc(1, sizeof(*rk));
		rk->outcome.has_end = true;
		rk->id.gpu_total = 80 * gib;
		rk->memory.peak = big ? 76 * gib : 2 * gib;
		rk->memory.optimizer_bytes = rk->memory.peak * 3 / 10;
		snprintf(rk->memory.optimizer_source, sizeof(rk->memory.optimizer_source),
		         "first optimizer range");
		rk->memory.growth_per_step = 1 << 20;
		rk->memory.leak_allocs = 10;
		rk->steps.n_post = 20;
		rk->gpu.torch_kernels = big;
		j.ranks = rk;
		j.nranks = 1;
		gp_job_findings(&j);
		const gp_finding_t *opt = NULL, *near = NULL, *leak = NULL;
		for (unsigned i = 0; i < j.nf; i++) {
			if (!strcmp(j.f[i].id, "optimizer_state"))
				opt = &j.f[i];
			if (!strcmp(j.f[i].id, "memory_near_limit"))
				near = &j.f[i];
			if (!strcmp(j.f[i].id, "memory_leak"))
				leak = &j.f[i];
		}
		if (big) {
			ok(opt && strstr(opt->evidence, "of the card's 80.00 GiB (95.0%)"),
			   "95 %% of the card: optimizer_state, held against it (%s)",
			   opt ? opt->evidence : "none");
			ok(near && strstr(near->title, "95%") &&
			       strstr(near->fix, "torch.utils.checkpoint"),
			   "... and memory_near_limit in PyTorch's words (%s / %.60s)",
			   near ? near->title : "none", near ? near->fix : "");
			ok(leak && !strstr(leak->fix, "cudaFree") && strstr(leak->fix, ".detach()"),
			   "a PyTorch program's leak advice never says cudaFree (%.60s)",
			   leak ? leak->fix : "none");
		} else {
			ok(!opt && !near,
			   "2.5 %% of the card: no optimizer_state, no near-limit (%s)",
			   opt    ? opt->title
			   : near ? near->title
			          : "none");
			ok(leak && strstr(leak->fix, "cudaFree"),
			   "a CUDA C program's leak advice names cudaFree (%.60s)",
			   leak ? leak->fix : "none");
		}
		gp_job_free(&j);
	}
}

/* A kernel's median and p95 from its bucketed durations, against the exact nearest-rank
 * quantiles of the same durations: within 2.2 % (half a bucket), also after two ranks'
 * figures are merged; the standard deviation exact. */
static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static void kernel_quantiles(void)
{
	static uint64_t v[3000];
	gp_kstat_t *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	a->min = b->min = UINT64_MAX;
	uint64_t x = 88172645463325252ull;
	double sum = 0, sq = 0;
	for (unsigned i = 0; i < 3000; i++) { /* 1 us to ~4 ms, skewed, two ranks */
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		v[i] = 1000 + (x % 4000) * (x % 1000) + (i % 7 == 0 ? 50000 : 0);
		gp_kstat_add(i % 2 ? a : b, v[i]);
		sum += (double)v[i], sq += (double)v[i] * (double)v[i];
	}
	gp_kstat_merge(a, b);
	qsort(v, 3000, sizeof(v[0]), cmp_u64);
	double med = (double)v[1499], p95 = (double)v[2849]; /* ceil(q n) - 1 */
	double gm = gp_kstat_quantile(a, 0.5), gp95 = gp_kstat_quantile(a, 0.95);
	double sd = sqrt(sq / 3000 - (sum / 3000) * (sum / 3000));
	ok(a->calls == 3000 && fabs(gm / med - 1) <= 0.022 && fabs(gp95 / p95 - 1) <= 0.022,
	   "median %.0f (exact %.0f), p95 %.0f (exact %.0f) within 2.2 %%", gm, med, gp95, p95);
	ok(fabs(gp_kstat_stddev(a) / sd - 1) < 1e-9 && a->min == v[0] && a->max == v[2999],
	   "standard deviation %.1f (exact %.1f), min and max exact", gp_kstat_stddev(a), sd);
	gp_kstat_t *one = calloc(1, sizeof(*one));
	one->min = UINT64_MAX;
	gp_kstat_add(one, 12345);
	ok(gp_kstat_quantile(one, 0.5) == 12345 && gp_kstat_quantile(one, 0.95) == 12345 &&
	       gp_kstat_stddev(one) == 0,
	   "one call: its own duration (%.0f)", gp_kstat_quantile(one, 0.5));
	gp_kstat_free_hist(a), gp_kstat_free_hist(b), gp_kstat_free_hist(one);
	free(a), free(b), free(one);
}

static void fw(uint8_t kind, uint32_t tid, uint64_t ts, uint64_t a, uint64_t c, uint64_t dd,
               uint32_t text)
{
	feed((gp_event_t){.type = GP_EV_FW,
	                  .u8 = kind,
	                  .tid = tid,
	                  .ts = ts,
	                  .a = a,
	                  .b = text,
	                  .c = c,
	                  .d = dd});
}

/* PyTorch without NVTX: optimizer 0 returns every 4 ms, optimizer 1 every other step;
 * the GPU finishes each step's 3 ms kernel 1 ms after the launch. Steps come from
 * optimizer 0; the optimizer state and the allocator's growth come through as said. */
static void optimizer_steps(void)
{
	begin();
	str(6, "Adam: 1.0 MiB float32 on cuda");
	fw(GP_FW_INFO, 7, 0, 0, 0, 0, 5);
	for (uint32_t i = 0; i < 10; i++) {
		uint64_t s = i * 4 * MS;
		launch(7, s + 100 * US, 100 + i, s + 1 * MS, 3 * MS, 2);
		fw(GP_FW_OPT_BEGIN, 7, s + 3500 * US, 0, 0, 0, 0);
		fw(GP_FW_OPT_END, 7, s + 3900 * US, 0, i + 1, 0, 0);
		if (i % 2)
			fw(GP_FW_OPT_END, 7, s + 3950 * US, 1, i / 2 + 1, 0, 0);
		fw(GP_FW_MEM_STEP, 7, s + 3960 * US, 1000 + 64 * i, 4096, i + 1, 0);
	}
	fw(GP_FW_OPT_STATE, 7, 41 * MS, 0, 1048576, 1048580, 6);
	run();
	ok(r.steps.n == 10 && !strcmp(r.steps.source, "optimizer"),
	   "10 steps from optimizer 0's step() (%u, %s: %s)", r.steps.n, r.steps.source,
	   gp_txt(r.steps.how));
	ok(!strcmp(r.steps.basis, "gpu") && near(r.steps.median_ms, 4.0, 1e-6),
	   "GPU step 4 ms (%s %.4f)", r.steps.basis, r.steps.median_ms);
	ok(r.torch.opt_steps == 10 && near(r.torch.opt_period_median_ms, 4.0, 1e-6) &&
	       r.torch.nopt == 2 && r.torch.opt[1].steps == 5,
	   "PyTorch's view: 10 calls 4 ms apart, a second optimizer with 5 (%u %.3f %u %llu)",
	   r.torch.opt_steps, r.torch.opt_period_median_ms, r.torch.nopt,
	   (unsigned long long)r.torch.opt[1].steps);
	ok(r.torch.opt_device_bytes == 1048576 && r.memory.optimizer_bytes == 1048576 &&
	       !strcmp(r.memory.optimizer_source, "PyTorch optimizer state"),
	   "optimizer state from its state tensors (%llu, %s)",
	   (unsigned long long)r.memory.optimizer_bytes, r.memory.optimizer_source);
	ok(near(r.torch.growth_per_step, 64, 1e-9), "allocator growth 64 bytes a step (%.3f)",
	   r.torch.growth_per_step);
	d.steps_from = GP_STEPS_AUTO;
}

/* A host that compiles in every step (torch.compile or jit meeting a new shape each
 * time): 6 ms of each 10 ms step compiling before the step's 3 ms kernel is launched. The
 * GPU's idle time is the host's, mostly compiling, and idle_gaps says so with the advice
 * for it; no input-pipeline or launch-overhead advice. */
static void compiling(void)
{
	begin();
	str(6, "torch.compile");
	for (uint32_t i = 0; i < 12; i++) {
		uint64_t s = i * 10 * MS;
		fw(GP_FW_COMPILE, 7, s + 6 * MS, 6 * MS, 0, 0, 6); /* ended at +6 ms, took 6 */
		launch(7, s + 6100 * US, 100 + i, s + 6200 * US, 3 * MS, 2);
		fw(GP_FW_OPT_BEGIN, 7, s + 9500 * US, 0, 0, 0, 0);
		fw(GP_FW_OPT_END, 7, s + 9900 * US, 0, i + 1, 0, 0);
	}
	run();
	ok(r.steps.n == 12 && near(r.steps.median_ms, 10.0, 0.01),
	   "12 optimizer steps of 10 ms (%u, %.3f)", r.steps.n, r.steps.median_ms);
	uint64_t host = r.gpu.idle_host_ns;
	ok(host > 0 && r.gpu.idle_compile_ns * 2 >= host,
	   "the GPU's idle time is the host's, most of it compiling (%.1f of %.1f ms)",
	   r.gpu.idle_compile_ns / 1e6, host / 1e6);
	gp_job_t j;
	memset(&j, 0, sizeof(j));
	j.ranks = calloc(1, sizeof(*j.ranks));
	memcpy(j.ranks, &r, sizeof(r)); /* the job owns the rank's tables from here */
	memset(&r, 0, sizeof(r));
	j.ranks[0].outcome.has_end = true;
	j.nranks = 1;
	gp_job_findings(&j);
	const gp_finding_t *f = NULL;
	for (unsigned i = 0; i < j.nf; i++)
		if (!strcmp(j.f[i].id, "idle_gaps"))
			f = &j.f[i];
	ok(f && strstr(f->title, "compiling") && strstr(f->fix, "keep shapes and dtypes stable") &&
	       !strstr(f->fix, "DataLoader") && !strstr(f->fix, "CUDA graph"),
	   "idle_gaps: compiling, with the advice for it (%s / %.80s)", f ? f->title : "none",
	   f ? f->fix : "");
	gp_job_free(&j);
}

/* Layer ranges (start/end, another domain) on the autograd thread: they get the GPU work
 * launched on their own thread while open, and never become the steps. */
static void layer_ranges(void)
{
	begin();
	str(6, "Linear backward");
	str(8, "pytorch.layers");
	for (uint32_t i = 0; i < 6; i++) {
		uint64_t s = i * 10 * MS;
		push(7, s, 1);
		feed((gp_event_t){.type = GP_EV_NVTX_START,
		                  .tid = 9,
		                  .ts = s + 1 * MS,
		                  .a = 6,
		                  .b = 8,
		                  .c = 50 + i});
		launch(9, s + 2 * MS, 200 + i, s + 3 * MS, 2 * MS, 2);
		feed((gp_event_t){.type = GP_EV_NVTX_END, .tid = 9, .ts = s + 4 * MS, .c = 50 + i});
		launch(9, s + 5 * MS, 300 + i, s + 6 * MS, 1 * MS, 3); /* after it ended */
		pop(7, s + 8 * MS);
	}
	run();
	const gp_rstat_t *bw = NULL, *st = NULL;
	for (unsigned i = 0; i < job.nr; i++) {
		if (!strcmp(job.r[i].name, "Linear backward"))
			bw = &job.r[i];
		if (!strcmp(job.r[i].name, "train_step"))
			st = &job.r[i];
	}
	/* the table is the steady state's: the 3 steps after the 3 of warm-up */
	unsigned post = r.steps.n_post;
	ok(bw && bw->count == post && bw->count_all == 6 && bw->gpu_ns == post * 2 * MS,
	   "a start/end range gets the GPU work of its thread while open (%llu ns)",
	   bw ? (unsigned long long)bw->gpu_ns : 0);
	ok(st && st->gpu_ns == post * 3 * MS,
	   "the step range on the main thread still gets all of it through the autograd thread "
	   "(%llu ns)",
	   st ? (unsigned long long)st->gpu_ns : 0);
	ok(!strcmp(r.steps.source, "nvtx") && !strcmp(r.steps.name, "train_step"),
	   "steps are the program's range, not a layer range (%s)", r.steps.name);
	gp_merge_kernels(&job, &r, &d);
	const gp_kstat_t *g = NULL;
	for (unsigned i = 0; i < job.nk; i++)
		if (!strcmp(job.k[i].name, "gemm"))
			g = &job.k[i];
	ok(g && g->in[0].name && !strcmp(g->in[0].name, "Linear backward"),
	   "a kernel launched in a module's start/end range is launched in it (%s)",
	   g && g->in[0].name ? g->in[0].name : "-");
}

/* Each kernel's launching range: the innermost range open at its launch, not the step
 * range itself, the largest share where several ranges launched it. */
static void launched_in(void)
{
	begin();
	str(6, "fc1");
	str(7, "fc2");
	for (uint32_t i = 0; i < 8; i++) {
		uint64_t s = i * 10 * MS;
		push(1, s, 1);          /* train_step */
		push(1, s + 1 * MS, 6); /* fc1: gemm 2 ms */
		launch(1, s + 1 * MS + 100 * US, 100 + i, s + 2 * MS, 2 * MS, 2);
		pop(1, s + 2 * MS);
		push(1, s + 2 * MS, 7); /* fc2: gemm 1 ms, relu */
		launch(1, s + 2 * MS + 100 * US, 200 + i, s + 4 * MS, 1 * MS, 2);
		launch(1, s + 2 * MS + 300 * US, 300 + i, s + 5 * MS, 1 * MS, 3);
		pop(1, s + 3 * MS);
		launch(1, s + 3 * MS + 100 * US, 400 + i, s + 6 * MS, 1 * MS,
		       4); /* sgd: the step's */
		pop(1, s + 8 * MS);
	}
	run();
	gp_merge_kernels(&job, &r, &d);
	const gp_kstat_t *gemm = NULL, *relu = NULL, *sgd = NULL;
	for (unsigned i = 0; i < job.nk; i++) {
		if (!strcmp(job.k[i].name, "gemm"))
			gemm = &job.k[i];
		if (!strcmp(job.k[i].name, "relu"))
			relu = &job.k[i];
		if (!strcmp(job.k[i].name, "sgd"))
			sgd = &job.k[i];
	}
	ok(gemm && gemm->in[0].name && !strcmp(gemm->in[0].name, "fc1") &&
	       gemm->in[0].ns * 3 == gemm->total * 2,
	   "gemm: launched in fc1 for 2 of its 3 ms per step (%s)",
	   gemm && gemm->in[0].name ? gemm->in[0].name : "-");
	ok(relu && relu->in[0].name && !strcmp(relu->in[0].name, "fc2") &&
	       relu->in[0].ns == relu->total,
	   "relu: all of it in fc2 (%s)", relu && relu->in[0].name ? relu->in[0].name : "-");
	ok(sgd && !sgd->in[0].name, "sgd, launched in the step range alone: none (%s)",
	   sgd && sgd->in[0].name ? sgd->in[0].name : "-");
}

/* Two programs one after the other under one agent: CUPTI counts correlation ids from 1
 * in each; the second's carry its generation above bit 32 (cupti.c) and every kernel
 * must be matched to its own program's launch. */
static void two_programs(void)
{
	begin();
	for (uint64_t i = 1; i <= 5; i++)
		launch(10, i * MS, i, i * MS + 100 * US, 200 * US, 2);
	for (uint64_t i = 1; i <= 5; i++)
		launch(20, (100 + i) * MS, 1ull << 32 | i, (100 + i) * MS + 100 * US, 200 * US, 3);
	run();
	unsigned right = 0;
	for (size_t i = 0; i < d.kerns.n; i++) {
		const api_t *a = gp_rd_launch(&d, &d.kerns.v[i]);
		right += a && a->tid == (d.kerns.v[i].name == 2 ? 10u : 20u) &&
		         a->start < d.kerns.v[i].start;
	}
	ok(d.kerns.n == 10 && right == 10,
	   "two programs with the same CUPTI correlation ids: every kernel matched to its own "
	   "program's launch (%u of %zu)",
	   right, d.kerns.n);
}

/* Steps on a program with side threads (issue 51 item 13, bench/mt_streams.cu): the main
 * thread's 'train_step' (10 of 1 ms, a 0.6 ms kernel each) against, on thread 8, a range
 * repeated more often: a worker's loop inside the steps that holds more GPU time than they
 * do (its kernels must not move the steps' GPU completion either), a loader's loop beside
 * them with no GPU work, and one with a sliver of it. The steps stay 'train_step', 1 ms. */
static void side_threads(void)
{
	static const char *what[] = {"a worker's loop inside the steps, holding more GPU time",
	                             "a loop beside the steps, no GPU work",
	                             "a loop beside the steps, 0.5 % of the GPU time"};
	for (int c = 0; c < 3; c++) {
		begin();
		str(6, "side_iter");
		uint64_t corr = 1;
		for (uint64_t i = 0; i < 10; i++) {
			push(7, i * MS, 1);
			launch(7, i * MS + 100 * US, corr++, i * MS + 200 * US, 600 * US, 2);
			pop(7, i * MS + 900 * US);
		}
		/* c 0: every 0.3 ms through the steps, a 0.2 ms kernel each (33 of them); c 1,
		 * 2: 30 ranges after the steps, with no kernel or one of 1 us */
		uint64_t from = c == 0 ? 50 * US : 20 * MS, every = c == 0 ? 300 * US : 200 * US;
		unsigned n = c == 0 ? 33 : 30;
		for (uint64_t t = from, k = 0; k < n; k++, t += every) {
			push(8, t, 6);
			if (c != 1)
				launch(8, t + 10 * US, corr++, t + 20 * US,
				       c == 0 ? 200 * US : 1 * US, 3);
			pop(8, t + (c == 0 ? 230 : 100) * US);
		}
		run();
		ok(!strcmp(r.steps.name, "train_step") && r.steps.n == 10 &&
		       !strcmp(r.steps.basis, "gpu") && near(r.steps.median_ms, 1.0, 1e-9) &&
		       near(r.steps.p95_ms, 1.0, 1e-9),
		   "%s: steps 'train_step' (%s, %u), GPU median and p95 1 ms (%.6f, %.6f)", what[c],
		   r.steps.name, r.steps.n, r.steps.median_ms, r.steps.p95_ms);
		ok(strstr(gp_txt(r.steps.how), "not 'side_iter'") != NULL,
		   "... and the report says why (%s)", gp_txt(r.steps.how));
	}
}

/* Steps from NVTX with no GPU records (modes timing,nvtx): the main thread's 'train_step'
 * (10 of 1 ms) against a worker thread's 'side_iter' repeated as often (10 of 0.1 ms), so
 * neither count nor GPU time tells them apart. The steps are the main thread's (tid = the
 * recording process's pid), whichever thread id is lower; with no main thread known, the
 * one with the most wall time inside its ranges; with that equal too, the first range
 * seen. Before, the tie went to the first name in (thread, start) order: the worker's
 * when its thread id was the lower. */
static void gpu_less_ties(void)
{
	static const struct {
		const char *what;
		uint32_t pid, main_tid, worker_tid;
		uint64_t main_from, worker_from, worker_len;
		const char *want;
	} cs[] = {
	    {"the worker's thread id below the main thread's", 500, 500, 40, 0, 50 * US, 100 * US,
	     "train_step"},
	    {"the worker's thread id above the main thread's", 30, 30, 600, 0, 50 * US, 100 * US,
	     "train_step"},
	    {"no main thread known: the most wall time", 0, 500, 40, 0, 50 * US, 100 * US,
	     "train_step"},
	    {"the shorter ranges on the main thread: the main thread first", 40, 500, 40, 0,
	     50 * US, 100 * US, "side_iter"},
	    {"no main thread, equal wall time: the first range seen", 0, 500, 40, 0, 20 * MS,
	     1 * MS, "train_step"},
	    {"no main thread, equal wall time, it first and on the lower thread", 0, 40, 500, 0,
	     20 * MS, 1 * MS, "train_step"},
	    {"no main thread, equal wall time, the other seen first", 0, 500, 40, 20 * MS, 0,
	     1 * MS, "side_iter"},
	};
	for (size_t c = 0; c < sizeof(cs) / sizeof(cs[0]); c++) {
		begin();
		str(6, "side_iter");
		d.recorder_pid = cs[c].pid;
		for (uint64_t i = 0; i < 10; i++) {
			push(cs[c].main_tid, cs[c].main_from + i * MS, 1);
			pop(cs[c].main_tid, cs[c].main_from + i * MS + 1 * MS);
			push(cs[c].worker_tid, cs[c].worker_from + i * MS, 6);
			pop(cs[c].worker_tid, cs[c].worker_from + i * MS + cs[c].worker_len);
		}
		run();
		ok(!strcmp(r.steps.source, "nvtx") && !strcmp(r.steps.name, cs[c].want) &&
		       r.steps.n == 10,
		   "no GPU records, two ranges 10 times each, %s: steps '%s' (%s, %u)", cs[c].what,
		   cs[c].want, r.steps.name, r.steps.n);
	}
}

/* Small kernels: shorter than GP_SMALL_KERNEL_US (fragmentation's small_kernel, the one
 * value the rule documents): a kernel 1 ns under it is small, at it and 1 ns over are not. */
static void small_kernels(void)
{
	begin();
	const uint64_t at = GP_SMALL_KERNEL_US * US;
	uint32_t corr = 1;
	for (uint32_t i = 0; i < 10; i++) {
		uint64_t s = i * MS;
		push(7, s, 1);
		launch(7, s + 10 * US, corr++, s + 100 * US, at - 1, 2);
		launch(7, s + 20 * US, corr++, s + 200 * US, at, 2);
		launch(7, s + 30 * US, corr++, s + 300 * US, at + 1, 2);
		pop(7, s + 500 * US);
	}
	run();
	ok(GP_SMALL_KERNEL_US == 10 && r.gpu.nkernels && r.gpu.small_kernels * 3 == r.gpu.nkernels,
	   "small kernels: those under %d us, one in three (%llu of %llu)", GP_SMALL_KERNEL_US,
	   (unsigned long long)r.gpu.small_kernels, (unsigned long long)r.gpu.nkernels);
}

int main(void)
{
	small_kernels();
	two_programs();
	time_limit();
	memory_against_card();
	kernel_quantiles();
	optimizer_steps();
	layer_ranges();
	compiling();
	launched_in();
	gpu_bound();
	side_threads();
	gpu_less_ties();
	kernel_steps();
	markers();
	windows_no_markers();
	windows_shift();
	many_steps_shift();
	kept_alias();
	shift_work();
	stair_shape();
	shift_kernels();
	cross_thread();
	sync_idle();
	stats();
	gp_rd_free(&d);
	gp_job_free(&job);
	gp_rank_release(&r);
	return done_testing();
}
