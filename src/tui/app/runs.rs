//! State of the Runs and Compare screens.

use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::core::analysis::Analysis;
use crate::workload::spec::OptimizerKind;

/// One run log found in the runs directory (read by the runtime, shown by the Runs screen).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct RunEntry {
    pub path: PathBuf,
    /// The run's name: the log's file name without `.jsonl` (start time and preset).
    pub name: String,
    pub preset: String,
    pub optimizer: String,
    /// Start time as written in the header (RFC 3339), shown as "YYYY-MM-DD HH:MM".
    pub started: String,
    pub status: RunStatus,
    pub done: usize,
    pub planned: usize,
    pub s_min: Option<f64>,
    pub b_crit: Option<f64>,
    /// A log that could not be read: the reason (file and line).
    pub error: Option<String>,
    /// fp32 / bf16 / fp16.
    pub precision: String,
    /// Devices of one trial ("cpu × 2 workers", "cuda:0,1").
    pub devices: String,
    /// Smallest and largest batch size of the plan.
    pub b_range: Option<(usize, usize)>,
    /// Wall time: the summary's, or the sum of the recorded trials' (seconds).
    pub duration_s: Option<f64>,
    /// A Slurm sweep directory (its shards merged into this one run): its job's state —
    /// pending / running / completed / failed, "—" when Slurm is not there. `None`: a local log.
    pub job: Option<String>,
}

impl RunEntry {
    /// A sweep directory (Slurm shards), not one log file.
    pub fn is_sweep_dir(&self) -> bool {
        self.job.is_some()
    }
}

impl RunEntry {
    /// A log that could not be read: listed under its file name, with the reason.
    pub fn unreadable(path: PathBuf, name: String, error: String) -> Self {
        RunEntry {
            preset: path
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default(),
            name,
            path,
            status: RunStatus::Unreadable,
            error: Some(error),
            ..Default::default()
        }
    }

    /// Mean wall seconds per finished trial (for Setup's duration estimate).
    pub fn seconds_per_trial(&self) -> Option<f64> {
        let d = self.duration_s?;
        (self.done > 0 && d > 0.0).then(|| d / self.done as f64)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum RunStatus {
    #[default]
    Complete,
    /// Stopped early with a summary, or no summary and not growing: resumable.
    Interrupted,
    /// No summary and written to recently (or the sweep this TUI is running).
    Running,
    Unreadable,
}

impl RunStatus {
    pub fn label(self) -> &'static str {
        match self {
            RunStatus::Complete => "complete",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Running => "running",
            RunStatus::Unreadable => "unreadable",
        }
    }
}

/// One sweep in the Compare view.
#[derive(Clone, Debug, PartialEq)]
pub struct CompareRun {
    pub label: String,
    pub path: PathBuf,
    pub optimizer: OptimizerKind,
    pub analysis: Analysis,
    pub done: usize,
}

#[derive(Clone, Debug, PartialEq, Default)]
pub struct RunsState {
    pub entries: Vec<RunEntry>,
    pub selected: usize,
    pub marked: BTreeSet<PathBuf>,
    pub scanned: bool,
}

#[derive(Clone, Debug, PartialEq, Default)]
pub struct CompareState {
    pub runs: Vec<CompareRun>,
    pub loading: bool,
}
