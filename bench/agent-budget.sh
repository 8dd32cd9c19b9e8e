#!/bin/bash
# Agent budgets: CPU share and peak RSS of gpuprof-agent while the program emits 100k
# NVTX records per second for 10 s, and drain latency (a mark's emission to its appearance
# in the spool's rank file on disk). Usage: bench/agent-budget.sh [RATE] [SECONDS]
cd "$(dirname "$0")/.."
B=${GP_BUILD:-$PWD/_build}
rate=${1:-100000}; secs=${2:-10}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
export TMPDIR=$T
"$B/gpuprof" run --modes=nvtx --output="$T/out" -- "$B/bench/event_rate" "$rate" "$secs" >"$T/marks" &
sleep 0.3
apid=$(pgrep -f "^$B/gpuprof-agent" | head -1)
spool=$(ls -d "$T"/gpuprof-*/job* | head -1)
# sample the agent's CPU time and peak RSS until it exits
(while [ -r /proc/$apid/stat ]; do
	s=$(cat /proc/$apid/stat 2>/dev/null) && h=$(grep VmHWM /proc/$apid/status 2>/dev/null | awk '{print $2}') &&
		[ -n "$h" ] && echo "$s $h" >"$T/agentstat"
	sleep 0.2
done) &
python3 - "$spool/rank.gpr" "$T/marks" "$B/gpuprof" "$secs" <<'PY' >"$T/lat"
import subprocess, sys, time
path, marks, gp, secs = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
seen, t_end = {}, time.time() + secs - 0.5
while time.time() < t_end:
    out = subprocess.run([gp, "dump", "--strings", path], capture_output=True, text=True).stdout
    now = time.time()
    for line in out.splitlines():
        if " mark_" in line:
            seen.setdefault(line.split()[-1], now)
    time.sleep(0.02)
lat = []
for line in open(marks):
    p = line.split()
    if p[0] == "mark" and f"mark_{p[1]}" in seen:
        lat.append(seen[f"mark_{p[1]}"] - float(p[2]))
lat.sort()
print(f"drain latency to disk: median {lat[len(lat)//2]*1000:.0f} ms, max {lat[-1]*1000:.0f} ms over {len(lat)} marks")
PY
wait
read -r _ _ _ _ _ _ _ _ _ _ _ _ _ ut st rest <"$T/agentstat"
hwm=${rest##* }
hz=$(getconf CLK_TCK)
cpu=$(python3 -c "print(f'{($ut + $st) / $hz / $secs * 100:.2f}')")
echo "rate=${rate}/s for ${secs}s: agent CPU ${cpu}% of one core, peak RSS ${hwm} KiB"
cat "$T/lat"
"$B/gpuprof" dump "$T/out/step0/rank0.gpr" | grep -E "^count nvtx|^records"
