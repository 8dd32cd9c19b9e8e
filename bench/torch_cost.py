#!/usr/bin/env python3
"""What the PyTorch integration (agent/python) costs a training step, measured
inside one process so that the +-15 % between identical processes on the H200 does not
drown it (doc/performance.md):

  history  the caching allocator's history, set up exactly as _gpuprof sets it (stacks
           "python", GPUPROF_TORCH_HISTORY entries), switched on and off in alternating
           blocks of BLOCK steps; every step synchronised; the first step of each block
           left out; median step time of each side and their ratio;
  hooks    the main thread's time inside _gpuprof's step hooks, per step: the same two
           calls optimizer.step() makes (pre and post: records into the rank file, the
           allocator's counters, the peak check), timed with perf_counter around them,
           against the median step time.

Run under gpuprof so the hooks record into a real ring:
  gpuprof run --modes=mem,nvtx -- python3 bench/torch_cost.py seed|transformer [BLOCKS]
Prints one line per part: "cost WORKLOAD PART on_ms off_ms ratio" and
"cost WORKLOAD hooks us_per_step step_ms share"."""
import statistics as st
import sys
import time

import torch


def workload(name):
    torch.manual_seed(0)
    dev = "cuda"
    if name == "seed":  # the seed text's MLP: 8 x Linear(4096), batch 64, bf16, Adam
        layers = []
        for _ in range(8):
            layers += [torch.nn.Linear(4096, 4096), torch.nn.GELU()]
        m = torch.nn.Sequential(*layers).to(dev, torch.bfloat16)
        x = torch.randn(64, 4096, device=dev, dtype=torch.bfloat16)
        loss = lambda: m(x).float().mean()
    else:  # a transformer encoder step: 8 layers, d_model 1024, 16 heads, 16 x 512 tokens
        layer = torch.nn.TransformerEncoderLayer(1024, 16, 4096, batch_first=True)
        m = torch.nn.TransformerEncoder(layer, 8).to(dev, torch.bfloat16)
        x = torch.randn(16, 512, 1024, device=dev, dtype=torch.bfloat16)
        loss = lambda: m(x).float().mean()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4)

    def step():
        opt.zero_grad(set_to_none=True)
        loss().backward()
        opt.step()
    return step, opt


def timed(step):
    torch.cuda.synchronize()
    t = time.perf_counter()
    step()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) * 1e3


# the allocator history's settings compared, interleaved block by block: "off", then
# (enabled, context) pairs; stacks are "python" as _gpuprof sets them
CONFIGS = [("off", None), ("all", "all"), ("all", "alloc"), ("state", "alloc")]


def history(cfg, entries):
    rec = torch.cuda.memory._record_memory_history
    rec = getattr(rec, "__wrapped__", rec)  # PyTorch's own, not _gpuprof's wrapper
    rec(enabled=None)
    if cfg[0] != "off":
        rec(enabled=cfg[0], context=cfg[1], stacks="python", max_entries=entries)


def main():
    import os
    name = sys.argv[1] if len(sys.argv) > 1 else "seed"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 12
    block = 10
    step, opt = workload(name)
    for _ in range(5):
        step()
    entries = int(os.environ.get("GPUPROF_TORCH_HISTORY", "100000"))
    side = {c: [] for c in CONFIGS}
    for _ in range(rounds):
        for c in CONFIGS:
            history(c, entries)
            times = [timed(step) for _ in range(block)]
            side[c] += times[1:]
    off = st.median(side[CONFIGS[0]])
    for c in CONFIGS[1:]:
        on = st.median(side[c])
        print("cost %s history enabled=%s context=%s %.4f %.4f %.4f" % (name, c[0], c[1], on, off, on / off), flush=True)
    history(("all", "alloc"), entries)  # as _gpuprof leaves it
    for what, fn in (("memory_stats", lambda: torch.cuda.memory_stats(0)),
                     ("_cuda_memoryStats", lambda: torch._C._cuda_memoryStats(0))):
        t = time.perf_counter()
        for _ in range(200):
            fn()
        print("cost %s %s %.1f us" % (name, what, (time.perf_counter() - t) / 200 * 1e6))
    try:
        import _gpuprof
        import _gpuprof_layers
        import _gpuprof_steps as g
    except ImportError:
        print("cost %s hooks: not under gpuprof's hook" % name)
        return
    spent = []
    for _ in range(200):
        t = time.perf_counter()
        g._step_pre(opt, (), {})
        g._step_post(opt, (), {})
        spent.append(time.perf_counter() - t)
    us = st.median(spent) * 1e6
    print("cost %s hooks %.1f %.4f %.5f" % (name, us, off, us / 1e3 / off), flush=True)
    if "layers" not in _gpuprof.ctx.modes or _gpuprof_layers._active is None:
        return
    # mode layers: its ranges switched on and off in interleaved blocks (the module hooks
    # stay installed; off, they return at once)
    history(("off", None), entries)
    side = {True: [], False: []}
    for _ in range(rounds):
        for on in (True, False):
            _gpuprof_layers._active.off = not on
            times = [timed(step) for _ in range(block)]
            side[on] += times[1:]
    _gpuprof_layers._active.off = False
    on, off = st.median(side[True]), st.median(side[False])
    print("cost %s layers %.4f %.4f %.4f" % (name, on, off, on / off), flush=True)


if __name__ == "__main__":
    main()
