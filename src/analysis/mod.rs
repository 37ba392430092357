//! The analysis of a sweep's trial records (docs/science.md §1, §2, §6, §8): trial records and a
//! [`Study`] in, a typed [`Analysis`] out — numbers and enums only (no prose, no files, no text;
//! `report` words and renders it). One entry, [`analyze`], for every view. By concept:
//!
//! * `steps` — how each trial stands against a target ([`Observation`]: reached at s, censored
//!   at ≥ c, not reached within its budget, diverged…): the one function over its eval curve and
//!   outcome. Every part below reads observations, so a reading at another target (`Study::at`)
//!   is this same pipeline; at or looser than the sweep's goal it is exact.
//! * `ladder` — B_crit over training: the analysis at each rung of a ladder of targets,
//!   B_crit(target) and S_min(target) with intervals, the fitted trend.
//! * `per_batch` — **steps-to-target per B** exactly as Shallue et al.: the earliest evaluation
//!   step, over all trials at that batch size, at which the validation metric met the target; that
//!   trial is the best trial. Diverged and not-reached trials are kept and counted; cancelled trials
//!   are counted separately and never contribute a result. **Repeats** (`TrialSpec::repeat_of`):
//!   S(B) stays the best-of-K minimum over the *search* trials (the paper's definition; the counts
//!   too are of search trials); repeats give `repeat_steps` (median, min–max over seeds).
//! * `bootstrap` — **uncertainty** (docs/science.md §8), the one place that draws. Per B, the K
//!   non-cancelled search trials are read by the censoring-aware lower-tail model of `censored`
//!   (docs/intervals.md): reached at s is an event; a trial cut by early stopping at cap
//!   c is "≥ c", as is one that ran its budget; a diverged or out-of-memory one never reaches.
//!   `steps_ci` is the 95 % interval for S*_K, the median of the best of K (what a rerun of the
//!   same protocol typically gives), widened to contain S(B) and, with `--repeats`, the repeats'
//!   min–max (seed noise at the best metaparameters). Fit and boundary intervals refit the model
//!   to one draw per B, 200 times. All random numbers come from fixed seeds: the same records give
//!   the same intervals.
//! * `fit` — the **perfect-scaling reference** `S(B0)·B0/B` (anchored at the smallest B that
//!   reached), the local **segment slopes** `d ln S / d ln B` between consecutive measured B, and
//!   the **fit** of `S = S_min·(1 + B_crit/B)` by least squares on ln S (McCandlish et al.): for a
//!   fixed B_crit the optimal ln S_min is closed-form (the mean residual), so the fit is a 1-D
//!   search over ln B_crit (a dense grid, then golden-section refinement). Needs ≥ 3 points.
//! * `regimes` — **the regimes as one ordered partition**, the one regime model: ln S is smoothed
//!   to be non-increasing in ln B (isotonic regression, pool-adjacent-violators), then a segmented
//!   model is fitted by least squares — slope −1 below a breakpoint b1, slope −½ between b1 and b2
//!   (the model's slope at B_crit), slope 0 above b2. Perfect scaling is B ≤ b1, maximal data
//!   parallelism B ≥ b2, diminishing returns between: at most one span per regime, in order. A
//!   span is named only if at least two measured batch sizes lie in it; otherwise a note says what
//!   the data cannot support. Boundaries get 95 % intervals from the bootstrap refits and are
//!   cross-checked against the fit, whose slope −B_crit/(B + B_crit) crosses −0.75 at B_crit/3 and
//!   −0.25 at 3·B_crit (a disagreement is a note, never a second set of regimes).
//! * `evidence` — **the least evidence a curve is read from**: a batch size is on the curve
//!   (the anchor, segments, fit and regimes read it) only where its S(B) rests on at least
//!   `MIN_TRIALS_PER_POINT` finished trials, and the curve needs `MIN_CURVE_POINTS` of them;
//!   below that the fit and the regimes are empty and `Analysis::evidence` says what is missing.
//! * `search` — **search-space edges**: a best trial whose η or 1−γ lies in the outer 10 % of the
//!   explored range (log scale) is flagged: S(B) there is an upper bound; `widen_step` picks the
//!   re-centred group `--widen` runs next.
//! * `lr` — the best η (and η/(1−γ)) per B against the linear and sqrt rules from the smallest B.
//! * `stats` — median.
//! * `projection` — time-to-target projected over device counts and links (docs/science.md §6).
//! * **Noise prediction**: the median B_simple over the best trials (McCandlish et al.: B_crit ≈
//!   B_simple).
//!
//! Layering: imports `workload` and `core` only; imported by `runlog`, `sweep`, `report`,
//! `cluster` and the views.

pub mod bootstrap;
pub mod calibrate;
pub mod censored;
pub mod confirm;
pub mod confirm_rounds;
pub mod evidence;
pub mod fit;
pub mod ladder;
pub mod lr;
pub mod per_batch;
pub mod projection;
pub mod regimes;
pub mod search;
pub mod stages;
pub mod stats;
pub mod steps;
pub mod until;

#[cfg(test)]
pub(crate) mod tests;

use crate::core::analysis::{Analysis, BatchPoint, Note, Readout, Study};
use crate::core::record::TrialRecord;
use crate::core::trial::NoiseInterval;
use crate::workload::spec::{OptimizerKind, Preset};

pub use bootstrap::{BOOTSTRAP_DRAWS, FIT_BOOTSTRAP};
pub use fit::{
    fit_range, fit_scaling, perfect_scaling_steps, segments, FitRange, MAXIMAL_SLOPE, PERFECT_SLOPE,
};
pub use lr::{lr_rules, lr_scaling_exponent};
pub use per_batch::{dedup_trials, per_batch};
pub use regimes::{isotonic_non_increasing, segmented_fit, Segmented, MIDDLE_SLOPE, WIDE_BOUNDARY};
pub use search::{edges_in, explored_ranges, search_edges, widen_step, EDGE_FRACTION};
pub use stats::median;
pub use steps::{censoring_hides_best, first_meeting, observe, Observation, Observed, Reading};

/// Analyses the finished trials of a sweep against `study`: the one entry of every view (the
/// report, the TUI, export, compare, the scheduler's summary). Records with a repeated `trial_id`
/// keep the last one. Without a search space no search-edge check is made.
pub fn analyze(study: &Study, trials: &[TrialRecord]) -> Analysis {
    let optimizer = study.optimizer;
    let reading = Reading::of(study);
    let observed = Observed::of(trials, &reading);
    let mut per_batch = per_batch::per_batch_observed(&observed, optimizer, &reading);
    let best_draws = bootstrap::bootstrap_all(&observed, &mut per_batch);
    let confirm_draws = confirm::attach(&observed, &mut per_batch, study);
    let mut notes = Vec::new();
    let readout = readout_of(&per_batch, &mut notes);
    let unmeasured: Vec<usize> = per_batch
        .iter()
        .filter(|p| {
            p.not_measured
                || (readout == Readout::Confirmed
                    && p.confirmed.as_ref().is_some_and(|c| c.not_measured))
        })
        .map(|p| p.batch_size)
        .collect();
    // too little evidence: the curve's readings are withheld, and a batch size whose S(B)
    // rests on too few trials is off the curve (`evidence`)
    let evidence = evidence::evidence(&per_batch, readout);
    // A curve with holes is not fitted: where S(B) is not measured its value is only bounded.
    let measured: Vec<(usize, u64)> = if unmeasured.is_empty() && !evidence.withheld {
        per_batch
            .iter()
            .filter(|p| evidence.on_curve(p.batch_size))
            .filter_map(|p| p.readout_steps(readout).map(|s| (p.batch_size, s)))
            .collect()
    } else {
        Vec::new()
    };
    // the refits' draws of ln S, one vector per measured B (in `measured` order); the best
    // trials' come one per B with a best trial
    let best_draws: std::collections::BTreeMap<usize, Vec<f64>> = per_batch
        .iter()
        .filter(|p| p.steps.is_some())
        .map(|p| p.batch_size)
        .zip(best_draws)
        .collect();
    let draws: Vec<Vec<f64>> = measured
        .iter()
        .filter_map(|(b, _)| match readout {
            Readout::BestTrial => best_draws.get(b).cloned(),
            Readout::Confirmed => confirm_draws.get(b).cloned(),
        })
        .collect();
    let perfect_anchor = measured.first().copied();
    let segments = fit::segments(&measured);
    let pts: Vec<(f64, f64)> = measured
        .iter()
        .map(|&(b, s)| (b as f64, s as f64))
        .collect();
    let mut fit = fit::fit_scaling(&pts);
    if !unmeasured.is_empty() {
        notes.push(Note::NotMeasured {
            batch_sizes: unmeasured.clone(),
            goal: study.goal.value,
        });
    }
    let regimes = match &mut fit {
        _ if !unmeasured.is_empty() || evidence.withheld => Vec::new(),
        Some(f) => {
            let boot = bootstrap::bootstrap_fits(&pts, &draws);
            bootstrap::attach_fit_intervals(f, &boot);
            let bounds: Vec<(f64, f64)> = boot.iter().map(|b| (b.p_end, b.m_start)).collect();
            regimes::regimes(&pts, &bounds, Some(f), &mut notes)
        }
        None => regimes::regimes(&pts, &[], None, &mut notes),
    };
    if let Some(f) = fit.as_ref().filter(|f| f.uncertain) {
        notes.push(Note::FitUncertain {
            r2: f.r2,
            b_crit_ci: f.b_crit_ci,
        });
    }
    let noise: Vec<f64> = per_batch
        .iter()
        .filter_map(|p| p.b_simple)
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    let noise_interval = noise_band(&per_batch);
    let lr_rules = lr::lr_rules(&readout_points(&per_batch, readout));
    if let Some(s) = &study.search {
        search::mark_search_edges(&mut per_batch, trials, s, optimizer, &mut notes);
        // the note is about the fitted η exponent, withheld with the curve
        if let Some(note) = lr::lr_rule_note(s, &lr_rules).filter(|_| !evidence.withheld) {
            notes.push(note);
        }
    }
    Analysis {
        target: Some(study.target),
        goal: (!study.at_goal()).then_some(study.goal),
        lr_rules,
        per_batch,
        perfect_anchor,
        segments,
        fit,
        noise_prediction: median(noise),
        noise_interval,
        regimes,
        notes,
        readout,
        evidence,
    }
}

/// The curve reads the confirmed S(B) once every batch size with a best trial has a complete
/// confirm stage (the two readouts are not mixed on one curve: the confirmed values sit above the
/// best trials by the winner's curse); until then the best trials, with a note.
fn readout_of(per_batch: &[BatchPoint], notes: &mut Vec<Note>) -> Readout {
    if per_batch.iter().all(|p| p.confirmed.is_none()) {
        return Readout::BestTrial;
    }
    let with_best: Vec<&BatchPoint> = per_batch.iter().filter(|p| p.steps.is_some()).collect();
    let done = with_best
        .iter()
        .filter(|p| p.confirmed.as_ref().is_some_and(|c| c.complete))
        .count();
    if done < with_best.len() || with_best.is_empty() {
        notes.push(Note::ConfirmIncomplete {
            confirmed: done,
            of: with_best.len(),
        });
        return Readout::BestTrial;
    }
    let unreached: Vec<usize> = with_best
        .iter()
        .filter(|p| {
            p.confirmed
                .as_ref()
                .is_some_and(|c| c.steps.is_none() && !c.not_measured)
        })
        .map(|p| p.batch_size)
        .collect();
    if !unreached.is_empty() {
        notes.push(Note::ConfirmNotReached {
            batch_sizes: unreached,
        });
    }
    Readout::Confirmed
}

/// `per_batch` as the readout sees it: with the confirmed readout each point's steps and best
/// metaparameters are the chosen configuration's (what the LR rules read).
fn readout_points(per_batch: &[BatchPoint], readout: Readout) -> Vec<BatchPoint> {
    if readout == Readout::BestTrial {
        return per_batch.to_vec();
    }
    per_batch
        .iter()
        .map(|p| {
            let mut q = p.clone();
            let chosen = p.confirmed.as_ref().and_then(|c| c.chosen_config());
            q.steps = p.readout_steps(readout);
            q.best_lr = chosen.map(|c| c.learning_rate);
            q.best_momentum = chosen.and_then(|c| c.momentum);
            q.best_effective_lr = chosen.map(|c| c.effective_lr);
            q
        })
        .collect()
}

/// [`analyze`] of a preset's study ([`Study::of_preset`]).
pub fn analyze_preset(preset: &Preset, trials: &[TrialRecord]) -> Analysis {
    analyze(&Study::of_preset(preset), trials)
}

/// `per_batch` with `steps_ci` (the bootstrap), without the fit: what `--until` decides on.
pub fn per_batch_with_ci(trials: &[TrialRecord], optimizer: OptimizerKind) -> Vec<BatchPoint> {
    let observed = Observed::of(trials, &Reading::Goal);
    let mut p = per_batch::per_batch_observed(&observed, optimizer, &Reading::Goal);
    bootstrap::bootstrap_all(&observed, &mut p);
    p
}

/// The confirmed S(B) at one batch size alone (`BatchPoint::confirmed`; every other field
/// default): what the confirm stage's placement reads (`confirm_rounds`), the same value
/// [`per_batch_confirmed`] gives there, without the search's interval.
pub fn confirm_point(trials: &[TrialRecord], study: &Study, b: usize) -> BatchPoint {
    let observed = Observed::of(trials, &Reading::Goal);
    let mut p = [BatchPoint {
        batch_size: b,
        ..Default::default()
    }];
    confirm::attach(&observed, &mut p, study);
    let [p] = p;
    p
}

/// `per_batch` at the goal with the confirm stage attached (no bootstrap, no fit): the confirmed
/// S(B) of every batch size: what `--until` decides on when the sweep has a confirm stage.
pub fn per_batch_confirmed(trials: &[TrialRecord], study: &Study) -> Vec<BatchPoint> {
    let observed = Observed::of(trials, &Reading::Goal);
    let mut p = per_batch::per_batch_observed(&observed, study.optimizer, &Reading::Goal);
    confirm::attach(&observed, &mut p, study);
    p
}

/// The band around the median B_simple of the best trials: the medians of their 95 % intervals'
/// ends (an unbounded end counts as +∞). None unless every best trial with a finite B_simple
/// recorded an interval (older logs, other targets, the NQM).
fn noise_band(per_batch: &[BatchPoint]) -> Option<NoiseInterval> {
    let with: Vec<&BatchPoint> = per_batch
        .iter()
        .filter(|p| p.b_simple.is_some_and(|x| x.is_finite() && x > 0.0))
        .collect();
    let ivs: Vec<NoiseInterval> = with.iter().filter_map(|p| p.b_simple_interval).collect();
    if ivs.is_empty() || ivs.len() != with.len() {
        return None;
    }
    let lo = median(ivs.iter().map(|i| i.lo).collect())?;
    let hi = median(ivs.iter().map(|i| i.hi.unwrap_or(f64::INFINITY)).collect())?;
    Some(NoiseInterval {
        lo,
        hi: hi.is_finite().then_some(hi),
    })
}
