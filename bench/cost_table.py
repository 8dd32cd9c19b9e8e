#!/usr/bin/env python3
"""The cost table of bench/gpu-cost.sh's CSV (WORKLOAD.CONFIG;ROUND;TRUTH json): per
configuration, the median over rounds of its median step time, and of its ratio to the
plain run of the same round and workload; over all steps after warm-up, and over the steps
after the default's first capture window (steps 30 on: what a long job's steps cost)."""
import json
import statistics as st
import sys

rows = [l.rstrip("\n").split(";", 2) for l in open(sys.argv[1]).readlines()[1:]]
by = {}
for key, rnd, t in rows:
    wl, cfg = key.split(".", 1) if "." in key else ("gpt2", key)
    if not t:
        print("no truth:", key, rnd)
        continue
    ms = json.loads(t)["step_ms"]
    late = ms[25:] if len(ms) > 30 else ms
    by.setdefault(wl, {}).setdefault(cfg, {})[rnd] = (st.median(ms), st.median(late))
for wl, cfgs in by.items():
    for part, name in ((0, "all steps after warm-up"), (1, "steps 30 on")):
        print("%s, %s: config, median ms of the rounds, ratio to plain of the same round (median, min-max)" % (wl, name))
        base = cfgs.get("plain", {})
        for cfg, r in cfgs.items():
            rat = [r[k][part] / base[k][part] for k in r if k in base]
            print("  %-10s %8.3f  x%.4f (%.4f-%.4f)  %d rounds" % (
                cfg, st.median(v[part] for v in r.values()), st.median(rat) if rat else 0,
                min(rat) if rat else 0, max(rat) if rat else 0, len(r)))
