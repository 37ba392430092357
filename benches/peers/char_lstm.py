"""The lab's char-LSTM (`ModelSpec::CharLstm`, preset shakespeare-lstm-adam) in JAX, for the step peer
(jax_char_lstm_step.py) and the model check (check_models.py).

Exactly the lab's `CharLstm` (src/model/lm.rs: `CharLstm::forward`, `unroll`, `lstm_cell`):
* byte embedding [V, E], normal with std 1/sqrt(E);
* input projection for all T steps at once: xg = embed[x] Wx + b ([N, T, 4H]; Wx [E, 4H], b [4H]);
* from a zero state h = c = 0, at every step t: gates = xg_t + h Wh (Wh [H, 4H], no bias), split into
  four chunks of H in the order i, f, o, u; c = sigmoid(f) c + sigmoid(i) tanh(u);
  h = sigmoid(o) tanh(c); the recurrence is a `jax.lax.scan` over time;
* output dense on every h_t: logits = h Wo + bo ([H, V], [V]);
* Wx, b, Wh, Wo, bo uniform in +-1/sqrt(fan_in) (fan_in E for Wx and b, H for Wh, Wo and bo).
"""
import math

import jax
import jax.numpy as jnp


def init(key, vocab, embed, hidden):
    ks = jax.random.split(key, 6)

    def u(k, shape, fan_in):
        b = 1.0 / math.sqrt(fan_in)
        return jax.random.uniform(k, shape, minval=-b, maxval=b)

    v, e, h = vocab, embed, hidden
    return {
        "embed": jax.random.normal(ks[0], (v, e)) / math.sqrt(e),
        "wx": u(ks[1], (e, 4 * h), e), "bx": u(ks[2], (4 * h,), e),
        "wh": u(ks[3], (h, 4 * h), h),
        "wo": u(ks[4], (h, v), h), "bo": u(ks[5], (v,), h),
    }


def forward(p, x):
    """x: [N, T] byte ids -> logits [N, T, V]."""
    n = x.shape[0]
    hidden = p["wh"].shape[0]
    xg = p["embed"][x] @ p["wx"] + p["bx"]  # [N, T, 4H]

    def cell(carry, g_x):
        h, c = carry
        g = g_x + h @ p["wh"]
        i, f, o, u = jnp.split(g, 4, axis=-1)
        c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(u)
        h = jax.nn.sigmoid(o) * jnp.tanh(c)
        return (h, c), h

    zero = jnp.zeros((n, hidden), xg.dtype)
    _, hs = jax.lax.scan(cell, (zero, zero), jnp.swapaxes(xg, 0, 1))  # [T, N, H]
    return jnp.swapaxes(hs, 0, 1) @ p["wo"] + p["bo"]
