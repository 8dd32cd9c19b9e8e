"""The collector's ABI as the Python integration sees it, and this process's connection to it.

libgpuprof-inject.so's framework calls (agent/inject/inject.h) are declared once, in
SIGNATURES; the record kinds and picture numbers are common/event.h's GP_FW_* and GP_SNAP_*
(the tree tier, tests/tree/t_tree.sh, checks both lists against the C). Every record goes
through emit(): one GP_EV_FW record each, through the C extension _gpuprof_fast.so where it
imports (agent/python/_gpuprof_fast.c), else through ctypes. The library is attached on the
first record that asks for it, not at import: a launcher that imports torch and trains
nothing (torchrun) never takes the rank file from its workers.

Rules: no call here raises into the program. A record that cannot be made marks the
connection broken, and the integration goes quiet.
"""

import os
import sys
import threading as _threading

# GP_FW_* (common/event.h), one per line: the tree tier reads them
FW_INFO = 1
FW_MISSING = 2
FW_OPT_BEGIN = 3
FW_OPT_END = 4
FW_OPT_STATE = 5
FW_MEM_STEP = 6
FW_MEM_PEAK = 7
FW_OWNER = 8
FW_OOM = 9
FW_SNAPSHOT = 10
FW_MEM_MAX = 11
FW_DATA_WAIT = 12
FW_COMPILE = 13
FW_POOL = 14
FW_PROFILER = 15

# GP_SNAP_* (common/event.h): why a memory_viz pickle was written (FW_SNAPSHOT's a)
SNAP_PEAK = 1
SNAP_OOM = 2
SNAP_EXIT = 3
SNAP_SIGTERM = 4

# libgpuprof-inject.so's framework calls (agent/inject/inject.h, exported by inject.map):
# name, result, arguments, as ctypes type names. Applied to every handle on the library.
SIGNATURES = (
    ("gpuprof_fw_attach", "c_int", ()),
    # bit 0: kernels are traced now; above it, what an optimizer step's marker waited for
    # room in CUDA's launch queue (ns)
    ("gpuprof_fw_event", "c_uint64",
     ("c_uint", "c_uint", "c_uint64", "c_uint64", "c_uint64", "c_char_p")),
    ("gpuprof_fw_rank_file", "c_char_p", ()),
    ("gpuprof_fw_tracing", "c_int", ()),
    ("gpuprof_fw_range_start", "c_uint64", ("c_char_p",)),
    ("gpuprof_fw_op_start", "c_uint64", ("c_char_p",)),
    ("gpuprof_fw_range_end", None, ("c_uint64",)),
)


class _Conn:
    lib = None  # ctypes handle on libgpuprof-inject.so; False: none to be had
    attached = False
    broken = False  # a record could not be made: stop trying
    pending = []  # (kind, dev, a, c, d, text) made before the first attach
    fast = None  # _gpuprof_fast.event: the records without text, without ctypes
    fast_mod = None  # ... its module (the operation ranges' calls)
    watch_lib = None  # the history watcher's own handle on the library before any attach
    base = ""  # <jobdir>/step<S>/rank<R>: where the pickles go (beside the rank file)


_c = _Conn()
_ATTACH_LOCK = _threading.Lock()  # the first attach (_attach)


def _inject_path():
    for var in ("NVTX_INJECTION64_PATH", "CUDA_INJECTION64_PATH", "GPUPROF_INJECT"):
        p = os.environ.get(var, "")
        if p.endswith("libgpuprof-inject.so"):
            return p
    return ""


def _declare(lib):
    """SIGNATURES on a handle: the calls this library has (an older one lacks some)."""
    import ctypes

    for name, res, args in SIGNATURES:
        fn = getattr(lib, name, None)
        if fn is not None:
            fn.restype = getattr(ctypes, res) if res else None
            fn.argtypes = [getattr(ctypes, a) for a in args]
    return lib


def _open(path):
    import ctypes

    return _declare(ctypes.CDLL(path))


def _rank_base():
    """The rank file the agent named (GPUPROF_RANK_FILE), less its .gpr."""
    rf = os.environ.get("GPUPROF_RANK_FILE", "")
    return rf[:-4] if rf.endswith(".gpr") else ""


def _load():
    path = _inject_path()
    if not path:
        return False
    lib = _open(path)
    _c.fast = _load_fast(path)
    return lib


def _load_fast(path):
    """The C extension beside this file (_gpuprof_fast.so, agent/python/_gpuprof_fast.c):
    the records without text, the optimizer step's among them, without ctypes, whose call
    cost ~11 us a step on the H200. None, and ctypes does it all, where it is missing, will
    not import (an older or a free-threaded Python) or will not bind to the library."""
    try:
        import importlib.machinery
        import importlib.util
        import sysconfig

        so = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_gpuprof_fast.so")
        if os.environ.get("GPUPROF_PY_CTYPES") == "1" or not os.path.exists(so):
            return None
        # built for the limited API of CPython 3.10 with the GIL: a free-threaded build's
        # objects have another header, which an explicit loader would not check (a crash,
        # not an ImportError)
        if (sys.implementation.name != "cpython" or sys.version_info < (3, 10)
                or sysconfig.get_config_var("Py_GIL_DISABLED")):
            return None
        loader = importlib.machinery.ExtensionFileLoader("_gpuprof_fast", so)
        spec = importlib.util.spec_from_file_location("_gpuprof_fast", so, loader=loader)
        mod = importlib.util.module_from_spec(spec)
        loader.exec_module(mod)
        if getattr(mod, "VERSION", 0) != 1 or not mod.bind(os.fsencode(path)):
            return None
        _c.fast_mod = mod
        return mod.event
    except Exception:
        return None


def _u64(v):
    v = int(v)
    return 0 if v < 0 else min(v, (1 << 64) - 1)


def _emit(kind, dev=0, a=0, c=0, d=0, text=None, attach=True):
    """One GP_EV_FW record; before the first attach, held back unless attach is set."""
    if _c.broken:
        return
    rec = (kind, dev, _u64(a), _u64(c), _u64(d), text)
    if not _c.attached:
        if not attach:
            if len(_c.pending) < 256:
                _c.pending.append(rec)
            return
        if not _attach():
            return
    _put(*rec)


def _put(kind, dev, a, c, d, text):
    try:
        if text is None and _c.fast is not None:
            try:
                _c.fast(kind, dev, a, c, d)
                return
            except Exception:
                pass  # ctypes converts what the extension would not (it masks)
        t = None if text is None else text.encode("utf-8", "replace")[:1000]
        _c.lib.gpuprof_fw_event(kind, dev, a, c, d, t)
    except Exception:
        _c.broken = True


def _step_end(i, n, own):
    """The step hook's one call into the library: the optimizer step's record (with the
    integration's own time so far), the step marker, the window's switch. Returns the
    library's answer (bit 0: kernels traced now; above it: ns the marker waited for room
    in CUDA's queue), None when there is none."""
    if _c.broken or (not _c.attached and not _attach()):
        return None
    try:
        if _c.fast is not None:
            try:
                return _c.fast(FW_OPT_END, 0, i, n, own)
            except Exception:
                pass
        return _c.lib.gpuprof_fw_event(FW_OPT_END, 0, i, n, own, None)
    except Exception:
        _c.broken = True
        return None


def _missing(what, exc=None, attach=True):
    if exc is not None:
        what = "%s (%s: %s)" % (what, type(exc).__name__, str(exc)[:200])
    _emit(FW_MISSING, text=what, attach=attach)


def _bytes(b):
    """Bytes as the report prints them (report/tables.c, gp_human_bytes): "392 MiB",
    "1.26 GiB", never "107368.0 MiB"; the exact bytes go in the record's numbers."""
    units = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
    k = 0
    while abs(b) >= 1000 and k + 1 < len(units):
        b /= 1024.0
        k += 1
    a = abs(b)
    return "%.*f %s" % (0 if k == 0 or a >= 100 else 1 if a >= 10 else 2, b, units[k])


def _attach():
    """Attach now (layer ranges come before the first optimizer step); False: none. One
    thread at a time: the history's watcher (_gpuprof_histwatch) may make the first record."""
    if not _c.attached and not _c.broken:
        lock = _ATTACH_LOCK
        if lock.acquire(timeout=1.0):  # never an endless wait in the program's thread
            try:
                if not _c.attached and not _c.broken:
                    _attach_locked()
            finally:
                lock.release()
    return _c.attached


def _attach_locked():
    try:
        if _c.lib is None:
            _c.lib = _load()
        if _c.lib and _c.lib.gpuprof_fw_attach():
            # this process's own rank file: a launcher's rank (torchrun's workers)
            # records into its own, beside the task's
            fn = getattr(_c.lib, "gpuprof_fw_rank_file", None)
            if fn is not None:
                rf = fn()
                if rf and rf.endswith(b".gpr"):
                    _c.base = os.fsdecode(rf[:-4])
            _c.attached = True
            held, _c.pending = _c.pending, []
            for r in held:
                _put(*r)
        else:
            _c.broken = True
    except Exception:
        _c.broken = True


def _busy(on):
    """The collector told that the integration works on the allocator now (on) or no more:
    CUPTI is not detached meanwhile (agent/inject/fw.c gpuprof_fw_busy). Any handle will do:
    the watcher's before an attach. True: told."""
    lib = _c.lib or _c.watch_lib
    fn = getattr(lib, "gpuprof_fw_busy", None) if lib else None
    if fn is None:
        return False
    try:
        fn(1 if on else 0)
        return True
    except Exception:
        return False


class _Busy:
    """with _abi.busy: the allocator work inside told to the collector (_busy); the end
    told only where the beginning was (a library first had inside the block is not told
    of an end it never saw, which would end another thread's). Nests, on any thread."""

    def __init__(self):
        self.told = _threading.local()

    def __enter__(self):
        st = getattr(self.told, "stack", None)
        if st is None:
            st = self.told.stack = []
        st.append(_busy(True))

    def __exit__(self, *exc):
        st = getattr(self.told, "stack", None)
        if st and st.pop():
            _busy(False)
        return False


busy = _Busy()


def _lib_tracing():
    """The attached library's "are kernels traced now?" (False: not attached)."""
    try:
        fn = getattr(_c.lib, "gpuprof_fw_tracing", None) if _c.attached else None
        return bool(fn and fn())
    except Exception:
        return False


def _tracing_now():
    """The collector's answer to "are kernels traced now?"; None: no collector to ask.
    Asked without attaching (a program that records nothing of ours stays detached)."""
    lib = _c.lib
    if lib is None:
        if _c.watch_lib is None:
            path = _inject_path()
            _c.watch_lib = _open(path) if path else False
        lib = _c.watch_lib
    fn = getattr(lib, "gpuprof_fw_tracing", None) if lib else None
    return bool(fn()) if fn else None


def _after_fork_in_child():
    """A fork that goes on to train records into a rank file of its own (the library
    gives it a ring at its cuInit): it attaches afresh, with nothing of its parent's."""
    global _ATTACH_LOCK
    # the parent's may have been held at the fork, by a thread the child has not
    _ATTACH_LOCK = _threading.Lock()
    _c.attached = _c.broken = False
    _c.pending = []
    _c.base = _rank_base()
