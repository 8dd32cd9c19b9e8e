/* The parts of libgpuprof-cupti.so and what they share (nothing here leaves the module:
 * cupti.map exports only the gp_cupti_* entry points).
 *   cupti_api.c gp_cu_api, the injected library's services every part calls (alone:
 *               it depends on none)
 *   cupti.c     CUPTI's activity buffers, the processing thread, the callback subscriber,
 *               switching capture on and off, start and the final flush
 *   cbids.c     the one table of CUDA API callback ids: what each means for the report,
 *               which are traced as API records, which get an allocation call stack
 *   records.c   CUPTI activity records turned into events (no CUPTI call: unit-tested
 *               with synthetic records, tests/unit/t_cupti_records.c)
 *   stacks.c    allocation call stacks: native (libunwind) under Python's frames
 *   sites.c     kernel launch call sites in the first capture windows (stacks.c's, in a
 *               table of their own)
 *   pyframes.c  the calling thread's CPython frames, with or without the GIL */
#ifndef GP_CUPTI_INT_H
#define GP_CUPTI_INT_H

#include <cupti.h>
#include <stdbool.h>
#include <stdint.h>

#include "event.h"
#include "inject.h"

/* The injected library's services (set by gp_cupti_start before any callback). */
extern const gp_inject_api_t *gp_cu_api;

/* ---- cbids.c ---- */
enum {
	GP_CB_RUNTIME = 1, /* the domains as GP_EV_API's u8 writes them */
	GP_CB_DRIVER = 2,
};
enum {
	GP_CB_TRACED = 1, /* an API activity record for every call (mode cuda) */
	GP_CB_STACK = 2,  /* a callback at entry, with the allocation's call stack (mode mem) */
};
typedef struct gp_cbid {
	uint8_t domain; /* GP_CB_RUNTIME or GP_CB_DRIVER */
	uint8_t flags;  /* GP_CB_* */
	uint16_t cls;   /* GP_API_* */
	uint32_t cbid;  /* CUPTI_RUNTIME_TRACE_CBID_* or CUPTI_DRIVER_TRACE_CBID_* */
} gp_cbid_t;
extern const gp_cbid_t gp_cbids[];
extern const unsigned gp_ncbids;
/* What a call means for the report (GP_API_*; GP_API_OTHER for calls not in the table),
 * decided here where the symbolic ids are known, so the report never hard-codes CUPTI
 * numbers. */
uint16_t gp_cbid_class(unsigned domain, uint32_t cbid);
/* Is the call in the table (a record of it is read)? */
bool gp_cbid_listed(unsigned domain, uint32_t cbid);

/* ---- records.c ---- */
/* Correlation ids: CUPTI counts from 1 in every process; the generation above them keeps
 * two programs run one after the other under one agent apart in the report's
 * launch-to-kernel matching. */
#define GP_CORR(gen, id) ((uint64_t)(gen) << 32 | (uint32_t)(id))
#define GP_XGEN(x)       __atomic_load_n(&(x)->gen, __ATOMIC_RELAXED)
typedef struct gp_xlate {
	/* gp_inject_api_t.gen, and above bit 16 the attach epoch (cupti.c: the ids may
	 * start again after CUPTI is detached and attached again); written only once every
	 * record of the previous epoch is processed (read and written with __atomic) */
	uint32_t gen;
	uint32_t (*intern)(const char *s, size_t len); /* kernel names */
	/* launch configurations: as intern, but 0 past a bound (cupti.c); NULL: none */
	uint32_t (*intern_launch)(const char *s, size_t len);
	bool (*api_captured)(uint64_t ts); /* NULL: every API record */
	bool profiler_by_callback;         /* cudaProfilerStart/Stop came through the callback */
	bool api_listed_only; /* whole API kinds enabled: drop calls not in the table */
} gp_xlate_t;
/* One activity record as an event; false for a record that gives none (a kind not
 * read, an API call made while cuda capture was off). */
bool gp_cupti_translate(const CUpti_Activity *r, const gp_xlate_t *x, gp_event_t *e);

/* ---- stacks.c ---- */
/* The calling thread's allocation stack as an id (its frames emitted once, the first
 * time); 0 when the table of stacks is full (counted, GP_LOSS_STACKS). */
uint32_t gp_stack_capture(void);
/* The same for a kernel launch's call site, in a table of its own (sites.c). */
uint32_t gp_site_stack_capture(void);

/* ---- sites.c ---- */
/* At start: call stacks for the first n launches of each of the first windows (0: none). */
void gp_sites_init(unsigned n);
/* Kernels switched on or off (cupti_lock held): the launch callbacks with them, in the
 * first windows only. */
void gp_sites_switch(CUpti_SubscriberHandle sub, bool have_sub, bool cuda_on);
/* The window's cap reached with the launch callbacks still on (the worker switches them
 * off: each still costs the launch a callback). */
bool gp_sites_spent(void);
/* Sites may still be taken (a window of theirs is on, or one is to come): CUPTI's
 * callback subscriber is needed for them (cupti_lock held). */
bool gp_sites_pending(void);
/* Is this callback a launch whose site is wanted now? */
bool gp_sites_wanted(CUpti_CallbackDomain domain, CUpti_CallbackId cbid);
/* The launch callback (entry and exit); corr: the launch's correlation as records carry it. */
void gp_sites_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                       const CUpti_CallbackData *cb, uint64_t corr);

/* ---- pyframes.c ---- */
#define GP_PY_DEPTH 16
#define GP_PY_NAME  192
/* The calling thread's Python frames, innermost first, as "file.py:LINE function
 * [python]"; 0 when the process is not CPython or nothing can be read safely. */
int gp_py_frames(char names[][GP_PY_NAME], int max);

#endif
