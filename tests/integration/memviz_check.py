"""Read memory_viz pickles with PyTorch's own torch.cuda._memory_viz, as its command line
does (segments, memory, compare, stats; segsum and trace where the version has them), and
print one "ok"/"FAIL" line per file. The flame graphs get their folded lines back instead of
flamegraph.pl (which _memory_viz downloads); the HTML plots need MemoryViz.js, which
Debian's python3-torch does not ship, from the network."""
import contextlib, io, pickle, sys

from torch.cuda import _memory_viz as mv

bad = 0
for p in sys.argv[1:]:
    try:
        s = pickle.load(open(p, "rb"))
        out = io.StringIO()
        ff = lambda lines, *a: lines  # noqa: E731
        new = hasattr(mv, "segsum")  # PyTorch 2: the whole snapshot; 1.13: the segments
        snap = s if new else s["segments"]
        with contextlib.redirect_stdout(out):
            out.write(mv.segments(snap, ff))
            out.write(mv.memory(snap, ff))
            out.write(mv.compare(s["segments"], s["segments"], ff))
            if hasattr(mv, "stats"):
                mv.stats(snap)
            if new:
                out.write(mv.segsum(s))
                out.write(mv.trace(s))
        n = sum(len(t) for t in s["device_traces"])
        print("ok %s: %d bytes of output, %d devices, %d trace entries" % (p, len(out.getvalue()), len(s["device_traces"]), n))
    except Exception as e:  # the file's failure, said; the next file is still read
        bad += 1
        print("FAIL %s: %s: %s" % (p, type(e).__name__, e))
sys.exit(1 if bad else 0)
