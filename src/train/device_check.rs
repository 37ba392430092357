//! Does a GPU compute what the CPU computes? `scaling-lab devices --check` runs, on a device, the
//! two computations the CPU does its own way and a GPU does through Burn's generic ops, on the same
//! inputs as the CPU, and reports the largest difference of each against its tolerance:
//! * the convolution block (conv 5×5 "same" → ReLU → 2×2 max-pool): the CPU's im2col + gemm
//!   against Burn's generic convolution, in the values and the gradients of input, weights, bias;
//! * the optimizers' update (SGD, heavy-ball and Nesterov momentum, Adam) over five steps for a
//!   group of two members that differ in learning rate, γ and gradient factor, one of them skipping
//!   a step: the CPU's fused in-place pass against tensor ops.
//!
//! The tolerances are f32 rounding (a GPU may fuse multiply-adds and sum in another order); a
//! wrong kernel differs by orders of magnitude more. Each backend instantiates [`run`] once
//! (`train::wgpu::check_kernels`, `train::runner::cuda::check_kernels`).

use burn::backend::Flex;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Tensor, TensorData};
use rand::rngs::StdRng;
use rand::SeedableRng;
use serde::Serialize;

use super::optim::{update_param, MemberStep, Parts};
use super::runner::CpuTrain;
use crate::model::layers::{gemm_conv, uniform, ConvPool, Ctx};
use crate::workload::spec::{Metaparams, OptimizerKind};

/// One comparison: the largest absolute difference between the device and the CPU.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Check {
    pub name: String,
    pub max_abs_diff: f32,
    pub tolerance: f32,
}

impl Check {
    /// Compares `device` with `cpu` (equal lengths; a length mismatch or a NaN fails).
    pub fn new(name: impl Into<String>, device: &[f32], cpu: &[f32], tolerance: f32) -> Self {
        let max_abs_diff = if device.len() == cpu.len() {
            device
                .iter()
                .zip(cpu)
                .map(|(x, y)| (x - y).abs())
                .fold(0.0f32, |m, d| {
                    if d.is_nan() || m.is_nan() {
                        f32::NAN
                    } else {
                        m.max(d)
                    }
                })
        } else {
            f32::INFINITY
        };
        Check {
            name: name.into(),
            max_abs_diff,
            tolerance,
        }
    }

    pub fn ok(&self) -> bool {
        self.max_abs_diff <= self.tolerance
    }
}

/// Every comparison on `device`, or why the check could not run (a device that takes the CPU's own
/// path has nothing to compare; a result that is trivially equal is not evidence).
pub fn run<G: AutodiffBackend>(device: &G::Device) -> Result<Vec<Check>, String> {
    if gemm_conv::<G>() {
        return Err("this device takes the CPU's own paths: nothing to compare".into());
    }
    let mut checks = conv_block::<G>(device)?;
    checks.extend(updates::<G::InnerBackend>(device)?);
    Ok(checks)
}

/// Values and gradients of one convolution block on backend `A` at device `d`.
struct ConvResult {
    y: Vec<f32>,
    dx: Vec<f32>,
    dw: Vec<f32>,
    db: Vec<f32>,
}

const CONV: (usize, usize, usize, usize, usize, usize) = (2, 8, 8, 3, 4, 5);

fn conv_on<A: AutodiffBackend>(d: &A::Device, x: &[f32], probe: &[f32]) -> ConvResult {
    let (n, h, w, cin, cout, k) = CONV;
    let block = ConvPool::<A>::new(&mut StdRng::seed_from_u64(11), cin, cout, k, d);
    let x =
        Tensor::<A, 4>::from_data(TensorData::new(x.to_vec(), [n, h, w, cin]), d).require_grad();
    let p = Tensor::<A, 4>::from_data(TensorData::new(probe.to_vec(), [n, h / 2, w / 2, cout]), d);
    let y = block.forward(x.clone(), &Ctx::fp32());
    let g = (y.clone() * p).sum().backward();
    ConvResult {
        y: values(Some(y.inner())),
        dx: values(x.grad(&g)),
        dw: values(block.w.val().grad(&g)),
        db: values(block.b.val().grad(&g)),
    }
}

/// A tensor's values (empty when there is none, e.g. a missing gradient: the check then fails on
/// the length).
fn values<B: Backend, const D: usize>(t: Option<Tensor<B, D>>) -> Vec<f32> {
    t.and_then(|t| t.into_data().to_vec::<f32>().ok())
        .unwrap_or_default()
}

fn conv_block<G: AutodiffBackend>(d: &G::Device) -> Result<Vec<Check>, String> {
    let (n, h, w, cin, cout, _) = CONV;
    let mut rng = StdRng::seed_from_u64(3);
    let x = uniform(&mut rng, n * h * w * cin, 1.0);
    let probe = uniform(&mut rng, n * (h / 2) * (w / 2) * cout, 1.0);
    let dev = conv_on::<G>(d, &x, &probe);
    let cpu = conv_on::<CpuTrain>(&Default::default(), &x, &probe);
    if !cpu.y.iter().any(|v| *v > 0.0) {
        return Err("the CPU's convolution block gave all zeros: nothing to compare".into());
    }
    Ok(vec![
        Check::new("conv block: values", &dev.y, &cpu.y, 1e-5),
        Check::new("conv block: d/dx", &dev.dx, &cpu.dx, 1e-4),
        Check::new("conv block: d/dw", &dev.dw, &cpu.dw, 1e-4),
        Check::new("conv block: d/db", &dev.db, &cpu.db, 1e-4),
    ])
}

fn updates<B: Backend>(d: &B::Device) -> Result<Vec<Check>, String> {
    let n = 1000;
    let mut rng = StdRng::seed_from_u64(5);
    let w0 = uniform(&mut rng, 2 * n, 1.0);
    let grads: Vec<Vec<f32>> = (0..5).map(|_| uniform(&mut rng, 2 * n, 1.0)).collect();
    let mps = [Metaparams::new(0.1, 0.9), Metaparams::new(0.03, 0.5)];
    let mut checks = Vec::new();
    for kind in [
        OptimizerKind::Sgd,
        OptimizerKind::Momentum,
        OptimizerKind::Nesterov,
        OptimizerKind::Adam,
    ] {
        let dev = train_steps::<B>(d, kind, &mps, &w0, &grads);
        let cpu = train_steps::<Flex>(&Default::default(), kind, &mps, &w0, &grads);
        if Check::new("", &cpu, &w0, 0.01).ok() {
            return Err(format!(
                "{kind:?}: the CPU's update did not move the weights"
            ));
        }
        checks.push(Check::new(
            format!("{} update", kind.name()),
            &dev,
            &cpu,
            1e-5,
        ));
    }
    Ok(checks)
}

/// Five updates of one flat parameter from `w0` with the gradients `grads` (two members; the second
/// takes half the gradient and skips the third step), on backend `B`: the final weights.
fn train_steps<B: Backend>(
    d: &B::Device,
    kind: OptimizerKind,
    mps: &[Metaparams; 2],
    w0: &[f32],
    grads: &[Vec<f32>],
) -> Vec<f32> {
    let flat = |v: &[f32]| Tensor::<B, 1>::from_data(TensorData::new(v.to_vec(), [v.len()]), d);
    let mut p = Parts::<B> {
        w: flat(w0),
        g: flat(&grads[0]),
        first: None,
        second: None,
    };
    let mut before = [0u32; 2];
    for (s, g) in grads.iter().enumerate() {
        let plan = [
            MemberStep {
                lr: mps[0].learning_rate,
                factor: 1.0,
                apply: true,
            },
            MemberStep {
                lr: mps[1].learning_rate,
                factor: 0.5,
                apply: s != 2,
            },
        ];
        p.g = flat(g);
        p = update_param(p, kind, mps, &before, &plan);
        for (b, m) in before.iter_mut().zip(&plan) {
            *b += m.apply as u32;
        }
    }
    p.w.into_data().to_vec::<f32>().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_fails_on_a_difference_a_nan_or_a_length_mismatch() {
        assert!(Check::new("same", &[1.0, 2.0], &[1.0, 2.0 + 1e-7], 1e-5).ok());
        let off = Check::new("off", &[1.0, 2.0], &[1.0, 2.1], 1e-5);
        assert!(!off.ok());
        assert!((off.max_abs_diff - 0.1).abs() < 1e-6);
        assert!(!Check::new("nan", &[f32::NAN, 2.0], &[1.0, 2.0], 1e-5).ok());
        assert!(!Check::new("nan last", &[1.0, f32::NAN], &[1.0, 2.0], 1e-5).ok());
        assert!(!Check::new("short", &[1.0], &[1.0, 2.0], 1e-5).ok());
        assert!(!Check::new("empty", &[], &[1.0], 1e-5).ok());
    }

    #[test]
    fn the_cpu_has_nothing_to_compare_with_itself() {
        let e = run::<CpuTrain>(&Default::default()).unwrap_err();
        assert!(e.contains("nothing to compare"), "{e}");
    }
}
