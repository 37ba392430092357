//! The study's size (docs/calibration.md, "The study's size"): its trials per batch size, its
//! confirm stage and the spacing of its batch sizes at the ends of the range, fitted to a
//! wall-time budget. The prediction is read from the pilots' own records — each group's wall
//! time and its trials' steps, per batch size — so it is a pure function of the log and every
//! reader re-derives the same size; the same study on a faster or a busier machine may be sized
//! differently (a saved preset keeps the size it was given).

use super::{fitted_b_crit, interp_loglog, Rounds};
use crate::core::calibrate::{PilotReading, Sizing};
use crate::core::record::TrialRecord;

/// The whole run's wall-time budget, the calibration included (seconds).
pub const WALL_BUDGET_S: f64 = 14.0 * 60.0;

/// One size of the study.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Plan {
    pub trials_per_batch: usize,
    /// Confirm stage: configurations × seeds.
    pub confirm: [usize; 2],
    /// Batch sizes ×4 apart at the ends of the range, away from the pilots' B_crit.
    pub thin_ends: bool,
}

/// The plans, largest first: the first whose prediction fits is the study's. The confirm stage
/// shrinks before the search (its seeds set the intervals, its configurations guard against a
/// lucky search trial), the ends thin before the search shrinks (the bends are where B is
/// within `DENSE_FACTOR` of B_crit; beyond them two points ×4 apart still show a regime).
pub const PLANS: [Plan; 5] = [
    Plan {
        trials_per_batch: 8,
        confirm: [3, 5],
        thin_ends: false,
    },
    Plan {
        trials_per_batch: 8,
        confirm: [3, 3],
        thin_ends: false,
    },
    Plan {
        trials_per_batch: 8,
        confirm: [3, 3],
        thin_ends: true,
    },
    Plan {
        trials_per_batch: 6,
        confirm: [2, 3],
        thin_ends: true,
    },
    Plan {
        trials_per_batch: 4,
        confirm: [1, 3],
        thin_ends: true,
    },
];

/// Steps a search trial runs, in units of its batch size's S(B): the early stop ends the trials
/// that cannot beat the best one once it has reached.
pub const SEARCH_STEPS: f64 = 1.0;
/// Steps a confirm trial runs, in units of S(B): every seed runs to its own reach, the slower
/// configurations' longer.
pub const CONFIRM_STEPS: f64 = 1.3;
/// The batch sizes stay ×2 apart within this factor of the pilots' B_crit.
pub const DENSE_FACTOR: f64 = 4.0;

/// What the pilots measured of the machine: seconds per trial step at each pilot's B.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Cost {
    /// (B, seconds of group time per trial step), ascending in B.
    points: Vec<(f64, f64)>,
    /// The calibration's wall time: every group's time once, over the concurrency.
    pub calibration_s: f64,
    concurrency: f64,
}

impl Cost {
    /// From the pilots' records: a fused group's trials share its wall time (counted once), a
    /// trial alone is its own group.
    pub fn of(records: &[&TrialRecord], concurrency: usize) -> Cost {
        // (group key, B, wall, steps of its trials)
        let mut groups: Vec<(u64, usize, f64, u64)> = Vec::new();
        for r in records {
            let key = r
                .outcome
                .group
                .as_ref()
                .and_then(|g| g.trials.first().copied())
                .unwrap_or(r.trial_id);
            let wall = if r.outcome.wall_s.is_finite() {
                r.outcome.wall_s.max(0.0)
            } else {
                0.0
            };
            match groups.iter_mut().find(|g| g.0 == key) {
                Some(g) => {
                    g.2 = g.2.max(wall);
                    g.3 += r.outcome.steps;
                }
                None => groups.push((key, r.spec.batch_size, wall, r.outcome.steps)),
            }
        }
        let mut per_b: Vec<(usize, f64, u64)> = Vec::new();
        for &(_, b, wall, steps) in &groups {
            match per_b.iter_mut().find(|p| p.0 == b) {
                Some(p) => {
                    p.1 += wall;
                    p.2 += steps;
                }
                None => per_b.push((b, wall, steps)),
            }
        }
        per_b.sort_by_key(|p| p.0);
        let concurrency = concurrency.max(1) as f64;
        Cost {
            points: per_b
                .iter()
                .filter(|p| p.2 > 0 && p.1 > 0.0)
                .map(|p| (p.0 as f64, p.1 / p.2 as f64))
                .collect(),
            calibration_s: elapsed(records, &groups, concurrency),
            concurrency,
        }
    }

    /// Seconds of group time per trial step at `b` (log-log between the pilots' batch sizes,
    /// constant beyond them); 0 where nothing was timed.
    pub fn step_s(&self, b: usize) -> f64 {
        if self.points.is_empty() {
            0.0
        } else {
            interp_loglog(&self.points, b as f64)
        }
    }

    /// The predicted wall time of `plan` over `batch_sizes`, S(B) from `steps`.
    pub fn predict(&self, batch_sizes: &[usize], plan: &Plan, steps: impl Fn(usize) -> f64) -> f64 {
        let per_b = plan.trials_per_batch as f64 * SEARCH_STEPS
            + (plan.confirm[0] * plan.confirm[1]) as f64 * CONFIRM_STEPS;
        batch_sizes
            .iter()
            .map(|&b| self.step_s(b) * steps(b) * per_b)
            .sum::<f64>()
            / self.concurrency
    }
}

/// The calibration's wall time: per round, from its first trial's start to its last trial's
/// finish (what the rounds really took: a round waits for its slowest pilot, and one pilot's
/// trials run in waves, each capped by the waves before it), between its groups' time over the
/// concurrency (perfectly packed) and their sum (one at a time: a round a stop split counts no
/// downtime). Records without a finish time count their groups' time over the concurrency.
fn elapsed(records: &[&TrialRecord], groups: &[(u64, usize, f64, u64)], concurrency: f64) -> f64 {
    use std::collections::BTreeMap;
    // round → (first start, last finish, every record timed)
    let mut spans: BTreeMap<u32, (f64, f64, bool)> = BTreeMap::new();
    for r in records {
        let round = r.spec.calibrate.map_or(0, |m| m.round);
        let t = chrono::DateTime::parse_from_rfc3339(&r.finished)
            .ok()
            .map(|f| f.timestamp_micros() as f64 / 1e6);
        let e = spans
            .entry(round)
            .or_insert((f64::INFINITY, f64::NEG_INFINITY, true));
        match t {
            Some(t) => {
                e.0 = e.0.min(t - r.outcome.wall_s.max(0.0));
                e.1 = e.1.max(t);
            }
            None => e.2 = false,
        }
    }
    let round_of = |key: u64| {
        records
            .iter()
            .find(|r| {
                r.trial_id == key
                    || r.outcome
                        .group
                        .as_ref()
                        .is_some_and(|g| g.trials.first() == Some(&key))
            })
            .and_then(|r| r.spec.calibrate.map(|m| m.round))
            .unwrap_or(0)
    };
    let mut group_s: BTreeMap<u32, f64> = BTreeMap::new();
    for g in groups {
        *group_s.entry(round_of(g.0)).or_default() += g.2;
    }
    group_s
        .iter()
        .map(|(round, &sum)| {
            let packed = sum / concurrency;
            match spans.get(round) {
                Some(&(a, z, true)) if z > a => (z - a).clamp(packed, sum),
                _ => packed,
            }
        })
        .sum()
}

/// `batch_sizes` (ascending powers of two) with its ends thinned beyond `DENSE_FACTOR` of
/// `b_crit`: at each end the two outermost stay (×2 apart: the regime model names perfect
/// scaling or maximal data parallelism only with two measured batch sizes in it, and the end's
/// pair lies deepest in it), then every other one inwards (×4 apart); the range kept ×2 apart.
/// None when nothing would be dropped.
pub fn thin_ends(batch_sizes: &[usize], b_crit: f64) -> Option<(Vec<usize>, [usize; 2])> {
    let (lo, hi) = (b_crit / DENSE_FACTOR, b_crit * DENSE_FACTOR);
    let n = batch_sizes.len();
    let dense = |b: usize| (b as f64) >= lo && (b as f64) <= hi;
    // counted from its end: the end itself, then every odd place (1, 3, 5, …)
    let kept_from_end = |k: usize| k == 0 || k % 2 == 1;
    let kept: Vec<usize> = batch_sizes
        .iter()
        .enumerate()
        .filter(|&(i, &b)| {
            dense(b)
                || ((b as f64) < lo && kept_from_end(i))
                || ((b as f64) > hi && kept_from_end(n - 1 - i))
        })
        .map(|(_, &b)| b)
        .collect();
    if kept.len() == n {
        return None;
    }
    let inside: Vec<usize> = kept.iter().copied().filter(|&b| dense(b)).collect();
    let range = match (inside.first(), inside.last()) {
        (Some(&a), Some(&z)) => [a, z],
        _ => [b_crit.round().max(1.0) as usize; 2],
    };
    Some((kept, range))
}

impl Rounds<'_> {
    /// The largest plan predicted to fit the budget, and the batch sizes it keeps.
    pub(super) fn size(
        &self,
        batch_sizes: &[usize],
        pilots: &[PilotReading],
        steps: impl Fn(usize) -> f64,
    ) -> (Vec<usize>, Sizing) {
        let cost = Cost::of(self.records, self.inp.concurrency);
        let allowance = WALL_BUDGET_S - cost.calibration_s;
        let b_crit = fitted_b_crit(pilots);
        let candidates: Vec<(Plan, Vec<usize>, Option<[usize; 2]>)> = PLANS
            .iter()
            .map(|p| {
                let thinned = (p.thin_ends && self.inp.calibrate.batch_sizes)
                    .then_some(b_crit)
                    .flatten()
                    .and_then(|bc| thin_ends(batch_sizes, bc));
                match thinned {
                    Some((kept, range)) => (*p, kept, Some(range)),
                    None => (*p, batch_sizes.to_vec(), None),
                }
            })
            .collect();
        let full_s = cost.predict(batch_sizes, &PLANS[0], &steps);
        let chosen = candidates
            .iter()
            .position(|(p, bs, _)| cost.predict(bs, p, &steps) <= allowance)
            .unwrap_or(candidates.len() - 1);
        let (plan, bs, dense) = candidates[chosen].clone();
        let predicted_s = cost.predict(&bs, &plan, &steps);
        let sizing = Sizing {
            budget_s: WALL_BUDGET_S,
            calibration_s: cost.calibration_s,
            full_s,
            predicted_s,
            trials_per_batch: plan.trials_per_batch,
            confirm: plan.confirm,
            dense,
            over: predicted_s > allowance,
        };
        (bs, sizing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::trial::{GroupRun, Outcome, TrialOutcome, TrialSpec};
    use crate::workload::spec::Metaparams;

    fn rec(id: u64, b: usize, steps: u64, wall: f64, group: Option<Vec<u64>>) -> TrialRecord {
        let spec = TrialSpec {
            trial_id: id,
            ..TrialSpec::cpu(b, Metaparams::new(0.1, 0.9))
        };
        let mut o = TrialOutcome::bare(Outcome::Reached { step: steps }, steps);
        o.wall_s = wall;
        o.group = group.map(|trials| GroupRun { trials });
        TrialRecord::new(spec, o)
    }

    #[test]
    fn a_fused_group_is_timed_once_and_a_lone_trial_is_its_own_group() {
        // B = 64: a group of four sharing 8 s over 4 × 100 steps; B = 256: two trials alone, 3 s
        // and 5 s over 50 steps each
        let g = vec![1, 2, 3, 4];
        let recs = [
            rec(1, 64, 100, 8.0, Some(g.clone())),
            rec(2, 64, 100, 8.0, Some(g.clone())),
            rec(3, 64, 100, 7.9, Some(g.clone())),
            rec(4, 64, 100, 8.0, Some(g)),
            rec(5, 256, 50, 3.0, None),
            rec(6, 256, 50, 5.0, None),
        ];
        let refs: Vec<&TrialRecord> = recs.iter().collect();
        let c = Cost::of(&refs, 2);
        assert!((c.calibration_s - (8.0 + 3.0 + 5.0) / 2.0).abs() < 1e-12);
        assert!((c.step_s(64) - 8.0 / 400.0).abs() < 1e-12);
        assert!((c.step_s(256) - 8.0 / 100.0).abs() < 1e-12);
        // log-log between the pilots, constant beyond them
        let mid = c.step_s(128);
        assert!((mid - (0.02f64 * 0.08).sqrt()).abs() < 1e-12, "{mid}");
        assert!((c.step_s(4) - c.step_s(64)).abs() < 1e-12);
        assert!((c.step_s(4096) - c.step_s(256)).abs() < 1e-12);
        // 1 s a step at every B, S = 10 steps, 3 batch sizes, 8 × 1 + 15 × 1.3 trial-lengths
        let flat = Cost {
            points: vec![(1.0, 1.0)],
            calibration_s: 0.0,
            concurrency: 2.0,
        };
        let p = flat.predict(&[1, 2, 4], &PLANS[0], |_| 10.0);
        assert!((p - 3.0 * 10.0 * (8.0 + 15.0 * CONFIRM_STEPS) / 2.0).abs() < 1e-9);
    }

    #[test]
    fn the_calibration_took_what_its_rounds_spanned() {
        use crate::core::calibrate::CalibrateMark;
        let at = |id: u64, round: u32, finished: &str, wall: f64| {
            let mut r = rec(id, 64, 100, wall, None);
            r.spec.calibrate = Some(CalibrateMark {
                round,
                point: id as u32,
                budget: 100,
                eval_every: 10,
                target: Some(0.1),
            });
            r.finished = finished.into();
            r
        };
        // round 0: two trials side by side (10 s each, one span of 10 s); round 1: two trials
        // one after the other (10 s each, 20 s: the packed 10 s would hide a slot left idle);
        // round 2: a stop between its trials (an hour apart: the sum, 20 s, not the hour)
        let recs = [
            at(1, 0, "2026-01-01T00:00:10Z", 10.0),
            at(2, 0, "2026-01-01T00:00:10Z", 10.0),
            at(3, 1, "2026-01-01T00:00:20Z", 10.0),
            at(4, 1, "2026-01-01T00:00:30Z", 10.0),
            at(5, 2, "2026-01-01T00:00:40Z", 10.0),
            at(6, 2, "2026-01-01T01:00:40Z", 10.0),
        ];
        let refs: Vec<&TrialRecord> = recs.iter().collect();
        let c = Cost::of(&refs, 2);
        assert!(
            (c.calibration_s - (10.0 + 20.0 + 20.0)).abs() < 1e-6,
            "{}",
            c.calibration_s
        );
    }

    #[test]
    fn thinning_keeps_each_ends_pair_and_every_power_of_two_near_b_crit() {
        let all: Vec<usize> = (2..=12).map(|k| 1usize << k).collect(); // 4 … 4096
        let (kept, range) = thin_ends(&all, 140.0).expect("something dropped");
        // below 35: 4, 8 (the end's pair), then 32 (×4 from 8); above 560: 2048, 4096
        assert_eq!(kept, vec![4, 8, 32, 64, 128, 256, 512, 2048, 4096]);
        assert_eq!(range, [64, 512]);
        // a longer end thins further inwards: 1, 2, 8, 32 (×4 apart past the pair)
        let wide: Vec<usize> = (0..=9).map(|k| 1usize << k).collect(); // 1 … 512
        let (kept, _) = thin_ends(&wide, 500.0).expect("something dropped");
        assert_eq!(kept, vec![1, 2, 8, 32, 128, 256, 512]);
        // an end of two beyond the dense range: nothing to thin
        assert!(thin_ends(&[16, 32, 64, 128], 140.0).is_none());
        // nothing beyond 4 × B_crit either way: nothing to thin
        assert!(thin_ends(&[64, 128, 256, 512], 140.0).is_none());
    }
}
