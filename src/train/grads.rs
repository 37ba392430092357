//! Whole-model operations on gradients: squared global norm, squared distance of two sets, scaling.
//! The norms stay on the device (a `[1]` tensor): the trainer reads each step's scalars back in one
//! transfer.

use burn::module::{AutodiffModule, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::Tensor;

struct SqNorm<'a, B: AutodiffBackend> {
    grads: &'a GradientsParams,
    acc: Option<Tensor<B::InnerBackend, 1>>,
}

impl<B: AutodiffBackend> ModuleVisitor<B> for SqNorm<'_, B> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        if let Some(g) = self.grads.get::<B::InnerBackend, D>(param.id) {
            let s = g.powi_scalar(2).sum();
            self.acc = Some(match self.acc.take() {
                Some(a) => a + s,
                None => s,
            });
        }
    }
}

/// Σ over parameters of |g|², on the device (NaN/inf propagate; 0 without gradients).
pub fn sq_norm<B: AutodiffBackend, M: AutodiffModule<B>>(
    model: &M,
    grads: &GradientsParams,
) -> Tensor<B::InnerBackend, 1> {
    let mut v = SqNorm::<B> { grads, acc: None };
    model.visit(&mut v);
    v.acc.unwrap_or_else(|| zero::<B>(model))
}

fn zero<B: AutodiffBackend>(model: &impl AutodiffModule<B>) -> Tensor<B::InnerBackend, 1> {
    let device = model.devices().into_iter().next().unwrap_or_default();
    Tensor::zeros([1], &device)
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
        let s = d.powi_scalar(2).sum();
        self.acc = Some(match self.acc.take() {
            Some(a) => a + s,
            None => s,
        });
    }
}

/// Σ over parameters of |a − b|², on the device.
pub fn sq_dist<B: AutodiffBackend, M: AutodiffModule<B>>(
    model: &M,
    a: &GradientsParams,
    b: &GradientsParams,
) -> Tensor<B::InnerBackend, 1> {
    let mut v = SqDist::<B> { a, b, acc: None };
    model.visit(&mut v);
    v.acc.unwrap_or_else(|| zero::<B>(model))
}

struct Scale<'a> {
    grads: &'a mut GradientsParams,
    factor: f64,
}

impl<B: AutodiffBackend> ModuleVisitor<B> for Scale<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        if let Some(g) = self.grads.remove::<B::InnerBackend, D>(param.id) {
            self.grads.register(param.id, g.mul_scalar(self.factor));
        }
    }
}

/// g ← factor·g for every parameter.
pub fn scale<B: AutodiffBackend, M: AutodiffModule<B>>(
    model: &M,
    grads: &mut GradientsParams,
    factor: f64,
) {
    if factor != 1.0 {
        model.visit(&mut Scale { grads, factor });
    }
}
