"""Peer of `scaling-lab bench --sweep-peer --vmap`: the same steps-to-target sweep as jax_sweep.py, written the
way a JAX user would for many trials: the trials of each batch size vmapped into one jitted program.

Protocol and rules: sweep_protocol.py (the plan the lab writes out: every trial's metaparameters, seed and
budget, the split, the evaluation cadence, the stopping rule). Per group of trials (same batch size and
budget, in the plan's order of first appearance):
* the K trials' parameters and optimizer states are stacked along a leading trial axis; learning rates
  (one per trial and step: the lab's schedule), momentum / Adam's betas and epsilon are arrays along
  that axis, so one compiled program serves every trial of the group;
* each trial keeps its own initial weights (PRNGKey(seed)) and its own data order (IndexStream(seed)),
  exactly as in the trial-by-trial script: the index batches [steps, K, B] are drawn on the host;
* the jitted program is the vmapped train step of all K trials (a trial that has stopped is masked:
  its parameters and state are kept), dispatched asynchronously step after step; at an evaluation the
  vmapped validation errors of all K trials (a second program, compiled once per K); the host reads
  the K x steps losses and K errors once per evaluation, as the trial-by-trial script does. (A
  `lax.fori_loop` over the steps of an evaluation interval inside one program was tried: on the
  digits protocol it compiled ~2x longer per batch size, ~1 s against ~0.4 s, and ran no faster.)
* the stopping rule per trial is the trial-by-trial one (divergence on the losses since the last
  evaluation, target, budget), at the same evaluation steps;
* early stopping in a lockstep group: at the first evaluation where a member reaches the target,
  every other running member is cut there (not reached, unless it reached at that same evaluation):
  no trial can be the best after that step, so S(B) = the earliest reach, as with the sequential
  rule (a trial runs at most the best steps-to-target already measured at its batch size). A later
  group at the same batch size starts with its budget capped at the best so far, as the sequential
  script does.
S(B) therefore follows the trial-by-trial script's rule exactly; per-trial outcomes differ only for
trials cut by early stopping (cut at the first reach instead of at the best reach before them).

usage: python jax_sweep_vmap.py DIR
Prints one JSON line per trial and a last line
'jax sweep trials=N wall_s=W compile_s=C groups=G mode=vmap' (W: from the first group's start,
imports and data loading excluded; C: compiling the groups' programs, ahead of time).
"""
import sys
import time

import numpy as np
import jax
import jax.numpy as jnp
import optax

from sweep_protocol import IndexStream, Protocol, trial_line


def eval_steps(P, budget):
    """The evaluation steps of a trial with this budget (the last one is the budget)."""
    out, applied, nxt = [], 0, P.next_eval(0)
    while applied < budget:
        applied = min(nxt, budget)
        out.append(applied)
        nxt = P.next_eval(applied)
    return out


def main(d):
    P = Protocol(d)
    plan = P.plan
    kind = P.optimizer

    def loss_fn(params, idx):
        logits = P.forward(params, P.xtr[idx])
        return optax.softmax_cross_entropy_with_integer_labels(logits, P.ytr_d[idx]).mean()

    def make_tx(hp):
        mom, beta2, eps = hp[0], hp[1], hp[2]
        if kind == "adam":
            return optax.scale_by_adam(b1=mom, b2=beta2, eps=eps)
        if kind in ("momentum", "nesterov"):
            return optax.trace(decay=mom, nesterov=(kind == "nesterov"))
        return optax.identity()

    def trial_init(params, hp):
        return make_tx(hp).init(params)

    def trial_step(params, state, hp, idx, lr, live):
        l, g = jax.value_and_grad(loss_fn)(params, idx)
        u, new_state = make_tx(hp).update(g, state, params)
        new_params = jax.tree_util.tree_map(lambda p, u: p - lr * u, params, u)
        keep = lambda new, old: jnp.where(live, new, old)
        return (jax.tree_util.tree_map(keep, new_params, params),
                jax.tree_util.tree_map(keep, new_state, state), l)

    run_step = jax.jit(jax.vmap(trial_step), donate_argnums=(0, 1))
    run_errors = jax.jit(jax.vmap(P.val_error_count))
    compiled_errors = {}  # per group size (the validation program does not depend on B)

    # groups: trials of the same batch size and budget, in the order the plan first names them
    groups = {}
    for t in plan["trials"]:
        groups.setdefault((t["batch_size"], t["budget"]), []).append(t)

    t0 = time.perf_counter()
    compile_s = 0.0
    best = {}
    stack = lambda trees: jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *trees)
    for (b, budget), trials in groups.items():
        if plan["early_stopping"] and b in best and best[b] < budget:
            budget = best[b]
        k = len(trials)
        evals = eval_steps(P, budget)
        hp = jnp.asarray([[t["momentum"], t["beta2"], t["epsilon"]] for t in trials], jnp.float32)
        params = stack([P.init(t["seed"]) for t in trials])
        state = jax.vmap(trial_init)(params, hp)
        streams = [IndexStream(t["seed"], P.n_train) for t in trials]
        live = np.ones(k, bool)
        c0 = time.perf_counter()
        step = run_step.lower(params, state, hp, np.zeros((k, b), np.int32), np.zeros(k, np.float32),
                              live).compile()
        if k not in compiled_errors:
            compiled_errors[k] = run_errors.lower(params).compile()
        errors = compiled_errors[k]
        compile_s += time.perf_counter() - c0
        first = [None] * k
        outcome = [None] * k
        applied = 0
        for until in evals:
            losses = []
            mask = live.copy()
            for s in range(applied, until):
                # fresh host arrays every step: the dispatch is asynchronous (and may alias them)
                idx = np.zeros((k, b), np.int32)
                lr = np.zeros(k, np.float32)
                for j in range(k):
                    if live[j]:
                        streams[j].next(b, idx[j])
                        lr[j] = P.lr_at(trials[j], s)
                params, state, l = step(params, state, hp, idx, lr, mask)
                losses.append(l)
            losses = np.asarray(jnp.stack(losses))
            errs = np.asarray(errors(params))
            applied = until
            reached_here = False
            for j in range(k):
                if not live[j]:
                    continue
                if first[j] is None:
                    first[j] = float(losses[0, j])
                err = errs[j] / P.n_val
                if P.diverged(losses[:, j], first[j]) or not np.isfinite(err):
                    outcome[j] = ("diverged", applied)
                elif err <= plan["target"]:
                    outcome[j] = ("reached", applied)
                    reached_here = True
                elif applied >= budget:
                    outcome[j] = ("not_reached", applied)
            if reached_here:
                best[b] = min(best.get(b, applied), applied)
                if plan["early_stopping"]:
                    # no other member can be the best after this step
                    for j in range(k):
                        if outcome[j] is None:
                            outcome[j] = ("not_reached", applied)
            for j in range(k):
                live[j] = outcome[j] is None
            if not live.any():
                break
        for t, o in zip(trials, outcome):
            print(trial_line(t, *o), flush=True)
    wall = time.perf_counter() - t0
    print(f"jax sweep trials={len(plan['trials'])} wall_s={wall:.3f} compile_s={compile_s:.3f} "
          f"groups={len(groups)} mode=vmap", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
