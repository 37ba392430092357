//! The one-hidden-layer MLP's error count on shared validation rows, a tile of 16 rows at a time
//! with everything in registers (AVX-512): what `mlp_eval::correct` computes for digits' shape
//! ([in ≤ 512] → [hidden, a multiple of 16] → ReLU → [10 classes]), the same counts bit for bit.
//!
//! Per member and tile: the hidden features 16 at a time, each the fused multiply-adds of its
//! inputs in order from zero (gemm's sum over one block of the inner dimension: gemm never splits
//! an inner dimension of at most 512), + bias, `max(·, 0)`; then the 10 logits the same way from
//! the tile's hidden values (kept in L1), + bias; the argmax as Burn Flex takes it (the first NaN,
//! else the first largest: a strictly larger value replaces the best), compared with the labels.
//!
//! Inputs that are zero on every row of a tile are skipped: with a finite weight the term is ±0
//! and adding it leaves the sum as it was (a sum from +0 never becomes −0), so only members whose
//! first-layer weights are all finite skip them. Rows are grouped into tiles by their zero
//! pixels (greedily: a tile's rows share as many zero inputs as they can), which only changes
//! which rows share a tile, never a row's sums: the count is the same in any order. The rows, their
//! tiles and the skip lists are prepared once per validation set and kept per thread (checked
//! against the rows and labels at every call, value for value).

use std::cell::RefCell;
use std::rc::Rc;

/// Rows of a tile: one AVX-512 vector of f32.
const TILE: usize = 16;
/// Classes of the last layer.
const CLASSES: usize = 10;
/// Inputs gemm sums in one block (`gemm_common::cache::kernel_params`: kc ≥ 512 unless k is
/// smaller): within it a sum is one chain of fused multiply-adds.
const MAX_IN: usize = 512;
/// Beyond this many rows the tiles keep the rows' order (the greedy grouping is quadratic).
const GROUP_ROWS: usize = 4096;

/// The validation rows, prepared: per tile its inputs input-major (`x[k·16 + r]`, rows past the
/// end zero), the inputs not zero on all its rows, its labels (−1: a label no class index has)
/// and how many of its rows are real.
struct Prepared {
    rows: Vec<u32>,
    labels: Vec<i64>,
    din: usize,
    tiles: Vec<Tile>,
    /// Every input, in order: what a member whose weights are not all finite sums.
    all: Vec<u32>,
}

struct Tile {
    x: Vec<f32>,
    nz: Vec<u32>,
    labels: [i32; TILE],
    rows: usize,
}

thread_local! {
    static PREPARED: RefCell<Option<(Vec<u32>, Rc<Prepared>)>> = const { RefCell::new(None) };
}

/// Whether this kernel serves a group's shape here: one hidden layer (`layers` = [(W₁, b₁),
/// (W₂, b₂)] as (in, out) pairs), at most 512 inputs, a multiple of 16 hidden units, 10 classes,
/// and a CPU with AVX-512F.
pub(super) fn serves(shapes: &[(usize, usize)]) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        matches!(shapes, [(din, d1), (d1b, CLASSES)]
            if *din <= MAX_IN && *d1 % TILE == 0 && d1 == d1b && *din > 0)
            && std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = shapes;
        false
    }
}

/// The tiles of rows `x` [n, din] with `labels` [n]: from this thread's cache when it holds these
/// very rows and labels, else prepared (and cached).
fn prepared(x: &[f32], labels: &[i64], din: usize) -> Rc<Prepared> {
    PREPARED.with(|c| {
        let mut c = c.borrow_mut();
        if let Some((b, p)) = c.as_ref() {
            let same_rows = b[..] == *bytemuck::cast_slice::<f32, u32>(x);
            if same_rows && p.labels == labels && p.din == din {
                return p.clone();
            }
        }
        let p = Rc::new(prepare(x, labels, din));
        *c = Some((bytemuck::cast_slice(x).to_vec(), p.clone()));
        p
    })
}

/// The rows in tile order: greedily, each tile opens with the remaining row with the most zero
/// inputs and takes the row sharing the most zero inputs with the tile so far (ties: the first).
fn tile_order(x: &[f32], din: usize) -> Vec<u32> {
    let n = x.len() / din;
    if n > GROUP_ROWS {
        return (0..n as u32).collect();
    }
    let words = din.div_ceil(64);
    let zeros: Vec<Vec<u64>> = x
        .chunks_exact(din)
        .map(|row| {
            let mut m = vec![0u64; words];
            for (k, &v) in row.iter().enumerate() {
                if v == 0.0 {
                    m[k / 64] |= 1 << (k % 64);
                }
            }
            m
        })
        .collect();
    let count = |m: &[u64]| m.iter().map(|w| w.count_ones()).sum::<u32>();
    let mut left: Vec<u32> = (0..n as u32).collect();
    let mut order = Vec::with_capacity(n);
    while !left.is_empty() {
        let first = (0..left.len())
            .max_by_key(|&i| (count(&zeros[left[i] as usize]), std::cmp::Reverse(i)))
            .expect("rows left");
        let r = left.remove(first);
        let mut common = zeros[r as usize].clone();
        order.push(r);
        for _ in 1..TILE {
            let Some(next) = (0..left.len()).max_by_key(|&i| {
                let z = &zeros[left[i] as usize];
                let shared: u32 = common
                    .iter()
                    .zip(z)
                    .map(|(a, b)| (a & b).count_ones())
                    .sum();
                (shared, std::cmp::Reverse(i))
            }) else {
                break;
            };
            let r = left.remove(next);
            for (a, b) in common.iter_mut().zip(&zeros[r as usize]) {
                *a &= b;
            }
            order.push(r);
        }
    }
    order
}

fn prepare(x: &[f32], labels: &[i64], din: usize) -> Prepared {
    let rows = tile_order(x, din);
    let tiles = rows
        .chunks(TILE)
        .map(|rs| {
            let mut t = Tile {
                x: vec![0.0; din * TILE],
                nz: Vec::new(),
                labels: [-1; TILE],
                rows: rs.len(),
            };
            for (r, &i) in rs.iter().enumerate() {
                let i = i as usize;
                for k in 0..din {
                    t.x[k * TILE + r] = x[i * din + k];
                }
                t.labels[r] = match labels[i] {
                    l @ 0..=9 => l as i32,
                    _ => -1,
                };
            }
            t.nz = (0..din)
                .filter(|&k| t.x[k * TILE..(k + 1) * TILE].iter().any(|&v| v != 0.0))
                .map(|k| k as u32)
                .collect();
            t
        })
        .collect();
    Prepared {
        rows,
        labels: labels.to_vec(),
        din,
        tiles,
        all: (0..din as u32).collect(),
    }
}

/// Correct predictions of member `m` of the group: `w1` [K, din, d1], `b1` [K, d1], `w2`
/// [K, d1, 10], `b2` [K, 10] (member-major slices); `x` [n, din] and `labels` as
/// [`prepared`] takes them. Only where [`serves`] said so.
pub(super) struct Group<'a> {
    pub w1: &'a [f32],
    pub b1: &'a [f32],
    pub w2: &'a [f32],
    pub b2: &'a [f32],
    pub din: usize,
    pub d1: usize,
}

/// Each member's correct predictions (f32 counts), members in parallel where the caller's pool has
/// threads.
pub(super) fn correct(g: &Group<'_>, k: usize, x: &[f32], labels: &[i64]) -> Vec<f32> {
    let p = prepared(x, labels, g.din);
    debug_assert_eq!(p.rows.len(), labels.len());
    let (tiles, all) = (&p.tiles, &p.all);
    super::run_tasks((0..k).collect(), |m| {
        let w1 = &g.w1[m * g.din * g.d1..(m + 1) * g.din * g.d1];
        // (a fold without an early exit: vectorised)
        let finite = w1.iter().fold(true, |ok, v| {
            ok & (v.to_bits() & 0x7f80_0000 != 0x7f80_0000)
        });
        let member = Member {
            w1,
            b1: &g.b1[m * g.d1..(m + 1) * g.d1],
            w2: &g.w2[m * g.d1 * CLASSES..(m + 1) * g.d1 * CLASSES],
            b2: &g.b2[m * CLASSES..(m + 1) * CLASSES],
            d1: g.d1,
        };
        let mut h = vec![0.0f32; g.d1 * TILE];
        tiles
            .iter()
            .map(|t| {
                let ks = if finite { &t.nz[..] } else { &all[..] };
                // SAFETY: `serves` checked AVX-512F (the only caller's precondition).
                unsafe { tile_hits(&member, t, ks, &mut h) }
            })
            .sum::<usize>() as f32
    })
}

struct Member<'a> {
    w1: &'a [f32],
    b1: &'a [f32],
    w2: &'a [f32],
    b2: &'a [f32],
    d1: usize,
}

/// The hits of one tile for one member: `ks` the inputs summed (in order), `h` scratch of
/// d1·16 values.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn tile_hits(m: &Member<'_>, t: &Tile, ks: &[u32], h: &mut [f32]) -> usize {
    use std::arch::x86_64::*;
    let mut v = [[0.0f32; TILE]; CLASSES];
    tile_logits(m, t, ks, h, &mut v);
    let logit: [__m512; CLASSES] = std::array::from_fn(|j| _mm512_loadu_ps(v[j].as_ptr()));
    let real: __mmask16 = if t.rows == TILE {
        0xffff
    } else {
        ((1u32 << t.rows) - 1) as __mmask16
    };
    let mut nan: __mmask16 = 0;
    for l in &logit {
        nan |= _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(*l, *l);
    }
    if nan & real == 0 {
        let labels = _mm512_loadu_si512(t.labels.as_ptr().cast());
        let mut best = logit[0];
        let mut at = _mm512_setzero_si512();
        for (j, l) in logit.iter().enumerate().skip(1) {
            let gt = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(*l, best);
            best = _mm512_mask_mov_ps(best, gt, *l);
            at = _mm512_mask_mov_epi32(at, gt, _mm512_set1_epi32(j as i32));
        }
        return (_mm512_cmpeq_epi32_mask(at, labels) & real).count_ones() as usize;
    }
    // a NaN among the logits: the rows one by one, as Flex's argmax
    (0..t.rows)
        .filter(|&r| super::mlp_eval::argmax_flex(v.iter().map(|c| c[r])) as i32 == t.labels[r])
        .count()
}

/// The 10 logits of a tile's 16 rows for one member (class-major), as `tile_hits` reads them.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn tile_logits(
    m: &Member<'_>,
    t: &Tile,
    ks: &[u32],
    h: &mut [f32],
    out: &mut [[f32; TILE]; CLASSES],
) {
    use std::arch::x86_64::*;
    let d1 = m.d1;
    let zero = _mm512_setzero_ps();
    // hidden features 16 at a time: acc[f] holds feature f0+f of the tile's 16 rows
    for f0 in (0..d1).step_by(TILE) {
        let mut acc = [zero; TILE];
        for &k in ks {
            let k = k as usize;
            let xv = _mm512_loadu_ps(t.x.as_ptr().add(k * TILE));
            let w = m.w1.as_ptr().add(k * d1 + f0);
            for (f, a) in acc.iter_mut().enumerate() {
                *a = _mm512_fmadd_ps(xv, _mm512_set1_ps(*w.add(f)), *a);
            }
        }
        for (f, a) in acc.iter().enumerate() {
            let v = _mm512_add_ps(*a, _mm512_set1_ps(m.b1[f0 + f]));
            // max(v, 0): 0 where v is NaN (vmaxps returns its second operand then), as f32::max
            _mm512_storeu_ps(h.as_mut_ptr().add((f0 + f) * TILE), _mm512_max_ps(v, zero));
        }
    }
    let mut logit = [zero; CLASSES];
    for f in 0..d1 {
        let hv = _mm512_loadu_ps(h.as_ptr().add(f * TILE));
        let w = m.w2.as_ptr().add(f * CLASSES);
        for (j, l) in logit.iter_mut().enumerate() {
            *l = _mm512_fmadd_ps(hv, _mm512_set1_ps(*w.add(j)), *l);
        }
    }
    for (j, l) in logit.iter().enumerate() {
        _mm512_storeu_ps(
            out[j].as_mut_ptr(),
            _mm512_add_ps(*l, _mm512_set1_ps(m.b2[j])),
        );
    }
}

#[cfg(not(target_arch = "x86_64"))]
unsafe fn tile_hits(_: &Member<'_>, _: &Tile, _: &[u32], _: &mut [f32]) -> usize {
    unreachable!("`serves` is false off x86-64")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows of 8 inputs: the tiles hold every row once, zero-padded, with the inputs not zero on
    /// all their rows; rows sharing zeros share a tile.
    #[test]
    fn the_tiles_hold_every_row_once_and_skip_only_zero_inputs() {
        let din = 8;
        let n = 37;
        let x: Vec<f32> = (0..n * din)
            .map(|i| {
                let (r, k) = (i / din, i % din);
                // odd rows are zero on inputs 0..4, even rows on 4..8
                if (r % 2 == 1) == (k < 4) {
                    0.0
                } else {
                    1.0 + (i % 5) as f32
                }
            })
            .collect();
        let labels: Vec<i64> = (0..n as i64).map(|i| i % 12).collect();
        let p = prepare(&x, &labels, din);
        let mut seen = p.rows.clone();
        seen.sort_unstable();
        assert_eq!(seen, (0..n as u32).collect::<Vec<_>>());
        assert_eq!(p.tiles.iter().map(|t| t.rows).sum::<usize>(), n);
        for (t, rows) in p.tiles.iter().zip(p.rows.chunks(TILE)) {
            for (r, &i) in rows.iter().enumerate() {
                let i = i as usize;
                for k in 0..din {
                    assert_eq!(t.x[k * TILE + r], x[i * din + k]);
                }
                // labels 10 and 11 are no class
                let want = if labels[i] < 10 { labels[i] as i32 } else { -1 };
                assert_eq!(t.labels[r], want);
            }
            for k in 0..din {
                let zero = rows.iter().all(|&i| x[i as usize * din + k] == 0.0);
                assert_eq!(!t.nz.contains(&(k as u32)), zero, "input {k}");
            }
            for r in rows.len()..TILE {
                assert!((0..din).all(|k| t.x[k * TILE + r] == 0.0));
            }
        }
        // 19 odd and 18 even rows: the first two tiles are all odd or all even
        assert_eq!(p.tiles[0].nz.len(), 4);
        assert_eq!(p.tiles[1].nz.len(), 4);
    }

    /// Every logit of every tile is the per-member path's (`dense::forward`, ReLU as `max(x, 0)`,
    /// `dense::forward`) bit for bit, zero inputs skipped or not, on sparse rows whose skipped
    /// inputs carry large weights.
    #[test]
    fn the_tile_logits_are_the_dense_layers_bit_for_bit() {
        use crate::model::kernels::{dense, tensor_of, values};
        if !serves(&[(64, 32), (32, CLASSES)]) {
            return; // no AVX-512 here: the kernel never runs
        }
        let (n, din, d1) = (40, 64, 32);
        let mut next = crate::model::kernels::test_values();
        // rows: input k zero on every row for k % 5 == 0, else zero on about a third of them
        let x: Vec<f32> = (0..n * din)
            .map(|i| {
                let v = next();
                if (i % din) % 5 == 0 || v < -0.5 {
                    0.0
                } else {
                    v.abs()
                }
            })
            .collect();
        let w1: Vec<f32> = (0..din * d1)
            .map(|i| next() * if i % 7 == 0 { 1e6 } else { 1.0 })
            .collect();
        let b1: Vec<f32> = (0..d1).map(|_| next()).collect();
        let w2: Vec<f32> = (0..d1 * CLASSES).map(|_| next()).collect();
        let b2: Vec<f32> = (0..CLASSES).map(|_| next()).collect();
        let (h, _) = dense::forward(
            &tensor_of(x.clone(), &[1, n, din]),
            &tensor_of(w1.clone(), &[1, din, d1]),
            &tensor_of(b1.clone(), &[1, d1]),
            false,
        );
        let h: Vec<f32> = values(&h).iter().map(|v| v.max(0.0)).collect();
        let (y, _) = dense::forward(
            &tensor_of(h, &[1, n, d1]),
            &tensor_of(w2.clone(), &[1, d1, CLASSES]),
            &tensor_of(b2.clone(), &[1, CLASSES]),
            false,
        );
        let want = values(&y);
        let labels = vec![0i64; n];
        let p = prepare(&x, &labels, din);
        assert!(
            p.tiles.iter().all(|t| t.nz.len() < din),
            "the rows have inputs to skip"
        );
        let m = Member {
            w1: &w1,
            b1: &b1,
            w2: &w2,
            b2: &b2,
            d1,
        };
        let all: Vec<u32> = (0..din as u32).collect();
        let mut scratch = vec![0.0f32; d1 * TILE];
        for (t, rows) in p.tiles.iter().zip(p.rows.chunks(TILE)) {
            for ks in [&t.nz[..], &all[..]] {
                let mut out = [[0.0f32; TILE]; CLASSES];
                // SAFETY: `serves` said this CPU has AVX-512F
                unsafe { tile_logits(&m, t, ks, &mut scratch, &mut out) };
                for (r, &i) in rows.iter().enumerate() {
                    for j in 0..CLASSES {
                        let (got, w) = (out[j][r], want[i as usize * CLASSES + j]);
                        assert!(
                            got.to_bits() == w.to_bits(),
                            "row {i} class {j}: {got} vs {w}"
                        );
                    }
                }
            }
        }
    }

    /// A member with an infinite first-layer weight from an input that is zero on every row sums
    /// that input too (0·∞ = NaN, ReLU'd to 0, as the generic ops do); the others skip it.
    #[test]
    fn a_member_with_a_non_finite_weight_skips_nothing() {
        if !serves(&[(64, 32), (32, CLASSES)]) {
            return;
        }
        let (k, n, din, d1) = (2, 48, 64, 32);
        let x: Vec<f32> = (0..n * din)
            .map(|i| {
                if i % din == 0 {
                    0.0
                } else {
                    ((i * 7) % 5) as f32 / 4.0
                }
            })
            .collect();
        let labels = vec![0i64; n];
        let mut w1: Vec<f32> = (0..k * din * d1)
            .map(|i| ((i % 11) as f32 - 5.0) * 1e-3)
            .collect();
        w1[din * d1 + 3] = f32::INFINITY; // member 1: input 0 → feature 3
        let mut b1 = vec![0.0f32; k * d1];
        let mut w2: Vec<f32> = (0..k * d1 * CLASSES)
            .map(|i| ((i % 13) as f32 - 6.0) * 1e-2)
            .collect();
        for m in 0..k {
            b1[m * d1 + 3] = 100.0; // feature 3 large and positive unless it is NaN
            w2[m * d1 * CLASSES + 3 * CLASSES] = 1e3; // … and it votes for class 0
        }
        let b2 = vec![0.0f32; k * CLASSES];
        let g = Group {
            w1: &w1,
            b1: &b1,
            w2: &w2,
            b2: &b2,
            din,
            d1,
        };
        let counts = correct(&g, k, &x, &labels);
        assert_eq!(
            counts[0], n as f32,
            "feature 3 decides every row of member 0"
        );
        assert!(
            counts[1] < n as f32,
            "member 1's feature 3 is NaN, then 0: {counts:?}"
        );
    }

    /// The kept preparation is the one of the rows and labels asked for.
    #[test]
    fn the_kept_preparation_is_of_the_rows_and_labels_asked_for() {
        let x: Vec<f32> = (0..40 * 4).map(|i| (i % 3) as f32).collect();
        let a: Vec<i64> = (0..40).map(|i| i % 10).collect();
        let b: Vec<i64> = (0..40).map(|i| (i + 1) % 10).collect();
        let pa = prepared(&x, &a, 4);
        assert_eq!(pa.labels, a);
        assert!(Rc::ptr_eq(&pa, &prepared(&x, &a, 4)));
        assert_eq!(prepared(&x, &b, 4).labels, b);
        let mut y = x.clone();
        y[17] = 5.0;
        let py = prepared(&y, &b, 4);
        let t = py.rows.iter().position(|&r| r == 4).unwrap();
        assert_eq!(py.tiles[t / TILE].x[TILE + t % TILE], 5.0);
        // -0.0 and 0.0 are different bits: another preparation (the same tiles)
        y[17] = -0.0;
        let pz = prepared(&y, &b, 4);
        assert!(!Rc::ptr_eq(&py, &pz));
    }
}
