"""Shared by the field programs: each prints its own truth as one line
`TRUTH {json}` at the end, measured by the program itself (CUDA events, the framework's
own counters), so the report can be held against it (DESIGN.md rules 7-10)."""
import json
import statistics as st
import sys


def truth(**kw):
    print("TRUTH " + json.dumps(kw, sort_keys=True), flush=True)


def med(v):
    return st.median(v) if v else 0.0


def cuda_step_times(events, warm):
    """Elapsed ms between consecutive step-end CUDA events (GPU clock), warm-up left out."""
    import torch

    torch.cuda.synchronize()
    ms = [events[i - 1].elapsed_time(events[i]) for i in range(1, len(events))]
    return ms[warm:]
