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

use super::flex::register_grads;
use super::gemm::{matmul, Parallelism};
use super::vmath::{self, simd_dispatch};
use super::{contiguous, run_tasks, split_parts, tensor_of, values, Ad, Buf};

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
        // per row: slices of exactly H zipped together, so the loop has no bounds checks and
        // vectorises
        for ((gr, cr), (hc, a)) in g
            .chunks_exact(4 * h)
            .zip(cp.chunks_exact(h))
            .zip(out.chunks_exact_mut(2 * h).zip(acts.chunks_exact_mut(5 * h)))
        {
            let (gi, rest) = gr.split_at(h);
            let (gf, rest) = rest.split_at(h);
            let (go, gu) = rest.split_at(h);
            let (ho, co) = hc.split_at_mut(h);
            let (ai, rest) = a.split_at_mut(h);
            let (af, rest) = rest.split_at_mut(h);
            let (ao, rest) = rest.split_at_mut(h);
            let (au, at) = rest.split_at_mut(h);
            let ins = gi.iter().zip(gf).zip(go.iter().zip(gu)).zip(cr);
            let outs = ho.iter_mut().zip(co.iter_mut()).zip(
                ai.iter_mut()
                    .zip(af.iter_mut())
                    .zip(ao.iter_mut().zip(au.iter_mut()).zip(at.iter_mut())),
            );
            for ((((xi, xf), (xo, xu)), c0), ((hh, cc), ((ri, rf), ((ro, ru), rt)))) in ins.zip(outs)
            {
                let i = vmath::sigmoid(*xi);
                let f = vmath::sigmoid(*xf);
                let o = vmath::sigmoid(*xo);
                let u = vmath::tanh(*xu);
                let c = f * *c0 + i * u;
                let tc = vmath::tanh(c);
                *hh = o * tc;
                *cc = c;
                *ri = i;
                *rf = f;
                *ro = o;
                *ru = u;
                *rt = tc;
            }
        }
    }
}

simd_dispatch! {
    fn cell_back_rows(acts: &[f32], cp: &[f32], dout: &[f32], dg: &mut [f32], dcp: &mut [f32], h: usize) {
        for (((a, cr), d), (dgr, dcr)) in acts
            .chunks_exact(5 * h)
            .zip(cp.chunks_exact(h))
            .zip(dout.chunks_exact(2 * h))
            .zip(dg.chunks_exact_mut(4 * h).zip(dcp.chunks_exact_mut(h)))
        {
            let (ai, rest) = a.split_at(h);
            let (af, rest) = rest.split_at(h);
            let (ao, rest) = rest.split_at(h);
            let (au, at) = rest.split_at(h);
            let (dh, dco) = d.split_at(h);
            let (di, rest) = dgr.split_at_mut(h);
            let (df, rest) = rest.split_at_mut(h);
            let (do_, du) = rest.split_at_mut(h);
            let ins = ai
                .iter()
                .zip(af)
                .zip(ao.iter().zip(au))
                .zip(at.iter().zip(cr))
                .zip(dh.iter().zip(dco));
            let outs = di
                .iter_mut()
                .zip(df.iter_mut())
                .zip(do_.iter_mut().zip(du.iter_mut()))
                .zip(dcr.iter_mut());
            for (((((i, f), (o, u)), (tc, c0)), (dh, dco)), (((gi, gf), (go, gu)), dc0)) in
                ins.zip(outs)
            {
                let (i, f, o, u, tc) = (*i, *f, *o, *u, *tc);
                let dc = *dco + *dh * o * (1.0 - tc * tc);
                *gi = dc * u * (i * (1.0 - i));
                *gf = dc * *c0 * (f * (1.0 - f));
                *go = *dh * tc * (o * (1.0 - o));
                *gu = dc * i * (1.0 - u * u);
                *dc0 = dc * f;
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
        let grad = grads.consume::<Flex>(&ops.node);
        let (dg, dcp) = backward(&ops.state, &grad);
        register_grads!(grads, ops.parents, [Some(dg), Some(dcp)]);
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

/// What the layer's backward pass needs.
#[derive(Clone, Debug)]
pub(super) struct LayerSaved {
    k: usize,
    n: usize,
    t: usize,
    h: usize,
    /// Per task (member and its rows, [`tasks`]), then step and row: i, f, o, u, tanh c (5·H).
    acts: Arc<Buf>,
    /// Per task, step and row: c_t (H).
    cells: Arc<Buf>,
    /// The layer's output (h_t per member, row and step): h_{t−1} for dW_h.
    hs: FlexTensor,
    wh: FlexTensor,
}

/// One member's recurrence: xg [N, T, 4H] (input projections with bias), wh [H, 4H] → hs
/// [N, T, H], with the activations and cells of every step.
fn layer_member(
    xg: &[f32],
    wh: &[f32],
    (n, t, h): (usize, usize, usize),
    hs: &mut [f32],
    acts: &mut [f32],
    cells: &mut [f32],
) {
    let h4 = 4 * h;
    let mut gates = Buf::new(n * h4);
    let mut hc = Buf::new(n * 2 * h);
    let mut c_prev = Buf::new(n * h);
    c_prev.fill(0.0);
    let mut h_prev = Buf::new(n * h);
    h_prev.fill(0.0);
    for s in 0..t {
        for r in 0..n {
            gates[r * h4..(r + 1) * h4]
                .copy_from_slice(&xg[(r * t + s) * h4..(r * t + s + 1) * h4]);
        }
        if s > 0 {
            matmul(
                (n, h4, h),
                (&mut gates, (h4 as isize, 1)),
                true,
                (&h_prev, (h as isize, 1)),
                (wh, (h4 as isize, 1)),
                Parallelism::None,
            );
        }
        let a = &mut acts[s * n * 5 * h..(s + 1) * n * 5 * h];
        cell_rows(&gates, &c_prev, &mut hc, a, h);
        for r in 0..n {
            let (hr, cr) = hc[r * 2 * h..(r + 1) * 2 * h].split_at(h);
            hs[(r * t + s) * h..(r * t + s + 1) * h].copy_from_slice(hr);
            h_prev[r * h..(r + 1) * h].copy_from_slice(hr);
            c_prev[r * h..(r + 1) * h].copy_from_slice(cr);
        }
        cells[s * n * h..(s + 1) * n * h].copy_from_slice(&c_prev);
    }
}

/// One member's backpropagation through time: dhs [N, T, H] → (dxg [N, T, 4H], dwh [H, 4H]).
#[allow(clippy::too_many_arguments)]
fn layer_member_back(
    dhs: &[f32],
    hs: &[f32],
    wh: &[f32],
    acts: &[f32],
    cells: &[f32],
    (n, t, h): (usize, usize, usize),
    dxg: &mut [f32],
    dwh: &mut [f32],
) {
    let h4 = 4 * h;
    let mut dh_next = Buf::new(n * h);
    dh_next.fill(0.0);
    let mut dc_next = Buf::new(n * h);
    dc_next.fill(0.0);
    let mut dout = Buf::new(n * 2 * h);
    let mut dg = Buf::new(n * h4);
    let mut dcp = Buf::new(n * h);
    let mut h_prev = Buf::new(n * h);
    let zeros = {
        let mut z = Buf::new(n * h);
        z.fill(0.0);
        z
    };
    dwh.fill(0.0);
    for s in (0..t).rev() {
        for r in 0..n {
            let d = &mut dout[r * 2 * h..(r + 1) * 2 * h];
            let src = &dhs[(r * t + s) * h..(r * t + s + 1) * h];
            for j in 0..h {
                d[j] = src[j] + dh_next[r * h + j];
                d[h + j] = dc_next[r * h + j];
            }
        }
        let c_prev: &[f32] = if s > 0 {
            &cells[(s - 1) * n * h..s * n * h]
        } else {
            &zeros
        };
        let a = &acts[s * n * 5 * h..(s + 1) * n * 5 * h];
        cell_back_rows(a, c_prev, &dout, &mut dg, &mut dcp, h);
        for r in 0..n {
            dxg[(r * t + s) * h4..(r * t + s + 1) * h4].copy_from_slice(&dg[r * h4..(r + 1) * h4]);
        }
        dc_next.copy_from_slice(&dcp);
        if s > 0 {
            for r in 0..n {
                h_prev[r * h..(r + 1) * h]
                    .copy_from_slice(&hs[(r * t + s - 1) * h..(r * t + s) * h]);
            }
            // dW_h += h_{s−1}ᵀ · dG; dh_{s−1} = dG · W_hᵀ
            matmul(
                (h, h4, n),
                (dwh, (h4 as isize, 1)),
                true,
                (&h_prev, (1, h as isize)),
                (&dg, (h4 as isize, 1)),
                Parallelism::None,
            );
            matmul(
                (n, h, h4),
                (&mut dh_next, (h as isize, 1)),
                false,
                (&dg, (h4 as isize, 1)),
                (wh, (1, h4 as isize)),
                Parallelism::None,
            );
        }
    }
}

/// Rows (sequences) of the batch per task. The recurrence of one sequence never reads another's,
/// so a member's batch is cut into tasks of at most this many rows, run in parallel when the pool
/// has threads — a single trial's layer then uses the cores too. The cut depends on the shapes
/// only: a member's dW_h is summed over its tasks in one order whatever the members or threads.
const TASK_ROWS: usize = 64;

/// Every task of a call as (member, first row, rows), member-major and in row order. Per task
/// the activations and cells are one contiguous block, step-major inside it.
fn tasks(k: usize, n: usize) -> Vec<(usize, usize, usize)> {
    let mut out = Vec::new();
    for m in 0..k {
        let mut r = 0;
        while r < n {
            let c = TASK_ROWS.min(n - r);
            out.push((m, r, c));
            r += c;
        }
    }
    out
}

/// The LSTM layer's forward pass over every step: xg [K, N, T, 4H], wh [K, H, 4H] → hs
/// [K, N, T, H] (and, with `keep`, what the backward pass needs).
pub(super) fn layer_forward(
    xg: &FlexTensor,
    wh: &FlexTensor,
    keep: bool,
) -> (FlexTensor, Option<LayerSaved>) {
    let xg = contiguous(xg);
    let wh = contiguous(wh);
    let xs = xg.layout().shape();
    let (k, n, t, h) = (xs[0], xs[1], xs[2], xs[3] / 4);
    let (xv, wv) = (values(&xg), values(&wh));
    let mut hs = vec![0.0f32; k * n * t * h];
    let mut acts = Buf::new(k * t * n * 5 * h);
    let mut cells = Buf::new(k * t * n * h);
    {
        let tasks = tasks(k, n);
        let work: Vec<_> = tasks
            .iter()
            .copied()
            .zip(split_parts(&mut hs, tasks.iter().map(|x| x.2 * t * h)))
            .zip(split_parts(
                &mut acts,
                tasks.iter().map(|x| x.2 * t * 5 * h),
            ))
            .zip(split_parts(&mut cells, tasks.iter().map(|x| x.2 * t * h)))
            .collect();
        run_tasks(work, |((((m, r0, c), hs_t), a_t), c_t)| {
            let x0 = (m * n + r0) * t * 4 * h;
            layer_member(
                &xv[x0..x0 + c * t * 4 * h],
                &wv[m * h * 4 * h..(m + 1) * h * 4 * h],
                (c, t, h),
                hs_t,
                a_t,
                c_t,
            );
        });
    }
    let out = tensor_of(hs, &[k, n, t, h]);
    let saved = keep.then(|| LayerSaved {
        k,
        n,
        t,
        h,
        acts: Arc::new(acts),
        cells: Arc::new(cells),
        hs: out.clone(),
        wh,
    });
    (out, saved)
}

fn layer_backward(s: &LayerSaved, grad: &FlexTensor) -> (FlexTensor, FlexTensor) {
    let grad = contiguous(grad);
    let (k, n, t, h) = (s.k, s.n, s.t, s.h);
    let (gv, hv, wv) = (values(&grad), values(&s.hs), values(&s.wh));
    let mut dxg = vec![0.0f32; k * n * t * 4 * h];
    let tasks = tasks(k, n);
    let work: Vec<_> = tasks
        .iter()
        .copied()
        .zip(split_parts(&mut dxg, tasks.iter().map(|x| x.2 * t * 4 * h)))
        .collect();
    let parts = run_tasks(work, |((m, r0, c), dx_t)| {
        let (y0, a0) = ((m * n + r0) * t * h, (m * n + r0) * t * 5 * h);
        let mut dw = vec![0.0f32; h * 4 * h];
        layer_member_back(
            &gv[y0..y0 + c * t * h],
            &hv[y0..y0 + c * t * h],
            &wv[m * h * 4 * h..(m + 1) * h * 4 * h],
            &s.acts[a0..a0 + c * t * 5 * h],
            &s.cells[y0..y0 + c * t * h],
            (c, t, h),
            dx_t,
            &mut dw,
        );
        (m, dw)
    });
    let mut dwh = vec![0.0f32; k * h * 4 * h];
    for (m, dw) in parts {
        for (o, v) in dwh[m * h * 4 * h..(m + 1) * h * 4 * h].iter_mut().zip(&dw) {
            *o += *v;
        }
    }
    (
        tensor_of(dxg, &[k, n, t, 4 * h]),
        tensor_of(dwh, &[k, h, 4 * h]),
    )
}

#[derive(Debug)]
struct LayerBackward;

impl Backward<Flex, 2> for LayerBackward {
    type State = LayerSaved;

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _: &mut Checkpointer) {
        let grad = grads.consume::<Flex>(&ops.node);
        let (dx, dw) = layer_backward(&ops.state, &grad);
        register_grads!(grads, ops.parents, [Some(dx), Some(dw)]);
    }
}

/// The LSTM layer as one autodiff op.
pub(super) fn layer_ad(xg: FloatTensor<Ad>, wh: FloatTensor<Ad>) -> FloatTensor<Ad> {
    match LayerBackward
        .prepare::<NoCheckpointing>([xg.node.clone(), wh.node.clone()])
        .compute_bound()
        .stateful()
    {
        OpsKind::Tracked(prep) => {
            let (y, saved) = layer_forward(&xg.primitive, &wh.primitive, true);
            prep.finish(saved.expect("kept"), y)
        }
        OpsKind::UnTracked(prep) => {
            let (y, _) = layer_forward(&xg.primitive, &wh.primitive, false);
            prep.finish(y)
        }
    }
}
