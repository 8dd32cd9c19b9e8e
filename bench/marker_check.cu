/* Step completion markers against a known truth (tests/gpu/t_gpu.sh): every step is one
 * kernel that spins for exactly --step-us microseconds of GPU time (globaltimer), and the
 * host never synchronises, so it runs all steps ahead of the GPU. Then CUDA graph
 * captures, on a blocking and on a non-blocking stream, with an outermost NVTX range
 * ending inside the capture: a marker placed there must not break the capture.
 * Prints "graph_ok blocking=1 nonblocking=1" and exits 0 when both graphs ran.
 * --cost N: the markers' cost on the application's thread instead: N steps of a 20 us
 * kernel, the closing nvtxRangePop (where the marker is placed) timed on the host each
 * time; prints "pop_ns median p90" (run with markers on and with GPUPROF_STEP_MARKERS=0
 * under --modes=timing,nvtx and compare: bench/gpu-truth.sh markercost). */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <algorithm>
#include <vector>

#include <nvtx3/nvToolsExt.h>

__global__ void spin(unsigned long long ns)
{
	unsigned long long t0, t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
	do
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	while (t - t0 < ns);
}

static int graph(unsigned flags)
{
	cudaStream_t s;
	cudaGraph_t g;
	cudaGraphExec_t x;
	if (cudaStreamCreateWithFlags(&s, flags) != cudaSuccess)
		return 0;
	nvtxRangePushA("captured_step");
	if (cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) != cudaSuccess)
		return 0;
	spin<<<1, 1, 0, s>>>(1000);
	nvtxRangePop(); /* an outermost range ends while the stream is being captured */
	if (cudaStreamEndCapture(s, &g) != cudaSuccess)
		return 0;
	if (cudaGraphInstantiate(&x, g, 0) != cudaSuccess || cudaGraphLaunch(x, s) != cudaSuccess)
		return 0;
	return cudaStreamSynchronize(s) == cudaSuccess;
}

static long long now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000ll + t.tv_nsec;
}

static int cost(int n)
{
	std::vector<long long> pop;
	for (int i = 0; i < n; i++) {
		nvtxRangePushA("train_step");
		spin<<<1, 1>>>(20000);
		long long t = now_ns();
		nvtxRangePop();
		pop.push_back(now_ns() - t);
		if (i % 64 == 63) /* the GPU keeps up: markers complete, none dropped */
			cudaDeviceSynchronize();
	}
	cudaDeviceSynchronize();
	std::sort(pop.begin(), pop.end());
	printf("pop_ns %lld %lld\n", pop[pop.size() / 2], pop[pop.size() * 9 / 10]);
	return 0;
}

int main(int argc, char **argv)
{
	int steps = 40;
	unsigned long long us = 2000;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--steps"))
			steps = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--step-us"))
			us = strtoull(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--cost"))
			return cost(atoi(argv[i + 1]));
	}
	for (int i = 0; i < steps; i++) {
		nvtxRangePushA("train_step");
		spin<<<1, 1>>>(us * 1000);
		nvtxRangePop();
	}
	if (cudaDeviceSynchronize() != cudaSuccess)
		return 1;
	int b = graph(cudaStreamDefault), nb = graph(cudaStreamNonBlocking);
	printf("graph_ok blocking=%d nonblocking=%d last_error=%s\n", b, nb,
	       cudaGetErrorString(cudaGetLastError()));
	return b && nb ? 0 : 1;
}
