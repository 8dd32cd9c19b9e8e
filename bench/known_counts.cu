// GPU validation program with known counts: exactly 10 kernels, 3 memcpy, 2 memset,
// 4 device allocations and 4 frees, 2 cudaDeviceSynchronize and 1 cudaStreamSynchronize (plus 1
// blocking device-to-host cudaMemcpy: 4 host stalls), inside NVTX ranges. gpuprof's rank file must
// report exactly these (doc/validation.md). The second stream is named with
// nvtxNameCudaStreamA; the rank file must map that name to the stream's CUPTI id.
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtCudaRt.h>
#include <stdio.h>
#include <stdlib.h>

#define CK(x)                                                                                      \
	do {                                                                                       \
		cudaError_t e = (x);                                                               \
		if (e != cudaSuccess) {                                                            \
			fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e));                    \
			return 1;                                                                  \
		}                                                                                  \
	} while (0)

__global__ void inc(float *x, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] += 1.0f;
}

int main(void)
{
	const int n = 1 << 20;
	float *a, *b, *c, *d;
	float *h = (float *)calloc(n, sizeof(float));
	cudaStream_t s;
	CK(cudaFree(0)); /* context first, so the counts below are ours alone */
	nvtxRangePushA("alloc");
	CK(cudaMalloc(&a, n * sizeof(float)));
	CK(cudaMalloc(&b, n * sizeof(float)));
	CK(cudaMalloc(&c, 2 * n * sizeof(float)));
	CK(cudaMalloc(&d, 4096));
	CK(cudaStreamCreate(&s));
	nvtxNameCudaStreamA(s, "known_stream"); /* the trace names its track after this */
	nvtxRangePop();
	nvtxRangePushA("work");
	CK(cudaMemset(a, 0, n * sizeof(float)));
	CK(cudaMemsetAsync(b, 0, n * sizeof(float), s));
	CK(cudaMemcpy(a, h, n * sizeof(float), cudaMemcpyHostToDevice));
	for (int i = 0; i < 10; i++) {
		inc<<<(n + 255) / 256, 256, 0, i % 2 ? s : 0>>>(i % 2 ? b : a, n);
		CK(cudaGetLastError());
	}
	CK(cudaStreamSynchronize(s));
	CK(cudaMemcpy(c, a, n * sizeof(float), cudaMemcpyDeviceToDevice));
	CK(cudaDeviceSynchronize());
	CK(cudaMemcpy(h, b, n * sizeof(float), cudaMemcpyDeviceToHost));
	CK(cudaDeviceSynchronize());
	nvtxRangePop();
	int ok = h[0] == 5.0f;
	printf("known_counts: b[0]=%.0f (want 5)\n", h[0]);
	CK(cudaFree(a));
	CK(cudaFree(b));
	CK(cudaFree(c));
	CK(cudaFree(d));
	CK(cudaStreamDestroy(s));
	free(h);
	return ok ? 0 : 1;
}
