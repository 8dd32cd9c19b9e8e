/* NVML sampling, loaded at run time with dlopen (no nvml.h on build hosts). */
#ifndef GP_NVML_H
#define GP_NVML_H

#include <stdbool.h>
#include "rankfile.h"

typedef struct gp_nvml gp_nvml_t;

/* Open NVML and pick the task's GPUs from CUDA_VISIBLE_DEVICES (indices or UUIDs).
 * NULL when NVML or GPUs are absent; why says which. */
gp_nvml_t *gp_nvml_open(const char **why);
/* "GPU-uuid,GPU-uuid" of the task's devices. */
const char *gp_nvml_uuids(gp_nvml_t *n);
/* Append one GP_EV_GPU record per device (uuid and name strings are interned through
 * the string ids starting at *next_id). */
void gp_nvml_describe(gp_nvml_t *n, gp_rf_writer_t *w, uint32_t *next_id);
/* What this NVML cannot sample on these GPUs ("" when everything): PCIe or NVLink
 * counters, ECC totals, Xid events (events need a driver that supports them for the
 * caller; containers and VMs often refuse). */
const char *gp_nvml_limits(gp_nvml_t *n, char *buf, size_t len);
/* Append one GP_EV_NVML sample per device, a GP_EV_NVML_IO record with the PCIe/NVLink
 * byte counters where supported, and GP_EV_GPU_FAULT records for new Xid events and
 * ECC errors (those once a second, and at the final sample). */
void gp_nvml_sample(gp_nvml_t *n, gp_rf_writer_t *w, bool final);
void gp_nvml_close(gp_nvml_t *n);

#endif
