//! The residual networks' convolution on the CPU: k×k, "same" padding (k/2), stride s, no bias,
//! on the layout x [N, K·Cin, H, W] with the members folded into the channels (member m's input
//! channels of image n are one contiguous block), weights [K, Cout, Cin, k, k] → y [N, K·Cout,
//! H', W'].
//!
//! The work is cut into tasks of a few images of one member (their im2col columns ~256 KiB). Per
//! task: im2col into [Cin·k·k, images·H'·W'] (row (ci, a, b), column (image, i, j): zeros outside
//! the image), one gemm W_m [Cout, Cin·k·k] · cols into a channel-major block, copied into y.
//! Backward per task: the block of dY gathered the same way, the columns again from the saved
//! input, dW's share = dY · colsᵀ and, for a tracked input, dcols = W_mᵀ · dY added back by
//! col2im. The shares of dW are summed per member in task order, and the tasks depend on the
//! shapes of one member only: a member of a fused group gets the numbers of the same trial alone,
//! on any number of threads.

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::NoCheckpointing;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::Flex;
use burn::tensor::ops::FloatTensor;
use burn_flex::FlexTensor;

use super::flex::register_grads;
use super::gemm::{matmul, Strides};
use super::{contiguous, run_tasks, tensor_of, values, Ad, Buf};

/// Shapes of one call.
#[derive(Clone, Copy, Debug)]
struct Dims {
    members: usize,
    n: usize,
    cin: usize,
    h: usize,
    w: usize,
    cout: usize,
    k: usize,
    s: usize,
}

impl Dims {
    fn out(&self, len: usize) -> usize {
        (len + 2 * (self.k / 2) - self.k) / self.s + 1
    }
    fn ho(&self) -> usize {
        self.out(self.h)
    }
    fn wo(&self) -> usize {
        self.out(self.w)
    }
    fn kkc(&self) -> usize {
        self.cin * self.k * self.k
    }
    /// Output pixels per image.
    fn opx(&self) -> usize {
        self.ho() * self.wo()
    }
    /// Images per task: their columns within ~256 KiB. A function of one member's shapes only.
    fn chunk(&self) -> usize {
        (256 * 1024 / (self.kkc() * self.opx() * 4).max(1)).clamp(1, self.n.max(1))
    }
    /// (member, first image, images) of every task, member-major.
    fn tasks(&self) -> Vec<(usize, usize, usize)> {
        let ch = self.chunk();
        let mut out = Vec::new();
        for m in 0..self.members {
            let mut i = 0;
            while i < self.n {
                let c = ch.min(self.n - i);
                out.push((m, i, c));
                i += c;
            }
        }
        out
    }
    /// Offset of member m's first input channel of image n in x.
    fn x_at(&self, n: usize, m: usize) -> usize {
        (n * self.members + m) * self.cin * self.h * self.w
    }
    /// Offset of member m's first output channel of image n in y.
    fn y_at(&self, n: usize, m: usize) -> usize {
        (n * self.members + m) * self.cout * self.opx()
    }
}

#[derive(Clone, Debug)]
pub(super) struct Saved {
    dims: Dims,
    x: FlexTensor,
    w: FlexTensor,
}

/// The output columns j (of `wo`) whose input column j·s + b − p lies inside a row of `w`
/// pixels: a range, so the copies below have no per-element bounds test.
fn inside(wo: usize, w: usize, s: usize, b: usize, p: usize) -> std::ops::Range<usize> {
    // j·s + b ≥ p  and  j·s + b − p ≤ w − 1
    let lo = p.saturating_sub(b).div_ceil(s);
    let hi = if w + p > b {
        ((w + p - b - 1) / s + 1).min(wo)
    } else {
        0
    };
    lo.min(hi)..hi
}

/// The columns of images `i0 .. i0 + c` of member m: [Cin·k·k, c·H'·W'] (`cols` row-major).
fn im2col(xv: &[f32], d: &Dims, m: usize, i0: usize, c: usize, cols: &mut [f32]) {
    let (ho, wo, opx) = (d.ho(), d.wo(), d.opx());
    let ld = c * opx;
    let p = d.k / 2;
    for img in 0..c {
        let x = &xv[d.x_at(i0 + img, m)..][..d.cin * d.h * d.w];
        for ci in 0..d.cin {
            let plane = &x[ci * d.h * d.w..][..d.h * d.w];
            for a in 0..d.k {
                let rows = inside(ho, d.h, d.s, a, p);
                for b in 0..d.k {
                    let row = (ci * d.k + a) * d.k + b;
                    let dst = &mut cols[row * ld + img * opx..][..opx];
                    let js = inside(wo, d.w, d.s, b, p);
                    dst[..rows.start * wo].fill(0.0);
                    dst[rows.end * wo..].fill(0.0);
                    if d.s == 1 && !rows.is_empty() {
                        // stride 1 (W' = W): the valid rows are the plane shifted by (a − p,
                        // b − p), one copy, with the columns that wrapped around zeroed
                        let (r0, r1) = (rows.start * wo, rows.end * wo);
                        let start = (rows.start + a - p) * d.w;
                        let shift = b as isize - p as isize;
                        let from = (start as isize + shift).max(0) as usize;
                        let to = ((start + (r1 - r0)) as isize + shift).min(plane.len() as isize)
                            as usize;
                        let at = r0 + (from as isize - start as isize - shift) as usize;
                        dst[at..at + (to - from)].copy_from_slice(&plane[from..to]);
                        for i in rows.clone() {
                            let out = &mut dst[i * wo..(i + 1) * wo];
                            out[..js.start].fill(0.0);
                            out[js.end..].fill(0.0);
                        }
                        continue;
                    }
                    for i in rows.clone() {
                        let src = &plane[(i * d.s + a - p) * d.w..][..d.w];
                        let out = &mut dst[i * wo..(i + 1) * wo];
                        out[..js.start].fill(0.0);
                        out[js.end..].fill(0.0);
                        if js.is_empty() {
                            continue;
                        }
                        let first = js.start * d.s + b - p;
                        if d.s == 1 {
                            out[js.clone()].copy_from_slice(&src[first..first + js.len()]);
                        } else {
                            for (o, v) in out[js.clone()]
                                .iter_mut()
                                .zip(src[first..].iter().step_by(d.s))
                            {
                                *o = *v;
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Adds the columns' gradient back into images `i0 .. i0 + c` of member m (dx [c, Cin, H, W]).
fn col2im(dcols: &[f32], d: &Dims, c: usize, dx: &mut [f32]) {
    let (ho, wo, opx) = (d.ho(), d.wo(), d.opx());
    let ld = c * opx;
    let p = d.k / 2;
    for img in 0..c {
        let x = &mut dx[img * d.cin * d.h * d.w..][..d.cin * d.h * d.w];
        for ci in 0..d.cin {
            let plane = &mut x[ci * d.h * d.w..][..d.h * d.w];
            for a in 0..d.k {
                let rows = inside(ho, d.h, d.s, a, p);
                for b in 0..d.k {
                    let row = (ci * d.k + a) * d.k + b;
                    let src = &dcols[row * ld + img * opx..][..opx];
                    let js = inside(wo, d.w, d.s, b, p);
                    if js.is_empty() {
                        continue;
                    }
                    for i in rows.clone() {
                        let dst = &mut plane[(i * d.s + a - p) * d.w..][..d.w];
                        let first = js.start * d.s + b - p;
                        let g = &src[i * wo + js.start..i * wo + js.end];
                        if d.s == 1 {
                            for (o, v) in dst[first..first + js.len()].iter_mut().zip(g) {
                                *o += *v;
                            }
                        } else {
                            for (o, v) in dst[first..].iter_mut().step_by(d.s).zip(g) {
                                *o += *v;
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The forward pass: y and, with `keep`, what the backward pass needs.
pub(super) fn forward(
    x: &FlexTensor,
    w: &FlexTensor,
    stride: usize,
    keep: bool,
) -> (FlexTensor, Option<Saved>) {
    let x = contiguous(x);
    let w = contiguous(w);
    let xs = x.layout().shape().to_vec();
    let ws = w.layout().shape().to_vec();
    let members = ws[0];
    let d = Dims {
        members,
        n: xs[0],
        cin: ws[2],
        h: xs[2],
        w: xs[3],
        cout: ws[1],
        k: ws[3],
        s: stride,
    };
    assert_eq!(xs[1], members * d.cin, "x [N, K·Cin, H, W]");
    let (xv, wv) = (values(&x), values(&w));
    let (kkc, cout, opx) = (d.kkc(), d.cout, d.opx());
    let blocks = run_tasks(d.tasks(), |(m, i0, c)| {
        let mut cols = Buf::new(kkc * c * opx);
        im2col(xv, &d, m, i0, c, &mut cols);
        let mut y = vec![0.0f32; cout * c * opx];
        matmul_into(
            cout,
            c * opx,
            kkc,
            &mut y,
            ((c * opx) as isize, 1),
            &wv[m * cout * kkc..][..cout * kkc],
            (kkc as isize, 1),
            &cols,
            ((c * opx) as isize, 1),
            gemm::Parallelism::None,
        );
        y
    });
    let mut out = vec![0.0f32; d.n * members * cout * opx];
    for ((m, i0, c), y) in d.tasks().into_iter().zip(blocks) {
        for img in 0..c {
            let at = d.y_at(i0 + img, m);
            for co in 0..cout {
                out[at + co * opx..][..opx].copy_from_slice(&y[co * c * opx + img * opx..][..opx]);
            }
        }
    }
    let y = tensor_of(out, &[d.n, members * cout, d.ho(), d.wo()]);
    (y, keep.then(|| Saved { dims: d, x, w }))
}

/// (dx if asked, dw).
fn backward(s: &Saved, grad: &FlexTensor, want_x: bool) -> (Option<FlexTensor>, FlexTensor) {
    let d = s.dims;
    let grad = contiguous(grad);
    let (gv, xv, wv) = (values(&grad), values(&s.x), values(&s.w));
    let (kkc, cout, opx) = (d.kkc(), d.cout, d.opx());
    let img_in = d.cin * d.h * d.w;
    let parts = run_tasks(d.tasks(), |(m, i0, c)| {
        let ld = c * opx;
        // this task's dY, channel-major [Cout, c·H'·W']
        let mut dy = Buf::new(cout * ld);
        for img in 0..c {
            let at = d.y_at(i0 + img, m);
            for co in 0..cout {
                dy[co * ld + img * opx..][..opx].copy_from_slice(&gv[at + co * opx..][..opx]);
            }
        }
        let mut cols = Buf::new(kkc * ld);
        im2col(xv, &d, m, i0, c, &mut cols);
        // dW's share = dY · colsᵀ: [Cout, Cin·k·k]
        let mut dw = vec![0.0f32; cout * kkc];
        matmul_into(
            cout,
            kkc,
            ld,
            &mut dw,
            (kkc as isize, 1),
            &dy,
            (ld as isize, 1),
            &cols,
            (1, ld as isize),
            gemm::Parallelism::None,
        );
        let dx = want_x.then(|| {
            // dcols = W_mᵀ · dY: [Cin·k·k, c·H'·W'], then back into the images
            let mut dcols = Buf::new(kkc * ld);
            matmul_into(
                kkc,
                ld,
                cout,
                &mut dcols,
                (ld as isize, 1),
                &wv[m * cout * kkc..][..cout * kkc],
                (1, kkc as isize),
                &dy,
                (ld as isize, 1),
                gemm::Parallelism::None,
            );
            let mut dx = vec![0.0f32; c * img_in];
            col2im(&dcols, &d, c, &mut dx);
            dx
        });
        (dw, dx)
    });
    let mut dws = vec![0.0f32; d.members * cout * kkc];
    let mut dx = want_x.then(|| vec![0.0f32; d.n * d.members * img_in]);
    for ((m, i0, c), (dw, dxt)) in d.tasks().into_iter().zip(parts) {
        for (o, v) in dws[m * cout * kkc..][..cout * kkc].iter_mut().zip(&dw) {
            *o += *v;
        }
        if let (Some(all), Some(dxt)) = (dx.as_mut(), dxt) {
            for img in 0..c {
                all[d.x_at(i0 + img, m)..][..img_in]
                    .copy_from_slice(&dxt[img * img_in..][..img_in]);
            }
        }
    }
    (
        dx.map(|v| tensor_of(v, &[d.n, d.members * d.cin, d.h, d.w])),
        tensor_of(dws, &[d.members, cout, d.cin, d.k, d.k]),
    )
}

#[derive(Debug)]
struct ConvBackward;

impl Backward<Flex, 2> for ConvBackward {
    type State = Saved;

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _: &mut Checkpointer) {
        let grad = grads.consume::<Flex>(&ops.node);
        let (dx, dw) = backward(&ops.state, &grad, ops.parents[0].is_some());
        register_grads!(grads, ops.parents, [dx, Some(dw)]);
    }
}

/// The convolution as one autodiff op.
pub(super) fn conv_ad(x: FloatTensor<Ad>, w: FloatTensor<Ad>, stride: usize) -> FloatTensor<Ad> {
    match ConvBackward
        .prepare::<NoCheckpointing>([x.node.clone(), w.node.clone()])
        .compute_bound()
        .stateful()
    {
        OpsKind::Tracked(prep) => {
            let (y, saved) = forward(&x.primitive, &w.primitive, stride, true);
            prep.finish(saved.expect("kept"), y)
        }
        OpsKind::UnTracked(prep) => {
            let (y, _) = forward(&x.primitive, &w.primitive, stride, false);
            prep.finish(y)
        }
    }
}

/// dst = lhs[m×k] · rhs[k×n] through the one gemm wrapper (operand bounds asserted).
#[allow(clippy::too_many_arguments)]
fn matmul_into(
    m: usize,
    n: usize,
    k: usize,
    dst: &mut [f32],
    dst_s: Strides,
    lhs: &[f32],
    lhs_s: Strides,
    rhs: &[f32],
    rhs_s: Strides,
    par: super::gemm::Parallelism,
) {
    matmul(
        (m, n, k),
        (dst, dst_s),
        false,
        (lhs, lhs_s),
        (rhs, rhs_s),
        par,
    );
}
