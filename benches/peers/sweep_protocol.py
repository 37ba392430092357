"""Shared by the sweep peers (jax_sweep.py: trial by trial; jax_sweep_vmap.py: the trials of a batch size
vmapped): the protocol `scaling-lab bench --sweep-peer` writes out, read the same way by both.

DIR holds plan.json and the preset's own train/validation split as raw little-endian arrays
(train_x.f32, train_y.i32, val_x.f32, val_y.i32; images row-major n x c x h x w). plan.json: the model
({"kind": "mlp", "hidden": [...]} or {"kind": "cnn", "channels": [c1, c2], "dense": d}), the image shape
[c, h, w], the classes, the optimizer kind, the evaluation cadence (eval_every, eval_growth), the
target (validation error), the divergence factor, early stopping, and every trial in the lab's order
(batch size, learning rate, momentum or Adam's beta1, beta2, epsilon, warmup, decay, seed, step budget).

The rules both scripts follow (the lab's, src/train/trainer.rs and src/sweep/scheduler.rs):
* a trial's initial weights from jax.random.PRNGKey(seed & 0x7fffffff) (uniform +-1/sqrt(fan_in): the
  lab's distribution, not its numbers);
* its data order: numpy default_rng(seed), a fresh permutation each epoch, batches taken in order
  across epoch boundaries (`IndexStream`);
* the learning rate at step s: linear warmup (s+1)/w over w steps, times linear decay to alpha over
  `steps` (`lr_at`);
* evaluations at eval_every, then max(last + eval_every, ceil(last * (1 + eval_growth))) (`next_eval`),
  and at the last step of the budget;
* a trial ends at an evaluation where the validation error <= target (reached), where a training loss
  since the last evaluation is non-finite or > divergence_factor x max(first loss, 1e-6) or the
  validation error is non-finite (diverged), or at its budget (not reached).
"""
import json
import math
import os

import numpy as np
import jax
import jax.numpy as jnp

import small_cnn


class Protocol:
    def __init__(self, d):
        plan = json.load(open(os.path.join(d, "plan.json")))
        self.plan = plan
        c, h, w = plan["image"]
        f = c * h * w
        xtr = np.fromfile(os.path.join(d, "train_x.f32"), dtype="<f4").reshape(-1, f)
        xva = np.fromfile(os.path.join(d, "val_x.f32"), dtype="<f4").reshape(-1, f)
        self.ytr = np.fromfile(os.path.join(d, "train_y.i32"), dtype="<i4")
        self.yva = np.fromfile(os.path.join(d, "val_y.i32"), dtype="<i4")
        self.model = plan["model"]
        self.classes = plan["classes"]
        self.image = (c, h, w)
        if self.model["kind"] == "cnn":
            # NCHW rows -> NHWC, once (the lab's CNN runs on NHWC activations too)
            xtr = xtr.reshape(-1, c, h, w).transpose(0, 2, 3, 1)
            xva = xva.reshape(-1, c, h, w).transpose(0, 2, 3, 1)
        self.xtr, self.xva = jnp.asarray(xtr), jnp.asarray(xva)
        self.ytr_d, self.yva_d = jnp.asarray(self.ytr), jnp.asarray(self.yva)
        self.n_train, self.n_val = len(self.ytr), len(self.yva)
        self.optimizer = plan["optimizer"]
        self.trials = plan["trials"]

    def init(self, seed):
        """A trial's initial parameters."""
        key = jax.random.PRNGKey(seed & 0x7FFFFFFF)
        if self.model["kind"] == "cnn":
            c, h, w = self.image
            return small_cnn.init(key, (h, w, c), tuple(self.model["channels"]), self.model["dense"],
                                  self.classes)
        sizes = [int(np.prod(self.image))] + self.model["hidden"] + [self.classes]
        params = []
        for din, dout in zip(sizes[:-1], sizes[1:]):
            key, kw, kb = jax.random.split(key, 3)
            bound = 1.0 / math.sqrt(din)
            params.append((jax.random.uniform(kw, (din, dout), minval=-bound, maxval=bound),
                           jax.random.uniform(kb, (dout,), minval=-bound, maxval=bound)))
        return params

    def forward(self, params, x):
        if self.model["kind"] == "cnn":
            return small_cnn.forward(params, x)
        for i, (w, b) in enumerate(params):
            x = x @ w + b
            if i < len(params) - 1:
                x = jax.nn.relu(x)
        return x

    def val_error_count(self, params):
        """Misclassified validation examples (traceable)."""
        return jnp.sum(jnp.argmax(self.forward(params, self.xva), axis=-1) != self.yva_d)

    @staticmethod
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

    def next_eval(self, last):
        e, g = self.plan["eval_every"], self.plan["eval_growth"]
        if last == 0:
            return e
        if g > 0:
            return max(last + e, math.ceil(last * (1 + g) - 1e-9))
        return last + e

    def diverged(self, losses, first):
        """The divergence rule on the training losses since the last evaluation."""
        return (not np.all(np.isfinite(losses))
                or np.any(losses > self.plan["divergence_factor"] * max(first, 1e-6)))


class IndexStream:
    """A trial's training-example order: default_rng(seed), a fresh permutation each epoch."""

    def __init__(self, seed, n):
        self.rng = np.random.default_rng(seed)
        self.n = n
        self.perm = self.rng.permutation(n)
        self.pos = 0

    def next(self, b, out=None):
        idx = np.empty(b, dtype=np.int32) if out is None else out
        k = 0
        while k < b:
            if self.pos == self.n:
                self.rng.shuffle(self.perm)
                self.pos = 0
            take = min(b - k, self.n - self.pos)
            idx[k:k + take] = self.perm[self.pos:self.pos + take]
            self.pos += take
            k += take
        return idx


def trial_line(t, outcome, steps):
    return json.dumps({"trial_id": t["trial_id"], "batch_size": t["batch_size"], "outcome": outcome,
                       "steps": steps})
