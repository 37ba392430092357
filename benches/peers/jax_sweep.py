"""Peer of `scaling-lab bench --sweep-peer`: a whole steps-to-target sweep of an MLP image preset in JAX (CPU).

The same protocol as the lab's sweep, trial for trial: the bench writes the preset's own train/validation
split and the lab's trial plan (batch size, learning rate, momentum or Adam's betas, schedule, seed of every
trial, in the lab's order) to a directory, and this script trains every trial with
* the same model (MLP, ReLU, weights and biases uniform in +-1/sqrt(fan_in)), softmax cross-entropy;
* the same optimizer semantics (SGD; heavy-ball or Nesterov momentum with dampening 0; Adam), the
  learning rate of the lab's schedule (linear warmup, linear decay to alpha) at every step;
* the same data order rule (a fresh permutation each epoch, batches taken in order across epochs);
* the same stopping rule: evaluate at the lab's evaluation steps (every `eval_every` steps, growing by
  `eval_growth`, and the last step of the budget), stop when the validation error <= target, when the
  training loss is non-finite or above `divergence_factor` x the first loss, or at the step budget;
  and the lab's early stopping: a trial at batch size B runs at most as many steps as the best
  steps-to-target already measured at B (it can no longer be the best one).
Written the way a JAX user would: one jitted train step per batch size (the learning rate is an argument,
so no recompilation per trial), the training set on the device, indices drawn on the host, losses read
back once per evaluation interval (asynchronous dispatch in between).

usage: python jax_sweep.py DIR      (DIR holds plan.json and the split as raw little-endian arrays)
Prints one JSON line per trial and a last line
'jax sweep trials=N wall_s=W compile_s=C' (W: from the first trial's start, imports excluded;
C: the first step of each new jitted shape, compilation included).
"""
import json
import math
import os
import sys
import time

import numpy as np
import jax
import jax.numpy as jnp
import optax


def main(d):
    plan = json.load(open(os.path.join(d, "plan.json")))
    f = plan["features"]
    xtr = np.fromfile(os.path.join(d, "train_x.f32"), dtype="<f4").reshape(-1, f)
    ytr = np.fromfile(os.path.join(d, "train_y.i32"), dtype="<i4")
    xva = np.fromfile(os.path.join(d, "val_x.f32"), dtype="<f4").reshape(-1, f)
    yva = np.fromfile(os.path.join(d, "val_y.i32"), dtype="<i4")
    xtr_d, ytr_d = jnp.asarray(xtr), jnp.asarray(ytr)
    xva_d, yva_d = jnp.asarray(xva), jnp.asarray(yva)
    sizes = [f] + plan["hidden"] + [plan["classes"]]
    kind = plan["optimizer"]

    def init(seed):
        key = jax.random.PRNGKey(seed)
        params = []
        for din, dout in zip(sizes[:-1], sizes[1:]):
            key, kw, kb = jax.random.split(key, 3)
            bound = 1.0 / math.sqrt(din)
            params.append((jax.random.uniform(kw, (din, dout), minval=-bound, maxval=bound),
                           jax.random.uniform(kb, (dout,), minval=-bound, maxval=bound)))
        return params

    def forward(params, x):
        for i, (w, b) in enumerate(params):
            x = x @ w + b
            if i < len(params) - 1:
                x = jax.nn.relu(x)
        return x

    def loss_fn(params, idx):
        logits = forward(params, xtr_d[idx])
        return optax.softmax_cross_entropy_with_integer_labels(logits, ytr_d[idx]).mean()

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

    @jax.jit
    def val_errors(params):
        return jnp.sum(jnp.argmax(forward(params, xva_d), axis=-1) != yva_d)

    def lr_at(t, s):
        lr = t["learning_rate"]
        w = t["warmup_steps"]
        warm = (s + 1) / w if w > 0 and s < w else 1.0
        dec = t["decay"]
        if dec["kind"] == "linear":
            a, n = dec["alpha"], dec["steps"]
            frac = min(s / n, 1.0) if n > 0 else 1.0
            decay = 1.0 - (1.0 - a) * frac
        else:
            decay = 1.0
        return lr * warm * decay

    def next_eval(last):
        e, g = plan["eval_every"], plan["eval_growth"]
        if last == 0:
            return e
        if g > 0:
            return max(last + e, math.ceil(last * (1 + g) - 1e-9))
        return last + e

    n_train, n_val = len(ytr), len(yva)
    t0 = time.perf_counter()
    compile_s = 0.0
    best = {}
    for t in plan["trials"]:
        b = t["batch_size"]
        budget = t["budget"]
        if plan["early_stopping"] and b in best and best[b] < budget:
            budget = best[b]
        rng = np.random.default_rng(t["seed"])
        perm, pos = rng.permutation(n_train), 0
        params = init(t["seed"] & 0x7FFFFFFF)
        new_shape = (t["batch_size"], t["momentum"], t["beta2"], t["epsilon"]) not in steps
        tx, step = step_fn(t)
        state = tx.init(params)
        applied, first, outcome, losses = 0, None, None, []
        nxt = next_eval(0)
        while outcome is None:
            until = min(nxt, budget)
            while applied < until:
                idx = np.empty(b, dtype=np.int32)
                k = 0
                while k < b:
                    if pos == n_train:
                        rng.shuffle(perm)
                        pos = 0
                    take = min(b - k, n_train - pos)
                    idx[k:k + take] = perm[pos:pos + take]
                    pos += take
                    k += take
                c0 = time.perf_counter()
                params, state, l = step(params, state, idx, lr_at(t, applied))
                if applied == 0 and new_shape:
                    l.block_until_ready()
                    compile_s += time.perf_counter() - c0
                losses.append(l)
                applied += 1
            ls = np.asarray(jnp.stack(losses))
            losses = []
            if first is None:
                first = float(ls[0])
            if not np.all(np.isfinite(ls)) or np.any(ls > plan["divergence_factor"] * max(first, 1e-6)):
                outcome = ("diverged", applied)
                break
            err = float(val_errors(params)) / n_val
            if not math.isfinite(err):
                outcome = ("diverged", applied)
            elif err <= plan["target"]:
                outcome = ("reached", applied)
            elif applied >= budget:
                outcome = ("not_reached", applied)
            nxt = next_eval(applied)
        if outcome[0] == "reached":
            best[b] = min(best.get(b, outcome[1]), outcome[1])
        print(json.dumps({"trial_id": t["trial_id"], "batch_size": b, "outcome": outcome[0],
                          "steps": outcome[1]}), flush=True)
    wall = time.perf_counter() - t0
    print(f"jax sweep trials={len(plan['trials'])} wall_s={wall:.3f} compile_s={compile_s:.3f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
