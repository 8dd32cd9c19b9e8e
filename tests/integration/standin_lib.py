"""A stand-in for libgpuprof-inject.so's calls the PyTorch integration makes (no GPU, no
ring): every range begun is recorded by name, and every one still open is known.
make(tracing, event): tracing() answers "are kernels traced now?", event(kind, dev, a, c,
d, text) the integration's records (None: answered 0)."""
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
