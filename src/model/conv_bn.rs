//! The convolution and batch-normalisation layers of the residual networks, on the member axis.
//!
//! **Layout.** Activations are NCHW with the members folded into the channels: [N, K·C, H, W],
//! channel k·C + c being member k's channel c (member-major). A convolution of K members is then
//! one grouped convolution (groups = K: member k's output channels see only its input channels),
//! and batch normalisation of K members is batch normalisation of K·C channels (statistics per
//! channel never mix members). Burn's `conv2d` with groups = K is the path on every backend; the
//! CPU's im2col + gemm path (`Conv::forward_gemm`) is held against it in values and gradients.
//!
//! **Batch normalisation** (Ioffe & Szegedy 2015) normalises each channel over a batch in
//! training and over running averages in evaluation. [`BnMode::Ghost`] (Hoffer et al. 2017)
//! normalises each fixed-size "ghost" batch of a member's examples on its own, so the
//! normalisation is the same at every batch size; [`BnMode::Batch`] normalises over each
//! worker's whole batch of a member. The running averages are state, not parameters: they have
//! no gradient, so the optimizer, the clipping, the noise scale and the gradient exchange (which
//! follow the gradients) never touch them; member stacking and selection carry them like any
//! parameter (they have the member axis); a training forward returns their new values
//! ([`BatchNorm::forward`]) and the trainer puts them in after its step (`Net::with_stats`).
//! With several data-parallel workers each normalises its own shard and keeps its own running
//! averages; evaluation reads worker 0's (no synchronised statistics).

use burn::module::{Module, Param};
use burn::tensor::backend::Backend;
use burn::tensor::module::conv2d;
use burn::tensor::ops::ConvOptions;
use burn::tensor::Tensor;
use serde::{Deserialize, Serialize};

use super::family::StatUpdate;
use super::kernels;
use super::layers::{gemm_conv, Ctx, Init};

/// How batch normalisation forms its training batches.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum BnMode {
    /// Ghost batch normalisation: statistics over fixed-size ghost batches of each member's
    /// examples on a worker (`ghost_batch` of them).
    Ghost,
    /// Plain batch normalisation: statistics over each worker's whole batch of a member.
    Batch,
}

/// A 3×3 (or k×k) convolution without bias per member, "same"-padded (k/2), stride 1 or 2.
#[derive(Module, Debug)]
pub struct Conv<B: Backend> {
    /// [K, cout, cin, k, k] (Burn's conv weight with the member axis in front).
    pub w: Param<Tensor<B, 5>>,
    pub stride: usize,
}

impl<B: Backend> Conv<B> {
    /// One member: He et al.'s initialisation for ReLU networks, Normal(0, √(2 / (k·k·cin))).
    pub fn init(init: &mut Init<'_, B>, cin: usize, cout: usize, k: usize, stride: usize) -> Self {
        let fan_in = (cin * k * k) as f64;
        Conv {
            w: init.normal([1, cout, cin, k, k], (2.0 / fan_in).sqrt()),
            stride,
        }
    }

    fn dims(&self) -> [usize; 5] {
        self.w.lazy_shape().dims()
    }

    /// Output size of an input side of `n` pixels.
    pub fn out_size(&self, n: usize) -> usize {
        let k = self.dims()[3];
        (n + 2 * (k / 2) - k) / self.stride + 1
    }

    /// Multiply-add FLOPs of one member's forward on one h×w image, and the output's (h, w).
    pub fn flops(&self, h: usize, w: usize) -> (f64, (usize, usize)) {
        let [_, cout, cin, k, _] = self.dims();
        let (ho, wo) = (self.out_size(h), self.out_size(w));
        (2.0 * (ho * wo * cin * k * k * cout) as f64, (ho, wo))
    }

    /// x: [N, K·cin, H, W] → [N, K·cout, H', W'] in the compute precision. On the CPU in fp32
    /// one op of our own (`kernels::conv_grouped`), in reduced precision the im2col + gemm path
    /// in generic ops; elsewhere Burn's grouped `conv2d`. All three are held against each other.
    pub fn forward(&self, x: Tensor<B, 4>, c: &Ctx) -> Tensor<B, 4> {
        if c.is_fp32() {
            if let Some(y) = kernels::conv_grouped(x.clone(), self.w.val(), self.stride) {
                return y;
            }
        }
        if gemm_conv::<B>() {
            self.forward_gemm(x, c)
        } else {
            self.forward_burn(x, c)
        }
    }

    /// Burn's `conv2d`, one group per member (the reference, and the path off the CPU).
    pub fn forward_burn(&self, x: Tensor<B, 4>, c: &Ctx) -> Tensor<B, 4> {
        let [k, cout, cin, kh, kw] = self.w.dims();
        let w = c.w(&self.w).reshape([k * cout, cin, kh, kw]);
        let p = kh / 2;
        let s = self.stride;
        conv2d(x, w, None, ConvOptions::new([s, s], [p, p], [1, 1], k))
    }

    /// The same convolution as one gather (im2col of every member's images, zeros outside them)
    /// and one batched product [K, N·H'·W', cin·k·k] × [K, cin·k·k, cout].
    pub fn forward_gemm(&self, x: Tensor<B, 4>, c: &Ctx) -> Tensor<B, 4> {
        let [k, cout, cin, kh, kw] = self.w.dims();
        let [n, _, h, w] = x.dims();
        let (ho, wo) = (self.out_size(h), self.out_size(w));
        // [N, K·cin, H, W] → rows (n, member, y, x) of cin values, and a zero row at the end
        let rows = x
            .reshape([n, k, cin, h * w])
            .swap_dims(2, 3)
            .reshape([n * k * h * w, cin]);
        let zero = rows.clone().slice([0..1, 0..cin]).zeros_like();
        let padded = Tensor::cat(vec![rows, zero], 0);
        let idx = super::layers::im2col_index::<B>([n, k, h, w], kh, self.stride, &padded.device());
        // [K, N·H'·W', kh·kw·cin] (kernel offset major, then input channel)
        let cols = padded
            .select(0, idx)
            .reshape([k, n * ho * wo, kh * kw * cin]);
        // weights [K, cout, cin, kh, kw] → [K, kh·kw·cin, cout]
        let wt = c
            .w(&self.w)
            .permute([0, 3, 4, 2, 1])
            .reshape([k, kh * kw * cin, cout]);
        let y = cols.matmul(wt); // [K, N·H'·W', cout]
        y.reshape([k, n, ho * wo, cout])
            .permute([1, 0, 3, 2])
            .reshape([n, k * cout, ho, wo])
    }
}

/// Running averages of a batch normalisation's statistics, [K, C] each: state, not parameters
/// (no gradient; a network holding them declares their ids untrained, `Network::untrained`, and
/// the parameter count leaves them out).
#[derive(Module, Debug)]
pub struct RunningStats<B: Backend> {
    pub mean: Param<Tensor<B, 2>>,
    pub var: Param<Tensor<B, 2>>,
}

impl<B: Backend> RunningStats<B> {
    /// The ids of the two averages.
    pub fn ids(&self) -> [burn::module::ParamId; 2] {
        [self.mean.id, self.var.id]
    }
}

/// Batch normalisation per member and channel: γ, β [K, C] trained, running averages kept.
#[derive(Module, Debug)]
pub struct BatchNorm<B: Backend> {
    pub gamma: Param<Tensor<B, 2>>,
    pub beta: Param<Tensor<B, 2>>,
    pub running: RunningStats<B>,
}

/// ε added to the variance (PyTorch's default).
pub const BN_EPS: f64 = 1e-5;
/// Weight of the old running average at each training step (PyTorch's momentum 0.1).
pub const BN_DECAY: f64 = 0.9;

impl<B: Backend> BatchNorm<B> {
    /// One member of `channels`: γ = 1, β = 0; running mean 0, variance 1.
    pub fn init(init: &mut Init<'_, B>, channels: usize) -> Self {
        BatchNorm {
            gamma: init.constant([1, channels], 1.0),
            beta: init.constant([1, channels], 0.0),
            running: RunningStats {
                mean: init.state([1, channels], 0.0),
                var: init.state([1, channels], 1.0),
            },
        }
    }

    /// x: [N, K·C, H, W] (each member's N examples on this worker) → the same shape, in the
    /// compute precision. Training (an autodiff backend): each ghost batch of `ghost` examples
    /// (0: the whole N; the last one smaller when `ghost` does not divide N) normalised by its own
    /// mean and biased variance; the running averages' new values are pushed to `stats` (the
    /// ghost batches' mean of means, and of unbiased variances). Evaluation: the running averages.
    /// On the CPU one op of our own (`kernels::batch_norm_train`/`_eval`), held against
    /// [`Self::train_ops`] and [`Self::eval_ops`].
    pub fn forward(
        &self,
        x: Tensor<B, 4>,
        ghost: usize,
        c: &Ctx,
        stats: &mut Vec<StatUpdate<B>>,
    ) -> Tensor<B, 4> {
        let x = c.to_f32(x);
        if !B::ad_enabled(&x.device()) {
            let args = [
                self.gamma.val(),
                self.beta.val(),
                self.running.mean.val(),
                self.running.var.val(),
            ];
            return c.cast(match kernels::batch_norm_eval(x.clone(), args, BN_EPS) {
                Some(y) => y,
                None => self.eval_ops(x),
            });
        }
        let (y, mean, var) = match kernels::batch_norm_train(
            x.clone(),
            self.gamma.val(),
            self.beta.val(),
            ghost,
            BN_EPS,
        ) {
            Some(r) => r,
            None => self.train_ops(x, ghost),
        };
        self.push_stats(mean, var, stats);
        c.cast(y)
    }

    /// The running averages moved toward a training batch's (mean, unbiased variance) [K, C].
    fn push_stats(&self, mean: Tensor<B, 2>, var: Tensor<B, 2>, stats: &mut Vec<StatUpdate<B>>) {
        let decay = |old: Tensor<B, 2>, new: Tensor<B, 2>| {
            old.detach().mul_scalar(BN_DECAY) + new.detach().mul_scalar(1.0 - BN_DECAY)
        };
        stats.push((self.running.mean.id, decay(self.running.mean.val(), mean)));
        stats.push((self.running.var.id, decay(self.running.var.val(), var)));
    }

    /// Evaluation in Burn's generic ops: (x − mean)/√(var + ε)·γ + β (x in fp32).
    pub fn eval_ops(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        let kc = x.dims()[1];
        let col = |p: &Param<Tensor<B, 2>>| p.val().reshape([1, kc, 1, 1]);
        let (mean, var) = (col(&self.running.mean), col(&self.running.var));
        (x - mean) / (var + BN_EPS).sqrt() * col(&self.gamma) + col(&self.beta)
    }

    /// Training in Burn's generic ops (x in fp32): y, and the batch's mean and unbiased variance
    /// [K, C] (the ghost batches' statistics weighted by their examples).
    pub fn train_ops(
        &self,
        x: Tensor<B, 4>,
        ghost: usize,
    ) -> (Tensor<B, 4>, Tensor<B, 2>, Tensor<B, 2>) {
        let [n, kc, h, w] = x.dims();
        let k = self.gamma.dims()[0];
        let v = if ghost == 0 { n } else { ghost.min(n) };
        let full = n / v;
        let mut parts = Vec::new();
        let (mut means, mut vars) = (Vec::new(), Vec::new());
        let mut ghosts = vec![(0, full, v)];
        if full * v < n {
            ghosts.push((full * v, 1, n - full * v));
        }
        for (start, groups, size) in ghosts {
            let xs = x
                .clone()
                .narrow(0, start, groups * size)
                .reshape([groups, size, kc, h * w]);
            let mean = xs.clone().mean_dim(3).mean_dim(1); // [G, 1, KC, 1]
            let centred = xs - mean.clone();
            let var = centred.clone().powi_scalar(2).mean_dim(3).mean_dim(1);
            let y = centred / (var.clone() + BN_EPS).sqrt();
            parts.push(y.reshape([groups * size, kc, h, w]));
            let m = (size * h * w) as f64;
            let unbiased = if m > 1.0 { m / (m - 1.0) } else { 1.0 };
            // each ghost batch's statistics weigh by its examples
            let weight = size as f64 / n as f64;
            means.push(
                mean.detach()
                    .reshape([groups, kc])
                    .sum_dim(0)
                    .mul_scalar(weight),
            );
            vars.push(
                var.detach()
                    .reshape([groups, kc])
                    .sum_dim(0)
                    .mul_scalar(weight * unbiased),
            );
        }
        let batch_mean = Tensor::cat(means, 0).sum_dim(0).reshape([k, kc / k]);
        let batch_var = Tensor::cat(vars, 0).sum_dim(0).reshape([k, kc / k]);
        let y = if parts.len() == 1 {
            parts.pop().expect("one part")
        } else {
            Tensor::cat(parts, 0)
        };
        let g = self.gamma.val().reshape([1, kc, 1, 1]);
        let b = self.beta.val().reshape([1, kc, 1, 1]);
        (y * g + b, batch_mean, batch_var)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::layers::uniform;
    use burn::backend::{Autodiff, Flex};
    use burn::module::ParamId;
    use burn::tensor::TensorData;
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    type Ad = Autodiff<Flex>;

    fn vals<const D: usize>(t: Tensor<Flex, D>) -> Vec<f32> {
        t.into_data().to_vec::<f32>().unwrap()
    }

    fn close(a: &[f32], b: &[f32], tol: f32, what: &str) {
        assert_eq!(a.len(), b.len(), "{what}");
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() <= tol * (1.0 + y.abs()), "{what}: {x} vs {y}");
        }
    }

    /// The CPU's convolution kernel and the im2col + gemm generic ops equal Burn's grouped
    /// `conv2d` in values and in the gradients of the input and the weights: strides 1 and 2,
    /// odd and even sizes, 1×1 images, 1 to 3 members with different weights, several tasks per
    /// member (the 40-image case).
    #[test]
    fn the_gemm_convolution_matches_burns_grouped_conv2d() {
        let dev = Default::default();
        for &(k, n, h, w, cin, cout, stride) in &[
            (1, 2, 6, 6, 1, 4, 1),
            (3, 2, 7, 5, 2, 3, 2),
            (2, 3, 8, 8, 4, 4, 2),
            (2, 1, 1, 1, 3, 2, 1),
            (2, 2, 7, 7, 8, 16, 2),
            (2, 40, 9, 9, 4, 8, 1),
        ] {
            let mut rng = StdRng::seed_from_u64((k * n * h * w * cin * stride) as u64);
            let convs: Vec<Conv<Ad>> = (0..k)
                .map(|_| Conv::init(&mut Init::new(&mut rng, &dev), cin, cout, 3, stride))
                .collect();
            let conv = crate::model::stack_members(convs);
            let (ho, wo) = (conv.out_size(h), conv.out_size(w));
            let xv = uniform(&mut rng, n * k * cin * h * w, 1.0);
            let pv = uniform(&mut rng, n * k * cout * ho * wo, 1.0);
            let run = |path: usize| {
                let x = Tensor::<Ad, 4>::from_data(
                    TensorData::new(xv.clone(), [n, k * cin, h, w]),
                    &dev,
                )
                .require_grad();
                let y = match path {
                    0 => conv.forward(x.clone(), &Ctx::fp32()),
                    1 => conv.forward_gemm(x.clone(), &Ctx::fp32()),
                    _ => conv.forward_burn(x.clone(), &Ctx::fp32()),
                };
                assert_eq!(y.dims(), [n, k * cout, ho, wo]);
                let p = Tensor::<Ad, 4>::from_data(
                    TensorData::new(pv.clone(), [n, k * cout, ho, wo]),
                    &dev,
                );
                let g = (y.clone() * p).sum().backward();
                (
                    vals(y.inner()),
                    vals(x.grad(&g).unwrap()),
                    vals(conv.w.val().grad(&g).unwrap()),
                )
            };
            let b = run(2);
            let case = format!("{:?}", (k, n, h, w, cin, cout, stride));
            assert!(b.0.iter().any(|v| v.abs() > 1e-3), "{case}: all zero");
            for path in [0, 1] {
                let a = run(path);
                let case = format!("{case} path {path}");
                close(&a.0, &b.0, 1e-5, &format!("{case} values"));
                close(&a.1, &b.1, 1e-5, &format!("{case} d/dx"));
                // (dW sums up to 40·81 products per weight)
                close(&a.2, &b.2, 1e-4, &format!("{case} d/dw"));
            }
        }
    }

    /// The convolution kernel's numbers do not depend on the threads or on the group: on 1
    /// thread and on the default pool, and member 0 of a 2-member group against the same layer
    /// alone, the outputs and both gradients are bitwise equal (several tasks per member).
    #[test]
    fn the_conv_kernel_is_bitwise_the_same_on_any_threads_and_in_a_group() {
        let dev = Default::default();
        let (n, h, w, cin, cout) = (40, 9, 9, 4, 8);
        let mut rng = StdRng::seed_from_u64(17);
        let a = Conv::<Ad>::init(&mut Init::new(&mut rng, &dev), cin, cout, 3, 2);
        let b = Conv::<Ad>::init(&mut Init::new(&mut rng, &dev), cin, cout, 3, 2);
        let (ho, wo) = (a.out_size(h), a.out_size(w));
        let xs = [
            uniform(&mut rng, n * cin * h * w, 1.0),
            uniform(&mut rng, n * cin * h * w, 1.0),
        ];
        let ps = [
            uniform(&mut rng, n * cout * ho * wo, 1.0),
            uniform(&mut rng, n * cout * ho * wo, 1.0),
        ];
        // k members' rows interleaved per image: [N, K·C, …]
        let fold = |parts: &[&Vec<f32>], per: usize| -> Vec<f32> {
            (0..n)
                .flat_map(|i| {
                    parts
                        .iter()
                        .flat_map(move |p| p[i * per..(i + 1) * per].to_vec())
                })
                .collect()
        };
        let run = |layer: &Conv<Ad>, k: usize| {
            let xv = fold(&xs.iter().take(k).collect::<Vec<_>>(), cin * h * w);
            let pv = fold(&ps.iter().take(k).collect::<Vec<_>>(), cout * ho * wo);
            let x = Tensor::<Ad, 4>::from_data(TensorData::new(xv, [n, k * cin, h, w]), &dev)
                .require_grad();
            let p = Tensor::<Ad, 4>::from_data(TensorData::new(pv, [n, k * cout, ho, wo]), &dev);
            let y = layer.forward(x.clone(), &Ctx::fp32());
            let g = (y.clone() * p).sum().backward();
            (
                vals(y.inner()),
                vals(x.grad(&g).unwrap()),
                vals(layer.w.val().grad(&g).unwrap()),
            )
        };
        let alone = run(&a, 1);
        let one_thread = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap()
            .install(|| run(&a, 1));
        assert_eq!(alone, one_thread, "1 thread against the default pool");
        let both = run(&crate::model::stack_members(vec![a.clone(), b]), 2);
        // member 0's values of every image, and its half of dW
        let first = |v: &Vec<f32>, per: usize| -> Vec<f32> {
            (0..n)
                .flat_map(|i| v[2 * i * per..(2 * i + 1) * per].to_vec())
                .collect()
        };
        assert_eq!(alone.0, first(&both.0, cout * ho * wo), "values");
        assert_eq!(alone.1, first(&both.1, cin * h * w), "d/dx");
        assert_eq!(alone.2, both.2[..alone.2.len()].to_vec(), "d/dw");
    }

    /// Our batch normalisation — the CPU kernel and the generic ops alike — equals Burn's
    /// `nn::BatchNorm` applied to each member's channels of each ghost batch on its own (K members
    /// with their own γ, β), in values, in the gradients of the input, γ and β, and in the batch
    /// statistics the running averages move by (Burn keeps the biased variance; ours is unbiased,
    /// as PyTorch's): plain BN, ghost batches that divide N, and a ragged last ghost batch.
    #[test]
    fn batch_norm_matches_burns_per_member_and_ghost_batch() {
        let dev = Default::default();
        for &(k, n, c, h, w, ghost) in &[
            (1, 6, 3, 4, 4, 0),
            (2, 8, 3, 3, 2, 4),
            (3, 5, 2, 2, 3, 2),
            (2, 4, 4, 1, 1, 0),
        ] {
            let mut rng = StdRng::seed_from_u64((k * n * c * h * w + ghost) as u64);
            let xv: Vec<f32> = uniform(&mut rng, n * k * c * h * w, 2.0)
                .into_iter()
                .enumerate()
                .map(|(i, v)| v + (i % 7) as f32 * 0.3)
                .collect();
            let gv = uniform(&mut rng, k * c, 1.0);
            let bv = uniform(&mut rng, k * c, 1.0);
            let pv = uniform(&mut rng, n * k * c * h * w, 1.0);
            let x_of = || {
                Tensor::<Ad, 4>::from_data(TensorData::new(xv.clone(), [n, k * c, h, w]), &dev)
                    .require_grad()
            };
            let probe =
                Tensor::<Ad, 4>::from_data(TensorData::new(pv.clone(), [n, k * c, h, w]), &dev);
            let leaf = |v: &Vec<f32>| {
                Tensor::<Ad, 2>::from_data(TensorData::new(v.clone(), [k, c]), &dev).require_grad()
            };
            // ours: the CPU kernel (`forward` on Flex) and the generic ops (`train_ops`)
            let mut rng0 = StdRng::seed_from_u64(0);
            let mut bn = BatchNorm::<Ad>::init(&mut Init::new(&mut rng0, &dev), c);
            bn = crate::model::stack_members(vec![bn; k]);
            bn.gamma = Param::initialized(ParamId::new(), leaf(&gv));
            bn.beta = Param::initialized(ParamId::new(), leaf(&bv));
            let ours = |kernel: bool| {
                let x = x_of();
                let (y, mean, var) = if kernel {
                    let mut stats = Vec::new();
                    let y = bn.forward(x.clone(), ghost, &Ctx::fp32(), &mut stats);
                    assert_eq!(stats.len(), 2);
                    assert_eq!(stats[0].0, bn.running.mean.id);
                    assert_eq!(stats[1].0, bn.running.var.id);
                    // from (0, 1): 0.1 × the batch's
                    let m = stats[0].1.clone().inner().div_scalar(1.0 - BN_DECAY);
                    let v = (stats[1].1.clone().inner() - BN_DECAY).div_scalar(1.0 - BN_DECAY);
                    (y, vals(m), vals(v))
                } else {
                    let (y, m, v) = bn.train_ops(x.clone(), ghost);
                    (y, vals(m.inner()), vals(v.inner()))
                };
                let g = (y.clone() * probe.clone()).sum().backward();
                (
                    vals(y.inner()),
                    vals(x.grad(&g).unwrap()),
                    vals(bn.gamma.val().grad(&g).unwrap()),
                    vals(bn.beta.val().grad(&g).unwrap()),
                    mean,
                    var,
                )
            };
            // Burn's, one module per member and ghost batch, γ and β slices of shared leaves
            let (gamma, beta, x) = (leaf(&gv), leaf(&bv), x_of());
            let v = if ghost == 0 { n } else { ghost.min(n) };
            let mut out = vec![None; n * k];
            let (mut run_mean, mut run_var) = (vec![0.0f64; k * c], vec![0.0f64; k * c]);
            for m in 0..k {
                let mut start = 0;
                while start < n {
                    let len = v.min(n - start);
                    let mut r = burn::nn::BatchNormConfig::new(c).init::<Ad>(&dev);
                    r.gamma = Param::initialized(
                        ParamId::new(),
                        gamma.clone().narrow(0, m, 1).reshape([c]),
                    );
                    r.beta = Param::initialized(
                        ParamId::new(),
                        beta.clone().narrow(0, m, 1).reshape([c]),
                    );
                    let xs = x.clone().narrow(0, start, len).narrow(1, m * c, c);
                    let ys = r.forward(xs);
                    for i in 0..len {
                        out[(start + i) * k + m] = Some(ys.clone().narrow(0, i, 1));
                    }
                    // Burn's running averages after one step from (0, 1): 0.1 × the batch's
                    let bm = vals(r.running_mean.value_sync().inner());
                    let bvar = vals(r.running_var.value_sync().inner());
                    let mm = (len * h * w) as f64;
                    let weight = len as f64 / n as f64;
                    for ch in 0..c {
                        run_mean[m * c + ch] += weight * bm[ch] as f64 / 0.1;
                        let biased = (bvar[ch] as f64 - 0.9) / 0.1;
                        let unbiased = if mm > 1.0 {
                            biased * mm / (mm - 1.0)
                        } else {
                            biased
                        };
                        run_var[m * c + ch] += weight * unbiased;
                    }
                    start += len;
                }
            }
            let rows: Vec<Tensor<Ad, 4>> = out.into_iter().map(|t| t.unwrap()).collect();
            // rows are (example, member): member m's channels side by side per example
            let y_ref = Tensor::cat(rows, 1).reshape([n, k * c, h, w]);
            let g = (y_ref.clone() * probe.clone()).sum().backward();
            let theirs = (
                vals(y_ref.inner()),
                vals(x.grad(&g).unwrap()),
                vals(gamma.grad(&g).unwrap()),
                vals(beta.grad(&g).unwrap()),
            );
            let case = format!("{:?}", (k, n, c, h, w, ghost));
            let mean: Vec<f32> = run_mean.iter().map(|&v| v as f32).collect();
            let var: Vec<f32> = run_var.iter().map(|&v| v as f32).collect();
            for kernel in [true, false] {
                let o = ours(kernel);
                let case = format!("{case} kernel {kernel}");
                close(&o.0, &theirs.0, 1e-5, &format!("{case} values"));
                close(&o.1, &theirs.1, 1e-4, &format!("{case} d/dx"));
                close(&o.2, &theirs.2, 1e-4, &format!("{case} d/dγ"));
                close(&o.3, &theirs.3, 1e-4, &format!("{case} d/dβ"));
                close(&o.4, &mean, 1e-4, &format!("{case} batch mean"));
                close(&o.5, &var, 1e-4, &format!("{case} batch variance"));
            }
        }
    }

    /// Evaluation (a backend without autodiff) normalises with the running averages, never the
    /// batch: (x − mean) / √(var + ε) · γ + β, and moves nothing.
    #[test]
    fn evaluation_uses_the_running_averages() {
        let dev = Default::default();
        let mut rng = StdRng::seed_from_u64(3);
        let mut bn = BatchNorm::<Flex>::init(&mut Init::new(&mut rng, &dev), 2);
        let t = |v: Vec<f32>| Tensor::<Flex, 2>::from_data(TensorData::new(v, [1, 2]), &dev);
        bn.running.mean = Param::initialized(ParamId::new(), t(vec![0.5, -1.0]));
        bn.running.var = Param::initialized(ParamId::new(), t(vec![4.0, 0.25]));
        bn.gamma = Param::initialized(ParamId::new(), t(vec![2.0, 1.0]));
        bn.beta = Param::initialized(ParamId::new(), t(vec![0.0, 3.0]));
        let x = Tensor::<Flex, 4>::from_data(
            TensorData::new(vec![1.5f32, 2.5, -1.0, 0.0], [2, 2, 1, 1]),
            &dev,
        );
        let mut stats = Vec::new();
        let y = vals(bn.forward(x.clone(), 0, &Ctx::fp32(), &mut stats));
        assert!(stats.is_empty());
        close(
            &y,
            &vals(bn.eval_ops(x)),
            1e-6,
            "the kernel against the generic ops",
        );
        let f =
            |x: f64, m: f64, v: f64, g: f64, b: f64| ((x - m) / (v + BN_EPS).sqrt() * g + b) as f32;
        let want = [
            f(1.5, 0.5, 4.0, 2.0, 0.0),
            f(2.5, -1.0, 0.25, 1.0, 3.0),
            f(-1.0, 0.5, 4.0, 2.0, 0.0),
            f(0.0, -1.0, 0.25, 1.0, 3.0),
        ];
        close(&y, &want, 1e-6, "evaluation");
    }
}
