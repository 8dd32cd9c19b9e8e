"""gpuprof's PyTorch integration, with no change to the user's script.

sitecustomize.py (this directory, first on PYTHONPATH under gpuprof's agent) calls arm().
Nothing happens until the program imports torch; then, right after torch's own import:

  steps     every optimizer's step() is timed (torch's global optimizer step hooks from
            2.0, a per-class wrapper of step() on 1.13), so a script without NVTX ranges
            has steps, and the optimizer's state is measured from its state tensors after
            its first steps;
  memory    in mem mode, once the program initialises CUDA: the caching allocator's own
            history (torch.cuda.memory._record_memory_history, a bounded ring), the
            allocator's counters after every step, the live tensors at the memory peak
            and at an out-of-memory error grouped by Python stack, and memory_viz pickles
            next to the rank file (at the peak, at an OOM, at exit and at SIGTERM).

Everything goes into the rank file through libgpuprof-inject.so (gpuprof_fw_event, one
GP_EV_FW record each; see common/event.h), so it survives a crash like the rest. The
library is attached on the first record, not at import: a launcher that imports torch
and trains nothing (torchrun) never takes the rank file from its workers.

Rules: the training run is never changed or stopped. Every hook catches its own errors;
what could not be collected is recorded (GP_FW_MISSING) with the reason, and the hook
goes quiet. Nothing here initialises CUDA: the memory part waits for the program to do
it (torch.cuda._lazy_call). GPUPROF_PYTORCH=0 turns all of it off.
"""

import os
import sys
import threading as _threading
import time
import weakref as _weakref

# GP_FW_* (common/event.h)
_INFO, _MISSING, _OPT_BEGIN, _OPT_END, _OPT_STATE = 1, 2, 3, 4, 5
_MEM_STEP, _MEM_PEAK, _OWNER, _OOM, _SNAPSHOT = 6, 7, 8, 9, 10
_MEM_MAX, _DATA_WAIT, _COMPILE, _POOL, _PROFILER = 11, 12, 13, 14, 15
_SNAP_PEAK, _SNAP_OOM, _SNAP_EXIT, _SNAP_SIGTERM = 1, 2, 3, 4

# The allocator history costs 5-14 % of a step while it records (a Python stack per
# allocation, measured on the H200: bench/torch_cost.py), so it records only where the
# answers are: from CUDA's start through the first HIST_WARM optimizer steps (where the
# peak is usually set, and the optimizer's state made), then for HIST_WINDOW steps when
# the peak has grown since its last picture, at most once every HIST_GAP steps.
_HIST_WARM, _HIST_WINDOW, _HIST_GAP = 5, 3, 50
# A program with no optimizer step (inference, evaluation, a loop of its own) never reaches
# the end of that warm-up: a thread of ours ends it where the collector's first capture
# window closes, or after HIST_NOSTEP_S where no kernels are traced (_hist_watch), looking
# every HIST_TICK_S.
_HIST_NOSTEP_S, _HIST_TICK_S = 60.0, 0.5
_HIST_MAIN_WAIT_S = 30.0  # the watcher's end waits this long for the main thread

_OWNERS_MAX = 8  # stack groups recorded per memory picture (the report keeps 8)
# the owner of a peak's bytes that the history did not see (_picture)
_UNSEEN_TEXT = "(no stack: reached while the allocator history was off, between its windows)"
_FRAMES_MAX = 6  # frames of each owner's stack text


class _State:
    lib = None  # ctypes handle on libgpuprof-inject.so; False: none to be had
    attached = False
    broken = False  # a record could not be made: stop trying
    pending = []  # (kind, dev, a, c, d, text) made before the first attach
    modes = set()
    torch = None
    opt_index = None  # optimizer -> index (weak keys)
    opt_steps = {}  # index -> steps so far
    opt_bytes = {}  # index -> state bytes last recorded
    outer = None  # the optimizer whose step() is running (the outermost one)
    mem_opt = None  # the optimizer after whose steps the allocator is sampled
    mem_on = False  # allocator history recording
    finished = False  # the exit picture is taken
    user_history = False  # the program called _record_memory_history itself
    hist_own = False  # we set the history up (and may switch it)
    hist_live = False  # it records now
    hist_until = 0  # ... until this optimizer step (0: no end planned)
    in_window = False  # a window after warm-up, begun with an empty trace
    hist_window_at = -_HIST_GAP  # the step the last window began
    hist_t0 = 0  # when our history began (monotonic ns)
    hist_stop = None  # threading.Event: the watcher (_hist_watch) stops
    watch_lib = None  # the watcher's own handle on the library before any attach
    hist_end_queued = False  # the watcher's end of the warm-up waits for the main thread
    hist_end_asked = 0  # when it was queued (monotonic ns)
    hist_end_cb = None  # ... as this ctypes callback (kept alive while queued)
    add_pending = None  # Py_AddPendingCall
    record_history = None  # PyTorch's own _record_memory_history
    layers_off = False  # a layer hook failed: no more layer ranges
    layers_windowed = False  # module ranges only while kernels are traced (mode cuda)
    layers_handles = None  # the global module hooks while registered
    layers_register = None  # registers them (_install_layers)
    layers_end_all = None  # ends every layer range still open (_install_layers)
    layers_end_bwd = None  # ends the backward pass's open ranges
    layers_forget = None  # drops the open ranges without ending them (a forked child)
    ops = None  # _gpuprof_ops once its operation ranges are ready
    warmup = None  # the steps the report leaves out (GPUPROF_WARMUP_STEPS)
    dynamo_seen = False  # TorchDynamo has begun a compilation
    in_fork_child = False  # a forked copy that has not recorded a step of its own
    profiling = False  # a torch.profiler session that traces CUDA runs (GP_FW_PROFILER)
    cb_queued = False  # the end-of-backward callback is queued for this pass
    mem_dev = 0
    mem_broken = ""
    peak_seen = 0  # max allocated at the last peak picture
    peak_cost = 0.0  # seconds the last picture took
    peak_at = 0.0  # when it was taken (time.monotonic)
    base = ""  # <jobdir>/step<S>/rank<R>: where the pickles go
    history_entries = 100000
    # this integration's own time on the program's threads so far (monotonic ns): its
    # optimizer hooks, with the step marker they place, and its batch timing; each
    # optimizer step's record carries it (d), and the report takes a step's from two
    # (gpuprof's own cost, measured in the process it is paid in)
    own_ns = 0
    fast = None  # _gpuprof_fast.event: the records without text, without ctypes
    fast_mod = None  # ... its module (the operation ranges' calls)
    last_opt = None  # a weak reference to the optimizer _opt_idx looked up last ...
    last_idx = 0  # ... and its index


_s = _State()
_clock = time.monotonic_ns
_ATTACH_LOCK = _threading.Lock()  # the first attach (_attach)
_HIST_LOCK = _threading.Lock()  # the end of the history's warm-up, by a step or the watcher


# ---- the collector ----


def _inject_path():
    for var in ("NVTX_INJECTION64_PATH", "CUDA_INJECTION64_PATH", "GPUPROF_INJECT"):
        p = os.environ.get(var, "")
        if p.endswith("libgpuprof-inject.so"):
            return p
    return ""


def _load():
    import ctypes

    path = _inject_path()
    if not path:
        return False
    lib = ctypes.CDLL(path)
    lib.gpuprof_fw_attach.restype = ctypes.c_int
    lib.gpuprof_fw_attach.argtypes = []
    # bit 0: kernels are traced now; above it, what an optimizer step's marker waited
    # for room in CUDA's launch queue (ns)
    lib.gpuprof_fw_event.restype = ctypes.c_uint64
    lib.gpuprof_fw_event.argtypes = [
        ctypes.c_uint,
        ctypes.c_uint,
        ctypes.c_uint64,
        ctypes.c_uint64,
        ctypes.c_uint64,
        ctypes.c_char_p,
    ]
    _s.fast = _load_fast(path)
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
        _s.fast_mod = mod
        return mod.event
    except Exception:
        return None


def _u64(v):
    v = int(v)
    return 0 if v < 0 else min(v, (1 << 64) - 1)


def _emit(kind, dev=0, a=0, c=0, d=0, text=None, attach=True):
    """One GP_EV_FW record; before the first attach, held back unless attach is set."""
    if _s.broken:
        return
    rec = (kind, dev, _u64(a), _u64(c), _u64(d), text)
    if not _s.attached:
        if not attach:
            if len(_s.pending) < 256:
                _s.pending.append(rec)
            return
        if not _attach():
            return
    _put(*rec)


def _put(kind, dev, a, c, d, text):
    try:
        if text is None and _s.fast is not None:
            try:
                _s.fast(kind, dev, a, c, d)
                return
            except Exception:
                pass  # ctypes converts what the extension would not (it masks)
        t = None if text is None else text.encode("utf-8", "replace")[:1000]
        _s.lib.gpuprof_fw_event(kind, dev, a, c, d, t)
    except Exception:
        _s.broken = True


def _step_end(i, n, own):
    """The step hook's one call into the library: the optimizer step's record (with the
    integration's own time so far), the step marker, the window's switch. Returns the
    library's answer (bit 0: kernels traced now; above it: ns the marker waited for room
    in CUDA's queue), None when there is none."""
    if _s.broken or (not _s.attached and not _attach()):
        return None
    try:
        if _s.fast is not None:
            try:
                return _s.fast(_OPT_END, 0, i, n, own)
            except Exception:
                pass
        return _s.lib.gpuprof_fw_event(_OPT_END, 0, i, n, own, None)
    except Exception:
        _s.broken = True
        return None


def _missing(what, exc=None, attach=True):
    if exc is not None:
        what = "%s (%s: %s)" % (what, type(exc).__name__, str(exc)[:200])
    _emit(_MISSING, text=what, attach=attach)


# ---- arming: wait for `import torch` ----


class _ImportHook:
    """A meta-path finder that answers nothing itself: each time NAME's spec is asked for
    (an import, importlib.import_module, importlib.util.find_spec, a lazy loader) it finds
    the spec with the other finders and wraps that spec's loader's exec_module, so the
    integration starts once the module's own __init__ has run, whichever spec is the one
    executed. It stays on sys.meta_path until then: transformers, accelerate and
    lightning_utilities ask find_spec("torch") before they import it, and the spec that
    answer holds is not the one the import then executes (PathFinder makes a new loader
    each time); a hook that left at the first question never saw the import."""

    def __init__(self, name, started):
        self.name, self.started = name, started
        self.done = False
        self.busy = _threading.local()  # a finder of ours asking meta_path again

    def find_spec(self, name, path=None, target=None):
        if name != self.name or self.done or getattr(self.busy, "on", False):
            return None
        self.busy.on = True
        try:
            spec = self._others(name, path, target)
        finally:
            self.busy.on = False
        loader = getattr(spec, "loader", None)
        if loader is not None and not isinstance(loader, type):  # never a class's method
            self._wrap(loader)
        return spec

    def _others(self, name, path, target):
        for f in list(sys.meta_path):
            fs = getattr(f, "find_spec", None)
            if f is self or fs is None:
                continue
            try:
                spec = fs(name, path, target)
            except Exception:
                spec = None
            if spec is not None:
                return spec
        return None

    def _wrap(self, loader):
        orig = getattr(loader, "exec_module", None)
        if orig is None or getattr(orig, "_gpuprof_hook", False):
            return
        hook = self

        def exec_module(module):
            orig(module)  # the module's own errors are the program's
            if getattr(module, "__name__", None) == hook.name:
                hook.fire(module)

        exec_module._gpuprof_hook = True
        try:
            loader.exec_module = exec_module
        except Exception:
            pass

    def fire(self, module):
        if self.done:
            return
        self.done = True
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        self.started(module)


def arm():
    if os.environ.get("GPUPROF_PYTORCH", "1") == "0":
        return
    # the modes in force, each by name: the agent (the only way this hook reaches a
    # program) sets them as common/modes.c formats them, so no default and no meaning
    # of "all" is copied here
    m = os.environ.get("GPUPROF_MODES", "")
    mods = set(x.strip() for x in m.split(",") if x.strip())
    if not mods or "none" in mods or "help" in mods:
        return
    _s.modes = mods
    for name, started in (("torch", _on_torch), ("jax", _on_jax)):
        if name in sys.modules:
            started(sys.modules[name])
        else:
            sys.meta_path.insert(0, _ImportHook(name, started))


def _on_torch(torch):
    try:
        _start(torch)
    except Exception as e:
        _missing("PyTorch integration not started", e)


def _start(torch):
    import atexit

    _s.torch = torch
    rf = os.environ.get("GPUPROF_RANK_FILE", "")
    if rf.endswith(".gpr"):
        _s.base = rf[:-4]
    try:
        # the agent sets the value in force (common/settings.c holds the default)
        _s.history_entries = max(0, int(os.environ.get("GPUPROF_TORCH_HISTORY", "0")))
    except ValueError:
        pass
    how = _install_steps(torch)
    how += "; input: " + _install_data_wait(torch)
    how += "; torch.profiler: " + _install_profiler_watch(torch)
    how += "; torch.compile: " + _install_compile_watch(torch)
    _at_fork()
    if "layers" in _s.modes:
        how += "; layer ranges: " + _install_layers(torch)
    elif "cuda" in _s.modes and os.environ.get("GPUPROF_TORCH_LAYERS", "1") != "0":
        how += "; layer ranges: " + _install_layers(torch, windowed=True)
    ops = ""  # last: the text is cut at 255 bytes (report/load.h)
    if "cuda" in _s.modes or "layers" in _s.modes:
        ops = "; ops: " + _ops_install(torch)
    mem = "off (mode mem not asked for)"
    if "mem" in _s.modes:
        mem = _arm_memory(torch)
    _emit(_INFO, text="torch %s; steps: optimizer.step() (%s); memory: %s%s"
          % (getattr(torch, "__version__", "?"), how, mem, ops), attach=False)
    atexit.register(_at_exit)


def _at_fork():
    """A fork that goes on to train records into a rank file of its own (the library
    gives it a ring at its cuInit): it attaches afresh, with nothing of its parent's."""
    def child():
        global _ATTACH_LOCK, _HIST_LOCK
        # the parent's may have been held at the fork, by a thread the child has not
        _ATTACH_LOCK, _HIST_LOCK = _threading.Lock(), _threading.Lock()
        _s.attached = _s.broken = False
        _s.pending = []
        _s.opt_steps = {}
        # a DataLoader worker runs modules (transforms) and never steps: no layer range
        # of its, nor an attach, until it steps itself; the parent's hooks go
        _s.in_fork_child = True
        _s.hist_end_queued = False
        try:
            h, _s.layers_handles = _s.layers_handles, None
            for x in h or ():
                x.remove()
            if _s.layers_forget:
                _s.layers_forget()
            if _s.ops:
                _s.ops.forget()
        except Exception:
            pass
        rf = os.environ.get("GPUPROF_RANK_FILE", "")
        _s.base = rf[:-4] if rf.endswith(".gpr") else ""

    try:
        os.register_at_fork(after_in_child=child)
    except Exception:
        pass


def _install_profiler_watch(torch):
    """torch.profiler (kineto) and gpuprof share CUPTI, whose kinds belong to the whole
    process: a capture window ending while the profiler runs would switch its kernels off,
    and CUPTI detached between windows would leave it nothing. So the library is told
    when kineto is prepared or enabled and when it is disabled (the functions every
    torch.profiler and autograd profiler session goes through), and switches nothing
    meanwhile."""
    try:
        import torch.autograd.profiler as ap
        from torch.profiler import ProfilerActivity
        cuda = ProfilerActivity.CUDA
    except Exception as e:
        return "not watched (%s)" % type(e).__name__

    def uses_cuda(args, kwargs):
        """Does the session trace CUDA (CUPTI)? emit_nvtx, emit_itt and CPU-only
        sessions go through the same entry points without touching CUPTI."""
        try:
            acts = kwargs.get("activities", args[1] if len(args) > 1 else ())
            return cuda in acts
        except Exception:
            return True  # unknown: treat it as CUPTI's user

    def wrap(name, active):
        orig = getattr(ap, name, None)
        if orig is None or getattr(orig, "_gpuprof", False):
            return 0

        def wrapper(*args, **kwargs):
            began = False
            # one session prepares, then enables: one begin for both
            if active and not _s.profiling and uses_cuda(args, kwargs):
                _s.profiling = began = True
                _emit(_PROFILER, a=1)
            try:
                return orig(*args, **kwargs)
            except BaseException:
                if began:  # it did not start: nothing runs that could be disturbed
                    _s.profiling = False
                    _emit(_PROFILER, a=0, c=1)  # c: not a session
                raise
            finally:
                if not active and _s.profiling:
                    _s.profiling = False
                    _emit(_PROFILER, a=0)

        wrapper._gpuprof = True
        wrapper.__wrapped__ = orig
        setattr(ap, name, wrapper)
        return 1

    n = wrap("_prepare_profiler", True) + wrap("_enable_profiler", True)
    if not n or not wrap("_disable_profiler", False):
        return "not watched (no kineto entry points)"
    return "watched"


def _install_compile_watch(torch):
    """TorchDynamo's compilations (torch.compile: a frame's capture, AOTAutograd, Inductor),
    each a GP_FW_COMPILE of its duration, as JAX's are: those before the first step are
    start-up, those during the steps (a new shape, a guard that failed) are what the host
    did while the GPU waited. Its compile callbacks are taken when torch._dynamo is first
    imported (by torch.compile): importing it here would cost every program its import."""
    if not hasattr(torch, "compile"):
        return "not in this PyTorch"
    name = "torch._dynamo.callback"
    if name in sys.modules:
        _on_dynamo(sys.modules[name])
        return "compilations timed"
    sys.meta_path.insert(0, _ImportHook(name, _on_dynamo))
    return "compilations timed once it is used"


def _on_dynamo(cb):
    try:
        _watch_dynamo(cb)
    except Exception as e:
        _missing("torch.compile's compilations", e, attach=False)


def _watch_dynamo(cb):
    import threading
    import time

    h = getattr(cb, "callback_handler", None)
    on_start = getattr(h, "register_start_callback", None)
    on_end = getattr(h, "register_end_callback", None)
    if not (on_start and on_end):
        _missing("torch.compile's compilations: no compile callbacks in this PyTorch",
                 attach=False)
        return
    lock = threading.Lock()
    state = {"depth": 0, "t0": 0}  # process-wide: PyTorch 2.7 on may end a compilation
    # on another thread than the one that began it

    def start(*args, **kwargs):  # PyTorch 2.6 passes nothing, later ones their reason
        try:
            _s.dynamo_seen = True
            _layers_never()  # before Dynamo traces a module call with our hooks in it
            with lock:
                state["depth"] += 1
                if state["depth"] == 1:
                    state["t0"] = time.perf_counter_ns()
        except Exception:
            pass

    def end(*args, **kwargs):
        try:
            with lock:
                state["depth"] = max(state["depth"] - 1, 0)
                took = time.perf_counter_ns() - state["t0"] if not state["depth"] else -1
            if took >= 0:
                _emit(_COMPILE, a=took, text="torch.compile")
        except Exception:
            pass

    try:
        on_start(start)
        on_end(end)
    except Exception as e:
        _missing("torch.compile's compilations", e, attach=False)


def _install_data_wait(torch):
    """Time the program spends waiting for its next batch: every DataLoader iterator's
    __next__ (single- and multi-process alike), one record per batch (GP_FW_DATA_WAIT,
    a = ns waited). The report sets it against the GPU's idle time: an input-bound job
    says so, with its figure per step."""
    import importlib
    import time

    try:
        dl = importlib.import_module("torch.utils.data.dataloader")
        It = dl._BaseDataLoaderIter
    except Exception as e:
        _missing("time waiting for the next batch", e, attach=False)
        return "not timed"
    nxt = It.__next__
    if getattr(nxt, "_gpuprof_wait", False):
        return "DataLoader.__next__ timed"
    clock = time.monotonic_ns

    def __next__(self):
        t0 = clock()
        try:
            return nxt(self)
        finally:
            t1 = clock()
            try:
                _emit(_DATA_WAIT, a=t1 - t0)
            except Exception:
                pass
            _s.own_ns += clock() - t1

    __next__._gpuprof_wait = True
    __next__.__wrapped__ = nxt
    It.__next__ = __next__
    return "DataLoader.__next__ timed"


# ---- JAX: compilation and XLA's memory pool, with no change to the program ----


def _on_jax(jax):
    try:
        _start_jax(jax)
    except Exception as e:
        _missing("JAX integration not started", e)


def _jax_ready():
    """Has the program initialised JAX's backends? (asking for devices before it does
    would initialise them ourselves, under settings the program may still change)"""
    try:
        from jax._src import xla_bridge as xb
    except Exception:
        return False
    f = getattr(xb, "backends_are_initialized", None)
    if f is not None:
        return bool(f())
    return bool(getattr(xb, "_backends", None))


def _jax_pool_sample(jax, final=False):
    """XLA's allocator on each GPU: in use, the pool it holds from the device, its peak
    (GP_FW_POOL: a = bytes in use, c = pool bytes, d = peak in use; text names the
    allocator and its limit)."""
    if not _jax_ready():
        return
    for dev in jax.local_devices():
        if getattr(dev, "platform", "") != "gpu":
            continue
        st = dev.memory_stats() or {}
        use = st.get("bytes_in_use", 0)
        pool = st.get("pool_bytes", st.get("bytes_reserved", 0))
        peak = st.get("peak_bytes_in_use", 0)
        text = "XLA %s allocator: limit %s, peak pool %s%s" % (
            "BFC" if "bytes_limit" in st else "device", _mib(st.get("bytes_limit", 0)),
            _mib(st.get("peak_pool_bytes", pool)), ", at exit" if final else "")
        _emit(_POOL, dev=getattr(dev, "id", 0), a=use, c=pool, d=peak, text=text)


def _start_jax(jax):
    import atexit
    import threading
    import time

    how = []
    mon = getattr(jax, "monitoring", None)
    reg = getattr(mon, "register_event_duration_secs_listener", None)
    if reg is not None:
        def on_duration(event, duration, **kwargs):
            try:
                # the backend's compilation (XLA's passes and autotuning included)
                if event.endswith("backend_compile_duration"):
                    _emit(_COMPILE, a=int(duration * 1e9), text=event)
            except Exception:
                pass

        reg(on_duration)
        how.append("compilation from jax.monitoring")
    else:
        _missing("JAX compilation times: jax.monitoring has no duration listeners")
    if "mem" in _s.modes or "timing" in _s.modes:
        def sampler():
            armed = False
            while True:
                time.sleep(1.0)
                try:
                    if not armed and _jax_ready():
                        # registered once JAX has registered its own clean-up (at its
                        # backends' start), so ours runs before it (atexit is LIFO)
                        atexit.register(_jax_pool_sample, jax, True)
                        armed = True
                    _jax_pool_sample(jax)
                except Exception as e:
                    _missing("XLA memory statistics", e)
                    return

        threading.Thread(target=sampler, name="gpuprof-jax", daemon=True).start()
        how.append("XLA's memory_stats() every 1 s and at exit")
    _emit(_INFO, text="jax %s; %s" % (getattr(jax, "__version__", "?"), "; ".join(how)),
          attach=False)


# ---- layers (mode layers): a range per module forward and backward ----


def _attach():
    """Attach now (layer ranges come before the first optimizer step); False: none. One
    thread at a time: the history's watcher (_hist_watch) may make the first record."""
    if not _s.attached and not _s.broken:
        lock = _ATTACH_LOCK
        if lock.acquire(timeout=1.0):  # never an endless wait in the program's thread
            try:
                if not _s.attached and not _s.broken:
                    _attach_locked()
            finally:
                lock.release()
    return _s.attached


def _attach_locked():
    try:
        if _s.lib is None:
            _s.lib = _load()
        if _s.lib and _s.lib.gpuprof_fw_attach():
            import ctypes

            _s.lib.gpuprof_fw_range_start.restype = ctypes.c_uint64
            _s.lib.gpuprof_fw_range_start.argtypes = [ctypes.c_char_p]
            _s.lib.gpuprof_fw_range_end.restype = None
            _s.lib.gpuprof_fw_range_end.argtypes = [ctypes.c_uint64]
            # this process's own rank file: a launcher's rank (torchrun's workers)
            # records into its own, beside the task's
            fn = getattr(_s.lib, "gpuprof_fw_rank_file", None)
            if fn is not None:
                fn.restype = ctypes.c_char_p
                fn.argtypes = []
                rf = fn()
                if rf and rf.endswith(b".gpr"):
                    _s.base = os.fsdecode(rf[:-4])
            _s.attached = True
            held, _s.pending = _s.pending, []
            for r in held:
                _put(*r)
        else:
            _s.broken = True
    except Exception:
        _s.broken = True


def _install_layers(torch, windowed=False):
    """Global module hooks: a forward range from the forward pre-hook to the forward
    hook; a backward range from the first gradient of the module's outputs to the first
    of its inputs (tensor hooks, which only observe), else to the end of the backward
    pass. Names are the modules' class names. Full backward hooks are not used: they
    wrap the module's tensors and can break in-place operations. windowed: registered
    only while kernels are traced (_layers_window), so the steps between capture windows
    run the module call's fast path, with no hook at all.
    What a hook inside someone else's model must not do, each found by a review: be
    traced by TorchDynamo (a graph break inside Module.__call__ made it give up compiling
    modules for the whole process, and fullgraph=True raised), hook a leaf tensor (a
    Parameter's hooks are never freed: one more per call, run in every later backward),
    keep a module alive or a range open after a forward that raised or a pass that
    failed, or act in a forked DataLoader worker."""
    import importlib
    import threading

    mm = importlib.import_module("torch.nn.modules.module")
    pre = getattr(mm, "register_module_forward_pre_hook", None)
    post = getattr(mm, "register_module_forward_hook", None)
    if not (pre and post):
        if not windowed:  # asked for (mode layers): say it could not be had
            _missing("layer ranges: this PyTorch has no global module hooks", attach=False)
        return "not available"
    comp = getattr(getattr(torch, "compiler", None), "is_compiling", None)
    if comp is None:
        comp = getattr(getattr(torch, "_dynamo", None), "is_compiling", None)
    compiling = comp or (lambda: False)
    tls = threading.local()
    stacks = []  # every thread's forward stack, ended when the hooks go
    stacks_lock = threading.Lock()
    engine = getattr(getattr(torch.autograd, "Variable", None), "_execution_engine", None)
    open_bwd = []  # backward ranges open in this pass: ended by the engine's callback
    names = {}

    def name_of(module):
        cls = type(module)
        n = names.get(cls)
        if n is None:
            n = names[cls] = cls.__name__
        return n

    def fail(e):
        _s.layers_off = True
        _missing("layer ranges", e)

    def end_open():
        for rec in open_bwd:
            if rec[0] and not rec[1]:
                rec[1] = True
                _s.lib.gpuprof_fw_range_end(rec[0])
        del open_bwd[:]
        _s.cb_queued = False

    def end_all():
        """Every range still open: each thread's forward stack, the backward pass's."""
        try:
            with stacks_lock:
                for st in stacks:
                    while st:
                        _s.lib.gpuprof_fw_range_end(st.pop()[1])
            end_open()
        except Exception:
            pass

    def tensors(x):
        if isinstance(x, torch.Tensor):
            return [x]
        if isinstance(x, (tuple, list)):
            return [t for t in x if isinstance(t, torch.Tensor)]
        return []

    def graph_tensors(x):  # a hook on a leaf (a Parameter) would outlive the pass
        return [t for t in tensors(x) if t.requires_grad and t.grad_fn is not None]

    def backward_hooks(module, inputs, output):
        outs = graph_tensors(output)
        if not outs:
            return
        rec = [0, False]  # range id, ended
        name = name_of(module) + " backward"

        def on_out(grad):
            try:
                if not rec[0] and not rec[1]:
                    rec[0] = _s.lib.gpuprof_fw_range_start(name.encode())
                    open_bwd.append(rec)
                    if engine is not None and not _s.cb_queued:
                        _s.cb_queued = True
                        engine.queue_callback(end_open)
            except Exception as e:
                fail(e)

        def on_in(grad):
            try:
                if rec[0] and not rec[1]:
                    rec[1] = True
                    _s.lib.gpuprof_fw_range_end(rec[0])
            except Exception as e:
                fail(e)

        for t in outs:
            t.register_hook(on_out)
        for t in graph_tensors(inputs):
            t.register_hook(on_in)

    def stack():
        st = getattr(tls, "stack", None)
        if st is None:
            st = tls.stack = []
            with stacks_lock:
                stacks.append(st)
        return st

    def fpre(module, inputs):
        if compiling() or _s.layers_off or _s.in_fork_child:
            return
        if not (_s.attached if _s.layers_windowed else _attach()):
            return
        try:
            st = stack()
            if len(st) >= 256:  # entries whose post-hook never came (PyTorch 1.x)
                while st:
                    _s.lib.gpuprof_fw_range_end(st.pop()[1])
            st.append((id(module), _s.lib.gpuprof_fw_range_start(name_of(module).encode())))
        except Exception as e:
            fail(e)

    def fpost(module, inputs, output):
        if compiling() or _s.layers_off or not _s.attached:
            return
        try:
            st = stack()
            mid = id(module)
            if any(m == mid for m, _ in st):  # ends inner forwards that raised too
                while st:
                    m, rid = st.pop()
                    _s.lib.gpuprof_fw_range_end(rid)
                    if m == mid:
                        break
            if torch.is_grad_enabled():
                backward_hooks(module, inputs, output)
        except Exception as e:
            fail(e)

    def register():
        if _s.layers_handles is None:
            try:  # called also when the forward raised (PyTorch 2.0 on)
                hpost = post(fpost, always_call=True)
            except TypeError:
                hpost = post(fpost)
            _s.layers_handles = (pre(fpre), hpost)

    def forget():  # a forked child: its parent's open ranges are not its own
        for st in stacks:
            del st[:]
        del open_bwd[:]
        _s.cb_queued = False

    _s.layers_register = register
    _s.layers_end_all = end_all
    _s.layers_end_bwd = end_open
    _s.layers_forget = forget
    if windowed:
        _s.layers_windowed = True
        return "module forward and backward, in capture windows"
    register()
    return "module forward and backward"


def _layers_unregister():
    h, _s.layers_handles = _s.layers_handles, None
    for x in h or ():
        x.remove()
    if _s.layers_end_all:
        _s.layers_end_all()


def _layers_never():
    """TorchDynamo compiles: the windowed hooks go for good, before it traces anything."""
    if _s.ops:
        _s.ops.never()
    if _s.layers_windowed:
        _s.layers_windowed = False
        _layers_unregister()


def _warmup_steps():
    if _s.warmup is None:
        try:  # the agent sets the value in force (common/settings.c holds the default)
            _s.warmup = max(0, int(os.environ.get("GPUPROF_WARMUP_STEPS", "3")))
        except ValueError:
            _s.warmup = 3
    return _s.warmup


def _lib_tracing():
    """The attached library's "are kernels traced now?" (False: not attached)."""
    try:
        fn = getattr(_s.lib, "gpuprof_fw_tracing", None) if _s.attached else None
        return bool(fn and fn())
    except Exception:
        return False


def _compiled():
    """Has torch.compile (TorchDynamo) compiled a frame? (the compile watch says so at its
    start; its counters do not count a fullgraph compile)"""
    u = sys.modules.get("torch._dynamo.utils")
    try:
        return _s.dynamo_seen or bool(u and u.counters["frames"]["total"])
    except Exception:
        return True


def _layers_step(tracing=None):
    """An optimizer step returned: the backward pass is over, so a backward range still
    open is one a failed pass left (its end-of-pass callback never ran); then the window
    (tracing: the library's answer to the step's record, None: ask it)."""
    if _s.cb_queued and _s.layers_end_bwd:
        try:
            _s.layers_end_bwd()
        except Exception:
            pass
    _layers_window(tracing)


def _layers_window(tracing=None):
    """After an optimizer step (the collector switched its window there): the module
    hooks registered while kernels are traced, removed when they are not. tracing: the
    library's answer to the step's record; None: ask it."""
    if not _s.layers_windowed:
        return
    if tracing is None:
        tracing = _lib_tracing()
    if not tracing and _s.layers_handles is None:
        return  # between windows, nothing registered: every step but a window's ends
    if tracing and (_s.layers_off or not _s.attached or _compiled()):
        tracing = False
    if tracing and _s.layers_handles is None:
        _s.layers_register()
    elif not tracing and _s.layers_handles is not None:
        _layers_unregister()
        if _compiled():
            _s.layers_windowed = False


# ---- operation ranges (_gpuprof_ops.py): kernel time by the user's line ----


def _ops_install(torch):
    try:
        import _gpuprof_ops

        how = _gpuprof_ops.install(torch, _missing)
        if how.startswith("by line"):
            _s.ops = _gpuprof_ops
            _gpuprof_ops.watch_calls(lambda: _s.attached and not _s.in_fork_child and _s.lib,
                                     _lib_tracing, lambda: _s.fast_mod)
        return how
    except Exception as e:
        _missing("operation ranges not started", e, attach=False)
        return "not available"


def _ops_window(tracing=None, steps=None):
    """After an optimizer step (steps: its count): the operation ranges' mode pushed while
    kernels are traced, for the first steps of a window after the warm-up's (which the
    report leaves out; GPUPROF_WARMUP_STEPS), popped between windows (all along in mode
    layers); never once TorchDynamo compiled."""
    if tracing is None:
        tracing = _lib_tracing()
    if tracing and steps is not None and steps < _warmup_steps():
        return  # a window's steps are counted from the first after the warm-up
    every = "layers" in _s.modes
    tracing = (tracing or every) and _s.attached and not _s.in_fork_child
    if tracing and _compiled():
        _s.ops.never()
        tracing = False  # popped here, at an optimizer step, outside any compilation
    _s.ops.window(tracing, _s.lib, None if every else _s.ops.STEPS, _s.fast_mod)


# ---- steps: optimizer.step() of every optimizer ----


def _install_steps(torch):
    import weakref

    import importlib

    _s.opt_index = weakref.WeakKeyDictionary()
    om = importlib.import_module("torch.optim.optimizer")  # 1.13 deletes the attribute
    pre = getattr(om, "register_optimizer_step_pre_hook", None)
    post = getattr(om, "register_optimizer_step_post_hook", None)
    if pre and post:
        pre(_step_pre)
        post(_step_post)
        return "global step hooks"
    # PyTorch 1.13: no global hooks; wrap step() of each optimizer class, once, when its
    # first instance is made (Optimizer.__init__ runs for every optimizer)
    Opt = om.Optimizer
    init = Opt.__init__

    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        try:
            _wrap_class(type(self))
        except Exception as e:
            _missing("optimizer steps of %s" % type(self).__name__, e, attach=False)

    __init__.__wrapped__ = init
    Opt.__init__ = __init__
    return "step() wrappers"


def _wrap_class(cls):
    if cls.__dict__.get("_gpuprof_wrapped"):
        return
    step = cls.step
    if getattr(step, "_gpuprof_step", False):  # a subclass inheriting a wrapped step
        cls._gpuprof_wrapped = True
        return
    import functools

    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        _step_pre(self, args, kwargs)
        out = step(self, *args, **kwargs)
        _step_post(self, args, kwargs)
        return out

    wrapper._gpuprof_step = True
    cls.step = wrapper
    cls._gpuprof_wrapped = True


def _opt_idx(opt):
    try:
        if _s.last_opt is not None and _s.last_opt() is opt:
            return _s.last_idx  # the usual case: the same optimizer as last time
        i = _s.opt_index.get(opt)
        if i is None:
            i = len(_s.opt_steps)
            _s.opt_index[opt] = i
            _s.opt_steps[i] = 0
        _s.last_opt, _s.last_idx = _weakref.ref(opt), i  # weak: the program may drop it
        return i
    except TypeError:  # not weak-referenceable or unhashable
        return 0


def _stepping(opt):
    """Is opt's step() on this thread's stack? (an optimizer whose step raised never
    reached the post hook: it is no longer the outer one)"""
    f = sys._getframe(2)
    for _ in range(64):
        if f is None:
            return False
        if f.f_locals.get("self") is opt:
            return True
        f = f.f_back
    return False


def _step_pre(opt, args, kwargs):
    t0 = _clock()
    try:
        if _s.outer is not None and _s.outer is not opt and _stepping(_s.outer):
            return  # an optimizer stepping inside another's step (a wrapper)
        _s.outer = opt  # its step's begin is not recorded: no reader wants it
    except Exception:
        pass
    finally:
        _s.own_ns += _clock() - t0


def _step_post(opt, args, kwargs):
    t0 = _clock()
    waited = 0
    try:
        if _s.outer is not opt:
            return
        _s.outer = None
        _s.in_fork_child = False  # a forked child that trains records as itself
        i = _opt_idx(opt)
        n = _s.opt_steps.get(i, 0) + 1
        _s.opt_steps[i] = n
        # our time so far: what follows (the marker this record places, the allocator's
        # counters) lands in the next step's figure, less what the marker waited for room
        # in CUDA's queue (the program's own wait: it would have waited at its next launch)
        ret = _step_end(i, n, _s.own_ns + _clock() - t0)
        if ret is not None:
            waited = ret >> 1
        _layers_step(None if ret is None else ret & 1)
        if _s.ops:
            _ops_window(None if ret is None else ret & 1, n)
        if n <= 2:
            _opt_state(opt, i)
        if _s.mem_opt is None:
            _s.mem_opt = i  # the allocator is sampled after the first stepping optimizer's steps
        if _s.mem_on and i == _s.mem_opt:
            _after_step(n)
    except Exception as e:
        _missing("optimizer step hook", e)
    finally:
        _s.own_ns += max(0, _clock() - t0 - waited)


def _mib(b):
    return "%.1f MiB" % (b / 1048576.0)


def _opt_state(opt, i):
    """Bytes the optimizer keeps: its state tensors (exp_avg, exp_avg_sq, momentum ...),
    in all and on CUDA devices."""
    torch = _s.torch
    total = on_dev = 0
    by = {}
    for st in list(getattr(opt, "state", {}).values()):
        vals = st.values() if isinstance(st, dict) else ()
        for v in vals:
            if not isinstance(v, torch.Tensor):
                continue
            nb = v.numel() * v.element_size()
            key = "%s on %s" % (str(v.dtype).replace("torch.", ""), v.device.type)
            by[key] = by.get(key, 0) + nb
            total += nb
            if v.device.type == "cuda":
                on_dev += nb
    if _s.opt_bytes.get(i) == total:
        return
    _s.opt_bytes[i] = total
    parts = ", ".join("%s %s" % (_mib(b), k) for k, b in sorted(by.items(), key=lambda kv: -kv[1]))
    _emit(_OPT_STATE, a=i, c=on_dev, d=total,
          text="%s: %s" % (type(opt).__name__, parts or "no state tensors"))


# ---- memory: the caching allocator's own view ----


def _arm_memory(torch):
    cuda = getattr(torch, "cuda", None)
    if cuda is None or not getattr(getattr(torch, "version", None), "cuda", None):
        return "no CUDA in this PyTorch build"
    if not hasattr(cuda, "_lazy_call") or not hasattr(cuda.memory, "_record_memory_history"):
        _missing("tensor-level memory: this PyTorch has no allocator history", attach=False)
        return "no allocator history in this PyTorch"
    # a program that sets up the history itself keeps its own settings
    orig = cuda.memory._record_memory_history

    def _record_memory_history(*args, **kwargs):
        _s.user_history = True
        _s.hist_own = False  # from now on the program's settings stand
        return orig(*args, **kwargs)

    _record_memory_history.__wrapped__ = orig
    _record_memory_history.__doc__ = orig.__doc__
    cuda.memory._record_memory_history = _record_memory_history
    _s.record_history = orig
    cuda._lazy_call(_on_cuda_init)  # runs when the program initialises CUDA, not before
    return "allocator history (%d entries) from CUDA's initialisation" % _s.history_entries


def _on_cuda_init():
    # inside torch.cuda._lazy_init: an exception here would fail the program's CUDA
    # initialisation, so none may leave
    try:
        _start_history()
    except Exception as e:
        _s.mem_broken = "%s: %s" % (type(e).__name__, e)
        _missing("tensor-level memory", e)


def _start_history():
    torch = _s.torch
    mem = torch.cuda.memory
    try:
        _s.mem_dev = torch.cuda.current_device()
    except Exception:
        _s.mem_dev = 0
    if _s.history_entries == 0:
        _missing("tensor-level memory: GPUPROF_TORCH_HISTORY=0")
        return
    if _s.record_history is None:
        _s.record_history = mem._record_memory_history
    if _s.user_history:
        _missing("allocator history: the program set its own, kept as it set it")
    else:
        _history(True)
        _s.hist_own = True
        _s.hist_until = _HIST_WARM
        _hist_watch_start()
    _s.mem_on = True
    obs = getattr(torch._C, "_cuda_attach_out_of_memory_observer", None)
    if obs is not None:
        obs(_on_oom)
    else:
        _missing("out-of-memory pictures: this PyTorch has no OOM observer")
    _hook_sigterm()


def _stats():
    """PyTorch's allocator counters (allocated and reserved, now and peak): the nested
    dictionary PyTorch's own memory_stats() flattens, read without the flattening. Of the
    device the program trains on now: CUDA starts (and our history with it) inside
    torch.cuda.set_device(), before the switch to the worker's own GPU."""
    try:
        _s.mem_dev = _s.torch._C._cuda_getDevice()
    except Exception:
        pass
    try:
        st = _s.torch._C._cuda_memoryStats(_s.mem_dev)
        a, r = st["allocated_bytes"]["all"], st["reserved_bytes"]["all"]
        return a["current"], a["peak"], r["current"], r["peak"]
    except Exception:
        st = _s.torch.cuda.memory_stats(_s.mem_dev)
        return (st.get("allocated_bytes.all.current", 0), st.get("allocated_bytes.all.peak", 0),
                st.get("reserved_bytes.all.current", 0), st.get("reserved_bytes.all.peak", 0))




def _history(on, clear=False):
    rec = _s.record_history
    if on:
        kw = dict(enabled="all", context="all", stacks="python", max_entries=_s.history_entries)
        try:  # PyTorch 2.1 and later; a window starts with an empty trace where it can
            try:
                rec(clear_history=clear, **kw) if clear else rec(**kw)
            except TypeError:
                if not clear:
                    raise
                rec(**kw)
        except TypeError:  # 1.13 and 2.0
            rec(True, record_context=True, trace_alloc_max_entries=_s.history_entries,
                trace_alloc_record_context=True)
    else:
        try:
            rec(enabled=None)
        except TypeError:
            rec(False)
    _s.hist_live = on


def _hist_watch_start():
    """The watcher of a program that never steps an optimizer (_hist_watch)."""
    _s.hist_t0 = _clock()
    _s.hist_stop = _threading.Event()
    _threading.Thread(target=_hist_watch, name="gpuprof-history", daemon=True).start()


def _hist_watch():
    """Without an optimizer step, _after_step never runs, and the history begun at CUDA's
    initialisation would take a Python stack at every allocation and free of the whole
    job (a ResNet-50 inference loop ran 17 % slower for it). This thread ends the warm-up
    stretch for such a program; it leaves at the first optimizer step, which owns the
    history from there on."""
    while not _s.hist_stop.wait(_HIST_TICK_S):
        try:
            if not _hist_watch_tick(_clock()):
                return
        except Exception as e:
            _missing("allocator history watch", e)
            return


def _hist_watch_tick(now):
    """One look at a history that records with no optimizer step seen: ended once the
    collector's first capture window has closed (it opens at CUDA's initialisation and
    holds the start-up, the warm-up and the first steps, as HIST_WARM does), or after
    HIST_NOSTEP_S where no kernels are traced (no mode cuda, or no collector to ask).
    False: nothing more to watch."""
    if _s.opt_steps or not (_s.hist_live and _s.hist_until) or _s.in_fork_child:
        return False
    if "cuda" in _s.modes:
        tracing = _tracing_now()
        if tracing:
            return True  # the first window traces: the history with it
        if tracing is not None:
            return _hist_end_soon()
    if now - _s.hist_t0 < _HIST_NOSTEP_S * 1e9:
        return True
    return _hist_end_soon()


def _importing():
    """Is a module being imported now, by any thread? (importlib marks a module's spec
    _initializing while its code runs.) Read through the module's __dict__: an attribute
    of a lazily loaded module would load it."""
    for m in list(sys.modules.values()):
        try:
            spec = object.__getattribute__(m, "__dict__").get("__spec__")
            if spec is not None and getattr(spec, "_initializing", False):
                return True
        except Exception:
            continue
    return False


def _hist_end_soon():
    """The watcher's end of the warm-up stretch, done on the main thread between two of
    its bytecodes (Py_AddPendingCall), where no import is under way: the allocator's
    snapshot imports modules (PyTorch 2.11's looks up torch._inductor, seconds of imports
    behind it), and begun on a thread of ours while the program imported torch._dynamo
    (an optimizer's first param group), Python broke the circle by handing the program a
    partly initialised torch._inductor.utils: ImportError, exit 1 (issue 51). True: watch
    on (the end is pending or is retried); False: done."""
    if _threading.current_thread() is _threading.main_thread():
        return True if _importing() else _hist_end()
    if _s.hist_end_queued:
        # a main thread that runs no bytecode for long (blocked in C, or joining the
        # threads that do the work): the history off from here, without the picture
        # that could import; the queued call then finds it done
        if _clock() - _s.hist_end_asked > _HIST_MAIN_WAIT_S * 1e9 and not _importing():
            return _hist_end(picture=False)
        return True
    try:
        import ctypes

        if _s.hist_end_cb is None:
            _s.hist_end_cb = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)(_hist_end_pending)
            _s.add_pending = ctypes.pythonapi.Py_AddPendingCall
            _s.add_pending.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
            _s.add_pending.restype = ctypes.c_int
        _s.hist_end_queued, _s.hist_end_asked = True, _clock()
        if _s.add_pending(ctypes.cast(_s.hist_end_cb, ctypes.c_void_p), None) != 0:
            _s.hist_end_queued = False  # the queue is full: the next tick asks again
    except Exception as e:
        _s.hist_end_queued = False
        _missing("allocator history watch (no pending call)", e)
        return False
    return True


def _hist_end_pending(_arg):
    """Py_AddPendingCall's callback, on the main thread: never raises (an exception
    here would surface in the program's code)."""
    try:
        if not _s.in_fork_child and not _importing():  # a fork's copy of the queue: not its
            _hist_end()
    except Exception as e:
        _missing("allocator history end", e)
    finally:
        _s.hist_end_queued = False
    return 0


def _tracing_now():
    """The collector's answer to "are kernels traced now?"; None: no collector to ask.
    Asked without attaching (a program that records nothing of ours stays detached)."""
    lib = _s.lib
    if lib is None:
        import ctypes

        if _s.watch_lib is None:
            path = _inject_path()
            _s.watch_lib = ctypes.CDLL(path) if path else False
        lib = _s.watch_lib
    fn = getattr(lib, "gpuprof_fw_tracing", None) if lib else None
    return bool(fn()) if fn else None


def _hist_end(picture=True):
    """The watcher ends the warm-up stretch as _after_step would (the peak's picture
    when it grew, then the history off), unless an optimizer step came first."""
    with _HIST_LOCK:
        if _s.opt_steps or not (_s.hist_live and _s.hist_until):
            return False
        alloc, peak, res, res_peak = _stats()
        if picture and peak > _s.peak_seen * 1.01:
            _picture(_SNAP_PEAK, peak, res_peak)
        _history(False)
        _s.hist_until = 0
        _s.in_window = False
    return False


def _after_step(n):
    """After optimizer step n: the allocator's counters (every step for the first 20,
    then every 10th: the growth per step needs no more), the peak's picture when it grew,
    and the history switched on and off as above."""
    ending = _s.hist_live and _s.hist_until and n >= _s.hist_until
    if not ending and n > 20 and n % 10:
        return
    alloc, peak, res, res_peak = _stats()
    _emit(_MEM_STEP, dev=_s.mem_dev, a=alloc, c=res, d=n)
    grew = peak > _s.peak_seen * 1.01
    if ending:  # a recording stretch ends: the peak's picture, and what a window kept
        with _HIST_LOCK:  # not at once with the watcher's end (_hist_end)
            if _s.hist_live:
                if grew or _s.in_window:
                    _picture(_SNAP_PEAK, peak, res_peak, window=_s.in_window)
                _history(False)
            _s.hist_until = 0
            _s.in_window = False
    elif grew and _s.hist_live and not _s.in_window:
        _picture(_SNAP_PEAK, peak, res_peak)
    elif grew and not _s.hist_live and n - _s.hist_window_at >= _HIST_GAP and _s.hist_own:
        _history(True, clear=True)  # the peak grew unseen: record while it recurs
        _s.hist_until = n + _HIST_WINDOW
        _s.hist_window_at = n
        _s.in_window = True


def _frames_text(frames):
    """Python frames (innermost first) as "file.py:LINE function" joined by " <- ",
    starting at the first frame outside torch itself (the line of the program that owns
    the memory), with torch's innermost frame kept when there is nothing else."""
    if frames is None:
        return "(no stack: allocated while the history was off)"
    if not frames:
        return "(no Python frames: allocated by C++, the autograd thread or the history off)"
    out = []
    for f in frames:
        fn = f.get("filename", "") if isinstance(f, dict) else ""
        if not fn.endswith(".py") and fn:
            continue  # C++ frames
        out.append((fn, f.get("line", 0), f.get("name", "?")))
    own = [x for x in out if "/torch/" not in x[0]]
    use = own or out[:1]
    return " <- ".join("%s:%s %s" % (os.path.basename(fn) or "?", ln, nm)
                       for fn, ln, nm in use[:_FRAMES_MAX]) or "(no Python stack)"


def _owners(live):
    """live: {addr: (size, frames)} -> [(bytes, tensors, text)] largest first."""
    groups = {}
    for size, frames in live.values():
        k = _frames_text(frames)
        b, n = groups.get(k, (0, 0))
        groups[k] = (b + size, n + 1)
    return sorted(((b, n, k) for k, (b, n) in groups.items()), reverse=True)


def _emit_owners(live, dev, which, unseen=0):
    """The largest groups, then one for all the others: the records add up to the total.
    unseen: bytes of the total no block of live accounts for (a peak reached while the
    history was off), one record of their own, last."""
    groups = _owners(live)
    most = _OWNERS_MAX - (1 if unseen else 0)
    keep = groups[:most - 1] if len(groups) > most else groups
    rest = groups[len(keep):]
    for b, n, text in keep:
        _emit(_OWNER, dev=dev, a=b, c=n, d=which, text=text)
    if rest:
        _emit(_OWNER, dev=dev, a=sum(g[0] for g in rest), c=sum(g[1] for g in rest), d=which,
              text="(%d other stacks)" % len(rest))
    if unseen:
        _emit(_OWNER, dev=dev, a=unseen, c=0, d=which, text=_UNSEEN_TEXT)


def _live_now(snap, dev):
    live = {}
    for seg in snap.get("segments", ()):
        if seg.get("device", dev) != dev:
            continue
        for b in seg.get("blocks", ()):
            if b.get("state") == "active_allocated":
                live[b["address"]] = (b["size"], b.get("frames"))
    return live


def _live_at_peak(snap, dev):
    """Replay the allocator's history backwards from now to the largest allocated total
    inside it: the blocks live then, with their allocation stacks, and the reserved total
    at that moment. Allocated counts as PyTorch's allocated_bytes does: from alloc to
    free_requested."""
    live = _live_now(snap, dev)
    traces = snap.get("device_traces") or []
    tr = traces[dev] if dev < len(traces) else []
    reserved = sum(s.get("total_size", 0) for s in snap.get("segments", ())
                   if s.get("device", dev) == dev)
    cur = sum(s for s, _ in live.values())
    best, best_i, best_res = cur, len(tr), reserved
    res = reserved
    for i in range(len(tr) - 1, -1, -1):  # state before entry i
        e = tr[i]
        act, size = e.get("action"), e.get("size", 0)
        if act == "alloc":
            cur -= size
        elif act in ("free_requested", "free"):
            cur += size
        elif act in ("segment_alloc", "segment_map"):
            res -= size
        elif act in ("segment_free", "segment_unmap"):
            res += size
        if cur > best:
            best, best_i, best_res = cur, i, res
    # undo the entries after the peak; blocks freed after it get their allocation stack
    # from the last alloc of that address before it
    for i in range(len(tr) - 1, best_i - 1, -1):
        e = tr[i]
        act = e.get("action")
        if act == "alloc":
            live.pop(e.get("addr"), None)
        elif act in ("free_requested", "free"):
            live[e.get("addr")] = (e.get("size", 0), None)
    need = {a for a, (_, fr) in live.items() if fr is None}
    for i in range(best_i - 1, -1, -1):
        if not need:
            break
        e = tr[i]
        if e.get("action") == "alloc" and e.get("addr") in need:
            live[e["addr"]] = (live[e["addr"]][0], e.get("frames"))
            need.discard(e["addr"])
    return live, best, best_res


def _write_pickle(snap, tag):
    # only a process that records into a rank file, beside its own (_attach): the others
    # under the same agent inherit the task's GPUPROF_RANK_FILE and would overwrite it
    if not _s.base or not _s.attached:
        return ""
    import pickle

    path = "%s.torch-%s.pickle" % (_s.base, tag)
    tmp = "%s.tmp%d" % (path, os.getpid())
    mode = 0o640 if os.environ.get("GPUPROF_GROUP_READABLE") == "1" else 0o600
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode)
    try:
        with os.fdopen(fd, "wb") as f:
            pickle.dump(snap, f, protocol=4)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return os.path.basename(path)


def _grown(snap, dev):
    """Blocks live now that the trace saw allocated: at the end of a window that began
    with an empty trace, what the window's steps added and kept (a leak's allocations)."""
    live = _live_now(snap, dev)
    traces = snap.get("device_traces") or []
    seen = {e.get("addr"): e.get("frames") or [] for e in (traces[dev] if dev < len(traces) else ())
            if e.get("action") == "alloc"}
    return {a: (v[0], seen[a]) for a, v in live.items() if a in seen}


def _picture(why, peak=0, res_peak=0, window=False):
    """A snapshot of the allocator: the owners of the peak (or of an OOM) and a
    memory_viz pickle next to the rank file; at the end of a window, what it kept."""
    import time

    t0 = time.monotonic()
    torch = _s.torch
    dev = _s.mem_dev
    try:
        snap = torch.cuda.memory._snapshot()
    except Exception as e:
        _missing("allocator snapshot", e)
        return
    if why == _SNAP_OOM:
        _emit_owners(_live_now(snap, dev), dev, 2)
    elif why == _SNAP_PEAK:
        live, at, res_at = _live_at_peak(snap, dev)
        # the history holds the peak's moment when its largest total is the counters' peak;
        # a peak reached while it was off (between windows) is not in it: what the history
        # saw at its largest is then listed with the rest of the peak as unseen, so the
        # owners add up to the peak, and the reserved-but-unused figure is not made up
        held = not peak or at >= 0.99 * peak
        _emit(_MEM_PEAK, dev=dev, a=peak, c=res_peak,
              d=max(0, res_at - at) if at and held else 0)
        _emit_owners(live, dev, 1, unseen=0 if held else peak - at)
        if window:  # d: 3, and the window's steps above it (a leak's slope: bytes / steps)
            _emit_owners(_grown(snap, dev), dev, 3 | (_HIST_WINDOW << 8))
        _s.peak_seen = peak
    tag = {_SNAP_PEAK: "peak", _SNAP_OOM: "oom", _SNAP_EXIT: "exit",
           _SNAP_SIGTERM: "exit"}[why]
    try:
        name = _write_pickle(snap, tag)
        if name:
            _emit(_SNAPSHOT, dev=dev, a=why, text=name)
    except Exception as e:
        _missing("memory_viz pickle (%s)" % tag, e)
    _s.peak_cost = time.monotonic() - t0
    _s.peak_at = time.monotonic()


def _on_oom(device, alloc, device_total, device_free):
    # PyTorch passes the device's total (or the allowed fraction of it), not what it holds
    try:
        _emit(_OOM, dev=device, a=alloc, c=device_total, d=device_free)
        _picture(_SNAP_OOM)
    except Exception as e:
        _missing("out-of-memory picture", e)


def _final(why):
    """At exit or SIGTERM, once: the peak's picture if it grew since the last one, the
    allocator's counters, and the memory_viz pickle of the whole recorded history."""
    if not _s.mem_on or _s.finished:
        return
    _s.finished = True
    alloc, peak, res, res_peak = _stats()
    # a new picture of the peak only where it can have stacks: the history recording,
    # or no picture yet; the counters themselves always
    if (peak > _s.peak_seen * 1.01 and _s.hist_live) or not _s.peak_seen:
        _picture(_SNAP_PEAK, peak, res_peak)
    _emit(_MEM_MAX, dev=_s.mem_dev, a=peak, c=res_peak)
    _emit(_MEM_STEP, dev=_s.mem_dev, a=alloc, c=res)
    _picture(why)


def _at_exit():
    if _s.hist_stop is not None:
        _s.hist_stop.set()
    if _s.attached:
        try:
            for opt, i in list(_s.opt_index.items()):
                _opt_state(opt, i)
        except Exception:
            pass
    try:
        _final(_SNAP_EXIT)
    except Exception as e:
        _missing("memory at exit", e)


def _hook_sigterm():
    """At SIGTERM (Slurm's time limit, scancel) keep the memory picture, then die of the
    signal as the program would have. Only where the program left SIGTERM's default
    action. A Python handler alone would wait for the main thread to come back to the
    interpreter, which a rank blocked in a CUDA synchronisation or a hung collective
    never does: the default action (die now) would become a SIGKILL 30 s later. So the
    signal also wakes a thread of ours through Python's wakeup fd (written by the C-level
    handler, whatever the main thread is doing), which takes the picture and dies of
    SIGTERM at once. Not installed where the wakeup fd is someone else's (asyncio).
    _TermHook holds the rules that keep the program's outcome its own."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return
    try:
        hook = _TermHook()
    except (OSError, AttributeError, ValueError) as e:
        _missing("memory picture at SIGTERM: no wakeup channel", e)
        return
    if not hook.take_wakeup():
        _missing("memory picture at SIGTERM: the program's own wakeup fd is in use")
        return
    signal.signal(signal.SIGTERM, hook.on_term)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=hook.after_fork_in_child)
    threading.Thread(target=hook.watch, name="gpuprof-sigterm", daemon=True).start()


class _TermHook:
    """The SIGTERM hook's state, and what keeps the program's outcome its own:

    - The wakeup channel is a datagram socket pair whose reader asks the kernel for each
      datagram's sender (SO_PASSCRED). A child forked where no fork hook runs (ctypes'
      or a C extension's fork) inherits the write end, and its SIGTERM's wakeup byte
      reached the parent's thread, which killed the parent (exit 143). A byte from
      another process is now left to that process.
    - A forked child that runs Python's fork hooks (os.fork, multiprocessing) gives the
      handler and the wakeup fd back at fork, and the handler acts only in the process
      that installed it.
    - A program that installs its own handler and calls the one it replaced
      (Lightning's _SignalConnector calls every earlier handler that is callable) has
      taken SIGTERM for itself: without gpuprof it would have found SIG_DFL, which it
      cannot call, checkpointed and exited 0. Called so, the hook does nothing."""

    def __init__(self):
        import socket
        import threading

        self.rsock, self.wsock = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.rsock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.wsock.setblocking(False)
        self.owner = os.getpid()
        self.once = threading.Lock()

    def take_wakeup(self):
        import signal

        try:
            old = signal.set_wakeup_fd(self.wsock.fileno(), warn_on_full_buffer=False)
        except (ValueError, TypeError, OSError):
            old = None
        if old == -1:
            return True
        if old is not None:  # not ours to take
            signal.set_wakeup_fd(old)
        self.close()
        return False

    def close(self):
        for s in (self.rsock, self.wsock):
            try:
                s.close()
            except OSError:
                pass

    def ours(self):
        import signal

        return signal.getsignal(signal.SIGTERM) == self.on_term

    def on_term(self, signum, frame):
        if self.ours():
            self.die()

    def recv(self):
        """One wakeup datagram and the pid of the process that wrote it (0: not said)."""
        import socket
        import struct

        n = struct.calcsize("3i")
        got, anc, _, _ = self.rsock.recvmsg(64, socket.CMSG_SPACE(n))
        pid = 0
        for level, kind, data in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS and len(data) >= n:
                pid = struct.unpack("3i", data[:n])[0]
        return got, pid

    def watch(self):
        import signal

        while True:
            try:
                got, pid = self.recv()
            except InterruptedError:
                continue
            except OSError:
                return
            if pid != self.owner:  # a forked child's signal is its own
                continue
            if signal.SIGTERM in got and self.ours():
                self.die()
                return

    def die(self):
        import signal
        import threading

        if os.getpid() != self.owner:
            # a child forked where no fork hook ran: not ours to picture; it dies of the
            # signal as it would have without us
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        if not self.once.acquire(blocking=False):
            return
        try:
            _final(_SNAP_SIGTERM)
        except Exception:
            pass
        # back to the default action and die of it: signal.signal() works only on the
        # main thread, so from ours through libc; the exit status stays "killed by
        # SIGTERM" either way
        try:
            if threading.current_thread() is threading.main_thread():
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
            else:
                import ctypes

                libc = ctypes.CDLL(None, use_errno=True)
                libc.signal.argtypes = [ctypes.c_int, ctypes.c_void_p]
                libc.signal.restype = ctypes.c_void_p
                libc.signal(signal.SIGTERM, None)  # SIG_DFL
            os.kill(os.getpid(), signal.SIGTERM)
        finally:
            os._exit(128 + signal.SIGTERM)  # not reached unless the default was refused

    def after_fork_in_child(self):
        # the child's SIGTERM is its own: no wakeup byte into the parent's channel, and
        # the default action back (unless the program set a handler of its own since)
        import signal

        try:
            cur = signal.set_wakeup_fd(-1)
            if cur not in (self.wsock.fileno(), -1):  # the program's own since: left to it
                signal.set_wakeup_fd(cur)
            if self.ours():
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
        except (ValueError, OSError):
            pass
        self.close()
