"""Merge PyTorch memory snapshots, one per rank (the rankR.torch-*.pickle files that
_gpuprof.py writes beside the rank files), into one memory_viz pickle with a device per
rank and GPU: `gpuprof export --format=memviz` runs it with plain python3 -I (a snapshot
holds only dicts, lists, strings and numbers; torch is not needed).

    python3 -I _gpuprof_merge.py LABEL=PATH... > merged.pickle

The files are read with an unpickler that refuses every global, so a crafted pickle in a
job directory cannot run code in whoever exports it. The device map goes to stderr."""
import pickle
import sys


class _Plain(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError("refused %s.%s: a memory snapshot holds no objects"
                                     % (module, name))


def main(args):
    segments, traces, settings, names = [], [], None, []
    for arg in args:
        label, _, path = arg.partition("=")
        with open(path, "rb") as f:
            snap = _Plain(f).load()
        if not isinstance(snap, dict):
            raise ValueError("%s: not a memory snapshot" % path)
        own = {}  # this snapshot's device -> merged index
        old = snap.get("device_traces") or []
        for seg in snap.get("segments") or []:
            dev = seg.get("device", 0)
            if dev not in own:
                own[dev] = len(traces)
                traces.append(old[dev] if isinstance(dev, int) and dev < len(old) else [])
                names.append("device %d = %s cuda:%s" % (own[dev], label, dev))
            seg["device"] = own[dev]
            segments.append(seg)
        for dev, tr in enumerate(old):  # a device with a trace but no segment left
            if dev not in own and tr:
                own[dev] = len(traces)
                traces.append(tr)
                names.append("device %d = %s cuda:%s" % (own[dev], label, dev))
        if settings is None:
            settings = snap.get("allocator_settings")
    out = {"segments": segments, "device_traces": traces}
    if settings is not None:
        out["allocator_settings"] = settings
    pickle.dump(out, sys.stdout.buffer, protocol=4)
    sys.stdout.buffer.flush()
    print("gpuprof: export: memviz from PyTorch's own snapshots: " + "; ".join(names),
          file=sys.stderr)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except Exception as e:
        print("gpuprof: export: merging PyTorch snapshots: %s: %s" % (type(e).__name__, e),
              file=sys.stderr)
        sys.exit(1)
