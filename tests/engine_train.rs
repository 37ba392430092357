//! Real short trainings on CPU (Flex backend).

use std::sync::Arc;

use burn::backend::{Autodiff, Flex};
use scaling_lab::core::{CancelToken, DeviceSpec, Outcome, TrialEvent, TrialSpec};
use scaling_lab::train::{run_trial, TrainOptions};
use scaling_lab::workload::spec::*;

type B = Autodiff<Flex>;

fn digits_workload() -> Workload {
    Workload {
        dataset: Some(DatasetSpec {
            name: DatasetKind::Digits,
            val_fraction: 0.2,
            split_seed: 0,
            max_bytes: None,
            seq_len: 64,
            max_val: None,
            downsample: None,
        }),
        model: ModelSpec::Mlp { hidden: vec![64] },
        optimizer: OptimizerKind::Momentum,
        target: Target {
            metric: Metric::ValError,
            value: 0.06,
        },
        eval_every: 5,
        eval_growth: 0.0,
        step_budget: 2000,
        max_examples: None,
        precision: Precision::Fp32,
        defaults: Metaparams {
            learning_rate: 0.05,
            momentum: 0.9,
            beta2: 0.999,
            epsilon: 1e-8,
            schedule: Schedule::default(),
        },
        grad_clip: None,
        divergence_factor: 10.0,
    }
}

fn spec(w: &Workload, b: usize, workers: usize, precision: Precision) -> TrialSpec {
    TrialSpec {
        trial_id: 0,
        batch_size: b,
        devices: DeviceSpec::Cpu { workers },
        precision,
        metaparams: w.defaults.clone(),
        seed: 7,
        repeat_of: None,
    }
}

fn run(w: &Workload, s: &TrialSpec) -> (scaling_lab::core::TrialOutcome, Vec<f64>) {
    let data = scaling_lab::data::load_cached(w.dataset.as_ref().unwrap()).unwrap();
    let mut losses = vec![];
    let devices = vec![Default::default(); s.devices.replicas()];
    let out = run_trial::<B>(
        devices,
        w,
        s,
        data,
        &TrainOptions {
            step_event_interval: std::time::Duration::ZERO,
            ..Default::default()
        },
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
    let _ = Arc::new(());
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
    let data = scaling_lab::data::load_cached(w.dataset.as_ref().unwrap()).unwrap();
    let mut cfg = scaling_lab::train::scaler::ScalerConfig::fp16();
    cfg.init_scale = 2f64.powi(40);
    let out = run_trial::<B>(
        vec![Default::default()],
        &w,
        &s,
        data,
        &TrainOptions {
            scaler: Some(cfg),
            ..Default::default()
        },
        &mut |_| {},
        &CancelToken::new(),
    )
    .unwrap();
    assert_eq!(out.steps, 30, "applied steps count only the clean ones");
    assert!(out.skipped_steps >= 1, "no step was skipped");
    assert_eq!(
        out.final_loss_scale,
        2f64.powi(40) / 2f64.powi(out.skipped_steps as i32)
    );
}
