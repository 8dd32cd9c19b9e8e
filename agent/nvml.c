/* NVML sampler for the agent. NVML's ABI is stable C; the few types we need are declared
 * here from the public documentation (nvml.h is not installed on build hosts). */
#include "config.h"
#include "nvml.h"
#include "event.h"
#include "proc.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int nvmlReturn_t; /* NVML_SUCCESS == 0 */
typedef void *nvmlDevice_t;
typedef struct {
	unsigned int gpu, memory;
} nvmlUtilization_t;
typedef struct {
	unsigned long long total, free, used;
} nvmlMemory_t;
enum { NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_TEMPERATURE_GPU = 0 };
enum { NVML_ERROR_NOT_SUPPORTED = 3, NVML_ERROR_TIMEOUT = 10 };
/* nvmlDeviceGetFieldValues: cumulative counters (nvml.h field ids) */
enum {
	NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX = 138, /* KiB, all links of the GPU */
	NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX = 139,
	NVML_FI_DEV_PCIE_COUNT_TX_BYTES = 197, /* bytes; the counter may wrap */
	NVML_FI_DEV_PCIE_COUNT_RX_BYTES = 198,
};
typedef union {
	double d;
	unsigned ui;
	unsigned long ul;
	unsigned long long ull;
	long long sll;
	int si;
	unsigned short us;
} nvmlValue_t;
enum {
	NVML_VT_DOUBLE,
	NVML_VT_UINT,
	NVML_VT_ULONG,
	NVML_VT_ULL,
	NVML_VT_SLL,
	NVML_VT_SINT,
	NVML_VT_USHORT
};
typedef struct {
	unsigned fieldId, scopeId;
	long long timestamp, latencyUsec;
	int valueType;
	nvmlReturn_t nvmlReturn;
	nvmlValue_t value;
} nvmlFieldValue_t;
/* Xid and ECC events (nvmlEventType*), read without blocking from one event set */
typedef void *nvmlEventSet_t;
typedef struct {
	nvmlDevice_t device;
	unsigned long long eventType, eventData;
	unsigned gpuInstanceId, computeInstanceId;
} nvmlEventData_t;
enum {
	NVML_EV_SBE = 0x1,
	NVML_EV_DBE = 0x2,
	NVML_EV_XID = 0x8,
	NVML_MEMORY_ERROR_CORRECTED = 0,
	NVML_MEMORY_ERROR_UNCORRECTED = 1,
	NVML_VOLATILE_ECC = 0,
};

/* nvmlDeviceGetComputeRunningProcesses: _v2 and _v3 fill nvmlProcessInfo_v2_t (with MIG's
 * instance ids), the first version the two fields alone */
typedef struct {
	unsigned pid;
	unsigned long long usedGpuMemory;
	unsigned gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_v2_t;
typedef struct {
	unsigned pid;
	unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;
#define NVML_VALUE_NOT_AVAILABLE_ULL 0xffffffffffffffffull
#define MAXPROCS                     64

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
	nvmlReturn_t (*fields)(nvmlDevice_t, int, nvmlFieldValue_t *);
	nvmlReturn_t (*ecc)(nvmlDevice_t, int, int, unsigned long long *);
	nvmlReturn_t (*ev_create)(nvmlEventSet_t *);
	nvmlReturn_t (*ev_register)(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
	nvmlReturn_t (*ev_wait)(nvmlEventSet_t, nvmlEventData_t *, unsigned);
	nvmlReturn_t (*ev_free)(nvmlEventSet_t);
	const char *(*errstr)(nvmlReturn_t);
	nvmlReturn_t (*procs)(nvmlDevice_t, unsigned *, void *);
	bool procs_v1;      /* procs fills nvmlProcessInfo_v1_t */
	bool procs_refused; /* the driver answered it with an error: not asked again */
	nvmlEventSet_t evset;
	unsigned ndev;
	unsigned io_bits[MAXDEV]; /* GP_IO_* the device answers */
	bool ecc_ok[MAXDEV];      /* ECC counters readable */
	unsigned long long ecc0[MAXDEV][2], ecc_last[MAXDEV][2];
	char faults_why[256];    /* what of Xid/ECC could not be watched */
	uint64_t faults_next_ns; /* Xid/ECC are polled once a second */
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

static const char *nv_err(gp_nvml_t *n, nvmlReturn_t rc)
{
	const char *s = n->errstr ? n->errstr(rc) : NULL;
	return s ? s : "error";
}

/* Read the PCIe and NVLink byte counters of device i into v[0..3]; returns GP_IO_* bits
 * of the counters that answered. */
static unsigned read_io(gp_nvml_t *n, unsigned i, unsigned long long v[4])
{
	static const unsigned ids[4] = {
	    NVML_FI_DEV_PCIE_COUNT_TX_BYTES, NVML_FI_DEV_PCIE_COUNT_RX_BYTES,
	    NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX};
	nvmlFieldValue_t f[4];
	unsigned ok = 0;
	memset(f, 0, sizeof(f));
	for (int k = 0; k < 4; k++)
		f[k].fieldId = ids[k];
	if (!n->fields || n->fields(n->dev[i], 4, f) != 0)
		return 0;
	for (int k = 0; k < 4; k++) {
		v[k] = 0;
		if (f[k].nvmlReturn != 0)
			continue;
		switch (f[k].valueType) {
		case NVML_VT_UINT:
			v[k] = f[k].value.ui;
			break;
		case NVML_VT_ULONG:
			v[k] = f[k].value.ul;
			break;
		case NVML_VT_ULL:
		case NVML_VT_SLL:
			v[k] = f[k].value.ull;
			break;
		case NVML_VT_DOUBLE:
			v[k] = (unsigned long long)f[k].value.d;
			break;
		default:
			continue;
		}
		ok |= 1u << k;
	}
	return ((ok & 3) == 3 ? GP_IO_PCIE : 0) | ((ok & 12) == 12 ? GP_IO_NVLINK : 0);
}

static void probe_io(gp_nvml_t *n)
{
	for (unsigned i = 0; i < n->ndev; i++) {
		unsigned long long v[4];
		n->io_bits[i] = read_io(n, i, v);
	}
}

/* Xid and ECC: an event set polled with timeout 0 at every sample (never blocks the
 * agent), and the volatile ECC totals compared with their value at start. */
static void probe_faults(gp_nvml_t *n)
{
	nvmlReturn_t rc = -1;
	unsigned registered = 0;
	if (n->ev_create && n->ev_register && n->ev_wait && (rc = n->ev_create(&n->evset)) == 0) {
		for (unsigned i = 0; i < n->ndev; i++) {
			rc = n->ev_register(n->dev[i], NVML_EV_XID | NVML_EV_DBE | NVML_EV_SBE,
			                    n->evset);
			if (rc == NVML_ERROR_NOT_SUPPORTED) /* some kinds unsupported: Xid alone */
				rc = n->ev_register(n->dev[i], NVML_EV_XID, n->evset);
			registered += rc == 0;
		}
	}
	if (!registered) {
		snprintf(n->faults_why, sizeof(n->faults_why), "Xid events: %s",
		         rc == (nvmlReturn_t)-1 ? "NVML has no event API" : nv_err(n, rc));
		if (n->evset && n->ev_free)
			n->ev_free(n->evset);
		n->evset = NULL;
	}
	for (unsigned i = 0; i < n->ndev; i++) {
		n->ecc_ok[i] = n->ecc &&
		               n->ecc(n->dev[i], NVML_MEMORY_ERROR_CORRECTED, NVML_VOLATILE_ECC,
		                      &n->ecc0[i][0]) == 0 &&
		               n->ecc(n->dev[i], NVML_MEMORY_ERROR_UNCORRECTED, NVML_VOLATILE_ECC,
		                      &n->ecc0[i][1]) == 0;
		n->ecc_last[i][0] = n->ecc0[i][0];
		n->ecc_last[i][1] = n->ecc0[i][1];
	}
}

const char *gp_nvml_limits(gp_nvml_t *n, char *buf, size_t len)
{
	bool pcie = false, nvlink = false, ecc = false;
	for (unsigned i = 0; i < n->ndev; i++) {
		pcie |= n->io_bits[i] & GP_IO_PCIE;
		nvlink |= n->io_bits[i] & GP_IO_NVLINK;
		ecc |= n->ecc_ok[i];
	}
	const char *parts[] = {pcie ? "" : "PCIe counters not supported",
	                       nvlink ? "" : "NVLink counters not supported",
	                       ecc ? "" : "ECC counters not readable", n->faults_why};
	buf[0] = '\0';
	for (size_t i = 0, l = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		if (parts[i][0] && l < len)
			l += (size_t)snprintf(buf + l, len - l, "%s%s", l ? "; " : "", parts[i]);
	return buf;
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
	SYM(fields, "nvmlDeviceGetFieldValues");
	SYM(ecc, "nvmlDeviceGetTotalEccErrors");
	SYM(ev_create, "nvmlEventSetCreate");
	SYM(ev_register, "nvmlDeviceRegisterEvents");
	SYM(ev_wait, "nvmlEventSetWait_v2");
	SYM(ev_free, "nvmlEventSetFree");
	SYM(errstr, "nvmlErrorString");
	SYM(procs, "nvmlDeviceGetComputeRunningProcesses_v3");
	if (!n->procs)
		SYM(procs, "nvmlDeviceGetComputeRunningProcesses_v2");
	if (!n->procs) {
		SYM(procs, "nvmlDeviceGetComputeRunningProcesses");
		n->procs_v1 = true;
	}
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
	probe_io(n);
	probe_faults(n);
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

/* Which processes hold a CUDA context on device i (NVML's compute processes), and which
 * of them are the task's: the agent or a process under it. A GP_EV_GPU_PROCS record;
 * none where the driver does not answer (it is not asked again). What tells "allocated,
 * not used" from "used, not recorded": an idle H100 shows ~480 MiB in use with no process
 * (doc/report.md). A pid NVML gives from another PID namespace is not found under the
 * agent: counted among the others. */
static void sample_procs(gp_nvml_t *n, unsigned i, gp_rf_writer_t *w, uint64_t ts)
{
	nvmlProcessInfo_v2_t v2[MAXPROCS];
	nvmlProcessInfo_v1_t *v1 = (nvmlProcessInfo_v1_t *)v2;
	unsigned count = MAXPROCS;
	if (n->procs_refused)
		return;
	if (!n->procs) { /* a driver without the call: as refused */
		gp_event_t no = {.type = GP_EV_GPU_PROCS, .u8 = (uint8_t)i, .u16 = 1, .ts = ts};
		gp_rf_append(w, &no);
		n->procs_refused = true;
		return;
	}
	nvmlReturn_t rc = n->procs(n->dev[i], &count, v2);
	if (rc != 0 && rc != 7) { /* 7: NVML_ERROR_INSUFFICIENT_SIZE, count holds them all */
		/* said once (u16 1): the report then knows this collector asked and what the
		 * cuInit records' absence means */
		gp_event_t no = {.type = GP_EV_GPU_PROCS, .u8 = (uint8_t)i, .u16 = 1, .ts = ts};
		gp_rf_append(w, &no);
		n->procs_refused = true;
		return;
	}
	gp_event_t e = {.type = GP_EV_GPU_PROCS, .u8 = (uint8_t)i, .ts = ts, .a = count};
	pid_t self = getpid();
	for (unsigned k = 0; k < count && k < MAXPROCS; k++) {
		unsigned pid = n->procs_v1 ? v1[k].pid : v2[k].pid;
		unsigned long long mem = n->procs_v1 ? v1[k].usedGpuMemory : v2[k].usedGpuMemory;
		if (mem == NVML_VALUE_NOT_AVAILABLE_ULL)
			mem = 0;
		e.d += mem;
		if ((pid_t)pid == self || gp_proc_descends_from((pid_t)pid, self)) {
			e.b++;
			e.c += mem;
		}
	}
	gp_rf_append(w, &e);
}

void gp_nvml_sample(gp_nvml_t *n, gp_rf_writer_t *w, bool final)
{
	/* every NVML query is a driver call that may take the GPU's lock the application
	 * also takes: the slow-changing health counters are read once a second only */
	uint64_t now = gp_now_ns();
	bool faults = final || now >= n->faults_next_ns;
	if (faults)
		n->faults_next_ns = now + 1000000000ull;
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
		if (faults)
			sample_procs(n, i, w, e.ts);
		e.a = (u.gpu & 0xff) | (u.memory & 0xff) << 8 | (uint64_t)(t & 0xffff) << 16;
		e.b = m.used;
		e.c = p | (uint64_t)sm << 32;
		e.d = mc | (uint64_t)(thr & 0xffffffffu) << 32;
		gp_rf_append(w, &e);
		if (n->io_bits[i]) {
			unsigned long long v[4];
			gp_event_t io = {.type = GP_EV_NVML_IO, .u8 = (uint8_t)i, .ts = e.ts};
			io.u16 = (uint16_t)(read_io(n, i, v) & n->io_bits[i]);
			io.a = v[0];
			io.b = v[1];
			io.c = v[2];
			io.d = v[3];
			if (io.u16)
				gp_rf_append(w, &io);
		}
		if (faults && n->ecc_ok[i]) {
			for (int k = 0; k < 2; k++) {
				unsigned long long c = 0;
				if (n->ecc(d, k, NVML_VOLATILE_ECC, &c) != 0 ||
				    c <= n->ecc_last[i][k])
					continue;
				gp_event_t f = {
				    .type = GP_EV_GPU_FAULT, .u8 = (uint8_t)i, .ts = e.ts};
				f.a = k ? GP_FAULT_ECC_UNCORRECTED : GP_FAULT_ECC_CORRECTED;
				f.b = c - n->ecc_last[i][k];
				f.c = c - n->ecc0[i][k];
				n->ecc_last[i][k] = c;
				gp_rf_append(w, &f);
			}
		}
	}
	/* Xid: drain what the driver queued since the last sample, never waiting */
	for (int guard = 0; faults && n->evset && guard < 64; guard++) {
		nvmlEventData_t ev;
		memset(&ev, 0, sizeof(ev));
		if (n->ev_wait(n->evset, &ev, 0) != 0)
			break;
		unsigned i = 0;
		while (i < n->ndev && n->dev[i] != ev.device)
			i++;
		if (i == n->ndev || !(ev.eventType & NVML_EV_XID))
			continue; /* another GPU's event, or ECC (counted from the totals) */
		gp_event_t f = {.type = GP_EV_GPU_FAULT, .u8 = (uint8_t)i, .ts = gp_now_ns()};
		f.a = GP_FAULT_XID;
		f.b = ev.eventData;
		gp_rf_append(w, &f);
	}
}

void gp_nvml_close(gp_nvml_t *n)
{
	if (!n)
		return;
	if (n->evset && n->ev_free)
		n->ev_free(n->evset);
	if (n->shutdown)
		n->shutdown();
	if (n->lib)
		dlclose(n->lib);
	free(n);
}
