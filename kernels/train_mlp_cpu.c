/* gpuprof-train-mlp (CPU path): the seed's MLP training step in plain C with the seed's
 * NVTX ranges (train_step > zero_grad, forward > layer_<i>, backward, optimizer_step) and
 * switches that plant the seed's pathologies where they make sense on a CPU. It is the
 * sample job of the quickstart and CI: a real NVTX client with a known structure. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nvtx3/nvToolsExt.h>

#include "config.h"
#include "mlp.h"

typedef mlp_opts_t opts_t;

static float frand(unsigned *s)
{
	*s = *s * 1103515245u + 12345u;
	return ((float)((*s >> 8) & 0xffff) / 65536.0f - 0.5f);
}

static float gelu(float x)
{
	return 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
}

static float gelu_grad(float x)
{
	float t = tanhf(0.7978845608f * (x + 0.044715f * x * x * x));
	return 0.5f * (1 + t) +
	       0.5f * x * (1 - t * t) * 0.7978845608f * (1 + 3 * 0.044715f * x * x);
}

void mlp_init_params(const mlp_opts_t *o, float *W, float *x)
{
	unsigned s = o->seed;
	size_t D = (size_t)o->dim, L = (size_t)o->layers, B = (size_t)o->batch;
	for (size_t i = 0; i < L * D * D; i++)
		W[i] = frand(&s) * 2.0f / sqrtf((float)D);
	for (size_t i = 0; i < B * D; i++)
		x[i] = frand(&s) * 2.0f;
}

int mlp_rank(void)
{
	const char *p = getenv("SLURM_PROCID");
	if (!p)
		p = getenv("RANK");
	return p ? atoi(p) : 0;
}

double mlp_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void mlp_sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0)
		;
}

static int usage(void)
{
	fprintf(stderr, "usage: gpuprof-train-mlp [--dim N] [--layers N] [--batch N] [--steps N]\n"
	                "  [--seed N] [--sgd|--adam] [--sync-every-step] [--host-stall-ms N]\n"
	                "  [--leak-bytes N] [--imbalance-rank R --imbalance-ms N] [--unfused]\n"
	                "  [--dtype fp32|bf16] [--cpu] [--no-nvtx]\n");
	return 2;
}

int main(int argc, char **argv)
{
	opts_t o = {
	    .dim = 128, .layers = 4, .batch = 32, .steps = 20, .seed = 1, .imbalance_rank = -1};
	/* options that take a whole number */
	const struct {
		const char *name;
		int *field;
	} ints[] = {
	    {"--dim", &o.dim},
	    {"--layers", &o.layers},
	    {"--batch", &o.batch},
	    {"--steps", &o.steps},
	    {"--host-stall-ms", &o.host_stall_ms},
	    {"--imbalance-rank", &o.imbalance_rank},
	    {"--imbalance-ms", &o.imbalance_ms},
	};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		bool done = false;
		for (size_t k = 0; k < sizeof(ints) / sizeof(ints[0]) && !done; k++) {
			if (strcmp(a, ints[k].name))
				continue;
			if (!v)
				return usage();
			*ints[k].field = atoi(v);
			i++;
			done = true;
		}
		if (done)
			continue;
		if (!strcmp(a, "--seed") && v) {
			o.seed = (unsigned)atoi(v);
			i++;
			continue;
		}
		if (!strcmp(a, "--leak-bytes") && v) {
			o.leak_bytes = atol(v);
			i++;
			continue;
		}
		if (!strcmp(a, "--adam")) {
			o.adam = 1;
			continue;
		}
		if (!strcmp(a, "--sgd")) {
			o.adam = 0;
			continue;
		}
		if (!strcmp(a, "--sync-every-step")) {
			o.sync_every_step = 1;
			continue;
		}
		if (!strcmp(a, "--unfused")) {
			o.unfused = 1;
			continue;
		}
		if (!strcmp(a, "--no-nvtx")) {
			o.no_nvtx = 1;
			continue;
		}
		if (!strcmp(a, "--cpu")) {
			o.force_cpu = 1;
			continue;
		}
		if (!strcmp(a, "--dtype") && v && (!strcmp(v, "fp32") || !strcmp(v, "bf16"))) {
			o.bf16 = !strcmp(v, "bf16");
			i++;
			continue;
		}
		return usage();
	}
	if (o.dim < 1 || o.layers < 1 || o.batch < 1 || o.steps < 1)
		return usage();
#ifdef GP_MLP_CUDA
	if (!o.force_cpu) {
		int rc = mlp_run_cuda(&o);
		if (rc != -2)
			return rc;
	}
#endif
	return mlp_run_cpu(&o);
}

int mlp_run_cpu(const mlp_opts_t *o)
{
	int rank = mlp_rank();
	size_t D = (size_t)o->dim, L = (size_t)o->layers, B = (size_t)o->batch;
	float *W = malloc(L * D * D * sizeof(float)), *bias = calloc(L * D, sizeof(float));
	float *gW = calloc(L * D * D, sizeof(float)), *gb = calloc(L * D, sizeof(float));
	float *pre = malloc(L * B * D * sizeof(float)),
	      *act = malloc((L + 1) * B * D * sizeof(float));
	float *grad = malloc(B * D * sizeof(float)), *gnext = malloc(B * D * sizeof(float));
	float *m = NULL, *vv = NULL, *mb = NULL, *vb = NULL;
	if (!W || !bias || !gW || !gb || !pre || !act || !grad || !gnext)
		return 1;
	mlp_init_params(o, W, act);
	printf("gpuprof-train-mlp: device cpu, dim %d layers %d batch %d steps %d %s\n", o->dim,
	       o->layers, o->batch, o->steps, o->adam ? "adam" : "sgd");
	nvtxNameOsThreadA(0, "main");
	float lr = o->adam ? 1e-3f : 0.05f, loss = 0, first_loss = 0;
	char name[32];
	for (int step = 0; step < o->steps; step++) {
		if (o->host_stall_ms)
			mlp_sleep_ms(o->host_stall_ms); /* slow data loading: the GPU would idle */
		MLP_PUSH(o, "train_step");
		MLP_PUSH(o, "zero_grad");
		memset(gW, 0, L * D * D * sizeof(float));
		memset(gb, 0, L * D * sizeof(float));
		MLP_POP(o);
		MLP_PUSH(o, "forward");
		for (size_t l = 0; l < L; l++) {
			snprintf(name, sizeof(name), "layer_%zu", l);
			MLP_PUSH(o, name);
			for (size_t b = 0; b < B; b++)
				for (size_t j = 0; j < D; j++) {
					float acc = bias[l * D + j];
					const float *x = act + l * B * D + b * D,
					            *w = W + l * D * D + j * D;
					for (size_t k = 0; k < D; k++)
						acc += w[k] * x[k];
					pre[l * B * D + b * D + j] = acc;
					act[(l + 1) * B * D + b * D + j] = gelu(acc);
				}
			MLP_POP(o);
		}
		loss = 0;
		for (size_t i = 0; i < B * D; i++)
			loss += act[L * B * D + i];
		loss /= (float)(B * D);
		if (step == 0)
			first_loss = loss;
		MLP_POP(o);
		MLP_PUSH(o, "backward");
		for (size_t i = 0; i < B * D; i++)
			grad[i] = 1.0f / (float)(B * D);
		for (size_t l = L; l-- > 0;) {
			for (size_t i = 0; i < B * D; i++)
				grad[i] *= gelu_grad(pre[l * B * D + i]);
			memset(gnext, 0, B * D * sizeof(float));
			for (size_t b = 0; b < B; b++)
				for (size_t j = 0; j < D; j++) {
					float g = grad[b * D + j];
					const float *x = act + l * B * D + b * D;
					float *gw = gW + l * D * D + j * D;
					const float *w = W + l * D * D + j * D;
					gb[l * D + j] += g;
					for (size_t k = 0; k < D; k++) {
						gw[k] += g * x[k];
						gnext[b * D + k] += g * w[k];
					}
				}
			memcpy(grad, gnext, B * D * sizeof(float));
		}
		MLP_POP(o);
		MLP_PUSH(o, "optimizer_step");
		if (o->adam && !m) { /* state made lazily at the first step, as PyTorch does */
			m = calloc(L * D * D, sizeof(float));
			vv = calloc(L * D * D, sizeof(float));
			mb = calloc(L * D, sizeof(float));
			vb = calloc(L * D, sizeof(float));
			if (!m || !vv || !mb || !vb)
				return 1;
		}
		for (size_t i = 0; i < L * D * D; i++) {
			if (o->adam) {
				m[i] = 0.9f * m[i] + 0.1f * gW[i];
				vv[i] = 0.999f * vv[i] + 0.001f * gW[i] * gW[i];
				W[i] -= lr * m[i] / (sqrtf(vv[i]) + 1e-8f);
			} else {
				W[i] -= lr * gW[i] * (float)(B * D);
			}
		}
		for (size_t i = 0; i < L * D; i++)
			bias[i] -= (o->adam ? lr : lr * (float)(B * D)) * gb[i];
		MLP_POP(o);
		if (o->leak_bytes) {
			void *leak = malloc((size_t)o->leak_bytes); /* never freed, on purpose */
			if (leak)
				memset(leak, 1, (size_t)o->leak_bytes);
		}
		if (o->imbalance_ms && rank == o->imbalance_rank)
			mlp_sleep_ms(o->imbalance_ms);
		if (o->sync_every_step)
			printf("step %d loss %.6f\n", step,
			       loss); /* the print(loss.item()) habit */
		MLP_POP(o);
	}
	printf("gpuprof-train-mlp: loss %.6f -> %.6f (%s)\n", first_loss, loss,
	       loss < first_loss ? "decreased" : "did not decrease");
	free(W), free(bias), free(gW), free(gb), free(pre), free(act), free(grad), free(gnext);
	free(m), free(vv), free(mb), free(vb);
	return loss < first_loss ? 0 : 3;
}
