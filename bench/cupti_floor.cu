// What CUPTI costs a kernel launch on the host, part by part, and whether detaching it
// (cuptiFinalize) gives that cost back: one process runs phases one after another, each the
// median microseconds per launch of STEPS steps of PER empty-kernel launches, and the
// records CUPTI delivered during the phase.
//   cupti-floor MODE [STEPS] [PER]
// MODE, the parts a collector would use:
//   none      no CUPTI call at all (the A/A floor: every phase is the same)
//   act       activity API only (gpuprof in a PyTorch process): attached, a window of kernel
//             and API kinds, the kinds disabled again, cuptiFinalize from the main thread,
//             a second window re-attached, finalized again
//   act-mem   act with MEMORY2 (device allocations) enabled outside the windows too
//   act-kern  act with the GPU's kinds alone in the window (kernels, copies, sets): no API,
//             synchronisation or overhead records (which kind leaves the cost behind?)
//   act-api   act with the runtime API's records alone in the window
//   sub       a callback subscriber (gpuprof in a plain CUDA process), resource and
//             allocation callbacks, then the windows as in act; the detach is done the way
//             NVIDIA's cupti_finalize sample does it: from a callback at an API's exit
// Each phase line: phase NAME us_per_launch X kernels K api A memory M
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>

__global__ void empty_kernel()
{
}

static std::atomic<long> n_kernel, n_api, n_mem;

static void CUPTIAPI buf_req(uint8_t **b, size_t *size, size_t *max)
{
	*size = 8 << 20;
	*b = (uint8_t *)aligned_alloc(8, *size);
	*max = 0;
}

static void CUPTIAPI buf_done(CUcontext, uint32_t, uint8_t *b, size_t, size_t valid)
{
	CUpti_Activity *r = NULL;
	while (cuptiActivityGetNextRecord(b, valid, &r) == CUPTI_SUCCESS) {
		switch (r->kind) {
		case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
			n_kernel++;
			break;
		case CUPTI_ACTIVITY_KIND_RUNTIME:
		case CUPTI_ACTIVITY_KIND_DRIVER:
			n_api++;
			break;
		case CUPTI_ACTIVITY_KIND_MEMORY2:
			n_mem++;
			break;
		default:
			break;
		}
	}
	free(b);
}

static const CUpti_ActivityKind window_kinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
    CUPTI_ACTIVITY_KIND_OVERHEAD,
    CUPTI_ACTIVITY_KIND_RUNTIME,
    CUPTI_ACTIVITY_KIND_DRIVER,
};

static const CUpti_ActivityKind gpu_kinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMSET,
};
static const CUpti_ActivityKind api_kinds[] = {CUPTI_ACTIVITY_KIND_RUNTIME};
static const CUpti_ActivityKind *kinds = window_kinds;
static size_t nkinds = sizeof(window_kinds) / sizeof(window_kinds[0]);

static CUpti_SubscriberHandle sub;
static bool have_sub;
static std::atomic<int> detach_wanted, detached;

static void CUPTIAPI on_cb(void *, CUpti_CallbackDomain dom, CUpti_CallbackId, const void *data)
{
	if (dom != CUPTI_CB_DOMAIN_RUNTIME_API && dom != CUPTI_CB_DOMAIN_DRIVER_API)
		return;
	const CUpti_CallbackData *d = (const CUpti_CallbackData *)data;
	if (d->callbackSite == CUPTI_API_EXIT && detach_wanted.exchange(0)) {
		cuptiFinalize();
		detached = 1;
	}
}

static int check(CUptiResult rc, const char *what)
{
	if (rc != CUPTI_SUCCESS) {
		const char *s = "?";
		cuptiGetResultString(rc, &s);
		fprintf(stderr, "cupti-floor: %s: %s\n", what, s);
		return -1;
	}
	return 0;
}

static void attach(bool mem, bool callbacks)
{
	check(cuptiActivityRegisterCallbacks(buf_req, buf_done), "register");
	if (callbacks) {
		have_sub =
		    check(cuptiSubscribe(&sub, (CUpti_CallbackFunc)on_cb, NULL), "subscribe") == 0;
		if (have_sub) {
			cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE,
			                    CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
			cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API,
			                    CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000);
			cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API,
			                    CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2);
			cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API,
			                    CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2);
		}
	}
	if (mem)
		check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMORY2), "memory2");
}

static void window(bool on)
{
	for (size_t i = 0; i < nkinds; i++)
		(on ? cuptiActivityEnable : cuptiActivityDisable)(kinds[i]);
	if (!on) {
		cudaDeviceSynchronize();
		cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	}
}

static void detach(void)
{
	cudaDeviceSynchronize();
	cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	if (have_sub) { /* at the next API's exit, the way the sample does it */
		cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API);
		cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API);
		detach_wanted = 1;
		for (int i = 0; i < 1000 && !detached; i++)
			cudaStreamQuery(0);
		have_sub = false;
		if (!detached)
			fprintf(stderr, "cupti-floor: no API exit detached CUPTI\n");
		detached = 0;
	} else {
		check(cuptiFinalize(), "finalize");
	}
}

static void phase(const char *name, int steps, int per)
{
	std::vector<double> us;
	long k0 = n_kernel, a0 = n_api, m0 = n_mem;
	void *p = NULL;
	for (int s = 0; s < steps; s++) {
		auto t0 = std::chrono::steady_clock::now();
		for (int k = 0; k < per; k++)
			empty_kernel<<<1, 1>>>();
		cudaDeviceSynchronize();
		auto t1 = std::chrono::steady_clock::now();
		us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / per);
		if (s % 10 == 0) { /* an allocation now and then, for the memory records */
			cudaMalloc(&p, 1 << 20);
			cudaFree(p);
		}
	}
	cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	std::sort(us.begin(), us.end());
	printf("phase %-14s us_per_launch %.3f kernels %ld api %ld memory %ld\n", name,
	       us[us.size() / 2], (long)n_kernel - k0, (long)n_api - a0, (long)n_mem - m0);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "none";
	int steps = argc > 2 ? atoi(argv[2]) : 100, per = argc > 3 ? atoi(argv[3]) : 1000;
	bool none = !strcmp(mode, "none"), mem = !strcmp(mode, "act-mem"),
	     callbacks = !strcmp(mode, "sub");
	if (!strcmp(mode, "act-kern")) {
		kinds = gpu_kinds;
		nkinds = sizeof(gpu_kinds) / sizeof(gpu_kinds[0]);
	} else if (!strcmp(mode, "act-api")) {
		kinds = api_kinds;
		nkinds = 1;
	} else if (!none && strcmp(mode, "act") && !mem && !callbacks) {
		fprintf(stderr,
		        "usage: cupti-floor none|act|act-kern|act-api|act-mem|sub [STEPS] [PER]\n");
		return 2;
	}
	if (cudaFree(0) != cudaSuccess) {
		fprintf(stderr, "cupti-floor: no CUDA device\n");
		return 1;
	}
	phase("warm", steps / 4 + 1, per);
	phase("base", steps, per);
	if (!none)
		attach(mem, callbacks);
	phase("attached", steps, per);
	if (!none)
		window(true);
	phase("window", steps, per);
	if (!none)
		window(false);
	phase("after-window", steps, per);
	if (!none)
		detach();
	phase("detached", steps, per);
	if (!none) {
		attach(mem, callbacks);
		window(true);
	}
	phase("window2", steps, per);
	if (!none) {
		window(false);
		detach();
	}
	phase("detached2", steps, per);
	if (mem) { /* allocations alone, re-enabled after the detach */
		attach(true, false);
		phase("memory-only", steps, per);
	}
	return 0;
}
