/* libgpuprof-cupti: CUPTI activity and callbacks for libgpuprof-inject, loaded only when
 * cuda or mem capture is asked for, so NVTX-only processes never map libcupti.
 * Buffers: 8 MiB, at most 32 outstanding (kineto/Caliper practice); the completion
 * callback only pushes the buffer on a lock-free list; one processing thread flushes
 * every 200 ms (CUPTI delivers nothing until a flush) and turns records into events.
 * Locks: flush_lock serialises process_all (the worker, a context's destruction and the
 * final flush); py_cache_mu is only ever try-locked (the frame walker never waits).
 * Everything else shared is atomic. */
#include "config.h"
#include "inject.h"
#include "modes.h"

#include <cupti.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#ifdef HAVE_LIBUNWIND
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#endif

#define BUF_SIZE            (8u << 20)
#define BUF_MAX_OUTSTANDING 32
#define STACK_DEPTH         24

typedef struct buf_node {
	struct buf_node *next;
	uint8_t *buf;
	size_t valid;
} buf_node_t;

static const gp_inject_api_t *api;

/* correlation ids: CUPTI's count from 1 in every process; the generation above them
 * keeps two programs run one after the other under one agent apart in the report's
 * launch-to-kernel matching */
#define CORR(id) ((uint64_t)api->gen << 32 | (uint32_t)(id))
static _Atomic(buf_node_t *) completed;
static _Atomic int outstanding;
static _Atomic int stop;
static pthread_t worker;
static CUpti_SubscriberHandle subscriber;
static bool have_sub; /* we hold CUPTI's callback subscriber */
static bool api_captured(uint64_t ts);
static pthread_mutex_t flush_lock = PTHREAD_MUTEX_INITIALIZER; /* process_all only */

static uint64_t CUPTIAPI timestamp(void)
{
	return api->now();
}

/* CUPTI accepts a NULL buffer (it drops the records and counts them) from API version
 * 27 on; older ones are always given one, whatever the bound on outstanding buffers. */
static bool may_refuse;

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *maxRecords)
{
	*maxRecords = 0;
	*buffer = NULL;
	*size = 0;
	if (atomic_fetch_add(&outstanding, 1) >= BUF_MAX_OUTSTANDING && may_refuse) {
		atomic_fetch_sub(&outstanding, 1);
		api->count_drop(GP_LOSS_CUPTI_REFUSED, 1); /* the records: CUPTI's count */
		return;
	}
	if (posix_memalign((void **)buffer, 8, BUF_SIZE) != 0) {
		atomic_fetch_sub(&outstanding, 1);
		api->count_drop(GP_LOSS_CUPTI_REFUSED, 1);
		*buffer = NULL;
		return;
	}
	*size = BUF_SIZE;
}

/* Records CUPTI had to drop for the buffer's context and stream (no buffer to put them
 * in): read at every completed buffer, as CUPTI's documentation asks. */
static void count_cupti_drops(CUcontext ctx, uint32_t streamId)
{
	size_t dropped = 0;
	if (cuptiActivityGetNumDroppedRecords(ctx, streamId, &dropped) == CUPTI_SUCCESS && dropped)
		api->count_drop(GP_LOSS_CUPTI, dropped);
}

static bool discard; /* GPUPROF_CUPTI_DISCARD=1: the CUPTI floor for overhead benchmarks */

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t streamId, uint8_t *buffer,
                                      size_t size, size_t validSize)
{
	count_cupti_drops(ctx, streamId);
	if (discard) {
		free(buffer);
		atomic_fetch_sub(&outstanding, 1);
		return;
	}
	buf_node_t *n = malloc(sizeof(*n));
	if (!n) {
		free(buffer);
		atomic_fetch_sub(&outstanding, 1);
		return;
	}
	n->buf = buffer;
	n->valid = validSize;
	n->next = atomic_load(&completed);
	while (!atomic_compare_exchange_weak(&completed, &n->next, n))
		;
}

/* What an API record means for the report (GP_API_* in event.h), decided here where
 * the symbolic callback ids are known, so the report never hard-codes CUPTI numbers. */
static uint16_t api_class(bool runtime, uint32_t cbid)
{
	if (runtime) {
		switch (cbid) {
		case CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020:
		case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020:
		case CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020:
			return GP_API_SYNC;
		case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020:
			return GP_API_BLOCKING_COPY;
		case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
		case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
		case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
		case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000:
			return GP_API_LAUNCH;
		case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020:
		case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020:
		case CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000:
			return GP_API_ALLOC;
		default:
			return GP_API_OTHER;
		}
	}
	switch (cbid) {
	case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize:
	case CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize:
		return GP_API_SYNC;
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2:
		return GP_API_BLOCKING_COPY;
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
		return GP_API_LAUNCH;
	case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged:
	case CUPTI_DRIVER_TRACE_CBID_cuMemCreate:
		return GP_API_ALLOC;
	default:
		return GP_API_OTHER;
	}
}

static void emit_record(const CUpti_Activity *r)
{
	gp_event_t e = {0};
	switch (r->kind) {
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
	case CUPTI_ACTIVITY_KIND_KERNEL: {
		const CUpti_ActivityKernel10 *k = (const void *)r;
		e.type = GP_EV_KERNEL;
		e.ts = k->start;
		e.a = k->end - k->start;
		e.b = api->intern(k->name, strnlen(k->name, GP_STRING_MAX));
		e.c = CORR(k->correlationId);
		e.d = k->streamId;
		e.u8 = (uint8_t)k->deviceId;
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMCPY: {
		const CUpti_ActivityMemcpy6 *m = (const void *)r;
		e.type = GP_EV_MEMCPY;
		e.ts = m->start;
		e.a = m->end - m->start;
		e.b = m->bytes;
		e.c = CORR(m->correlationId);
		e.d = m->streamId;
		e.u8 = (uint8_t)m->deviceId;
		e.u16 = m->copyKind;
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMSET: {
		const CUpti_ActivityMemset4 *m = (const void *)r;
		e.type = GP_EV_MEMSET;
		e.ts = m->start;
		e.a = m->end - m->start;
		e.b = m->bytes;
		e.c = CORR(m->correlationId);
		e.d = m->streamId;
		e.u8 = (uint8_t)m->deviceId;
		break;
	}
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
		const CUpti_ActivitySynchronization2 *s = (const void *)r;
		e.type = GP_EV_SYNC;
		e.ts = s->start;
		e.a = s->end - s->start;
		e.b = s->type;
		e.c = CORR(s->correlationId);
		e.d = s->streamId;
		break;
	}
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_DRIVER: {
		const CUpti_ActivityAPI *a = (const void *)r;
		if (r->kind == CUPTI_ACTIVITY_KIND_RUNTIME &&
		    (a->cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000 ||
		     a->cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000)) {
			if (have_sub)
				return; /* the callback recorded it as it happened */
			e.type = GP_EV_PROFILER;
			e.ts = a->start;
			e.a = a->cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000;
			break;
		}
		e.type = GP_EV_API;
		e.ts = a->start;
		e.a = a->end - a->start;
		e.b = a->cbid;
		e.c = CORR(a->correlationId);
		e.tid = a->threadId;
		e.u8 = r->kind == CUPTI_ACTIVITY_KIND_RUNTIME ? 1 : 2;
		e.u16 = (uint16_t)(api_class(e.u8 == 1, a->cbid) |
		                   (a->returnValue < 127 ? a->returnValue : 127) << 8);
		if (!api_captured(a->start))
			return;
		break;
	}
	case CUPTI_ACTIVITY_KIND_OVERHEAD: {
		const CUpti_ActivityOverhead3 *o = (const void *)r;
		e.type = GP_EV_OVERHEAD;
		e.ts = o->start;
		e.a = o->end - o->start;
		e.b = o->overheadKind;
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMORY2: {
		const CUpti_ActivityMemory4 *m = (const void *)r;
		e.type = m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE
		             ? GP_EV_FREE
		             : GP_EV_ALLOC;
		e.ts = m->timestamp;
		e.a = m->address;
		e.b = m->bytes;
		e.c = CORR(m->correlationId);
		e.u8 = (uint8_t)m->deviceId;
		e.u16 = (uint16_t)m->memoryKind;
		e.d = m->streamId;
		break;
	}
	default:
		return;
	}
	api->emit(&e);
}

static void process_all(void)
{
	buf_node_t *list, *rev = NULL;
	pthread_mutex_lock(&flush_lock);
	list = atomic_exchange(&completed, NULL);
	while (list) { /* oldest first */
		buf_node_t *n = list->next;
		list->next = rev;
		rev = list;
		list = n;
	}
	while (rev) {
		buf_node_t *n = rev->next;
		CUpti_Activity *rec = NULL;
		while (cuptiActivityGetNextRecord(rev->buf, rev->valid, &rec) == CUPTI_SUCCESS)
			emit_record(rec);
		free(rev->buf);
		free(rev);
		atomic_fetch_sub(&outstanding, 1);
		rev = n;
	}
	pthread_mutex_unlock(&flush_lock);
}

/* Flush period: 200 ms while kernels are traced (CUPTI delivers nothing until a flush,
 * and the ring should not see bursts); 1 s when only memory records are collected (they
 * are rare after warm-up, and each flush costs the application; the seed MLP measured
 * +9 % with 200 ms against +3 % with 1 s, inside this machine's +-10 % noise).
 * GPUPROF_CUPTI_FLUSH_MS sets both. */
static long flush_ms = 200, flush_mem_ms = 1000;
static _Atomic unsigned capturing; /* GP_MODE_CUDA | GP_MODE_MEM now on; one writer at a time */

static void *worker_main(void *arg)
{
	while (!atomic_load(&stop)) {
		long ms = (capturing & GP_MODE_CUDA) ? flush_ms : flush_mem_ms;
		struct timespec ts = {ms / 1000, (ms % 1000) * 1000 * 1000};
		nanosleep(&ts, NULL);
		cuptiActivityFlushAll(0);
		process_all();
	}
	return NULL;
}

/* ---- allocation call stacks (mode mem), via the callback API ---- */

#define STK_SLOTS 4096
/* stack ids: per process generation (see gp_inject_api_t.gen), so two programs run one
 * after the other under one agent never share an id */
#define STK_ID(idx) ((api->gen << 12) + (uint32_t)(idx) + 1)
static _Atomic uint64_t stk_tbl[STK_SLOTS];

static uint64_t hash_pcs(void *const *pcs, int n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull;
	for (int i = 0; i < n; i++)
		h = (h ^ (uint64_t)(uintptr_t)pcs[i]) * 0x100000001b3ull;
	return h ? h : 1;
}

/* ---- Python frames (CPython, resolved at run time; nothing when not in Python) ----
 * An allocation made by a Python thread gets the Python frames above it, as
 * "file.py:LINE function [python]" pseudo-frames before the native ones: for a PyTorch
 * user the line of the model that allocated is the answer, not libc10_cuda.so.
 *
 * Two walkers. A thread that holds the GIL is walked through the C API. A thread that
 * released it -- every PyTorch operator does (gil_scoped_release around the dispatch), so
 * this is where the caching allocator's cudaMalloc runs -- must not touch reference
 * counts or allocate, and must not take the GIL (the allocator's mutex is held: a thread
 * with the GIL waiting on that mutex would deadlock). For CPython 3.11 and 3.12 it is
 * walked read-only, the way py-spy and pystack read a process from outside: the thread's
 * own state (PyGILState_GetThisThreadState), its current interpreter frame, each frame's
 * code object. The thread is inside a C call, so its frames and their code objects are
 * alive and not moving. Every read goes through process_vm_readv on this process, which
 * answers EFAULT instead of faulting, and every object is checked against PyCode_Type or
 * PyUnicode_Type before it is used: a layout that does not match gives no frames, never a
 * crash. Other versions, and processes under a seccomp filter, keep the GIL walker only. */

#define PY_DEPTH 16
#define PY_PC    (1ull << 63) /* pseudo program counters of Python frames */

static struct {
	int (*is_init)(void);
	int (*gil_check)(void);
	void *(*tstate)(void);       /* the thread's state, NULL-safe */
	void *(*get_frame)(void);    /* PyEval_GetFrame: borrowed */
	void *(*frame_code)(void *); /* PyFrame_GetCode: new reference */
	void *(*frame_back)(void *); /* PyFrame_GetBack: new reference */
	int (*frame_line)(void *);   /* PyFrame_GetLineNumber */
	void *(*getattr)(void *, const char *);
	const char *(*utf8)(void *);
	void (*decref)(void *);
	void (*fetch)(void **, void **, void **);
	void (*restore)(void *, void *, void *);
	bool ok;
	/* the read-only walker */
	void *(*this_ts)(void); /* PyGILState_GetThisThreadState: no GIL needed */
	int (*addr2line)(void *, int);
	uintptr_t code_type, str_type;
	long off_filename, off_name, code_base; /* code_base: tp_basicsize, the bytecode */
	const struct py_layout *lay;
} py;
static pthread_once_t py_once = PTHREAD_ONCE_INIT;

/* x86-64/aarch64 offsets (non-debug builds) of what the read-only walker reads; from
 * CPython's Include/cpython/pystate.h and Include/internal/pycore_frame.h of each version,
 * checked against 3.11's headers by offsetof and on 3.12 by tests/gpu/t_gpu.sh */
struct py_layout {
	unsigned hexversion;            /* major.minor, as in Py_Version >> 16 */
	int ts_cframe, cf_frame;        /* tstate->cframe->current_frame */
	int fr_code, fr_prev, fr_instr; /* f_code, previous, prev_instr */
	int fr_owner, owner_cstack;     /* shim frames (3.12) are skipped */
	int str_data;                   /* sizeof(PyASCIIObject): compact ASCII text */
};
static const struct py_layout py_layouts[] = {
    {0x030b, 56, 8, 32, 48, 56, 69, -1, 48},
    {0x030c, 56, 0, 0, 8, 56, 70, 3, 40},
};
#define PYOBJ_TYPE   8   /* ob_type */
#define PYOBJ_SIZE   16  /* ob_size; str: length */
#define PYSTR_STATE  32  /* PyASCIIObject.state: compact bit 5, ascii bit 6 */
#define PYTYPE_BASIC 32  /* tp_basicsize */
#define PYTYPE_MEMB  240 /* tp_members */

/* Read n bytes of this process at addr; false where nothing is mapped. Never faults. */
static bool py_rd(uintptr_t addr, void *dst, size_t n)
{
	if (addr < 4096)
		return false;
	struct iovec l = {dst, n}, r = {(void *)addr, n};
	return process_vm_readv(getpid(), &l, 1, &r, 1, 0) == (ssize_t)n;
}

/* The offset of a code object member, from PyCode_Type's own member table (no offsets of
 * PyCodeObject are hard-coded). */
static long py_member(uintptr_t type, const char *name)
{
	uintptr_t m;
	if (!py_rd(type + PYTYPE_MEMB, &m, sizeof(m)))
		return -1;
	for (int i = 0; m && i < 64; i++, m += 40) { /* sizeof(PyMemberDef) */
		uintptr_t nm;
		long off;
		char buf[32] = "";
		if (!py_rd(m, &nm, sizeof(nm)) || !nm)
			return -1;
		py_rd(nm, buf, sizeof(buf) - 1); /* may stop short of a page end: compared below */
		if (!strncmp(buf, name, sizeof(buf) - 1) && py_rd(m + 16, &off, sizeof(off)))
			return off;
	}
	return -1;
}

/* Under a seccomp filter process_vm_readv might be answered by killing the process (the
 * filter's choice, which cannot be read back): the read-only walker is then not used. */
static bool seccomp_filtered(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[128];
	bool filtered = f == NULL; /* unknown: assume the worst */
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "Seccomp:", 8))
			filtered = atoi(line + 8) != 0;
	if (f)
		fclose(f);
	return filtered;
}

static void py_resolve_raw(void)
{
	if (seccomp_filtered())
		return;
	const unsigned *ver = dlsym(RTLD_DEFAULT, "Py_Version"); /* 3.11+ */
	*(void **)&py.this_ts = dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
	*(void **)&py.addr2line = dlsym(RTLD_DEFAULT, "PyCode_Addr2Line");
	py.code_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyCode_Type");
	py.str_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyUnicode_Type");
	if (!ver || !py.this_ts || !py.addr2line || !py.code_type || !py.str_type)
		return;
	for (size_t i = 0; i < sizeof(py_layouts) / sizeof(py_layouts[0]); i++)
		if (py_layouts[i].hexversion == *ver >> 16)
			py.lay = &py_layouts[i];
	py.off_filename = py_member(py.code_type, "co_filename");
	py.off_name = py_member(py.code_type, "co_name");
	if (!py_rd(py.code_type + PYTYPE_BASIC, &py.code_base, sizeof(py.code_base)) ||
	    py.off_filename < 0 || py.off_name < 0 || py.code_base <= 0)
		py.lay = NULL;
}

static void py_resolve(void)
{
#define PYSYM(f, n) *(void **)&py.f = dlsym(RTLD_DEFAULT, n)
	PYSYM(is_init, "Py_IsInitialized");
	PYSYM(gil_check, "PyGILState_Check");
	/* PyGILState_Check answers 1 when its check is off (sub-interpreters): a thread
	 * state is required as well before any frame is touched */
	PYSYM(tstate, "PyThreadState_GetUnchecked"); /* 3.13 */
	if (!py.tstate)
		PYSYM(tstate, "_PyThreadState_UncheckedGet"); /* 3.5-3.12 */
	PYSYM(get_frame, "PyEval_GetFrame");
	PYSYM(frame_code, "PyFrame_GetCode");
	PYSYM(frame_back, "PyFrame_GetBack");
	PYSYM(frame_line, "PyFrame_GetLineNumber");
	PYSYM(getattr, "PyObject_GetAttrString");
	PYSYM(utf8, "PyUnicode_AsUTF8");
	PYSYM(decref, "Py_DecRef");
	PYSYM(fetch, "PyErr_Fetch");
	PYSYM(restore, "PyErr_Restore");
#undef PYSYM
	py.ok = py.is_init && py.gil_check && py.tstate && py.get_frame && py.frame_code &&
	        py.frame_back && py.frame_line && py.getattr && py.utf8 && py.decref && py.fetch &&
	        py.restore;
	if (py.ok)
		py_resolve_raw();
}

static const char *py_str(void *code, const char *attr, void **keep)
{
	*keep = py.getattr(code, attr);
	const char *s = *keep ? py.utf8(*keep) : NULL;
	return s ? s : "?";
}

/* A str object's text, if it is compact ASCII (file and function names are); "?" else.
 * Two reads: the header, then the text. */
static void py_raw_str(uintptr_t obj, char *out, size_t len)
{
	unsigned char h[PYSTR_STATE + 4];
	uintptr_t type;
	long n;
	uint32_t state;
	snprintf(out, len, "?");
	if (!py_rd(obj, h, sizeof(h)))
		return;
	memcpy(&type, h + PYOBJ_TYPE, sizeof(type));
	memcpy(&n, h + PYOBJ_SIZE, sizeof(n));
	memcpy(&state, h + PYSTR_STATE, sizeof(state));
	if (type != py.str_type || (state & 0x60) != 0x60 || n < 0)
		return;
	if ((size_t)n >= len)
		n = (long)len - 1;
	if (py_rd(obj + (uintptr_t)py.lay->str_data, out, (size_t)n))
		out[n] = '\0';
	else
		snprintf(out, len, "?");
}

/* Names of code objects already read, by address (and the addresses of its two strings,
 * so a code object freed and another allocated at its address is not mistaken for it):
 * a frame then costs two reads instead of six. Shared by the threads that walk; one that
 * finds it busy reads the names itself. */
#define PY_CACHE 256
static struct {
	uintptr_t code, fname, name;
	char text[160];
} py_cache[PY_CACHE];
static pthread_mutex_t py_cache_mu = PTHREAD_MUTEX_INITIALIZER;

static void py_code_text(uintptr_t code, uintptr_t fname, uintptr_t name, char *out, size_t len)
{
	unsigned slot = (unsigned)(code >> 4) % PY_CACHE;
	bool locked = !pthread_mutex_trylock(&py_cache_mu);
	if (locked && py_cache[slot].code == code && py_cache[slot].fname == fname &&
	    py_cache[slot].name == name) {
		snprintf(out, len, "%s", py_cache[slot].text);
		pthread_mutex_unlock(&py_cache_mu);
		return;
	}
	char file[128], func[96];
	py_raw_str(fname, file, sizeof(file));
	py_raw_str(name, func, sizeof(func));
	const char *base = strrchr(file, '/');
	snprintf(out, len, "%s\t%s", base ? base + 1 : file, func);
	if (locked) {
		py_cache[slot].code = code;
		py_cache[slot].fname = fname;
		py_cache[slot].name = name;
		snprintf(py_cache[slot].text, sizeof(py_cache[slot].text), "%s", out);
		pthread_mutex_unlock(&py_cache_mu);
	}
}

/* The read-only walk of the calling thread's frames (see above); 0 where anything does
 * not look as the layout says. */
static int py_frames_raw(char names[][192], int max)
{
	const struct py_layout *L = py.lay;
	uintptr_t ts = (uintptr_t)py.this_ts(), cf, fr;
	if (!ts || !py_rd(ts + (uintptr_t)L->ts_cframe, &cf, sizeof(cf)) ||
	    !py_rd(cf + (uintptr_t)L->cf_frame, &fr, sizeof(fr)))
		return 0;
	long hi = (py.off_filename > py.off_name ? py.off_filename : py.off_name) + 8;
	int n = 0;
	for (int guard = 0; fr && n < max && guard < 1024; guard++) {
		unsigned char f[80], c[256];
		uintptr_t code, prev, instr, type, fname, name;
		long size;
		if (!py_rd(fr, f, sizeof(f)))
			break;
		memcpy(&code, f + L->fr_code, sizeof(code));
		memcpy(&prev, f + L->fr_prev, sizeof(prev));
		memcpy(&instr, f + L->fr_instr, sizeof(instr));
		if (L->owner_cstack >= 0 && f[L->fr_owner] == L->owner_cstack) {
			fr = prev;
			continue;
		}
		if (hi > (long)sizeof(c) || !py_rd(code, c, (size_t)hi))
			break;
		memcpy(&type, c + PYOBJ_TYPE, sizeof(type));
		memcpy(&size, c + PYOBJ_SIZE, sizeof(size));
		memcpy(&fname, c + py.off_filename, sizeof(fname));
		memcpy(&name, c + py.off_name, sizeof(name));
		if (type != py.code_type)
			break;
		char text[160];
		py_code_text(code, fname, name, text, sizeof(text));
		char *tab = strchr(text, '\t');
		if (tab)
			*tab++ = '\0';
		/* the byte offset of the instruction being executed, if it lies in the code */
		long off = (long)(instr - (code + (uintptr_t)py.code_base));
		int line = py.addr2line((void *)code, off >= 0 && off < size * 2 ? (int)off : -1);
		snprintf(names[n++], sizeof(names[0]), "%s:%d %s [python]", text, line,
		         tab ? tab : "?");
		fr = prev;
	}
	return n;
}

/* Fill names[] (innermost first) with the calling thread's Python frames; 0 when the
 * process is not CPython or the thread has no Python frames that can be read. Any Python
 * error state of a GIL holder is saved and restored around the walk. */
static int py_frames(char names[][192], int max)
{
	pthread_once(&py_once, py_resolve);
	if (!py.ok || !py.is_init())
		return 0;
	/* The GIL is ours when the check says so and the thread state in force is this
	 * thread's: PyGILState_Check answers 1 whenever its check is off (sub-interpreters),
	 * and 3.11's "current" state is the GIL holder's, whichever thread that is. */
	void *cur = py.tstate();
	if (py.gil_check() != 1 || !cur || (py.this_ts && cur != py.this_ts()))
		return py.lay ? py_frames_raw(names, max) : 0;
	void *et, *ev, *tb;
	py.fetch(&et, &ev, &tb);
	int n = 0;
	void *f = py.get_frame(), *owned = NULL; /* the first frame is borrowed */
	while (f && n < max) {
		void *code = py.frame_code(f), *fn = NULL, *nm = NULL;
		if (code) {
			const char *file = py_str(code, "co_filename", &fn);
			const char *base = strrchr(file, '/');
			snprintf(names[n++], sizeof(names[0]), "%s:%d %s [python]",
			         base ? base + 1 : file, py.frame_line(f),
			         py_str(code, "co_name", &nm));
			if (fn)
				py.decref(fn);
			if (nm)
				py.decref(nm);
			py.decref(code);
		}
		void *back = py.frame_back(f);
		if (owned)
			py.decref(owned);
		f = owned = back;
	}
	if (owned)
		py.decref(owned);
	py.restore(et, ev, tb);
	return n;
}

/* Test hook: the calling thread's Python frames as text (tests/integration/t_pyframes.py
 * calls it through ctypes.PyDLL, which keeps the GIL). */
__attribute__((visibility("default"))) int gp_cupti_pyframes(char *out, int len)
{
	char names[PY_DEPTH][192];
	int n = py_frames(names, PY_DEPTH), o = 0;
	out[0] = '\0';
	for (int i = 0; i < n && o < len; i++)
		o += snprintf(out + o, (size_t)(len - o), "%s%s", i ? " <- " : "", names[i]);
	return n;
}

/* names: for the first npy entries (Python frames), their text instead of dladdr's */
static void define_stack(uint32_t id, void *const *pcs, int n, char (*names)[192], int npy)
{
	for (int i = 0; i < n; i += 3) {
		gp_event_t s = {.type = GP_EV_STACK, .tid = id, .u16 = (uint16_t)i};
		int k = n - i < 3 ? n - i : 3;
		s.u8 = (uint8_t)k;
		s.b = (uint64_t)(uintptr_t)pcs[i];
		s.c = k > 1 ? (uint64_t)(uintptr_t)pcs[i + 1] : 0;
		s.d = k > 2 ? (uint64_t)(uintptr_t)pcs[i + 2] : 0;
		api->emit(&s);
	}
	/* symbolise now, once per new stack: allocation stacks are few and repeat */
	for (int i = 0; i < n; i++) {
		Dl_info di;
		char sym[512];
		if (i < npy) {
			snprintf(sym, sizeof(sym), "%s", names[i]);
		} else if (dladdr(pcs[i], &di) && di.dli_fname) {
			const char *lib = strrchr(di.dli_fname, '/');
			lib = lib ? lib + 1 : di.dli_fname;
			if (di.dli_sname)
				snprintf(sym, sizeof(sym), "%s+0x%lx (%s)", di.dli_sname,
				         (unsigned long)((char *)pcs[i] - (char *)di.dli_saddr),
				         lib);
			else
				snprintf(sym, sizeof(sym), "0x%lx (%s)",
				         (unsigned long)((char *)pcs[i] - (char *)di.dli_fbase),
				         lib);
		} else {
			snprintf(sym, sizeof(sym), "%p", pcs[i]);
		}
		gp_event_t f = {.type = GP_EV_FRAME,
		                .a = (uint64_t)(uintptr_t)pcs[i],
		                .b = api->intern(sym, strlen(sym))};
		api->emit(&f);
	}
}

static uint32_t capture_stack(void)
{
	char names[PY_DEPTH][192];
	void *all[PY_DEPTH + STACK_DEPTH + 3], **pcs = all + PY_DEPTH;
	int n, npy = py_frames(names, PY_DEPTH);
#ifdef HAVE_LIBUNWIND
	n = unw_backtrace(pcs, STACK_DEPTH + 3);
#else
	n = backtrace(pcs, STACK_DEPTH + 3);
#endif
	/* skip our callback and CUPTI's dispatch frames */
	int skip = n > 3 ? 3 : 0;
	n -= skip;
	pcs += skip;
	/* Python frames first (innermost first), as pseudo program counters */
	for (int i = npy - 1; i >= 0; i--) {
		uint64_t h = 0xcbf29ce484222325ull;
		for (const char *c = names[i]; *c; c++)
			h = (h ^ (uint8_t)*c) * 0x100000001b3ull;
		*--pcs = (void *)(uintptr_t)(PY_PC | (h >> 1));
	}
	n += npy;
	skip = 0;
	uint64_t h = hash_pcs(pcs + skip, n);
	uint32_t idx = (uint32_t)h & (STK_SLOTS - 1);
	for (int p = 0; p < 32; p++, idx = (idx + 1) & (STK_SLOTS - 1)) {
		uint64_t v = atomic_load_explicit(&stk_tbl[idx], memory_order_relaxed);
		if (v == h)
			return STK_ID(idx);
		if (v == 0) {
			uint64_t z = 0;
			if (atomic_compare_exchange_strong(&stk_tbl[idx], &z, h)) {
				define_stack(STK_ID(idx), pcs + skip, n, names, npy);
				return STK_ID(idx);
			}
			if (z == h)
				return STK_ID(idx);
		}
	}
	api->count_drop(GP_LOSS_STACKS, 1);
	return 0;
}

static void CUPTIAPI on_callback(void *ud, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void *data)
{
	if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
		if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
			cuptiActivityFlushAll(0);
			process_all();
		}
		return;
	}
	const CUpti_CallbackData *cb = data;
	if (cb->callbackSite != CUPTI_API_ENTER)
		return;
	gp_event_t e = {.type = GP_EV_API,
	                .ts = api->now(),
	                .b = cbid,
	                .c = CORR(cb->correlationId),
	                .tid = api->tid(),
	                .u8 = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? 1 : 2};
	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
	    (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000 ||
	     cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000)) {
		gp_event_t p = {.type = GP_EV_PROFILER,
		                .ts = e.ts,
		                .a = cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000};
		api->emit(&p);
		if (api->profiler)
			api->profiler((int)p.a);
		return;
	}
	e.d = capture_stack();
	e.u16 = GP_API_ALLOC_STACK;
	api->emit(&e);
}

static const CUpti_CallbackId rt_api[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020,
};
static const CUpti_CallbackId drv_api[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,     CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize,   CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize,
    CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync,      CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async,   CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2,
};
static const CUpti_CallbackId rt_alloc[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020,
};
static const CUpti_CallbackId drv_alloc[] = {
    CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged,
    CUPTI_DRIVER_TRACE_CBID_cuMemCreate,
    CUPTI_DRIVER_TRACE_CBID_cuMemMap,
};
#define N(a) (sizeof(a) / sizeof(a[0]))

/* Kinds and callbacks of each switchable part. OVERHEAD records CUPTI's own cost
 * (buffer flushes, instrumentation), so the report can say what tracing cost. */
static const CUpti_ActivityKind cuda_kinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,   CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,   CUPTI_ACTIVITY_KIND_OVERHEAD,
};
#define MAX_SWITCH 4096
static uint64_t switch_ts[MAX_SWITCH]; /* cuda switches: time << 1 | on, in order */
static _Atomic unsigned nswitch;
static _Atomic bool switch_full; /* more switches than the table holds: keep later records */

/* Was cuda being captured at time ts (an API record's start)? Binary search for the last
 * switch at or before ts: records arrive by the million, switches are few. */
static bool api_captured(uint64_t ts)
{
	unsigned n = atomic_load(&nswitch), lo = 0, hi = n;
	if (!n)
		return true;
	while (lo < hi) { /* first switch after ts */
		unsigned mid = (lo + hi) / 2;
		if (switch_ts[mid] >> 1 <= ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo == 0 || (lo == n && atomic_load(&switch_full)) || (switch_ts[lo - 1] & 1);
}

static void set_capture(unsigned want)
{
	unsigned on = want & ~capturing, off = capturing & ~want;
	if ((on | off) & GP_MODE_CUDA) {
		int en = !!(on & GP_MODE_CUDA);
		for (size_t i = 0; i < N(cuda_kinds); i++)
			(en ? cuptiActivityEnable : cuptiActivityDisable)(cuda_kinds[i]);
		/* Per-call API records stay enabled: re-enabled ones never arrived again
		 * (H200, CUDA 13.0, with a callback subscriber), and neither did ones first
		 * enabled mid-run: gp_cupti_start enables them once. Records of calls made
		 * while cuda is off are dropped when they are read (api_captured). */
		unsigned n = atomic_load(&nswitch);
		if (n < MAX_SWITCH) {
			switch_ts[n] = api->now() << 1 | (uint64_t)en;
			atomic_store(&nswitch, n + 1);
		} else {
			atomic_store(&switch_full, true);
		}
	}
	if ((on | off) & GP_MODE_MEM) {
		int en = !!(on & GP_MODE_MEM);
		(en ? cuptiActivityEnable : cuptiActivityDisable)(CUPTI_ACTIVITY_KIND_MEMORY2);
		for (size_t i = 0; have_sub && i < N(rt_alloc); i++)
			cuptiEnableCallback((uint32_t)en, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
			                    rt_alloc[i]);
		for (size_t i = 0; have_sub && i < N(drv_alloc); i++)
			cuptiEnableCallback((uint32_t)en, subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
			                    drv_alloc[i]);
	}
	capturing = want;
}

__attribute__((visibility("default"))) void gp_cupti_capture(unsigned modes)
{
	if (api)
		set_capture(modes & api->modes & (GP_MODE_CUDA | GP_MODE_MEM));
}

__attribute__((visibility("default"))) int gp_cupti_stream_id(void *stream, uint32_t *id)
{
	return cuptiGetStreamIdEx(NULL, (CUstream)stream, 0, id) == CUPTI_SUCCESS ? 0 : -1;
}

static void at_exit_flush(void)
{
	if (!api)
		return;
	atomic_store(&stop, 1);
	cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	process_all();
}

__attribute__((visibility("default"))) void gp_cupti_flush(void)
{
	at_exit_flush();
}

static int fail(char *why, unsigned len, const char *what, CUptiResult rc)
{
	const char *s = NULL;
	cuptiGetResultString(rc, &s);
	snprintf(why, len, "%s: %s", what, s ? s : "error");
	return -1;
}

__attribute__((visibility("default"))) int gp_cupti_start(const gp_inject_api_t *a, char *why,
                                                          unsigned whylen)
{
	CUptiResult rc;
	const char *dv = getenv("GPUPROF_CUPTI_DISCARD");
	discard = dv && !strcmp(dv, "1");
	const char *fm = getenv("GPUPROF_CUPTI_FLUSH_MS");
	if (fm && atol(fm) >= 10 && atol(fm) <= 10000)
		flush_ms = flush_mem_ms = atol(fm);
	api = a;
	uint32_t ver = 0;
	may_refuse = cuptiGetVersion(&ver) == CUPTI_SUCCESS && ver >= 27;
	if (a->callbacks) {
		rc = cuptiSubscribe(&subscriber, (CUpti_CallbackFunc)on_callback, NULL);
		if (rc != CUPTI_SUCCESS) {
			api = NULL;
			if (rc == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
				snprintf(why, whylen,
				         "CUPTI is held by another tool (nsys, ncu, "
				         "compute-sanitizer or a profiler in the program)");
			else
				fail(why, whylen, "cuptiSubscribe", rc);
			return -1;
		}
		have_sub = true;
		cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE,
		                    CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
		/* cudaProfilerStart/Stop mark steps for programs without NVTX */
		cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
		                    CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000);
		cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
		                    CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000);
	} else {
		/* no callbacks: cudaProfilerStart/Stop arrive as API activity records */
		cuptiActivityEnableRuntimeApi(CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000, 1);
		cuptiActivityEnableRuntimeApi(CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000, 1);
	}
	/* timestamps on the host clock NVTX uses, registered before any kind is enabled */
	cuptiActivityRegisterTimestampCallback(timestamp);
	rc = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
	if (rc != CUPTI_SUCCESS)
		return fail(why, whylen, "cuptiActivityRegisterCallbacks", rc);
	if (a->modes & GP_MODE_CUDA) {
		/* only the API records the report reads, not whole domains */
		for (size_t i = 0; i < N(rt_api); i++)
			cuptiActivityEnableRuntimeApi(rt_api[i], 1);
		for (size_t i = 0; i < N(drv_api); i++)
			cuptiActivityEnableDriverApi(drv_api[i], 1);
		if (!(a->capture & GP_MODE_CUDA)) { /* a window that starts later */
			switch_ts[0] = api->now() << 1;
			atomic_store(&nswitch, 1);
		}
	}
	set_capture(a->capture);
	if (pthread_create(&worker, NULL, worker_main, NULL) != 0)
		return fail(why, whylen, "pthread_create", CUPTI_ERROR_UNKNOWN);
	pthread_detach(worker);
	atexit(at_exit_flush);
	return 0;
}
