"""Layer ranges: a range per module forward and backward (mode layers, or mode cuda while
kernels are traced), through PyTorch's global module hooks. One Layers object per process
(_install_layers makes it); the step hook switches it with the collector's windows
(_layers_step), and TorchDynamo's first compilation takes it away for good (_layers_never).

What a hook inside someone else's model must not do, each found by a review: be traced by
TorchDynamo (a graph break inside Module.__call__ made it give up compiling modules for
the whole process, and fullgraph=True raised), hook a leaf tensor (a Parameter's hooks are
never freed: one more per call, run in every later backward), keep a module alive or a
range open after a forward that raised or a pass that failed, or act in a forked
DataLoader worker."""

import sys
import threading

import _gpuprof as _gp
import _gpuprof_abi as _abi

_active = None  # the Layers object once installed


class Layers:
    """A forward range from the forward pre-hook to the forward hook; a backward range from
    the first gradient of the module's outputs to the first of its inputs (tensor hooks,
    which only observe), else to the end of the backward pass. Names are the modules'
    class names. Full backward hooks are not used: they wrap the module's tensors and can
    break in-place operations. windowed: registered only while kernels are traced
    (_layers_window), so the steps between capture windows run the module call's fast
    path, with no hook at all."""

    def __init__(self, torch, pre, post, windowed):
        self.torch = torch
        self.pre, self.post = pre, post  # PyTorch's global hook registrations
        self.windowed = windowed
        self.off = False  # a hook failed: no more layer ranges
        self.handles = None  # the global module hooks while registered
        self.cb_queued = False  # the end-of-backward callback is queued for this pass
        comp = getattr(getattr(torch, "compiler", None), "is_compiling", None)
        if comp is None:
            comp = getattr(getattr(torch, "_dynamo", None), "is_compiling", None)
        self.compiling = comp or (lambda: False)
        self.tls = threading.local()
        self.stacks = []  # every thread's forward stack, ended when the hooks go
        self.stacks_lock = threading.Lock()
        var = getattr(torch.autograd, "Variable", None)
        self.engine = getattr(var, "_execution_engine", None)
        self.open_bwd = []  # backward ranges open in this pass: ended by the engine's callback
        self.names = {}

    def name_of(self, module):
        cls = type(module)
        n = self.names.get(cls)
        if n is None:
            n = self.names[cls] = cls.__name__
        return n

    def fail(self, e):
        self.off = True
        _abi._missing("layer ranges", e)

    def end_open(self):
        """The backward pass's open ranges (the engine's callback at its end)."""
        for rec in self.open_bwd:
            if rec[0] and not rec[1]:
                rec[1] = True
                _abi._c.lib.gpuprof_fw_range_end(rec[0])
        del self.open_bwd[:]
        self.cb_queued = False

    def end_all(self):
        """Every range still open: each thread's forward stack, the backward pass's."""
        try:
            with self.stacks_lock:
                for st in self.stacks:
                    while st:
                        _abi._c.lib.gpuprof_fw_range_end(st.pop()[1])
            self.end_open()
        except Exception:
            pass

    def graph_tensors(self, x):  # a hook on a leaf (a Parameter) would outlive the pass
        T = self.torch.Tensor
        if isinstance(x, T):
            ts = [x]
        elif isinstance(x, (tuple, list)):
            ts = [t for t in x if isinstance(t, T)]
        else:
            return []
        return [t for t in ts if t.requires_grad and t.grad_fn is not None]

    def backward_hooks(self, module, inputs, output):
        outs = self.graph_tensors(output)
        if not outs:
            return
        rec = [0, False]  # range id, ended
        name = self.name_of(module) + " backward"

        def on_out(grad):
            try:
                if not rec[0] and not rec[1]:
                    rec[0] = _abi._c.lib.gpuprof_fw_range_start(name.encode())
                    self.open_bwd.append(rec)
                    if self.engine is not None and not self.cb_queued:
                        self.cb_queued = True
                        self.engine.queue_callback(self.end_open)
            except Exception as e:
                self.fail(e)

        def on_in(grad):
            try:
                if rec[0] and not rec[1]:
                    rec[1] = True
                    _abi._c.lib.gpuprof_fw_range_end(rec[0])
            except Exception as e:
                self.fail(e)

        for t in outs:
            t.register_hook(on_out)
        for t in self.graph_tensors(inputs):
            t.register_hook(on_in)

    def stack(self):
        st = getattr(self.tls, "stack", None)
        if st is None:
            st = self.tls.stack = []
            with self.stacks_lock:
                self.stacks.append(st)
        return st

    def fpre(self, module, inputs):
        if self.compiling() or self.off or _gp.ctx.in_fork_child:
            return
        if not (_abi._c.attached if self.windowed else _abi._attach()):
            return
        try:
            st = self.stack()
            lib = _abi._c.lib
            if len(st) >= 256:  # entries whose post-hook never came (PyTorch 1.x)
                while st:
                    lib.gpuprof_fw_range_end(st.pop()[1])
            st.append((id(module), lib.gpuprof_fw_range_start(self.name_of(module).encode())))
        except Exception as e:
            self.fail(e)

    def fpost(self, module, inputs, output):
        if self.compiling() or self.off or not _abi._c.attached:
            return
        try:
            st = self.stack()
            mid = id(module)
            if any(m == mid for m, _ in st):  # ends inner forwards that raised too
                while st:
                    m, rid = st.pop()
                    _abi._c.lib.gpuprof_fw_range_end(rid)
                    if m == mid:
                        break
            if self.torch.is_grad_enabled():
                self.backward_hooks(module, inputs, output)
        except Exception as e:
            self.fail(e)

    def register(self):
        if self.handles is None:
            try:  # called also when the forward raised (PyTorch 2.0 on)
                hpost = self.post(self.fpost, always_call=True)
            except TypeError:
                hpost = self.post(self.fpost)
            self.handles = (self.pre(self.fpre), hpost)

    def unregister(self):
        h, self.handles = self.handles, None
        for x in h or ():
            x.remove()
        self.end_all()

    def forget(self):
        """A forked child: its parent's hooks go, and its open ranges are not its own."""
        h, self.handles = self.handles, None
        for x in h or ():
            x.remove()
        for st in self.stacks:
            del st[:]
        del self.open_bwd[:]
        self.cb_queued = False


def _install_layers(torch, windowed=False):
    """The Layers object, registered now (mode layers) or in capture windows (windowed)."""
    global _active
    import importlib

    mm = importlib.import_module("torch.nn.modules.module")
    pre = getattr(mm, "register_module_forward_pre_hook", None)
    post = getattr(mm, "register_module_forward_hook", None)
    if not (pre and post):
        if not windowed:  # asked for (mode layers): say it could not be had
            _abi._missing("layer ranges: this PyTorch has no global module hooks", attach=False)
        return "not available"
    _active = Layers(torch, pre, post, windowed)
    if windowed:
        return "module forward and backward, in capture windows"
    _active.register()
    return "module forward and backward"


def _layers_unregister():
    if _active is not None:
        _active.unregister()


def _layers_never():
    """TorchDynamo compiles: the windowed hooks go for good, before it traces anything
    (and the operation ranges with them)."""
    if _gp.ctx.ops:
        _gp.ctx.ops.never()
    if _active is not None and _active.windowed:
        _active.windowed = False
        _layers_unregister()


def _compiled():
    """Has torch.compile (TorchDynamo) compiled a frame? (the compile watch says so at its
    start; its counters do not count a fullgraph compile)"""
    u = sys.modules.get("torch._dynamo.utils")
    try:
        return _gp.ctx.dynamo_seen or bool(u and u.counters["frames"]["total"])
    except Exception:
        return True


def _layers_step(tracing=None):
    """An optimizer step returned: the backward pass is over, so a backward range still
    open is one a failed pass left (its end-of-pass callback never ran); then the window
    (tracing: the library's answer to the step's record, None: ask it)."""
    la = _active
    if la is None:
        return
    if la.cb_queued:
        try:
            la.end_open()
        except Exception:
            pass
    _layers_window(tracing)


def _layers_window(tracing=None):
    """After an optimizer step (the collector switched its window there): the module
    hooks registered while kernels are traced, removed when they are not. tracing: the
    library's answer to the step's record; None: ask it."""
    la = _active
    if la is None or not la.windowed:
        return
    if tracing is None:
        tracing = _abi._lib_tracing()
    if not tracing and la.handles is None:
        return  # between windows, nothing registered: every step but a window's ends
    if tracing and (la.off or not _abi._c.attached or _compiled()):
        tracing = False
    if tracing and la.handles is None:
        la.register()
    elif not tracing and la.handles is not None:
        _layers_unregister()
        if _compiled():
            la.windowed = False
