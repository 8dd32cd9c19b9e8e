"""A job-control shell on a pseudo-terminal around `gpuprof run` (tests/integration/
t_agent.sh): the "shell" gives the job a process group and the terminal, as bash does;
the program must then read the terminal (it has the foreground), get Ctrl-C once, and on
Ctrl-Z the job the shell waits for must stop; fg (the terminal back, SIGCONT to the job's
group) continues it. Prints what the program and the shell said, for the test to check.
usage: jobctl.py [--pipe] GPUPROF OUTDIR -- PROGRAM ARGS (--pipe: gpuprof run ... | cat)"""
import os
import pty
import select
import signal
import sys
import time

pipe = sys.argv[1] == "--pipe"  # the job is a pipeline: gpuprof run ... | cat
if pipe:
    del sys.argv[1]
gp, out, prog = sys.argv[1], sys.argv[2], sys.argv[4:]
pid, master = pty.fork()
if pid == 0:  # the shell: a session leader with the terminal (pty.fork)
    signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    cmds = [[gp, "run", "--output=" + out, "--"] + prog]
    if pipe:
        cmds.append(["cat"])
        r, w = os.pipe()
    job, pids = 0, []
    for i, cmd in enumerate(cmds):
        p = os.fork()
        if p == 0:
            os.setpgid(0, job)
            if i == 0:
                os.tcsetpgrp(0, os.getpgrp())
            signal.signal(signal.SIGTTOU, signal.SIG_DFL)
            if pipe:
                os.dup2(w if i == 0 else r, 1 if i == 0 else 0)
                os.close(r)
                os.close(w)
            os.execvp(cmd[0], cmd)
        job = job or p
        try:
            os.setpgid(p, job)  # both sides, as shells do; EACCES once it has exec'd
        except OSError:
            pass
        pids.append(p)
    if pipe:
        os.close(r)
        os.close(w)
    os.tcsetpgrp(0, job)
    stops, live, stopped, status = 0, set(pids), set(), 0
    while live:
        p, st = os.waitpid(-job, os.WUNTRACED)
        if os.WIFSTOPPED(st):
            stopped.add(p)
            if stopped == live:  # every live process of the job: the job is stopped
                stops += 1
                os.tcsetpgrp(0, os.getpgrp())
                print("SHELL stopped", flush=True)
                time.sleep(0.3)
                os.tcsetpgrp(0, job)  # fg
                os.killpg(job, signal.SIGCONT)
                stopped.clear()
            continue
        live.discard(p)
        stopped.discard(p)
        if p == pids[0]:
            status = os.waitstatus_to_exitcode(st)
    os.tcsetpgrp(0, os.getpgrp())
    print("SHELL exit %d stops %d" % (status, stops), flush=True)
    os._exit(0)

seen = b""


def expect(what, timeout=20):
    """Read the terminal until what appears; False on timeout or end."""
    global seen
    end = time.time() + timeout
    while what not in seen:
        left = end - time.time()
        if left <= 0 or not select.select([master], [], [], left)[0]:
            return False
        try:
            data = os.read(master, 4096)
        except OSError:
            return False
        if not data:
            return False
        seen += data
    return True


# a pipeline's Ctrl-C would end cat too (as without gpuprof): there the program ends alone
steps = [(b"READY", b"hello\n"), (b"GOT hello", b"\x1a"), (b"SHELL stopped", None),
         (b"CONT", None if pipe else b"\x03"), (b"SHELL exit", None)]
for want, send in steps:
    if not expect(want):
        break
    if send:
        time.sleep(0.2)
        os.write(master, send)
expect(b"stops", 5)
os.waitpid(pid, 0)
sys.stdout.write(seen.decode(errors="replace").replace("\r", ""))
