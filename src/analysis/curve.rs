//! Pure analysis of a sweep's trial records (science.md §1, §2).
//!
//! * **Steps-to-target per B** exactly as Shallue et al.: the earliest evaluation step, over all
//!   trials at that batch size, at which the validation metric met the target; that trial is the
//!   best trial. Diverged and not-reached trials are kept and counted; cancelled trials are counted
//!   separately and never contribute a result.
//! * **Perfect-scaling reference** `S(B0)·B0/B`, anchored at the smallest B that reached the target.
//! * **Segments** between consecutive measured batch sizes with their local slope
//!   `d ln S / d ln B` (kept for reference; too noisy to name regimes from).
//! * **Regimes as one ordered partition** (`regimes`): ln S is smoothed to be non-increasing in
//!   ln B (isotonic regression, pool-adjacent-violators), then a segmented model is fitted by least
//!   squares — slope −1 below a breakpoint b1, slope −½ between b1 and b2 (the model's slope at
//!   B_crit), slope 0 above b2. Perfect scaling is B ≤ b1, maximal data parallelism B ≥ b2,
//!   diminishing returns between. So there is at most one span per regime, in order. A
//!   span is named only if at least two measured batch sizes lie in it; otherwise a note says what
//!   the data cannot support ("maximal data parallelism not reached below B = 1024"). Boundaries get
//!   95 % intervals from refits to bootstrap draws, and are cross-checked against the fit below,
//!   whose slope −B_crit/(B + B_crit) crosses −0.75 at B_crit/3 and −0.25 at 3·B_crit.
//! * **Fit** of `S = S_min·(1 + B_crit/B)` by least squares on ln S (McCandlish et al.): for a fixed
//!   B_crit the optimal ln S_min is closed-form (the mean residual), so the fit is a 1-D search over
//!   ln B_crit (a dense grid, then golden-section refinement). Needs ≥ 3 measured points.
//! * **Uncertainty** (science.md §8). Per B, the K search trials are resampled with replacement and
//!   the minimum recomputed (a resample without a reaching trial counts as "no result", capped at the
//!   largest budget seen; early-stopped trials count as not reached, which can only widen the
//!   interval). The minimum of a resample can never fall below the observed minimum, so the draws'
//!   log-distance from it is symmetrised (a random sign): `steps_ci` is the 2.5–97.5 % range of
//!   those draws, i.e. the spread of best-of-K due to which K points were drawn, on both sides.
//!   With `--repeats`, each draw is also multiplied by a random seed ratio (repeat / median of the
//!   repeats). Fit and boundary intervals refit the model to one draw per B, 200 times. All random
//!   numbers come from fixed seeds: the same records give the same intervals.
//! * **Repeats** (`TrialSpec::repeat_of`): S(B) stays the best-of-K minimum over the *search* trials
//!   (the paper's definition; the counts too are of search trials). Repeats only give
//!   `repeat_steps` (median, min–max over seeds of the best metaparameters) and widen `steps_ci`.
//! * **Search-space edges** (`analyze_preset`): a best trial whose η or 1−γ lies in the outer 10 %
//!   of the range (log scale) is flagged: S(B) there is an upper bound.
//! * **Noise prediction**: the median B_simple over the best trials (McCandlish et al.: B_crit ≈ B_simple).
//! * **LR rules**: the best η (and η/(1−γ)) per B against the linear and sqrt rules from the smallest B.

use std::collections::BTreeMap;

use crate::core::analysis::{
    Analysis, BatchPoint, Fit, LrRulePoint, Regime, RegimeSpan, RepeatSteps, SearchEdge, Segment,
};
use crate::core::record::TrialRecord;
use crate::core::trial::Outcome;
use crate::core::widen::{shift_range, RangeShift, WIDEN_MAX_SHIFT};
use crate::workload::spec::{LrRule, OptimizerKind, Preset, SearchSpace, Target};

/// Slope at or below which a segment is "perfect scaling".
pub const PERFECT_SLOPE: f64 = -0.75;
/// Slope at or above which a segment is "maximal data parallelism".
pub const MAXIMAL_SLOPE: f64 = -0.25;
/// Bootstrap draws per batch size.
pub const BOOTSTRAP_DRAWS: usize = 400;
/// Refits for the fit and boundary intervals.
pub const FIT_BOOTSTRAP: usize = 200;
/// A regime boundary whose 95 % interval spans more than this factor in B (3 doublings) is
/// "poorly determined".
pub const WIDE_BOUNDARY: f64 = 8.0;
/// Outer fraction (log scale) of a search range that counts as its edge.
pub const EDGE_FRACTION: f64 = 0.1;

/// Analyses the finished trials of a sweep. Records with a repeated `trial_id` keep the last one.
/// Without the search space no search-edge check is made (see `analyze_preset`).
pub fn analyze(target: &Target, trials: &[TrialRecord], optimizer: OptimizerKind) -> Analysis {
    analyze_with(target, trials, optimizer, None)
}

/// `analyze` plus the checks that need the preset's search space (search-edge flags, LR-rule note).
pub fn analyze_preset(preset: &Preset, trials: &[TrialRecord]) -> Analysis {
    let w = &preset.workload;
    analyze_with(&w.target, trials, w.optimizer, Some(&preset.search))
}

/// The analysis; `search` enables the search-space checks.
pub fn analyze_with(
    target: &Target,
    trials: &[TrialRecord],
    optimizer: OptimizerKind,
    search: Option<&SearchSpace>,
) -> Analysis {
    let mut per_batch = per_batch(trials, optimizer);
    let draws = bootstrap_all(trials, &mut per_batch);
    let measured: Vec<(usize, u64)> = per_batch
        .iter()
        .filter_map(|p| p.steps.map(|s| (p.batch_size, s)))
        .collect();
    let perfect_anchor = measured.first().copied();
    let segments = segments(&measured);
    let pts: Vec<(f64, f64)> = measured
        .iter()
        .map(|&(b, s)| (b as f64, s as f64))
        .collect();
    let mut fit = fit_scaling(&pts);
    let mut notes = Vec::new();
    let regimes = match &mut fit {
        Some(f) => {
            let boot = bootstrap_fits(&pts, &draws);
            attach_fit_intervals(f, &boot);
            regimes(&pts, &boot, Some(f), &mut notes)
        }
        None => regimes(&pts, &[], None, &mut notes),
    };
    if let Some(f) = fit.as_ref().filter(|f| f.uncertain) {
        notes.push(format!(
            "the fit S = S_min(1 + B_crit/B) is uncertain (r² {:.2}{}): B_crit and anything projected from it are indicative only",
            f.r2,
            f.b_crit_ci
                .map(|[lo, hi]| format!(", B_crit 95 % {lo:.0}–{hi:.0}"))
                .unwrap_or_default()
        ));
    }
    let noise: Vec<f64> = per_batch
        .iter()
        .filter_map(|p| p.b_simple)
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    let lr_rules = lr_rules(&per_batch);
    if let Some(s) = search {
        mark_search_edges(&mut per_batch, trials, s, optimizer, &mut notes);
        if let Some(note) = lr_rule_note(s, &lr_rules) {
            notes.push(note);
        }
    }
    Analysis {
        target: format!("{} <= {}", target.metric.name(), target.value),
        lr_rules,
        per_batch,
        perfect_anchor,
        segments,
        fit,
        noise_prediction: median(noise),
        regimes,
        notes,
    }
}

/// `per_batch` with `steps_ci` (the bootstrap), without the fit: what `--until` decides on.
pub fn per_batch_with_ci(trials: &[TrialRecord], optimizer: OptimizerKind) -> Vec<BatchPoint> {
    let mut p = per_batch(trials, optimizer);
    bootstrap_all(trials, &mut p);
    p
}

/// Keeps the last record per trial_id (a resumed log could in principle repeat one).
pub fn dedup_trials(trials: &[TrialRecord]) -> Vec<&TrialRecord> {
    let mut by_id: BTreeMap<u64, &TrialRecord> = BTreeMap::new();
    for t in trials {
        by_id.insert(t.trial_id, t);
    }
    by_id.into_values().collect()
}

/// Steps-to-target and outcome counts per batch size, sorted by B.
pub fn per_batch(trials: &[TrialRecord], optimizer: OptimizerKind) -> Vec<BatchPoint> {
    let mut groups: BTreeMap<usize, Vec<&TrialRecord>> = BTreeMap::new();
    let all = dedup_trials(trials);
    for t in all.iter().filter(|t| t.spec.repeat_of.is_none()) {
        groups.entry(t.spec.batch_size).or_default().push(t);
    }
    groups
        .into_iter()
        .map(|(b, ts)| {
            let mut p = BatchPoint {
                batch_size: b,
                trials: ts.len(),
                ..Default::default()
            };
            let mut best: Option<(u64, &TrialRecord)> = None;
            for t in &ts {
                match t.outcome.outcome {
                    Outcome::Reached { step } => {
                        p.reached += 1;
                        let better = match best {
                            None => true,
                            Some((s, bt)) => step < s || (step == s && t.trial_id < bt.trial_id),
                        };
                        if better {
                            best = Some((step, t));
                        }
                    }
                    Outcome::NotReached { early_stopped, .. } => {
                        p.not_reached += 1;
                        p.early_stopped += usize::from(early_stopped);
                    }
                    Outcome::Diverged { .. } => p.diverged += 1,
                    Outcome::Cancelled { .. } => p.cancelled += 1,
                    Outcome::Oom { .. } => p.oom += 1,
                }
            }
            if let Some((s, t)) = best {
                let m = &t.spec.metaparams;
                p.steps = Some(s);
                p.best_trial = Some(t.trial_id);
                p.best_lr = Some(m.learning_rate);
                p.best_momentum = optimizer_momentum(optimizer, m.momentum);
                p.best_effective_lr = Some(m.effective_lr(optimizer));
                p.b_simple = t.outcome.noise.b_simple.filter(|x| x.is_finite());
                p.repeat_steps = repeat_steps(s, t.trial_id, &all);
            }
            p
        })
        .collect()
}

fn optimizer_momentum(opt: OptimizerKind, m: f64) -> Option<f64> {
    matches!(
        opt,
        OptimizerKind::Momentum | OptimizerKind::Nesterov | OptimizerKind::Adam
    )
    .then_some(m)
}

/// Classifies a local log-log slope (see the module documentation for the thresholds).
pub fn classify(slope: f64) -> Regime {
    if slope <= PERFECT_SLOPE {
        Regime::Perfect
    } else if slope >= MAXIMAL_SLOPE {
        Regime::Maximal
    } else {
        Regime::Diminishing
    }
}

/// Segments between consecutive measured (B, S) points, sorted by B.
pub fn segments(measured: &[(usize, u64)]) -> Vec<Segment> {
    measured
        .windows(2)
        .map(|w| {
            let (b0, s0) = w[0];
            let (b1, s1) = w[1];
            let slope =
                ((s1 as f64).ln() - (s0 as f64).ln()) / ((b1 as f64).ln() - (b0 as f64).ln());
            Segment {
                b_lo: b0,
                b_hi: b1,
                slope,
                regime: classify(slope),
            }
        })
        .collect()
}

/// Steps on the perfect-scaling line through the anchor (B0, S0): S0·B0/B.
pub fn perfect_scaling_steps(anchor: (usize, u64), b: f64) -> f64 {
    anchor.1 as f64 * anchor.0 as f64 / b
}

fn log_sse(pts: &[(f64, f64)], ln_bc: f64) -> (f64, f64) {
    let bc = ln_bc.exp();
    let n = pts.len() as f64;
    let mean = pts
        .iter()
        .map(|&(b, s)| s.ln() - (1.0 + bc / b).ln())
        .sum::<f64>()
        / n;
    let sse = pts
        .iter()
        .map(|&(b, s)| {
            let r = s.ln() - mean - (1.0 + bc / b).ln();
            r * r
        })
        .sum();
    (sse, mean)
}

/// The points a log-space fit can use (B and S finite and > 0); None when fewer than 3.
fn fittable(pts: &[(f64, f64)]) -> Option<Vec<(f64, f64)>> {
    let pts: Vec<(f64, f64)> = pts
        .iter()
        .copied()
        .filter(|&(b, s)| b > 0.0 && s > 0.0 && b.is_finite() && s.is_finite())
        .collect();
    (pts.len() >= 3).then_some(pts)
}

/// Least-squares fit in log space of S = S_min·(1 + B_crit/B) to (B, S) points.
/// B_crit is searched over [B_min/1000, B_max·1000]; a value near either end means the data show
/// no bend (pure perfect scaling or pure saturation) — see `Fit` users for how it is reported.
pub fn fit_scaling(pts: &[(f64, f64)]) -> Option<Fit> {
    fit_core(pts, 600, 80)
}

/// The fit on a grid of `n_grid` cells refined by `n_golden` golden-section steps.
fn fit_core(pts: &[(f64, f64)], n_grid: usize, n_golden: usize) -> Option<Fit> {
    let pts = fittable(pts)?;
    let bmin = pts.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let bmax = pts.iter().map(|p| p.0).fold(0.0, f64::max);
    let (lo, hi) = ((bmin / 1000.0).ln(), (bmax * 1000.0).ln());
    let n_grid = n_grid.max(2);
    let xs: Vec<f64> = (0..=n_grid)
        .map(|i| lo + (hi - lo) * i as f64 / n_grid as f64)
        .collect();
    let (mut best_i, mut best) = (0, f64::INFINITY);
    for (i, &x) in xs.iter().enumerate() {
        let (e, _) = log_sse(&pts, x);
        if e < best {
            best = e;
            best_i = i;
        }
    }
    // Golden-section refinement on the bracketing grid cells.
    let (mut a, mut b) = (xs[best_i.saturating_sub(1)], xs[(best_i + 1).min(n_grid)]);
    let g = (5f64.sqrt() - 1.0) / 2.0;
    let mut c = b - g * (b - a);
    let mut d = a + g * (b - a);
    for _ in 0..n_golden {
        if log_sse(&pts, c).0 < log_sse(&pts, d).0 {
            b = d;
        } else {
            a = c;
        }
        c = b - g * (b - a);
        d = a + g * (b - a);
    }
    let x = (a + b) / 2.0;
    let (sse, ln_smin) = log_sse(&pts, x);
    let n = pts.len() as f64;
    let mean_ln = pts.iter().map(|p| p.1.ln()).sum::<f64>() / n;
    let sst: f64 = pts.iter().map(|p| (p.1.ln() - mean_ln).powi(2)).sum();
    let r2 = if sst > 1e-12 {
        1.0 - sse / sst
    } else if sse < 1e-12 {
        1.0
    } else {
        0.0
    };
    Some(Fit {
        s_min: ln_smin.exp(),
        b_crit: x.exp(),
        r2,
        rmse_log: (sse / n).sqrt(),
        b_crit_ci: None,
        s_min_ci: None,
        uncertain: r2 < 0.9,
    })
}

/// Where the fitted B_crit lies relative to the measured batch sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FitRange {
    Within,
    /// B_crit far above the largest measured B: the curve never bends (all perfect scaling).
    AboveRange,
    /// B_crit far below the smallest measured B: already saturated everywhere.
    BelowRange,
}

/// B_crit more than 4× outside the measured range is an extrapolation, not a measurement.
pub fn fit_range(fit: &Fit, batch_sizes: &[usize]) -> FitRange {
    let lo = batch_sizes.iter().copied().min().unwrap_or(1) as f64;
    let hi = batch_sizes.iter().copied().max().unwrap_or(1) as f64;
    if fit.b_crit > 4.0 * hi {
        FitRange::AboveRange
    } else if fit.b_crit < lo / 4.0 {
        FitRange::BelowRange
    } else {
        FitRange::Within
    }
}

/// Best η per B against the linear and sqrt rules scaled from the smallest B with a best trial.
pub fn lr_rules(per_batch: &[BatchPoint]) -> Vec<LrRulePoint> {
    let with_best: Vec<&BatchPoint> = per_batch.iter().filter(|p| p.best_lr.is_some()).collect();
    let Some(base) = with_best.first() else {
        return Vec::new();
    };
    let (b0, lr0) = (base.batch_size as f64, base.best_lr.unwrap_or(0.0));
    with_best
        .iter()
        .map(|p| {
            let r = p.batch_size as f64 / b0;
            let lr = p.best_lr.unwrap_or(0.0);
            LrRulePoint {
                batch_size: p.batch_size,
                best_lr: lr,
                best_effective_lr: p.best_effective_lr.unwrap_or(lr),
                linear_rule: lr0 * r,
                sqrt_rule: lr0 * r.sqrt(),
            }
        })
        .collect()
}

/// Least-squares slope of ln(best η) against ln B: 1 = linear rule, 0.5 = sqrt rule.
pub fn lr_scaling_exponent(points: &[LrRulePoint]) -> Option<f64> {
    let pts: Vec<(f64, f64)> = points
        .iter()
        .filter(|p| p.best_lr > 0.0)
        .map(|p| ((p.batch_size as f64).ln(), p.best_lr.ln()))
        .collect();
    if pts.len() < 2 {
        return None;
    }
    let n = pts.len() as f64;
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

pub fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// The best metaparameters' steps over seeds: the best search trial plus its repeats.
fn repeat_steps(best_steps: u64, best_id: u64, all: &[&TrialRecord]) -> Option<RepeatSteps> {
    let reps: Vec<&&TrialRecord> = all
        .iter()
        .filter(|t| t.spec.repeat_of == Some(best_id))
        .filter(|t| !matches!(t.outcome.outcome, Outcome::Cancelled { .. }))
        .collect();
    if reps.is_empty() {
        return None;
    }
    let mut v: Vec<u64> = vec![best_steps];
    v.extend(
        reps.iter()
            .filter_map(|t| t.outcome.outcome.steps_to_target()),
    );
    let not_reached = reps.len() + 1 - v.len();
    v.sort_unstable();
    Some(RepeatSteps {
        runs: v.len(),
        not_reached,
        median: median(v.iter().map(|&x| x as f64).collect()).unwrap_or(best_steps as f64),
        min: v[0],
        max: v[v.len() - 1],
    })
}

/// A small deterministic generator (SplitMix64 stream) for the bootstrap.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed)
    }
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        crate::core::splitmix64(self.0)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Linear-interpolated quantile of sorted values (q in [0, 1]).
fn quantile_sorted(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let x = q.clamp(0.0, 1.0) * (v.len() - 1) as f64;
    let (i, f) = (x.floor() as usize, x - x.floor());
    if i + 1 < v.len() {
        v[i] + f * (v[i + 1] - v[i])
    } else {
        v[i]
    }
}

/// 2.5 % and 97.5 % quantiles.
fn interval95(mut v: Vec<f64>) -> Option<[f64; 2]> {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    Some([quantile_sorted(&v, 0.025), quantile_sorted(&v, 0.975)])
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

/// Sets `steps_ci` of every measured B and returns its ln S draws (one vector per B with steps, in
/// `per_batch` order).
fn bootstrap_all(trials: &[TrialRecord], per_batch: &mut [BatchPoint]) -> Vec<Vec<f64>> {
    let all = dedup_trials(trials);
    let mut out = Vec::new();
    for p in per_batch.iter_mut() {
        let Some(best) = p.steps else { continue };
        let at_b: Vec<&&TrialRecord> = all
            .iter()
            .filter(|t| t.spec.batch_size == p.batch_size && t.spec.repeat_of.is_none())
            .filter(|t| !matches!(t.outcome.outcome, Outcome::Cancelled { .. }))
            .collect();
        let outcomes: Vec<Option<u64>> = at_b
            .iter()
            .map(|t| t.outcome.outcome.steps_to_target())
            .collect();
        let cap = at_b
            .iter()
            .map(|t| match t.outcome.outcome {
                Outcome::Reached { step } => step,
                Outcome::NotReached {
                    budget,
                    early_stopped: false,
                } => budget,
                _ => 0,
            })
            .max()
            .unwrap_or(0)
            .max(2 * best);
        let seed_log_ratios: Vec<f64> = match &p.repeat_steps {
            Some(r) if r.runs >= 2 => {
                let mut v = vec![best];
                if let Some(id) = p.best_trial {
                    v.extend(
                        all.iter()
                            .filter(|t| t.spec.repeat_of == Some(id))
                            .filter_map(|t| t.outcome.outcome.steps_to_target()),
                    );
                }
                v.iter()
                    .map(|&s| (s.max(1) as f64 / r.median.max(1.0)).ln())
                    .collect()
            }
            _ => Vec::new(),
        };
        let seed = crate::core::splitmix64(0xb007_5742_u64 ^ p.batch_size as u64);
        let draws = bootstrap_min(&outcomes, best, cap, &seed_log_ratios, seed);
        if outcomes.len() >= 2 || !seed_log_ratios.is_empty() {
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
struct BootFit {
    b_crit: f64,
    s_min: f64,
    /// End of perfect scaling / start of maximal data parallelism (segmented model).
    p_end: f64,
    m_start: f64,
}

fn bootstrap_fits(pts: &[(f64, f64)], draws: &[Vec<f64>]) -> Vec<BootFit> {
    if draws.len() != pts.len() || pts.len() < 3 {
        return Vec::new();
    }
    let mut rng = Rng::new(0x5ca1_ab1e);
    (0..FIT_BOOTSTRAP)
        .filter_map(|_| {
            let p: Vec<(f64, f64)> = pts
                .iter()
                .zip(draws)
                .map(|(&(b, _), d)| (b, d[rng.below(d.len())].exp()))
                .collect();
            let f = fit_core(&p, 120, 40)?;
            let (p_end, m_start) = segmented_fit(&p)?.boundaries();
            Some(BootFit {
                b_crit: f.b_crit,
                s_min: f.s_min,
                p_end,
                m_start,
            })
        })
        .collect()
}

fn attach_fit_intervals(f: &mut Fit, boot: &[BootFit]) {
    f.b_crit_ci = interval95(boot.iter().map(|b| b.b_crit).collect());
    f.s_min_ci = interval95(boot.iter().map(|b| b.s_min).collect());
    let wide = |ci: Option<[f64; 2]>, v: f64| ci.is_some_and(|[lo, hi]| hi - lo > v);
    f.uncertain = f.r2 < 0.9 || wide(f.b_crit_ci, f.b_crit) || wide(f.s_min_ci, f.s_min);
}

/// Pool-adjacent-violators: the non-increasing sequence closest to `y` in least squares.
pub fn isotonic_non_increasing(y: &[f64]) -> Vec<f64> {
    // Blocks of (sum, count); merge while a block's mean exceeds its predecessor's.
    let mut blocks: Vec<(f64, usize)> = Vec::with_capacity(y.len());
    for &v in y {
        blocks.push((v, 1));
        while blocks.len() >= 2 {
            let (s1, n1) = blocks[blocks.len() - 1];
            let (s0, n0) = blocks[blocks.len() - 2];
            if s1 / n1 as f64 > s0 / n0 as f64 {
                blocks.pop();
                let last = blocks.len() - 1;
                blocks[last] = (s0 + s1, n0 + n1);
            } else {
                break;
            }
        }
    }
    blocks
        .iter()
        .flat_map(|&(s, n)| std::iter::repeat_n(s / n as f64, n))
        .collect()
}

/// Magnitude of the middle slope of the segmented model: −½, the slope of S_min(1 + B_crit/B) at
/// B = B_crit, halfway between the ideal slopes −1 and 0. (A free middle slope lets a long, gently
/// falling tail of a noisy curve pass for "flat", merging diminishing returns into maximal data
/// parallelism; a fixed one keeps the three pieces comparable between sweeps.)
pub const MIDDLE_SLOPE: f64 = 0.5;

/// The segmented model of ln S vs ln B: slope −1 below b1, −½ between, 0 above b2 (b1 = b2: a
/// sharp turn, no diminishing-returns band).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Segmented {
    pub b1: f64,
    pub b2: f64,
    /// Magnitude of the middle slope (`MIDDLE_SLOPE`).
    pub m: f64,
    pub rmse_log: f64,
}

impl Segmented {
    /// (end of perfect scaling, start of maximal data parallelism).
    pub fn boundaries(&self) -> (f64, f64) {
        (self.b1, self.b2)
    }
}

/// Least-squares segmented fit (breakpoints on a grid of the measured ln B range plus the measured
/// points) to the isotonic smoothing of ln S. `pts` are (B, S); needs ≥ 3.
pub fn segmented_fit(pts: &[(f64, f64)]) -> Option<Segmented> {
    let mut pts = fittable(pts)?;
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let xs: Vec<f64> = pts.iter().map(|p| p.0.ln()).collect();
    let ys = isotonic_non_increasing(&pts.iter().map(|p| p.1.ln()).collect::<Vec<_>>());
    let (x0, x1) = (xs[0], xs[xs.len() - 1]);
    const G: usize = 48;
    let mut grid: Vec<f64> = (0..=G)
        .map(|i| x0 + (x1 - x0) * i as f64 / G as f64)
        .chain(xs.iter().copied())
        .collect();
    grid.sort_by(|a, b| a.total_cmp(b));
    grid.dedup_by(|a, b| (*a - *b).abs() < 1e-12);
    let n = xs.len() as f64;
    let mut best: Option<(f64, Segmented)> = None;
    for (i, &c1) in grid.iter().enumerate() {
        for &c2 in &grid[i..] {
            // y ≈ Y + m·g(x) + h(x), g = max(0, c2 − max(x, c1)), h = max(0, c1 − x).
            let g: Vec<f64> = xs.iter().map(|&x| (c2 - x.max(c1)).max(0.0)).collect();
            let r: Vec<f64> = xs
                .iter()
                .zip(&ys)
                .map(|(&x, &y)| y - (c1 - x).max(0.0))
                .collect();
            let m = MIDDLE_SLOPE;
            let y0 = g.iter().zip(&r).map(|(gv, rv)| rv - m * gv).sum::<f64>() / n;
            let sse: f64 = g
                .iter()
                .zip(&r)
                .map(|(gv, rv)| (rv - y0 - m * gv).powi(2))
                .sum();
            if best.as_ref().is_none_or(|(e, _)| sse < *e - 1e-12) {
                best = Some((
                    sse,
                    Segmented {
                        b1: c1.exp(),
                        b2: c2.exp(),
                        m,
                        rmse_log: (sse / n).sqrt(),
                    },
                ));
            }
        }
    }
    best.map(|(_, s)| s)
}

/// Measured batch sizes within [lo, hi] (5 % tolerance).
fn points_in(bs: &[f64], lo: f64, hi: f64) -> usize {
    bs.iter()
        .filter(|&&b| b >= lo / 1.05 && b <= hi * 1.05)
        .count()
}

fn fmt_b(b: f64) -> String {
    if b >= 10.0 || (b - b.round()).abs() < 1e-9 {
        format!("{:.0}", b)
    } else {
        format!("{:.1}", b)
    }
}

/// The regimes of a sweep as one ordered partition of its measured range (see the module
/// documentation). `pts`: measured (B, S) sorted by B; `boot`: bootstrap refits (may be empty);
/// `fit`: the S_min(1 + B_crit/B) fit, for the cross-check. Adds what cannot be supported to `notes`.
fn regimes(
    pts: &[(f64, f64)],
    boot: &[BootFit],
    fit: Option<&Fit>,
    notes: &mut Vec<String>,
) -> Vec<RegimeSpan> {
    let Some(seg) = segmented_fit(pts) else {
        notes.push(format!(
            "regimes need at least 3 batch sizes that reached the target ({} did)",
            pts.len()
        ));
        return Vec::new();
    };
    let bs: Vec<f64> = pts.iter().map(|p| p.0).collect();
    let (bmin, bmax) = (bs[0], bs[bs.len() - 1]);
    let (p_end, m_start) = seg.boundaries();
    let p_ci = interval95(boot.iter().map(|b| b.p_end).collect());
    let m_ci = interval95(boot.iter().map(|b| b.m_start).collect());
    let perfect = points_in(&bs, bmin, p_end) >= 2;
    let maximal = points_in(&bs, m_start, bmax) >= 2;
    let lo_d = if perfect { p_end } else { bmin };
    let hi_d = if maximal { m_start } else { bmax };
    let diminishing = points_in(&bs, lo_d, hi_d) >= 2 && hi_d > lo_d * 1.05;
    let wide = |ci: Option<[f64; 2]>| ci.is_some_and(|[lo, hi]| hi > WIDE_BOUNDARY * lo);
    let mut spans = Vec::new();
    if perfect {
        let hi = if diminishing || maximal { p_end } else { bmax };
        let ci = (hi < bmax).then_some(p_ci).flatten();
        spans.push(RegimeSpan {
            regime: Regime::Perfect,
            b_lo: bmin,
            b_hi: hi,
            b_lo_ci: None,
            b_hi_ci: ci,
            points: points_in(&bs, bmin, hi),
            uncertain: wide(ci),
        });
    }
    if diminishing {
        let lo_ci = perfect.then_some(p_ci).flatten();
        let hi_ci = maximal.then_some(m_ci).flatten();
        spans.push(RegimeSpan {
            regime: Regime::Diminishing,
            b_lo: lo_d,
            b_hi: hi_d,
            b_lo_ci: lo_ci,
            b_hi_ci: hi_ci,
            points: points_in(&bs, lo_d, hi_d),
            uncertain: wide(lo_ci) || wide(hi_ci),
        });
    }
    if maximal {
        let lo = if diminishing || perfect {
            m_start
        } else {
            bmin
        };
        let ci = (lo > bmin).then_some(m_ci).flatten();
        spans.push(RegimeSpan {
            regime: Regime::Maximal,
            b_lo: lo,
            b_hi: bmax,
            b_lo_ci: ci,
            b_hi_ci: None,
            points: points_in(&bs, lo, bmax),
            uncertain: wide(ci),
        });
    }
    if !perfect {
        notes.push(format!(
            "perfect scaling not observed: S already falls slower than 1/B from the smallest \
             measured B = {}",
            fmt_b(bmin)
        ));
    }
    if !maximal {
        notes.push(format!(
            "maximal data parallelism not reached below B = {}",
            fmt_b(bmax)
        ));
    }
    if perfect && maximal && !diminishing {
        notes.push(format!(
            "no diminishing-returns band resolved: the curve turns from perfect scaling to flat \
             between B = {} and {}",
            fmt_b(p_end),
            fmt_b(m_start)
        ));
    }
    for s in &spans {
        for (what, ci) in [("start", s.b_lo_ci), ("end", s.b_hi_ci)] {
            if let Some([lo, hi]) = ci.filter(|c| wide(Some(*c))) {
                notes.push(format!(
                    "the {what} of {} is poorly determined (95 % B ≈ {}–{})",
                    s.regime.label(),
                    fmt_b(lo),
                    fmt_b(hi)
                ));
            }
        }
    }
    // Cross-check with the S_min(1 + B_crit/B) fit: slope −0.75 at B_crit/3, −0.25 at 3·B_crit.
    if let Some(f) = fit.filter(|f| !f.uncertain) {
        let overlap = |a: [f64; 2], b: [f64; 2]| a[0] <= b[1] && b[0] <= a[1];
        if let (true, Some(ci), Some([lo, hi])) = (perfect && p_end < bmax, p_ci, f.b_crit_ci) {
            if !overlap(ci, [lo / 3.0, hi / 3.0]) {
                notes.push(format!(
                    "the fit puts the end of perfect scaling at B_crit/3 ≈ {} ({}–{}), the \
                     segmented model at {}: the curve bends more sharply than S_min(1 + B_crit/B)",
                    fmt_b(f.b_crit / 3.0),
                    fmt_b(lo / 3.0),
                    fmt_b(hi / 3.0),
                    fmt_b(p_end)
                ));
            }
        }
        if let (true, Some(ci), Some([lo, hi])) = (maximal && m_start > bmin, m_ci, f.b_crit_ci) {
            if !overlap(ci, [lo * 3.0, hi * 3.0]) {
                notes.push(format!(
                    "the fit puts the start of maximal data parallelism at 3·B_crit ≈ {} ({}–{}), \
                     the segmented model at {}",
                    fmt_b(f.b_crit * 3.0),
                    fmt_b(lo * 3.0),
                    fmt_b(hi * 3.0),
                    fmt_b(m_start)
                ));
            }
        }
    }
    spans
}

/// One line for every view: "perfect 8–16 → diminishing 16–256 → maximal 256–1024 · boundaries
/// 16 [11–23], 256 [128–512]", then what the data cannot support.
pub fn regimes_line(a: &Analysis) -> String {
    let mut out = String::new();
    if a.regimes.is_empty() {
        out.push_str("regimes: not enough data");
    }
    let mut bounds = Vec::new();
    for (i, s) in a.regimes.iter().enumerate() {
        if i > 0 {
            out.push_str(" → ");
        }
        out.push_str(&format!(
            "{} {}–{}{}",
            s.regime.short(),
            fmt_b(s.b_lo),
            fmt_b(s.b_hi),
            if s.uncertain { "?" } else { "" }
        ));
        if let Some([lo, hi]) = s.b_hi_ci {
            bounds.push(format!("{} [{}–{}]", fmt_b(s.b_hi), fmt_b(lo), fmt_b(hi)));
        }
    }
    if !bounds.is_empty() {
        out.push_str(" · boundaries ");
        out.push_str(&bounds.join(", "));
    }
    let has = |r: Regime| a.regimes.iter().any(|s| s.regime == r);
    if !a.regimes.is_empty() {
        if let Some(bmax) = a
            .regimes
            .last()
            .map(|s| s.b_hi)
            .filter(|_| !has(Regime::Maximal))
        {
            out.push_str(&format!(" · maximal not reached below {}", fmt_b(bmax)));
        }
        if !has(Regime::Perfect) {
            out.push_str(" · perfect not observed");
        }
    }
    out
}

/// Which edges of the search space a value sits at: `t` = position in [lo, hi] in log space.
fn edge_of(range: [f64; 2], v: f64) -> Option<bool> {
    let (lo, hi) = (range[0].ln(), range[1].ln());
    if hi.partial_cmp(&lo) != Some(std::cmp::Ordering::Greater)
        || v.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater)
    {
        return None;
    }
    let t = (v.ln() - lo) / (hi - lo);
    if t < EDGE_FRACTION {
        Some(false)
    } else if t > 1.0 - EDGE_FRACTION {
        Some(true)
    } else {
        None
    }
}

/// The edges of the search space at which a best trial with (η, γ) at batch size `b` sits
/// (the preset's ranges at `b`; see `explored_ranges` for a sweep that re-centred them).
pub fn search_edges(
    search: &SearchSpace,
    optimizer: OptimizerKind,
    b: usize,
    lr: f64,
    momentum: Option<f64>,
) -> Vec<SearchEdge> {
    edges_in(
        search.lr_range_at(b),
        search.one_minus_momentum,
        optimizer,
        lr,
        momentum,
    )
}

/// The edges of the ranges `lr_range` (η) and `omm_range` (1−γ) at which (η, γ) sits.
pub fn edges_in(
    lr_range: [f64; 2],
    omm_range: Option<[f64; 2]>,
    optimizer: OptimizerKind,
    lr: f64,
    momentum: Option<f64>,
) -> Vec<SearchEdge> {
    let mut v = Vec::new();
    match edge_of(lr_range, lr) {
        Some(false) => v.push(SearchEdge::LrLow),
        Some(true) => v.push(SearchEdge::LrHigh),
        None => {}
    }
    let uses_momentum = !matches!(optimizer, OptimizerKind::Sgd);
    if let (true, Some(r), Some(g)) = (uses_momentum, omm_range, momentum) {
        match edge_of(r, 1.0 - g) {
            Some(false) => v.push(SearchEdge::OneMinusMomentumLow),
            Some(true) => v.push(SearchEdge::OneMinusMomentumHigh),
            None => {}
        }
    }
    v
}

/// The η and 1−γ ranges explored at batch size `b`: the preset's ranges at `b` joined with the
/// re-centred ranges (`--widen`, `crate::core::widen`) of the groups in `shifts`. Consecutive
/// groups overlap by half a width, so the join is one interval per dimension.
pub fn explored_ranges(
    search: &SearchSpace,
    b: usize,
    shifts: impl IntoIterator<Item = RangeShift>,
) -> ([f64; 2], Option<[f64; 2]>) {
    let base_lr = search.lr_range_at(b);
    let (mut lr, mut omm) = (base_lr, search.one_minus_momentum);
    for s in shifts {
        let r = shift_range(base_lr, s.lr);
        lr = [lr[0].min(r[0]), lr[1].max(r[1])];
        if let (Some(o), Some(base)) = (omm.as_mut(), search.one_minus_momentum) {
            let r = shift_range(base, s.omm);
            *o = [o[0].min(r[0]), o[1].max(r[1])];
        }
    }
    (lr, omm)
}

/// The re-centred group (`--widen`) the search at batch size `b` should run next, from the
/// finished search trials at `b` (`at_b`): None when the best trial is inside the explored range,
/// no trial reached the target, the move would exceed `max_rounds` half-widths, 1−γ would reach 1,
/// or that group was already run. The group keeps the best trial's own shift in a dimension whose
/// edge it is not at, and moves one half-width past the explored range in one whose edge it is at.
pub fn widen_step(
    search: &SearchSpace,
    optimizer: OptimizerKind,
    b: usize,
    at_b: &[&TrialRecord],
    max_rounds: i32,
) -> Option<RangeShift> {
    let best = at_b
        .iter()
        .filter(|t| t.spec.batch_size == b && t.spec.repeat_of.is_none())
        .filter_map(|t| {
            t.outcome
                .outcome
                .steps_to_target()
                .map(|s| (s, t.trial_id, *t))
        })
        .min_by_key(|&(s, id, _)| (s, id))?
        .2;
    let shifts: std::collections::BTreeSet<RangeShift> = at_b
        .iter()
        .filter(|t| t.spec.batch_size == b && t.spec.repeat_of.is_none())
        .map(|t| RangeShift::of_trial(t.trial_id))
        .collect();
    let (lr_r, omm_r) = explored_ranges(search, b, shifts.iter().copied());
    let m = &best.spec.metaparams;
    let momentum = optimizer_momentum(optimizer, m.momentum);
    let edges = edges_in(lr_r, omm_r, optimizer, m.learning_rate, momentum);
    let own = RangeShift::of_trial(best.trial_id);
    let mut next = own;
    let lo_hi = |f: fn(&RangeShift) -> i32| {
        let it = shifts.iter().map(f).chain([0]);
        (it.clone().min().unwrap_or(0), it.max().unwrap_or(0))
    };
    let (lr_lo, lr_hi) = lo_hi(|s| s.lr);
    let (omm_lo, omm_hi) = lo_hi(|s| s.omm);
    for e in edges {
        match e {
            SearchEdge::LrHigh => next.lr = lr_hi + 1,
            SearchEdge::LrLow => next.lr = lr_lo - 1,
            SearchEdge::OneMinusMomentumLow => next.omm = omm_lo - 1,
            SearchEdge::OneMinusMomentumHigh => {
                let fits = search
                    .one_minus_momentum
                    .is_some_and(|r| shift_range(r, omm_hi + 1)[1] < 1.0);
                if fits {
                    next.omm = omm_hi + 1;
                }
            }
        }
    }
    (next != own && next.rounds() <= max_rounds.min(WIDEN_MAX_SHIFT) && !shifts.contains(&next))
        .then_some(next)
}

fn mark_search_edges(
    per_batch: &mut [BatchPoint],
    trials: &[TrialRecord],
    search: &SearchSpace,
    optimizer: OptimizerKind,
    notes: &mut Vec<String>,
) {
    let mut flagged = Vec::new();
    let mut at_gamma_zero = Vec::new();
    let mut moved: Vec<(String, Vec<String>)> = Vec::new();
    for p in per_batch.iter_mut() {
        let shifts: std::collections::BTreeSet<RangeShift> = trials
            .iter()
            .filter(|t| t.spec.batch_size == p.batch_size && t.spec.repeat_of.is_none())
            .map(|t| RangeShift::of_trial(t.trial_id))
            .filter(|s| *s != RangeShift::NONE)
            .collect();
        let (lr_r, omm_r) = explored_ranges(search, p.batch_size, shifts.iter().copied());
        if !shifts.is_empty() {
            let range = format!(
                "η {}–{}{}",
                fmt_sig(lr_r[0]),
                fmt_sig(lr_r[1]),
                omm_r
                    .filter(|_| !matches!(optimizer, OptimizerKind::Sgd))
                    .map(|r| format!(", 1−γ {}–{}", fmt_sig(r[0]), fmt_sig(r[1])))
                    .unwrap_or_default()
            );
            match moved.iter_mut().find(|(r, _)| *r == range) {
                Some((_, bs)) => bs.push(p.batch_size.to_string()),
                None => moved.push((range, vec![p.batch_size.to_string()])),
            }
        }
        let Some(lr) = p.best_lr else { continue };
        p.search_edges = edges_in(lr_r, omm_r, optimizer, lr, p.best_momentum);
        p.at_search_edge = !p.search_edges.is_empty();
        if p.at_search_edge {
            let what: Vec<&str> = p.search_edges.iter().map(|e| e.label()).collect();
            flagged.push(format!("{} ({})", p.batch_size, what.join(", ")));
        }
        // 1−γ at the top of its range where one more move would pass 1 (γ < 0): the edge
        // `widen_step` cannot move
        let omm_hi = shifts.iter().map(|s| s.omm).max().unwrap_or(0).max(0);
        let capped = search
            .one_minus_momentum
            .is_some_and(|r| shift_range(r, omm_hi + 1)[1] >= 1.0);
        if capped && p.search_edges.contains(&SearchEdge::OneMinusMomentumHigh) {
            at_gamma_zero.push(p.batch_size.to_string());
        }
    }
    if !moved.is_empty() {
        let at: Vec<String> = moved
            .iter()
            .map(|(r, bs)| format!("B = {} ({r} explored)", bs.join(", ")))
            .collect();
        notes.push(format!(
            "search range re-centred (--widen) at {}: S(B) there is the best over the wider range",
            at.join("; ")
        ));
    }
    if !flagged.is_empty() {
        notes.push(format!(
            "best trial at the edge of the search space at B = {}: S(B) there is an upper bound \
             (widen or re-centre the range: sweep --widen N)",
            flagged.join(", ")
        ));
    }
    if !at_gamma_zero.is_empty() {
        notes.push(format!(
            "at B = {} the best 1−γ is at the top of its range and cannot move past γ = 0 (--widen \
             does not try): little or no momentum works best there",
            at_gamma_zero.join(", ")
        ));
    }
}

/// Three significant digits, for ranges in notes.
fn fmt_sig(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    if !(1e-2..1e4).contains(&x.abs()) {
        return format!("{x:.2e}");
    }
    let digits = (2 - x.abs().log10().floor() as i32).max(0) as usize;
    format!("{x:.digits$}")
}

fn lr_rule_note(search: &SearchSpace, lr_rules: &[LrRulePoint]) -> Option<String> {
    let (name, e) = match search.lr_rule {
        LrRule::None => return None,
        LrRule::Linear => ("linear", "1"),
        LrRule::Sqrt => ("sqrt", "0.5"),
    };
    let k = lr_scaling_exponent(lr_rules)
        .map(|k| format!(" (k = {k:.2})"))
        .unwrap_or_default();
    Some(format!(
        "the η range is centred per B by the {name} rule (∝ B^{e}), so the fitted \"best η ∝ B^k\" \
         exponent{k} is partly set by that rule"
    ))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::core::trial::*;
    use crate::workload::spec::*;

    pub(crate) fn rec(
        id: u64,
        b: usize,
        lr: f64,
        outcome: Outcome,
        b_simple: Option<f64>,
    ) -> TrialRecord {
        let spec = TrialSpec {
            trial_id: id,
            seed: id,
            ..TrialSpec::cpu(b, Metaparams::new(lr, 0.9))
        };
        let mut outcome = TrialOutcome::bare(outcome, 0);
        outcome.noise.b_simple = b_simple;
        TrialRecord::new(spec, outcome)
    }

    fn target() -> Target {
        Target {
            metric: Metric::ValError,
            value: 0.1,
        }
    }

    #[test]
    fn recovers_known_curve() {
        let pts: Vec<(f64, f64)> = (0..12)
            .map(|i| {
                let b = 2f64.powi(i);
                (b, 100.0 * (1.0 + 256.0 / b))
            })
            .collect();
        let f = fit_scaling(&pts).unwrap();
        assert!((f.s_min - 100.0).abs() < 1e-3, "{f:?}");
        assert!((f.b_crit - 256.0).abs() < 1e-2, "{f:?}");
        assert!(f.r2 > 0.999999 && f.rmse_log < 1e-6);
        assert!((f.steps_at(256.0) - 200.0).abs() < 1e-2);
    }

    #[test]
    fn fit_with_noise_and_quantisation() {
        // S quantised up to an eval grid of 10 steps and ±5 % multiplicative noise.
        let noise = [1.03, 0.97, 1.05, 0.95, 1.0, 1.02, 0.98, 1.04];
        let pts: Vec<(f64, f64)> = (0..8)
            .map(|i| {
                let b = 2f64.powi(i + 4);
                let s = 500.0 * (1.0 + 1000.0 / b) * noise[i as usize];
                (b, (s / 10.0).ceil() * 10.0)
            })
            .collect();
        let f = fit_scaling(&pts).unwrap();
        assert!((f.b_crit / 1000.0 - 1.0).abs() < 0.25, "{f:?}");
        assert!((f.s_min / 500.0 - 1.0).abs() < 0.25, "{f:?}");
        assert!(f.r2 > 0.99);
        assert!(fit_scaling(&pts[..2]).is_none());
    }

    #[test]
    fn steps_to_target_is_earliest_eval_over_trials() {
        let t = vec![
            rec(0, 32, 0.1, Outcome::Reached { step: 300 }, Some(50.0)),
            rec(1, 32, 0.2, Outcome::Reached { step: 200 }, Some(70.0)),
            rec(2, 32, 5.0, Outcome::Diverged { step: 3 }, None),
            rec(
                3,
                32,
                1e-4,
                Outcome::NotReached {
                    budget: 1000,
                    early_stopped: false,
                },
                None,
            ),
            rec(4, 32, 0.3, Outcome::Cancelled { step: 10 }, None),
            // Cancelled at step 1 would have been "better": must not count.
            rec(5, 64, 0.4, Outcome::Cancelled { step: 1 }, None),
            rec(6, 64, 0.4, Outcome::Reached { step: 120 }, Some(90.0)),
            rec(7, 64, 0.8, Outcome::Reached { step: 120 }, None),
            rec(8, 128, 9.0, Outcome::Diverged { step: 1 }, None),
        ];
        let a = analyze(&target(), &t, OptimizerKind::Momentum);
        assert_eq!(a.per_batch.len(), 3);
        let p = &a.per_batch[0];
        assert_eq!((p.steps, p.best_trial), (Some(200), Some(1)));
        assert_eq!(
            (p.trials, p.reached, p.diverged, p.not_reached, p.cancelled),
            (5, 2, 1, 1, 1)
        );
        assert_eq!(p.best_lr, Some(0.2));
        assert!((p.best_effective_lr.unwrap() - 2.0).abs() < 1e-9);
        // Tie at 120 → lower trial id.
        assert_eq!(a.per_batch[1].best_trial, Some(6));
        let p = &a.per_batch[2];
        assert_eq!((p.steps, p.diverged, p.trials), (None, 1, 1));
        assert_eq!(a.perfect_anchor, Some((32, 200)));
        assert_eq!(a.segments.len(), 1);
        assert_eq!(a.noise_prediction, Some(80.0));
        assert_eq!(a.lr_rules.len(), 2);
        assert!((a.lr_rules[1].linear_rule - 0.4).abs() < 1e-12);
        assert!((a.lr_rules[1].sqrt_rule - 0.2 * 2f64.sqrt()).abs() < 1e-12);
        assert!(a.fit.is_none());
        assert_eq!(a.target, "val_error <= 0.1");
    }

    #[test]
    fn regimes_of_a_model_curve() {
        let measured: Vec<(usize, u64)> = (0..10)
            .map(|i| {
                let b = 1usize << (i + 2);
                (b, (100.0 * (1.0 + 256.0 / b as f64)).round() as u64)
            })
            .collect();
        let segs = segments(&measured);
        let regimes: Vec<Regime> = segs.iter().map(|s| s.regime).collect();
        // Slopes −B_crit/(B+B_crit) at the segment midpoints: perfect → diminishing → maximal.
        assert_eq!(regimes[0], Regime::Perfect);
        assert_eq!(*regimes.last().unwrap(), Regime::Maximal);
        assert!(regimes.contains(&Regime::Diminishing));
        let first_dim = regimes
            .iter()
            .position(|r| *r == Regime::Diminishing)
            .unwrap();
        let first_max = regimes.iter().position(|r| *r == Regime::Maximal).unwrap();
        assert!(first_dim < first_max);
        assert!(regimes[..first_dim].iter().all(|r| *r == Regime::Perfect));
        assert!(regimes[first_max..].iter().all(|r| *r == Regime::Maximal));
        assert_eq!(classify(-1.0), Regime::Perfect);
        assert_eq!(classify(-0.5), Regime::Diminishing);
        assert_eq!(classify(0.1), Regime::Maximal);
    }

    #[test]
    fn duplicate_ids_keep_the_last_record() {
        let t = vec![
            rec(0, 8, 0.1, Outcome::Reached { step: 10 }, None),
            rec(0, 8, 0.1, Outcome::Reached { step: 40 }, None),
        ];
        let a = analyze(&target(), &t, OptimizerKind::Sgd);
        assert_eq!(a.per_batch[0].trials, 1);
        assert_eq!(a.per_batch[0].steps, Some(40));
        assert_eq!(a.per_batch[0].best_momentum, None);
    }

    #[test]
    fn lr_exponent_and_median() {
        let pts: Vec<LrRulePoint> = [16usize, 64, 256]
            .iter()
            .map(|&b| LrRulePoint {
                batch_size: b,
                best_lr: 0.01 * (b as f64).sqrt(),
                best_effective_lr: 0.0,
                linear_rule: 0.0,
                sqrt_rule: 0.0,
            })
            .collect();
        assert!((lr_scaling_exponent(&pts).unwrap() - 0.5).abs() < 1e-9);
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![]), None);
        let f = Fit {
            s_min: 1.0,
            b_crit: 1e6,
            r2: 1.0,
            rmse_log: 0.0,
            b_crit_ci: None,
            s_min_ci: None,
            uncertain: false,
        };
        assert_eq!(fit_range(&f, &[16, 1024]), FitRange::AboveRange);
    }

    /// K search trials per B: the best reaches at `s(B)`, the others later (×1.1, ×1.2, …), one
    /// diverges. Returns the records.
    fn curve_records(bs: &[usize], k: usize, s: impl Fn(usize) -> f64) -> Vec<TrialRecord> {
        let mut out = Vec::new();
        let mut id = 0;
        for &b in bs {
            for j in 0..k {
                let o = if j == k - 1 && k > 2 {
                    Outcome::Diverged { step: 3 }
                } else {
                    let st = (s(b) * (1.0 + 0.1 * j as f64)).round().max(1.0) as u64;
                    Outcome::Reached { step: st }
                };
                out.push(rec(id, b, 0.1 * (1.0 + j as f64), o, None));
                id += 1;
            }
        }
        out
    }

    fn pow2(lo: u32, hi: u32) -> Vec<usize> {
        (lo..=hi).map(|i| 1usize << i).collect()
    }

    fn order(a: &Analysis) -> Vec<Regime> {
        a.regimes.iter().map(|r| r.regime).collect()
    }

    #[test]
    fn partition_of_a_pure_model_curve() {
        let bs = pow2(2, 13); // 4 … 8192
        let t = curve_records(&bs, 6, |b| 100.0 * (1.0 + 256.0 / b as f64));
        let a = analyze(&target(), &t, OptimizerKind::Sgd);
        assert_eq!(
            order(&a),
            vec![Regime::Perfect, Regime::Diminishing, Regime::Maximal],
            "{:?}",
            a.regimes
        );
        let (p, d, m) = (&a.regimes[0], &a.regimes[1], &a.regimes[2]);
        // Contiguous, covering the measured range, boundaries where the slope is −0.75 / −0.25
        // (B_crit/3 ≈ 85, 3·B_crit = 768) within a factor 2.5.
        assert_eq!((p.b_lo, m.b_hi), (4.0, 8192.0));
        assert_eq!((p.b_hi, d.b_hi), (d.b_lo, m.b_lo));
        assert!(p.b_hi > 85.0 / 2.5 && p.b_hi < 85.0 * 2.5, "{p:?}");
        assert!(m.b_lo > 768.0 / 2.5 && m.b_lo < 768.0 * 2.5, "{m:?}");
        let [lo, hi] = p.b_hi_ci.unwrap();
        assert!(lo <= p.b_hi * 1.0001 && p.b_hi <= hi * 1.0001, "{p:?}");
        assert!(p.b_lo_ci.is_none() && m.b_hi_ci.is_none());
        let f = a.fit.as_ref().unwrap();
        let [lo, hi] = f.b_crit_ci.unwrap();
        assert!(
            lo <= 256.0 * 1.01 && hi >= 256.0 / 1.01 && !f.uncertain,
            "{f:?}"
        );
        let line = regimes_line(&a);
        assert!(line.starts_with("perfect 4–"), "{line}");
        let (ip, id, im) = (
            line.find("perfect").unwrap(),
            line.find("diminishing").unwrap(),
            line.find("maximal").unwrap(),
        );
        assert!(ip < id && id < im, "{line}");
    }

    #[test]
    fn partition_with_noise_is_ordered_and_unique() {
        // ±15 % multiplicative noise, quantised to an eval grid of 4 steps, over several curves.
        let noise = [
            1.12, 0.9, 1.05, 0.86, 1.15, 0.95, 1.0, 1.1, 0.88, 1.03, 0.92,
        ];
        for (i, bc) in [32.0, 128.0, 512.0].iter().enumerate() {
            let bs = pow2(3, 13);
            let t = curve_records(&bs, 5, |b| {
                let j = (b.trailing_zeros() as usize + i) % noise.len();
                let s = 200.0 * (1.0 + bc / b as f64) * noise[j];
                (s / 4.0).ceil() * 4.0
            });
            let a = analyze(&target(), &t, OptimizerKind::Sgd);
            let o = order(&a);
            let mut sorted = o.clone();
            sorted.sort_by_key(|r| *r as u8);
            sorted.dedup();
            assert_eq!(o, sorted, "out of order or repeated: {:?}", a.regimes);
            assert!(
                o.contains(&Regime::Diminishing),
                "B_crit {bc}: {:?}",
                a.regimes
            );
            for w in a.regimes.windows(2) {
                assert!(w[0].b_hi <= w[1].b_lo * 1.0001, "{:?}", a.regimes);
            }
        }
        // The perfect regime's end follows B_crit.
        let end = |bc: f64| {
            let t = curve_records(&pow2(1, 13), 5, |b| 200.0 * (1.0 + bc / b as f64));
            let a = analyze(&target(), &t, OptimizerKind::Sgd);
            assert_eq!(a.regimes[0].regime, Regime::Perfect, "{:?}", a.regimes);
            a.regimes[0].b_hi
        };
        let (e32, e128, e512) = (end(32.0), end(128.0), end(512.0));
        assert!(e32 < e128 && e128 < e512, "{e32} {e128} {e512}");
    }

    #[test]
    fn partition_says_what_the_data_cannot_support() {
        // Two measured batch sizes: no regimes, a note.
        let t = curve_records(&[16, 32], 4, |b| 1000.0 / b as f64);
        let a = analyze(&target(), &t, OptimizerKind::Sgd);
        assert!(a.regimes.is_empty());
        assert!(
            a.notes.iter().any(|n| n.contains("at least 3")),
            "{:?}",
            a.notes
        );
        assert_eq!(regimes_line(&a), "regimes: not enough data");
        // Pure perfect scaling over 8…1024: perfect only, maximal "not reached below 1024".
        let t = curve_records(&pow2(3, 10), 4, |b| 20000.0 / b as f64);
        let a = analyze(&target(), &t, OptimizerKind::Sgd);
        assert_eq!(order(&a), vec![Regime::Perfect]);
        assert_eq!((a.regimes[0].b_lo, a.regimes[0].b_hi), (8.0, 1024.0));
        assert!(
            a.notes
                .iter()
                .any(|n| n.contains("not reached below B = 1024")),
            "{:?}",
            a.notes
        );
        assert!(regimes_line(&a).contains("maximal not reached below 1024"));
        // Flat everywhere: maximal only, perfect "not observed".
        let t = curve_records(&pow2(3, 10), 4, |_| 50.0);
        let a = analyze(&target(), &t, OptimizerKind::Sgd);
        assert_eq!(order(&a), vec![Regime::Maximal]);
        assert!(a
            .notes
            .iter()
            .any(|n| n.contains("perfect scaling not observed")));
    }

    #[test]
    fn bootstrap_interval_contains_the_estimate() {
        let bs = pow2(3, 9);
        let t = curve_records(&bs, 6, |b| 100.0 * (1.0 + 64.0 / b as f64));
        let a = analyze(&target(), &t, OptimizerKind::Sgd);
        for p in &a.per_batch {
            let [lo, hi] = p.steps_ci.unwrap();
            let s = p.steps.unwrap();
            assert!(lo <= s && s <= hi, "{p:?}");
            assert!(
                hi > lo,
                "6 distinct trials must give a non-zero spread: {p:?}"
            );
        }
        // Deterministic.
        assert_eq!(a, analyze(&target(), &t, OptimizerKind::Sgd));
        // One trial: nothing to resample, no interval.
        let t = curve_records(&bs, 1, |b| 100.0 * (1.0 + 64.0 / b as f64));
        let a = analyze(&target(), &t, OptimizerKind::Sgd);
        assert!(a.per_batch.iter().all(|p| p.steps_ci.is_none()));
    }

    #[test]
    fn bootstrap_covers_the_typical_best_of_k() {
        // Trials' steps-to-target: S0·exp(|z|·0.4) with z standard normal, or not reached (30 %).
        // The interval of one K = 12 sample should contain the median of best-of-12 (what a rerun
        // of the same protocol typically gives) in most replications.
        let mut rng = Rng::new(42);
        let mut normal = move || {
            let u1 = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
            let u2 = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
            let z = (-2.0 * (u1.max(1e-300)).ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
            (z, u2)
        };
        let mut draw = |k: usize| -> Vec<Option<u64>> {
            (0..k)
                .map(|_| {
                    let (z, u) = normal();
                    (u > 0.3).then(|| (1000.0 * (z.abs() * 0.4).exp()).round() as u64)
                })
                .collect()
        };
        let k = 12;
        let mut mins: Vec<f64> = (0..4000)
            .filter_map(|_| draw(k).into_iter().flatten().min().map(|m| m as f64))
            .collect();
        mins.sort_by(|a, b| a.total_cmp(b));
        let typical = quantile_sorted(&mins, 0.5);
        let (mut covered, mut n) = (0, 0);
        for r in 0..300u64 {
            let o = draw(k);
            let Some(best) = o.iter().flatten().min().copied() else {
                continue;
            };
            let d = bootstrap_min(&o, best, 20_000, &[], r);
            let [lo, hi] = interval95(d).unwrap();
            n += 1;
            if lo.exp() <= typical && typical <= hi.exp() {
                covered += 1;
            }
        }
        // Measured: 0.83 (nominal 0.95). The bootstrap of a minimum under-covers — it cannot see
        // values below the K it has — which is why --repeats and --until exist.
        let rate = covered as f64 / n as f64;
        assert!(rate >= 0.75, "coverage {rate:.2} of {n}");
    }

    #[test]
    fn repeats_do_not_change_s_but_give_a_spread() {
        let mut t = curve_records(&[16, 32, 64], 4, |b| 1000.0 / b as f64);
        let base = t.iter().find(|r| r.spec.batch_size == 32).unwrap().clone();
        let s32 = base.outcome.outcome.steps_to_target().unwrap();
        for (i, st) in [(0u64, 20u64), (1, 40), (2, 36)] {
            let mut r = base.clone();
            r.trial_id = 1_000_000_000 + i;
            r.spec.trial_id = r.trial_id;
            r.spec.repeat_of = Some(base.trial_id);
            r.outcome.outcome = Outcome::Reached { step: st };
            t.push(r);
        }
        let a = analyze(&target(), &t, OptimizerKind::Sgd);
        let p = &a.per_batch[1];
        // A repeat at 20 < S(32) does not become S(32): S stays the best search trial.
        assert_eq!((p.steps, p.trials), (Some(s32), 4));
        let r = p.repeat_steps.as_ref().unwrap();
        assert_eq!((r.runs, r.min, r.max), (4, 20, 40));
        let mut v = [s32 as f64, 20.0, 40.0, 36.0];
        v.sort_by(|a, b| a.total_cmp(b));
        assert_eq!(r.median, (v[1] + v[2]) / 2.0);
        let [lo, hi] = p.steps_ci.unwrap();
        assert!(lo <= 20 && hi >= 40, "{p:?}");
        assert!(a.per_batch[0].repeat_steps.is_none());
    }

    #[test]
    fn widen_step_moves_past_the_explored_edge_one_half_width_at_a_time() {
        use crate::core::widen::{RangeShift, WidenId};
        let s = SearchSpace {
            learning_rate: [1e-3, 1e-1],
            one_minus_momentum: Some([1e-2, 0.5]),
            ..SearchSpace::default()
        };
        let o = OptimizerKind::Momentum;
        let wid = |lr, j| {
            WidenId {
                batch_index: 0,
                shift: RangeShift { lr, omm: 0 },
                j,
            }
            .encode()
            .unwrap()
        };
        // Best η 0.095 is in the top 10 % of [1e-3, 0.1] (γ = 0.9 is inside [0.5, 0.99]).
        let mut t = vec![
            rec(0, 64, 0.095, Outcome::Reached { step: 100 }, None),
            rec(1, 64, 0.01, Outcome::Reached { step: 300 }, None),
            rec(2, 32, 0.095, Outcome::Reached { step: 10 }, None),
        ];
        let at = |t: &[TrialRecord]| {
            t.iter()
                .filter(|r| r.spec.batch_size == 64)
                .cloned()
                .collect::<Vec<_>>()
        };
        fn refs(v: &[TrialRecord]) -> Vec<&TrialRecord> {
            v.iter().collect()
        }
        let v = at(&t);
        assert_eq!(
            widen_step(&s, o, 64, &refs(&v), 2),
            Some(RangeShift { lr: 1, omm: 0 })
        );
        // A best trial inside the range, or no reached trial, asks for nothing; neither does 0 rounds.
        let inside = vec![rec(0, 64, 0.01, Outcome::Reached { step: 100 }, None)];
        assert_eq!(widen_step(&s, o, 64, &refs(&inside), 2), None);
        let none = vec![rec(0, 64, 0.095, Outcome::Diverged { step: 3 }, None)];
        assert_eq!(widen_step(&s, o, 64, &refs(&none), 2), None);
        assert_eq!(widen_step(&s, o, 64, &refs(&v), 0), None);
        // The group +1 ([1e-2, 1]) ran and its best (η 0.9) is at the top of the explored
        // [1e-3, 1]: move to +2; with 2 moves spent at +2's top, stop.
        t.push(rec(wid(1, 0), 64, 0.9, Outcome::Reached { step: 50 }, None));
        let v = at(&t);
        assert_eq!(
            widen_step(&s, o, 64, &refs(&v), 2),
            Some(RangeShift { lr: 2, omm: 0 })
        );
        t.push(rec(wid(2, 0), 64, 9.0, Outcome::Reached { step: 40 }, None));
        let v = at(&t);
        assert_eq!(widen_step(&s, o, 64, &refs(&v), 2), None);
        assert_eq!(
            widen_step(&s, o, 64, &refs(&v), 3),
            Some(RangeShift { lr: 3, omm: 0 })
        );
        // Best inside the widened range: done; the analysis flags nothing and says what it explored.
        t.push(rec(wid(2, 1), 64, 0.3, Outcome::Reached { step: 20 }, None));
        let v = at(&t);
        assert_eq!(widen_step(&s, o, 64, &refs(&v), 3), None);
        let mut preset = crate::sweep::plan::tests::preset();
        preset.search = s.clone();
        let a = analyze_preset(&preset, &t);
        let p64 = a.per_batch.iter().find(|p| p.batch_size == 64).unwrap();
        assert_eq!(p64.steps, Some(20));
        assert!(!p64.at_search_edge, "{:?}", p64.search_edges);
        assert!(
            a.per_batch
                .iter()
                .find(|p| p.batch_size == 32)
                .unwrap()
                .at_search_edge
        );
        assert!(
            a.notes
                .iter()
                .any(|n| n.contains("re-centred (--widen) at B = 64 (η 1.00e-3–10.0")),
            "{:?}",
            a.notes
        );
        // 1−γ at the top (γ = 0.55 near 0.5): moving up would reach 1−γ ≥ 1, so it cannot.
        let mut hi = rec(0, 64, 0.01, Outcome::Reached { step: 10 }, None);
        hi.spec.metaparams.momentum = 0.55;
        assert_eq!(widen_step(&s, o, 64, &[&hi], 2), None);
        // ... and the report says why that edge stays
        preset.workload.optimizer = o;
        let gamma_zero = |t: &TrialRecord| {
            analyze_preset(&preset, std::slice::from_ref(t))
                .notes
                .iter()
                .any(|n| n.contains("at B = 64 the best 1−γ is at the top of its range and cannot move past γ = 0"))
        };
        assert!(gamma_zero(&hi));
        // 1−γ at the bottom (γ = 0.9895) moves down.
        hi.spec.metaparams.momentum = 0.9895;
        assert_eq!(
            widen_step(&s, o, 64, &[&hi], 2),
            Some(RangeShift { lr: 0, omm: -1 })
        );
        assert!(!gamma_zero(&hi));
    }

    #[test]
    fn search_edge_check() {
        let s = SearchSpace {
            learning_rate: [1e-3, 1.0],
            one_minus_momentum: Some([1e-3, 0.5]),
            lr_rule: LrRule::Linear,
            base_batch: 64,
            ..SearchSpace::default()
        };
        let o = OptimizerKind::Momentum;
        // At B = 64 the η range is [1e-3, 1]: log-position 0.05 is low, 0.5 inside, 0.95 high.
        assert_eq!(
            search_edges(&s, o, 64, 1e-3 * 1000f64.powf(0.05), Some(0.99)),
            vec![SearchEdge::LrLow]
        );
        assert!(search_edges(&s, o, 64, 1e-3 * 1000f64.powf(0.5), Some(0.99)).is_empty());
        assert_eq!(
            search_edges(&s, o, 64, 1e-3 * 1000f64.powf(0.95), Some(0.99)),
            vec![SearchEdge::LrHigh]
        );
        // The range moves with the LR rule: η = 1 is the top at B = 64, the middle-ish at B = 1024.
        assert!(search_edges(&s, o, 1024, 0.5, Some(0.99)).is_empty());
        // 1−γ = 0.0011 is at the bottom of [1e-3, 0.5]; SGD ignores momentum.
        assert_eq!(
            search_edges(&s, o, 64, 0.03, Some(1.0 - 0.0011)),
            vec![SearchEdge::OneMinusMomentumLow]
        );
        assert!(search_edges(&s, OptimizerKind::Sgd, 64, 0.03, Some(1.0 - 0.0011)).is_empty());
        // Through the analysis: flags, a note, and the LR-rule caveat.
        let mut preset = crate::sweep::plan::tests::preset();
        preset.search = s.clone();
        let t = vec![
            rec(0, 64, 0.95, Outcome::Reached { step: 100 }, None),
            rec(1, 64, 0.01, Outcome::Reached { step: 300 }, None),
            rec(2, 128, 0.06, Outcome::Reached { step: 60 }, None),
        ];
        let a = analyze_preset(&preset, &t);
        assert!(a.per_batch[0].at_search_edge);
        assert_eq!(a.per_batch[0].search_edges, vec![SearchEdge::LrHigh]);
        assert!(!a.per_batch[1].at_search_edge);
        assert!(a
            .notes
            .iter()
            .any(|n| n.contains("edge of the search space at B = 64")));
        assert!(
            a.notes.iter().any(|n| n.contains("linear rule")),
            "{:?}",
            a.notes
        );
        // Without the preset there is no check.
        assert!(!analyze(&target(), &t, OptimizerKind::Momentum).per_batch[0].at_search_edge);
    }

    #[test]
    fn isotonic_pools_violators() {
        assert_eq!(
            isotonic_non_increasing(&[3.0, 1.0, 2.0, 0.0]),
            vec![3.0, 1.5, 1.5, 0.0]
        );
        assert_eq!(
            isotonic_non_increasing(&[1.0, 2.0, 3.0]),
            vec![2.0, 2.0, 2.0]
        );
        let seg = segmented_fit(
            &(0..10)
                .map(|i| {
                    let b = 2f64.powi(i);
                    (b, if b < 16.0 { 1600.0 / b } else { 100.0 })
                })
                .collect::<Vec<_>>(),
        )
        .unwrap();
        let (p_end, m_start) = seg.boundaries();
        assert!(
            (p_end.log2() - 4.0).abs() < 0.3 && (m_start.log2() - 4.0).abs() < 0.3,
            "{seg:?}"
        );
        assert!(seg.rmse_log < 1e-6);
    }
}
