#!/usr/bin/env python3
"""In-process A/B from one rank file: per-step times of the steps run with a capture bit on
against those run with it off (GP_EV_CONTROL records, written at each switch by the
collector), or with the part on during the intervals of a file of "START_NS END_NS" lines
(CLOCK_MONOTONIC, the rank file's clock). Steps come from the rank file's NVTX records (outermost ranges named STEP),
timed from one step's start to the next one's, so a loop that synchronises between steps
(train_mlp.py --time) is timed with its GPU work; a step with a switch at its start or
inside it is left out of both sides. Usage: inproc_ab.py GPUPROF RANKFILE BIT|WINDOWFILE [STEP]   (BIT: 4 cuda, 8 mem)"""
import statistics as st
import subprocess
import sys


def dump(gp, path, what):
    return subprocess.run([gp, "dump", what, path], check=True, capture_output=True,
                          text=True).stdout.splitlines()


def read_windows(path):
    return sorted(tuple(int(x) for x in line.split()[:2]) for line in open(path) if line.strip())


def fields(line):
    return dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)


def main():
    gp, path, sel = sys.argv[1], sys.argv[2], sys.argv[3]
    bit, windows = (int(sel), None) if sel.isdigit() else (0, read_windows(sel))
    step = sys.argv[4] if len(sys.argv) > 4 else "train_step"
    names = {}
    for line in dump(gp, path, "--strings"):
        p = line.split(" ", 3)
        if p[0] == "string" and len(p) == 4:
            names[int(p[1])] = p[3]
    depth, starts, steps, switches = {}, {}, [], []
    for line in dump(gp, path, "--events"):
        kind = line.split(" ", 1)[0]
        if kind not in ("nvtx_push", "nvtx_pop", "control"):
            continue
        f = fields(line)
        ts, tid = int(f["ts"]), f.get("tid")
        if kind == "control":
            if int(f.get("u8", 0)) > 3:  # a window by cost's charge, no switch (doc/format.md)
                continue
            switches.append((ts, int(f["a"]) & bit != 0))
        elif kind == "nvtx_push":
            d = depth.get(tid, 0)
            depth[tid] = d + 1
            if d == 0 and f.get("b") == "0" and names.get(int(f["a"])) == step:
                starts[tid] = ts
        else:
            depth[tid] = max(0, depth.get(tid, 0) - 1)
            if depth[tid] == 0 and tid in starts:
                steps.append((starts.pop(tid), ts))
    if windows is not None:  # a switch on at each window's start, off at its end
        switches = [(a, True) for a, _ in windows] + [(b, False) for _, b in windows]
    switches.sort()
    starts_sorted = sorted(a for a, _ in steps)
    on, off = [], []
    for a, b in zip(starts_sorted[3:], starts_sorted[4:]):  # after warm-up; start to start
        if any(a <= t < b for t, _ in switches):
            continue  # the step that switched
        if windows is not None and a < windows[0][0]:
            continue  # before the first window the part may still be in its initial state
        before = [v for t, v in switches if t < a]
        (on if (before[-1] if before else windows is None) else off).append((b - a) / 1e6)
    if not on or not off:
        print(f"need steps on both sides: {len(on)} with the bit, {len(off)} without")
        return 1
    what = f"bit {bit}" if windows is None else f"{len(windows)} windows"
    print(f"{what}: on {st.median(on):.4f} ms ({len(on)} steps)  off {st.median(off):.4f} ms "
          f"({len(off)} steps)  ratio {st.median(on) / st.median(off):.4f}  switches {len(switches)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
