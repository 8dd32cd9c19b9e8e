"""JAX: compilation times (jax.monitoring) and XLA's memory pool on each GPU, with no
change to the program. Started by _gpuprof.arm() once the program imports jax."""

import _gpuprof as _gp
import _gpuprof_abi as _abi


def _jax_ready():
    """Has the program initialised JAX's backends? (asking for devices before it does
    would initialise them ourselves, under settings the program may still change)"""
    try:
        from jax._src import xla_bridge as xb
    except Exception:
        return False
    f = getattr(xb, "backends_are_initialized", None)
    if f is not None:
        return bool(f())
    return bool(getattr(xb, "_backends", None))


def _jax_pool_sample(jax, final=False):
    """XLA's allocator on each GPU: in use, the pool it holds from the device, its peak
    (GP_FW_POOL: a = bytes in use, c = pool bytes, d = peak in use; text names the
    allocator and its limit)."""
    if not _jax_ready():
        return
    for dev in jax.local_devices():
        if getattr(dev, "platform", "") != "gpu":
            continue
        st = dev.memory_stats() or {}
        use = st.get("bytes_in_use", 0)
        pool = st.get("pool_bytes", st.get("bytes_reserved", 0))
        peak = st.get("peak_bytes_in_use", 0)
        text = "XLA %s allocator: limit %s, peak pool %s%s" % (
            "BFC" if "bytes_limit" in st else "device", _abi._bytes(st.get("bytes_limit", 0)),
            _abi._bytes(st.get("peak_pool_bytes", pool)), ", at exit" if final else "")
        _abi._emit(_abi.FW_POOL, dev=getattr(dev, "id", 0), a=use, c=pool, d=peak, text=text)


def _start_jax(jax):
    import atexit
    import threading
    import time

    how = []
    mon = getattr(jax, "monitoring", None)
    reg = getattr(mon, "register_event_duration_secs_listener", None)
    if reg is not None:
        def on_duration(event, duration, **kwargs):
            try:
                # the backend's compilation (XLA's passes and autotuning included)
                if event.endswith("backend_compile_duration"):
                    _abi._emit(_abi.FW_COMPILE, a=int(duration * 1e9), text=event)
            except Exception:
                pass

        reg(on_duration)
        how.append("compilation from jax.monitoring")
    else:
        _abi._missing("JAX compilation times: jax.monitoring has no duration listeners")
    if "mem" in _gp.ctx.modes or "timing" in _gp.ctx.modes:
        def sampler():
            armed = False
            while True:
                time.sleep(1.0)
                try:
                    if not armed and _jax_ready():
                        # registered once JAX has registered its own clean-up (at its
                        # backends' start), so ours runs before it (atexit is LIFO)
                        atexit.register(_jax_pool_sample, jax, True)
                        armed = True
                    _jax_pool_sample(jax)
                except Exception as e:
                    _abi._missing("XLA memory statistics", e)
                    return

        threading.Thread(target=sampler, name="gpuprof-jax", daemon=True).start()
        how.append("XLA's memory_stats() every 1 s and at exit")
    text = "jax %s; %s" % (getattr(jax, "__version__", "?"), "; ".join(how))
    _abi._emit(_abi.FW_INFO, text=text, attach=False)
