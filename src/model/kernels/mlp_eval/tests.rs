//! `mlp_correct` against the generic ops (`Net::eval_stats` on the rows repeated per member).

use burn::backend::Flex;
use burn::tensor::{Tensor, TensorData};

use crate::model::{Batch, Ctx, InputShape, ModelSpec, Net};

/// `n` 8×8 images with their labels: repeated once per member (the generic path's batch) and once.
fn batches(x: Vec<f32>, y: Vec<i64>, k: usize) -> (Batch<Flex>, Batch<Flex>) {
    let dev = Default::default();
    let n = y.len();
    let rep = Batch::Images {
        x: Tensor::from_data(TensorData::new(x.repeat(k), [k * n, 1, 8, 8]), &dev),
        y: Tensor::from_data(TensorData::new(y.repeat(k), [k * n]), &dev),
    };
    let one = Batch::Images {
        x: Tensor::from_data(TensorData::new(x, [n, 1, 8, 8]), &dev),
        y: Tensor::from_data(TensorData::new(y, [n]), &dev),
    };
    (rep, one)
}

/// A fused group of `k` MLPs (`hidden`), `n` rows of 8×8 images with labels of 10 classes: the
/// generic path's counts (rows repeated per member) and the shared-rows path's.
fn both(hidden: Vec<usize>, k: usize, n: usize, poison: bool) -> (Vec<f64>, Vec<f64>) {
    // pixel values of digits-like images (0..16 scaled), some exact ties in the logits' inputs
    let x: Vec<f32> = (0..n * 64)
        .map(|i| ((i * 7919 % 17) as f32) / 16.0)
        .collect();
    let poison = if poison {
        Poison::NanMember
    } else {
        Poison::None
    };
    both_on(hidden, k, x, poison)
}

/// What to break in the group's first-layer weights.
#[derive(Clone, Copy, PartialEq)]
enum Poison {
    None,
    /// member 1's weights all NaN
    NanMember,
    /// member 1's weight from input 0 (zero on every row of `sparse_rows`) to feature 3: +∞
    InfAtZeroInput,
}

/// Digits-like sparse rows: the border pixels zero on every row, about half of the others zero.
fn sparse_rows(n: usize) -> Vec<f32> {
    (0..n * 64)
        .map(|i| {
            let (r, c) = ((i % 64) / 8, i % 8);
            let h = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 59;
            if r == 0 || c == 0 || c == 7 || h < 14 {
                0.0
            } else {
                (h % 17) as f32 / 16.0
            }
        })
        .collect()
}

/// [`both`] on the rows `x` ([n, 64]).
fn both_on(hidden: Vec<usize>, k: usize, x: Vec<f32>, poison: Poison) -> (Vec<f64>, Vec<f64>) {
    let n = x.len() / 64;
    let dev = Default::default();
    let spec = ModelSpec::Mlp(crate::model::mlp::MlpSpec { hidden });
    let shape = InputShape::images(1, 8, 8, 10);
    let seeds: Vec<u64> = (0..k as u64).map(|s| 11 + 7 * s).collect();
    let mut net = Net::<Flex>::init_group(&spec, shape, &seeds, &dev).unwrap();
    if poison != Poison::None {
        // member 1's first-layer weights NaN: its logits are NaN (argmax: the first NaN); or one
        // infinite weight from an input that is zero on every row (0·∞ = NaN in every sum of that
        // feature: the input cannot be skipped for that member)
        if let Net::Mlp(m) = &mut net {
            let w = m.layers[0].w.val();
            let [kk, din, dout] = w.dims();
            let mut v: Vec<f32> = w.into_data().iter::<f32>().collect();
            if poison == Poison::NanMember {
                for x in &mut v[din * dout..2 * din * dout] {
                    *x = f32::NAN;
                }
            } else {
                v[din * dout + 3] = f32::INFINITY;
            }
            m.layers[0].w = crate::model::layers::param(v, [kk, din, dout], &dev);
        }
    }
    let y: Vec<i64> = (0..n).map(|i| (i * 3 % 10) as i64).collect();
    let c = Ctx::fp32();
    let (rep, one) = batches(x, y, k);
    assert!(net.shares_eval_rows(&c));
    let read = |t: Tensor<Flex, 1>| t.into_data().iter::<f64>().collect::<Vec<_>>();
    let generic = read(net.eval_stats(&rep, &c, false));
    let shared = read(net.correct_shared(&one, &c).expect("the CPU MLP path"));
    (generic, shared)
}

#[test]
fn the_shared_rows_count_what_the_generic_ops_count() {
    // digits' shape (one hidden layer), a deeper MLP, a single layer, a lone trial, odd sizes
    for (hidden, k, n) in [
        (vec![64], 10, 360),
        (vec![64], 1, 359),
        (vec![32, 16], 3, 100),
        (vec![], 4, 77),
        (vec![64], 16, 1),
    ] {
        let (generic, shared) = both(hidden.clone(), k, n, false);
        assert_eq!(generic, shared, "hidden {hidden:?}, {k} members, {n} rows");
        assert!(generic.iter().any(|&c| c > 0.0 && c < n as f64) || n == 1);
    }
}

#[test]
fn a_member_with_nan_weights_counts_as_burn_does_and_leaves_the_others_alone() {
    let (generic, shared) = both(vec![64], 4, 200, true);
    assert_eq!(generic, shared);
    let (clean, _) = both(vec![64], 4, 200, false);
    assert_eq!(generic[0], clean[0]);
    assert_eq!(generic[2..], clean[2..]);
}

/// Sparse rows (the tile kernel skips the inputs a tile's rows all have zero): the same counts, at
/// every shape the kernel serves (hidden 16·j) and one it leaves to gemm (20), a member with NaN
/// weights and one with an infinite weight from an input that is zero everywhere.
#[test]
fn sparse_rows_count_what_the_generic_ops_count() {
    for (hidden, k, n) in [
        (vec![64], 10, 360),
        (vec![32], 3, 100),
        (vec![48], 2, 17),
        (vec![20], 2, 50),
        (vec![64], 4, 16),
    ] {
        let (generic, shared) = both_on(hidden.clone(), k, sparse_rows(n), Poison::None);
        assert_eq!(generic, shared, "hidden {hidden:?}, {k} members, {n} rows");
        assert!(generic.iter().any(|&c| c > 0.0 && c < n as f64));
    }
    for poison in [Poison::NanMember, Poison::InfAtZeroInput] {
        let (generic, shared) = both_on(vec![64], 4, sparse_rows(200), poison);
        assert_eq!(generic, shared);
        let (clean, _) = both_on(vec![64], 4, sparse_rows(200), Poison::None);
        assert_eq!(generic[0], clean[0]);
        assert_eq!(generic[2..], clean[2..]);
        if poison == Poison::InfAtZeroInput {
            // 0·∞: feature 3 of member 1 is NaN on every row (ReLU makes it 0): it counts as
            // Burn counts, whatever that does to member 1
            assert!(shared[1] >= 0.0);
        }
    }
}

/// The prepared tiles are kept per thread for the rows and labels they were made of: other rows,
/// other labels, then the first rows again, each counted as the generic ops count them.
#[test]
fn the_kept_tiles_follow_the_rows_and_labels() {
    let a = sparse_rows(120);
    let mut b = a.clone();
    b[9 * 64 + 20] += 0.25; // one value of one row
    for x in [a.clone(), b, a] {
        let (generic, shared) = both_on(vec![64], 3, x, Poison::None);
        assert_eq!(generic, shared);
    }
}

/// The last layer's logits are `dense::forward`'s bit for bit (rows that are not a multiple of the
/// tile, values with many near-ties).
#[test]
fn the_last_layer_tile_sums_as_gemm_does() {
    use super::{tile_logits, Block, CLASSES, TILE};
    use crate::model::kernels::tensor_of;
    let (n, din) = (37, 64);
    let mut next = crate::model::kernels::test_values();
    let h_rows: Vec<f32> = (0..n * din).map(|_| next().max(0.0)).collect(); // [n, din]
    let w: Vec<f32> = (0..din * CLASSES).map(|_| next()).collect();
    let b: Vec<f32> = (0..CLASSES).map(|_| next()).collect();
    let (y, _) = crate::model::kernels::dense::forward(
        &tensor_of(h_rows.clone(), &[1, n, din]),
        &tensor_of(w.clone(), &[1, din, CLASSES]),
        &tensor_of(b.clone(), &[1, CLASSES]),
        false,
    );
    let want: Vec<f32> = crate::model::kernels::values(&y).to_vec();
    // the same rows feature-major
    let mut fm = vec![0.0f32; n * din];
    for i in 0..n {
        for f in 0..din {
            fm[f * n + i] = h_rows[i * din + f];
        }
    }
    let src = Block {
        data: &fm,
        first: 0,
        features: din,
        n,
    };
    for i0 in (0..n).step_by(TILE) {
        let acc = tile_logits(src, &w, &b, i0);
        for r in 0..TILE.min(n - i0) {
            for j in 0..CLASSES {
                assert_eq!(
                    acc[j][r].to_bits(),
                    want[(i0 + r) * CLASSES + j].to_bits(),
                    "row {} class {j}",
                    i0 + r
                );
            }
        }
    }
}

/// The tile's lane-wise argmax is `argmax_flex` (Burn Flex's) on rows with ties, NaNs (first,
/// later, several) and infinities.
#[test]
fn the_tile_argmax_is_burn_flex_argmax() {
    use super::{argmax_flex, tile_hits, Block, CLASSES, TILE};
    let specials = [
        0.5,
        0.5,
        f32::NAN,
        -1.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        2.0,
        0.0,
        -0.0,
    ];
    let n = 64;
    let mut state = 7u64;
    let mut pick = || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1442695040888963407);
        specials[(state >> 33) as usize % specials.len()]
    };
    // the tile's input is the logits themselves: one feature per class, identity weights, no bias
    let logits: Vec<f32> = (0..n * CLASSES).map(|_| pick()).collect(); // feature-major [C, n]
    let mut w = vec![0.0f32; CLASSES * CLASSES];
    for j in 0..CLASSES {
        w[j * CLASSES + j] = 1.0;
    }
    let b = vec![0.0f32; CLASSES];
    for label in 0..CLASSES as i64 {
        let labels = vec![label; n];
        let src = Block {
            data: &logits,
            first: 0,
            features: CLASSES,
            n,
        };
        let got: usize = (0..n)
            .step_by(TILE)
            .map(|i| tile_hits(src, &w, &b, &labels, i))
            .sum();
        let want = (0..n)
            .filter(|&i| {
                // x·1 + 0·others + 0: a NaN or ∞ logit poisons its row's other logits as well
                let row: Vec<f32> = (0..CLASSES)
                    .map(|j| {
                        let mut acc = 0.0f32;
                        for f in 0..CLASSES {
                            acc = logits[f * n + i].mul_add(w[f * CLASSES + j], acc);
                        }
                        acc + b[j]
                    })
                    .collect();
                argmax_flex(row.into_iter()) as i64 == label
            })
            .count();
        assert_eq!(got, want, "label {label}");
    }
}
