"""Run a script with a log of every import a thread other than the main one begins, with
its stack (which of our threads imports a module the program is importing: the capture
window's circular ImportError, issue 51). Usage: python3 thread_imports.py SCRIPT ARGS..."""
import importlib.abc, runpy, sys, threading, traceback


class _Log(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        t = threading.current_thread()
        if t is not threading.main_thread():
            sys.stderr.write("THREAD-IMPORT %s in %s\n%s" % (
                name, t.name, "".join(traceback.format_stack(limit=14)[:-1])))
        return None


sys.meta_path.insert(0, _Log())
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
