//! Tests of `bench`.

use super::*;
use crate::train::bench_fused::train_flops_per_example;
use crate::train::bench_peer::parse_examples_per_s;

#[test]
fn parses_the_peer_line() {
    let l = "jax mlp784-256-10 batch=32 examples_per_s=33135 ms_per_step=0.966 final_loss=0.0003";
    assert_eq!(parse_examples_per_s(l), Some(33135.0));
    assert_eq!(parse_examples_per_s("jax failed"), None);
}

/// The small-CNN and char-LSTM steps are the presets' models and optimizers (the JAX peers
/// jax_small_cnn_step.py and jax_char_lstm_step.py hard-code the same).
#[test]
fn the_step_cases_are_the_presets_models() {
    use crate::workload::presets::find_preset;
    let (_, cnn) = find_preset("mnist-cnn-sgd").unwrap();
    let c = StepCase::small_cnn();
    let w = &cnn.workload;
    assert_eq!(w.model, c.spec);
    assert_eq!(w.optimizer, c.optimizer);
    assert_eq!(w.defaults.learning_rate, c.metaparams.learning_rate);
    assert_eq!(w.grad_clip, c.clip);
    // MNIST's 28×28, average-pooled 2×2
    assert_eq!(w.dataset.as_ref().unwrap().downsample, Some(2));
    let s = c.shape;
    assert_eq!((s.channels, s.height, s.width, s.classes), (1, 14, 14, 10));

    let (_, lstm) = find_preset("shakespeare-lstm-adam").unwrap();
    let c = StepCase::char_lstm();
    let w = &lstm.workload;
    assert_eq!(w.model, c.spec);
    assert_eq!(w.optimizer, c.optimizer);
    assert_eq!(w.grad_clip, c.clip);
    let (d, m) = (&w.defaults, &c.metaparams);
    assert_eq!(
        (d.learning_rate, d.momentum, d.beta2, d.epsilon),
        (m.learning_rate, m.momentum, m.beta2, m.epsilon)
    );
    assert_eq!(w.dataset.as_ref().unwrap().seq_len, c.shape.seq_len);
    assert_eq!((c.shape.vocab, c.shape.seq_len), (256, 32));

    let (_, resnet) = find_preset("mnist-resnet-momentum").unwrap();
    let c = StepCase::resnet_mnist14();
    let w = &resnet.workload;
    assert_eq!(w.model, c.spec);
    assert_eq!(w.optimizer, c.optimizer);
    assert_eq!(w.dataset.as_ref().unwrap().downsample, Some(2));
    assert_eq!(
        (w.defaults.learning_rate, w.defaults.momentum),
        (c.metaparams.learning_rate, c.metaparams.momentum)
    );
}

/// The training FLOPs per example, by hand: the small CNN's conv 14·14·1·25·8 and 7·7·8·25·16
/// multiply-adds, dense 3·3·16·32 and 32·10; the char-LSTM's W_x (32 → 4·64), W_h (64 → 4·64) and
/// readout (64 → 256) at each of 32 steps; × 2 for a multiply-add, × 3 with the backward.
#[test]
fn flops_per_example_of_the_step_cases() {
    let c = StepCase::small_cnn();
    let fwd = 2.0 * (14 * 14 * 25 * 8 + 7 * 7 * 8 * 25 * 16 + 3 * 3 * 16 * 32 + 32 * 10) as f64;
    assert_eq!(train_flops_per_example(&c.spec, c.shape), Some(3.0 * fwd));
    let lstm = StepCase::char_lstm();
    let fwd = 2.0 * 32.0 * (32 * 4 * 64 + 64 * 4 * 64 + 64 * 256) as f64;
    assert_eq!(
        train_flops_per_example(&lstm.spec, lstm.shape),
        Some(3.0 * fwd)
    );
}

/// A fused group's step through the bench path (K members, clipping per member) runs.
#[test]
fn fused_groups_of_both_step_cases_train() {
    let dev = Default::default();
    for case in [
        StepCase::small_cnn(),
        StepCase::char_lstm(),
        StepCase::resnet_mnist14(),
    ] {
        let eps = case_group_examples_per_s::<super::super::runner::CpuTrain>(
            &case,
            3,
            2,
            1,
            2,
            Precision::Fp32,
            &dev,
        );
        assert!(eps.is_finite() && eps > 0.0, "{case:?}");
    }
    assert!(machine_sgemm_gflops() > 0.0);
}

#[test]
fn clipping_scales_to_the_clip_norm_and_only_above_it() {
    use crate::train::optim::MemberStep;
    let factor = |sq: f64, scale: f64| MemberStep::from_norm(0.1, scale, sq, Some(1.0)).factor;
    assert_eq!(factor(4.0, 1.0), 0.5); // |g| = 2
    assert_eq!(factor(0.25, 1.0), 1.0);
    assert_eq!(factor(1.0, 1.0), 1.0);
    // the loss scale is divided out before the norm is compared: |g·4| = 8 → |g| = 2
    assert_eq!(factor(64.0, 4.0), 0.5 / 4.0);
    assert_eq!(MemberStep::from_norm(0.1, 1.0, 4.0, None).factor, 1.0);
    for bad in [f64::NAN, f64::INFINITY] {
        let s = MemberStep::from_norm(0.1, 1.0, bad, Some(1.0));
        assert!(!s.apply && s.factor == 1.0, "{s:?}");
    }
}

#[test]
fn the_small_cnn_and_char_lstm_steps_train() {
    let dev = Default::default();
    for case in [StepCase::small_cnn(), StepCase::char_lstm()] {
        let eps = case_examples_per_s::<super::super::runner::CpuTrain>(
            &case,
            3,
            1,
            2,
            Precision::Fp32,
            &dev,
        );
        assert!(eps.is_finite() && eps > 0.0, "{case:?}");
    }
}

#[test]
fn the_paper_cnn_trains_and_reports_a_finite_rate() {
    let dev = Default::default();
    let eps = step_examples_per_s::<super::super::runner::CpuTrain>(
        &cnn_paper_spec(),
        4,
        1,
        2,
        Precision::Fp32,
        &dev,
    );
    assert!(eps.is_finite() && eps > 0.0);
}
