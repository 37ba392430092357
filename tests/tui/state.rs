//! The TUI's screens driven by keys: Setup (the default preset, edits, validation shared with the
//! flags, launch), Live's controls, Runs (mark, compare, open, resume), help and quitting, and how
//! analysis requests are coalesced. Key in → state and commands out; no terminal, no threads.

use std::path::PathBuf;

use crate::support::*;
use scaling_lab::core::events::{SweepEvent, TrialEvent};
use scaling_lab::core::trial::DeviceSpec;
use scaling_lab::tui::app::{
    update, update_settled, Command, Confirm, Field, History, LiveSource, Msg, RunEntry, RunStatus,
    Screen, SetupFocus, FIELDS, HISTORY_CAP,
};
use scaling_lab::tui::key::Key;
use scaling_lab::workload::spec::Precision;

fn key(a: &mut scaling_lab::tui::App, k: Key) -> Vec<Command> {
    update(a, Msg::Key(k))
}

#[test]
fn history_is_bounded_and_keeps_the_latest_point() {
    let mut h = History::default();
    for i in 0..1_000_000u64 {
        h.push((i as f64, 1.0 / (1.0 + i as f64)));
    }
    assert!(h.len() < HISTORY_CAP, "{}", h.len());
    assert!(h.len() >= HISTORY_CAP / 2 - 1);
    assert!(h.stride() >= 1 << 12);
    let pts = h.points();
    assert_eq!(pts.last().unwrap().0, 999_999.0);
    assert_eq!(pts.first().unwrap().0, 0.0);
    // x stays increasing after every halving
    assert!(pts.windows(2).all(|w| w[0].0 < w[1].0));
}

#[test]
fn default_preset_is_selected_and_its_values_loaded() {
    let a = app();
    let p = &a.setup.preset().unwrap().preset;
    assert_eq!(p.name, "digits-mlp-momentum");
    assert_eq!(a.setup.b_min, *p.sweep.batch_sizes.iter().min().unwrap());
    assert_eq!(a.setup.trials, p.sweep.trials_per_batch);
    assert_eq!(a.screen, Screen::Setup);
}

#[test]
fn enter_launches_the_edited_sweep_and_switches_to_live() {
    let mut a = app();
    key(&mut a, Key::Tab);
    assert_eq!(a.setup.focus, SetupFocus::Fields);
    // precision → bf16, trials per B 8 → 7
    let prec = FIELDS.iter().position(|f| *f == Field::Precision).unwrap();
    let trials = FIELDS.iter().position(|f| *f == Field::Trials).unwrap();
    for _ in 0..prec {
        key(&mut a, Key::Down);
    }
    key(&mut a, Key::Right);
    assert_eq!(a.setup.precision, Precision::Bf16);
    assert!(a
        .setup
        .problems()
        .iter()
        .any(|p| !p.blocking && p.message.contains("2×")));
    for _ in prec..trials {
        key(&mut a, Key::Down);
    }
    key(&mut a, Key::Left);
    let cmds = key(&mut a, Key::Enter);
    let [Command::Launch(cfg)] = cmds.as_slice() else {
        panic!("{cmds:?}")
    };
    assert_eq!(cfg.precision, Precision::Bf16);
    assert_eq!(
        cfg.trials_per_batch,
        a.setup.preset().unwrap().preset.sweep.trials_per_batch - 1
    );
    assert_eq!(
        cfg.batch_sizes,
        a.setup.preset().unwrap().preset.sweep.batch_sizes
    );
    assert_eq!(a.screen, Screen::Live);
    assert!(matches!(a.live().unwrap().source, LiveSource::Sweep));
}

#[test]
fn batch_not_divisible_by_workers_is_explained_and_blocks_launch() {
    let mut a = app();
    a.setup.device_idx = a
        .setup
        .devices
        .iter()
        .position(|d| *d == DeviceSpec::Cpu { workers: 3 })
        .unwrap();
    let probs = a.setup.problems();
    let p = probs
        .iter()
        .find(|p| Field::of(p) == Some(Field::Devices) && p.blocking)
        .expect("a devices error");
    assert!(
        p.message.contains("not divisible by 3 workers"),
        "{}",
        p.message
    );
    assert!(p.message.contains("B = 2, 4"), "{}", p.message);
    let cmds = key(&mut a, Key::Enter);
    assert!(cmds.is_empty());
    assert!(a.flash.as_deref().unwrap().starts_with("cannot launch"));
    assert_eq!(a.screen, Screen::Setup);
    // an empty batch range is an error too
    a.setup.device_idx = 0;
    a.setup.b_min = 2048;
    assert!(a
        .setup
        .problems()
        .iter()
        .any(|p| p.blocking && Field::of(p) == Some(Field::BatchMax)));
}

/// Setup and `sweep` check their settings with the same `SweepOverrides`: a bad value gets the
/// same problem (setting, message, blocking) in Setup as the same value given as a flag does in
/// the CLI, and Setup shows it under the field that holds the value.
#[test]
fn a_bad_setup_value_and_the_same_bad_flag_give_the_same_message() {
    let dir = tempfile::tempdir().unwrap();
    let cli = |preset: &str, flag: &str, value: &str| -> String {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_scaling-lab"))
            .args(["sweep", preset, flag, value, "--runs-dir"])
            .arg(dir.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
        assert_eq!(out.status.code(), Some(2), "{flag} {value}: {err}");
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        err
    };
    type Edit = fn(&mut scaling_lab::tui::App);
    // (the flag given, its value, the flag the problem names, the Setup field it is shown under)
    let cases: [(&str, &str, &str, Field, Edit); 2] = [
        ("--workers", "3", "--batch-sizes", Field::Devices, |a| {
            a.setup.device_idx = a
                .setup
                .devices
                .iter()
                .position(|d| *d == DeviceSpec::Cpu { workers: 3 })
                .unwrap()
        }),
        ("--target", "1.5", "--target", Field::Target, |a| {
            a.setup.target = 1.5
        }),
    ];
    for (flag, value, named, field, edit) in cases {
        let mut a = app();
        edit(&mut a);
        let blocking: Vec<_> = a
            .setup
            .problems()
            .into_iter()
            .filter(|p| p.blocking)
            .collect();
        assert_eq!(blocking.len(), 1, "{blocking:?}");
        let p = &blocking[0];
        assert_eq!(p.flag(), named);
        assert_eq!(Field::of(p), Some(field));
        let err = cli(&a.setup.preset().unwrap().preset.name, flag, value);
        // The same message; the CLI names the flag that was given (`--workers 3` with
        // the preset's batch sizes is not a bad `--batch-sizes`).
        let expected = if flag == "--workers" {
            format!("--workers: {}", p.message)
        } else {
            p.to_string()
        };
        assert!(err.ends_with(&expected), "CLI: {err}\nSetup: {p}");
    }
}

#[test]
fn gpu_labels_become_device_choices() {
    let mut o = scaling_lab::tui::TuiOptions::new(PathBuf::from("runs"), presets_dir());
    o.gpu_labels = vec!["H100 #0".into(), "H100 #1".into()];
    let a = scaling_lab::tui::initial_app(&o, Default::default());
    assert_eq!(a.setup.devices.len(), 10);
    assert_eq!(
        a.setup.devices[9],
        DeviceSpec::Cuda {
            devices: vec![0, 1]
        }
    );
}

#[test]
fn events_fold_into_live_state() {
    let mut a = app();
    let cfg = config(&a);
    launch(&mut a);
    let events = scripted_events(&cfg);
    // the analyses asked for (one in flight at a time)
    let mut pending = Vec::new();
    // Planned + queued
    let n_queued = cfg.batch_sizes.len() * cfg.trials_per_batch;
    for ev in events.iter().take(1 + n_queued) {
        pending.extend(update(&mut a, Msg::Sweep(ev.clone())));
    }
    let l = a.live().unwrap();
    assert_eq!(l.plan.total_trials, n_queued);
    assert_eq!(l.queued.len(), n_queued);
    // first trial: started, steps, finished
    let mut i = 1 + n_queued;
    pending.extend(update(&mut a, Msg::Sweep(events[i].clone())));
    assert_eq!(a.live().unwrap().running.len(), 1);
    i += 1;
    while !matches!(
        &events[i],
        SweepEvent::Trial {
            event: TrialEvent::Finished { .. },
            ..
        }
    ) {
        pending.extend(update(&mut a, Msg::Sweep(events[i].clone())));
        i += 1;
    }
    let l = a.live().unwrap();
    let r = l.running.values().next().unwrap();
    assert_eq!(
        r.last.as_ref().unwrap().step,
        r.loss.last().unwrap().0 as u64
    );
    assert!(l.b_simple_live.is_some());
    pending.extend(update(&mut a, Msg::Sweep(events[i].clone())));
    let l = a.live().unwrap();
    assert!(l.running.is_empty());
    assert_eq!(l.finished.len(), 1);
    assert_eq!(l.done_count(), 1);
    // the chart's point at once; the analysis of it runs off the UI task
    assert_eq!(l.chart().per_batch.len(), 1);
    assert_eq!(
        l.chart().per_batch[0].steps,
        Some(scripted_steps(cfg.batch_sizes[0], 5))
    );
    assert_eq!(
        l.recent.len(),
        1,
        "the finished trial's curve stays on the loss chart"
    );
    // the one in flight lands; then the rest, each analysis landing as the runtime's worker
    // would send it
    for c in pending {
        if let Command::Analyze(r) = c {
            update_settled(&mut a, Msg::Analyzed(Box::new(r.run())));
        }
    }
    for ev in &events[i + 1..] {
        update_settled(&mut a, Msg::Sweep(ev.clone()));
    }
    let l = a.live().unwrap();
    assert!(l.done && !l.cancelled);
    assert_eq!(l.done_count(), n_queued);
    assert_eq!(l.saved, n_queued);
    let regimes: Vec<_> = l.regime_spans().iter().map(|s| s.2).collect();
    use scaling_lab::core::analysis::Regime::*;
    assert_eq!(regimes.first(), Some(&Perfect));
    assert!(regimes.contains(&Diminishing));
    assert_eq!(regimes.last(), Some(&Maximal));
    let top = l.analysis().per_batch.last().unwrap();
    assert_eq!(
        (top.steps, top.counts.diverged),
        (None, cfg.trials_per_batch)
    );
}

#[test]
fn live_keys_pause_cancel_and_confirm() {
    let mut a = live_app(|a| {
        a.live()
            .is_some_and(|l| l.done_count() == 3 && !l.running.is_empty())
    });
    let id = *a.live().unwrap().running.keys().next().unwrap();
    assert_eq!(key(&mut a, Key::Char('p')), vec![Command::Pause(true)]);
    update(&mut a, Msg::Sweep(SweepEvent::Paused { paused: true }));
    assert!(a.live().unwrap().paused);
    assert_eq!(key(&mut a, Key::Char('p')), vec![Command::Pause(false)]);
    assert_eq!(key(&mut a, Key::Char('c')), vec![Command::CancelTrial(id)]);
    assert!(key(&mut a, Key::Char('C')).is_empty());
    assert_eq!(a.confirm, Some(Confirm::CancelSweep));
    assert!(key(&mut a, Key::Char('n')).is_empty());
    assert_eq!(a.confirm, None);
    key(&mut a, Key::Char('x'));
    assert_eq!(key(&mut a, Key::Char('y')), vec![Command::CancelSweep]);
    // t cycles the charts
    let before = a.charts;
    key(&mut a, Key::Char('t'));
    assert_ne!(a.charts, before);
}

#[test]
fn quitting_while_a_sweep_runs_asks_first() {
    let mut a = live_app(|a| a.live().is_some_and(|l| l.done_count() == 2));
    assert!(key(&mut a, Key::Char('q')).is_empty());
    assert_eq!(a.confirm, Some(Confirm::Quit));
    assert!(!a.quit);
    let text = render_text(&a, 80, 24);
    assert!(text.contains("Finished trials are"), "{text}");
    assert!(text.contains("resumed"), "{text}");
    assert_eq!(
        key(&mut a, Key::Char('y')),
        vec![Command::CancelSweep, Command::Quit]
    );
    assert!(a.quit);
    // idle: q quits at once; ctrl-c too
    let mut b = app();
    assert_eq!(key(&mut b, Key::Interrupt), vec![Command::Quit]);
    // SIGTERM while running: stop and quit without asking
    let mut c = live_app(|a| a.live().is_some_and(|l| l.done_count() == 1));
    assert_eq!(
        update(&mut c, Msg::Terminate),
        vec![Command::CancelSweep, Command::Quit]
    );
}

#[test]
fn read_only_log_ignores_controls_and_follows_appended_lines() {
    let mut a = app();
    let records = scripted_records(&config(&a));
    let log = log_with(&a, "runs/x.jsonl", 5);
    update(
        &mut a,
        Msg::LogOpened {
            log: Box::new(log),
            tailing: true,
        },
    );
    assert_eq!(a.screen, Screen::Live);
    assert_eq!(a.live().unwrap().done_count(), 5);
    assert!(key(&mut a, Key::Char('p')).is_empty());
    assert!(a.flash.as_deref().unwrap().contains("read-only"));
    use scaling_lab::core::record::LogLine;
    update(
        &mut a,
        Msg::LogLines(vec![LogLine::Trial(Box::new(records[5].clone()))]),
    );
    assert_eq!(a.live().unwrap().done_count(), 6);
    let summary = scaling_lab::core::record::Summary {
        finished: String::new(),
        trials_done: 6,
        trials_planned: records.len(),
        complete: false,
        wall_s: 1.0,
        analysis: Default::default(),
    };
    update(
        &mut a,
        Msg::LogLines(vec![LogLine::Summary(Box::new(summary))]),
    );
    let l = a.live().unwrap();
    assert!(l.done && l.cancelled);
    assert_eq!(
        l.source,
        LiveSource::Log {
            path: PathBuf::from("runs/x.jsonl"),
            tailing: false
        }
    );
    // Esc goes back to Runs (and rescans)
    assert_eq!(key(&mut a, Key::Esc), vec![Command::ScanRuns]);
    assert_eq!(a.screen, Screen::Runs);
}

fn entry(name: &str, status: RunStatus) -> RunEntry {
    RunEntry {
        path: PathBuf::from(format!("runs/{name}.jsonl")),
        preset: name.into(),
        optimizer: "sgd".into(),
        started: "2026-01-01T10:00:00+00:00".into(),
        status,
        done: 3,
        planned: 64,
        s_min: Some(120.0),
        b_crit: Some(300.0),
        error: None,
        ..Default::default()
    }
}

#[test]
fn runs_mark_compare_open_resume() {
    let mut a = app();
    assert_eq!(key(&mut a, Key::Char('3')), vec![Command::ScanRuns]);
    update(
        &mut a,
        Msg::Runs(vec![
            entry("a", RunStatus::Complete),
            entry("b", RunStatus::Interrupted),
            entry("c", RunStatus::Complete),
        ]),
    );
    key(&mut a, Key::Space); // marks a, moves to b
    key(&mut a, Key::Down); // c
    key(&mut a, Key::Space);
    assert_eq!(a.runs.marked.len(), 2);
    let cmds = key(&mut a, Key::Char('c'));
    assert_eq!(
        cmds,
        vec![Command::LoadCompare(vec![
            PathBuf::from("runs/a.jsonl"),
            PathBuf::from("runs/c.jsonl")
        ])]
    );
    assert_eq!(a.screen, Screen::Compare);
    key(&mut a, Key::Esc);
    assert_eq!(a.screen, Screen::Runs);
    key(&mut a, Key::Up);
    assert_eq!(
        key(&mut a, Key::Char('r')),
        vec![Command::Resume(PathBuf::from("runs/b.jsonl"))]
    );
    key(&mut a, Key::Up);
    assert!(
        key(&mut a, Key::Char('r')).is_empty(),
        "a complete run is not resumable"
    );
    assert_eq!(
        key(&mut a, Key::Enter),
        vec![Command::OpenLog(PathBuf::from("runs/a.jsonl"))]
    );
}

#[test]
fn help_opens_and_returns() {
    let mut a = app();
    key(&mut a, Key::Char('?'));
    assert_eq!(a.screen, Screen::Help);
    key(&mut a, Key::Esc);
    assert_eq!(a.screen, Screen::Setup);
}

/// Moves Setup's field cursor to `f` (focus on the fields, from the first field).
fn go_to_field(a: &mut scaling_lab::tui::App, f: Field) {
    if a.setup.focus != SetupFocus::Fields {
        key(a, Key::Tab);
    }
    while a.setup.field > 0 {
        key(a, Key::Up);
    }
    for _ in 0..FIELDS.iter().position(|x| *x == f).unwrap() {
        key(a, Key::Down);
    }
    assert_eq!(FIELDS[a.setup.field], f);
}

#[test]
fn setup_auto_layout_widen_and_the_gpu_scale_warning() {
    use scaling_lab::sweep::layout::{calibration_key, cores, Calibration};
    let mut a = app();
    // a preset that leaves concurrency to the scheduler: Setup launches it that way ...
    let sel = a.setup.selected;
    a.setup.presets[sel].preset.sweep.auto_concurrency = true;
    a.setup.reset_from_preset();
    assert!(a.setup.auto_layout());
    assert!(config(&a).preset.sweep.auto_concurrency);
    // ... until the field is edited: then the user's number wins
    let shown = a.setup.presets[sel].preset.sweep.concurrency;
    go_to_field(&mut a, Field::Concurrency);
    key(&mut a, Key::Right);
    let cfg = config(&a);
    assert!(!cfg.preset.sweep.auto_concurrency && !a.setup.auto_layout());
    assert_eq!(cfg.concurrency, shown + 1);
    // widen: off by default, then N moves, launched as --widen N
    assert_eq!(config(&a).widen, 0);
    go_to_field(&mut a, Field::Widen);
    key(&mut a, Key::Right);
    key(&mut a, Key::Right);
    assert_eq!(config(&a).widen, 2);
    let cmds = key(&mut a, Key::Enter);
    let [Command::Launch(launched)] = cmds.as_slice() else {
        panic!("{cmds:?}")
    };
    assert_eq!((launched.widen, launched.concurrency), (2, shown + 1));

    // a GPU-scale preset on the CPU warns (not blocking), first without an estimate ...
    let mut a = app();
    let sel = a.setup.selected;
    a.setup.presets[sel].preset.sweep.gpu_scale = true;
    let gpu_warning = |a: &scaling_lab::tui::App| {
        a.setup
            .problems()
            .into_iter()
            .find(|p| p.field == "devices" && p.message.contains("GPU-scale"))
    };
    let w = gpu_warning(&a).expect("GPU-scale warning");
    assert!(!w.blocking);
    assert!(w.message.contains("--dry-run"), "{}", w.message);
    assert!(a.setup.calibrated_estimate().is_none());
    // ... then with the bound from the runs directory's cached calibration of its workload
    let cfg = config(&a);
    let k = calibration_key(&cfg.preset.workload, cfg.precision, cores());
    a.setup.calibrations.insert(
        k.clone(),
        Calibration {
            key: k,
            cores: cores(),
            one_trial: vec![(16, 0.002), (1024, 0.02)],
            batch: 128,
            one_trial_examples_per_s: 1e4,
            many_trials_examples_per_s: 1e4,
            concurrency: 1,
            measured: String::new(),
            n_val: 360,
            fused: Vec::new(),
        },
    );
    let e = a
        .setup
        .calibrated_estimate()
        .expect("estimate from the cache");
    assert!(e.upper_s > 0.0);
    let w = gpu_warning(&a).unwrap();
    assert!(w.message.contains("estimated ≤"), "{}", w.message);
    assert!(a.setup.problems().iter().all(|p| !p.blocking));
    let cal = a.setup.calibrations.values().next().unwrap().clone();

    // `e` asks the runtime for the calibration (once until it answers); its answer is the bound
    let mut a = app();
    let cmds = key(&mut a, Key::Char('e'));
    let [Command::Calibrate(cfg)] = cmds.as_slice() else {
        panic!("{cmds:?}")
    };
    assert_eq!(cfg.preset.name, a.setup.study_name());
    assert!(a.setup.calibrating);
    assert!(
        key(&mut a, Key::Char('e')).is_empty(),
        "one calibration at a time"
    );
    update(&mut a, Msg::Calibrated(Err("no trainer".into())));
    assert!(!a.setup.calibrating);
    assert!(a
        .flash
        .as_deref()
        .unwrap()
        .contains("calibration failed: no trainer"));
    key(&mut a, Key::Char('e'));
    update(&mut a, Msg::Calibrated(Ok(Box::new(cal))));
    assert!(a.setup.calibrated_estimate().is_some());
    assert!(
        a.flash.as_deref().unwrap().starts_with("calibrated: ≤"),
        "{:?}",
        a.flash
    );
}

/// Setup says what `sweep` says of any preset whose trial may run for 10 minutes or
/// more (its cached calibration's bound), not only of GPU-scale presets; a short one is quiet.
#[test]
fn setup_warns_of_a_long_trial_of_any_preset_from_the_cached_calibration() {
    use scaling_lab::sweep::layout::{calibration_key, cores, Calibration};
    let long = |a: &scaling_lab::tui::App| {
        a.setup
            .problems()
            .into_iter()
            .find(|p| p.message.contains("may take long"))
    };
    for (step_s, warns) in [(0.5, true), (0.002, false)] {
        let mut a = app();
        let cfg = config(&a);
        assert!(!cfg.preset.sweep.gpu_scale);
        let k = calibration_key(&cfg.preset.workload, cfg.precision, cores());
        a.setup.calibrations.insert(
            k.clone(),
            Calibration {
                key: k,
                cores: cores(),
                one_trial: vec![(16, step_s), (1024, step_s)],
                batch: 128,
                one_trial_examples_per_s: 1e4,
                many_trials_examples_per_s: 1e4,
                concurrency: 1,
                measured: String::new(),
                // evaluations cost nothing here: the bound is the steps'
                n_val: 0,
                fused: Vec::new(),
            },
        );
        let w = long(&a);
        assert_eq!(w.is_some(), warns, "{step_s} s a step: {w:?}");
        if let Some(w) = w {
            // 3000 steps × 0.5 s, two trials at once sharing the cores (no gain): 50 min
            assert!(!w.blocking && w.field == "devices", "{w:?}");
            assert_eq!(cfg.concurrency, 2);
            assert!(
                w.message.contains("one trial alone up to 50 min 0 s"),
                "{}",
                w.message
            );
        }
    }
}

/// The analyses `update` asked for (`Command::Analyze`), in order.
fn analyses(cmds: Vec<Command>) -> Vec<scaling_lab::tui::app::AnalysisRequest> {
    cmds.into_iter()
        .filter_map(|c| match c {
            Command::Analyze(r) => Some(*r),
            _ => None,
        })
        .collect()
}

#[test]
fn analysis_is_asked_for_coalesced_and_a_stale_result_is_dropped() {
    let mut a = app();
    let cfg = config(&a);
    launch(&mut a);
    let events = scripted_events(&cfg);
    let finished = |ev: &SweepEvent| {
        matches!(
            ev,
            SweepEvent::Trial {
                event: TrialEvent::Finished { .. },
                ..
            }
        )
    };
    let first = events.iter().position(finished).unwrap();
    // the plan (header) alone asks for one analysis; trials landing meanwhile ask for none more
    let mut asked = Vec::new();
    for ev in &events[..=first] {
        asked.extend(analyses(update(&mut a, Msg::Sweep(ev.clone()))));
    }
    assert_eq!(asked.len(), 1, "one analysis in flight at a time");
    let second = first + 1 + events[first + 1..].iter().position(finished).unwrap();
    for ev in &events[first + 1..=second] {
        assert!(analyses(update(&mut a, Msg::Sweep(ev.clone()))).is_empty());
    }
    // folding analysed nothing: the report is the empty one, the chart shows the raw points now
    let l = a.live().unwrap();
    assert_eq!(l.finished.len(), 2);
    assert!(l.updating());
    assert!(l.analysis().per_batch.is_empty());
    let raw: usize = l.chart().per_batch.iter().map(|p| p.counts.trials).sum();
    assert_eq!(raw, 2, "the chart's points are the current data's");
    assert_eq!(
        l.chart().per_batch[0].steps,
        Some(scripted_steps(cfg.batch_sizes[0], 5))
    );

    // the result the state waits for lands (it was computed for older data): adopted, and the
    // next request goes out at once, for the latest data
    let r = asked.pop().unwrap();
    assert!(r.inputs.trials.is_empty());
    let next = analyses(update(&mut a, Msg::Analyzed(Box::new(r.run()))));
    assert_eq!(next.len(), 1);
    let r2 = &next[0];
    assert_eq!(r2.inputs.trials.len(), 2);
    assert_eq!(r2.for_.generation, a.live().unwrap().generation);
    assert_eq!(Some(r2.for_.target), a.live().unwrap().analysis_target());
    assert!(a.live().unwrap().updating());

    // a result nobody waits for (another id), or computed at another target, is dropped
    a.dirty = false;
    let mut stale = r2.run();
    stale.for_.id += 100;
    assert!(analyses(update(&mut a, Msg::Analyzed(Box::new(stale)))).is_empty());
    assert!(!a.dirty, "a dropped result redraws nothing");
    let mut retargeted = r2.clone();
    retargeted.for_.target.value /= 2.0;
    let out = analyses(update(&mut a, Msg::Analyzed(Box::new(retargeted.run()))));
    assert!(a.live().unwrap().analysis().per_batch.is_empty());
    assert!(a.live().unwrap().updating());
    // ... and the state asks again, for its own target
    assert_eq!(out.len(), 1);
    assert_eq!(
        Some(out[0].for_.target),
        a.live().unwrap().analysis_target()
    );

    // the current one lands: the report is the analysis of both trials, nothing pending
    let done = analyses(update(&mut a, Msg::Analyzed(Box::new(out[0].run()))));
    assert!(done.is_empty());
    let l = a.live().unwrap();
    assert!(!l.updating());
    assert_eq!(l.analysis().per_batch, l.chart().per_batch);
    let n: usize = l.analysis().per_batch.iter().map(|p| p.counts.trials).sum();
    assert_eq!(n, 2);
}
