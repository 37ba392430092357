//! `bench`'s fused trial groups: the small CNN and the CPU ResNet preset's network as groups of K
//! trials, in GFLOP/s-equivalent beside this machine's sgemm rate.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::bench::{case_group_examples_per_s, StepCase};
use crate::model::kernels::gemm::{matmul, Parallelism};
use crate::model::InputShape;
use crate::model::ModelSpec;
use crate::workload::spec::Precision;

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct GroupPoint {
    pub model: String,
    /// Trials in the group (K).
    pub members: usize,
    /// Examples per member per step.
    pub batch: usize,
    /// Over all members.
    pub examples_per_s: f64,
    /// One step of the whole group.
    pub ms_per_step: f64,
    /// GFLOP/s-equivalent: the model's training FLOPs per example × examples/s.
    pub gflops: Option<f64>,
}

/// Multiply-add FLOPs of one training example of `spec` on `shape`, counted on the module the
/// family builds (`ModelSpec::train_flops`: the forward's products × 3). None for the NQM.
pub fn train_flops_per_example(spec: &ModelSpec, shape: InputShape) -> Option<f64> {
    spec.train_flops(shape).ok().flatten()
}

/// This machine's sgemm rate in GFLOP/s on all threads (the gemm crate the CPU kernels call):
/// the best of 5 products of 1024×1024 by 1024×1024 after one warm-up.
pub fn machine_sgemm_gflops() -> f64 {
    let n = 1024;
    let a = vec![1.0f32 / n as f32; n * n];
    let b = a.clone();
    let mut c = vec![0.0f32; n * n];
    let mut best = f64::INFINITY;
    for i in 0..6 {
        let t = Instant::now();
        let s = (n as isize, 1);
        matmul(
            (n, n, n),
            (&mut c, s),
            false,
            (&a, s),
            (&b, s),
            Parallelism::Rayon(0),
        );
        if i > 0 {
            best = best.min(t.elapsed().as_secs_f64());
        }
    }
    std::hint::black_box(&c);
    2.0 * (n * n * n) as f64 / best / 1e9
}

/// The small CNN at B = 128 as fused groups of 1 and 8 trials, and the ResNet of
/// `mnist-resnet-momentum` as groups of 1 and 4, best of `rounds` each.
pub(super) fn fused_points(steps: usize, precision: Precision, rounds: usize) -> Vec<GroupPoint> {
    let mut out = group_points(
        "small-cnn",
        &StepCase::small_cnn(),
        &[1, 8],
        steps,
        precision,
        rounds,
    );
    out.extend(group_points(
        "resnet-8 w4",
        &StepCase::resnet_mnist14(),
        &[1, 4],
        steps / 4,
        precision,
        rounds,
    ));
    out
}

/// `case` at B = 128 as fused groups of each of `ks` trials (about `steps` / K timed steps).
fn group_points(
    model: &str,
    case: &StepCase,
    ks: &[usize],
    steps: usize,
    precision: Precision,
    rounds: usize,
) -> Vec<GroupPoint> {
    let flops = train_flops_per_example(&case.spec, case.shape);
    let dev = Default::default();
    ks.iter()
        .map(|&k| {
            let n = (steps / k).max(5);
            let mut eps = 0.0f64;
            for _ in 0..rounds {
                eps = eps.max(case_group_examples_per_s::<crate::train::runner::CpuTrain>(
                    case, k, 128, 5, n, precision, &dev,
                ));
            }
            GroupPoint {
                model: model.into(),
                members: k,
                batch: 128,
                examples_per_s: eps,
                ms_per_step: 1e3 * (k * 128) as f64 / eps,
                gflops: flops.map(|f| f * eps / 1e9),
            }
        })
        .collect()
}

impl StepCase {
    /// The `mnist-resnet-momentum` preset's model and optimizer: 14×14×1 images, ResNet-8 of
    /// width 4 with ghost batch normalisation over 16 examples, SGD momentum 0.9 at lr 0.05
    /// (tested against the preset file).
    pub fn resnet_mnist14() -> Self {
        StepCase {
            spec: crate::model::resnet::small(),
            shape: InputShape::images(1, 14, 14, 10),
            optimizer: crate::workload::spec::OptimizerKind::Momentum,
            metaparams: crate::workload::spec::Metaparams::new(0.05, 0.9),
            clip: None,
        }
    }
}
