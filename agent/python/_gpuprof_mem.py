"""PyTorch's memory, in mode mem, once the program initialises CUDA: the caching allocator's
own history (torch.cuda.memory._record_memory_history, a bounded ring) switched on and off
where the answers are, the allocator's counters after every step, and its pictures (the
live tensors at the memory peak and at an out-of-memory error grouped by Python stack, and
memory_viz pickles next to the rank file at the peak, at an OOM, at exit and at SIGTERM;
read by _gpuprof_snap). Nothing here initialises CUDA: it waits for the program to do it
(torch.cuda._lazy_call).

The history costs 5-14 % of a step while it records (a Python stack per allocation,
measured on the H200: bench/torch_cost.py), so it records only from CUDA's start through
the first HIST_WARM optimizer steps (where the peak is usually set, and the optimizer's
state made), then for HIST_WINDOW steps when the peak has grown since its last picture, at
most once every HIST_GAP steps. A program with no optimizer step (inference, evaluation, a
loop of its own) never reaches the end of that warm-up: a thread of ours (_hist_watch)
ends it where the collector's first capture window closes, or where no kernels are traced
once the allocator's peak has not grown for HIST_QUIET_S (HIST_NOSTEP_S at most), looking
every HIST_TICK_S."""

import sys
import threading as _threading
import time

import _gpuprof as _gp
import _gpuprof_abi as _abi
import _gpuprof_signal as _signal
import _gpuprof_snap as _snap

_HIST_WARM, _HIST_WINDOW, _HIST_GAP = 5, 3, 50
# A program with no optimizer step (inference, evaluation, a loop of its own) never reaches
# the end of that warm-up: a thread of ours ends it where the collector's first capture
# window closes (on a budget of tracing cost: agent/inject/costwin.h), or where no kernels
# are traced (no mode cuda) once the allocator's peak has stayed within 1 % for
# HIST_QUIET_S while the program allocated as many blocks again as it had when the peak
# last grew (the peak, with its stacks, is what the history is for; a GPT-2 generate()
# loop ran 31 % slower while it recorded, for all of HIST_NOSTEP_S before; a pause of the
# program's, loading or tokenising, is not quiet), and after HIST_NOSTEP_S in any case
# (_hist_watch), looking every HIST_TICK_S.
_HIST_NOSTEP_S, _HIST_QUIET_S, _HIST_TICK_S = 10.0, 2.0, 0.5
_HIST_MAIN_WAIT_S = 30.0  # the watcher's end waits this long for the main thread


class _Mem:
    torch = None
    mem_on = False  # the allocator is sampled after the steps (_after_step)
    finished = False  # the exit picture is taken
    user_history = False  # the program called _record_memory_history itself
    hist_own = False  # we set the history up (and may switch it)
    hist_live = False  # it records now
    hist_until = 0  # ... until this optimizer step (0: no end planned)
    in_window = False  # a window after warm-up, begun with an empty trace
    hist_window_at = -_HIST_GAP  # the step the last window began
    record_history = None  # PyTorch's own _record_memory_history
    history_entries = 100000
    mem_dev = 0
    mem_broken = ""
    peak_seen = 0  # max allocated at the last peak picture
    peak_cost = 0.0  # seconds the last picture took
    peak_at = 0.0  # when it was taken (time.monotonic)


class _Watcher:
    """The history's watcher (_hist_watch) of a program with no optimizer step."""

    hist_t0 = 0  # when our history began (monotonic ns)
    peak = 0  # the allocator's peak at the watcher's last look (no mode cuda)
    peak_grew = 0  # when it last grew by more than 1 % (monotonic ns; 0: none seen)
    peak_allocs = 0  # the allocations made by then
    hist_stop = None  # threading.Event: the watcher stops
    hist_end_queued = False  # the watcher's end of the warm-up waits for the main thread
    hist_end_asked = 0  # when it was queued (monotonic ns)
    hist_end_cb = None  # ... as this ctypes callback (kept alive while queued)
    add_pending = None  # Py_AddPendingCall


_m = _Mem()
_hw = _Watcher()
_clock = time.monotonic_ns
_HIST_LOCK = _threading.Lock()  # the end of the history's warm-up, by a step or the watcher


def _arm_memory(torch):
    cuda = getattr(torch, "cuda", None)
    if cuda is None or not getattr(getattr(torch, "version", None), "cuda", None):
        return "no CUDA in this PyTorch build"
    if not hasattr(cuda, "_lazy_call") or not hasattr(cuda.memory, "_record_memory_history"):
        _abi._missing("tensor-level memory: this PyTorch has no allocator history", attach=False)
        return "no allocator history in this PyTorch"
    # a program that sets up the history itself keeps its own settings
    orig = cuda.memory._record_memory_history

    def _record_memory_history(*args, **kwargs):
        _m.user_history = True
        _m.hist_own = False  # from now on the program's settings stand
        return orig(*args, **kwargs)

    _record_memory_history.__wrapped__ = orig
    _record_memory_history.__doc__ = orig.__doc__
    cuda.memory._record_memory_history = _record_memory_history
    _m.record_history = orig
    cuda._lazy_call(_on_cuda_init)  # runs when the program initialises CUDA, not before
    return "allocator history (%d entries) from CUDA's initialisation" % _m.history_entries


def _on_cuda_init():
    # inside torch.cuda._lazy_init: an exception here would fail the program's CUDA
    # initialisation, so none may leave
    try:
        _start_history()
    except Exception as e:
        _m.mem_broken = "%s: %s" % (type(e).__name__, e)
        _abi._missing("tensor-level memory", e)


def _start_history():
    torch = _m.torch
    mem = torch.cuda.memory
    try:
        _m.mem_dev = torch.cuda.current_device()
    except Exception:
        _m.mem_dev = 0
    if _m.history_entries == 0:
        _abi._missing("tensor-level memory: GPUPROF_TORCH_HISTORY=0")
        return
    if _m.record_history is None:
        _m.record_history = mem._record_memory_history
    if _m.user_history:
        _abi._missing("allocator history: the program set its own, kept as it set it")
    else:
        _history(True)
        _m.hist_own = True
        _m.hist_until = _HIST_WARM
        _hist_watch_start()
    _m.mem_on = True
    obs = getattr(torch._C, "_cuda_attach_out_of_memory_observer", None)
    if obs is not None:
        obs(_on_oom)
    else:
        _abi._missing("out-of-memory pictures: this PyTorch has no OOM observer")
    _signal._hook_sigterm(lambda: _final(_abi.SNAP_SIGTERM))


def _stats():
    """PyTorch's allocator counters (allocated and reserved, now and peak): the nested
    dictionary PyTorch's own memory_stats() flattens, read without the flattening. Of the
    device the program trains on now: CUDA starts (and our history with it) inside
    torch.cuda.set_device(), before the switch to the worker's own GPU. Read on a thread of
    ours (the history's watcher), whose own current device is 0 whatever the program's,
    the device stays the one the program's thread last had."""
    if not _threading.current_thread().name.startswith("gpuprof"):
        try:
            _m.mem_dev = _m.torch._C._cuda_getDevice()
        except Exception:
            pass
    try:
        st = _m.torch._C._cuda_memoryStats(_m.mem_dev)
        a, r = st["allocated_bytes"]["all"], st["reserved_bytes"]["all"]
        return a["current"], a["peak"], r["current"], r["peak"]
    except Exception:
        st = _m.torch.cuda.memory_stats(_m.mem_dev)
        return (st.get("allocated_bytes.all.current", 0), st.get("allocated_bytes.all.peak", 0),
                st.get("reserved_bytes.all.current", 0), st.get("reserved_bytes.all.peak", 0))


def _history(on, clear=False):
    """The allocator's history on or off, told to the collector as allocator work."""
    with _abi.busy:
        _history_work(on, clear)


def _history_work(on, clear=False):
    rec = _m.record_history
    if on:
        kw = dict(enabled="all", context="all", stacks="python", max_entries=_m.history_entries)
        try:  # PyTorch 2.1 and later; a window starts with an empty trace where it can
            try:
                rec(clear_history=clear, **kw) if clear else rec(**kw)
            except TypeError:
                if not clear:
                    raise
                rec(**kw)
        except TypeError:  # 1.13 and 2.0
            rec(True, record_context=True, trace_alloc_max_entries=_m.history_entries,
                trace_alloc_record_context=True)
    else:
        try:
            rec(enabled=None)
        except TypeError:
            rec(False)
    _m.hist_live = on


def _hist_watch_start():
    """The watcher of a program that never steps an optimizer (_hist_watch)."""
    _hw.hist_t0 = _clock()
    _hw.peak = _hw.peak_grew = _hw.peak_allocs = 0
    _hw.hist_stop = _threading.Event()
    _threading.Thread(target=_hist_watch, name="gpuprof-history", daemon=True).start()


def _hist_watch():
    """Without an optimizer step, _after_step never runs, and the history begun at CUDA's
    initialisation would take a Python stack at every allocation and free of the whole
    job (a ResNet-50 inference loop ran 17 % slower for it). This thread ends the warm-up
    stretch for such a program; it leaves at the first optimizer step, which owns the
    history from there on."""
    while not _hw.hist_stop.wait(_HIST_TICK_S):
        try:
            if not _hist_watch_tick(_clock()):
                return
        except Exception as e:
            _abi._missing("allocator history watch", e)
            return


def _hist_watch_tick(now):
    """One look at a history that records with no optimizer step seen: ended once the
    collector's first capture window has closed (it opens at CUDA's initialisation and
    holds the start-up, the warm-up and the first steps, as HIST_WARM does), or where no
    kernels are traced (no mode cuda, or no collector to ask) once the allocator's peak,
    allocated at all, has not grown for HIST_QUIET_S, or after HIST_NOSTEP_S. False:
    nothing more to watch."""
    if _gp.ctx.opt_steps or not (_m.hist_live and _m.hist_until) or _gp.ctx.in_fork_child:
        return False
    if "cuda" in _gp.ctx.modes:
        tracing = _abi._tracing_now()
        if tracing:
            return True  # the first window traces: the history with it
        if tracing is not None:
            return _hist_end_soon()
    if now - _hw.hist_t0 >= _HIST_NOSTEP_S * 1e9:
        return _hist_end_soon()
    peak, allocs = _activity()
    if peak > _hw.peak * 1.01:
        _hw.peak, _hw.peak_grew, _hw.peak_allocs = peak, now, allocs
        return True
    if (_hw.peak_grew and now - _hw.peak_grew >= _HIST_QUIET_S * 1e9
            and allocs - _hw.peak_allocs >= _hw.peak_allocs):
        return _hist_end_soon()
    return True


def _activity():
    """The watcher's look at the allocator (no mode cuda): its peak allocated and the
    blocks allocated so far, summed over the devices (the program's own may not be known
    on this thread: set_device() starts our history before its switch)."""
    peak = allocs = 0
    try:
        n = _m.torch.cuda.device_count()
    except Exception:
        return 0, 0  # nothing to read: the bound by time alone
    for d in range(n):
        try:
            st = _m.torch._C._cuda_memoryStats(d)
            peak += st["allocated_bytes"]["all"]["peak"]
            allocs += st["allocation"]["all"]["allocated"]
        except Exception:
            continue
    return peak, allocs


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
    if _hw.hist_end_queued:
        # a main thread that runs no bytecode for long (blocked in C, or joining the
        # threads that do the work): the history off from here, without the picture
        # that could import; the queued call then finds it done
        if _clock() - _hw.hist_end_asked > _HIST_MAIN_WAIT_S * 1e9 and not _importing():
            return _hist_end(picture=False)
        return True
    try:
        import ctypes

        if _hw.hist_end_cb is None:
            _hw.hist_end_cb = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)(_hist_end_pending)
            _hw.add_pending = ctypes.pythonapi.Py_AddPendingCall
            _hw.add_pending.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
            _hw.add_pending.restype = ctypes.c_int
        _hw.hist_end_queued, _hw.hist_end_asked = True, _clock()
        if _hw.add_pending(ctypes.cast(_hw.hist_end_cb, ctypes.c_void_p), None) != 0:
            _hw.hist_end_queued = False  # the queue is full: the next tick asks again
    except Exception as e:
        _hw.hist_end_queued = False
        _abi._missing("allocator history watch (no pending call)", e)
        return False
    return True


def _hist_end_pending(_arg):
    """Py_AddPendingCall's callback, on the main thread: never raises (an exception
    here would surface in the program's code)."""
    try:
        if not _gp.ctx.in_fork_child and not _importing():  # a fork's copy of the queue: not its
            _hist_end()
    except Exception as e:
        _abi._missing("allocator history end", e)
    finally:
        _hw.hist_end_queued = False
    return 0


def _hist_end(picture=True):
    """The watcher ends the warm-up stretch as _after_step would (the peak's picture
    when it grew, then the history off), unless an optimizer step came first."""
    with _HIST_LOCK:
        if _gp.ctx.opt_steps or not (_m.hist_live and _m.hist_until):
            return False
        alloc, peak, res, res_peak = _stats()
        if picture and peak > _m.peak_seen * 1.01:
            _picture(_abi.SNAP_PEAK, peak, res_peak)
        _history(False)
        _m.hist_until = 0
        _m.in_window = False
    return False


def _after_step(n):
    """After optimizer step n: the allocator's counters (every step for the first 20,
    then every 10th: the growth per step needs no more), the peak's picture when it grew,
    and the history switched on and off as above."""
    ending = _m.hist_live and _m.hist_until and n >= _m.hist_until
    if not ending and n > 20 and n % 10:
        return
    alloc, peak, res, res_peak = _stats()
    _abi._emit(_abi.FW_MEM_STEP, dev=_m.mem_dev, a=alloc, c=res, d=n)
    grew = peak > _m.peak_seen * 1.01
    if ending:  # a recording stretch ends: the peak's picture, and what a window kept
        with _HIST_LOCK:  # not at once with the watcher's end (_hist_end)
            if _m.hist_live:
                if grew or _m.in_window:
                    _picture(_abi.SNAP_PEAK, peak, res_peak, window=_m.in_window)
                _history(False)
            _m.hist_until = 0
            _m.in_window = False
    elif grew and _m.hist_live and not _m.in_window:
        _picture(_abi.SNAP_PEAK, peak, res_peak)
    elif grew and not _m.hist_live and n - _m.hist_window_at >= _HIST_GAP and _m.hist_own:
        _history(True, clear=True)  # the peak grew unseen: record while it recurs
        _m.hist_until = n + _HIST_WINDOW
        _m.hist_window_at = n
        _m.in_window = True


def _picture(why, peak=0, res_peak=0, window=False):
    """_picture_work, told to the collector as allocator work: CUPTI is not detached while
    the snapshot is taken (a detach finalized inside the seconds of imports it can take
    corrupted the heap of a step-less PyTorch loop, 3 of 10 runs on the H100)."""
    with _abi.busy:
        _picture_work(why, peak, res_peak, window)


def _picture_work(why, peak=0, res_peak=0, window=False):
    """A snapshot of the allocator: the owners of the peak (or of an OOM) and a
    memory_viz pickle next to the rank file; at the end of a window, what it kept."""
    import time

    t0 = time.monotonic()
    torch = _m.torch
    dev = _m.mem_dev
    try:
        snap = torch.cuda.memory._snapshot()
    except Exception as e:
        _abi._missing("allocator snapshot", e)
        return
    if why == _abi.SNAP_OOM:
        _snap._emit_owners(_snap._live_now(snap, dev), dev, 2)
    elif why == _abi.SNAP_PEAK:
        live, at, res_at = _snap._live_at_peak(snap, dev)
        # the history holds the peak's moment when its largest total is the counters' peak;
        # a peak reached while it was off (between windows) is not in it: what the history
        # saw at its largest is then listed with the rest of the peak as unseen, so the
        # owners add up to the peak, and the reserved-but-unused figure is not made up
        held = not peak or at >= 0.99 * peak
        _abi._emit(_abi.FW_MEM_PEAK, dev=dev, a=peak, c=res_peak,
                   d=max(0, res_at - at) if at and held else 0)
        _snap._emit_owners(live, dev, 1, unseen=0 if held else peak - at)
        if window:  # d: 3, and the window's steps above it (a leak's slope: bytes / steps)
            _snap._emit_owners(_snap._grown(snap, dev), dev, 3 | (_HIST_WINDOW << 8))
        _m.peak_seen = peak
    tag = {_abi.SNAP_PEAK: "peak", _abi.SNAP_OOM: "oom", _abi.SNAP_EXIT: "exit",
           _abi.SNAP_SIGTERM: "exit"}[why]
    try:
        name = _snap._write_pickle(snap, tag)
        if name:
            _abi._emit(_abi.FW_SNAPSHOT, dev=dev, a=why, text=name)
    except Exception as e:
        _abi._missing("memory_viz pickle (%s)" % tag, e)
    _m.peak_cost = time.monotonic() - t0
    _m.peak_at = time.monotonic()


def _on_oom(device, alloc, device_total, device_free):
    # PyTorch passes the device's total (or the allowed fraction of it), not what it holds
    try:
        _abi._emit(_abi.FW_OOM, dev=device, a=alloc, c=device_total, d=device_free)
        _picture(_abi.SNAP_OOM)
    except Exception as e:
        _abi._missing("out-of-memory picture", e)


def _final(why):
    """At exit or SIGTERM, once: the peak's picture if it grew since the last one, the
    allocator's counters, and the memory_viz pickle of the whole recorded history."""
    if not _m.mem_on or _m.finished:
        return
    _m.finished = True
    alloc, peak, res, res_peak = _stats()
    # a new picture of the peak only where it can have stacks: the history recording,
    # or no picture yet; the counters themselves always
    if (peak > _m.peak_seen * 1.01 and _m.hist_live) or not _m.peak_seen:
        _picture(_abi.SNAP_PEAK, peak, res_peak)
    _abi._emit(_abi.FW_MEM_MAX, dev=_m.mem_dev, a=peak, c=res_peak)
    _abi._emit(_abi.FW_MEM_STEP, dev=_m.mem_dev, a=alloc, c=res)
    _picture(why)


def _after_fork_in_child():
    global _HIST_LOCK
    # the parent's may have been held at the fork, by a thread the child has not
    _HIST_LOCK = _threading.Lock()
    _hw.hist_end_queued = False
