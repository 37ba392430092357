//! `bench`'s fused trial groups: the small CNN as groups of K trials, in GFLOP/s-equivalent beside
//! this machine's sgemm rate.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::{case_group_examples_per_s, StepCase};
use crate::model::kernels::gemm::{matmul, Parallelism};
use crate::model::InputShape;
use crate::workload::spec::{ModelSpec, Precision};

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

/// Multiply-add FLOPs of one training example of a simple CNN (`spec`, "same" 5×5 convolutions,
/// 2×2 pools, one dense layer) or an MLP on `shape`: the forward's gemms × 3 (forward, and the
/// backward's two products per layer). None for the other models.
pub fn train_flops_per_example(spec: &ModelSpec, shape: InputShape) -> Option<f64> {
    let fwd = match spec {
        ModelSpec::Cnn { channels, dense } => {
            let (mut h, mut w, mut c) = (shape.height, shape.width, shape.channels);
            let mut f = 0.0;
            for &co in channels {
                f += 2.0 * (h * w * c * 25 * co) as f64;
                (h, w, c) = (h / 2, w / 2, co);
            }
            f + 2.0 * (h * w * c * dense) as f64 + 2.0 * (dense * shape.classes) as f64
        }
        ModelSpec::Mlp { hidden } => {
            let mut fan = shape.channels * shape.height * shape.width;
            let mut f = 0.0;
            for &h in hidden.iter().chain(std::iter::once(&shape.classes)) {
                f += 2.0 * (fan * h) as f64;
                fan = h;
            }
            f
        }
        _ => return None,
    };
    Some(3.0 * fwd)
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

/// The small CNN at B = 128 as fused groups of 1 and 8 trials, best of `rounds`.
pub(super) fn fused_points(steps: usize, precision: Precision, rounds: usize) -> Vec<GroupPoint> {
    let case = StepCase::small_cnn();
    let flops = train_flops_per_example(&case.spec, case.shape);
    let dev = Default::default();
    [1usize, 8]
        .into_iter()
        .map(|k| {
            let n = (steps / k).max(5);
            let mut eps = 0.0f64;
            for _ in 0..rounds {
                eps = eps.max(case_group_examples_per_s::<crate::train::runner::CpuTrain>(
                    &case, k, 128, 5, n, precision, &dev,
                ));
            }
            GroupPoint {
                model: "small-cnn".into(),
                members: k,
                batch: 128,
                examples_per_s: eps,
                ms_per_step: 1e3 * (k * 128) as f64 / eps,
                gflops: flops.map(|f| f * eps / 1e9),
            }
        })
        .collect()
}
