//! The TUI's state and its pure update: `update(&mut App, Msg) -> Vec<Command>` folds engine
//! events, run-log lines, IO results, key presses and clock ticks into `App`. No IO happens here
//! and nothing else writes `App`: whatever must touch the outside world (start a sweep, read a
//! file) is returned as a `Command`; the runtime executes it and reports back with a `Msg`. Every
//! state transition is therefore unit-testable.
//!
//! * `analysis` — the analysis requests and results (the analysis runs off the UI task)
//! * `setup` — the Setup screen's editable study and its validation
//! * `live` — the state of one sweep (run here or read from a log)
//! * `target` — moving a Live state's target along its ladder (`[` `]`), the per-target cache
//! * `runs` — the Runs and Compare screens' state
//! * `update` — `update` and the key handlers

mod analysis;
mod live;
mod runs;
mod setup;
mod target;
mod update;

use std::path::PathBuf;

/// A loss or metric curve: (step, value) in the engine's one bounded history (at most
/// `HISTORY_CAP` points, halving its resolution when full).
pub type History = crate::core::events::BoundedHistory<(f64, f64)>;
pub use analysis::{AnalysisFor, AnalysisInputs, AnalysisRequest, Analyzed, Rendered};
pub use live::{regime_spans, BestCurve, Curve, LiveSource, LiveState, RunningTrial};
pub use runs::{
    CompareAnalyzed, CompareRequest, CompareRun, CompareState, RunEntry, RunStatus, RunsState,
};
pub use setup::{ladder_125, Field, PresetEntry, SetupFocus, SetupState, FIELDS};
pub use target::{ladder_text, next_rung, RungCache};
pub use update::{format_duration, update};

use crate::core::events::SweepEvent;
use crate::core::record::LogLine;
use crate::runlog::RunLog;
use crate::sweep::SweepConfig;

use super::key::Key;
use super::theme::Theme;

/// A trial in words: "B=512 confirm #2 seed 3" (the confirm stage: the search's configuration
/// of rank 2 at that B, its third fresh seed), "B=512 repeat of #31", "B=512 widened #4" (a
/// trial of a re-centred search range), "#120 B=2" (a search trial of the plan).
pub fn trial_label(spec: &crate::core::trial::TrialSpec) -> String {
    let b = crate::tui::widgets::log_axis::format_pow2(spec.batch_size as u64);
    if let Some(c) = &spec.confirm {
        return format!("B={b} confirm #{} seed {}", c.rank + 1, c.seed + 1);
    }
    if let Some(of) = spec.repeat_of {
        return format!("B={b} repeat of #{of}");
    }
    if let Some(wid) = crate::core::widen::WidenId::decode(spec.trial_id) {
        return format!("B={b} widened #{}", wid.j + 1);
    }
    format!("#{} B={b}", spec.trial_id)
}

/// Points kept per curve; when full, every other point is dropped and the sampling stride doubles.
pub const HISTORY_CAP: usize = crate::core::events::DEFAULT_HISTORY_CAP;
/// Finished trials whose loss curves stay on the chart after they end.
pub const RECENT_CURVES: usize = 4;
/// Curves drawn at most.
pub const MAX_CURVES: usize = 6;

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
    /// `Command::Launch` / `Command::Resume` failed before the sweep started.
    LaunchFailed(String),
    /// `Command::Resume` read the log it resumes: its finished trials are on the chart from the
    /// start (sent before the sweep's own `Planned`).
    Resuming(Box<RunLog>),
    /// The sweep's event stream ended (its threads are finishing): `update` asks for the join.
    SweepStreamEnded,
    /// The scheduler's threads ended (after `Done`, or after a failure): the joined sweep's
    /// report (`report::of_sweep`), or the coordinator's error.
    SweepEnded {
        error: Option<String>,
        report: Option<Box<crate::report::Report>>,
    },
    Runs(Vec<RunEntry>),
    /// A run log opened for viewing (`tailing` = it is still growing and will be followed).
    LogOpened {
        log: Box<RunLog>,
        tailing: bool,
    },
    /// Lines appended to the run log being followed.
    LogLines(Vec<LogLine>),
    CompareLoaded(Vec<CompareRun>),
    /// `Command::Calibrate` finished: the workload's layout calibration (cached in the runs
    /// directory), or why it failed.
    Calibrated(Result<Box<crate::sweep::layout::Calibration>, String>),
    /// An analysis asked for with `Command::Analyze` finished (on the runtime's worker).
    Analyzed(Box<Analyzed>),
    /// Compare's runs read at one target (`Command::AnalyzeCompare`, on the same worker).
    CompareAnalyzed(Box<CompareAnalyzed>),
    Error(String),
    /// The runtime is about to draw a frame: bring what the views derive from folded engine
    /// events up to date (the provisional chart points, deferred from `SweepBatch`).
    Frame,
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
    /// Measure the layout calibration of this configuration's workload (a few seconds, then
    /// cached): Setup's wall-time bound (`sweep --dry-run` in the UI).
    Calibrate(Box<SweepConfig>),
    /// Run this analysis off the UI task and answer with `Msg::Analyzed` (`update` keeps at most
    /// one in flight per Live state; the runtime's worker keeps only the latest per state).
    Analyze(Box<AnalysisRequest>),
    /// Read Compare's runs at one target off the UI task and answer with `Msg::CompareAnalyzed`
    /// (one in flight; the latest target the user stopped at is read next).
    AnalyzeCompare(Box<CompareRequest>),
    /// Start the sweep of a log read for resuming (`Msg::Resuming`), appending to it.
    StartResumed(Box<RunLog>),
    /// Follow this log (or sweep directory) from where it was read, polling it on each tick;
    /// None: follow nothing. The sweep's own log is never followed (its events show it).
    Follow(Option<Box<RunLog>>),
    /// Poll the followed log (`Msg::LogLines` with what was appended).
    PollTail,
    /// Join the sweep whose event stream ended and build its report (`Msg::SweepEnded`).
    JoinSweep,
    /// Leave the UI (the runtime stops a running sweep cleanly first).
    Quit,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Screen {
    Setup,
    Live,
    Runs,
    Compare,
    Help,
    /// The metaparameter picture of the sweep shown in Live (η × 1−γ per batch size).
    Meta,
    /// The whole report of the sweep shown in Live: what `scaling-lab report` prints.
    Report,
}

impl Screen {
    pub fn title(self) -> &'static str {
        match self {
            Screen::Setup => "Setup",
            Screen::Live => "Live",
            Screen::Runs => "Runs",
            Screen::Compare => "Compare",
            Screen::Help => "Help",
            Screen::Meta => "Metaparameters",
            Screen::Report => "Report",
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

/// Which state the Live screen shows: the sweep this TUI runs, or a log opened from Runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LiveView {
    Sweep,
    Log,
}

#[derive(Clone, Debug, PartialEq)]
pub struct App {
    pub theme: Theme,
    pub screen: Screen,
    /// Where Esc / closing help returns to.
    pub back: Screen,
    pub setup: SetupState,
    /// The sweep this TUI launched or resumed (kept while another log is viewed).
    pub sweep: Option<LiveState>,
    /// A run log opened from Runs (read-only).
    pub log: Option<LiveState>,
    /// Which of the two Live shows.
    pub view: LiveView,
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
    /// The user quit with ctrl-c (the process exits with 130).
    pub interrupted: bool,
    pub size: (u16, u16),
    /// Something changed since the last draw.
    pub dirty: bool,
    /// First line shown by the (scrolling) help screen.
    pub help_scroll: u16,
    /// Selected batch size (index into the plan) of the metaparameter view.
    pub meta_batch: usize,
    /// First line and column shown by the (scrolling) report screen.
    pub report_scroll: (u16, u16),
    /// The id of the next analysis request.
    pub next_request: u64,
}

impl App {
    pub fn new(setup: SetupState, runs_dir: PathBuf, theme: Theme) -> Self {
        App {
            theme,
            screen: Screen::Setup,
            back: Screen::Setup,
            setup,
            sweep: None,
            log: None,
            view: LiveView::Sweep,
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
            interrupted: false,
            size: (80, 24),
            dirty: true,
            help_scroll: 0,
            meta_batch: 0,
            report_scroll: (0, 0),
            next_request: 0,
        }
    }

    /// The state Live shows (the sweep, or the opened log).
    pub fn live(&self) -> Option<&LiveState> {
        match self.view {
            LiveView::Sweep => self.sweep.as_ref().or(self.log.as_ref()),
            LiveView::Log => self.log.as_ref().or(self.sweep.as_ref()),
        }
    }

    /// The state Live shows, mutably.
    pub(crate) fn live_mut(&mut self) -> Option<&mut LiveState> {
        match self.view {
            LiveView::Sweep if self.sweep.is_some() => self.sweep.as_mut(),
            LiveView::Log if self.log.is_some() => self.log.as_mut(),
            _ => self.sweep.as_mut().or(self.log.as_mut()),
        }
    }

    /// Live shows a finished run (a finished sweep or a log): its target can move (`[` `]`).
    pub fn live_finished(&self) -> bool {
        self.live().is_some_and(|l| l.done && l.header.is_some())
    }

    /// Live shows the sweep this TUI runs (controls apply).
    pub fn viewing_sweep(&self) -> bool {
        self.sweep.is_some() && (self.view == LiveView::Sweep || self.log.is_none())
    }

    /// A sweep started here is running and has not finished.
    pub fn sweep_running(&self) -> bool {
        self.sweep_active && self.sweep.as_ref().is_some_and(|l| !l.done)
    }

    /// Asks for the analyses that are due (a Live state whose data are newer than its report and
    /// that waits for none) and refreshes the provisional chart points (unless `defer`: the
    /// runtime's engine batches, whose points follow at the next `Msg::Frame`, at most 10 per
    /// second instead of once per landed trial): the end of every `update`.
    pub(crate) fn request_analyses(&mut self, cmds: &mut Vec<Command>, defer: bool) {
        for view in [LiveView::Sweep, LiveView::Log] {
            let id = self.next_request;
            let state = match view {
                LiveView::Sweep => self.sweep.as_mut(),
                LiveView::Log => self.log.as_mut(),
            };
            let Some(l) = state else { continue };
            if !defer {
                l.refresh_provisional();
            }
            if let Some(r) = l.request(id, view) {
                self.next_request += 1;
                cmds.push(Command::Analyze(Box::new(r)));
            }
        }
        if let Some(r) = self.compare.request() {
            cmds.push(Command::AnalyzeCompare(Box::new(r)));
        }
    }

    pub(crate) fn goto(&mut self, s: Screen) {
        if s != self.screen {
            if s == Screen::Help {
                self.back = self.screen;
                self.help_scroll = 0;
            }
            if s == Screen::Report {
                self.report_scroll = (0, 0);
            }
            self.screen = s;
            self.panel = 0;
        }
    }
}

/// [`update`], then every analysis it asked for run on this thread and folded back — what the
/// runtime does with its worker thread. For folds that are not interactive: screenshots, tests,
/// replaying a log. Returns the other commands.
pub fn update_settled(app: &mut App, msg: Msg) -> Vec<Command> {
    let mut out = Vec::new();
    let mut todo = update(app, msg);
    while !todo.is_empty() {
        let mut next = Vec::new();
        for c in todo {
            match c {
                Command::Analyze(r) => next.extend(update(app, Msg::Analyzed(Box::new(r.run())))),
                Command::AnalyzeCompare(r) => {
                    next.extend(update(app, Msg::CompareAnalyzed(Box::new(r.run()))))
                }
                c => out.push(c),
            }
        }
        todo = next;
    }
    out
}
