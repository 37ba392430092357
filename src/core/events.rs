use serde::{Deserialize, Serialize};

use super::analysis::Analysis;
use super::trial::{EvalPoint, TrialOutcome, TrialSpec};

/// A progress sample of a running trial (throttled: a few per second at most).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct StepStats {
    /// Applied steps so far.
    pub step: u64,
    /// Training loss of the most recent step (fp32).
    pub loss: f64,
    pub lr: f64,
    pub loss_scale: f64,
    pub skipped_steps: u64,
    pub examples_per_s: f64,
    /// Mean compute and exchange seconds per step over the recent window.
    pub compute_s: f64,
    pub exchange_s: f64,
}

/// Events of one trial, emitted by a `TrialRunner`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum TrialEvent {
    Started { spec: TrialSpec },
    Step(StepStats),
    Eval(EvalPoint),
    NoiseScale { step: u64, b_simple: f64 },
    Finished { outcome: Box<TrialOutcome> },
}

/// What a sweep plans (sent once at the start).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct PlanInfo {
    pub preset: String,
    pub batch_sizes: Vec<usize>,
    pub trials_per_batch: usize,
    pub total_trials: usize,
    /// Trials already finished in the run log (resume).
    pub already_done: usize,
    pub devices: String,
    pub run_log: Option<String>,
    /// The workload the sweep runs (after overrides): what views need to analyse its trials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<Box<crate::workload::spec::Workload>>,
}

/// Events of a sweep: what both the TUI and the headless view fold into their state.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SweepEvent {
    Planned(PlanInfo),
    Queued {
        trial_id: u64,
        batch_size: usize,
    },
    Trial {
        trial_id: u64,
        event: TrialEvent,
    },
    BestSoFar {
        batch_size: usize,
        steps: u64,
        trial_id: u64,
    },
    /// A trial record was made durable in the run log.
    Saved {
        trial_id: u64,
    },
    Paused {
        paused: bool,
    },
    /// A trial failed to run at all (set-up error, not divergence).
    TrialError {
        trial_id: u64,
        message: String,
    },
    Done {
        cancelled: bool,
        analysis: Box<Analysis>,
    },
}

impl SweepEvent {
    pub fn trial_eval(&self) -> Option<(u64, &EvalPoint)> {
        match self {
            SweepEvent::Trial {
                trial_id,
                event: TrialEvent::Eval(p),
            } => Some((*trial_id, p)),
            _ => None,
        }
    }
}
