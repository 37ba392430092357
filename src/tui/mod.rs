//! The terminal UI (the only module that imports ratatui/crossterm). Everything it shows comes
//! from engine events (`SweepEvent`) or run logs, folded by `app::update`.
//!
//! * `app` — state and the pure `update(&mut App, Msg) -> Vec<Command>`
//! * `runtime` — the tokio `select!` loop (input, engine events, tick, frame deadline); it
//!   executes `Command`s and reports their results as `Msg`s
//! * `loader` — reads presets and run logs into the app's types
//! * `key` — key normalisation; `keymap` — the one key table (help, footer; a test proves
//!   `update` handles every entry and nothing else)
//! * `screens` — Setup, Live, Report, Runs, Compare, Help, Meta; `widgets` — log axes, charts,
//!   progress
//! * `svg` / `screenshot` — render a frame to SVG (README pictures, `screenshot` subcommand)
//!
//! Layering: the top, beside `cli`; imports every engine module. The Live state holds one cached
//! `report::Report` (built by `report::build`, the entry `scaling-lab report` uses).

pub mod app;
pub mod key;
pub mod keymap;
pub mod loader;
pub mod runtime;
pub mod screens;
pub mod screenshot;
pub mod svg;
pub mod theme;
pub mod widgets;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::thread::ThreadId;
use std::time::Duration;

pub use app::{update, App, Command, Msg};
pub use screenshot::{render_meta_screenshot, render_screenshots};

use crate::core::runner::RunnerFactory;

/// The preset the Setup screen selects first.
pub const DEFAULT_PRESET: &str = "digits-mlp-momentum";

#[derive(Clone, Debug)]
pub struct TuiOptions {
    /// Where run logs are written and listed.
    pub runs_dir: PathBuf,
    /// Directory of preset TOML files.
    pub presets_dir: PathBuf,
    /// The user's presets directory (`workload::presets::user_presets_dir`), listed after the
    /// bundled presets; None: none (tests).
    pub user_presets_dir: Option<PathBuf>,
    /// Preset selected on the Setup screen at start, by name (default `digits-mlp-momentum`).
    pub initial_preset: Option<String>,
    /// The preset `--preset` named, as loaded: selected on the Setup screen at start (added to
    /// its list when the presets directory does not hold that file, e.g. a preset given by path).
    pub preset_file: Option<app::PresetEntry>,
    /// A run log to open in Live at start (read-only; followed while it grows).
    pub open_log: Option<PathBuf>,
    /// Labels of the CUDA devices found (empty: CPU workers only).
    pub gpu_labels: Vec<String>,
    /// Labels of the wgpu adapters found (`--features wgpu`; empty: none).
    pub wgpu_labels: Vec<String>,
}

impl TuiOptions {
    pub fn new(runs_dir: PathBuf, presets_dir: PathBuf) -> Self {
        TuiOptions {
            runs_dir,
            presets_dir,
            user_presets_dir: None,
            initial_preset: None,
            preset_file: None,
            open_log: None,
            gpu_labels: Vec::new(),
            wgpu_labels: Vec::new(),
        }
    }
}

/// Builds the initial app state from the options (reads the presets directory).
pub fn initial_app(opts: &TuiOptions, theme: theme::Theme) -> App {
    let (mut presets, errors) =
        loader::load_presets(&opts.presets_dir, opts.user_presets_dir.as_deref());
    // `--preset`'s file: selected by its path (two files may share a name)
    let file_index = opts.preset_file.as_ref().map(|e| {
        let same = |a: &Option<PathBuf>, b: &Option<PathBuf>| match (a, b) {
            (Some(a), Some(b)) => {
                a == b
                    || a.canonicalize()
                        .ok()
                        .is_some_and(|x| b.canonicalize().ok() == Some(x))
            }
            _ => false,
        };
        presets
            .iter()
            .position(|p| same(&p.path, &e.path))
            .unwrap_or_else(|| {
                presets.push(e.clone());
                presets.len() - 1
            })
    });
    let mut setup = app::SetupState::new(
        presets,
        errors,
        Some(opts.initial_preset.as_deref().unwrap_or(DEFAULT_PRESET)),
        opts.gpu_labels.clone(),
    );
    if let Some(i) = file_index {
        setup.selected = i;
        setup.reset_from_preset();
    }
    setup.add_wgpu_adapters(opts.wgpu_labels.clone());
    setup.calibrations = crate::sweep::layout::read_cache(&opts.runs_dir);
    App::new(setup, opts.runs_dir.clone(), theme)
}

/// Exit status after ctrl-c (128 + SIGINT), as shells expect.
pub const EXIT_INTERRUPTED: u8 = 130;

/// Whether this terminal can show the full-screen UI: stdout and stdin are terminals and
/// `TERM` is not `dumb`. Otherwise the CLI should fall back to headless output.
pub fn terminal_supported() -> bool {
    let dumb = std::env::var("TERM").is_ok_and(|t| t == "dumb");
    !dumb && std::io::stdout().is_terminal() && std::io::stdin().is_terminal()
}

/// The terminal is in raw mode / the alternate screen (the panic hook restores it once).
static TERMINAL_ACTIVE: AtomicBool = AtomicBool::new(false);
/// Threads whose panic ends the UI (the one that draws).
static UI_THREAD: OnceLock<Mutex<Option<ThreadId>>> = OnceLock::new();
/// Panics of other threads while the UI is up (printed after the terminal is restored: printing
/// into the alternate screen would garble it, and trial panics are reported in Live anyway).
static DEFERRED_PANICS: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn restore_terminal() {
    if TERMINAL_ACTIVE.swap(false, Ordering::SeqCst) {
        let _ = crossterm::terminal::disable_raw_mode();
        let _ = crossterm::execute!(std::io::stdout(), crossterm::terminal::LeaveAlternateScreen);
    }
}

/// Installs (once) a panic hook that restores the terminal before a panic of the UI thread is
/// reported. A panic on another thread (a trial: the scheduler catches it and reports it as a
/// trial error) leaves the UI running; its message is kept and printed after the UI ends.
fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let ui = UI_THREAD
                .get()
                .and_then(|m| m.lock().ok().and_then(|g| *g))
                .is_none_or(|id| id == std::thread::current().id());
            if ui || !TERMINAL_ACTIVE.load(Ordering::SeqCst) {
                restore_terminal();
                prev(info);
            } else if let Ok(mut v) = DEFERRED_PANICS.lock() {
                let name = std::thread::current().name().unwrap_or("?").to_string();
                v.push(format!("thread '{name}' panicked: {info}"));
            }
        }));
    });
}

type Term = ratatui::Terminal<ratatui::backend::CrosstermBackend<std::io::Stdout>>;

fn init_terminal() -> anyhow::Result<Term> {
    install_panic_hook();
    *UI_THREAD
        .get_or_init(|| Mutex::new(None))
        .lock()
        .unwrap_or_else(|e| e.into_inner()) = Some(std::thread::current().id());
    crossterm::terminal::enable_raw_mode()?;
    TERMINAL_ACTIVE.store(true, Ordering::SeqCst);
    crossterm::execute!(std::io::stdout(), crossterm::terminal::EnterAlternateScreen)?;
    Ok(ratatui::Terminal::new(
        ratatui::backend::CrosstermBackend::new(std::io::stdout()),
    )?)
}

/// Restores the terminal when dropped (normal exit, `?` errors, unwinding panics).
struct TerminalGuard;

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore_terminal();
        if let Ok(mut v) = DEFERRED_PANICS.lock() {
            for p in v.drain(..) {
                eprintln!("{p}");
            }
        }
    }
}

/// Runs the TUI until the user quits. Training runs on the scheduler's threads; this thread runs
/// a small tokio runtime for the UI loop. The exit code is 130 when the user quit with ctrl-c,
/// success otherwise (the terminal is restored first either way).
pub fn run(opts: TuiOptions, factory: RunnerFactory) -> anyhow::Result<ExitCode> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .max_blocking_threads(2)
        .enable_all()
        .thread_name("tui")
        .build()?;
    let mut app = initial_app(&opts, theme::Theme::from_env());
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    rt.block_on(async {
        let mut exec = runtime::Executor::new(factory, tx, opts.runs_dir.clone());
        let mut first = vec![Command::ScanRuns];
        if let Some(p) = &opts.open_log {
            first.push(Command::OpenLog(p.clone()));
        }
        exec.execute(first);
        let guard = TerminalGuard;
        let mut terminal = init_terminal()?;
        let r = runtime::run_loop(&mut terminal, &mut app, &mut exec, &mut rx).await;
        drop(guard);
        // Stop a running sweep cleanly: finished trials are already in the log.
        if exec.sweep.is_some() {
            eprintln!(
                "stopping the sweep (finished trials are in the run log; it can be resumed)…"
            );
        }
        exec.shutdown(Duration::from_secs(10));
        r?;
        Ok(if app.interrupted {
            ExitCode::from(EXIT_INTERRUPTED)
        } else {
            ExitCode::SUCCESS
        })
    })
}
