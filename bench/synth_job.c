/* bench/synth-job: a synthetic job directory of real rank files written through the
 * common writer, shaped like a data-parallel training run: per step an NVTX train_step
 * with forward/backward/optimizer ranges, ~100 distinct kernels (5% NCCL), one launch
 * API record per kernel, a few allocations, NVML samples. Rank 3 is 40% slower.
 *   synth-job --ranks N --events M --out DIR     (M kernel events per rank)
 * --threads: the shape of bench/mt_streams.cu (issue 51 item 13): the main thread's steps
 * take exactly 0.39 ms (every kernel 2.58 us; the GPU is behind the launches), while two
 * worker threads (tids 11, 12) each loop on a range 'workerN_iter' of 8 kernels of 10 us
 * on a stream of their own, about 4 times as often, each holding more GPU time than the
 * steps do.
 * --torch: each rank says what PyTorch's integration does (GP_FW_INFO), as agent/python
 * does at its start: the framework section's line. --devices N: each rank's kernels on devices
 * 0..N-1 in turn (one process driving N GPUs: JAX's local devices, HF device_map="auto"); --stray:
 * rank r's kernels on device r, 1 in 50 of them on device 0 (a DDP rank that strays onto GPU 0).
 * Either way every rank sees devices 0..7 by UUID "GPU-synth-K" (GP_EV_GPU), as one node's ranks
 * do. */
#include "config.h"
#include "event.h"
#include "log.h"
#include "modes.h"
#include "path.h"
#include "rankfile.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* One iteration of a worker thread's loop (--threads) from t: its range, 8 launches of
 * 10 us kernels on its own stream, the wait for them; returns its next start. */
static uint64_t worker_iter(gp_rf_writer_t *w, uint32_t tid, uint64_t range, uint64_t t,
                            uint64_t *gpu, uint64_t *corr)
{
	gp_event_t p = {.type = GP_EV_NVTX_PUSH, .tid = tid, .ts = t, .a = range};
	gp_rf_append(w, &p);
	for (int k = 0; k < 8; k++) {
		uint64_t launch = t + 2000 + (uint64_t)k * 2000;
		if (*gpu < launch + 4000)
			*gpu = launch + 4000;
		gp_event_t a = {.type = GP_EV_API,
		                .tid = tid,
		                .ts = launch,
		                .a = 1500,
		                .b = 211,
		                .c = *corr,
		                .u8 = 1,
		                .u16 = GP_API_LAUNCH};
		gp_event_t kr = {.type = GP_EV_KERNEL,
		                 .ts = *gpu,
		                 .a = 10000,
		                 .b = 200 + k,
		                 .c = (*corr)++,
		                 .d = 20 + tid};
		gp_rf_append(w, &a);
		gp_rf_append(w, &kr);
		*gpu += 10000;
	}
	gp_event_t q = {.type = GP_EV_NVTX_POP, .tid = tid, .ts = *gpu + 3000};
	gp_rf_append(w, &q);
	return *gpu + 4000;
}

int main(int argc, char **argv)
{
	int ranks = 8, profiler_steps = 0, threads = 0, first = 0, torch = 0, devices = 1,
	    stray = 0, slow_pct = 0, clock = 0, period = 0;
	long events = 100000, cap_from = -1, cap_to = -1, shift_at = -1, batch_at = -1;
	const char *out = NULL, *node_prefix = "node";
	for (int i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : "";
		if (!strcmp(argv[i],
		            "--profiler-steps")) /* steps marked by cudaProfilerStart/Stop */
			profiler_steps = 1;
		else if (!strcmp(argv[i], "--torch")) /* the PyTorch integration's own line */
			torch = 1;
		else if (!strcmp(argv[i], "--threads")) /* worker threads' loops (mt_streams) */
			threads = 1;
		else if (!strcmp(argv[i], "--capture") &&
		         i + 1 < argc) /* kernels only in steps A-B */
			i++, sscanf(v, "%ld-%ld", &cap_from, &cap_to);
		else if (!strcmp(argv[i], "--devices") && i + 1 < argc) /* kernels on N */
			devices = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--stray")) /* rank r on device r, 1 in 50 on 0 */
			stray = 1;
		else if (!strcmp(argv[i], "--slow-share") && i + 1 < argc) /* PCT % of steps 3x */
			slow_pct = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--period") && i + 1 < argc) /* every P-th step 4x */
			period = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--shift-at") && i + 1 < argc) /* 1.5x from step S */
			shift_at = atol(argv[++i]);
		else if (!strcmp(argv[i], "--batch-at") && i + 1 < argc) /* 2x blocks and time */
			batch_at = atol(argv[++i]);
		else if (!strcmp(argv[i], "--clock")) /* 8 GPUs' SM clocks (see below) */
			clock = 1;
		else if (!strcmp(argv[i], "--ranks") && i + 1 < argc)
			i++, ranks = atoi(v);
		else if (!strcmp(argv[i], "--first") && i + 1 < argc) /* resume: ranks from R on */
			i++, first = atoi(v);
		else if (!strcmp(argv[i], "--events") && i + 1 < argc)
			i++, events = atol(v);
		else if (!strcmp(argv[i], "--out") && i + 1 < argc)
			i++, out = v;
		else if (!strcmp(argv[i], "--node-prefix") && i + 1 < argc) /* PREFIX%03d */
			i++, node_prefix = v;
		else
			out = NULL, i = argc;
	}
	if (!out || ranks < 1 || events < 100 || devices < 1 || devices > 8) {
		fprintf(stderr,
		        "usage: synth-job --ranks N --events M --out DIR [--profiler-steps] "
		        "[--capture A-B] [--threads] [--torch] [--first R] [--node-prefix P] "
		        "[--slow-share PCT] [--period P] [--shift-at S] [--batch-at S] [--clock] "
		        "[--devices N] "
		        "[--stray]\n");
		return 2;
	}
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s/step0", out);
	int dfd = gp_mkdir_p(dir, 0700);
	if (dfd < 0)
		return gp_err_errno("%s", dir), 1;
	const int kpstep = 100; /* kernels per step */
	const long steps = events / kpstep;
	/* every rank's events come from a seed of its own: a resumed job is the same job */
	for (int r = first < 0 ? 0 : first; r < ranks; r++) {
		char name[64], hdr[2048] = "", b[64];
		snprintf(name, sizeof(name), "rank%d.gpr", r);
		int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0)
			return gp_err_errno("%s/%s", dir, name), 1;
		gp_rf_hdr_add(hdr, sizeof(hdr), GP_HDR_JOB, "424242");
		gp_rf_hdr_add(hdr, sizeof(hdr), GP_HDR_STEP, "0");
		snprintf(b, sizeof(b), "%d", r);
		gp_rf_hdr_add(hdr, sizeof(hdr), GP_HDR_RANK, b);
		snprintf(b, sizeof(b), "%d", ranks);
		gp_rf_hdr_add(hdr, sizeof(hdr), GP_HDR_NTASKS, b);
		snprintf(b, sizeof(b), "%s%03d", node_prefix, r / 8);
		gp_rf_hdr_add(hdr, sizeof(hdr), GP_HDR_NODE, b);
		gp_rf_hdr_add(hdr, sizeof(hdr), GP_HDR_MODES, "timing,nvtx,cuda,mem");
		gp_rf_hdr_add(hdr, sizeof(hdr), GP_HDR_REALTIME_NS, "1796000000000000000");
		gp_rf_hdr_add(hdr, sizeof(hdr), GP_HDR_MONOTONIC_NS, "1000000000");
		gp_rf_hdr_add(hdr, sizeof(hdr), GP_HDR_WRAPPED, "agent");
		gp_rf_writer_t *w = gp_rf_writer_create(fd, hdr, 0);
		if (!w)
			return gp_err_errno("writer"), 1;
		static const char *ranges[] = {"train_step",  "zero_grad",      "forward",
		                               "backward",    "optimizer_step", "worker1_iter",
		                               "worker2_iter"};
		for (uint32_t i = 0; i < 7; i++)
			gp_rf_append_string(w, i + 1, ranges[i]);
		for (uint32_t k = 0; k < kpstep; k++) {
			char kn[128];
			if (k % 20 == 19)
				snprintf(kn, sizeof(kn),
				         "ncclDevKernel_AllReduce_Sum_bf16_RING_LL_%u", k);
			else
				snprintf(
				    kn, sizeof(kn),
				    "void at::native::elementwise_kernel_%u<128, 4>(int, float*)",
				    k);
			gp_rf_append_string(w, 100 + k, kn);
		}
		if (batch_at >= 0) { /* --batch-at: launch configurations, 2x the blocks from S */
			gp_rf_append_string(w, 400, "grid 64,1,1 block 256,1,1 regs 32 smem 0+0");
			gp_rf_append_string(w, 401, "grid 128,1,1 block 256,1,1 regs 32 smem 0+0");
		}
		for (uint32_t k = 0; threads && k < 8; k++) {
			char kn[64];
			snprintf(kn, sizeof(kn), "axpy_%u(float*, const float*, float, int)", k);
			gp_rf_append_string(w, 200 + k, kn);
		}
		for (uint32_t k = 0; (devices > 1 || stray || clock) && k < 8; k++) {
			char u[32];
			snprintf(u, sizeof(u), "GPU-synth-%u", k);
			gp_rf_append_string(w, 300 + k, u);
			gp_event_t g = {.type = GP_EV_GPU,
			                .ts = 1000000000ull,
			                .a = 300 + k,
			                .b = 80ull << 30,
			                .u8 = (uint8_t)k};
			gp_rf_append(w, &g);
		}
		uint64_t seed = 0x9e3779b97f4a7c15ull ^ (uint64_t)r, t = 1000000000ull, corr = 1;
		if (torch) { /* what agent/python says of itself at its start */
			gp_rf_append_string(w, 300, "torch 2.11.0+cu130 (synthetic); steps: NVTX");
			gp_event_t fw = {.type = GP_EV_FW, .ts = t, .u8 = GP_FW_INFO, .b = 300};
			gp_rf_append(w, &fw);
		}
		/* --clock: NVML samples the 8 GPUs the agent sees, at 1980 MHz; the rank's own
		 * (device 0 of --devices 1) falls to 1410 MHz from --shift-at's step; 30 idle
		 * samples at 210 MHz before the first step (the agent samples from its start) */
		for (int i = 0; clock && i < 30; i++, t += 1000000) {
			gp_event_t n = {.type = GP_EV_NVML,
			                .ts = t,
			                .b = 1ull << 30,
			                .c = 60000ull | 210ull << 32};
			gp_rf_append(w, &n);
		}
		uint64_t addr = 0x7f0000000000ull;
		double slow = r == 3 ? 1.4 : 1.0;
		uint64_t wt[2] = {t, t + 40000}, wgpu[2] = {0, 0}; /* --threads: the workers' */
		for (long s = 0; s < steps; s++) {
			gp_event_t p = {.type = GP_EV_NVTX_PUSH, .tid = 7, .ts = t, .a = 1};
			if (profiler_steps)
				p = (gp_event_t){.type = GP_EV_PROFILER, .ts = t, .a = 1};
			gp_rf_append(w, &p);
			/* a capture window: the collector switches cuda at step boundaries */
			bool captured = cap_from < 0 || (s >= cap_from && s <= cap_to);
			/* as the collector does: a record only where the state changes (none at
			 * step 0 when the window starts there) */
			if (cap_from >= 0 && ((s == 0 && !captured) || (s == cap_from && s > 0) ||
			                      s == cap_to + 1)) {
				gp_event_t c = {.type = GP_EV_CONTROL, .ts = t, .b = (uint64_t)s};
				c.a = GP_MODE_MEM | (captured ? GP_MODE_CUDA : 0);
				c.c = 150000;
				gp_rf_append(w, &c);
			}
			uint64_t gpu = t + 20000;
			/* --slow-share: 3 times as slow, the steps chosen by their number only
			 * (a job of 200 steps is the first 200 of one of 1000) */
			uint64_t h = ((uint64_t)s + 1) * 0x9e3779b97f4a7c15ull;
			double sf = (int)((h >> 40) % 100) < slow_pct ? 3 : 1;
			if (period > 1 && s % period == period - 1)
				sf *= 4; /* --period: a periodic slow step (an eval, a sync) */
			if (shift_at >= 0 && s >= shift_at)
				sf *= 1.5;
			if (batch_at >= 0 && s >= batch_at)
				sf *= 2; /* --batch-at: a batch 2x, its kernels' blocks 2x */
			for (int k = 0; k < kpstep; k++) {
				uint64_t launch = t + 5000 + (uint64_t)k * 3000;
				uint64_t dur = (uint64_t)((5000 + rnd(&seed) % 20000) * slow * sf);
				if (threads) /* known step times: 100 x (2580 + 1000) + 32000 ns */
					dur = 2580;
				if (gpu < launch + 4000)
					gpu = launch + 4000;
				gp_event_t a = {.type = GP_EV_API,
				                .tid = 7,
				                .ts = launch,
				                .a = 2500,
				                .b = 211,
				                .c = corr,
				                .u8 = 1,
				                .u16 = GP_API_LAUNCH};
				gp_event_t kr = {.type = GP_EV_KERNEL,
				                 .ts = gpu,
				                 .a = dur,
				                 .b = 100 + (uint64_t)k,
				                 .c = corr,
				                 .d = k % 20 == 19 ? 13 : 7,
				                 .tid = batch_at < 0    ? 0
				                        : s >= batch_at ? 401
				                                        : 400,
				                 .u8 = (uint8_t)(stray ? (k % 50 == 7 ? 0 : r % 8)
				                                       : k % devices)};
				if (captured) { /* the work happens either way; only records differ
					         */
					gp_rf_append(w, &a);
					gp_rf_append(w, &kr);
				}
				gpu += dur + 1000;
				corr++;
			}
			if (s < 3) { /* allocations during warm-up, as caching allocators do, made
				      * by a thread without NVTX ranges (as PyTorch's autograd
				      * threads allocate gradients) */
				gp_event_t ac = {.type = GP_EV_API,
				                 .tid = 9,
				                 .ts = t + 9000,
				                 .a = 2000,
				                 .b = 20,
				                 .c = corr,
				                 .u8 = 1,
				                 .u16 = GP_API_ALLOC_STACK};
				gp_event_t m = {.type = GP_EV_ALLOC,
				                .ts = t + 10000,
				                .a = addr,
				                .b = 64ull << 20,
				                .c = corr++,
				                .u16 = 3};
				gp_rf_append(w, &ac);
				gp_rf_append(w, &m);
				addr += 64ull << 20;
			}
			uint64_t end = gpu + 10000;
			gp_event_t q = {.type = GP_EV_NVTX_POP, .tid = 7, .ts = end};
			if (profiler_steps)
				q = (gp_event_t){.type = GP_EV_PROFILER, .ts = end, .a = 0};
			gp_rf_append(w, &q);
			for (uint32_t k = 0; clock && k < 8; k++) {
				uint64_t mhz =
				    k == 0 && shift_at >= 0 && s >= shift_at ? 1410 : 1980;
				gp_event_t n = {.type = GP_EV_NVML,
				                .ts = end,
				                .u8 = (uint8_t)k,
				                .a = 90,
				                .b = 40ull << 30,
				                .c = 300000ull | mhz << 32};
				gp_rf_append(w, &n);
			}
			if (!clock && s % 10 == 0) {
				gp_event_t n = {.type = GP_EV_NVML,
				                .ts = end,
				                .a = 90,
				                .b = 40ull << 30,
				                .c = 500000};
				gp_rf_append(w, &n);
			}
			t = end + 2000;
			for (int k = 0; threads && k < 2; k++)
				while (wt[k] < t)
					wt[k] =
					    worker_iter(w, 11 + k, 6 + k, wt[k], &wgpu[k], &corr);
		}
		gp_event_t e = {.type = GP_EV_END, .ts = t, .d = t - 1000000000ull};
		gp_rf_append(w, &e);
		if (gp_rf_writer_close(w, false) < 0)
			return gp_err_errno("close"), 1;
	}
	close(dfd);
	printf("synth-job: %d ranks x %ld kernel events in %s\n", ranks, events, out);
	return 0;
}
