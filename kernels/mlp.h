/* gpuprof-train-mlp: the seed's MLP training step, shared by the CPU path
 * (train_mlp_cpu.c) and the CUDA path (train_mlp_cuda.cu). Both draw parameters and data
 * from the same generator, so for the same seed they compute the same losses. */
#ifndef GP_MLP_H
#define GP_MLP_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mlp_opts {
	int dim, layers, batch, steps, adam, bf16, sync_every_step, host_stall_ms, imbalance_rank,
	    imbalance_ms, unfused, force_cpu, no_nvtx;
	long leak_bytes;
	unsigned seed;
} mlp_opts_t;

/* Deterministic parameters: W[l][out][in] then the input batch x[b][in]. */
void mlp_init_params(const mlp_opts_t *o, float *W, float *x);
void mlp_sleep_ms(int ms);
/* CLOCK_MONOTONIC in milliseconds, for the program's own synchronised step timing */
double mlp_now_ms(void);
/* --no-nvtx: the same program without its ranges (steps must then be found without them) */
#define MLP_PUSH(o, s)                                                                             \
	do {                                                                                       \
		if (!(o)->no_nvtx)                                                                 \
			nvtxRangePushA(s);                                                         \
	} while (0)
#define MLP_POP(o)                                                                                 \
	do {                                                                                       \
		if (!(o)->no_nvtx)                                                                 \
			nvtxRangePop();                                                            \
	} while (0)
int mlp_rank(void);
/* Returns 0 if the loss decreased, 3 if not, -2 when no CUDA device is usable. */
int mlp_run_cuda(const mlp_opts_t *o);
int mlp_run_cpu(const mlp_opts_t *o);

#ifdef __cplusplus
}
#endif
#endif
