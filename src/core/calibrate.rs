//! The calibration stage's trial ids and marks. A study that leaves its target, search ranges,
//! batch sizes, step budget or evaluation schedule out (`workload::spec::Calibrate`) starts with
//! short pilot trials that choose them (`analysis::calibrate`, docs/calibration.md). A pilot
//! trial's id says which round and which point of the round it is; its mark carries what makes
//! it a pilot rather than a search trial: its own step budget, its evaluation spacing and the
//! target it stops at (none while the target is still being chosen). Every reader re-derives the
//! rounds from the records, so the marks are checked, never trusted.
//!
//! Id layout: `CALIBRATE_ID_BASE + round · 10⁶ + point`, far above every other stage's ids.

use serde::{Deserialize, Serialize};

use crate::workload::spec::{Preset, Target, Workload};

/// Ids of calibration (pilot) trials start here (every other trial's id is below).
pub const CALIBRATE_ID_BASE: u64 = 10_000_000_000_000_000;
/// Points per round at most (the id's low six digits).
pub const CALIBRATE_POINT_MAX: u64 = 1_000_000;
/// Rounds at most.
pub const CALIBRATE_ROUND_MAX: u64 = 1_000;
// above every confirm id (`core::confirm`: < 2·10⁹ + 10⁶·10⁶)
const _: () = assert!(
    CALIBRATE_ID_BASE
        > crate::core::confirm::CONFIRM_ID_BASE
            + crate::core::confirm::CONFIRM_MAX_BATCH_SIZES as u64
                * crate::core::confirm::CONFIRM_FIELD_MAX
                * crate::core::confirm::CONFIRM_FIELD_MAX
);

/// What a pilot trial's id says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CalibrateId {
    pub round: u32,
    pub point: u32,
}

impl CalibrateId {
    /// The trial id, or None when a field is out of range.
    pub fn encode(&self) -> Option<u64> {
        if self.round as u64 >= CALIBRATE_ROUND_MAX || self.point as u64 >= CALIBRATE_POINT_MAX {
            return None;
        }
        Some(CALIBRATE_ID_BASE + self.round as u64 * CALIBRATE_POINT_MAX + self.point as u64)
    }

    /// The fields of a pilot trial's id; None for any other id.
    pub fn decode(trial_id: u64) -> Option<CalibrateId> {
        let r = trial_id.checked_sub(CALIBRATE_ID_BASE)?;
        let round = r / CALIBRATE_POINT_MAX;
        if round >= CALIBRATE_ROUND_MAX {
            return None;
        }
        Some(CalibrateId {
            round: round as u32,
            point: (r % CALIBRATE_POINT_MAX) as u32,
        })
    }
}

/// The marker a pilot trial carries in its `TrialSpec` (absent on every other trial).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
pub struct CalibrateMark {
    pub round: u32,
    pub point: u32,
    /// The trial's step budget.
    pub budget: u64,
    /// Evaluate every this many steps (then every 5 % of the steps so far).
    pub eval_every: u64,
    /// The target it stops at (the study's metric); None: it runs its whole budget, its
    /// evaluation curve is what the calibration reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<f64>,
}

impl CalibrateMark {
    /// Of the same pilot as `other`: one round, one batch-size point (a pilot's learning rates
    /// are its point's last three digits).
    pub fn same_pilot(&self, other: &CalibrateMark) -> bool {
        self.round == other.round && self.point / 1000 == other.point / 1000
    }
}

/// Evaluation spacing growth of every pilot trial (`Workload::eval_growth`).
pub const PILOT_EVAL_GROWTH: f64 = 0.05;

/// The workload a pilot trial trains: the study's, with the pilot's budget, evaluation spacing
/// and target (none: a value no evaluation meets). What the trainer runs and what the run-log
/// validator checks a pilot record against.
pub fn workload_for(base: &Workload, mark: &CalibrateMark) -> Workload {
    let mut w = base.clone();
    w.step_budget = mark.budget.max(1);
    w.max_examples = None;
    w.eval_every = mark.eval_every.max(1);
    w.eval_growth = PILOT_EVAL_GROWTH;
    w.targets = Vec::new();
    w.target.value = mark
        .target
        .unwrap_or_else(|| Target::unreachable_value(w.target.metric));
    w
}

/// Why the batch range ends where it does.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum End {
    /// The rule observed perfect scaling (low end) or maximal data parallelism (high end) at
    /// this B: S changed by `ratio` from the pilot before it, and the fit to the pilots so far
    /// put B_crit at `b_crit` (None: too few pilots to fit).
    Observed {
        batch_size: usize,
        ratio: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        b_crit: Option<f64>,
    },
    /// The ladder reached the smallest or largest batch size the workload allows without
    /// observing the regime; `why` says what limits it (the training set, the model, memory).
    Limit { batch_size: usize, why: String },
    /// The study gave its batch sizes.
    Given { batch_size: usize },
}

impl End {
    pub fn batch_size(&self) -> usize {
        match self {
            End::Observed { batch_size, .. }
            | End::Limit { batch_size, .. }
            | End::Given { batch_size } => *batch_size,
        }
    }
    pub fn observed(&self) -> bool {
        matches!(self, End::Observed { .. })
    }
}

/// What a study's workload allows, computed by the caller (`sweep::calibrate`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Facts {
    /// The powers of two the workload can train at (the training set, the model's own limits,
    /// the workers), ascending; never empty.
    pub allowed: Vec<usize>,
    /// Why nothing below the smallest allowed B (e.g. "B = 1"), and above the largest (e.g.
    /// "the 9,000 training examples").
    pub low_limit: String,
    pub high_limit: String,
    /// Training examples (images, or text windows); None without a dataset.
    pub n_train: Option<usize>,
    /// FLOPs of one training example (forward and backward); None where not counted.
    pub train_flops: Option<f64>,
}

/// What a pilot measured.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct PilotReading {
    pub round: u32,
    pub batch_size: usize,
    pub lrs: Vec<f64>,
    pub budget: u64,
    /// Steps to the target of the best trial (None: none reached within the budget).
    pub steps: Option<u64>,
    /// Its learning rate (None: none reached).
    pub best_lr: Option<f64>,
    /// The learning rates that diverged.
    pub diverged: Vec<f64>,
}

impl PilotReading {
    /// Steps to the target, a pilot that did not reach counting as its budget (a lower bound).
    pub fn steps_or_budget(&self) -> u64 {
        self.steps.unwrap_or(self.budget)
    }
    /// Its best learning rate is an end of its grid (the range should move that way): +1 top,
    /// −1 bottom, 0 inside. The top counts only where the rate above it (none here) was not
    /// known to diverge.
    pub fn edge(&self) -> i32 {
        let Some(best) = self.best_lr else { return 0 };
        let i = self.lrs.iter().position(|&l| l == best).unwrap_or(0);
        if self.lrs.len() < 3 {
            0
        } else if i == self.lrs.len() - 1 {
            1
        } else if i == 0 {
            -1
        } else {
            0
        }
    }
}

/// How the target was chosen.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct TargetChoice {
    pub value: f64,
    /// At B_ref: the best scan curve's value at `at_step` of `budget` steps.
    pub batch_size: usize,
    pub at_step: u64,
    pub budget: u64,
    /// The best value any scan curve reached in its budget.
    pub best_value: f64,
    /// Looser rungs (what the best curve had reached by a sixth and a twelfth of the budget):
    /// the study's ladder, read exactly from the same trials where the goal is not reached at
    /// enough batch sizes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rungs: Vec<f64>,
}

/// The calibrated study: what the sweep runs, and how each value was chosen.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Calibrated {
    /// The study with every calibrated value filled in (`calibrate` kept: what was chosen).
    pub preset: Preset,
    pub batch_sizes: Vec<usize>,
    pub trials_per_batch: usize,
    pub target: Option<TargetChoice>,
    pub pilots: Vec<PilotReading>,
    pub low: End,
    pub high: End,
    /// How the study's size was fitted to the wall-time budget (absent: its trials per batch
    /// size and confirm stage were given, or the log is older).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizing: Option<Sizing>,
}

/// The study's size fitted to a wall-time budget (docs/calibration.md, "The study's size"): the
/// largest of a fixed ladder of plans whose predicted wall time, from the pilots' measured
/// seconds per trial step, fits what the budget leaves after the calibration.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Sizing {
    /// The whole run's budget (calibration included), seconds.
    pub budget_s: f64,
    /// The calibration's wall time: its trials' group times over the concurrency.
    pub calibration_s: f64,
    /// The predicted wall time of the full plan (8 trials, confirm 3×5, every power of two).
    pub full_s: f64,
    /// The predicted wall time of the plan chosen.
    pub predicted_s: f64,
    pub trials_per_batch: usize,
    /// The confirm stage chosen: configurations × seeds.
    pub confirm: [usize; 2],
    /// The ends thinned outside this range (kept ×2 apart inside it: where the curve bends,
    /// around the pilots' B_crit; outside, each end's pair, then ×4 apart); None: every power
    /// of two.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dense: Option<[usize; 2]>,
    /// Even the smallest plan is predicted past the budget.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub over: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_stay_above_every_other_stage() {
        for (round, point) in [(0, 0), (3, 17), (999, 999_999)] {
            let id = CalibrateId { round, point }.encode().unwrap();
            assert!(id >= CALIBRATE_ID_BASE);
            assert_eq!(CalibrateId::decode(id), Some(CalibrateId { round, point }));
        }
        assert!(CalibrateId {
            round: 1000,
            point: 0
        }
        .encode()
        .is_none());
        assert!(CalibrateId::decode(crate::core::confirm::CONFIRM_ID_BASE + 5).is_none());
        assert!(CalibrateId::decode(u64::MAX).is_none());
    }
}
