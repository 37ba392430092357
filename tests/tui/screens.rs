//! Snapshot tests of every screen at 80×24, 120×40 and 160×48 (ratatui TestBackend + insta), driven by a
//! scripted event sequence, plus degraded sizes down to 20×5.

use std::path::PathBuf;

use crate::support::*;
use scaling_lab::tui::app::{update, update_settled, App, CompareRun, Msg, RunEntry, RunStatus};
use scaling_lab::tui::key::Key;
use scaling_lab::workload::spec::OptimizerKind;

const SIZES: [(u16, u16); 3] = [(80, 24), (120, 40), (160, 48)];

fn snap(name: &str, app: &App) {
    for (w, h) in SIZES {
        let text = render_text(app, w, h);
        insta::assert_snapshot!(format!("{name}_{w}x{h}"), text);
    }
}

#[test]
fn setup_screen() {
    let mut a = app();
    snap("setup", &a);
    // with an inline error (3 workers)
    update(&mut a, Msg::Key(Key::Tab));
    update(&mut a, Msg::Key(Key::Down));
    update(&mut a, Msg::Key(Key::Down));
    update(&mut a, Msg::Key(Key::Right));
    update(&mut a, Msg::Key(Key::Right));
    let text = render_text(&a, 80, 24);
    assert!(
        text.contains("divisible") && text.contains("shard"),
        "{text}"
    );
    snap("setup_invalid", &a);
}

#[test]
fn live_mid_sweep() {
    let a = live_app(|a| {
        a.live().is_some_and(|l| {
            l.done_count() >= l.plan.total_trials / 2
                && l.running.values().any(|r| r.loss.len() >= 6)
        })
    });
    let text = render_text(&a, 80, 24);
    assert!(text.contains("trials finished: 120/240"), "{text}");
    snap("live_mid", &a);
}

#[test]
fn live_finished_shows_three_regimes() {
    let a = live_app(|_| false);
    let text = render_text(&a, 160, 48);
    assert!(text.contains("sweep complete"), "{text}");
    assert!(text.contains("perfect scaling"), "{text}");
    assert!(text.contains("diminishing returns"), "{text}");
    assert!(text.contains("maximal data parallelism"), "{text}");
    assert!(
        text.contains("×"),
        "the all-diverged batch size is marked: {text}"
    );
    snap("live_finished", &a);
}

/// `[` `[` `]` on a finished Live screen — the target moved one rung looser than the
/// goal; the chart, fit, regimes and table read it, the title says where on the ladder.
#[test]
fn live_finished_target_moved() {
    // a real (NQM) log: the scripted sweep's sparse curves do not meet looser targets as a
    // sweep's would
    let log = scaling_lab::runlog::reader::read_run_log(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/valid/nqm-sgd.jsonl"),
    )
    .unwrap();
    let mut a = app();
    update_settled(
        &mut a,
        Msg::LogOpened {
            log: Box::new(log),
            tailing: false,
        },
    );
    for k in ['[', '[', ']'] {
        update_settled(&mut a, Msg::Key(Key::Char(k)));
    }
    let l = a.live().unwrap();
    let t = l.target.expect("moved");
    assert!(t > l.goal().unwrap());
    assert_eq!(l.report.analysis.target.unwrap().value, t);
    let text = render_text(&a, 160, 48);
    assert!(text.contains(&format!("target {t} of ladder")), "{text}");
    snap("live_finished_target", &a);
}

#[test]
fn live_charts_toggle() {
    let mut a = live_app(|a| a.live().is_some_and(|l| l.done_count() >= 40));
    update(&mut a, Msg::Key(Key::Char('t')));
    snap("live_scaling_only", &a);
    update(&mut a, Msg::Key(Key::Char('t')));
    snap("live_loss_only", &a);
}

#[test]
fn quit_confirmation_dialog() {
    let mut a = live_app(|a| a.live().is_some_and(|l| l.done_count() >= 10));
    update(&mut a, Msg::Key(Key::Char('q')));
    snap("live_quit_confirm", &a);
}

pub fn runs_fixture() -> Vec<RunEntry> {
    let e =
        |name: &str, opt: &str, status, done: usize, s_min: Option<f64>, b_crit: Option<f64>| {
            RunEntry {
                path: PathBuf::from(format!("runs/2026-01-0{done}T10-00-00-{name}.jsonl")),
                preset: name.into(),
                optimizer: opt.into(),
                started: format!("2026-01-0{}T10:00:00+01:00", done % 9 + 1),
                status,
                done: done * 8,
                planned: 64,
                s_min,
                b_crit,
                s_min_ci: s_min.map(|v| [v * 0.8, v * 1.3]),
                b_crit_ci: b_crit.map(|v| [v * 0.6, v * 1.9]),
                error: None,
                name: format!("2026-01-0{done}T10-00-00-{name}"),
                precision: "fp32".into(),
                devices: "cpu × 1 worker".into(),
                b_range: Some((8, 1024)),
                duration_s: Some(done as f64 * 37.0),
                job: None,
            }
        };
    let mut v = vec![
        e(
            "digits-mlp-momentum",
            "momentum",
            RunStatus::Running,
            3,
            None,
            None,
        ),
        e(
            "digits-mlp-adam",
            "adam",
            RunStatus::Complete,
            8,
            Some(64.2),
            Some(180.0),
        ),
        e(
            "digits-mlp-sgd",
            "sgd",
            RunStatus::Interrupted,
            5,
            Some(220.0),
            Some(95.5),
        ),
        e(
            "nqm-momentum",
            "momentum",
            RunStatus::Complete,
            8,
            Some(1520.0),
            Some(2100.0),
        ),
    ];
    v.push(RunEntry::unreadable(
        PathBuf::from("runs/broken.jsonl"),
        "broken".into(),
        "runs/broken.jsonl:1: not a run log header".into(),
    ));
    v
}

#[test]
fn runs_screen() {
    let mut a = app();
    update(&mut a, Msg::Key(Key::Char('3')));
    update(&mut a, Msg::Runs(runs_fixture()));
    update(&mut a, Msg::Key(Key::Down));
    update(&mut a, Msg::Key(Key::Space));
    update(&mut a, Msg::Key(Key::Space));
    snap("runs", &a);
}

/// Three scripted runs of the default preset, one per optimizer, each with its own curve.
pub fn compare_runs(a: &App) -> Vec<CompareRun> {
    let mut runs = Vec::new();
    for (i, opt) in [
        OptimizerKind::Sgd,
        OptimizerKind::Momentum,
        OptimizerKind::Adam,
    ]
    .into_iter()
    .enumerate()
    {
        let mut cfg = config(a);
        cfg.preset.workload.optimizer = opt;
        // a different scripted curve per optimizer: scale the steps
        let mut recs = scripted_records(&cfg);
        for r in recs.iter_mut() {
            if let scaling_lab::core::trial::Outcome::Reached { step } = &mut r.outcome.outcome {
                *step = (*step * (4 - i as u64) / 2).div_ceil(5) * 5;
            }
        }
        runs.push(CompareRun::new(
            format!("digits-mlp-{}", opt.name()),
            PathBuf::from(format!("runs/{i}.jsonl")),
            &cfg.preset,
            recs,
        ));
    }
    runs
}

#[test]
fn compare_screen() {
    let mut a = app();
    let runs = compare_runs(&a);
    update(&mut a, Msg::Key(Key::Char('4')));
    update(&mut a, Msg::CompareLoaded(runs));
    snap("compare", &a);
}

#[test]
fn help_screen() {
    let mut a = app();
    update(&mut a, Msg::Key(Key::Char('?')));
    let text = render_text(&a, 160, 48);
    for b in scaling_lab::tui::keymap::KEYS {
        let k = b.keys;
        assert!(text.contains(k), "help lacks {k}");
    }
    snap("help", &a);
}

#[test]
fn tiny_terminals_show_a_message_not_a_panic() {
    let a = live_app(|a| a.live().is_some_and(|l| l.done_count() >= 5));
    let text = render_text(&a, 20, 5);
    assert!(text.contains("too small"), "{text}");
    insta::assert_snapshot!("tiny_20x5", text);
    // every size from 1×1 up to just above the minimum renders without panicking
    for w in [1u16, 2, 5, 10, 20, 40, 59, 60, 61, 70] {
        for h in [1u16, 2, 3, 5, 10, 15, 16, 17, 20] {
            for screen in ['1', '2', '3', '4', '?'] {
                let mut b = a.clone();
                update(&mut b, Msg::Key(Key::Char(screen)));
                let _ = render_text(&b, w, h);
            }
        }
    }
}

#[test]
fn no_color_renders_without_colours() {
    let mut a = live_app(|_| false);
    a.theme = scaling_lab::tui::theme::Theme::monochrome();
    let buf = scaling_lab::tui::screenshot::render_app(&a, 80, 24);
    for c in buf.content() {
        assert_eq!(c.fg, ratatui::style::Color::Reset, "{:?}", c);
        assert_eq!(c.bg, ratatui::style::Color::Reset);
    }
}

#[test]
fn metaparameter_view() {
    let mut a = live_app(|_| false);
    update(&mut a, Msg::Key(Key::Char('m')));
    snap("meta", &a);
}

#[test]
fn help_scrolled() {
    let mut a = app();
    update(&mut a, Msg::Key(Key::Char('?')));
    update(&mut a, Msg::Key(Key::PageDown));
    snap("help_scrolled", &a);
}

#[test]
fn cancel_dialog_shows_its_keys() {
    let mut a = live_app(|a| a.live().is_some_and(|l| l.done_count() >= 10));
    update(&mut a, Msg::Key(Key::Char('C')));
    let text = render_text(&a, 80, 24);
    assert!(text.contains("y yes · n no"), "{text}");
    assert!(text.contains("keep running"), "{text}");
    snap("live_cancel_confirm", &a);
}

#[test]
fn log_opened_over_a_running_sweep() {
    let mut a = live_app(|a| {
        a.live()
            .is_some_and(|l| l.done_count() == 6 && !l.running.is_empty())
    });
    let log = log_with(&a, "runs/2025-12-24T09-00-00-digits-mlp-sgd.jsonl", 40);
    // once its analysis landed (the runtime runs it on its worker)
    update_settled(
        &mut a,
        Msg::LogOpened {
            log: Box::new(log),
            tailing: false,
        },
    );
    snap("live_log_over_sweep", &a);
}
