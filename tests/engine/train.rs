//! Real short trainings on CPU (Flex backend).

use crate::common::{cpu_trial as spec, digits_workload, train};
use scaling_lab::core::trial::Outcome;
use scaling_lab::train::TrainOptions;
use scaling_lab::workload::spec::*;

fn run(
    w: &Workload,
    s: &scaling_lab::core::trial::TrialSpec,
) -> (scaling_lab::core::trial::TrialOutcome, Vec<f64>) {
    train(w, s, TrainOptions::default())
}

#[test]
fn digits_mlp_reaches_target() {
    let w = digits_workload();
    let (out, _) = run(&w, &spec(&w, 64, 1, Precision::Fp32));
    eprintln!(
        "{:?} steps={} ex/s={:.0} noise={:?}",
        out.outcome, out.steps, out.throughput.examples_per_s, out.noise.b_simple
    );
    assert!(
        matches!(out.outcome, Outcome::Reached { .. }),
        "{:?}",
        out.outcome
    );
}

#[test]
fn one_and_four_workers_follow_the_same_trajectory() {
    let mut w = digits_workload();
    w.step_budget = 60;
    w.target.value = 0.0; // run the whole budget
    let (a, la) = run(&w, &spec(&w, 64, 1, Precision::Fp32));
    let (b, lb) = run(&w, &spec(&w, 64, 4, Precision::Fp32));
    assert_eq!(a.steps, 60);
    assert_eq!(b.steps, 60);
    assert_eq!(la.len(), lb.len());
    for (i, (x, y)) in la.iter().zip(&lb).enumerate() {
        assert!(
            (x - y).abs() <= 1e-4 * x.abs().max(1.0),
            "step {i}: {x} vs {y}"
        );
    }
    for (p, q) in a.evals.iter().zip(&b.evals) {
        assert!((p.metric - q.metric).abs() <= 2.0 / 360.0, "{p:?} vs {q:?}");
    }
    assert!(b.throughput.exchanged_bytes_per_step > 0);
}

#[test]
fn bf16_reaches_the_target_within_20_percent_of_fp32_and_fp16_scales() {
    let w = digits_workload();
    let (a, _) = run(&w, &spec(&w, 64, 1, Precision::Fp32));
    let (b, _) = run(&w, &spec(&w, 64, 1, Precision::Bf16));
    let (c, _) = run(&w, &spec(&w, 64, 1, Precision::Fp16));
    let (sa, sb) = (
        a.outcome.steps_to_target().unwrap(),
        b.outcome.steps_to_target().unwrap(),
    );
    assert!(
        (sb as f64 / sa as f64 - 1.0).abs() <= 0.20,
        "fp32 {sa} steps vs bf16 {sb} steps"
    );
    assert!(
        c.outcome.steps_to_target().is_some(),
        "fp16: {:?}",
        c.outcome
    );
    assert_eq!(b.final_loss_scale, 1.0);
    assert_eq!(c.final_loss_scale, 65536.0);
}

#[test]
fn fp16_overflow_is_skipped_and_the_scale_halves() {
    // A huge initial scale overflows fp16 gradients: those steps are skipped (not applied, the
    // schedule does not advance) and the scale halves each time until the gradients fit.
    let mut w = digits_workload();
    w.step_budget = 30;
    w.target.value = 0.0;
    let s = spec(&w, 64, 1, Precision::Fp16);
    let mut cfg = scaling_lab::train::scaler::ScalerConfig::fp16();
    cfg.init_scale = 2f64.powi(40);
    let (out, _) = train(
        &w,
        &s,
        TrainOptions {
            scaler: Some(cfg),
            ..Default::default()
        },
    );
    assert_eq!(out.steps, 30, "applied steps count only the clean ones");
    assert!(out.skipped_steps >= 1, "no step was skipped");
    assert_eq!(
        out.final_loss_scale,
        2f64.powi(40) / 2f64.powi(out.skipped_steps as i32)
    );
}

#[test]
fn the_noise_scale_never_changes_the_trajectory_and_says_how_often_it_sampled() {
    // One worker: tr(Σ) comes from an extra half-batch gradient on the sampled steps; the update
    // is always the whole batch's, so every cadence (and no estimate at all) trains the same.
    let mut w = digits_workload();
    w.step_budget = 50;
    w.target.value = 0.0; // run the whole budget
    let s = spec(&w, 64, 1, Precision::Fp32);
    let with = |noise_scale: bool, noise_every: Option<u64>| {
        train(
            &w,
            &s,
            TrainOptions {
                noise_scale,
                noise_every,
                ..Default::default()
            },
        )
    };
    let (off, l_off) = with(false, None);
    assert_eq!(off.noise.b_simple, None);
    assert_eq!(off.noise.samples, 0);
    for every in [Some(1), Some(7), None] {
        let (on, l_on) = with(true, every);
        assert_eq!(l_on, l_off, "every {every:?}: the losses moved");
        assert_eq!(
            on.evals, off.evals,
            "every {every:?}: the evaluations moved"
        );
        assert_eq!(on.outcome, off.outcome);
        assert!(on.noise.b_simple.is_some_and(|b| b > 0.0), "{:?}", on.noise);
        // its 95 % interval, recorded with it, contains it
        let (b, iv) = (on.noise.b_simple.unwrap(), on.noise.interval.unwrap());
        assert!(iv.contains(b), "{b} outside {iv:?}");
        match every {
            Some(k) => {
                assert_eq!(on.noise.sample_every, k);
                assert_eq!(on.noise.samples, 50u64.div_ceil(k));
            }
            None => {
                let k = on.noise.sample_every;
                assert!(k.is_power_of_two(), "{k}");
                assert!(on.noise.samples >= 2 && on.noise.samples <= 50);
            }
        }
    }
}

#[test]
fn one_device_read_per_step_and_per_evaluation() {
    // The loss, the norms and the loss scaler's finite check come back in one read a step (and
    // one per evaluation): every extra read drains a GPU's queue. Counted, not timed.
    let mut w = digits_workload();
    w.step_budget = 20;
    w.target.value = 0.0;
    for (workers, precision) in [
        (1, Precision::Fp32),
        (1, Precision::Fp16),
        (2, Precision::Fp32),
        (2, Precision::Bf16),
    ] {
        let (out, _) = run(&w, &spec(&w, 32, workers, precision));
        let t = &out.throughput;
        assert_eq!(
            (t.reads_per_step, t.reads_per_eval),
            (1.0, 1.0),
            "{workers} worker(s), {precision:?}"
        );
    }
}

/// A trial trained in this process computes exactly what the shipped binary computes: the same
/// float mode (subnormals flushed, `core::float_mode`), the same evaluation curve bit for bit (the
/// noise scale's sampling is paced by its measured cost, so its trajectory is not compared). A long small-batch Adam trial is where Adam's moments reach the subnormal range.
#[test]
fn a_trial_in_process_is_the_binarys_trial_bit_for_bit() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_scaling-lab"))
        .args([
            "train",
            "--preset",
            "digits-mlp-adam",
            "--batch-size",
            "4",
            "--seed",
            "3",
            "--json",
        ])
        .env_remove("SCALING_LAB_KEEP_SUBNORMALS")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let spec: scaling_lab::core::trial::TrialSpec =
        serde_json::from_value(v["spec"].clone()).unwrap();
    let binary: scaling_lab::core::trial::TrialOutcome =
        serde_json::from_value(v["outcome"].clone()).unwrap();
    let (_, preset) = scaling_lab::workload::presets::find_preset("digits-mlp-adam").unwrap();
    let (mine, _) = crate::common::train(&preset.workload, &spec, Default::default());
    assert!(binary.evals.len() > 3, "{:?}", binary.outcome);
    assert_eq!(mine.outcome, binary.outcome);
    assert_eq!(mine.steps, binary.steps);
    let bits = |o: &scaling_lab::core::trial::TrialOutcome| -> Vec<(u64, u64)> {
        o.evals
            .iter()
            .map(|e| (e.step, e.metric.to_bits()))
            .collect()
    };
    assert_eq!(bits(&mine), bits(&binary));
}
