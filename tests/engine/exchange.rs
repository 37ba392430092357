//! The bucketed gradient exchange against the per-tensor reference path: the same parameters after
//! several steps (all four optimizers; fp32, bf16 and fp16 with a loss scale; one bucket and many
//! small ones), and the same trial (losses, evaluations, steps-to-target) through `run_trial`.

use crate::common;

use std::sync::Mutex;

use burn::backend::{Autodiff, Flex};
use burn::collective::reset_collective;
use burn::module::{Module, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::tensor::{FloatDType, Int, Tensor, TensorData};
use scaling_lab::core::trial::{CancelToken, TrialOutcome, TrialSpec};
use scaling_lab::model::layers::Ctx;
use scaling_lab::model::{Batch, InputShape, Net};
use scaling_lab::train::exchange::{all_reduce_mean, join_collective, DEFAULT_BUCKET_BYTES};
use scaling_lab::train::optim::{MemberStep, Opt};
use scaling_lab::train::{run_trial, TrainOptions};
use scaling_lab::workload::spec::*;

type B = Autodiff<Flex>;

/// Trials through the trainer take the collective's guard themselves; these one at a time.
static TRIALS: Mutex<()> = Mutex::new(());

struct Values(Vec<Vec<f32>>);

impl ModuleVisitor<B> for Values {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        self.0
            .push(param.val().into_data().convert::<f32>().to_vec().unwrap());
    }
}

fn values(m: &Net<B>) -> Vec<Vec<f32>> {
    let mut v = Values(Vec::new());
    m.visit(&mut v);
    v.0
}

fn shape() -> InputShape {
    InputShape::images(1, 8, 8, 10)
}

fn batch(rank: usize, step: usize, n: usize) -> Batch<B> {
    let dev = Default::default();
    let x: Vec<f32> = (0..n * 64)
        .map(|i| (((i + 131 * rank + 17 * step) * 37 % 17) as f32) / 16.0)
        .collect();
    let y: Vec<i64> = (0..n)
        .map(|i| ((i + 3 * rank + step) * 7 % 10) as i64)
        .collect();
    Batch::Images {
        x: Tensor::from_data(TensorData::new(x, [n, 1, 8, 8]), &dev),
        y: Tensor::<B, 1, Int>::from_data(TensorData::new(y, [n]), &dev),
    }
}

/// Runs `steps` data-parallel steps on `world` threads, once with `bucket_bytes` and once per
/// tensor (each replica holds both copies, exchanged in lock step); returns rank 0's parameters
/// of both copies and the squared norms both paths measured.
#[allow(clippy::type_complexity)]
fn train_both(
    kind: OptimizerKind,
    dtype: Option<FloatDType>,
    loss_scale: f64,
    clip: Option<f64>,
    bucket_bytes: usize,
) -> (Vec<Vec<f32>>, Vec<Vec<f32>>, Vec<(f64, f64, f64, f64)>) {
    // replicas joined by hand: the trainer's guard of the process-wide collective server
    let _g = scaling_lab::train::exchange::collective_lock();
    let (world, steps) = (2, 3);
    let mp = Metaparams::new(0.05, 0.9);
    let mut spec = scaling_lab::model::family::registration("mlp")
        .unwrap()
        .default_for(scaling_lab::model::Input::Images, &shape())
        .unwrap();
    spec.set_knob("hidden", "32, 16").unwrap();
    let model: Net<B> = Net::init(&spec, shape(), 5, &Default::default()).unwrap();
    reset_collective::<Flex>();
    let handles: Vec<_> = (0..world)
        .map(|rank| {
            // Every replica forked (its own autodiff graph): two threads running backward on
            // clones of one module share graph state, which can deadlock inside burn-autodiff.
            let (mut a, mut b) = (
                model.clone().fork(&Default::default()),
                model.clone().fork(&Default::default()),
            );
            let mp = mp.clone();
            std::thread::spawn(move || {
                join_collective::<Flex>(rank, world, None, &Default::default()).unwrap();
                let ctx = Ctx { dtype };
                let (mut oa, mut ob) = (Opt::<B>::new(kind, &mp), Opt::<B>::new(kind, &mp));
                let mut norms = vec![];
                for step in 0..steps {
                    let x = batch(rank, step, 16);
                    let grads = |m: &Net<B>| {
                        let l = m.loss(&x, &ctx).mul_scalar(loss_scale);
                        GradientsParams::from_grads(l.backward(), m)
                    };
                    let ga = grads(&a);
                    let gb = grads(&b);
                    let ra = all_reduce_mean(&a, ga, rank, bucket_bytes, true, 1).unwrap();
                    let rb = all_reduce_mean(&b, gb, rank, 0, true, 1).unwrap();
                    // the norms stay on the device until the trainer's one read a step
                    let sc = |t: &burn::tensor::Tensor<Flex, 1>| t.clone().into_scalar() as f64;
                    let opt =
                        |t: &Option<burn::tensor::Tensor<Flex, 1>>| t.as_ref().map_or(f64::NAN, sc);
                    let (gsa, gsb) = (sc(&ra.global_sq), sc(&rb.global_sq));
                    norms.push((opt(&ra.local_sq), opt(&rb.local_sq), gsa, gsb));
                    let factor = |sq: f64| {
                        let norm = sq.sqrt() / loss_scale;
                        let c = match clip {
                            Some(c) if norm > c => c / norm,
                            _ => 1.0,
                        };
                        c / loss_scale
                    };
                    let (fa, fb) = (factor(gsa), factor(gsb));
                    let step = |factor| MemberStep {
                        lr: mp.learning_rate,
                        factor,
                        apply: true,
                    };
                    let g = ra.into_grads(&a);
                    a = oa.step_members(a.clone(), g, &[step(fa)]);
                    let g = rb.into_grads(&b);
                    b = ob.step_members(b.clone(), g, &[step(fb)]);
                }
                (values(&a), values(&b), norms)
            })
        })
        .collect();
    let mut out: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    // replicas stay identical under either path
    assert_eq!(out[0].0, out[1].0, "bucketed replicas differ");
    assert_eq!(out[0].1, out[1].1, "per-tensor replicas differ");
    out.swap_remove(0)
}

fn rel_close(a: &[Vec<f32>], b: &[Vec<f32>], what: &str) {
    assert_eq!(a.len(), b.len());
    for (pa, pb) in a.iter().zip(b) {
        assert_eq!(pa.len(), pb.len());
        for (x, y) in pa.iter().zip(pb) {
            let (x, y) = (*x as f64, *y as f64);
            assert!(
                (x - y).abs() <= 1e-6 * x.abs().max(y.abs()).max(1e-12),
                "{what}: {x} vs {y}"
            );
        }
    }
}

#[test]
fn bucketed_and_per_tensor_exchanges_give_the_same_parameters() {
    let kinds = [
        OptimizerKind::Sgd,
        OptimizerKind::Momentum,
        OptimizerKind::Nesterov,
        OptimizerKind::Adam,
    ];
    let precisions = [
        (None, 1.0),
        (Some(FloatDType::BF16), 1.0),
        (Some(FloatDType::F16), 1024.0),
    ];
    for kind in kinds {
        for (dtype, scale) in precisions {
            // one bucket (the default) and many small ones (a 1 KiB cap splits every layer)
            for bucket in [DEFAULT_BUCKET_BYTES, 1024] {
                let what = format!("{kind:?} {dtype:?} bucket {bucket}");
                let (a, b, norms) = train_both(kind, dtype, scale, None, bucket);
                rel_close(&a, &b, &what);
                for (la, lb, ga, gb) in norms {
                    assert!(la.is_finite() && ga.is_finite(), "{what}");
                    assert!((la / lb - 1.0).abs() < 1e-5, "{what}: local {la} vs {lb}");
                    assert!((ga / gb - 1.0).abs() < 1e-5, "{what}: global {ga} vs {gb}");
                }
            }
        }
    }
    // with clipping active (the clip factor comes from the norm measured on the flat buffer)
    let (a, b, _) = train_both(OptimizerKind::Momentum, None, 1.0, Some(0.05), 1024);
    rel_close(&a, &b, "momentum, clipped");
}

fn trial(w: &Workload, workers: usize, bucket_bytes: usize) -> (TrialOutcome, Vec<f64>) {
    let _g = TRIALS.lock().unwrap_or_else(|e| e.into_inner());
    let s = common::cpu_trial(w, 64, workers, Precision::Fp32);
    common::train(
        w,
        &s,
        TrainOptions {
            bucket_bytes,
            ..Default::default()
        },
    )
}

#[test]
fn steps_to_target_and_losses_do_not_depend_on_the_exchange_path() {
    let w = common::digits_workload();
    let (a, la) = trial(&w, 2, 0);
    let (b, lb) = trial(&w, 2, DEFAULT_BUCKET_BYTES);
    eprintln!(
        "per-tensor: {:?} exchange {:.3} ms; bucketed: {:?} exchange {:.3} ms",
        a.outcome,
        a.throughput.exchange_s * 1e3,
        b.outcome,
        b.throughput.exchange_s * 1e3
    );
    assert!(a.outcome.steps_to_target().is_some(), "{:?}", a.outcome);
    assert_eq!(a.outcome, b.outcome);
    assert_eq!(la.len(), lb.len());
    for (x, y) in la.iter().zip(&lb) {
        assert!((x - y).abs() <= 1e-6 * x.abs().max(1e-12), "{x} vs {y}");
    }
    assert_eq!(a.evals.len(), b.evals.len());
    for (p, q) in a.evals.iter().zip(&b.evals) {
        assert_eq!(p.step, q.step);
        assert!((p.metric - q.metric).abs() <= 1e-9, "{p:?} vs {q:?}");
    }
    assert_eq!(
        a.throughput.exchanged_bytes_per_step,
        b.throughput.exchanged_bytes_per_step
    );
    // the noise scale is estimated on the flat buffer as well as per tensor
    let (na, nb) = (a.noise.b_simple.unwrap(), b.noise.b_simple.unwrap());
    assert!((na / nb - 1.0).abs() < 1e-3, "{na} vs {nb}");
}

#[test]
fn loss_scale_applies_to_fp16_only_and_stuck_skipping_diverges_with_a_reason() {
    let mut w = common::digits_workload();
    w.step_budget = 20;
    w.target.value = 0.0;
    let data = scaling_lab::data::load_cached(w.dataset.as_ref().unwrap()).unwrap();
    let run = |precision: Precision, opts: TrainOptions| {
        let _g = TRIALS.lock().unwrap_or_else(|e| e.into_inner());
        let s = TrialSpec {
            precision,
            seed: 1,
            ..TrialSpec::cpu(32, w.defaults.clone())
        };
        run_trial::<B>(
            vec![Default::default()],
            &w,
            &s,
            data.clone(),
            &opts,
            &mut |_| {},
            &CancelToken::new(),
        )
    };
    let scaled = TrainOptions {
        scaler: Some(scaling_lab::train::scaler::ScalerConfig::fp16_with_scale(1024.0).unwrap()),
        ..Default::default()
    };
    for p in [Precision::Fp32, Precision::Bf16] {
        let out = run(p, scaled.clone()).unwrap();
        assert_eq!(out.final_loss_scale, 1.0, "{p:?}");
        assert_eq!(out.steps, 20);
    }
    let out = run(Precision::Fp16, scaled.clone()).unwrap();
    assert_eq!(out.final_loss_scale, 1024.0);
    // an invalid scale is a set-up error, not an endless loop
    let mut bad = scaling_lab::train::scaler::ScalerConfig::fp16();
    bad.init_scale = f64::INFINITY;
    let e = run(
        Precision::Fp16,
        TrainOptions {
            scaler: Some(bad),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(format!("{e:#}").contains("init_scale"), "{e:#}");
    // a scale that cannot back off far enough (backoff 0.999 from 2^100): every step overflows,
    // and the trial stops as diverged after N skipped steps in a row, saying why
    let mut stuck = scaling_lab::train::scaler::ScalerConfig::fp16();
    stuck.init_scale = 2f64.powi(100);
    stuck.backoff = 0.999;
    let out = run(
        Precision::Fp16,
        TrainOptions {
            scaler: Some(stuck),
            max_consecutive_skips: 7,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(
        out.outcome,
        scaling_lab::core::trial::Outcome::Diverged { step: 0 }
    );
    assert_eq!(out.skipped_steps, 7);
    let reason = out.reason.expect("a reason");
    assert!(reason.contains("7 consecutive steps skipped"), "{reason}");
}
