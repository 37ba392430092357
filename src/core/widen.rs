//! `--widen N`: search trials drawn in a re-centred range (Shallue et al. checked that the best
//! metaparameters are not at the edge of the search space; when they are, the measured S(B) is only
//! an upper bound). When the best trial at a batch size sits in the outer 10 % (log scale) of the η
//! or 1−γ range explored there, the sweep adds a group of trials at that B in the same range moved
//! by half its log-width towards that edge, so the new range is centred on the old edge; it repeats
//! (at most N moves each way) until the best trial is inside the explored range.
//!
//! A group is identified by its [`RangeShift`] — whole half-widths, per dimension — and encoded in
//! the trial id, so a logged trial's metaparameters are a pure function of its id (resume re-derives
//! and checks them) and the analysis knows which ranges were explored at each B without the plan.
//!
//! Id layout: `WIDEN_ID_BASE + ((bi · 19 + lr + 9) · 19 + omm + 9) · 1000 + j` for batch index
//! `bi`, shifts `lr`, `omm` ∈ [−9, 9] and trial `j` < 1000 of the group. Search trials of the plan
//! and of `--until` stay below `WIDEN_ID_BASE`; repeats start at 10⁹.

use serde::{Deserialize, Serialize};

/// Ids of re-centred search trials start here (search trials of the plan / `--until` are below).
pub const WIDEN_ID_BASE: u64 = 500_000_000;
/// Ids of repeats (`--repeats`) start here, far above any search trial's id.
pub const REPEAT_ID_BASE: u64 = 1_000_000_000;
/// Largest move, in half-widths, in either direction.
pub const WIDEN_MAX_SHIFT: i32 = 9;
/// Trials per group at most (the id's last three digits).
pub const WIDEN_GROUP_MAX: u64 = 1000;
/// Batch sizes a sweep may have for its ids to stay below the repeats' (10⁹).
pub const WIDEN_MAX_BATCH_SIZES: usize = 1385;

const SPAN: i64 = 2 * WIDEN_MAX_SHIFT as i64 + 1;

/// A search range moved by `lr` (η) and `omm` (1−γ) half-widths in log space; positive = up.
#[derive(
    Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord,
)]
pub struct RangeShift {
    pub lr: i32,
    pub omm: i32,
}

/// What a re-centred trial's id says: batch index, group and index in the group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WidenId {
    pub batch_index: usize,
    pub shift: RangeShift,
    pub j: u64,
}

impl RangeShift {
    pub const NONE: RangeShift = RangeShift { lr: 0, omm: 0 };

    /// The range group of any trial id: NONE for plan / `--until` / repeat ids.
    pub fn of_trial(trial_id: u64) -> RangeShift {
        WidenId::decode(trial_id).map_or(RangeShift::NONE, |w| w.shift)
    }

    /// The larger move of the two dimensions (the group's "round").
    pub fn rounds(&self) -> i32 {
        self.lr.abs().max(self.omm.abs())
    }

    fn in_range(&self) -> bool {
        self.rounds() <= WIDEN_MAX_SHIFT
    }
}

impl WidenId {
    /// The trial id, or None when a field is out of range.
    pub fn encode(&self) -> Option<u64> {
        if !self.shift.in_range()
            || self.j >= WIDEN_GROUP_MAX
            || self.batch_index >= WIDEN_MAX_BATCH_SIZES
        {
            return None;
        }
        let q = (self.batch_index as i64 * SPAN + (self.shift.lr as i64 + WIDEN_MAX_SHIFT as i64))
            * SPAN
            + (self.shift.omm as i64 + WIDEN_MAX_SHIFT as i64);
        Some(WIDEN_ID_BASE + q as u64 * WIDEN_GROUP_MAX + self.j)
    }

    /// The fields of a re-centred trial's id; None for any other id.
    pub fn decode(trial_id: u64) -> Option<WidenId> {
        if !(WIDEN_ID_BASE..WIDEN_ID_BASE * 2).contains(&trial_id) {
            return None;
        }
        let r = trial_id - WIDEN_ID_BASE;
        let j = r % WIDEN_GROUP_MAX;
        let q = (r / WIDEN_GROUP_MAX) as i64;
        let omm = (q % SPAN) as i32 - WIDEN_MAX_SHIFT;
        let lr = ((q / SPAN) % SPAN) as i32 - WIDEN_MAX_SHIFT;
        let batch_index = (q / (SPAN * SPAN)) as usize;
        Some(WidenId {
            batch_index,
            shift: RangeShift { lr, omm },
            j,
        })
    }
}

/// `[lo, hi]` moved by `half_widths` halves of its log-width (positive = up).
pub fn shift_range(r: [f64; 2], half_widths: i32) -> [f64; 2] {
    if half_widths == 0 || r[0] <= 0.0 || r[1] <= r[0] {
        return r;
    }
    let f = (r[1] / r[0]).powf(half_widths as f64 / 2.0);
    [r[0] * f, r[1] * f]
}

/// Trials in one re-centred group for a sweep of `trials_per_batch` trials per B: half of them
/// (the new range shares half its width with the one before), at least 4.
pub fn group_size(trials_per_batch: usize) -> u64 {
    (trials_per_batch.div_ceil(2).max(4) as u64).min(WIDEN_GROUP_MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_stay_between_search_and_repeat_ids() {
        for bi in [0usize, 1, 7, WIDEN_MAX_BATCH_SIZES - 1] {
            for lr in -WIDEN_MAX_SHIFT..=WIDEN_MAX_SHIFT {
                for omm in [-WIDEN_MAX_SHIFT, -1, 0, 3, WIDEN_MAX_SHIFT] {
                    for j in [0, 1, WIDEN_GROUP_MAX - 1] {
                        let w = WidenId {
                            batch_index: bi,
                            shift: RangeShift { lr, omm },
                            j,
                        };
                        let id = w.encode().unwrap();
                        assert!((WIDEN_ID_BASE..1_000_000_000).contains(&id), "{id}");
                        assert_eq!(WidenId::decode(id), Some(w));
                    }
                }
            }
        }
        assert_eq!(WidenId::decode(WIDEN_ID_BASE - 1), None);
        assert_eq!(WidenId::decode(1_000_000_000), None);
        assert_eq!(RangeShift::of_trial(17), RangeShift::NONE);
        let bad = |bi, lr, j| {
            WidenId {
                batch_index: bi,
                shift: RangeShift { lr, omm: 0 },
                j,
            }
            .encode()
        };
        assert_eq!(bad(0, WIDEN_MAX_SHIFT + 1, 0), None);
        assert_eq!(bad(0, 0, WIDEN_GROUP_MAX), None);
        assert_eq!(bad(WIDEN_MAX_BATCH_SIZES, 0, 0), None);
    }

    #[test]
    fn a_shift_moves_the_range_by_half_its_log_width() {
        let r = [1e-3, 1e-1];
        let up = shift_range(r, 1);
        assert!(
            (up[0] - 1e-2).abs() < 1e-12 && (up[1] - 1.0).abs() < 1e-12,
            "{up:?}"
        );
        let down = shift_range(r, -2);
        assert!((down[0] - 1e-5).abs() < 1e-15 && (down[1] - 1e-3).abs() < 1e-15);
        assert_eq!(shift_range(r, 0), r);
        assert_eq!(group_size(24), 12);
        assert_eq!(group_size(3), 4);
    }
}
