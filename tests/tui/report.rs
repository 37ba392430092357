//! One reading everywhere: the TUI shows exactly the numbers of `report --json` — for every
//! fixture log opened in Live, and for a fresh NQM sweep and a fresh digits sweep folded from the
//! engine's events as the TUI folds them. The Live state's cached report equals the report of the
//! log (`report LOG --json`, flags and notes included); the report screen (`r`) shows the text of
//! `report LOG` line for line; the status panel shows the per-B steps with the search-edge mark,
//! the fit and the notes count.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use scaling_lab::nqm::NqmRunner;
use scaling_lab::report::Report;
use scaling_lab::runlog::reader::read_run_log;
use scaling_lab::runlog::RunLog;
use scaling_lab::sweep::runner_for;
use scaling_lab::train::TrainOptions;
use scaling_lab::tui::app::{update, update_settled, App, LiveState, LiveView, Msg, Screen};
use scaling_lab::tui::key::Key;
use scaling_lab::tui::theme::Theme;
use scaling_lab::tui::{initial_app, TuiOptions};
use scaling_lab::workload::spec::OptimizerKind;

use crate::common::{root, run_ok};

fn app() -> App {
    let mut o = TuiOptions::new(PathBuf::from("runs"), root().join("presets"));
    o.initial_preset = None;
    initial_app(&o, Theme::default())
}

/// The rendered screen of `app` at `w`×`h`, one string per row (trailing blanks trimmed).
fn rows(app: &App, w: u16, h: u16) -> Vec<String> {
    let buf = scaling_lab::tui::screenshot::render_app(app, w, h);
    (0..h)
        .map(|y| {
            let mut s = String::new();
            for x in 0..w {
                s.push_str(buf[(x, y)].symbol());
            }
            s.trim_end().to_string()
        })
        .collect()
}

/// What the report screen shows of `app`'s Live run: every row's text inside the panel border (a
/// screen as wide as the longest line: the screen scrolls sideways on narrower ones).
fn report_screen(app: &App, lines: usize, width: usize) -> String {
    let mut a = app.clone();
    a.screen = Screen::Live;
    update(&mut a, Msg::Key(Key::Char('r')));
    assert_eq!(a.screen, Screen::Report);
    let (w, h) = (width as u16 + 4, lines as u16 + 6);
    rows(&a, w, h)
        .iter()
        .map(|r| {
            r.trim_start_matches('│')
                .trim_end_matches('│')
                .trim_end()
                .to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The TUI's reading of a Live state equals `report LOG` of its log: the cached report's JSON is
/// the binary's `report --json`, the report screen shows every line of `report`, the status panel
/// the steps (with †), the fit and the notes.
fn assert_tui_reads_like_the_cli(app: &App, l: &LiveState, log: &Path) {
    let p = log.display().to_string();
    let json: serde_json::Value = serde_json::from_str(&run_ok(&["report", &p, "--json"])).unwrap();
    assert_eq!(
        l.report.to_json(),
        json,
        "{p}: the TUI's report is not `report --json`"
    );
    let text = run_ok(&["report", &p]);
    let width = text.lines().map(|l| l.chars().count()).max().unwrap_or(80);
    let screen = report_screen(app, text.lines().count(), width);
    for line in text.lines() {
        assert!(
            screen.contains(line.trim_end()),
            "{p}: the report screen lacks {line:?}\n{screen}"
        );
    }
    // the status panel: steps with the edge mark, the fit, the notes
    let mut a = app.clone();
    a.screen = Screen::Live;
    let panel = rows(&a, 160, 60).join("\n");
    for (row, bp) in l.report.per_batch.iter().zip(&l.report.analysis.per_batch) {
        // the panel's first steps column is the best trial's
        if let Some(s) = row.best_trial_steps {
            let mark = if bp.at_search_edge { "†" } else { "" };
            assert!(
                panel.contains(&format!(" {s}{mark} ")),
                "{p}: B = {} steps {s}{mark} not on the panel\n{panel}",
                row.batch_size
            );
        }
    }
    if let Some((s_min, b_crit, r2)) = l.report.fit_numbers() {
        assert!(
            panel.contains(&format!("S_min {s_min} · B_crit {b_crit}")),
            "{panel}"
        );
        assert!(panel.contains(&format!("r² {r2}")), "{panel}");
    }
    let n = json["analysis"]["notes"].as_array().unwrap().len();
    if n > 0 {
        assert!(
            panel.contains(&format!("{n} note")),
            "{p}: {n} notes\n{panel}"
        );
    }
}

fn fixture_logs() -> Vec<PathBuf> {
    let mut v = vec![];
    for dir in ["tests/fixtures/valid", "tests/fixtures/golden"] {
        for e in std::fs::read_dir(root().join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "jsonl") {
                v.push(p);
            }
        }
    }
    v.sort();
    assert!(v.len() >= 8, "{v:?}");
    v
}

fn opened(log: &RunLog) -> App {
    let mut a = app();
    a.log = Some(LiveState::from_log(log, false, 0.0));
    a.view = LiveView::Log;
    a.screen = Screen::Live;
    a
}

#[test]
fn every_fixture_log_reads_the_same_in_the_tui_and_the_cli() {
    for path in fixture_logs() {
        let log = read_run_log(&path).unwrap();
        let a = opened(&log);
        let l = a.log.as_ref().unwrap();
        // the same report as the library's `report LOG`
        assert_eq!(l.report, Report::from_log(&log, 1024), "{}", path.display());
        assert_tui_reads_like_the_cli(&a, l, &path);
    }
}

/// A sweep run in this process, its events folded into the TUI's state as the runtime folds them;
/// then the end as the runtime ends it (`Msg::SweepEnded` with the joined sweep's report).
fn fold_sweep(
    cfg: scaling_lab::sweep::SweepConfig,
    runner: Arc<dyn scaling_lab::core::runner::TrialRunner>,
) -> (App, PathBuf) {
    let mut a = app();
    a.sweep = Some(LiveState::starting(&cfg, 0.0));
    a.view = LiveView::Sweep;
    a.screen = Screen::Live;
    update(&mut a, Msg::SweepStarted { run_log: None });
    let (tx, rx) = std::sync::mpsc::sync_channel(4096);
    let h = scaling_lab::sweep::start_sweep(cfg, runner, tx, None).unwrap();
    let path = h.log_path().to_path_buf();
    for ev in rx.iter() {
        // the analyses it asks for run at once (the runtime runs them on its worker)
        update_settled(&mut a, Msg::Sweep(ev));
    }
    let result = h.join().unwrap();
    // the folded report (no wall time yet: the events do not carry it) reads like the log
    let log = read_run_log(&path).unwrap();
    let folded = a.sweep.as_ref().unwrap().report.clone();
    let mut expected = Report::from_log(&log, 1024);
    expected.wall_s = None;
    assert_eq!(folded, expected, "the report folded from the events");
    let report = scaling_lab::report::of_sweep(&result, &Default::default());
    update(
        &mut a,
        Msg::SweepEnded {
            error: None,
            report: Some(Box::new(report)),
        },
    );
    (a, path)
}

#[test]
fn a_fresh_nqm_sweep_reads_the_same_in_the_tui_and_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let mut preset = common::nqm_preset(OptimizerKind::Momentum);
    preset.search.one_minus_momentum = Some([1e-2, 0.5]);
    let mut cfg = common::sweep_config(preset, dir.path());
    cfg.batch_sizes = vec![4, 16, 64, 256, 1024];
    cfg.trials_per_batch = 5;
    let (a, path) = fold_sweep(cfg, Arc::new(NqmRunner::new()));
    let l = a.sweep.as_ref().unwrap();
    assert_eq!(
        l.report,
        Report::from_log(&read_run_log(&path).unwrap(), 1024)
    );
    assert_tui_reads_like_the_cli(&a, l, &path);
}

#[test]
fn a_fresh_digits_sweep_reads_the_same_in_the_tui_and_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let (_, preset) = scaling_lab::workload::presets::find_preset("digits-mlp-momentum").unwrap();
    let mut cfg = common::sweep_config(preset, dir.path());
    cfg.batch_sizes = vec![16, 64, 256];
    cfg.trials_per_batch = 3;
    cfg.concurrency = 1;
    cfg.preset.sweep.auto_concurrency = false;
    let runner = runner_for(&cfg.preset.workload, &TrainOptions::default()).unwrap();
    let (a, path) = fold_sweep(cfg, runner);
    let l = a.sweep.as_ref().unwrap();
    let from_log = Report::from_log(&read_run_log(&path).unwrap(), 1024);
    assert_eq!(l.report, from_log);
    assert!(
        from_log.projections.is_some(),
        "a data sweep has a projection"
    );
    assert_tui_reads_like_the_cli(&a, l, &path);
}

/// The target moved along the ladder in the TUI (`[` `]` on a finished Live screen)
/// reads the numbers of `report LOG --target T --json` — one analysis — at every rung, and
/// stepping back shows the rung's reading again (from the cache) unchanged.
#[test]
fn a_moved_target_reads_the_same_in_the_tui_and_the_cli() {
    for name in [
        "tests/fixtures/valid/nqm-sgd.jsonl",
        "tests/fixtures/golden/digits-momentum-2workers.jsonl",
    ] {
        let path = root().join(name);
        let log = read_run_log(&path).unwrap();
        let mut a = opened(&log);
        let goal = log.header.preset.workload.target.value;
        let mut seen = Vec::new();
        // up the ladder to its loosest rung, then back down to the goal
        for k in ['[', '[', '[', ']', ']', ']'] {
            update_settled(&mut a, Msg::Key(Key::Char(k)));
            let l = a.log.as_ref().unwrap();
            assert!(!l.updating(), "{name}: settled");
            let t = l.report.analysis.target.unwrap().value;
            assert_eq!(
                Some(t),
                l.target_value(),
                "{name}: the report is of the target shown"
            );
            let p = path.display().to_string();
            let json: serde_json::Value = serde_json::from_str(&run_ok(&[
                "report",
                &p,
                "--target",
                &t.to_string(),
                "--json",
            ]))
            .unwrap();
            assert_eq!(l.report.to_json(), json, "{name} at {t}");
            seen.push(t);
        }
        assert!(seen[0] > goal && seen[1] > seen[0], "{name}: {seen:?}");
        assert_eq!(seen[5], goal, "{name}: back at the goal: {seen:?}");
        assert_eq!(seen[3], seen[1], "{name}: {seen:?}");
        // back at the goal: today's report of the log
        assert_eq!(
            a.log.as_ref().unwrap().report,
            Report::from_log(&log, 1024),
            "{name}"
        );
    }
}
