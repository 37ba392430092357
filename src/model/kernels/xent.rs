//! Mean softmax cross-entropy per member on the CPU: logits [K, M, C], targets [K, M] → loss [K],
//! loss_k = (1/M) Σ_m (lse(x_km) − x_km[y_km]) with lse the log-sum-exp of the row (max-shifted,
//! vectorised exp, the row sums in 8 partial sums). Backward: d x_km = g_k/M · (softmax(x_km) − one-hot(y_km)).

use std::sync::Arc;

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::NoCheckpointing;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::Flex;
use burn::tensor::ops::FloatTensor;
use burn_flex::FlexTensor;

use super::vmath::{self, simd_dispatch};
use super::{contiguous, tensor_of, values, Ad};

#[derive(Clone, Debug)]
pub(super) struct Saved {
    logits: FlexTensor,
    /// log-sum-exp per row.
    lse: Arc<Vec<f32>>,
    ids: Arc<Vec<i64>>,
    k: usize,
    m: usize,
    c: usize,
}

simd_dispatch! {
    fn row_lse(x: &[f32], c: usize, lse: &mut [f32]) {
        for (r, out) in lse.iter_mut().enumerate() {
            let row = &x[r * c..(r + 1) * c];
            // 8 partial maxima and sums: the loops vectorise (a single running value would not)
            let mut mx8 = [f32::NEG_INFINITY; 8];
            let mut nan = false;
            let chunks = row.chunks_exact(8);
            let tail = chunks.remainder();
            for ch in chunks {
                for t in 0..8 {
                    mx8[t] = if ch[t] > mx8[t] { ch[t] } else { mx8[t] };
                    nan |= ch[t].is_nan();
                }
            }
            let mut mx = f32::NEG_INFINITY;
            for &v in mx8.iter().chain(tail) {
                mx = if v > mx { v } else { mx };
                nan |= v.is_nan();
            }
            let mut s8 = [0.0f32; 8];
            let chunks = row.chunks_exact(8);
            for ch in chunks {
                for t in 0..8 {
                    s8[t] += vmath::exp(ch[t] - mx);
                }
            }
            let mut s = 0.0f32;
            for v in s8 {
                s += v;
            }
            for &v in tail {
                s += vmath::exp(v - mx);
            }
            *out = if nan { f32::NAN } else { mx + s.ln() };
        }
    }
}

simd_dispatch! {
    fn row_grad(x: &[f32], c: usize, lse: &[f32], scale: &[f32], dx: &mut [f32]) {
        for (r, &l) in lse.iter().enumerate() {
            let s = scale[r];
            let row = &x[r * c..(r + 1) * c];
            let out = &mut dx[r * c..(r + 1) * c];
            for (o, &v) in out.iter_mut().zip(row) {
                *o = vmath::exp(v - l) * s;
            }
        }
    }
}

/// The loss [K] and, with `keep`, what the backward pass needs. Targets outside [0, C) are an
/// error of the caller (the data pipeline checks ids); they count as a NaN loss here.
pub(super) fn forward(logits: &FlexTensor, ids: &[i64], keep: bool) -> (FlexTensor, Option<Saved>) {
    let x = contiguous(logits);
    let shape = x.layout().shape();
    let (k, m, c) = (shape[0], shape[1], shape[2]);
    assert_eq!(ids.len(), k * m, "targets [K, M]");
    let xv = values(&x);
    let mut lse = vec![0.0f32; k * m];
    row_lse(xv, c, &mut lse);
    let mut loss = vec![0.0f32; k];
    for (kk, l) in loss.iter_mut().enumerate() {
        let mut acc = 0.0f64;
        for r in kk * m..(kk + 1) * m {
            let y = ids[r];
            let picked = if (0..c as i64).contains(&y) {
                xv[r * c + y as usize]
            } else {
                f32::NAN
            };
            acc += (lse[r] - picked) as f64;
        }
        *l = (acc / m.max(1) as f64) as f32;
    }
    let out = tensor_of(loss, &[k]);
    let saved = keep.then(|| Saved {
        logits: x,
        lse: Arc::new(lse),
        ids: Arc::new(ids.to_vec()),
        k,
        m,
        c,
    });
    (out, saved)
}

fn backward(s: &Saved, grad: &FlexTensor) -> FlexTensor {
    let grad = contiguous(grad);
    let g = values(&grad);
    let (k, m, c) = (s.k, s.m, s.c);
    let scale: Vec<f32> = (0..k * m).map(|r| g[r / m] / m as f32).collect();
    let mut dx = vec![0.0f32; k * m * c];
    row_grad(values(&s.logits), c, &s.lse, &scale, &mut dx);
    for (r, &y) in s.ids.iter().enumerate() {
        if (0..c as i64).contains(&y) {
            dx[r * c + y as usize] -= scale[r];
        }
    }
    tensor_of(dx, &[k, m, c])
}

#[derive(Debug)]
struct XentBackward;

impl Backward<Flex, 1> for XentBackward {
    type State = Saved;

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
        let [node] = ops.parents;
        let grad = grads.consume::<Flex>(&ops.node);
        if let Some(node) = node {
            grads.register::<Flex>(node.id, backward(&ops.state, &grad));
        }
    }
}

/// The loss as one autodiff op.
pub(super) fn cross_entropy_ad(logits: FloatTensor<Ad>, ids: Vec<i64>) -> FloatTensor<Ad> {
    match XentBackward
        .prepare::<NoCheckpointing>([logits.node.clone()])
        .compute_bound()
        .stateful()
    {
        OpsKind::Tracked(prep) => {
            let (y, saved) = forward(&logits.primitive, &ids, true);
            prep.finish(saved.expect("kept"), y)
        }
        OpsKind::UnTracked(prep) => {
            let (y, _) = forward(&logits.primitive, &ids, false);
            prep.finish(y)
        }
    }
}
