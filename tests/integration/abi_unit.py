"""The Python integration's connection to the collector (agent/python/_gpuprof_abi.py) and
its JAX part (_gpuprof_jax.py), against stand-ins for the injected library and for JAX:
records held back before the first attach and put in order at it, values clamped to the
record's 64 bits, text cut to 1000 bytes, one broken call silencing the rest, the
signatures declared on the calls a library has, and XLA's pool read into one record per
GPU. Needs no PyTorch and no JAX. Prints one line per case and a verdict (OK, or what went
wrong). usage: PY abi_unit.py AGENT_PYTHON_DIR"""
import sys
import types

sys.path.insert(0, sys.argv[1])
import _gpuprof as gp  # noqa: E402
import _gpuprof_abi as a  # noqa: E402
import _gpuprof_jax as j  # noqa: E402

bad = []
puts = []


def check(name, cond, detail):
    print("%-62s %s (%s)" % (name, "ok" if cond else "NOT OK", detail))
    if not cond:
        bad.append(name)


def stand_in(attach=1):
    lib = types.SimpleNamespace()
    lib.gpuprof_fw_attach = lambda: attach
    lib.gpuprof_fw_event = lambda *r: puts.append(r) or 0
    return lib


def fresh(lib):
    del puts[:]
    a._c.lib, a._c.attached, a._c.broken, a._c.fast, a._c.pending = lib, False, False, None, []


# 1. held back before the first attach, then put in order ahead of the record that attached
fresh(stand_in())
a._emit(a.FW_INFO, text="first", attach=False)
a._emit(a.FW_DATA_WAIT, a=5, attach=False)
held = len(a._c.pending) == 2 and not puts
a._emit(a.FW_MISSING, text="third")
kinds = [r[0] for r in puts]
check("held back until an attach, then put in order", held and kinds == [1, 12, 2], kinds)

# 2. no more than 256 held back: a process that never attaches keeps no growing list
fresh(stand_in())
for i in range(300):
    a._emit(a.FW_INFO, text="x", attach=False)
check("at most 256 records held back", len(a._c.pending) == 256, len(a._c.pending))

# 3. the record's fields: values clamped to 0..2^64-1, text encoded and cut to 1000 bytes
fresh(stand_in())
a._emit(a.FW_MEM_STEP, a=-5, c=1 << 70, d=7, text="\u00e9" * 600)
r = puts[-1] if puts else (0,) * 6
check("values clamped to the record's 64 bits", r[2:5] == (0, (1 << 64) - 1, 7), r[2:5])
check("text as UTF-8, cut to 1000 bytes", isinstance(r[5], bytes) and len(r[5]) == 1000, len(r[5] or b""))

# 4. a library that will not attach: broken, and quiet from then on
fresh(stand_in(attach=0))
a._emit(a.FW_INFO, text="x")
a._emit(a.FW_INFO, text="y")
check("no attach: marked broken, nothing put", a._c.broken and not puts, a._c.broken)

# 5. a call that raises: broken, and the program never sees it
lib = stand_in()
lib.gpuprof_fw_event = lambda *r: 1 / 0
fresh(lib)
a._emit(a.FW_INFO, text="x")
ret = a._step_end(0, 1, 0)
check("a call that raises: broken, the step hook gets None", a._c.broken and ret is None, ret)

# 6. what could not be collected names the exception
fresh(stand_in())
a._missing("memory", ValueError("no"))
check("missing: what, the exception's type and text", puts and puts[-1][5] == b"memory (ValueError: no)",
      puts[-1][5] if puts else None)

# 7. the signatures go on the calls this library has, and only those
import ctypes  # noqa: E402

fn = types.SimpleNamespace(restype=None, argtypes=None)
old = types.SimpleNamespace(gpuprof_fw_event=fn)  # a library without the later calls
a._declare(old)
check("signatures declared on the calls a library has",
      fn.restype is ctypes.c_uint64 and fn.argtypes[-1] is ctypes.c_char_p and len(fn.argtypes) == 6,
      (fn.restype, len(fn.argtypes or ())))

# 8. JAX: one pool record per GPU, from XLA's memory_stats(), once the backends are up
xb = types.ModuleType("jax._src.xla_bridge")
xb.backends_are_initialized = lambda: True
sys.modules.update({"jax": types.ModuleType("jax"), "jax._src": types.ModuleType("jax._src"),
                    "jax._src.xla_bridge": xb})
sys.modules["jax._src"].xla_bridge = xb
dev = types.SimpleNamespace(platform="gpu", id=1, memory_stats=lambda: {
    "bytes_in_use": 100, "pool_bytes": 300, "peak_bytes_in_use": 200, "bytes_limit": 1 << 30})
cpu = types.SimpleNamespace(platform="cpu", id=0, memory_stats=lambda: {})
fake_jax = types.SimpleNamespace(local_devices=lambda: [cpu, dev])
fresh(stand_in())
j._jax_pool_sample(fake_jax, final=True)
r = puts[-1] if puts else (0,) * 6
check("JAX: the GPU's pool in one record (cpu left out)",
      len(puts) == 1 and r[:5] == (a.FW_POOL, 1, 100, 300, 200), r[:5])
check("... its text names the allocator and its limit",
      r[5] == b"XLA BFC allocator: limit 1.00 GiB, peak pool 300 B, at exit", r[5])
xb.backends_are_initialized = lambda: False
del puts[:]
j._jax_pool_sample(fake_jax)
check("... nothing before the program starts JAX's backends", not puts, len(puts))
check("the arming module holds no part of the integration", not hasattr(gp, "_emit"), dir(gp)[:3])

print("OK" if not bad else "FAILED: " + "; ".join(bad))
sys.exit(1 if bad else 0)
