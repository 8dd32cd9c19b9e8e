/* The CUDA injection (inject_int.h): the driver calls InitializeInjection in cuInit
 * (CUDA_INJECTION64_PATH). CUPTI lives in a module of its own (libgpuprof-cupti.so,
 * cupti_int.h), loaded only when cuda or mem is asked for, with the libcupti the process
 * can use; without CUDA activity records, step completion markers (marker.c) time the
 * steps. */
#include "config.h"
#include "inject_int.h"
#include "marker.h"
#include "clock.h"
#include "env.h"
#include "log.h"
#include "modes.h"
#include "settings.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int InitializeInjection(void);

static pthread_once_t cuda_once = PTHREAD_ONCE_INIT;

static uint64_t clock_ns(void)
{
	return gp_clock_ns();
}

static bool fw_profiler(void)
{
	return atomic_load_explicit(&gp_inj.fw_profiler, memory_order_relaxed);
}

static bool fw_busy(void)
{
	return atomic_load_explicit(&gp_inj.fw_busy, memory_order_relaxed) > 0;
}

static const gp_inject_api_t api_template = {.emit = gp_inj_emit,
                                             .intern = gp_inj_intern,
                                             .count_drop = gp_inj_count_drop,
                                             .tid = gp_inj_tid,
                                             .now = clock_ns,
                                             .profiler = gp_inj_on_profiler,
                                             .tick = gp_inj_capture_tick,
                                             .gpu_done = gp_marker_done,
                                             .foreign = fw_profiler,
                                             .own_thread = gp_marker_own_thread,
                                             .capture_begin = gp_marker_capture_begin,
                                             .capture_end = gp_marker_capture_end,
                                             .busy = fw_busy};

/* Frameworks whose own profiler subscribes to CUPTI's callback API when the user starts
 * it (torch.profiler/kineto, jax.profiler/XLA, TensorFlow): CUPTI has one subscriber per
 * process, and kineto drops every CUDA activity when it cannot subscribe. In their
 * processes gpuprof leaves the slot free unless GPUPROF_ALLOC_STACKS=1. */
static int framework_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	static const char *const libs[] = {"libtorch_cpu.so", "libkineto", "xla_extension",
	                                   "libtensorflow_framework", "libjax"};
	(void)size;
	for (size_t i = 0; info->dlpi_name && i < sizeof(libs) / sizeof(libs[0]); i++)
		if (strstr(info->dlpi_name, libs[i])) {
			*(const char **)data = libs[i];
			return 1;
		}
	return 0;
}

#ifndef GP_CUPTI_SONAME
#define GP_CUPTI_SONAME "libcupti.so"
#endif
#ifndef GP_CUDA_LIBDIR
#define GP_CUDA_LIBDIR "/usr/local/cuda/lib64"
#endif

/* The collector module needs libcupti (GP_CUPTI_SONAME) and carries no RUNPATH into the
 * toolkit of the machine it was built on: the one the process already has (a PyTorch
 * wheel brings its own), else GPUPROF_CUPTI (a path), else the dynamic linker's search
 * path, else the toolkit gpuprof was built against, else /usr/local/cuda. The module's
 * dependency then resolves to it by its soname; RTLD_LOCAL keeps its symbols out of the
 * program's global scope. */
static bool preload_cupti(char *why, size_t len)
{
	const char *env = getenv(GP_ENV_CUPTI);
	const char *dirs[] = {GP_CUDA_LIBDIR, "/usr/local/cuda/lib64",
	                      "/usr/local/cuda/extras/CUPTI/lib64"};
	char p[4200];
	if (dlopen(GP_CUPTI_SONAME, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD))
		return true;
	if (env && *env) {
		if (dlopen(env, RTLD_NOW | RTLD_LOCAL))
			return true;
		snprintf(why, len, "%s=%s: %s", GP_ENV_CUPTI, env, dlerror());
		return false;
	}
	if (dlopen(GP_CUPTI_SONAME, RTLD_NOW | RTLD_LOCAL))
		return true;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", dirs[i], GP_CUPTI_SONAME);
		if (dlopen(p, RTLD_NOW | RTLD_LOCAL))
			return true;
	}
	snprintf(why, len,
	         "%s not found (not loaded, not on the library path, not in %s or "
	         "/usr/local/cuda): set %s to its path",
	         GP_CUPTI_SONAME, GP_CUDA_LIBDIR, GP_ENV_CUPTI);
	return false;
}

/* The loaded driver's CUDA version (13000 for 13.0), 0 when it cannot say. */
static int driver_version(void)
{
	int v = 0;
	void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	int (*get)(int *) = cuda ? (int (*)(int *))dlsym(cuda, "cuDriverGetVersion") : NULL;
	if (!get || get(&v) != 0)
		v = 0;
	if (cuda)
		dlclose(cuda); /* NOLOAD: only our reference goes */
	return v;
}

static void load_cupti(void)
{
	char path[4200], why[256] = "";
	gp_inject_api_t *api;
	Dl_info info;
	if (!(gp_inj.modes & (GP_MODE_CUDA | GP_MODE_MEM)))
		return;
	if (!dladdr((void *)load_cupti, &info) || !info.dli_fname)
		return;
	snprintf(path, sizeof(path), "%s", info.dli_fname);
	char *slash = strrchr(path, '/');
	if (!slash)
		return;
	snprintf(slash + 1, sizeof(path) - (size_t)(slash + 1 - path), "libgpuprof-cupti.so");
	if (!preload_cupti(why, sizeof(why))) {
		gp_warn("%s; CUDA activity not captured", why);
		return;
	}
	gp_inj.cupti_mod = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!gp_inj.cupti_mod) {
		gp_warn("cannot load %s: %s; CUDA activity not captured", path, dlerror());
		return;
	}
	gp_cupti_start_fn start = (gp_cupti_start_fn)dlsym(gp_inj.cupti_mod, "gp_cupti_start");
	gp_inj.cupti_flush = (gp_cupti_flush_fn)dlsym(gp_inj.cupti_mod, "gp_cupti_flush");
	gp_inj.cupti_hand_over =
	    (gp_cupti_hand_over_fn)dlsym(gp_inj.cupti_mod, "gp_cupti_hand_over");
	gp_inj.cupti_quiesce = (gp_cupti_quiesce_fn)dlsym(gp_inj.cupti_mod, "gp_cupti_quiesce");
	gp_inj.cupti_capture = (gp_cupti_capture_fn)dlsym(gp_inj.cupti_mod, "gp_cupti_capture");
	gp_inj.cupti_stream_id =
	    (gp_cupti_stream_id_fn)dlsym(gp_inj.cupti_mod, "gp_cupti_stream_id");
	api = malloc(sizeof(*api));
	if (!start || !api)
		return;
	*api = api_template;
	api->modes = gp_inj.modes;
	api->gen = gp_inj.gen;
	/* before the first step: step index 0 decides (a window from step 0 starts on) */
	api->capture = gp_inj_capture_wanted(0);
	const char *fw = NULL;
	dl_iterate_phdr(framework_cb, &fw);
	api->callbacks =
	    gp_inj.cap.how == GP_CAP_PROFILER ||
	    ((gp_inj.modes & GP_MODE_MEM) && (!fw || gp_setting_bool(GP_ENV_ALLOC_STACKS)));
	/* a framework names its launches itself (the PyTorch integration's operation
	 * ranges, XLA's NVTX ranges), and its profiler needs CUPTI's callback slot */
	api->launch_sites = !fw && (gp_inj.modes & GP_MODE_CUDA)
	                        ? (unsigned)gp_setting_long(GP_ENV_LAUNCH_SITES)
	                        : 0;
	api->flush_ms = (unsigned)gp_setting_long(GP_ENV_CUPTI_FLUSH_MS);
	api->detach_poll_ms = (unsigned)gp_setting_long(GP_ENV_CUPTI_DETACH_POLL_MS);
	api->discard = gp_setting_bool(GP_ENV_CUPTI_DISCARD);
	const char *am = gp_setting_str(GP_ENV_CUPTI_API);
	api->api_mode = am && !strcmp(am, "windows")       ? 1
	                : am && !strcmp(am, "off")         ? 2
	                : am && !strcmp(am, "calls")       ? 0
	                : gp_inj.cap.how == GP_CAP_SAMPLED ? 1 /* auto: no cost between windows */
	                                                   : 0;
	const char *det = gp_setting_str(GP_ENV_CUPTI_DETACH);
	bool det_on = det && (!strcmp(det, "true") || !strcmp(det, "1") || !strcmp(det, "on"));
	/* auto: on where nothing else in the process may be holding CUPTI's state across our
	 * finalize -- plain CUDA programs and PyTorch (whose torch.profiler the integration
	 * watches: nothing is detached while it runs) -- on a driver of CUDA 12.6 or later,
	 * the first whose teardown kineto trusts (before, it crashed with CUDA graphs); not
	 * in JAX or TensorFlow, whose profilers nothing watches. Sampled windows only, whose
	 * kinds are on from CUDA's start: after a steps= window, whose kinds were first enabled
	 * mid-run, a detach crashed 4 of 6 seed runs on the H200 (both where it finalized on
	 * gpuprof's thread and at the program's own call); after sampled ones, none of 6 runs
	 * of 16 detaches each (bench/gpu-detach-site.sh, bench/results/performance-history.md) */
	bool torch = fw && (strstr(fw, "torch") || strstr(fw, "kineto"));
	api->detach_markerless = det_on;
	if (det && !strcmp(det, "auto")) {
		det_on = driver_version() >= 12060 && (!fw || torch);
		/* ... and in PyTorch only where a step marker follows the window: a step-less
		 * loop's detach (the poll's, or after the 10 s wait) corrupted the heap or crashed
		 * in CUPTI's dispatch in 14 of 46 runs on the H100 (CUDA 13.0; at exit: "corrupted
		 * double-linked list"), at any call's exit or a synchronising one's; none of 14
		 * with no detach (bench/gpu-abort.sh, session 32); 0 of 8 forced on in session 34,
		 * 2 of 17 in all with the synchronising-call finalize. Such a program keeps CUPTI
		 * attached after its first window, kinds off (about 1-2.6 us a launch, mostly the
		 * kernel records': leaving the runtime API's out does not make it free). */
		api->detach_markerless = det_on && !torch;
	}
	api->detach = gp_inj.cap.how == GP_CAP_SAMPLED && det_on;
	if ((gp_inj.modes & GP_MODE_MEM) && !api->callbacks) {
		char msg[256];
		snprintf(msg, sizeof(msg), GP_YIELD_STACKS_FMT,
		         strstr(fw, "torch") || strstr(fw, "kineto") ? "torch.profiler"
		         : strstr(fw, "jax") || strstr(fw, "xla")    ? "jax.profiler"
		                                                     : fw);
		gp_event_t y = {
		    .type = GP_EV_YIELD, .ts = gp_clock_ns(), .b = gp_inj_intern(msg, strlen(msg))};
		gp_inj_emit(&y);
	}
	gp_inj.cap_t0 = gp_clock_ns();
	if (start(api, why, sizeof(why)) == 0) {
		atomic_store(&gp_inj.cap_cur, api->capture);
		if (gp_inj.cupti_capture)
			atomic_store(&gp_inj.cap_live, 1);
		if (api->capture != (gp_inj.modes & (GP_MODE_CUDA | GP_MODE_MEM))) {
			gp_event_t c = {
			    .type = GP_EV_CONTROL, .ts = gp_clock_ns(), .a = api->capture};
			gp_inj_emit(&c);
		}
	} else {
		/* another CUPTI client (nsys, ncu, sanitizer) holds it: the user's tool wins */
		gp_event_t y = {.type = GP_EV_YIELD,
		                .ts = gp_clock_ns(),
		                .a = gp_inj.modes & (GP_MODE_CUDA | GP_MODE_MEM),
		                .b = gp_inj_intern(why, strlen(why))};
		gp_inj_emit(&y);
		gp_warn("CUDA activity not captured: %s", why);
	}
}

static void cuda_init(void)
{
	gp_inj_init(true);
	gp_inj_child_attach();
	if (!gp_inj_on())
		return;
	/* the process initialised CUDA: with NVML's process list, what tells a GPU the task
	 * never touched from one it used unrecorded (report/rank.c) */
	gp_event_t ci = {.type = GP_EV_CUDA_INIT, .ts = gp_clock_ns(), .a = (uint64_t)getpid()};
	gp_inj_emit(&ci);
	load_cupti();
	/* without CUDA activity records, markers are the only GPU clock for the steps; with
	 * windows, they are the clock of the steps between them (and what a detach waits for) */
	if ((!(gp_inj.modes & GP_MODE_CUDA) || gp_inj.cap.how == GP_CAP_SAMPLED ||
	     gp_inj.cap.how == GP_CAP_STEPS) &&
	    gp_setting_bool(GP_ENV_STEP_MARKERS) &&
	    gp_marker_enable(gp_inj_emit, gp_clock_ns,
	                     gp_inj_intern_cstr(GP_OWN_THREAD_PREFIX "step markers")) != 0)
		gp_warn("step markers unavailable (no CUDA driver functions); step times are "
		        "host periods");
}

__attribute__((visibility("default"))) int InitializeInjection(void)
{
	pthread_once(&cuda_once, cuda_init);
	return 1;
}
