//! The TUI's state and its pure update: `update(&mut App, Msg) -> Vec<Command>` folds engine
//! events, run-log lines, key presses and clock ticks into `App`. No IO happens here: whatever
//! must touch the outside world (start a sweep, read a file) is returned as a `Command` for the
//! runtime to execute, so every state transition is unit-testable.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::PathBuf;

use crate::core::analysis::{Analysis, Regime};
use crate::core::events::{PlanInfo, StepStats, SweepEvent, TrialEvent};
use crate::core::record::{LogLine, TrialRecord};
use crate::core::trial::{DeviceSpec, Outcome, TrialOutcome, TrialSpec};
use crate::runlog::RunLog;
use crate::sweep::SweepConfig;
use crate::workload::spec::{Metric, OptimizerKind, Precision, Preset, Target, Workload};

use super::keymap::Key;
use super::theme::Theme;

/// Points kept per curve; when full, every other point is dropped and the sampling stride doubles.
pub const HISTORY_CAP: usize = 250;
/// Finished trials whose loss curves stay on the chart after they end.
pub const RECENT_CURVES: usize = 4;
/// Curves drawn at most.
pub const MAX_CURVES: usize = 6;

// ───────────────────────────── bounded history ─────────────────────────────

/// A bounded time series: at most `cap` points however long the run, at a resolution that halves
/// each time it fills up (so drawing cost never grows). The latest sample is always kept.
#[derive(Clone, Debug, PartialEq)]
pub struct History {
    pts: Vec<(f64, f64)>,
    cap: usize,
    stride: u64,
    seen: u64,
    last: Option<(f64, f64)>,
}

impl Default for History {
    fn default() -> Self {
        History::new(HISTORY_CAP)
    }
}

impl History {
    pub fn new(cap: usize) -> Self {
        History {
            pts: Vec::with_capacity(cap.max(2)),
            cap: cap.max(2),
            stride: 1,
            seen: 0,
            last: None,
        }
    }
    pub fn push(&mut self, x: f64, y: f64) {
        if self.seen.is_multiple_of(self.stride) {
            self.pts.push((x, y));
            if self.pts.len() >= self.cap {
                let kept: Vec<(f64, f64)> = self.pts.iter().step_by(2).copied().collect();
                self.pts = kept;
                self.stride *= 2;
            }
        }
        self.seen += 1;
        self.last = Some((x, y));
    }
    /// The retained points plus the latest sample.
    pub fn points(&self) -> Vec<(f64, f64)> {
        let mut v = self.pts.clone();
        if let Some(l) = self.last {
            if v.last() != Some(&l) {
                v.push(l);
            }
        }
        v
    }
    pub fn len(&self) -> usize {
        self.pts.len()
    }
    pub fn is_empty(&self) -> bool {
        self.pts.is_empty() && self.last.is_none()
    }
    pub fn stride(&self) -> u64 {
        self.stride
    }
    pub fn last(&self) -> Option<(f64, f64)> {
        self.last
    }
}

// ───────────────────────────── messages and commands ─────────────────────────────

/// One run log found in the runs directory (read by the runtime, shown by the Runs screen).
#[derive(Clone, Debug, PartialEq)]
pub struct RunEntry {
    pub path: PathBuf,
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
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunStatus {
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

#[derive(Clone, Debug)]
pub enum Msg {
    Key(Key),
    Sweep(SweepEvent),
    /// Several engine events in order (the runtime's bridge coalesces progress events).
    SweepBatch(Vec<SweepEvent>),
    /// Seconds since the UI started (monotonic).
    Tick(f64),
    Resize(u16, u16),
    /// A sweep was started by the runtime (after `Command::Launch`/`Resume`); its log path.
    SweepStarted {
        run_log: Option<PathBuf>,
    },
    /// The scheduler's threads ended (after `Done`, or after a failure).
    SweepEnded,
    Runs(Vec<RunEntry>),
    /// A run log opened for viewing (`tailing` = it is still growing and will be followed).
    LogOpened {
        log: Box<RunLog>,
        tailing: bool,
    },
    /// Lines appended to the run log being followed.
    LogLines(Vec<LogLine>),
    CompareLoaded(Vec<CompareRun>),
    Error(String),
    /// SIGTERM/SIGHUP: stop the sweep (finished trials are in the log) and quit now.
    Terminate,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    Launch(Box<SweepConfig>),
    Pause(bool),
    CancelTrial(u64),
    CancelSweep,
    ScanRuns,
    OpenLog(PathBuf),
    Resume(PathBuf),
    LoadCompare(Vec<PathBuf>),
    /// Leave the UI (the runtime stops a running sweep cleanly first).
    Quit,
}

// ───────────────────────────── screens ─────────────────────────────

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Screen {
    Setup,
    Live,
    Runs,
    Compare,
    Help,
}

impl Screen {
    pub fn title(self) -> &'static str {
        match self {
            Screen::Setup => "Setup",
            Screen::Live => "Live",
            Screen::Runs => "Runs",
            Screen::Compare => "Compare",
            Screen::Help => "Help",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Confirm {
    /// Quit while a sweep runs.
    Quit,
    /// Cancel the running sweep.
    CancelSweep,
}

/// Which charts Live shows (`t` cycles).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Charts {
    Both,
    Scaling,
    Loss,
}

// ───────────────────────────── setup ─────────────────────────────

#[derive(Clone, Debug, PartialEq)]
pub struct PresetEntry {
    pub preset: Preset,
    pub path: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Optimizer,
    Precision,
    Devices,
    BatchMin,
    BatchMax,
    Trials,
    Target,
    Budget,
}

pub const FIELDS: [Field; 8] = [
    Field::Optimizer,
    Field::Precision,
    Field::Devices,
    Field::BatchMin,
    Field::BatchMax,
    Field::Trials,
    Field::Target,
    Field::Budget,
];

impl Field {
    pub fn label(self) -> &'static str {
        match self {
            Field::Optimizer => "optimizer",
            Field::Precision => "precision",
            Field::Devices => "devices",
            Field::BatchMin => "batch size from",
            Field::BatchMax => "batch size to",
            Field::Trials => "trials per B",
            Field::Target => "target",
            Field::Budget => "step budget",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetupFocus {
    Presets,
    Fields,
}

/// A problem with the current setup, shown inline under the field it concerns.
#[derive(Clone, Debug, PartialEq)]
pub struct Problem {
    pub field: Option<Field>,
    pub message: String,
    /// Errors block the launch; notes only inform.
    pub blocking: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct SetupState {
    pub presets: Vec<PresetEntry>,
    /// Problems loading presets (file:line messages).
    pub load_errors: Vec<String>,
    pub selected: usize,
    pub focus: SetupFocus,
    pub field: usize,
    /// Device choices: CPU 1–8 workers, then 1..=n of the CUDA devices found.
    pub devices: Vec<DeviceSpec>,
    pub gpu_labels: Vec<String>,
    pub device_idx: usize,
    pub optimizer: OptimizerKind,
    pub precision: Precision,
    pub b_min: usize,
    pub b_max: usize,
    pub trials: usize,
    pub target: f64,
    pub budget: u64,
}

impl SetupState {
    pub fn new(
        presets: Vec<PresetEntry>,
        load_errors: Vec<String>,
        initial: Option<&str>,
        gpu_labels: Vec<String>,
    ) -> Self {
        let mut devices: Vec<DeviceSpec> =
            (1..=8).map(|w| DeviceSpec::Cpu { workers: w }).collect();
        for n in 1..=gpu_labels.len() {
            devices.push(DeviceSpec::Cuda {
                devices: (0..n).collect(),
            });
        }
        let selected = initial
            .and_then(|name| presets.iter().position(|p| p.preset.name == name))
            .unwrap_or(0);
        let mut s = SetupState {
            presets,
            load_errors,
            selected,
            focus: SetupFocus::Presets,
            field: 0,
            devices,
            gpu_labels,
            device_idx: 0,
            optimizer: OptimizerKind::Sgd,
            precision: Precision::Fp32,
            b_min: 16,
            b_max: 1024,
            trials: 1,
            target: 0.0,
            budget: 0,
        };
        s.reset_from_preset();
        s
    }

    pub fn preset(&self) -> Option<&PresetEntry> {
        self.presets.get(self.selected)
    }

    /// Loads the editable values from the selected preset.
    pub fn reset_from_preset(&mut self) {
        let Some(p) = self.presets.get(self.selected).map(|e| e.preset.clone()) else {
            return;
        };
        let w = &p.workload;
        self.optimizer = w.optimizer;
        self.precision = w.precision;
        self.target = w.target.value;
        self.budget = w.step_budget;
        self.trials = p.sweep.trials_per_batch.max(1);
        self.b_min = p.sweep.batch_sizes.iter().copied().min().unwrap_or(16);
        self.b_max = p.sweep.batch_sizes.iter().copied().max().unwrap_or(1024);
        let workers = p.sweep.workers.max(1);
        self.device_idx = self
            .devices
            .iter()
            .position(|d| *d == DeviceSpec::Cpu { workers })
            .unwrap_or(0);
    }

    pub fn device(&self) -> DeviceSpec {
        self.devices[self.device_idx.min(self.devices.len() - 1)].clone()
    }

    /// The batch sizes of the sweep: the preset's own grid when the range is unchanged, otherwise
    /// powers of two from `b_min` to `b_max`.
    pub fn batch_sizes(&self) -> Vec<usize> {
        if let Some(p) = self.preset() {
            let grid = &p.preset.sweep.batch_sizes;
            let lo = grid.iter().copied().min().unwrap_or(0);
            let hi = grid.iter().copied().max().unwrap_or(0);
            if lo == self.b_min && hi == self.b_max {
                let mut g = grid.clone();
                g.sort_unstable();
                return g;
            }
        }
        let mut v = Vec::new();
        let mut b = self.b_min.max(1);
        while b <= self.b_max {
            v.push(b);
            b *= 2;
        }
        v
    }

    /// The preset with the edits applied.
    pub fn edited_preset(&self) -> Option<Preset> {
        let mut p = self.preset()?.preset.clone();
        p.workload.optimizer = self.optimizer;
        p.workload.precision = self.precision;
        p.workload.target.value = self.target;
        p.workload.step_budget = self.budget;
        p.sweep.batch_sizes = self.batch_sizes();
        p.sweep.trials_per_batch = self.trials;
        if let DeviceSpec::Cpu { workers } = self.device() {
            p.sweep.workers = workers;
        }
        Some(p)
    }

    pub fn config(&self, runs_dir: &std::path::Path) -> Option<SweepConfig> {
        let entry = self.preset()?;
        let preset = self.edited_preset()?;
        let mut cfg = SweepConfig::from_preset(preset, entry.path.clone(), runs_dir.to_path_buf());
        cfg.devices = self.device();
        cfg.precision = self.precision;
        if matches!(cfg.devices, DeviceSpec::Cuda { .. }) {
            cfg.concurrency = 1;
        }
        Some(cfg)
    }

    /// Everything wrong or noteworthy about the current combination, in field order.
    pub fn problems(&self) -> Vec<Problem> {
        let mut out = Vec::new();
        let Some(entry) = self.preset() else {
            out.push(Problem {
                field: None,
                message: "no presets found: put preset TOML files in the presets directory".into(),
                blocking: true,
            });
            return out;
        };
        let p = &entry.preset;
        let w = &p.workload;
        let err = |field, message: String| Problem {
            field: Some(field),
            message,
            blocking: true,
        };
        let note = |field, message: String| Problem {
            field: Some(field),
            message,
            blocking: false,
        };
        if self.optimizer != w.optimizer {
            let lr = p.search.learning_rate;
            out.push(note(
                Field::Optimizer,
                format!(
                    "the η search range [{}, {}] was set for {}; {} may want another range",
                    lr[0],
                    lr[1],
                    w.optimizer.name(),
                    self.optimizer.name()
                ),
            ));
        }
        let nqm = matches!(w.model, crate::workload::spec::ModelSpec::Nqm { .. });
        match (self.precision, &self.device(), nqm) {
            (Precision::Fp32, _, _) => {}
            (_, _, true) => out.push(note(
                Field::Precision,
                "the noisy quadratic model is closed-form: precision has no effect".into(),
            )),
            (Precision::Bf16, DeviceSpec::Cpu { .. }, _) => out.push(note(
                Field::Precision,
                "bf16 is emulated on CPU: expect ~2× slower steps than fp32".into(),
            )),
            (Precision::Fp16, _, _) => out.push(note(
                Field::Precision,
                "fp16 uses dynamic loss scaling; skipped steps show in Live".into(),
            )),
            _ => {}
        }
        let g = self.device().replicas();
        let bs = self.batch_sizes();
        if self.b_min > self.b_max {
            out.push(err(
                Field::BatchMax,
                format!("range is empty: {} > {}", self.b_min, self.b_max),
            ));
        }
        let bad: Vec<String> = bs
            .iter()
            .filter(|&&b| b % g != 0)
            .map(|b| b.to_string())
            .collect();
        if !bad.is_empty() {
            out.push(err(
                Field::Devices,
                format!(
                    "{} of {} batch sizes not divisible by {g} {} (each needs an equal shard): B = {}",
                    bad.len(),
                    bs.len(),
                    if matches!(self.device(), DeviceSpec::Cpu { .. }) { "workers" } else { "GPUs" },
                    bad.join(", ")
                ),
            ));
        }
        if matches!(self.device(), DeviceSpec::Cpu { workers } if workers > 2) {
            out.push(note(
                Field::Devices,
                "CPU workers share this machine's cores: steps are real, wall time is not a GPU forecast".into(),
            ));
        }
        if !self.target_valid(&w.target) {
            out.push(err(
                Field::Target,
                format!("{} must be in (0, 1)", w.target.metric.name()),
            ));
        }
        if self.budget < w.eval_every.max(1) {
            out.push(err(
                Field::Budget,
                format!(
                    "shorter than one evaluation interval ({} steps)",
                    w.eval_every
                ),
            ));
        }
        if out.iter().all(|p| !p.blocking) {
            if let Some(cfg) = self.config(std::path::Path::new(".")) {
                if let Err(e) = cfg.validate() {
                    out.push(Problem {
                        field: None,
                        message: format!("{e:#}"),
                        blocking: true,
                    });
                }
            }
        }
        out
    }

    fn target_valid(&self, t: &Target) -> bool {
        match t.metric {
            Metric::ValError => self.target > 0.0 && self.target < 1.0,
            _ => self.target > 0.0 && self.target.is_finite(),
        }
    }

    pub fn total_trials(&self) -> usize {
        self.batch_sizes().len() * self.trials
    }

    fn adjust(&mut self, field: Field, up: bool) {
        let Some(w) = self.preset().map(|p| p.preset.workload.clone()) else {
            return;
        };
        match field {
            Field::Optimizer => {
                const ALL: [OptimizerKind; 4] = [
                    OptimizerKind::Sgd,
                    OptimizerKind::Momentum,
                    OptimizerKind::Nesterov,
                    OptimizerKind::Adam,
                ];
                let i = ALL.iter().position(|o| *o == self.optimizer).unwrap_or(0);
                self.optimizer = ALL[cycle(i, ALL.len(), up)];
            }
            Field::Precision => {
                const ALL: [Precision; 3] = [Precision::Fp32, Precision::Bf16, Precision::Fp16];
                let i = ALL.iter().position(|o| *o == self.precision).unwrap_or(0);
                self.precision = ALL[cycle(i, ALL.len(), up)];
            }
            Field::Devices => {
                self.device_idx = step_clamped(self.device_idx, self.devices.len(), up);
            }
            Field::BatchMin => {
                self.b_min = if up {
                    self.b_min * 2
                } else {
                    (self.b_min / 2).max(1)
                };
                self.b_min = self.b_min.min(1 << 20);
            }
            Field::BatchMax => {
                self.b_max = if up {
                    self.b_max * 2
                } else {
                    (self.b_max / 2).max(1)
                };
                self.b_max = self.b_max.min(1 << 20);
            }
            Field::Trials => {
                self.trials = if up {
                    (self.trials + 1).min(256)
                } else {
                    self.trials.saturating_sub(1).max(1)
                };
            }
            Field::Target => {
                self.target = match w.target.metric {
                    Metric::ValError => {
                        let v = self.target + if up { 0.01 } else { -0.01 };
                        (v * 100.0).round().clamp(1.0, 99.0) / 100.0
                    }
                    Metric::ValBpc => {
                        let v = self.target + if up { 0.05 } else { -0.05 };
                        ((v * 100.0).round() / 100.0).max(0.05)
                    }
                    Metric::NqmLoss => {
                        let f: f64 = if up { 1.25 } else { 0.8 };
                        sig3(self.target * f)
                    }
                };
            }
            Field::Budget => {
                self.budget = ladder_125(self.budget, up).max(w.eval_every.max(1));
            }
        }
    }
}

fn cycle(i: usize, n: usize, up: bool) -> usize {
    if up {
        (i + 1) % n
    } else {
        (i + n - 1) % n
    }
}

fn step_clamped(i: usize, n: usize, up: bool) -> usize {
    if up {
        (i + 1).min(n.saturating_sub(1))
    } else {
        i.saturating_sub(1)
    }
}

fn sig3(v: f64) -> f64 {
    if v <= 0.0 || !v.is_finite() {
        return v;
    }
    let m = 10f64.powf(v.log10().floor() - 2.0);
    (v / m).round() * m
}

/// Next/previous value on the 1-2-5 ladder (100, 200, 500, 1000, …).
pub fn ladder_125(v: u64, up: bool) -> u64 {
    let mut steps = Vec::new();
    let mut d = 1u64;
    while d <= 100_000_000 {
        for m in [1, 2, 5] {
            steps.push(d * m);
        }
        d *= 10;
    }
    if up {
        steps.into_iter().find(|&s| s > v).unwrap_or(v)
    } else {
        steps.into_iter().rev().find(|&s| s < v).unwrap_or(v)
    }
}

// ───────────────────────────── live ─────────────────────────────

#[derive(Clone, Debug, PartialEq)]
pub struct RunningTrial {
    pub spec: TrialSpec,
    pub started_at: f64,
    pub loss: History,
    pub metric: History,
    pub last: Option<StepStats>,
    pub b_simple: Option<f64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Curve {
    pub trial_id: u64,
    pub batch_size: usize,
    pub points: History,
    /// None while running; the outcome label once finished.
    pub ended: Option<&'static str>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LiveSource {
    /// A sweep this TUI runs (controllable).
    Sweep,
    /// A run log opened read-only (followed while `tailing`).
    Log { path: PathBuf, tailing: bool },
}

#[derive(Clone, Debug, PartialEq)]
pub struct LiveState {
    pub source: LiveSource,
    pub plan: PlanInfo,
    pub workload: Option<Workload>,
    pub queued: BTreeMap<u64, usize>,
    pub running: BTreeMap<u64, RunningTrial>,
    /// Finished trials of this view (for a log: all of them; for a sweep: this session's plus none
    /// of the resumed ones — those are counted in `plan.already_done`).
    pub finished: Vec<TrialRecord>,
    pub recent: VecDeque<Curve>,
    pub analysis: Analysis,
    pub saved: usize,
    pub paused: bool,
    pub done: bool,
    pub cancelled: bool,
    pub errors: Vec<String>,
    pub started_at: f64,
    pub ended_at: Option<f64>,
    /// Latest B_simple sample of any running trial.
    pub b_simple_live: Option<f64>,
    /// Selected running trial (for `c`).
    pub selected: usize,
}

impl LiveState {
    pub fn new(source: LiveSource, plan: PlanInfo, workload: Option<Workload>, now: f64) -> Self {
        LiveState {
            source,
            plan,
            workload,
            queued: BTreeMap::new(),
            running: BTreeMap::new(),
            finished: Vec::new(),
            recent: VecDeque::new(),
            analysis: Analysis::default(),
            saved: 0,
            paused: false,
            done: false,
            cancelled: false,
            errors: Vec::new(),
            started_at: now,
            ended_at: None,
            b_simple_live: None,
            selected: 0,
        }
    }

    /// A run log shown read-only: the same state a live sweep would have after its trials.
    pub fn from_log(log: &RunLog, tailing: bool, now: f64) -> Self {
        let h = &log.header;
        let plan = PlanInfo {
            preset: h.preset.name.clone(),
            batch_sizes: h.batch_sizes.clone(),
            trials_per_batch: h.trials_per_batch,
            total_trials: log.planned_trials(),
            already_done: 0,
            devices: h.devices.label(),
            run_log: Some(log.path.display().to_string()),
        };
        let mut s = LiveState::new(
            LiveSource::Log {
                path: log.path.clone(),
                tailing,
            },
            plan,
            Some(h.preset.workload.clone()),
            now,
        );
        s.finished = log.trials.clone();
        s.saved = s.finished.len();
        s.reanalyze();
        if let Some(sum) = &log.summary {
            s.done = true;
            s.cancelled = !sum.complete;
        }
        s
    }

    pub fn read_only(&self) -> bool {
        matches!(self.source, LiveSource::Log { .. })
    }

    /// Recomputes the analysis from the finished trials (cheap: a handful of points).
    pub fn reanalyze(&mut self) {
        if let Some(w) = &self.workload {
            self.analysis = crate::sweep::analysis::analyze(&w.target, &self.finished, w.optimizer);
        }
    }

    pub fn done_count(&self) -> usize {
        self.plan.already_done + self.finished.len()
    }

    pub fn queued_count(&self) -> usize {
        self.plan
            .total_trials
            .saturating_sub(self.done_count() + self.running.len())
    }

    /// Seconds left, extrapolated from this session's finished trials (None before the first).
    pub fn eta(&self, now: f64) -> Option<f64> {
        let n = self.finished.len();
        if n == 0 || self.done || self.read_only() {
            return None;
        }
        let per = (now - self.started_at).max(0.0) / n as f64;
        let left = self.plan.total_trials.saturating_sub(self.done_count());
        Some(per * left as f64)
    }

    pub fn examples_per_s(&self) -> f64 {
        self.running
            .values()
            .filter_map(|r| r.last.as_ref().map(|s| s.examples_per_s))
            .filter(|v| v.is_finite())
            .sum()
    }

    pub fn selected_trial(&self) -> Option<u64> {
        self.running
            .keys()
            .nth(self.selected.min(self.running.len().saturating_sub(1)))
            .copied()
    }

    /// Curves for the loss chart: running trials first, then the most recently finished.
    pub fn curves(&self) -> Vec<Curve> {
        let mut v: Vec<Curve> = self
            .running
            .iter()
            .map(|(id, r)| Curve {
                trial_id: *id,
                batch_size: r.spec.batch_size,
                points: r.loss.clone(),
                ended: None,
            })
            .take(MAX_CURVES)
            .collect();
        for c in self.recent.iter() {
            if v.len() >= MAX_CURVES {
                break;
            }
            v.push(c.clone());
        }
        v
    }

    /// Consecutive segments of equal regime merged: (b_lo, b_hi, regime).
    pub fn regime_spans(&self) -> Vec<(usize, usize, Regime)> {
        regime_spans(&self.analysis)
    }

    fn fold(&mut self, ev: SweepEvent, now: f64) {
        match ev {
            SweepEvent::Planned(plan) => {
                self.plan = plan;
            }
            SweepEvent::Queued {
                trial_id,
                batch_size,
            } => {
                self.queued.insert(trial_id, batch_size);
            }
            SweepEvent::Trial { trial_id, event } => self.fold_trial(trial_id, event, now),
            SweepEvent::BestSoFar { .. } => {}
            SweepEvent::Saved { .. } => self.saved += 1,
            SweepEvent::Paused { paused } => self.paused = paused,
            SweepEvent::TrialError { trial_id, message } => {
                self.queued.remove(&trial_id);
                self.running.remove(&trial_id);
                self.errors.push(format!("trial {trial_id}: {message}"));
            }
            SweepEvent::Done {
                cancelled,
                analysis,
            } => {
                self.done = true;
                self.cancelled = cancelled;
                self.paused = false;
                self.running.clear();
                self.queued.clear();
                self.ended_at = Some(now);
                // The engine's final analysis is authoritative (same function, all records).
                if !analysis.per_batch.is_empty() || self.finished.is_empty() {
                    self.analysis = *analysis;
                }
            }
        }
    }

    fn fold_trial(&mut self, id: u64, ev: TrialEvent, now: f64) {
        match ev {
            TrialEvent::Started { spec } => {
                self.queued.remove(&id);
                self.running.insert(
                    id,
                    RunningTrial {
                        spec,
                        started_at: now,
                        loss: History::default(),
                        metric: History::default(),
                        last: None,
                        b_simple: None,
                    },
                );
            }
            TrialEvent::Step(s) => {
                if let Some(r) = self.running.get_mut(&id) {
                    r.loss.push(s.step as f64, s.loss);
                    r.last = Some(s);
                }
            }
            TrialEvent::Eval(p) => {
                if let Some(r) = self.running.get_mut(&id) {
                    r.metric.push(p.step as f64, p.metric);
                }
            }
            TrialEvent::NoiseScale { b_simple, .. } => {
                if let Some(r) = self.running.get_mut(&id) {
                    r.b_simple = Some(b_simple);
                }
                if b_simple.is_finite() {
                    self.b_simple_live = Some(b_simple);
                }
            }
            TrialEvent::Finished { outcome } => {
                let r = self.running.remove(&id);
                self.queued.remove(&id);
                if let Some(r) = r {
                    self.push_finished(id, r.spec, *outcome, Some(r.loss));
                }
                if self.selected >= self.running.len() {
                    self.selected = self.running.len().saturating_sub(1);
                }
            }
        }
    }

    fn push_finished(
        &mut self,
        id: u64,
        spec: TrialSpec,
        outcome: TrialOutcome,
        loss: Option<History>,
    ) {
        let label = outcome.outcome.label();
        let batch = spec.batch_size;
        self.finished.push(TrialRecord {
            trial_id: id,
            spec,
            outcome,
            finished: String::new(),
        });
        if let Some(h) = loss {
            if !h.is_empty() {
                self.recent.push_front(Curve {
                    trial_id: id,
                    batch_size: batch,
                    points: h,
                    ended: Some(label),
                });
                self.recent.truncate(RECENT_CURVES);
            }
        }
        self.reanalyze();
    }

    fn fold_log_line(&mut self, line: LogLine, now: f64) {
        match line {
            LogLine::Header(_) => {}
            LogLine::Trial(t) => {
                let t = *t;
                if !self.finished.iter().any(|f| f.trial_id == t.trial_id) {
                    self.finished.push(t);
                    self.saved = self.finished.len();
                    self.reanalyze();
                }
            }
            LogLine::Summary(s) => {
                self.done = true;
                self.cancelled = !s.complete;
                self.ended_at = Some(now);
                if let LiveSource::Log { tailing, .. } = &mut self.source {
                    *tailing = false;
                }
            }
        }
    }

    /// Status text the end-to-end test waits for; stable on purpose.
    pub fn finished_text(&self) -> String {
        format!(
            "trials finished: {}/{}",
            self.done_count(),
            self.plan.total_trials
        )
    }
}

/// Consecutive segments of equal regime merged: (b_lo, b_hi, regime).
pub fn regime_spans(a: &Analysis) -> Vec<(usize, usize, Regime)> {
    let mut out: Vec<(usize, usize, Regime)> = Vec::new();
    for s in &a.segments {
        match out.last_mut() {
            Some(last) if last.2 == s.regime && last.1 == s.b_lo => last.1 = s.b_hi,
            _ => out.push((s.b_lo, s.b_hi, s.regime)),
        }
    }
    out
}

// ───────────────────────────── runs / compare ─────────────────────────────

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

// ───────────────────────────── the app ─────────────────────────────

#[derive(Clone, Debug, PartialEq)]
pub struct App {
    pub theme: Theme,
    pub screen: Screen,
    /// Where Esc / closing help returns to.
    pub back: Screen,
    pub setup: SetupState,
    pub live: Option<LiveState>,
    pub runs: RunsState,
    pub compare: CompareState,
    pub confirm: Option<Confirm>,
    pub charts: Charts,
    /// Focused panel of the current screen (Tab cycles).
    pub panel: usize,
    pub flash: Option<String>,
    pub now: f64,
    pub runs_dir: PathBuf,
    /// A sweep started by this TUI is running (its threads have not ended).
    pub sweep_active: bool,
    pub quit: bool,
    pub size: (u16, u16),
    /// Something changed since the last draw.
    pub dirty: bool,
}

impl App {
    pub fn new(setup: SetupState, runs_dir: PathBuf, theme: Theme) -> Self {
        App {
            theme,
            screen: Screen::Setup,
            back: Screen::Setup,
            setup,
            live: None,
            runs: RunsState::default(),
            compare: CompareState::default(),
            confirm: None,
            charts: Charts::Both,
            panel: 0,
            flash: None,
            now: 0.0,
            runs_dir,
            sweep_active: false,
            quit: false,
            size: (80, 24),
            dirty: true,
        }
    }

    fn goto(&mut self, s: Screen) {
        if s != self.screen {
            if s == Screen::Help {
                self.back = self.screen;
            }
            self.screen = s;
            self.panel = 0;
        }
    }

    fn sweep_running(&self) -> bool {
        self.sweep_active
            && self
                .live
                .as_ref()
                .is_some_and(|l| !l.done && !l.read_only())
    }
}

/// Folds one message into the state; returns what the runtime must do.
pub fn update(app: &mut App, msg: Msg) -> Vec<Command> {
    let mut cmds = Vec::new();
    let redraw = !matches!(msg, Msg::Tick(_));
    match msg {
        Msg::Tick(now) => {
            app.now = now;
            // the ETA and elapsed time move while a sweep runs
            if app.sweep_running() && app.screen == Screen::Live {
                app.dirty = true;
            }
        }
        Msg::Resize(w, h) => app.size = (w, h),
        Msg::Key(k) => on_key(app, k, &mut cmds),
        Msg::SweepBatch(evs) => {
            for ev in evs {
                fold_sweep(app, ev);
            }
        }
        Msg::Sweep(ev) => fold_sweep(app, ev),
        Msg::SweepStarted { run_log } => {
            app.sweep_active = true;
            if let Some(l) = app.live.as_mut() {
                if l.plan.run_log.is_none() {
                    l.plan.run_log = run_log.map(|p| p.display().to_string());
                }
            }
        }
        Msg::SweepEnded => {
            app.sweep_active = false;
            if app.confirm == Some(Confirm::CancelSweep) {
                app.confirm = None;
            }
            cmds.push(Command::ScanRuns);
        }
        Msg::Runs(entries) => {
            app.runs.entries = entries;
            app.runs.scanned = true;
            let n = app.runs.entries.len();
            app.runs.selected = app.runs.selected.min(n.saturating_sub(1));
            let paths: BTreeSet<PathBuf> =
                app.runs.entries.iter().map(|e| e.path.clone()).collect();
            app.runs.marked.retain(|p| paths.contains(p));
        }
        Msg::LogOpened { log, tailing } => {
            app.live = Some(LiveState::from_log(&log, tailing, app.now));
            app.goto(Screen::Live);
            app.back = Screen::Runs;
        }
        Msg::LogLines(lines) => {
            let now = app.now;
            if let Some(l) = app.live.as_mut() {
                if l.read_only() {
                    for line in lines {
                        l.fold_log_line(line, now);
                    }
                }
            }
        }
        Msg::CompareLoaded(runs) => {
            app.compare.runs = runs;
            app.compare.loading = false;
        }
        Msg::Error(e) => app.flash = Some(e),
        Msg::Terminate => {
            if app.sweep_running() {
                cmds.push(Command::CancelSweep);
            }
            app.quit = true;
            cmds.push(Command::Quit);
        }
    }
    if redraw {
        app.dirty = true;
    }
    cmds
}

fn fold_sweep(app: &mut App, ev: SweepEvent) {
    let now = app.now;
    if let SweepEvent::Planned(plan) = &ev {
        app.live = Some(LiveState::new(
            LiveSource::Sweep,
            plan.clone(),
            app.live.as_ref().and_then(|l| l.workload.clone()),
            now,
        ));
    }
    if let Some(l) = app.live.as_mut() {
        if !l.read_only() {
            l.fold(ev, now);
        }
    }
}

/// Prepares the Live view for a sweep that is about to start (the workload is known here, the
/// plan arrives with the `Planned` event).
pub fn prepare_live(app: &mut App, cfg: &SweepConfig) {
    let plan = PlanInfo {
        preset: cfg.preset.name.clone(),
        batch_sizes: cfg.batch_sizes.clone(),
        trials_per_batch: cfg.trials_per_batch,
        total_trials: cfg.batch_sizes.len() * cfg.trials_per_batch,
        already_done: 0,
        devices: cfg.devices.label(),
        run_log: None,
    };
    let mut live = LiveState::new(
        LiveSource::Sweep,
        plan,
        Some(cfg.preset.workload.clone()),
        app.now,
    );
    live.workload = Some(cfg.preset.workload.clone());
    app.live = Some(live);
    app.goto(Screen::Live);
    app.back = Screen::Setup;
}

fn on_key(app: &mut App, k: Key, cmds: &mut Vec<Command>) {
    app.flash = None;
    // A confirmation dialog captures every key.
    if let Some(c) = app.confirm {
        match k {
            Key::Char('y') | Key::Char('Y') | Key::Enter => {
                app.confirm = None;
                match c {
                    Confirm::Quit => {
                        cmds.push(Command::CancelSweep);
                        app.quit = true;
                        cmds.push(Command::Quit);
                    }
                    Confirm::CancelSweep => cmds.push(Command::CancelSweep),
                }
            }
            Key::Interrupt if c == Confirm::Quit => {
                app.confirm = None;
                cmds.push(Command::CancelSweep);
                app.quit = true;
                cmds.push(Command::Quit);
            }
            Key::Char('n') | Key::Char('N') | Key::Esc | Key::Char('q') => app.confirm = None,
            _ => {}
        }
        return;
    }
    // Global keys.
    match k {
        Key::Char('q') | Key::Interrupt => {
            if app.sweep_running() {
                app.confirm = Some(Confirm::Quit);
            } else {
                app.quit = true;
                cmds.push(Command::Quit);
            }
            return;
        }
        Key::Char('?') => {
            if app.screen == Screen::Help {
                app.screen = app.back;
            } else {
                app.goto(Screen::Help);
            }
            return;
        }
        Key::Char('1') => return app.goto(Screen::Setup),
        Key::Char('2') => {
            if app.live.is_some() {
                app.goto(Screen::Live);
            } else {
                app.flash = Some(
                    "nothing to show in Live yet: launch a sweep (Enter) or open a run (3)".into(),
                );
            }
            return;
        }
        Key::Char('3') => {
            app.goto(Screen::Runs);
            cmds.push(Command::ScanRuns);
            return;
        }
        Key::Char('4') => {
            app.goto(Screen::Compare);
            return;
        }
        _ => {}
    }
    match app.screen {
        Screen::Setup => setup_key(app, k, cmds),
        Screen::Live => live_key(app, k, cmds),
        Screen::Runs => runs_key(app, k, cmds),
        Screen::Compare => {
            if k == Key::Esc {
                app.goto(Screen::Runs);
            }
        }
        Screen::Help => {
            if k == Key::Esc || k == Key::Enter {
                app.screen = app.back;
            }
        }
    }
}

fn setup_key(app: &mut App, k: Key, cmds: &mut Vec<Command>) {
    let running = app.sweep_running();
    let s = &mut app.setup;
    match k {
        Key::Tab | Key::BackTab => {
            s.focus = match s.focus {
                SetupFocus::Presets => SetupFocus::Fields,
                SetupFocus::Fields => SetupFocus::Presets,
            };
        }
        Key::Up | Key::Down | Key::Home | Key::End => {
            let up = matches!(k, Key::Up);
            match s.focus {
                SetupFocus::Presets => {
                    let n = s.presets.len();
                    let old = s.selected;
                    s.selected = match k {
                        Key::Home => 0,
                        Key::End => n.saturating_sub(1),
                        _ if up => s.selected.saturating_sub(1),
                        _ => (s.selected + 1).min(n.saturating_sub(1)),
                    };
                    if s.selected != old {
                        s.reset_from_preset();
                    }
                }
                SetupFocus::Fields => {
                    s.field = match k {
                        Key::Home => 0,
                        Key::End => FIELDS.len() - 1,
                        _ if up => s.field.saturating_sub(1),
                        _ => (s.field + 1).min(FIELDS.len() - 1),
                    };
                }
            }
        }
        Key::Left | Key::Right => {
            if s.focus == SetupFocus::Presets {
                s.focus = SetupFocus::Fields;
            } else {
                let f = FIELDS[s.field];
                s.adjust(f, k == Key::Right);
            }
        }
        Key::Char('r') => s.reset_from_preset(),
        Key::Enter => {
            if running {
                app.flash = Some(
                    "a sweep is already running: watch it in Live (2) or cancel it there (C)"
                        .into(),
                );
                return;
            }
            let blocking: Vec<Problem> = s.problems().into_iter().filter(|p| p.blocking).collect();
            if let Some(p) = blocking.first() {
                app.flash = Some(format!("cannot launch: {}", p.message));
                return;
            }
            if let Some(cfg) = s.config(&app.runs_dir) {
                prepare_live(app, &cfg);
                cmds.push(Command::Launch(Box::new(cfg)));
            }
        }
        Key::Esc if s.focus == SetupFocus::Fields => s.focus = SetupFocus::Presets,
        _ => {}
    }
}

fn live_key(app: &mut App, k: Key, cmds: &mut Vec<Command>) {
    let running = app.sweep_running();
    let Some(l) = app.live.as_mut() else {
        return;
    };
    let ro = l.read_only();
    match k {
        Key::Char('t') => {
            app.charts = match app.charts {
                Charts::Both => Charts::Scaling,
                Charts::Scaling => Charts::Loss,
                Charts::Loss => Charts::Both,
            }
        }
        Key::Tab => app.panel = (app.panel + 1) % 3,
        Key::BackTab => app.panel = (app.panel + 2) % 3,
        Key::Up => l.selected = l.selected.saturating_sub(1),
        Key::Down => l.selected = (l.selected + 1).min(l.running.len().saturating_sub(1)),
        Key::Esc => {
            app.screen = if ro { Screen::Runs } else { Screen::Setup };
            if ro {
                cmds.push(Command::ScanRuns);
            }
        }
        Key::Char('p') | Key::Char('c') | Key::Char('C') | Key::Char('x') if ro => {
            app.flash = Some(
                "read-only view of a run log: pause/cancel act on a sweep started here".into(),
            );
        }
        Key::Char('p') if running => cmds.push(Command::Pause(!l.paused)),
        Key::Char('c') if running => match l.selected_trial() {
            Some(id) => {
                cmds.push(Command::CancelTrial(id));
                app.flash = Some(format!(
                    "cancelling trial #{id} (recorded as cancelled, never counted)"
                ));
            }
            None => app.flash = Some("no running trial to cancel".into()),
        },
        Key::Char('C') | Key::Char('x') if running => app.confirm = Some(Confirm::CancelSweep),
        Key::Char('p') | Key::Char('c') | Key::Char('C') | Key::Char('x') => {
            app.flash = Some("the sweep is not running".into());
        }
        _ => {}
    }
}

fn runs_key(app: &mut App, k: Key, cmds: &mut Vec<Command>) {
    let r = &mut app.runs;
    let n = r.entries.len();
    match k {
        Key::Up => r.selected = r.selected.saturating_sub(1),
        Key::Down => r.selected = (r.selected + 1).min(n.saturating_sub(1)),
        Key::Home => r.selected = 0,
        Key::End => r.selected = n.saturating_sub(1),
        Key::PageUp => r.selected = r.selected.saturating_sub(10),
        Key::PageDown => r.selected = (r.selected + 10).min(n.saturating_sub(1)),
        Key::Space => {
            if let Some(e) = r.entries.get(r.selected) {
                if !r.marked.remove(&e.path) {
                    r.marked.insert(e.path.clone());
                }
                r.selected = (r.selected + 1).min(n.saturating_sub(1));
            }
        }
        Key::Enter => {
            if let Some(e) = r.entries.get(r.selected) {
                if e.status == RunStatus::Unreadable {
                    app.flash = e.error.clone();
                } else {
                    cmds.push(Command::OpenLog(e.path.clone()));
                }
            }
        }
        Key::Char('r') => {
            if let Some(e) = r.entries.get(r.selected) {
                match e.status {
                    RunStatus::Interrupted if !app.sweep_active => {
                        let p = e.path.clone();
                        cmds.push(Command::Resume(p));
                    }
                    RunStatus::Interrupted => {
                        app.flash =
                            Some("a sweep is already running; resume this one after it".into())
                    }
                    s => {
                        app.flash = Some(format!(
                            "only interrupted sweeps can be resumed (this one is {})",
                            s.label()
                        ))
                    }
                }
            }
        }
        Key::Char('c') => {
            let mut paths: Vec<PathBuf> = r.marked.iter().cloned().collect();
            if paths.is_empty() {
                if let Some(e) = r.entries.get(r.selected) {
                    paths.push(e.path.clone());
                }
            }
            if !paths.is_empty() {
                app.compare.loading = true;
                app.goto(Screen::Compare);
                cmds.push(Command::LoadCompare(paths));
            }
        }
        Key::Char('R') => cmds.push(Command::ScanRuns),
        Key::Esc => app.goto(if app.live.is_some() {
            Screen::Live
        } else {
            Screen::Setup
        }),
        _ => {}
    }
}

/// "1h 02m", "3m 05s", "12s".
pub fn format_duration(s: f64) -> String {
    if !s.is_finite() || s < 0.0 {
        return "–".into();
    }
    let s = s.round() as u64;
    if s >= 3600 {
        format!("{}h {:02}m", s / 3600, (s % 3600) / 60)
    } else if s >= 60 {
        format!("{}m {:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

/// The outcome text for a finished trial in lists.
pub fn outcome_text(o: &Outcome) -> String {
    match o {
        Outcome::Reached { step } => format!("reached at {step}"),
        Outcome::NotReached {
            budget,
            early_stopped: false,
        } => format!("not reached in {budget}"),
        Outcome::NotReached { budget, .. } => format!("stopped early at {budget}"),
        Outcome::Diverged { step } => format!("diverged at {step}"),
        Outcome::Cancelled { step } => format!("cancelled at {step}"),
    }
}
