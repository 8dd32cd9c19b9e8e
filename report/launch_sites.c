/* Kernel time by native caller (attribution.h): for a program no framework names (CUDA
 * C/C++), each kernel of the steady state whose launch had its call stack taken
 * (GPUPROF_LAUNCH_SITES: the first launches of the first capture windows,
 * agent/inject/sites.c) charged to "function @ file:line (function)": the innermost frame
 * of the program's own, past the profiler's, CUPTI's, the driver's and the CUDA runtime's
 * frames and the kernel's host stub, read from the module's DWARF where it has a line
 * table (report/symbolize.c), demangled. Kernels launched with no site taken (past the
 * cap, or windows after the first) are left out of the tables, and counted. */
#include "config.h"
#include "attribution.h"
#include "names.h"
#include "rankdata.h"
#include "symbolize.h"

#include <stdlib.h>
#include <string.h>

/* Frames that are not the program's: the launch's way down into the driver. raw: the
 * symbol as the module has it (mangled), kernel: the launched kernel's (mangled) name,
 * whose host stub carries the same symbol (nvcc's <<<>>> launch). */
static bool cuda_frame(const char *raw, const char *readable, const char *kernel)
{
	/* anywhere in the symbol: cuda_runtime.h's cudaLaunchKernel<T> template is
	 * _ZL16cudaLaunchKernelIcE..., "cudaError cudaLaunchKernel<char>(...)" demangled;
	 * the static runtime's own functions are cudart::... or __cudart<N> */
	static const char *const part[] = {"__device_stub__",
	                                   "cudaLaunch",
	                                   "cuLaunch",
	                                   "cudaGraphLaunch",
	                                   "cuGraphLaunch",
	                                   "cudart",
	                                   "__cudaPushCallConfiguration"};
	if (kernel && *kernel && !strcmp(raw, kernel))
		return true;
	for (size_t i = 0; i < sizeof(part) / sizeof(part[0]); i++)
		if (strstr(raw, part[i]) || (readable && strstr(readable, part[i])))
			return true;
	return false;
}

/* "symbol+0x1f (module)" -> the symbol, into out ("" when the frame had none) */
static void frame_symbol(const char *frame, char *out, size_t len)
{
	size_t n = strcspn(frame, "+ ");
	if (frame[0] == '0' && frame[1] == 'x')
		n = 0;
	snprintf(out, len, "%.*s", (int)(n < len ? n : len - 1), frame);
}

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');
	return b ? b + 1 : path;
}

/* A demangled name's function, *fn moved to it, its length returned: the parameter list
 * and a template's return type say nothing a line does not ("void update<4>(float*, int)"
 * -> "update<4>", "ns::f(int)" -> "ns::f"). */
static size_t callable(const char **fn)
{
	const char *s = *fn;
	size_t end = 0, from = 0;
	for (int depth = 0; s[end] && !(s[end] == '(' && !depth && end); end++) {
		depth += s[end] == '<' ? 1 : s[end] == '>' ? -1 : 0;
		if (s[end] == ' ' && !depth)
			from = end + 1;
	}
	*fn = s + from;
	return end - from ? end - from : strlen(s);
}

/* A function (raw: as the module has it) at file:line, or at where (no line), as
 * "function @ file:line (function)" into out; false: a function of CUDA's. */
static bool name_function(const char *raw, const char *file, int line, const char *where,
                          const char *kernel, char *out, size_t len)
{
	char *dbuf = NULL;
	size_t dlen = 0;
	const char *readable = raw[0] ? gp_demangle(raw, &dbuf, &dlen) : NULL;
	bool cuda = cuda_frame(raw, readable, kernel);
	if (!cuda && !raw[0]) { /* no symbol: its line, or the module and offset */
		if (line)
			snprintf(out, len, "%s:%d", base_name(file), line);
		else
			snprintf(out, len, "%s", where[0] ? where : "?");
	} else if (!cuda) {
		const char *fn = readable ? readable : raw;
		size_t fl = callable(&fn);
		if (line)
			snprintf(out, len, "%.*s @ %s:%d (%.*s)", (int)fl, fn, base_name(file),
			         line, (int)fl, fn);
		else
			snprintf(out, len, "%.*s @ %s", (int)fl, fn, where);
	}
	free(dbuf);
	return !cuda;
}

/* One native frame as "function @ file:line (function)": the functions inlined at the
 * pc first (nvcc's host stub is inlined into its caller at -O2: the pc's own line is
 * the kernel's definition, the call's line the stub's call site); false: a frame of
 * CUDA's or gpuprof's, not the program's. */
static bool name_native(rank_data_t *d, gp_symbolizer_t *sy, uint64_t pc, const char *kernel,
                        char *out, size_t len)
{
	const char *fr = gp_symtab_frame(&d->sym, pc), *mod = NULL;
	if (gp_symtab_profiler_frame(fr) || strstr(fr, "(libcudart.so"))
		return false;
	char raw[512], where[600];
	uint64_t off = 0;
	frame_symbol(fr, raw, sizeof(raw));
	if (gp_symtab_frame_module(&d->sym, pc, &mod, &off)) {
		gp_sym_frame_t vf[8];
		int nv = gp_symbolize_inlined(sy, mod, off, true, vf, 8);
		for (int j = 0; j < nv; j++)
			if (name_function(vf[j].func[0] ? vf[j].func : raw, vf[j].file, vf[j].line,
			                  "", kernel, out, len))
				return true;
		if (nv)
			return false; /* every function there is CUDA's */
		snprintf(where, sizeof(where), "%s+0x%llx", base_name(mod),
		         (unsigned long long)off);
	} else { /* the collector's "symbol+0xoff (library)": the library */
		const char *lib = strstr(fr, " (");
		lib = lib ? lib + 2 : "?";
		snprintf(where, sizeof(where), "%.*s", (int)strcspn(lib, ")"), lib);
	}
	return name_function(raw, "", 0, where, kernel, out, len);
}

/* The call site of a stack: the innermost frame of the program's (a Python frame of a
 * CUDA Python program, "file.py:LINE function [python]", as it is); "" when none. */
static void site_name(rank_data_t *d, gp_symbolizer_t *sy, uint32_t stack, const char *kernel,
                      char *out, size_t len)
{
	const uint64_t *pcs;
	size_t n = gp_symtab_stack(&d->sym, stack, &pcs);
	out[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		if (pcs[i] >> 63) { /* a Python frame (stacks.c's pseudo program counters) */
			const char *py = gp_symtab_frame(&d->sym, pcs[i]);
			size_t l = strcspn(py, " ");
			const char *fn = py + l + (py[l] ? 1 : 0);
			size_t fl = strcspn(fn, " ");
			snprintf(out, len, "%.*s @ %.*s (%.*s)", (int)fl, fn, (int)l, py, (int)fl,
			         fn);
			return;
		}
		if (name_native(d, sy, pcs[i], kernel, out, len))
			return;
	}
	snprintf(out, len, "(no frame of the program's)");
}

typedef VEC(char *) names_t;

/* The name of (stack, kernel), cached: a program has few launch sites */
static const char *cached_name(rank_data_t *d, gp_symbolizer_t *sy, u64map_t *cache, names_t *names,
                               uint32_t stack, uint32_t kname)
{
	uint64_t key = (uint64_t)stack << 32 | kname, at;
	if (u64map_get(cache, key + 1, &at))
		return names->v[at];
	char buf[1200];
	if (stack)
		site_name(d, sy, stack, gp_rd_str(d, kname), buf, sizeof(buf));
	else
		snprintf(buf, sizeof(buf),
		         "(no call stack: the launch sites' stack table was full)");
	char *s = strdup(buf);
	size_t n = names->n;
	if (s)
		VEC_PUSH(*names, s);
	if (!s || names->n == n) {
		free(s);
		return "";
	}
	u64map_put(cache, key + 1, n);
	return s;
}

bool gp_sites_attribution(gp_otab_t *t, rank_data_t *d)
{
	if (!d->launch_site.n && !d->sites_capped)
		return false;
	gp_symbolizer_t *sy = gp_symbolizer_new();
	u64map_t cache = {0}, seen = {0};
	names_t names = {0};
	for (size_t i = 0; i < d->kerns.n; i++) {
		const kern_t *k = &d->kerns.v[i];
		uint64_t site;
		if (k->kind != 0 || !gp_in_gwin(d, gp_rd_launch_ts(d, k)))
			continue;
		if (!u64map_get(&d->launch_site, k->corr, &site)) {
			t->site_missed++; /* traced, but launched with no site taken */
			continue;
		}
		const char *nm = cached_name(d, sy, &cache, &names, (uint32_t)(site - 1), k->name);
		uint64_t one;
		bool first = !u64map_get(&seen, k->corr + 1, &one); /* a graph: one launch */
		if (first)
			u64map_put(&seen, k->corr + 1, 1);
		gp_ostat_t row = {(char *)nm, first, 1, k->dur, 0, 0};
		gp_otab_add(t, &row);
	}
	t->ranks++, t->native++;
	for (size_t i = 0; i < names.n; i++)
		free(names.v[i]);
	VEC_FREE(names);
	u64map_free(&cache);
	u64map_free(&seen);
	gp_symbolizer_free(sy);
	return true;
}
