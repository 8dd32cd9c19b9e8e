/* The framework integration's calls (inject_int.h; agent/python/_gpuprof_abi.py, through
 * ctypes).
 * The Python hook loads this library itself: a CPU-only PyTorch never starts CUDA or
 * NVTX, which is how the library is otherwise loaded. It attaches on its first record,
 * not at import, so a launcher that imports torch but trains nothing (torchrun) never
 * takes the ring from the workers it starts. */
#include "config.h"
#include "inject_int.h"
#include "marker.h"
#include "clock.h"
#include "env.h"
#include "modes.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((visibility("default"))) int gpuprof_fw_attach(void)
{
	gp_inj_init(false);
	/* a fork whose framework records (its optimizer steps): it trains, on the GPU or
	 * not, so it records into a ring of its own as at its cuInit */
	gp_inj_child_attach();
	return gp_inj_on() && getpid() == gp_inj.owner;
}

/* Where this process's rank file ends up: the task's (GPUPROF_RANK_FILE), or, for one
 * of a launcher's ranks with a ring of its own, its own beside it. NULL when not
 * recording. */
__attribute__((visibility("default"))) const char *gpuprof_fw_rank_file(void)
{
	if (!gp_inj_on() || getpid() != gp_inj.owner)
		return NULL;
	return gp_inj.dest[0] ? gp_inj.dest : getenv(GP_ENV_RANK_FILE);
}

__attribute__((visibility("default"))) uint64_t gpuprof_fw_now(void)
{
	return gp_clock_ns();
}

/* getpid(), kept until a fork: the operation ranges ask it twice per torch call, and the
 * system call cost 2.7-3.0 us on the CPU machine's VM (bench/torch_ops_cost.py). The child
 * handler forgets it in a fork's child (os.fork, a DataLoader worker). */
static _Atomic pid_t self_pid;
static pthread_once_t self_pid_once = PTHREAD_ONCE_INIT;

static void self_pid_forget(void)
{
	atomic_store_explicit(&self_pid, 0, memory_order_relaxed);
}

static void self_pid_watch(void)
{
	pthread_atfork(NULL, NULL, self_pid_forget);
}

static pid_t my_pid(void)
{
	pid_t p = atomic_load_explicit(&self_pid, memory_order_relaxed);
	if (!p) {
		pthread_once(&self_pid_once, self_pid_watch);
		p = getpid();
		atomic_store_explicit(&self_pid, p, memory_order_relaxed);
	}
	return p;
}

static int tracing(void)
{
	return (atomic_load_explicit(&gp_inj.cap_cur, memory_order_relaxed) & GP_MODE_CUDA) != 0;
}

/* One GP_EV_FW record (event.h lists the kinds); text, when given, is interned into b.
 * The end of an optimizer step is a step boundary: without CUDA activity records it
 * gets a completion marker, as the end of an outermost NVTX range does. Returns, so that
 * the integration's step hook needs no second call: bit 0, kernels are traced now (a
 * capture window: gpuprof_fw_tracing); above it, the ns the step marker waited for room
 * in CUDA's launch queue (gp_marker_step_end: the program's wait, which the integration
 * leaves out of its own time). */
__attribute__((visibility("default"))) uint64_t
gpuprof_fw_event(unsigned kind, unsigned dev, uint64_t a, uint64_t c, uint64_t d, const char *text)
{
	if (!gp_inj_on() || getpid() != gp_inj.owner || kind == 0 || kind >= GP_FW_N)
		return 0;
	gp_event_t e = {.type = GP_EV_FW,
	                .u8 = (uint8_t)kind,
	                .u16 = (uint16_t)(dev > 0xffff ? 0xffff : dev),
	                .tid = gp_inj_tid(),
	                .ts = gp_clock_ns(),
	                .a = a,
	                .c = c,
	                .d = d};
	if (text && *text)
		e.b = gp_inj_intern_cstr(text);
	/* before the record: no window switches from here on, and none of CUPTI's buffers
	 * ours when the profiler registers its own */
	if (kind == GP_FW_PROFILER && atomic_exchange(&gp_inj.fw_profiler, a != 0) != (a != 0) &&
	    gp_inj.cupti_hand_over)
		gp_inj.cupti_hand_over(a != 0);
	gp_inj_emit(&e);
	uint64_t waited = 0;
	if (kind == GP_FW_OPT_END) {
		waited = gp_marker_step_end(e.ts);
		gp_inj_optimizer_boundary(e.ts);
	}
	return (waited < (1ull << 62) ? waited << 1 : 0) | (uint64_t)tracing();
}

/* The integration begins (on != 0) or ends work on PyTorch's allocator: its snapshot, its
 * history switched. CUPTI is not detached meanwhile (gp_inject_api_t.busy). Nested calls
 * and threads count; never below zero. */
__attribute__((visibility("default"))) void gpuprof_fw_busy(int on)
{
	if (on) {
		atomic_fetch_add(&gp_inj.fw_busy, 1);
		if (gp_inj.cupti_quiesce && my_pid() == gp_inj.owner)
			gp_inj.cupti_quiesce(); /* and none armed or under way from here */
		return;
	}
	int n = atomic_load(&gp_inj.fw_busy);
	while (n > 0 && !atomic_compare_exchange_weak(&gp_inj.fw_busy, &n, n - 1))
		;
}

/* CUDA kernels are traced now (a capture window, or every step): what the integration
 * records layer ranges in when mode layers was not asked for. */
__attribute__((visibility("default"))) int gpuprof_fw_tracing(void)
{
	return gp_inj_on() && my_pid() == gp_inj.owner && tracing();
}

/* Layer ranges: one start/end range per module forward or backward, in the
 * "pytorch.layers" domain (never taken for steps), in mode layers all along, else (mode
 * cuda) while kernels are traced, for the kernels' modules. Start and end may come from
 * different threads: a backward range starts in a gradient hook and may end in the
 * autograd engine's end-of-pass callback. Returns the range id, 0 when not recording. */
static uint64_t range_start(const char *name, _Atomic uint32_t *domain, const char *domain_name)
{
	if (!gp_inj_on() || my_pid() != gp_inj.owner || !name ||
	    !((gp_inj.modes & GP_MODE_LAYERS) || gpuprof_fw_tracing()))
		return 0;
	uint32_t d = atomic_load_explicit(domain, memory_order_relaxed);
	if (!d) {
		d = gp_inj_intern_cstr(domain_name);
		atomic_store_explicit(domain, d, memory_order_relaxed);
	}
	uint64_t id = atomic_fetch_add_explicit(&gp_inj.next_range, 1, memory_order_relaxed) + 1;
	gp_event_t e = {.type = GP_EV_NVTX_START,
	                .tid = gp_inj_tid(),
	                .ts = gp_clock_ns(),
	                .a = gp_inj_intern_cstr(name),
	                .b = d,
	                .c = id};
	gp_inj_emit(&e);
	return id;
}

__attribute__((visibility("default"))) uint64_t gpuprof_fw_range_start(const char *name)
{
	static _Atomic uint32_t domain;
	return range_start(name, &domain, "pytorch.layers");
}

/* Operation ranges: one per framework operation the user's code called, named
 * "op @ file:line (function)" (agent/python/_gpuprof_ops.py), in the "pytorch.ops" domain,
 * which the report attributes kernels by (report/attribution.c) and keeps out of the
 * program's range table. Recorded when layer ranges are; ended by gpuprof_fw_range_end. */
__attribute__((visibility("default"))) uint64_t gpuprof_fw_op_start(const char *name)
{
	static _Atomic uint32_t domain;
	return range_start(name, &domain, "pytorch.ops");
}

__attribute__((visibility("default"))) void gpuprof_fw_range_end(uint64_t id)
{
	if (!id || !gp_inj_on() || my_pid() != gp_inj.owner)
		return;
	gp_event_t e = {.type = GP_EV_NVTX_END, .tid = gp_inj_tid(), .ts = gp_clock_ns(), .c = id};
	gp_inj_emit(&e);
}
