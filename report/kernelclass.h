/* What a kernel's name says of how it runs, for the expert rules (findings.c): fp32 matrix
 * work on CUDA cores rather than tensor cores, the architecture a library built it for, and
 * which NCCL collective it is; and whether a card (NVML's name) has tensor cores for fp32
 * inputs (TF32, sm_80 on). Read from names alone: nothing else in a rank file says it. */
#ifndef GP_KERNELCLASS_H
#define GP_KERNELCLASS_H

#include <stdbool.h>
#include <stddef.h>

/* A GEMM kernel with fp32 inputs that runs on CUDA cores: CUTLASS's and cuBLAS's SIMT
 * kernels (cutlass_80_simt_sgemm, ampere_sgemm_*, volta_sgemm_*) and xmma's FFMA ones
 * (sm80_xmma_gemm_f32f32_..._ffma_...); never one that names tensor cores (tensorop,
 * tf32, hmma, gmma, 1688, 16816), half or bf16 inputs, or fp64 and complex ones. *sm: the
 * architecture in the name (80 for cutlass_80_/sm80_/ampere_, 90 for sm90_/hopper, 70 for
 * volta_, 75 turing_), 0 when it names none. */
bool gp_fp32_simt_gemm(const char *name, unsigned *sm);
/* A card of sm_80 or later by NVML's name (A100, A10, A30, A40, H100, H200, L4, L40, B200,
 * RTX 30/40/50 ...): TF32 tensor cores for fp32 matmuls. False when not known. */
bool gp_gpu_has_tf32(const char *gpu_name);
/* NCCL's collective of a kernel ("AllReduce_Sum_bf16_RING_LL" of
 * "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(...)"): the words after the kernel prefix, up
 * to its parameter list, into out. */
void gp_collective_name(const char *name, char *out, size_t len);

#endif
