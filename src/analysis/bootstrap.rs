//! The bootstrap — the one place the analysis resamples (science.md §8; see the module
//! documentation of `analysis`): per-B draws of ln S(B) and `steps_ci`, and the refits of the fit
//! and the regime boundaries to one draw per B.

use super::fit::fit_core;
use super::regimes::segmented_fit;
use super::stats::interval95;
use super::steps::{Observation, Observed};
use crate::core::analysis::{BatchPoint, Fit};

/// Bootstrap draws per batch size.
pub const BOOTSTRAP_DRAWS: usize = 400;
/// Refits for the fit and boundary intervals.
pub const FIT_BOOTSTRAP: usize = 200;

/// A small deterministic generator (SplitMix64 stream) for the bootstrap.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed)
    }
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        crate::core::splitmix64(self.0)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// `BOOTSTRAP_DRAWS` draws of ln S(B) (see the module documentation). `outcomes`: one entry per
/// non-cancelled search trial at B (Some(steps) if it reached); `best` their minimum; `cap` bounds a
/// resample without any reaching trial; `seed_log_ratios`: ln(repeat steps / their median).
pub fn bootstrap_min(
    outcomes: &[Option<u64>],
    best: u64,
    cap: u64,
    seed_log_ratios: &[f64],
    seed: u64,
) -> Vec<f64> {
    let mut rng = Rng::new(seed);
    let best = best.max(1);
    let lb = (best as f64).ln();
    let dcap = (cap.max(best) as f64 / best as f64).ln();
    let n = outcomes.len();
    (0..BOOTSTRAP_DRAWS)
        .map(|_| {
            let mut m: Option<u64> = None;
            for _ in 0..n {
                if let Some(s) = outcomes[rng.below(n)] {
                    m = Some(m.map_or(s, |x| x.min(s)));
                }
            }
            let d = m.map_or(dcap, |m| (m.max(best) as f64 / best as f64).ln().min(dcap));
            let sign = if rng.next() & 1 == 0 { 1.0 } else { -1.0 };
            let mut x = lb + sign * d;
            if !seed_log_ratios.is_empty() {
                x += seed_log_ratios[rng.below(seed_log_ratios.len())];
            }
            x
        })
        .collect()
}

/// What the bootstrap of one batch size resamples: the outcomes of its non-cancelled search
/// trials, the cap of a resample that never reaches, and the seed ratios of the repeats.
struct Sample {
    outcomes: Vec<Option<u64>>,
    cap: u64,
    seed_log_ratios: Vec<f64>,
}

/// The sample of one batch size from its search trials' observations (`obs`) and the
/// observations of the best trial's repeats (`repeats`).
fn sample_at(obs: &[Observation], repeats: &[Observation], p: &BatchPoint, best: u64) -> Sample {
    let at_b: Vec<Observation> = obs
        .iter()
        .copied()
        .filter(|o| !matches!(o, Observation::Cancelled))
        .collect();
    let outcomes: Vec<Option<u64>> = at_b.iter().map(|o| o.steps()).collect();
    let cap = at_b
        .iter()
        .map(|o| match *o {
            Observation::Reached { step } => step,
            Observation::NotReached { budget } => budget,
            _ => 0,
        })
        .max()
        .unwrap_or(0)
        .max(2 * best);
    let seed_log_ratios: Vec<f64> = match &p.repeat_steps {
        Some(r) if r.runs >= 2 => {
            let mut v = vec![best];
            if p.best_trial.is_some() {
                v.extend(repeats.iter().filter_map(|o| o.steps()));
            }
            v.iter()
                .map(|&s| (s.max(1) as f64 / r.median.max(1.0)).ln())
                .collect()
        }
        _ => Vec::new(),
    };
    Sample {
        outcomes,
        cap,
        seed_log_ratios,
    }
}

/// Sets `steps_ci` of every measured B and returns its ln S draws (one vector per B with steps, in
/// `per_batch` order). Reads the trials' observations at one target only (`steps::Observed`).
pub(crate) fn bootstrap_all(observed: &Observed, per_batch: &mut [BatchPoint]) -> Vec<Vec<f64>> {
    let mut out = Vec::new();
    for p in per_batch.iter_mut() {
        let Some(best) = p.steps else { continue };
        let repeats = p
            .best_trial
            .map(|id| observed.repeats_of(id))
            .unwrap_or_default();
        let s = sample_at(&observed.at(p.batch_size), &repeats, p, best);
        let seed = crate::core::splitmix64(0xb007_5742_u64 ^ p.batch_size as u64);
        let draws = bootstrap_min(&s.outcomes, best, s.cap, &s.seed_log_ratios, seed);
        if s.outcomes.len() >= 2 || !s.seed_log_ratios.is_empty() {
            if let Some([lo, hi]) = interval95(draws.clone()) {
                let mut lo = (lo.exp() * (1.0 + 1e-9)).floor() as u64;
                let mut hi = (hi.exp() * (1.0 - 1e-9)).ceil() as u64;
                if let Some(r) = &p.repeat_steps {
                    lo = lo.min(r.min);
                    hi = hi.max(r.max);
                }
                p.steps_ci = Some([lo.min(best), hi.max(best)]);
            }
        }
        out.push(draws);
    }
    out
}

/// One bootstrap refit.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BootFit {
    pub b_crit: f64,
    pub s_min: f64,
    /// End of perfect scaling / start of maximal data parallelism (segmented model).
    pub p_end: f64,
    pub m_start: f64,
}

/// `FIT_BOOTSTRAP` refits of the fit and the segmented model, each to one draw per B.
pub(crate) fn bootstrap_fits(pts: &[(f64, f64)], draws: &[Vec<f64>]) -> Vec<BootFit> {
    if draws.len() != pts.len() || pts.len() < 3 {
        return Vec::new();
    }
    let mut rng = Rng::new(0x5ca1_ab1e);
    // the resamples drawn in order, then refitted in parallel (each refit reads its own sample
    // only: the same numbers in the same order as one after the other; issue 22's frame budget)
    let samples: Vec<Vec<(f64, f64)>> = (0..FIT_BOOTSTRAP)
        .map(|_| {
            pts.iter()
                .zip(draws)
                .map(|(&(b, _), d)| (b, d[rng.below(d.len())].exp()))
                .collect()
        })
        .collect();
    use rayon::prelude::*;
    let fits: Vec<Option<BootFit>> = samples
        .par_iter()
        .map(|p| {
            let f = fit_core(p, 120, 40)?;
            let (p_end, m_start) = segmented_fit(p)?.boundaries();
            Some(BootFit {
                b_crit: f.b_crit,
                s_min: f.s_min,
                p_end,
                m_start,
            })
        })
        .collect();
    fits.into_iter().flatten().collect()
}

/// The fit's intervals from the refits, and its verdict: uncertain when r² < 0.9 or an interval
/// is wider than its value.
pub(crate) fn attach_fit_intervals(f: &mut Fit, boot: &[BootFit]) {
    f.b_crit_ci = interval95(boot.iter().map(|b| b.b_crit).collect());
    f.s_min_ci = interval95(boot.iter().map(|b| b.s_min).collect());
    let wide = |ci: Option<[f64; 2]>, v: f64| ci.is_some_and(|[lo, hi]| hi - lo > v);
    f.uncertain = f.r2 < 0.9 || wide(f.b_crit_ci, f.b_crit) || wide(f.s_min_ci, f.s_min);
}
