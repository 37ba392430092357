//! Whole-model operations on gradients, per member of a fused group (every parameter is [K, …]):
//! squared norms and squared distances of two gradient sets, as a `[K]` tensor on the device (the
//! trainer reads each step's scalars back in one transfer).

use burn::module::{AutodiffModule, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::Tensor;

/// Σ over the non-member dimensions of x²: [K, …] → [K].
pub fn member_sq<IB: Backend, const D: usize>(t: Tensor<IB, D>) -> Tensor<IB, 1> {
    let dims = t.dims();
    let k = dims[0];
    let rest: usize = dims[1..].iter().product();
    t.reshape([k, rest]).powi_scalar(2).sum_dim(1).reshape([k])
}

fn add<IB: Backend>(acc: &mut Option<Tensor<IB, 1>>, s: Tensor<IB, 1>) {
    *acc = Some(match acc.take() {
        Some(a) => a + s,
        None => s,
    });
}

struct SqNorm<'a, B: AutodiffBackend> {
    grads: &'a GradientsParams,
    acc: Option<Tensor<B::InnerBackend, 1>>,
}

impl<B: AutodiffBackend> ModuleVisitor<B> for SqNorm<'_, B> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        if let Some(g) = self.grads.get::<B::InnerBackend, D>(param.id) {
            add(&mut self.acc, member_sq(g));
        }
    }
}

/// Each member's Σ over parameters of |g|², on the device: [K] (NaN/inf propagate within a member;
/// 0 without gradients).
pub fn sq_norm<B: AutodiffBackend, M: AutodiffModule<B>>(
    model: &M,
    grads: &GradientsParams,
    members: usize,
) -> Tensor<B::InnerBackend, 1> {
    let mut v = SqNorm::<B> { grads, acc: None };
    model.visit(&mut v);
    v.acc.unwrap_or_else(|| zeros::<B>(model, members))
}

fn zeros<B: AutodiffBackend>(
    model: &impl AutodiffModule<B>,
    members: usize,
) -> Tensor<B::InnerBackend, 1> {
    let device = model.devices().into_iter().next().unwrap_or_default();
    Tensor::zeros([members], &device)
}

struct SqDist<'a, B: AutodiffBackend> {
    a: &'a GradientsParams,
    b: &'a GradientsParams,
    acc: Option<Tensor<B::InnerBackend, 1>>,
}

impl<B: AutodiffBackend> ModuleVisitor<B> for SqDist<'_, B> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        let d = match (
            self.a.get::<B::InnerBackend, D>(param.id),
            self.b.get::<B::InnerBackend, D>(param.id),
        ) {
            (Some(x), Some(y)) => x - y,
            (Some(x), None) | (None, Some(x)) => x,
            (None, None) => return,
        };
        add(&mut self.acc, member_sq(d));
    }
}

/// Each member's Σ over parameters of |a − b|², on the device: [K].
pub fn sq_dist<B: AutodiffBackend, M: AutodiffModule<B>>(
    model: &M,
    a: &GradientsParams,
    b: &GradientsParams,
    members: usize,
) -> Tensor<B::InnerBackend, 1> {
    let mut v = SqDist::<B> { a, b, acc: None };
    model.visit(&mut v);
    v.acc.unwrap_or_else(|| zeros::<B>(model, members))
}
