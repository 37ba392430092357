//! `update`: the only function that changes `App`, and the key handlers it dispatches to.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::core::events::SweepEvent;
use crate::sweep::overrides::Problem;
use crate::tui::app::{
    App, Charts, Command, Confirm, Edit, Field, LiveState, LiveView, Msg, Prompt, PromptFor,
    RunStatus, Screen, SetupFocus, FIELDS,
};
use crate::tui::key::Key;

/// Folds one message into the state; returns what the runtime must do.
pub fn update(app: &mut App, msg: Msg) -> Vec<Command> {
    let mut cmds = Vec::new();
    let redraw = !matches!(msg, Msg::Tick(_) | Msg::Frame);
    let defer = matches!(msg, Msg::SweepBatch(_));
    match msg {
        Msg::Tick(now) => {
            app.now = now;
            if app.log.is_some() {
                cmds.push(Command::PollTail);
            }
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
            if let Some(l) = app.sweep.as_mut() {
                if l.plan.run_log.is_none() {
                    l.plan.run_log = run_log.map(|p| p.display().to_string());
                }
            }
        }
        Msg::LaunchFailed(e) => {
            if !app.sweep_active {
                app.sweep = None;
                if app.screen == Screen::Live && app.view == LiveView::Sweep {
                    app.screen = if app.back == Screen::Runs {
                        Screen::Runs
                    } else {
                        Screen::Setup
                    };
                }
            }
            app.flash = Some(e);
        }
        Msg::Resuming(log) => on_resuming(app, log, &mut cmds),
        Msg::SweepStreamEnded => cmds.push(Command::JoinSweep),
        Msg::SweepEnded { error, report } => {
            app.sweep_active = false;
            if let (Some(r), Some(l)) = (report, app.sweep.as_mut()) {
                // the way every sweep ends: the joined sweep's report
                l.adopt_final(*r);
            }
            if app.confirm.is_some() {
                app.confirm = None;
            }
            if let Some(e) = error {
                app.flash = Some(e);
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
        Msg::LogOpened { log, tailing } => on_log_opened(app, log, tailing, &mut cmds),
        Msg::LogLines(lines) => {
            let now = app.now;
            if let Some(l) = app.log.as_mut() {
                for line in lines {
                    l.fold_log_line(line, now);
                }
            }
        }
        Msg::CompareLoaded(runs) => app.compare.loaded(runs),
        Msg::CompareAnalyzed(a) => {
            if !app.compare.adopt(*a) {
                app.request_analyses(&mut cmds, false);
                return cmds;
            }
        }
        Msg::Calibrated(r) => on_layout_calibrated(app, r),
        Msg::Analyzed(a) => {
            let state = match a.for_.view {
                LiveView::Sweep => app.sweep.as_mut(),
                LiveView::Log => app.log.as_mut(),
            };
            let adopted = state.is_some_and(|l| l.adopt(*a));
            // a dropped (stale) result changes nothing on screen
            if !adopted {
                app.request_analyses(&mut cmds, false);
                return cmds;
            }
        }
        Msg::PresetSaved(r) => on_preset_saved(app, r),
        Msg::Error(e) => app.flash = Some(e),
        Msg::Frame => {}
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
    app.request_analyses(&mut cmds, defer);
    cmds
}

/// A sweep resumed from Runs: its logged trials on the chart at once, then its sweep goes on.
fn on_resuming(app: &mut App, log: Box<crate::runlog::RunLog>, cmds: &mut Vec<Command>) {
    let mut live = LiveState::resuming(&log, app.now);
    let cfg = crate::sweep::SweepConfig::from_header(&log.header, app.runs_dir.clone());
    live.layout = app.setup.layout_calibration(&cfg);
    app.sweep = Some(live);
    app.view = LiveView::Sweep;
    app.goto(Screen::Live);
    app.back = Screen::Runs;
    cmds.push(Command::StartResumed(log));
}

/// Setup's `e`: the workload's layout calibration landed (cached for its estimate) or failed.
fn on_layout_calibrated(app: &mut App, r: Result<Box<crate::sweep::layout::Calibration>, String>) {
    app.setup.calibrating = false;
    match r {
        Ok(c) => {
            app.setup.calibrations.insert(c.key.clone(), *c);
            app.flash = app
                .setup
                .calibrated_estimate()
                .map(|e| format!("calibrated: {}", e.line()));
        }
        Err(e) => app.flash = Some(format!("calibration failed: {e}")),
    }
}

/// A study saved as a user preset: said, and listed in Setup as yours from now on.
fn on_preset_saved(app: &mut App, r: Result<Box<super::setup::PresetEntry>, String>) {
    match r {
        Ok(e) => {
            let path = e.path.clone().unwrap_or_default();
            app.flash = Some(format!(
                "saved as preset {}: {} (`scaling-lab sweep {}`)",
                e.preset.name,
                path.display(),
                e.preset.name
            ));
            let presets = &mut app.setup.presets;
            if !presets.iter().any(|p| p.path == e.path) {
                presets.push(*e);
            }
        }
        Err(e) => app.flash = Some(format!("not saved: {e}")),
    }
}

/// Whether `path` is the run log of the sweep this TUI runs.
fn is_sweep_log(app: &App, path: &Path) -> bool {
    app.sweep
        .as_ref()
        .and_then(|s| s.plan.run_log.as_deref())
        .is_some_and(|p| Path::new(p) == path)
}

fn fold_sweep(app: &mut App, ev: SweepEvent) {
    let now = app.now;
    if let SweepEvent::Planned(plan) = &ev {
        if app.sweep.as_ref().is_none_or(|s| s.done) {
            app.sweep = Some(LiveState::new(super::LiveSource::Sweep, plan.clone(), now));
        }
    }
    if let Some(l) = app.sweep.as_mut() {
        l.fold(ev, now);
    }
}

fn quit(app: &mut App, cmds: &mut Vec<Command>, interrupted: bool) {
    if app.sweep_running() {
        cmds.push(Command::CancelSweep);
    }
    app.quit = true;
    app.interrupted = interrupted;
    cmds.push(Command::Quit);
}

/// A run log read for viewing: the sweep's own log shows the live sweep; another one opens in
/// Live (followed while it grows); the validator's warnings go to the flash line.
fn on_log_opened(
    app: &mut App,
    log: Box<crate::runlog::RunLog>,
    tailing: bool,
    cmds: &mut Vec<Command>,
) {
    let warnings = log.warnings.clone();
    if is_sweep_log(app, &log.path) {
        // the sweep's own log: show the live, controllable sweep
        app.view = LiveView::Sweep;
    } else {
        app.log = Some(LiveState::opened(&log, tailing, app.now));
        app.view = LiveView::Log;
        // follow it while it grows (or stop following the one before)
        cmds.push(Command::Follow(tailing.then_some(log)));
    }
    app.goto(Screen::Live);
    app.back = Screen::Runs;
    // The run-log validator's warnings (file:line), as `report` prints them.
    if let Some(w) = warnings.first() {
        let more = warnings.len() - 1;
        app.flash = Some(if more > 0 {
            format!("warning: {w} (+{more} more: `scaling-lab report` lists them)")
        } else {
            format!("warning: {w}")
        });
    }
}

fn on_key(app: &mut App, k: Key, cmds: &mut Vec<Command>) {
    app.flash = None;
    // An open text input takes every key but ctrl-c.
    if app.prompt.is_some() && k != Key::Interrupt {
        prompt_key(app, k, cmds);
        return;
    }
    // A confirmation dialog captures every key.
    if let Some(c) = app.confirm {
        match k {
            Key::Char('y') | Key::Char('Y') | Key::Enter => {
                app.confirm = None;
                match c {
                    Confirm::Quit => quit(app, cmds, app.interrupted),
                    Confirm::CancelSweep => cmds.push(Command::CancelSweep),
                }
            }
            Key::Interrupt if c == Confirm::Quit => {
                app.confirm = None;
                quit(app, cmds, true);
            }
            Key::Char('n') | Key::Char('N') | Key::Esc | Key::Char('q') => {
                app.confirm = None;
                app.interrupted = false;
            }
            _ => {}
        }
        return;
    }
    // Global keys.
    match k {
        Key::Char('q') | Key::Interrupt => {
            if app.sweep_running() {
                app.confirm = Some(Confirm::Quit);
                app.interrupted = k == Key::Interrupt;
            } else {
                quit(app, cmds, k == Key::Interrupt);
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
            if app.live().is_some() {
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
        Key::Char('s') if app.sweep.is_some() && app.screen != Screen::Setup => {
            app.view = LiveView::Sweep;
            app.goto(Screen::Live);
            return;
        }
        _ => {}
    }
    match app.screen {
        Screen::Setup => setup_key(app, k, cmds),
        Screen::Live => live_key(app, k, cmds),
        Screen::Runs => runs_key(app, k, cmds),
        Screen::Meta => meta_key(app, k),
        Screen::Report => report_key(app, k),
        Screen::Compare => match k {
            Key::Esc => app.goto(Screen::Runs),
            Key::Char('[') | Key::Char(']') if !app.compare.runs.is_empty() => {
                // the readings follow through `request_analyses` (or the cache, at once)
                if let Err(e) = app.compare.step_target(k == Key::Char(']')) {
                    app.flash = Some(e);
                }
            }
            _ => {}
        },
        Screen::Help => help_key(app, k),
    }
}

/// A key for the open text input: edits it, or gives its text (Enter) to what it is for.
fn prompt_key(app: &mut App, k: Key, cmds: &mut Vec<Command>) {
    let Some(mut p) = app.prompt.take() else {
        return;
    };
    match p.input.key(k) {
        Edit::Editing => {
            p.error = None;
            app.prompt = Some(p);
        }
        Edit::Cancel => {}
        Edit::Accept => {
            let text = p.input.text.trim().to_string();
            let refused = match &p.for_ {
                PromptFor::Model => app.setup.set_model(&text).err(),
                PromptFor::Dataset => app.setup.set_dataset(&text).err(),
                PromptFor::SaveSetup => {
                    match app.setup.save_command(&text, &app.runs_dir) {
                        Ok(c) => cmds.push(c),
                        Err(e) => app.flash = Some(format!("not saved: {e}")),
                    }
                    None
                }
                PromptFor::SaveCalibrated(log) => {
                    match save_calibrated(app, &text, log.as_deref()) {
                        Ok(c) => cmds.push(c),
                        Err(e) => app.flash = Some(format!("not saved: {e}")),
                    }
                    None
                }
            };
            // a text that is no choice stays open to be corrected
            if let Some(e) = refused {
                p.error = Some(e);
                app.prompt = Some(p);
            }
        }
    }
}

/// Save as preset on Live: the calibrated study (the header after the calibration), every value
/// explicit — a sweep of it re-runs the same search without the calibration.
fn save_calibrated(app: &App, name: &str, log: Option<&Path>) -> Result<Command, String> {
    let l = app.live().ok_or("no run in Live")?;
    let h = l
        .header
        .as_ref()
        .filter(|_| l.calibrated.is_some())
        .ok_or("the calibration has not chosen the study yet")?;
    let mut p = h.preset.clone();
    // what it chose is now the study's own
    p.calibrate = None;
    let from = log.map_or_else(String::new, |l| {
        format!(" from the run log {}", l.display())
    });
    let comment = format!(
        "{name}: {}
saved by scaling-lab{from} (its calibration stage chose the target, ranges,          batch sizes and budget: docs/calibration.md)
a sweep of this preset re-runs the same          study (`scaling-lab sweep {name}`)",
        p.description
    );
    Ok(Command::SavePreset {
        name: name.to_string(),
        preset: Box::new(p),
        comment,
    })
}

fn help_key(app: &mut App, k: Key) {
    let s = &mut app.help_scroll;
    match k {
        Key::Esc | Key::Enter => app.screen = app.back,
        Key::Up => *s = s.saturating_sub(1),
        Key::Down => *s = s.saturating_add(1),
        Key::PageUp => *s = s.saturating_sub(10),
        Key::PageDown | Key::Space => *s = s.saturating_add(10),
        Key::Home => *s = 0,
        Key::End => *s = u16::MAX,
        _ => {}
    }
}

fn meta_key(app: &mut App, k: Key) {
    let n = app.live().map_or(0, |l| l.plan.batch_sizes.len());
    match k {
        Key::Left => app.meta_batch = app.meta_batch.saturating_sub(1),
        Key::Right => app.meta_batch = (app.meta_batch + 1).min(n.saturating_sub(1)),
        Key::Home => app.meta_batch = 0,
        Key::End => app.meta_batch = n.saturating_sub(1),
        Key::Esc | Key::Char('m') => app.screen = Screen::Live,
        _ => {}
    }
}

/// The report screen: scroll (↑↓ PgUp PgDn Home End, ←→ sideways), back to Live (Esc, r).
fn report_key(app: &mut App, k: Key) {
    let (y, x) = &mut app.report_scroll;
    match k {
        Key::Esc | Key::Char('r') => app.screen = Screen::Live,
        Key::Up => *y = y.saturating_sub(1),
        Key::Down => *y = y.saturating_add(1),
        Key::PageUp => *y = y.saturating_sub(10),
        Key::PageDown | Key::Space => *y = y.saturating_add(10),
        Key::Home => *y = 0,
        Key::End => *y = u16::MAX,
        Key::Left => *x = x.saturating_sub(10),
        Key::Right => *x = x.saturating_add(10),
        _ => {}
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
        Key::Enter
            if s.focus == SetupFocus::Fields
                && matches!(FIELDS[s.field], Field::Model | Field::Dataset) =>
        {
            // the inline editor on the model (`kind:key=value,…`) or the dataset
            app.prompt = Some(if FIELDS[s.field] == Field::Model {
                Prompt::new(PromptFor::Model, &s.model)
            } else {
                Prompt::new(PromptFor::Dataset, &s.dataset)
            });
        }
        Key::Char('w') => match s.problems().into_iter().find(|p| p.blocking) {
            Some(p) => app.flash = Some(format!("cannot save: {}", p.message)),
            None => app.prompt = Some(Prompt::new(PromptFor::SaveSetup, &s.study_name())),
        },
        Key::Char('e') => {
            if running {
                app.flash = Some(
                    "not while a sweep runs: the calibration would share its cores and time both wrongly"
                        .into(),
                );
            } else if s.auto(Field::BatchMax) || s.auto(Field::Budget) {
                app.flash = Some(
                    "this study's calibration chooses its batch sizes and budget: its duration is \
                     known once it has (Live)"
                        .into(),
                );
            } else if !s.calibrating {
                match s.config(&app.runs_dir) {
                    Some(cfg) if cfg.devices.is_cpu() => {
                        s.calibrating = true;
                        app.flash = Some(format!(
                            "calibrating {} (a few training steps, then cached)…",
                            cfg.preset.name
                        ));
                        cmds.push(Command::Calibrate(Box::new(cfg)));
                    }
                    Some(_) => {
                        app.flash = Some("wall-time bounds are calibrated on the CPU only".into())
                    }
                    None => {}
                }
            }
        }
        Key::Enter => {
            // (`sweep_active` until the last sweep's threads are joined: one sweep at a time)
            if running || app.sweep_active {
                app.flash = Some(
                    "a sweep is already running: watch it in Live (s) or cancel it there (C)"
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
                let mut live = LiveState::starting(&cfg, app.now);
                // the ETA's model until finished trials replace it
                live.layout = s.layout_calibration(&cfg);
                app.sweep = Some(live);
                app.view = LiveView::Sweep;
                app.meta_batch = 0;
                app.goto(Screen::Live);
                app.back = Screen::Setup;
                cmds.push(Command::Launch(Box::new(cfg)));
            }
        }
        Key::Esc if s.focus == SetupFocus::Fields => s.focus = SetupFocus::Presets,
        _ => {}
    }
}

fn live_key(app: &mut App, k: Key, cmds: &mut Vec<Command>) {
    let running = app.sweep_running();
    let on_sweep = app.viewing_sweep();
    if app.live().is_none() {
        return;
    }
    match k {
        Key::Char('t') => {
            app.charts = match app.charts {
                Charts::Both => Charts::Scaling,
                Charts::Scaling => Charts::Loss,
                Charts::Loss => Charts::Both,
            }
        }
        Key::Char('m') => {
            app.goto(Screen::Meta);
        }
        Key::Char('r') => {
            app.goto(Screen::Report);
        }
        Key::Tab => app.panel = (app.panel + 1) % 3,
        Key::BackTab => app.panel = (app.panel + 2) % 3,
        Key::Char('[') | Key::Char(']') if app.live_finished() => {
            // the reading follows through `request_analyses` (or the cache, at once)
            if let Some(Err(e)) = app.live_mut().map(|l| l.step_target(k == Key::Char(']'))) {
                app.flash = Some(e);
            }
        }
        Key::Up | Key::Down if on_sweep => {
            if let Some(l) = app.sweep.as_mut() {
                l.selected = if k == Key::Up {
                    l.selected.saturating_sub(1)
                } else {
                    (l.selected + 1).min(l.running.len().saturating_sub(1))
                };
            }
        }
        Key::Esc => {
            app.screen = if on_sweep && app.back != Screen::Runs {
                Screen::Setup
            } else {
                Screen::Runs
            };
            if app.screen == Screen::Runs {
                cmds.push(Command::ScanRuns);
            }
        }
        Key::Char('p') | Key::Char('c') | Key::Char('C') | Key::Char('x') if !on_sweep => {
            app.flash = Some(if running {
                "read-only view of a run log: s shows the running sweep, where p/c/C act".into()
            } else {
                "read-only view of a run log: pause/cancel act on a sweep started here".into()
            });
        }
        Key::Char('p') if running => {
            let paused = app.sweep.as_ref().is_some_and(|l| l.paused);
            cmds.push(Command::Pause(!paused));
        }
        Key::Char('c') if running => {
            let Some(l) = app.sweep.as_mut() else { return };
            match l.selected_trial() {
                Some(id) => {
                    l.user_cancelled.insert(id);
                    cmds.push(Command::CancelTrial(id));
                    let name = l
                        .running
                        .get(&id)
                        .map(|r| super::trial_label(&r.spec))
                        .unwrap_or_else(|| format!("#{id}"));
                    app.flash = Some(format!(
                        "cancelling trial {name} (recorded as cancelled, never counted)"
                    ));
                }
                None => app.flash = Some("no running trial to cancel".into()),
            }
        }
        Key::Char('C') | Key::Char('x') if running => app.confirm = Some(Confirm::CancelSweep),
        Key::Char('w') => {
            let Some(l) = app.live() else { return };
            match (&l.calibrated, &l.header) {
                (Some(_), Some(h)) => {
                    let log = l.plan.run_log.as_deref().map(std::path::PathBuf::from);
                    app.prompt = Some(Prompt::new(PromptFor::SaveCalibrated(log), &h.preset.name));
                }
                _ if l
                    .header
                    .as_ref()
                    .is_some_and(|h| h.preset.calibrate.is_some()) =>
                {
                    app.flash = Some(
                        "the calibration has not chosen the study yet: save it once it has".into(),
                    )
                }
                _ => {
                    app.flash = Some(
                        "this run's study has no calibration stage: its preset is the study \
                         (Setup's w saves an edited one)"
                            .into(),
                    )
                }
            }
        }
        Key::Char('p') | Key::Char('c') | Key::Char('C') | Key::Char('x') => {
            app.flash = Some("the sweep is not running".into());
        }
        _ => {}
    }
}

fn runs_key(app: &mut App, k: Key, cmds: &mut Vec<Command>) {
    let sweep_log = app
        .sweep
        .as_ref()
        .and_then(|s| s.plan.run_log.clone())
        .map(PathBuf::from);
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
                } else if sweep_log.as_deref() == Some(e.path.as_path()) {
                    // the sweep running here: show it live (controllable), not read-only
                    app.view = LiveView::Sweep;
                    app.goto(Screen::Live);
                    app.back = Screen::Runs;
                } else {
                    cmds.push(Command::OpenLog(e.path.clone()));
                }
            }
        }
        Key::Char('r') => {
            if let Some(e) = r.entries.get(r.selected) {
                if e.is_sweep_dir() {
                    // its array tasks run on Slurm: resume re-submits the unfinished ones
                    app.flash = Some(format!(
                        "a Slurm sweep: resume it with `scaling-lab sweep --resume {} --slurm --wait`",
                        e.path.display()
                    ));
                    return;
                }
                match e.status {
                    RunStatus::Interrupted if !app.sweep_active => {
                        let p = e.path.clone();
                        app.meta_batch = 0;
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
        Key::Esc => app.goto(if app.live().is_some() {
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
