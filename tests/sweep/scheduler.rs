//! The sweep scheduler end to end with the NQM runner and scripted fakes: events, the run log,
//! resume, cancellation, errors and divergence.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;
use std::time::Duration;

use scaling_lab::core::analysis::Analysis;
use scaling_lab::core::events::{StepStats, SweepEvent, TrialEvent};
use scaling_lab::core::runner::TrialRunner;
use scaling_lab::core::trial::{CancelToken, DeviceSpec, Outcome, TrialOutcome, TrialSpec};
use scaling_lab::nqm::NqmRunner;
use scaling_lab::runlog::read_run_log;
use scaling_lab::sweep::{plan, start_sweep, SweepConfig};
use scaling_lab::workload::spec::*;

/// A fresh runs directory and a 6 B × 6 trials NQM sweep into it, 3 trials at once.
fn config(opt: OptimizerKind) -> (tempfile::TempDir, SweepConfig) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = SweepConfig {
        batch_sizes: vec![1, 4, 16, 64, 256, 1024],
        trials_per_batch: 6,
        concurrency: 3,
        seed: 42,
        ..common::sweep_config(common::nqm_preset(opt), dir.path())
    };
    (dir, cfg)
}

/// An SGD sweep of `trials` trials per batch size over `batch_sizes`, `concurrency` at once.
fn small_config(
    batch_sizes: &[usize],
    trials: usize,
    concurrency: usize,
) -> (tempfile::TempDir, SweepConfig) {
    let (dir, cfg) = config(OptimizerKind::Sgd);
    let cfg = SweepConfig {
        batch_sizes: batch_sizes.to_vec(),
        trials_per_batch: trials,
        concurrency,
        ..cfg
    };
    (dir, cfg)
}

fn drain(rx: Receiver<SweepEvent>) -> Vec<SweepEvent> {
    rx.iter().collect()
}

#[test]
fn nqm_sweep_writes_log_and_events() {
    let (_dir, cfg) = config(OptimizerKind::Sgd);
    let (res, events) = common::run_sweep(cfg.clone(), Arc::new(NqmRunner), None);
    let log_path = res.log_path.clone();
    assert!(!res.cancelled);
    assert_eq!(
        (res.trials_done, res.trials_planned, res.trials_run),
        (36, 36, 36)
    );
    assert!(matches!(events[0], SweepEvent::Planned(ref p) if p.total_trials == 36));
    assert!(matches!(
        events.last(),
        Some(SweepEvent::Done {
            cancelled: false,
            ..
        })
    ));
    let saved: Vec<u64> = events
        .iter()
        .filter_map(|e| match e {
            SweepEvent::Saved { trial_id } => Some(*trial_id),
            _ => None,
        })
        .collect();
    assert_eq!(saved.len(), 36);
    // Each Saved comes after that trial's Finished.
    for id in &saved {
        let fin = events.iter().position(|e| matches!(e, SweepEvent::Trial { trial_id, event: TrialEvent::Finished { .. } } if trial_id == id)).unwrap();
        let sav = events
            .iter()
            .position(|e| matches!(e, SweepEvent::Saved { trial_id } if trial_id == id))
            .unwrap();
        assert!(fin < sav);
    }
    assert!(events
        .iter()
        .any(|e| matches!(e, SweepEvent::BestSoFar { .. })));
    let log = read_run_log(&log_path).unwrap();
    assert_eq!(log.trials.len(), 36);
    assert_eq!(log.status(), scaling_lab::runlog::LogStatus::Complete);
    assert!(log.warnings.is_empty());
    let name = log_path.file_name().unwrap().to_string_lossy().to_string();
    assert!(name.ends_with("-nqm-sgd.jsonl"), "{name}");
    // The stored analysis equals a fresh one from the records.
    // (JSON keeps floats to the last bit only with serde_json's float_roundtrip feature.)
    let stored = &log.summary.as_ref().unwrap().analysis;
    let fresh = log.analysis();
    assert_eq!(stored, &serde_json::to_value(&fresh).unwrap());
    assert_eq!(
        stored["per_batch"].as_array().unwrap().len(),
        fresh.per_batch.len()
    );
    assert_eq!(res.analysis.per_batch, fresh.per_batch);
    let a = &res.analysis;
    assert!(a.per_batch.iter().all(|p| p.steps.is_some()), "{a:?}");
    // A wide η range at these batch sizes has diverged trials; they are kept and counted.
    assert!(a.per_batch.iter().map(|p| p.counts.diverged).sum::<usize>() > 0);
    assert!(a.fit.is_some());
    // The record ids are exactly the plan.
    let mut ids: Vec<u64> = log.trials.iter().map(|t| t.trial_id).collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..36).collect::<Vec<_>>());
    for t in &log.trials {
        assert_eq!(
            t.spec.batch_size,
            plan(&cfg)[t.trial_id as usize].batch_size
        );
    }
}

/// The NQM runner behind a hook that sees each trial first and may end it (an error, a panic)
/// or act on the sweep (cancel it).
struct BeforeNqm<F> {
    before: F,
    backend: &'static str,
}

impl<F: Fn(&TrialSpec) -> anyhow::Result<()> + Send + Sync> TrialRunner for BeforeNqm<F> {
    fn run(
        &self,
        w: &Workload,
        spec: &TrialSpec,
        emit: &mut dyn FnMut(TrialEvent),
        cancel: &CancelToken,
    ) -> anyhow::Result<TrialOutcome> {
        (self.before)(spec)?;
        NqmRunner.run(w, spec, emit, cancel)
    }
    fn backend(&self) -> String {
        self.backend.into()
    }
}

#[test]
fn cancel_then_resume_equals_uninterrupted() {
    let (_dir, mut cfg) = config(OptimizerKind::Momentum);
    // Three trials at once make early-stopping caps depend on timing (S(B) does not, the
    // per-trial outcomes do); this test compares whole analyses, so it runs without them.
    cfg.preset.sweep.early_stopping = false;
    // Uninterrupted reference.
    let (full, _) = common::run_sweep(cfg.clone(), Arc::new(NqmRunner), None);

    // Interrupted (the whole sweep cancelled) when the 11th trial starts, then resumed.
    let control = scaling_lab::sweep::SweepControl::new();
    let (started, c) = (AtomicUsize::new(0), control.clone());
    let runner = Arc::new(BeforeNqm {
        before: move |_: &TrialSpec| {
            if started.fetch_add(1, Ordering::SeqCst) == 10 {
                c.cancel();
            }
            Ok(())
        },
        backend: "nqm-closed-form",
    });
    let (tx, rx) = sync_channel(4096);
    let h = scaling_lab::sweep::scheduler::start_sweep_with(cfg.clone(), runner, tx, None, control)
        .unwrap();
    let path = h.log_path().to_path_buf();
    let drainer = std::thread::spawn(move || drain(rx));
    let part = h.join().unwrap();
    drainer.join().unwrap();
    assert!(part.cancelled);
    assert!(part.trials_done < 36, "{}", part.trials_done);
    let log = read_run_log(&path).unwrap();
    assert_eq!(log.status(), scaling_lab::runlog::LogStatus::Interrupted);
    let first = log.trials.len();

    let (resumed, events) = common::run_sweep(cfg.clone(), Arc::new(NqmRunner), Some(path.clone()));
    assert!(matches!(events[0], SweepEvent::Planned(ref p) if p.already_done == first));
    assert_eq!(resumed.trials_run, 36 - first);
    let log = read_run_log(&path).unwrap();
    assert_eq!(log.status(), scaling_lab::runlog::LogStatus::Complete);
    let mut ids: Vec<u64> = log.trials.iter().map(|t| t.trial_id).collect();
    ids.sort_unstable();
    assert_eq!(
        ids,
        (0..36).collect::<Vec<_>>(),
        "no trial lost or run twice"
    );
    assert_eq!(resumed.analysis, full.analysis);
}

#[test]
fn torn_tail_is_cut_on_resume() {
    // One trial at a time: early-stopping caps (and so the per-trial outcomes this test compares)
    // are then a pure function of the finished trials, as on resume.
    let (_dir, cfg) = small_config(&[4, 64], 3, 1);
    let (full, _) = common::run_sweep(cfg.clone(), Arc::new(NqmRunner), None);
    let path = full.log_path.clone();
    // Simulate SIGKILL mid-write: drop the summary and the last trial, leave half a line.
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let keep = lines[..lines.len() - 2].join("\n") + "\n";
    let half = &lines[lines.len() - 2][..40];
    std::fs::write(&path, format!("{keep}{half}")).unwrap();
    let log = read_run_log(&path).unwrap();
    assert_eq!(log.warnings.len(), 1, "{:?}", log.warnings);
    assert_eq!(log.trials.len(), 5);
    assert_eq!(log.status(), scaling_lab::runlog::LogStatus::Unfinished);
    let (res, _) = common::run_sweep(cfg, Arc::new(NqmRunner), Some(path.clone()));
    assert_eq!(res.trials_run, 1);
    let log = read_run_log(&path).unwrap();
    assert!(log.warnings.is_empty(), "{:?}", log.warnings);
    assert_eq!(log.trials.len(), 6);
    assert_eq!(res.analysis, full.analysis);
}

#[test]
fn errors_and_panics_do_not_stop_the_sweep() {
    let (_dir, mut cfg) = config(OptimizerKind::Sgd);
    cfg.trials_per_batch = 2; // 12 trials: ids 0..12
                              // Fails, panics or runs (and maybe diverges) depending on the trial id.
    let flaky = BeforeNqm {
        before: |spec: &TrialSpec| match spec.trial_id % 4 {
            0 => anyhow::bail!("scripted set-up failure"),
            1 => panic!("scripted panic"),
            _ => Ok(()),
        },
        backend: "flaky",
    };
    let (res, events) = common::run_sweep(cfg, Arc::new(flaky), None);
    let path = res.log_path.clone();
    assert_eq!(res.trial_errors, 6);
    let errors: Vec<&String> = events
        .iter()
        .filter_map(|e| match e {
            SweepEvent::TrialError { message, .. } => Some(message),
            _ => None,
        })
        .collect();
    assert_eq!(errors.len(), 6);
    assert!(errors.iter().any(|m| m.contains("scripted panic")));
    let log = read_run_log(&path).unwrap();
    assert_eq!(log.trials.len(), 6);
    assert_eq!(log.status(), scaling_lab::runlog::LogStatus::Interrupted);
}

/// Blocks until cancelled: for pause and per-trial cancel.
struct Slow;

impl TrialRunner for Slow {
    fn run(
        &self,
        _w: &Workload,
        spec: &TrialSpec,
        emit: &mut dyn FnMut(TrialEvent),
        cancel: &CancelToken,
    ) -> anyhow::Result<TrialOutcome> {
        emit(TrialEvent::Started { spec: spec.clone() });
        let mut step = 0;
        while !cancel.is_cancelled() {
            std::thread::sleep(Duration::from_millis(5));
            step += 1;
            // Flood progress events: a slow consumer must not block this loop.
            for _ in 0..100 {
                emit(TrialEvent::Step(StepStats {
                    step,
                    loss: 1.0,
                    lr: 0.1,
                    loss_scale: 1.0,
                    skipped_steps: 0,
                    examples_per_s: 0.0,
                    compute_s: 0.0,
                    exchange_s: 0.0,
                }));
            }
        }
        Ok(TrialOutcome::bare(Outcome::Cancelled { step }, step))
    }
    fn backend(&self) -> String {
        "slow".into()
    }
}

#[test]
fn pause_cancel_trial_and_slow_consumer() {
    let (_dir, cfg) = small_config(&[8, 16], 2, 2);
    // A tiny channel that nobody reads for a while.
    let (tx, rx) = sync_channel(8);
    let h = start_sweep(cfg, Arc::new(Slow), tx, None).unwrap();
    let c = h.control();
    std::thread::sleep(Duration::from_millis(150));
    // Step events were dropped rather than blocking: both trials are running.
    c.pause();
    let mut running = c.running_trials();
    for _ in 0..100 {
        if running.len() == 2 {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
        running = c.running_trials();
    }
    assert_eq!(running, vec![0, 1]);
    let d = std::thread::spawn(move || drain(rx));
    // Skipping trial 0 records it as cancelled; paused, so no new trial starts.
    assert!(c.cancel_trial(0));
    assert!(c.cancel_trial(3)); // queued: never starts
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(c.running_trials(), vec![1]);
    c.resume();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(c.running_trials(), vec![1, 2]);
    c.cancel();
    let res = h.join().unwrap();
    let events = d.join().unwrap();
    assert!(res.cancelled);
    assert!(events
        .iter()
        .any(|e| matches!(e, SweepEvent::Paused { paused: true })));
    assert!(events
        .iter()
        .any(|e| matches!(e, SweepEvent::Paused { paused: false })));
    let log = read_run_log(&res.log_path).unwrap();
    // Trials 0 and 3 were skipped by the user (recorded); 1 and 2 were interrupted (not recorded).
    let ids: Vec<u64> = log.trials.iter().map(|t| t.trial_id).collect();
    assert_eq!(ids, vec![0, 3]);
    assert!(log
        .trials
        .iter()
        .all(|t| matches!(t.outcome.outcome, Outcome::Cancelled { .. })));
    assert_eq!(
        res.analysis
            .per_batch
            .iter()
            .map(|p| p.counts.cancelled)
            .sum::<usize>(),
        2
    );
}

#[test]
fn bad_config_and_incompatible_resume_are_errors() {
    let (_dir, mut cfg) = config(OptimizerKind::Sgd);
    cfg.devices = DeviceSpec::Cpu { workers: 3 };
    let (tx, _rx) = sync_channel(16);
    let e = start_sweep(cfg, Arc::new(NqmRunner), tx, None)
        .err()
        .unwrap();
    assert!(e.to_string().contains("does not split"), "{e}");

    let (_dir2, mut cfg) = small_config(&[4], 1, 3);
    let path = common::run_sweep(cfg.clone(), Arc::new(NqmRunner), None)
        .0
        .log_path;
    cfg.seed = 7;
    let (tx, _rx) = sync_channel(16);
    let e = start_sweep(cfg, Arc::new(NqmRunner), tx, Some(path))
        .err()
        .unwrap();
    assert!(e.to_string().contains("seed"), "{e}");
}

/// The headless view folds the events into progress lines; the report that follows is the
/// joined sweep's (`report::of_sweep`), the same one `report LOG` builds from the log.
#[test]
fn headless_progress_then_the_report_of_the_joined_sweep() {
    let (_dir, mut cfg) = config(OptimizerKind::Momentum);
    cfg.trials_per_batch = 2;
    let (tx, rx) = sync_channel(4096);
    let h = start_sweep(cfg, Arc::new(NqmRunner), tx, None).unwrap();
    let path = h.log_path().to_path_buf();
    let mut out = Vec::new();
    assert!(scaling_lab::report::headless::run_headless(rx, &mut out));
    let res = h.join().unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.starts_with("sweep nqm-momentum: 6 batch sizes × 2 trials = 12"),
        "{text}"
    );
    // one line per finished trial, except those stopped early: one summary with their count
    let early: usize = text
        .lines()
        .find(|l| l.contains("stopped early at their B's best step count"))
        .map_or(0, |l| l.split_whitespace().next().unwrap().parse().unwrap());
    assert_eq!(
        text.lines().filter(|l| l.starts_with('[')).count() + early,
        12,
        "{text}"
    );
    assert!(!text.contains("stopped early at step"), "{text}");
    let opts = scaling_lab::report::ReportOptions::default();
    let report = scaling_lab::report::of_sweep(&res, &opts);
    assert_eq!(report.analysis, res.analysis);
    assert_eq!(report.trials_done, 12);
    let from_log = scaling_lab::report::Report::from_log(&read_run_log(&path).unwrap(), 1024);
    assert_eq!(report, from_log);
    let mut counts = res.counts;
    counts.search.done = 5;
    let msg = scaling_lab::report::headless::resume_message(&path, &counts);
    assert!(
        msg.contains("scaling-lab sweep --resume") && msg.contains("5 of 12"),
        "{msg}"
    );
}

/// Early stopping at the best step count so far never changes S(B) or the best trial; it only
/// shortens trials that could not win, and they are marked as such.
#[test]
fn early_stopping_keeps_steps_to_target() {
    let run = |early: bool| {
        let (_dir, mut cfg) = config(OptimizerKind::Momentum);
        cfg.concurrency = 1;
        cfg.trials_per_batch = 8;
        cfg.preset.sweep.early_stopping = early;
        let (res, _) = common::run_sweep(cfg, Arc::new(NqmRunner), None);
        (res.analysis, read_run_log(&res.log_path).unwrap())
    };
    let (full, full_log) = run(false);
    let (early, early_log) = run(true);
    let curve = |a: &Analysis| -> Vec<(usize, Option<u64>, Option<u64>)> {
        a.per_batch
            .iter()
            .map(|p| (p.batch_size, p.steps, p.best_trial))
            .collect()
    };
    assert_eq!(curve(&early), curve(&full));
    assert!(full.per_batch.iter().all(|p| p.counts.early_stopped == 0));
    let stopped: usize = early.per_batch.iter().map(|p| p.counts.early_stopped).sum();
    assert!(stopped > 0, "no trial was stopped early");
    let steps =
        |l: &scaling_lab::runlog::RunLog| -> u64 { l.trials.iter().map(|t| t.outcome.steps).sum() };
    assert!(
        steps(&early_log) < steps(&full_log),
        "{} vs {}",
        steps(&early_log),
        steps(&full_log)
    );
    // A stopped trial ran at most its B's best steps (known before it started).
    for t in &early_log.trials {
        if let Outcome::NotReached {
            budget,
            early_stopped: true,
        } = t.outcome.outcome
        {
            let best = early
                .per_batch
                .iter()
                .find(|p| p.batch_size == t.spec.batch_size)
                .and_then(|p| p.steps)
                .unwrap();
            assert!(budget >= best && t.outcome.steps <= budget, "{t:?}");
        }
    }
}

/// With several trials at once, early stopping still cuts every trial at the cap a one-at-a-time
/// sweep gives it: a trial never starts while another at its B runs, so its cap is the best of all
/// trials before it at its B, however the trials' finishing order is scrambled.
#[test]
fn early_stopping_caps_do_not_depend_on_concurrency() {
    let run = |concurrency: usize| {
        let (_dir, mut cfg) = config(OptimizerKind::Momentum);
        cfg.concurrency = concurrency;
        // two B and three at once: a trial's predecessors at its B are often still running
        cfg.batch_sizes = vec![16, 256];
        cfg.trials_per_batch = 12;
        assert!(cfg.preset.sweep.early_stopping);
        // trials take 0-9 ms before they run, so they finish in an order of their own
        let runner = Arc::new(BeforeNqm {
            before: |s: &TrialSpec| {
                std::thread::sleep(Duration::from_millis(s.trial_id * 7 % 10));
                Ok(())
            },
            backend: "nqm-closed-form",
        });
        let (res, _) = common::run_sweep(cfg, runner, None);
        let log = read_run_log(&res.log_path).unwrap();
        let mut per_trial: Vec<(u64, Outcome, u64)> = log
            .trials
            .iter()
            .map(|t| (t.trial_id, t.outcome.outcome.clone(), t.outcome.steps))
            .collect();
        per_trial.sort_by_key(|t| t.0);
        (
            res.analysis,
            per_trial,
            log.trials.iter().map(|t| t.trial_id).collect::<Vec<_>>(),
        )
    };
    let (one, one_trials, _) = run(1);
    let (three, three_trials, order) = run(3);
    assert_eq!(one_trials.len(), 24);
    let stopped = one_trials
        .iter()
        .filter(|t| {
            matches!(
                t.1,
                Outcome::NotReached {
                    early_stopped: true,
                    ..
                }
            )
        })
        .count();
    assert!(
        stopped > 0,
        "no trial was stopped early: the test shows nothing"
    );
    assert!(
        order.windows(2).any(|w| w[0] > w[1]),
        "three at once finished in plan order: the test shows nothing"
    );
    assert_eq!(one_trials, three_trials);
    assert_eq!(one.per_batch, three.per_batch);
}

/// `--until` places its trials from the finished ones in waves that start when nothing runs, so
/// with several trials at once which trials it adds, and their outcomes, do not depend on which
/// trial happened to finish first.
#[test]
fn until_places_the_same_trials_however_the_trials_finish() {
    let run = |jitter: u64| {
        let (_dir, mut cfg) = config(OptimizerKind::Momentum);
        cfg.concurrency = 2;
        cfg.trials_per_batch = 3;
        cfg.until = Some(0.02);
        cfg.max_trials = Some(48);
        let runner = Arc::new(BeforeNqm {
            before: move |s: &TrialSpec| {
                std::thread::sleep(Duration::from_millis((s.trial_id * jitter) % 11));
                Ok(())
            },
            backend: "nqm-closed-form",
        });
        let (res, _) = common::run_sweep(cfg, runner, None);
        let log = read_run_log(&res.log_path).unwrap();
        let mut per_trial: Vec<(u64, Outcome)> = log
            .trials
            .iter()
            .map(|t| (t.trial_id, t.outcome.outcome.clone()))
            .collect();
        per_trial.sort_by_key(|t| t.0);
        per_trial
    };
    let a = run(3);
    assert!(
        a.len() > 24,
        "--until added few trials: the test shows little ({})",
        a.len()
    );
    assert_eq!(a, run(7));
    assert_eq!(a, run(5));
}

/// A GPU-shaped fake: trials at B ≥ 256 run out of device memory (as cubecl reports it: an
/// error at B = 256, a panic at B = 1024); the others record the device they were given and how
/// many trials ran on it at once.
struct FakeGpu {
    running: [AtomicUsize; 2],
    peak: [AtomicUsize; 2],
    wrong: AtomicUsize,
}

impl TrialRunner for FakeGpu {
    fn run(
        &self,
        w: &Workload,
        spec: &TrialSpec,
        emit: &mut dyn FnMut(TrialEvent),
        cancel: &CancelToken,
    ) -> anyhow::Result<TrialOutcome> {
        let d = match &spec.devices {
            DeviceSpec::Cuda { devices } if devices.len() == 1 && devices[0] < 2 => devices[0],
            _ => {
                self.wrong.fetch_add(1, Ordering::SeqCst);
                0
            }
        };
        let now = self.running[d].fetch_add(1, Ordering::SeqCst) + 1;
        self.peak[d].fetch_max(now, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(5));
        self.running[d].fetch_sub(1, Ordering::SeqCst);
        match spec.batch_size {
            256 => anyhow::bail!(
                "worker 0 failed: called `Result::unwrap()` on an `Err` value: can't allocate buffer of size: 17179869184"
            ),
            1024 => panic!(
                "Unknown error happened during execution\nCUDA allocation error: DriverError(CUDA_ERROR_OUT_OF_MEMORY, \"out of memory\")"
            ),
            _ => NqmRunner.run(w, spec, emit, cancel),
        }
    }
    fn backend(&self) -> String {
        "fake-gpu".into()
    }
}

#[test]
fn packed_gpu_trials_get_one_device_each_and_oom_is_an_outcome() {
    let (_dir, mut cfg) = config(OptimizerKind::Sgd);
    cfg.trials_per_batch = 4;
    cfg.devices = DeviceSpec::Cuda {
        devices: vec![0, 1],
    };
    cfg.preset.sweep.trials_per_device = 2;
    cfg.preset.sweep.early_stopping = false;
    let fake = Arc::new(FakeGpu {
        running: [AtomicUsize::new(0), AtomicUsize::new(0)],
        peak: [AtomicUsize::new(0), AtomicUsize::new(0)],
        wrong: AtomicUsize::new(0),
    });
    let (tx, rx) = sync_channel(4096);
    let h = start_sweep(cfg.clone(), fake.clone(), tx, None).unwrap();
    let path = h.log_path().to_path_buf();
    let d = std::thread::spawn(move || drain(rx));
    let res = h.join().unwrap();
    d.join().unwrap();
    assert_eq!(
        res.trial_errors, 0,
        "out of memory is an outcome, not an error"
    );
    assert_eq!(
        fake.wrong.load(Ordering::SeqCst),
        0,
        "every trial got one device of the two"
    );
    for dev in 0..2 {
        let p = fake.peak[dev].load(Ordering::SeqCst);
        assert!((1..=2).contains(&p), "device {dev}: {p} trials at once");
    }
    let log = read_run_log(&path).unwrap();
    assert_eq!(log.trials.len(), 24);
    let oom: Vec<_> = log
        .trials
        .iter()
        .filter(|t| matches!(t.outcome.outcome, Outcome::Oom { .. }))
        .collect();
    assert_eq!(oom.len(), 8);
    for t in &oom {
        assert!(
            matches!(t.outcome.outcome, Outcome::Oom { batch_size, .. } if batch_size == t.spec.batch_size)
        );
        assert!(t.spec.batch_size >= 256);
    }
    let a = log.analysis();
    let at = |b: usize| a.per_batch.iter().find(|p| p.batch_size == b).unwrap();
    assert_eq!(
        (at(256).counts.oom, at(1024).counts.oom, at(64).counts.oom),
        (4, 4, 0)
    );
    assert_eq!(at(256).steps, None);
    // the report counts them, and a resume accepts the logged device assignment
    let report = scaling_lab::report::Report::from_log_with(&log, 8, None);
    assert!(
        report.text().contains("out of device memory: 8 trial(s)"),
        "{}",
        report.text()
    );
    let (tx, rx) = sync_channel(4096);
    let h = start_sweep(cfg, fake, tx, Some(path)).unwrap();
    drop(rx);
    assert_eq!(h.join().unwrap().trials_run, 0);
}
