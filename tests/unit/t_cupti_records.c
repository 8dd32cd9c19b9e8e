/* The CUPTI module's translation of activity records into events (records.c) and its
 * table of callback ids (cbids.c), fed synthetic records laid out by CUPTI's own headers:
 * no GPU and no libcupti needed. */
#include "config.h"
#include "cupti_int.h"
#include "tap.h"

#include <stdlib.h>

static char interned[8][256];
static unsigned ninterned;

static uint32_t intern(const char *s, size_t len)
{
	if (ninterned < 8)
		snprintf(interned[ninterned], sizeof(interned[0]), "%.*s", (int)len, s);
	return 100 + ninterned++;
}

static uint64_t window_start = 5000; /* cuda capture on from here */

static bool captured(uint64_t ts)
{
	return ts >= window_start;
}

int main(void)
{
	gp_xlate_t x = {
	    .gen = 3, .intern = intern, .intern_launch = intern, .api_captured = captured};
	gp_event_t e;

	/* a kernel: times, name, correlation with the generation above CUPTI's id, stream */
	CUpti_ActivityKernel10 k = {0};
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k.start = 10000;
	k.end = 12500;
	k.name = "gemm_kernel";
	k.correlationId = 0xfffffff0u;
	k.streamId = 7;
	k.deviceId = 2;
	ok(gp_cupti_translate((CUpti_Activity *)&k, &x, &e), "kernel record translated");
	ok(e.type == GP_EV_KERNEL && e.ts == 10000 && e.a == 2500, "kernel: start and duration");
	ok(e.b == 100 && !strcmp(interned[0], "gemm_kernel"), "kernel: name interned (%s)",
	   interned[0]);
	ok(e.c == (3ull << 32 | 0xfffffff0u), "kernel: correlation 0x%llx carries generation 3",
	   (unsigned long long)e.c);
	ok(e.d == 7 && e.u8 == 2, "kernel: stream %llu device %u", (unsigned long long)e.d, e.u8);
	/* its launch configuration: CUPTI's grid, block, registers, shared memory, as a
	 * string the kernel record names (tid), GP_LAUNCH_FMT read back by the exports */
	ok(e.tid == 101 && !strcmp(interned[1], "grid 0,0,0 block 0,0,0 regs 0 smem 0+0"),
	   "kernel: an unset launch configuration reads zeros (%s)", interned[1]);
	k.gridX = 2147483647, k.gridY = 65535, k.gridZ = 3;
	k.blockX = 1024, k.blockY = 1, k.blockZ = 64;
	k.registersPerThread = 255, k.staticSharedMemory = 49152, k.dynamicSharedMemory = 167936;
	ok(gp_cupti_translate((CUpti_Activity *)&k, &x, &e) && e.tid == 103 &&
	       !strcmp(interned[3],
	               "grid 2147483647,65535,3 block 1024,1,64 regs 255 smem 49152+167936"),
	   "kernel: launch configuration interned (%s)", interned[3]);
	unsigned v[9];
	ok(sscanf(interned[3], GP_LAUNCH_FMT, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
	          &v[7], &v[8]) == 9 &&
	       v[0] == 2147483647u && v[2] == 3 && v[3] == 1024 && v[5] == 64 && v[6] == 255 &&
	       v[7] + v[8] == 217088,
	   "kernel: GP_LAUNCH_FMT reads it back");
	ok(strlen(interned[3]) < GP_LAUNCH_MAX, "kernel: the longest configuration fits");
	k.kind = CUPTI_ACTIVITY_KIND_KERNEL; /* the serial kind reads the same */
	ok(gp_cupti_translate((CUpti_Activity *)&k, &x, &e) && e.type == GP_EV_KERNEL,
	   "serial kernel kind too");

	CUpti_ActivityMemcpy6 m = {0};
	m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
	m.start = 20000;
	m.end = 20400;
	m.bytes = 1 << 20;
	m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
	m.correlationId = 9;
	m.streamId = 1;
	m.deviceId = 0;
	ok(gp_cupti_translate((CUpti_Activity *)&m, &x, &e) && e.type == GP_EV_MEMCPY &&
	       e.a == 400 && e.b == 1 << 20 && e.u16 == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH &&
	       e.c == (3ull << 32 | 9),
	   "memcpy: duration, bytes, copy kind, correlation");
	m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
	ok(gp_cupti_translate((CUpti_Activity *)&m, &x, &e) &&
	       (e.u16 & 0xff) == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH &&
	       (e.u16 >> 8 & 0xf) == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE &&
	       e.u16 >> 12 == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
	   "memcpy: the source and destination memory kinds beside the copy kind (a pageable "
	   "destination)");

	CUpti_ActivityMemset4 ms = {0};
	ms.kind = CUPTI_ACTIVITY_KIND_MEMSET;
	ms.start = 30000;
	ms.end = 30010;
	ms.bytes = 4096;
	ms.streamId = 4;
	ok(gp_cupti_translate((CUpti_Activity *)&ms, &x, &e) && e.type == GP_EV_MEMSET &&
	       e.a == 10 && e.b == 4096 && e.d == 4,
	   "memset: duration, bytes, stream");

	CUpti_ActivitySynchronization2 sy = {0};
	sy.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
	sy.start = 40000;
	sy.end = 41000;
	sy.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
	sy.correlationId = 11;
	sy.streamId = 5;
	ok(gp_cupti_translate((CUpti_Activity *)&sy, &x, &e) && e.type == GP_EV_SYNC &&
	       e.a == 1000 && e.b == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE &&
	       e.d == 5,
	   "synchronisation: duration, type, stream");

	/* API records: class from the table, return value above it, runtime/driver */
	CUpti_ActivityAPI a = {0};
	a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
	a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
	a.start = 6000;
	a.end = 6005;
	a.correlationId = 12;
	a.threadId = 4242;
	a.returnValue = 0;
	ok(gp_cupti_translate((CUpti_Activity *)&a, &x, &e) && e.type == GP_EV_API && e.u8 == 1 &&
	       (e.u16 & 0xff) == GP_API_LAUNCH && e.u16 >> 8 == 0 &&
	       e.b == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 && e.tid == 4242 &&
	       e.a == 5 && e.c == (3ull << 32 | 12),
	   "runtime launch: class launch, thread, correlation");
	a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020;
	a.returnValue = 700; /* an error past 127 is kept as 127 */
	ok(gp_cupti_translate((CUpti_Activity *)&a, &x, &e) && (e.u16 & 0xff) == GP_API_SYNC &&
	       e.u16 >> 8 == 127,
	   "runtime stream sync: class sync, return value capped at 127");
	a.kind = CUPTI_ACTIVITY_KIND_DRIVER;
	a.cbid = CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2;
	a.returnValue = 2;
	ok(gp_cupti_translate((CUpti_Activity *)&a, &x, &e) && e.u8 == 2 &&
	       (e.u16 & 0xff) == GP_API_BLOCKING_COPY && e.u16 >> 8 == 2,
	   "driver copy to host: class blocking copy, return value 2");
	a.cbid = CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2;
	ok(gp_cupti_translate((CUpti_Activity *)&a, &x, &e) && (e.u16 & 0xff) == GP_API_ALLOC,
	   "driver allocation: class alloc");
	a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
	a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020; /* not in the table */
	ok(gp_cupti_translate((CUpti_Activity *)&a, &x, &e) && (e.u16 & 0xff) == GP_API_OTHER,
	   "a call not in the table: class other");
	a.start = 4999; /* before the capture window opened */
	ok(!gp_cupti_translate((CUpti_Activity *)&a, &x, &e),
	   "an API record of a call made while cuda capture was off gives no event");
	gp_xlate_t all = x;
	all.api_captured = NULL;
	ok(gp_cupti_translate((CUpti_Activity *)&a, &all, &e), "...unless every call is captured");

	/* cudaProfilerStart/Stop: a capture boundary, unless the callback recorded it */
	a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000;
	a.start = 7000;
	ok(gp_cupti_translate((CUpti_Activity *)&a, &x, &e) && e.type == GP_EV_PROFILER &&
	       e.a == 1 && e.ts == 7000,
	   "cudaProfilerStart as an activity record: profiler start");
	a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000;
	ok(gp_cupti_translate((CUpti_Activity *)&a, &x, &e) && e.type == GP_EV_PROFILER && e.a == 0,
	   "cudaProfilerStop: profiler stop");
	x.profiler_by_callback = true;
	ok(!gp_cupti_translate((CUpti_Activity *)&a, &x, &e),
	   "not twice when the callback recorded it as it happened");

	CUpti_ActivityMemory4 mem = {0};
	mem.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
	mem.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
	mem.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	mem.timestamp = 50000;
	mem.address = 0x7f0000000000ull;
	mem.bytes = 2u << 20;
	mem.deviceId = 1;
	mem.streamId = 3;
	mem.correlationId = 13;
	ok(gp_cupti_translate((CUpti_Activity *)&mem, &x, &e) && e.type == GP_EV_ALLOC &&
	       e.ts == 50000 && e.a == 0x7f0000000000ull && e.b == 2u << 20 && e.u8 == 1 &&
	       e.u16 == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE && e.d == 3,
	   "memory allocation: address, bytes, device, kind, stream");
	mem.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
	ok(gp_cupti_translate((CUpti_Activity *)&mem, &x, &e) && e.type == GP_EV_FREE &&
	       e.a == 0x7f0000000000ull,
	   "memory release: a free of the same address");

	CUpti_ActivityOverhead3 ov = {0};
	ov.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
	ov.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
	ov.start = 60000;
	ov.end = 60300;
	ok(gp_cupti_translate((CUpti_Activity *)&ov, &x, &e) && e.type == GP_EV_OVERHEAD &&
	       e.a == 300 && e.b == CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH,
	   "CUPTI's own overhead: duration and kind");

	CUpti_Activity other = {.kind = CUPTI_ACTIVITY_KIND_MARKER};
	ok(!gp_cupti_translate(&other, &x, &e), "a kind not read gives no event");

	/* the table: no call twice, every traced or stacked entry in one domain, every
	 * allocation that is traced also stacked (an allocation record without a stack is
	 * what the memory view cannot explain) */
	int dup = 0, bad = 0, nostack = 0, ntraced = 0, nstack = 0;
	for (unsigned i = 0; i < gp_ncbids; i++) {
		const gp_cbid_t *c = &gp_cbids[i];
		for (unsigned j = i + 1; j < gp_ncbids; j++)
			dup += c->domain == gp_cbids[j].domain && c->cbid == gp_cbids[j].cbid;
		bad += (c->domain != GP_CB_RUNTIME && c->domain != GP_CB_DRIVER) || !c->flags ||
		       c->cls == GP_API_ALLOC_STACK || c->cls > GP_API_ALLOC ||
		       gp_cbid_class(c->domain, c->cbid) != c->cls;
		nostack += c->cls == GP_API_ALLOC && (c->flags & GP_CB_TRACED) &&
		           !(c->flags & GP_CB_STACK);
		ntraced += !!(c->flags & GP_CB_TRACED);
		nstack += !!(c->flags & GP_CB_STACK);
	}
	ok(!dup && !bad,
	   "callback table: %u entries, none twice, each well formed and found by its class lookup",
	   gp_ncbids);
	ok(!nostack, "every traced allocation call also takes a call stack");
	ok(ntraced >= 20 && nstack >= 10, "%d traced, %d with stacks", ntraced, nstack);
	return done_testing();
}
