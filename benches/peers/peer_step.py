"""Shared by the JAX peer anchors of `cargo bench` / `scaling-lab bench --peer` (imported from the
script's own directory): the SGD-momentum training step (η 0.05, γ 0.9) jitted once, warmed up,
timed over `steps` steps cycling 8 pre-made batches, and the one result line the bench parses.
"""
import time

import jax
import optax


def time_sgd_momentum(name, loss_fn, params, xs, ys, batch, steps, warmup):
    """Prints 'jax NAME batch=B examples_per_s=X ms_per_step=Y final_loss=L'."""
    opt = optax.sgd(0.05, momentum=0.9)
    state = opt.init(params)

    @jax.jit
    def step(p, s, x, y):
        l, g = jax.value_and_grad(loss_fn)(p, x, y)
        u, s = opt.update(g, s, p)
        return optax.apply_updates(p, u), s, l

    for i in range(warmup):
        params, state, l = step(params, state, xs[i % 8], ys[i % 8])
    l.block_until_ready()
    t0 = time.perf_counter()
    for i in range(steps):
        params, state, l = step(params, state, xs[i % 8], ys[i % 8])
    l.block_until_ready()
    dt = time.perf_counter() - t0
    print(f"jax {name} batch={batch} examples_per_s={steps*batch/dt:.0f} "
          f"ms_per_step={1000*dt/steps:.3f} final_loss={float(l):.4f}")
