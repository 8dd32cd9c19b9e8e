"""The memory picture at SIGTERM (Slurm's time limit, scancel), with the program's outcome
its own: _hook_sigterm(picture) calls picture() at SIGTERM, then the process dies of the
signal as it would have. _TermHook holds the rules. (The memory part installs it at CUDA's
initialisation: _gpuprof_mem.)"""

import os

import _gpuprof_abi as _abi


def _hook_sigterm(picture):
    """At SIGTERM (Slurm's time limit, scancel) keep the memory picture, then die of the
    signal as the program would have. Only where the program left SIGTERM's default
    action. A Python handler alone would wait for the main thread to come back to the
    interpreter, which a rank blocked in a CUDA synchronisation or a hung collective
    never does: the default action (die now) would become a SIGKILL 30 s later. So the
    signal also wakes a thread of ours through Python's wakeup fd (written by the C-level
    handler, whatever the main thread is doing), which takes the picture and dies of
    SIGTERM at once. Not installed where the wakeup fd is someone else's (asyncio).
    _TermHook holds the rules that keep the program's outcome its own."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return
    try:
        hook = _TermHook(picture)
    except (OSError, AttributeError, ValueError) as e:
        _abi._missing("memory picture at SIGTERM: no wakeup channel", e)
        return
    if not hook.take_wakeup():
        _abi._missing("memory picture at SIGTERM: the program's own wakeup fd is in use")
        return
    signal.signal(signal.SIGTERM, hook.on_term)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=hook.after_fork_in_child)
    threading.Thread(target=hook.watch, name="gpuprof-sigterm", daemon=True).start()


class _TermHook:
    """The SIGTERM hook's state, and what keeps the program's outcome its own:

    - The wakeup channel is a datagram socket pair whose reader asks the kernel for each
      datagram's sender (SO_PASSCRED). A child forked where no fork hook runs (ctypes'
      or a C extension's fork) inherits the write end, and its SIGTERM's wakeup byte
      reached the parent's thread, which killed the parent (exit 143). A byte from
      another process is now left to that process.
    - A forked child that runs Python's fork hooks (os.fork, multiprocessing) gives the
      handler and the wakeup fd back at fork, and the handler acts only in the process
      that installed it.
    - A program that installs its own handler and calls the one it replaced
      (Lightning's _SignalConnector calls every earlier handler that is callable) has
      taken SIGTERM for itself: without gpuprof it would have found SIG_DFL, which it
      cannot call, checkpointed and exited 0. Called so, the hook does nothing."""

    def __init__(self, picture):
        import socket
        import threading

        self.picture = picture  # called once, at SIGTERM, before the process dies of it
        self.rsock, self.wsock = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.rsock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.wsock.setblocking(False)
        self.owner = os.getpid()
        self.once = threading.Lock()

    def take_wakeup(self):
        import signal

        try:
            old = signal.set_wakeup_fd(self.wsock.fileno(), warn_on_full_buffer=False)
        except (ValueError, TypeError, OSError):
            old = None
        if old == -1:
            return True
        if old is not None:  # not ours to take
            signal.set_wakeup_fd(old)
        self.close()
        return False

    def close(self):
        for s in (self.rsock, self.wsock):
            try:
                s.close()
            except OSError:
                pass

    def ours(self):
        import signal

        return signal.getsignal(signal.SIGTERM) == self.on_term

    def on_term(self, signum, frame):
        if self.ours():
            self.die()

    def recv(self):
        """One wakeup datagram and the pid of the process that wrote it (0: not said)."""
        import socket
        import struct

        n = struct.calcsize("3i")
        got, anc, _, _ = self.rsock.recvmsg(64, socket.CMSG_SPACE(n))
        pid = 0
        for level, kind, data in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS and len(data) >= n:
                pid = struct.unpack("3i", data[:n])[0]
        return got, pid

    def watch(self):
        import signal

        while True:
            try:
                got, pid = self.recv()
            except InterruptedError:
                continue
            except OSError:
                return
            if pid != self.owner:  # a forked child's signal is its own
                continue
            if signal.SIGTERM in got and self.ours():
                self.die()
                return

    def die(self):
        import signal
        import threading

        if os.getpid() != self.owner:
            # a child forked where no fork hook ran: not ours to picture; it dies of the
            # signal as it would have without us
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        if not self.once.acquire(blocking=False):
            return
        try:
            self.picture()
        except Exception:
            pass
        # back to the default action and die of it: signal.signal() works only on the
        # main thread, so from ours through libc; the exit status stays "killed by
        # SIGTERM" either way
        try:
            if threading.current_thread() is threading.main_thread():
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
            else:
                import ctypes

                libc = ctypes.CDLL(None, use_errno=True)
                libc.signal.argtypes = [ctypes.c_int, ctypes.c_void_p]
                libc.signal.restype = ctypes.c_void_p
                libc.signal(signal.SIGTERM, None)  # SIG_DFL
            os.kill(os.getpid(), signal.SIGTERM)
        finally:
            os._exit(128 + signal.SIGTERM)  # not reached unless the default was refused

    def after_fork_in_child(self):
        # the child's SIGTERM is its own: no wakeup byte into the parent's channel, and
        # the default action back (unless the program set a handler of its own since)
        import signal

        try:
            cur = signal.set_wakeup_fd(-1)
            if cur not in (self.wsock.fileno(), -1):  # the program's own since: left to it
                signal.set_wakeup_fd(cur)
            if self.ours():
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
        except (ValueError, OSError):
            pass
        self.close()
