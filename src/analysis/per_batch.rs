//! Steps-to-target and outcome counts per batch size (the best trial over the study), and the
//! seed spread of the best metaparameters (`--repeats`).

use std::collections::BTreeMap;

use super::stats::median;
use super::steps::steps_to_target;
use crate::core::analysis::{BatchPoint, OutcomeCounts, RepeatSteps};
use crate::core::record::TrialRecord;
use crate::core::trial::Outcome;
use crate::workload::spec::OptimizerKind;

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
                counts: OutcomeCounts::of(ts.iter().map(|t| &t.outcome.outcome)),
                ..Default::default()
            };
            let mut best: Option<(u64, &TrialRecord)> = None;
            for t in &ts {
                if let Some(step) = steps_to_target(t) {
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
                p.b_simple = t.outcome.noise.b_simple.filter(|x| x.is_finite());
                p.repeat_steps = repeat_steps(s, t.trial_id, &all);
            }
            p
        })
        .collect()
}

/// γ of a best trial, for the optimizers that have one.
pub(crate) fn optimizer_momentum(opt: OptimizerKind, m: f64) -> Option<f64> {
    matches!(
        opt,
        OptimizerKind::Momentum | OptimizerKind::Nesterov | OptimizerKind::Adam
    )
    .then_some(m)
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
    v.extend(reps.iter().filter_map(|t| steps_to_target(t)));
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
