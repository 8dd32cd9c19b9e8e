// A plain CUDA C++ program with two host threads, each with its own stream and NVTX loop,
// while the main thread joins a copy stream with cudaStreamWaitEvent and synchronises
// each iteration (issue 51 item 13: it died of SIGSEGV under gpuprof's default modes
// after the first capture window closed, on an H100). Prints its own step count and
// median; exits 0 when every check passes.
//   mt_streams [SECONDS]
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#define CK(x)                                                                                      \
	do {                                                                                       \
		cudaError_t e_ = (x);                                                              \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x,                  \
			        cudaGetErrorString(e_));                                           \
			exit(2);                                                                   \
		}                                                                                  \
	} while (0)

__global__ void axpy(float *y, const float *x, float a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = a * x[i] + y[i];
}

static std::atomic<bool> stop{false};
static std::atomic<long> worker_iters{0};

static void worker(int id)
{
	const int n = 1 << 20;
	float *x, *y;
	cudaStream_t s;
	CK(cudaSetDevice(0));
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CK(cudaMalloc(&x, n * sizeof(float)));
	CK(cudaMalloc(&y, n * sizeof(float)));
	char name[32];
	snprintf(name, sizeof(name), "worker%d_iter", id);
	while (!stop.load()) {
		nvtxRangePushA(name);
		for (int k = 0; k < 8; k++)
			axpy<<<(n + 255) / 256, 256, 0, s>>>(y, x, 1.0001f, n);
		CK(cudaGetLastError());
		CK(cudaStreamSynchronize(s));
		nvtxRangePop();
		worker_iters++;
	}
	CK(cudaFree(x));
	CK(cudaFree(y));
	CK(cudaStreamDestroy(s));
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 8;
	const int n = 1 << 22;
	float *d, *h;
	cudaStream_t compute, copy;
	cudaEvent_t copied;
	CK(cudaSetDevice(0));
	CK(cudaMalloc(&d, n * sizeof(float)));
	CK(cudaMallocHost(&h, n * sizeof(float)));
	CK(cudaStreamCreate(&compute));
	CK(cudaStreamCreate(&copy));
	CK(cudaEventCreateWithFlags(&copied, cudaEventDisableTiming));
	std::thread t1(worker, 1), t2(worker, 2);
	std::vector<double> ms;
	auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
	while (std::chrono::steady_clock::now() < end) {
		auto t0 = std::chrono::steady_clock::now();
		nvtxRangePushA("train_step");
		CK(cudaMemcpyAsync(d, h, n * sizeof(float), cudaMemcpyHostToDevice, copy));
		CK(cudaEventRecord(copied, copy));
		CK(cudaStreamWaitEvent(compute, copied, 0));
		for (int k = 0; k < 4; k++)
			axpy<<<(n + 255) / 256, 256, 0, compute>>>(d, d, 0.5f, n);
		CK(cudaGetLastError());
		CK(cudaStreamSynchronize(compute));
		nvtxRangePop();
		ms.push_back(
		    std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
		        .count());
	}
	stop = true;
	t1.join();
	t2.join();
	std::sort(ms.begin(), ms.end());
	printf("own_steps %zu own_median_ms %.3f worker_iters %ld\n", ms.size(), ms[ms.size() / 2],
	       worker_iters.load());
	CK(cudaFreeHost(h));
	CK(cudaFree(d));
	return 0;
}
