//! Events of a trial and of a sweep (what both views fold), and the bounded history of the
//! engine's trajectories.

use serde::{Deserialize, Serialize};

use super::analysis::Analysis;
use super::record::Header;
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
    /// The run log's header (the preset after overrides, devices, backend): what views need to
    /// analyse and report the sweep's trials exactly as `report LOG` does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<Box<Header>>,
}

/// A trial that failed to run at all (set-up error, not divergence): its id and the message.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct TrialErrorNote {
    pub trial_id: u64,
    pub message: String,
}

/// Events of a sweep: what both the TUI and the headless view fold into their state.
#[derive(Serialize, Clone, Debug, PartialEq)]
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
    /// The calibration stage chose the study (`analysis::calibrate`): a `Planned` with the
    /// calibrated header follows.
    Calibrated(Box<crate::core::calibrate::Calibrated>),
    /// The sweep's trials per stage, each against its own plan, whenever they change (a trial
    /// saved, trials placed beyond the plan): what every view counts progress with.
    Counts(crate::core::stages::StageCounts),
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

/// Samples a [`BoundedHistory::default`] keeps (a chart's worth of points).
pub const DEFAULT_HISTORY_CAP: usize = 250;

/// A bounded series: at most `cap` retained samples however long the run, at a resolution that
/// halves each time it fills up (every 2nd, then every 4th, … sample is kept), so storing and
/// drawing it never grows. The latest sample is always part of `points()`. The one bounded-history
/// type (noise trajectories of the Burn trainer and the NQM, the TUI's loss and metric curves).
#[derive(Clone, Debug, PartialEq)]
pub struct BoundedHistory<T> {
    pts: Vec<T>,
    cap: usize,
    stride: u64,
    seen: u64,
    last: Option<T>,
}

impl<T: Clone + PartialEq> BoundedHistory<T> {
    pub fn new(cap: usize) -> Self {
        let cap = cap.max(2);
        BoundedHistory {
            pts: Vec::with_capacity(cap),
            cap,
            stride: 1,
            seen: 0,
            last: None,
        }
    }
    pub fn push(&mut self, x: T) {
        if self.seen.is_multiple_of(self.stride) {
            self.pts.push(x.clone());
            if self.pts.len() >= self.cap {
                let kept: Vec<T> = self.pts.iter().step_by(2).cloned().collect();
                self.pts = kept;
                self.stride *= 2;
            }
        }
        self.seen += 1;
        self.last = Some(x);
    }
    /// Samples pushed so far (retained or not).
    pub fn seen(&self) -> u64 {
        self.seen
    }
    /// Samples retained (without the latest when it was not retained).
    pub fn len(&self) -> usize {
        self.pts.len()
    }
    /// One retained sample per `stride` pushed.
    pub fn stride(&self) -> u64 {
        self.stride
    }
    /// The latest sample.
    pub fn last(&self) -> Option<&T> {
        self.last.as_ref()
    }
    pub fn is_empty(&self) -> bool {
        self.seen == 0
    }
    /// The retained samples plus the latest one (at most `cap` + 1).
    pub fn points(&self) -> Vec<T> {
        let mut v = self.pts.clone();
        if let Some(l) = &self.last {
            if v.last() != Some(l) {
                v.push(l.clone());
            }
        }
        v
    }
}

impl<T: Clone + PartialEq> Default for BoundedHistory<T> {
    fn default() -> Self {
        BoundedHistory::new(DEFAULT_HISTORY_CAP)
    }
}

#[cfg(test)]
mod tests {
    use crate::core::events::BoundedHistory;

    #[test]
    fn bounded_history_stays_bounded_evenly_spaced_and_keeps_the_latest() {
        let mut h = BoundedHistory::new(8);
        for i in 0..1000u64 {
            h.push(i);
        }
        let p = h.points();
        assert!(p.len() <= 9, "{p:?}");
        assert_eq!(p[0], 0);
        assert_eq!(*p.last().unwrap(), 999);
        let gaps: Vec<u64> = p.windows(2).map(|w| w[1] - w[0]).collect();
        let stride = gaps[0];
        assert!(gaps[..gaps.len() - 1].iter().all(|&g| g == stride), "{p:?}");
        assert_eq!(h.seen(), 1000);
        let mut few = BoundedHistory::new(8);
        for i in 0..5u64 {
            few.push(i);
        }
        assert_eq!(few.points(), vec![0, 1, 2, 3, 4]);
        assert!(BoundedHistory::<u64>::new(4).points().is_empty());
    }
}
