//! Trial counts per stage of a sweep, each against its own plan: the search (the plan's trials,
//! and those `--until` and `--widen` add), the confirm stage (its first blocks and its `--until`
//! rounds) and the `--repeats`. What every view shows as progress ("search 240/240 · confirm
//! 90/190"): the TUI's header and progress, the headless progress lines, the stop message and the
//! report; `analysis::stages` computes it from a sweep's records and the trials it has placed.

use serde::Serialize;

use crate::core::calibrate::CALIBRATE_ID_BASE;
use crate::core::confirm::CONFIRM_ID_BASE;
use crate::core::widen::REPEAT_ID_BASE;

/// Trials of one stage: finished (in the run log) of planned.
#[derive(Serialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Count {
    pub done: usize,
    pub planned: usize,
}

impl Count {
    /// Trials still to run.
    pub fn left(&self) -> usize {
        self.planned.saturating_sub(self.done)
    }
}

/// The stages a trial belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stage {
    /// The calibration's pilot trials (`core::calibrate`), before the search.
    Calibrate,
    Search,
    Confirm,
    Repeats,
}

impl Stage {
    /// The stage of a trial id (the id layouts of `core::widen` and `core::confirm`).
    pub fn of(trial_id: u64) -> Stage {
        if trial_id >= CALIBRATE_ID_BASE {
            Stage::Calibrate
        } else if trial_id >= CONFIRM_ID_BASE {
            Stage::Confirm
        } else if trial_id >= REPEAT_ID_BASE {
            Stage::Repeats
        } else {
            Stage::Search
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Stage::Calibrate => "calibrate",
            Stage::Search => "search",
            Stage::Confirm => "confirm",
            Stage::Repeats => "repeats",
        }
    }
}

/// Finished and planned trials per stage (a stage the sweep has not: None).
#[derive(Serialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StageCounts {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calibrate: Option<Count>,
    pub search: Count,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confirm: Option<Count>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeats: Option<Count>,
}

impl StageCounts {
    /// The stages the sweep has, in order.
    pub fn stages(&self) -> Vec<(Stage, Count)> {
        let mut v: Vec<(Stage, Count)> = self
            .calibrate
            .map(|c| (Stage::Calibrate, c))
            .into_iter()
            .collect();
        v.push((Stage::Search, self.search));
        v.extend(self.confirm.map(|c| (Stage::Confirm, c)));
        v.extend(self.repeats.map(|c| (Stage::Repeats, c)));
        v
    }

    pub fn get(&self, stage: Stage) -> Option<Count> {
        match stage {
            Stage::Calibrate => self.calibrate,
            Stage::Search => Some(self.search),
            Stage::Confirm => self.confirm,
            Stage::Repeats => self.repeats,
        }
    }

    /// Every stage's finished trials.
    pub fn done(&self) -> usize {
        self.stages().iter().map(|s| s.1.done).sum()
    }

    /// Every stage's planned trials.
    pub fn planned(&self) -> usize {
        self.stages().iter().map(|s| s.1.planned).sum()
    }

    /// One more trial of `stage` saved (a view's copy, until the sweep counts again).
    pub fn saved(&mut self, stage: Stage) {
        let c = match stage {
            Stage::Calibrate => self.calibrate.as_mut(),
            Stage::Search => Some(&mut self.search),
            Stage::Confirm => self.confirm.as_mut(),
            Stage::Repeats => self.repeats.as_mut(),
        };
        if let Some(c) = c {
            c.done += 1;
            c.planned = c.planned.max(c.done);
        }
    }

    /// Whether the sweep has a stage besides the search.
    pub fn staged(&self) -> bool {
        self.calibrate.is_some() || self.confirm.is_some() || self.repeats.is_some()
    }

    /// "search 240/240 · confirm 90/190" (each stage against its own plan).
    pub fn text(&self) -> String {
        self.stages()
            .iter()
            .map(|(s, c)| format!("{} {}/{}", s.name(), c.done, c.planned))
            .collect::<Vec<_>>()
            .join(" · ")
    }
}
