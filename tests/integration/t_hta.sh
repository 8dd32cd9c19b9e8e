#!/bin/bash
# The Kineto export in its real reader: HTA (facebookresearch/HolisticTraceAnalysis) from
# source at a pinned commit, on Debian's python3-pandas, -plotly, -networkx and -pydot
# (scripts/deps), runs its analyses on the export of a synthetic PyTorch rank without NVTX
# (mkhostile ops: 12 steps from optimizer.step(), operation ranges to/linear/relu/backward,
# a 1 MiB copy of 100 us a step, kernels with their launch configuration) and of ddp-clean:
# iterations, frequent CUDA kernel sequences under an operator, ATen ops' kernels and launch
# delays (the integration's torch functions under their ATen names), memory bandwidth, kernel
# launch statistics, the launch configuration columns, the temporal breakdown. HTA's source
# is taken from GP_HTA_DIR (default /var/tmp/gpuprof-hta-<commit>), else cloned there; no
# source, no network or no pandas: skipped.
. "$(dirname "$0")/tap.sh"
B=${GP_BUILD:?}
F=$(cd "$(dirname "$0")/../fixtures" && pwd)
REV=f4d0062c382f42bd8a74838bcdad1916c7d5d2da
H=${GP_HTA_DIR:-/var/tmp/gpuprof-hta-${REV:0:8}}
PY=/usr/bin/python3 # Debian's, with Debian's pandas
$PY -c 'import pandas, plotly, networkx' 2>/dev/null || skip_all "no python3-pandas/plotly/networkx"
if [ ! -f "$H/hta/trace_analysis.py" ]; then
	rm -rf "$H.tmp" && timeout 120 git clone -q https://github.com/facebookresearch/HolisticTraceAnalysis "$H.tmp" >/dev/null 2>&1 &&
		git -C "$H.tmp" checkout -q $REV && mv "$H.tmp" "$H" || { rm -rf "$H.tmp"; skip_all "no HTA source at $H and no clone of it"; }
fi
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
"$B/tests/fuzz/mkhostile" ops 12 "$T/ops" >/dev/null &&
	"$B/gpuprof" export --format=kineto -o "$T/ops.kt" "$T/ops" 2>/dev/null
ok $? "kineto export of the synthetic PyTorch rank"
(cd "$T" && PYTHONPATH=$H timeout 300 $PY - "$T/ops.kt/step0" >"$T/out" 2>"$T/err") <<'PY'
import os, sys
from hta.common.trace import Trace
from hta.configs.parser_config import ParserConfig
from hta.trace_analysis import TraceAnalysis
d = sys.argv[1]
def say(ok, what):
    print("%s %s" % ("ok" if ok else "FAIL", what))
t = TraceAnalysis(trace_dir=d)
steps = t.get_profiler_steps()
say(steps == list(range(len(steps))) and len(steps) >= 10, "HTA's iterations from ProfilerStep#N: %s" % steps)
os.makedirs(d + ".patterns")  # HTA writes the trace with the patterns overlaid there
p = t.get_frequent_cuda_kernel_sequences(operator_name="linear", output_dir=d + ".patterns", min_pattern_len=2, visualize=False)
top = p.iloc[0] if len(p) else None
say(top is not None and top["pattern"] == "aten::linear|ampere_sgemm_128x64_nn|ampere_sgemm_128x64_nn" and top["count"] >= 10,
    "frequent CUDA kernel sequences under cpu_op aten::linear: %s" % ((None if top is None else (top["pattern"], top["count"])),))
ak = t.get_aten_op_kernels_and_delay()[0]
rows = {(r["aten_op_name"], r["kernel_sequence"]): r["occurrence_count"] for _, r in ak.iterrows()}
say(rows.get(("aten::linear", "ampere_sgemm_128x64_nn -> ampere_sgemm_128x64_nn"), 0) >= 10
    and rows.get(("aten::relu", "relu_kernel"), 0) >= 10,
    "ATen op kernels and launch delay: linear's 2 GEMMs and relu's kernel each step: %s" % rows)
bw = t.get_memory_bw_summary()
m = bw.loc[(0, "Memcpy HtoD")]
say(m[("memory_bw_gbps", "count")] >= 10 and abs(m[("memory_bw_gbps", "mean")] - 10.486) < 0.001,
    "memory bandwidth summary: Memcpy HtoD %.3f GB/s over %d copies (1 MiB in 100 us)"
    % (m[("memory_bw_gbps", "mean")], m[("memory_bw_gbps", "count")]))
ls = t.get_cuda_kernel_launch_stats(visualize=False)[0]
say(len(ls) >= 36 and (ls["gpu_duration"] == 100).all(), "kernel launch statistics: %d launches joined to their kernels (100 us each)" % len(ls))
tb = t.get_temporal_breakdown(visualize=False)
say(tb["compute_time(us)"].iloc[0] > 0 and tb["non_compute_time(us)"].iloc[0] > 0, "temporal breakdown: %s" % tb.iloc[0].to_dict())
tr = Trace(trace_dir=d, parser_config=ParserConfig(ParserConfig.ARGS_COMPLETE))
tr.load_traces()
df = tr.get_trace(0)
tr.symbol_table.decode_df(df, create_new_columns=True)
k = df[df["s_name"] == "ampere_sgemm_128x64_nn"]
say(len(k) >= 20 and all(list(g) == [128, 2, 1] for g in k["grid"]) and all(list(b) == [256, 1, 1] for b in k["block"])
    and (k["registers_per_thread"] == 96).all() and (k["shared_memory"] == 49152).all(),
    "launch configuration columns (grid, block, registers_per_thread, shared_memory) of %d kernels" % len(k))
ops = df[df["s_cat"] == "cpu_op"]
ext = set(ops["external_id"])
kern = df[df["stream"] >= 0]
# 4 operations a step, of the steps HTA keeps (it drops the last one's events)
say(len(ops) == 4 * len(steps) and set(kern["external_id"]) <= ext,
    "external_id: %d cpu_op events, every GPU event's among theirs" % len(ops))
PY
rc=$?
[ $rc = 0 ] || { sed 's/^/# /' "$T/err" | tail -5; }
while read -r st rest; do
	[ "$st" = ok ]; ok $? "HTA: $rest"
done < <(grep -E '^(ok|FAIL) ' "$T/out")
[ "$(grep -cE '^(ok|FAIL) ' "$T/out")" = 8 ]; ok $? "HTA ran every analysis (rc $rc)"
"$B/gpuprof" export --format=kineto -o "$T/ddp.kt" "$F/ddp-clean" 2>/dev/null
(cd "$T" && PYTHONPATH=$H timeout 300 $PY - "$T/ddp.kt/step0" 2>"$T/err2") <<'PY'
import sys
from hta.trace_analysis import TraceAnalysis
t = TraceAnalysis(trace_dir=sys.argv[1])
tb = t.get_temporal_breakdown(visualize=False)
assert sorted(tb["rank"]) == [0, 1], tb
ov = t.get_comm_comp_overlap(visualize=False)
assert len(ov) == 2 and (ov["comp_comm_overlap_pctg"] >= 0).all(), ov
print("# ddp-clean:", ov.to_dict("records"))
PY
ok $? "HTA's temporal breakdown and communication/computation overlap on ddp-clean's two ranks$( [ -s "$T/err2" ] && tail -1 "$T/err2" | sed 's/^/ (/;s/$/)/')"
done_testing
