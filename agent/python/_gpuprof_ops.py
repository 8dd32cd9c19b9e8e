"""Operation ranges for gpuprof's PyTorch integration: kernel time by the user's code.

Inside capture windows (mode cuda: the first STEPS steps of each stretch the collector
traces kernels in; in mode layers all along), each torch function the program's own code
calls (torch.*, torch.nn.functional.*, Tensor methods and operators) gets a range "op @ file:line (function)", where the frame is the innermost one
outside torch, site-packages/dist-packages, the standard library and gpuprof itself: the
line of the user's program that asked for the work. The backward of such an operation gets
a range "op backward @ file:line (function)" around its autograd node (the node of the
operation's output, hooked when the forward ran), so backward kernels are charged to the
forward line that made them, on the autograd engine's thread. The report attributes every
kernel to the innermost operation range open at its launch (report/attribution.c).

How: PyTorch's own torch-function mode (torch.overrides.TorchFunctionMode, 1.13 on), pushed
on the training thread when a window begins and popped when it ends, so that between windows
nothing is installed and no call pays for it. A function mode sees the calls as the user
wrote them (one F.linear, not its t and addmm), is popped while its handler runs (an
operation's inner calls are not seen again), and leaves dispatch itself alone (a dispatch
mode would send every ATen op through Python, and change what torch.compile sees). The
module call's own hooks are _gpuprof_layers.py's layer ranges; this adds the line.

Rules as in _gpuprof.py: the program is never changed or stopped; a failure records
GP_FW_MISSING once and the ranges stop; never under torch.compile (TorchDynamo), never in a
forked child. GPUPROF_TORCH_OPS=0 (the site's torch_ops) turns it off.
"""

import os
import sys
import sysconfig
import threading

_CACHE_MAX = 65536  # names kept per (code, line, op): a program has a few thousand
# Steps of each capture window with operation ranges (after the warm-up's): the report
# needs a sample, and a host-bound step pays each torch call's range, several times a bare
# call's (bench/torch_ops_cost.py); the report's tables cover the steps the ranges did
# (report/attribution.c)
STEPS = 3
# ... and in the first WINDOWS capture windows of the process only: the tables need a
# sample, and the cost stays a constant of the job (3 host-bound steps at about x8 each,
# twice: tens of ms in all) rather than a share of every window of a long job's sampled
# capture (4 % of a host-bound job's mean step when every window paid it)
WINDOWS = 2
# Programs with no optimizer step (inference: model(x), a generate() loop): the ranges cover
# the top-level module calls CALLS_WARM + 1 .. CALLS_WARM + CALLS of the thread that makes
# the first one (a warm-up's calls left out, as a training job's steps), where kernels are
# traced then; a global module hook counts the calls and goes after them, or at the first
# optimizer step (a training program's ranges are its steps'), or when TorchDynamo compiles
CALLS_WARM = 3
CALLS = 3
# calls that launch no GPU work and wait for none: no range (a blocking read of a value,
# __repr__/__format__/__bool__/__float__/item/tolist, keeps its range: its wait is named)
_NOT_OPS = frozenset(("__get__", "__set__", "__len__", "__hash__", "__iter__",
                      "__contains__", "__reduce_ex__", "__deepcopy__", "dim", "size",
                      "stride", "numel", "element_size", "data_ptr", "is_contiguous",
                      "is_floating_point", "is_complex", "requires_grad_", "register_hook",
                      "retain_grad", "storage_offset", "get_device"))
_RIGHT = frozenset(("radd", "rsub", "rmul", "rtruediv", "rmatmul", "rpow", "rfloordiv",
                    "rmod", "rand", "ror", "rxor"))
_INPLACE = frozenset(("iadd", "isub", "imul", "itruediv", "imatmul", "ipow", "ifloordiv",
                      "imod", "iand", "ior", "ixor", "ilshift", "irshift"))


class _St:
    lib = None  # the library's handle (gpuprof_fw_op_start, gpuprof_fw_range_end)
    start = end = None  # those two calls, through the C extension where it is bound
    mode = None  # the TorchFunctionMode instance while pushed
    owner = None  # the thread it is pushed on
    live = False  # ranges are made (the handler passes calls through when False)
    off = False  # a failure, or torch.compile: never again
    torch = None
    missing = None  # _gpuprof_abi._missing
    skip = {}  # code object -> its frame is not the user's
    names = {}  # (code, line, op) -> (forward name, backward name) as bytes
    ops = {}  # function -> its operation's name ("" : no range for it)
    open_bwd = {}  # backward range ids open (their node's post hook not yet run)
    window_steps = 0  # optimizer steps of the current window so far
    windows = 0  # capture windows begun so far (their first optimizer step seen)
    last_first = last_user = None  # the last call's first frame and the program's above it
    steps_seen = False  # an optimizer step: the ranges are the steps' (window())
    call_hooks = []  # the module hooks counting top-level calls (watch_calls), while on
    lock = threading.Lock()


_st = _St()


def _not_user_dirs():
    """Folders whose frames are never the user's: torch's, the installed packages', the
    standard library's and gpuprof's own."""
    dirs = {os.path.dirname(os.path.abspath(__file__))}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            dirs.add(p)
    t = getattr(_st.torch, "__file__", None)
    if t:
        dirs.add(os.path.dirname(os.path.dirname(os.path.abspath(t))) + "/torch")
    out = [d.rstrip("/") + "/" for d in dirs]
    return tuple(out) + ("/site-packages/", "/dist-packages/", "<frozen")


def _frame_is_not_users(code):
    s = _st.skip.get(code)
    if s is None:
        f = code.co_filename
        s = f.startswith(_st.prefixes) or "/site-packages/" in f or "/dist-packages/" in f
        if len(_st.skip) < _CACHE_MAX:
            _st.skip[code] = s
    return s


def _op_name(func):
    """The operation a torch function is, as the user wrote it: F.linear -> linear,
    Tensor.__iadd__ -> add_; "" for what launches no GPU work (attribute reads, sizes)."""
    n = _st.ops.get(func)
    if n is None:
        n = getattr(func, "__name__", "") or ""
        if n in _NOT_OPS or n.startswith(("_record_function", "_set_grad_enabled")):
            n = ""
        elif n.startswith("__") and n.endswith("__") and len(n) > 4:
            n = n[2:-2]
            if n in _RIGHT:
                n = n[1:]
            elif n in _INPLACE:
                n = n[1:] + "_"
        if len(_st.ops) < _CACHE_MAX:
            _st.ops[func] = n
    return n


def _site(op):
    """(forward name, backward name) for an operation called now, from the innermost
    frame outside torch and the packages (two frames up: the handler, torch's caller)."""
    f = sys._getframe(2)
    if f is _st.last_first:  # torch's frame of the call before: the same program frame
        f = _st.last_user
    else:
        first = f
        while f is not None and _frame_is_not_users(f.f_code):
            f = f.f_back
        # kept while alive (the next call, or the window's end): a loop inside torch (an
        # optimizer's over its parameters) makes all its calls from one frame of its own
        _st.last_first, _st.last_user = first, f
    if f is None:
        key = (None, 0, op)
    else:
        key = (f.f_code, f.f_lineno, op)
    got = _st.names.get(key)
    if got is None:
        if f is None:
            where = "(no frame of the program's)"
        else:
            c = f.f_code
            path = c.co_filename
            if path.startswith(_st.cwd):
                path = path[len(_st.cwd):]
            where = "%s:%d (%s)" % (path, f.f_lineno, c.co_name)
        got = (("%s @ %s" % (op, where)).encode("utf-8", "replace"),
               ("%s backward @ %s" % (op, where)).encode("utf-8", "replace"))
        if len(_st.names) >= _CACHE_MAX:
            _st.names.clear()
        _st.names[key] = got
    return got


def _hook_backward(out, bname):
    """Hooks on the autograd node of out (the operation's output): its backward's range,
    begun before the node runs and ended after, on the engine's thread. They never raise
    (an exception in a hook would fail the program's backward pass)."""
    t = out
    if isinstance(out, (tuple, list)):
        t = next((x for x in out if isinstance(x, _st.torch.Tensor)), None)
    node = getattr(t, "grad_fn", None) if isinstance(t, _st.torch.Tensor) else None
    if node is None or not hasattr(node, "register_prehook"):
        return
    key = id(node)

    def pre(*_):
        try:
            if _st.live:
                rid = _st.start(bname)
                if rid:
                    _st.open_bwd[key] = rid
        except Exception as e:
            _fail(e)

    def post(*_):
        try:
            rid = _st.open_bwd.pop(key, 0)
            if rid:
                _st.end(rid)
        except Exception as e:
            _fail(e)

    node.register_prehook(pre)
    node.register_hook(post)


def _fail(e):
    _st.off = True
    _st.live = False
    if _st.missing:
        _st.missing("operation ranges", e)


def _make_mode(torch):
    from torch.overrides import TorchFunctionMode

    start, end = _st.start, _st.end
    grad_on = torch.is_grad_enabled
    # TorchDynamo traces this handler when a compilation begins inside a covered step
    # (the compile watch's never() comes first, but only where PyTorch has compile
    # callbacks): it then reads "compiling" and passes the call through, with nothing
    # Dynamo cannot trace (sys._getframe broke the graph: fullgraph=True raised)
    comp = getattr(getattr(torch, "compiler", None), "is_compiling", None)
    if comp is None:
        comp = getattr(getattr(torch, "_dynamo", None), "is_compiling", None)
    compiling = comp or (lambda: False)

    class _OpRanges(TorchFunctionMode):
        """One range per torch function the program calls (popped while it runs)."""

        def __torch_function__(self, func, types, args=(), kwargs=None):
            if kwargs is None:
                kwargs = {}
            if not _st.live or compiling():
                return func(*args, **kwargs)
            try:
                op = _op_name(func)
                names = _site(op) if op else None
                rid = start(names[0]) if names else 0
            except Exception as e:
                _fail(e)
                return func(*args, **kwargs)
            try:
                out = func(*args, **kwargs)
            finally:
                if rid:
                    end(rid)
            if rid and grad_on():
                try:
                    _hook_backward(out, names[1])
                except Exception as e:
                    _fail(e)
            return out

    return _OpRanges()


def install(torch, missing):
    """Ready the operation ranges (pushed by window()); what is had, in words."""
    if os.environ.get("GPUPROF_TORCH_OPS", "1").lower() in ("0", "false", "no", "off"):
        return "off (GPUPROF_TORCH_OPS)"
    try:
        import torch.overrides as o

        if not hasattr(o, "TorchFunctionMode") or not hasattr(
                o, "_get_current_function_mode_stack"):
            return "not available (no torch function modes)"
        _st.torch, _st.missing = torch, missing
        _st.prefixes = _not_user_dirs()
        _st.cwd = os.getcwd().rstrip("/") + "/"
    except Exception as e:
        _fail(e)
        return "not available (%s)" % e
    return "by line, in capture windows"


def window(tracing, lib, steps=STEPS, fast=None):
    """The collector's window after an optimizer step, on the training thread: the mode
    pushed when a window begins, for its first `steps` steps (None: all of them), popped
    after them or when the window ends (or its ranges stopped where it cannot be popped
    here: another mode above it, another thread). lib: the attached library's handle;
    fast: the C extension _gpuprof_fast where it is bound (its calls cost less)."""
    if _st.torch is None:
        return
    if not _st.steps_seen:
        _st.steps_seen = True
        _calls_done()
    if not tracing:
        _st.window_steps = 0
        if _st.mode is not None:
            _pop()
        return  # between windows: this test once per optimizer step
    _st.window_steps += 1
    if _st.window_steps == 1:
        _st.windows += 1
    spent = steps is not None and (_st.window_steps > steps or _st.windows > WINDOWS)
    try:
        if _st.mode is None and not (_st.off or spent) and lib:
            _push(lib, fast)
        elif _st.mode is not None and (spent or _st.off):
            _pop()
    except Exception as e:
        _fail(e)
        _pop()


def _push(lib, fast):
    """The mode pushed on this thread, its calls bound to the library (or the C extension)."""
    if not hasattr(lib, "gpuprof_fw_op_start"):  # a library older than this
        _st.off = True
        return
    if _st.lib is not lib:
        import ctypes

        lib.gpuprof_fw_op_start.restype = ctypes.c_uint64
        lib.gpuprof_fw_op_start.argtypes = [ctypes.c_char_p]
        _st.lib = lib
    _st.start, _st.end = lib.gpuprof_fw_op_start, lib.gpuprof_fw_range_end
    try:
        if fast is not None and getattr(fast, "ops", None) and fast.ops():
            _st.start, _st.end = fast.op_start, fast.range_end
    except Exception:
        pass
    m = _make_mode(_st.torch)
    m.__enter__()
    _st.mode, _st.owner = m, threading.get_ident()
    _st.live = True


def watch_calls(lib, tracing, fast=None):
    """Programs with no optimizer step: the mode pushed around top-level module calls
    CALLS_WARM + 1 .. CALLS_WARM + CALLS (CALLS's comment). lib, tracing, fast: functions
    giving the attached library (None: not attached), whether kernels are traced now, and
    the C extension. What is had, in words."""
    import importlib

    mm = importlib.import_module("torch.nn.modules.module")
    pre = getattr(mm, "register_module_forward_pre_hook", None)
    post = getattr(mm, "register_module_forward_hook", None)
    if not (pre and post) or _st.torch is None:
        return "steps only (no global module hooks)"
    comp = getattr(getattr(_st.torch, "compiler", None), "is_compiling", None)
    compiling = comp or (lambda: False)
    c = {"depth": 0, "n": 0, "owner": None, "pushed": False, "pid": os.getpid()}

    def on_pre(module, args):
        try:
            if compiling():
                return
            me = threading.get_ident()
            if _st.off or _st.steps_seen or os.getpid() != c["pid"]:
                _calls_done()
                return
            if c["owner"] is None:
                c["owner"] = me
            if me != c["owner"]:
                return
            c["depth"] += 1
            if c["depth"] == 1:
                c["n"] += 1
                if c["n"] > CALLS_WARM and _st.mode is None and tracing():
                    lb = lib()
                    if lb:
                        _push(lb, fast() if fast else None)
                        c["pushed"] = _st.mode is not None
        except Exception as e:
            _fail(e)
            _calls_done()

    def on_post(module, args, out):
        try:
            if compiling() or threading.get_ident() != c["owner"]:
                return
            c["depth"] = max(c["depth"] - 1, 0)
            if c["depth"]:
                return
            if c["pushed"]:
                c["pushed"] = False
                _pop()
            if c["n"] >= CALLS_WARM + CALLS:
                _calls_done()
        except Exception as e:
            _fail(e)
            _calls_done()

    _st.call_hooks = [pre(on_pre), post(on_post)]
    return "steps, else top-level module calls %d-%d" % (CALLS_WARM + 1, CALLS_WARM + CALLS)


def _calls_done():
    """The top-level call hooks removed (their calls done, a step seen, or a compile)."""
    hooks, _st.call_hooks = _st.call_hooks, []
    for h in hooks:
        try:
            h.remove()
        except Exception:
            pass


def _pop():
    _st.live = False
    _st.last_first = _st.last_user = None
    m = _st.mode
    if m is None or _st.owner != threading.get_ident():
        return
    try:
        import torch.overrides as o

        stack = o._get_current_function_mode_stack()
        if stack and stack[-1] is m:
            m.__exit__(None, None, None)
            _st.mode = None
    except Exception as e:
        _st.off = True
        if _st.missing:
            _st.missing("operation ranges (could not remove the mode)", e)
    _end_open()


def _end_open():
    """Backward ranges a failed pass left open: ended where the window ends."""
    for key in list(_st.open_bwd):
        rid = _st.open_bwd.pop(key, 0)
        if rid:
            try:
                _st.end(rid)
            except Exception:
                pass


def never():
    """TorchDynamo compiles: no operation ranges from here on. Only said here (this runs
    inside Dynamo's compilation, which keeps the mode stack as it found it); the mode is
    popped by the next window() call, at an optimizer step."""
    _st.off = True
    _st.live = False
    _calls_done()


def forget():
    """A forked child (a DataLoader worker): the parent's mode is not its own."""
    _st.live = False
    _calls_done()
    _st.open_bwd = {}
    if _st.mode is not None:
        _pop()
    _st.mode = None


def active():
    """Is the mode pushed now? (tests)"""
    return _st.mode is not None
