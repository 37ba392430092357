//! What `--until REL` did at each batch size: whether more trials still narrow a B's
//! interval, and, once the sweep stops, per B: `met` (within ±REL), `stalled` (more trials did not
//! narrow it, with the likely reason) or `budget` (the search budget ran out, or the sweep was
//! stopped, while it still narrowed).
//!
//! Stalled, measured: at a B with at least a window of w search trials beyond the plan (w = half
//! the plan's trials per B, at least [`STALL_MIN_WINDOW`]), the relative half-width of `steps_ci`
//! with all n of them against without its last w (by trial id): if it fell by less than
//! [`STALL_SHARE`] of what an interval shrinking as 1/√n would (1 − √((n − w)/n)), the last trials
//! did not help there and `--until` spends its budget elsewhere (before this, one B of digits-mlp-sgd took 327 trials
//! at an unchanged [23, 162]). Placement: [`outlook`] (the tail model's expected narrowing of one
//! more trial); a B that has flattened gets no more (docs/intervals.md).

use super::bootstrap::Rng;
use super::censored::{TailFit, TailObs};
use crate::core::analysis::{BatchPoint, UntilStatus};
use crate::core::record::TrialRecord;
use crate::workload::spec::{OptimizerKind, Preset};

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
        .filter(|t| t.spec.batch_size == b && t.spec.is_search())
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

/// A trial `--until` adds beyond the plan is cut by early stopping at this multiple of S(B), not
/// at S(B) as the plan's are: S(B) is exactly as without it (a trial that would beat S(B) reaches
/// before the cap), but a trial reaching in [S(B), cap] is an event in the lower tail, where the
/// interval for S*_K is decided, instead of one more "≥ S(B)" (measured, docs/intervals.md:
/// at the plan's cap the interval hardly narrows).
pub const UNTIL_CAP: f64 = 2.0;
/// Predictive trials drawn to estimate what one more trial does to a B's interval.
pub const PREDICTIVE: usize = 24;
/// Below this relative narrowing per trial a B has flattened, whatever budget is left.
pub const UNTIL_FLAT: f64 = 0.005;

/// The step cap of a `--until` trial at a B whose best is `best` (`full_budget`: the B's budget).
pub fn until_cap(best: Option<u64>, full_budget: u64) -> u64 {
    best.map_or(full_budget, |b| {
        ((b as f64 * UNTIL_CAP).ceil() as u64).min(full_budget)
    })
}

/// The tail model's relative half-width at a B as `steps_ci` reports it (the 95 % interval for
/// S*_K widened to contain S(B), over S(B)), without repeats; None with fewer than two trials or
/// none that reached.
fn model_width(obs: &[TailObs], seed: u64) -> Option<f64> {
    let d = super::bootstrap::tail_draws(obs, seed)?;
    let [lo, hi] = super::stats::interval95(d)?;
    let best = obs
        .iter()
        .filter_map(|o| match o {
            TailObs::Event(t) => Some(*t),
            _ => None,
        })
        .fold(f64::INFINITY, f64::min);
    Some((hi.exp().max(best) - lo.exp().min(best)) / 2.0 / best)
}

/// What one more search trial is expected to do at a B (the posterior predictive of the tail
/// model, [`PREDICTIVE`] trials cut at the cap the scheduler would give it, common random numbers).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Outlook {
    pub batch_size: usize,
    /// The model's relative half-width now.
    pub now: f64,
    /// Its expected value with one more trial.
    pub after_one: f64,
}

impl Outlook {
    /// The expected narrowing of the relative half-width by one more trial.
    pub fn narrowing(&self) -> f64 {
        self.now - self.after_one
    }

    /// More trials at the current rate to get within ±`rel` (None: no narrowing).
    pub fn trials_to(&self, rel: f64) -> Option<f64> {
        let d = self.narrowing();
        (d > 0.0).then(|| ((self.now - rel) / d).max(0.0))
    }

    /// Flattened: one more trial narrows it by less than [`UNTIL_FLAT`] of its width, or at the
    /// current rate ±`rel` would take more trials than the `left` the budget has.
    pub fn flattened(&self, rel: f64, left: usize) -> bool {
        self.narrowing() < UNTIL_FLAT * self.now
            || self.trials_to(rel).is_none_or(|k| k > left as f64)
    }

    /// In words, for the report: the expected narrowing and what it implies.
    pub fn describe(&self, rel: f64, left: usize) -> String {
        let per = self.narrowing() * 100.0;
        match self.trials_to(rel) {
            Some(k) if per > 0.0 => format!(
                "one more trial would narrow ±{:.0} % by {per:.1} points: ±{:.0} % would take \
                 ~{:.0} more trials, {left} were left",
                self.now * 100.0,
                rel * 100.0,
                k.ceil()
            ),
            _ => format!(
                "one more trial is not expected to narrow ±{:.0} % at all",
                self.now * 100.0
            ),
        }
    }
}

/// The tail-model observations of the non-cancelled search trials at `b` (at the goal).
fn observations_at(trials: &[TrialRecord], b: usize) -> Vec<TailObs> {
    super::bootstrap::tail_obs_at(&super::Observed::of(trials, &super::Reading::Goal), b)
}

/// The [`Outlook`] at `b` for one more search trial cut at `cap` steps (`full_budget`: the B's
/// own budget, where a cut is "ran its budget" rather than early stopping). None where the
/// model has no interval (fewer than two trials, none reached).
pub fn outlook(trials: &[TrialRecord], b: usize, cap: u64, full_budget: u64) -> Option<Outlook> {
    let obs = observations_at(trials, b);
    let seed = super::bootstrap::draw_seed(b);
    let fit = TailFit::new(&obs)?;
    let now = model_width(&obs, seed)?;
    let cap = cap as f64;
    let mut rng = Rng::new(crate::core::splitmix64(seed ^ 0x0071_1c00));
    let mut sum = 0.0;
    let mut more = obs.clone();
    more.push(TailObs::Never);
    for _ in 0..PREDICTIVE {
        let t = fit.draw_trial(&mut rng);
        *more.last_mut().expect("pushed") = if t <= cap {
            TailObs::Event(t.max(1.0))
        } else if cap < full_budget as f64 {
            TailObs::Cut(cap)
        } else {
            TailObs::Censored(cap)
        };
        sum += model_width(&more, seed).unwrap_or(now);
    }
    Some(Outlook {
        batch_size: b,
        now,
        after_one: sum / PREDICTIVE as f64,
    })
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
        .filter(|t| t.spec.batch_size == p.batch_size && t.spec.is_search())
        .filter_map(|t| t.outcome.outcome.steps_to_target())
        .collect();
    reached.sort_unstable();
    match reached.as_slice() {
        [one] => format!(
            "a lone lucky trial: one of {} trials reached the target ({one} steps); the others \
             were cut at its steps or ran out, so the tail model cannot tell how lucky it was",
            p.counts.trials
        ),
        [best, second, ..] if (*second as f64) > (1.0 + 2.0 * rel) * (*best as f64) => format!(
            "a lone lucky trial: the best reached in {best} steps, the next best in {second}; \
             more search trials rarely beat it, and the tail below it rests on that one trial"
        ),
        _ => format!(
            "more trials did not narrow it (the best of K varies more than ±{:.0} % between \
             searches at this B)",
            rel * 100.0
        ),
    }
}

/// Search trials that count against `--until`'s budget (plan and `--until` trials; not repeats nor
/// `--widen` trials), distinct ids.
pub fn search_trials(trials: &[TrialRecord]) -> usize {
    let ids: std::collections::HashSet<u64> = trials
        .iter()
        .filter(|t| t.spec.is_search() && t.trial_id < crate::core::widen::WIDEN_ID_BASE)
        .map(|t| t.trial_id)
        .collect();
    ids.len()
}

/// Confirm trials, distinct ids: with a confirm stage they count against `--until`'s
/// budget beside the search trials.
pub fn confirm_trials(trials: &[TrialRecord]) -> usize {
    let ids: std::collections::HashSet<u64> = trials
        .iter()
        .filter(|t| t.spec.confirm.is_some())
        .map(|t| t.trial_id)
        .collect();
    ids.len()
}

/// The [`Outlook`] of one more `--until` trial at every B of `points` still wider than ±`rel`
/// (the cap it would get: [`until_cap`] with early stopping, else the B's budget).
pub fn outlooks(
    trials: &[TrialRecord],
    preset: &Preset,
    points: &[BatchPoint],
    rel: f64,
) -> Vec<Outlook> {
    points
        .iter()
        .filter(|p| p.rel_half_width().is_some_and(|w| w > rel))
        .filter_map(|p| {
            let full = preset.workload.budget_for(p.batch_size);
            let cap = if preset.sweep.early_stopping {
                until_cap(p.steps, full)
            } else {
                full
            };
            outlook(trials, p.batch_size, cap, full)
        })
        .collect()
}

/// Marks every point with what `--until rel` did there (see the module documentation).
/// `stalled`: the batch sizes [`stalled`] found in the final trials; `outlooks`: [`outlooks`] of
/// the final trials; `left`: search trials the budget still had.
pub fn mark(
    points: &mut [BatchPoint],
    trials: &[TrialRecord],
    rel: f64,
    stalled: &[usize],
    outlooks: &[Outlook],
    left: usize,
) {
    for p in points.iter_mut() {
        let o = outlooks.iter().find(|o| o.batch_size == p.batch_size);
        let (status, reason) = match p.rel_half_width() {
            Some(w) if w <= rel => (UntilStatus::Met, None),
            _ if stalled.contains(&p.batch_size) => {
                (UntilStatus::Stalled, Some(stall_reason(p, trials, rel)))
            }
            _ if o.is_some_and(|o| o.narrowing() < UNTIL_FLAT * o.now) => {
                let o = o.expect("checked");
                let why = stall_reason(p, trials, rel);
                (
                    UntilStatus::Stalled,
                    Some(format!("{why}; {}", o.describe(rel, left))),
                )
            }
            None if p.steps.is_none() => (
                UntilStatus::Budget,
                Some("no trial reached the target: no interval to narrow".to_string()),
            ),
            _ => (
                UntilStatus::Budget,
                o.filter(|_| left > 0)
                    .map(|o| format!("{} (raise --max-trials to go on)", o.describe(rel, left))),
            ),
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
        mark(&mut pts, &t, 0.1, &st, &[], 0);
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
