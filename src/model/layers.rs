//! Small functional layers whose parameters are fp32 master weights, cast to the compute precision at use.
//! Initialisation uses our own seeded RNG (not Burn's global one) so a trial is reproducible across
//! backends and identical on every replica.

use burn::module::{Module, Param};
use burn::tensor::backend::Backend;
use burn::tensor::module::{conv2d, max_pool2d};
use burn::tensor::ops::ConvOptions;
use burn::tensor::{activation, Device, FloatDType, Tensor, TensorData};
use rand::rngs::StdRng;
use rand::Rng;
use rand_distr::{Distribution, Normal};

/// Compute precision of the forward pass (None = fp32, no casts).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Ctx {
    pub dtype: Option<FloatDType>,
}

impl Ctx {
    pub fn fp32() -> Self {
        Ctx { dtype: None }
    }
    pub fn cast<B: Backend, const D: usize>(&self, t: Tensor<B, D>) -> Tensor<B, D> {
        match self.dtype {
            Some(dt) => t.cast(dt),
            None => t,
        }
    }
    /// Back to fp32 (for losses, softmax and norms).
    pub fn to_f32<B: Backend, const D: usize>(&self, t: Tensor<B, D>) -> Tensor<B, D> {
        match self.dtype {
            Some(_) => t.cast(FloatDType::F32),
            None => t,
        }
    }
    pub fn w<B: Backend, const D: usize>(&self, p: &Param<Tensor<B, D>>) -> Tensor<B, D> {
        self.cast(p.val())
    }
}

pub fn param<B: Backend, const D: usize>(
    values: Vec<f32>,
    shape: [usize; D],
    device: &Device<B>,
) -> Param<Tensor<B, D>> {
    Param::from_tensor(Tensor::from_data(TensorData::new(values, shape), device))
}

/// Uniform(−bound, bound) values (PyTorch's default for Linear/Conv is bound = 1/sqrt(fan_in)).
pub fn uniform(rng: &mut StdRng, n: usize, bound: f64) -> Vec<f32> {
    (0..n)
        .map(|_| rng.random_range(-bound..bound) as f32)
        .collect()
}

pub fn normal(rng: &mut StdRng, n: usize, std: f64) -> Vec<f32> {
    let d = Normal::new(0.0, std).expect("valid std");
    (0..n).map(|_| d.sample(rng) as f32).collect()
}

/// y = x·W + b, W: [in, out].
#[derive(Module, Debug)]
pub struct Dense<B: Backend> {
    pub w: Param<Tensor<B, 2>>,
    pub b: Param<Tensor<B, 1>>,
}

impl<B: Backend> Dense<B> {
    pub fn new(rng: &mut StdRng, din: usize, dout: usize, device: &Device<B>) -> Self {
        let bound = 1.0 / (din as f64).sqrt();
        Dense {
            w: param(uniform(rng, din * dout, bound), [din, dout], device),
            b: param(uniform(rng, dout, bound), [dout], device),
        }
    }
    pub fn forward2(&self, x: Tensor<B, 2>, c: &Ctx) -> Tensor<B, 2> {
        x.matmul(c.w(&self.w)) + c.w(&self.b).unsqueeze::<2>()
    }
    pub fn forward3(&self, x: Tensor<B, 3>, c: &Ctx) -> Tensor<B, 3> {
        let [b, t, d] = x.dims();
        let y = self.forward2(x.reshape([b * t, d]), c);
        let out = y.dims()[1];
        y.reshape([b, t, out])
    }
}

/// Matrix without bias, W: [in, out].
#[derive(Module, Debug)]
pub struct Proj<B: Backend> {
    pub w: Param<Tensor<B, 2>>,
}

impl<B: Backend> Proj<B> {
    pub fn new(rng: &mut StdRng, din: usize, dout: usize, device: &Device<B>) -> Self {
        let bound = 1.0 / (din as f64).sqrt();
        Proj {
            w: param(uniform(rng, din * dout, bound), [din, dout], device),
        }
    }
    pub fn forward2(&self, x: Tensor<B, 2>, c: &Ctx) -> Tensor<B, 2> {
        x.matmul(c.w(&self.w))
    }
}

/// 2-D convolution, "same" padding, stride 1, then 2×2 max-pool (the simple CNN's block).
#[derive(Module, Debug)]
pub struct ConvPool<B: Backend> {
    pub w: Param<Tensor<B, 4>>,
    pub b: Param<Tensor<B, 1>>,
    pub kernel: usize,
}

impl<B: Backend> ConvPool<B> {
    pub fn new(rng: &mut StdRng, cin: usize, cout: usize, k: usize, device: &Device<B>) -> Self {
        let fan_in = cin * k * k;
        let bound = 1.0 / (fan_in as f64).sqrt();
        ConvPool {
            w: param(
                uniform(rng, cout * fan_in, bound),
                [cout, cin, k, k],
                device,
            ),
            b: param(uniform(rng, cout, bound), [cout], device),
            kernel: k,
        }
    }
    pub fn forward(&self, x: Tensor<B, 4>, c: &Ctx) -> Tensor<B, 4> {
        let p = self.kernel / 2;
        let y = conv2d(
            x,
            c.w(&self.w),
            Some(c.w(&self.b)),
            ConvOptions::new([1, 1], [p, p], [1, 1], 1),
        );
        let y = activation::relu(y);
        max_pool2d(y, [2, 2], [2, 2], [0, 0], [1, 1], false)
    }
}

/// Layer norm over the last dimension, computed in fp32.
#[derive(Module, Debug)]
pub struct Norm<B: Backend> {
    pub gamma: Param<Tensor<B, 1>>,
    pub beta: Param<Tensor<B, 1>>,
}

impl<B: Backend> Norm<B> {
    pub fn new(d: usize, device: &Device<B>) -> Self {
        Norm {
            gamma: param(vec![1.0; d], [d], device),
            beta: param(vec![0.0; d], [d], device),
        }
    }
    pub fn forward(&self, x: Tensor<B, 3>, c: &Ctx) -> Tensor<B, 3> {
        let x = c.to_f32(x);
        let mean = x.clone().mean_dim(2);
        let xc = x - mean;
        let var = xc.clone().powi_scalar(2).mean_dim(2);
        let y = xc / (var + 1e-5).sqrt();
        let y = y * self.gamma.val().unsqueeze::<3>() + self.beta.val().unsqueeze::<3>();
        c.cast(y)
    }
}
