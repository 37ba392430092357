"""Shared by the JAX peer anchors of `cargo bench` / `scaling-lab bench --peer` (imported from the
script's own directory): a training step jitted once, warmed up, timed over `steps` steps cycling
8 pre-made batches, and the one result line the bench parses.

Optimizers, with the lab's semantics (src/train/optim.rs, the trainer's clipping):
* `sgd_momentum(lr, m)`: heavy-ball momentum, dampening 0 (optax.sgd(lr, momentum=m));
* `sgd(lr)`: plain SGD, w <- w - lr * g;
* `adam_clip(lr, clip, b1, b2, eps)`: the gradient scaled by min(1, clip / |g|) over all parameters
  together (global norm, optax.clip_by_global_norm), then Adam (optax.adam; PyTorch's update
  m_hat / (sqrt(v_hat) + eps), Burn's too).
"""
import time

import jax
import optax


def sgd(lr):
    return optax.sgd(lr)


def sgd_momentum(lr, momentum):
    return optax.sgd(lr, momentum=momentum)


def adam_clip(lr, clip=1.0, b1=0.9, b2=0.999, eps=1e-8):
    return optax.chain(optax.clip_by_global_norm(clip), optax.adam(lr, b1=b1, b2=b2, eps=eps))


def time_step(name, loss_fn, params, xs, ys, batch, steps, warmup, opt):
    """Times `opt` on `loss_fn(params, x, y)` over batches xs[i % 8], ys[i % 8].

    Prints 'jax NAME batch=B examples_per_s=X ms_per_step=Y final_loss=L'.
    """
    state = opt.init(params)

    @jax.jit
    def step(p, s, x, y):
        l, g = jax.value_and_grad(loss_fn)(p, x, y)
        u, s = opt.update(g, s, p)
        return optax.apply_updates(p, u), s, l

    # the batches as separate device arrays: no slicing op inside the timed loop
    n = len(xs)
    xs = [xs[i] for i in range(n)]
    ys = [ys[i] for i in range(n)]
    l = None
    for i in range(warmup):
        params, state, l = step(params, state, xs[i % n], ys[i % n])
    if l is not None:
        l.block_until_ready()
    t0 = time.perf_counter()
    for i in range(steps):
        params, state, l = step(params, state, xs[i % n], ys[i % n])
    l.block_until_ready()
    dt = time.perf_counter() - t0
    print(f"jax {name} batch={batch} examples_per_s={steps*batch/dt:.0f} "
          f"ms_per_step={1000*dt/steps:.3f} final_loss={float(l):.4f}")


def time_sgd_momentum(name, loss_fn, params, xs, ys, batch, steps, warmup):
    """The SGD-momentum step (lr 0.05, momentum 0.9) of the MLP and paper-CNN peers."""
    time_step(name, loss_fn, params, xs, ys, batch, steps, warmup, sgd_momentum(0.05, 0.9))
