#!/bin/bash
# Run on the GPU machine: kernel time by native caller (GPUPROF_LAUNCH_SITES, issue 50 item 1)
# against the program's own counts, and what the call sites cost a launch.
#   default   bench/launch_sites.cu (7 launches a step from 4 functions at known lines, one
#             a template, one kernel launched from two sites) under the default capture:
#             report.json's attribution rows must be exactly its sites, each with its own
#             launches per step times the steps the sites covered, its function and line;
#             nothing left out (the cap, 4096, is above the first window's launches)
#   cap       GPUPROF_LAUNCH_SITES=50: at most 50 kernels in the tables, the rest of the
#             steady state counted as left out, and said in report.txt
#   off       GPUPROF_LAUNCH_SITES=0: no tables
#   free      the sites' subscriber given back: --modes=timing,nvtx,cuda (no allocation
#             stacks, which hold CUPTI's subscriber for the whole run themselves),
#             GPUPROF_CAPTURE=sampled=10/50, 200 steps (the sites' 2 windows, then 2 more),
#             then the program subscribes to CUPTI itself (`launch_sites 200 subscribe`):
#             it must succeed, and the tables must still be there
#   held      the same with 20 steps and no detach (the sites' second window never comes,
#             so they keep the subscriber, with no finalize in between to race the probe):
#             the program's subscribe must fail, or the probe proves nothing
#   memsub    (information) the same as free with the default modes (mem: allocation
#             stacks) and no sites: whether allocation stacks leave the subscriber free
#   cost      `launch_sites 3000 cost` (7 small launches a step, synchronised every 20):
#             the median step's host time bare, under --capture=all without sites, with
#             sites for every launch (GPUPROF_LAUNCH_SITES=1000000), and with the cap
#             4096 ("default": the value to turn on); 3 rounds, interleaved. A launch's site = (all - none) / 7
# Lines "SITES ok|FAIL ..." and "COST ..." on stdout; reports and logs in $OUT/sites.tgz.
# Binaries from bench/gpu-carry.sh (.gpubin/launch_sites). Usage: bench/gpu-sites.sh
. "$(dirname "$0")/gpu-env.sh"
OUT=${OUT:-/tmp/out}
W=/tmp/sites
rm -rf $W && mkdir -p $W $OUT
P=$G/launch_sites
[ -x $P ] || { echo "SITES FAIL no $P (run bench/gpu-carry.sh first)"; exit 1; }
nvidia-smi -L | head -1

run() { # run NAME ENV... -- ARGS: the program under gpuprof, its report text and JSON
	local n=$1; shift
	env "$@" timeout 300 $G/gpuprof run -q --output=$W/$n -- $P 60 >$W/$n.log 2>&1
	echo "$n rc=$?"
	$G/gpuprof report $W/$n >$W/$n.report.txt 2>&1
	$G/gpuprof report --format=json $W/$n >$W/$n.report.json 2>/dev/null
}
run default GPUPROF_LAUNCH_SITES=4096
run cap GPUPROF_LAUNCH_SITES=50
run off GPUPROF_LAUNCH_SITES=0
probe() { # probe NAME STEPS MODES ENV...: the program subscribes to CUPTI after its steps
	local n=$1 steps=$2 modes=$3; shift 3
	env GPUPROF_CAPTURE=sampled=10/50 "$@" timeout 300 $G/gpuprof run -q --modes=$modes \
		--output=$W/$n -- $P $steps subscribe >$W/$n.log 2>&1
	echo "$n rc=$? $(grep cupti_subscribe $W/$n.log)"
	$G/gpuprof report --format=json $W/$n >$W/$n.report.json 2>/dev/null
}
probe free 200 timing,nvtx,cuda GPUPROF_LAUNCH_SITES=4096
probe held 20 timing,nvtx,cuda GPUPROF_LAUNCH_SITES=4096 GPUPROF_CUPTI_DETACH=false
probe memsub 200 timing,nvtx,cuda,mem GPUPROF_LAUNCH_SITES=0
sed -n '/Kernel time by calling function/,/^share:/p' $W/default.report.txt

python3 - $W <<'PY' | tee $W/check.txt
import json, re, sys
W = sys.argv[1]
def say(ok, what):
    print("SITES %s %s" % ("ok" if ok else "FAIL", what))
truth = {}  # (function, "file:line (function)") -> launches a step
for l in open(W + "/default.log"):
    m = re.match(r"site (\S+) (\S+) (\d+)$", l.strip())
    if m:
        truth[(m.group(1), "%s (%s)" % (m.group(2), m.group(1)))] = int(m.group(3))
per_step = sum(truth.values())
say(len(truth) == 4 and per_step == 7, "the program said its 4 sites, 7 launches a step")
a = json.load(open(W + "/default.report.json"))["attribution"]
rows = {(r["operation"], r["line"]): r for r in a["operation_lines"]}
steps, rem = divmod(a["kernels"], per_step)
say(a["framework"] == "native" and a["ranks"] == 1,
    "default: native launch sites (framework %r)" % a["framework"])
say(rem == 0 and steps > 0, "default: %d kernels = %d whole steps of %d" % (a["kernels"], steps,
                                                                            per_step))
for k, n in sorted(truth.items()):
    r = rows.get(k)
    say(r is not None and r["kernels"] == n * steps and r["calls"] == n * steps,
        "default: %s at %s: %s kernels, %s launches (want %d each)"
        % (k[0], k[1], r and r["kernels"], r and r["calls"], n * steps))
extra = sorted(set(rows) - set(truth))
say(not extra, "default: no other row%s" % (" (%s)" % extra if extra else ""))
say(a["kernels_without_site"] == 0, "default: nothing left out (%d)" % a["kernels_without_site"])
c = json.load(open(W + "/cap.report.json"))["attribution"]
say(c["ranks"] == 1 and c["kernels"] <= 50 and c["kernels_without_site"] > 0,
    "cap 50: %d kernels in the tables, %d left out and counted"
    % (c["kernels"], c["kernels_without_site"]))
txt = open(W + "/cap.report.txt").read()
say("launched past the cap" in txt, "cap 50: report.txt says what was left out")
o = json.load(open(W + "/off.report.json"))["attribution"]
say(o["ranks"] == 0, "off: no launch sites, no tables (ranks %d)" % o["ranks"])
def sub(name):  # (first, last) return codes of the program's own cuptiSubscribe
    for l in open("%s/%s.log" % (W, name)):
        m = re.match(r"cupti_subscribe first=(-?\d+) last=(-?\d+) tries=(\d+)", l.strip())
        if m:
            return int(m.group(1)), int(m.group(2))
    return None
f, h, m = sub("free"), sub("held"), sub("memsub")
say(f is not None and f[1] == 0,
    "free: the program subscribes to CUPTI after the sites' 2 windows (first, last rc %s)" % (f,))
fa = json.load(open(W + "/free.report.json"))["attribution"]
say(fa["ranks"] == 1 and fa["kernels"] > 0 and fa["kernels_without_site"] > 0,
    "free: the tables hold the sites' windows (%d kernels), later windows left out (%d)"
    % (fa["kernels"], fa["kernels_without_site"]))
say(h is not None and h[1] != 0,
    "held: the sites' second window to come, the subscriber still theirs (rc %s): the probe "
    "tells a held subscriber" % (h,))
print("SITES info memsub: allocation stacks (mode mem), no sites: the program's subscribe "
      "rc %s (0: free, 39: held)" % (m,))
PY

# the cost: a launch-bound loop's median step, 3 rounds interleaved
for round in 1 2 3; do
	for v in bare none all default; do
		case $v in
		bare) timeout 120 $P 3000 cost >$W/cost-$v-$round.log 2>&1 ;;
		none) GPUPROF_LAUNCH_SITES=0 timeout 120 $G/gpuprof run -q --capture=all --output=$W/c-$v-$round -- $P 3000 cost >$W/cost-$v-$round.log 2>&1 ;;
		all) GPUPROF_LAUNCH_SITES=1000000 timeout 120 $G/gpuprof run -q --capture=all --output=$W/c-$v-$round -- $P 3000 cost >$W/cost-$v-$round.log 2>&1 ;;
		default) GPUPROF_LAUNCH_SITES=4096 timeout 120 $G/gpuprof run -q --capture=all --output=$W/c-$v-$round -- $P 3000 cost >$W/cost-$v-$round.log 2>&1 ;;
		esac
		echo "COST round $round $v step_ns_median $(sed -n 's/^step_ns_median //p' $W/cost-$v-$round.log)"
	done
done | tee $W/cost.txt
python3 - $W/cost.txt <<'PY'
import statistics, sys
v = {}
for l in open(sys.argv[1]):
    p = l.split()
    if len(p) == 5 and p[4].isdigit():
        v.setdefault(p[3], []).append(int(p[4]))
m = {k: statistics.median(x) for k, x in v.items()}
if "none" in m and "all" in m:
    print("COST median step ns: %s; a launch's call site: %.2f us (all - none, / 7 launches)"
          % (", ".join("%s %d" % kv for kv in sorted(m.items())), (m["all"] - m["none"]) / 7e3))
PY
for r in 1 2 3; do $G/gpuprof report --format=json $W/c-all-$r 2>/dev/null | python3 -c '
import json, sys; a = json.load(sys.stdin)["attribution"]
print("COST all round: %d kernels with sites, %d without" % (a["kernels"], a["kernels_without_site"]))'; done
tar -czf $OUT/sites.tgz -C /tmp sites 2>/dev/null
