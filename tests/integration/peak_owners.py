"""The owners of the peak (agent/python/_gpuprof_mem.py, _picture) against a made-up
allocator snapshot: where the history holds the peak's moment, the blocks live then, and
the reserved-but-unused figure; where the peak was reached while the history was off
(between its windows), what the history saw at its largest plus one record for the rest,
so the owners add up to the peak, and no reserved-but-unused figure made up. Needs no
PyTorch. Prints one line per case and a verdict.
usage: PY peak_owners.py AGENT_PYTHON_DIR"""
import sys
import types

sys.path.insert(0, sys.argv[1])
import _gpuprof_abi as gpa  # noqa: E402
import _gpuprof_mem as gpm  # noqa: E402
import _gpuprof_snap as gpn  # noqa: E402

bad = []
out = []
gpa._emit = lambda kind, dev=0, a=0, c=0, d=0, text=None, attach=True: out.append((kind, a, c, d, text))
F1 = [{"filename": "/w/train.py", "line": 10, "name": "main"}]
F2 = [{"filename": "/w/train.py", "line": 20, "name": "step"}]
MIB = 1 << 20


def snapshot():
    # now: block A (100 MiB, train.py:10) live in a 400 MiB segment; the trace saw B
    # (50 MiB, train.py:20) allocated and freed: the history's largest total is 150 MiB
    return {"segments": [{"device": 0, "total_size": 400 * MIB, "blocks": [
                {"address": 1, "size": 100 * MIB, "state": "active_allocated", "frames": F1}]}],
            "device_traces": [[{"action": "alloc", "addr": 2, "size": 50 * MIB, "frames": F2},
                               {"action": "free_requested", "addr": 2, "size": 50 * MIB},
                               {"action": "free_completed", "addr": 2, "size": 50 * MIB}]]}


gpm._m.torch = types.SimpleNamespace(cuda=types.SimpleNamespace(
    memory=types.SimpleNamespace(_snapshot=snapshot)))
gpm._m.mem_dev = 0
gpa._c.base = ""  # no pickle written


def check(name, cond, detail):
    print("%-62s %s (%s)" % (name, "ok" if cond else "NOT OK", detail))
    if not cond:
        bad.append(name)


def run(peak):
    del out[:]
    gpm._picture(gpa.SNAP_PEAK, peak, 400 * MIB)
    pk = [r for r in out if r[0] == gpa.FW_MEM_PEAK]
    own = [r for r in out if r[0] == gpa.FW_OWNER]
    return pk, own


pk, own = run(150 * MIB)
check("the history holds the peak: its blocks", sorted((a // MIB, t) for _, a, _, _, t in own) ==
      [(50, "train.py:20 step"), (100, "train.py:10 main")], own)
check("... and reserved but unused then (400 - 150 MiB)", pk and pk[0][3] == 250 * MIB, pk)

pk, own = run(1000 * MIB)  # the counters' peak, reached while the history was off
total = sum(a for _, a, _, _, _ in own)
check("a peak the history did not see: the owners add up to it", total == 1000 * MIB,
      "%d MiB in %s" % (total // MIB, [(a // MIB, t) for _, a, _, _, t in own]))
check("... the rest in one record, said to be unseen", own and own[-1][4] == gpn._UNSEEN_TEXT
      and own[-1][1] == 850 * MIB, own[-1:])
check("... and no reserved-but-unused figure made up", pk and pk[0][3] == 0, pk)

print("OK" if not bad else "FAILED: " + "; ".join(bad))
sys.exit(1 if bad else 0)
