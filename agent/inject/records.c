/* CUPTI activity records as gpuprof events (event.h). Pure: no CUPTI call, no global
 * state, so tests/unit/t_cupti_records.c feeds it synthetic records of each kind.
 * Record versions are those of the CUPTI headers built against (CUDA 13: Kernel10,
 * Memcpy6, Memset4, Synchronization2, Memory4, Overhead3); CUPTI fills the version
 * matching the kind it was asked for, which cupti.c enables from the same headers. */
#include "config.h"
#include "cupti_int.h"

#include <string.h>

/* Decimal digits of v at p; returns the end. */
static char *put_uint(char *p, uint32_t v)
{
	char tmp[10];
	int n = 0;
	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	while (n)
		*p++ = tmp[--n];
	return p;
}

/* A kernel's launch configuration as the string its record names (GP_LAUNCH_FMT in
 * event.h): "grid X,Y,Z block X,Y,Z regs R smem STATIC+DYNAMIC". A string, interned like
 * the kernel names, because a program launches few distinct ones: each is written once
 * and a kernel record carries its id (tid), 1-2 bytes on disk. Formatted by hand: this runs
 * for every kernel record on CUPTI's thread. */
static size_t launch_text(const CUpti_ActivityKernel10 *k, char *out)
{
	const uint32_t v[] = {(uint32_t)k->gridX,
	                      (uint32_t)k->gridY,
	                      (uint32_t)k->gridZ,
	                      (uint32_t)k->blockX,
	                      (uint32_t)k->blockY,
	                      (uint32_t)k->blockZ,
	                      k->registersPerThread,
	                      (uint32_t)k->staticSharedMemory,
	                      (uint32_t)k->dynamicSharedMemory};
	static const char *const sep[] = {"grid ", ",",      ",",      " block ", ",",
	                                  ",",     " regs ", " smem ", "+"};
	char *p = out;
	for (int i = 0; i < 9; i++) {
		for (const char *s = sep[i]; *s; s++)
			*p++ = *s;
		p = put_uint(p, v[i]);
	}
	*p = 0;
	return (size_t)(p - out);
}

/* What every record of work on a stream carries: when, its correlation, where. */
static gp_event_t on_stream(unsigned type, uint64_t start, uint64_t end, const gp_xlate_t *x,
                            uint32_t corr, uint32_t stream, uint32_t device)
{
	return (gp_event_t){.type = (uint8_t)type,
	                    .ts = start,
	                    .a = end - start,
	                    .c = GP_CORR(GP_XGEN(x), corr),
	                    .d = stream,
	                    .u8 = (uint8_t)device};
}

bool gp_cupti_translate(const CUpti_Activity *r, const gp_xlate_t *x, gp_event_t *out)
{
	gp_event_t e = {0};
	switch (r->kind) {
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
	case CUPTI_ACTIVITY_KIND_KERNEL: {
		const CUpti_ActivityKernel10 *k = (const void *)r;
		e = on_stream(GP_EV_KERNEL, k->start, k->end, x, k->correlationId, k->streamId,
		              k->deviceId);
		e.b = x->intern(k->name, strnlen(k->name, GP_STRING_MAX));
		char launch[GP_LAUNCH_MAX];
		if (x->intern_launch)
			e.tid = x->intern_launch(launch, launch_text(k, launch));
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMCPY: {
		const CUpti_ActivityMemcpy6 *m = (const void *)r;
		e = on_stream(GP_EV_MEMCPY, m->start, m->end, x, m->correlationId, m->streamId,
		              m->deviceId);
		e.b = m->bytes;
		/* the host side's memory kind says a copy is pageable (staged, and blocking
		 * the host) or pinned: the report's pageable_copies finding */
		e.u16 = (uint16_t)((m->copyKind & 0xffu) | (m->srcKind & 0xfu) << 8 |
		                   (m->dstKind & 0xfu) << 12);
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMSET: {
		const CUpti_ActivityMemset4 *m = (const void *)r;
		e = on_stream(GP_EV_MEMSET, m->start, m->end, x, m->correlationId, m->streamId,
		              m->deviceId);
		e.b = m->bytes;
		break;
	}
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
		const CUpti_ActivitySynchronization2 *s = (const void *)r;
		e = on_stream(GP_EV_SYNC, s->start, s->end, x, s->correlationId, s->streamId, 0);
		e.b = s->type;
		break;
	}
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_DRIVER: {
		const CUpti_ActivityAPI *a = (const void *)r;
		if (r->kind == CUPTI_ACTIVITY_KIND_RUNTIME &&
		    (a->cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000 ||
		     a->cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000)) {
			if (x->profiler_by_callback)
				return false; /* the callback recorded it as it happened */
			e.type = GP_EV_PROFILER;
			e.ts = a->start;
			e.a = a->cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000;
			break;
		}
		if (x->api_listed_only &&
		    !gp_cbid_listed(r->kind == CUPTI_ACTIVITY_KIND_RUNTIME ? 1 : 2, a->cbid))
			return false;
		e.type = GP_EV_API;
		e.ts = a->start;
		e.a = a->end - a->start;
		e.b = a->cbid;
		e.c = GP_CORR(GP_XGEN(x), a->correlationId);
		e.tid = a->threadId;
		e.u8 = r->kind == CUPTI_ACTIVITY_KIND_RUNTIME ? 1 : 2;
		e.u16 = (uint16_t)(gp_cbid_class(e.u8, a->cbid) |
		                   (a->returnValue < 127 ? a->returnValue : 127) << 8);
		if (x->api_captured && !x->api_captured(a->start))
			return false;
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
		e.c = GP_CORR(GP_XGEN(x), m->correlationId);
		e.u8 = (uint8_t)m->deviceId;
		e.u16 = (uint16_t)m->memoryKind;
		e.d = m->streamId;
		break;
	}
	default:
		return false;
	}
	*out = e;
	return true;
}
