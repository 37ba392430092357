//! The confirm stage's trial ids: after the search at a batch size, its best `k`
//! configurations re-run with `r` fresh seeds each (`workload::spec::ConfirmPlan`). A confirm
//! trial's id says which batch size, which configuration (its rank in the search at that B, 0 =
//! the best) and which of its seeds it is, so the scheduler's placement, resume and the run-log
//! validator re-derive every confirm trial from the records without a plan of their own.
//!
//! Id layout: `CONFIRM_ID_BASE + bi · 10⁶ + rank · 10³ + seed` for batch index `bi`, rank < 1000
//! and seed < 1000: far above every search (< 5·10⁸), re-centred (< 10⁹) and repeat id. A trial's
//! seed is `core::plan::trial_seed(sweep seed, id)`, a bijection of the id for a given sweep seed
//! (SplitMix64 steps, an xor and an addition, each invertible), so a confirm seed can never be the
//! seed of a search trial: their ids differ.

use serde::{Deserialize, Serialize};

/// Ids of confirm trials start here (every other trial's id is below).
pub const CONFIRM_ID_BASE: u64 = 2_000_000_000;
// above every repeat id (`core::widen::REPEAT_ID_BASE` and up)
const _: () = assert!(CONFIRM_ID_BASE >= 2 * crate::core::widen::REPEAT_ID_BASE);
/// Ranks and seeds per configuration at most (the id's two three-digit fields).
pub const CONFIRM_FIELD_MAX: u64 = 1000;
/// Batch sizes a sweep may have for its confirm ids to fit (any realistic sweep does).
pub const CONFIRM_MAX_BATCH_SIZES: usize = 1_000_000;

/// What a confirm trial's id says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConfirmId {
    pub batch_index: usize,
    /// The configuration's rank among the search's trials at its B (0 = the best).
    pub rank: u32,
    /// Which fresh seed of that configuration (0-based).
    pub seed: u32,
}

impl ConfirmId {
    /// The trial id of seed `seed` of the configuration ranked `rank` at the `batch_index`-th
    /// batch size, or None when a field is out of range.
    pub fn id(batch_index: usize, rank: u32, seed: u32) -> Option<u64> {
        ConfirmId {
            batch_index,
            rank,
            seed,
        }
        .encode()
    }

    /// The trial id, or None when a field is out of range.
    pub fn encode(&self) -> Option<u64> {
        if self.rank as u64 >= CONFIRM_FIELD_MAX
            || self.seed as u64 >= CONFIRM_FIELD_MAX
            || self.batch_index >= CONFIRM_MAX_BATCH_SIZES
        {
            return None;
        }
        Some(
            CONFIRM_ID_BASE
                + self.batch_index as u64 * CONFIRM_FIELD_MAX * CONFIRM_FIELD_MAX
                + self.rank as u64 * CONFIRM_FIELD_MAX
                + self.seed as u64,
        )
    }

    /// The fields of a confirm trial's id; None for any other id.
    pub fn decode(trial_id: u64) -> Option<ConfirmId> {
        let r = trial_id.checked_sub(CONFIRM_ID_BASE)?;
        let batch_index = (r / (CONFIRM_FIELD_MAX * CONFIRM_FIELD_MAX)) as usize;
        if batch_index >= CONFIRM_MAX_BATCH_SIZES {
            return None;
        }
        Some(ConfirmId {
            batch_index,
            rank: ((r / CONFIRM_FIELD_MAX) % CONFIRM_FIELD_MAX) as u32,
            seed: (r % CONFIRM_FIELD_MAX) as u32,
        })
    }
}

/// Confirm seeds are censored in **blocks** of the plan's r seeds (seeds j·r … (j+1)·r − 1 of a
/// configuration; Type II censoring): once `block_need(r)` seeds of a complete block
/// reached the goal, at step c, the block's other seeds count as "≥ c". The seed median (r ≥ 4: at
/// most a quarter of a block censored) is unchanged by it; what it saves is the slowest seeds'
/// tail, which a fused group otherwise runs nearly alone. The trainer stops those seeds at c when
/// one group holds the whole block (`GroupCut::Quorum`); the analysis applies the same rule to
/// the records (`analysis::confirm`), so the numbers never depend on how trials were grouped.
pub const BLOCK_QUORUM: f64 = 0.75;

/// Seeds of a complete block of `r` that must reach before the rest are censored (r: no
/// censoring below 4 seeds).
pub fn block_need(r: usize) -> usize {
    if r < 4 {
        r
    } else {
        ((BLOCK_QUORUM * r as f64).ceil() as usize).min(r)
    }
}

/// The marker a confirm trial carries in its `TrialSpec` (absent on every other trial, and in
/// logs written before the confirm stage): whose metaparameters it re-runs, that configuration's
/// rank in the search, and which of its fresh seeds it is.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConfirmMark {
    /// The search trial whose metaparameters this trial re-runs.
    pub of: u64,
    /// That trial's rank among the search's trials at its B (0 = the best).
    pub rank: u32,
    /// Which fresh seed of the configuration (0-based).
    pub seed: u32,
}

impl ConfirmMark {
    /// The block of `r` seeds this seed belongs to (`block_need`): seeds j·r … (j+1)·r − 1.
    pub fn block(&self, r: usize) -> u32 {
        self.seed / r.max(1) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_stay_above_every_other_id() {
        for bi in [0usize, 1, 9, 1385, CONFIRM_MAX_BATCH_SIZES - 1] {
            for rank in [0u32, 1, 2, 999] {
                for seed in [0u32, 4, 999] {
                    let c = ConfirmId {
                        batch_index: bi,
                        rank,
                        seed,
                    };
                    let id = c.encode().unwrap();
                    assert!(id >= CONFIRM_ID_BASE);
                    assert_eq!(ConfirmId::decode(id), Some(c));
                }
            }
        }
        assert_eq!(ConfirmId::decode(CONFIRM_ID_BASE - 1), None);
        assert_eq!(ConfirmId::decode(17), None);
        let bad = |rank, seed| {
            ConfirmId {
                batch_index: 0,
                rank,
                seed,
            }
            .encode()
        };
        assert_eq!(bad(1000, 0), None);
        assert_eq!(bad(0, 1000), None);
    }
}
