"""Peer of `scaling-lab bench --peer`: the training step of the shakespeare-lstm-adam preset's char-LSTM in JAX (CPU).

The lab's `CharLstm` (src/model/lm.rs) exactly (char_lstm.py): byte embedding 256 x 32 (normal, std
1/sqrt(32)); an LSTM of hidden size 64 from a zero state, gates = x_t Wx + b + h_{t-1} Wh ([N, 4H], chunks in the order
i, f, o, u), c_t = sigmoid(f) c_{t-1} + sigmoid(i) tanh(u), h_t = sigmoid(o) tanh(c_t), the input
projection x Wx + b taken for all T steps at once before the recurrence (as the lab does), the
recurrence a `jax.lax.scan` over time; output dense 64 -> 256 on every h_t; mean softmax
cross-entropy over all N*T positions. Wx, b, Wh, out: uniform +-1/sqrt(fan_in) (Wh has no bias).
Adam (b1 0.9, b2 0.999, eps 1e-8, lr 0.003) after global-norm clipping at 1.0 (`peer_step.adam_clip`).
Random bytes, T = 32 (8 pre-made batches cycled, as the lab's side).
usage: python jax_char_lstm_step.py [batch] [steps] [seq_len]
Prints one line: 'jax char-lstm batch=B examples_per_s=X ms_per_step=Y final_loss=L' (examples = sequences).
"""
import sys

import jax
import optax

import char_lstm
from peer_step import adam_clip, time_step

B = int(sys.argv[1]) if len(sys.argv) > 1 else 128
STEPS = int(sys.argv[2]) if len(sys.argv) > 2 else 50
T = int(sys.argv[3]) if len(sys.argv) > 3 else 32
V, E, H = 256, 32, 64

ks = jax.random.split(jax.random.PRNGKey(0), 2)
params = char_lstm.init(ks[0], V, E, H)
# x and its next-byte targets, like the lab's windows (y = x shifted by one)
seq = jax.random.randint(ks[1], (8, B, T + 1), 0, V)
xs, ys = seq[:, :, :-1], seq[:, :, 1:]


def loss_fn(p, x, y):
    return optax.softmax_cross_entropy_with_integer_labels(char_lstm.forward(p, x), y).mean()


time_step("char-lstm", loss_fn, params, xs, ys, B, STEPS, warmup=5, opt=adam_clip(0.003, 1.0))
