//! The bootstrap — the one place the analysis resamples (docs/science.md §8; see the module
//! documentation of `analysis`): per-B draws of ln S(B) and `steps_ci`, and the refits of the fit
//! and the regime boundaries to one draw per B.

use super::censored::{TailFit, TailObs};
use super::fit::fit_core;
use super::regimes::segmented_fit;
use super::stats::{interval95, interval95_about};
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

/// How the lower-tail model reads one trial's observation (`analysis::censored`): a trial cut by
/// early stopping at cap c is "steps ≥ c" (censored), never "never reaches"; a diverged or
/// out-of-memory trial never reaches; a cancelled one is not a trial.
pub fn tail_obs(o: Observation) -> Option<TailObs> {
    Some(match o {
        Observation::Reached { step } => TailObs::Event(step as f64),
        Observation::Censored {
            at,
            early_stopped: true,
        } => TailObs::Cut(at as f64),
        Observation::Censored {
            at,
            early_stopped: false,
        } => TailObs::Censored(at as f64),
        Observation::NotReached { budget } => TailObs::Censored(budget as f64),
        Observation::Diverged { .. } | Observation::Oom { .. } => TailObs::Never,
        Observation::Cancelled => return None,
    })
}

/// The per-B seed of the draws (the same records give the same intervals).
pub fn draw_seed(batch_size: usize) -> u64 {
    crate::core::splitmix64(0xb007_5742_u64 ^ batch_size as u64)
}

/// The tail-model observations of the non-cancelled search trials at `b`.
pub(crate) fn tail_obs_at(observed: &Observed, b: usize) -> Vec<TailObs> {
    observed.at(b).into_iter().filter_map(tail_obs).collect()
}

/// `BOOTSTRAP_DRAWS` draws of ln S*_n from the tail model of `obs` (the trials at a B whose draws
/// are seeded by `seed`); None with fewer than two trials or none that reached (one trial says
/// nothing of the spread).
pub(crate) fn tail_draws(obs: &[TailObs], seed: u64) -> Option<Vec<f64>> {
    let fit = TailFit::new(obs).filter(|_| obs.len() >= 2)?;
    Some(fit.draws_ln_best_median(obs.len(), BOOTSTRAP_DRAWS, seed))
}

/// Sets `steps_ci` of every measured B and returns its ln S draws (one vector per B with steps, in
/// `per_batch` order). Reads the trials' observations at one target only (`steps::Observed`).
///
/// `steps_ci` is the 95 % interval of the censoring-aware lower-tail model
/// (`analysis::censored`, docs/intervals.md) for S*_K — the median of the best of the K
/// non-cancelled search trials at B, what a rerun of the same protocol typically gives — widened to
/// contain S(B) and, with `--repeats`, the repeats' min–max (seed noise at the best
/// metaparameters). It needs at least two trials (or repeats). The draws feed the fit and
/// regime refits.
pub(crate) fn bootstrap_all(observed: &Observed, per_batch: &mut [BatchPoint]) -> Vec<Vec<f64>> {
    let mut out = Vec::new();
    for p in per_batch.iter_mut() {
        let Some(best) = p.steps else { continue };
        let obs = tail_obs_at(observed, p.batch_size);
        // without a model (one trial) the refits take S(B) as it is there
        let draws = tail_draws(&obs, draw_seed(p.batch_size))
            .unwrap_or_else(|| vec![(best.max(1) as f64).ln(); BOOTSTRAP_DRAWS]);
        let repeats = p.repeat_steps.as_ref().filter(|r| r.runs >= 2);
        if obs.len() >= 2 || repeats.is_some() {
            if let Some([lo, hi]) = interval95(draws.clone()) {
                let mut lo = (lo.exp() * (1.0 + 1e-9)).floor() as u64;
                let mut hi = (hi.exp() * (1.0 - 1e-9)).ceil() as u64;
                if let Some(r) = repeats {
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
    // only: the same numbers in the same order as one after the other; a reading at another target
    // fits a TUI frame)
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
    f.b_crit_ci = interval95_about(boot.iter().map(|b| b.b_crit).collect(), f.b_crit);
    f.s_min_ci = interval95_about(boot.iter().map(|b| b.s_min).collect(), f.s_min);
    let wide = |ci: Option<[f64; 2]>, v: f64| ci.is_some_and(|[lo, hi]| hi - lo > v);
    f.uncertain = f.r2 < 0.9 || wide(f.b_crit_ci, f.b_crit) || wide(f.s_min_ci, f.s_min);
}
