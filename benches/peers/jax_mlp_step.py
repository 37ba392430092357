"""Peer anchor for `cargo bench`: the MLP 784-H-10 SGD-momentum training step in JAX (CPU).

A thin wrapper over the shared peer (/work/shared/peers/jax_mlp_step.py, same code inlined here so the
bench does not depend on that path). usage: python jax_mlp_step.py [batch] [steps] [hidden]
Prints one line: 'jax mlp784-H-10 batch=B examples_per_s=X ms_per_step=Y final_loss=L'.
"""
import sys, time
import jax, jax.numpy as jnp, optax

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

opt = optax.sgd(0.05, momentum=0.9)
state = opt.init(params)

@jax.jit
def step(p, s, x, y):
    l, g = jax.value_and_grad(loss_fn)(p, x, y)
    u, s = opt.update(g, s, p)
    return optax.apply_updates(p, u), s, l

for i in range(20):
    params, state, l = step(params, state, xs[i % 8], ys[i % 8])
l.block_until_ready()
t0 = time.perf_counter()
for i in range(STEPS):
    params, state, l = step(params, state, xs[i % 8], ys[i % 8])
l.block_until_ready()
dt = time.perf_counter() - t0
print(f"jax mlp784-{H}-10 batch={B} examples_per_s={STEPS*B/dt:.0f} ms_per_step={1000*dt/STEPS:.3f} final_loss={float(l):.4f}")
