/* What a kernel's name says of how it runs (kernelclass.h). */
#include "config.h"
#include "kernelclass.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void lower(const char *s, char *out, size_t len)
{
	size_t n = 0;
	for (; s && s[n] && n + 1 < len; n++)
		out[n] = (char)(s[n] >= 'A' && s[n] <= 'Z' ? s[n] + 32 : s[n]);
	out[n] = 0;
}

/* The architecture a library's kernel name says it was built for: "sm80_", "sm_90",
 * "cutlass_80_", or the generation's name (cuBLAS's volta_/turing_/ampere_ kernels). */
static unsigned arch_of(const char *low)
{
	static const struct {
		const char *word;
		unsigned sm;
	} gen[] = {{"maxwell_", 50}, {"pascal_", 60}, {"volta_", 70},  {"turing_", 75},
	           {"ampere_", 80},  {"ada_", 89},    {"hopper_", 90}, {"blackwell_", 100}};
	for (const char *p = low; (p = strstr(p, "sm")); p++) {
		const char *q = p[2] == '_' ? p + 3 : p + 2;
		if ((p == low || p[-1] == '_' || p[-1] == ' ') && q[0] >= '5' && q[0] <= '9' &&
		    q[1] >= '0' && q[1] <= '9')
			return (unsigned)strtoul(q, NULL, 10);
	}
	const char *c = strstr(low, "cutlass_");
	if (c && c[8] >= '5' && c[8] <= '9' && c[9] >= '0' && c[9] <= '9' && c[10] == '_')
		return (unsigned)(c[8] - '0') * 10 + (unsigned)(c[9] - '0');
	for (size_t i = 0; i < sizeof(gen) / sizeof(gen[0]); i++)
		if (strstr(low, gen[i].word))
			return gen[i].sm;
	return 0;
}

bool gp_fp32_simt_gemm(const char *name, unsigned *sm)
{
	static const char *tensor[] = {"tensor", "tf32",  "hmma",  "gmma", "1688", "16816", "bf16",
	                               "f16",    "h884",  "s884",  "imma", "fp16", "half",  "dgemm",
	                               "dmma",   "zgemm", "cgemm", "f64",  "e4m3", "e5m2"};
	char low[512];
	lower(name, low, sizeof(low));
	*sm = 0;
	bool gemm = strstr(low, "gemm") != NULL;
	bool simt = strstr(low, "simt") || strstr(low, "ffma") || strstr(low, "sgemm");
	if (!gemm || !simt)
		return false;
	for (size_t i = 0; i < sizeof(tensor) / sizeof(tensor[0]); i++)
		if (strstr(low, tensor[i]))
			return false;
	*sm = arch_of(low);
	return true;
}

bool gp_gpu_has_tf32(const char *gpu_name)
{
	/* NVML's names: "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "NVIDIA L40S",
	 * "NVIDIA GeForce RTX 4090", "NVIDIA RTX A6000" */
	static const char *with[] = {
	    "a100", "a800", "a10", "a30",    "a40",    "a16",    "a2 ",   "h100",
	    "h200", "h800", "h20", "gh200",  "b100",   "b200",   "gb200", "b300",
	    "l4",   "l20",  "l40", "rtx 30", "rtx 40", "rtx 50", "rtx a", "ada generation",
	    "thor", "orin"};
	char low[128];
	if (!gpu_name || !gpu_name[0])
		return false;
	lower(gpu_name, low, sizeof(low) - 1);
	strcat(low, " ");
	for (size_t i = 0; i < sizeof(with) / sizeof(with[0]); i++)
		if (strstr(low, with[i]))
			return true;
	return false;
}

void gp_collective_name(const char *name, char *out, size_t len)
{
	const char *p = strstr(name, "nccl");
	if (!p)
		p = strstr(name, "NCCL");
	p = p ? p : name;
	const char *u = strchr(p, '_');
	if (u && (size_t)(u - p) <= 16) /* ncclDevKernel_, ncclKernel_ */
		p = u + 1;
	size_t n = strcspn(p, "(<");
	if (n + 1 > len)
		n = len - 1;
	memcpy(out, p, n);
	out[n] = 0;
}
