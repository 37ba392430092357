//! Small functional layers whose parameters are fp32 master weights, cast to the compute precision at use.
//! Initialisation uses our own seeded RNG (not Burn's global one) so a trial is reproducible across
//! backends and identical on every replica.

use burn::module::{Module, Param};
use burn::tensor::backend::Backend;
use burn::tensor::module::{conv2d, max_pool2d};
use burn::tensor::ops::ConvOptions;
use burn::tensor::{activation, Device, FloatDType, Int, Tensor, TensorData};
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

/// The simple CNN's block on NHWC activations: k×k convolution ("same" padding, stride 1, cross-correlation
/// like Burn's `conv2d`), 2×2 max-pool (floor), bias, ReLU.
///
/// On the CPU (Flex) the convolution is one im2col gather plus one large gemm, so its backward is two large
/// gemms and one scatter-add instead of Flex's single-threaded `conv2d` backward. Pooling before bias and
/// ReLU is the same function (both are monotone per channel) on a quarter of the elements. Other backends
/// (CUDA) use Burn's `conv2d` and `max_pool2d` on the same weights.
#[derive(Module, Debug)]
pub struct ConvPool<B: Backend> {
    /// [k·k·cin, cout]; row (kh·k + kw)·cin + c holds Burn's `w[cout][c][kh][kw]`.
    pub w: Param<Tensor<B, 2>>,
    pub b: Param<Tensor<B, 1>>,
    pub kernel: usize,
}

impl<B: Backend> ConvPool<B> {
    pub fn new(rng: &mut StdRng, cin: usize, cout: usize, k: usize, device: &Device<B>) -> Self {
        let fan_in = cin * k * k;
        let bound = 1.0 / (fan_in as f64).sqrt();
        // drawn in Burn's [cout, cin, k, k] order, stored in the gemm layout
        let burn_order = uniform(rng, cout * fan_in, bound);
        ConvPool {
            w: param(
                burn_to_gemm_layout(&burn_order, cout, cin, k),
                [fan_in, cout],
                device,
            ),
            b: param(uniform(rng, cout, bound), [cout], device),
            kernel: k,
        }
    }

    /// x: [N, H, W, Cin] → [N, H/2, W/2, Cout].
    pub fn forward(&self, x: Tensor<B, 4>, c: &Ctx) -> Tensor<B, 4> {
        if gemm_conv::<B>() {
            self.forward_gemm(x, c)
        } else {
            self.forward_burn(x, c)
        }
    }

    /// im2col (one gather) + one gemm, then pool, bias, ReLU.
    pub fn forward_gemm(&self, x: Tensor<B, 4>, c: &Ctx) -> Tensor<B, 4> {
        let [n, h, w, cin] = x.dims();
        let k = self.kernel;
        let cout = self.b.dims()[0];
        let rows = n * h * w;
        let flat = x.reshape([rows, cin]);
        // one zero row at index `rows`: the padding
        let zero = flat.clone().slice([0..1, 0..cin]).zeros_like();
        let padded = Tensor::cat(vec![flat, zero], 0);
        let idx = im2col_index::<B>(n, h, w, k, &padded.device());
        let cols = padded.select(0, idx).reshape([rows, k * k * cin]);
        let y = cols.matmul(c.w(&self.w)); // [N·H·W, Cout]
        let (h2, w2) = (h / 2, w / 2);
        let y = if h % 2 == 1 || w % 2 == 1 {
            y.reshape([n, h, w, cout])
                .slice([0..n, 0..2 * h2, 0..2 * w2, 0..cout])
        } else {
            y.reshape([n, h, w, cout])
        };
        // 2×2 max-pool: rows pairs, then column pairs
        let y = y
            .reshape([n * h2, 2, 2 * w2 * cout])
            .max_dim(1)
            .reshape([n * h2 * w2, 2, cout])
            .max_dim(1)
            .reshape([n * h2 * w2, cout]);
        let y = activation::relu(y + c.w(&self.b).unsqueeze::<2>());
        y.reshape([n, h2, w2, cout])
    }

    /// Burn's `conv2d` + `max_pool2d` on the same weights (the reference, and the path off the CPU).
    pub fn forward_burn(&self, x: Tensor<B, 4>, c: &Ctx) -> Tensor<B, 4> {
        let k = self.kernel;
        let [fan_in, cout] = self.w.dims();
        let cin = fan_in / (k * k);
        let p = k / 2;
        let w = c
            .w(&self.w)
            .reshape([k, k, cin, cout])
            .permute([3, 2, 0, 1]);
        let y = conv2d(
            x.permute([0, 3, 1, 2]),
            w,
            Some(c.w(&self.b)),
            ConvOptions::new([1, 1], [p, p], [1, 1], 1),
        );
        let y = activation::relu(y);
        max_pool2d(y, [2, 2], [2, 2], [0, 0], [1, 1], false).permute([0, 2, 3, 1])
    }
}

/// Burn's conv weight [cout, cin, k, k] (row-major values) → the gemm layout [k·k·cin, cout].
pub fn burn_to_gemm_layout(v: &[f32], cout: usize, cin: usize, k: usize) -> Vec<f32> {
    let mut out = vec![0.0f32; v.len()];
    for co in 0..cout {
        for ci in 0..cin {
            for a in 0..k {
                for b in 0..k {
                    out[((a * k + b) * cin + ci) * cout + co] =
                        v[((co * cin + ci) * k + a) * k + b];
                }
            }
        }
    }
    out
}

/// Whether this backend takes the im2col + gemm convolution (the Flex CPU backend, with or without
/// autodiff); other backends have fast convolutions of their own.
pub fn gemm_conv<B: Backend>() -> bool {
    std::any::type_name::<B>().contains("Flex")
}

/// Row indices of the im2col gather: for output pixel (n, i, j) and kernel offset (a, b) the input row
/// n·H·W + (i+a−p)·W + (j+b−p), or the zero row N·H·W outside the image. Cached per thread and shape.
fn im2col_index<B: Backend>(
    n: usize,
    h: usize,
    w: usize,
    k: usize,
    device: &Device<B>,
) -> Tensor<B, 1, Int> {
    use std::any::{Any, TypeId};
    use std::cell::RefCell;
    use std::collections::HashMap;
    type Key = (TypeId, String, usize, usize, usize, usize);
    thread_local! {
        static CACHE: RefCell<HashMap<Key, Box<dyn Any>>> = RefCell::new(HashMap::new());
    }
    let key: Key = (TypeId::of::<B>(), format!("{device:?}"), n, h, w, k);
    if let Some(t) = CACHE.with(|c| {
        c.borrow()
            .get(&key)
            .and_then(|b| b.downcast_ref::<Tensor<B, 1, Int>>().cloned())
    }) {
        return t;
    }
    let p = (k / 2) as isize;
    let zero_row = (n * h * w) as i64;
    let mut idx = Vec::with_capacity(n * h * w * k * k);
    for img in 0..n {
        let base = (img * h * w) as i64;
        for i in 0..h as isize {
            for j in 0..w as isize {
                for a in 0..k as isize {
                    for b in 0..k as isize {
                        let (si, sj) = (i + a - p, j + b - p);
                        idx.push(
                            if si >= 0 && sj >= 0 && si < h as isize && sj < w as isize {
                                base + (si * w as isize + sj) as i64
                            } else {
                                zero_row
                            },
                        );
                    }
                }
            }
        }
    }
    let len = idx.len();
    let t = Tensor::<B, 1, Int>::from_data(TensorData::new(idx, [len]), device);
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() >= 16 {
            c.clear();
        }
        c.insert(key, Box::new(t.clone()));
    });
    t
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

#[cfg(test)]
mod tests {
    use super::*;
    use burn::backend::{Autodiff, Flex};
    use rand::SeedableRng;

    type Ad = Autodiff<Flex>;

    fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
        assert_eq!(a.len(), b.len());
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f32::max)
    }

    fn vals<const D: usize>(t: Tensor<Flex, D>) -> Vec<f32> {
        t.into_data().to_vec::<f32>().unwrap()
    }

    /// The im2col + gemm block equals Burn's conv2d → ReLU → max_pool2d in values and in the gradients of
    /// the input, the weights and the bias (odd and even sizes, several kernels and channel counts).
    #[test]
    fn gemm_conv_matches_burn_conv2d_values_and_gradients() {
        let dev = Default::default();
        for &(n, h, w, cin, cout, k) in &[
            (2, 6, 6, 1, 4, 5),
            (2, 7, 5, 3, 4, 5),
            (3, 8, 8, 2, 5, 3),
            (1, 4, 6, 4, 2, 1),
        ] {
            let mut rng = StdRng::seed_from_u64(7 + (n * h * w * cin * k) as u64);
            let layer = ConvPool::<Ad>::new(&mut rng, cin, cout, k, &dev);
            let x_vals = uniform(&mut rng, n * h * w * cin, 1.0);
            let out_len = n * (h / 2) * (w / 2) * cout;
            let probe = Tensor::<Ad, 4>::from_data(
                TensorData::new(uniform(&mut rng, out_len, 1.0), [n, h / 2, w / 2, cout]),
                &dev,
            );
            let run = |gemm: bool| {
                let x = Tensor::<Ad, 4>::from_data(
                    TensorData::new(x_vals.clone(), [n, h, w, cin]),
                    &dev,
                )
                .require_grad();
                let y = if gemm {
                    layer.forward_gemm(x.clone(), &Ctx::fp32())
                } else {
                    layer.forward_burn(x.clone(), &Ctx::fp32())
                };
                assert_eq!(y.dims(), [n, h / 2, w / 2, cout]);
                let loss = (y.clone() * probe.clone()).sum();
                let g = loss.backward();
                (
                    vals(y.inner()),
                    vals(x.grad(&g).unwrap()),
                    vals(layer.w.val().grad(&g).unwrap()),
                    vals(layer.b.val().grad(&g).unwrap()),
                )
            };
            let (y1, gx1, gw1, gb1) = run(true);
            let (y2, gx2, gw2, gb2) = run(false);
            let case = (n, h, w, cin, cout, k);
            assert!(y1.iter().any(|v| *v > 0.0), "{case:?}: all outputs zero");
            assert!(max_abs_diff(&y1, &y2) < 1e-5, "{case:?}: values differ");
            assert!(max_abs_diff(&gx1, &gx2) < 1e-4, "{case:?}: d/dx differs");
            assert!(max_abs_diff(&gw1, &gw2) < 1e-4, "{case:?}: d/dw differs");
            assert!(max_abs_diff(&gb1, &gb2) < 1e-4, "{case:?}: d/db differs");
            assert!(
                gw1.iter().any(|v| v.abs() > 1e-6),
                "{case:?}: zero weight gradient"
            );
        }
    }

    #[test]
    fn gemm_layout_is_a_permutation_of_burns() {
        let (cout, cin, k) = (3, 2, 5);
        let v: Vec<f32> = (0..cout * cin * k * k).map(|i| i as f32).collect();
        let g = burn_to_gemm_layout(&v, cout, cin, k);
        // w[co=2][ci=1][a=3][b=4] sits at row (3·5+4)·2+1, column 2
        assert_eq!(
            g[((3 * 5 + 4) * 2 + 1) * cout + 2],
            v[((2 * cin + 1) * k + 3) * k + 4]
        );
        let mut sorted = g.clone();
        sorted.sort_by(f32::total_cmp);
        assert_eq!(sorted, v);
    }

    #[test]
    fn only_flex_takes_the_gemm_convolution() {
        assert!(gemm_conv::<Flex>());
        assert!(gemm_conv::<Ad>());
    }
}
