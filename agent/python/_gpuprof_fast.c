/* The PyTorch integration's hot call into the injected library, without ctypes: the
 * optimizer step hook calls gpuprof_fw_event once a step, and through ctypes that call
 * cost ~11 us on the H200 in the seed MLP's loop (libffi and ctypes' argument conversion
 * with cold caches after Adam's step: bench/gpu-own-parts.sh), more than the library's own
 * work (~10 us, most of it the step marker's cuEventRecord). This module calls the same
 * function through a pointer with no conversion but PyLong's.
 *
 * Built against the limited C API of Python 3.10 (abi3: one file for every CPython from
 * 3.10 on; METH_FASTCALL is in the stable ABI from 3.10). It links no Python library (the
 * interpreter it is imported into has the symbols) and no gpuprof library: bind() looks
 * the function up in the injected library ctypes has already loaded (RTLD_NOLOAD), so
 * it can never load a second copy. _gpuprof_abi.py falls back to ctypes when the module is
 * missing, on an older, another or a free-threaded Python (whose objects have another
 * header: it never loads it there), when it will not bind, and for a call it refuses. The GIL is
 * released around the call, as ctypes does: the step marker's cuEventRecord can wait for room in
 * CUDA's launch queue, a wait other Python threads (a DataLoader's pin-memory thread) may run
 * through. */
#define Py_LIMITED_API 0x030a0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlfcn.h>
#include <stdint.h>

typedef uint64_t (*fw_event_fn)(unsigned, unsigned, uint64_t, uint64_t, uint64_t, const char *);
static fw_event_fn fw_event;
/* the operation ranges' two calls (agent/python/_gpuprof_ops.py: one of each per torch call
 * the program makes in a window's first steps; ctypes took ~2.5 us a call on a loaded
 * CPU machine, bench/torch_ops_cost.py). NULL: a library without them (ctypes' then). */
typedef uint64_t (*fw_op_start_fn)(const char *);
typedef void (*fw_range_end_fn)(uint64_t);
static fw_op_start_fn fw_op_start;
static fw_range_end_fn fw_range_end;

/* bind(path: bytes) -> bool: the injected library at path, already loaded */
static PyObject *fast_bind(PyObject *self, PyObject *const *args, Py_ssize_t n)
{
	(void)self;
	if (n != 1 || !PyBytes_Check(args[0])) {
		PyErr_SetString(PyExc_TypeError, "bind(path: bytes)");
		return NULL;
	}
	const char *path = PyBytes_AsString(args[0]);
	if (!path)
		return NULL;
	void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
	fw_event_fn f = h ? (fw_event_fn)dlsym(h, "gpuprof_fw_event") : NULL;
	/* a binding that worked stays: a second bind that fails changes nothing. The handle
	 * is kept: the library stays loaded as long as this process has us */
	if (f) {
		fw_event = f;
		fw_op_start = (fw_op_start_fn)dlsym(h, "gpuprof_fw_op_start");
		fw_range_end = (fw_range_end_fn)dlsym(h, "gpuprof_fw_range_end");
	}
	return PyBool_FromLong(f != NULL);
}

/* event(kind, dev, a, c, d) -> int: gpuprof_fw_event(kind, dev, a, c, d, NULL) */
static PyObject *fast_event(PyObject *self, PyObject *const *args, Py_ssize_t n)
{
	unsigned long long v[5];
	(void)self;
	if (n != 5) {
		PyErr_SetString(PyExc_TypeError, "event(kind, dev, a, c, d)");
		return NULL;
	}
	fw_event_fn f = fw_event; /* read once, with the GIL */
	if (!f) {
		PyErr_SetString(PyExc_RuntimeError, "not bound");
		return NULL;
	}
	/* as ctypes converts them: any integer (an __index__ too), taken modulo 2^64 */
	for (int i = 0; i < 5; i++) {
		PyObject *o = PyNumber_Index(args[i]);
		if (!o)
			return NULL;
		v[i] = PyLong_AsUnsignedLongLongMask(o);
		Py_DECREF(o);
		if (v[i] == (unsigned long long)-1 && PyErr_Occurred())
			return NULL;
	}
	PyThreadState *ts = PyEval_SaveThread();
	uint64_t r = f((unsigned)v[0], (unsigned)v[1], v[2], v[3], v[4], NULL);
	PyEval_RestoreThread(ts);
	return PyLong_FromUnsignedLongLong(r);
}

/* op_start(name: bytes) -> int: gpuprof_fw_op_start(name), the range's id (0: none). The
 * GIL is kept: the library only interns the name and writes one record. */
static PyObject *fast_op_start(PyObject *self, PyObject *const *args, Py_ssize_t n)
{
	(void)self;
	fw_op_start_fn f = fw_op_start;
	if (n != 1 || !PyBytes_Check(args[0]) || !f) {
		PyErr_SetString(PyExc_TypeError, f ? "op_start(name: bytes)" : "not bound");
		return NULL;
	}
	const char *name = PyBytes_AsString(args[0]);
	return name ? PyLong_FromUnsignedLongLong(f(name)) : NULL;
}

/* range_end(id: int) -> None: gpuprof_fw_range_end(id) */
static PyObject *fast_range_end(PyObject *self, PyObject *const *args, Py_ssize_t n)
{
	(void)self;
	fw_range_end_fn f = fw_range_end;
	if (n != 1 || !f) {
		PyErr_SetString(PyExc_TypeError, f ? "range_end(id: int)" : "not bound");
		return NULL;
	}
	unsigned long long id = PyLong_AsUnsignedLongLongMask(args[0]);
	if (id == (unsigned long long)-1 && PyErr_Occurred())
		return NULL;
	f(id);
	Py_RETURN_NONE;
}

/* ops() -> bool: the operation ranges' calls are bound */
static PyObject *fast_ops(PyObject *self, PyObject *const *args, Py_ssize_t n)
{
	(void)self, (void)args, (void)n;
	return PyBool_FromLong(fw_op_start && fw_range_end);
}

static PyMethodDef methods[] = {
    {"bind", (PyCFunction)(void (*)(void))fast_bind, METH_FASTCALL,
     "bind(path: bytes) -> bool: look gpuprof_fw_event up in the loaded injected library"},
    {"event", (PyCFunction)(void (*)(void))fast_event, METH_FASTCALL,
     "event(kind, dev, a, c, d) -> int: one GP_EV_FW record without text"},
    {"op_start", (PyCFunction)(void (*)(void))fast_op_start, METH_FASTCALL,
     "op_start(name: bytes) -> int: an operation range begun (its id; 0: none)"},
    {"range_end", (PyCFunction)(void (*)(void))fast_range_end, METH_FASTCALL,
     "range_end(id: int) -> None: a range ended"},
    {"ops", (PyCFunction)(void (*)(void))fast_ops, METH_FASTCALL,
     "ops() -> bool: op_start and range_end are bound"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT,
                                    "_gpuprof_fast",
                                    "gpuprof's framework records without ctypes",
                                    -1,
                                    methods,
                                    NULL,
                                    NULL,
                                    NULL,
                                    NULL};

PyMODINIT_FUNC PyInit__gpuprof_fast(void);
PyMODINIT_FUNC PyInit__gpuprof_fast(void)
{
	PyObject *m = PyModule_Create(&module);
	if (m && PyModule_AddIntConstant(m, "VERSION", 1) < 0) {
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
