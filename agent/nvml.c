/* NVML sampler for the agent. NVML's ABI is stable C; the few types we need are declared
 * here from the public documentation (nvml.h is not installed on build hosts). */
#include "config.h"
#include "nvml.h"
#include "event.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t; /* NVML_SUCCESS == 0 */
typedef void *nvmlDevice_t;
typedef struct {
	unsigned int gpu, memory;
} nvmlUtilization_t;
typedef struct {
	unsigned long long total, free, used;
} nvmlMemory_t;
enum { NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_TEMPERATURE_GPU = 0 };

#define MAXDEV 16

struct gp_nvml {
	void *lib;
	nvmlReturn_t (*init)(void);
	nvmlReturn_t (*shutdown)(void);
	nvmlReturn_t (*count)(unsigned *);
	nvmlReturn_t (*by_index)(unsigned, nvmlDevice_t *);
	nvmlReturn_t (*uuid)(nvmlDevice_t, char *, unsigned);
	nvmlReturn_t (*name)(nvmlDevice_t, char *, unsigned);
	nvmlReturn_t (*mem)(nvmlDevice_t, nvmlMemory_t *);
	nvmlReturn_t (*util)(nvmlDevice_t, nvmlUtilization_t *);
	nvmlReturn_t (*power)(nvmlDevice_t, unsigned *);
	nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned *);
	nvmlReturn_t (*temp)(nvmlDevice_t, int, unsigned *);
	nvmlReturn_t (*throttle)(nvmlDevice_t, unsigned long long *);
	unsigned ndev;
	nvmlDevice_t dev[MAXDEV];
	char uuidv[MAXDEV][96];
	char uuids[MAXDEV * 97];
};

#define SYM(field, name)                                                                           \
	do {                                                                                       \
		*(void **)&n->field = dlsym(n->lib, name);                                         \
	} while (0)

static bool selected(const char *cvd, unsigned idx, const char *uuid)
{
	char buf[1024], *save = NULL;
	if (!cvd)
		return true;
	snprintf(buf, sizeof(buf), "%s", cvd);
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (!strncmp(t, "GPU-", 4) || !strncmp(t, "MIG-", 4)) {
			if (!strncmp(uuid, t, strlen(t)))
				return true;
		} else if ((unsigned)atoi(t) == idx) {
			return true;
		}
	}
	return false;
}

gp_nvml_t *gp_nvml_open(const char **why)
{
	gp_nvml_t *n = calloc(1, sizeof(*n));
	unsigned count = 0;
	const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
	if (!n)
		return NULL;
	n->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!n->lib) {
		*why = "NVML (libnvidia-ml.so.1) not found";
		free(n);
		return NULL;
	}
	SYM(init, "nvmlInit_v2");
	SYM(shutdown, "nvmlShutdown");
	SYM(count, "nvmlDeviceGetCount_v2");
	SYM(by_index, "nvmlDeviceGetHandleByIndex_v2");
	SYM(uuid, "nvmlDeviceGetUUID");
	SYM(name, "nvmlDeviceGetName");
	SYM(mem, "nvmlDeviceGetMemoryInfo");
	SYM(util, "nvmlDeviceGetUtilizationRates");
	SYM(power, "nvmlDeviceGetPowerUsage");
	SYM(clock, "nvmlDeviceGetClockInfo");
	SYM(temp, "nvmlDeviceGetTemperature");
	SYM(throttle, "nvmlDeviceGetCurrentClocksEventReasons");
	if (!n->throttle)
		SYM(throttle, "nvmlDeviceGetCurrentClocksThrottleReasons");
	if (!n->init || !n->count || !n->by_index || !n->uuid || n->init() != 0) {
		*why = "NVML did not initialise";
		dlclose(n->lib);
		free(n);
		return NULL;
	}
	if (n->count(&count) != 0)
		count = 0;
	for (unsigned i = 0; i < count && n->ndev < MAXDEV; i++) {
		nvmlDevice_t d;
		char u[96] = "";
		if (n->by_index(i, &d) != 0 || n->uuid(d, u, sizeof(u)) != 0)
			continue;
		if (!selected(cvd, i, u))
			continue;
		n->dev[n->ndev] = d;
		snprintf(n->uuidv[n->ndev], sizeof(n->uuidv[0]), "%s", u);
		n->ndev++;
	}
	if (!n->ndev) {
		*why = "no GPU visible to this task";
		gp_nvml_close(n);
		return NULL;
	}
	for (unsigned i = 0; i < n->ndev; i++)
		snprintf(n->uuids + strlen(n->uuids), sizeof(n->uuids) - strlen(n->uuids), "%s%s",
		         i ? "," : "", n->uuidv[i]);
	return n;
}

const char *gp_nvml_uuids(gp_nvml_t *n)
{
	return n->uuids;
}

void gp_nvml_describe(gp_nvml_t *n, gp_rf_writer_t *w, uint32_t *next_id)
{
	for (unsigned i = 0; i < n->ndev; i++) {
		char name[96] = "";
		nvmlMemory_t m = {0};
		gp_event_t e = {.type = GP_EV_GPU, .u8 = (uint8_t)i, .ts = gp_now_ns()};
		if (n->name)
			n->name(n->dev[i], name, sizeof(name));
		if (n->mem)
			n->mem(n->dev[i], &m);
		e.a = (*next_id)++;
		gp_rf_append_string(w, (uint32_t)e.a, n->uuidv[i]);
		e.c = (*next_id)++;
		gp_rf_append_string(w, (uint32_t)e.c, name);
		e.b = m.total;
		gp_rf_append(w, &e);
	}
}

void gp_nvml_sample(gp_nvml_t *n, gp_rf_writer_t *w)
{
	for (unsigned i = 0; i < n->ndev; i++) {
		nvmlUtilization_t u = {0};
		nvmlMemory_t m = {0};
		unsigned p = 0, sm = 0, mc = 0, t = 0;
		unsigned long long thr = 0;
		nvmlDevice_t d = n->dev[i];
		if (n->util)
			n->util(d, &u);
		if (n->mem)
			n->mem(d, &m);
		if (n->power)
			n->power(d, &p);
		if (n->clock) {
			n->clock(d, NVML_CLOCK_SM, &sm);
			n->clock(d, NVML_CLOCK_MEM, &mc);
		}
		if (n->temp)
			n->temp(d, NVML_TEMPERATURE_GPU, &t);
		if (n->throttle)
			n->throttle(d, &thr);
		gp_event_t e = {.type = GP_EV_NVML, .u8 = (uint8_t)i, .ts = gp_now_ns()};
		e.a = (u.gpu & 0xff) | (u.memory & 0xff) << 8 | (uint64_t)(t & 0xffff) << 16;
		e.b = m.used;
		e.c = p | (uint64_t)sm << 32;
		e.d = mc | (uint64_t)(thr & 0xffffffffu) << 32;
		gp_rf_append(w, &e);
	}
}

void gp_nvml_close(gp_nvml_t *n)
{
	if (!n)
		return;
	if (n->shutdown)
		n->shutdown();
	if (n->lib)
		dlclose(n->lib);
	free(n);
}
