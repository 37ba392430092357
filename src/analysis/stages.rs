//! A sweep's trial counts per stage (`core::stages`) from its header, its records and the trials
//! it has placed beyond them (queued or running; for a log read back, the seeds of a confirm
//! round a stopped sweep left unfinished, `open_confirm_seeds`). A stage not placed yet counts
//! what its plan will place: at a batch size whose search has not settled, the confirm stage's
//! k × r first blocks (k no more than the search's trials there) and the repeats' R − 1; once it
//! settled, what its records call for (the configurations the search can confirm, no repeats
//! where nothing reached).

use std::collections::HashSet;

use crate::core::confirm::ConfirmId;
use crate::core::record::{Header, TrialRecord};
use crate::core::stages::{Count, Stage, StageCounts};
use crate::workload::spec::ConfirmPlan;

/// What the stages of a sweep plan: its search (batch sizes × trials), its confirm stage, its
/// repeats (runs of each B's best metaparameters in all; 1: none).
#[derive(Clone, Debug, PartialEq)]
pub struct StagePlan {
    pub batch_sizes: Vec<usize>,
    pub trials_per_batch: usize,
    pub confirm: Option<ConfirmPlan>,
    pub repeats: usize,
    /// The study has a calibration stage (its pilots count on their own).
    pub calibrate: bool,
}

impl StagePlan {
    /// The plan a run log's header records.
    pub fn of_header(h: &Header) -> Self {
        StagePlan {
            batch_sizes: h.batch_sizes.clone(),
            trials_per_batch: h.trials_per_batch,
            confirm: h.preset.sweep.confirm,
            repeats: h.adaptive.as_ref().map_or(1, |a| a.repeats),
            calibrate: h.calibration.is_some(),
        }
    }
}

/// The counts of a sweep with header `h` that logged `records` and has `placed` (trial ids
/// queued or running, or owed by an unfinished round) beyond them.
pub fn stage_counts(h: &Header, records: &[TrialRecord], placed: &HashSet<u64>) -> StageCounts {
    counts_of(&StagePlan::of_header(h), records, placed)
}

/// [`stage_counts`] of a sweep planning `h`.
pub fn counts_of(h: &StagePlan, records: &[TrialRecord], placed: &HashSet<u64>) -> StageCounts {
    let n_b = h.batch_sizes.len();
    let plan = (n_b * h.trials_per_batch) as u64;
    let done: HashSet<u64> = records.iter().map(|r| r.trial_id).collect();
    let known: HashSet<u64> = done.union(placed).copied().collect();
    let count =
        |stage: Stage, ids: &HashSet<u64>| ids.iter().filter(|&&i| Stage::of(i) == stage).count();
    // a batch size's search has settled: every plan trial there is logged
    let settled = |bi: usize| {
        (0..h.trials_per_batch as u64).all(|k| done.contains(&(k * n_b as u64 + bi as u64)))
    };
    let search = Count {
        done: count(Stage::Search, &done),
        planned: plan as usize
            + known
                .iter()
                .filter(|&&i| Stage::of(i) == Stage::Search && i >= plan)
                .count(),
    };
    let confirm = h.confirm.map(|p| {
        let mut planned = 0;
        let mut first = vec![0usize; n_b];
        for (bi, &b) in h.batch_sizes.iter().enumerate() {
            first[bi] = if settled(bi) {
                super::confirm::top_configs(records, b, p.configs).len()
            } else {
                p.configs.min(h.trials_per_batch)
            };
            planned += first[bi] * p.seeds;
        }
        // beyond the first blocks: the --until rounds placed or logged
        planned += known
            .iter()
            .filter_map(|&i| ConfirmId::decode(i))
            .filter(|c| {
                first
                    .get(c.batch_index)
                    .is_none_or(|&k| c.rank as usize >= k || c.seed as usize >= p.seeds)
            })
            .count();
        Count {
            done: count(Stage::Confirm, &done),
            planned,
        }
    });
    let repeats = Some(h.repeats).filter(|&r| r > 1).map(|r| {
        let expected: usize = h
            .batch_sizes
            .iter()
            .enumerate()
            .map(|(bi, &b)| {
                let reached = records.iter().any(|t| {
                    t.spec.batch_size == b
                        && t.spec.is_search()
                        && t.outcome.outcome.steps_to_target().is_some()
                });
                if settled(bi) && !reached {
                    0
                } else {
                    r - 1
                }
            })
            .sum();
        Count {
            done: count(Stage::Repeats, &done),
            planned: expected.max(count(Stage::Repeats, &known)),
        }
    });
    let calibrate = h.calibrate.then(|| Count {
        done: count(Stage::Calibrate, &done),
        planned: count(Stage::Calibrate, &known),
    });
    StageCounts {
        calibrate,
        search,
        confirm,
        repeats,
    }
}

/// The confirm trials (ids) a log owes: the seeds of the `--until` rounds it logged in part
/// (`confirm_rounds::rounds_at`), which a resumed sweep runs before anything new.
pub fn open_confirm_seeds(h: &Header, records: &[TrialRecord]) -> HashSet<u64> {
    let mut out = HashSet::new();
    let Some(_) = h.preset.sweep.confirm else {
        return out;
    };
    let study = crate::core::analysis::Study::of_preset(&h.preset);
    let rel = h.adaptive.as_ref().and_then(|a| a.until);
    for (bi, &b) in h.batch_sizes.iter().enumerate() {
        let held = super::confirm_rounds::rounds_at(records, &study, b, rel);
        if held.rounds == 0 {
            continue; // first blocks: counted as the plan's
        }
        for (rank, _, seed) in held.open {
            out.extend(
                ConfirmId {
                    batch_index: bi,
                    rank,
                    seed,
                }
                .encode(),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::tests::rec;
    use crate::core::confirm::ConfirmMark;
    use crate::core::trial::Outcome;
    use crate::workload::spec::ConfirmPlan;

    fn plan(confirm: Option<ConfirmPlan>, repeats: usize) -> StagePlan {
        StagePlan {
            batch_sizes: vec![16, 64],
            trials_per_batch: 3,
            confirm,
            repeats,
            calibrate: false,
        }
    }

    fn reached(id: u64, b: usize, step: u64) -> TrialRecord {
        rec(id, b, 0.1, Outcome::Reached { step }, None)
    }

    fn confirm(b: usize, bi: usize, rank: u32, of: u64, seed: u32) -> TrialRecord {
        let id = ConfirmId::id(bi, rank, seed).unwrap();
        let mut t = reached(id, b, 100);
        t.spec.confirm = Some(ConfirmMark { of, rank, seed });
        t
    }

    /// The search against its plan; the confirm stage's first blocks expected (k × r per B, k no
    /// more than the trials) until a B settles, then as many configurations as reached there, and
    /// the `--until` seeds placed or logged beyond them; repeats R − 1 per B with a reached trial.
    #[test]
    fn each_stage_counts_against_its_own_plan() {
        let none = HashSet::new();
        let two_by_four = Some(ConfirmPlan {
            configs: 2,
            seeds: 4,
        });
        // nothing logged: 6 search trials, 2 B × 2 × 4 confirm seeds
        let c = counts_of(&plan(two_by_four, 1), &[], &none);
        assert_eq!((c.search.done, c.search.planned), (0, 6));
        assert_eq!(
            c.confirm,
            Some(Count {
                done: 0,
                planned: 16
            })
        );
        assert_eq!(c.repeats, None);
        assert_eq!(c.planned(), 22);
        // B = 16 settled with one trial that reached (ids 0, 2, 4 at batch index 0): one
        // configuration confirmed there; B = 64 not settled (only trial 1)
        let mut recs = vec![
            reached(0, 16, 50),
            rec(2, 16, 0.1, Outcome::Diverged { step: 3 }, None),
            rec(4, 16, 0.1, Outcome::Diverged { step: 3 }, None),
            reached(1, 64, 30),
        ];
        let c = counts_of(&plan(two_by_four, 3), &recs, &none);
        assert_eq!((c.search.done, c.search.planned), (4, 6));
        assert_eq!(
            c.confirm,
            Some(Count {
                done: 0,
                planned: 4 + 8
            })
        );
        // repeats: 2 at B = 16 (it reached), 2 expected at the unsettled B = 64
        assert_eq!(
            c.repeats,
            Some(Count {
                done: 0,
                planned: 4
            })
        );
        // its first block logged and a --until round of 4 more seeds placed: 8 at B = 16
        for s in 0..4 {
            recs.push(confirm(16, 0, 0, 0, s));
        }
        let placed: HashSet<u64> = (4..8)
            .map(|s| {
                ConfirmId {
                    batch_index: 0,
                    rank: 0,
                    seed: s,
                }
                .encode()
                .unwrap()
            })
            .collect();
        let c = counts_of(&plan(two_by_four, 1), &recs, &placed);
        assert_eq!(
            c.confirm,
            Some(Count {
                done: 4,
                planned: 8 + 8
            })
        );
        assert_eq!(c.text(), "search 4/6 · confirm 4/16");
        assert!(c.staged() && c.done() <= c.planned());
        // no confirm stage, no repeats: one stage
        let c = counts_of(&plan(None, 1), &recs[..4], &none);
        assert!(!c.staged());
        assert_eq!(c.text(), "search 4/6");
        // a search trial beyond the plan (--until without a stage) counts in the search's plan
        let mut more = recs[..4].to_vec();
        more.push(reached(7, 64, 40));
        let c = counts_of(&plan(None, 1), &more, &none);
        assert_eq!((c.search.done, c.search.planned), (5, 7));
    }
}
