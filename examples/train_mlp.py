"""PyTorch twin of gpuprof-train-mlp: the seed's MLP and train_step with torch.cuda.nvtx
ranges (train_step > zero_grad, forward > layer_<i>, backward, optimizer_step) and the
planted pathologies: --sync-every-step (print(loss.item())), --host-stall-ms (slow data
loading), --leak-bytes (a tensor kept every step), --imbalance-rank/--imbalance-ms."""
import argparse, os, time
import torch
import torch.cuda.nvtx as _nvtx


class _NoNvtx:
    """--no-nvtx: the same script without its ranges, as a script that was never annotated"""
    def range_push(self, name): pass
    def range_pop(self): pass
    def range(self, name):
        import contextlib
        return contextlib.nullcontext()


nvtx = _nvtx


class MLP(torch.nn.Module):
    def __init__(self, dim, num_layers):
        super().__init__()
        self.layers = torch.nn.ModuleList([torch.nn.Linear(dim, dim) for _ in range(num_layers)])

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            with nvtx.range(f"layer_{i}"):
                x = torch.nn.functional.gelu(layer(x))
        return x


def _args():
    p = argparse.ArgumentParser()
    p.add_argument("--dim", type=int, default=4096)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--dtype", choices=["fp32", "bf16"], default="bf16")
    p.add_argument("--sgd", action="store_true")
    p.add_argument("--sync-every-step", action="store_true")
    p.add_argument("--host-stall-ms", type=float, default=0)
    p.add_argument("--leak-bytes", type=int, default=0)
    p.add_argument("--imbalance-rank", type=int, default=-1)
    p.add_argument("--imbalance-ms", type=float, default=0)
    p.add_argument("--time", action="store_true",
                   help="time each step with torch.cuda.synchronize and print the median")
    p.add_argument("--ddp", action="store_true",
                   help="DistributedDataParallel over NCCL (RANK, WORLD_SIZE, LOCAL_RANK, "
                        "MASTER_ADDR, MASTER_PORT from the environment, as torchrun sets them)")
    p.add_argument("--torch-profiler", action="store_true",
                   help="run under torch.profiler (overhead comparison, kernel count)")
    p.add_argument("--no-nvtx", action="store_true",
                   help="no NVTX ranges (steps must then be found without annotations)")
    return p.parse_args()


def _report(a, prof, times, t_warm, rank, dev, opt):
    """The figures the run prints at its end: the ground truth the tests hold gpuprof to."""
    if prof is not None:
        torch.cuda.synchronize()
        prof.__exit__(None, None, None)
        cuda = [e for e in prof.events() if e.device_type.name == "CUDA"]
        kernels = [e for e in cuda if not e.name.startswith(("Memcpy", "Memset"))]
        print(f"torch_profiler_cuda_events {len(cuda)} kernels {len(kernels)}", flush=True)
        if os.environ.get("TORCH_KERNEL_NAMES"):  # per-name counts, to compare with gpuprof
            import collections, json
            with open(os.environ["TORCH_KERNEL_NAMES"], "w") as f:
                json.dump(collections.Counter(e.name for e in kernels), f)
    if a.time and len(times) > 3:
        t = sorted(times[3:])
        print(f"step_ms_median {t[len(t) // 2]:.4f} rank {rank}", flush=True)
    if dev.startswith("cuda") and a.steps > 4:  # synchronised mean over steps 3.. (ground truth)
        torch.cuda.synchronize()
        print(f"synchronised_step_ms {(time.perf_counter() - t_warm) * 1000 / (a.steps - 3):.4f}"
              f" rank {rank}", flush=True)
    if dev.startswith("cuda"):
        torch.cuda.synchronize()
        print(f"memory_reserved {torch.cuda.memory_reserved()}", flush=True)
        # PyTorch's own figures, the ground truth of gpuprof's PyTorch section
        print(f"max_memory_allocated {torch.cuda.max_memory_allocated()}", flush=True)
        print(f"max_memory_reserved {torch.cuda.max_memory_reserved()}", flush=True)
    state = sum(v.numel() * v.element_size() for s in opt.state.values() for v in s.values()
                if isinstance(v, torch.Tensor))
    print(f"optimizer_state_bytes {state}", flush=True)


def main():
    a = _args()
    global nvtx
    if a.no_nvtx:
        nvtx = _NoNvtx()
    rank = int(os.environ.get("SLURM_PROCID", os.environ.get("RANK", "0")))
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    if a.ddp:
        local = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local)
        dev = f"cuda:{local}"
        torch.distributed.init_process_group("nccl", device_id=torch.device(dev))
    dt = torch.bfloat16 if a.dtype == "bf16" and dev.startswith("cuda") else torch.float32
    torch.manual_seed(0)
    model = MLP(a.dim, a.layers).to(dev, dt)
    if a.ddp:
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = (torch.optim.SGD if a.sgd else torch.optim.Adam)(model.parameters(), lr=1e-4)
    x = torch.randn(a.batch, a.dim, device=dev, dtype=dt)
    kept = []
    times = []
    print(f"train_mlp.py: device {dev} dim {a.dim} layers {a.layers} rank {rank}", flush=True)
    prof = None
    if a.torch_profiler:
        from torch.profiler import profile, ProfilerActivity
        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        prof.__enter__()
    t_warm = time.perf_counter()
    for step in range(a.steps):
        if step == 3:
            if dev.startswith("cuda"):
                torch.cuda.synchronize()
            t_warm = time.perf_counter()
        if a.time and dev.startswith("cuda"):
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        if a.host_stall_ms:
            time.sleep(a.host_stall_ms / 1000)
        nvtx.range_push("train_step")
        nvtx.range_push("zero_grad")
        opt.zero_grad()
        nvtx.range_pop()
        with nvtx.range("forward"):
            loss = model(x).float().mean()
        with nvtx.range("backward"):
            loss.backward()
        with nvtx.range("optimizer_step"):
            opt.step()
        if a.leak_bytes:
            kept.append(torch.empty(a.leak_bytes, dtype=torch.uint8, device=dev))
        if a.imbalance_ms and rank == a.imbalance_rank:
            time.sleep(a.imbalance_ms / 1000)
        if a.sync_every_step:
            print(f"step {step} loss {loss.item():.6f}")
        nvtx.range_pop()
        if a.time:
            if dev.startswith("cuda"):
                torch.cuda.synchronize()
            times.append((time.perf_counter() - t0) * 1000)
    _report(a, prof, times, t_warm, rank, dev, opt)
    if a.ddp:
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
