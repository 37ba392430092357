//! A censoring-aware interval for S(B) from a lower-tail model (docs/intervals.md): the
//! report's `steps_ci` (through `bootstrap::bootstrap_all`). It answers two objections
//! to the bootstrap of the minimum it replaced:
//!
//! * a trial cut by early stopping at cap `c` is used as what it is, "steps ≥ c" (right-censored),
//!   never as "never reaches";
//! * the interval narrows as trials that reach accumulate (its width shrinks like σ/√d, d the
//!   number of reaching trials in the lower half), unlike a pivot on the observed minimum, whose
//!   width σ·Gumbel cannot shrink.
//!
//! Model: ln T = μ + σ·W with W standard minimum-Gumbel (T Weibull), fitted to the lower half of
//! the trials only (every value above the median of all values, a never-reaching trial counting as
//! +∞, is censored at that median), so it describes where the best of n lies, not the body of the
//! distribution nor the trials that never reach. Under early stopping the trials are already cut
//! at the records and are used as they are. Given σ, with λ = e^(−μ/σ) and a flat prior on
//! μ, the posterior of λ is exactly Gamma(d, A_σ), A_σ = Σ_all e^(y_i/σ); σ has a flat prior in
//! ln σ on [0.01, 2] and its marginal likelihood is σ^(−d) e^(Σ_events y/σ) A_σ^(−d) (Γ(d) drops).
//! The estimand is S*_n, the median of the best of n trials (a rerun of the same n trials'
//! protocol typically gives it): ln S*_n = μ − σ ln n + σ ln ln 2.

use super::bootstrap::Rng;
use super::stats::median;

/// One trial as the tail model reads it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TailObs {
    /// Reached the target after this many steps.
    Event(f64),
    /// Ran its budget (this many steps) without reaching: its steps are greater.
    Censored(f64),
    /// Cut by early stopping at this cap (the best steps already measured at its B): its steps
    /// are greater.
    Cut(f64),
    /// Never reaches (diverged, out of memory).
    Never,
}

const GRID: usize = 160;
const SIGMA_LO: f64 = 0.01;
const SIGMA_HI: f64 = 2.0;

/// The lower half, as (ln t, reached): values above the median of all values are censored there.
fn lower_half(obs: &[TailObs]) -> Vec<(f64, bool)> {
    let vals: Vec<f64> = obs
        .iter()
        .map(|o| match *o {
            TailObs::Event(t) | TailObs::Censored(t) | TailObs::Cut(t) => t,
            TailObs::Never => f64::INFINITY,
        })
        .collect();
    let largest_finite = vals
        .iter()
        .copied()
        .filter(|v| v.is_finite())
        .fold(0.0_f64, f64::max);
    let mut sorted = vals.clone();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let mut m = sorted
        .get(sorted.len() / 2)
        .copied()
        .unwrap_or(f64::INFINITY);
    if !m.is_finite() || obs.iter().any(|o| matches!(o, TailObs::Cut(_))) {
        // under early stopping the trials are already cut at the best so far (the records):
        // used as they are, a never-reaching one censored at the largest value seen
        m = largest_finite;
    }
    obs.iter()
        .filter_map(|o| {
            let (t, ev) = match *o {
                TailObs::Event(t) if t <= m => (t, true),
                TailObs::Event(_) | TailObs::Never => (m, false),
                TailObs::Censored(c) | TailObs::Cut(c) => (c.min(m), false),
            };
            if t > 0.0 {
                Some((t.ln(), ev))
            } else {
                None
            }
        })
        .collect()
}

fn log_sum_exp(xs: impl Iterator<Item = f64>) -> f64 {
    let v: Vec<f64> = xs.collect();
    let mx = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    mx + v.iter().map(|x| (x - mx).exp()).sum::<f64>().ln()
}

/// The fitted lower tail: σ's posterior on a grid, with each σ's ln A_σ.
pub struct TailFit {
    y0: f64,
    events: usize,
    /// (σ, ln A_σ, cumulative posterior weight)
    grid: Vec<(f64, f64, f64)>,
}

impl TailFit {
    /// None without a trial that reached.
    pub fn new(obs: &[TailObs]) -> Option<TailFit> {
        let data = lower_half(obs);
        let d = data.iter().filter(|x| x.1).count();
        if d == 0 {
            return None;
        }
        let y0 = data.iter().map(|x| x.0).fold(f64::INFINITY, f64::min);
        let step = (SIGMA_HI / SIGMA_LO).ln() / (GRID - 1) as f64;
        let rows: Vec<(f64, f64, f64)> = (0..GRID)
            .map(|i| {
                let sigma = SIGMA_LO * (step * i as f64).exp();
                let ln_a = log_sum_exp(data.iter().map(|&(y, _)| (y - y0) / sigma));
                let s_ev: f64 = data
                    .iter()
                    .filter(|x| x.1)
                    .map(|&(y, _)| (y - y0) / sigma)
                    .sum();
                let ll = -(d as f64) * sigma.ln() + s_ev - d as f64 * ln_a;
                (sigma, ln_a, ll)
            })
            .collect();
        let mx = rows.iter().map(|r| r.2).fold(f64::NEG_INFINITY, f64::max);
        let mut acc = 0.0;
        let mut grid: Vec<(f64, f64, f64)> = rows
            .into_iter()
            .map(|(s, a, ll)| {
                acc += (ll - mx).exp();
                (s, a, acc)
            })
            .collect();
        for g in &mut grid {
            g.2 /= acc;
        }
        Some(TailFit {
            y0,
            events: d,
            grid,
        })
    }

    /// Reaching trials in the lower half (what the interval's width shrinks with).
    pub fn events(&self) -> usize {
        self.events
    }

    /// One posterior draw of (μ, σ) from `rng`: σ from its grid posterior, then λ | σ ~
    /// Gamma(d, A_σ) as a sum of d unit exponentials. The uniforms are taken in a fixed order (σ's
    /// first), so the same stream on data with one more event gives a nearby draw (common random
    /// numbers: `--until` compares intervals before and after a trial with little noise).
    fn draw_params(&self, rng: &mut Rng) -> (f64, f64) {
        let u = unit(rng);
        let i = self.grid.partition_point(|g| g.2 < u).min(GRID - 1);
        let (sigma, ln_a, _) = self.grid[i];
        let g: f64 = (0..self.events).map(|_| -unit(rng).ln()).sum();
        let ln_lambda = g.ln() - ln_a;
        (self.y0 - sigma * ln_lambda, sigma)
    }

    /// `count` posterior draws of ln S*_n (the median best-of-`n`), from a fixed `seed` (each draw
    /// from its own stream).
    pub fn draws_ln_best_median(&self, n: usize, count: usize, seed: u64) -> Vec<f64> {
        let shift = (2f64.ln()).ln() - (n.max(1) as f64).ln();
        (0..count)
            .map(|j| {
                let mut rng = Rng::new(crate::core::splitmix64(seed ^ ((j as u64) << 1)));
                let (mu, sigma) = self.draw_params(&mut rng);
                mu + sigma * shift
            })
            .collect()
    }

    /// One trial's steps drawn from the posterior predictive (the lower-tail model: the body
    /// above the fitted half is extrapolated, which matters only below a cap near the tail).
    pub(crate) fn draw_trial(&self, rng: &mut Rng) -> f64 {
        let (mu, sigma) = self.draw_params(rng);
        // W standard minimum-Gumbel: ln of a unit exponential
        let w = (-unit(rng).ln()).ln();
        (mu + sigma * w).exp()
    }

    /// The posterior median of σ.
    pub fn sigma_median(&self) -> f64 {
        let i = self.grid.partition_point(|g| g.2 < 0.5).min(GRID - 1);
        self.grid[i].0
    }
}

fn unit(r: &mut Rng) -> f64 {
    ((r.next() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
}

/// The 95 % interval for S*_n in steps (None without a reaching trial), from `draws` draws.
pub fn interval_best_median(obs: &[TailObs], draws: usize, seed: u64) -> Option<[f64; 2]> {
    let fit = TailFit::new(obs)?;
    let v = fit.draws_ln_best_median(obs.len(), draws, seed);
    let [lo, hi] = super::stats::interval95(v)?;
    Some([lo.exp(), hi.exp()])
}

/// The relative half-width of [`interval_best_median`] around the median of its draws.
pub fn rel_half_width(obs: &[TailObs], draws: usize, seed: u64) -> Option<f64> {
    let fit = TailFit::new(obs)?;
    let v = fit.draws_ln_best_median(obs.len(), draws, seed);
    let mid = median(v.clone())?.exp();
    let [lo, hi] = super::stats::interval95(v)?;
    Some((hi.exp() - lo.exp()) / 2.0 / mid)
}

#[cfg(test)]
mod tests;
