"""gpuprof's Python integration, with no change to the user's script: arming.

sitecustomize.py (this directory, first on PYTHONPATH under gpuprof's agent) calls arm().
Nothing happens until the program imports torch or jax; then, right after that module's
own import, the part for it is imported and started. This module is what every Python
process of a profiled task imports at start-up: it holds only the arming, so it stays
small (its import cost is in doc/performance.md).

The parts, one module each:

  _gpuprof_abi       the collector's calls, record kinds and this process's connection
  _gpuprof_torch     PyTorch's start: what is installed, in what order; fork and exit
  _gpuprof_steps     every optimizer's step() timed (torch's global optimizer step hooks
                     from 2.0, a per-class wrapper of step() on 1.13), so a script without
                     NVTX ranges has steps; the optimizer's state; the operation ranges'
                     windows (_gpuprof_ops)
  _gpuprof_watch     what PyTorch does besides steps: torch.profiler sessions,
                     torch.compile's compilations, the wait for each DataLoader batch
  _gpuprof_layers    a range per module forward and backward (mode layers, or mode cuda
                     in capture windows)
  _gpuprof_mem       in mem mode, once the program initialises CUDA: the caching
                     allocator's own history (a bounded ring), its counters after every
                     step, and its pictures (_gpuprof_snap: the live tensors at the peak
                     and at an out-of-memory error grouped by Python stack, memory_viz
                     pickles next to the rank file at the peak, an OOM, exit and SIGTERM)
  _gpuprof_histwatch the thread that ends the history's warm-up of a program with no
                     optimizer step
  _gpuprof_signal    the memory picture at SIGTERM, with the program's outcome its own
  _gpuprof_jax       JAX: compilation times and XLA's memory pool

Everything goes into the rank file through libgpuprof-inject.so (gpuprof_fw_event, one
GP_EV_FW record each; see common/event.h), so it survives a crash like the rest.

Rules: the training run is never changed or stopped. Every hook catches its own errors;
what could not be collected is recorded (GP_FW_MISSING) with the reason, and the hook
goes quiet. Nothing here initialises CUDA: the memory part waits for the program to do
it (torch.cuda._lazy_call). GPUPROF_PYTORCH=0 turns all of it off.
"""

import os
import sys
from _thread import _local  # threading.local itself, without importing threading here


class _Ctx:
    """What every part reads about this process."""

    modes = set()  # the modes in force, by name (GPUPROF_MODES)
    in_fork_child = False  # a forked copy that has not recorded a step of its own
    # this integration's own time on the program's threads so far (monotonic ns): its
    # optimizer hooks, with the step marker they place, and its batch timing; each
    # optimizer step's record carries it (d), and the report takes a step's from two
    # (gpuprof's own cost, measured in the process it is paid in)
    own_ns = 0
    opt_steps = {}  # optimizer index -> its steps so far (_gpuprof_steps)
    ops = None  # _gpuprof_ops once its operation ranges are ready (_gpuprof_steps)
    dynamo_seen = False  # TorchDynamo has begun a compilation (_gpuprof_watch)


ctx = _Ctx()


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
        self.busy = _local()  # a finder of ours asking meta_path again

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


def _when_imported(name, started):
    """started(module) once NAME is imported: now if it is already."""
    if name in sys.modules:
        started(sys.modules[name])
    else:
        sys.meta_path.insert(0, _ImportHook(name, started))


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
    ctx.modes = mods
    for name, started in (("torch", _on_torch), ("jax", _on_jax)):
        _when_imported(name, started)


def _on_torch(torch):
    try:
        import _gpuprof_torch

        _gpuprof_torch._start(torch)
    except Exception as e:
        _missing("PyTorch integration not started", e)


def _on_jax(jax):
    try:
        import _gpuprof_jax

        _gpuprof_jax._start_jax(jax)
    except Exception as e:
        _missing("JAX integration not started", e)


def _missing(what, exc):
    try:
        import _gpuprof_abi

        _gpuprof_abi._missing(what, exc)
    except Exception:
        pass
