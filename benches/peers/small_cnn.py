"""The lab's small CNN (`ModelSpec::Cnn`, presets mnist-cnn-*, fashion-cnn-*) in JAX, shared by the
step peer (jax_small_cnn_step.py) and the sweep peers (jax_sweep.py, jax_sweep_vmap.py).

Exactly the lab's `Cnn` (src/model/mod.rs) and `ConvPool` / `Dense` (src/model/layers.rs):
* input NHWC (the lab's NCHW images with C = 1 are the same values);
* block = 5x5 convolution, "same" zero padding, stride 1, cross-correlation, *no bias inside*;
  2x2 max-pool, stride 2, floor (an odd last row/column is dropped); then + bias and ReLU
  (pooling before bias + ReLU is the same function as conv + bias -> ReLU -> pool: both are
  monotone per channel; the lab pools first, on a quarter of the elements);
* the convolution weight in HWIO = the lab's gemm layout [k*k*cin, cout] (row (kh*k + kw)*cin + c);
* flatten the pooled [N, h, w, c] in (h, w, c) order, dense + ReLU, dense (logits);
* every weight and bias uniform in +-1/sqrt(fan_in) (conv: fan_in = cin*k*k), as the lab draws them
  (with jax.random: the same distribution, not the same numbers).
"""
import math

import jax
import jax.numpy as jnp


def init(key, shape_hwc, channels, dense, classes, k=5):
    h, w, cin = shape_hwc
    c1, c2 = channels
    ks = jax.random.split(key, 8)

    def u(kk, shp, fan_in):
        b = 1.0 / math.sqrt(fan_in)
        return jax.random.uniform(kk, shp, minval=-b, maxval=b)

    flat = (h // 2 // 2) * (w // 2 // 2) * c2
    return {
        "c1": u(ks[0], (k, k, cin, c1), cin * k * k), "b1": u(ks[1], (c1,), cin * k * k),
        "c2": u(ks[2], (k, k, c1, c2), c1 * k * k), "b2": u(ks[3], (c2,), c1 * k * k),
        "w3": u(ks[4], (flat, dense), flat), "b3": u(ks[5], (dense,), flat),
        "w4": u(ks[6], (dense, classes), dense), "b4": u(ks[7], (classes,), dense),
    }


def max_pool_2x2(y):
    """2x2 max-pool, stride 2, floor: [N, H, W, C] -> [N, H//2, W//2, C].

    As the lab pools (a reshape and a max over the pairs). The same values as
    `lax.reduce_window(y, -inf, max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")` (flax's nn.max_pool), whose
    backward (select-and-scatter) made the small CNN's XLA:CPU step ~20-25 % slower here.
    """
    n, h, w, c = y.shape
    h2, w2 = h // 2, w // 2
    return y[:, :2 * h2, :2 * w2, :].reshape(n, h2, 2, w2, 2, c).max(axis=(2, 4))


def conv_pool(x, w, b):
    """[N, H, W, Cin] -> [N, H//2, W//2, Cout]: conv (same), 2x2 max-pool (floor), + b, ReLU."""
    y = jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return jax.nn.relu(max_pool_2x2(y) + b)


def forward(p, x):
    """x: [N, H, W, C] -> logits [N, classes]."""
    h = conv_pool(x, p["c1"], p["b1"])
    h = conv_pool(h, p["c2"], p["b2"])
    h = jax.nn.relu(h.reshape(h.shape[0], -1) @ p["w3"] + p["b3"])
    return h @ p["w4"] + p["b4"]
