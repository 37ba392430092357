//! Shared helpers of the TUI tests: the app built from the real presets directory, a scripted
//! (deterministic, no training) sweep event sequence, and buffer → text rendering.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use scaling_lab::core::analysis::Analysis;
use scaling_lab::core::events::{PlanInfo, StepStats, SweepEvent, TrialEvent};
use scaling_lab::core::record::TrialRecord;
use scaling_lab::core::trial::{
    EvalPoint, NoiseInterval, NoiseSummary, Outcome, Throughput, TrialOutcome, TrialSpec,
};
use scaling_lab::sweep::SweepConfig;
use scaling_lab::tui::app::{update, update_settled, App, Msg};
use scaling_lab::tui::key::Key;
use scaling_lab::tui::theme::Theme;
use scaling_lab::tui::{initial_app, TuiOptions};

pub fn presets_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("presets")
}

/// The app as `scaling-lab` starts it (Setup, default preset selected), colour on.
pub fn app() -> App {
    let mut o = TuiOptions::new(PathBuf::from("runs"), presets_dir());
    o.initial_preset = None;
    initial_app(&o, Theme::default())
}

/// The configuration Setup launches for the default preset.
pub fn config(app: &App) -> SweepConfig {
    app.setup
        .config(Path::new("runs"))
        .expect("default preset present")
}

/// Scripted steps-to-target of the best trial at batch size B: S = 60·(1 + 64/B) on the
/// evaluation grid — all three regimes over 8…1024.
pub fn scripted_steps(b: usize, eval_every: u64) -> u64 {
    let s = (60.0 * (1.0 + 64.0 / b as f64)).ceil() as u64;
    s.div_ceil(eval_every) * eval_every
}

/// The outcome of a planned trial in the script: per batch size the first trial is the best,
/// the second diverges, the third runs out of budget, the rest reach later. At B = 1024 every
/// trial diverges (so the chart shows a failed batch size).
pub fn scripted_outcome(spec: &TrialSpec, k: usize, cfg: &SweepConfig) -> TrialOutcome {
    let w = &cfg.preset.workload;
    let s = scripted_steps(spec.batch_size, w.eval_every);
    let outcome = if spec.batch_size >= 1024 {
        Outcome::Diverged { step: 20 }
    } else {
        match k {
            0 => Outcome::Reached { step: s },
            1 => Outcome::Diverged { step: 15 },
            2 => Outcome::NotReached {
                budget: w.step_budget,
                early_stopped: false,
            },
            _ => Outcome::Reached {
                step: (s * (4 + k as u64) / 4).div_ceil(w.eval_every) * w.eval_every,
            },
        }
    };
    let steps = match outcome {
        Outcome::Reached { step }
        | Outcome::Diverged { step }
        | Outcome::Cancelled { step }
        | Outcome::Oom { step, .. } => step,
        Outcome::NotReached { budget, .. } => budget,
    };
    let evals: Vec<EvalPoint> = (1..=steps / w.eval_every.max(1))
        .step_by(((steps / w.eval_every.max(1)) / 20).max(1) as usize)
        .map(|i| EvalPoint {
            step: i * w.eval_every,
            metric: 0.9 / (1.0 + i as f64 * w.eval_every as f64 / s as f64 * 15.0),
            train_loss: 2.3 / (1.0 + i as f64 / 10.0),
        })
        .collect();
    TrialOutcome {
        outcome,
        steps,
        skipped_steps: 0,
        final_loss_scale: 1.0,
        wall_s: steps as f64 * 1e-3,
        evals,
        noise: NoiseSummary {
            b_simple: Some(150.0 + spec.batch_size as f64 / 64.0),
            interval: Some(NoiseInterval {
                lo: 60.0,
                hi: (spec.batch_size >= 64).then_some(400.0),
            }),
            ..Default::default()
        },
        throughput: Throughput {
            examples_per_s: 50_000.0,
            step_s: 1e-3,
            ..Default::default()
        },
        reason: None,
        stages: Vec::new(),
        group: None,
        transfer: None,
    }
}

/// A run log of the default preset (as `app` launches it) holding the first `n` scripted trials,
/// at `path`; no summary.
pub fn log_with(app: &App, path: &str, n: usize) -> scaling_lab::runlog::RunLog {
    let cfg = config(app);
    scaling_lab::runlog::RunLog {
        path: PathBuf::from(path),
        header: scaling_lab::sweep::scheduler::make_header(&cfg, "test"),
        trials: scripted_records(&cfg)[..n].to_vec(),
        summary: None,
        warnings: vec![],
        off_plan: None,
        valid_len: 0,
        given: None,
        calibrated: None,
    }
}

/// Index of trial `i` among the planned trials of its batch size.
pub fn rank(specs: &[TrialSpec], i: usize) -> usize {
    specs[..i]
        .iter()
        .filter(|s| s.batch_size == specs[i].batch_size)
        .count()
}

/// The full event sequence of a scripted sweep (one trial at a time, like concurrency 1).
pub fn scripted_events(cfg: &SweepConfig) -> Vec<SweepEvent> {
    let specs = scaling_lab::sweep::plan(cfg);
    let mut ev = vec![SweepEvent::Planned(PlanInfo {
        preset: cfg.preset.name.clone(),
        batch_sizes: cfg.batch_sizes.clone(),
        trials_per_batch: cfg.trials_per_batch,
        total_trials: specs.len(),
        already_done: 0,
        devices: cfg.devices.label(),
        run_log: Some("runs/2026-01-01T10-00-00-digits-mlp-momentum.jsonl".into()),
        header: Some(Box::new(scaling_lab::sweep::scheduler::make_header(
            cfg,
            "burn-flex (cpu)",
        ))),
    })];
    for s in &specs {
        ev.push(SweepEvent::Queued {
            trial_id: s.trial_id,
            batch_size: s.batch_size,
        });
    }
    let mut records = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let k = rank(&specs, i);
        let out = scripted_outcome(spec, k, cfg);
        let id = spec.trial_id;
        ev.push(SweepEvent::Trial {
            trial_id: id,
            event: TrialEvent::Started { spec: spec.clone() },
        });
        let n = 12u64;
        for j in 1..=n {
            let step = out.steps * j / n;
            ev.push(SweepEvent::Trial {
                trial_id: id,
                event: TrialEvent::Step(StepStats {
                    step,
                    loss: 2.3 / (1.0 + j as f64 * (1.0 + k as f64) / 3.0),
                    lr: spec.metaparams.learning_rate,
                    loss_scale: 1.0,
                    skipped_steps: 0,
                    examples_per_s: 40_000.0 + spec.batch_size as f64,
                    compute_s: 1e-3,
                    exchange_s: 0.0,
                }),
            });
            if j % 4 == 0 {
                ev.push(SweepEvent::Trial {
                    trial_id: id,
                    event: TrialEvent::NoiseScale {
                        step,
                        b_simple: 120.0 + j as f64,
                    },
                });
            }
        }
        for p in &out.evals {
            ev.push(SweepEvent::Trial {
                trial_id: id,
                event: TrialEvent::Eval(*p),
            });
        }
        ev.push(SweepEvent::Trial {
            trial_id: id,
            event: TrialEvent::Finished {
                outcome: Box::new(out.clone()),
            },
        });
        ev.push(SweepEvent::Saved { trial_id: id });
        records.push(TrialRecord {
            trial_id: id,
            spec: spec.clone(),
            outcome: out,
            finished: String::new(),
        });
    }
    let analysis = scaling_lab::analysis::analyze_preset(&cfg.preset, &records);
    ev.push(SweepEvent::Done {
        cancelled: false,
        analysis: Box::new(analysis),
    });
    ev
}

/// The records a scripted sweep would have written (for Compare/Runs fixtures).
pub fn scripted_records(cfg: &SweepConfig) -> Vec<TrialRecord> {
    scaling_lab::sweep::plan(cfg)
        .iter()
        .enumerate()
        .map(|(i, s)| TrialRecord {
            trial_id: s.trial_id,
            spec: s.clone(),
            outcome: scripted_outcome(s, rank(&scaling_lab::sweep::plan(cfg), i), cfg),
            finished: String::new(),
        })
        .collect()
}

pub fn scripted_analysis(cfg: &SweepConfig) -> Analysis {
    scaling_lab::analysis::analyze_preset(&cfg.preset, &scripted_records(cfg))
}

/// Presses Enter on Setup: Live shows the starting sweep and `Command::Launch` is returned (not
/// executed: no threads in these tests).
pub fn launch(a: &mut App) {
    let cmds = update(a, Msg::Key(Key::Enter));
    assert!(
        matches!(cmds.as_slice(), [scaling_lab::tui::app::Command::Launch(_)]),
        "{cmds:?}"
    );
}

/// Launches the default preset (as Enter on Setup does, without starting threads) and folds the
/// scripted events until `stop` says so, each one's analysis landing before the next event. Each
/// event advances the clock by 50 ms.
pub fn live_app(stop: impl Fn(&App) -> bool) -> App {
    let mut a = app();
    let cfg = config(&a);
    launch(&mut a);
    update(&mut a, Msg::SweepStarted { run_log: None });
    let mut t = 0.0;
    for ev in scripted_events(&cfg) {
        t += 0.05;
        update(&mut a, Msg::Tick(t));
        // the analyses it asks for run at once (the runtime runs them on its worker)
        update_settled(&mut a, Msg::Sweep(ev));
        if stop(&a) {
            break;
        }
    }
    a
}

/// The screen as plain text (one line per row), as a user would read it.
pub fn render_text(app: &App, w: u16, h: u16) -> String {
    let buf = scaling_lab::tui::screenshot::render_app(app, w, h);
    let mut s = String::new();
    for y in 0..h {
        let mut line = String::new();
        for x in 0..w {
            line.push_str(buf[(x, y)].symbol());
        }
        s.push_str(line.trim_end());
        s.push('\n');
    }
    s
}
