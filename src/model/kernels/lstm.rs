//! The LSTM cell on the CPU: gates [K, N, 4H] (pre-activations of i, f, o, u) and c_prev [K, N, H]
//! → [K, N, 2H] = (h | c), with i, f, o = σ(·), u = tanh(·), c = f·c_prev + i·u, h = o·tanh(c).
//! One pass with vectorised activations; the activations (i, f, o, u, tanh c) are kept for the
//! backward pass, which is one pass too:
//! dc = dc_out + dh·o·(1 − tanh²c); d(pre i) = dc·u·i(1−i); d(pre f) = dc·c_prev·f(1−f);
//! d(pre o) = dh·tanh c·o(1−o); d(pre u) = dc·i·(1−u²); dc_prev = dc·f.

use std::sync::Arc;

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::NoCheckpointing;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::Flex;
use burn::tensor::ops::FloatTensor;
use burn_flex::FlexTensor;

use super::vmath::{self, simd_dispatch};
use super::{contiguous, tensor_of, values, Ad, Buf};

#[derive(Clone, Debug)]
pub(super) struct Saved {
    rows: usize,
    h: usize,
    /// Per row: i, f, o, u (activated), tanh c — 5·H values.
    acts: Arc<Buf>,
    c_prev: FlexTensor,
}

simd_dispatch! {
    fn cell_rows(g: &[f32], cp: &[f32], out: &mut [f32], acts: &mut [f32], h: usize) {
        let rows = cp.len() / h.max(1);
        for r in 0..rows {
            let gr = &g[r * 4 * h..(r + 1) * 4 * h];
            let cr = &cp[r * h..(r + 1) * h];
            let (ho, co) = out[r * 2 * h..(r + 1) * 2 * h].split_at_mut(h);
            let a = &mut acts[r * 5 * h..(r + 1) * 5 * h];
            let (ai, rest) = a.split_at_mut(h);
            let (af, rest) = rest.split_at_mut(h);
            let (ao, rest) = rest.split_at_mut(h);
            let (au, at) = rest.split_at_mut(h);
            for j in 0..h {
                let i = vmath::sigmoid(gr[j]);
                let f = vmath::sigmoid(gr[h + j]);
                let o = vmath::sigmoid(gr[2 * h + j]);
                let u = vmath::tanh(gr[3 * h + j]);
                let c = f * cr[j] + i * u;
                let tc = vmath::tanh(c);
                ho[j] = o * tc;
                co[j] = c;
                ai[j] = i;
                af[j] = f;
                ao[j] = o;
                au[j] = u;
                at[j] = tc;
            }
        }
    }
}

simd_dispatch! {
    fn cell_back_rows(acts: &[f32], cp: &[f32], dout: &[f32], dg: &mut [f32], dcp: &mut [f32], h: usize) {
        let rows = cp.len() / h.max(1);
        for r in 0..rows {
            let a = &acts[r * 5 * h..(r + 1) * 5 * h];
            let (ai, rest) = a.split_at(h);
            let (af, rest) = rest.split_at(h);
            let (ao, rest) = rest.split_at(h);
            let (au, at) = rest.split_at(h);
            let cr = &cp[r * h..(r + 1) * h];
            let (dh, dco) = dout[r * 2 * h..(r + 1) * 2 * h].split_at(h);
            let dgr = &mut dg[r * 4 * h..(r + 1) * 4 * h];
            let dcr = &mut dcp[r * h..(r + 1) * h];
            for j in 0..h {
                let (i, f, o, u, tc) = (ai[j], af[j], ao[j], au[j], at[j]);
                let dc = dco[j] + dh[j] * o * (1.0 - tc * tc);
                dgr[j] = dc * u * (i * (1.0 - i));
                dgr[h + j] = dc * cr[j] * (f * (1.0 - f));
                dgr[2 * h + j] = dh[j] * tc * (o * (1.0 - o));
                dgr[3 * h + j] = dc * i * (1.0 - u * u);
                dcr[j] = dc * f;
            }
        }
    }
}

/// The cell's forward pass: (h | c) [K, N, 2H] and, with `keep`, what the backward pass needs.
pub(super) fn forward(
    gates: &FlexTensor,
    c_prev: &FlexTensor,
    keep: bool,
) -> (FlexTensor, Option<Saved>) {
    let g = contiguous(gates);
    let cp = contiguous(c_prev);
    let gs = g.layout().shape();
    let (k, n, h) = (gs[0], gs[1], gs[2] / 4);
    let rows = k * n;
    let mut out = vec![0.0f32; rows * 2 * h];
    let mut acts = Buf::new(rows * 5 * h);
    cell_rows(values(&g), values(&cp), &mut out, &mut acts, h);
    let y = tensor_of(out, &[k, n, 2 * h]);
    let saved = keep.then(|| Saved {
        rows,
        h,
        acts: Arc::new(acts),
        c_prev: cp,
    });
    (y, saved)
}

fn backward(s: &Saved, grad: &FlexTensor) -> (FlexTensor, FlexTensor) {
    let grad = contiguous(grad);
    let shape = grad.layout().shape().to_vec();
    let (rows, h) = (s.rows, s.h);
    let mut dg = vec![0.0f32; rows * 4 * h];
    let mut dcp = vec![0.0f32; rows * h];
    cell_back_rows(
        &s.acts,
        values(&s.c_prev),
        values(&grad),
        &mut dg,
        &mut dcp,
        h,
    );
    (
        tensor_of(dg, &[shape[0], shape[1], 4 * h]),
        tensor_of(dcp, &[shape[0], shape[1], h]),
    )
}

#[derive(Debug)]
struct CellBackward;

impl Backward<Flex, 2> for CellBackward {
    type State = Saved;

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _: &mut Checkpointer) {
        let [node_g, node_c] = ops.parents;
        let grad = grads.consume::<Flex>(&ops.node);
        let (dg, dcp) = backward(&ops.state, &grad);
        if let Some(node) = node_g {
            grads.register::<Flex>(node.id, dg);
        }
        if let Some(node) = node_c {
            grads.register::<Flex>(node.id, dcp);
        }
    }
}

/// The cell as one autodiff op.
pub(super) fn cell_ad(gates: FloatTensor<Ad>, c_prev: FloatTensor<Ad>) -> FloatTensor<Ad> {
    match CellBackward
        .prepare::<NoCheckpointing>([gates.node.clone(), c_prev.node.clone()])
        .compute_bound()
        .stateful()
    {
        OpsKind::Tracked(prep) => {
            let (y, saved) = forward(&gates.primitive, &c_prev.primitive, true);
            prep.finish(saved.expect("kept"), y)
        }
        OpsKind::UnTracked(prep) => {
            let (y, _) = forward(&gates.primitive, &c_prev.primitive, false);
            prep.finish(y)
        }
    }
}
