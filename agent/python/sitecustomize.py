# gpuprof's Python hook. gpuprof's agent puts this directory first on PYTHONPATH, so
# Python's site module imports this file as "sitecustomize". It arms the PyTorch
# integration (_gpuprof.py: it acts only if and when the program imports torch or jax) and then
# runs the sitecustomize this one hides, if there is one, as Python would have: the
# user's own (or the distribution's) keeps working, errors included.
def _gpuprof_boot():
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    try:
        import _gpuprof

        _gpuprof.arm()
    except Exception:  # never change the program: the report says what is missing
        pass
    try:
        import importlib.machinery
        import importlib.util

        rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    except Exception:
        spec = None
    if spec is None or spec.loader is None:
        return
    mod = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = mod
    spec.loader.exec_module(mod)  # its errors reach site.py, as without gpuprof


_gpuprof_boot()
del _gpuprof_boot
