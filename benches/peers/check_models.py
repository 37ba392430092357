"""Checks that the JAX peers' models are the lab's: runs small_cnn.forward and char_lstm.forward on the lab's own
initial parameters and input, and compares the logits and the mean cross-entropy with the lab's.

usage: SCALING_LAB_PEER_CHECK_DIR=DIR cargo bench --bench peer_models
       python check_models.py DIR
Prints one line per model: 'MODEL: max |logits - lab| = X (of max |logit| Y), loss lab L1 jax L2' and
exits 1 if a difference exceeds 1e-4 (relative to the largest logit).
"""
import json
import os
import sys

import numpy as np
import jax.numpy as jnp
import optax

import char_lstm
import small_cnn


def main(d):
    bad = False
    for name in ("small-cnn", "char-lstm"):
        r = json.load(open(os.path.join(d, f"{name}.json")))
        p = {k: jnp.asarray(np.asarray(v, np.float32)) for k, v in r["params"].items()}
        y = jnp.asarray(r["y"])
        if name == "small-cnn":
            c, h, w = r["shape"]
            k = 5
            for conv in ("c1", "c2"):
                # the lab's gemm layout [k*k*cin, cout] is HWIO flattened
                cout = p["b1" if conv == "c1" else "b2"].shape[0]
                p[conv] = p[conv].reshape(k, k, -1, cout)
            p["w3"] = p["w3"].reshape(-1, p["b3"].shape[0])
            p["w4"] = p["w4"].reshape(-1, p["b4"].shape[0])
            x = jnp.asarray(np.asarray(r["x"], np.float32)).reshape(-1, c, h, w).transpose(0, 2, 3, 1)
            logits = small_cnn.forward(p, x)
        else:
            t = r["seq_len"]
            e = p["embed"].size // 256
            p["embed"] = p["embed"].reshape(256, e)
            p["wx"] = p["wx"].reshape(e, -1)
            hidden = p["wx"].shape[1] // 4
            p["wh"] = p["wh"].reshape(hidden, -1)
            p["wo"] = p["wo"].reshape(hidden, -1)
            x = jnp.asarray(r["x"]).reshape(-1, t)
            y = y.reshape(-1, t)
            logits = char_lstm.forward(p, x)
        loss = float(optax.softmax_cross_entropy_with_integer_labels(logits, y).mean())
        lab = np.asarray(r["logits"], np.float32).reshape(-1)
        ours = np.asarray(logits, np.float32).reshape(-1)
        diff = float(np.max(np.abs(lab - ours)))
        scale = float(np.max(np.abs(lab)))
        print(f"{name}: max |logits - lab| = {diff:.2e} (of max |logit| {scale:.3f}), "
              f"loss lab {r['loss']:.6f} jax {loss:.6f}")
        bad |= diff > 1e-4 * max(scale, 1.0) or abs(loss - r["loss"]) > 1e-4
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main(sys.argv[1])
