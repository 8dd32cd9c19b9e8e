/* Native frames to function and file:line (report/symbolize.c), on this program's own
 * code: the offsets are taken as the collector takes them (dladdr's load address). */
#include "config.h"
#include "symbolize.h"
#include "tap.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const int target_line = __LINE__ + 2;
__attribute__((noinline)) int gp_t_target(int x);
__attribute__((noinline)) int gp_t_target(int x)
{
	return x * 3 + 1;
}

static void *ret;
static int call_line;

__attribute__((noinline)) static void callee(void)
{
	ret = __builtin_return_address(0);
}

/* a function inlined into another at a known line, whose return address is taken inside
 * the inlined one (nvcc's host stub, inlined into the function that launches) */
static int inner_line, outer_line;
static inline __attribute__((always_inline)) void gp_t_inlined(void)
{
	inner_line = __LINE__ + 1;
	callee();
}
__attribute__((noinline)) void gp_t_outer(void);
__attribute__((noinline)) void gp_t_outer(void)
{
	outer_line = __LINE__ + 1;
	gp_t_inlined();
	__asm__ volatile("" ::: "memory"); /* no tail call: the frame stays */
}

static void inlined(gp_symbolizer_t *s, const char *exe, const Dl_info *di)
{
	gp_sym_frame_t f[4];
	gp_t_outer();
	uint64_t off = (uint64_t)((char *)ret - (char *)di->dli_fbase);
	int n = gp_symbolize_inlined(s, exe, off, true, f, 4);
	ok(n == 2 && !strcmp(f[0].func, "gp_t_inlined") && f[0].line == inner_line &&
	       !strcmp(f[1].func, "gp_t_outer") && f[1].line == outer_line &&
	       strstr(f[1].file, "t_symbolize.c"),
	   "an inlined function, then the one it was inlined into at the call's line (%d: %s:%d, "
	   "%s:%d; want %d, %d)",
	   n, n > 0 ? f[0].func : "", n > 0 ? f[0].line : 0, n > 1 ? f[1].func : "",
	   n > 1 ? f[1].line : 0, inner_line, outer_line);
	ok(gp_symbolize_inlined(s, "relative/lib.so", 0x1000, true, f, 4) == 0,
	   "inlined frames: a path that is not absolute is not opened");
}

/* A function in a module without DWARF for it (zlib, loaded with libdw, whose debug info
 * is a separate package; nvcc's static CUDA runtime inside a program): the ELF symbol
 * table's name */
static void symtab_only(gp_symbolizer_t *s)
{
	Dl_info di;
	gp_sym_frame_t f[4];
	void *fn = dlsym(RTLD_DEFAULT, "zlibVersion");
	if (!fn || !dladdr(fn, &di) || !di.dli_fname || di.dli_fname[0] != '/') {
		skip("zlib is not loaded here, or has no absolute path");
		return;
	}
	uint64_t off = (uint64_t)((char *)fn - (char *)di.dli_fbase) + 1;
	int n = gp_symbolize_inlined(s, di.dli_fname, off, false, f, 4);
	ok(n >= 1 && !strcmp(f[0].func, "zlibVersion"),
	   "a function with no DWARF at its pc: its symbol's name (%d frames: %s in %s)", n,
	   n > 0 ? f[0].func : "", di.dli_fname);
}

int main(void)
{
	char exe[4096], fn[256], file[256];
	int line = 0;
	ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[k > 0 ? k : 0] = '\0';
	if (!gp_symbolizer_available()) {
		skip("built without libdw");
		return done_testing();
	}
	Dl_info di;
	if (!ok(dladdr((void *)gp_t_target, &di) != 0, "dladdr finds this program"))
		return done_testing();
	gp_symbolizer_t *s = gp_symbolizer_new();
	uint64_t off = (uint64_t)((char *)gp_t_target - (char *)di.dli_fbase);
	bool found = gp_symbolize(s, exe, off, false, fn, sizeof(fn), file, sizeof(file), &line);
	ok(found, "a function of this program is found");
	ok(!strcmp(fn, "gp_t_target"), "its name: %s", fn);
	ok(strstr(file, "t_symbolize.c") && line >= target_line && line <= target_line + 2,
	   "its file and line: %s:%d (defined at %d)", file, line, target_line);
	call_line = __LINE__ + 1;
	callee();
	off = (uint64_t)((char *)ret - (char *)di.dli_fbase);
	found = gp_symbolize(s, exe, off, true, fn, sizeof(fn), file, sizeof(file), &line);
	ok(found && !strcmp(fn, "main") && line == call_line,
	   "a return address: the call's line (%s:%d, called at %d)", fn, line, call_line);
	ok(gp_symbolize(s, exe, off, true, fn, sizeof(fn), file, sizeof(file), &line) &&
	       line == call_line,
	   "asked again: the module's session is kept");
	ok(!gp_symbolize(s, "/nonexistent/libx.so", 0x1000, true, fn, sizeof(fn), file,
	                 sizeof(file), &line) &&
	       !fn[0] && !file[0] && !line,
	   "a module not here: nothing, and nothing made up");
	ok(!gp_symbolize(s, "relative/lib.so", 0x1000, true, fn, sizeof(fn), file, sizeof(file),
	                 &line),
	   "a path that is not absolute is not opened");
	inlined(s, exe, &di);
	symtab_only(s);
	gp_symbolizer_free(s);
	return done_testing();
}
