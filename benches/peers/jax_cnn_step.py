"""Peer anchor for `cargo bench`: Shallue et al.'s MNIST simple CNN training step in JAX/XLA (CPU).

28x28x1 input, 5x5 "same" convs with 32 and 64 channels, ReLU and 2x2 max-pool after each, dense 1024 + ReLU,
dense 10, softmax cross-entropy, SGD momentum 0.9, on random data (8 pre-made batches cycled).
The timed step is `peer_step.py`'s. usage: python jax_cnn_step.py [batch] [steps]
Prints one line: 'jax cnn-paper batch=B examples_per_s=X ms_per_step=Y final_loss=L'.
"""
import sys
import jax, jax.numpy as jnp, optax

from peer_step import time_sgd_momentum

B = int(sys.argv[1]) if len(sys.argv) > 1 else 128
STEPS = int(sys.argv[2]) if len(sys.argv) > 2 else 30

key = jax.random.PRNGKey(0)
ks = jax.random.split(key, 6)
def u(k, shape, fan_in):
    b = 1.0 / fan_in ** 0.5
    return jax.random.uniform(k, shape, minval=-b, maxval=b)
params = {
    "c1": u(ks[0], (5, 5, 1, 32), 25), "b1": jnp.zeros(32),
    "c2": u(ks[1], (5, 5, 32, 64), 800), "b2": jnp.zeros(64),
    "w3": u(ks[2], (7 * 7 * 64, 1024), 3136), "b3": jnp.zeros(1024),
    "w4": u(ks[3], (1024, 10), 1024), "b4": jnp.zeros(10),
}
xs = jax.random.uniform(ks[4], (8, B, 28, 28, 1))
ys = jax.random.randint(ks[5], (8, B), 0, 10)

def conv(x, w, b):
    y = jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return y + b

def pool(x):
    return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")

def loss_fn(p, x, y):
    h = pool(jax.nn.relu(conv(x, p["c1"], p["b1"])))
    h = pool(jax.nn.relu(conv(h, p["c2"], p["b2"])))
    h = jax.nn.relu(h.reshape(h.shape[0], -1) @ p["w3"] + p["b3"])
    logits = h @ p["w4"] + p["b4"]
    return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

time_sgd_momentum("cnn-paper", loss_fn, params, xs, ys, B, STEPS, warmup=5)
