//! State of the Runs and Compare screens.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use crate::core::analysis::{Analysis, Study};
use crate::core::record::TrialRecord;
use crate::workload::spec::{OptimizerKind, Preset};

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
    /// The fit's 95 % intervals of S_min and B_crit (as the report prints them).
    pub s_min_ci: Option<[f64; 2]>,
    pub b_crit_ci: Option<[f64; 2]>,
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
    /// The analysis shown: at the run's goal, or at the Compare state's target.
    pub analysis: Analysis,
    pub done: usize,
    /// The run's study at its goal and its trials: what a reading at another target reads.
    pub study: Study,
    pub trials: Arc<Vec<TrialRecord>>,
    /// The run's ladder, loosest first (`analysis::ladder::default_ladder`).
    pub ladder: Vec<f64>,
}

impl CompareRun {
    /// A run of `preset` with these trials, analysed at its goal (this reads every trial: off
    /// the UI task).
    pub fn new(label: String, path: PathBuf, preset: &Preset, trials: Vec<TrialRecord>) -> Self {
        let study = Study::of_preset(preset);
        let analysis = crate::analysis::analyze(&study, &trials);
        let ladder = crate::analysis::ladder::default_ladder(&preset.workload, &trials);
        CompareRun {
            label,
            path,
            optimizer: preset.workload.optimizer,
            analysis,
            done: trials.len(),
            study,
            trials: Arc::new(trials),
            ladder,
        }
    }

    /// The run's goal (its sweep's target value).
    pub fn goal(&self) -> f64 {
        self.study.goal.value
    }
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
    /// Every run read at this target (`[` `]`); None: each at its own goal.
    pub target: Option<f64>,
    /// The rungs of every run's ladder, loosest first, down to the strictest goal.
    pub ladder: Vec<f64>,
    /// The runs' analyses at each target already read (key: the target's bits; runs in order).
    pub rungs: BTreeMap<u64, Vec<Analysis>>,
    /// The target of the reading in flight on the analysis worker.
    pub in_flight: Option<f64>,
    /// Bumped by every load: a reading of runs loaded before is dropped.
    pub load: u64,
}

/// Every run of Compare read at one target, off the UI task (on the analysis worker).
#[derive(Clone, Debug, PartialEq)]
pub struct CompareRequest {
    /// The `CompareState::load` the runs are of.
    pub load: u64,
    pub target: f64,
    /// Each run's study (at its goal) and trials, in the Compare order.
    pub runs: Vec<(Study, Arc<Vec<TrialRecord>>)>,
}

/// The result of a [`CompareRequest`]: one analysis per run, in order.
#[derive(Clone, Debug, PartialEq)]
pub struct CompareAnalyzed {
    pub load: u64,
    pub target: f64,
    pub analyses: Vec<Analysis>,
}

impl CompareRequest {
    /// `analysis::analyze` of each run at the target (a run whose goal is looser reads "not
    /// measured" wherever its stops could hide a better trial).
    pub fn run(&self) -> CompareAnalyzed {
        CompareAnalyzed {
            load: self.load,
            target: self.target,
            analyses: self
                .runs
                .iter()
                .map(|(s, t)| crate::analysis::analyze(&s.at(self.target), t))
                .collect(),
        }
    }
}

impl CompareState {
    /// Folds newly loaded runs: each at its own goal, the ladder of all of them.
    pub fn loaded(&mut self, runs: Vec<CompareRun>) {
        let all: Vec<f64> = runs.iter().flat_map(|r| r.ladder.clone()).collect();
        let strictest = runs.iter().map(|r| r.goal()).fold(f64::INFINITY, f64::min);
        self.ladder = crate::analysis::ladder::order_loosest_first(&all)
            .into_iter()
            .filter(|&v| v >= strictest)
            .collect();
        self.runs = runs;
        self.loading = false;
        self.target = None;
        self.rungs.clear();
        self.in_flight = None;
        self.load += 1;
    }

    /// Moves the target one rung (`stricter` or looser) along the ladder; shows the rung's
    /// readings at once if they were read before. The new target, or why it did not move.
    pub fn step_target(&mut self, stricter: bool) -> Result<f64, String> {
        let Some(&strictest) = self.ladder.last() else {
            return Err("nothing to compare".into());
        };
        let next = match self.target {
            // from each run at its own goal: `]` reads all at the strictest goal
            None if stricter => Some(strictest),
            None => super::target::next_rung(&self.ladder, strictest, false),
            Some(t) => super::target::next_rung(&self.ladder, t, stricter),
        };
        let Some(next) = next else {
            let current = self.target.unwrap_or(strictest);
            return Err(if stricter {
                format!("{current} is the strictest goal of these runs")
            } else {
                format!("{current} is the loosest rung of the ladder")
            });
        };
        self.target = Some(next);
        self.show_cached();
        Ok(next)
    }

    /// The request for the current target's readings, if it is due (not kept, none in flight).
    /// Marks it in flight.
    pub fn request(&mut self) -> Option<CompareRequest> {
        let t = self.target?;
        if self.in_flight.is_some() || self.rungs.contains_key(&t.to_bits()) {
            return None;
        }
        self.in_flight = Some(t);
        Some(CompareRequest {
            load: self.load,
            target: t,
            runs: self
                .runs
                .iter()
                .map(|r| (r.study.clone(), Arc::clone(&r.trials)))
                .collect(),
        })
    }

    /// Folds landed readings: kept for their target, shown if it is still the current one.
    /// Whether they were for the request in flight.
    pub fn adopt(&mut self, a: CompareAnalyzed) -> bool {
        if a.load != self.load
            || self.in_flight != Some(a.target)
            || a.analyses.len() != self.runs.len()
        {
            return false;
        }
        self.in_flight = None;
        self.rungs.insert(a.target.to_bits(), a.analyses);
        self.show_cached();
        true
    }

    fn show_cached(&mut self) {
        let Some(t) = self.target else { return };
        if let Some(v) = self.rungs.get(&t.to_bits()) {
            for (r, a) in self.runs.iter_mut().zip(v) {
                r.analysis = a.clone();
            }
        }
    }

    /// The runs' analyses are those of the current target (nothing pending).
    pub fn current(&self) -> bool {
        self.target
            .is_none_or(|t| self.rungs.contains_key(&t.to_bits()))
    }
}
