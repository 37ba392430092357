//! Steps-to-target and outcome counts per batch size (the best trial over the study), and the
//! seed spread of the best metaparameters (`--repeats`).

use std::collections::BTreeMap;

use super::stats::median;
use super::steps::{censoring_hides_best, Observation, Observed, Reading};
use crate::core::analysis::{BatchPoint, OutcomeCounts, RepeatSteps};
use crate::core::record::TrialRecord;
use crate::workload::spec::OptimizerKind;

/// Keeps the last record per trial_id (a resumed log could in principle repeat one).
pub fn dedup_trials(trials: &[TrialRecord]) -> Vec<&TrialRecord> {
    let mut by_id: BTreeMap<u64, &TrialRecord> = BTreeMap::new();
    for t in trials {
        by_id.insert(t.trial_id, t);
    }
    by_id.into_values().collect()
}

/// Steps-to-target and outcome counts per batch size at the sweep's goal, sorted by B.
pub fn per_batch(trials: &[TrialRecord], optimizer: OptimizerKind) -> Vec<BatchPoint> {
    per_batch_observed(
        &Observed::of(trials, &Reading::Goal),
        optimizer,
        &Reading::Goal,
    )
}

/// Steps-to-target and outcome counts per batch size from the trials' observations at one
/// reading, sorted by B. A batch size where a censored trial could hide a better one
/// ([`censoring_hides_best`]) is `not_measured`: no steps, no best trial.
pub fn per_batch_observed(
    observed: &Observed,
    optimizer: OptimizerKind,
    reading: &Reading,
) -> Vec<BatchPoint> {
    observed
        .search
        .iter()
        .map(|(&b, ts)| {
            let mut p = BatchPoint {
                batch_size: b,
                counts: OutcomeCounts::of(
                    &ts.iter().map(|(_, o)| o.as_outcome()).collect::<Vec<_>>(),
                ),
                ..Default::default()
            };
            let obs: Vec<Observation> = ts.iter().map(|x| x.1).collect();
            if censoring_hides_best(&obs) {
                p.not_measured = true;
                return p;
            }
            let mut best: Option<(u64, &TrialRecord)> = None;
            for (t, o) in ts {
                if let Some(step) = o.steps() {
                    let better = match best {
                        None => true,
                        Some((s, bt)) => step < s || (step == s && t.trial_id < bt.trial_id),
                    };
                    if better {
                        best = Some((step, t));
                    }
                }
            }
            if let Some((s, t)) = best {
                let m = &t.spec.metaparams;
                p.steps = Some(s);
                p.best_trial = Some(t.trial_id);
                p.best_lr = Some(m.learning_rate);
                p.best_momentum = optimizer_momentum(optimizer, m.momentum);
                p.best_effective_lr = Some(m.effective_lr(optimizer));
                p.b_simple = noise_at(t, s, reading);
                p.b_simple_interval = match reading {
                    Reading::Goal => p.b_simple.and(t.outcome.noise.interval),
                    Reading::At(_) => None,
                };
                p.repeat_steps = repeat_steps(s, &observed.repeats_of(t.trial_id));
            }
            p
        })
        .collect()
}

/// The best trial's gradient noise scale where it met the target: at the goal the recorded
/// value (at the evaluation that reached it), at another target the last sample of its
/// trajectory at or before `step`.
fn noise_at(t: &TrialRecord, step: u64, reading: &Reading) -> Option<f64> {
    let v = match reading {
        Reading::Goal => t.outcome.noise.b_simple,
        Reading::At(_) => t
            .outcome
            .noise
            .trajectory
            .iter()
            .rev()
            .find(|(s, _)| *s <= step)
            .map(|x| x.1),
    };
    v.filter(|x| x.is_finite())
}

/// γ of a best trial, for the optimizers that have one.
pub(crate) fn optimizer_momentum(opt: OptimizerKind, m: f64) -> Option<f64> {
    matches!(
        opt,
        OptimizerKind::Momentum | OptimizerKind::Nesterov | OptimizerKind::Adam
    )
    .then_some(m)
}

/// The best metaparameters' steps over seeds: the best search trial plus its repeats
/// (cancelled repeats left out).
fn repeat_steps(best_steps: u64, reps: &[Observation]) -> Option<RepeatSteps> {
    let reps: Vec<&Observation> = reps
        .iter()
        .filter(|o| !matches!(o, Observation::Cancelled))
        .collect();
    if reps.is_empty() {
        return None;
    }
    let mut v: Vec<u64> = vec![best_steps];
    v.extend(reps.iter().filter_map(|o| o.steps()));
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
