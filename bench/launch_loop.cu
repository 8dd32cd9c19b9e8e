// Launch-bound microbenchmark: steps of K empty-kernel launches inside NVTX ranges, for the
// CUPTI overhead measurements (kernel tracing costs per launch, not per FLOP).
//   launch-loop [STEPS] [KERNELS_PER_STEP]   prints the median microseconds per launch
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

__global__ void empty_kernel()
{
}

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 50, per = argc > 2 ? atoi(argv[2]) : 1000;
	std::vector<double> us;
	if (cudaFree(0) != cudaSuccess) {
		fprintf(stderr, "launch-loop: no CUDA device\n");
		return 1;
	}
	for (int s = 0; s < steps; s++) {
		nvtxRangePushA("train_step");
		auto t0 = std::chrono::steady_clock::now();
		for (int k = 0; k < per; k++)
			empty_kernel<<<1, 1>>>();
		if (cudaDeviceSynchronize() != cudaSuccess || cudaGetLastError() != cudaSuccess) {
			fprintf(stderr, "launch-loop: launch failed\n");
			return 1;
		}
		auto t1 = std::chrono::steady_clock::now();
		nvtxRangePop();
		us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / per);
	}
	std::sort(us.begin() + std::min(3, steps), us.end());
	printf("us_per_launch_median %.3f\n", us[(steps + std::min(3, steps)) / 2]);
	return 0;
}
