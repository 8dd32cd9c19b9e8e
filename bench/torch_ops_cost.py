#!/usr/bin/env python3
"""What the operation ranges (agent/python/_gpuprof_ops.py: kernel time by the user's line)
cost the program inside a capture window, measured inside one process so that the spread
between identical processes does not drown it (doc/performance.md).

A host-bound step (small MLP, Adam: every torch call's Python cost shows, the worst case
for a per-call hook) runs in alternating blocks of BLOCK steps with the integration's
torch-function mode pushed (each call: its name and line looked up, a range begun and
ended in the rank file, its autograd node hooked) and popped (between windows: nothing
installed); the first step of each block is left out; median step time of each side.
The calls a step makes are counted once with a counting mode.

Run under gpuprof with mode layers so that the ranges are recorded into a real ring
without a GPU (the module hooks of mode layers are taken off here; they are not this):
  gpuprof run --modes=timing,nvtx,layers -- python3 bench/torch_ops_cost.py [cpu|cuda] [BLOCKS]
Prints "ops_cost DEV calls_per_step N off_ms X on_ms Y per_call_us Z ratio R" and the
calls per second each way."""
import statistics as st
import sys
import time

import torch
from torch.overrides import TorchFunctionMode

BLOCK = 20


def workload(dev):
    torch.manual_seed(0)
    layers = []
    for _ in range(4):
        layers += [torch.nn.Linear(64, 64), torch.nn.ReLU()]
    m = torch.nn.Sequential(*layers, torch.nn.Linear(64, 8)).to(dev)
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    x = torch.randn(16, 64, device=dev)
    y = torch.zeros(16, dtype=torch.long, device=dev)

    def step():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        if dev == "cuda":
            torch.cuda.synchronize()
    return step


class Count(TorchFunctionMode):
    n = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        Count.n += 1
        return func(*args, **(kwargs or {}))


def main():
    dev = sys.argv[1] if len(sys.argv) > 1 else "cpu"
    blocks = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    g = sys.modules.get("_gpuprof_steps")  # the integration's parts, once torch started it
    la = sys.modules.get("_gpuprof_layers")
    c = sys.modules["_gpuprof_abi"]._c if g else None
    ops = sys.modules.get("_gpuprof_ops")
    step = workload(dev)
    for _ in range(5):
        step()  # warm-up; the integration attaches at the first optimizer step
    if g is None or ops is None or not c.attached:
        print("ops_cost: not under gpuprof (run it with gpuprof run --modes=timing,nvtx,layers)")
        return 1
    g._ops_window = lambda tracing=None: None  # this bench switches the mode itself
    la._layers_unregister()
    if la._active is not None:
        la._active.off = True
    with Count():
        step()
    calls = Count.n
    on, off, floor = [], [], []
    for b in range(3 * blocks):
        side = (on, off, floor)[b % 3]
        if side is on:
            ops.window(True, c.lib, None, c.fast_mod)
        elif side is floor:  # any torch-function mode's own cost: a handler that only calls
            mode = Count()
            mode.__enter__()
        times = []
        for i in range(BLOCK):
            t0 = time.perf_counter()
            step()
            times.append(time.perf_counter() - t0)
        if side is on:
            ops.window(False, c.lib)
        elif side is floor:
            mode.__exit__(None, None, None)
        side.extend(times[1:])
    a, b, c = (st.median(x) * 1e3 for x in (off, on, floor))
    how = "C extension" if ops._st.start is not c.lib.gpuprof_fw_op_start else "ctypes"
    print("ops_cost %s calls_per_step %d off_ms %.4f on_ms %.4f per_call_us %.2f ratio %.3f"
          " (calls into the library through %s)"
          % (dev, calls, a, b, (b - a) * 1e3 / calls, b / a, how))
    print("ops_cost %s floor_ms %.4f per_call_us %.2f (a torch-function mode that only calls)"
          % (dev, c, (c - a) * 1e3 / calls))
    print("ops_cost %s calls_per_second off %.0f on %.0f" % (dev, calls / a * 1e3,
                                                             calls / b * 1e3))
    return 0


if __name__ == "__main__":
    sys.exit(main())
