/* libgpuprof-inject: the only gpuprof code inside the user's process. Loaded by the CUDA
 * driver (CUDA_INJECTION64_PATH -> InitializeInjection, in cuInit), by every copy of nvtx3
 * (NVTX_INJECTION64_PATH -> InitializeInjectionNvtx2) and by the PyTorch integration
 * (gpuprof_fw_*). It writes events straight into the agent's shared ring: one CAS per
 * record (an NVTX range of the default domain: one record at its pop into the thread's
 * own lane, with no locked instruction), no lock, no allocation on the hot path, and
 * what is published survives the process's death. It never exits, aborts or blocks the
 * application.
 *
 * Its parts and what they share (nothing here leaves the library:
 * inject.map exports only the injection entry points and the framework integration's
 * calls, and everything declared here is hidden, so calls between the parts are direct
 * and the state is reached without the GOT).
 *   state.c    the library's state (gp_inj and the thread-local state), alone: every
 *              part reads it, and it depends on none
 *   startup.c  attaching to the agent's ring (the task's,
 *              a launcher's rank's or one of the process's own) or, without an agent, a
 *              ring and rank file of its own drained by a thread; forks; the process's end
 *   intern.c   string interning: content hash -> id, lock-free open addressing, each
 *              string's definition emitted once
 *   nvtx.c     the NVTX handlers patched into every nvtx3 copy (InitializeInjectionNvtx2):
 *              ranges, marks, categories, thread and stream names, domains
 *   capture.c  capture windows: cuda (and mem) switched at step boundaries, by time, at
 *              cudaProfilerStart/Stop, or on demand through the ring header
 *   cuda.c     the CUDA injection (InitializeInjection, from cuInit): libcupti and the
 *              CUPTI module (libgpuprof-cupti.so, cupti_int.h) for cuda and mem, the step
 *              markers (marker.c) otherwise
 *   fw.c       the framework integration's calls (agent/python/_gpuprof_abi.py, by ctypes)
 *   marker.c   step completion markers (marker.h)
 * The hot paths (NVTX push/pop, every ring write) use the static inline helpers below:
 * a relaxed `enabled` check first, one CAS into the ring (or a plain store into the
 * thread's lane), no lock, no allocation. */
#ifndef GP_INJECT_INT_H
#define GP_INJECT_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <wchar.h>

#include "event.h"
#include "inject.h"
#include "modes.h"
#include "rankfile.h"
#include "ring.h"
#include "strhash.h"

#pragma GCC visibility push(hidden)

/* ---- the state (state.c defines it; each part owns the fields it writes) ---- */
typedef struct gp_inj_state {
	_Atomic int enabled; /* relaxed check first on every hot path */
	unsigned modes;
	pid_t owner; /* events from forked children are not ours */
	gp_ring_t ring;
	bool own_ring; /* fallback: no agent, we drain ourselves */
	gp_rf_writer_t *w;
	pthread_t drainer;
	_Atomic int stop;
	char spool[4096], dest[4200];
	_Atomic uint64_t next_range; /* NVTX start/end and the framework's layer ranges */
	uint32_t gen; /* this process's generation on the ring (string and stack ids) */
	/* cuda.c: the CUPTI module */
	void *cupti_mod;
	gp_cupti_flush_fn cupti_flush;
	gp_cupti_hand_over_fn cupti_hand_over;
	gp_cupti_quiesce_fn cupti_quiesce;
	gp_cupti_capture_fn cupti_capture;
	gp_cupti_stream_id_fn cupti_stream_id;
	/* capture.c: cuda (and mem) switched at step boundaries */
	gp_capture_t cap;           /* GPUPROF_CAPTURE */
	_Atomic int cap_live;       /* the CUPTI module is running: boundaries matter */
	_Atomic unsigned cap_cur;   /* cuda/mem bits capturing now */
	_Atomic int cap_busy;       /* one thread switches at a time; the others go on */
	_Atomic int cap_prof;       /* between cudaProfilerStart and Stop */
	_Atomic int fw_profiler;    /* the framework's own profiler runs (GP_FW_PROFILER) */
	_Atomic int fw_busy;        /* the integration works on the allocator (gpuprof_fw_busy) */
	_Atomic uint32_t step_name; /* interned name of the step range; 0: not known yet */
	_Atomic uint64_t step_idx;  /* steps begun so far */
	_Atomic uint64_t seen0[8];  /* first outermost names (id << 8 | 1, never 0), to learn it */
	bool forked; /* a fork of a process that had this library: silent until its cuInit */
	_Atomic int steps_seen;   /* a step boundary was seen (no windows by time then) */
	_Atomic uint64_t opt_idx; /* optimizer steps returned so far */
	uint64_t cap_t0;          /* when the CUPTI module started (windows by time) */
} gp_inj_state_t;
extern gp_inj_state_t gp_inj;

/* Thread-local state, reached as a static of one file would be: the library is dlopen'd
 * (no initial-exec), and the module's own TLS block needs no per-variable lookup. */
#define GP_INJ_TLS __attribute__((tls_model("local-dynamic")))
/* The library's state of one thread.
 *   tid: CUPTI's API records name threads by (uint32_t)pthread_self(): the same id, so
 *   launch calls fall inside the NVTX ranges of their thread (0: not read yet);
 *   depth: push/pop nesting, the default domain apart from the others: NVTX keeps a stack
 *   per domain, and a library's unbalanced ranges in its own domain (NCCL leaves some
 *   open) must not push the program's step ranges off the outermost level. */
typedef struct gp_inj_thr {
	uint32_t tid;
	int depth[2];
	/* lane: the thread's lane of the ring (common/ring.h; -1: none, the shared slots),
	 * taken at an outermost push of the default domain for the ring numbered lane_ring
	 * (another ring, a forked child's: taken again); lane_lim: gp_ring_lane_push's */
	int lane;
	uint32_t lane_ring;
	uint64_t lane_lim;
} gp_inj_thr_t;

/* Where a thread's state lives (state.c). In a dlopen'd library every TLS access is a call
 * to __tls_get_addr, which was about 2 ns of an NVTX push+pop of 31 (perf, CPU machine).
 * So on x86-64 a thread's state is a slot of a small table that its thread pointer (%fs:0,
 * one load) hashes to. The hot path compares the slot's owner with the thread pointer and
 * the kernel thread id it recorded with the one in glibc's control block of the thread
 * (%fs:0x2d0, struct pthread's tid: glibc reuses an ended thread's stack, so its thread
 * pointer, for a new thread, which has a new id). A thread whose slot another holds, and
 * every thread elsewhere, keeps its state in TLS, found through gp_inj_thr_slow. A slot
 * is taken at the thread's first call (signals blocked) and given back by a key's
 * destructor when the thread ends; one its thread left without that (an exit that skips
 * the destructors, a first call in the last destructor round) is taken again by the next
 * thread on the same stack. A forked child frees its parent's other threads' slots
 * (gp_inj_thr_fork_child). */
#define GP_INJ_TSLOT_BITS 8
typedef struct gp_inj_tslot {
	_Atomic uintptr_t tp; /* the owner's thread pointer; 0: free; 1: being taken */
	_Atomic int32_t tid;  /* the owner's kernel thread id */
	gp_inj_thr_t thr;
} __attribute__((aligned(64))) gp_inj_tslot_t;
extern gp_inj_tslot_t gp_inj_tslots[1u << GP_INJ_TSLOT_BITS];
gp_inj_thr_t *gp_inj_thr_slow(void);
void gp_inj_thr_fork_child(void);
#if defined(__x86_64__)
static inline uintptr_t gp_inj_tp(void)
{
	uintptr_t tp;
	__asm__("mov %%fs:0, %0" : "=r"(tp)); /* the TCB's pointer to itself */
	return tp;
}
/* glibc's struct pthread keeps the thread's kernel id here on x86-64 (checked against
 * gettid() before a slot is taken: where it is not, no thread takes one) */
static inline int32_t gp_inj_tcb_tid(void)
{
	int32_t tid;
	__asm__("movl %%fs:0x2d0, %0" : "=r"(tid));
	return tid;
}
static inline gp_inj_tslot_t *gp_inj_tslot_of(uintptr_t tp)
{
	return &gp_inj_tslots[(tp * 0x9e3779b97f4a7c15ull) >> (64 - GP_INJ_TSLOT_BITS)];
}
#endif
static inline gp_inj_thr_t *gp_inj_thr_get(void)
{
#if defined(__x86_64__)
	uintptr_t tp = gp_inj_tp();
	gp_inj_tslot_t *s = gp_inj_tslot_of(tp);
	if (__builtin_expect(atomic_load_explicit(&s->tp, memory_order_relaxed) == tp &&
	                         atomic_load_explicit(&s->tid, memory_order_relaxed) ==
	                             gp_inj_tcb_tid(),
	                     1))
		return &s->thr;
#endif
	return gp_inj_thr_slow();
}

static inline bool gp_inj_on(void)
{
	return atomic_load_explicit(&gp_inj.enabled, memory_order_relaxed);
}

static inline uint32_t gp_inj_thr_tid(gp_inj_thr_t *t)
{
	if (!t->tid)
		t->tid = (uint32_t)(uintptr_t)pthread_self();
	return t->tid;
}

static inline uint32_t gp_inj_tid(void)
{
	return gp_inj_thr_tid(gp_inj_thr_get());
}

/* Hot path: one record into the ring; never blocks. */
static inline void gp_inj_emit(const gp_event_t *ev)
{
	gp_ring_push(&gp_inj.ring, ev);
}

/* Records lost outside the ring, in the shared header: the agent writes them out. */
static inline void gp_inj_count_drop(unsigned cause, uint64_t n)
{
	gp_ring_lost(&gp_inj.ring, cause, n);
}

/* ---- startup.c ---- */
/* Once per process: the modes, the capture windows and a ring to record into; from_cuda
 * when called from cuInit (a forked copy that uses CUDA records into a ring of its own). */
void gp_inj_init(bool from_cuda);
/* A fork of a process that had this library (silent since the fork) starts to record
 * (its cuInit, its framework's first record): a ring of its own. No-op otherwise. */
void gp_inj_child_attach(void);

/* ---- intern.c ---- */
/* String ids carry the process's generation above GP_INJ_STR_BITS; GP_INJ_MAX_GEN keeps
 * them below the agent's own ids (from 0xfffffe00). */
#define GP_INJ_STR_BITS 18
#define GP_INJ_MAX_GEN  4000
/* The id of a string (content-hashed), its definition emitted the first time; 0 when
 * the table is full (counted, GP_LOSS_STRINGS). */
uint32_t gp_inj_intern(const char *s, size_t len);
/* The table and its lookup's first probe, inline: every NVTX push of a name interns it,
 * and the call with the miss path's frame (its record on the stack, the stack
 * protector's canary) cost about a third of a push+pop (perf, CPU machine). The miss,
 * a probe past the first or a new string, is gp_inj_intern_miss's. */
#define GP_INJ_STR_SLOTS   (1u << GP_INJ_STR_BITS)
#define GP_INJ_STR_ID(idx) ((gp_inj.gen << GP_INJ_STR_BITS) + (uint32_t)(idx) + 1)
extern _Atomic uint64_t gp_inj_str_tbl[GP_INJ_STR_SLOTS];
uint32_t gp_inj_intern_miss(const char *s, size_t len, uint64_t h);
static inline uint32_t gp_inj_intern_inl(const char *s, size_t len)
{
	uint64_t h = gp_strhash(s, len);
	uint32_t idx = (uint32_t)h & (GP_INJ_STR_SLOTS - 1);
	if (__builtin_expect(atomic_load_explicit(&gp_inj_str_tbl[idx], memory_order_relaxed) == h,
	                     1))
		return GP_INJ_STR_ID(idx);
	return gp_inj_intern_miss(s, len, h);
}
uint32_t gp_inj_intern_wstr(const wchar_t *ws); /* as UTF-8 */
/* Forget every string (a forked child's new ring: its parent's names are not in it). */
void gp_inj_intern_reset(void);
static inline uint32_t gp_inj_intern_cstr(const char *s)
{
	return s ? gp_inj_intern_inl(s, strnlen(s, GP_STRING_MAX)) : 0;
}

/* ---- capture.c ---- */
/* The cuda/mem bits wanted now, at step idx. */
unsigned gp_inj_capture_wanted(uint64_t idx);
/* An outermost push of the default domain while CUPTI runs: maybe a step begins. */
void gp_inj_step_boundary(uint32_t name, uint64_t ts);
/* An optimizer's step returned (the framework integration): the next step begins. */
void gp_inj_optimizer_boundary(uint64_t ts);
/* cudaProfilerStart (1) / Stop (0), from the CUPTI module. */
void gp_inj_on_profiler(int start);
/* The CUPTI module's flush (at_exit: its last, as the process exits): windows by cost for
 * programs whose steps are not seen (capture.c, costwin.h). */
void gp_inj_capture_tick(uint64_t now, uint64_t kernels, uint64_t measured_ns, bool at_exit);

#pragma GCC visibility pop

#endif
