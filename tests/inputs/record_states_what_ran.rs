//! Every flag of `train` either takes effect or is an error naming it, and a trial's
//! record states only what ran. For every optimizer × flag, through the real binary: the
//! recorded metaparameters equal the hyperparameters of the optimizer object built from them
//! (read back from it: `Opt::applied`, Burn's Adam configuration included), the flag's value is
//! in the record, and the trial differs from the run without the flag in what the flag changes.
//! The same for the sweep plan of every bundled preset and for the NQM's closed form.

use std::process::Command;

use burn::backend::{Autodiff, Flex};
use serde_json::Value;

use scaling_lab::nqm::NqmState;
use scaling_lab::train::optim::{Applied, Opt};
use scaling_lab::workload::presets::find_preset;
use scaling_lab::workload::spec::{Metaparams, OptimizerKind, Precision};

type B = Autodiff<Flex>;

const BIN: &str = env!("CARGO_BIN_EXE_scaling-lab");

/// `train --preset P --batch-size 16 --steps S --json EXTRA` (S: 20 for the NQM, whose presets
/// evaluate every 10 steps; else 6, unless EXTRA sets it): the JSON object, or (exit code,
/// stderr).
fn train(preset: &str, extra: &[&str]) -> Result<Value, (Option<i32>, String)> {
    let steps = if preset.starts_with("nqm") { "20" } else { "6" };
    let mut args = vec!["train", "--preset", preset, "--batch-size", "16", "--json"];
    if !extra.contains(&"--steps") {
        args.extend(["--steps", steps]);
    }
    let out = Command::new(BIN)
        .args(args)
        .args(extra)
        .env_remove("SCALING_LAB_DATA_DIR")
        .output()
        .expect("run scaling-lab");
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    if !out.status.success() {
        return Err((out.status.code(), err));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| (Some(0), format!("{e}: {err}")))
}

/// The hyperparameters of the optimizer the trainer builds from `mp` (`Opt::new`, as
/// `train::trainer` does), read back from the object.
fn optimizer_state(kind: OptimizerKind, mp: &Metaparams) -> Applied {
    Opt::<B>::new(kind, mp).applied()
}

/// The record claims exactly what the optimizer applies: γ (0 = no momentum buffer), β2 and ε
/// (0 = no second moment). Adam's are f32 in Burn.
fn assert_record_is_state(what: &str, kind: OptimizerKind, rec: &Metaparams) {
    let a = optimizer_state(kind, rec);
    let f32_of = |v: f64| {
        if kind == OptimizerKind::Adam {
            v as f32 as f64
        } else {
            v
        }
    };
    assert_eq!(
        f32_of(rec.momentum),
        a.momentum.unwrap_or(0.0),
        "{what}: momentum"
    );
    assert_eq!(f32_of(rec.beta2), a.beta2.unwrap_or(0.0), "{what}: beta2");
    assert_eq!(
        f32_of(rec.epsilon),
        a.epsilon.unwrap_or(0.0),
        "{what}: epsilon"
    );
    assert_eq!(
        a.nesterov,
        kind == OptimizerKind::Nesterov,
        "{what}: nesterov"
    );
}

fn evals(v: &Value) -> Vec<(u64, f64, f64)> {
    v["outcome"]["evals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["step"].as_u64().unwrap(),
                e["metric"].as_f64().unwrap(),
                e["train_loss"].as_f64().unwrap(),
            )
        })
        .collect()
}

fn metaparams(v: &Value) -> Metaparams {
    serde_json::from_value(v["spec"]["metaparams"].clone()).unwrap()
}

/// (flags, what the flag changed: a check of the run with it against the run without it).
type Effect = fn(&Value, &Value, &Metaparams) -> bool;

fn flag_cases() -> Vec<(&'static [&'static str], Effect)> {
    vec![
        (&["--lr", "0.01"], |base, r, _| {
            metaparams(r).learning_rate == 0.01 && evals(r) != evals(base)
        }),
        (&["--momentum", "0.5"], |base, r, _| {
            metaparams(r).momentum == 0.5 && evals(r) != evals(base)
        }),
        // B = 16 from base 64: η × ½ (sqrt), × ¼ (linear, the preset's base_batch 64)
        (
            &["--lr-rule", "sqrt", "--base-batch", "64"],
            |base, r, d| {
                (metaparams(r).learning_rate - d.learning_rate * 0.5).abs() < 1e-12
                    && evals(r) != evals(base)
            },
        ),
        (&["--lr-rule", "linear"], |base, r, d| {
            (metaparams(r).learning_rate - d.learning_rate * 0.25).abs() < 1e-12
                && evals(r) != evals(base)
        }),
        (&["--precision", "bf16"], |base, r, _| {
            r["spec"]["precision"] == "bf16" && evals(r) != evals(base)
        }),
        (
            &["--precision", "fp16", "--loss-scale", "1024"],
            |_, r, _| {
                r["spec"]["precision"] == "fp16" && r["outcome"]["final_loss_scale"] == 1024.0
            },
        ),
        (&["--seed", "3"], |base, r, _| {
            r["spec"]["seed"] == 3 && evals(r) != evals(base)
        }),
        (&["--eval-every", "3"], |_, r, _| {
            evals(r).iter().map(|e| e.0).collect::<Vec<_>>() == [3, 6]
        }),
        (&["--steps", "4"], |_, r, _| r["outcome"]["steps"] == 4),
        (&["--target", "0.95"], |_, r, _| {
            r["target"]["value"] == 0.95 && r["outcome"]["outcome"]["status"] == "reached"
        }),
        (&["--no-noise-scale"], |base, r, _| {
            r["outcome"]["noise"]["b_simple"].is_null()
                && !base["outcome"]["noise"]["b_simple"].is_null()
        }),
        (&["--workers", "2"], |base, r, _| {
            r["spec"]["devices"]["workers"] == 2
                && r["outcome"]["throughput"]["exchanged_bytes_per_step"]
                    .as_u64()
                    .unwrap()
                    > 0
                && base["outcome"]["throughput"]["exchanged_bytes_per_step"] == 0
        }),
    ]
}

#[test]
fn every_train_flag_takes_effect_or_is_refused_and_the_record_is_the_optimizer_state() {
    let mut failures = vec![];
    for (preset, kind) in [
        ("digits-mlp-sgd", OptimizerKind::Sgd),
        ("digits-mlp-momentum", OptimizerKind::Momentum),
        ("digits-mlp-nesterov", OptimizerKind::Nesterov),
        ("digits-mlp-adam", OptimizerKind::Adam),
    ] {
        let defaults = find_preset(preset).unwrap().1.workload.defaults;
        let base = train(preset, &[]).unwrap_or_else(|e| panic!("{preset}: {e:?}"));
        assert_record_is_state(preset, kind, &metaparams(&base));
        for (flags, effect) in flag_cases() {
            let what = format!("{preset} {}", flags.join(" "));
            let refused = flags[0] == "--momentum" && kind == OptimizerKind::Sgd;
            match train(preset, flags) {
                Err((code, err)) if refused => {
                    if code != Some(2) || !err.contains("--momentum") || err.lines().count() != 1 {
                        failures.push(format!("{what}: refused unclearly ({code:?}): {err}"));
                    }
                }
                Ok(_) if refused => failures.push(format!("{what}: accepted (SGD has no γ)")),
                Err(e) => failures.push(format!("{what}: {e:?}")),
                Ok(r) => {
                    assert_record_is_state(&what, kind, &metaparams(&r));
                    if !effect(&base, &r, &defaults) {
                        failures.push(format!("{what}: no visible effect: {r}"));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn sweep_plans_record_what_each_optimizer_applies() {
    for (path, preset) in scaling_lab::workload::presets::embedded_presets() {
        let preset = preset.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let w = &preset.workload;
        let plan = scaling_lab::core::plan::plan_trials(
            &preset,
            &preset.sweep.batch_sizes,
            3,
            &scaling_lab::core::trial::DeviceSpec::Cpu { workers: 1 },
            Precision::Fp32,
            7,
        );
        for t in &plan {
            let what = format!("{} trial {}", preset.name, t.trial_id);
            let m = &t.metaparams;
            if w.closed_form() {
                // the closed form's own state: γ = 0 for SGD; no β2/ε anywhere
                let st = NqmState::new(4, 0.5, w.optimizer, m.momentum, t.batch_size);
                assert_eq!(m.momentum, st.momentum(), "{what}");
                assert_eq!((m.beta2, m.epsilon), (0.0, 0.0), "{what}");
            } else {
                assert_record_is_state(&what, w.optimizer, m);
            }
        }
    }
}

#[test]
fn nqm_records_match_the_closed_form_and_momentum_takes_effect() {
    let base = train("nqm-momentum", &[]).unwrap();
    let r = train("nqm-momentum", &["--momentum", "0.5"]).unwrap();
    assert_eq!(metaparams(&r).momentum, 0.5);
    assert_ne!(evals(&r), evals(&base));
    let sgd = train("nqm-sgd", &[]).unwrap();
    let m = metaparams(&sgd);
    let st = NqmState::new(4, 0.5, OptimizerKind::Sgd, m.momentum, 16);
    assert_eq!((m.momentum, st.momentum()), (0.0, 0.0));
    assert_eq!((m.beta2, m.epsilon), (0.0, 0.0));
}
