//! The simple CNN's conv block on the CPU: "same" k×k convolution (cross-correlation, stride 1),
//! 2×2 max-pool (floor), bias, ReLU — per member, on NHWC activations.
//!
//! Forward, per member: im2col (each kernel row of an output pixel is one contiguous run of the
//! input row, or zeros), one gemm `cols · W` [N·H·W, Cout], then the pool keeps each output's
//! winning position (0–3) and adds bias and ReLU. Backward, per member: the output gradient through
//! the ReLU is routed to the winning positions (dC, 3/4 zeros), dW = colsᵀ · dC and db = Σ dZ; for
//! a tracked input, dcols = dC · Wᵀ and col2im adds each run back (contiguous adds). The im2col
//! columns are kept from the forward pass in a pooled buffer.

use std::sync::Arc;

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::NoCheckpointing;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::Flex;
use burn::tensor::ops::FloatTensor;
use burn_flex::FlexTensor;
use rayon::prelude::*;

use super::{contiguous, tensor_of, threads, values, Ad, Buf};

/// Shapes of one conv block call.
#[derive(Clone, Copy, Debug)]
struct Dims {
    members: usize,
    /// Images per member.
    n: usize,
    h: usize,
    w: usize,
    cin: usize,
    cout: usize,
    k: usize,
}

impl Dims {
    fn kkc(&self) -> usize {
        self.k * self.k * self.cin
    }
    /// Output pixels of the convolution per member.
    fn pixels(&self) -> usize {
        self.n * self.h * self.w
    }
    fn pooled(&self) -> usize {
        self.n * (self.h / 2) * (self.w / 2)
    }
}

/// What the backward pass needs.
#[derive(Clone, Debug)]
pub(super) struct Saved {
    dims: Dims,
    /// im2col columns, [K, N·H·W, k·k·Cin].
    cols: Arc<Buf>,
    /// Winning position (0–3: row-major in the 2×2 window) of every pooled output, [K·N·H2·W2·Cout].
    arg: Arc<Vec<u8>>,
    /// The block's output (after ReLU), for the ReLU mask.
    out: FlexTensor,
    w: FlexTensor,
}

/// Runs `f(member, …)` for every member: in parallel over the members when the pool has threads
/// for them, else one after the other (the gemms then use the threads).
fn per_member<T: Send>(members: usize, f: impl Fn(usize) -> T + Sync + Send) -> Vec<T> {
    if members > 1 && threads() > 1 {
        (0..members).into_par_iter().map(f).collect()
    } else {
        (0..members).map(f).collect()
    }
}

/// gemm parallelism for one member's product of m×n×k.
fn parallelism(members: usize, m: usize, n: usize, k: usize) -> gemm::Parallelism {
    if (members == 1 || threads() == 1) && m * n * k >= 192 * 192 * 192 && threads() > 1 {
        gemm::Parallelism::Rayon(0)
    } else {
        gemm::Parallelism::None
    }
}

/// dst[m×n] = lhs[m×k] · rhs[k×n] with explicit strides (row stride, column stride).
#[allow(clippy::too_many_arguments)]
pub(super) fn matmul(
    m: usize,
    n: usize,
    k: usize,
    dst: &mut [f32],
    lhs: &[f32],
    (lhs_rs, lhs_cs): (isize, isize),
    rhs: &[f32],
    (rhs_rs, rhs_cs): (isize, isize),
    par: gemm::Parallelism,
) {
    assert!(dst.len() >= m * n);
    // SAFETY: the slices cover the strided extents (checked by the callers' shapes; the asserts
    // below bound the last element each operand reads).
    debug_assert!(
        m == 0
            || k == 0
            || ((m - 1) as isize * lhs_rs + (k - 1) as isize * lhs_cs) < lhs.len() as isize
    );
    debug_assert!(
        k == 0
            || n == 0
            || ((k - 1) as isize * rhs_rs + (n - 1) as isize * rhs_cs) < rhs.len() as isize
    );
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            1,
            n as isize,
            false,
            lhs.as_ptr(),
            lhs_cs,
            lhs_rs,
            rhs.as_ptr(),
            rhs_cs,
            rhs_rs,
            0.0,
            1.0,
            false,
            false,
            false,
            par,
        );
    }
}

/// One image zero-padded by k/2 on every side: [H + 2p, W + 2p, Cin].
fn pad_image(x: &[f32], d: &Dims, out: &mut [f32]) {
    let (h, w, cin, p) = (d.h, d.w, d.cin, d.k / 2);
    let wp = (w + 2 * p) * cin;
    out.fill(0.0);
    for i in 0..h {
        out[(i + p) * wp + p * cin..(i + p) * wp + (p + w) * cin]
            .copy_from_slice(&x[i * w * cin..(i + 1) * w * cin]);
    }
}

/// The elements of one padded image's padded-buffer length.
fn padded_len(d: &Dims) -> usize {
    let p = d.k / 2;
    (d.h + 2 * p) * (d.w + 2 * p) * d.cin
}

/// Copies `RUN`-long runs (a kernel row: k·Cin values) for every output pixel of one image: with
/// the run length a constant the copy is a few vector moves, not a call.
#[inline(always)]
fn im2col_runs<const RUN: usize>(pad: &[f32], d: &Dims, cols: &mut [f32], run: usize) {
    let (h, w, cin, k) = (d.h, d.w, d.cin, d.k);
    let p = k / 2;
    let wp = (w + 2 * p) * cin;
    let kkc = d.kkc();
    let run = if RUN > 0 { RUN } else { run };
    for i in 0..h {
        for j in 0..w {
            let row = &mut cols[(i * w + j) * kkc..][..kkc];
            for a in 0..k {
                let src = &pad[(i + a) * wp + j * cin..][..run];
                row[a * run..(a + 1) * run].copy_from_slice(src);
            }
        }
    }
}

/// im2col of one member: x [N, H, W, Cin] → cols [N·H·W, k·k·Cin] (`pad`: scratch of one padded
/// image).
fn im2col(x: &[f32], d: &Dims, cols: &mut [f32], pad: &mut [f32]) {
    let per_img = d.h * d.w * d.cin;
    let per_cols = d.h * d.w * d.kkc();
    let run = d.k * d.cin;
    for img in 0..d.n {
        pad_image(&x[img * per_img..(img + 1) * per_img], d, pad);
        let c = &mut cols[img * per_cols..(img + 1) * per_cols];
        match run {
            5 => im2col_runs::<5>(pad, d, c, run),
            15 => im2col_runs::<15>(pad, d, c, run),
            40 => im2col_runs::<40>(pad, d, c, run),
            80 => im2col_runs::<80>(pad, d, c, run),
            160 => im2col_runs::<160>(pad, d, c, run),
            _ => im2col_runs::<0>(pad, d, c, run),
        }
    }
}

/// Adds `RUN`-long runs of one image's dcols back into its padded gradient.
#[inline(always)]
fn col2im_runs<const RUN: usize>(dcols: &[f32], d: &Dims, pad: &mut [f32], run: usize) {
    let (h, w, cin, k) = (d.h, d.w, d.cin, d.k);
    let p = k / 2;
    let wp = (w + 2 * p) * cin;
    let kkc = d.kkc();
    let run = if RUN > 0 { RUN } else { run };
    for i in 0..h {
        for j in 0..w {
            let row = &dcols[(i * w + j) * kkc..][..kkc];
            for a in 0..k {
                let dst = &mut pad[(i + a) * wp + j * cin..][..run];
                for (o, v) in dst.iter_mut().zip(&row[a * run..(a + 1) * run]) {
                    *o += *v;
                }
            }
        }
    }
}

/// col2im of one member: dx [N, H, W, Cin] = the runs of dcols [N·H·W, k·k·Cin] added back at
/// their pixels (`pad`: scratch of one padded image; the padding's share is dropped).
fn col2im(dcols: &[f32], d: &Dims, dx: &mut [f32], pad: &mut [f32]) {
    let (h, w, cin, p) = (d.h, d.w, d.cin, d.k / 2);
    let wp = (w + 2 * p) * cin;
    let per_img = h * w * cin;
    let per_cols = h * w * d.kkc();
    let run = d.k * d.cin;
    for img in 0..d.n {
        pad.fill(0.0);
        let c = &dcols[img * per_cols..(img + 1) * per_cols];
        match run {
            5 => col2im_runs::<5>(c, d, pad, run),
            15 => col2im_runs::<15>(c, d, pad, run),
            40 => col2im_runs::<40>(c, d, pad, run),
            80 => col2im_runs::<80>(c, d, pad, run),
            160 => col2im_runs::<160>(c, d, pad, run),
            _ => col2im_runs::<0>(c, d, pad, run),
        }
        let out = &mut dx[img * per_img..(img + 1) * per_img];
        for i in 0..h {
            out[i * w * cin..(i + 1) * w * cin]
                .copy_from_slice(&pad[(i + p) * wp + p * cin..(i + p) * wp + (p + w) * cin]);
        }
    }
}

/// Images a member's evaluation forward takes at a time (its columns then stay in cache-sized
/// buffers instead of one for the whole validation set).
const EVAL_CHUNK: usize = 64;

/// 2×2 max-pool (floor) of the convolution's output [N, H, W, Cout] (rows of `conv`), then bias
/// and ReLU: `out` [N, H/2, W/2, Cout] and the winner (0–3) of each output in `arg`.
fn pool(conv: &[f32], d: &Dims, bias: &[f32], out: &mut [f32], arg: &mut [u8]) {
    let (h2, w2, cout) = (d.h / 2, d.w / 2, d.cout);
    for img in 0..d.n {
        for i2 in 0..h2 {
            for j2 in 0..w2 {
                let o = ((img * h2 + i2) * w2 + j2) * cout;
                let at =
                    |di: usize, dj: usize| ((img * d.h + 2 * i2 + di) * d.w + 2 * j2 + dj) * cout;
                let (q0, q1, q2, q3) = (at(0, 0), at(0, 1), at(1, 0), at(1, 1));
                let (r0, r1, r2, r3) = (
                    &conv[q0..q0 + cout],
                    &conv[q1..q1 + cout],
                    &conv[q2..q2 + cout],
                    &conv[q3..q3 + cout],
                );
                let (oc, ac) = (&mut out[o..o + cout], &mut arg[o..o + cout]);
                for c in 0..cout {
                    let mut best = r0[c];
                    let mut which = 0u8;
                    // a NaN wins (it must reach the loss)
                    for (t, v) in [(1u8, r1[c]), (2, r2[c]), (3, r3[c])] {
                        if v > best || v.is_nan() {
                            best = v;
                            which = t;
                        }
                    }
                    let z = best + bias[c];
                    oc[c] = if z > 0.0 || z.is_nan() { z } else { 0.0 };
                    ac[c] = which;
                }
            }
        }
    }
}

/// The block's forward pass: the output [K·N, H2, W2, Cout] and, with `keep`, what the backward
/// pass needs.
pub(super) fn forward(
    x: &FlexTensor,
    w: &FlexTensor,
    b: &FlexTensor,
    kernel: usize,
    keep: bool,
) -> (FlexTensor, Option<Saved>) {
    let x = contiguous(x);
    let w = contiguous(w);
    let b = contiguous(b);
    let xs = x.layout().shape();
    let ws = w.layout().shape();
    let members = ws[0];
    let d = Dims {
        members,
        n: xs[0] / members,
        h: xs[1],
        w: xs[2],
        cin: xs[3],
        cout: ws[2],
        k: kernel,
    };
    assert_eq!(ws[1], d.kkc(), "conv weights [K, k·k·Cin, Cout]");
    let (h2, w2) = (d.h / 2, d.w / 2);
    let (xv, wv, bv) = (values(&x), values(&w), values(&b));
    let (px, kkc, cout) = (d.pixels(), d.kkc(), d.cout);
    // kept for the backward pass: every image's columns; else (an evaluation) a chunk of
    // images at a time through one buffer
    let chunk = if keep {
        d.n.max(1)
    } else {
        d.n.clamp(1, EVAL_CHUNK)
    };
    let img_px = d.h * d.w;
    let mut cols = if keep {
        Buf::new(members * px * kkc)
    } else {
        Buf::new(0)
    };
    let mut out = vec![0.0f32; members * d.pooled() * cout];
    let mut arg = vec![0u8; members * d.pooled() * cout];
    let per_in = d.n * d.h * d.w * d.cin;
    let par = parallelism(members, chunk * img_px, cout, kkc);
    {
        let mut col_parts: Vec<&mut [f32]> = if keep {
            cols.chunks_mut(px * kkc).collect()
        } else {
            Vec::new()
        };
        col_parts.resize_with(members, || &mut []);
        let out_parts: Vec<&mut [f32]> = out.chunks_mut(d.pooled() * cout).collect();
        let arg_parts: Vec<&mut [u8]> = arg.chunks_mut(d.pooled() * cout).collect();
        let work: Vec<_> = col_parts
            .into_iter()
            .zip(out_parts)
            .zip(arg_parts)
            .enumerate()
            .collect();
        let pooled_img = h2 * w2 * cout;
        type Work<'a> = (usize, ((&'a mut [f32], &'a mut [f32]), &'a mut [u8]));
        let run = |(m, ((cols_m, out_m), arg_m)): Work<'_>| {
            let mut pad = Buf::new(padded_len(&d));
            let mut conv = Buf::new(chunk * img_px * cout);
            let mut scratch = if keep {
                Buf::new(0)
            } else {
                Buf::new(chunk * img_px * kkc)
            };
            let xm = &xv[m * per_in..(m + 1) * per_in];
            let mut c0 = 0;
            while c0 < d.n {
                let nc = chunk.min(d.n - c0);
                let part = Dims { n: nc, ..d };
                let cols_c: &mut [f32] = if keep {
                    &mut cols_m[c0 * img_px * kkc..(c0 + nc) * img_px * kkc]
                } else {
                    &mut scratch[..nc * img_px * kkc]
                };
                im2col(
                    &xm[c0 * img_px * d.cin..(c0 + nc) * img_px * d.cin],
                    &part,
                    cols_c,
                    &mut pad,
                );
                matmul(
                    nc * img_px,
                    cout,
                    kkc,
                    &mut conv,
                    cols_c,
                    (kkc as isize, 1),
                    &wv[m * kkc * cout..(m + 1) * kkc * cout],
                    (cout as isize, 1),
                    par,
                );
                pool(
                    &conv,
                    &part,
                    &bv[m * cout..(m + 1) * cout],
                    &mut out_m[c0 * pooled_img..(c0 + nc) * pooled_img],
                    &mut arg_m[c0 * pooled_img..(c0 + nc) * pooled_img],
                );
                c0 += nc;
            }
        };
        if members > 1 && threads() > 1 {
            work.into_par_iter().for_each(run);
        } else {
            work.into_iter().for_each(run);
        }
    }
    let y = tensor_of(out, &[members * d.n, h2, w2, cout]);
    let saved = keep.then(|| Saved {
        dims: d,
        cols: Arc::new(cols),
        arg: Arc::new(arg),
        out: y.clone(),
        w,
    });
    (y, saved)
}

/// The gradients (dx if asked, dw, db) of the block from its output gradient.
fn backward(
    s: &Saved,
    grad: &FlexTensor,
    want_x: bool,
) -> (Option<FlexTensor>, FlexTensor, FlexTensor) {
    let d = s.dims;
    let grad = contiguous(grad);
    let gv = values(&grad);
    let yv = values(&s.out);
    let wv = values(&s.w);
    let (h2, w2) = (d.h / 2, d.w / 2);
    let (px, kkc, cout, pooled) = (d.pixels(), d.kkc(), d.cout, d.pooled());
    let par = parallelism(d.members, kkc, cout, px);
    let par_x = parallelism(d.members, px, kkc, cout);
    let per_in = d.n * d.h * d.w * d.cin;
    let parts = per_member(d.members, |m| {
        // through the ReLU and the pool: dC (zeros but at the winners), db
        let mut dc = Buf::new(px * cout);
        dc.fill(0.0);
        let mut db = vec![0.0f32; cout];
        let base = m * pooled * cout;
        for img in 0..d.n {
            for i2 in 0..h2 {
                for j2 in 0..w2 {
                    let o = ((img * h2 + i2) * w2 + j2) * cout;
                    for c in 0..cout {
                        let y = yv[base + o + c];
                        if !(y > 0.0 || y.is_nan()) {
                            continue;
                        }
                        let g = gv[base + o + c];
                        db[c] += g;
                        let t = s.arg[base + o + c] as usize;
                        let (di, dj) = (t / 2, t % 2);
                        let at = ((img * d.h + 2 * i2 + di) * d.w + 2 * j2 + dj) * cout;
                        dc[at + c] = g;
                    }
                }
            }
        }
        let cols = &s.cols[m * px * kkc..(m + 1) * px * kkc];
        // dW = colsᵀ · dC: [kkc, cout]
        let mut dw = vec![0.0f32; kkc * cout];
        matmul(
            kkc,
            cout,
            px,
            &mut dw,
            cols,
            (1, kkc as isize),
            &dc,
            (cout as isize, 1),
            par,
        );
        let dx = want_x.then(|| {
            // dcols = dC · Wᵀ: [px, kkc]; W is [kkc, cout]
            let wm = &wv[m * kkc * cout..(m + 1) * kkc * cout];
            let mut dcols = Buf::new(px * kkc);
            matmul(
                px,
                kkc,
                cout,
                &mut dcols,
                &dc,
                (cout as isize, 1),
                wm,
                (1, cout as isize),
                par_x,
            );
            let mut dx = vec![0.0f32; per_in];
            let mut pad = Buf::new(padded_len(&d));
            col2im(&dcols, &d, &mut dx, &mut pad);
            dx
        });
        (dx, dw, db)
    });
    let mut dws = Vec::with_capacity(d.members * kkc * cout);
    let mut dbs = Vec::with_capacity(d.members * cout);
    let mut dxs = want_x.then(|| Vec::with_capacity(d.members * per_in));
    for (dx, dw, db) in parts {
        dws.extend_from_slice(&dw);
        dbs.extend_from_slice(&db);
        if let (Some(all), Some(dx)) = (dxs.as_mut(), dx) {
            all.extend_from_slice(&dx);
        }
    }
    (
        dxs.map(|v| tensor_of(v, &[d.members * d.n, d.h, d.w, d.cin])),
        tensor_of(dws, &[d.members, kkc, cout]),
        tensor_of(dbs, &[d.members, cout]),
    )
}

#[derive(Debug)]
struct ConvPoolBackward;

impl Backward<Flex, 3> for ConvPoolBackward {
    type State = Saved;

    fn backward(self, ops: Ops<Self::State, 3>, grads: &mut Gradients, _: &mut Checkpointer) {
        let [node_x, node_w, node_b] = ops.parents;
        let grad = grads.consume::<Flex>(&ops.node);
        let (dx, dw, db) = backward(&ops.state, &grad, node_x.is_some());
        if let (Some(node), Some(dx)) = (node_x, dx) {
            grads.register::<Flex>(node.id, dx);
        }
        if let Some(node) = node_w {
            grads.register::<Flex>(node.id, dw);
        }
        if let Some(node) = node_b {
            grads.register::<Flex>(node.id, db);
        }
    }
}

/// The block as one autodiff op.
pub(super) fn conv_pool_ad(
    x: FloatTensor<Ad>,
    w: FloatTensor<Ad>,
    b: FloatTensor<Ad>,
    kernel: usize,
) -> FloatTensor<Ad> {
    match ConvPoolBackward
        .prepare::<NoCheckpointing>([x.node.clone(), w.node.clone(), b.node.clone()])
        .compute_bound()
        .stateful()
    {
        OpsKind::Tracked(prep) => {
            let (y, saved) = forward(&x.primitive, &w.primitive, &b.primitive, kernel, true);
            prep.finish(saved.expect("kept"), y)
        }
        OpsKind::UnTracked(prep) => {
            let (y, _) = forward(&x.primitive, &w.primitive, &b.primitive, kernel, false);
            prep.finish(y)
        }
    }
}
