//! What `--until REL` did at each batch size (issue 26): whether more trials still narrow a B's
//! interval, and, once the sweep stops, per B: `met` (within ±REL), `stalled` (more trials did not
//! narrow it, with the likely reason) or `budget` (the search budget ran out, or the sweep was
//! stopped, while it still narrowed).
//!
//! Stalled, measured: at a B with at least a window of w search trials beyond the plan (w = half
//! the plan's trials per B, at least [`STALL_MIN_WINDOW`]), the relative half-width of `steps_ci`
//! with all n of them against without its last w (by trial id): if it fell by less than
//! [`STALL_SHARE`] of what an interval shrinking as 1/√n would (1 − √((n − w)/n)), the last trials
//! did not help there and `--until` spends its budget elsewhere (before this, one B of digits-mlp-sgd took 327 trials
//! at an unchanged [23, 162]). The interval itself is today's bootstrap of the best-of-K minimum;
//! why it can stall is the reason given (docs/intervals.md).

use crate::core::analysis::{BatchPoint, UntilStatus};
use crate::core::TrialRecord;
use crate::workload::spec::OptimizerKind;

/// The smallest window of trials beyond the plan over which the narrowing is judged.
pub const STALL_MIN_WINDOW: usize = 4;
/// The share of the 1/√n narrowing the window must give to count as narrowing.
pub const STALL_SHARE: f64 = 0.5;

/// The window at a plan of `plan_k` trials per B.
pub fn stall_window(plan_k: usize) -> usize {
    plan_k.div_ceil(2).max(STALL_MIN_WINDOW)
}

fn search_ids_at(trials: &[TrialRecord], b: usize) -> Vec<u64> {
    let mut ids: Vec<u64> = trials
        .iter()
        .filter(|t| t.spec.batch_size == b && t.spec.repeat_of.is_none())
        .map(|t| t.trial_id)
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// The batch sizes (among `points`, with their current `steps_ci`) where the last
/// [`stall_window`] search trials beyond the plan's `plan_k` per B narrowed the relative
/// half-width by less than [`STALL_SHARE`] of the 1/√n narrowing (or widened it).
pub fn stalled(
    trials: &[TrialRecord],
    optimizer: OptimizerKind,
    points: &[BatchPoint],
    plan_k: usize,
) -> Vec<usize> {
    let w = stall_window(plan_k);
    let mut held_back = std::collections::HashSet::new();
    let mut judged = Vec::new();
    for p in points {
        let ids = search_ids_at(trials, p.batch_size);
        if ids.len() < plan_k + w || p.rel_half_width().is_none() {
            continue;
        }
        held_back.extend(ids[ids.len() - w..].iter().copied());
        let n = ids.len() as f64;
        let ideal = 1.0 - ((n - w as f64) / n).sqrt();
        judged.push((p.batch_size, STALL_SHARE * ideal));
    }
    if judged.is_empty() {
        return Vec::new();
    }
    let before: Vec<TrialRecord> = trials
        .iter()
        .filter(|t| !held_back.contains(&t.trial_id))
        .cloned()
        .collect();
    let earlier = super::per_batch_with_ci(&before, optimizer);
    judged
        .into_iter()
        .filter(|&(b, least)| {
            let now = points
                .iter()
                .find(|p| p.batch_size == b)
                .and_then(BatchPoint::rel_half_width);
            let then = earlier
                .iter()
                .find(|p| p.batch_size == b)
                .and_then(BatchPoint::rel_half_width);
            match (now, then) {
                (Some(n), Some(t)) => n > (1.0 - least) * t,
                // no interval before (no trial had reached): the new trials gave it one
                _ => false,
            }
        })
        .map(|(b, _)| b)
        .collect()
}

/// Why a B's interval stopped narrowing, from what its trials show (the first that applies).
pub fn stall_reason(p: &BatchPoint, trials: &[TrialRecord], rel: f64) -> String {
    if p.at_search_edge {
        return "its best trial's metaparameters sit at the edge of the search space \
                (S(B) is an upper bound there: widen the search, --widen)"
            .into();
    }
    if let Some(r) = &p.repeat_steps {
        if r.min > 0 && (r.max as f64 / r.min as f64 - 1.0) / 2.0 > rel {
            return format!(
                "seed noise: the best metaparameters' repeats span {}–{} steps, wider than ±{:.0} %",
                r.min,
                r.max,
                rel * 100.0
            );
        }
    }
    let mut reached: Vec<u64> = trials
        .iter()
        .filter(|t| t.spec.batch_size == p.batch_size && t.spec.repeat_of.is_none())
        .filter_map(|t| t.outcome.outcome.steps_to_target())
        .collect();
    reached.sort_unstable();
    match reached.as_slice() {
        [one] => format!(
            "a lone lucky trial: one of {} trials reached the target ({one} steps); the others \
             were cut at its steps or ran out, and the bootstrap cannot tell how lucky it was",
            p.counts.trials
        ),
        [best, second, ..] if (*second as f64) > (1.0 + 2.0 * rel) * (*best as f64) => format!(
            "a lone lucky trial: the best reached in {best} steps, the next best in {second}; \
             more search trials rarely beat it, so resamples without it stay far above"
        ),
        _ => format!(
            "more trials did not narrow it (the best of K varies more than ±{:.0} % between \
             searches at this B)",
            rel * 100.0
        ),
    }
}

/// Marks every point with what `--until rel` did there (see the module documentation). `stalled`
/// are the batch sizes [`stalled`] found in the final trials.
pub fn mark(points: &mut [BatchPoint], trials: &[TrialRecord], rel: f64, stalled: &[usize]) {
    for p in points.iter_mut() {
        let (status, reason) = match p.rel_half_width() {
            Some(w) if w <= rel => (UntilStatus::Met, None),
            _ if stalled.contains(&p.batch_size) => {
                (UntilStatus::Stalled, Some(stall_reason(p, trials, rel)))
            }
            None if p.steps.is_none() => (
                UntilStatus::Budget,
                Some("no trial reached the target: no interval to narrow".to_string()),
            ),
            _ => (UntilStatus::Budget, None),
        };
        p.until = Some(status);
        p.until_reason = reason;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::trial::{Outcome, TrialOutcome, TrialSpec};

    fn rec(id: u64, b: usize, steps: Option<u64>, cap: u64) -> TrialRecord {
        let outcome = match steps {
            Some(s) => Outcome::Reached { step: s },
            None => Outcome::NotReached {
                budget: cap,
                early_stopped: true,
            },
        };
        let mp: crate::workload::spec::Metaparams = serde_json::from_str(&format!(
            r#"{{"learning_rate": {}}}"#,
            0.1 + id as f64 * 1e-3
        ))
        .unwrap();
        TrialRecord::new(
            TrialSpec {
                trial_id: id,
                ..TrialSpec::cpu(b, mp)
            },
            TrialOutcome::bare(outcome, steps.unwrap_or(cap)),
        )
    }

    /// One lucky trial and every other trial cut at its steps: adding more such trials leaves the
    /// interval as it is, so the B is stalled with the lone-trial reason; a B whose trials all
    /// reach close together narrows and is met.
    #[test]
    fn a_lone_lucky_trial_stalls_and_a_tight_batch_is_met() {
        let mut t = Vec::new();
        let mut id = 0;
        // B = 16: trial 0 reaches at 50, 15 more are cut at 50
        for k in 0..16 {
            t.push(rec(id, 16, (k == 0).then_some(50), 50));
            id += 1;
        }
        // B = 32: 16 trials reach within 40..=46
        for k in 0..16 {
            t.push(rec(id, 32, Some(40 + (k % 7)), 60));
            id += 1;
        }
        let opt = OptimizerKind::Sgd;
        let mut pts = crate::analysis::per_batch_with_ci(&t, opt);
        let st = stalled(&t, opt, &pts, 8); // window 4: trials 12..16 judged
        assert!(st.contains(&16), "{st:?} {pts:?}");
        mark(&mut pts, &t, 0.1, &st);
        let at = |b: usize| pts.iter().find(|p| p.batch_size == b).unwrap();
        assert_eq!(at(32).until, Some(UntilStatus::Met), "{:?}", at(32));
        assert_eq!(at(16).until, Some(UntilStatus::Stalled), "{:?}", at(16));
        let why = at(16).until_reason.as_deref().unwrap();
        assert!(why.starts_with("a lone lucky trial"), "{why}");
        // not enough trials beyond the plan: nothing is judged stalled
        assert!(stalled(&t, opt, &pts, 13).is_empty());
        assert_eq!(stall_window(8), 4);
        assert_eq!(stall_window(24), 12);
    }
}
