"""A stand-in for libgpuprof-inject.so's calls the PyTorch integration makes (no GPU, no
ring): every range begun is recorded by name, and every one still open is known.
make(tracing, event): tracing() answers "are kernels traced now?", event(kind, dev, a, c,
d, text) the integration's records (None: answered 0); install() also starts the PyTorch
integration on it, with GPUPROF_MODES."""
import os
import types


def make(tracing, event=None):
    state = {"next": 0, "names": [], "open": set()}

    def start(name):
        state["next"] += 1
        state["names"].append(name.decode())
        state["open"].add(state["next"])
        return state["next"]

    lib = types.SimpleNamespace()
    lib.gpuprof_fw_attach = lambda: 1
    lib.gpuprof_fw_rank_file = lambda: None
    lib.gpuprof_fw_event = event or (lambda kind, dev, a, c, d, text: 0)
    lib.gpuprof_fw_tracing = tracing
    lib.gpuprof_fw_range_start = start
    lib.gpuprof_fw_op_start = start
    lib.gpuprof_fw_range_end = lambda i: state["open"].discard(i)
    return lib, state


def install(tracing, event=None, attached=False):
    """make()'s library installed as the integration's, and the PyTorch integration started
    with the modes of GPUPROF_MODES (torch and the agent's directory must be importable)"""
    import _gpuprof as g
    import _gpuprof_abi as gpa
    import _gpuprof_torch as gpt
    import torch
    lib, state = make(tracing, event)
    gpa._c.lib = lib
    if attached:
        gpa._c.attached = True
    g.ctx.modes = set(os.environ["GPUPROF_MODES"].split(","))
    gpt._start(torch)
    return lib, state
