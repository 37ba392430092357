//! The confirm stage's structure, re-derived from the records alone (the stage made exact
//! on resume): at each batch size its **first blocks** (the best k configurations × the plan's r
//! seeds, a pure function of the search's records there) and then the **`--until` rounds** (the
//! seeds a `confirm_until` / `--until REL` step adds), each a pure function of the records of the
//! search and of the rounds before it (`next_round`). A sweep decides a round from exactly those
//! records, so replaying the rounds one after another (`rounds_at`) says which round every logged
//! confirm trial belongs to, which seeds of a round a stopped sweep never logged (resume runs
//! exactly those), and which confirm trials no round places (an edited log, or a header whose
//! `confirm` does not match its records: readers warn, resume refuses).
//!
//! Whether a round is placed at all also depends on the sweep's trial budget (`--max-trials`,
//! shared by every batch size): that part is the scheduler's (`sweep::scheduler::placement`),
//! which re-decides the wave a stopped sweep was in from the records logged before it.

use std::collections::{BTreeMap, HashSet};

use super::confirm::{outlook, top_configs, ConfirmOutlook, ConfirmStep};
use crate::core::analysis::Study;
use crate::core::record::TrialRecord;

/// A confirm seed by (rank of its configuration, the search trial it re-runs, seed index).
pub type Seed = (u32, u64, u32);

/// The seed of a confirm trial's record (None: not a confirm trial).
pub fn seed_of(t: &TrialRecord) -> Option<Seed> {
    t.spec.confirm.map(|m| (m.rank, m.of, m.seed))
}

/// The stage's first blocks at `b`: the best `k` configurations of the search there (as many as
/// there are candidates) × seeds 0 … r − 1.
pub fn first_blocks(trials: &[TrialRecord], study: &Study, b: usize) -> Vec<Seed> {
    let Some(plan) = study.confirm else {
        return Vec::new();
    };
    let top = top_configs(trials, b, plan.configs);
    let mut out = Vec::with_capacity(top.len() * plan.seeds);
    for (rank, base) in top.iter().enumerate() {
        for seed in 0..plan.seeds {
            out.push((rank as u32, base.trial_id, seed as u32));
        }
    }
    out
}

/// The next `--until` round at a batch size: what it is expected to do and the seeds it adds.
#[derive(Clone, Debug, PartialEq)]
pub struct NextRound {
    pub outlook: ConfirmOutlook,
    /// Seeds per configuration the round adds (a new configuration: 1, with `outlook.trials`
    /// seeds).
    pub per_config: usize,
    pub seeds: Vec<Seed>,
}

impl NextRound {
    /// Trials the round costs.
    pub fn cost(&self) -> usize {
        self.outlook.trials.saturating_mul(self.per_config)
    }
}

/// The `--until REL` round the records call for at `b` once its first blocks (and every round
/// before) are logged: None where the confirmed interval is within ±`rel`, incomplete, or no step
/// is expected to narrow it. A seed round gives every confirmed configuration as many seeds as
/// ±`rel` is expected to take (at most doubling them), in whole blocks of r where blocks are
/// censored (`core::confirm::block_need`); one more configuration (no confirmed median reached)
/// gets as many seeds as the others have. A pure function of `b`'s records (the trial budget is
/// the caller's).
pub fn next_round(trials: &[TrialRecord], study: &Study, b: usize, rel: f64) -> Option<NextRound> {
    let plan = study.confirm?;
    let p = super::confirm_point(trials, study, b);
    let c = p.confirmed.as_ref().filter(|c| c.complete)?;
    if c.rel_half_width().is_some_and(|w| w <= rel) {
        return None;
    }
    let o = outlook(&p, trials, plan.seeds)?;
    if o.narrowing_per_trial() <= 0.0 {
        return None; // flattened: no step narrows it
    }
    let blocks = crate::core::confirm::block_need(plan.seeds) < plan.seeds;
    let per_config = match o.step {
        ConfirmStep::SeedRound if blocks => o.round_for(rel).div_ceil(plan.seeds) * plan.seeds,
        ConfirmStep::SeedRound => o.round_for(rel),
        ConfirmStep::NextConfig { .. } => 1,
    };
    let mut seeds = Vec::new();
    match o.step {
        ConfirmStep::SeedRound => {
            // per configuration (rank, its search trial): the next seed index
            let mut next: BTreeMap<(u32, u64), u32> = BTreeMap::new();
            for t in trials.iter().filter(|t| t.spec.batch_size == b) {
                if let Some((rank, of, seed)) = seed_of(t) {
                    let e = next.entry((rank, of)).or_insert(0);
                    *e = (*e).max(seed + 1);
                }
            }
            for ((rank, of), first) in next {
                seeds.extend((first..first + per_config as u32).map(|s| (rank, of, s)));
            }
        }
        ConfirmStep::NextConfig { rank } => {
            let top = top_configs(trials, b, rank as usize + 1);
            let base = top.get(rank as usize)?;
            seeds.extend((0..o.trials as u32).map(|s| (rank, base.trial_id, s)));
        }
    }
    (!seeds.is_empty()).then_some(NextRound {
        outlook: o,
        per_config,
        seeds,
    })
}

/// The confirm stage at one batch size as a log holds it ([`rounds_at`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RoundsAt {
    /// `--until` rounds with at least one logged seed (0: the first blocks only, or nothing).
    pub rounds: usize,
    /// The seeds of the last round begun (the first blocks when those are not all logged) that
    /// are not logged: what a stopped sweep still owes that round.
    pub open: Vec<Seed>,
    /// The logged seeds of the last `--until` round (empty with `rounds` = 0).
    pub last: Vec<Seed>,
    /// Confirm trials (ids) no round places: the log was not written by its header's plan.
    pub unexplained: Vec<u64>,
}

/// Replays the confirm stage at `b` over the records (any order: a log's, or several logs'
/// merged): the first blocks, then each `--until REL` round from the records before it, while
/// logged confirm trials remain. `rel`: the sweep's `--until` (None: no rounds).
pub fn rounds_at(trials: &[TrialRecord], study: &Study, b: usize, rel: Option<f64>) -> RoundsAt {
    let at_b: Vec<&TrialRecord> = trials.iter().filter(|t| t.spec.batch_size == b).collect();
    let mut left: BTreeMap<Seed, u64> = BTreeMap::new();
    for t in &at_b {
        if let Some(s) = seed_of(t) {
            left.insert(s, t.trial_id);
        }
    }
    let mut out = RoundsAt::default();
    if left.is_empty() || study.confirm.is_none() {
        out.unexplained = left.into_values().collect();
        return out;
    }
    // the records each step is decided from, in the log's order: the search's, then the
    // confirm seeds of the steps replayed so far
    let mut known: HashSet<Seed> = HashSet::new();
    let records = |known: &HashSet<Seed>| -> Vec<TrialRecord> {
        at_b.iter()
            .filter(|t| seed_of(t).map_or(t.spec.is_search(), |s| known.contains(&s)))
            .map(|t| (*t).clone())
            .collect()
    };
    let first = first_blocks(&records(&known), study, b);
    let (_, missing) = take(&first, &mut left, &mut known);
    out.open = missing;
    if let Some(rel) = rel.filter(|_| out.open.is_empty()) {
        while !left.is_empty() {
            let Some(round) = next_round(&records(&known), study, b, rel) else {
                break;
            };
            let (got, missing) = take(&round.seeds, &mut left, &mut known);
            if got.is_empty() {
                break; // the logged seeds are not this round's
            }
            out.rounds += 1;
            out.last = got;
            out.open = missing;
            if !out.open.is_empty() {
                break;
            }
        }
    }
    out.unexplained = left.into_values().collect();
    out
}

/// Moves the logged ones of `seeds` from `left` to `known`: (those logged, those not).
fn take(
    seeds: &[Seed],
    left: &mut BTreeMap<Seed, u64>,
    known: &mut HashSet<Seed>,
) -> (Vec<Seed>, Vec<Seed>) {
    let (mut got, mut missing) = (Vec::new(), Vec::new());
    for s in seeds {
        if left.remove(s).is_some() {
            known.insert(*s);
            got.push(*s);
        } else {
            missing.push(*s);
        }
    }
    (got, missing)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::tests::rec;
    use crate::core::confirm::ConfirmMark;
    use crate::core::trial::Outcome;
    use crate::workload::spec::{ConfirmPlan, Metric, OptimizerKind, Target};

    fn study(plan: Option<ConfirmPlan>) -> Study {
        let target = Target {
            metric: Metric::ValError,
            value: 0.1,
        };
        Study {
            target,
            goal: target,
            optimizer: OptimizerKind::Momentum,
            search: None,
            confirm: plan,
        }
    }

    /// Five search trials at B = 16: ids 1 (80 steps) and 4 (90) are the best that reached; 2
    /// ran out its budget and 3 diverged (neither is a candidate).
    fn search() -> Vec<TrialRecord> {
        let out = |s: u64| Outcome::Reached { step: s };
        vec![
            rec(0, 16, 0.1, out(100), None),
            rec(1, 16, 0.2, out(80), None),
            rec(
                2,
                16,
                0.3,
                Outcome::NotReached {
                    budget: 500,
                    early_stopped: false,
                },
                None,
            ),
            rec(3, 16, 4.0, Outcome::Diverged { step: 7 }, None),
            rec(4, 16, 0.4, out(90), None),
        ]
    }

    /// A confirm trial (`id`) of seed `(rank, of, seed)` at B = 16 that reached at `steps`.
    fn confirm(id: u64, (rank, of, seed): Seed, steps: u64) -> TrialRecord {
        let mut t = rec(id, 16, 0.2, Outcome::Reached { step: steps }, None);
        t.spec.confirm = Some(ConfirmMark { of, rank, seed });
        t
    }

    const TWO_BY_TWO: ConfirmPlan = ConfirmPlan {
        configs: 2,
        seeds: 2,
    };

    #[test]
    fn the_first_blocks_are_the_best_configurations_times_the_seeds() {
        let s = study(Some(TWO_BY_TWO));
        assert_eq!(
            first_blocks(&search(), &s, 16),
            [(0, 1, 0), (0, 1, 1), (1, 4, 0), (1, 4, 1)]
        );
        // no confirm stage, or no search trial at that B: no blocks
        assert!(first_blocks(&search(), &study(None), 16).is_empty());
        assert!(first_blocks(&search(), &s, 32).is_empty());
        // more configurations asked than candidates: the candidates there are
        let three = study(Some(ConfirmPlan {
            configs: 9,
            seeds: 1,
        }));
        assert_eq!(
            first_blocks(&search(), &three, 16),
            [(0, 1, 0), (1, 4, 0), (2, 0, 0)]
        );
    }

    #[test]
    fn a_replay_says_what_a_stopped_stage_owes_and_what_no_round_places() {
        let s = study(Some(TWO_BY_TWO));
        let seeds = first_blocks(&search(), &s, 16);
        let mut log = search();
        log.extend(
            seeds
                .iter()
                .enumerate()
                .map(|(i, &x)| confirm(10 + i as u64, x, 85)),
        );
        // the whole first blocks logged: nothing open, nothing unexplained, no round
        assert_eq!(rounds_at(&log, &s, 16, None), RoundsAt::default());

        // stopped before the last seed: that seed is owed
        let stopped = &log[..log.len() - 1];
        let r = rounds_at(stopped, &s, 16, None);
        assert_eq!(r.open, [(1, 4, 1)]);
        assert!(r.unexplained.is_empty() && r.rounds == 0);

        // a confirm trial of a configuration that is not among the best, or of a missing trial
        let mut edited = log.clone();
        edited.push(confirm(20, (1, 0, 0), 85));
        edited.push(confirm(21, (0, 999, 0), 85));
        let r = rounds_at(&edited, &s, 16, None);
        assert_eq!(
            r.unexplained,
            [21, 20],
            "in seed order: (0, 999, 0), (1, 0, 0)"
        );
        assert!(r.open.is_empty());

        // a header without a confirm stage places none of them
        let r = rounds_at(&log, &study(None), 16, None);
        assert_eq!(r.unexplained, [10, 11, 12, 13]);
        // the search alone: nothing to replay
        assert_eq!(rounds_at(&search(), &s, 16, Some(0.1)), RoundsAt::default());
    }

    #[test]
    fn a_round_is_owed_only_while_the_interval_is_wider_than_asked() {
        let s = study(Some(TWO_BY_TWO));
        let mut log = search();
        let seeds = first_blocks(&log, &s, 16);
        // seeds that disagree widely: a wide confirmed interval
        let steps = [60, 140, 70, 150];
        log.extend(
            seeds
                .iter()
                .zip(steps)
                .enumerate()
                .map(|(i, (&x, n))| confirm(10 + i as u64, x, n)),
        );
        // the first blocks incomplete: no round yet
        assert_eq!(next_round(&log[..log.len() - 1], &s, 16, 0.01), None);
        // one configuration × 8 seeds that agree: the interval is within ±25 %, no round
        let eight = study(Some(ConfirmPlan {
            configs: 1,
            seeds: 8,
        }));
        let mut agree = search();
        agree.extend((0..8u32).map(|i| confirm(10 + i as u64, (0, 1, i), 100)));
        assert_eq!(next_round(&agree, &eight, 16, 0.25), None);
        // ±1 % asked of four disagreeing seeds: a round is called for, and its seeds continue
        // each configuration's seed indices (or open the next configuration at seed 0)
        let round = next_round(&log, &s, 16, 0.01).expect("a round narrows ±1 %");
        {
            assert!(round.cost() >= 1 && !round.seeds.is_empty());
            for &(rank, of, seed) in &round.seeds {
                let continues = [(0, 1), (1, 4)].contains(&(rank, of)) && seed >= 2;
                let next_config = rank == 2 && of == 0;
                assert!(continues || next_config, "{:?}", round.seeds);
            }
            // replaying the log with the round logged places its seeds in round 1
            let mut more = log.clone();
            more.extend(
                round
                    .seeds
                    .iter()
                    .enumerate()
                    .map(|(i, &x)| confirm(30 + i as u64, x, 100)),
            );
            let r = rounds_at(&more, &s, 16, Some(0.01));
            assert_eq!(r.rounds, 1, "{r:?}");
            assert_eq!(r.last, round.seeds, "{r:?}");
            assert!(r.unexplained.is_empty(), "{r:?}");
        }
    }
}
