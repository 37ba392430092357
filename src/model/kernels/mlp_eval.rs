//! The MLP's error count on the validation set, every member at once, on the CPU: what
//! `Net::eval_stats` computes for an error-rate metric (argmax of the logits against the labels),
//! without the per-member copies of the rows.
//!
//! Every member of a fused group scores the same validation rows, so the first layer is one
//! product X·[W₁ | W₂ | … | W_K] ([N, in] · [in, K·out]), written transposed (feature-major: each
//! feature's N values contiguous). The deeper layers run per member on its block of features, in
//! the same layout; the last one, with 10 classes, is a kernel of its own that keeps a tile of 16
//! rows' 10 logits in registers (gemm would pad the 10 columns of a row-major product to 16, or
//! stream a column-major one through memory) and takes each row's argmax there. Each output is
//! the same ordered sum over the inner dimension as in the per-member path (`dense::forward`: gemm
//! accumulates a fused multiply-add per term from zero), the bias is added after it and ReLU is
//! `max(x, 0)`, as Burn's; the argmax is Burn Flex's (the first NaN, else the first largest): the
//! counts equal the generic ops' bit for bit (tested against them, logits included).

use burn_flex::FlexTensor;

use super::{contiguous, run_tasks, values, Buf};

/// Classes of the last layer's kernel (digits, MNIST, Fashion-MNIST); any other count takes gemm.
const CLASSES: usize = 10;
/// Rows of a tile of that kernel: one AVX-512 vector of f32.
const TILE: usize = 16;

/// The first index of a row's largest value, Burn Flex's `argmax` on a last axis shorter than its
/// SIMD threshold: a NaN wins at once, otherwise a strictly larger value replaces the best.
pub(super) fn argmax_flex(row: impl Iterator<Item = f32>) -> usize {
    let mut best = f32::NAN;
    let mut at = 0;
    for (i, v) in row.enumerate() {
        if v.is_nan() {
            return i;
        }
        if i == 0 || v > best {
            best = v;
            at = i;
        }
    }
    at
}

/// A feature-major block: feature f of the block is `data[(first + f)·n ..][..n]`.
#[derive(Clone, Copy)]
struct Block<'a> {
    data: &'a [f32],
    first: usize,
    features: usize,
    n: usize,
}

impl Block<'_> {
    fn row(&self, f: usize) -> &[f32] {
        &self.data[(self.first + f) * self.n..(self.first + f + 1) * self.n]
    }
}

/// out (feature-major [dout, n]) = the block's rows · w [features, dout] (+ bias, ReLU when
/// `relu`), by gemm: the same ordered sums as `dense::forward`'s.
fn layer(src: Block<'_>, w: &[f32], b: &[f32], dout: usize, relu: bool) -> Buf {
    let n = src.n;
    let mut out = Buf::new(n * dout);
    super::gemm::matmul(
        (n, dout, src.features),
        (&mut out, (1, n as isize)),
        false,
        (&src.data[src.first * n..], (1, n as isize)),
        (w, (dout as isize, 1)),
        gemm::Parallelism::None,
    );
    bias_relu(&mut out, n, b, relu);
    out
}

/// Adds feature f's bias to its n values (feature-major), then ReLU (`max(x, 0)`) when `relu`.
fn bias_relu(out: &mut [f32], n: usize, b: &[f32], relu: bool) {
    for (row, &bb) in out.chunks_exact_mut(n).zip(b) {
        if relu {
            for o in row.iter_mut() {
                *o = (*o + bb).max(0.0);
            }
        } else {
            for o in row.iter_mut() {
                *o += bb;
            }
        }
    }
}

/// `CLASSES` logits of `TILE` rows (from row `i0`; fewer at the end, the rest 0) of a
/// feature-major block · w [features, CLASSES] + b, class-major: logit j of row i is the fused
/// multiply-adds of feature 0, 1, … in order from zero (gemm's sum), then the bias.
#[inline(always)]
fn tile_logits(src: Block<'_>, w: &[f32], b: &[f32], i0: usize) -> [[f32; TILE]; CLASSES] {
    let rows = TILE.min(src.n - i0);
    let mut acc = [[0.0f32; TILE]; CLASSES];
    if rows == TILE {
        // a whole tile: read in place (the accumulators stay in registers)
        for f in 0..src.features {
            let h: &[f32; TILE] = src.row(f)[i0..i0 + TILE].try_into().expect("a tile");
            fma_feature(&mut acc, h, &w[f * CLASSES..(f + 1) * CLASSES]);
        }
    } else {
        for f in 0..src.features {
            let mut h = [0.0f32; TILE];
            h[..rows].copy_from_slice(&src.row(f)[i0..i0 + rows]);
            fma_feature(&mut acc, &h, &w[f * CLASSES..(f + 1) * CLASSES]);
        }
    }
    for (a, &bj) in acc.iter_mut().zip(b) {
        for x in a.iter_mut() {
            *x += bj;
        }
    }
    acc
}

/// acc[j][r] = h[r]·w[j] + acc[j][r], fused, for every class j and row r of a tile.
#[inline(always)]
fn fma_feature(acc: &mut [[f32; TILE]; CLASSES], h: &[f32; TILE], w: &[f32]) {
    let w: &[f32; CLASSES] = w.try_into().expect("a row of the last layer");
    for j in 0..CLASSES {
        for r in 0..TILE {
            acc[j][r] = h[r].mul_add(w[j], acc[j][r]);
        }
    }
}

/// The rows of a tile (from `i0`) whose argmax is their label.
#[inline(always)]
fn tile_hits(src: Block<'_>, w: &[f32], b: &[f32], labels: &[i64], i0: usize) -> usize {
    let acc = tile_logits(src, w, b, i0);
    (0..TILE.min(src.n - i0))
        .filter(|&r| argmax_flex(acc.iter().map(|a| a[r])) as i64 == labels[i0 + r])
        .count()
}

/// Correct predictions of the last layer (`CLASSES` outputs) over every row of the block.
fn last_layer_hits(src: Block<'_>, w: &[f32], b: &[f32], labels: &[i64]) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512f,fma")]
        unsafe fn avx512(src: Block<'_>, w: &[f32], b: &[f32], labels: &[i64]) -> usize {
            (0..src.n)
                .step_by(TILE)
                .map(|i| tile_hits(src, w, b, labels, i))
                .sum()
        }
        #[target_feature(enable = "avx2,fma")]
        unsafe fn avx2(src: Block<'_>, w: &[f32], b: &[f32], labels: &[i64]) -> usize {
            (0..src.n)
                .step_by(TILE)
                .map(|i| tile_hits(src, w, b, labels, i))
                .sum()
        }
        if std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: the CPU has AVX-512F and FMA (checked above).
            return unsafe { avx512(src, w, b, labels) };
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: the CPU has AVX2 and FMA (checked above).
            return unsafe { avx2(src, w, b, labels) };
        }
    }
    // exact without the instructions too (`mul_add` is fused everywhere), only slower
    (0..src.n)
        .step_by(TILE)
        .map(|i| tile_hits(src, w, b, labels, i))
        .sum()
}

/// Correct predictions of a block of logits (feature-major, one feature per class).
fn hits_of_logits(src: Block<'_>, labels: &[i64]) -> usize {
    (0..src.n)
        .filter(|&i| argmax_flex((0..src.features).map(|j| src.row(j)[i])) as i64 == labels[i])
        .count()
}

/// Correct predictions per member: x [N, in] (the rows every member scores), `layers` the
/// (W [K, in, out], b [K, out]) of each dense layer (ReLU between them), `labels` [N].
pub(super) fn correct(
    x: &FlexTensor,
    layers: &[(FlexTensor, FlexTensor)],
    labels: &[i64],
) -> Vec<f32> {
    let x = contiguous(x);
    let layers: Vec<(FlexTensor, FlexTensor)> = layers
        .iter()
        .map(|(w, b)| (contiguous(w), contiguous(b)))
        .collect();
    let ws = layers[0].0.layout().shape();
    let (k, din, d1) = (ws[0], ws[1], ws[2]);
    let n = labels.len();
    let xv = values(&x);
    debug_assert_eq!(xv.len(), n * din);
    let shapes: Vec<(usize, usize)> = layers
        .iter()
        .map(|(w, _)| (w.layout().shape()[1], w.layout().shape()[2]))
        .collect();
    if n > 0 && super::mlp_tile::serves(&shapes) {
        let g = super::mlp_tile::Group {
            w1: values(&layers[0].0),
            b1: values(&layers[0].1),
            w2: values(&layers[1].0),
            b2: values(&layers[1].1),
            din,
            d1,
        };
        return super::mlp_tile::correct(&g, k, xv, labels);
    }
    // [W₁ | … | W_K]: row i holds every member's row i of W
    let w1 = values(&layers[0].0);
    let mut wide = Buf::new(din * k * d1);
    for m in 0..k {
        for i in 0..din {
            wide[i * k * d1 + m * d1..i * k * d1 + (m + 1) * d1]
                .copy_from_slice(&w1[m * din * d1 + i * d1..m * din * d1 + (i + 1) * d1]);
        }
    }
    // feature-major [K·d1, N]: each feature's N values contiguous
    let mut h = Buf::new(n * k * d1);
    super::gemm::matmul(
        (n, k * d1, din),
        (&mut h, (1, n as isize)),
        false,
        (xv, (din as isize, 1)),
        (&wide, ((k * d1) as isize, 1)),
        gemm::Parallelism::None,
    );
    bias_relu(&mut h, n, values(&layers[0].1), layers.len() > 1);
    let h = &*h;
    run_tasks((0..k).collect(), |m| {
        let mut cur: Option<Buf> = None;
        let mut width = d1;
        let mut first = m * d1;
        for (l, (w, b)) in layers.iter().enumerate().skip(1) {
            let dout = w.layout().shape()[2];
            let data: &[f32] = cur.as_deref().unwrap_or(h);
            let src = Block {
                data,
                first,
                features: width,
                n,
            };
            let w_m = &values(w)[m * width * dout..(m + 1) * width * dout];
            let b_m = &values(b)[m * dout..(m + 1) * dout];
            if l + 1 == layers.len() && dout == CLASSES {
                return last_layer_hits(src, w_m, b_m, labels) as f32;
            }
            let out = layer(src, w_m, b_m, dout, l + 1 < layers.len());
            cur = Some(out);
            (width, first) = (dout, 0);
        }
        let data: &[f32] = cur.as_deref().unwrap_or(h);
        hits_of_logits(
            Block {
                data,
                first,
                features: width,
                n,
            },
            labels,
        ) as f32
    })
}

#[cfg(test)]
mod tests;
