//! README pictures rendered from real runs: the screens are drawn into a `TestBackend` and the
//! buffer is written as SVG (`svg::buffer_to_svg`).
//!
//! * Live mid-sweep and finished: an NQM sweep (closed form, a real workload that runs in well
//!   under a second) is run through the real scheduler into `runs_dir`; its events are folded into
//!   the app up to half of the plan (mid-sweep) and to the end (finished). If `runs_dir` already
//!   holds a complete non-NQM sweep whose analysis shows all three regimes (e.g. digits-MLP), the
//!   "finished" picture shows that one instead.
//! * Runs: the runs directory as scanned.
//! * Compare: the complete sweeps of one workload with the most distinct optimizers; if there are
//!   fewer than two, the NQM presets (sgd / momentum / adam) are run and compared.

use std::path::{Path, PathBuf};
use std::sync::mpsc::sync_channel;
use std::sync::Arc;

use anyhow::Context;
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use super::app::{update, update_settled, App, Charts, LiveState, LiveView, Msg, Screen};
use super::loader;
use super::theme::Theme;
use super::TuiOptions;
use crate::core::analysis::Regime;
use crate::core::events::SweepEvent;
use crate::core::runner::TrialRunner;
use crate::runlog::{read_run_log, LogStatus};
use crate::sweep::{runner_for, start_sweep, SweepConfig, SweepResult};
use crate::train::TrainOptions;
use crate::tui::key::Key;
use crate::workload::spec::Preset;

/// Size of the pictures (cells).
pub const SHOT_W: u16 = 120;
pub const SHOT_H: u16 = 36;

/// Draws the app into a `w`×`h` test terminal and returns the buffer.
pub fn render_app(app: &App, w: u16, h: u16) -> ratatui::buffer::Buffer {
    let mut t = Terminal::new(TestBackend::new(w, h)).expect("test backend");
    t.draw(|f| super::screens::draw(f, app)).expect("draw");
    t.backend().buffer().clone()
}

/// Runs a whole sweep of `preset` with `runner` on the real scheduler, handing each event to
/// `on_event` as it arrives; returns the configuration and the run-log path.
pub fn run_sweep_with(
    preset: Preset,
    preset_path: Option<PathBuf>,
    runs_dir: &Path,
    runner: Arc<dyn TrialRunner>,
    mut on_event: impl FnMut(SweepEvent),
) -> anyhow::Result<(SweepConfig, SweepResult)> {
    let cfg = SweepConfig::from_preset(preset, preset_path, runs_dir.to_path_buf());
    let (tx, rx) = sync_channel(4096);
    let handle = start_sweep(cfg.clone(), runner, tx, None)?;
    for ev in rx.iter() {
        on_event(ev);
    }
    let result = handle.join()?;
    Ok((cfg, result))
}

/// The NQM presets shortened for pictures: 4 trials per batch size and an evaluation every 5
/// steps (the run log header records exactly what ran).
fn picture_preset(mut p: Preset) -> Preset {
    p.sweep.trials_per_batch = p.sweep.trials_per_batch.min(4);
    p.workload.eval_every = p.workload.eval_every.max(5);
    p
}

/// The presets computed in closed form (the NQM's): real sweeps that run in well under a second.
fn closed_form_presets(presets_dir: &Path) -> Vec<(PathBuf, Preset)> {
    let (ps, _) = loader::load_presets(presets_dir, None);
    ps.into_iter()
        .filter(|p| p.preset.workload.closed_form())
        .map(|p| (p.path.unwrap_or_default(), p.preset))
        .collect()
}

fn has_three_regimes(a: &crate::core::analysis::Analysis) -> bool {
    let rs: Vec<Regime> = a.regimes.iter().map(|s| s.regime).collect();
    [Regime::Perfect, Regime::Diminishing, Regime::Maximal]
        .iter()
        .all(|r| rs.contains(r))
}

fn save(app: &App, out_dir: &Path, name: &str, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    let buf = render_app(app, SHOT_W, SHOT_H);
    let p = out_dir.join(format!("{name}.svg"));
    std::fs::write(&p, super::svg::buffer_to_svg(&buf))
        .with_context(|| format!("cannot write {}", p.display()))?;
    out.push(p);
    Ok(())
}

/// Renders setup.svg, live-mid.svg, live-finished.svg, runs.svg and compare.svg into `out_dir`
/// (sweeps it needs are run into `runs_dir`). Presets are read from the default presets directory.
pub fn render_screenshots(out_dir: &Path, runs_dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    render_screenshots_with(out_dir, runs_dir, &crate::workload::presets::presets_dir())
}

pub fn render_screenshots_with(
    out_dir: &Path,
    runs_dir: &Path,
    presets_dir: &Path,
) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(out_dir)
        .with_context(|| format!("cannot create {}", out_dir.display()))?;
    std::fs::create_dir_all(runs_dir)
        .with_context(|| format!("cannot create {}", runs_dir.display()))?;
    let mut out = Vec::new();
    let mut opts = TuiOptions::new(runs_dir.to_path_buf(), presets_dir.to_path_buf());
    opts.initial_preset = Some(super::DEFAULT_PRESET.into());
    let mut app = super::initial_app(&opts, Theme::default());
    update(&mut app, Msg::Resize(SHOT_W, SHOT_H));
    save(&app, out_dir, "setup", &mut out)?;
    let fast = closed_form_presets(presets_dir);
    let live_app = live_pictures(&app, &fast, runs_dir, out_dir, &mut out)?;
    save(
        &finished_app(&live_app, runs_dir),
        out_dir,
        "live-finished",
        &mut out,
    )?;
    let compared = compared_runs(&fast, runs_dir)?;
    runs_and_compare_pictures(&app, &compared, runs_dir, out_dir, &mut out)?;
    Ok(out)
}

/// Live mid-sweep: a real closed-form sweep (the momentum preset's, else the first of `fast`) run
/// through the scheduler into `runs_dir`, its events folded into `app` as they arrive; saves the
/// picture at half of the plan and returns the app at the sweep's end, its report in.
fn live_pictures(
    app: &App,
    fast: &[(PathBuf, Preset)],
    runs_dir: &Path,
    out_dir: &Path,
    out: &mut Vec<PathBuf>,
) -> anyhow::Result<App> {
    let (path, preset) = fast
        .iter()
        .find(|(_, p)| p.name.contains("momentum"))
        .or_else(|| fast.first())
        .cloned()
        .context("no NQM preset found in the presets directory (needed to render live pictures)")?;
    let runner = runner_for(&preset.workload, &TrainOptions::default())?;
    let preset = picture_preset(preset);
    let mut live_app = app.clone();
    let cfg0 = SweepConfig::from_preset(preset.clone(), Some(path.clone()), runs_dir.to_path_buf());
    // as Enter on Setup does: Live shows the starting sweep; `Planned` brings the workload
    live_app.sweep = Some(LiveState::starting(&cfg0, 0.0));
    live_app.view = LiveView::Sweep;
    live_app.screen = Screen::Live;
    update(&mut live_app, Msg::SweepStarted { run_log: None });
    let total = cfg0.batch_sizes.len() * cfg0.trials_per_batch;
    // the clock the UI would have seen: real time since the sweep started
    let t0 = std::time::Instant::now();
    let mut mid: Option<App> = None;
    let (_, result) = run_sweep_with(preset, Some(path), runs_dir, runner, |ev| {
        update(&mut live_app, Msg::Tick(t0.elapsed().as_secs_f64()));
        update_settled(&mut live_app, Msg::Sweep(ev));
        let (done, running) = live_app
            .live()
            .map(|l| (l.done_count(), l.running.len()))
            .unwrap_or((0, 0));
        if mid.is_none() && done * 2 >= total && running > 0 {
            mid = Some(live_app.clone());
        }
    })?;
    save(mid.as_ref().unwrap_or(&live_app), out_dir, "live-mid", out)?;
    // the way every sweep ends: the joined sweep's report
    let report = crate::report::of_sweep(&result, &crate::report::ReportOptions::default());
    update(
        &mut live_app,
        Msg::SweepEnded {
            error: None,
            report: Some(Box::new(report)),
        },
    );
    Ok(live_app)
}

/// Live finished: a complete sweep on real data whose analysis shows all three regimes when
/// `runs_dir` holds one, else the live sweep at its end; both charts.
fn finished_app(live_app: &App, runs_dir: &Path) -> App {
    let mut finished_app = live_app.clone();
    for e in &loader::scan_runs(runs_dir, None) {
        if let Ok(log) = read_run_log(&e.path) {
            let closed = log.header.preset.workload.closed_form();
            if !closed && log.status() == LogStatus::Complete && has_three_regimes(&log.analysis())
            {
                finished_app.log = Some(LiveState::from_log(&log, false, 0.0));
                finished_app.view = LiveView::Log;
                break;
            }
        }
    }
    finished_app.charts = Charts::Both;
    finished_app
}

/// The runs Compare shows: the complete sweeps of the one workload with the most distinct
/// optimizers; with fewer than two, the sweeps of up to three of `fast`, run now.
fn compared_runs(fast: &[(PathBuf, Preset)], runs_dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut groups: std::collections::BTreeMap<String, Vec<(PathBuf, String)>> = Default::default();
    for e in loader::scan_runs(runs_dir, None) {
        if e.status != super::app::RunStatus::Complete {
            continue;
        }
        let Ok(log) = read_run_log(&e.path) else {
            continue;
        };
        let w = &log.header.preset.workload;
        let key = format!(
            "{}|{}",
            w.dataset.as_ref().map(|d| d.label()).unwrap_or_default(),
            w.model.short_name()
        );
        let g = groups.entry(key).or_default();
        if !g.iter().any(|(_, o)| *o == e.optimizer) {
            g.push((e.path.clone(), e.optimizer.clone()));
        }
    }
    let mut best: Vec<PathBuf> = groups
        .values()
        .max_by_key(|g| g.len())
        .map(|g| g.iter().map(|(p, _)| p.clone()).collect())
        .unwrap_or_default();
    if best.len() < 2 {
        best.clear();
        for (path, preset) in fast.iter().take(3) {
            let runner = runner_for(&preset.workload, &TrainOptions::default())?;
            let (_, result) = run_sweep_with(
                picture_preset(preset.clone()),
                Some(path.clone()),
                runs_dir,
                runner,
                |_| {},
            )?;
            best.push(result.log_path);
        }
    }
    Ok(best)
}

/// Runs (scanned after every sweep above exists, the compared runs marked) and Compare (them).
fn runs_and_compare_pictures(
    app: &App,
    compared: &[PathBuf],
    runs_dir: &Path,
    out_dir: &Path,
    out: &mut Vec<PathBuf>,
) -> anyhow::Result<()> {
    let mut runs_app = app.clone();
    update(&mut runs_app, Msg::Runs(loader::scan_runs(runs_dir, None)));
    update(&mut runs_app, Msg::Key(Key::Char('3')));
    for p in compared.iter().take(3) {
        if let Some(i) = runs_app.runs.entries.iter().position(|e| &e.path == p) {
            runs_app
                .runs
                .marked
                .insert(runs_app.runs.entries[i].path.clone());
        }
    }
    save(&runs_app, out_dir, "runs", out)?;

    let (runs, _) = loader::load_compare(compared);
    let mut cmp_app = runs_app.clone();
    cmp_app.screen = Screen::Compare;
    update(&mut cmp_app, Msg::CompareLoaded(runs));
    save(&cmp_app, out_dir, "compare", out)?;
    Ok(())
}

/// Renders meta.svg: the metaparameter picture of a complete sweep in `runs_dir` (a momentum
/// sweep on real data when there is one, else the NQM momentum preset, run into `runs_dir`).
pub fn render_meta_screenshot(out_dir: &Path, runs_dir: &Path) -> anyhow::Result<PathBuf> {
    let presets_dir = crate::workload::presets::presets_dir();
    std::fs::create_dir_all(out_dir)
        .with_context(|| format!("cannot create {}", out_dir.display()))?;
    let mut opts = TuiOptions::new(runs_dir.to_path_buf(), presets_dir.clone());
    opts.initial_preset = Some(super::DEFAULT_PRESET.into());
    let mut app = super::initial_app(&opts, Theme::default());
    update(&mut app, Msg::Resize(SHOT_W, SHOT_H));
    let mut chosen: Option<PathBuf> = None;
    for e in loader::scan_runs(runs_dir, None) {
        if e.status == super::app::RunStatus::Complete && e.optimizer == "momentum" {
            let closed =
                read_run_log(&e.path).is_ok_and(|l| l.header.preset.workload.closed_form());
            if chosen.is_none() || !closed {
                chosen = Some(e.path.clone());
            }
            if !closed {
                break;
            }
        }
    }
    let path = match chosen {
        Some(p) => p,
        None => {
            let nqm = closed_form_presets(&presets_dir);
            let (path, preset) = nqm
                .iter()
                .find(|(_, p)| p.name.contains("momentum"))
                .cloned()
                .context("no NQM momentum preset found")?;
            let runner = runner_for(&preset.workload, &TrainOptions::default())?;
            run_sweep_with(picture_preset(preset), Some(path), runs_dir, runner, |_| {})?
                .1
                .log_path
        }
    };
    let log = read_run_log(&path)?;
    update(
        &mut app,
        Msg::LogOpened {
            log: Box::new(log),
            tailing: false,
        },
    );
    update(&mut app, Msg::Key(Key::Char('m')));
    let mut out = Vec::new();
    save(&app, out_dir, "meta", &mut out)?;
    out.pop().context("meta.svg not written")
}
