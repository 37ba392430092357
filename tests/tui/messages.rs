//! A sweep as the TUI folds its messages: the engine's events into Live (counts, throughput, ETA,
//! cancel and ctrl-c, a failed launch, a resume, another log opened mid-sweep), what a finished
//! sweep shows per batch size, the footer and help that follow the state, and the metaparameter
//! view. Message in → state out; no terminal, no threads.

use std::path::PathBuf;

use crate::support::*;
use scaling_lab::core::events::{SweepEvent, TrialEvent};
use scaling_lab::core::trial::{Outcome, TrialOutcome};
use scaling_lab::tui::app::{update, App, Command, Confirm, Field, LiveView, Msg, Screen, FIELDS};
use scaling_lab::tui::key::Key;
use scaling_lab::tui::keymap::{footer_keys, KEYS};

const SWEEP_LOG: &str = "runs/2026-01-01T10-00-00-digits-mlp-momentum.jsonl";

fn key(a: &mut App, k: Key) -> Vec<Command> {
    update(a, Msg::Key(k))
}

fn mid_sweep() -> App {
    live_app(|a| {
        a.live()
            .is_some_and(|l| l.done_count() == 6 && !l.running.is_empty())
    })
}

#[test]
fn another_log_opened_keeps_the_sweep_one_key_away_and_controllable() {
    let mut a = mid_sweep();
    let other = log_with(&a, "runs/other.jsonl", 4);
    update(
        &mut a,
        Msg::LogOpened {
            log: Box::new(other),
            tailing: false,
        },
    );
    assert_eq!(a.view, LiveView::Log);
    assert_eq!(a.live().unwrap().done_count(), 4);
    // the sweep is still folded and shown in the header, with the key that brings it back
    let text = render_text(&a, 100, 30);
    let head = text.lines().next().unwrap();
    assert!(head.contains("● digits-mlp-momentum 6/240 (s)"), "{head}");
    // its controls are not applied to a log
    assert!(key(&mut a, Key::Char('p')).is_empty());
    assert!(a
        .flash
        .as_deref()
        .unwrap()
        .contains("s shows the running sweep"));
    // q asks first although a log is shown
    assert!(key(&mut a, Key::Char('q')).is_empty());
    assert_eq!(a.confirm, Some(Confirm::Quit));
    key(&mut a, Key::Esc);
    // s: back to the sweep, controllable
    assert!(key(&mut a, Key::Char('s')).is_empty());
    assert_eq!((a.screen, a.view), (Screen::Live, LiveView::Sweep));
    assert_eq!(key(&mut a, Key::Char('p')), vec![Command::Pause(true)]);
    // events kept arriving while the log was shown
    let before = a.sweep.as_ref().unwrap().done_count();
    assert_eq!(before, 6);
}

#[test]
fn reopening_the_sweeps_own_log_shows_the_live_sweep() {
    let mut a = mid_sweep();
    update(&mut a, Msg::Runs(vec![]));
    // from Runs: Enter on the sweep's own entry needs no file read at all
    update(
        &mut a,
        Msg::Runs(vec![scaling_lab::tui::app::RunEntry {
            path: PathBuf::from(SWEEP_LOG),
            status: scaling_lab::tui::app::RunStatus::Running,
            ..Default::default()
        }]),
    );
    key(&mut a, Key::Char('3'));
    assert!(key(&mut a, Key::Enter).is_empty());
    assert_eq!((a.screen, a.view), (Screen::Live, LiveView::Sweep));
    assert!(!a.live().unwrap().read_only());
    // and a LogOpened of that path (e.g. --open) does the same
    let own = log_with(&a, SWEEP_LOG, 3);
    update(
        &mut a,
        Msg::LogOpened {
            log: Box::new(own),
            tailing: true,
        },
    );
    assert_eq!(a.view, LiveView::Sweep);
    assert!(a.log.is_none());
    assert_eq!(key(&mut a, Key::Char('p')), vec![Command::Pause(true)]);
}

#[test]
fn resume_starts_with_the_logged_trials_on_the_chart() {
    let mut a = app();
    let log = log_with(&a, "runs/b.jsonl", 20);
    update(&mut a, Msg::Resuming(Box::new(log)));
    assert_eq!(a.screen, Screen::Live);
    let l = a.live().unwrap();
    assert_eq!(l.done_count(), 20);
    // at once: the raw points (the analysis of them runs off the UI task and lands later)
    assert!(
        !l.chart().per_batch.is_empty(),
        "chart holds the logged trials"
    );
    assert!(l.updating());
    assert_eq!(
        l.eta(10.0),
        None,
        "no ETA from trials of an earlier session"
    );
    // the sweep's own Planned (already_done = 20) keeps them
    let cfg = config(&a);
    let mut ev = scripted_events(&cfg);
    let SweepEvent::Planned(plan) = &mut ev[0] else {
        panic!()
    };
    plan.already_done = 20;
    plan.run_log = Some("runs/b.jsonl".into());
    update(&mut a, Msg::SweepStarted { run_log: None });
    update(&mut a, Msg::Sweep(ev[0].clone()));
    let l = a.live().unwrap();
    assert_eq!(l.done_count(), 20);
    // every stage's plan in the total, each stage against its own in the split
    assert_eq!(l.finished_text(), "trials finished: 20/340");
    assert_eq!(
        l.stages_text().as_deref(),
        Some("search 20/240 · confirm 0/100")
    );
    // a failure to start goes back to Runs with the reason
    let mut b = app();
    b.back = Screen::Runs;
    let log = log_with(&b, "runs/c.jsonl", 2);
    update(&mut b, Msg::Resuming(Box::new(log)));
    update(
        &mut b,
        Msg::LaunchFailed("the sweep did not resume: locked".into()),
    );
    assert_eq!(b.screen, Screen::Runs);
    assert!(b.sweep.is_none());
    assert!(b.flash.as_deref().unwrap().contains("locked"));
}

#[test]
fn launch_failure_returns_to_setup_with_the_reason() {
    let mut a = app();
    launch(&mut a);
    assert_eq!(a.screen, Screen::Live);
    update(
        &mut a,
        Msg::LaunchFailed("the sweep did not start: no data".into()),
    );
    assert_eq!(a.screen, Screen::Setup);
    assert!(a.sweep.is_none());
    assert!(a.flash.as_deref().unwrap().contains("no data"));
}

fn cancelled(id: u64) -> SweepEvent {
    SweepEvent::Trial {
        trial_id: id,
        event: TrialEvent::Finished {
            outcome: Box::new(TrialOutcome {
                wall_s: 0.1,
                ..TrialOutcome::bare(Outcome::Cancelled { step: 3 }, 3)
            }),
        },
    }
}

#[test]
fn cancel_counts_agree_with_the_log() {
    let mut a = mid_sweep();
    let id = *a.live().unwrap().running.keys().next().unwrap();
    let before = a.live().unwrap().done_count();
    // stopped by a sweep-level cancel: not written to the log, runs again on resume
    update(&mut a, Msg::Sweep(cancelled(id)));
    assert_eq!(a.live().unwrap().done_count(), before);
    // cancelled by the user (c): written to the log as cancelled, counted as done
    let mut b = mid_sweep();
    let id = b.live().unwrap().selected_trial().unwrap();
    assert_eq!(key(&mut b, Key::Char('c')), vec![Command::CancelTrial(id)]);
    update(&mut b, Msg::Sweep(cancelled(id)));
    update(&mut b, Msg::Sweep(SweepEvent::Saved { trial_id: id }));
    assert_eq!(b.live().unwrap().done_count(), before + 1);
    // a queued trial skipped by the scheduler is saved without a Finished event
    update(&mut b, Msg::Sweep(SweepEvent::Saved { trial_id: 63 }));
    assert_eq!(b.live().unwrap().done_count(), before + 2);
}

#[test]
fn examples_per_s_holds_its_last_value_between_trials() {
    // stop right after a trial finished and the next one started, before its first step
    let a = live_app(|a| {
        a.live().is_some_and(|l| {
            l.done_count() >= 2
                && l.running.values().all(|r| r.last.is_none())
                && !l.running.is_empty()
        })
    });
    let l = a.live().unwrap();
    assert!(l.running.values().all(|r| r.last.is_none()));
    assert!(l.examples_per_s() > 1000.0, "{}", l.examples_per_s());
}

#[test]
fn eta_stands_still_while_paused() {
    let mut a = mid_sweep();
    update(&mut a, Msg::Tick(10.0));
    update(&mut a, Msg::Sweep(SweepEvent::Paused { paused: true }));
    let eta0 = a.live().unwrap().eta(a.now).unwrap();
    update(&mut a, Msg::Tick(70.0));
    let eta1 = a.live().unwrap().eta(a.now).unwrap();
    assert_eq!(eta0, eta1);
    update(&mut a, Msg::Sweep(SweepEvent::Paused { paused: false }));
    update(&mut a, Msg::Tick(71.0));
    let eta2 = a.live().unwrap().eta(a.now).unwrap();
    assert!(
        eta2 < eta0 * 1.5,
        "{eta2} vs {eta0}: paused time not counted"
    );
}

#[test]
fn ctrl_c_marks_the_exit_as_interrupted() {
    let mut a = app();
    assert_eq!(key(&mut a, Key::Interrupt), vec![Command::Quit]);
    assert!(a.quit && a.interrupted);
    let mut b = app();
    assert_eq!(key(&mut b, Key::Char('q')), vec![Command::Quit]);
    assert!(b.quit && !b.interrupted);
    // while a sweep runs: ctrl-c asks, a second ctrl-c forces the quit
    let mut c = mid_sweep();
    assert!(key(&mut c, Key::Interrupt).is_empty());
    assert_eq!(c.confirm, Some(Confirm::Quit));
    assert_eq!(
        key(&mut c, Key::Interrupt),
        vec![Command::CancelSweep, Command::Quit]
    );
    assert!(c.interrupted);
}

fn footer_has(a: &App, k: &str) -> bool {
    footer_keys(a, 200).iter().any(|(key, _)| *key == k)
}

#[test]
fn footer_comes_from_the_key_table_and_follows_the_state() {
    let a = app();
    assert!(footer_has(&a, "r"), "Setup offers reset");
    assert!(KEYS.iter().any(|b| b.place == "Setup" && b.keys == "r"));
    let mid = mid_sweep();
    assert!(footer_has(&mid, "p") && footer_has(&mid, "C"));
    let done = live_app(|_| false);
    assert!(done.live().unwrap().done);
    let mut ended = done.clone();
    update(
        &mut ended,
        Msg::SweepEnded {
            error: None,
            report: None,
        },
    );
    assert!(!footer_has(&ended, "p"), "no pause after the sweep ended");
    assert!(!footer_has(&ended, "C"));
    assert!(footer_has(&ended, "m"));
    // every footer entry is in the help table
    for (k, d) in footer_keys(&mid, 200) {
        assert!(KEYS.iter().any(|b| b.footer == Some((k, d))));
    }
    // at 80 columns the footer still fits and keeps quit
    let f = footer_keys(&mid, 80);
    let w: usize = f
        .iter()
        .map(|(k, d)| k.chars().count() + d.chars().count() + 3)
        .sum();
    assert!(w <= 80, "{w}");
    assert_eq!(f.last(), Some(&("q", "quit")));
}

#[test]
fn help_scrolls_to_its_end_at_80x24() {
    let mut a = app();
    key(&mut a, Key::Char('?'));
    let first = render_text(&a, 80, 24);
    assert!(first.contains("PgDn"), "{first}");
    assert!(!first.contains("B_crit/B) to S(B);"));
    for _ in 0..10 {
        key(&mut a, Key::PageDown);
    }
    let last = render_text(&a, 80, 24);
    assert!(last.contains("B_crit/B) to S(B);"), "{last}");
    assert!(last.contains("feasible"), "{last}");
    key(&mut a, Key::Home);
    assert_eq!(render_text(&a, 80, 24), first);
}

#[test]
fn setup_title_follows_the_optimizer_and_concurrency_is_editable() {
    let mut a = app();
    key(&mut a, Key::Tab);
    key(&mut a, Key::Right); // optimizer: momentum → nesterov
    assert_eq!(a.setup.study_name(), "digits-mlp-nesterov");
    assert!(render_text(&a, 120, 40).contains("digits-mlp-nesterov"));
    let conc = FIELDS
        .iter()
        .position(|f| *f == Field::Concurrency)
        .unwrap();
    for _ in 0..conc {
        key(&mut a, Key::Down);
    }
    let c0 = a.setup.concurrency;
    key(&mut a, Key::Right);
    assert_eq!(a.setup.concurrency, c0 + 1);
    let cmds = key(&mut a, Key::Enter);
    let [Command::Launch(cfg)] = cmds.as_slice() else {
        panic!("{cmds:?}")
    };
    assert_eq!(cfg.concurrency, c0 + 1);
    assert_eq!(cfg.preset.name, "digits-mlp-nesterov");
    assert_eq!(
        cfg.preset.workload.optimizer,
        scaling_lab::workload::spec::OptimizerKind::Nesterov
    );
}

#[test]
fn setup_estimates_the_duration_from_earlier_runs() {
    let mut a = app();
    assert!(a.setup.estimate_s(&a.runs.entries).is_none());
    update(
        &mut a,
        Msg::Runs(vec![scaling_lab::tui::app::RunEntry {
            path: PathBuf::from("runs/x.jsonl"),
            preset: "digits-mlp-momentum".into(),
            done: 10,
            planned: 64,
            duration_s: Some(20.0),
            ..Default::default()
        }]),
    );
    let est = a.setup.estimate_s(&a.runs.entries).unwrap();
    let want = 2.0 * a.setup.total_trials() as f64 / a.setup.effective_concurrency() as f64;
    assert!((est - want).abs() < 1e-9, "{est} vs {want}");
    assert!(render_text(&a, 120, 40).contains("≈"));
}

#[test]
fn one_batch_size_is_one_size() {
    let mut a = app();
    a.setup.b_min = 64;
    a.setup.b_max = 64;
    let text = render_text(&a, 120, 40);
    assert!(
        text.contains("1 size") && !text.contains("1 sizes"),
        "{text}"
    );
}

#[test]
fn after_the_sweep_b_simple_is_the_best_trials_median_not_the_last_trial() {
    let a = live_app(|_| false);
    let l = a.live().unwrap();
    assert!(l.done);
    assert_eq!(l.b_simple_live, None, "no running trial, no live value");
    let (med, lo, hi) = l.b_simple_spread().unwrap();
    assert!(lo <= med && med <= hi);
    let np = l.analysis().noise_prediction.expect("noise prediction");
    assert!((med - np).abs() < 1e-9 * np.abs().max(1.0), "{med} vs {np}");
}

#[test]
fn finished_sweep_shows_each_batch_sizes_best_trial() {
    let a = live_app(|_| false);
    let best = a.live().unwrap().best_curves();
    let reached = a
        .live()
        .unwrap()
        .analysis()
        .per_batch
        .iter()
        .filter(|p| p.steps.is_some())
        .count();
    assert_eq!(best.len(), reached);
    assert!(best.iter().all(|c| c.points.len() >= 2));
    let text = render_text(&a, 160, 48);
    assert!(text.contains("of each B's best trial"), "{text}");
    // an opened log shows the same
    let mut b = app();
    let log = log_with(&b, "runs/x.jsonl", 64);
    update(
        &mut b,
        Msg::LogOpened {
            log: Box::new(log),
            tailing: false,
        },
    );
    assert!(render_text(&b, 160, 48).contains("of each B's best trial"));
}

#[test]
fn metaparameter_view_from_live_and_from_a_log() {
    let mut a = live_app(|_| false);
    key(&mut a, Key::Char('m'));
    assert_eq!(a.screen, Screen::Meta);
    let text = render_text(&a, 160, 48);
    assert!(text.contains("B=8"), "{text}");
    assert!(text.contains("★"), "{text}");
    assert!(text.contains("×"), "{text}");
    assert!(text.contains("1−γ"), "{text}");
    key(&mut a, Key::Right);
    assert_eq!(a.meta_batch, 1);
    key(&mut a, Key::Esc);
    assert_eq!(a.screen, Screen::Live);
    // from an opened log
    let mut b = app();
    let log = log_with(&b, "runs/x.jsonl", 30);
    update(
        &mut b,
        Msg::LogOpened {
            log: Box::new(log),
            tailing: false,
        },
    );
    key(&mut b, Key::Char('m'));
    assert_eq!(b.screen, Screen::Meta);
    assert!(render_text(&b, 80, 24).contains("★"));
}

#[test]
fn no_color_lines_differ_by_glyph() {
    let mut a = live_app(|_| false);
    a.theme = scaling_lab::tui::theme::Theme::monochrome();
    key(&mut a, Key::Char('t')); // scaling only: room for the legend
    let text = render_text(&a, 160, 48);
    assert!(text.contains("╌╌ fit"), "{text}");
    assert!(text.contains("⋯⋯ perfect"), "{text}");
    assert!(text.contains("━━ measured"), "{text}");
}

#[test]
fn metaparameter_points_classify_every_trial() {
    use scaling_lab::tui::screens::meta::{meta_points, meta_y, MetaY, PointKind};
    use scaling_lab::workload::spec::OptimizerKind;
    let a = app();
    let cfg = config(&a);
    let recs = scripted_records(&cfg);
    let y = meta_y(OptimizerKind::Momentum, &recs);
    assert_eq!(y, MetaY::OneMinus("1−γ"));
    assert_eq!(meta_y(OptimizerKind::Sgd, &recs), MetaY::Steps);
    let b = cfg.batch_sizes[0];
    let pts = meta_points(&recs, b, y);
    let at_b: Vec<_> = recs.iter().filter(|r| r.spec.batch_size == b).collect();
    assert_eq!(pts.len(), at_b.len());
    assert_eq!(pts.iter().filter(|p| p.kind == PointKind::Best).count(), 1);
    let div = at_b
        .iter()
        .filter(|r| matches!(r.outcome.outcome, Outcome::Diverged { .. }))
        .count();
    assert_eq!(
        pts.iter().filter(|p| p.kind == PointKind::Diverged).count(),
        div
    );
    for p in &pts {
        if let PointKind::Reached(r) = p.kind {
            assert!(r >= 1.0, "slower than the best: {r}");
        }
        assert!(p.y.is_some(), "1−γ is known for every trial");
    }
    // the best is drawn last (on top)
    assert_eq!(pts.last().unwrap().kind, PointKind::Best);
    // with the steps axis, trials that did not reach have no y (top edge)
    let steps = meta_points(&recs, b, MetaY::Steps);
    assert!(steps
        .iter()
        .filter(|p| matches!(p.kind, PointKind::Diverged | PointKind::NotReached))
        .all(|p| p.y.is_none()));
}
