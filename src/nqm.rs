//! The noisy quadratic model (Zhang et al. 2019; docs/science.md §5) as a `TrialRunner`.
//! Layering: imports `workload` and `core` (the same `core::meter` as the trainer), never `train`.
//!
//! Loss `L(x) = ½·Σ h_i·x_i²` with curvature `h_i = 1/i`, i = 1 … d. A mini-batch gradient of size B
//! is `h_i·x_i + ε_i` with `Var ε_i = h_i/B` (per-example gradient covariance Σ = H). The runner does
//! not sample: it propagates the exact second moments per dimension, `X = E x²`, `C = E x·v`,
//! `V = E v²` (v = momentum buffer), through the linear recurrence of the optimizer (the 3×3 system
//! of Zhang et al. eq. 21 plus the noise term), so the expected loss `½·Σ h_i·X_i` is exact.
//!
//! Optimizers, with preconditioner `P = H^(−p)` (p = `precondition_power` for "adam", else 0) so
//! that the curvature seen by the optimizer is `h' = h^(1−p)` and the noise variance `h^(1−2p)/B`:
//! * sgd:       `x ← x − η·g`
//! * momentum:  `v ← γ·v + g; x ← x − η·v` (PyTorch semantics)
//! * nesterov:  `v ← γ·v + g; x ← x − η·(g + γ·v)`
//! * adam-like: `v ← β1·v + (1−β1)·P·g; x ← x − η·v` (a fixed diagonal preconditioner with momentum)
//!
//! Start: `x_i = 1`, `v = 0`. Steps-to-target is the first evaluation step (every `eval_every`
//! steps, as for any workload) at which the expected loss ≤ target. The learning-rate schedule is
//! honoured; where η is constant over an evaluation interval the interval is taken in one jump by
//! squaring the 4×4 augmented transition matrix (so constant-η sweeps cost O(d·log k) per eval).
//! Budget, evaluation cadence, divergence (expected loss non-finite or above `divergence_factor` ×
//! the exact initial loss), target, events and the outcome are the `TrialMeter`'s, as for the Burn
//! trainer. Noise scale: `B_simple = tr(Σ)/E|G|² = Σ h_i / Σ h_i²·X_i`, from the current moments.

use std::time::Instant;

use crate::core::events::TrialEvent;
use crate::core::meter::{MeterOptions, StepSample, TrialMeter};
use crate::core::runner::TrialRunner;
use crate::core::trial::{CancelToken, TrialOutcome, TrialSpec};
use crate::model::ModelSpec;
use crate::workload::spec::{Decay, OptimizerKind, Workload};

/// Closed-form NQM runner.
#[derive(Clone, Copy, Debug, Default)]
pub struct NqmRunner;

impl NqmRunner {
    pub fn new() -> Self {
        NqmRunner
    }
}

type Mat4 = [[f64; 4]; 4];

fn mat_mul(a: &Mat4, b: &Mat4) -> Mat4 {
    let mut r = [[0.0; 4]; 4];
    for i in 0..4 {
        for k in 0..4 {
            let x = a[i][k];
            if x != 0.0 {
                for j in 0..4 {
                    r[i][j] += x * b[k][j];
                }
            }
        }
    }
    r
}

fn mat_pow(m: &Mat4, mut k: u64) -> Mat4 {
    let mut result = [[0.0; 4]; 4];
    for (i, row) in result.iter_mut().enumerate() {
        row[i] = 1.0;
    }
    let mut base = *m;
    while k > 0 {
        if k & 1 == 1 {
            result = mat_mul(&result, &base);
        }
        base = mat_mul(&base, &base);
        k >>= 1;
    }
    result
}

/// Per-dimension constants of the model.
struct Dim {
    h: f64,
    /// Curvature seen by the optimizer, h^(1−p).
    h_eff: f64,
    /// Noise variance of the (preconditioned) gradient at batch size B.
    sigma2: f64,
}

/// The optimizer as coefficients of `v' = e·x + γ·v + f·ε; x' = a·x + b·v + c·ε`.
#[derive(Clone, Copy)]
struct Update {
    opt: OptimizerKind,
    gamma: f64,
}

impl Update {
    /// Augmented transition of (X, C, V, 1) for learning rate `lr` in dimension `d`.
    fn matrix(&self, lr: f64, d: &Dim) -> Mat4 {
        let g = self.gamma;
        let (e, f, a, b, c) = match self.opt {
            OptimizerKind::Sgd => (d.h_eff, 1.0, 1.0 - lr * d.h_eff, 0.0, -lr),
            OptimizerKind::Momentum => (d.h_eff, 1.0, 1.0 - lr * d.h_eff, -lr * g, -lr),
            OptimizerKind::Nesterov => (
                d.h_eff,
                1.0,
                1.0 - lr * (1.0 + g) * d.h_eff,
                -lr * g * g,
                -lr * (1.0 + g),
            ),
            OptimizerKind::Adam => {
                let damp = 1.0 - g;
                (
                    damp * d.h_eff,
                    damp,
                    1.0 - lr * damp * d.h_eff,
                    -lr * g,
                    -lr * damp,
                )
            }
        };
        let s = d.sigma2;
        [
            [a * a, 2.0 * a * b, b * b, c * c * s],
            [a * e, a * g + b * e, b * g, c * f * s],
            [e * e, 2.0 * e * g, g * g, f * f * s],
            [0.0, 0.0, 0.0, 1.0],
        ]
    }
}

fn apply(m: &Mat4, y: &mut [f64; 3]) {
    let (x, c, v) = (y[0], y[1], y[2]);
    y[0] = m[0][0] * x + m[0][1] * c + m[0][2] * v + m[0][3];
    y[1] = m[1][0] * x + m[1][1] * c + m[1][2] * v + m[1][3];
    y[2] = m[2][0] * x + m[2][1] * c + m[2][2] * v + m[2][3];
}

/// The NQM state of one trial.
pub struct NqmState {
    dims: Vec<Dim>,
    y: Vec<[f64; 3]>,
    update: Update,
    sum_h: f64,
}

impl NqmState {
    pub fn new(dim: usize, p: f64, opt: OptimizerKind, momentum: f64, batch: usize) -> Self {
        let p = if opt == OptimizerKind::Adam { p } else { 0.0 };
        let gamma = if opt == OptimizerKind::Sgd {
            0.0
        } else {
            momentum
        };
        let dims: Vec<Dim> = (1..=dim)
            .map(|i| {
                let h = 1.0 / i as f64;
                Dim {
                    h,
                    h_eff: h.powf(1.0 - p),
                    sigma2: h.powf(1.0 - 2.0 * p) / batch as f64,
                }
            })
            .collect();
        NqmState {
            sum_h: dims.iter().map(|d| d.h).sum(),
            y: vec![[1.0, 0.0, 0.0]; dim],
            dims,
            update: Update { opt, gamma },
        }
    }

    /// The momentum γ (β1 of the "adam") this state applies: 0 for SGD.
    pub fn momentum(&self) -> f64 {
        self.update.gamma
    }

    /// Expected loss ½·Σ h_i·E x_i².
    pub fn loss(&self) -> f64 {
        0.5 * self
            .dims
            .iter()
            .zip(&self.y)
            .map(|(d, y)| d.h * y[0])
            .sum::<f64>()
    }

    /// B_simple = tr(Σ)/E|G|² with Σ = H and G = H·x.
    pub fn b_simple(&self) -> f64 {
        let g2: f64 = self
            .dims
            .iter()
            .zip(&self.y)
            .map(|(d, y)| d.h * d.h * y[0])
            .sum();
        self.sum_h / g2
    }

    /// One step at learning rate `lr`.
    pub fn step(&mut self, lr: f64) {
        for (d, y) in self.dims.iter().zip(self.y.iter_mut()) {
            let m = self.update.matrix(lr, d);
            apply(&m, y);
        }
    }

    /// `k` steps at a constant learning rate `lr`.
    pub fn steps_constant(&mut self, lr: f64, k: u64) {
        if k == 0 {
            return;
        }
        if k <= 2 {
            for _ in 0..k {
                self.step(lr);
            }
            return;
        }
        for (d, y) in self.dims.iter().zip(self.y.iter_mut()) {
            let m = mat_pow(&self.update.matrix(lr, d), k);
            apply(&m, y);
        }
    }
}

/// Exact steps-to-target at a constant learning rate: the smallest k ≤ `max_steps` with expected
/// loss ≤ `target` (None if it is not reached or the loss blows up). Uses the powers M^(2^j) per
/// dimension: a doubling search, then a binary search (the loss under a constant η decreases
/// monotonically for SGD; for momentum the search returns a crossing, as in Zhang et al.).
#[allow(clippy::too_many_arguments)]
pub fn exact_steps_to_target(
    dim: usize,
    p: f64,
    opt: OptimizerKind,
    momentum: f64,
    batch: usize,
    lr: f64,
    target: f64,
    max_steps: u64,
) -> Option<u64> {
    let st = NqmState::new(dim, p, opt, momentum, batch);
    let levels = 64 - max_steps.max(1).leading_zeros() as usize;
    // pows[j][i] = M_i^(2^j)
    let mut pows: Vec<Vec<Mat4>> = Vec::with_capacity(levels);
    pows.push(st.dims.iter().map(|d| st.update.matrix(lr, d)).collect());
    for j in 1..levels {
        let next = pows[j - 1].iter().map(|m| mat_mul(m, m)).collect();
        pows.push(next);
    }
    let loss_at = |k: u64| -> f64 {
        let mut total = 0.0;
        for (i, d) in st.dims.iter().enumerate() {
            let mut y = [1.0, 0.0, 0.0];
            for (j, level) in pows.iter().enumerate() {
                if (k >> j) & 1 == 1 {
                    apply(&level[i], &mut y);
                }
            }
            total += d.h * y[0];
        }
        0.5 * total
    };
    let met = |l: f64| l.is_finite() && l <= target;
    let mut hi = 1u64;
    loop {
        let l = loss_at(hi.min(max_steps));
        if met(l) {
            break;
        }
        if !l.is_finite() || hi >= max_steps {
            return None;
        }
        hi *= 2;
    }
    hi = hi.min(max_steps);
    let mut lo = hi / 2; // not met at lo (or lo = 0)
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if met(loss_at(mid)) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

/// The NQM's dimension and preconditioning power, or an error for other models.
pub fn nqm_params(workload: &Workload) -> anyhow::Result<(usize, f64)> {
    match &workload.model {
        ModelSpec::Nqm(s) => {
            let (dim, p) = (s.dim, s.precondition_power);
            anyhow::ensure!(dim > 0, "nqm: dim must be positive");
            anyhow::ensure!(
                (0.0..=1.0).contains(&p),
                "nqm: precondition_power must be in [0, 1] (got {p})"
            );
            Ok((dim, p))
        }
        other => anyhow::bail!(
            "the NQM runner cannot run a {} workload (model kind nqm expected)",
            other.short_name()
        ),
    }
}

impl TrialRunner for NqmRunner {
    fn run(
        &self,
        workload: &Workload,
        spec: &TrialSpec,
        emit: &mut dyn FnMut(TrialEvent),
        cancel: &CancelToken,
    ) -> anyhow::Result<TrialOutcome> {
        let (dim, p) = nqm_params(workload)?;
        anyhow::ensure!(spec.batch_size > 0, "batch size must be positive");
        anyhow::ensure!(workload.eval_every > 0, "eval_every must be positive");
        let m = &spec.metaparams;
        anyhow::ensure!(
            m.learning_rate.is_finite() && m.learning_rate > 0.0,
            "learning rate must be positive (got {})",
            m.learning_rate
        );
        let mut st = NqmState::new(dim, p, workload.optimizer, m.momentum, spec.batch_size);
        let mut meter = TrialMeter::new(
            workload,
            spec,
            MeterOptions {
                params: dim as u64,
                ..Default::default()
            },
        );
        meter.set_initial_loss(st.loss());
        let schedule = &m.schedule;
        let constant_from = schedule.warmup_steps.max(match schedule.decay {
            Decay::Constant => 0,
            Decay::Linear { steps, .. } => steps,
        });
        meter.start(emit);
        let outcome = loop {
            if let Some(o) = meter.should_stop(cancel) {
                break o;
            }
            // Jump to the next evaluation: the expected loss is only observed there.
            let t0 = Instant::now();
            let t = meter.applied();
            let next = meter.next_eval_step();
            if t >= constant_from {
                st.steps_constant(schedule.lr_at(m.learning_rate, t), next - t);
            } else {
                for s in t..next {
                    st.step(schedule.lr_at(m.learning_rate, s));
                }
            }
            let step_s = t0.elapsed().as_secs_f64();
            let loss = st.loss();
            let sample = StepSample {
                applied: next - t,
                attempted: next - t,
                loss,
                lr: schedule.lr_at(m.learning_rate, next.saturating_sub(1)),
                loss_scale: 1.0,
                consecutive_skips: 0,
                step_s,
                compute_s: step_s,
                exchange_s: 0.0,
            };
            if let Some(o) = meter.record(sample) {
                break o;
            }
            meter.set_noise(Some(st.b_simple()));
            if meter.progress(emit) {
                if let Some(o) = meter.eval(loss, emit) {
                    break o;
                }
            }
        };
        Ok(meter.finish(outcome, emit))
    }

    fn backend(&self) -> String {
        "nqm-closed-form".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::trial::Outcome;
    use crate::workload::spec::*;

    pub(crate) fn workload(opt: OptimizerKind, dim: usize, target: f64) -> Workload {
        Workload::nqm(dim, opt, target)
    }

    fn spec(b: usize, lr: f64, momentum: f64) -> TrialSpec {
        TrialSpec::cpu(b, Metaparams::new(lr, momentum))
    }

    #[test]
    fn sgd_matches_the_closed_form() {
        // s_k = s* + (1−ηh)^(2k)(s0 − s*), s* = η/(B(2 − ηh)) for h = 1/i.
        let (lr, b, k) = (0.3, 8usize, 37u64);
        let mut st = NqmState::new(5, 0.0, OptimizerKind::Sgd, 0.0, b);
        st.steps_constant(lr, k);
        let mut st2 = NqmState::new(5, 0.0, OptimizerKind::Sgd, 0.0, b);
        for _ in 0..k {
            st2.step(lr);
        }
        for i in 1..=5 {
            let h = 1.0 / i as f64;
            let s_star = lr / (b as f64 * (2.0 - lr * h));
            let s = s_star + (1.0 - lr * h).powi(2 * k as i32) * (1.0 - s_star);
            assert!(
                (st.y[i - 1][0] - s).abs() < 1e-12,
                "dim {i}: {} vs {s}",
                st.y[i - 1][0]
            );
            assert!((st2.y[i - 1][0] - s).abs() < 1e-12);
        }
    }

    #[test]
    fn momentum_recurrence_matches_monte_carlo_free_check() {
        // Deterministic check of the momentum recurrence: with no noise (B → ∞) the second moment
        // is the square of the deterministic heavy-ball trajectory.
        let (lr, g) = (0.5, 0.8);
        let mut st = NqmState::new(3, 0.0, OptimizerKind::Momentum, g, usize::MAX);
        let (mut x, mut v) = ([1.0f64; 3], [0.0f64; 3]);
        for _ in 0..25 {
            st.step(lr);
            for i in 0..3 {
                let h = 1.0 / (i + 1) as f64;
                v[i] = g * v[i] + h * x[i];
                x[i] -= lr * v[i];
            }
        }
        for i in 0..3 {
            assert!((st.y[i][0] - x[i] * x[i]).abs() < 1e-12);
            assert!((st.y[i][1] - x[i] * v[i]).abs() < 1e-12);
        }
        let mut st3 = NqmState::new(3, 0.0, OptimizerKind::Momentum, g, usize::MAX);
        st3.steps_constant(lr, 25);
        for i in 0..3 {
            assert!((st3.y[i][0] - st.y[i][0]).abs() < 1e-12);
        }
    }

    #[test]
    fn runner_reports_reached_diverged_and_events() {
        let w = workload(OptimizerKind::Sgd, 100, 0.5);
        let mut events = Vec::new();
        let out = NqmRunner
            .run(
                &w,
                &spec(64, 0.5, 0.0),
                &mut |e| events.push(e),
                &CancelToken::new(),
            )
            .unwrap();
        let Outcome::Reached { step } = out.outcome else {
            panic!("{:?}", out.outcome)
        };
        assert!(out.evals.last().unwrap().metric <= 0.5);
        assert!(out.evals[out.evals.len() - 2].metric > 0.5);
        assert_eq!(out.evals.last().unwrap().step, step);
        assert!(matches!(events[0], TrialEvent::Started { .. }));
        assert!(matches!(events.last(), Some(TrialEvent::Finished { .. })));
        assert!(events
            .iter()
            .any(|e| matches!(e, TrialEvent::NoiseScale { .. })));
        assert!(out.noise.b_simple.unwrap() > 0.0);
        // η·h_max > 2 diverges.
        let out = NqmRunner
            .run(&w, &spec(64, 2.5, 0.0), &mut |_| {}, &CancelToken::new())
            .unwrap();
        assert!(
            matches!(out.outcome, Outcome::Diverged { .. }),
            "{:?}",
            out.outcome
        );
        // A tiny η cannot reach it within a small budget.
        let mut w2 = w.clone();
        w2.step_budget = 50;
        let out = NqmRunner
            .run(&w2, &spec(64, 1e-4, 0.0), &mut |_| {}, &CancelToken::new())
            .unwrap();
        assert_eq!(
            out.outcome,
            Outcome::NotReached {
                budget: 50,
                early_stopped: false
            }
        );
        // Cancelled at once.
        let c = CancelToken::new();
        c.cancel();
        let out = NqmRunner
            .run(&w, &spec(64, 0.5, 0.0), &mut |_| {}, &c)
            .unwrap();
        assert_eq!(out.outcome, Outcome::Cancelled { step: 0 });
        // A non-NQM workload is a set-up error.
        let mut w3 = w.clone();
        w3.model = crate::model::mlp::hidden(vec![8]);
        assert!(NqmRunner
            .run(&w3, &spec(64, 0.5, 0.0), &mut |_| {}, &CancelToken::new())
            .is_err());
    }

    /// Zhang et al.'s ordering of critical batch sizes: preconditioning (Adam-like) > momentum > SGD.
    /// Per optimizer: batch sizes 1 … 4096, a grid of η (and γ), steps-to-target exact at each
    /// (B, η, γ); the records go through the sweep analysis (best trial per B, log-space fit).
    #[test]
    fn critical_batch_ordering_adam_momentum_sgd() {
        let (d, target) = (100, 0.05);
        let mut bcrit = Vec::new();
        for (opt, moms) in [
            (OptimizerKind::Sgd, vec![0.0]),
            (OptimizerKind::Momentum, vec![0.5, 0.9, 0.99]),
            (OptimizerKind::Adam, vec![0.5, 0.9, 0.99]),
        ] {
            let mut records = Vec::new();
            for j in 0..7 {
                let b = 1usize << (2 * j);
                for &g in &moms {
                    for e in 0..24 {
                        let lr = 2.0 * 2f64.powf(-(e as f64) / 2.0);
                        let outcome =
                            match exact_steps_to_target(d, 0.5, opt, g, b, lr, target, 1 << 20) {
                                Some(step) => Outcome::Reached { step },
                                None => Outcome::NotReached {
                                    budget: 1 << 20,
                                    early_stopped: false,
                                },
                            };
                        let mut s = spec(b, lr, g);
                        s.trial_id = records.len() as u64;
                        records.push(crate::core::record::TrialRecord::new(
                            s,
                            TrialOutcome::bare(outcome, 0),
                        ));
                    }
                }
            }
            let w = workload(opt, d, target);
            let a = crate::analysis::analyze(
                &crate::core::analysis::Study::bare(w.target, opt),
                &records,
            );
            assert!(
                a.per_batch.iter().all(|p| p.steps.is_some()),
                "{opt:?}: {a:?}"
            );
            let fit = a.fit.expect("fit");
            assert!(fit.r2 > 0.95, "{opt:?}: {fit:?}");
            bcrit.push((opt, fit.b_crit));
        }
        eprintln!("B_crit: {bcrit:?}");
        let (sgd, mom, adam) = (bcrit[0].1, bcrit[1].1, bcrit[2].1);
        assert!(adam > 1.2 * mom && mom > 1.5 * sgd, "B_crit: {bcrit:?}");
    }

    #[test]
    fn schedule_path_matches_constant_path() {
        let mut w = workload(OptimizerKind::Momentum, 50, 0.3);
        w.eval_every = 7;
        let mut s = spec(32, 0.2, 0.9);
        let a = NqmRunner
            .run(&w, &s, &mut |_| {}, &CancelToken::new())
            .unwrap();
        // A "decay" with α = 1 is constant η but goes through the per-step path.
        s.metaparams.schedule.decay = Decay::Linear {
            alpha: 1.0,
            steps: 10_000,
        };
        let b = NqmRunner
            .run(&w, &s, &mut |_| {}, &CancelToken::new())
            .unwrap();
        assert_eq!(a.outcome, b.outcome);
        for (x, y) in a.evals.iter().zip(&b.evals) {
            assert!((x.metric - y.metric).abs() < 1e-9 * x.metric.abs().max(1.0));
        }
    }
}
