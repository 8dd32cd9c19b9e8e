"""Merge PyTorch memory snapshots, one per rank (the rankR.torch-*.pickle files that
_gpuprof_mem.py writes beside the rank files), into one memory_viz pickle with a device per
rank and GPU: `gpuprof export --format=memviz` runs it with plain python3 -I (a snapshot
holds only dicts, lists, strings and numbers; torch is not needed).

    python3 -I _gpuprof_merge.py [--layout=2|1.13] LABEL[@WHEN]=PATH... > merged.pickle

Arguments with one LABEL are one rank's snapshots (WHEN: exit, oom, peak), in the order
they are preferred; the first whose trace holds events is taken, else the first. The
integration records the allocator's history in windows, and PyTorch empties the trace when
recording stops: a snapshot taken outside a window has none, and memory_viz's Active
Memory Timeline then draws the blocks live at that moment as one flat band; the peak's,
taken inside a window, draws each allocation and free with its stack.

--layout=1.13 writes what PyTorch 1.13's python -m torch.cuda._memory_viz reads: the list
of segments (torch.cuda.memory_snapshot()), each allocated block's call stack in its
"history" as [{"addr", "real_size", "frames"}], and no trace; 2 (the default) the
dictionary of PyTorch 2.0 and later.

The files are read with an unpickler that refuses every global, so a crafted pickle in a
job directory cannot run code in whoever exports it. The device map goes to stderr."""
import pickle
import sys


class _Plain(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError("refused %s.%s: a memory snapshot holds no objects"
                                     % (module, name))


def _as_113(segments):
    """PyTorch 2's segments in 1.13's shape: a block's frames (2.1 and later) or history
    (2.0) become its history, which 1.13's _write_blocks reads."""
    for seg in segments:
        for b in seg.get("blocks") or []:
            if "history" in b or not b.get("frames") or b.get("state") != "active_allocated":
                b.pop("frames", None)
                continue
            b["history"] = [{"addr": b.get("address", seg.get("address", 0)),
                             "real_size": b.get("requested_size", b.get("size", 0)),
                             "frames": b.pop("frames")}]
    return segments


def _load(path):
    with open(path, "rb") as f:
        snap = _Plain(f).load()
    if isinstance(snap, list):  # PyTorch 1.13's torch.cuda.memory_snapshot()
        snap = {"segments": snap}
    if not isinstance(snap, dict):
        raise ValueError("%s: not a memory snapshot" % path)
    return snap


class NoneRead(Exception):
    """No candidate of any rank could be read: the export falls back to CUDA's records."""


def _chosen(args):
    """Each rank's snapshot (label, snapshot, note): the first of its candidates whose
    trace holds an event, else the first that could be read. One that cannot be read (not
    a pickle, cut short, not a snapshot) is passed over and said; a rank none of whose
    candidates can be read is left out, said on stderr."""
    ranks, order = {}, []
    for arg in args:
        label, _, path = arg.partition("=")
        label, _, when = label.partition("@")
        if label not in ranks:
            ranks[label] = []
            order.append(label)
        ranks[label].append((when, path))
    given = 0
    for label in order:
        took, read, bad = None, [], []
        for when, path in ranks[label]:
            try:
                snap = _load(path)
            except Exception as e:
                bad.append("the %s one could not be read: %s: %s" % (
                    when or "?", type(e).__name__, str(e)[:120]))
                continue
            if any(snap.get("device_traces") or []):
                took = (when, snap)
                break
            read.append((when, snap))
        if took is None and not read:
            print("gpuprof: export: %s left out: %s" % (label, "; ".join(bad)), file=sys.stderr)
            continue
        notes = []
        if took is None:
            took = read[0]
            if took[0]:
                notes.append("%s snapshot; %s: the allocator history was off" % (
                    took[0], "its trace is empty" if len(read) == 1
                    else "no trace in any of the %d read" % len(read)))
        elif read:
            notes.append("%s snapshot: the %s one's trace is empty, the allocator history was "
                         "off then" % (took[0], "/".join(w or "?" for w, _ in read)))
        given += 1
        yield label, took[1], " (%s)" % "; ".join(notes + bad) if notes or bad else ""
    if not given:
        raise NoneRead()


def main(args):
    segments, traces, settings, names = [], [], None, []
    layout = "2"
    if args and args[0].startswith("--layout="):
        layout = args.pop(0).partition("=")[2]
    for label, snap, note in _chosen(args):
        own = {}  # this snapshot's device -> merged index
        old = snap.get("device_traces") or []
        for seg in snap.get("segments") or []:
            dev = seg.get("device", 0)
            if dev not in own:
                own[dev] = len(traces)
                traces.append(old[dev] if isinstance(dev, int) and dev < len(old) else [])
                names.append("device %d = %s cuda:%s%s" % (own[dev], label, dev, note))
            seg["device"] = own[dev]
            segments.append(seg)
        for dev, tr in enumerate(old):  # a device with a trace but no segment left
            if dev not in own and tr:
                own[dev] = len(traces)
                traces.append(tr)
                names.append("device %d = %s cuda:%s%s" % (own[dev], label, dev, note))
        if settings is None:
            settings = snap.get("allocator_settings")
    if layout == "1.13":
        out = _as_113(segments)
    else:
        out = {"segments": segments, "device_traces": traces}
        if settings is not None:
            out["allocator_settings"] = settings
    pickle.dump(out, sys.stdout.buffer, protocol=4)
    sys.stdout.buffer.flush()
    print("gpuprof: export: memviz from PyTorch's own snapshots, in PyTorch %s's layout: "
          % layout + "; ".join(names), file=sys.stderr)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except NoneRead:
        sys.exit(3)  # none could be read: CUDA's records instead
    except Exception as e:
        print("gpuprof: export: merging PyTorch snapshots: %s: %s" % (type(e).__name__, e),
              file=sys.stderr)
        sys.exit(1)
