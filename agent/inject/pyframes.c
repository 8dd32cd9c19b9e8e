/* Python frames of the calling thread (CPython, resolved at run time; nothing when not in
 * Python), for allocation call stacks. An allocation made by a Python thread gets the
 * Python frames above it, as "file.py:LINE function [python]" pseudo-frames before the native ones:
 * for a PyTorch user the line of the model that allocated is the answer, not libc10_cuda.so.
 *
 * Two walkers. A thread that holds the GIL is walked through the C API. A thread that
 * released it -- every PyTorch operator does (gil_scoped_release around the dispatch), so
 * this is where the caching allocator's cudaMalloc runs -- must not touch reference
 * counts or allocate, and must not take the GIL (the allocator's mutex is held: a thread
 * with the GIL waiting on that mutex would deadlock). For CPython 3.11 and 3.12 it is
 * walked read-only, the way py-spy and pystack read a process from outside: the thread's
 * own state (PyGILState_GetThisThreadState), its current interpreter frame, each frame's
 * code object. The thread is inside a C call, so its frames and their code objects are
 * alive and not moving. Every read goes through process_vm_readv on this process, which
 * answers EFAULT instead of faulting, and every object is checked against PyCode_Type or
 * PyUnicode_Type before it is used: a layout that does not match gives no frames, never a
 * crash. Other versions, and processes under a seccomp filter, keep the GIL walker only. */
#include "config.h"
#include "cupti_int.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static struct {
	int (*is_init)(void);
	int (*gil_check)(void);
	void *(*tstate)(void);       /* the thread's state, NULL-safe */
	void *(*get_frame)(void);    /* PyEval_GetFrame: borrowed */
	void *(*frame_code)(void *); /* PyFrame_GetCode: new reference */
	void *(*frame_back)(void *); /* PyFrame_GetBack: new reference */
	int (*frame_line)(void *);   /* PyFrame_GetLineNumber */
	void *(*getattr)(void *, const char *);
	const char *(*utf8)(void *);
	void (*decref)(void *);
	void (*fetch)(void **, void **, void **);
	void (*restore)(void *, void *, void *);
	bool ok;
	/* the read-only walker */
	void *(*this_ts)(void); /* PyGILState_GetThisThreadState: no GIL needed */
	int (*addr2line)(void *, int);
	uintptr_t code_type, str_type;
	long off_filename, off_name, code_base; /* code_base: tp_basicsize, the bytecode */
	const struct py_layout *lay;
} py;
static pthread_once_t py_once = PTHREAD_ONCE_INIT;

/* x86-64/aarch64 offsets (non-debug builds) of what the read-only walker reads; from
 * CPython's Include/cpython/pystate.h and Include/internal/pycore_frame.h of each version,
 * checked against 3.11's headers by offsetof and on 3.12 by tests/gpu/t_gpu.sh */
struct py_layout {
	unsigned hexversion;            /* major.minor, as in Py_Version >> 16 */
	int ts_cframe, cf_frame;        /* tstate->cframe->current_frame */
	int fr_code, fr_prev, fr_instr; /* f_code, previous, prev_instr */
	int fr_owner, owner_cstack;     /* shim frames (3.12) are skipped */
	int str_data;                   /* sizeof(PyASCIIObject): compact ASCII text */
};
static const struct py_layout py_layouts[] = {
    {0x030b, 56, 8, 32, 48, 56, 69, -1, 48},
    {0x030c, 56, 0, 0, 8, 56, 70, 3, 40},
};
#define PYOBJ_TYPE   8   /* ob_type */
#define PYOBJ_SIZE   16  /* ob_size; str: length */
#define PYSTR_STATE  32  /* PyASCIIObject.state: compact bit 5, ascii bit 6 */
#define PYTYPE_BASIC 32  /* tp_basicsize */
#define PYTYPE_MEMB  240 /* tp_members */

/* Read n bytes of this process at addr; false where nothing is mapped. Never faults. */
static bool py_rd(uintptr_t addr, void *dst, size_t n)
{
	if (addr < 4096)
		return false;
	struct iovec l = {dst, n}, r = {(void *)addr, n};
	return process_vm_readv(getpid(), &l, 1, &r, 1, 0) == (ssize_t)n;
}

/* The offset of a code object member, from PyCode_Type's own member table (no offsets of
 * PyCodeObject are hard-coded). */
static long py_member(uintptr_t type, const char *name)
{
	uintptr_t m;
	if (!py_rd(type + PYTYPE_MEMB, &m, sizeof(m)))
		return -1;
	for (int i = 0; m && i < 64; i++, m += 40) { /* sizeof(PyMemberDef) */
		uintptr_t nm;
		long off;
		char buf[32] = "";
		if (!py_rd(m, &nm, sizeof(nm)) || !nm)
			return -1;
		py_rd(nm, buf, sizeof(buf) - 1); /* may stop short of a page end: compared below */
		if (!strncmp(buf, name, sizeof(buf) - 1) && py_rd(m + 16, &off, sizeof(off)))
			return off;
	}
	return -1;
}

/* Under a seccomp filter process_vm_readv might be answered by killing the process (the
 * filter's choice, which cannot be read back): the read-only walker is then not used. */
static bool seccomp_filtered(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[128];
	bool filtered = f == NULL; /* unknown: assume the worst */
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "Seccomp:", 8))
			filtered = atoi(line + 8) != 0;
	if (f)
		fclose(f);
	return filtered;
}

static void py_resolve_raw(void)
{
	if (seccomp_filtered())
		return;
	const unsigned *ver = dlsym(RTLD_DEFAULT, "Py_Version"); /* 3.11+ */
	*(void **)&py.this_ts = dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
	*(void **)&py.addr2line = dlsym(RTLD_DEFAULT, "PyCode_Addr2Line");
	py.code_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyCode_Type");
	py.str_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyUnicode_Type");
	if (!ver || !py.this_ts || !py.addr2line || !py.code_type || !py.str_type)
		return;
	for (size_t i = 0; i < sizeof(py_layouts) / sizeof(py_layouts[0]); i++)
		if (py_layouts[i].hexversion == *ver >> 16)
			py.lay = &py_layouts[i];
	py.off_filename = py_member(py.code_type, "co_filename");
	py.off_name = py_member(py.code_type, "co_name");
	if (!py_rd(py.code_type + PYTYPE_BASIC, &py.code_base, sizeof(py.code_base)) ||
	    py.off_filename < 0 || py.off_name < 0 || py.code_base <= 0)
		py.lay = NULL;
}

static void py_resolve(void)
{
#define PYSYM(f, n) *(void **)&py.f = dlsym(RTLD_DEFAULT, n)
	PYSYM(is_init, "Py_IsInitialized");
	PYSYM(gil_check, "PyGILState_Check");
	/* PyGILState_Check answers 1 when its check is off (sub-interpreters): a thread
	 * state is required as well before any frame is touched */
	PYSYM(tstate, "PyThreadState_GetUnchecked"); /* 3.13 */
	if (!py.tstate)
		PYSYM(tstate, "_PyThreadState_UncheckedGet"); /* 3.5-3.12 */
	PYSYM(get_frame, "PyEval_GetFrame");
	PYSYM(frame_code, "PyFrame_GetCode");
	PYSYM(frame_back, "PyFrame_GetBack");
	PYSYM(frame_line, "PyFrame_GetLineNumber");
	PYSYM(getattr, "PyObject_GetAttrString");
	PYSYM(utf8, "PyUnicode_AsUTF8");
	PYSYM(decref, "Py_DecRef");
	PYSYM(fetch, "PyErr_Fetch");
	PYSYM(restore, "PyErr_Restore");
#undef PYSYM
	py.ok = py.is_init && py.gil_check && py.tstate && py.get_frame && py.frame_code &&
	        py.frame_back && py.frame_line && py.getattr && py.utf8 && py.decref && py.fetch &&
	        py.restore;
	if (py.ok)
		py_resolve_raw();
}

static const char *py_str(void *code, const char *attr, void **keep)
{
	*keep = py.getattr(code, attr);
	const char *s = *keep ? py.utf8(*keep) : NULL;
	return s ? s : "?";
}

/* A str object's text, if it is compact ASCII (file and function names are); "?" else.
 * Two reads: the header, then the text. */
static void py_raw_str(uintptr_t obj, char *out, size_t len)
{
	unsigned char h[PYSTR_STATE + 4];
	uintptr_t type;
	long n;
	uint32_t state;
	snprintf(out, len, "?");
	if (!py_rd(obj, h, sizeof(h)))
		return;
	memcpy(&type, h + PYOBJ_TYPE, sizeof(type));
	memcpy(&n, h + PYOBJ_SIZE, sizeof(n));
	memcpy(&state, h + PYSTR_STATE, sizeof(state));
	if (type != py.str_type || (state & 0x60) != 0x60 || n < 0)
		return;
	if ((size_t)n >= len)
		n = (long)len - 1;
	if (py_rd(obj + (uintptr_t)py.lay->str_data, out, (size_t)n))
		out[n] = '\0';
	else
		snprintf(out, len, "?");
}

/* Names of code objects already read, by address (and the addresses of its two strings,
 * so a code object freed and another allocated at its address is not mistaken for it):
 * a frame then costs two reads instead of six. Shared by the threads that walk; one that
 * finds it busy reads the names itself. */
#define PY_CACHE 256
static struct {
	uintptr_t code, fname, name;
	char text[160];
} py_cache[PY_CACHE];
static pthread_mutex_t py_cache_mu = PTHREAD_MUTEX_INITIALIZER;

static void py_code_text(uintptr_t code, uintptr_t fname, uintptr_t name, char *out, size_t len)
{
	unsigned slot = (unsigned)(code >> 4) % PY_CACHE;
	bool locked = !pthread_mutex_trylock(&py_cache_mu);
	if (locked && py_cache[slot].code == code && py_cache[slot].fname == fname &&
	    py_cache[slot].name == name) {
		snprintf(out, len, "%s", py_cache[slot].text);
		pthread_mutex_unlock(&py_cache_mu);
		return;
	}
	char file[128], func[96];
	py_raw_str(fname, file, sizeof(file));
	py_raw_str(name, func, sizeof(func));
	const char *base = strrchr(file, '/');
	snprintf(out, len, "%s\t%s", base ? base + 1 : file, func);
	if (locked) {
		py_cache[slot].code = code;
		py_cache[slot].fname = fname;
		py_cache[slot].name = name;
		snprintf(py_cache[slot].text, sizeof(py_cache[slot].text), "%s", out);
		pthread_mutex_unlock(&py_cache_mu);
	}
}

/* The read-only walk of the calling thread's frames (see above); 0 where anything does
 * not look as the layout says. */
static int py_frames_raw(char names[][GP_PY_NAME], int max)
{
	const struct py_layout *L = py.lay;
	uintptr_t ts = (uintptr_t)py.this_ts(), cf, fr;
	if (!ts || !py_rd(ts + (uintptr_t)L->ts_cframe, &cf, sizeof(cf)) ||
	    !py_rd(cf + (uintptr_t)L->cf_frame, &fr, sizeof(fr)))
		return 0;
	long hi = (py.off_filename > py.off_name ? py.off_filename : py.off_name) + 8;
	int n = 0;
	for (int guard = 0; fr && n < max && guard < 1024; guard++) {
		unsigned char f[80], c[256];
		uintptr_t code, prev, instr, type, fname, name;
		long size;
		if (!py_rd(fr, f, sizeof(f)))
			break;
		memcpy(&code, f + L->fr_code, sizeof(code));
		memcpy(&prev, f + L->fr_prev, sizeof(prev));
		memcpy(&instr, f + L->fr_instr, sizeof(instr));
		if (L->owner_cstack >= 0 && f[L->fr_owner] == L->owner_cstack) {
			fr = prev;
			continue;
		}
		if (hi > (long)sizeof(c) || !py_rd(code, c, (size_t)hi))
			break;
		memcpy(&type, c + PYOBJ_TYPE, sizeof(type));
		memcpy(&size, c + PYOBJ_SIZE, sizeof(size));
		memcpy(&fname, c + py.off_filename, sizeof(fname));
		memcpy(&name, c + py.off_name, sizeof(name));
		if (type != py.code_type)
			break;
		char text[160];
		py_code_text(code, fname, name, text, sizeof(text));
		char *tab = strchr(text, '\t');
		if (tab)
			*tab++ = '\0';
		/* the byte offset of the instruction being executed, if it lies in the code */
		long off = (long)(instr - (code + (uintptr_t)py.code_base));
		int line = py.addr2line((void *)code, off >= 0 && off < size * 2 ? (int)off : -1);
		snprintf(names[n++], sizeof(names[0]), "%s:%d %s [python]", text, line,
		         tab ? tab : "?");
		fr = prev;
	}
	return n;
}

/* Fill names[] (innermost first) with the calling thread's Python frames; 0 when the
 * process is not CPython or the thread has no Python frames that can be read. Any Python
 * error state of a GIL holder is saved and restored around the walk. */
int gp_py_frames(char names[][GP_PY_NAME], int max)
{
	pthread_once(&py_once, py_resolve);
	if (!py.ok || !py.is_init())
		return 0;
	/* The GIL is ours when the check says so and the thread state in force is this
	 * thread's: PyGILState_Check answers 1 whenever its check is off (sub-interpreters),
	 * and 3.11's "current" state is the GIL holder's, whichever thread that is. */
	void *cur = py.tstate();
	if (py.gil_check() != 1 || !cur || (py.this_ts && cur != py.this_ts()))
		return py.lay ? py_frames_raw(names, max) : 0;
	void *et, *ev, *tb;
	py.fetch(&et, &ev, &tb);
	int n = 0;
	void *f = py.get_frame(), *owned = NULL; /* the first frame is borrowed */
	while (f && n < max) {
		void *code = py.frame_code(f), *fn = NULL, *nm = NULL;
		if (code) {
			const char *file = py_str(code, "co_filename", &fn);
			const char *base = strrchr(file, '/');
			snprintf(names[n++], sizeof(names[0]), "%s:%d %s [python]",
			         base ? base + 1 : file, py.frame_line(f),
			         py_str(code, "co_name", &nm));
			if (fn)
				py.decref(fn);
			if (nm)
				py.decref(nm);
			py.decref(code);
		}
		void *back = py.frame_back(f);
		if (owned)
			py.decref(owned);
		f = owned = back;
	}
	if (owned)
		py.decref(owned);
	py.restore(et, ev, tb);
	return n;
}

/* Test hook: the calling thread's Python frames as text (tests/integration/t_pyframes.py
 * calls it through ctypes.PyDLL, which keeps the GIL). */
__attribute__((visibility("default"))) int gp_cupti_pyframes(char *out, int len)
{
	char names[GP_PY_DEPTH][GP_PY_NAME];
	int n = gp_py_frames(names, GP_PY_DEPTH), o = 0;
	out[0] = '\0';
	for (int i = 0; i < n && o < len; i++)
		o += snprintf(out + o, (size_t)(len - o), "%s%s", i ? " <- " : "", names[i]);
	return n;
}
