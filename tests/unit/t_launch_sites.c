/* Kernel time by native caller (report/launch_sites.c) on synthetic events whose answer is
 * known, with call stacks of this program's own code (symbolised from its DWARF as the
 * collector records them: module path and offset from dladdr's load address): launches
 * from two functions through the frames of CUPTI, the CUDA runtime and nvcc's host stub,
 * a CUDA Python launch, a stack of CUDA frames only, a window whose cap was reached (its
 * later launches left out, counted), the tables and the summary's copy. */
#include "config.h"
#include "attribution.h"
#include "names.h"
#include "rankdata.h"
#include "symbolize.h"
#include "synth.h"
#include "tap.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define US 1000ull
#define MS 1000000ull

SYNTH_ONE_RANK()

/* the return addresses of two launches in this file, and their lines */
static void *ret_a, *ret_b;
static int line_a, line_b;
__attribute__((noinline)) static void *caller_ra(void)
{
	return __builtin_return_address(0);
}
__attribute__((noinline)) void gp_t_launch_a(void);
__attribute__((noinline)) void gp_t_launch_a(void)
{
	line_a = __LINE__ + 1;
	ret_a = caller_ra();
}
__attribute__((noinline)) void gp_t_launch_b(void);
__attribute__((noinline)) void gp_t_launch_b(void)
{
	line_b = __LINE__ + 1;
	ret_b = caller_ra();
}

static char exe[4096];
static uint64_t corr = 100;

/* a frame: pc, its "symbol+0xoff (library)" and, for this program's, module and offset */
static uint32_t next_str = 100;
static void frame(uint64_t pc, const char *sym, bool ours)
{
	uint32_t s = next_str++;
	str(s, sym);
	gp_event_t f = {.type = GP_EV_FRAME, .a = pc, .b = s};
	if (ours) {
		Dl_info di;
		if (dladdr((void *)(uintptr_t)pc, &di)) {
			f.c = 2;
			f.d = pc - (uint64_t)(uintptr_t)di.dli_fbase;
		}
	}
	feed(f);
}

static void stack(uint32_t id, const uint64_t *pcs, int n)
{
	for (int i = 0; i < n; i += 3) {
		gp_event_t s = {.type = GP_EV_STACK, .tid = id, .u16 = (uint16_t)i};
		int k = n - i < 3 ? n - i : 3;
		s.u8 = (uint8_t)k;
		s.b = pcs[i];
		s.c = k > 1 ? pcs[i + 1] : 0;
		s.d = k > 2 ? pcs[i + 2] : 0;
		feed(s);
	}
}

/* a launch (its API record, its site when stack >= 0, its kernel) */
static void launch(uint64_t ts, uint64_t dur, uint32_t kname, int stk)
{
	corr++;
	if (stk >= 0) /* the site is recorded at the launch's entry, before its API record */
		feed((gp_event_t){.type = GP_EV_API,
		                  .tid = 7,
		                  .ts = ts,
		                  .c = corr,
		                  .d = (uint64_t)stk,
		                  .u8 = 1,
		                  .u16 = GP_API_LAUNCH_SITE});
	synth_launch(&d, &r, 7, ts, corr, ts + 10 * US, dur, kname);
}

#define PY_PC (1ull << 63)

/* Six 10 ms steps (NVTX, two of warm-up): in each, function a launches _Z3addPfi twice
 * (300 us each) through nvcc's stub and cuda_runtime.h's cudaLaunchKernel<T> template, b launches
 * _Z5scalePf (100 us) through the shared runtime, a Python function one (50 us), and a stack of
 * CUDA's frames alone one (20 us); in the last step the window's cap was reached before a
 * fifth launch (25 us, no site). */
static void timeline(void)
{
	gp_rd_reset(&d);
	gp_rank_release(&r);
	memset(&r, 0, sizeof(r));
	gp_job_free(&job);
	d.warmup = 2;
	str(1, "step");
	str(2, exe);
	str(3, "_Z3addPfi"), str(4, "_Z5scalePf"), str(5, "_Z4tailv");
	gp_t_launch_a();
	gp_t_launch_b();
	uint64_t a = (uint64_t)(uintptr_t)ret_a, b = (uint64_t)(uintptr_t)ret_b;
	frame(0x10, "cuptiCallback+0x40 (libcupti.so.13)", false);
	frame(0x20, "cuLaunchKernel+0x10 (libcuda.so.1)", false);
	frame(0x30,
	      "_ZL16cudaLaunchKernelIcE9cudaErrorPKT_4dim3S4_PPvmP11CUstream_st+0x90 "
	      "(t_launch_sites.t)",
	      false);
	frame(0x40, "_Z3addPfi+0x2c (t_launch_sites.t)", false);
	frame(0x50, "__device_stub__Z5scalePf+0x5 (t_launch_sites.t)", false);
	frame(0x60, "cudaLaunchKernel+0x90 (libcudart.so.13)", false);
	frame(a, "gp_t_launch_a+0x1c (t_launch_sites.t)", true);
	frame(b, "gp_t_launch_b+0x1c (t_launch_sites.t)", true);
	frame(PY_PC | 5, "app.py:42 main [python]", false);
	frame(0x70, "_Z13update_paramsILi4EEvPfi+0x21 (libapp.so)", false);
	stack(1, (uint64_t[]){0x10, 0x20, 0x30, 0x40, a, b}, 6);
	stack(2, (uint64_t[]){0x10, 0x20, 0x60, 0x50, b, a}, 6);
	stack(3, (uint64_t[]){0x10, 0x20, 0x60, PY_PC | 5}, 4);
	stack(4, (uint64_t[]){0x10, 0x20, 0x60}, 3);
	stack(5, (uint64_t[]){0x10, 0x60, 0x70}, 3);
	for (uint64_t i = 0; i < 6; i++) {
		uint64_t s = i * 10 * MS;
		feed((gp_event_t){.type = GP_EV_NVTX_PUSH, .tid = 7, .ts = s, .a = 1});
		launch(s + 1 * MS, 300 * US, 3, 1);
		launch(s + 2 * MS, 300 * US, 3, 1);
		launch(s + 3 * MS, 100 * US, 4, 2);
		launch(s + 4 * MS, 50 * US, 4, 3);
		launch(s + 5 * MS, 20 * US, 5, 4);
		launch(s + 5500 * US, 5 * US, 4, 5);
		if (i == 5) {
			feed((gp_event_t){.type = GP_EV_API,
			                  .tid = 7,
			                  .ts = s + 6 * MS,
			                  .u8 = 1,
			                  .u16 = GP_API_LAUNCH_SITE | GP_SITE_CAP_REACHED << 8});
			launch(s + 6 * MS, 25 * US, 5, -1);
		}
		feed((gp_event_t){.type = GP_EV_NVTX_POP, .tid = 7, .ts = s + 9900 * US});
	}
	synth_attribute(&d, &r, &job);
}

static const gp_ostat_t *row(const gp_otab_t *t, const char *name)
{
	for (unsigned i = 0; i < t->n; i++)
		if (!strcmp(t->v[i].name, name))
			return &t->v[i];
	return NULL;
}

static bool is(const gp_ostat_t *o, uint64_t calls, uint64_t kernels, uint64_t ns)
{
	return o && o->calls == calls && o->kernels == kernels && o->gpu_ns == ns;
}

static void dump(const gp_otab_t *t)
{
	for (unsigned i = 0; i < t->n; i++)
		diag("row '%s': %llu calls, %llu kernels, %llu ns", t->v[i].name,
		     (unsigned long long)t->v[i].calls, (unsigned long long)t->v[i].kernels,
		     (unsigned long long)t->v[i].gpu_ns);
}

static void tables(void)
{
	const gp_otab_t *t = &job.ops;
	uint64_t p = r.steps.n_post;
	bool dw = gp_symbolizer_available();
	char na[256], nb[256];
	if (dw) {
		snprintf(na, sizeof(na), "gp_t_launch_a @ t_launch_sites.c:%d (gp_t_launch_a)",
		         line_a);
		snprintf(nb, sizeof(nb), "gp_t_launch_b @ t_launch_sites.c:%d (gp_t_launch_b)",
		         line_b);
	} else { /* no line table: the collector's symbol and the module's offset */
		snprintf(na, sizeof(na), "gp_t_launch_a @ %s+0x", strrchr(exe, '/') + 1);
		snprintf(nb, sizeof(nb), "gp_t_launch_b @ %s+0x", strrchr(exe, '/') + 1);
	}
	ok(p == 4 && t->ranks == 1 && t->native == 1 && t->xla == 0,
	   "4 post-warm-up steps, one rank of native launch sites (%llu, %u, %u)",
	   (unsigned long long)p, t->ranks, t->native);
	const gp_ostat_t *ra = NULL, *rb = NULL;
	for (unsigned i = 0; i < t->n; i++) {
		if (!strncmp(t->v[i].name, na, strlen(na)))
			ra = &t->v[i];
		if (!strncmp(t->v[i].name, nb, strlen(nb)))
			rb = &t->v[i];
	}
	if (!ok(is(ra, 2 * p, 2 * p, p * 600 * US),
	        "function a: 2 launches a step, 600 us, past CUPTI's, the runtime's and the stub's "
	        "frames (%s)",
	        na))
		dump(t);
	ok(is(rb, p, p, p * 100 * US),
	   "function b: 1 launch a step, 100 us, past the shared runtime and __device_stub__ (%s)",
	   nb);
	ok(is(row(t, "main @ app.py:42 (main)"), p, p, p * 50 * US),
	   "a CUDA Python launch: its Python frame (main @ app.py:42)");
	ok(is(row(t, "(no frame of the program's)"), p, p, p * 20 * US),
	   "a stack of CUDA's frames alone: said so, not made up");
	char *dm = NULL;
	size_t dl = 0;
	if (gp_demangle("_Z13update_paramsILi4EEvPfi", &dm, &dl))
		ok(is(row(t, "update_params<4> @ libapp.so"), p, p, p * 5 * US),
		   "a template's function, demangled, without its return type and parameters");
	else
		skip("no demangler here");
	free(dm);
	ok(t->n == 5 && t->site_missed == 1,
	   "5 rows; the launch past the window's cap left out and counted (%u rows, %llu)", t->n,
	   (unsigned long long)t->site_missed);
	ok(d.sites_capped == 1, "the cap's record read (%u)", d.sites_capped);
	gp_attr_t at;
	ok(gp_attr_make(t, &at) == 0 && at.native && !at.xla && at.by_op[0].keylen == 13 &&
	       !memcmp(at.by_op[0].key, "gp_t_launch_a", 13) && at.total_kernels == 6 * p &&
	       at.total_ns == p * 775 * US,
	   "by function: gp_t_launch_a first; 6 kernels a step, 775 us");
	gp_attr_free(&at);
}

static void writers(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	gp_attr_text(&job, m);
	fclose(m);
	ok(buf && strstr(buf, "Kernel time by calling function") &&
	       strstr(buf, "Kernel time by source line") && strstr(buf, "gp_t_launch_a") &&
	       strstr(buf, "1 more kernels of those steps, launched past the cap"),
	   "the text report: by calling function and by line, the left-out launches said");
	free(buf);
	m = open_memstream(&buf, &len);
	gp_attr_json(&job, m);
	fclose(m);
	ok(buf && strstr(buf, "\"framework\": \"native\"") &&
	       strstr(buf, "\"kernels_without_site\": 1"),
	   "report.json: framework native, kernels without a site");
	free(buf);
	m = open_memstream(&buf, &len);
	gp_otab_write(m, &job.ops);
	fclose(m);
	gp_otab_t back;
	const unsigned char *p = (const unsigned char *)buf;
	ok(gp_otab_read(&p, p + len, &back) == 0 && back.native == 1 && back.site_missed == 1 &&
	       back.n == job.ops.n && p == (const unsigned char *)buf + len,
	   "the summary's copy keeps the native ranks and the left-out count");
	gp_otab_free(&back);
	free(buf);
}

int main(void)
{
	ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[k > 0 ? k : 0] = '\0';
	timeline();
	tables();
	writers();
	gp_rd_free(&d);
	gp_rank_release(&r);
	gp_job_free(&job);
	return done_testing();
}
