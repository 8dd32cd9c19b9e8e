"""What PyTorch does besides its steps, watched with no change to the program:
torch.profiler sessions (which share CUPTI with the collector), torch.compile's
compilations (TorchDynamo's callbacks), and the wait for each DataLoader batch."""

import sys

import _gpuprof as _gp
import _gpuprof_abi as _abi
import _gpuprof_layers as _layers


class _Watch:
    profiling = False  # a torch.profiler session that traces CUDA runs (GP_FW_PROFILER)


_w = _Watch()


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
            if active and not _w.profiling and uses_cuda(args, kwargs):
                _w.profiling = began = True
                _abi._emit(_abi.FW_PROFILER, a=1)
            try:
                return orig(*args, **kwargs)
            except BaseException:
                if began:  # it did not start: nothing runs that could be disturbed
                    _w.profiling = False
                    _abi._emit(_abi.FW_PROFILER, a=0, c=1)  # c: not a session
                raise
            finally:
                if not active and _w.profiling:
                    _w.profiling = False
                    _abi._emit(_abi.FW_PROFILER, a=0)

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
    sys.meta_path.insert(0, _gp._ImportHook(name, _on_dynamo))
    return "compilations timed once it is used"


def _on_dynamo(cb):
    try:
        _watch_dynamo(cb)
    except Exception as e:
        _abi._missing("torch.compile's compilations", e, attach=False)


def _watch_dynamo(cb):
    import threading
    import time

    h = getattr(cb, "callback_handler", None)
    on_start = getattr(h, "register_start_callback", None)
    on_end = getattr(h, "register_end_callback", None)
    if not (on_start and on_end):
        _abi._missing("torch.compile's compilations: no compile callbacks in this PyTorch",
                      attach=False)
        return
    lock = threading.Lock()
    state = {"depth": 0, "t0": 0}  # process-wide: PyTorch 2.7 on may end a compilation
    # on another thread than the one that began it

    def start(*args, **kwargs):  # PyTorch 2.6 passes nothing, later ones their reason
        try:
            _gp.ctx.dynamo_seen = True
            _layers._layers_never()  # before Dynamo traces a module call with our hooks in it
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
                _abi._emit(_abi.FW_COMPILE, a=took, text="torch.compile")
        except Exception:
            pass

    try:
        on_start(start)
        on_end(end)
    except Exception as e:
        _abi._missing("torch.compile's compilations", e, attach=False)


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
        _abi._missing("time waiting for the next batch", e, attach=False)
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
                _abi._emit(_abi.FW_DATA_WAIT, a=t1 - t0)
            except Exception:
                pass
            _gp.ctx.own_ns += clock() - t1

    __next__._gpuprof_wait = True
    __next__.__wrapped__ = nxt
    It.__next__ = __next__
    return "DataLoader.__next__ timed"
