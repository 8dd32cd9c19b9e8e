/* A stand-in libnvidia-ml.so.1 for the agent's NVML tests on machines without a GPU.
 * Two GPUs; counters that grow at known rates with wall time, so the report's rates
 * can be checked: PCIe tx 2 GB/s, rx 1 GB/s, NVLink tx 40 GB/s, rx 20 GB/s (counted in
 * KiB, as NVML does). FAKE_NVML (comma-separated) changes the behaviour:
 *   xid=N      one Xid N event on device 0, 0.3 s after nvmlInit
 *   ecc        3 uncorrected and 5 corrected ECC errors on device 0 after 0.3 s
 *   noevents   nvmlDeviceRegisterEvents answers NVML_ERROR_NOT_SUPPORTED
 *   nonvlink   the NVLink fields answer NVML_ERROR_NOT_SUPPORTED
 *   procs=child  device 0's compute processes are the caller's children (the agent's
 *                program), 512 MiB each; procs=other: pid 1's alone (not the task's);
 *                neither: none (an idle GPU, its 1 GiB in use with no process)
 *   noprocs    the compute-process query answers NVML_ERROR_NOT_SUPPORTED
 *   grow       memory in use rises by 600 MiB 0.3 s after nvmlInit (a context made)
 * Only the entry points the agent resolves are here; the ABI follows nvml.h. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int ret_t;
enum { OK = 0, NOT_SUPPORTED = 3, TIMEOUT = 10, INVALID = 2 };
typedef struct fake_dev {
	int idx;
} fake_dev_t;
static fake_dev_t devs[2] = {{0}, {1}};
static double t0;
static int xid_code, ecc, noevents, nonvlink, xid_sent, registered, noprocs, grow;
static const char *procs_of; /* "child", "other" or NULL */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int has(const char *opts, const char *w)
{
	size_t n = strlen(w);
	for (const char *p = opts; p && *p;) {
		if (!strncmp(p, w, n) && (p[n] == 0 || p[n] == ',' || p[n] == '='))
			return 1;
		p = strchr(p, ',');
		p = p ? p + 1 : NULL;
	}
	return 0;
}

ret_t nvmlInit_v2(void)
{
	const char *o = getenv("FAKE_NVML");
	const char *x = o ? strstr(o, "xid=") : NULL;
	t0 = now_s();
	xid_code = x ? atoi(x + 4) : 0;
	ecc = has(o, "ecc");
	noevents = has(o, "noevents");
	nonvlink = has(o, "nonvlink");
	noprocs = has(o, "noprocs");
	grow = has(o, "grow");
	procs_of = o && strstr(o, "procs=child")   ? "child"
	           : o && strstr(o, "procs=other") ? "other"
	                                           : NULL;
	return OK;
}
ret_t nvmlShutdown(void)
{
	return OK;
}
const char *nvmlErrorString(ret_t r)
{
	return r == NOT_SUPPORTED ? "Not Supported" : r == TIMEOUT ? "Timeout" : "Unknown Error";
}
ret_t nvmlDeviceGetCount_v2(unsigned *n)
{
	*n = 2;
	return OK;
}
ret_t nvmlDeviceGetHandleByIndex_v2(unsigned i, fake_dev_t **d)
{
	if (i > 1)
		return INVALID;
	*d = &devs[i];
	return OK;
}
ret_t nvmlDeviceGetUUID(fake_dev_t *d, char *buf, unsigned len)
{
	snprintf(buf, len, "GPU-fake0000-0000-0000-0000-00000000000%d", d->idx);
	return OK;
}
ret_t nvmlDeviceGetName(fake_dev_t *d, char *buf, unsigned len)
{
	snprintf(buf, len, "Fake GPU %d", d->idx);
	return OK;
}
typedef struct {
	unsigned long long total, free, used;
} mem_t;
ret_t nvmlDeviceGetMemoryInfo(fake_dev_t *d, mem_t *m)
{
	m->total = 80ull << 30;
	m->used = (1ull << 30) * (unsigned)(d->idx + 1);
	if (grow && now_s() - t0 > 0.3)
		m->used += 600ull << 20;
	m->free = m->total - m->used;
	return OK;
}
ret_t nvmlDeviceGetUtilizationRates(fake_dev_t *d, unsigned u[2])
{
	u[0] = 50 + d->idx;
	u[1] = 20;
	return OK;
}
ret_t nvmlDeviceGetPowerUsage(fake_dev_t *d, unsigned *mw)
{
	*mw = 300000;
	return OK;
}
ret_t nvmlDeviceGetClockInfo(fake_dev_t *d, int which, unsigned *mhz)
{
	*mhz = which == 1 ? 1980 : 2619;
	return OK;
}
ret_t nvmlDeviceGetTemperature(fake_dev_t *d, int which, unsigned *c)
{
	*c = 40;
	return OK;
}
ret_t nvmlDeviceGetCurrentClocksEventReasons(fake_dev_t *d, unsigned long long *r)
{
	*r = 0;
	return OK;
}

typedef struct {
	unsigned fieldId, scopeId;
	long long timestamp, latencyUsec;
	int valueType;
	ret_t nvmlReturn;
	unsigned long long value;
} field_t;
ret_t nvmlDeviceGetFieldValues(fake_dev_t *d, int n, field_t *f)
{
	double t = now_s() - t0;
	for (int i = 0; i < n; i++) {
		f[i].valueType = 3; /* unsigned long long */
		f[i].nvmlReturn = OK;
		switch (f[i].fieldId) {
		case 197:
			f[i].value = (unsigned long long)(t * 2e9);
			break;
		case 198:
			f[i].value = (unsigned long long)(t * 1e9);
			break;
		case 138:
			f[i].value = (unsigned long long)(t * 40e9 / 1024);
			f[i].nvmlReturn = nonvlink ? NOT_SUPPORTED : OK;
			break;
		case 139:
			f[i].value = (unsigned long long)(t * 20e9 / 1024);
			f[i].nvmlReturn = nonvlink ? NOT_SUPPORTED : OK;
			break;
		default:
			f[i].nvmlReturn = NOT_SUPPORTED;
		}
	}
	return OK;
}
ret_t nvmlDeviceGetTotalEccErrors(fake_dev_t *d, int type, int counter, unsigned long long *c)
{
	int late = ecc && d->idx == 0 && now_s() - t0 > 0.3;
	*c = late ? (type == 1 ? 3 : 5) : 0;
	return OK;
}

typedef struct {
	fake_dev_t *device;
	unsigned long long eventType, eventData;
	unsigned gi, ci;
} event_t;
static int evset_token;
ret_t nvmlEventSetCreate(void **set)
{
	*set = &evset_token;
	return OK;
}
ret_t nvmlDeviceRegisterEvents(fake_dev_t *d, unsigned long long types, void *set)
{
	if (noevents)
		return NOT_SUPPORTED;
	registered = 1;
	return OK;
}
ret_t nvmlEventSetWait_v2(void *set, event_t *e, unsigned timeout_ms)
{
	if (registered && xid_code && !xid_sent && now_s() - t0 > 0.3) {
		xid_sent = 1;
		e->device = &devs[0];
		e->eventType = 0x8;
		e->eventData = (unsigned long long)xid_code;
		return OK;
	}
	return TIMEOUT;
}
ret_t nvmlEventSetFree(void *set)
{
	return OK;
}

typedef struct {
	unsigned pid;
	unsigned long long used;
	unsigned gi, ci;
} proc_t;
/* the caller's children, from /proc (ppid is the 4th field of /proc/PID/stat) */
static unsigned children(proc_t *p, unsigned max)
{
	unsigned n = 0;
	DIR *d = opendir("/proc");
	struct dirent *de;
	while (d && (de = readdir(d)) && n < max) {
		char path[64], buf[512];
		int pid = atoi(de->d_name), ppid = 0;
		if (pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/stat", pid);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		size_t got = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[got] = 0;
		const char *rp = strrchr(buf, ')');
		if (rp && sscanf(rp + 2, "%*c %d", &ppid) == 1 && ppid == (int)getpid())
			p[n++] = (proc_t){(unsigned)pid, 512ull << 20, 0, 0};
	}
	if (d)
		closedir(d);
	return n;
}
ret_t nvmlDeviceGetComputeRunningProcesses_v3(fake_dev_t *d, unsigned *count, proc_t *p)
{
	unsigned n = 0;
	if (noprocs)
		return NOT_SUPPORTED;
	if (d->idx == 0 && procs_of && !strcmp(procs_of, "child"))
		n = children(p, *count);
	else if (d->idx == 0 && procs_of && *count)
		p[n++] = (proc_t){1, 256ull << 20, 0, 0};
	*count = n;
	return OK;
}
