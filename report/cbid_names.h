/* Names of CUPTI's callback ids (report/cbid_names.c, generated from CUPTI's headers). */
#ifndef GP_CBID_NAMES_H
#define GP_CBID_NAMES_H

/* domain: 1 runtime (cudaLaunchKernel), 2 driver (cuLaunchKernel); NULL when unknown. */
const char *gp_cbid_name(int domain, unsigned cbid);

#endif
