"""What gpuprof's Python hook costs every Python process of a profiled task at start-up:
Python's own import timer (-X importtime) around sitecustomize (which imports _gpuprof and
arms it), for each directory given, interleaved round by round, in two cases:

  source  no compiled files beside the sources and none written (PYTHONDONTWRITEBYTECODE):
          the installed case, where the directory is root's and not byte-compiled, so every
          process compiles what it imports
  cached  __pycache__ written by a first run and read after it

Prints, per directory and case, the median and the least of the rounds (ms), cumulative
(sitecustomize with everything it imports) and _gpuprof's own line.
usage: python3 bench/py_import_cost.py ROUNDS DIR...   (e.g. a copy of agent/python of two
commits). PYTHON: the interpreter (default /usr/bin/python3)."""
import os
import shutil
import statistics
import subprocess
import sys


def one(python, d, case):
    env = dict(os.environ, GPUPROF_MODES="timing,nvtx,cuda,mem", PYTHONPATH=d)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if case == "source":
        shutil.rmtree(os.path.join(d, "__pycache__"), ignore_errors=True)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    err = subprocess.run([python, "-X", "importtime", "-c", "pass"], env=env,
                         capture_output=True, text=True).stderr
    got = {}
    for line in err.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[2].strip() in ("sitecustomize", "_gpuprof"):
            got[parts[2].strip()] = (int(parts[1]), int(parts[0].split(":")[1]))
    return got["sitecustomize"][0], got["_gpuprof"][1]


def main():
    rounds, dirs = int(sys.argv[1]), sys.argv[2:]
    python = os.environ.get("PYTHON", "/usr/bin/python3")
    res = {}
    for case in ("source", "cached"):
        for d in dirs:
            one(python, d, case)  # writes the cache for "cached"
        for _ in range(rounds):
            for d in dirs:
                res.setdefault((d, case), []).append(one(python, d, case))
    for (d, case), v in res.items():
        cum, own = [x[0] / 1e3 for x in v], [x[1] / 1e3 for x in v]
        print("%-40s %-6s sitecustomize %6.2f ms (least %5.2f)  _gpuprof itself %6.2f ms"
              " (least %5.2f)  n=%d" % (d, case, statistics.median(cum), min(cum),
                                         statistics.median(own), min(own), len(v)))


main()
