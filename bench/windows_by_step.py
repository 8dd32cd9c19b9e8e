"""Lay gpuprof's own records of its capture windows (CONTROL: a=modes captured, b=its step
index) and of its CUPTI detaches (OVERHEAD b=GP_OVERHEAD_DETACH, a=its duration) beside
the program's own step starts (a STEPTS line of CLOCK_MONOTONIC ns, printed by
bench/field/profiler_mid.py with PER_STEP=1). Usage: windows_by_step.py DUMP [STEPTS-FILE]
where DUMP is `gpuprof dump --events RANKFILE`. Prints one line per record."""
import bisect
import re
import sys

DETACH = 0x40000000
CUDA = 1 << 2  # GP_MODE_CUDA (common/modes.h)

starts = []
if len(sys.argv) > 2:
    for line in open(sys.argv[2]):
        if line.startswith("STEPTS "):
            starts = [tuple(map(int, f.split(":"))) for f in line.split()[1:]]
ts_of = [t for _, t in starts]


def step_at(ts):
    if not starts:
        return "?"
    k = bisect.bisect_right(ts_of, ts) - 1
    return "before %d" % starts[0][0] if k < 0 else str(starts[k][0])


field = re.compile(r"(\w+)=(\d+)")
for line in open(sys.argv[1]):
    kind = line.split(" ", 1)[0]
    if kind not in ("control", "overhead"):
        continue
    f = {k: int(v) for k, v in field.findall(line)}
    if kind == "overhead" and f.get("b") != DETACH:
        continue
    if kind == "control" and f.get("u8", 0) > 3:  # a window by cost's charge: no switch
        continue
    if kind == "control":
        what = "window %s (gpuprof's step %d)" % ("on " if f["a"] & CUDA else "off", f["b"])
    else:
        what = "detach %.1f ms" % (f["a"] / 1e6)
    print("%-34s program's step %s" % (what, step_at(f["ts"])))
