//! The analysis off the UI task: the Live states never run the analysis themselves.
//! When a state's data change (a trial lands, the header arrives, the sweep ends) it bumps its
//! `generation`; at the end of `update` every state whose shown report is older than its data and
//! that has no request in flight asks for one (`Command::Analyze`). The runtime runs requests on
//! one worker thread and answers with `Msg::Analyzed`; a result is adopted only by the state still
//! waiting for it (its request id) and only if it is newer than what is shown — then, if the data
//! moved on meanwhile, the next request goes out. So at most one analysis per state is in flight,
//! the latest data wins, and a burst of landings costs one analysis per result, not one per trial.
//! The runtime paces a state's analyses while its trials keep landing (at most one every 2 s,
//! see `runtime::AnalysisWorker`) unless the request is `urgent` (the state shows no analysis
//! yet); meanwhile the chart draws the current data's points (`LiveState::chart`).
//!
//! A request carries everything it reads (owned: it crosses threads); its result carries what it
//! was computed for (`AnalysisFor`: the request id, the state, the data generation, the target).
//! Re-deriving at another target is a request whose `target` differs from the header's:
//! the state's `analysis_target` names the target it shows; a result computed for another target
//! is dropped.

use std::path::PathBuf;
use std::sync::Arc;

use crate::core::record::{Header, TrialRecord};
use crate::report::{Progress, Report, ReportOptions, Run};
use crate::workload::spec::Target;

use super::LiveView;

/// Which state a request is for, and which version of its data.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AnalysisFor {
    /// Unique per app (`App::next_request`); the state waits for exactly this id.
    pub id: u64,
    /// The Live state: the sweep run here or the opened log.
    pub view: LiveView,
    /// The state's data generation the inputs were taken at.
    pub generation: u64,
    /// The target the analysis reads the trials at.
    pub target: Target,
}

/// What an analysis reads: the run's header, its finished trials and how far it got.
#[derive(Clone, Debug, PartialEq)]
pub struct AnalysisInputs {
    pub header: Header,
    /// Shared with the state while the worker reads them (cloned once per request).
    pub trials: Arc<Vec<TrialRecord>>,
    pub path: Option<PathBuf>,
    pub progress: Progress,
    pub warnings: Vec<String>,
    /// The study the calibration stage chose (the report's calibration section).
    pub calibrated: Option<Arc<crate::core::calibrate::Calibrated>>,
}

/// One analysis to run off the UI task.
#[derive(Clone, Debug, PartialEq)]
pub struct AnalysisRequest {
    pub for_: AnalysisFor,
    pub inputs: AnalysisInputs,
    /// Run as soon as possible: the state shows no analysis yet (a log just opened, a resumed
    /// sweep) or the user asked for it. Otherwise the runtime paces a state's analyses while its
    /// trials keep landing (the chart draws the new points meanwhile).
    pub urgent: bool,
}

/// What the views draw of a report, rendered once when it lands (never per frame).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Rendered {
    /// `Report::text`: what the report screen shows (and `scaling-lab report` prints).
    pub text: String,
    /// The projection's one-line brief of the status panel.
    pub projection_brief: Option<String>,
}

impl Rendered {
    pub fn of(report: &Report) -> Rendered {
        Rendered {
            text: report.text(),
            projection_brief: crate::report::projection::brief(report),
        }
    }
}

/// The result of an [`AnalysisRequest`].
#[derive(Clone, Debug, PartialEq)]
pub struct Analyzed {
    pub for_: AnalysisFor,
    pub report: Report,
    pub rendered: Rendered,
}

impl AnalysisRequest {
    /// Runs the analysis: `report::build` over the inputs (the entry `scaling-lab report` uses,
    /// with the same options: `--target T` where the request's target is not the goal), and the
    /// report's text. Seconds for thousands of trials: never on the UI task.
    pub fn run(&self) -> Analyzed {
        let i = &self.inputs;
        let run = Run {
            header: &i.header,
            trials: &i.trials,
            path: i.path.as_deref(),
            progress: i.progress,
            warnings: &i.warnings,
            calibrated: i.calibrated.as_deref(),
        };
        let goal = i.header.preset.workload.target;
        let opts = ReportOptions {
            target: (self.for_.target != goal).then_some(self.for_.target.value),
            ..ReportOptions::default()
        };
        let report = crate::report::build(&run, &opts);
        let rendered = Rendered::of(&report);
        Analyzed {
            for_: self.for_,
            report,
            rendered,
        }
    }
}
