//! The dense layer on the CPU, per member: y = x·W + b for x [K, M, in], W [K, in, out],
//! b [K, out]. One gemm per member, then the bias added to every row (the order of Burn's
//! `matmul` + broadcast `add`). Backward: dx = dy·Wᵀ, dW = xᵀ·dy, db = Σ_rows dy, one gemm each.
//! (Burn's broadcast add of a [K, 1, out] bias walks element by element for K > 1; this op is what
//! makes a fused group's dense layers as cheap per member as a lone trial's.)

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::NoCheckpointing;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::Flex;
use burn::tensor::ops::FloatTensor;
use burn_flex::FlexTensor;
use rayon::prelude::*;
use std::mem::MaybeUninit;

use super::flex::register_grads;
use super::{contiguous, tensor_of, threads, values, Ad};

#[derive(Clone, Debug)]
pub(super) struct Saved {
    x: FlexTensor,
    w: FlexTensor,
    dims: (usize, usize, usize, usize),
}

/// dst[m×n] = lhs · rhs (strides: (row, column) per operand), parallel inside when `par`; `dst`
/// need not be initialised (gemm writes all of it and reads none).
#[allow(clippy::too_many_arguments)]
fn gemm_to(
    m: usize,
    n: usize,
    k: usize,
    dst: &mut [MaybeUninit<f32>],
    lhs: &[f32],
    (lrs, lcs): (isize, isize),
    rhs: &[f32],
    (rrs, rcs): (isize, isize),
    par: bool,
) {
    let parallelism = if par && m * n * k >= 192 * 192 * 192 {
        gemm::Parallelism::Rayon(0)
    } else {
        gemm::Parallelism::None
    };
    super::gemm::matmul_uninit(
        m,
        n,
        k,
        dst,
        (n as isize, 1),
        lhs,
        (lrs, lcs),
        rhs,
        (rrs, rcs),
        parallelism,
    );
}

/// Per member mm of `k`: its part of a new [k, rows, cols] buffer = lhs_mm[rows×inner] ·
/// rhs_mm[inner×cols] (each operand's member part the mm-th of `k` equal parts of its slice, read
/// with the given (row, column) strides), then `then(mm, part)`.
fn per_member(
    k: usize,
    (rows, cols, inner): (usize, usize, usize),
    (lhs, ls): (&[f32], (isize, isize)),
    (rhs, rs): (&[f32], (isize, isize)),
    then: impl Fn(usize, &mut [f32]) + Sync + Send,
) -> Vec<f32> {
    let (ln, rn) = (lhs.len() / k.max(1), rhs.len() / k.max(1));
    each_member(k * rows * cols, k, |mm, part, par| {
        let (l, r) = (&lhs[mm * ln..(mm + 1) * ln], &rhs[mm * rn..(mm + 1) * rn]);
        gemm_to(rows, cols, inner, part, l, ls, r, rs, par);
        // SAFETY: the gemm above wrote all of `part`
        then(mm, unsafe {
            &mut *(part as *mut [MaybeUninit<f32>] as *mut [f32])
        });
    })
}

/// A new buffer of `len` values in `k` equal parts, each written whole by `f(member, part, par)`
/// (a gemm's destination): in parallel over the members when the pool has threads for them (each
/// gemm then alone), else one after the other (each gemm may use the threads). Not zeroed first:
/// zeroing a fresh dW every step was 3.5 % of a small-batch digits sweep.
fn each_member(
    len: usize,
    k: usize,
    f: impl Fn(usize, &mut [MaybeUninit<f32>], bool) + Sync + Send,
) -> Vec<f32> {
    let mut v: Vec<f32> = Vec::with_capacity(len);
    let out = &mut v.spare_capacity_mut()[..len];
    let per = (len / k.max(1)).max(1);
    if k > 1 && threads() > 1 {
        out.par_chunks_mut(per)
            .enumerate()
            .for_each(|(m, part)| f(m, part, false));
    } else {
        for (m, part) in out.chunks_mut(per).enumerate() {
            f(m, part, true);
        }
    }
    // SAFETY: every part was written whole by `f` (a gemm with its destination unread)
    unsafe { v.set_len(len) };
    v
}

pub(super) fn forward(
    x: &FlexTensor,
    w: &FlexTensor,
    b: &FlexTensor,
    keep: bool,
) -> (FlexTensor, Option<Saved>) {
    let x = contiguous(x);
    let w = contiguous(w);
    let b = contiguous(b);
    let xs = x.layout().shape();
    let ws = w.layout().shape();
    let (k, m, din, dout) = (xs[0], xs[1], xs[2], ws[2]);
    let (xv, wv, bv) = (values(&x), values(&w), values(&b));
    let y = per_member(
        k,
        (m, dout, din),
        (xv, (din as isize, 1)),
        (wv, (dout as isize, 1)),
        |mm, part| {
            let bias = &bv[mm * dout..(mm + 1) * dout];
            for row in part.chunks_exact_mut(dout) {
                for (o, bb) in row.iter_mut().zip(bias) {
                    *o += *bb;
                }
            }
        },
    );
    let out = tensor_of(y, &[k, m, dout]);
    let saved = keep.then(|| Saved {
        x,
        w,
        dims: (k, m, din, dout),
    });
    (out, saved)
}

fn backward(
    s: &Saved,
    grad: &FlexTensor,
    (want_x, want_w, want_b): (bool, bool, bool),
) -> (Option<FlexTensor>, Option<FlexTensor>, Option<FlexTensor>) {
    let (k, m, din, dout) = s.dims;
    let grad = contiguous(grad);
    let (gv, xv, wv) = (values(&grad), values(&s.x), values(&s.w));
    let (rows, cols) = (|n: usize| (n as isize, 1), |n: usize| (1, n as isize));
    let dx = want_x.then(|| {
        let dx = per_member(
            k,
            (m, din, dout),
            (gv, rows(dout)),
            (wv, cols(dout)),
            |_, _| {},
        );
        tensor_of(dx, &[k, m, din])
    });
    let dw = want_w.then(|| {
        let dw = per_member(
            k,
            (din, dout, m),
            (xv, cols(din)),
            (gv, rows(dout)),
            |_, _| {},
        );
        tensor_of(dw, &[k, din, dout])
    });
    let db = want_b.then(|| {
        let mut db = vec![0.0f32; k * dout];
        for (mm, out) in db.chunks_mut(dout).enumerate() {
            for row in gv[mm * m * dout..(mm + 1) * m * dout].chunks_exact(dout) {
                for (o, g) in out.iter_mut().zip(row) {
                    *o += *g;
                }
            }
        }
        tensor_of(db, &[k, dout])
    });
    (dx, dw, db)
}

#[derive(Debug)]
struct DenseBackward;

impl Backward<Flex, 3> for DenseBackward {
    type State = Saved;

    fn backward(self, ops: Ops<Self::State, 3>, grads: &mut Gradients, _: &mut Checkpointer) {
        let grad = grads.consume::<Flex>(&ops.node);
        let [x, w, b] = ops.parents.each_ref().map(Option::is_some);
        let (dx, dw, db) = backward(&ops.state, &grad, (x, w, b));
        register_grads!(grads, ops.parents, [dx, dw, db]);
    }
}

/// The layer as one autodiff op.
pub(super) fn dense_ad(
    x: FloatTensor<Ad>,
    w: FloatTensor<Ad>,
    b: FloatTensor<Ad>,
) -> FloatTensor<Ad> {
    match DenseBackward
        .prepare::<NoCheckpointing>([x.node.clone(), w.node.clone(), b.node.clone()])
        .compute_bound()
        .stateful()
    {
        OpsKind::Tracked(prep) => {
            let (y, saved) = forward(&x.primitive, &w.primitive, &b.primitive, true);
            prep.finish(saved.expect("kept"), y)
        }
        OpsKind::UnTracked(prep) => {
            let (y, _) = forward(&x.primitive, &w.primitive, &b.primitive, false);
            prep.finish(y)
        }
    }
}
