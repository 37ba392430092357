//! Small functional layers whose parameters are fp32 master weights, cast to the compute precision at use.
//! Initialisation uses our own seeded RNG (not Burn's global one) so a trial is reproducible across
//! backends and identical on every replica.
//!
//! **The member axis.** Every parameter has a leading axis of K *members*: K trials of one workload at
//! one batch size trained together as one program (HFTA, Wang et al. MLSys 2021; what `vmap` over
//! trials is in JAX). A lone trial is K = 1. Member k's weights are slice k of every parameter, and no
//! op mixes members: member k's loss, gradients and updates equal those of the same trial run alone.
//! Activations carry the axis too: `[K, M, d]` for dense layers (M rows a member), `[K·N, H, W, C]`
//! (member-major) for images.

use burn::module::{Module, Param};
use burn::tensor::backend::Backend;
use burn::tensor::module::{conv2d, embedding, max_pool2d};
use burn::tensor::ops::ConvOptions;
use burn::tensor::{activation, Device, FloatDType, Int, Tensor, TensorData};
use rand::rngs::StdRng;
use rand::Rng;
use rand_distr::{Distribution, Normal};

use super::kernels;

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
    /// Whether the forward pass computes in fp32 (the CPU kernels' precision).
    pub fn is_fp32(&self) -> bool {
        self.dtype.is_none_or(|d| d == FloatDType::F32)
    }
}

pub fn param<B: Backend, const D: usize>(
    values: Vec<f32>,
    shape: [usize; D],
    device: &Device<B>,
) -> Param<Tensor<B, D>> {
    Param::from_tensor(Tensor::from_data(TensorData::new(values, shape), device))
}

/// How a family builds its network: every parameter comes from here, in the order the family's
/// code asks for them. `Init::new` draws the values from the trial's seeded RNG (the network a
/// trial trains); `Init::shapes` draws nothing and allocates nothing — each parameter is a lazy
/// Burn parameter that knows only its shape — so the lab can count a network's parameters and
/// FLOPs from the very module it would train (`family::ModelSpec::param_count`), even for a
/// paper-size model on a laptop.
pub struct Init<'a, B: Backend> {
    rng: &'a mut StdRng,
    device: &'a Device<B>,
    real: bool,
}

impl<'a, B: Backend> Init<'a, B> {
    /// Parameters drawn from `rng` on `device`.
    pub fn new(rng: &'a mut StdRng, device: &'a Device<B>) -> Self {
        Init {
            rng,
            device,
            real: true,
        }
    }
    /// Shapes only (lazy parameters that are never initialised).
    pub fn shapes(rng: &'a mut StdRng, device: &'a Device<B>) -> Self {
        Init {
            rng,
            device,
            real: false,
        }
    }
    pub fn device(&self) -> &Device<B> {
        self.device
    }
    /// A trainable parameter of `shape` whose values `draw(rng, n)` gives (n = its element count).
    pub fn param<const D: usize>(
        &mut self,
        shape: [usize; D],
        draw: impl FnOnce(&mut StdRng, usize) -> Vec<f32>,
    ) -> Param<Tensor<B, D>> {
        if self.real {
            let n = shape.iter().product();
            param(draw(self.rng, n), shape, self.device)
        } else {
            lazy(shape, self.device, true)
        }
    }
    /// A trainable parameter of Uniform(−bound, bound) values.
    pub fn uniform<const D: usize>(
        &mut self,
        shape: [usize; D],
        bound: f64,
    ) -> Param<Tensor<B, D>> {
        self.param(shape, |rng, n| uniform(rng, n, bound))
    }
    /// A trainable parameter of Normal(0, std) values.
    pub fn normal<const D: usize>(&mut self, shape: [usize; D], std: f64) -> Param<Tensor<B, D>> {
        self.param(shape, |rng, n| normal(rng, n, std))
    }
    /// A trainable parameter of one value (no draws).
    pub fn constant<const D: usize>(&mut self, shape: [usize; D], v: f32) -> Param<Tensor<B, D>> {
        self.param(shape, |_, n| vec![v; n])
    }
    /// State that is not trained (no gradient: the optimizer, clipping, the noise scale and the
    /// gradient exchange, which all follow the gradients, never see it), of one value.
    pub fn state<const D: usize>(&mut self, shape: [usize; D], v: f32) -> Param<Tensor<B, D>> {
        if self.real {
            let n = shape.iter().product();
            Param::initialized(
                burn::module::ParamId::new(),
                Tensor::from_data(TensorData::new(vec![v; n], shape), self.device),
            )
        } else {
            lazy(shape, self.device, false)
        }
    }
}

/// A parameter that knows its shape and is never initialised (`Init::shapes`).
fn lazy<B: Backend, const D: usize>(
    shape: [usize; D],
    device: &Device<B>,
    trainable: bool,
) -> Param<Tensor<B, D>> {
    Param::uninitialized(
        burn::module::ParamId::new(),
        move |dev: &Device<B>, grad| {
            let t = Tensor::zeros(shape, dev);
            if grad {
                t.require_grad()
            } else {
                t
            }
        },
        device.clone(),
        trainable,
        burn::tensor::Shape::new(shape),
    )
}

/// Member 0's values of a parameter, flat in row-major order (what a peer model reads).
pub fn member0_values<B: Backend, const D: usize>(p: &Param<Tensor<B, D>>) -> Vec<f32> {
    p.val()
        .narrow(0, 0, 1)
        .into_data()
        .convert::<f32>()
        .to_vec()
        .expect("f32 values")
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

/// y = x·W + b per member, W: [K, in, out], b: [K, out].
#[derive(Module, Debug)]
pub struct Dense<B: Backend> {
    pub w: Param<Tensor<B, 3>>,
    pub b: Param<Tensor<B, 2>>,
}

impl<B: Backend> Dense<B> {
    /// One member.
    pub fn new(rng: &mut StdRng, din: usize, dout: usize, device: &Device<B>) -> Self {
        Self::init(&mut Init::new(rng, device), din, dout)
    }
    /// One member, from `init` (W then b, Uniform(±1/√din) as PyTorch's Linear).
    pub fn init(init: &mut Init<'_, B>, din: usize, dout: usize) -> Self {
        let bound = 1.0 / (din as f64).sqrt();
        Dense {
            w: init.uniform([1, din, dout], bound),
            b: init.uniform([1, dout], bound),
        }
    }
    /// Multiply-add FLOPs (2 per multiply-add) of one member's forward over `rows` rows.
    pub fn flops(&self, rows: usize) -> f64 {
        let [_, din, dout] = self.w.lazy_shape().dims();
        2.0 * rows as f64 * din as f64 * dout as f64
    }
    /// x: [K, M, in] → [K, M, out]. On the CPU (fp32) one op of our own (`kernels::dense`),
    /// checked against these generic ops.
    pub fn forward(&self, x: Tensor<B, 3>, c: &Ctx) -> Tensor<B, 3> {
        if c.is_fp32() {
            if let Some(y) = kernels::dense::<B>(x.clone(), self.w.val(), self.b.val()) {
                return y;
            }
        }
        self.forward_ops(x, c)
    }

    /// [`Self::forward`] in Burn's generic ops.
    pub fn forward_ops(&self, x: Tensor<B, 3>, c: &Ctx) -> Tensor<B, 3> {
        let y = x.matmul(c.w(&self.w));
        per_member_add(y, c.w(&self.b))
    }
}

/// y [K, M, d] + v [K, d] (member k's row added to each of its M rows). On the CPU a [K, 1, d]
/// broadcast takes Flex's element-by-element path for K > 1, so the row is repeated M times first
/// (both operands contiguous: the vectorised path).
pub fn per_member_add<B: Backend>(y: Tensor<B, 3>, v: Tensor<B, 2>) -> Tensor<B, 3> {
    y.clone() + member_rows(v, y.dims()[1])
}

/// y [K, M, d] × v [K, d] per member (as [`per_member_add`]).
pub fn per_member_mul<B: Backend>(y: Tensor<B, 3>, v: Tensor<B, 2>) -> Tensor<B, 3> {
    y.clone() * member_rows(v, y.dims()[1])
}

/// v [K, d] as [K, 1, d], repeated to [K, m, d] where broadcasting it would be slow (Flex, K > 1).
fn member_rows<B: Backend>(v: Tensor<B, 2>, m: usize) -> Tensor<B, 3> {
    let k = v.dims()[0];
    let r = v.unsqueeze_dim::<3>(1);
    if k > 1 && m > 1 && gemm_conv::<B>() {
        r.repeat_dim(1, m)
    } else {
        r
    }
}

/// Matrix without bias per member, W: [K, in, out].
#[derive(Module, Debug)]
pub struct Proj<B: Backend> {
    pub w: Param<Tensor<B, 3>>,
}

impl<B: Backend> Proj<B> {
    pub fn new(rng: &mut StdRng, din: usize, dout: usize, device: &Device<B>) -> Self {
        Self::init(&mut Init::new(rng, device), din, dout)
    }
    pub fn init(init: &mut Init<'_, B>, din: usize, dout: usize) -> Self {
        let bound = 1.0 / (din as f64).sqrt();
        Proj {
            w: init.uniform([1, din, dout], bound),
        }
    }
    /// Multiply-add FLOPs of one member's forward over `rows` rows.
    pub fn flops(&self, rows: usize) -> f64 {
        let [_, din, dout] = self.w.lazy_shape().dims();
        2.0 * rows as f64 * din as f64 * dout as f64
    }
    /// x: [K, M, in] → [K, M, out].
    pub fn forward(&self, x: Tensor<B, 3>, c: &Ctx) -> Tensor<B, 3> {
        x.matmul(c.w(&self.w))
    }
}

/// An embedding table per member, [K, V, E]: ids [K·N, T] (member-major rows) → [K, N·T, E].
pub fn embed<B: Backend>(
    table: &Param<Tensor<B, 3>>,
    ids: Tensor<B, 2, Int>,
    c: &Ctx,
) -> Tensor<B, 3> {
    let [k, v, e] = table.dims();
    let [rows, t] = ids.dims();
    let n = rows / k;
    let flat = c.w(table).reshape([k * v, e]);
    let ids = if k == 1 {
        ids
    } else {
        // member k reads rows k·V … k·V + V − 1 of the flat table
        let offsets = Tensor::<B, 1, Int>::arange(0..k as i64, &ids.device())
            .mul_scalar(v as i64)
            .reshape([k, 1, 1]);
        (ids.reshape([k, n, t]) + offsets).reshape([rows, t])
    };
    embedding(flat, ids).reshape([k, n * t, e])
}

/// The simple CNN's block on NHWC activations: k×k convolution ("same" padding, stride 1, cross-correlation
/// like Burn's `conv2d`), 2×2 max-pool (floor), bias, ReLU.
///
/// On the CPU (Flex, fp32) the block is one op of our own (`kernels::conv_pool`: an im2col of
/// contiguous copies, one gemm per member, pooling with its argmax kept for a hand-written backward),
/// checked against Burn's `conv2d` → ReLU → `max_pool2d` in values and gradients. Pooling before bias
/// and ReLU is the same function (both are monotone per channel) on a quarter of the elements. Other
/// backends (CUDA, wgpu) run Burn's `conv2d` (grouped over the members) and `max_pool2d` on the same
/// weights.
#[derive(Module, Debug)]
pub struct ConvPool<B: Backend> {
    /// [K, k·k·cin, cout]; row (kh·k + kw)·cin + c holds Burn's `w[cout][c][kh][kw]`.
    pub w: Param<Tensor<B, 3>>,
    pub b: Param<Tensor<B, 2>>,
    pub kernel: usize,
}

impl<B: Backend> ConvPool<B> {
    pub fn new(rng: &mut StdRng, cin: usize, cout: usize, k: usize, device: &Device<B>) -> Self {
        Self::init(&mut Init::new(rng, device), cin, cout, k)
    }
    /// One member, from `init` (W then b, Uniform(±1/√(k·k·cin)) as PyTorch's Conv2d).
    pub fn init(init: &mut Init<'_, B>, cin: usize, cout: usize, k: usize) -> Self {
        let fan_in = cin * k * k;
        let bound = 1.0 / (fan_in as f64).sqrt();
        // drawn in Burn's [cout, cin, k, k] order, stored in the gemm layout
        ConvPool {
            w: init.param([1, fan_in, cout], |rng, n| {
                burn_to_gemm_layout(&uniform(rng, n, bound), cout, cin, k)
            }),
            b: init.uniform([1, cout], bound),
            kernel: k,
        }
    }

    /// Multiply-add FLOPs of one member's forward on one `h`×`w` image (the convolution at full
    /// resolution; pooling, bias and ReLU are not counted) and the pooled output's (h, w).
    pub fn flops(&self, h: usize, w: usize) -> (f64, (usize, usize)) {
        let [_, kkc, cout] = self.w.lazy_shape().dims();
        (
            2.0 * (h * w) as f64 * kkc as f64 * cout as f64,
            (h / 2, w / 2),
        )
    }
    /// Output channels.
    pub fn channels(&self) -> usize {
        self.w.lazy_shape().dims::<3>()[2]
    }

    /// x: [K·N, H, W, Cin] → [K·N, H/2, W/2, Cout].
    pub fn forward(&self, x: Tensor<B, 4>, c: &Ctx) -> Tensor<B, 4> {
        if c.is_fp32() {
            if let Some(y) =
                kernels::conv_pool::<B>(x.clone(), self.w.val(), self.b.val(), self.kernel)
            {
                return y;
            }
        }
        if gemm_conv::<B>() {
            self.forward_gemm(x, c)
        } else {
            self.forward_burn(x, c)
        }
    }

    /// im2col (one gather) + one gemm per member, then pool, bias, ReLU, in Burn's generic ops (the
    /// CPU path in reduced precision).
    pub fn forward_gemm(&self, x: Tensor<B, 4>, c: &Ctx) -> Tensor<B, 4> {
        let [kn, h, w, cin] = x.dims();
        let [members, kkc, cout] = self.w.dims();
        let n = kn / members;
        let k = self.kernel;
        let rows = kn * h * w;
        let flat = x.reshape([rows, cin]);
        // one zero row at index `rows`: the padding
        let zero = flat.clone().slice([0..1, 0..cin]).zeros_like();
        let padded = Tensor::cat(vec![flat, zero], 0);
        let idx = im2col_index::<B>([kn, 1, h, w], k, 1, &padded.device());
        let cols = padded
            .select(0, idx)
            .reshape([members, n * h * w, k * k * cin]);
        debug_assert_eq!(kkc, k * k * cin);
        let y = cols.matmul(c.w(&self.w)); // [K, N·H·W, Cout]
        let (h2, w2) = (h / 2, w / 2);
        let y = if h % 2 == 1 || w % 2 == 1 {
            y.reshape([kn, h, w, cout])
                .slice([0..kn, 0..2 * h2, 0..2 * w2, 0..cout])
        } else {
            y.reshape([kn, h, w, cout])
        };
        // 2×2 max-pool: rows pairs, then column pairs
        let y = y
            .reshape([kn * h2, 2, 2 * w2 * cout])
            .max_dim(1)
            .reshape([kn * h2 * w2, 2, cout])
            .max_dim(1)
            .reshape([members, n * h2 * w2, cout]);
        let y = activation::relu(per_member_add(y, c.w(&self.b)));
        y.reshape([kn, h2, w2, cout])
    }

    /// Burn's `conv2d` (grouped: one group per member) + `max_pool2d` on the same weights (the
    /// reference, and the path off the CPU).
    pub fn forward_burn(&self, x: Tensor<B, 4>, c: &Ctx) -> Tensor<B, 4> {
        let k = self.kernel;
        let [members, fan_in, cout] = self.w.dims();
        let cin = fan_in / (k * k);
        let [kn, h, wd, _] = x.dims();
        let n = kn / members;
        let p = k / 2;
        // [K, k·k·cin, cout] → [K·cout, cin, k, k]
        let w = c
            .w(&self.w)
            .reshape([members, k, k, cin, cout])
            .permute([0, 4, 3, 1, 2])
            .reshape([members * cout, cin, k, k]);
        // [K·N, H, W, cin] → [N, K·cin, H, W]
        let x = if members == 1 {
            x.permute([0, 3, 1, 2])
        } else {
            x.reshape([members, n, h, wd, cin])
                .permute([1, 0, 4, 2, 3])
                .reshape([n, members * cin, h, wd])
        };
        let bias = c.w(&self.b).reshape([members * cout]);
        let y = conv2d(
            x,
            w,
            Some(bias),
            ConvOptions::new([1, 1], [p, p], [1, 1], members),
        );
        let y = activation::relu(y);
        let y = max_pool2d(y, [2, 2], [2, 2], [0, 0], [1, 1], false);
        let [_, _, h2, w2] = y.dims();
        if members == 1 {
            y.permute([0, 2, 3, 1])
        } else {
            // [N, K·cout, h2, w2] → [K·N, h2, w2, cout]
            y.reshape([n, members, cout, h2, w2])
                .permute([1, 0, 3, 4, 2])
                .reshape([kn, h2, w2, cout])
        }
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
    super::kernels::flex::is_cpu::<B>()
}

/// Row indices of the im2col gather over rows (image n, member m, y, x) of a [N·K·H·W + 1, cin]
/// table whose last row is zero: for member m, output pixel (n, i, j) and kernel offset (a, b),
/// the input row at (i·s + a − p, j·s + b − p), or the zero row outside the image. Ordered
/// member-major, then (n, i, j), then (a, b). Cached per thread and shape.
pub(super) fn im2col_index<B: Backend>(
    [n, k, h, w]: [usize; 4],
    kernel: usize,
    stride: usize,
    device: &burn::tensor::Device<B>,
) -> Tensor<B, 1, Int> {
    use std::any::{Any, TypeId};
    use std::cell::RefCell;
    use std::collections::HashMap;
    type Key = (TypeId, String, [usize; 6]);
    thread_local! {
        static CACHE: RefCell<HashMap<Key, Box<dyn Any>>> = RefCell::new(HashMap::new());
    }
    let key: Key = (
        TypeId::of::<B>(),
        format!("{device:?}"),
        [n, k, h, w, kernel, stride],
    );
    if let Some(t) = CACHE.with(|c| {
        c.borrow()
            .get(&key)
            .and_then(|b| b.downcast_ref::<Tensor<B, 1, Int>>().cloned())
    }) {
        return t;
    }
    let p = (kernel / 2) as isize;
    let out = |len: usize| (len + 2 * (kernel / 2) - kernel) / stride + 1;
    let (ho, wo) = (out(h), out(w));
    let zero_row = (n * k * h * w) as i64;
    let mut idx = Vec::with_capacity(k * n * ho * wo * kernel * kernel);
    for m in 0..k {
        for img in 0..n {
            let base = ((img * k + m) * h * w) as i64;
            for i in 0..ho as isize {
                for j in 0..wo as isize {
                    for a in 0..kernel as isize {
                        for b in 0..kernel as isize {
                            let si = i * stride as isize + a - p;
                            let sj = j * stride as isize + b - p;
                            let inside = si >= 0 && sj >= 0 && si < h as isize && sj < w as isize;
                            idx.push(if inside {
                                base + (si * w as isize + sj) as i64
                            } else {
                                zero_row
                            });
                        }
                    }
                }
            }
        }
    }
    let len = idx.len();
    let t = Tensor::<B, 1, Int>::from_data(TensorData::new(idx, [len]), device);
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() >= 32 {
            c.clear();
        }
        c.insert(key, Box::new(t.clone()));
    });
    t
}

/// Layer norm over the last dimension per member (γ, β: [K, d]), computed in fp32.
#[derive(Module, Debug)]
pub struct Norm<B: Backend> {
    pub gamma: Param<Tensor<B, 2>>,
    pub beta: Param<Tensor<B, 2>>,
}

impl<B: Backend> Norm<B> {
    pub fn new(d: usize, device: &Device<B>) -> Self {
        let mut rng = <StdRng as rand::SeedableRng>::seed_from_u64(0);
        Self::init(&mut Init::new(&mut rng, device), d)
    }
    /// γ = 1, β = 0 (no draws).
    pub fn init(init: &mut Init<'_, B>, d: usize) -> Self {
        Norm {
            gamma: init.constant([1, d], 1.0),
            beta: init.constant([1, d], 0.0),
        }
    }
    /// x: [K, M, d].
    pub fn forward(&self, x: Tensor<B, 3>, c: &Ctx) -> Tensor<B, 3> {
        let x = c.to_f32(x);
        let mean = x.clone().mean_dim(2);
        let xc = x - mean;
        let var = xc.clone().powi_scalar(2).mean_dim(2);
        let y = xc / (var + 1e-5).sqrt();
        let y = per_member_add(per_member_mul(y, self.gamma.val()), self.beta.val());
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

    /// The three ways of running the block — our CPU kernel, the generic im2col + gemm, and Burn's
    /// grouped `conv2d` → ReLU → `max_pool2d` — agree in values and in the gradients of the input,
    /// the weights and the bias (odd and even sizes, several kernels and channel counts, 1 and 3
    /// members with different weights per member).
    #[test]
    fn the_conv_block_paths_agree_in_values_and_gradients() {
        let dev = Default::default();
        for &(members, n, h, w, cin, cout, k) in &[
            (1, 2, 6, 6, 1, 4, 5),
            (1, 2, 7, 5, 3, 4, 5),
            (3, 3, 8, 8, 2, 5, 3),
            (2, 1, 4, 6, 4, 2, 1),
            (3, 2, 7, 7, 8, 16, 5),
            // several tasks per member (the kernel cuts a member's images into chunks of ~256
            // KiB of columns: 13 here, then 6), an uneven last chunk
            (2, 20, 14, 14, 1, 8, 5),
            (1, 31, 7, 7, 8, 16, 5),
        ] {
            let mut rng = StdRng::seed_from_u64(7 + (n * h * w * cin * k) as u64);
            let layers: Vec<ConvPool<Ad>> = (0..members)
                .map(|_| ConvPool::<Ad>::new(&mut rng, cin, cout, k, &dev))
                .collect();
            let layer = crate::model::stack_members(layers);
            let kn = members * n;
            let x_vals = uniform(&mut rng, kn * h * w * cin, 1.0);
            let out_len = kn * (h / 2) * (w / 2) * cout;
            let probe = Tensor::<Ad, 4>::from_data(
                TensorData::new(uniform(&mut rng, out_len, 1.0), [kn, h / 2, w / 2, cout]),
                &dev,
            );
            let run = |path: usize| {
                let x = Tensor::<Ad, 4>::from_data(
                    TensorData::new(x_vals.clone(), [kn, h, w, cin]),
                    &dev,
                )
                .require_grad();
                let y = match path {
                    0 => layer.forward(x.clone(), &Ctx::fp32()),
                    1 => layer.forward_gemm(x.clone(), &Ctx::fp32()),
                    _ => layer.forward_burn(x.clone(), &Ctx::fp32()),
                };
                assert_eq!(y.dims(), [kn, h / 2, w / 2, cout]);
                let loss = (y.clone() * probe.clone()).sum();
                let g = loss.backward();
                (
                    vals(y.inner()),
                    vals(x.grad(&g).unwrap()),
                    vals(layer.w.val().grad(&g).unwrap()),
                    vals(layer.b.val().grad(&g).unwrap()),
                )
            };
            let (y0, gx0, gw0, gb0) = run(0);
            let case = (members, n, h, w, cin, cout, k);
            assert!(y0.iter().any(|v| *v > 0.0), "{case:?}: all outputs zero");
            assert!(
                gw0.iter().any(|v| v.abs() > 1e-6),
                "{case:?}: zero weight gradient"
            );
            for path in [1, 2] {
                let (y, gx, gw, gb) = run(path);
                assert!(max_abs_diff(&y0, &y) < 1e-5, "{case:?} path {path}: values");
                assert!(max_abs_diff(&gx0, &gx) < 1e-4, "{case:?} path {path}: d/dx");
                assert!(max_abs_diff(&gw0, &gw) < 1e-4, "{case:?} path {path}: d/dw");
                assert!(max_abs_diff(&gb0, &gb) < 1e-4, "{case:?} path {path}: d/db");
            }
        }
    }

    /// The CPU conv block's numbers do not depend on the threads or on the group: on 1 thread and
    /// on the default pool, and a member of a 2-member group against the same layer alone, the
    /// outputs and every gradient are bitwise equal (several tasks per member).
    #[test]
    fn the_conv_kernel_is_bitwise_the_same_on_any_threads_and_in_a_group() {
        let dev = Default::default();
        let (n, h, w, cin, cout, k) = (20, 7, 7, 8, 16, 5);
        let mut rng = StdRng::seed_from_u64(11);
        let a = ConvPool::<Ad>::new(&mut rng, cin, cout, k, &dev);
        let b = ConvPool::<Ad>::new(&mut rng, cin, cout, k, &dev);
        let xa = uniform(&mut rng, n * h * w * cin, 1.0);
        let xb = uniform(&mut rng, n * h * w * cin, 1.0);
        let pa = uniform(&mut rng, n * (h / 2) * (w / 2) * cout, 1.0);
        let pb = uniform(&mut rng, n * (h / 2) * (w / 2) * cout, 1.0);
        let run = |layer: &ConvPool<Ad>, xs: Vec<f32>, ps: Vec<f32>, kn: usize| {
            let x = Tensor::<Ad, 4>::from_data(TensorData::new(xs, [kn, h, w, cin]), &dev)
                .require_grad();
            let p = Tensor::<Ad, 4>::from_data(TensorData::new(ps, [kn, h / 2, w / 2, cout]), &dev);
            let y = layer.forward(x.clone(), &Ctx::fp32());
            let g = (y.clone() * p).sum().backward();
            (
                vals(y.inner()),
                vals(x.grad(&g).unwrap()),
                vals(layer.w.val().grad(&g).unwrap()),
                vals(layer.b.val().grad(&g).unwrap()),
            )
        };
        let alone = run(&a, xa.clone(), pa.clone(), n);
        let one_thread = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap()
            .install(|| run(&a, xa.clone(), pa.clone(), n));
        assert_eq!(alone, one_thread, "1 thread against the default pool");
        let group = crate::model::stack_members(vec![a.clone(), b]);
        let both = run(&group, [xa, xb].concat(), [pa, pb].concat(), 2 * n);
        let first = |v: &Vec<f32>| v[..v.len() / 2].to_vec();
        assert_eq!(alone.0, first(&both.0), "values");
        assert_eq!(alone.1, first(&both.1), "d/dx");
        assert_eq!(alone.2, first(&both.2), "d/dw");
        assert_eq!(alone.3, first(&both.3), "d/db");
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

    /// Each member of an embedding reads its own table.
    #[test]
    fn each_member_embeds_from_its_own_table() {
        let dev = Default::default();
        let (k, v, e) = (3, 4, 2);
        let table: Vec<f32> = (0..k * v * e).map(|i| i as f32).collect();
        let p = param::<Flex, 3>(table.clone(), [k, v, e], &dev);
        let ids = Tensor::<Flex, 2, Int>::from_data(
            TensorData::new(vec![1i64, 3, 0, 2, 3, 3], [k * 2, 1]),
            &dev,
        );
        let out = vals(embed(&p, ids, &Ctx::fp32()));
        let row = |m: usize, id: usize| table[(m * v + id) * e..(m * v + id + 1) * e].to_vec();
        let want: Vec<f32> = [(0, 1), (0, 3), (1, 0), (1, 2), (2, 3), (2, 3)]
            .iter()
            .flat_map(|&(m, id)| row(m, id))
            .collect();
        assert_eq!(out, want);
    }

    /// The CPU's dense layer equals Burn's matmul + broadcast add in values and in the gradients of
    /// the input, the weights and the bias, for 1 and 3 members.
    #[test]
    fn the_dense_kernel_matches_the_generic_ops() {
        let dev = Default::default();
        for &(k, m, din, dout) in &[(1, 5, 4, 3), (3, 17, 9, 6), (2, 1, 1, 1)] {
            let mut rng = StdRng::seed_from_u64((k * m * din * dout) as u64);
            let layers: Vec<Dense<Ad>> = (0..k)
                .map(|_| Dense::new(&mut rng, din, dout, &dev))
                .collect();
            let layer = crate::model::stack_members(layers);
            let xv = uniform(&mut rng, k * m * din, 1.0);
            let probe = uniform(&mut rng, k * m * dout, 1.0);
            let run = |fast: bool| {
                let x = Tensor::<Ad, 3>::from_data(TensorData::new(xv.clone(), [k, m, din]), &dev)
                    .require_grad();
                let y = if fast {
                    layer.forward(x.clone(), &Ctx::fp32())
                } else {
                    layer.forward_ops(x.clone(), &Ctx::fp32())
                };
                let p =
                    Tensor::<Ad, 3>::from_data(TensorData::new(probe.clone(), [k, m, dout]), &dev);
                let g = (y.clone() * p).sum().backward();
                (
                    vals(y.inner()),
                    vals(x.grad(&g).unwrap()),
                    vals(layer.w.val().grad(&g).unwrap()),
                    vals(layer.b.val().grad(&g).unwrap()),
                )
            };
            let (a, b) = (run(true), run(false));
            assert!(max_abs_diff(&a.0, &b.0) < 1e-5, "values");
            assert!(max_abs_diff(&a.1, &b.1) < 1e-5, "d/dx");
            assert!(max_abs_diff(&a.2, &b.2) < 1e-5, "d/dw");
            assert!(max_abs_diff(&a.3, &b.3) < 1e-5, "d/db");
            assert!(a.2.iter().any(|v| v.abs() > 1e-6));
        }
    }
}
