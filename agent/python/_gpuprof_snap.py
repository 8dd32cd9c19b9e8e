"""The allocator's pictures read: PyTorch's memory snapshot (torch.cuda.memory._snapshot())
turned into the owners of the memory by Python stack (live now, live at the peak replayed
from the history, kept by a recorded window), their records, and the memory_viz pickle
written beside the rank file. Pure functions of the snapshot, but for the records and the
pickle."""

import os

import _gpuprof_abi as _abi

_OWNERS_MAX = 8  # stack groups recorded per memory picture (the report keeps 8)
# the owner of a peak's bytes that the history did not see (_picture)
_UNSEEN_TEXT = "(no stack: reached while the allocator history was off, between its windows)"
_FRAMES_MAX = 6  # frames of each owner's stack text


def _frames_text(frames):
    """Python frames (innermost first) as "file.py:LINE function" joined by " <- ",
    starting at the first frame outside torch itself (the line of the program that owns
    the memory), with torch's innermost frame kept when there is nothing else."""
    if frames is None:
        return "(no stack: allocated while the history was off)"
    if not frames:
        return "(no Python frames: allocated by C++, the autograd thread or the history off)"
    out = []
    for f in frames:
        fn = f.get("filename", "") if isinstance(f, dict) else ""
        if not fn.endswith(".py") and fn:
            continue  # C++ frames
        out.append((fn, f.get("line", 0), f.get("name", "?")))
    own = [x for x in out if "/torch/" not in x[0]]
    use = own or out[:1]
    return " <- ".join("%s:%s %s" % (os.path.basename(fn) or "?", ln, nm)
                       for fn, ln, nm in use[:_FRAMES_MAX]) or "(no Python stack)"


def _owners(live):
    """live: {addr: (size, frames)} -> [(bytes, tensors, text)] largest first."""
    groups = {}
    for size, frames in live.values():
        k = _frames_text(frames)
        b, n = groups.get(k, (0, 0))
        groups[k] = (b + size, n + 1)
    return sorted(((b, n, k) for k, (b, n) in groups.items()), reverse=True)


def _emit_owners(live, dev, which, unseen=0):
    """The largest groups, then one for all the others: the records add up to the total.
    unseen: bytes of the total no block of live accounts for (a peak reached while the
    history was off), one record of their own, last."""
    groups = _owners(live)
    most = _OWNERS_MAX - (1 if unseen else 0)
    keep = groups[:most - 1] if len(groups) > most else groups
    rest = groups[len(keep):]
    for b, n, text in keep:
        _abi._emit(_abi.FW_OWNER, dev=dev, a=b, c=n, d=which, text=text)
    if rest:
        _abi._emit(_abi.FW_OWNER, dev=dev, a=sum(g[0] for g in rest), c=sum(g[1] for g in rest),
                   d=which, text="(%d other stacks)" % len(rest))
    if unseen:
        _abi._emit(_abi.FW_OWNER, dev=dev, a=unseen, c=0, d=which, text=_UNSEEN_TEXT)


def _live_now(snap, dev):
    live = {}
    for seg in snap.get("segments", ()):
        if seg.get("device", dev) != dev:
            continue
        for b in seg.get("blocks", ()):
            if b.get("state") == "active_allocated":
                live[b["address"]] = (b["size"], b.get("frames"))
    return live


def _live_at_peak(snap, dev):
    """Replay the allocator's history backwards from now to the largest allocated total
    inside it: the blocks live then, with their allocation stacks, and the reserved total
    at that moment. Allocated counts as PyTorch's allocated_bytes does: from alloc to
    free_requested."""
    live = _live_now(snap, dev)
    traces = snap.get("device_traces") or []
    tr = traces[dev] if dev < len(traces) else []
    reserved = sum(s.get("total_size", 0) for s in snap.get("segments", ())
                   if s.get("device", dev) == dev)
    cur = sum(s for s, _ in live.values())
    best, best_i, best_res = cur, len(tr), reserved
    res = reserved
    for i in range(len(tr) - 1, -1, -1):  # state before entry i
        e = tr[i]
        act, size = e.get("action"), e.get("size", 0)
        if act == "alloc":
            cur -= size
        elif act in ("free_requested", "free"):
            cur += size
        elif act in ("segment_alloc", "segment_map"):
            res -= size
        elif act in ("segment_free", "segment_unmap"):
            res += size
        if cur > best:
            best, best_i, best_res = cur, i, res
    # undo the entries after the peak; blocks freed after it get their allocation stack
    # from the last alloc of that address before it
    for i in range(len(tr) - 1, best_i - 1, -1):
        e = tr[i]
        act = e.get("action")
        if act == "alloc":
            live.pop(e.get("addr"), None)
        elif act in ("free_requested", "free"):
            live[e.get("addr")] = (e.get("size", 0), None)
    need = {a for a, (_, fr) in live.items() if fr is None}
    for i in range(best_i - 1, -1, -1):
        if not need:
            break
        e = tr[i]
        if e.get("action") == "alloc" and e.get("addr") in need:
            live[e["addr"]] = (live[e["addr"]][0], e.get("frames"))
            need.discard(e["addr"])
    return live, best, best_res


def _write_pickle(snap, tag):
    # only a process that records into a rank file, beside its own (_abi._attach): the others
    # under the same agent inherit the task's GPUPROF_RANK_FILE and would overwrite it
    if not _abi._c.base or not _abi._c.attached:
        return ""
    import pickle

    path = "%s.torch-%s.pickle" % (_abi._c.base, tag)
    tmp = "%s.tmp%d" % (path, os.getpid())
    mode = 0o640 if os.environ.get("GPUPROF_GROUP_READABLE") == "1" else 0o600
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode)
    try:
        with os.fdopen(fd, "wb") as f:
            pickle.dump(snap, f, protocol=4)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return os.path.basename(path)


def _grown(snap, dev):
    """Blocks live now that the trace saw allocated: at the end of a window that began
    with an empty trace, what the window's steps added and kept (a leak's allocations)."""
    live = _live_now(snap, dev)
    traces = snap.get("device_traces") or []
    seen = {e.get("addr"): e.get("frames") or [] for e in (traces[dev] if dev < len(traces) else ())
            if e.get("action") == "alloc"}
    return {a: (v[0], seen[a]) for a, v in live.items() if a in seen}
