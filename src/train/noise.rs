//! Gradient noise scale B_simple = tr(Σ)/|G|² from two batch sizes (McCandlish et al. 2018, App. A.1).

use serde::{Deserialize, Serialize};

use crate::core::trial::NoiseInterval;

/// Unbiased single-step estimates from squared gradient norms measured at B_small and B_big.
/// Returns (|G|², tr Σ).
pub fn unbiased_estimates(b_small: f64, g2_small: f64, b_big: f64, g2_big: f64) -> (f64, f64) {
    let g2 = (b_big * g2_big - b_small * g2_small) / (b_big - b_small);
    let tr = (g2_small - g2_big) / (1.0 / b_small - 1.0 / b_big);
    (g2, tr)
}

/// A running mean over a window that grows from the first sample: the first `n` samples get
/// weight 1/n (an exact mean, no start-up bias), then an EMA over the last ~`window` samples.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
struct RunningMean {
    value: f64,
    n: u64,
}

impl RunningMean {
    /// Adds `x`; returns its weight.
    fn push(&mut self, x: f64, window: f64) -> f64 {
        self.n += 1;
        let a = 1.0 / (self.n as f64).min(window.max(1.0));
        self.value += (x - self.value) * a;
        a
    }
}

/// Steps in one block of [`WindowMean`]'s variance estimate: consecutive steps' gradient norms
/// are correlated (lag-1 ≈ 0.7 for |g_B|² and ≈ 0.4 for tr(Σ) on mnist-cnn-sgd, ≈ 0 by lag 4),
/// the means of 8-step blocks much less so.
pub const BLOCK_STEPS: u64 = 8;

/// A [`RunningMean`] that also knows its own sampling variance, by batch means: the samples are
/// grouped by the [`BLOCK_STEPS`]-step block of training they come from, and the variance of a
/// block mean is half the mean squared difference of consecutive block means (same window, in
/// blocks). A difference barely moves with a slow drift of the level, so training's own progress
/// is not counted as noise. The mean's variance is then var(block mean) · m · Σw², with m the
/// samples per block and Σw² from the samples' weights (1/n for an exact mean, a/(2−a) for an EMA
/// of weight a); its degrees of freedom are the block differences it rests on.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
struct WindowMean {
    mean: RunningMean,
    weights_sq: f64,
    /// The open block: (its index, sum, samples).
    open: Option<(u64, f64, u64)>,
    prev_block: Option<f64>,
    /// Mean squared difference of consecutive block means.
    diff: RunningMean,
    /// Samples per closed block.
    per_block: RunningMean,
}

impl WindowMean {
    /// Adds the sample `x` of training step `step`.
    fn push(&mut self, x: f64, window: f64, step: u64) {
        let a = self.mean.push(x, window);
        self.weights_sq = (1.0 - a) * (1.0 - a) * self.weights_sq + a * a;
        let block = step / BLOCK_STEPS;
        match self.open {
            Some((i, sum, n)) if i == block => self.open = Some((i, sum + x, n + 1)),
            open => {
                if let Some((_, sum, n)) = open {
                    self.close(sum / n as f64, n, window);
                }
                self.open = Some((block, x, 1));
            }
        }
    }

    fn close(&mut self, block_mean: f64, n: u64, window: f64) {
        self.per_block.push(n as f64, window);
        let in_blocks = window / self.per_block.value.max(1.0);
        if let Some(p) = self.prev_block {
            self.diff.push((block_mean - p).powi(2), in_blocks);
        }
        self.prev_block = Some(block_mean);
    }

    fn value(&self) -> f64 {
        self.mean.value
    }

    fn n(&self) -> u64 {
        self.mean.n
    }

    /// (the sampling variance of the mean, its degrees of freedom); (∞, 0) before two blocks
    /// have closed.
    fn variance_of_mean(&self) -> (f64, f64) {
        if self.diff.n == 0 {
            return (f64::INFINITY, 0.0);
        }
        let m = self.per_block.value.max(1.0);
        let var = self.diff.value / 2.0 * m * self.weights_sq;
        let dof = (self.diff.n as f64).min(1.0 / (m * self.weights_sq.max(1e-300)));
        (var, dof.max(1.0))
    }
}

/// The 97.5 % quantile of Student's t with `dof` degrees of freedom (a 95 % two-sided interval;
/// table to 30, then z + 2.46/ν, within 0.002 of the exact value).
fn t_975(dof: f64) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    if dof > 30.0 {
        return 1.96 + 2.46 / dof;
    }
    // between the table's whole degrees of freedom: the smaller one (wider, on the safe side)
    T[(dof.floor().max(1.0) as usize) - 1]
}

/// Samples the trace of Σ is averaged over at least (then over the last half of the samples).
pub const MIN_TRACE_WINDOW: f64 = 20.0;

/// The gradient noise scale B_simple = tr(Σ)/|G|² of a trial, from two kinds of measurements:
///
/// * **every applied step**: |g_B|², the squared norm of the step's (mean) gradient at batch B —
///   the step computes it anyway (clipping, the loss scaler's finite check). E|g_B|² = |G|² + tr(Σ)/B.
/// * **sampled steps**: an unbiased tr(Σ) from two gradients of the same step at two batch sizes
///   (the replicas' shard gradients against their mean at G ≥ 2, free: the exchange holds them;
///   at G = 1 the gradient of half the batch against the whole one, one extra half-batch backward).
///
/// |G|² = mean(|g_B|²) − mean(tr)/B over the last ~`1/(1−decay)` steps (20 at 0.95, as McCandlish
/// et al.'s EMA); tr(Σ) over at least the last [`MIN_TRACE_WINDOW`] samples, then the last half of
/// them (it changes slowly: the longer average keeps the subtraction precise when samples are
/// sparse). Sampled every step with equal windows this is the ratio of the EMAs of the two unbiased
/// single-step estimates (McCandlish et al. 2018, App. A.1).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct NoiseScaleEstimator {
    /// EMA decay per step of |g_B|² (e.g. 0.95).
    pub decay: f64,
    big: WindowMean,
    trace: WindowMean,
    b_big: f64,
    /// tr(Σ) samples taken.
    pub samples: u64,
    /// Steps observed (|g_B|² samples): the step a tr(Σ) sample belongs to.
    #[serde(default)]
    steps: u64,
}

impl NoiseScaleEstimator {
    pub fn new(decay: f64) -> Self {
        NoiseScaleEstimator {
            decay,
            big: WindowMean::default(),
            trace: WindowMean::default(),
            b_big: 0.0,
            samples: 0,
            steps: 0,
        }
    }

    /// Every applied step: the squared norm (unscaled) of the gradient at batch `b_big`.
    pub fn observe_step(&mut self, b_big: f64, g2_big: f64) {
        if !g2_big.is_finite() || b_big <= 0.0 {
            return;
        }
        self.b_big = b_big;
        self.steps += 1;
        self.big
            .push(g2_big, 1.0 / (1.0 - self.decay).max(1e-9), self.steps - 1);
    }

    /// A sampled step: an unbiased single-step estimate of tr(Σ).
    pub fn observe_trace(&mut self, trace: f64) {
        if !trace.is_finite() {
            return;
        }
        let window = MIN_TRACE_WINDOW.max(self.samples as f64 / 2.0);
        self.trace.push(trace, window, self.steps.saturating_sub(1));
        self.samples += 1;
    }

    /// A step that measured both batch sizes: `g2_small` the mean over shards of each shard
    /// gradient's squared norm (batch `b_small` each), `g2_big` the squared norm of their mean
    /// (batch `b_big`). Norms must be unscaled.
    pub fn update(&mut self, b_small: f64, g2_small: f64, b_big: f64, g2_big: f64) {
        if !(g2_small.is_finite() && g2_big.is_finite()) || b_big <= b_small {
            return;
        }
        let (_, tr) = unbiased_estimates(b_small, g2_small, b_big, g2_big);
        self.observe_step(b_big, g2_big);
        self.observe_trace(tr);
    }

    /// tr(Σ) / |G|², once both are measured and the |G|² estimate is positive.
    pub fn b_simple(&self) -> Option<f64> {
        let g2 = self.g2();
        if self.samples == 0 || self.big.n() == 0 || g2 <= 0.0 {
            return None;
        }
        let v = self.trace() / g2;
        (v.is_finite() && v > 0.0).then_some(v)
    }
    /// The 95 % interval of [`Self::b_simple`] from the sampling noise of its two running means
    /// (delta method on ln B_simple = ln T − ln(Ḡ − T/B) with Student's t for the degrees of
    /// freedom of the two variances' estimates, T and Ḡ = mean|g_B|² taken as
    /// independent, which overstates the spread where both move together). Unbounded above
    /// where |G|² = Ḡ − T/B is not resolved from 0 at 95 %, and then bounded below by T's lower
    /// end over Ḡ's upper end. It covers the noise of the samples
    /// in the windows, not the lag of a window behind a B_simple that moves during training.
    pub fn interval(&self) -> Option<NoiseInterval> {
        let b_simple = self.b_simple()?;
        let (t, big, b) = (self.trace(), self.big.value(), self.b_big.max(1.0));
        let g2 = self.g2();
        let ((var_t, dof_t), (var_big, dof_big)) =
            (self.trace.variance_of_mean(), self.big.variance_of_mean());
        if !(var_t.is_finite() && var_big.is_finite()) {
            return Some(NoiseInterval { lo: 0.0, hi: None });
        }
        let (part_t, part_big) = ((big / g2).powi(2) * var_t / (t * t), var_big / (g2 * g2));
        // Welch–Satterthwaite: the degrees of freedom of the sum of the two variances
        let dof = (part_t + part_big).powi(2)
            / (part_t.powi(2) / dof_t + part_big.powi(2) / dof_big).max(1e-300);
        let z = t_975(dof);
        let se_ln = (part_t + part_big).sqrt();
        let se_g2 = (var_big + var_t / (b * b)).sqrt();
        if g2 - z * se_g2 > 0.0 {
            return Some(NoiseInterval {
                lo: b_simple * (-z * se_ln).exp(),
                hi: Some(b_simple * (z * se_ln).exp()),
            });
        }
        // |G|² not resolved from 0: no upper bound, and the log-scale delta method says nothing
        // below either (a relative error past 100 %). B_simple rises with T and falls with Ḡ, so
        // its lower bound is T's lower end over Ḡ's upper end.
        let t_lo = (t - z * var_t.sqrt()).max(0.0);
        let lo = t_lo / (big + z * var_big.sqrt() - t_lo / b);
        Some(NoiseInterval { lo, hi: None })
    }

    /// The estimate of |G|².
    pub fn g2(&self) -> f64 {
        self.big.value() - self.trace.value() / self.b_big.max(1.0)
    }
    /// The estimate of tr(Σ).
    pub fn trace(&self) -> f64 {
        self.trace.value()
    }
}

/// tr(Σ) from one step at G = 1: `diff_sq` = |g_n − g_h|², the squared distance between the
/// gradient of the whole batch (n examples) and that of its first `h` examples (both unscaled).
/// With g_r the gradient of the other n − h: g_n − g_h = ((n−h)/n)(g_r − g_h), and
/// E|g_r − g_h|² = tr(Σ)(1/h + 1/(n−h)).
pub fn trace_from_half(n: usize, h: usize, diff_sq: f64) -> f64 {
    let (n, h) = (n as f64, h as f64);
    let r = n - h;
    (n / r).powi(2) * diff_sq / (1.0 / h + 1.0 / r)
}

/// When a one-worker trial samples tr(Σ): every `every` applied steps, the first sample at step 0.
/// The cadence follows the measured cost (`Auto`): a sampled step's extra wall time (its time
/// minus an unsampled step's) against the trial's wall time per step since the last sample
/// (evaluations included) is kept at most [`NOISE_COST_FRACTION`], with `every` a power of two
/// (so a small change in timing does not move the sampled steps). Step times are medians of the
/// recent steps: a step that the OS preempted (a loaded machine) does not move the cadence.
#[derive(Clone, Debug)]
pub struct Cadence {
    fixed: Option<u64>,
    every: u64,
    next: u64,
    plain_s: Recent,
    extra_s: Recent,
    /// (applied steps, trial seconds) at the last sample, and the wall seconds per step of the
    /// recent intervals between samples.
    last_sample: Option<(u64, f64)>,
    per_step_s: Recent,
}

/// The share of a trial's wall time the one-worker noise-scale samples may take.
pub const NOISE_COST_FRACTION: f64 = 0.03;
/// Steps between the first sample (step 0, cold) and the first one that is timed.
pub const FIRST_INTERVAL: u64 = 8;
/// The longest interval between two samples.
pub const MAX_EVERY: u64 = 1024;

/// The last few values and their median.
#[derive(Clone, Debug)]
struct Recent {
    values: std::collections::VecDeque<f64>,
    cap: usize,
}

impl Recent {
    fn new(cap: usize) -> Self {
        Recent {
            values: std::collections::VecDeque::with_capacity(cap),
            cap,
        }
    }
    fn push(&mut self, x: f64) {
        if self.values.len() == self.cap {
            self.values.pop_front();
        }
        self.values.push_back(x);
    }
    fn median(&self) -> Option<f64> {
        if self.values.is_empty() {
            return None;
        }
        let mut v: Vec<f64> = self.values.iter().copied().collect();
        v.sort_by(f64::total_cmp);
        Some(v[v.len() / 2])
    }
}

impl Cadence {
    /// `fixed`: sample every that many steps (1 = every step) instead of following the cost.
    pub fn new(fixed: Option<u64>) -> Self {
        let every = fixed.unwrap_or(FIRST_INTERVAL).max(1);
        Cadence {
            fixed,
            every,
            next: 0,
            plain_s: Recent::new(15),
            extra_s: Recent::new(5),
            last_sample: None,
            per_step_s: Recent::new(5),
        }
    }

    /// Whether the step attempted after `applied` applied steps samples.
    pub fn due(&self, applied: u64) -> bool {
        applied >= self.next
    }

    /// The current interval between samples.
    pub fn every(&self) -> u64 {
        self.every
    }

    /// Books an attempted step, attempted after `applied` applied steps: `sampled` or not, its
    /// wall seconds, and the trial's wall clock (seconds since it started) after it.
    pub fn record(&mut self, applied: u64, sampled: bool, step_s: f64, elapsed_s: f64) {
        // the first step is cold (allocations, first touch of every buffer): not timed
        let cold = applied == 0;
        if !sampled {
            if !cold {
                self.plain_s.push(step_s);
            }
            return;
        }
        if let (false, Some(p)) = (cold, self.plain_s.median()) {
            self.extra_s.push((step_s - p).max(0.0));
        }
        // the trial's wall time per step between samples, evaluations included
        if let Some((a, t)) = self.last_sample.filter(|&(a, _)| applied > a) {
            self.per_step_s.push((elapsed_s - t) / (applied - a) as f64);
        }
        self.last_sample = Some((applied, elapsed_s));
        let per_step = self.per_step_s.median();
        if let (None, Some(extra), Some(per_step)) = (self.fixed, self.extra_s.median(), per_step) {
            let budget = NOISE_COST_FRACTION * per_step;
            let k = if budget > 0.0 {
                (extra / budget).ceil().clamp(1.0, MAX_EVERY as f64)
            } else {
                1.0
            };
            self.every = (k as u64).next_power_of_two();
        }
        self.next = applied + self.every;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::SeedableRng;
    use rand_distr::{Distribution, Normal};

    /// Per-example gradients g = G + ε with ε ~ N(0, diag(σ²)): tr Σ = Σσ², |G|² known.
    fn simulate(shards: usize, b: usize, steps: usize, seed: u64) -> (f64, f64) {
        let d = 50;
        let true_g: Vec<f64> = (0..d).map(|i| 0.1 + 0.01 * i as f64).collect();
        let sig: Vec<f64> = (0..d).map(|i| 0.5 + 0.02 * i as f64).collect();
        let g2: f64 = true_g.iter().map(|x| x * x).sum();
        let tr: f64 = sig.iter().map(|s| s * s).sum();
        let truth = tr / g2;
        let mut rng = StdRng::seed_from_u64(seed);
        let n = Normal::new(0.0, 1.0).unwrap();
        let mut est = NoiseScaleEstimator::new(0.99);
        let per = b / shards;
        for _ in 0..steps {
            let mut shard_means = vec![vec![0.0; d]; shards];
            for s in shard_means.iter_mut() {
                for _ in 0..per {
                    for k in 0..d {
                        s[k] += (true_g[k] + sig[k] * n.sample(&mut rng)) / per as f64;
                    }
                }
            }
            let small: f64 = shard_means
                .iter()
                .map(|s| s.iter().map(|x| x * x).sum::<f64>())
                .sum::<f64>()
                / shards as f64;
            let avg: Vec<f64> = (0..d)
                .map(|k| shard_means.iter().map(|s| s[k]).sum::<f64>() / shards as f64)
                .collect();
            let big: f64 = avg.iter().map(|x| x * x).sum();
            est.update(per as f64, small, b as f64, big);
        }
        (est.b_simple().unwrap(), truth)
    }

    #[test]
    fn recovers_known_noise_scale_within_10_percent() {
        let (est, truth) = simulate(4, 64, 3000, 1);
        assert!(
            (est / truth - 1.0).abs() < 0.10,
            "estimate {est} vs truth {truth}"
        );
    }

    #[test]
    fn does_not_depend_on_shard_count_at_fixed_batch() {
        let (a, truth) = simulate(2, 64, 3000, 2);
        let (b, _) = simulate(8, 64, 3000, 3);
        assert!((a / truth - 1.0).abs() < 0.10, "G=2: {a} vs {truth}");
        assert!((b / truth - 1.0).abs() < 0.10, "G=8: {b} vs {truth}");
    }

    #[test]
    fn unbiased_formulas_invert_the_expectation() {
        // E|G_B|² = |G|² + tr/B exactly → the estimator returns the truth.
        let (g2, tr) = (2.0, 300.0);
        let small = g2 + tr / 8.0;
        let big = g2 + tr / 64.0;
        let (eg, et) = unbiased_estimates(8.0, small, 64.0, big);
        assert!((eg - g2).abs() < 1e-9 && (et - tr).abs() < 1e-9);
    }

    #[test]
    fn the_half_batch_trace_is_unbiased_for_even_and_odd_batches() {
        // per-example gradients G + ε, ε ~ N(0, diag σ²): tr Σ = Σ σ²
        let d = 40;
        let sig: Vec<f64> = (0..d).map(|i| 0.3 + 0.05 * i as f64).collect();
        let tr: f64 = sig.iter().map(|s| s * s).sum();
        let n01 = Normal::new(0.0, 1.0).unwrap();
        for n in [2usize, 7, 64] {
            let h = n / 2;
            let mut rng = StdRng::seed_from_u64(n as u64);
            let reps = 4000;
            let mut mean = 0.0;
            for _ in 0..reps {
                let ex: Vec<Vec<f64>> = (0..n)
                    .map(|_| sig.iter().map(|s| 1.0 + s * n01.sample(&mut rng)).collect())
                    .collect();
                let avg = |r: &[Vec<f64>]| -> Vec<f64> {
                    (0..d)
                        .map(|k| r.iter().map(|e| e[k]).sum::<f64>() / r.len() as f64)
                        .collect()
                };
                let (gn, gh) = (avg(&ex), avg(&ex[..h]));
                let diff: f64 = gn.iter().zip(&gh).map(|(a, b)| (a - b) * (a - b)).sum();
                mean += trace_from_half(n, h, diff) / reps as f64;
            }
            assert!((mean / tr - 1.0).abs() < 0.05, "n = {n}: {mean} vs {tr}");
        }
    }

    #[test]
    fn the_cadence_follows_the_measured_cost_in_powers_of_two() {
        // a sample costs 1 ms more than a 2 ms step: 3% of ~2 ms is ~61 µs → every 32 steps
        let mut c = Cadence::new(None);
        let mut samples = vec![];
        let mut clock = 0.0;
        for applied in 0..2000u64 {
            let sampled = c.due(applied);
            let mut step_s = if sampled { 3e-3 } else { 2e-3 };
            if applied % 101 == 50 {
                step_s *= 20.0; // the OS preempted this step: the medians ignore it
            }
            clock += step_s;
            c.record(applied, sampled, step_s, clock);
            if sampled {
                samples.push(applied);
            }
        }
        assert_eq!(&samples[..2], &[0, FIRST_INTERVAL]);
        assert_eq!(c.every(), 32);
        let gaps: Vec<u64> = samples.windows(2).skip(4).map(|w| w[1] - w[0]).collect();
        assert!(gaps.iter().all(|g| g.is_power_of_two()), "{gaps:?}");
        let at_32 = gaps.iter().filter(|&&g| g == 32).count();
        assert!(at_32 * 10 >= gaps.len() * 9, "{gaps:?}");
        // a fixed cadence stays fixed
        let mut f = Cadence::new(Some(1));
        for applied in 0..10 {
            assert!(f.due(applied));
            f.record(applied, true, 1.0, applied as f64);
        }
        assert_eq!(f.every(), 1);
    }

    /// Today's (before sampling) estimator: EMAs of the two unbiased single-step estimates from
    /// two micro-batches every step.
    struct EveryStep {
        g2: f64,
        tr: f64,
    }

    impl EveryStep {
        fn update(&mut self, b_small: f64, g2_small: f64, b_big: f64, g2_big: f64) {
            let (g2, tr) = unbiased_estimates(b_small, g2_small, b_big, g2_big);
            self.g2 = 0.95 * self.g2 + 0.05 * g2;
            self.tr = 0.95 * self.tr + 0.05 * tr;
        }
        fn b_simple(&self) -> Option<f64> {
            let v = self.tr / self.g2;
            (self.g2 > 0.0 && v.is_finite()).then_some(v)
        }
    }

    /// SGD on the noisy quadratic model (Zhang et al. 2019: curvature h_i = 1/i, per-example
    /// gradient covariance H, so the true B_simple = Σh / Σ h²x² in closed form) with sampled
    /// gradients, run to its target (expected loss ≤ 0.1, checked every 10 steps). Returns the mean
    /// |ln(estimate / truth)| at the target over `seeds` trials (3 where there is no estimate) of
    /// the every-step estimator and of the sampled ones (tr(Σ) every `every[j]` steps from the
    /// half batch, |g_B|² every step), all on the same trajectories.
    fn nqm_errors(batch: usize, lr: f64, every: &[u64], seeds: u64) -> (f64, Vec<f64>, Vec<f64>) {
        let d = 1000;
        let h: Vec<f64> = (1..=d).map(|i| 1.0 / i as f64).collect();
        let tr: f64 = h.iter().sum();
        let half = batch / 2;
        let sd: Vec<f64> = h.iter().map(|h| (h / half as f64).sqrt()).collect();
        let n01 = Normal::new(0.0, 1.0).unwrap();
        let err = |v: Option<f64>, truth: f64| v.map_or(3.0, |v| (v / truth).ln().abs().min(3.0));
        let (mut e_old, mut e_new) = (0.0, vec![0.0; every.len()]);
        let mut covered = vec![0.0; every.len()];
        for seed in 0..seeds {
            let mut rng = StdRng::seed_from_u64(seed);
            let mut x = vec![1.0; d];
            let mut old = EveryStep { g2: 0.0, tr: 0.0 };
            let mut new = vec![NoiseScaleEstimator::new(0.95); every.len()];
            let (mut ga, mut gb, mut g) = (vec![0.0; d], vec![0.0; d], vec![0.0; d]);
            for t in 0..50_000u64 {
                let (mut sa, mut sb, mut sg, mut diff) = (0.0, 0.0, 0.0, 0.0);
                for i in 0..d {
                    let hx = h[i] * x[i];
                    ga[i] = hx + sd[i] * n01.sample(&mut rng);
                    gb[i] = hx + sd[i] * n01.sample(&mut rng);
                    g[i] = 0.5 * (ga[i] + gb[i]);
                    sa += ga[i] * ga[i];
                    sb += gb[i] * gb[i];
                    sg += g[i] * g[i];
                    diff += (g[i] - ga[i]) * (g[i] - ga[i]);
                }
                old.update(half as f64, 0.5 * (sa + sb), batch as f64, sg);
                for (est, &k) in new.iter_mut().zip(every) {
                    est.observe_step(batch as f64, sg);
                    if t % k == 0 {
                        est.observe_trace(trace_from_half(batch, half, diff));
                    }
                }
                for i in 0..d {
                    x[i] -= lr * g[i];
                }
                let loss: f64 = 0.5 * h.iter().zip(&x).map(|(h, x)| h * x * x).sum::<f64>();
                if t % 10 == 9 && loss <= 0.1 {
                    break;
                }
            }
            let truth = tr / h.iter().zip(&x).map(|(h, x)| (h * x).powi(2)).sum::<f64>();
            e_old += err(old.b_simple(), truth) / seeds as f64;
            for ((e, c), est) in e_new.iter_mut().zip(&mut covered).zip(&new) {
                *e += err(est.b_simple(), truth) / seeds as f64;
                if est.interval().is_none_or(|i| i.contains(truth)) {
                    *c += 1.0 / seeds as f64;
                }
            }
        }
        (e_old, e_new, covered)
    }

    #[test]
    fn on_the_nqm_sampling_does_not_grow_the_error() {
        // B from deep in the noise-dominated regime (B_simple ≈ 10³ at the target) to near it;
        // cadences as the cost rule picks them on the presets (every 8 to 32 steps).
        let every = [8, 16, 32];
        let mut total_old = 0.0;
        let mut total = [0.0; 3];
        let mut coverage = [0.0; 3];
        for (batch, lr) in [(8, 0.3), (32, 0.6), (128, 1.0), (512, 1.5)] {
            let (old, new, covered) = nqm_errors(batch, lr, &every, 40);
            eprintln!(
                "B {batch}: |ln error| every step {old:.3}, sampled every {every:?}: {new:.3?}, 95 % interval covers the truth in {covered:.3?}"
            );
            total_old += old;
            for (t, e) in total.iter_mut().zip(new) {
                *t += e;
            }
            for (c, x) in coverage.iter_mut().zip(covered) {
                *c += x / 4.0;
            }
        }
        // The 95 % interval counts the samples' noise, not the windows' lag behind a B_simple
        // that grows as the loss falls (here ~10× over a trial): measured 0.68-0.71 over the four
        // B (0.58-0.90 each), against 0.93-0.94 on a stationary problem (below).
        for (every, c) in every.iter().zip(coverage) {
            assert!(
                c >= 0.55,
                "sampling every {every} steps: the 95 % interval covered the truth in {c:.3}"
            );
        }
        for (every, t) in every.iter().zip(total) {
            assert!(
                t <= total_old,
                "sampling every {every} steps: mean |ln error| {t:.3} > every step {total_old:.3}"
            );
        }
    }

    /// The variance a [`WindowMean`] reports for itself against the spread of its value over
    /// independent replicates: white noise in the exact-mean phase and the EMA phase, an AR(1)
    /// series (ρ = 0.6: the mean varies (1+ρ)/(1−ρ) = 4× more than white noise's), and white
    /// noise on a level that halves during the trial (training's progress, not noise: the spread
    /// over replicates does not contain it, and the reported variance must not either). With
    /// few blocks the reported variance is itself noisy (3 differences here: the interval's t
    /// quantile takes that into account).
    #[test]
    fn a_window_mean_knows_its_own_variance() {
        let n01 = Normal::new(0.0, 1.0).unwrap();
        let cases = [
            (0.0, 40, 60.0, 0.0, 0.5..1.6),
            (0.0, 400, 20.0, 0.0, 0.75..1.33),
            // ρ = 0.6 is still 0.17 at lag 4 (the presets' |g_B|²: 0.01): 8-step blocks miss
            // some of it (measured 0.61)
            (0.6, 400, 30.0, 0.0, 0.55..1.33),
            (0.0, 400, 20.0, 5.0, 0.75..1.33),
        ];
        for (rho, steps, window, drop, ok) in cases {
            let mut rng = StdRng::seed_from_u64(7 + steps as u64);
            let reps = 3000;
            let (mut values, mut reported) = (Vec::new(), Vec::new());
            for _ in 0..reps {
                let mut w = WindowMean::default();
                let mut e: f64 = n01.sample(&mut rng);
                for t in 0..steps {
                    e = rho * e + (1.0f64 - rho * rho).sqrt() * n01.sample(&mut rng);
                    let level = 10.0 - drop * t as f64 / steps as f64;
                    w.push(level + 0.5 * e, window, t as u64);
                }
                values.push(w.value());
                reported.push(w.variance_of_mean().0);
            }
            let mean = values.iter().sum::<f64>() / reps as f64;
            let actual = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / reps as f64;
            reported.sort_by(f64::total_cmp);
            let said = reported[reps / 2];
            assert!(
                ok.contains(&(said / actual)),
                "ρ {rho}, {steps} steps, window {window}, drop {drop}: reported {said:.5} vs actual {actual:.5}"
            );
        }
    }

    /// One trial at G = 1 on a stationary problem of known B_simple (per-example gradients
    /// G + ε, ε ~ N(0, diag σ²)): |g_B|² every step, tr(Σ) from the half batch every `every`
    /// steps. Returns (truth, estimate, interval).
    fn one_worker_trial(b: usize, steps: u64, every: u64, seed: u64) -> (f64, f64, NoiseInterval) {
        let d = 40;
        let true_g: Vec<f64> = (0..d).map(|i| 0.05 + 0.004 * i as f64).collect();
        let sig: Vec<f64> = (0..d).map(|i| 0.5 + 0.03 * i as f64).collect();
        let truth =
            sig.iter().map(|s| s * s).sum::<f64>() / true_g.iter().map(|x| x * x).sum::<f64>();
        let n01 = Normal::new(0.0, 1.0).unwrap();
        let mut rng = StdRng::seed_from_u64(seed);
        let mut est = NoiseScaleEstimator::new(0.95);
        let h = b / 2;
        for t in 0..steps {
            let (mut gh, mut gr) = (vec![0.0; d], vec![0.0; d]);
            for k in 0..d {
                for _ in 0..h {
                    gh[k] += (true_g[k] + sig[k] * n01.sample(&mut rng)) / h as f64;
                }
                for _ in h..b {
                    gr[k] += (true_g[k] + sig[k] * n01.sample(&mut rng)) / (b - h) as f64;
                }
            }
            let gb: Vec<f64> = (0..d)
                .map(|k| (h as f64 * gh[k] + (b - h) as f64 * gr[k]) / b as f64)
                .collect();
            est.observe_step(b as f64, gb.iter().map(|x| x * x).sum());
            if t % every == 0 {
                let diff: f64 = gb.iter().zip(&gh).map(|(a, c)| (a - c) * (a - c)).sum();
                est.observe_trace(trace_from_half(b, h, diff));
            }
        }
        (
            truth,
            est.b_simple().unwrap_or(f64::INFINITY),
            est.interval().unwrap(),
        )
    }

    /// The 95 % interval covers the true B_simple about 95 % of the time (B = 16, B_simple = 70:
    /// a tr(Σ) error is multiplied 5.4×; measured 0.947 and 0.940), sampled every step and every 16 steps, and it is
    /// wider when tr(Σ) is sampled less.
    #[test]
    fn the_interval_covers_the_truth_and_widens_with_sparser_samples() {
        let seeds = 300;
        let mut width = [0.0; 2];
        for (j, every) in [1u64, 16].into_iter().enumerate() {
            let mut covered = 0;
            let mut widths = Vec::new();
            for seed in 0..seeds {
                let (truth, v, iv) = one_worker_trial(16, 600, every, seed);
                covered += iv.contains(truth) as u32;
                assert!(
                    iv.lo <= v && iv.hi.is_none_or(|h| h >= v),
                    "{v} outside {iv:?}"
                );
                widths.push(iv.hi.map_or(f64::INFINITY, |h| (h / iv.lo).ln()));
            }
            widths.sort_by(f64::total_cmp);
            width[j] = widths[seeds as usize / 2];
            let share = covered as f64 / seeds as f64;
            eprintln!(
                "every {every}: coverage {share:.3}, median ln(hi/lo) {:.3}",
                width[j]
            );
            assert!(
                (0.88..=0.995).contains(&share),
                "every {every}: the 95 % interval covered the truth in {share:.3} of trials"
            );
        }
        assert!(width[1] > 1.15 * width[0], "widths {width:?}");
    }
}
