"""PyTorch's start (_gpuprof.arm() calls _start right after torch's own import): what is
installed, in what order, and what the info record says of it; then the process's fork
and exit. The parts themselves are _gpuprof_steps, _gpuprof_watch, _gpuprof_layers,
_gpuprof_ops and _gpuprof_mem."""

import os

import _gpuprof as _gp
import _gpuprof_abi as _abi
import _gpuprof_layers as _layers
import _gpuprof_mem as _mem
import _gpuprof_steps as _steps
import _gpuprof_watch as _watch


def _start(torch):
    import atexit

    _steps._s.torch = _mem._m.torch = torch
    base = _abi._rank_base()
    if base:
        _abi._c.base = base
    try:
        # the agent sets the value in force (common/settings.c holds the default)
        _mem._m.history_entries = max(0, int(os.environ.get("GPUPROF_TORCH_HISTORY", "0")))
    except ValueError:
        pass
    modes = _gp.ctx.modes
    how = _steps._install_steps(torch)
    how += "; input: " + _watch._install_data_wait(torch)
    how += "; torch.profiler: " + _watch._install_profiler_watch(torch)
    how += "; torch.compile: " + _watch._install_compile_watch(torch)
    _at_fork()
    if "layers" in modes:
        how += "; layer ranges: " + _layers._install_layers(torch)
    elif "cuda" in modes and os.environ.get("GPUPROF_TORCH_LAYERS", "1") != "0":
        how += "; layer ranges: " + _layers._install_layers(torch, windowed=True)
    ops = ""  # last: the text is cut at 255 bytes (report/load.h)
    if "cuda" in modes or "layers" in modes:
        ops = "; ops: " + _steps._ops_install(torch)
    mem = "off (mode mem not asked for)"
    if "mem" in modes:
        mem = _mem._arm_memory(torch)
    _abi._emit(_abi.FW_INFO, text="torch %s; steps: optimizer.step() (%s); memory: %s%s"
               % (getattr(torch, "__version__", "?"), how, mem, ops), attach=False)
    atexit.register(_at_exit)


def _at_fork():
    """A fork that goes on to train records into a rank file of its own (the library
    gives it a ring at its cuInit): it attaches afresh, with nothing of its parent's."""

    def child():
        _abi._after_fork_in_child()
        _mem._after_fork_in_child()
        _gp.ctx.opt_steps = {}
        # a DataLoader worker runs modules (transforms) and never steps: no layer range
        # of its, nor an attach, until it steps itself; the parent's hooks go
        _gp.ctx.in_fork_child = True
        try:
            if _layers._active is not None:
                _layers._active.forget()
            if _gp.ctx.ops:
                _gp.ctx.ops.forget()
        except Exception:
            pass

    try:
        os.register_at_fork(after_in_child=child)
    except Exception:
        pass


def _at_exit():
    if _mem._hw.hist_stop is not None:
        _mem._hw.hist_stop.set()
    if _abi._c.attached:
        try:
            for opt, i in list(_steps._s.opt_index.items()):
                _steps._opt_state(opt, i)
        except Exception:
            pass
    try:
        _mem._final(_abi.SNAP_EXIT)
    except Exception as e:
        _abi._missing("memory at exit", e)
