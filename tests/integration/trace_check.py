#!/usr/bin/env python3
"""Check a Chrome/Perfetto JSON trace against the rules Perfetto's JSON importer applies
(src/trace_processor/importers/json/): every event has a phase; non-metadata events have a
numeric ts; complete slices (X) have dur >= 0 and nest strictly on their (pid, tid) track
(a slice that begins inside another must end inside it, else Perfetto misplaces it); v1
flow events (s, f) pair up by (cat, name, id), each lying inside a slice of its own track
(where Perfetto binds it); async slices (b, e) pair up by (cat, id) with the end not
before the begin; counters (C) carry numeric args; metadata (M) names a process or a thread
with args.name. Prints the problems found, exits 1 when there are any.
    trace_check.py TRACE.json [MAX_PROBLEMS]"""
import json
import sys
from collections import defaultdict


def main():
    t = json.load(open(sys.argv[1]))
    limit = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    ev = t["traceEvents"] if isinstance(t, dict) else t
    bad = []
    tracks = defaultdict(list)
    flows = defaultdict(lambda: [0, 0])
    points = []
    async_open = {}
    for i, e in enumerate(ev):
        ph = e.get("ph")
        if ph is None:
            bad.append("event %d has no ph" % i)
            continue
        if ph == "M":
            if e.get("name") in ("process_name", "thread_name") and "name" not in e.get("args", {}):
                bad.append("metadata %d without args.name" % i)
            continue
        if not isinstance(e.get("ts"), (int, float)):
            bad.append("event %d (%s) without a numeric ts" % (i, ph))
            continue
        key = (e.get("pid"), e.get("tid"))
        if ph == "X":
            d = e.get("dur")
            if not isinstance(d, (int, float)) or d < 0:
                bad.append("slice %d %r: dur %r" % (i, e.get("name"), d))
                continue
            tracks[key].append((e["ts"], e["ts"] + d, e.get("name")))
        elif ph in ("s", "f", "t"):
            fk = (e.get("cat"), e.get("name"), e.get("id"))
            flows[fk][0 if ph == "s" else 1] += 1
            points.append((key, e["ts"], ph, fk))
        elif ph in ("b", "e"):
            ak = (e.get("cat"), e.get("id"))
            if ph == "b":
                if ak in async_open:
                    bad.append("async %r begun twice" % (ak,))
                async_open[ak] = e["ts"]
            elif ak not in async_open:
                bad.append("async %r ends without a begin" % (ak,))
            elif e["ts"] < async_open.pop(ak):
                bad.append("async %r ends before it begins" % (ak,))
        elif ph == "C":
            a = e.get("args", {})
            if not a or not all(isinstance(v, (int, float)) for v in a.values()):
                bad.append("counter %d %r: args %r" % (i, e.get("name"), a))
    for key, sl in tracks.items():
        sl.sort(key=lambda x: (x[0], -x[1]))
        stack = []
        for s, end, name in sl:
            # Perfetto reads times as integer ns: ends and starts within half a ns
            # (the us decimals' float sums) are the same instant
            while stack and stack[-1][1] <= s + 5e-4:
                stack.pop()
            if stack and end > stack[-1][1] + 5e-4:
                bad.append("track %r: %r [%s, %s] overlaps %r [%s, %s] without nesting"
                           % (key, name, s, end, stack[-1][2], stack[-1][0], stack[-1][1]))
                continue
            stack.append((s, end, name))
    for ak in async_open:
        bad.append("async %r never ends" % (ak,))
    for fk, (ns, nf) in flows.items():
        if ns != 1 or nf != 1:
            bad.append("flow %r: %d starts and %d ends" % (fk, ns, nf))
    for key, ts, ph, fk in points:
        if not any(s <= ts <= end for s, end, _ in tracks.get(key, ())):
            bad.append("flow %s %r at %s on %r lies in no slice of its track" % (ph, fk, ts, key))
    for b in bad[:limit]:
        print(b)
    if len(bad) > limit:
        print("... %d problems in all" % len(bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
