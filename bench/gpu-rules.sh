#!/bin/bash
# Run on the GPU machine: the expert rules of issue 50 against a program whose pathologies
# are planted and counted (bench/field/review/c_sync_loop.py: each step copies a 512 x 2048
# fp32 batch and its 512 int64 labels with .cuda() from pageable memory, and runs an fp32
# MLP), under this tree's collector, which records CUPTI's memory kinds of each copy:
#   pageable   as planted: pageable_copies from the memory kinds (not inferred), 2 copies
#              (the batch, its labels; loss.item()'s 4 bytes go to a pinned buffer from
#              PyTorch 2.5) and 4 198 400 bytes a traced step; fp32_no_tensor_cores on an
#              sm_80+ card
#   pinned     PIN=1 (pinned, non_blocking): no pageable copy, no pageable_copies finding
#   tf32       TF32=1 (allow_tf32): no fp32 SIMT GEMM, no fp32_no_tensor_cores finding
# Each program prints its own truth (TRUTH {json}); the check compares. Rank files,
# reports and the check's lines go to $OUT/rules.tgz; "RULES ok|FAIL ..." lines on stdout.
# Binaries from bench/gpu-carry.sh. Usage: bench/gpu-rules.sh
. "$(dirname "$0")/gpu-env.sh"
OUT=${OUT:-/tmp/out}
W=/tmp/rules
rm -rf $W && mkdir -p $W $OUT
export PYTHONUNBUFFERED=1
run() { # name env...
	local name=$1; shift
	env "$@" STEPS=60 timeout 240 $G/gpuprof run --output=$W/$name -- \
		python3 bench/field/review/c_sync_loop.py >$W/$name.log 2>&1
	echo "rc=$?" >>$W/$name.log
	$G/gpuprof report $W/$name >$W/$name.report.txt 2>&1
	$G/gpuprof report --format=json $W/$name >$W/$name.report.json 2>/dev/null
	grep "^TRUTH" $W/$name.log | sed 's/^TRUTH *//' >$W/$name.truth.json
	$G/gpuprof dump --events $W/$name/step0/rank0.gpr | grep '^memcpy' >$W/$name.memcpy.txt
}
run pageable
run pinned PIN=1
run tf32 TF32=1
python3 - $W <<'PY' | tee $W/check.txt
import json, sys
W = sys.argv[1]
def load(n):
    return json.load(open("%s/%s.report.json" % (W, n))), json.load(open("%s/%s.truth.json" % (W, n)))
def say(ok, what):
    print("RULES %s %s" % ("ok" if ok else "FAIL", what))
for n in ("pageable", "pinned", "tf32"):
    j, t = load(n); r = j["ranks"][0]; g = r["gpu"]
    ids = [f["id"] for f in j["findings"]]
    steps = r["capture"]["captured_steps"] or r["steps"]["count"]
    kinds = sum(1 for l in open("%s/%s.memcpy.txt" % (W, n)) if int(l.split("u16=")[1].split()[0]) > 255)
    say(kinds > 0, "%s: memcpy records carry memory kinds (%d)" % (n, kinds))
    per = g["pageable_copies"] / steps if steps else -1
    byt = g["pageable_bytes"] / steps if steps else -1
    say(per == t["pageable_copies_per_step"] and byt == t["pageable_bytes_per_step"] and not g["pageable_inferred"],
        "%s: pageable copies %.2f and bytes %.0f a traced step, truth %s and %s (inferred %s)" % (n, per, byt, t["pageable_copies_per_step"], t["pageable_bytes_per_step"], g["pageable_inferred"]))
    say(("pageable_copies" in ids) == (not t["pinned"]), "%s: pageable_copies finding %s, pinned %s" % (n, "pageable_copies" in ids, t["pinned"]))
    say(("fp32_no_tensor_cores" in ids) == (not t["tf32"]) and (g["fp32_simt_gemm_ns"] == 0) == t["tf32"],
        "%s: fp32_no_tensor_cores %s, fp32 SIMT GEMM %s ns, tf32 %s, card %s" % (n, "fp32_no_tensor_cores" in ids, g["fp32_simt_gemm_ns"], t["tf32"], r["gpu_name"]))
    say(abs(r["steps"]["median_ms"] / t["step_ms"]["median"] - 1) <= 0.03, "%s: headline %.3f ms vs the program's %.3f" % (n, r["steps"]["median_ms"], t["step_ms"]["median"]))
PY
(cd $W && tar czf $OUT/rules.tgz .) && ls -la $OUT
