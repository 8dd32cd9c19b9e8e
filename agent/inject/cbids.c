/* The CUDA API calls gpuprof reads, in one table: what each means for the report
 * (GP_API_* class), whether every call is traced as an API activity record (mode cuda:
 * launches for the launch-to-kernel flow, synchronisations for the stall analysis,
 * copies and allocations), and whether a callback at its entry takes the allocation's
 * call stack (mode mem). cupti.c enables from it; records.c classifies with it. */
#include "config.h"
#include "cupti_int.h"

#include <pthread.h>

#define RT(n)  .domain = GP_CB_RUNTIME, .cbid = CUPTI_RUNTIME_TRACE_CBID_##n
#define DRV(n) .domain = GP_CB_DRIVER, .cbid = CUPTI_DRIVER_TRACE_CBID_##n
#define T      GP_CB_TRACED
#define S      GP_CB_STACK

const gp_cbid_t gp_cbids[] = {
    /* runtime */
    {RT(cudaLaunchKernel_v7000), .cls = GP_API_LAUNCH, .flags = T},
    {RT(cudaLaunchKernel_ptsz_v7000), .cls = GP_API_LAUNCH, .flags = T},
    {RT(cudaLaunchKernelExC_v11060), .cls = GP_API_LAUNCH, .flags = T},
    {RT(cudaGraphLaunch_v10000), .cls = GP_API_LAUNCH, .flags = T},
    {RT(cudaGraphLaunch_ptsz_v10000), .cls = GP_API_LAUNCH, .flags = T},
    {RT(cudaLaunchCooperativeKernel_v9000), .cls = GP_API_LAUNCH, .flags = T},
    {RT(cudaDeviceSynchronize_v3020), .cls = GP_API_SYNC, .flags = T},
    {RT(cudaStreamSynchronize_v3020), .cls = GP_API_SYNC, .flags = T},
    {RT(cudaEventSynchronize_v3020), .cls = GP_API_SYNC, .flags = T},
    {RT(cudaMemcpy_v3020), .cls = GP_API_BLOCKING_COPY, .flags = T},
    {RT(cudaMemcpyAsync_v3020), .cls = GP_API_OTHER, .flags = T},
    {RT(cudaMemset_v3020), .cls = GP_API_OTHER, .flags = T},
    {RT(cudaMemsetAsync_v3020), .cls = GP_API_OTHER, .flags = T},
    {RT(cudaMalloc_v3020), .cls = GP_API_ALLOC, .flags = T | S},
    {RT(cudaFree_v3020), .cls = GP_API_OTHER, .flags = T},
    {RT(cudaMallocAsync_v11020), .cls = GP_API_ALLOC, .flags = T | S},
    {RT(cudaFreeAsync_v11020), .cls = GP_API_OTHER, .flags = T},
    {RT(cudaMallocFromPoolAsync_v11020), .cls = GP_API_OTHER, .flags = S},
    {RT(cudaMallocManaged_v6000), .cls = GP_API_ALLOC, .flags = S},
    {RT(cudaMallocHost_v3020), .cls = GP_API_OTHER, .flags = S},
    {RT(cudaHostAlloc_v3020), .cls = GP_API_OTHER, .flags = S},
    /* driver */
    {DRV(cuLaunchKernel), .cls = GP_API_LAUNCH, .flags = T},
    {DRV(cuLaunchKernelEx), .cls = GP_API_LAUNCH, .flags = T},
    {DRV(cuLaunchKernel_ptsz), .cls = GP_API_LAUNCH, .flags = T},
    {DRV(cuLaunchKernelEx_ptsz), .cls = GP_API_LAUNCH, .flags = T},
    {DRV(cuLaunchCooperativeKernel), .cls = GP_API_LAUNCH, .flags = T},
    /* XLA (JAX) launches a jitted step as one CUDA graph through the driver */
    {DRV(cuGraphLaunch), .cls = GP_API_LAUNCH, .flags = T},
    {DRV(cuGraphLaunch_ptsz), .cls = GP_API_LAUNCH, .flags = T},
    {DRV(cuCtxSynchronize), .cls = GP_API_SYNC, .flags = T},
    {DRV(cuStreamSynchronize), .cls = GP_API_SYNC, .flags = T},
    {DRV(cuEventSynchronize), .cls = GP_API_SYNC, .flags = T},
    {DRV(cuMemcpyDtoH_v2), .cls = GP_API_BLOCKING_COPY, .flags = T},
    {DRV(cuMemcpyAsync), .cls = GP_API_OTHER, .flags = T},
    {DRV(cuMemsetD8Async), .cls = GP_API_OTHER, .flags = T},
    {DRV(cuMemsetD32Async), .cls = GP_API_OTHER, .flags = T},
    {DRV(cuMemAlloc_v2), .cls = GP_API_ALLOC, .flags = T | S},
    {DRV(cuMemFree_v2), .cls = GP_API_OTHER, .flags = T},
    {DRV(cuMemAllocAsync), .cls = GP_API_ALLOC, .flags = S},
    {DRV(cuMemAllocFromPoolAsync), .cls = GP_API_OTHER, .flags = S},
    {DRV(cuMemAllocManaged), .cls = GP_API_ALLOC, .flags = S},
    {DRV(cuMemCreate), .cls = GP_API_ALLOC, .flags = S},
    {DRV(cuMemMap), .cls = GP_API_OTHER, .flags = S},
};

const unsigned gp_ncbids = sizeof(gp_cbids) / sizeof(gp_cbids[0]);

/* Read once per API record by the processing thread (a million a second on a busy
 * GPU): a table by callback id, built from the list once. */
#define LUT 2048
static uint8_t lut[2][LUT]; /* class + 1; 0: not in the list */
static pthread_once_t lut_once = PTHREAD_ONCE_INIT;

static void build_lut(void)
{
	for (unsigned i = 0; i < gp_ncbids; i++)
		if (gp_cbids[i].cbid < LUT)
			lut[gp_cbids[i].domain - 1][gp_cbids[i].cbid] =
			    (uint8_t)(gp_cbids[i].cls + 1);
}

bool gp_cbid_listed(unsigned domain, uint32_t cbid)
{
	if ((domain == GP_CB_RUNTIME || domain == GP_CB_DRIVER) && cbid < LUT) {
		pthread_once(&lut_once, build_lut);
		return lut[domain - 1][cbid] != 0;
	}
	for (unsigned i = 0; i < gp_ncbids; i++)
		if (gp_cbids[i].cbid == cbid && gp_cbids[i].domain == domain)
			return true;
	return false;
}

uint16_t gp_cbid_class(unsigned domain, uint32_t cbid)
{
	if ((domain == GP_CB_RUNTIME || domain == GP_CB_DRIVER) && cbid < LUT) {
		pthread_once(&lut_once, build_lut);
		uint8_t v = lut[domain - 1][cbid];
		return v ? (uint16_t)(v - 1) : GP_API_OTHER;
	}
	for (unsigned i = 0; i < gp_ncbids; i++) /* ids past the table, should CUPTI grow */
		if (gp_cbids[i].cbid == cbid && gp_cbids[i].domain == domain)
			return gp_cbids[i].cls;
	return GP_API_OTHER;
}
