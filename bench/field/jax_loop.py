"""A JAX/optax training loop nobody here wrote the loop of: an MLP, 65 jitted steps, no
NVTX of its own. Truth: each step's time synchronised (block_until_ready), the first
step's (compilation) time, XLA's memory_stats at the end."""
import os
import sys
import time

import jax
import jax.numpy as jnp
import optax

sys.path.insert(0, os.path.dirname(__file__))
from common import med, truth

STEPS = int(os.environ.get("STEPS", "65"))
dim, layers, batch = 2048, 8, 512
key = jax.random.PRNGKey(0)
params = [jax.random.normal(jax.random.fold_in(key, i), (dim, dim), jnp.float32) * 0.02
          for i in range(layers)]
opt = optax.adam(1e-3)
state = opt.init(params)
x = jax.random.normal(key, (batch, dim), jnp.float32)


def loss_fn(p, x):
    h = x
    for w in p:
        h = jax.nn.gelu(h @ w)
    return jnp.mean(h * h)


@jax.jit
def step(p, s, x):
    l, g = jax.value_and_grad(loss_fn)(p, x)
    u, s = opt.update(g, s, p)
    return optax.apply_updates(p, u), s, l


t_start = time.perf_counter()
times = []
for i in range(STEPS):
    t0 = time.perf_counter()
    params, state, l = step(params, state, x)
    l.block_until_ready()
    times.append((time.perf_counter() - t0) * 1e3)
st = jax.local_devices()[0].memory_stats() or {}
truth(framework="jax", steps=STEPS, step_ms_median=med(times[3:]), first_step_ms=times[0],
      wall_s=time.perf_counter() - t_start, bytes_in_use=st.get("bytes_in_use"),
      peak_bytes_in_use=st.get("peak_bytes_in_use"), bytes_limit=st.get("bytes_limit"),
      pool_bytes=st.get("pool_bytes"), preallocate=os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE", "true"))
