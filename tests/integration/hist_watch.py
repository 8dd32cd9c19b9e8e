"""The allocator history of a program that never steps an optimizer (inference, evaluation,
a loop of its own): agent/python/_gpuprof_mem.py begins it at CUDA's initialisation and, with
no optimizer step to end its warm-up, a thread of its own ends it where the collector's
first capture window closes (mode cuda), or where no kernels are traced once the allocator's
peak has stayed for _HIST_QUIET_S while the program kept allocating (_HIST_NOSTEP_S at most).
Against a stand-in for the injected library and for PyTorch's history switch; needs no
PyTorch. Prints one line per case and a verdict (OK, or what went wrong).
usage: PY hist_watch.py AGENT_PYTHON_DIR"""
import os
import sys
import threading
import time
import types

sys.path.insert(0, sys.argv[1])
import _gpuprof as g  # noqa: E402
import _gpuprof_abi as gpa  # noqa: E402
import _gpuprof_mem as gpm  # noqa: E402
import _gpuprof_torch as gpt  # noqa: E402

bad = []
calls = []  # what was asked of PyTorch's history switch: True on, None off
pictures = []
lib = types.SimpleNamespace(tracing=1)
lib.gpuprof_fw_tracing = lambda: lib.tracing


def record_history(enabled="all", **kw):
    calls.append(None if enabled is None else True)


gpm._stats = lambda: (100, 200, 300, 400)  # allocated, its peak, reserved, its peak
threads = []  # the thread each picture was taken on


def _fake_picture(why, peak=0, res_peak=0, window=False):
    pictures.append((why, peak))
    threads.append(threading.current_thread().name)


gpm._picture = _fake_picture


def begin(modes, steps=None):
    """The state _start_history leaves: our history on, its warm-up to end at step 5."""
    del calls[:], pictures[:]
    g.ctx.modes = set(modes.split(","))
    gpa._c.lib = lib
    g.ctx.opt_steps = steps if steps is not None else {}
    gpm._m.record_history = record_history
    gpm._m.peak_seen = 0
    g.ctx.in_fork_child = False
    gpm._history(True)
    gpm._m.hist_own = True
    gpm._m.hist_until = gpm._HIST_WARM


def check(name, cond, detail):
    print("%-58s %s (%s)" % (name, "ok" if cond else "NOT OK", detail))
    if not cond:
        bad.append(name)


# 1. mode cuda: the history records while the first window traces, and ends (the peak's
# picture first) once it has closed; the watcher is a thread, looking every tick
gpm._HIST_TICK_S = 0.02
begin("timing,nvtx,cuda,mem")
lib.tracing = 1
gpm._hist_watch_start()
time.sleep(0.2)
on_during = gpm._m.hist_live and calls == [True]
lib.tracing = 0
for _ in range(100):
    if not gpm._m.hist_live:
        break
    time.sleep(0.02)
check("mode cuda, no optimizer: on through the first window", on_during, "calls %s" % calls[:1])
check("... and off once it closed, the peak's picture taken",
      not gpm._m.hist_live and calls == [True, None] and pictures == [(gpa.SNAP_PEAK, 200)]
      and gpm._m.hist_until == 0, "calls %s, pictures %s" % (calls, pictures))
check("... on the main thread (the snapshot imports: never on ours)", threads == ["MainThread"],
      "threads %s" % threads)
gpm._hw.hist_stop.set()

# 1b. the end falls due while the program imports a module (its code runs 0.6 s): the
# picture waits until the import is over (PyTorch 2.11's snapshot imports torch._inductor,
# and begun beside the program's import of torch._dynamo, it broke that import: issue 51)
import tempfile  # noqa: E402

d = tempfile.mkdtemp()
with open(os.path.join(d, "gp_slow_import.py"), "w") as f:
    f.write("import time\nfor _ in range(60):\n    time.sleep(0.01)\nDONE = True\n")
sys.path.insert(0, d)
begin("timing,nvtx,cuda,mem")
del threads[:]
seen = []
gpm._picture = lambda why, peak=0, res_peak=0, window=False: seen.append(
    getattr(sys.modules.get("gp_slow_import"), "DONE", False))
lib.tracing = 1
gpm._hist_watch_start()
time.sleep(0.05)
lib.tracing = 0
import gp_slow_import  # noqa: E402,F401

for _ in range(100):
    if not gpm._m.hist_live:
        break
    time.sleep(0.02)
check("the end falls due during an import: taken after it", seen == [True] and not gpm._m.hist_live,
      "pictures taken with the import done: %s" % seen)
gpm._hw.hist_stop.set()
gpm._picture = _fake_picture

# 1c. a main thread that runs no bytecode (blocked in one C call) past _HIST_MAIN_WAIT_S:
# the history off from the watcher's thread, without the picture (which could import)
gpm._HIST_MAIN_WAIT_S = 0.2
begin("timing,nvtx,cuda,mem")
lib.tracing = 0
gpm._hist_watch_start()
time.sleep(1.0)  # one C call: no pending call runs in it
off_in_sleep = not gpm._m.hist_live
check("a main thread blocked past the wait: off from the watcher, no picture",
      off_in_sleep and calls == [True, None] and not pictures, "calls %s, pictures %s" % (calls, pictures))
gpm._hw.hist_stop.set()
time.sleep(0.05)
gpm._HIST_MAIN_WAIT_S = 30.0

# 1d. an import under way when the main thread's tick falls due: nothing until it is over
begin("timing,nvtx,cuda,mem")
lib.tracing = 0
fake = types.ModuleType("gp_half_imported")
fake.__spec__ = types.SimpleNamespace(_initializing=True)
sys.modules["gp_half_imported"] = fake
during = gpm._hist_watch_tick(time.monotonic_ns()) and gpm._m.hist_live and not pictures
fake.__spec__._initializing = False
after = not gpm._hist_watch_tick(time.monotonic_ns()) and not gpm._m.hist_live
check("an import under way: the end waits for it", during and after, "calls %s" % calls)
del sys.modules["gp_half_imported"]

# 2. an optimizer step came first: the watcher leaves the history to _after_step
begin("timing,nvtx,cuda,mem", steps={0: 1})
lib.tracing = 0
more = gpm._hist_watch_tick(time.monotonic_ns())
check("an optimizer step seen: the watcher leaves, history untouched",
      not more and gpm._m.hist_live and calls == [True] and not pictures, "calls %s" % calls)

# 3. no mode cuda (nothing traced to follow): on for _HIST_NOSTEP_S, then off
begin("timing,nvtx,mem")
t0 = gpm._hw.hist_t0 = time.monotonic_ns()
early = gpm._hist_watch_tick(t0 + int(gpm._HIST_NOSTEP_S * 1e9) - 1) and gpm._m.hist_live
late = gpm._hist_watch_tick(t0 + int(gpm._HIST_NOSTEP_S * 1e9) + 1)
check("no mode cuda: on for %g s" % gpm._HIST_NOSTEP_S, early, "calls %s" % calls)
check("... then off", not late and not gpm._m.hist_live and calls == [True, None], "calls %s" % calls)

# 3b. no mode cuda: off once the allocator's peak has stayed for _HIST_QUIET_S while the
# program allocated as much again (a steady inference loop); on while it grows, and
# through a pause of the program's (loading, tokenising) however long, up to the bound
peaks, allocs = [0], [0]
real_activity = gpm._activity
gpm._activity = lambda: (peaks[0], allocs[0])
def watched():
    """A history with the watcher's state begun, its ticks this test's at the times it
    gives (the thread stopped)."""
    begin("timing,nvtx,mem")
    peaks[0] = allocs[0] = 0
    gpm._hist_watch_start()
    gpm._hw.hist_stop.set()
    return gpm._hw.hist_t0


def live_after(t):
    return gpm._hist_watch_tick(t) and gpm._m.hist_live


S = int(1e9)
Q = int(gpm._HIST_QUIET_S * S)
t0 = watched()
none_yet = live_after(t0 + 3 * S)  # nothing allocated yet
peaks[0], allocs[0] = 1000, 100
first = live_after(t0 + 3 * S + S // 2)
peaks[0], allocs[0] = 1005, 300  # within 1 %: not growth; as many blocks again since
quiet_short = live_after(t0 + 3 * S + S // 2 + Q - 1)
quiet = gpm._hist_watch_tick(t0 + 3 * S + S // 2 + Q)
check("no mode cuda: on before anything is allocated", none_yet, "calls %s" % calls)
check("... on while the peak is newer than %g s" % gpm._HIST_QUIET_S, first and quiet_short,
      "calls %s" % calls)
check("... off once it has stayed %g s" % gpm._HIST_QUIET_S,
      not quiet and not gpm._m.hist_live and calls == [True, None], "calls %s" % calls)
t0 = watched()
peaks[0], allocs[0] = 1000, 100
first = live_after(t0 + S // 2)
paused = live_after(t0 + S // 2 + Q + S)  # 3 s with no allocation: a pause, not quiet
allocs[0] = 199
few = live_after(t0 + S // 2 + Q + S + 1)  # fewer blocks since than before the peak
allocs[0] = 200
after = gpm._hist_watch_tick(t0 + S // 2 + Q + S + 2)
check("... on through a pause of the program's, off once it allocates again",
      first and paused and few and not after and not gpm._m.hist_live, "calls %s" % calls)
t0 = watched()
growing = True
for i in range(1, 20):  # the peak grows 10 % every half second: on until _HIST_NOSTEP_S
    peaks[0], allocs[0] = int(1000 * 1.1 ** i), 100 * i * i
    growing = growing and gpm._hist_watch_tick(t0 + i * S // 2) and gpm._m.hist_live
late = gpm._hist_watch_tick(t0 + int(gpm._HIST_NOSTEP_S * S) + 1)
check("... on while it grows, off at %g s" % gpm._HIST_NOSTEP_S, growing and not late and
      not gpm._m.hist_live, "calls %s" % calls)
gpm._activity = real_activity

# 4. mode cuda with no collector to ask (no library): the same bound by time
begin("timing,nvtx,cuda,mem")
gpa._c.lib = False
t0 = gpm._hw.hist_t0 = time.monotonic_ns()
early = gpm._hist_watch_tick(t0 + 1000)
late = gpm._hist_watch_tick(t0 + int(gpm._HIST_NOSTEP_S * 1e9) + 1)
check("no collector to ask: bounded by time as well", early and not late and calls == [True, None],
      "calls %s" % calls)

# 5. the history already off (the program switched it, or a step ended it): nothing done
begin("timing,nvtx,cuda,mem")
gpm._history(False)
del calls[:]
lib.tracing = 0
more = gpm._hist_watch_tick(time.monotonic_ns())
check("history already off: the watcher leaves it", not more and calls == [], "calls %s" % calls)

# 6. the watcher's first record and the program's, at once: one attach, each held-back
# record put once
puts, attaches = [], []
lib2 = types.SimpleNamespace()
lib2.gpuprof_fw_attach = lambda: (attaches.append(1), time.sleep(0.05), 1)[2]
lib2.gpuprof_fw_event = lambda *a: puts.append(a) or 0
for n in ("gpuprof_fw_range_start", "gpuprof_fw_range_end"):
    setattr(lib2, n, types.SimpleNamespace())
gpa._c.lib, gpa._c.attached, gpa._c.broken, gpa._c.fast = lib2, False, False, None
gpa._c.pending = [(gpa.FW_INFO, 0, 0, 0, 0, "held back")]
ts = [threading.Thread(target=gpa._attach) for _ in range(4)]
for t in ts:
    t.start()
for t in ts:
    t.join()
check("first records from two threads: one attach, the held one put once",
      len(attaches) == 1 and len(puts) == 1 and gpa._c.attached, "%d attaches, %d puts" % (len(attaches), len(puts)))

# 7. a fork while the parent's watcher holds a lock of ours: the child's are free (its
# optimizer step would wait forever on a lock no thread of its holds)
if hasattr(os, "fork"):
    gpt._at_fork()
    with gpm._HIST_LOCK, gpa._ATTACH_LOCK:
        pid = os.fork()
        if pid == 0:
            free = gpm._HIST_LOCK.acquire(timeout=2) and gpa._ATTACH_LOCK.acquire(timeout=2)
            os._exit(0 if free else 1)
    _, status = os.waitpid(pid, 0)
    check("a fork while our locks are held: the child's are free", status == 0, "status %d" % status)

print("OK" if not bad else "FAILED: " + "; ".join(bad))
sys.exit(1 if bad else 0)
