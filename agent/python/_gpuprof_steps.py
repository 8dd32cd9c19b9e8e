"""PyTorch's steps: every optimizer's step() timed (torch's global optimizer step hooks from
2.0, a per-class wrapper of step() on 1.13), so a script without NVTX ranges has steps;
the optimizer's state measured from its state tensors after its first steps. At each step
the collector's window is switched (its answer to the step's record), and with it the
layer ranges (_gpuprof_layers), the operation ranges (_gpuprof_ops) and the allocator's
sampling (_gpuprof_mem)."""

import os
import sys
import time
import weakref as _weakref

import _gpuprof as _gp
import _gpuprof_abi as _abi
import _gpuprof_layers as _layers
import _gpuprof_mem as _mem


class _Steps:
    torch = None
    opt_index = None  # optimizer -> index (weak keys); the steps of each: _gp.ctx.opt_steps
    opt_bytes = {}  # index -> state bytes last recorded
    outer = None  # the optimizer whose step() is running (the outermost one)
    mem_opt = None  # the optimizer after whose steps the allocator is sampled
    warmup = None  # the steps the report leaves out (GPUPROF_WARMUP_STEPS)
    last_opt = None  # a weak reference to the optimizer _opt_idx looked up last ...
    last_idx = 0  # ... and its index


_s = _Steps()
_clock = time.monotonic_ns


def _install_steps(torch):
    import importlib

    _s.opt_index = _weakref.WeakKeyDictionary()
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
            _abi._missing("optimizer steps of %s" % type(self).__name__, e, attach=False)

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
            i = len(_gp.ctx.opt_steps)
            _s.opt_index[opt] = i
            _gp.ctx.opt_steps[i] = 0
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
        _gp.ctx.own_ns += _clock() - t0


def _step_post(opt, args, kwargs):
    t0 = _clock()
    waited = 0
    try:
        if _s.outer is not opt:
            return
        _s.outer = None
        _gp.ctx.in_fork_child = False  # a forked child that trains records as itself
        i = _opt_idx(opt)
        n = _gp.ctx.opt_steps.get(i, 0) + 1
        _gp.ctx.opt_steps[i] = n
        # our time so far: what follows (the marker this record places, the allocator's
        # counters) lands in the next step's figure, less what the marker waited for room
        # in CUDA's queue (the program's own wait: it would have waited at its next launch)
        ret = _abi._step_end(i, n, _gp.ctx.own_ns + _clock() - t0)
        if ret is not None:
            waited = ret >> 1
        _layers._layers_step(None if ret is None else ret & 1)
        if _gp.ctx.ops:
            _ops_window(None if ret is None else ret & 1, n)
        if n <= 2:
            _opt_state(opt, i)
        if _s.mem_opt is None:
            _s.mem_opt = i  # the allocator is sampled after the first stepping optimizer's steps
        if _mem._m.mem_on and i == _s.mem_opt:
            _mem._after_step(n)
    except Exception as e:
        _abi._missing("optimizer step hook", e)
    finally:
        _gp.ctx.own_ns += max(0, _clock() - t0 - waited)


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
    largest = sorted(by.items(), key=lambda kv: -kv[1])
    parts = ", ".join("%s %s" % (_abi._bytes(b), k) for k, b in largest)
    _abi._emit(_abi.FW_OPT_STATE, a=i, c=on_dev, d=total,
               text="%s: %s" % (type(opt).__name__, parts or "no state tensors"))


def _warmup_steps():
    if _s.warmup is None:
        try:  # the agent sets the value in force (common/settings.c holds the default)
            _s.warmup = max(0, int(os.environ.get("GPUPROF_WARMUP_STEPS", "3")))
        except ValueError:
            _s.warmup = 3
    return _s.warmup


def _ops_install(torch):
    try:
        import _gpuprof_ops

        how = _gpuprof_ops.install(torch, _abi._missing)
        if how.startswith("by line"):
            _gp.ctx.ops = _gpuprof_ops
            _gpuprof_ops.watch_calls(
                lambda: _abi._c.attached and not _gp.ctx.in_fork_child and _abi._c.lib,
                _abi._lib_tracing, lambda: _abi._c.fast_mod)
        return how
    except Exception as e:
        _abi._missing("operation ranges not started", e, attach=False)
        return "not available"


def _ops_window(tracing=None, steps=None):
    """After an optimizer step (steps: its count): the operation ranges' mode pushed while
    kernels are traced, for the first steps of a window after the warm-up's (which the
    report leaves out; GPUPROF_WARMUP_STEPS), popped between windows (all along in mode
    layers); never once TorchDynamo compiled."""
    if tracing is None:
        tracing = _abi._lib_tracing()
    if tracing and steps is not None and steps < _warmup_steps():
        return  # a window's steps are counted from the first after the warm-up
    every = "layers" in _gp.ctx.modes
    tracing = (tracing or every) and _abi._c.attached and not _gp.ctx.in_fork_child
    if tracing and _layers._compiled():
        _gp.ctx.ops.never()
        tracing = False  # popped here, at an optimizer step, outside any compilation
    _gp.ctx.ops.window(tracing, _abi._c.lib, None if every else _gp.ctx.ops.STEPS, _abi._c.fast_mod)
