//! Whole-model operations on gradients: squared global norm, scaling, averaging two sets.

use burn::module::{AutodiffModule, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{ElementConversion, Tensor};

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

/// Σ over parameters of |g|² (f64; NaN/inf propagate).
pub fn sq_norm<B: AutodiffBackend, M: AutodiffModule<B>>(
    model: &M,
    grads: &GradientsParams,
) -> f64 {
    let mut v = SqNorm::<B> { grads, acc: None };
    model.visit(&mut v);
    v.acc.map(|t| t.into_scalar().elem::<f64>()).unwrap_or(0.0)
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

struct Mean2<'a> {
    a: &'a mut GradientsParams,
    b: &'a GradientsParams,
}

impl<B: AutodiffBackend> ModuleVisitor<B> for Mean2<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        let ga = self.a.remove::<B::InnerBackend, D>(param.id);
        let gb = self.b.get::<B::InnerBackend, D>(param.id);
        let g = match (ga, gb) {
            (Some(x), Some(y)) => (x + y).mul_scalar(0.5),
            (Some(x), None) | (None, Some(x)) => x.mul_scalar(0.5),
            (None, None) => return,
        };
        self.a.register(param.id, g);
    }
}

/// a ← (a + b)/2: the mean of two equal-size micro-batch gradients (one-worker noise scale).
pub fn mean_into<B: AutodiffBackend, M: AutodiffModule<B>>(
    model: &M,
    a: &mut GradientsParams,
    b: &GradientsParams,
) {
    model.visit(&mut Mean2 { a, b });
}
