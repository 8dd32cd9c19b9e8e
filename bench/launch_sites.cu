// Kernel launches from known functions and lines, for gpuprof's kernel time by native
// caller (GPUPROF_LAUNCH_SITES; bench/gpu-sites.sh): STEPS steps (NVTX range "step"), each
// launching, from four functions of this file, a known number of kernels at known lines:
// forward_pass 3 x scale, backward_pass 2 x axpy, a template update_params<4> 1 x scale
// (another site of the same kernel), and one more scale from main itself. The program
// prints its own truth, one line per site: "site FUNCTION FILE:LINE PER_STEP", then
// "steps N". "launch_sites STEPS cost": 256-element kernels and a synchronisation every 20
// steps only, so a step's host time is its 7 launches; prints the median step's host time
// past the first 10 ("step_ns_median NS"). "launch_sites STEPS subscribe": after the steps
// the program subscribes to CUPTI's callbacks itself, as a CUPTI tool it starts late would
// (CUPTI has one subscriber: a profiler holding it makes this fail), trying every 100 ms for
// 3 s (a detach of the collector's holds it for a moment), and prints
// "cupti_subscribe first=RC last=RC tries=N" (0: CUPTI_SUCCESS, 39: another subscriber).
// Build: nvcc -O2 -g (host line tables) -o launch_sites bench/launch_sites.cu -lcupti
#include <cuda_runtime.h>
#include <cupti.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

__global__ void scale(float *x, float a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] *= a;
}

__global__ void axpy(float *y, const float *x, float a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] += a * x[i];
}

static const int N = 1 << 20, B = 256;
static int line_fwd, line_bwd, line_upd, line_main;

__attribute__((noinline)) void forward_pass(float *x, int n)
{
	for (int k = 0; k < 3; k++) {
		line_fwd = __LINE__ + 1;
		scale<<<(n + B - 1) / B, B>>>(x, 1.0001f, n);
	}
}

__attribute__((noinline)) void backward_pass(float *y, const float *x, int n)
{
	for (int k = 0; k < 2; k++) {
		line_bwd = __LINE__ + 1;
		axpy<<<(n + B - 1) / B, B>>>(y, x, 0.5f, n);
	}
}

// (a call after the launch: a launch in tail position is a jump at -O2, and the stack then
// holds no frame of this function: its site would read as its caller's line)
template <int K> __attribute__((noinline)) int update_params(float *x, int n)
{
	line_upd = __LINE__ + 1;
	scale<<<(n + B - 1) / B, B>>>(x, 1.0f / K, n);
	return cudaPeekAtLastError() == cudaSuccess;
}

static long long now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000ll + t.tv_nsec;
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;
	return x < y ? -1 : x > y;
}

static void CUPTIAPI tool_callback(void *u, CUpti_CallbackDomain d, CUpti_CallbackId c,
                                   const void *p)
{
	(void)u, (void)d, (void)c, (void)p;
}

// The subscriber free for a tool of the program's own? (see the top)
static void probe_subscriber(void)
{
	CUpti_SubscriberHandle h;
	int first = -1, rc = -1, tries = 0;
	while (tries < 30) {
		rc = (int)cuptiSubscribe(&h, (CUpti_CallbackFunc)tool_callback, NULL);
		if (!tries++)
			first = rc;
		if (rc == CUPTI_SUCCESS) {
			cuptiUnsubscribe(h);
			break;
		}
		struct timespec t = {0, 100000000};
		nanosleep(&t, NULL);
	}
	printf("cupti_subscribe first=%d last=%d tries=%d\n", first, rc, tries);
}

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 40;
	bool cost = argc > 2 && !strcmp(argv[2], "cost");
	bool probe = argc > 2 && !strcmp(argv[2], "subscribe");
	int n = cost ? 256 : N;
	long long *took = (long long *)calloc(steps > 0 ? steps : 1, sizeof(long long));
	float *x, *y;
	if (cudaMalloc(&x, N * sizeof(float)) != cudaSuccess ||
	    cudaMalloc(&y, N * sizeof(float)) != cudaSuccess) {
		fprintf(stderr, "launch_sites: cudaMalloc failed\n");
		return 1;
	}
	cudaMemset(x, 0, N * sizeof(float));
	cudaMemset(y, 0, N * sizeof(float));
	for (int s = 0; s < steps; s++) {
		long long t0 = now_ns();
		nvtxRangePushA("step");
		forward_pass(x, n);
		backward_pass(y, x, n);
		update_params<4>(x, n);
		line_main = __LINE__ + 1;
		scale<<<(n + B - 1) / B, B>>>(y, 0.999f, n);
		if (!cost || s % 20 == 19)
			cudaDeviceSynchronize();
		nvtxRangePop();
		took[s] = now_ns() - t0;
	}
	cudaDeviceSynchronize();
	cudaError_t e = cudaGetLastError();
	if (e != cudaSuccess) {
		fprintf(stderr, "launch_sites: %s\n", cudaGetErrorString(e));
		return 1;
	}
	printf("site forward_pass %s:%d 3\n", "launch_sites.cu", line_fwd);
	printf("site backward_pass %s:%d 2\n", "launch_sites.cu", line_bwd);
	printf("site update_params<4> %s:%d 1\n", "launch_sites.cu", line_upd);
	printf("site main %s:%d 1\n", "launch_sites.cu", line_main);
	printf("steps %d\n", steps);
	if (steps > 10) {
		qsort(took + 10, steps - 10, sizeof(long long), cmp_ll);
		printf("step_ns_median %lld\n", took[10 + (steps - 10) / 2]);
	}
	if (probe)
		probe_subscriber();
	free(took);
	cudaFree(x);
	cudaFree(y);
	return 0;
}
