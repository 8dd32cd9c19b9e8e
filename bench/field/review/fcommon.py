"""Helpers for the programs of a field review (session 24), written by a reviewer who had
not seen gpuprof: each prints one `TRUTH {json}` line with figures it measured itself (CUDA events recorded at the end of each step, elapsed after a final
synchronize; the framework's own memory counters)."""
import json
import statistics as st


def truth(**kw):
    print("TRUTH " + json.dumps(kw, sort_keys=True), flush=True)


def med(v):
    return round(st.median(v), 4) if v else None


def pct(v, q):
    if not v:
        return None
    s = sorted(v)
    return round(s[min(len(s) - 1, int(q * (len(s) - 1) + 0.5))], 4)


def intervals(events):
    """ms between consecutive CUDA events (call after torch.cuda.synchronize())."""
    return [events[i - 1].elapsed_time(events[i]) for i in range(1, len(events))]


def summary(ms, warm):
    """ms[k] is step k+1's time (end of step k to end of step k+1); warm steps dropped."""
    v = ms[warm:]
    return dict(n=len(v), median=med(v), p95=pct(v, 0.95), mean=round(sum(v) / len(v), 4) if v else None,
                min=round(min(v), 4) if v else None, max=round(max(v), 4) if v else None)
