//! The simple CNN's conv block on the CPU: "same" k×k convolution (cross-correlation, stride 1),
//! 2×2 max-pool (floor), bias, ReLU — per member, on NHWC activations.
//!
//! The work is cut into tasks of a few images of one member (their im2col columns ~256 KiB, in
//! L2), run in parallel over the pool's threads — a single trial's step too. Forward, per task:
//! im2col (each kernel row of an output pixel is one contiguous run of the input row, or zeros),
//! one gemm `cols · W` into a channel-major [Cout, pixels] plane (gemm vectorises along the
//! destination's unit stride: the pixels, not the 8 or 16 channels), then the pool keeps each
//! output's winning position (0–3) and adds bias and ReLU. Backward, per task: the output gradient
//! through the ReLU is routed to the winning positions (dC, 3/4 zeros), the chunk's columns are
//! built again from the saved input, dW's share = colsᵀ · dC and db's = Σ dZ; for a tracked input,
//! dcols = dC · Wᵀ and col2im adds each run back (contiguous adds). The shares are summed per
//! member in task order, which depends on the shapes alone: the same numbers for a trial alone, in
//! a fused group, on one thread or many.

use std::sync::Arc;

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::NoCheckpointing;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::Flex;
use burn::tensor::ops::FloatTensor;
use burn_flex::FlexTensor;

use super::flex::register_grads;
use super::gemm::matmul;
use super::{contiguous, run_tasks, split_parts, tensor_of, values, Ad, Buf};

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
    /// The block's input (contiguous): the backward pass builds each chunk's im2col columns again
    /// from it (a cache-resident copy, cheaper than keeping every image's columns in memory).
    x: FlexTensor,
    /// Winning position (0–3: row-major in the 2×2 window) of every pooled output, [K·N·H2·W2·Cout].
    arg: Arc<Vec<u8>>,
    /// The block's output (after ReLU), for the ReLU mask.
    out: FlexTensor,
    w: FlexTensor,
}

/// A task's im2col columns stay within this many bytes (in L2 with the task's other buffers).
const CHUNK_BYTES: usize = 256 * 1024;

impl Dims {
    /// Images per task. It depends on the shapes only, so a member's sums over its chunks (dW,
    /// db) run in the same order whatever the number of members or threads: a member of a fused
    /// group gets exactly the numbers of the same trial alone.
    fn chunk(&self) -> usize {
        (CHUNK_BYTES / (self.h * self.w * self.kkc() * 4).max(1)).clamp(1, self.n.max(1))
    }
}

/// Every task of a call as (member, first image, images), member-major and in image order: the
/// tasks' output rows are consecutive, contiguous parts of the whole output.
fn tasks(d: &Dims) -> Vec<(usize, usize, usize)> {
    let ch = d.chunk();
    let mut out = Vec::with_capacity(d.members * d.n.div_ceil(ch));
    for m in 0..d.members {
        let mut i = 0;
        while i < d.n {
            let c = ch.min(d.n - i);
            out.push((m, i, c));
            i += c;
        }
    }
    out
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
fn im2col_runs<const RUN: usize>(pad: &[f32], d: &Dims, cols: &mut [f32], run: usize, ld: usize) {
    let (h, w, cin, k) = (d.h, d.w, d.cin, d.k);
    let p = k / 2;
    let wp = (w + 2 * p) * cin;
    let kkc = d.kkc();
    let run = if RUN > 0 { RUN } else { run };
    for i in 0..h {
        for j in 0..w {
            let row = &mut cols[(i * w + j) * ld..][..ld];
            for a in 0..k {
                let src = &pad[(i + a) * wp + j * cin..][..run];
                copy_run(&mut row[a * run..(a + 1) * run], src);
            }
            row[kkc..].fill(0.0);
        }
    }
}

/// `dst.copy_from_slice(src)` in 16-float pieces: a kernel row of the conv (40 or 80 floats) is
/// a few vector moves, not a call to `memmove` (which it was, at 9 % of a small-CNN step).
#[inline(always)]
fn copy_run(dst: &mut [f32], src: &[f32]) {
    let n = dst.len();
    let (mut d16, mut s16) = (dst.chunks_exact_mut(16), src[..n].chunks_exact(16));
    for (o, v) in (&mut d16).zip(&mut s16) {
        let v: &[f32; 16] = v.try_into().expect("16");
        let o: &mut [f32; 16] = o.try_into().expect("16");
        *o = *v;
    }
    for (o, v) in d16.into_remainder().iter_mut().zip(s16.remainder()) {
        *o = *v;
    }
}

/// im2col of one member: x [N, H, W, Cin] → cols [N·H·W, ld] (the first k·k·Cin of each row;
/// zeros after them; `pad`: scratch of one padded image).
fn im2col(x: &[f32], d: &Dims, cols: &mut [f32], pad: &mut [f32], ld: usize) {
    let per_img = d.h * d.w * d.cin;
    let per_cols = d.h * d.w * ld;
    let run = d.k * d.cin;
    for img in 0..d.n {
        pad_image(&x[img * per_img..(img + 1) * per_img], d, pad);
        let c = &mut cols[img * per_cols..(img + 1) * per_cols];
        match run {
            5 => im2col_runs::<5>(pad, d, c, run, ld),
            15 => im2col_runs::<15>(pad, d, c, run, ld),
            40 => im2col_runs::<40>(pad, d, c, run, ld),
            80 => im2col_runs::<80>(pad, d, c, run, ld),
            160 => im2col_runs::<160>(pad, d, c, run, ld),
            _ => im2col_runs::<0>(pad, d, c, run, ld),
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

/// `a` if `take`, else `b`, without a branch (the baseline x86-64 build has no blend instruction,
/// and the compiler's branch mispredicts on data such as a max-pool's winner or a ReLU mask).
#[inline(always)]
fn pick(take: bool, a: f32, b: f32) -> f32 {
    let m = (take as u32).wrapping_neg();
    f32::from_bits((a.to_bits() & m) | (b.to_bits() & !m))
}

/// 2×2 max-pool (floor) of the convolution's output, channel-major ([Cout, N·H·W]: one plane per
/// channel, as the gemm writes it), then bias and ReLU: `out` [N, H/2, W/2, Cout] and the winner
/// (0–3, the first of equals; a NaN wins) of each output in `arg`. The planes are first turned
/// pixel-major in `t` (blocks of 64 pixels), so that the pool's inner loop runs over the channels,
/// contiguous and branch-free: it vectorises (measured on real activations: ~3.7 ns an output
/// against 7 ns straight from the planes, where the winner's branch mispredicts).
fn pool(conv: &[f32], d: &Dims, bias: &[f32], out: &mut [f32], arg: &mut [u8], t: &mut [f32]) {
    let (h2, w2, cout) = (d.h / 2, d.w / 2, d.cout);
    let px = d.pixels();
    for p0 in (0..px).step_by(64) {
        let p1 = (p0 + 64).min(px);
        for c in 0..cout {
            for (i, v) in conv[c * px + p0..c * px + p1].iter().enumerate() {
                t[(p0 + i) * cout + c] = *v;
            }
        }
    }
    for img in 0..d.n {
        for i2 in 0..h2 {
            for j2 in 0..w2 {
                let o = ((img * h2 + i2) * w2 + j2) * cout;
                let at =
                    |di: usize, dj: usize| ((img * d.h + 2 * i2 + di) * d.w + 2 * j2 + dj) * cout;
                let (r0, r1, r2, r3) = (
                    &t[at(0, 0)..][..cout],
                    &t[at(0, 1)..][..cout],
                    &t[at(1, 0)..][..cout],
                    &t[at(1, 1)..][..cout],
                );
                let (oc, ac) = (&mut out[o..o + cout], &mut arg[o..o + cout]);
                for c in 0..cout {
                    let mut best = r0[c];
                    let mut which = 0u8;
                    for (w, v) in [(1u8, r1[c]), (2, r2[c]), (3, r3[c])] {
                        let take = (v > best) | v.is_nan();
                        best = pick(take, v, best);
                        which ^= (which ^ w) & (take as u8).wrapping_neg();
                    }
                    let z = best + bias[c];
                    oc[c] = pick((z > 0.0) | z.is_nan(), z, 0.0);
                    ac[c] = which;
                }
            }
        }
    }
}

/// The block's forward pass: the output [K·N, H2, W2, Cout] and, with `keep`, what the backward
/// pass needs. The work is cut into tasks of a few images of one member (im2col, one gemm into a
/// channel-major plane per channel, the pool), run in parallel when the pool has threads — also
/// for a single trial, whose step is then spread over the cores.
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
    let (kkc, cout) = (d.kkc(), d.cout);
    let img_px = d.h * d.w;
    let img_in = img_px * d.cin;
    let pooled_img = h2 * w2 * cout;
    let mut out = vec![0.0f32; members * d.pooled() * cout];
    let mut arg = vec![0u8; members * d.pooled() * cout];
    let tasks = tasks(&d);
    let work: Vec<_> = tasks
        .iter()
        .copied()
        .zip(split_parts(
            &mut out,
            tasks.iter().map(|t| t.2 * pooled_img),
        ))
        .zip(split_parts(
            &mut arg,
            tasks.iter().map(|t| t.2 * pooled_img),
        ))
        .collect();
    run_tasks(work, |(((m, i0, c), out_t), arg_t)| {
        let part = Dims { n: c, ..d };
        let cpx = c * img_px;
        let mut pad = Buf::new(padded_len(&d));
        let mut cols = Buf::new(cpx * kkc);
        let mut conv = Buf::new(cout * cpx);
        let x0 = (m * d.n + i0) * img_in;
        im2col(&xv[x0..x0 + c * img_in], &part, &mut cols, &mut pad, kkc);
        matmul(
            (cpx, cout, kkc),
            (&mut conv, (1, cpx as isize)),
            false,
            (&cols, (kkc as isize, 1)),
            (
                &wv[m * kkc * cout..(m + 1) * kkc * cout],
                (cout as isize, 1),
            ),
            gemm::Parallelism::None,
        );
        let mut t = Buf::new(cout * cpx);
        pool(
            &conv,
            &part,
            &bv[m * cout..(m + 1) * cout],
            out_t,
            arg_t,
            &mut t,
        );
    });
    let y = tensor_of(out, &[members * d.n, h2, w2, cout]);
    let saved = keep.then(|| Saved {
        dims: d,
        x: x.clone(),
        arg: Arc::new(arg),
        out: y.clone(),
        w,
    });
    (y, saved)
}

/// The gradients (dx if asked, dw, db) of the block from its output gradient, task by task as the
/// forward pass: dC through the ReLU and the pool (channel-major), the chunk's columns again,
/// dW's share (colsᵀ · dC), and for a tracked input dcols = dC · Wᵀ added back by col2im. The
/// shares of dW and db are summed per member in task order.
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
    let xv = values(&s.x);
    let (h2, w2) = (d.h / 2, d.w / 2);
    let (kkc, cout) = (d.kkc(), d.cout);
    let img_px = d.h * d.w;
    let img_in = img_px * d.cin;
    let pooled_img = h2 * w2 * cout;
    let tasks = tasks(&d);
    let mut dx = want_x.then(|| vec![0.0f32; d.members * d.n * img_in]);
    let dx_parts: Vec<Option<&mut [f32]>> = match dx.as_mut() {
        Some(all) => split_parts(all, tasks.iter().map(|t| t.2 * img_in))
            .into_iter()
            .map(Some)
            .collect(),
        None => tasks.iter().map(|_| None).collect(),
    };
    let work: Vec<_> = tasks.iter().copied().zip(dx_parts).collect();
    let parts = run_tasks(work, |((m, i0, c), dx_t)| {
        let part = Dims { n: c, ..d };
        let cpx = c * img_px;
        // through the ReLU and the pool: dC [Cout, chunk pixels] (zeros but at the winners), db
        let mut dc = Buf::new(cout * cpx);
        dc.fill(0.0);
        let mut db = vec![0.0f32; cout];
        let base = (m * d.n + i0) * pooled_img;
        for img in 0..c {
            for i2 in 0..h2 {
                for j2 in 0..w2 {
                    let o = base + ((img * h2 + i2) * w2 + j2) * cout;
                    let p0 = (img * d.h + 2 * i2) * d.w + 2 * j2;
                    for ch in 0..cout {
                        // branch-free: the ReLU mask is data (a zero written where it is off)
                        let y = yv[o + ch];
                        let g = pick((y > 0.0) | y.is_nan(), gv[o + ch], 0.0);
                        db[ch] += g;
                        let t = s.arg[o + ch] as usize;
                        let p = p0 + (t >> 1) * d.w + (t & 1);
                        dc[ch * cpx + p] = g;
                    }
                }
            }
        }
        let mut pad = Buf::new(padded_len(&d));
        // the columns again, each row padded to a multiple of 16 floats with zeros: gemm then
        // reads colsᵀ in place (with k·k·Cin = 25 or 200 it would first copy all of it)
        let ld = kkc.next_multiple_of(16);
        let mut cols = Buf::new(cpx * ld);
        let x0 = (m * d.n + i0) * img_in;
        im2col(&xv[x0..x0 + c * img_in], &part, &mut cols, &mut pad, ld);
        // this chunk's dW = colsᵀ · dC, stored transposed ([Cout, ld]: unit stride along the
        // longer k·k·Cin; the padding rows come out zero and are dropped)
        let mut dwt = vec![0.0f32; cout * ld];
        matmul(
            (ld, cout, cpx),
            (&mut dwt, (1, ld as isize)),
            false,
            (&cols, (1, ld as isize)),
            (&dc, (1, cpx as isize)),
            gemm::Parallelism::None,
        );
        if let Some(dx_t) = dx_t {
            // dcols = dC · Wᵀ: [chunk pixels, k·k·Cin]; W is [k·k·Cin, Cout]
            let wm = &wv[m * kkc * cout..(m + 1) * kkc * cout];
            let mut dcols = Buf::new(cpx * kkc);
            matmul(
                (cpx, kkc, cout),
                (&mut dcols, (kkc as isize, 1)),
                false,
                (&dc, (1, cpx as isize)),
                (wm, (1, cout as isize)),
                gemm::Parallelism::None,
            );
            col2im(&dcols, &part, dx_t, &mut pad);
        }
        (m, dwt, db, ld)
    });
    let mut dws = vec![0.0f32; d.members * kkc * cout];
    let mut dbs = vec![0.0f32; d.members * cout];
    for (m, dwt, db, ld) in parts {
        let dw_m = &mut dws[m * kkc * cout..(m + 1) * kkc * cout];
        for ch in 0..cout {
            for kk in 0..kkc {
                dw_m[kk * cout + ch] += dwt[ch * ld + kk];
            }
        }
        for (o, v) in dbs[m * cout..(m + 1) * cout].iter_mut().zip(&db) {
            *o += *v;
        }
    }
    (
        dx.map(|v| tensor_of(v, &[d.members * d.n, d.h, d.w, d.cin])),
        tensor_of(dws, &[d.members, kkc, cout]),
        tensor_of(dbs, &[d.members, cout]),
    )
}

#[derive(Debug)]
struct ConvPoolBackward;

impl Backward<Flex, 3> for ConvPoolBackward {
    type State = Saved;

    fn backward(self, ops: Ops<Self::State, 3>, grads: &mut Gradients, _: &mut Checkpointer) {
        let grad = grads.consume::<Flex>(&ops.node);
        let (dx, dw, db) = backward(&ops.state, &grad, ops.parents[0].is_some());
        register_grads!(grads, ops.parents, [dx, Some(dw), Some(db)]);
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
