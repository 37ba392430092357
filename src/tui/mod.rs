//! The terminal UI (the only module that imports ratatui/crossterm). Everything it shows comes
//! from engine events (`SweepEvent`) or run logs, folded by `app::update`.
//!
//! * `app` — state and the pure `update(&mut App, Msg) -> Vec<Command>`
//! * `runtime` — the tokio `select!` loop (input, engine events, tick, frame deadline)
//! * `screens` — Setup, Live, Runs, Compare, Help; `widgets` — log axes, charts, progress
//! * `svg` / `screenshot` — render a frame to SVG (README pictures, `screenshot` subcommand)

pub mod app;
pub mod engine;
pub mod keymap;
pub mod runtime;
pub mod screens;
pub mod screenshot;
pub mod svg;
pub mod theme;
pub mod widgets;

use std::path::PathBuf;
use std::time::Duration;

pub use app::{update, App, Command, Msg};
pub use screenshot::render_screenshots;

use crate::core::trial::RunnerFactory;

/// The preset the Setup screen selects first.
pub const DEFAULT_PRESET: &str = "digits-mlp-momentum";

#[derive(Clone, Debug)]
pub struct TuiOptions {
    /// Where run logs are written and listed.
    pub runs_dir: PathBuf,
    /// Directory of preset TOML files.
    pub presets_dir: PathBuf,
    /// Preset selected on the Setup screen at start (default `digits-mlp-momentum`).
    pub initial_preset: Option<String>,
    /// A run log to open in Live at start (read-only; followed while it grows).
    pub open_log: Option<PathBuf>,
    /// Labels of the CUDA devices found (empty: CPU workers only).
    pub gpu_labels: Vec<String>,
}

impl TuiOptions {
    pub fn new(runs_dir: PathBuf, presets_dir: PathBuf) -> Self {
        TuiOptions {
            runs_dir,
            presets_dir,
            initial_preset: None,
            open_log: None,
            gpu_labels: Vec::new(),
        }
    }
}

/// Builds the initial app state from the options (reads the presets directory).
pub fn initial_app(opts: &TuiOptions, theme: theme::Theme) -> App {
    let (presets, errors) = engine::load_presets(&opts.presets_dir);
    let setup = app::SetupState::new(
        presets,
        errors,
        Some(opts.initial_preset.as_deref().unwrap_or(DEFAULT_PRESET)),
        opts.gpu_labels.clone(),
    );
    App::new(setup, opts.runs_dir.clone(), theme)
}

/// Restores the terminal when dropped (normal exit, `?` errors); panics are covered by the hook
/// `ratatui::init` installs.
struct TerminalGuard;

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        ratatui::restore();
    }
}

/// Runs the TUI until the user quits. Training runs on the scheduler's threads; this thread runs
/// a small tokio runtime for the UI loop.
pub fn run(opts: TuiOptions, factory: RunnerFactory) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .max_blocking_threads(2)
        .enable_all()
        .thread_name("tui")
        .build()?;
    let mut app = initial_app(&opts, theme::Theme::from_env());
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    rt.block_on(async {
        let mut engine = runtime::Engine::new(factory, tx);
        let mut first = vec![Command::ScanRuns];
        if let Some(p) = &opts.open_log {
            first.push(Command::OpenLog(p.clone()));
        }
        engine.execute(&mut app, first);
        let mut terminal = ratatui::init();
        let _guard = TerminalGuard;
        let r = runtime::run_loop(&mut terminal, &mut app, &mut engine, &mut rx).await;
        drop(_guard);
        // Stop a running sweep cleanly: finished trials are already in the log.
        if engine.sweep.is_some() {
            eprintln!(
                "stopping the sweep (finished trials are in the run log; it can be resumed)…"
            );
        }
        engine.shutdown(Duration::from_secs(10));
        r
    })
}
