/* Call stacks taken in CUPTI's callbacks: a CUDA allocation's (mode mem) and a kernel
 * launch's (sites.c), each the thread's Python frames (pyframes.c) as pseudo program
 * counters above the native ones (libunwind). A stack is defined once per process
 * (GP_EV_STACK, then one GP_EV_FRAME per frame, symbolised here with dladdr, where the
 * modules are mapped) and referred to by its id afterwards: such stacks are few and
 * repeat. Launch sites have a table of their own, so a program with many launch sites
 * never crowds its allocation stacks out (nor the reverse); a full table's misses are
 * counted (GP_LOSS_STACKS), either table's. */
#include "config.h"
#include "cupti_int.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#ifdef HAVE_LIBUNWIND
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#endif

#define STACK_DEPTH 24
#define PY_PC       (1ull << 63) /* pseudo program counters of Python frames */

/* stack ids: per process generation (see gp_inject_api_t.gen, below GP_INJ_MAX_GEN, so
 * under 2^12), so two programs run one after the other under one agent never share an
 * id; the launch sites' above bit 31, apart from the allocations' */
#ifndef STK_SLOTS /* a test builds smaller tables (tests/unit/t_stacks.c) */
#define STK_SLOTS  4096
#define SITE_SLOTS 2048
#endif
#define STK_ID(idx) ((gp_cu_api->gen << 12) + (uint32_t)(idx) + 1)
typedef struct stk_table {
	_Atomic uint64_t *hash; /* a stack's hash, 0: a free slot */
	uint32_t slots;         /* a power of two, at most 4096 */
	uint32_t id_bits;       /* or'ed into its ids */
} stk_table_t;
static _Atomic uint64_t alloc_hash[STK_SLOTS], site_hash[SITE_SLOTS];
static const stk_table_t alloc_tbl = {alloc_hash, STK_SLOTS, 0};
static const stk_table_t site_tbl = {site_hash, SITE_SLOTS, 1u << 31};

static uint64_t hash_pcs(void *const *pcs, int n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull;
	for (int i = 0; i < n; i++)
		h = (h ^ (uint64_t)(uintptr_t)pcs[i]) * 0x100000001b3ull;
	return h ? h : 1;
}

/* A module's absolute path: the main program's is not in dladdr's answer (it gives
 * argv[0], or ""), /proc/self/exe says it. NULL when unknown. */
static char exe[4096];
static pthread_once_t exe_once = PTHREAD_ONCE_INIT;

static void read_exe(void)
{
	ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[k > 0 ? k : 0] = '\0';
}

static const char *module_path(const Dl_info *di)
{
	if (di->dli_fname[0] == '/')
		return di->dli_fname;
	pthread_once(&exe_once, read_exe);
	return exe[0] ? exe : NULL;
}

/* names: for the first npy entries (Python frames), their text instead of dladdr's */
static void define_stack(uint32_t id, void *const *pcs, int n, char (*names)[GP_PY_NAME], int npy)
{
	for (int i = 0; i < n; i += 3) {
		gp_event_t s = {.type = GP_EV_STACK, .tid = id, .u16 = (uint16_t)i};
		int k = n - i < 3 ? n - i : 3;
		s.u8 = (uint8_t)k;
		s.b = (uint64_t)(uintptr_t)pcs[i];
		s.c = k > 1 ? (uint64_t)(uintptr_t)pcs[i + 1] : 0;
		s.d = k > 2 ? (uint64_t)(uintptr_t)pcs[i + 2] : 0;
		gp_cu_api->emit(&s);
	}
	/* symbolise now, once per new stack: allocation stacks are few and repeat */
	for (int i = 0; i < n; i++) {
		Dl_info di;
		char sym[512];
		bool have = i >= npy && dladdr(pcs[i], &di) && di.dli_fname;
		if (i < npy) {
			snprintf(sym, sizeof(sym), "%s", names[i]);
		} else if (have) {
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
		                .b = gp_cu_api->intern(sym, strlen(sym))};
		/* the module and the offset in it: the report reads the module's line table
		 * for function and file:line (report/symbolize.c) */
		const char *path = have ? module_path(&di) : NULL;
		if (path) {
			f.c = gp_cu_api->intern(path, strlen(path));
			f.d = (uint64_t)((char *)pcs[i] - (char *)di.dli_fbase);
		}
		gp_cu_api->emit(&f);
	}
}

/* inlined: the frames skipped below are the same for both tables */
static inline __attribute__((always_inline)) uint32_t capture(const stk_table_t *t)
{
	char names[GP_PY_DEPTH][GP_PY_NAME];
	void *all[GP_PY_DEPTH + STACK_DEPTH + 3], **pcs = all + GP_PY_DEPTH;
	int n, npy = gp_py_frames(names, GP_PY_DEPTH);
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
	uint32_t idx = (uint32_t)h & (t->slots - 1);
	for (int p = 0; p < 32; p++, idx = (idx + 1) & (t->slots - 1)) {
		uint64_t v = atomic_load_explicit(&t->hash[idx], memory_order_relaxed);
		if (v == h)
			return STK_ID(idx) | t->id_bits;
		if (v == 0) {
			uint64_t z = 0;
			if (atomic_compare_exchange_strong(&t->hash[idx], &z, h)) {
				define_stack(STK_ID(idx) | t->id_bits, pcs + skip, n, names, npy);
				return STK_ID(idx) | t->id_bits;
			}
			if (z == h)
				return STK_ID(idx) | t->id_bits;
		}
	}
	gp_cu_api->count_drop(GP_LOSS_STACKS, 1);
	return 0;
}

uint32_t gp_stack_capture(void)
{
	return capture(&alloc_tbl);
}

uint32_t gp_site_stack_capture(void)
{
	return capture(&site_tbl);
}
