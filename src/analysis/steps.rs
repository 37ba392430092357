//! A trial's steps to reach a target: the one function over its evaluation curve.
//!
//! Every reading of a sweep — at its own goal or at any other target — goes through
//! [`observe`]: how one trial stands against one target, as an [`Observation`]. The analysis
//! (`per_batch`, the bootstrap, the counts) reads observations only, never outcomes, so a reading
//! at another target is the same pipeline with another [`Reading`].
//!
//! **Exactness.** A sweep's trials stop at the first evaluation that meets the sweep's goal (the
//! strictest rung of its ladder), or at an early-stopping cap `c` (the best steps-to-goal already
//! measured at their B), or at their budget. For a target `T` at or looser than the goal:
//! * a trial that reached the goal at `s` met `T` at its first evaluation ≤ `s` that met it (the
//!   evaluation at `s` does), which is in its curve: exact;
//! * a trial cut at `c` without meeting `T` would need more than `c` steps; but `c` ≥ the final
//!   S(B; goal) ≥ S(B; T) (the best trial at the goal met `T` no later than the goal), so it can
//!   never be the best trial at `T` — at most a tie at `c`, which leaves S(B; T) unchanged;
//! * a trial that met `T` and diverged later did meet it (its curve says when).
//!
//! So S(B; T) read from the curves equals what full-length runs would give. For a target stricter
//! than the goal the trials that stopped at the goal are right-censored ([`Observation::Censored`])
//! and [`censoring_hides_best`] says where S(B; T) is therefore not measured.

use std::collections::BTreeMap;

use crate::core::analysis::Study;
use crate::core::record::TrialRecord;
use crate::core::trial::{EvalPoint, Outcome};
use crate::workload::spec::Target;

/// The first evaluation step at which the metric meets `target` (`metric <= value`, or `>=` for a
/// maximised metric; a NaN or infinite metric never does), if any.
pub fn first_meeting(evals: &[EvalPoint], target: &Target) -> Option<u64> {
    evals
        .iter()
        .find(|e| target.is_met(e.metric))
        .map(|e| e.step)
}

/// A trial's steps to reach its sweep's own target: its recorded outcome (the trainer stops at the
/// first evaluation that meets it; the run-log reader reads a stored outcome its curve
/// contradicts as the curve shows it). None when it did not reach the target (diverged, not
/// reached, cancelled, oom).
pub fn steps_to_target(t: &TrialRecord) -> Option<u64> {
    t.outcome.outcome.steps_to_target()
}

/// Which target a reading is at.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Reading {
    /// The sweep's own goal: each trial's recorded outcome (what the trainer decided as it ran).
    Goal,
    /// Another target of the same metric: each trial's evaluation curve.
    At(Target),
}

impl Reading {
    /// The reading of `study`: its goal, or its target's curves.
    pub fn of(study: &Study) -> Reading {
        if study.at_goal() {
            Reading::Goal
        } else {
            Reading::At(study.target)
        }
    }
}

/// How one trial stands against one target — what every part of the analysis (S(B), the counts,
/// the bootstrap) reads. Target-agnostic: the bootstrap takes these, never records and targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Observation {
    /// Met the target at this evaluation step (its first evaluation that met it).
    Reached { step: u64 },
    /// Stopped at step `at` without having met the target, before its budget ran out: cut by
    /// early stopping (`early_stopped`), or stopped at the sweep's goal while this target is
    /// stricter. Its steps to the target are > `at` (right-censored).
    Censored { at: u64, early_stopped: bool },
    /// Ran its whole step budget without meeting the target.
    NotReached { budget: u64 },
    /// Diverged before meeting the target.
    Diverged { step: u64 },
    /// Ran out of device memory before meeting the target.
    Oom { step: u64 },
    /// Stopped by the user: never a result, never resampled.
    Cancelled,
}

impl Observation {
    /// The steps to the target, if the trial met it.
    pub fn steps(self) -> Option<u64> {
        match self {
            Observation::Reached { step } => Some(step),
            _ => None,
        }
    }

    /// The outcome this observation counts as (the counts of the report and the views).
    pub fn as_outcome(self) -> Outcome {
        match self {
            Observation::Reached { step } => Outcome::Reached { step },
            Observation::Censored { at, early_stopped } => Outcome::NotReached {
                budget: at,
                early_stopped,
            },
            Observation::NotReached { budget } => Outcome::NotReached {
                budget,
                early_stopped: false,
            },
            Observation::Diverged { step } => Outcome::Diverged { step },
            Observation::Oom { step } => Outcome::Oom {
                batch_size: 0,
                step,
            },
            Observation::Cancelled => Outcome::Cancelled { step: 0 },
        }
    }
}

/// How trial `t` stands against the target of `reading`: the one function every reading uses.
///
/// At the goal: the recorded outcome. At another target: the first evaluation of the curve that
/// meets it; otherwise why the curve ends — a trial that stopped at the goal (its last applied
/// step is the goal's evaluation) or was cut by early stopping is censored there; one that ran on
/// to its budget (also an imported trial that went on past the goal) did not reach; a diverged
/// or out-of-memory trial failed.
pub fn observe(t: &TrialRecord, reading: &Reading) -> Observation {
    let o = &t.outcome;
    if let Outcome::Cancelled { .. } = o.outcome {
        return Observation::Cancelled;
    }
    let target = match reading {
        Reading::Goal => return ended(&o.outcome),
        Reading::At(target) => target,
    };
    if let Some(step) = first_meeting(&o.evals, target) {
        return Observation::Reached { step };
    }
    match o.outcome {
        // It stopped at the goal (the trainer stops at the evaluation that meets it), unless it
        // went on to the end of its budget (imported data: Google's trials ran their budget).
        Outcome::Reached { step } if o.steps > step => Observation::NotReached { budget: o.steps },
        Outcome::Reached { step } => Observation::Censored {
            at: step,
            early_stopped: false,
        },
        ref other => ended(other),
    }
}

/// What a trial's own end says at its goal: reached, stopped early (censored), ran its budget,
/// diverged, out of memory or cancelled.
fn ended(o: &Outcome) -> Observation {
    match *o {
        Outcome::Reached { step } => Observation::Reached { step },
        Outcome::NotReached {
            budget,
            early_stopped: true,
        } => Observation::Censored {
            at: budget,
            early_stopped: true,
        },
        Outcome::NotReached { budget, .. } => Observation::NotReached { budget },
        Outcome::Diverged { step } => Observation::Diverged { step },
        Outcome::Oom { step, .. } => Observation::Oom { step },
        Outcome::Cancelled { .. } => Observation::Cancelled,
    }
}

/// True when a censored observation could hide a better trial than the best one found: some
/// trial was stopped at `at` < the best reached step (or nothing reached and something was
/// stopped early), so its unseen rest might have met the target sooner. S(B) is then not
/// measured at this batch size. At the goal or any looser target this never holds for a sweep
/// this tool ran (see the module documentation); `tests/sweep/targets_exact.rs` checks it on real logs.
pub fn censoring_hides_best(obs: &[Observation]) -> bool {
    let best = obs.iter().filter_map(|o| o.steps()).min();
    let cut = obs
        .iter()
        .filter_map(|o| match o {
            Observation::Censored { at, .. } => Some(*at),
            _ => None,
        })
        .min();
    match (best, cut) {
        (_, None) => false,
        (None, Some(_)) => true,
        (Some(b), Some(c)) => c < b,
    }
}

/// The observations of a sweep's trials at one reading, grouped as the analysis reads them.
pub struct Observed<'a> {
    /// Search trials per batch size (repeats and confirm trials excluded), in trial-id order, with
    /// their observation.
    pub search: BTreeMap<usize, Vec<(&'a TrialRecord, Observation)>>,
    /// Repeats (`--repeats`) by the trial whose metaparameters they re-run.
    pub repeats: BTreeMap<u64, Vec<(&'a TrialRecord, Observation)>>,
    /// Confirm trials per batch size, in trial-id order.
    pub confirm: BTreeMap<usize, Vec<(&'a TrialRecord, Observation)>>,
}

impl<'a> Observed<'a> {
    /// Observes every trial (the last record per trial id) at `reading`.
    pub fn of(trials: &'a [TrialRecord], reading: &Reading) -> Self {
        let mut search: BTreeMap<usize, Vec<(&TrialRecord, Observation)>> = BTreeMap::new();
        let mut repeats: BTreeMap<u64, Vec<(&TrialRecord, Observation)>> = BTreeMap::new();
        let mut confirm: BTreeMap<usize, Vec<(&TrialRecord, Observation)>> = BTreeMap::new();
        for t in super::per_batch::dedup_trials(trials) {
            if t.spec.calibrate.is_some() {
                // a pilot of the calibration stage chose the study: never part of its S(B)
                continue;
            }
            let o = observe(t, reading);
            if t.spec.confirm.is_some() {
                confirm.entry(t.spec.batch_size).or_default().push((t, o));
                continue;
            }
            match t.spec.repeat_of {
                Some(of) => repeats.entry(of).or_default().push((t, o)),
                None => search.entry(t.spec.batch_size).or_default().push((t, o)),
            }
        }
        Observed {
            search,
            repeats,
            confirm,
        }
    }

    /// The observations of the search trials at batch size `b` (cancelled ones included).
    pub fn at(&self, b: usize) -> Vec<Observation> {
        self.search
            .get(&b)
            .map(|v| v.iter().map(|x| x.1).collect())
            .unwrap_or_default()
    }

    /// The observations of the repeats of trial `id`.
    pub fn repeats_of(&self, id: u64) -> Vec<Observation> {
        self.repeats
            .get(&id)
            .map(|v| v.iter().map(|x| x.1).collect())
            .unwrap_or_default()
    }
}
