/* gpuprof-train-mlp (CUDA path): the seed's MLP training step on the GPU. cuBLAS for the
 * GEMMs, hand-written kernels for bias+GELU and its backward, the loss, SGD and Adam, with
 * the seed's NVTX ranges and the planted pathologies of doc/validation.md:
 *   --sync-every-step  blocking device-to-host copy of the loss every step (loss.item())
 *   --host-stall-ms N  CPU work before each step (slow data loading): the GPU idles
 *   --unfused          bias + GELU as six tiny kernels instead of one (fragmentation)
 *   --leak-bytes N     a cudaMalloc every step that is never freed
 *   --adam / --sgd     optimizer state: two extra tensors per parameter, made lazily
 *   --imbalance-rank R --imbalance-ms N   one slow rank (straggler)
 *   --no-nvtx          no NVTX ranges (a program that was never annotated)
 * It prints its own synchronised step time (cudaDeviceSynchronize before step 3 and after
 * the last step): the ground truth the report's GPU step time is checked against.
 * Every CUDA call and launch is checked. Matrices are row-major; cuBLAS sees them
 * transposed (column-major), hence the operand order in the GEMM calls. */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nvtx3/nvToolsExt.h>

#include "mlp.h"

#define CK(call)                                                                                   \
	do {                                                                                       \
		cudaError_t e_ = (call);                                                           \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "gpuprof-train-mlp: %s:%d: %s: %s\n", __FILE__, __LINE__,  \
			        #call, cudaGetErrorString(e_));                                    \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)
#define CB(call)                                                                                   \
	do {                                                                                       \
		cublasStatus_t s_ = (call);                                                        \
		if (s_ != CUBLAS_STATUS_SUCCESS) {                                                 \
			fprintf(stderr, "gpuprof-train-mlp: %s:%d: %s: cuBLAS status %d\n",        \
			        __FILE__, __LINE__, #call, (int)s_);                               \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)
#define LAUNCHED() CK(cudaGetLastError())

static const float K0 = 0.7978845608f, K1 = 0.044715f;

__device__ static float gelu_f(float x)
{
	return 0.5f * x * (1.0f + tanhf(K0 * (x + K1 * x * x * x)));
}

__device__ static float gelu_g(float x)
{
	float t = tanhf(K0 * (x + K1 * x * x * x));
	return 0.5f * (1 + t) + 0.5f * x * (1 - t * t) * K0 * (1 + 3 * K1 * x * x);
}

__global__ void bias_gelu(float *pre, float *act, const float *bias, int n, int D)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		float v = pre[i] + bias[i % D];
		pre[i] = v;
		act[i] = gelu_f(v);
	}
}

/* the unfused chain: what eager frameworks launch for x + b then GELU */
__global__ void k_add_bias(float *pre, const float *bias, int n, int D)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		pre[i] += bias[i % D];
}
__global__ void k_cube(const float *x, float *t, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		t[i] = x[i] * x[i] * x[i];
}
__global__ void k_axpy(const float *x, float *t, float a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		t[i] = x[i] + a * t[i];
}
__global__ void k_tanh_scale(float *t, float a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		t[i] = tanhf(a * t[i]);
}
__global__ void k_one_plus(float *t, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		t[i] = 1.0f + t[i];
}
__global__ void k_half_mul(const float *x, const float *t, float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = 0.5f * x[i] * t[i];
}

__global__ void mean_reduce(const float *x, int n, float *out)
{
	__shared__ float s[256];
	float acc = 0;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		acc += x[i];
	s[threadIdx.x] = acc;
	__syncthreads();
	for (int k = blockDim.x / 2; k > 0; k /= 2) {
		if (threadIdx.x < k)
			s[threadIdx.x] += s[threadIdx.x + k];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		atomicAdd(out, s[0] / (float)n);
}

__global__ void fill(float *x, float v, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] = v;
}

__global__ void gelu_backward(float *grad, const float *pre, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		grad[i] *= gelu_g(pre[i]);
}

__global__ void bias_grad(const float *grad, float *gb, int B, int D)
{
	int j = blockIdx.x * blockDim.x + threadIdx.x;
	if (j < D) {
		float acc = 0;
		for (int b = 0; b < B; b++)
			acc += grad[(size_t)b * D + j];
		gb[j] += acc;
	}
}

__global__ void sgd(float *w, const float *g, float lr, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		w[i] -= lr * g[i];
}

__global__ void adam(float *w, const float *g, float *m, float *v, float lr, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		m[i] = 0.9f * m[i] + 0.1f * g[i];
		v[i] = 0.999f * v[i] + 0.001f * g[i] * g[i];
		w[i] -= lr * m[i] / (sqrtf(v[i]) + 1e-8f);
	}
}

static int blocks(size_t n)
{
	return (int)((n + 255) / 256);
}

/* C(m x n, col-major) = op(A) op(B), fp32 storage; bf16 tensor cores when asked. */
static void gemm(cublasHandle_t h, bool bf16, cublasOperation_t ta, cublasOperation_t tb, int m,
                 int n, int k, const float *A, int lda, const float *B, int ldb, float beta,
                 float *C, int ldc)
{
	const float one = 1.0f;
	CB(cublasGemmEx(h, ta, tb, m, n, k, &one, A, CUDA_R_32F, lda, B, CUDA_R_32F, ldb, &beta, C,
	                CUDA_R_32F, ldc, bf16 ? CUBLAS_COMPUTE_32F_FAST_16BF : CUBLAS_COMPUTE_32F,
	                CUBLAS_GEMM_DEFAULT));
}

extern "C" int mlp_run_cuda(const mlp_opts_t *o)
{
	int ndev = 0;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		cudaGetLastError();
		return -2;
	}
	const size_t D = (size_t)o->dim, L = (size_t)o->layers, B = (size_t)o->batch;
	const size_t nW = L * D * D, nA = B * D;
	const int rank = mlp_rank();
	float *hW = (float *)malloc(nW * sizeof(float)), *hx = (float *)malloc(nA * sizeof(float));
	if (!hW || !hx)
		return 1;
	mlp_init_params(o, hW, hx);
	cudaDeviceProp prop;
	CK(cudaGetDeviceProperties(&prop, 0));
	printf("gpuprof-train-mlp: device %s (cuda), dim %d layers %d batch %d steps %d %s %s\n",
	       prop.name, o->dim, o->layers, o->batch, o->steps, o->adam ? "adam" : "sgd",
	       o->bf16 ? "bf16" : "fp32");
	fflush(stdout);

	float *W, *bias, *gW, *gb, *pre, *act, *grad, *gnext, *tmp, *loss;
	float *m = NULL, *v = NULL, *mb = NULL, *vb = NULL;
	CK(cudaMalloc(&W, nW * sizeof(float)));
	CK(cudaMalloc(&bias, L * D * sizeof(float)));
	CK(cudaMalloc(&gW, nW * sizeof(float)));
	CK(cudaMalloc(&gb, L * D * sizeof(float)));
	CK(cudaMalloc(&pre, L * nA * sizeof(float)));
	CK(cudaMalloc(&act, (L + 1) * nA * sizeof(float)));
	CK(cudaMalloc(&grad, nA * sizeof(float)));
	CK(cudaMalloc(&gnext, nA * sizeof(float)));
	CK(cudaMalloc(&tmp, nA * sizeof(float)));
	CK(cudaMalloc(&loss, sizeof(float)));
	CK(cudaMemcpy(W, hW, nW * sizeof(float), cudaMemcpyHostToDevice));
	CK(cudaMemcpy(act, hx, nA * sizeof(float), cudaMemcpyHostToDevice));
	CK(cudaMemset(bias, 0, L * D * sizeof(float)));
	cublasHandle_t h;
	CB(cublasCreate(&h));

	const float lr = o->adam ? 1e-3f : 0.05f;
	const float sgd_scale = (float)(B * D); /* the CPU path's scaling of tiny gradients */
	float first_loss = 0, last_loss = 0, hl;
	char name[32];
	const int n = (int)nA, Di = (int)D, Bi = (int)B;
	const int warm = o->steps > 4 ? 3 : 0;
	double t_warm = 0;
	for (int step = 0; step < o->steps; step++) {
		if (step == warm) {
			CK(cudaDeviceSynchronize());
			t_warm = mlp_now_ms();
		}
		if (o->host_stall_ms)
			mlp_sleep_ms(o->host_stall_ms); /* slow data loading */
		MLP_PUSH(o, "train_step");
		MLP_PUSH(o, "zero_grad");
		CK(cudaMemsetAsync(gW, 0, nW * sizeof(float)));
		CK(cudaMemsetAsync(gb, 0, L * D * sizeof(float)));
		MLP_POP(o);

		MLP_PUSH(o, "forward");
		for (size_t l = 0; l < L; l++) {
			snprintf(name, sizeof(name), "layer_%zu", l);
			MLP_PUSH(o, name);
			float *x = act + l * nA, *p = pre + l * nA, *y = act + (l + 1) * nA;
			/* pre^T (D x B) = W (D x D) . x^T */
			gemm(h, o->bf16, CUBLAS_OP_T, CUBLAS_OP_N, Di, Bi, Di, W + l * D * D, Di, x,
			     Di, 0.0f, p, Di);
			if (!o->unfused) {
				bias_gelu<<<blocks(nA), 256>>>(p, y, bias + l * D, n, Di);
				LAUNCHED();
			} else {
				k_add_bias<<<blocks(nA), 256>>>(p, bias + l * D, n, Di);
				LAUNCHED();
				k_cube<<<blocks(nA), 256>>>(p, tmp, n);
				LAUNCHED();
				k_axpy<<<blocks(nA), 256>>>(p, tmp, K1, n);
				LAUNCHED();
				k_tanh_scale<<<blocks(nA), 256>>>(tmp, K0, n);
				LAUNCHED();
				k_one_plus<<<blocks(nA), 256>>>(tmp, n);
				LAUNCHED();
				k_half_mul<<<blocks(nA), 256>>>(p, tmp, y, n);
				LAUNCHED();
			}
			MLP_POP(o);
		}
		CK(cudaMemsetAsync(loss, 0, sizeof(float)));
		mean_reduce<<<64, 256>>>(act + L * nA, n, loss);
		LAUNCHED();
		MLP_POP(o);

		MLP_PUSH(o, "backward");
		fill<<<blocks(nA), 256>>>(grad, 1.0f / (float)nA, n);
		LAUNCHED();
		for (size_t l = L; l-- > 0;) {
			float *x = act + l * nA, *p = pre + l * nA;
			gelu_backward<<<blocks(nA), 256>>>(grad, p, n);
			LAUNCHED();
			bias_grad<<<blocks(D), 256>>>(grad, gb + l * D, Bi, Di);
			LAUNCHED();
			/* gW^T (D_in x D_out) += x^T . grad */
			gemm(h, o->bf16, CUBLAS_OP_N, CUBLAS_OP_T, Di, Di, Bi, x, Di, grad, Di,
			     1.0f, gW + l * D * D, Di);
			/* gnext^T (D_in x B) = W^T . grad^T */
			gemm(h, o->bf16, CUBLAS_OP_N, CUBLAS_OP_N, Di, Bi, Di, W + l * D * D, Di,
			     grad, Di, 0.0f, gnext, Di);
			float *t = grad;
			grad = gnext;
			gnext = t;
		}
		MLP_POP(o);

		MLP_PUSH(o, "optimizer_step");
		if (o->adam && !m) { /* state made lazily at the first step, as PyTorch does */
			CK(cudaMalloc(&m, nW * sizeof(float)));
			CK(cudaMalloc(&v, nW * sizeof(float)));
			CK(cudaMalloc(&mb, L * D * sizeof(float)));
			CK(cudaMalloc(&vb, L * D * sizeof(float)));
			CK(cudaMemsetAsync(m, 0, nW * sizeof(float)));
			CK(cudaMemsetAsync(v, 0, nW * sizeof(float)));
			CK(cudaMemsetAsync(mb, 0, L * D * sizeof(float)));
			CK(cudaMemsetAsync(vb, 0, L * D * sizeof(float)));
		}
		if (o->adam) {
			adam<<<blocks(nW), 256>>>(W, gW, m, v, lr, (int)nW);
			LAUNCHED();
			adam<<<blocks(L * D), 256>>>(bias, gb, mb, vb, lr, (int)(L * D));
			LAUNCHED();
		} else {
			sgd<<<blocks(nW), 256>>>(W, gW, lr * sgd_scale, (int)nW);
			LAUNCHED();
			sgd<<<blocks(L * D), 256>>>(bias, gb, lr * sgd_scale, (int)(L * D));
			LAUNCHED();
		}
		MLP_POP(o);
		if (o->leak_bytes) {
			void *leak; /* never freed, on purpose */
			CK(cudaMalloc(&leak, (size_t)o->leak_bytes));
		}
		if (o->imbalance_ms && rank == o->imbalance_rank)
			mlp_sleep_ms(o->imbalance_ms);
		if (o->sync_every_step || step == 0) {
			/* print(loss.item()): a blocking copy that drains the pipeline */
			CK(cudaMemcpy(&hl, loss, sizeof(float), cudaMemcpyDeviceToHost));
			if (step == 0)
				first_loss = hl;
			if (o->sync_every_step)
				printf("step %d loss %.6f\n", step, hl);
		}
		MLP_POP(o);
	}
	CK(cudaDeviceSynchronize());
	printf("gpuprof-train-mlp: synchronised_step_ms %.4f over steps %d-%d\n",
	       (mlp_now_ms() - t_warm) / (o->steps - warm), warm, o->steps - 1);
	CK(cudaMemcpy(&last_loss, loss, sizeof(float), cudaMemcpyDeviceToHost));
	printf("gpuprof-train-mlp: loss %.6f -> %.6f (%s)\n", first_loss, last_loss,
	       last_loss < first_loss ? "decreased" : "did not decrease");
	CB(cublasDestroy(h));
	cudaFree(W), cudaFree(bias), cudaFree(gW), cudaFree(gb), cudaFree(pre), cudaFree(act);
	cudaFree(grad), cudaFree(gnext), cudaFree(tmp), cudaFree(loss);
	cudaFree(m), cudaFree(v), cudaFree(mb), cudaFree(vb);
	free(hW), free(hx);
	return last_loss < first_loss ? 0 : 3;
}
