"""Make a copy of the PyTorch integration (agent/python) whose step hooks (_gpuprof_steps.py) time each stage
of its optimizer hooks and prints the medians at exit (stderr): where gpuprof's own time a
step goes, in situ (bench/gpu-own-parts.sh). Usage: prof_hooks.py SRC_DIR DEST_DIR"""
import os
import shutil
import sys

src, dst = sys.argv[1], sys.argv[2]
shutil.copytree(src, dst, dirs_exist_ok=True)
p = os.path.join(dst, "_gpuprof_steps.py")
s = open(p).read()


def sub(old, new):
    global s
    assert old in s, old
    s = s.replace(old, new, 1)


sub("def _step_pre(opt, args, kwargs):\n    t0 = _clock()\n",
    "PROF = []\n_PRE = [0]\n\n\ndef _prof_dump():\n"
    "    import statistics as st\n"
    "    P = PROF[50:]\n"
    "    if not P:\n        return\n"
    "    names = ['pre', 'post: to the call', 'the library call', 'post: layers', 'post: rest', 'post: all']\n"
    "    for k, n in enumerate(names):\n"
    "        sys.stderr.write('PROF %-20s median %.2f us\\n' % (n, st.median(p[k] for p in P) / 1e3))\n\n\n"
    "import atexit as _ax\n_ax.register(_prof_dump)\n\n\n"
    "def _step_pre(opt, args, kwargs):\n    t0 = _clock()\n")
sub("    finally:\n        _gp.ctx.own_ns += _clock() - t0\n\n\ndef _step_post",
    "    finally:\n        _PRE[0] = _clock() - t0\n        _gp.ctx.own_ns += _PRE[0]\n\n\ndef _step_post")
sub("        ret = _abi._step_end(i, n, _gp.ctx.own_ns + _clock() - t0)\n",
    "        ta = _clock()\n        ret = _abi._step_end(i, n, _gp.ctx.own_ns + _clock() - t0)\n        tb = _clock()\n")
sub("        _layers._layers_step(None if ret is None else ret & 1)\n",
    "        _layers._layers_step(None if ret is None else ret & 1)\n        tc = _clock()\n")
sub("    finally:\n        _gp.ctx.own_ns += max(0, _clock() - t0 - waited)\n",
    "    finally:\n        te = _clock()\n        _gp.ctx.own_ns += max(0, te - t0 - waited)\n"
    "        try:\n            PROF.append((_PRE[0], ta - t0, tb - ta, tc - tb, te - tc, te - t0))\n"
    "        except NameError:\n            pass\n")
open(p, "w").write(s)
