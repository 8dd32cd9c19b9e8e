#!/bin/bash
# The quota's cost at a step's start (issue 48): gp_site_prepare, as slurmstepd runs it in
# init_post_opt for each step profiled into site_output, against a user's directory of
# ENTRIES entries (job directories of 100 files), STEPS steps in a row, with
# site_quota_cache 0 (the walk at every step: what every step paid before the cache) and
# at its default (300 s). As root on the CPU machine; prints each step's time and the
# medians.  usage: bench/quota.sh [ENTRIES (199000)] [STEPS (10)] [USER (nobody)]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
B=${GP_BUILD:-$top/_build}
entries=${1:-199000}
steps=${2:-10}
user=${3:-nobody}
[ "$(id -u)" = 0 ] || { echo "quota.sh: run as root" >&2; exit 2; }
W=$(mktemp -d /var/tmp/gp-quota.XXXXXX)
trap 'rm -rf "$W"' EXIT
chmod 755 "$W"
mkdir -m 755 "$W/root" "$W/state"
chmod 700 "$W/state"
cc -O2 -D_GNU_SOURCE -I"$B" -I"$top/common" -I"$top/spank" -o "$W/quota_bench" "$top/bench/quota_bench.c" \
	"$top/spank/site.c" "$top/spank/quota.c" "$top/spank/privsep.c" "$B/.libs/libgpcommon.a" \
	-lyaml -lzstd -lz -lpthread -ldl
# the user's directory, made as the plugin makes it, then filled as a user's jobs would
printf 'profile_all_jobs: true\nsite_output: %s/root/%%u/%%j\nsite_quota_cache: 0\n' "$W" >"$W/once.yaml"
"$W/quota_bench" "$W/once.yaml" "$W/state" "$user" 1 >/dev/null
python3 - "$W/root/$user" "$entries" <<'PY'
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
for j in range((n + 100) // 101):
    jd = os.path.join(d, "job%d" % j)
    os.mkdir(jd)
    for f in range(min(100, n - j * 101 - 1)):
        open(os.path.join(jd, "rank%d.gpr" % f), "w").close()
PY
chown -R "$user" "$W/root/$user"
echo "user directory: $(find "$W/root/$user" | wc -l) entries"
for cache in 0 300; do
	printf 'profile_all_jobs: true\nsite_output: %s/root/%%u/%%j\nsite_quota_cache: %s\n' "$W" "$cache" >"$W/c.yaml"
	rm -f "$W/state"/quota-*
	echo "site_quota_cache: $cache"
	"$W/quota_bench" "$W/c.yaml" "$W/state" "$user" "$steps" | tee "$W/out.$cache"
	python3 -c 'import re, statistics, sys
t = [float(re.search(r": ([0-9.]+) ms", l).group(1)) for l in open(sys.argv[1])]
print("  first %.2f ms, median %.2f ms, median of the rest %.2f ms" % (t[0], statistics.median(t), statistics.median(t[1:])))' "$W/out.$cache"
done
