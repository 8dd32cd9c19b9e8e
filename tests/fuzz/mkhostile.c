/* tests/fuzz/mkhostile: valid, checksummed rank files crafted to make a careless reader
 * slow, large or wrong (issue 15's hostile inputs). Each is a real job directory:
 *   mkhostile CASE N DIR
 *   strings   N distinct string ids of one byte each (memory per id), then one range
 *             named by a last string "last_string"
 *   pops      N pushes on one thread, N pops on another that never match, then N nested
 *             pushes and pops on one thread (time per pop)
 *   ends      N starts never ended and N ends of ids never started
 *   ts0       N kernels and API calls with CUPTI's unknown timestamp (0)
 *   absurd    20 good steps plus N each of: kernels lasting UINT64_MAX ns, ranges that end
 *             before they start, allocations of 2^63 bytes, kernels in the year 2170
 *   threads   N threads with one open range each
 *   rangenames N ranges with N distinct names (the job-wide range table)
 *   allocs    20 good steps and N device allocations, each freed (exports' batching)
 *   noise     N steps of 100 kernels each with pseudo-random durations (a large file that
 *             takes the reader seconds: for faults while it is read)
 *   snapshot  20 good steps, N device allocations, and the PyTorch integration's record of
 *             a memory_viz pickle it left beside the file: rank0.torch-exit.pickle
 *   samelaunch N launches of one kernel, every one with the same duration and launch
 *             latency (a launch loop: medians over equal values)
 *   ops       N steps of a PyTorch program without NVTX (steps from optimizer.step()),
 *             each with the integration's operation ranges (ops_step): a copy of 1 MiB,
 *             linear's 2 kernels, relu's 1, backward() whose autograd thread launches 1
 *             outside every range; kernels with their launch configuration but the
 *             autograd thread's (as an older collector wrote them)
 *   names     N steps of "ops" whose every name is hostile: kernel, operation, NVTX
 *             range, thread and stream names with terminal escapes, other control
 *             characters (C1's CSI, U+009B, in a kernel's and the thread's name), bytes
 *             that are not UTF-8, HTML, CSV and a name of 5 000 bytes
 *   csvinj    N steps of "ops" whose kernel and operation names begin with = + @ -
 *             (a spreadsheet's formulas: the CSV export must not hand them over as such)
 *   wide      20 "ops" steps on a node whose name is N characters long, ended as one of a
 *             launcher's ranks ("ended (status with its launcher)"): the text's columns
 *             as wide as a job's own cells
 *   widebad   the same, the node "gpu-node-" then N - 9 bytes 0x80 (not UTF-8: one '?'
 *             in the text, which its column's width must be measured by)
 * The good steps of "absurd" are 10 ms apart with a 4 ms kernel: a reader that ignores
 * the impossible records reports 10 ms steps and counts 4N bad records. */
#include "config.h"
#include "event.h"
#include "path.h"
#include "rankfile.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MONO 1000000000000ull /* the header's monotonic_ns: records start here */

static gp_rf_writer_t *w;

static void put(uint8_t type, uint32_t tid, uint64_t ts, uint64_t a, uint64_t b, uint64_t c,
                uint64_t d)
{
	gp_event_t e = {.type = type, .tid = tid, .ts = ts, .a = a, .b = b, .c = c, .d = d};
	if (gp_rf_append(w, &e) < 0) {
		fprintf(stderr, "mkhostile: write failed\n");
		exit(1);
	}
}

/* N device allocations of 4 KiB from t on, each freed after it when freed is set */
static void allocs(uint64_t n, bool freed)
{
	for (uint64_t i = 0; i < n; i++) {
		gp_event_t e = {.type = GP_EV_ALLOC,
		                .ts = MONO + 1000 + 2 * i,
		                .a = 0x7f0000000000ull + i * 4096,
		                .b = 4096,
		                .u16 = 3};
		gp_rf_append(w, &e);
		e.type = GP_EV_FREE;
		e.ts++;
		if (freed)
			gp_rf_append(w, &e);
	}
}

/* A launch call (runtime API, class launch) on thread tid and the GPU work it made:
 * kind GP_EV_KERNEL (name, launch configuration string) or GP_EV_MEMCPY (bytes, HtoD). */
static uint64_t ops_corr = 1000;
static void ops_launch(uint32_t tid, uint64_t t, unsigned kind, uint64_t name_or_bytes,
                       uint32_t launch)
{
	gp_event_t a = {.type = GP_EV_API,
	                .tid = tid,
	                .ts = t,
	                .a = 3000,
	                .c = ++ops_corr,
	                .u8 = 1,
	                .u16 = GP_API_LAUNCH};
	a.b = kind == GP_EV_KERNEL ? 211 : 41; /* cudaLaunchKernel, cudaMemcpyAsync */
	gp_rf_append(w, &a);
	gp_event_t k = {.type = (uint8_t)kind,
	                .ts = t + 20000,
	                .a = 100000,
	                .b = name_or_bytes,
	                .c = ops_corr,
	                .d = 7,
	                .tid = launch};
	if (kind == GP_EV_MEMCPY)
		k.u16 = 1 | 2 << 8 | 3 << 12; /* HtoD, pinned to device */
	gp_rf_append(w, &k);
}

static void ops_range(uint32_t tid, uint64_t t0, uint64_t t1, uint32_t name, uint64_t id)
{
	put(GP_EV_NVTX_START, tid, t0, name, 5, id, 0); /* domain 5: "pytorch.ops" */
	put(GP_EV_NVTX_END, tid, t1, 0, 0, id, 0);
}

/* One 10 ms step of the "ops" case: to (1 MiB copy), linear (2 kernels), relu (1),
 * backward() on thread 1 while thread 2 (autograd's) launches 1 kernel with no range of
 * its own; then optimizer.step() returns (the step's end: no NVTX in this program). */
static void ops_step(uint64_t i)
{
	uint64_t t = MONO + i * 10000000ull, id = i * 8;
	ops_range(1, t + 100000, t + 400000, 10, id + 1);
	ops_launch(1, t + 200000, GP_EV_MEMCPY, 1 << 20, 0);
	ops_range(1, t + 1000000, t + 2000000, 11, id + 2);
	ops_launch(1, t + 1100000, GP_EV_KERNEL, 2, 20);
	ops_launch(1, t + 1500000, GP_EV_KERNEL, 2, 20);
	ops_range(1, t + 2100000, t + 2500000, 12, id + 3);
	ops_launch(1, t + 2200000, GP_EV_KERNEL, 3, 21);
	ops_range(1, t + 3000000, t + 6000000, 13, id + 4);
	ops_launch(2, t + 4000000, GP_EV_KERNEL, 4, 0); /* a collector without launch config */
	gp_event_t f = {
	    .type = GP_EV_FW, .u8 = GP_FW_OPT_END, .tid = 1, .ts = t + 9000000, .c = i + 1};
	gp_rf_append(w, &f);
}

/* The "ops" job: its kernels' names (ids 2-4), its operation ranges' (10-13), the two
 * launch configurations, then N steps. */
static void ops_job(uint64_t n, const char *const names[7])
{
	for (uint32_t i = 0; i < 3; i++)
		gp_rf_append_string(w, 2 + i, names[i]);
	gp_rf_append_string(w, 5, "pytorch.ops");
	for (uint32_t i = 0; i < 4; i++)
		gp_rf_append_string(w, 10 + i, names[3 + i]);
	char cfg[GP_LAUNCH_MAX];
	snprintf(cfg, sizeof(cfg), GP_LAUNCH_FMT, 128u, 2u, 1u, 256u, 1u, 1u, 96u, 16384u, 32768u);
	gp_rf_append_string(w, 20, cfg);
	snprintf(cfg, sizeof(cfg), GP_LAUNCH_FMT, 4096u, 1u, 1u, 512u, 1u, 1u, 16u, 0u, 0u);
	gp_rf_append_string(w, 21, cfg);
	for (uint64_t i = 0; i < n; i++)
		ops_step(i);
}

/* The "ops" case's names: its kernels', then its operation ranges' */
static const char *const ops_names[7] = {"ampere_sgemm_128x64_nn",
                                         "relu_kernel",
                                         "gemm_bwd",
                                         "to @ train.py:9 (step)",
                                         "linear @ train.py:10 (step)",
                                         "relu @ train.py:11 (step)",
                                         "backward @ train.py:12 (step)"};

static void step(uint64_t i, uint32_t name)
{
	uint64_t t = MONO + i * 10000000ull;
	put(GP_EV_NVTX_PUSH, 1, t, name, 0, 0, 0);
	put(GP_EV_API, 1, t + 1000, 211, 100 + i, 1000, 0); /* the launch */
	put(GP_EV_KERNEL, 0, t + 2000, 4000000, name, 100 + i, 7);
	put(GP_EV_NVTX_POP, 1, t + 5000, 0, 0, 0, 0);
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: mkhostile "
		                "strings|pops|ends|ts0|absurd|threads|moving|names|... N DIR\n");
		return 2;
	}
	const char *what = argv[1];
	uint64_t n = strtoull(argv[2], NULL, 10);
	char dir[4096], hdr[4096] = "", mono[32];
	snprintf(dir, sizeof(dir), "%s/step0", argv[3]);
	int dfd = gp_mkdir_p(dir, 0700);
	if (dfd < 0) {
		perror(dir);
		return 1;
	}
	close(dfd);
	snprintf(dir, sizeof(dir), "%s/step0/rank0.gpr", argv[3]);
	int fd = open(dir, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		perror(dir);
		return 1;
	}
	snprintf(mono, sizeof(mono), "%llu", MONO);
	gp_rf_hdr_add(hdr, sizeof(hdr), "job", "1");
	gp_rf_hdr_add(hdr, sizeof(hdr), "step", "0");
	gp_rf_hdr_add(hdr, sizeof(hdr), "rank", "0");
	gp_rf_hdr_add(hdr, sizeof(hdr), "modes", "timing,nvtx,cuda,mem");
	gp_rf_hdr_add(hdr, sizeof(hdr), "monotonic_ns", mono);
	gp_rf_hdr_add(hdr, sizeof(hdr), "realtime_ns", "1796000000000000000");
	gp_rf_hdr_add(hdr, sizeof(hdr), "wrapped", "agent");
	bool wide = !strcmp(what, "wide") || !strcmp(what, "widebad");
	if (wide) { /* "gpu-node-" then digits (or stray bytes), N bytes in all */
		char node[512];
		size_t len = n < sizeof(node) ? (size_t)n : sizeof(node) - 1;
		for (size_t i = 0; i < len; i++)
			node[i] = i < 9     ? "gpu-node-"[i]
			          : what[4] ? (char)0x80
			                    : (char)('0' + i % 10);
		node[len] = 0;
		gp_rf_hdr_add(hdr, sizeof(hdr), "node", node);
	}
	w = gp_rf_writer_create(fd, hdr, 0);
	if (!w)
		return 1;
	gp_rf_append_string(w, 1, "train_step");
	if (!strcmp(what, "strings")) {
		for (uint64_t i = 0; i < n; i++) {
			gp_event_t e = {.type = GP_EV_STRING, .tid = (uint32_t)(i + 2), .u8 = 1};
			e.a = 'a' + i % 26;
			gp_rf_append(w, &e);
		}
		/* a range named by the last string: a reader that ran out of room has lost it */
		gp_rf_append_string(w, (uint32_t)(n + 2), "last_string");
		put(GP_EV_NVTX_PUSH, 1, MONO, n + 2, 0, 0, 0);
		put(GP_EV_NVTX_POP, 1, MONO + 1000, 0, 0, 0, 0);
	} else if (!strcmp(what, "pops")) {
		for (uint64_t i = 0; i < n; i++)
			put(GP_EV_NVTX_PUSH, 1, MONO + i, 1, 0, 0, 0);
		for (uint64_t i = 0; i < n; i++)
			put(GP_EV_NVTX_POP, 2, MONO + n + i, 0, 0, 0, 0);
		for (uint64_t i = 0; i < n; i++)
			put(GP_EV_NVTX_PUSH, 3, MONO + 2 * n + i, 1, 0, 0, 0);
		for (uint64_t i = 0; i < n; i++)
			put(GP_EV_NVTX_POP, 3, MONO + 3 * n + i, 0, 0, 0, 0);
	} else if (!strcmp(what, "ends")) {
		for (uint64_t i = 0; i < n; i++)
			put(GP_EV_NVTX_START, 1, MONO + i, 1, 0, i + 1, 0);
		for (uint64_t i = 0; i < n; i++)
			put(GP_EV_NVTX_END, 1, MONO + n + i, 0, 0, n + i + 1, 0);
	} else if (!strcmp(what, "ts0")) {
		for (uint64_t i = 0; i < 20; i++)
			step(i, 1);
		for (uint64_t i = 0; i < n; i++) {
			put(GP_EV_KERNEL, 0, 0, 1000, 1, 1000000 + i, 7);
			put(GP_EV_API, 1, 0, 1000, 211, 1000000 + i, 0);
		}
	} else if (!strcmp(what, "absurd")) {
		for (uint64_t i = 0; i < 20; i++)
			step(i, 1);
		uint64_t t = MONO + 21 * 10000000ull;
		for (uint64_t i = 0; i < n; i++) {
			put(GP_EV_KERNEL, 0, t + i, UINT64_MAX, 1, 2000000 + i, 7);
			put(GP_EV_NVTX_PUSH, 5, t + 1000000 + i, 1, 0, 0, 0);
			put(GP_EV_NVTX_POP, 5, t + 1000000 + i - 500, 0, 0, 0, 0);
			gp_event_t e = {.type = GP_EV_ALLOC,
			                .ts = t + i,
			                .a = 0x7f0000000000ull + i * 4096,
			                .b = 1ull << 63};
			gp_rf_append(w, &e);
			put(GP_EV_KERNEL, 0, MONO + 200ull * 365 * 86400 * 1000000000, 1000, 1,
			    3000000 + i, 7);
		}
	} else if (!strcmp(what, "allocs")) { /* N device allocations, each freed */
		for (uint64_t i = 0; i < 20; i++)
			step(i, 1);
		allocs(n, true);
	} else if (!strcmp(what, "rangenames")) { /* N ranges, each its own name */
		for (uint64_t i = 0; i < n; i++) {
			char nm[32];
			snprintf(nm, sizeof(nm), "r%llu", (unsigned long long)i);
			gp_rf_append_string(w, (uint32_t)(i + 2), nm);
			put(GP_EV_NVTX_PUSH, 1, MONO + 2 * i, i + 2, 0, 0, 0);
			put(GP_EV_NVTX_POP, 1, MONO + 2 * i + 1, 0, 0, 0, 0);
		}
	} else if (!strcmp(what, "noise")) {
		uint64_t x = 88172645463325252ull, t = MONO, c = 1;
		for (uint64_t i = 0; i < n; i++) {
			put(GP_EV_NVTX_PUSH, 1, t, 1, 0, 0, 0);
			for (int k = 0; k < 100; k++, c++) {
				x ^= x << 13, x ^= x >> 7, x ^= x << 17;
				put(GP_EV_API, 1, t + 10, 1000 + x % 1000, 211, c, 0);
				put(GP_EV_KERNEL, 0, t + 3000, 2000 + (x >> 20) % 100000, 1, c, 7);
				t += 3000 + 2000 + (x >> 20) % 100000;
			}
			put(GP_EV_NVTX_POP, 1, t, 0, 0, 0, 0);
			t += 1000;
		}
	} else if (!strcmp(what, "snapshot")) {
		for (uint64_t i = 0; i < 20; i++)
			step(i, 1);
		allocs(n, false);
		gp_rf_append_string(w, 2, "rank0.torch-exit.pickle");
		gp_event_t f = {.type = GP_EV_FW,
		                .u8 = GP_FW_SNAPSHOT,
		                .ts = MONO + 5000,
		                .a = GP_SNAP_EXIT,
		                .b = 2};
		gp_rf_append(w, &f);
	} else if (!strcmp(what, "samelaunch")) {
		for (uint64_t i = 0; i < n; i++) {
			uint64_t t = MONO + i * 10000;
			put(GP_EV_API, 1, t, 1000, 211, 100 + i, 0); /* dur, cbid, corr */
			put(GP_EV_KERNEL, 0, t + 2000, 5000, 1, 100 + i, 7);
		}
	} else if (!strcmp(what, "ops")) {
		ops_job(n, ops_names);
	} else if (!strcmp(what, "csvinj")) { /* names a spreadsheet takes for formulas */
		static const char *const f[7] = {
		    "=HYPERLINK(\"http://x/\",\"k\")", "+cmd|' /C calc'!A0",
		    "@SUM(1+1)*cmd|' /C calc'!A0",     "-2+3+cmd|' /C calc'!A0 @ train.py:9 (step)",
		    "linear @ train.py:10 (step)",     "relu @ train.py:11 (step)",
		    "backward @ train.py:12 (step)"};
		ops_job(n, f);
	} else if (!strcmp(what, "names")) {
		char big[5001];
		for (size_t i = 0; i < sizeof(big) - 1; i++)
			big[i] = "k<>&\"\x1b\x07\xff"[i % 8];
		big[sizeof(big) - 1] = 0;
		const char *names[] = {"\x1b[2J\x1b[31mgemm<script>x</script>\x07\xff\xfe"
		                       "\xe2\x81\xa6rl\xe2\x81\xa9\xe2\x80\xaa\xc2\x9b"
		                       "31m\xc2\x85",
		                       "_ZN3foo\x1b[31m3barIA\x08"
		                       "EEvv",
		                       big,
		                       "to\r\n,\"=cmd\" @ tr\x1b[1main.py:9 (st<b>ep)",
		                       "linear\x1b]0;t\x07 @ </td>\xe2\x80\xaeyp.py:10 (step\xc3)",
		                       "relu\x7f @ a\tb.py:11 (\xe2\x80\xae)",
		                       "backward @ train.py:12 (\x1b[5mstep)"};
		/* ... C1's CSI (U+009B) and an OSC 8 link around the thread's name */
		gp_rf_append_string(w, 14,
		                    "\x1b[7mmain<i>\r\xe2\x80\xad\xc2\x9b"
		                    "31m\x1b]8;;http://e.vil/\x1b\\link\x1b]8;;\x1b\\");
		gp_rf_append_string(w, 15,
		                    "str\x1b"
		                    "eam</svg>\xff");
		put(GP_EV_THREAD_NAME, 1, 0, 14, 0, 0, 0);
		put(GP_EV_STREAM_NAME, 0, MONO, 7, 15, 0, 0);
		ops_job(n, names);
	} else if (wide) {
		ops_job(20, ops_names);
	} else if (!strcmp(what, "moving")) {
		/* almost periodic (issue 51): 10 steps of N launches of one kernel and one of
		 * another at a place in the step that moves from step to step (pseudo-random);
		 * no NVTX, so steps come from the launch sequence, and no clean period exists */
		gp_rf_append_string(w, 2, "kern_a");
		gp_rf_append_string(w, 3, "kern_b");
		uint64_t t = MONO, c = 100, x = 88172645463325252ull;
		for (uint64_t st = 0; st < 10; st++, t += 1000000) { /* 1 ms between steps */
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			uint64_t at = x % (n + 1);
			for (uint64_t i = 0; i <= n; i++, t += 2000, c++) {
				bool b = i == at;
				put(GP_EV_API, 1, t, 1000, 211, c, 0);
				put(GP_EV_KERNEL, 0, t + 1000, 1000, b ? 3 : 2, c, 7);
			}
		}
	} else if (!strcmp(what, "threads")) {
		for (uint64_t i = 0; i < n; i++)
			put(GP_EV_NVTX_PUSH, (uint32_t)(i + 10), MONO + i, 1, 0, 0, 0);
	} else {
		fprintf(stderr, "mkhostile: unknown case %s\n", what);
		return 2;
	}
	gp_event_t end = {.type = GP_EV_END,
	                  .ts = strcmp(what, "noise") ? MONO + 30ull * 10000000 : UINT64_MAX / 4,
	                  .u8 = wide}; /* 1: a launcher's rank, status its own */
	if (gp_rf_append(w, &end) < 0)
		return 1;
	return gp_rf_writer_close(w, false) < 0;
}
