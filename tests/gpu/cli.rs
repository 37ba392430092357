//! The wgpu tier through the binary (`cargo test --release --features wgpu --test gpu cli`):
//! `train` and `sweep` on `--devices wgpu:0` (lavapipe in CI), packing two trials on one adapter,
//! an oversized batch recorded as `oom` with its B while the sweep goes on, the bf16 refusal
//! before any trial, a missing adapter, `--devices` parsing, `devices --probe`, and `devices
//! --check` (the adapter's generic convolution and tensor-op updates against the CPU's own kernels).
#![cfg(feature = "wgpu")]

use crate::common;

use std::path::Path;
use std::process::Command;

use crate::common::{only_log, run_ok, BIN};
use scaling_lab::core::trial::Outcome;
use scaling_lab::runlog::reader::read_run_log;

fn run(args: &[&str]) -> (i32, String, String) {
    run_env(args, &[])
}

fn run_env(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("run scaling-lab");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A failure is one clear line on stderr, never a panic.
fn one_clear_line(stderr: &str) {
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!stderr.contains("RUST_BACKTRACE"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
}

/// A digits trial on wgpu:0 at B = 64 (flags follow).
const DIGITS_TRIAL: [&str; 7] = [
    "train",
    "--preset",
    "digits-mlp-momentum",
    "--devices",
    "wgpu:0",
    "--batch-size",
    "64",
];

#[test]
fn a_digits_trial_trains_on_wgpu_through_the_cli() {
    if !common::wgpu_or_skip("a_digits_trial_trains_on_wgpu_through_the_cli") {
        return;
    }
    let out = run_ok(&[&DIGITS_TRIAL[..], &["--target", "0.15", "--json"]].concat());
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let backend = v["backend"].as_str().unwrap();
    assert!(backend.starts_with("burn-wgpu (wgpu:0 "), "{backend}");
    assert_eq!(v["spec"]["devices"]["kind"], "wgpu");
    assert_eq!(v["outcome"]["outcome"]["status"], "reached", "{v}");
    assert!(
        v["outcome"]["throughput"]["examples_per_s"]
            .as_f64()
            .unwrap()
            > 0.0
    );
}

/// Log start and end of every trial (finish time minus its wall time), by trial id.
fn intervals(log: &Path) -> Vec<(u64, f64, f64)> {
    let l = read_run_log(log).unwrap();
    l.trials
        .iter()
        .map(|t| {
            let end = chrono::DateTime::parse_from_rfc3339(&t.finished)
                .unwrap()
                .timestamp_millis() as f64
                / 1e3;
            (t.trial_id, end - t.outcome.wall_s, end)
        })
        .collect()
}

/// A short digits sweep on wgpu:0 with two trials packed on the adapter at once: every trial is
/// recorded on `wgpu:0`, two of them overlapped in time, the report reads the log.
#[test]
fn a_short_digits_sweep_packs_two_trials_on_one_adapter() {
    if !common::wgpu_or_skip("a_short_digits_sweep_packs_two_trials_on_one_adapter") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().to_str().unwrap();
    let out = run_ok(&[
        "sweep",
        "digits-mlp-momentum",
        "--runs-dir",
        runs,
        "--devices",
        "wgpu:0",
        "--trials-per-device",
        "2",
        "--batch-sizes",
        "32,64",
        "--trials",
        "2",
        // to 15 % validation error (tens of steps on lavapipe, not hundreds)
        "--target",
        "0.15",
        // the search's four trials (the confirm stage's fresh seeds are CPU-tested elsewhere)
        "--confirm",
        "off",
        "--json",
    ]);
    let log = only_log(dir.path());
    let l = read_run_log(&log).unwrap();
    assert!(
        l.header.backend.starts_with("burn-wgpu (wgpu:0 "),
        "{}",
        l.header.backend
    );
    assert_eq!(l.trials.len(), 4, "{out}");
    for t in &l.trials {
        assert_eq!(t.spec.devices.label(), "wgpu:0");
    }
    assert!(
        l.trials
            .iter()
            .any(|t| matches!(t.outcome.outcome, Outcome::Reached { .. })),
        "no trial reached the target"
    );
    let iv = intervals(&log);
    let overlapping = iv
        .iter()
        .any(|a| iv.iter().any(|b| a.0 < b.0 && a.1 < b.2 && b.1 < a.2));
    assert!(overlapping, "no two trials ran at once: {iv:?}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert!(v.is_object(), "{out}");
}

/// A real out-of-memory on the device: an MLP with a 40,960-unit hidden layer at B = 1024 needs a
/// 160 MiB activation, past lavapipe's largest buffer (128 MiB), which CubeCL's memory pools refuse
/// ("can't allocate buffer of size", BufferTooBig). That trial is recorded as `oom` with its B, and
/// the sweep goes on to the B that fits (B = 8), which trains for real (two steps and an
/// evaluation: the width costs kernel compiles, not coverage). The out-of-memory happens in the
/// sweep's device-memory probe (a child process, `train::fit_probe`), so the sweep's own device is
/// not poisoned by CubeCL's device-thread panic (without the probe, measured: the B = 8 trial after
/// it failed too) and no panic text reaches the user.
#[test]
fn an_oversized_batch_is_recorded_as_oom_and_the_sweep_goes_on() {
    if !common::wgpu_or_skip("an_oversized_batch_is_recorded_as_oom_and_the_sweep_goes_on") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let preset = dir.path().join("wide.toml");
    let base =
        std::fs::read_to_string(common::root().join("presets/digits-mlp-momentum.toml")).unwrap();
    let text = base
        .replace(
            "name = \"digits-mlp-momentum\"",
            "name = \"digits-mlp-wide\"",
        )
        .replace("hidden = [64]", "hidden = [40960]")
        .replace("step_budget = 3000", "step_budget = 2");
    assert!(text.contains("40960") && text.contains("step_budget = 2"));
    std::fs::write(&preset, text).unwrap();
    let runs = dir.path().join("runs");
    // autotune benchmarks every kernel variant at these sizes on first use: minutes on lavapipe
    let minimal = [("CUBECL_AUTOTUNE_LEVEL", "minimal")];
    let (code, stdout, stderr) = run_env(
        &[
            "sweep",
            preset.to_str().unwrap(),
            "--runs-dir",
            runs.to_str().unwrap(),
            "--devices",
            "wgpu:0",
            "--batch-sizes",
            "1024,8",
            "--trials",
            "1",
            "--concurrency",
            "1",
        ],
        &minimal,
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let l = read_run_log(&only_log(&runs)).unwrap();
    assert_eq!(l.trials.len(), 2, "{stdout}\n{stderr}");
    let at = |b: usize| {
        l.trials
            .iter()
            .find(|t| t.spec.batch_size == b)
            .unwrap_or_else(|| panic!("no trial at B = {b}"))
    };
    assert!(
        matches!(
            at(1024).outcome.outcome,
            Outcome::Oom {
                batch_size: 1024,
                ..
            }
        ),
        "{:?}",
        at(1024).outcome
    );
    // it trained (a 40,960-wide layer at the 64-wide preset's learning rate may also diverge)
    assert!(
        matches!(
            at(8).outcome.outcome,
            Outcome::NotReached { .. } | Outcome::Reached { .. } | Outcome::Diverged { .. }
        ),
        "{:?}",
        at(8).outcome
    );
    assert!(at(8).outcome.steps > 0, "{:?}", at(8).outcome);
    assert!(
        !at(8).outcome.evals.is_empty(),
        "no evaluation ran on the device"
    );
}

/// bf16 on wgpu is refused before any trial runs: one line naming the adapter and the reason,
/// exit 1, for `train` and for `sweep` (which writes no log).
#[test]
fn bf16_on_wgpu_is_refused_before_the_trial() {
    if !common::wgpu_or_skip("bf16_on_wgpu_is_refused_before_the_trial") {
        return;
    }
    let (code, _, err) = run(&[
        "train",
        "--preset",
        "digits-mlp-momentum",
        "--devices",
        "wgpu:0",
        "--precision",
        "bf16",
    ]);
    assert_eq!(code, 1, "{err}");
    one_clear_line(&err);
    assert!(
        err.contains("wgpu:0") && err.contains("cannot compute in bf16"),
        "{err}"
    );
    assert!(err.contains("WGSL has no bf16"), "{err}");

    let dir = tempfile::tempdir().unwrap();
    let (code, _, err) = run(&[
        "sweep",
        "digits-mlp-momentum",
        "--runs-dir",
        dir.path().to_str().unwrap(),
        "--devices",
        "wgpu:0",
        "--precision",
        "bf16",
        "--batch-sizes",
        "32",
        "--trials",
        "1",
    ]);
    assert_eq!(code, 1, "{err}");
    one_clear_line(&err);
    assert!(err.contains("cannot compute in bf16"), "{err}");
    assert!(common::find_log(dir.path()).is_none(), "a log was written");
}

#[test]
fn device_lists_are_parsed_and_a_missing_adapter_is_one_line() {
    if !common::wgpu_or_skip("device_lists_are_parsed_and_a_missing_adapter_is_one_line") {
        return;
    }
    let (code, _, err) = run(&[
        "train",
        "--preset",
        "digits-mlp-momentum",
        "--devices",
        "wgpu:7",
    ]);
    assert_eq!(code, 1, "{err}");
    one_clear_line(&err);
    assert!(err.contains("wgpu:7 does not exist ("), "{err}");
    assert!(err.contains("wgpu adapter"), "{err}");
    for (bad, says) in [
        ("wgpu:0,cuda:1", "mixes wgpu and cuda"),
        ("wgpu:x", "is not wgpu:N"),
        ("vulkan:0", "is not cuda:N or wgpu:N"),
    ] {
        let (code, _, err) = run(&["train", "--preset", "digits-mlp-momentum", "--devices", bad]);
        assert_eq!(code, 2, "{bad}: {err}");
        one_clear_line(&err);
        assert!(err.contains(says), "{bad}: {err}");
    }
    let (code, _, err) = run(&[
        "train",
        "--preset",
        "digits-mlp-momentum",
        "--devices",
        "wgpu:0,0",
        "--batch-size",
        "63",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not divisible by 2 replicas"), "{err}");
}

#[test]
fn devices_lists_the_adapter_and_probes_its_precisions() {
    if !common::wgpu_or_skip("devices_lists_the_adapter_and_probes_its_precisions") {
        return;
    }
    let out = run_ok(&["devices"]);
    assert!(out.contains("wgpu:0 "), "{out}");
    let v: serde_json::Value =
        serde_json::from_str(run_ok(&["devices", "--probe", "--json"]).trim()).unwrap();
    let a = &v["wgpu"][0];
    assert_eq!(a["device"], "wgpu:0");
    assert_eq!(a["precisions"]["fp32"], true, "{v}");
    assert_eq!(a["precisions"]["fp16"], true, "{v}");
    let bf16 = a["precisions"]["bf16"].as_str().unwrap();
    assert!(bf16.contains("WGSL has no bf16"), "{bf16}");
    assert!(a["max_binding_bytes"].as_u64().unwrap() > 0);
}

/// `devices --check` on lavapipe: Burn's generic convolution block (values and the gradients of
/// input, weights and bias) and the tensor-op SGD, momentum, Nesterov and Adam updates on wgpu:0
/// equal the CPU's im2col + gemm and its fused in-place update to f32 rounding; exit 0, one line
/// per check in text, the same verdicts in JSON.
#[test]
fn devices_check_finds_the_adapter_computes_what_the_cpu_computes() {
    if !common::wgpu_or_skip("devices_check_finds_the_adapter_computes_what_the_cpu_computes") {
        return;
    }
    let (code, out, err) = run(&["devices", "--check", "--json"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let c = &v["checks"][0];
    assert_eq!(c["device"], "wgpu:0", "{v}");
    assert_eq!(c["agrees"], true, "{v}");
    let names: Vec<&str> = c["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "conv block: values",
            "conv block: d/dx",
            "conv block: d/dw",
            "conv block: d/db",
            "sgd update",
            "momentum update",
            "nesterov update",
            "adam update"
        ],
        "{v}"
    );
    for k in c["checks"].as_array().unwrap() {
        let (d, tol) = (
            k["max_abs_diff"].as_f64().unwrap(),
            k["tolerance"].as_f64().unwrap(),
        );
        assert!(d <= tol && tol <= 1e-4, "{k}");
    }
    let (code, out, err) = run(&["devices", "--check"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("wgpu:0 agrees with the CPU: 8 checks within f32 rounding"),
        "{out}"
    );
    assert_eq!(out.matches(" ≤ ").count(), 8, "{out}");
}

/// CubeCL's caches are the binary's, per user and device kind (src/train/kernel_cache.rs): a trial
/// on wgpu:0 writes its autotune results under `SCALING_LAB_KERNEL_CACHE/wgpu`, `devices` names
/// that directory, and `off` leaves it alone.
#[test]
fn the_kernel_cache_goes_where_the_variable_says_and_off_turns_it_off() {
    if !common::wgpu_or_skip("the_kernel_cache_goes_where_the_variable_says_and_off_turns_it_off") {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("k");
    let d = dir.to_str().unwrap();
    let train = [&DIGITS_TRIAL[..], &["--steps", "10", "--json"]].concat();
    let (code, out, err) = run_env(&train, &[("SCALING_LAB_KERNEL_CACHE", d)]);
    assert_eq!(code, 0, "{out}\n{err}");
    // CubeCL writes autotune/<its version>/<device>/*.json.log there
    let autotune = dir.join("wgpu/autotune");
    let entries = std::fs::read_dir(&autotune).map_or(0, |d| d.count());
    assert!(entries > 0, "no autotune cache in {}", autotune.display());
    let (code, out, err) = run_env(&["devices", "--json"], &[("SCALING_LAB_KERNEL_CACHE", d)]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["kernel_cache"], dir.join("wgpu").to_str().unwrap(), "{v}");
    let (code, out, _) = run_env(&["devices"], &[("SCALING_LAB_KERNEL_CACHE", d)]);
    assert_eq!(code, 0);
    assert!(
        out.contains(&format!("kernel cache: {}", dir.join("wgpu").display())),
        "{out}"
    );

    let (code, out, err) = run_env(&train, &[("SCALING_LAB_KERNEL_CACHE", "off")]);
    assert_eq!(code, 0, "{out}\n{err}");
    let (_, out, _) = run_env(
        &["devices", "--json"],
        &[("SCALING_LAB_KERNEL_CACHE", "off")],
    );
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert!(
        v["kernel_cache"]["off"].as_str().unwrap().contains("off"),
        "{v}"
    );
}
