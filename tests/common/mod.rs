//! Shared set-up of the integration tests (`mod common;` in each file that needs it): the binary
//! and the run logs it writes, small NQM sweeps run to the end, and the digits workload and trial
//! the engine tests train. (The TUI tests' scripted sweep is in `tests/tui/support.rs`.)
#![allow(dead_code)]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::sync_channel;
use std::sync::Arc;

use scaling_lab::core::events::{SweepEvent, TrialEvent};
use scaling_lab::core::runner::TrialRunner;
use scaling_lab::core::trial::{CancelToken, DeviceSpec, TrialOutcome, TrialSpec};
use scaling_lab::data::spec::DatasetSpec;
use scaling_lab::sweep::{start_sweep, SweepConfig, SweepResult};
use scaling_lab::train::{BurnRunner, TrainOptions};
use scaling_lab::workload::spec::*;

pub const BIN: &str = env!("CARGO_BIN_EXE_scaling-lab");

/// Whether the wgpu tier's test `test` can run: a wgpu adapter exists. Without one the test is
/// skipped with a loud line on stderr, so `cargo test --release --features wgpu` passes on a
/// machine without Vulkan — unless `SCALING_LAB_REQUIRE_WGPU=1` (what `.ci/run` sets once it has
/// installed lavapipe), where a missing adapter fails the test.
///
/// The tier runs at CubeCL's minimal autotune level unless `CUBECL_AUTOTUNE_LEVEL` says
/// otherwise: on lavapipe the default level benchmarks every kernel variant on first use, which
/// cost every family's first steps minutes of CPU (measured: 8.5 min of CPU time for the
/// families' test at the default level, 3.6 min at minimal, from cold caches). Set once, before
/// the first probe reads CubeCL's configuration; the binaries the tier starts inherit it.
#[cfg(feature = "wgpu")]
pub fn wgpu_or_skip(test: &str) -> bool {
    static LEVEL: std::sync::Once = std::sync::Once::new();
    LEVEL.call_once(|| {
        if std::env::var_os("CUBECL_AUTOTUNE_LEVEL").is_none() {
            std::env::set_var("CUBECL_AUTOTUNE_LEVEL", "minimal");
        }
    });
    let why = match scaling_lab::train::wgpu::probe() {
        Ok(found) if !found.is_empty() => return true,
        Ok(_) => "the probe found none".to_string(),
        Err(e) => e,
    };
    if std::env::var_os("SCALING_LAB_REQUIRE_WGPU").is_some_and(|v| v != "0") {
        panic!("{test}: no wgpu adapter ({why}) and SCALING_LAB_REQUIRE_WGPU is set");
    }
    eprintln!(
        "SKIPPED {test}: no wgpu adapter ({why}); install Mesa's lavapipe (apt-get install \
         mesa-vulkan-drivers libvulkan1) to run it, or set SCALING_LAB_REQUIRE_WGPU=1 to fail instead"
    );
    false
}

/// One wgpu test of a process at a time (hold the guard for the whole test): with several tests
/// training on adapter 0 from parallel test threads, Burn's fusion client failed a call
/// (`CallError`) in one of them on lavapipe.
#[cfg(feature = "wgpu")]
pub fn wgpu_serial() -> std::sync::MutexGuard<'static, ()> {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ONE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `scaling-lab ARGS` to its end and returns its stdout; panics with both streams unless it
/// exits 0.
pub fn run_ok(args: &[&str]) -> String {
    let out = Command::new(BIN)
        .args(args)
        .output()
        .expect("run scaling-lab");
    assert!(
        out.status.success(),
        "{args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// What a rerun of the same trials measures anew (timings, the projection built on them, the
/// noise scale) and the log's path: left out when two reports of the same trials are compared.
pub const MEASURED_FIELDS: &[&str] = &[
    "log",
    "wall_s",
    "warnings",
    "backend",
    "projections",
    "projection_backend",
    "projection_check",
    "projection_link",
    "projection_note",
    "exchange_check",
    "noise",
    "b_simple",
    "b_simple_interval",
    "noise_interval",
    "noise_prediction",
    "notes",
];

/// `report LOG --json` without [`MEASURED_FIELDS`] and the `extra` fields, at every depth.
pub fn report_without_measured(log: &Path, extra: &[&str]) -> serde_json::Value {
    let out = Command::new(BIN)
        .args(["report", "--json"])
        .arg(log)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    strip_fields(&mut v, extra);
    v
}

fn strip_fields(v: &mut serde_json::Value, extra: &[&str]) {
    match v {
        serde_json::Value::Object(m) => {
            m.retain(|k, _| !MEASURED_FIELDS.contains(&k.as_str()) && !extra.contains(&k.as_str()));
            m.values_mut().for_each(|x| strip_fields(x, extra));
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(|x| strip_fields(x, extra)),
        _ => {}
    }
}

/// Starts `scaling-lab ARGS` with no stdin and no stdout, stderr to `stderr` (piped: read it
/// with `wait_with_output`).
pub fn spawn<S: AsRef<OsStr>>(args: &[S], stderr: Stdio) -> Child {
    Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("start scaling-lab")
}

/// The run log (`*.jsonl`) in `dir`, if there is one (yet).
pub fn find_log(dir: &Path) -> Option<PathBuf> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
}

/// The run log in `dir`; panics when there is none.
pub fn only_log(dir: &Path) -> PathBuf {
    find_log(dir).expect("a run log")
}

/// The NQM preset the sweep tests run: dim 50, target loss 0.1, evaluated every 5 steps for at
/// most 2000, η searched over [1e-3, 4].
pub fn nqm_preset(opt: OptimizerKind) -> Preset {
    Preset {
        name: format!("nqm-{}", opt.name()),
        description: "test".into(),
        workload: Workload {
            eval_every: 5,
            step_budget: 2000,
            ..Workload::nqm(50, opt, 0.1)
        },
        search: SearchSpace {
            learning_rate: [1e-3, 4.0],
            ..SearchSpace::default()
        },
        sweep: SweepDefaults::default(),
        calibrate: None,
    }
}

/// A sweep of `preset` into `runs_dir` (one CPU worker, the preset's precision; the caller sets
/// the plan).
pub fn sweep_config(preset: Preset, runs_dir: &Path) -> SweepConfig {
    SweepConfig::from_preset(preset, None, runs_dir.to_path_buf())
}

/// Runs a sweep (or resumes `resume`) to its end, every event drained on another thread: the
/// result and the events in order.
pub fn run_sweep(
    cfg: SweepConfig,
    runner: Arc<dyn TrialRunner>,
    resume: Option<PathBuf>,
) -> (SweepResult, Vec<SweepEvent>) {
    let (tx, rx) = sync_channel(4096);
    let h = start_sweep(cfg, runner, tx, resume).unwrap();
    let drainer = std::thread::spawn(move || rx.iter().collect::<Vec<_>>());
    let res = h.join().unwrap();
    (res, drainer.join().unwrap())
}

/// The bundled digits' shape: 8×8 images of one channel in 10 classes.
pub fn digits_shape() -> scaling_lab::model::InputShape {
    scaling_lab::model::InputShape::images(1, 8, 8, 10)
}

/// The digits MLP [64] the engine tests train (the MLP family's default for digits): momentum
/// (η 0.05, γ 0.9), val error ≤ 0.06, evaluated every 5 steps, at most 2000 steps.
pub fn digits_workload() -> Workload {
    let mlp = scaling_lab::model::family::registration("mlp").unwrap();
    Workload {
        dataset: Some(DatasetSpec {
            val_fraction: 0.2,
            ..DatasetSpec::named("digits")
        }),
        model: mlp
            .default_for(scaling_lab::model::Input::Images, &digits_shape())
            .unwrap(),
        optimizer: OptimizerKind::Momentum,
        target: Target {
            metric: Metric::ValError,
            value: 0.06,
        },
        targets: Vec::new(),
        eval_every: 5,
        eval_growth: 0.0,
        step_budget: 2000,
        max_examples: None,
        precision: Precision::Fp32,
        defaults: Metaparams::new(0.05, 0.9),
        grad_clip: None,
        divergence_factor: 10.0,
        transfer: None,
    }
}

/// A short workload of a registered family at its smallest size, on bundled data of the kind it
/// reads: digits' images (momentum, η 0.05, γ 0.9), Shakespeare's bytes in windows of 16 (Adam,
/// η 0.003, clipped at 1.0) or none (the noisy quadratic model, momentum); 30 steps, evaluated
/// every 10, a target no trial reaches in them. What the suites that hold every family to its
/// contracts train.
pub fn family_workload(family: &scaling_lab::model::Registration) -> Workload {
    use scaling_lab::model::Input;
    let (model, _) = family.tiny();
    let (dataset, optimizer, target, defaults, grad_clip) = match family.input {
        Input::Images => (
            DatasetSpec {
                val_fraction: 0.2,
                ..DatasetSpec::named("digits")
            },
            OptimizerKind::Momentum,
            Target {
                metric: Metric::ValError,
                value: 0.01,
            },
            Metaparams::new(0.05, 0.9),
            None,
        ),
        Input::Text => (
            DatasetSpec {
                max_bytes: Some(40_000),
                seq_len: 16,
                max_val: Some(8),
                ..DatasetSpec::named("shakespeare")
            },
            OptimizerKind::Adam,
            Target {
                metric: Metric::ValBpc,
                value: 1.0,
            },
            Metaparams::new(0.003, 0.9),
            Some(1.0),
        ),
        Input::None => {
            return Workload {
                model,
                eval_every: 10,
                step_budget: 30,
                ..Workload::nqm(10, OptimizerKind::Momentum, 1e-6)
            }
        }
    };
    Workload {
        dataset: Some(dataset),
        model,
        optimizer,
        target,
        targets: Vec::new(),
        eval_every: 10,
        eval_growth: 0.0,
        step_budget: 30,
        max_examples: None,
        precision: Precision::Fp32,
        defaults,
        grad_clip,
        divergence_factor: 10.0,
        transfer: None,
    }
}

/// A trial of `w` at its default metaparameters on `workers` CPU workers, seed 7.
pub fn cpu_trial(
    w: &Workload,
    batch_size: usize,
    workers: usize,
    precision: Precision,
) -> TrialSpec {
    TrialSpec {
        devices: DeviceSpec::Cpu { workers },
        precision,
        seed: 7,
        ..TrialSpec::cpu(batch_size, w.defaults.clone())
    }
}

/// Trains one trial with the Burn runner (a step event every step): its outcome and the training
/// loss of every step.
pub fn train(w: &Workload, spec: &TrialSpec, options: TrainOptions) -> (TrialOutcome, Vec<f64>) {
    let mut losses = vec![];
    let runner = BurnRunner::new(TrainOptions {
        step_event_interval: std::time::Duration::ZERO,
        ..options
    });
    let out = runner
        .run(
            w,
            spec,
            &mut |e| {
                if let TrialEvent::Step(st) = e {
                    losses.push(st.loss)
                }
            },
            &CancelToken::new(),
        )
        .unwrap();
    (out, losses)
}

/// The same outcome, or a confirm seed that one run stopped at its block's quorum (step c: "≥ c",
/// `GroupCut::Quorum`, when one group held the whole block) and the other ran on (a resume or a
/// Slurm array split the block across groups): then it reached at c or later. The analysis
/// censors both alike.
pub fn same_or_quorum_cut(
    a: &scaling_lab::core::trial::Outcome,
    b: &scaling_lab::core::trial::Outcome,
) -> bool {
    use scaling_lab::core::trial::Outcome;
    let consistent = |cut: &Outcome, other: &Outcome| match (cut, other) {
        (
            Outcome::NotReached {
                budget: c,
                early_stopped: true,
            },
            Outcome::Reached { step },
        ) => step >= c,
        _ => false,
    };
    a == b || consistent(a, b) || consistent(b, a)
}

fn fixture_preset(opt: OptimizerKind) -> Preset {
    Preset {
        description: "fixture".into(),
        search: SearchSpace {
            learning_rate: [1e-2, 4.0],
            one_minus_momentum: if opt.uses_momentum() {
                Some([0.01, 0.5])
            } else {
                None
            },
            decay_alpha: Some([0.01, 1.0]),
            decay_fraction: Some([0.5, 1.0]),
            ..SearchSpace::default()
        },
        ..nqm_preset(opt)
    }
}

/// The small NQM sweep the run-log fixtures come from (`tests/fixtures/valid/nqm-*.jsonl`,
/// regenerated by `cargo bench --bench runlog_fixtures`): its log path.
pub fn fixture_sweep(dir: &Path, opt: OptimizerKind) -> PathBuf {
    let cfg = SweepConfig {
        batch_sizes: vec![1, 4, 16, 64, 256],
        trials_per_batch: 4,
        concurrency: 2,
        seed: 1,
        ..sweep_config(fixture_preset(opt), dir)
    };
    run_sweep(cfg, Arc::new(scaling_lab::nqm::NqmRunner), None)
        .0
        .log_path
}
