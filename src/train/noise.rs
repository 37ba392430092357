//! Gradient noise scale B_simple = tr(Σ)/|G|² from two batch sizes (McCandlish et al. 2018, App. A.1).

use serde::{Deserialize, Serialize};

/// Unbiased single-step estimates from squared gradient norms measured at B_small and B_big.
/// Returns (|G|², tr Σ).
pub fn unbiased_estimates(b_small: f64, g2_small: f64, b_big: f64, g2_big: f64) -> (f64, f64) {
    let g2 = (b_big * g2_big - b_small * g2_small) / (b_big - b_small);
    let tr = (g2_small - g2_big) / (1.0 / b_small - 1.0 / b_big);
    (g2, tr)
}

/// Keeps separate EMAs of |G|² and tr(Σ) and reports their ratio (the ratio of single-step
/// estimates is biased).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct NoiseScaleEstimator {
    /// EMA decay per step (e.g. 0.95).
    pub decay: f64,
    ema_g2: f64,
    ema_tr: f64,
    /// Bias correction weight (1 − decay^n).
    weight: f64,
    pub samples: u64,
}

impl NoiseScaleEstimator {
    pub fn new(decay: f64) -> Self {
        NoiseScaleEstimator {
            decay,
            ema_g2: 0.0,
            ema_tr: 0.0,
            weight: 0.0,
            samples: 0,
        }
    }

    /// `g2_small`: mean over shards of each shard gradient's squared norm (batch `b_small` each);
    /// `g2_big`: squared norm of the averaged gradient (batch `b_big`). Norms must be unscaled.
    pub fn update(&mut self, b_small: f64, g2_small: f64, b_big: f64, g2_big: f64) {
        if !(g2_small.is_finite() && g2_big.is_finite()) || b_big <= b_small {
            return;
        }
        let (g2, tr) = unbiased_estimates(b_small, g2_small, b_big, g2_big);
        self.ema_g2 = self.decay * self.ema_g2 + (1.0 - self.decay) * g2;
        self.ema_tr = self.decay * self.ema_tr + (1.0 - self.decay) * tr;
        self.weight = self.decay * self.weight + (1.0 - self.decay);
        self.samples += 1;
    }

    /// EMA(tr Σ) / EMA(|G|²), once the EMA of |G|² is positive.
    pub fn b_simple(&self) -> Option<f64> {
        if self.samples == 0 || self.ema_g2 <= 0.0 {
            return None;
        }
        let v = self.ema_tr / self.ema_g2;
        (v.is_finite() && v > 0.0).then_some(v)
    }
    pub fn g2(&self) -> f64 {
        self.ema_g2 / self.weight.max(1e-300)
    }
    pub fn trace(&self) -> f64 {
        self.ema_tr / self.weight.max(1e-300)
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
}
