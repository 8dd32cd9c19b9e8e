/* The NVTX handlers (inject_int.h): every copy of nvtx3 in the process
 * (NVTX_INJECTION64_PATH) calls InitializeInjectionNvtx2, which patches these into its
 * function tables. Each is the hot path: the relaxed `enabled` check, then one record
 * into the ring. */
#include "config.h"
#include "inject_int.h"
#include "marker.h"
#include "clock.h"
#include "modes.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get);

static inline uint64_t color_cat(const nvtxEventAttributes_t *a)
{
	return (a->colorType == NVTX_COLOR_ARGB ? (uint64_t)a->color << 32 | 1ull << 63 : 0) |
	       a->category;
}

static inline uint64_t payload(const nvtxEventAttributes_t *a)
{
	switch (a->payloadType) {
	case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64:
		return a->payload.ullValue;
	case NVTX_PAYLOAD_TYPE_INT64:
		return (uint64_t)a->payload.llValue;
	case NVTX_PAYLOAD_TYPE_DOUBLE: {
		uint64_t v;
		memcpy(&v, &a->payload.dValue, 8);
		return v;
	}
	case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32:
		return a->payload.uiValue;
	case NVTX_PAYLOAD_TYPE_INT32:
		return (uint64_t)(int64_t)a->payload.iValue;
	case NVTX_PAYLOAD_TYPE_FLOAT: {
		uint32_t v;
		memcpy(&v, &a->payload.fValue, 4);
		return v;
	}
	default:
		return 0;
	}
}

static uint32_t attr_name(const nvtxEventAttributes_t *a)
{
	if (!a)
		return 0;
	switch (a->messageType) {
	case NVTX_MESSAGE_TYPE_ASCII:
		return gp_inj_intern_cstr(a->message.ascii);
	case NVTX_MESSAGE_TYPE_UNICODE:
		return gp_inj_intern_wstr(a->message.unicode);
	case NVTX_MESSAGE_TYPE_REGISTERED:
		return (uint32_t)(uintptr_t)a->message.registered;
	default:
		return 0;
	}
}

#define MAX_DEPTH 4096 /* runaway nesting: deeper pushes are counted, not recorded */

/* A thread's lane of the ring is given back when the thread ends (a key's destructor),
 * for the next thread: a program that starts threads by the thousand uses the lanes
 * over again. */
static pthread_key_t lane_key;
static bool lane_key_ok;

static void lane_end(void *ring_id)
{
	gp_inj_thr_t *t = gp_inj_thr_get();
	if (t->lane >= 0 && t->lane_ring == (uint32_t)(uintptr_t)ring_id &&
	    t->lane_ring == gp_inj.ring.id && getpid() == gp_inj.owner)
		gp_ring_lane_release(&gp_inj.ring, (unsigned)t->lane);
	t->lane = -1;
}

/* At load, not at a thread's first push (pthread_key_create is no call for a program's
 * hot path, nor one a signal handler's NVTX range may make) */
__attribute__((constructor)) static void lane_key_make(void)
{
	lane_key_ok = pthread_key_create(&lane_key, lane_end) == 0;
}

/* The thread's first outermost push into this ring: a lane of its own, if one is free
 * (out of line: once a thread and ring). */
static __attribute__((noinline)) void lane_take(gp_inj_thr_t *t, uint32_t tid)
{
	gp_ring_t *r = &gp_inj.ring;
	/* a lane of another ring (a forked child's parent's) is not given back here: it is
	 * that ring's other process's */
	t->lane = -1;
	t->lane_ring = r->id;
	if (!r->hdr || !r->nlanes)
		return;
	if (!lane_key_ok)
		return; /* no way to give it back when the thread ends: the shared slots */
	int k = gp_ring_lane_claim(r, tid);
	if (k >= 0 && pthread_setspecific(lane_key, (void *)(uintptr_t)r->id) != 0) {
		gp_ring_lane_release(r, (unsigned)k);
		k = -1;
	}
	t->lane = k;
	t->lane_lim = 0;
}

/* The lane a push or pop at level of the default domain keeps its range in, or -1: a
 * thread's lane is taken only at an outermost push, so every level above it was pushed
 * with the lane in place, and a pop finds its push where it left it. */
static inline int lane_of(gp_inj_thr_t *t, int level, uint32_t tid, bool push)
{
	if (__builtin_expect(t->lane_ring != gp_inj.ring.id, 0)) {
		if (!push || level)
			return -1; /* a ring changed under an open range: the shared slots */
		lane_take(t, tid);
	}
	return level < GP_LANE_STACK ? t->lane : -1;
}

/* push and pop are the hottest calls of the library (a program may make millions): the
 * thread's state is reached through one TLS lookup. A push of the default domain on a
 * thread with a lane writes its start into the lane's open[] (in the ring's file: a
 * program that dies inside it still shows it open) and nothing into the ring; its pop
 * writes the range as one record into the lane, with no locked instruction. Other
 * domains, threads without a lane and ranges nested 64 deep write a push and a pop
 * record straight into their shared slots (bench/nvtx-cost.sh). */
static int push_common(uint32_t domain, uint32_t name, const nvtxEventAttributes_t *a)
{
	gp_inj_thr_t *t = gp_inj_thr_get();
	int level = t->depth[domain != 0]++;
	if (level >= MAX_DEPTH) {
		gp_inj_count_drop(GP_LOSS_DEPTH, 1);
		return level;
	}
	/* timing alone keeps only the outermost ranges: they delimit steps */
	if (!(gp_inj.modes & GP_MODE_NVTX) && level > 0)
		return level;
	uint32_t tid = gp_inj_thr_tid(t);
	uint64_t ts = gp_clock_ns(), pos;
	int k = domain ? -1 : lane_of(t, level, tid, true);
	if (k >= 0) {
		gp_ring_lane_t *l = &gp_inj.ring.lanes[k];
		l->open[level] = (gp_lane_open_t){.ts = ts,
		                                  .name = name,
		                                  .payload = a ? payload(a) : 0,
		                                  .color = a ? color_cat(a) : 0};
		/* release: the entry before the depth that says it is there */
		atomic_store_explicit(&l->depth, (uint32_t)level + 1, memory_order_release);
	} else {
		gp_ring_slot_t *s = gp_ring_claim(&gp_inj.ring, &pos);
		if (s) {
			/* its level where the default domain's ranges may be range records
			 * (other domains share one counter: the reader's stack says theirs) */
			s->ev = (gp_event_t){.type = GP_EV_NVTX_PUSH,
			                     .u16 = domain ? 0 : (uint16_t)(level + 1),
			                     .tid = tid,
			                     .ts = ts,
			                     .a = name,
			                     .b = domain,
			                     .c = a ? payload(a) : 0,
			                     .d = a ? color_cat(a) : 0};
			gp_ring_publish(&gp_inj.ring, pos);
		}
	}
	if (level == 0 && domain == 0 &&
	    atomic_load_explicit(&gp_inj.cap_live, memory_order_relaxed))
		gp_inj_step_boundary(name, ts);
	return level;
}

static int pop_common(uint32_t domain)
{
	gp_inj_thr_t *t = gp_inj_thr_get();
	if (t->depth[domain != 0] == 0)
		return -1; /* pop without push: NVTX returns a negative level */
	int level = --t->depth[domain != 0];
	if (level >= MAX_DEPTH || (!(gp_inj.modes & GP_MODE_NVTX) && level > 0))
		return level;
	uint32_t tid = gp_inj_thr_tid(t);
	uint64_t ts = gp_clock_ns(), pos;
	int k = domain ? -1 : lane_of(t, level, tid, false);
	if (k >= 0) {
		gp_ring_lane_t *l = &gp_inj.ring.lanes[k];
		const gp_lane_open_t *o = &l->open[level];
		gp_event_t *e =
		    gp_ring_lane_claim_slot(&gp_inj.ring, (unsigned)k, &t->lane_lim, &pos);
		gp_ring_slot_t *s = NULL;
		if (!e && (s = gp_ring_claim(&gp_inj.ring, &pos))) /* a full lane: shared slots */
			e = &s->ev;
		if (e) {
			*e = (gp_event_t){.type = GP_EV_NVTX_RANGE,
			                  .u16 = (uint16_t)level,
			                  .tid = tid,
			                  .ts = o->ts,
			                  .a = o->name,
			                  .b = ts - o->ts,
			                  .c = o->payload,
			                  .d = o->color};
			if (s)
				gp_ring_publish(&gp_inj.ring, pos);
			else
				gp_ring_lane_publish(&gp_inj.ring, (unsigned)k, pos);
		}
		/* open no more once the record is there: a death between the two leaves both,
		 * and the forced drain writes no open push for the lane's last record */
		atomic_store_explicit(&l->depth, (uint32_t)level, memory_order_release);
	} else {
		gp_ring_slot_t *s = gp_ring_claim(&gp_inj.ring, &pos);
		if (s) {
			s->ev =
			    (gp_event_t){.type = GP_EV_NVTX_POP, .tid = tid, .ts = ts, .b = domain};
			gp_ring_publish(&gp_inj.ring, pos);
		}
	}
	if (level == 0 && domain == 0)
		gp_marker_step_end(ts);
	return level;
}

static nvtxRangeId_t start_common(uint32_t domain, uint32_t name, const nvtxEventAttributes_t *a)
{
	uint64_t id = atomic_fetch_add_explicit(&gp_inj.next_range, 1, memory_order_relaxed) + 1;
	if (!(gp_inj.modes & GP_MODE_NVTX))
		return id;
	gp_event_t e = {.type = GP_EV_NVTX_START,
	                .tid = gp_inj_tid(),
	                .ts = gp_clock_ns(),
	                .a = name,
	                .b = domain,
	                .c = id};
	if (a)
		e.d = color_cat(a);
	gp_inj_emit(&e);
	return id;
}

static void mark_common(uint32_t domain, uint32_t name, const nvtxEventAttributes_t *a)
{
	if (!(gp_inj.modes & GP_MODE_NVTX))
		return;
	gp_event_t e = {.type = GP_EV_NVTX_MARK,
	                .tid = gp_inj_tid(),
	                .ts = gp_clock_ns(),
	                .a = name,
	                .b = domain};
	if (a) {
		e.c = payload(a);
		e.d = color_cat(a);
	}
	gp_inj_emit(&e);
}

static void NVTX_API h_MarkEx(const nvtxEventAttributes_t *a)
{
	if (gp_inj_on())
		mark_common(0, attr_name(a), a);
}
static void NVTX_API h_MarkA(const char *m)
{
	if (gp_inj_on())
		mark_common(0, gp_inj_intern_cstr(m), NULL);
}
static void NVTX_API h_MarkW(const wchar_t *m)
{
	if (gp_inj_on())
		mark_common(0, gp_inj_intern_wstr(m), NULL);
}
static nvtxRangeId_t NVTX_API h_RangeStartEx(const nvtxEventAttributes_t *a)
{
	return gp_inj_on() ? start_common(0, attr_name(a), a) : 0;
}
static nvtxRangeId_t NVTX_API h_RangeStartA(const char *m)
{
	return gp_inj_on() ? start_common(0, gp_inj_intern_cstr(m), NULL) : 0;
}
static nvtxRangeId_t NVTX_API h_RangeStartW(const wchar_t *m)
{
	return gp_inj_on() ? start_common(0, gp_inj_intern_wstr(m), NULL) : 0;
}
static void NVTX_API h_RangeEnd(nvtxRangeId_t id)
{
	if (!gp_inj_on() || !(gp_inj.modes & GP_MODE_NVTX))
		return;
	gp_event_t e = {.type = GP_EV_NVTX_END, .tid = gp_inj_tid(), .ts = gp_clock_ns(), .c = id};
	gp_inj_emit(&e);
}
static int NVTX_API h_RangePushEx(const nvtxEventAttributes_t *a)
{
	return gp_inj_on() ? push_common(0, attr_name(a), a) : 0;
}
static int NVTX_API h_RangePushA(const char *m)
{
	return gp_inj_on() ? push_common(0, gp_inj_intern_cstr(m), NULL) : 0;
}
static int NVTX_API h_RangePushW(const wchar_t *m)
{
	return gp_inj_on() ? push_common(0, gp_inj_intern_wstr(m), NULL) : 0;
}
static int NVTX_API h_RangePop(void)
{
	return gp_inj_on() ? pop_common(0) : 0;
}
static void name_thread(uint32_t tid, uint32_t name)
{
	gp_event_t e = {.type = GP_EV_THREAD_NAME, .tid = tid, .ts = gp_clock_ns(), .a = name};
	gp_inj_emit(&e);
}
static void NVTX_API h_NameCategoryA(uint32_t cat, const char *n)
{
	if (gp_inj_on()) {
		gp_event_t e = {.type = GP_EV_NVTX_MARK,
		                .u8 = 1,
		                .tid = gp_inj_tid(),
		                .ts = gp_clock_ns(),
		                .a = gp_inj_intern_cstr(n),
		                .d = cat};
		gp_inj_emit(&e); /* u8=1: a category name, not a mark */
	}
}
static void NVTX_API h_NameCategoryW(uint32_t cat, const wchar_t *n)
{
	if (gp_inj_on()) {
		gp_event_t e = {.type = GP_EV_NVTX_MARK,
		                .u8 = 1,
		                .tid = gp_inj_tid(),
		                .ts = gp_clock_ns(),
		                .a = gp_inj_intern_wstr(n),
		                .d = cat};
		gp_inj_emit(&e);
	}
}
static void NVTX_API h_NameOsThreadA(uint32_t tid, const char *n)
{
	if (gp_inj_on())
		name_thread(tid, gp_inj_intern_cstr(n));
}
static void NVTX_API h_NameOsThreadW(uint32_t tid, const wchar_t *n)
{
	if (gp_inj_on())
		name_thread(tid, gp_inj_intern_wstr(n));
}

/* CUDA / CUDA runtime resource naming (nvtxNameCuStreamA, nvtxNameCudaStreamA, ...):
 * streams keep the names users gave them. The handle is mapped to CUPTI's stream id,
 * which kernel records carry, when the CUPTI module runs. Devices, contexts and events
 * are not shown anywhere in the report and are left to the no-op. */
static void name_stream(void *stream, uint32_t name)
{
	uint32_t id = 0;
	gp_event_t e = {.type = GP_EV_STREAM_NAME,
	                .ts = gp_clock_ns(),
	                .a = (uint64_t)(uintptr_t)stream,
	                .b = name,
	                .c = (uint64_t)(uintptr_t)stream};
	if (gp_inj.cupti_stream_id && gp_inj.cupti_stream_id(stream, &id) == 0) {
		e.a = id;
		e.u8 = 1;
	}
	gp_inj_emit(&e);
}
static void NVTX_API h_NameCuStreamA(void *stream, const char *n)
{
	if (gp_inj_on() && n)
		name_stream(stream, gp_inj_intern_cstr(n));
}
static void NVTX_API h_NameCuStreamW(void *stream, const wchar_t *n)
{
	if (gp_inj_on() && n)
		name_stream(stream, gp_inj_intern_wstr(n));
}
#define h_NameCudaStreamA h_NameCuStreamA
#define h_NameCudaStreamW h_NameCuStreamW

/* Core2: domains. A domain handle is the interned id of its name (never 0). */
static uint32_t dom(nvtxDomainHandle_t d)
{
	return (uint32_t)(uintptr_t)d;
}
static void NVTX_API h_DomainMarkEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	if (gp_inj_on())
		mark_common(dom(d), attr_name(a), a);
}
static nvtxRangeId_t NVTX_API h_DomainRangeStartEx(nvtxDomainHandle_t d,
                                                   const nvtxEventAttributes_t *a)
{
	return gp_inj_on() ? start_common(dom(d), attr_name(a), a) : 0;
}
static void NVTX_API h_DomainRangeEnd(nvtxDomainHandle_t d, nvtxRangeId_t id)
{
	h_RangeEnd(id);
}
static int NVTX_API h_DomainRangePushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	return gp_inj_on() ? push_common(dom(d), attr_name(a), a) : 0;
}
static int NVTX_API h_DomainRangePop(nvtxDomainHandle_t d)
{
	return gp_inj_on() ? pop_common(dom(d)) : 0;
}
static void NVTX_API h_DomainNameCategoryA(nvtxDomainHandle_t d, uint32_t cat, const char *n)
{
	h_NameCategoryA(cat, n);
}
static void NVTX_API h_DomainNameCategoryW(nvtxDomainHandle_t d, uint32_t cat, const wchar_t *n)
{
	h_NameCategoryW(cat, n);
}
static nvtxStringHandle_t NVTX_API h_DomainRegisterStringA(nvtxDomainHandle_t d, const char *s)
{
	return (nvtxStringHandle_t)(uintptr_t)(gp_inj_on() ? gp_inj_intern_cstr(s) : 0);
}
static nvtxStringHandle_t NVTX_API h_DomainRegisterStringW(nvtxDomainHandle_t d, const wchar_t *s)
{
	return (nvtxStringHandle_t)(uintptr_t)(gp_inj_on() ? gp_inj_intern_wstr(s) : 0);
}
static nvtxDomainHandle_t NVTX_API h_DomainCreateA(const char *n)
{
	uint32_t id = gp_inj_on() ? gp_inj_intern_cstr(n) : 0;
	return (nvtxDomainHandle_t)(uintptr_t)(id ? id : 0xfffffffeu);
}
static nvtxDomainHandle_t NVTX_API h_DomainCreateW(const wchar_t *n)
{
	uint32_t id = gp_inj_on() ? gp_inj_intern_wstr(n) : 0;
	return (nvtxDomainHandle_t)(uintptr_t)(id ? id : 0xfffffffeu);
}
static void NVTX_API h_DomainDestroy(nvtxDomainHandle_t d)
{
}

typedef struct {
	unsigned id;
	NvtxFunctionPointer fn;
} slot_t;

static int patch_module(const NvtxExportTableCallbacks *cb, NvtxCallbackModule mod,
                        const slot_t *slots, size_t n)
{
	NvtxFunctionTable table = NULL;
	unsigned size = 0;
	if (!cb->GetModuleFunctionTable(mod, &table, &size) || !table)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (slots[i].id < size && table[slots[i].id])
			*table[slots[i].id] = slots[i].fn;
	return 0;
}

#define S(mod, name)                                                                               \
	{                                                                                          \
		NVTX_CBID_##mod##_##name, (NvtxFunctionPointer)h_##name                            \
	}

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get)
{
	static const slot_t core[] = {
	    S(CORE, MarkEx),        S(CORE, MarkA),         S(CORE, MarkW),
	    S(CORE, RangeStartEx),  S(CORE, RangeStartA),   S(CORE, RangeStartW),
	    S(CORE, RangeEnd),      S(CORE, RangePushEx),   S(CORE, RangePushA),
	    S(CORE, RangePushW),    S(CORE, RangePop),      S(CORE, NameCategoryA),
	    S(CORE, NameCategoryW), S(CORE, NameOsThreadA), S(CORE, NameOsThreadW),
	};
	static const slot_t core2[] = {
	    S(CORE2, DomainMarkEx),          S(CORE2, DomainRangeStartEx),
	    S(CORE2, DomainRangeEnd),        S(CORE2, DomainRangePushEx),
	    S(CORE2, DomainRangePop),        S(CORE2, DomainNameCategoryA),
	    S(CORE2, DomainNameCategoryW),   S(CORE2, DomainRegisterStringA),
	    S(CORE2, DomainRegisterStringW), S(CORE2, DomainCreateA),
	    S(CORE2, DomainCreateW),         S(CORE2, DomainDestroy),
	};
	static const slot_t cuda[] = {S(CUDA, NameCuStreamA), S(CUDA, NameCuStreamW)};
	static const slot_t cudart[] = {S(CUDART, NameCudaStreamA), S(CUDART, NameCudaStreamW)};
	const NvtxExportTableCallbacks *cb;
	gp_inj_init(false);
	if (!gp_inj_on() || !get)
		return 0; /* 0: NVTX stays a no-op in this library */
	cb = get(NVTX_ETID_CALLBACKS);
	if (!cb || cb->struct_size < sizeof(*cb))
		return 0;
	if (patch_module(cb, NVTX_CB_MODULE_CORE, core, sizeof(core) / sizeof(core[0])) < 0)
		return 0;
	patch_module(cb, NVTX_CB_MODULE_CORE2, core2, sizeof(core2) / sizeof(core2[0]));
	patch_module(cb, NVTX_CB_MODULE_CUDA, cuda, sizeof(cuda) / sizeof(cuda[0]));
	patch_module(cb, NVTX_CB_MODULE_CUDART, cudart, sizeof(cudart) / sizeof(cudart[0]));
	return 1;
}
