//! Ops of our own for the CPU (Burn's Flex backend, fp32), each one autodiff op with a hand-written
//! backward, behind a function that returns `None` on any other backend or precision (the caller then
//! takes Burn's generic ops, which are the reference every kernel is tested against):
//!
//! * [`dense`]: x·W + b per member (one gemm each; the bias added row by row);
//! * [`conv_pool`]: the simple CNN's conv block (im2col of contiguous copies, one gemm per member,
//!   2×2 max-pool keeping its argmax, bias, ReLU); backward: two gemms per member and a col2im of
//!   contiguous adds (no index gathers or scatter-adds);
//! * [`lstm_cell`]: σ/tanh gates, the cell and the hidden state in one pass with vectorised
//!   activations (h and c come out as one [K, N, 2H] tensor, split by the caller's slices);
//! * [`lstm_layer`]: a whole LSTM recurrence (every step's gemm and cell) as one op, with
//!   backpropagation through time in one pass;
//! * [`cross_entropy`]: mean softmax cross-entropy per member (a vectorised log-sum-exp per row;
//!   backward softmax − one-hot);
//! * [`mlp_correct`]: an MLP's correct predictions per member on rows they all score (evaluation:
//!   the first layer of every member as one gemm; digits' one-hidden-layer shape a tile of 16 rows
//!   at a time in registers, skipping the inputs a tile's rows all have zero: `mlp_tile`).
//!
//! Every kernel works on the member axis (K trials fused) and treats members independently: a NaN in
//! one member's rows never reaches another's outputs or gradients.

mod conv;
mod dense;
pub mod flex;
pub mod gemm;
mod lstm;
mod mlp_eval;
mod mlp_tile;
pub mod vmath;
mod xent;

use std::sync::Mutex;

use burn::backend::Flex;
use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor};

use flex::{contiguous, cpu, float_of, is_f32, same, tensor_from, tensor_of, values, Ad, Cpu};

/// Test values in [−1.5, 1.5): a fixed linear congruential stream (the same values on every run).
#[cfg(test)]
fn test_values() -> impl FnMut() -> f32 {
    let mut state = 0x2545_f491_u64;
    move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        ((state >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 3.0
    }
}

/// Scratch buffers reused across steps (im2col columns, saved activations): a step's kernels
/// take what the previous step's backward gave back, instead of fresh pages the kernel must zero.
static POOL: Mutex<Vec<Vec<f32>>> = Mutex::new(Vec::new());
const POOL_CAP: usize = 64;

/// A pooled f32 buffer of a fixed length; back to the pool when dropped. Its initial contents are
/// arbitrary (earlier values): every user writes all of it before reading.
#[derive(Debug)]
pub(crate) struct Buf(Vec<f32>);

impl Buf {
    pub(crate) fn new(len: usize) -> Self {
        let found = {
            let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
            // the smallest buffer that fits (at most twice the size: no hoarding of large ones)
            let best = pool
                .iter()
                .enumerate()
                .filter(|(_, v)| v.capacity() >= len && v.capacity() <= 2 * len.max(1024))
                .min_by_key(|(_, v)| v.capacity())
                .map(|(i, _)| i);
            best.map(|i| pool.swap_remove(i))
        };
        let mut v = found.unwrap_or_default();
        if v.capacity() < len {
            v = vec![0.0; len];
        } else if v.len() >= len {
            v.truncate(len);
        } else {
            v.resize(len, 0.0);
        }
        Buf(v)
    }
}

impl std::ops::Deref for Buf {
    type Target = [f32];
    fn deref(&self) -> &[f32] {
        &self.0
    }
}

impl std::ops::DerefMut for Buf {
    fn deref_mut(&mut self) -> &mut [f32] {
        &mut self.0
    }
}

impl Drop for Buf {
    fn drop(&mut self) {
        let v = std::mem::take(&mut self.0);
        if v.capacity() == 0 {
            return;
        }
        let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
        if pool.len() < POOL_CAP {
            pool.push(v);
        }
    }
}

/// Cuts `all` into consecutive parts of the given lengths (one per task of a kernel).
fn split_parts<T>(mut all: &mut [T], lens: impl IntoIterator<Item = usize>) -> Vec<&mut [T]> {
    let mut parts = Vec::new();
    for len in lens {
        let (head, rest) = std::mem::take(&mut all).split_at_mut(len);
        parts.push(head);
        all = rest;
    }
    parts
}

/// Runs `f` on every item, in parallel when the pool has threads; the results in item order (so
/// that sums over them run in one order whatever the threads).
fn run_tasks<I: Send, T: Send>(items: Vec<I>, f: impl Fn(I) -> T + Sync + Send) -> Vec<T> {
    use rayon::prelude::*;
    if items.len() > 1 && threads() > 1 {
        items.into_par_iter().map(f).collect()
    } else {
        items.into_iter().map(f).collect()
    }
}

/// Threads the calling rayon pool has (1 outside any pool's worker: the global pool's size then).
fn threads() -> usize {
    rayon::current_num_threads().max(1)
}

/// A dense layer ([`crate::model::layers::Dense`]) on the CPU: x [K, M, in], w [K, in, out],
/// b [K, out] → [K, M, out]. `None` off the CPU or outside f32.
pub fn dense<B: Backend>(
    x: Tensor<B, 3>,
    w: Tensor<B, 3>,
    b: Tensor<B, 2>,
) -> Option<Tensor<B, 3>> {
    if !(is_f32(&x) && is_f32(&w) && is_f32(&b)) {
        return None;
    }
    match cpu::<B>()? {
        Cpu::Autodiff => {
            let (x, w, b) = (
                same::<_, Tensor<Ad, 3>>(x).ok()?,
                same::<_, Tensor<Ad, 3>>(w).ok()?,
                same::<_, Tensor<Ad, 2>>(b).ok()?,
            );
            same(tensor_from::<Ad, 3>(dense::dense_ad(
                float_of(x),
                float_of(w),
                float_of(b),
            )))
            .ok()
        }
        Cpu::Inner => {
            let (x, w, b) = (
                same::<_, Tensor<Flex, 3>>(x).ok()?,
                same::<_, Tensor<Flex, 3>>(w).ok()?,
                same::<_, Tensor<Flex, 2>>(b).ok()?,
            );
            let (y, _) = dense::forward(&float_of(x), &float_of(w), &float_of(b), false);
            same(tensor_from::<Flex, 3>(y)).ok()
        }
    }
}

/// The simple CNN's block ([`crate::model::layers::ConvPool`]) on the CPU: x [K·N, H, W, Cin] (NHWC,
/// member-major), w [K, k·k·Cin, Cout], b [K, Cout] → [K·N, H/2, W/2, Cout]. `None` off the CPU or
/// outside f32.
pub fn conv_pool<B: Backend>(
    x: Tensor<B, 4>,
    w: Tensor<B, 3>,
    b: Tensor<B, 2>,
    kernel: usize,
) -> Option<Tensor<B, 4>> {
    if !(is_f32(&x) && is_f32(&w) && is_f32(&b)) {
        return None;
    }
    match cpu::<B>()? {
        Cpu::Autodiff => {
            let (x, w, b) = (
                same::<_, Tensor<Ad, 4>>(x).ok()?,
                same::<_, Tensor<Ad, 3>>(w).ok()?,
                same::<_, Tensor<Ad, 2>>(b).ok()?,
            );
            let y = conv::conv_pool_ad(float_of(x), float_of(w), float_of(b), kernel);
            same(tensor_from::<Ad, 4>(y)).ok()
        }
        Cpu::Inner => {
            let (x, w, b) = (
                same::<_, Tensor<Flex, 4>>(x).ok()?,
                same::<_, Tensor<Flex, 3>>(w).ok()?,
                same::<_, Tensor<Flex, 2>>(b).ok()?,
            );
            let (y, _) = conv::forward(&float_of(x), &float_of(w), &float_of(b), kernel, false);
            same(tensor_from::<Flex, 4>(y)).ok()
        }
    }
}

/// The LSTM cell ([`crate::model::lstm_cell`]) on the CPU: gates [K, N, 4H] (i, f, o, u), c_prev
/// [K, N, H] → (h, c). `None` off the CPU or outside f32.
pub fn lstm_cell<B: Backend>(
    gates: Tensor<B, 3>,
    c_prev: Tensor<B, 3>,
) -> Option<(Tensor<B, 3>, Tensor<B, 3>)> {
    if !(is_f32(&gates) && is_f32(&c_prev)) {
        return None;
    }
    let [k, n, h4] = gates.dims();
    let h = h4 / 4;
    let hc: Tensor<B, 3> = match cpu::<B>()? {
        Cpu::Autodiff => {
            let g = same::<_, Tensor<Ad, 3>>(gates).ok()?;
            let c = same::<_, Tensor<Ad, 3>>(c_prev).ok()?;
            same(tensor_from::<Ad, 3>(lstm::cell_ad(
                float_of(g),
                float_of(c),
            )))
            .ok()?
        }
        Cpu::Inner => {
            let g = same::<_, Tensor<Flex, 3>>(gates).ok()?;
            let c = same::<_, Tensor<Flex, 3>>(c_prev).ok()?;
            let (hc, _) = lstm::forward(&float_of(g), &float_of(c), false);
            same(tensor_from::<Flex, 3>(hc)).ok()?
        }
    };
    let hh = hc.clone().slice([0..k, 0..n, 0..h]);
    let cc = hc.slice([0..k, 0..n, h..2 * h]);
    Some((hh, cc))
}

/// A whole LSTM layer's recurrence on the CPU (`CharLstm`): xg [K, N, T, 4H] (the input
/// projections with bias), wh [K, H, 4H] → the hidden states [K, N, T, H] from a zero state, as one
/// op (each step one gemm and the cell; the backward pass through time in one pass with its own
/// buffers). `None` off the CPU or outside f32.
pub fn lstm_layer<B: Backend>(xg: Tensor<B, 4>, wh: Tensor<B, 3>) -> Option<Tensor<B, 4>> {
    if !(is_f32(&xg) && is_f32(&wh)) {
        return None;
    }
    match cpu::<B>()? {
        Cpu::Autodiff => {
            let x = same::<_, Tensor<Ad, 4>>(xg).ok()?;
            let w = same::<_, Tensor<Ad, 3>>(wh).ok()?;
            same(tensor_from::<Ad, 4>(lstm::layer_ad(
                float_of(x),
                float_of(w),
            )))
            .ok()
        }
        Cpu::Inner => {
            let x = same::<_, Tensor<Flex, 4>>(xg).ok()?;
            let w = same::<_, Tensor<Flex, 3>>(wh).ok()?;
            let (hs, _) = lstm::layer_forward(&float_of(x), &float_of(w), false);
            same(tensor_from::<Flex, 4>(hs)).ok()
        }
    }
}

/// Mean softmax cross-entropy per member ([`crate::model::cross_entropy`]) on the CPU: logits
/// [K, M, C] (f32), targets [K, M] → [K]. `None` off the CPU or outside f32.
pub fn cross_entropy<B: Backend>(
    logits: Tensor<B, 3>,
    y: Tensor<B, 2, Int>,
) -> Option<Tensor<B, 1>> {
    if !is_f32(&logits) {
        return None;
    }
    let ids = || -> Vec<i64> { y.clone().into_data().iter::<i64>().collect() };
    match cpu::<B>()? {
        Cpu::Autodiff => {
            let l = same::<_, Tensor<Ad, 3>>(logits).ok()?;
            same(tensor_from::<Ad, 1>(xent::cross_entropy_ad(
                float_of(l),
                ids(),
            )))
            .ok()
        }
        Cpu::Inner => {
            let l = same::<_, Tensor<Flex, 3>>(logits).ok()?;
            let (loss, _) = xent::forward(&float_of(l), &ids(), false);
            same(tensor_from::<Flex, 1>(loss)).ok()
        }
    }
}

/// Whether `B` is the CPU inference backend (Flex) that [`mlp_correct`] serves.
pub fn serves_inference<B: Backend>() -> bool {
    matches!(cpu::<B>(), Some(Cpu::Inner))
}

/// An MLP's correct predictions per member ([`crate::model::Mlp`], ReLU between the layers, argmax
/// of the logits against `labels`) on rows every member scores: x [N, in], `layers` each
/// (W [K, in, out], b [K, out]) → [K] counts (f32). `None` off the CPU inference backend or outside
/// f32. The same counts as the generic ops on the rows repeated per member (tested).
pub fn mlp_correct<B: Backend>(
    x: Tensor<B, 2>,
    layers: Vec<(Tensor<B, 3>, Tensor<B, 2>)>,
    labels: &[i64],
) -> Option<Tensor<B, 1>> {
    if !matches!(cpu::<B>()?, Cpu::Inner)
        || layers.is_empty()
        || !is_f32(&x)
        || layers.iter().any(|(w, b)| !(is_f32(w) && is_f32(b)))
    {
        return None;
    }
    let k = layers[0].0.dims()[0];
    let x = float_of(same::<_, Tensor<Flex, 2>>(x).ok()?);
    let mut flex = Vec::with_capacity(layers.len());
    for (w, b) in layers {
        let w = float_of(same::<_, Tensor<Flex, 3>>(w).ok()?);
        let b = float_of(same::<_, Tensor<Flex, 2>>(b).ok()?);
        flex.push((w, b));
    }
    let counts = mlp_eval::correct(&x, &flex, labels);
    same(tensor_from::<Flex, 1>(tensor_of(counts, &[k]))).ok()
}
