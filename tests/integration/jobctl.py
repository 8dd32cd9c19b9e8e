"""A job-control shell on a pseudo-terminal around `gpuprof run` (tests/integration/
t_agent.sh): the "shell" gives the job a process group and the terminal, as bash does;
the program must then read the terminal (it has the foreground), get Ctrl-C once, and on
Ctrl-Z the job the shell waits for must stop; fg (the terminal back, SIGCONT to the job's
group) continues it. Prints what the program and the shell said, for the test to check.
usage: jobctl.py GPUPROF OUTDIR -- PROGRAM ARGS"""
import os
import pty
import select
import signal
import sys
import time

gp, out, prog = sys.argv[1], sys.argv[2], sys.argv[4:]
pid, master = pty.fork()
if pid == 0:  # the shell: a session leader with the terminal (pty.fork)
    signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    job = os.fork()
    if job == 0:
        os.setpgid(0, 0)
        os.tcsetpgrp(0, os.getpid())
        signal.signal(signal.SIGTTOU, signal.SIG_DFL)
        os.execv(gp, [gp, "run", "--output=" + out, "--"] + prog)
    os.setpgid(job, job)
    os.tcsetpgrp(0, job)
    stops = 0
    while True:
        _, st = os.waitpid(job, os.WUNTRACED)
        if os.WIFSTOPPED(st):
            stops += 1
            os.tcsetpgrp(0, os.getpgrp())
            print("SHELL stopped", flush=True)
            time.sleep(0.3)
            os.tcsetpgrp(0, job)  # fg
            os.killpg(job, signal.SIGCONT)
            continue
        break
    os.tcsetpgrp(0, os.getpgrp())
    print("SHELL exit %d stops %d" % (os.waitstatus_to_exitcode(st), stops), flush=True)
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


steps = [(b"READY", b"hello\n"), (b"GOT hello", b"\x1a"), (b"SHELL stopped", None),
         (b"CONT", b"\x03"), (b"SHELL exit", None)]
for want, send in steps:
    if not expect(want):
        break
    if send:
        time.sleep(0.2)
        os.write(master, send)
expect(b"stops", 5)
os.waitpid(pid, 0)
sys.stdout.write(seen.decode(errors="replace").replace("\r", ""))
