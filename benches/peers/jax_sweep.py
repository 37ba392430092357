"""Peer of `scaling-lab bench --sweep-peer`: a whole steps-to-target sweep of an image preset in JAX (CPU),
trial by trial (the MLP presets digits-mlp-*, and the small-CNN presets mnist-cnn-*, fashion-cnn-*).

The same protocol as the lab's sweep, trial for trial: the bench writes the preset's own train/validation
split and the lab's trial plan (batch size, learning rate, momentum or Adam's betas, schedule, seed of every
trial, in the lab's order) to a directory (format and rules: sweep_protocol.py), and this script trains every
trial with
* the same model (MLP: ReLU, weights and biases uniform in +-1/sqrt(fan_in); CNN: small_cnn.py, the lab's
  exactly), softmax cross-entropy;
* the same optimizer semantics (SGD; heavy-ball or Nesterov momentum with dampening 0; Adam), the
  learning rate of the lab's schedule (linear warmup, linear decay to alpha) at every step;
* the same data order rule, evaluation steps and stopping rule (sweep_protocol.py);
  and the lab's early stopping: a trial at batch size B runs at most as many steps as the best
  steps-to-target already measured at B (it can no longer be the best one).
Written the way a JAX user would: one jitted train step per batch size (the learning rate is an argument,
so no recompilation per trial), the training set on the device, indices drawn on the host, losses read
back once per evaluation interval (asynchronous dispatch in between).
The vmapped version (all trials of a batch size in one program): jax_sweep_vmap.py.

usage: python jax_sweep.py DIR
Prints one JSON line per trial and a last line
'jax sweep trials=N wall_s=W compile_s=C' (W: from the first trial's start, imports and data loading
excluded; C: the first step of each new jitted shape, compilation included).
"""
import sys
import time

import numpy as np
import jax
import jax.numpy as jnp
import optax

from sweep_protocol import IndexStream, Protocol, trial_line


def main(d):
    P = Protocol(d)
    plan = P.plan
    kind = P.optimizer

    def loss_fn(params, idx):
        logits = P.forward(params, P.xtr[idx])
        return optax.softmax_cross_entropy_with_integer_labels(logits, P.ytr_d[idx]).mean()

    def transform(t):
        if kind == "adam":
            return optax.scale_by_adam(b1=t["momentum"], b2=t["beta2"], eps=t["epsilon"])
        if kind in ("momentum", "nesterov"):
            return optax.trace(decay=t["momentum"], nesterov=(kind == "nesterov"))
        return optax.identity()

    steps = {}  # one jitted step per (batch size, optimizer hyper-parameters that shape the state)

    def step_fn(t):
        key = (t["batch_size"], t["momentum"], t["beta2"], t["epsilon"])
        if key not in steps:
            tx = transform(t)

            @jax.jit
            def step(params, state, idx, lr):
                l, g = jax.value_and_grad(loss_fn)(params, idx)
                u, state = tx.update(g, state, params)
                params = jax.tree_util.tree_map(lambda p, u: p - lr * u, params, u)
                return params, state, l

            steps[key] = (tx, step)
        return steps[key]

    val_errors = jax.jit(P.val_error_count)

    t0 = time.perf_counter()
    compile_s = 0.0
    best = {}
    for t in plan["trials"]:
        b = t["batch_size"]
        budget = t["budget"]
        if plan["early_stopping"] and b in best and best[b] < budget:
            budget = best[b]
        stream = IndexStream(t["seed"], P.n_train)
        params = P.init(t["seed"])
        new_shape = (t["batch_size"], t["momentum"], t["beta2"], t["epsilon"]) not in steps
        tx, step = step_fn(t)
        state = tx.init(params)
        applied, first, outcome, losses = 0, None, None, []
        nxt = P.next_eval(0)
        while outcome is None:
            until = min(nxt, budget)
            while applied < until:
                idx = stream.next(b)
                c0 = time.perf_counter()
                params, state, l = step(params, state, idx, P.lr_at(t, applied))
                if applied == 0 and new_shape:
                    l.block_until_ready()
                    compile_s += time.perf_counter() - c0
                losses.append(l)
                applied += 1
            ls = np.asarray(jnp.stack(losses))
            losses = []
            if first is None:
                first = float(ls[0])
            if P.diverged(ls, first):
                outcome = ("diverged", applied)
                break
            err = float(val_errors(params)) / P.n_val
            if not np.isfinite(err):
                outcome = ("diverged", applied)
            elif err <= plan["target"]:
                outcome = ("reached", applied)
            elif applied >= budget:
                outcome = ("not_reached", applied)
            nxt = P.next_eval(applied)
        if outcome[0] == "reached":
            best[b] = min(best.get(b, outcome[1]), outcome[1])
        print(trial_line(t, *outcome), flush=True)
    wall = time.perf_counter() - t0
    print(f"jax sweep trials={len(plan['trials'])} wall_s={wall:.3f} compile_s={compile_s:.3f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
