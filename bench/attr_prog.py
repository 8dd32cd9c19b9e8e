"""A training step whose source lines are known, for bench/gpu-attr.sh (kernel time by the
user's code): each line marked "# L:name" launches its own GPU work. Run under gpuprof it
is what the operation ranges attribute; run alone with PROFILE=1 it profiles PROF_STEPS
steps after WARM steps with torch.profiler (with_stack) and writes its own figures to
TRUTH_FILE: the device time by the innermost frame of this file (the line that made the
call; backward ops run on the autograd thread with no Python stack), the total device time
of every kernel, and key_averages(group_by_stack_n=1)'s table.
Environment: STEPS (60), DIM (2048), BATCH (512), PROFILE, WARM (10), PROF_STEPS (5),
TRUTH_FILE, DEVICE (cuda)."""
import contextlib
import json
import os
import sys

import torch

STEPS = int(os.environ.get("STEPS", "60"))
D, B = int(os.environ.get("DIM", "2048")), int(os.environ.get("BATCH", "512"))
dev = os.environ.get("DEVICE", "cuda")  # cpu: to try the script where there is no GPU
torch.manual_seed(0)
w1 = torch.nn.Parameter(torch.randn(D, D, device=dev) / D ** 0.5)
w2 = torch.nn.Parameter(torch.randn(D, D, device=dev) / D ** 0.5)
opt = torch.optim.SGD([w1, w2], lr=1e-4, momentum=0.9)
x = torch.randn(B, D, device=dev)


def _r(name):
    """Under PROFILE=1 a torch.profiler range named "L:NAME" around the line, whose device
    time (its kernels and its children's) is the line's truth; a no-op context otherwise
    (stdlib: the operation ranges skip its frame, so the line stays the statement's)."""
    if os.environ.get("PROFILE") == "1":
        return torch.profiler.record_function("L:" + name)
    return contextlib.nullcontext()


def step():
    opt.zero_grad(set_to_none=True)
    with _r("matmul1"): h = x @ w1  # L:matmul1
    with _r("gelu"): h = torch.nn.functional.gelu(h)  # L:gelu
    with _r("matmul2"): h = torch.matmul(h, w2)  # L:matmul2
    with _r("loss"): loss = (h * h).mean()  # L:loss
    loss.backward()  # L:backward
    opt.step()  # L:opt_step


def sync():
    if dev == "cuda":
        torch.cuda.synchronize()


def lines():
    import re

    out = {}
    for n, text in enumerate(open(__file__), 1):
        m = re.match(r"^\s+[^#\s].*  # L:(\w+)\s*$", text)
        if m:
            out[m.group(1)] = n
    return out


def device_ns(e, self_time=True):
    for k in (("self_device_time_total", "self_cuda_time_total") if self_time
              else ("device_time_total", "cuda_time_total")):
        v = getattr(e, k, None)
        if v is not None:
            return float(v) * 1000.0  # us -> ns
    return 0.0


def profile():
    from torch.profiler import ProfilerActivity, profile as prof_

    warm, n = int(os.environ.get("WARM", "10")), int(os.environ.get("PROF_STEPS", "5"))
    for _ in range(warm):
        step()
    sync()
    act = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev == "cuda" else [])
    kw = {}
    try:  # PyTorch 2.x fills FunctionEvent.stack only with a verbose experimental config
        from torch._C._profiler import _ExperimentalConfig
        kw["experimental_config"] = _ExperimentalConfig(verbose=True)
    except (ImportError, TypeError):
        pass
    with prof_(activities=act, with_stack=True, **kw) as p:
        for _ in range(n):
            step()
        sync()
    me = os.path.basename(__file__)
    marks = lines()
    by_line, raw_line, no_frame, total = {}, {}, 0.0, 0.0
    # torch.profiler's own "Activity Buffer Request" (once, in the first profiled step) has
    # device time and falls inside whichever line's range ran then: no kernel of the
    # program's, so taken out of that range's (the H100's first run: 95.9 us in line 38's)
    abr = [(e.time_range.start, e.time_range.end, device_ns(e)) for e in p.events()
           if e.name == "Activity Buffer Request"]
    for e in p.events():
        if str(getattr(e, "device_type", "")).endswith("CUDA"):  # a kernel, a copy
            if not getattr(e, "is_user_annotation", False):  # not Optimizer.step#SGD.step
                total += e.time_range.elapsed_us() * 1000.0
            continue
        if e.name.startswith("L:") and e.name[2:] in marks:  # the line's range: its kernels
            line = marks[e.name[2:]]
            own = sum(ns for a, b, ns in abr if e.time_range.start <= a and b <= e.time_range.end)
            raw_line[line] = raw_line.get(line, 0.0) + device_ns(e, self_time=False)
            by_line[line] = raw_line[line] - own
            continue
        ns = device_ns(e)
        if not ns:
            continue
        frame = next((s for s in (e.stack or []) if me + "(" in s), None)
        if frame is None:
            no_frame += ns
    key = "self_device_time_total" if hasattr(p.key_averages()[0], "self_device_time_total") \
        else "self_cuda_time_total"
    table = p.key_averages(group_by_stack_n=1).table(sort_by=key, row_limit=20)
    abr_ns = sum(ns for _, _, ns in abr)
    # by_line_ns and total_ns net of the Activity Buffer Request (torch.profiler's own, no
    # kernel of the program's); the raw figures beside them
    truth = {"steps": n, "profiled_steps": n, "lines": lines(), "by_line_ns": by_line,
             "by_line_raw_ns": raw_line, "activity_buffer_request_ns": abr_ns,
             "no_frame_ns": no_frame, "total_ns": total - abr_ns, "total_raw_ns": total,
             "attributed_ns": sum(by_line.values()) + no_frame, "table": table}
    with open(os.environ["TRUTH_FILE"], "w") as f:
        json.dump(truth, f)
    print(table)


if __name__ == "__main__":
    if os.environ.get("PROFILE") == "1":
        profile()
    else:
        for _ in range(STEPS):
            step()
        sync()
    sys.exit(0)
