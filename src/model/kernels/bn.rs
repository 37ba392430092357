//! Batch normalisation on the CPU, on the residual networks' layout x [N, K·C, H, W] (members
//! folded into the channels): every channel of every ghost batch (`ghost` examples, the last one
//! smaller when it does not divide N; 0 = all N) normalised by its own mean and biased variance,
//! then y = γ·x̂ + β. The statistics are summed in f64, one channel at a time (the same order on
//! any number of threads, and a channel never meets another member's). Backward, per channel and
//! ghost batch of m = examples·H·W values: dβ = Σ dy, dγ = Σ dy·x̂,
//! dx = γ/σ · (dy − Σdy/m − x̂·Σ(dy·x̂)/m). Evaluation is one affine pass per channel with the
//! running averages.
//!
//! (Burn's broadcast arithmetic of a [1, K·C, 1, 1] statistic walks element by element on Flex:
//! the generic batch normalisation was most of a ResNet step on the CPU.)

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::NoCheckpointing;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::Flex;
use burn::tensor::ops::FloatTensor;
use burn_flex::FlexTensor;
use rayon::prelude::*;
use std::sync::Arc;

use super::flex::register_grads;
use super::{contiguous, tensor_of, values, Ad};

/// Shapes of one call.
#[derive(Clone, Copy, Debug)]
struct Dims {
    n: usize,
    /// Channels of all members (K·C).
    kc: usize,
    /// Pixels per channel (H·W).
    p: usize,
    /// Examples per ghost batch (the last one may be smaller).
    v: usize,
}

impl Dims {
    /// (first example, examples) of every ghost batch.
    fn ghosts(&self) -> Vec<(usize, usize)> {
        (0..self.n)
            .step_by(self.v.max(1))
            .map(|s| (s, self.v.min(self.n - s)))
            .collect()
    }
}

/// What the backward pass needs.
#[derive(Clone, Debug)]
pub(super) struct Saved {
    dims: Dims,
    x: FlexTensor,
    gamma: Arc<Vec<f32>>,
    /// γ's shape ([K, C]): its gradient's and β's.
    gamma_shape: Vec<usize>,
    /// Per (ghost batch, channel): the mean and 1/σ.
    mean: Arc<Vec<f32>>,
    inv: Arc<Vec<f32>>,
}

/// The statistics of every (ghost batch, channel): (means, 1/√(var + ε), biased variances).
fn statistics(x: &[f32], d: &Dims, eps: f64) -> (Vec<f32>, Vec<f32>, Vec<f64>) {
    let ghosts = d.ghosts();
    let per_channel: Vec<Vec<(f64, f64)>> = (0..d.kc)
        .into_par_iter()
        .map(|ch| {
            ghosts
                .iter()
                .map(|&(start, len)| {
                    let rows = || (start..start + len).map(|r| &x[(r * d.kc + ch) * d.p..][..d.p]);
                    let m = (len * d.p) as f64;
                    let mean = rows().flatten().map(|&v| v as f64).sum::<f64>() / m;
                    let var = rows()
                        .flatten()
                        .map(|&v| (v as f64 - mean).powi(2))
                        .sum::<f64>()
                        / m;
                    (mean, var)
                })
                .collect()
        })
        .collect();
    let g = ghosts.len();
    let (mut mean, mut inv, mut var) = (
        vec![0.0f32; g * d.kc],
        vec![0.0f32; g * d.kc],
        vec![0.0f64; g * d.kc],
    );
    for (ch, stats) in per_channel.into_iter().enumerate() {
        for (gi, (m, v)) in stats.into_iter().enumerate() {
            mean[gi * d.kc + ch] = m as f32;
            inv[gi * d.kc + ch] = (1.0 / (v + eps).sqrt()) as f32;
            var[gi * d.kc + ch] = v;
        }
    }
    (mean, inv, var)
}

/// y = x·a + b per (ghost batch, channel), a and b [G, K·C]; rows in parallel.
fn affine(x: &[f32], d: &Dims, a: &[f32], b: &[f32]) -> Vec<f32> {
    let mut y = vec![0.0f32; x.len()];
    let row = d.kc * d.p;
    y.par_chunks_mut(row)
        .zip(x.par_chunks(row))
        .enumerate()
        .for_each(|(r, (yr, xr))| {
            let g = r / d.v.max(1);
            for ch in 0..d.kc {
                let (s, t) = (a[g * d.kc + ch], b[g * d.kc + ch]);
                let (yc, xc) = (&mut yr[ch * d.p..][..d.p], &xr[ch * d.p..][..d.p]);
                for (o, &v) in yc.iter_mut().zip(xc) {
                    *o = v * s + t;
                }
            }
        });
    y
}

/// Training forward: y, the batch's statistics for the running averages ([K·C] each: the ghost
/// batches' means and unbiased variances, each weighted by its examples), and with `keep` what
/// the backward pass needs.
pub(super) fn forward(
    x: &FlexTensor,
    gamma: &FlexTensor,
    beta: &FlexTensor,
    ghost: usize,
    eps: f64,
    keep: bool,
) -> (FlexTensor, Vec<f32>, Vec<f32>, Option<Saved>) {
    let x = contiguous(x);
    let shape = x.layout().shape().to_vec();
    let (n, kc) = (shape[0], shape[1]);
    let d = Dims {
        n,
        kc,
        p: shape[2] * shape[3],
        v: if ghost == 0 { n } else { ghost.min(n) },
    };
    let gamma = contiguous(gamma);
    let beta = contiguous(beta);
    let (gv, bv) = (values(&gamma), values(&beta));
    let (mean, inv, var) = statistics(values(&x), &d, eps);
    let g = d.ghosts().len();
    let a: Vec<f32> = (0..g * kc).map(|i| gv[i % kc] * inv[i]).collect();
    let b: Vec<f32> = (0..g * kc).map(|i| bv[i % kc] - mean[i] * a[i]).collect();
    let y = affine(values(&x), &d, &a, &b);
    // the running averages' batch statistics
    let (mut bm, mut bvar) = (vec![0.0f64; kc], vec![0.0f64; kc]);
    for (gi, &(_, len)) in d.ghosts().iter().enumerate() {
        let m = (len * d.p) as f64;
        let unbiased = if m > 1.0 { m / (m - 1.0) } else { 1.0 };
        let w = len as f64 / n as f64;
        for ch in 0..kc {
            bm[ch] += w * mean[gi * kc + ch] as f64;
            bvar[ch] += w * var[gi * kc + ch] * unbiased;
        }
    }
    let out = tensor_of(y, &shape);
    let saved = keep.then(|| Saved {
        dims: d,
        x,
        gamma: Arc::new(gv.to_vec()),
        gamma_shape: gamma.layout().shape().to_vec(),
        mean: Arc::new(mean),
        inv: Arc::new(inv),
    });
    (
        out,
        bm.into_iter().map(|v| v as f32).collect(),
        bvar.into_iter().map(|v| v as f32).collect(),
        saved,
    )
}

/// (dx, dγ [K·C], dβ [K·C]).
fn backward(s: &Saved, grad: &FlexTensor) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let d = s.dims;
    let grad = contiguous(grad);
    let (x, dy) = (values(&s.x), values(&grad));
    let ghosts = d.ghosts();
    let xhat = |gi: usize, ch: usize, v: f32| (v - s.mean[gi * d.kc + ch]) * s.inv[gi * d.kc + ch];
    // Σ dy and Σ dy·x̂ per (ghost batch, channel), one channel at a time
    let sums: Vec<Vec<(f64, f64)>> = (0..d.kc)
        .into_par_iter()
        .map(|ch| {
            ghosts
                .iter()
                .enumerate()
                .map(|(gi, &(start, len))| {
                    let (mut sd, mut sdx) = (0.0f64, 0.0f64);
                    for r in start..start + len {
                        let o = (r * d.kc + ch) * d.p;
                        for (&g, &v) in dy[o..o + d.p].iter().zip(&x[o..o + d.p]) {
                            sd += g as f64;
                            sdx += g as f64 * xhat(gi, ch, v) as f64;
                        }
                    }
                    (sd, sdx)
                })
                .collect()
        })
        .collect();
    let g = ghosts.len();
    let (mut dgamma, mut dbeta) = (vec![0.0f32; d.kc], vec![0.0f32; d.kc]);
    // dx = c1·dy + c2·x̂ + c3 per (ghost batch, channel)
    let (mut c1, mut c2, mut c3) = (
        vec![0.0f32; g * d.kc],
        vec![0.0f32; g * d.kc],
        vec![0.0f32; g * d.kc],
    );
    for (ch, per) in sums.iter().enumerate() {
        let (mut gs, mut bs) = (0.0f64, 0.0f64);
        for (gi, &(sd, sdx)) in per.iter().enumerate() {
            gs += sdx;
            bs += sd;
            let m = (ghosts[gi].1 * d.p) as f64;
            let scale = s.gamma[ch] as f64 * s.inv[gi * d.kc + ch] as f64;
            c1[gi * d.kc + ch] = scale as f32;
            c2[gi * d.kc + ch] = (-scale * sdx / m) as f32;
            c3[gi * d.kc + ch] = (-scale * sd / m) as f32;
        }
        dgamma[ch] = gs as f32;
        dbeta[ch] = bs as f32;
    }
    let row = d.kc * d.p;
    let mut dx = vec![0.0f32; x.len()];
    dx.par_chunks_mut(row)
        .zip(x.par_chunks(row).zip(dy.par_chunks(row)))
        .enumerate()
        .for_each(|(r, (dxr, (xr, dyr)))| {
            let gi = r / d.v.max(1);
            for ch in 0..d.kc {
                let i = gi * d.kc + ch;
                let (a, b, c) = (c1[i], c2[i], c3[i]);
                let (m, inv) = (s.mean[i], s.inv[i]);
                let o = ch * d.p;
                for ((out, &v), &gy) in dxr[o..o + d.p]
                    .iter_mut()
                    .zip(&xr[o..o + d.p])
                    .zip(&dyr[o..o + d.p])
                {
                    *out = a * gy + b * ((v - m) * inv) + c;
                }
            }
        });
    (dx, dgamma, dbeta)
}

#[derive(Debug)]
struct BnBackward;

impl Backward<Flex, 3> for BnBackward {
    type State = Saved;

    fn backward(self, ops: Ops<Self::State, 3>, grads: &mut Gradients, _: &mut Checkpointer) {
        let grad = grads.consume::<Flex>(&ops.node);
        let s = &ops.state;
        let (dx, dg, db) = backward(s, &grad);
        let shape = s.x.layout().shape().to_vec();
        let (dg, db) = (tensor_of(dg, &s.gamma_shape), tensor_of(db, &s.gamma_shape));
        register_grads!(
            grads,
            ops.parents,
            [Some(tensor_of(dx, &shape)), Some(dg), Some(db)]
        );
    }
}

/// Training batch normalisation as one autodiff op: y, and the batch statistics (untracked).
pub(super) fn batch_norm_ad(
    x: FloatTensor<Ad>,
    gamma: FloatTensor<Ad>,
    beta: FloatTensor<Ad>,
    ghost: usize,
    eps: f64,
) -> (FloatTensor<Ad>, Vec<f32>, Vec<f32>) {
    match BnBackward
        .prepare::<NoCheckpointing>([x.node.clone(), gamma.node.clone(), beta.node.clone()])
        .compute_bound()
        .stateful()
    {
        OpsKind::Tracked(prep) => {
            let (y, m, v, saved) = forward(
                &x.primitive,
                &gamma.primitive,
                &beta.primitive,
                ghost,
                eps,
                true,
            );
            (prep.finish(saved.expect("kept"), y), m, v)
        }
        OpsKind::UnTracked(prep) => {
            let (y, m, v, _) = forward(
                &x.primitive,
                &gamma.primitive,
                &beta.primitive,
                ghost,
                eps,
                false,
            );
            (prep.finish(y), m, v)
        }
    }
}

/// Evaluation: y = (x − mean)/√(var + ε)·γ + β per channel (every argument but x is [K·C]
/// values).
pub(super) fn eval(
    x: &FlexTensor,
    gamma: &[f32],
    beta: &[f32],
    mean: &[f32],
    var: &[f32],
    eps: f64,
) -> FlexTensor {
    let x = contiguous(x);
    let shape = x.layout().shape().to_vec();
    let d = Dims {
        n: shape[0],
        kc: shape[1],
        p: shape[2] * shape[3],
        v: shape[0].max(1),
    };
    let a: Vec<f32> = (0..d.kc)
        .map(|c| (gamma[c] as f64 / (var[c] as f64 + eps).sqrt()) as f32)
        .collect();
    let b: Vec<f32> = (0..d.kc).map(|c| beta[c] - mean[c] * a[c]).collect();
    tensor_of(affine(values(&x), &d, &a, &b), &shape)
}
