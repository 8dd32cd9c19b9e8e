"""The exports' step slices (doc/report.md, `chrome` and `kineto`): on each rank's "steps
(SOURCE)" track of the Chrome trace, and as each rank's Kineto file's ProfilerStep#N
annotations (as PyTorch's profiler and HTA draw them), one slice a step of report.json's,
each from its start to the next one's start (the last to its end), so the slices tile the
steps' span, never overlapping. Held to the truth two ways: where the steps are NVTX
ranges, each slice starts where a range of that name starts on a thread of the same
process; the post-warm-up slices but the last have the report's host period as their
median (steps.period_median_ms: step start to the next start). The Chrome trace: every step
the headline counted is one slice marked headline, on a track named by how it was timed
(the host's for a period or CPU-range headline, a "steps on the GPU (...)" one for a GPU
headline: kernels, or the step markers' clock), steps.durations_of of them, holding the
headline's own figures (steps.durations_ms, where all are kept), in step order; every step
slice's args carry its number and duration, and the range's own where a range made it.
usage: steps_check.py TRACE.json REPORT.json         the Chrome trace
       steps_check.py --kineto DIR REPORT.json       the Kineto export (DIR/stepS/rankR.json)
prints one line per problem, then "checked N ranks, M steps"; exit 1 on any problem"""
import json
import os
import re
import statistics
import sys

TOL_US = 0.0015  # microseconds printed with three decimals, from integer nanoseconds


def check(who, st, ev, pid, rank, problems):
    """st: the rank's step slices, sorted by start; ev: the events of its file"""
    if len(st) != rank["steps"]["count"]:
        problems.append("%s: %d step slices for %d steps" % (who, len(st), rank["steps"]["count"]))
        return
    for a, b in zip(st, st[1:]):
        if abs(a["ts"] + a["dur"] - b["ts"]) > TOL_US:
            problems.append("%s: %s ends at %.3f, the next step starts at %.3f" % (who, a["name"], a["ts"] + a["dur"], b["ts"]))
            break
    if rank["steps"]["source"] == "nvtx":
        starts = {round(e["ts"], 3) for e in ev if e.get("pid") == pid and e.get("ph") == "X"
                  and e.get("name") == rank["steps"]["range"]}
        off = [e["name"] for e in st if round(e["ts"], 3) not in starts]
        if off:
            problems.append("%s: %d step slices start where no '%s' range starts (%s)"
                            % (who, len(off), rank["steps"]["range"], off[0]))
    w, want = rank["steps"]["warmup"], rank["steps"]["period_median_ms"]
    durs = [e["dur"] / 1000 for e in st[w:-1]]
    if durs and want and abs(statistics.median(durs) - want) > 0.002:
        problems.append("%s: post-warm-up step slices' median %.4f ms, the report's period %.4f ms"
                        % (who, statistics.median(durs), want))


def chrome(path, job, problems):
    t = json.load(open(path))
    ev = t["traceEvents"] if isinstance(t, dict) else t
    nsteps, nranks = 0, 0
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    procs = {e["pid"]: e["args"]["name"] for e in ev
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    for pid, pname in procs.items():
        rank = next((r for r in job["ranks"] if pname.startswith("rank %d (step %s)" % (r["rank"], r["step"]))), None)
        if rank is None or not rank["steps"]["count"]:
            continue
        st = sorted((e for e in ev if e.get("pid") == pid and e.get("cat") == "step" and e.get("ph") == "X"
                     and names.get((pid, e["tid"]), "").startswith("steps (")
                     and names[(pid, e["tid"])].endswith(" on the host: start to the next start")),
                    key=lambda e: e["ts"])
        nranks += 1
        nsteps += len(st)
        check(pname, st, ev, pid, rank, problems)
        headline(pname, ev, pid, names, rank, problems)
    return nranks, nsteps


def headline(who, ev, pid, names, rank, problems):
    """the headline's steps as slices of their own time (doc/report.md, chrome)"""
    s = rank["steps"]
    sl = [e for e in ev if e.get("pid") == pid and e.get("cat") == "step" and e.get("ph") == "X"]
    bad = [e["name"] for e in sl if "step" not in e.get("args", {}) or "dur_ms" not in e["args"]
           or abs(e["args"]["dur_ms"] - e["dur"] / 1000) > 0.0002
           or (s["source"] in ("nvtx", "profiler") and names.get((pid, e["tid"]), "").startswith("steps (")
               and "range_ms" not in e["args"])]
    if bad:
        problems.append("%s: step slices without their number, duration or range's (%s)" % (who, bad[0]))
    head = sorted((e for e in sl if e["args"].get("headline") is True), key=lambda e: e["args"]["step"])
    gpu = s["basis"] == "gpu"
    tracks = {names.get((pid, e["tid"]), "") for e in head}
    if any(t.startswith("steps on the GPU (") != gpu or not (t.startswith("steps on the GPU (") or t.endswith(" on the host: start to the next start")) for t in tracks):
        problems.append("%s: a %s headline's slices on %s" % (who, s["basis"], sorted(tracks)))
    if len(head) != s["durations_of"]:
        problems.append("%s: %d headline step slices, the headline counted %d" % (who, len(head), s["durations_of"]))
        return
    if len({e["args"]["step"] for e in head}) != len(head):
        problems.append("%s: a step with two headline slices" % who)
    got = [e["args"]["gpu_ms"] if gpu else e["args"]["dur_ms"] for e in head]
    want = s["durations_ms"]
    if len(want) == len(got):
        off = [(i, g, w) for i, (g, w) in enumerate(zip(got, want)) if abs(g - w) > 0.0002 + 1e-6 * w]
        if off:
            problems.append("%s: %d headline slices not the headline's figure (first: #%d %.4f vs %.4f ms)"
                            % (who, len(off), *off[0]))


def kineto(d, job, problems):
    """each DIR/stepS/rankR.json (a rank's first file) against the report's rank R of step S;
    its ProfilerStep#N numbered 0.. in time order"""
    nsteps, nranks = 0, 0
    for sd in sorted(os.listdir(d)):
        for f in sorted(os.listdir(os.path.join(d, sd))):
            m = re.fullmatch(r"rank(\d+)\.json", f)
            if not m or not sd.startswith("step"):
                continue
            rk = [r for r in job["ranks"] if r["rank"] == int(m.group(1)) and "step" + r["step"] == sd]
            if len(rk) != 1 or not rk[0]["steps"]["count"]:
                continue
            ev = json.load(open(os.path.join(d, sd, f)))["traceEvents"]
            st = sorted((e for e in ev if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")),
                        key=lambda e: e["ts"])
            who = "%s/%s" % (sd, f)
            nums = [e["name"] for e in st]
            if nums != ["ProfilerStep#%d" % i for i in range(len(st))]:
                problems.append("%s: ProfilerStep numbers not 0.. in time order (%s)" % (who, nums[:5]))
            pid = st[0]["pid"] if st else None
            nranks += 1
            nsteps += len(st)
            check(who, st, ev, pid, rk[0], problems)
    return nranks, nsteps


def main():
    args = sys.argv[1:]
    problems = []
    if args[0] == "--kineto":
        nranks, nsteps = kineto(args[1], json.load(open(args[2])), problems)
    else:
        nranks, nsteps = chrome(args[0], json.load(open(args[1])), problems)
    for p in problems[:20]:
        print(p)
    print("checked %d ranks, %d steps" % (nranks, nsteps))
    sys.exit(1 if problems or not nranks else 0)


main()
