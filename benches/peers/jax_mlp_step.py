"""Peer anchor for `cargo bench`: the MLP 784-H-10 SGD-momentum training step in JAX (CPU).

The model and data of the lab's shared JAX peer (jax_mlp_step.py), kept here so the bench does
not depend on another checkout; the timed step is `peer_step.py`'s. usage: python jax_mlp_step.py [batch] [steps] [hidden]
Prints one line: 'jax mlp784-H-10 batch=B examples_per_s=X ms_per_step=Y final_loss=L'.
"""
import sys
import jax, jax.numpy as jnp, optax

from peer_step import time_sgd_momentum

B = int(sys.argv[1]) if len(sys.argv) > 1 else 128
STEPS = int(sys.argv[2]) if len(sys.argv) > 2 else 300
H = int(sys.argv[3]) if len(sys.argv) > 3 else 256

key = jax.random.PRNGKey(0)
k1, k2, k3, k4 = jax.random.split(key, 4)
params = {
    "w1": jax.random.normal(k1, (784, H)) * (1 / 28.0), "b1": jnp.zeros(H),
    "w2": jax.random.normal(k2, (H, 10)) * (1 / H**0.5), "b2": jnp.zeros(10),
}
teacher = jax.random.normal(k3, (784, 10))
xs = jax.random.normal(k4, (8, B, 784))
ys = jnp.argmax(xs @ teacher, axis=-1)

def loss_fn(p, x, y):
    h = jax.nn.relu(x @ p["w1"] + p["b1"])
    logits = h @ p["w2"] + p["b2"]
    return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

time_sgd_momentum(f"mlp784-{H}-10", loss_fn, params, xs, ys, B, STEPS, warmup=20)
