"""Peer of `scaling-lab bench --peer`: the training step of the mnist-cnn-sgd preset's small CNN in JAX (CPU).

The model is the lab's exactly (small_cnn.py): input 14x14x1 (MNIST 28x28 average-pooled 2x2), 5x5 "same"
conv with 8 channels -> 2x2 max-pool -> bias + ReLU, 5x5 conv with 16 channels -> pool -> bias + ReLU,
flatten (h, w, c) = 3*3*16 = 144, dense 32 + ReLU, dense 10; mean softmax cross-entropy; plain SGD
(lr 0.2, the preset's default). Random data (8 pre-made batches cycled, as the lab's side).
The timed step is `peer_step.py`'s. usage: python jax_small_cnn_step.py [batch] [steps]
Prints one line: 'jax small-cnn batch=B examples_per_s=X ms_per_step=Y final_loss=L'.
"""
import sys

import jax
import optax

import small_cnn
from peer_step import sgd, time_step

B = int(sys.argv[1]) if len(sys.argv) > 1 else 128
STEPS = int(sys.argv[2]) if len(sys.argv) > 2 else 100

key = jax.random.PRNGKey(0)
k0, k1, k2 = jax.random.split(key, 3)
params = small_cnn.init(k0, (14, 14, 1), (8, 16), 32, 10)
xs = jax.random.uniform(k1, (8, B, 14, 14, 1), minval=-1.0, maxval=1.0)
ys = jax.random.randint(k2, (8, B), 0, 10)


def loss_fn(p, x, y):
    return optax.softmax_cross_entropy_with_integer_labels(small_cnn.forward(p, x), y).mean()


time_step("small-cnn", loss_fn, params, xs, ys, B, STEPS, warmup=10, opt=sgd(0.2))
