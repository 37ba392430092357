//! The TUI's state and its pure update: `update(&mut App, Msg) -> Vec<Command>` folds engine
//! events, run-log lines, IO results, key presses and clock ticks into `App`. No IO happens here
//! and nothing else writes `App`: whatever must touch the outside world (start a sweep, read a
//! file) is returned as a `Command`; the runtime executes it and reports back with a `Msg`. Every
//! state transition is therefore unit-testable.
//!
//! * `history` — bounded time series for the loss curves
//! * `setup` — the Setup screen's editable study and its validation
//! * `live` — the state of one sweep (run here or read from a log)
//! * `runs` — the Runs and Compare screens' state
//! * `update` — `update` and the key handlers

mod history;
mod live;
mod runs;
mod setup;
mod update;

use std::path::PathBuf;

pub use history::History;
pub use live::{regime_spans, BestCurve, Curve, LiveSource, LiveState, RunningTrial};
pub use runs::{CompareRun, CompareState, RunEntry, RunStatus, RunsState};
pub use setup::{ladder_125, Field, PresetEntry, Problem, SetupFocus, SetupState, FIELDS};
pub use update::{format_duration, outcome_text, update};

use crate::core::events::SweepEvent;
use crate::core::record::LogLine;
use crate::runlog::RunLog;
use crate::sweep::SweepConfig;

use super::keymap::Key;
use super::theme::Theme;

/// Points kept per curve; when full, every other point is dropped and the sampling stride doubles.
pub const HISTORY_CAP: usize = 250;
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
    /// Measure the layout calibration of this configuration's workload (a few seconds, then
    /// cached): Setup's wall-time bound (`sweep --dry-run` in the UI).
    Calibrate(Box<SweepConfig>),
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
        }
    }

    /// The state Live shows (the sweep, or the opened log).
    pub fn live(&self) -> Option<&LiveState> {
        match self.view {
            LiveView::Sweep => self.sweep.as_ref().or(self.log.as_ref()),
            LiveView::Log => self.log.as_ref().or(self.sweep.as_ref()),
        }
    }

    /// Live shows the sweep this TUI runs (controls apply).
    pub fn viewing_sweep(&self) -> bool {
        self.sweep.is_some() && (self.view == LiveView::Sweep || self.log.is_none())
    }

    /// A sweep started here is running and has not finished.
    pub fn sweep_running(&self) -> bool {
        self.sweep_active && self.sweep.as_ref().is_some_and(|l| !l.done)
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
