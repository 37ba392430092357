//! The one wrapper around `gemm::gemm` that every CPU kernel (and `bench`'s machine rate) calls:
//! dst = lhs·rhs, or dst += lhs·rhs, on strided row-major-or-not operands given as a slice and its
//! (row stride, column stride). Each operand's last element is checked against its slice with
//! `assert!` before the unsafe call, in release builds too: a wrong shape is a panic here, never a
//! read or write outside a buffer.
//!
//! gemm vectorises along the destination's unit-stride dimension: give it the long one (a
//! convolution's pixels, not its 8 or 16 channels).

use std::mem::MaybeUninit;

pub use gemm::Parallelism;

/// An operand's (row stride, column stride), in elements.
pub type Strides = (isize, isize);

/// The offset of the last element of a rows×cols operand (both > 0) with these strides.
fn last(rows: usize, cols: usize, (rs, cs): Strides) -> isize {
    (rows - 1) as isize * rs + (cols - 1) as isize * cs
}

/// Panics unless each operand of an m×k by k×n product into an m×n destination lies inside its
/// slice (strides non-negative, the last element addressed below the slice's length).
#[allow(clippy::too_many_arguments)]
fn check(
    (m, n, k): (usize, usize, usize),
    dst: usize,
    dst_s: Strides,
    lhs: usize,
    lhs_s: Strides,
    rhs: usize,
    rhs_s: Strides,
) {
    for (rs, cs) in [dst_s, lhs_s, rhs_s] {
        assert!(rs >= 0 && cs >= 0, "gemm: negative stride ({rs}, {cs})");
    }
    assert!(
        last(m, n, dst_s) < dst as isize,
        "gemm: destination out of bounds"
    );
    if k > 0 {
        assert!(last(m, k, lhs_s) < lhs as isize, "gemm: lhs out of bounds");
        assert!(last(k, n, rhs_s) < rhs as isize, "gemm: rhs out of bounds");
    }
}

/// dst = lhs[m×k] · rhs[k×n] into memory that need not be initialised: gemm writes every element
/// of the m×n destination and reads none.
#[allow(clippy::too_many_arguments)]
pub fn matmul_uninit(
    m: usize,
    n: usize,
    k: usize,
    dst: &mut [MaybeUninit<f32>],
    dst_s: Strides,
    lhs: &[f32],
    lhs_s: Strides,
    rhs: &[f32],
    rhs_s: Strides,
    par: Parallelism,
) {
    let len = dst.len();
    // SAFETY: the pointer is valid for `len` elements; the destination is not read (`add` off),
    // so uninitialised memory is fine.
    unsafe {
        run(
            (m, n, k),
            (dst.as_mut_ptr().cast(), len, dst_s),
            false,
            (lhs, lhs_s),
            (rhs, rhs_s),
            par,
        )
    }
}

/// dst = lhs·rhs, or dst += lhs·rhs when `add`, for (m, n, k) = the m×k by k×n product.
pub fn matmul(
    mnk: (usize, usize, usize),
    (dst, dst_s): (&mut [f32], Strides),
    add: bool,
    lhs: (&[f32], Strides),
    rhs: (&[f32], Strides),
    par: Parallelism,
) {
    let len = dst.len();
    // SAFETY: the pointer is valid (and initialised) for `len` elements.
    unsafe { run(mnk, (dst.as_mut_ptr(), len, dst_s), add, lhs, rhs, par) }
}

/// gemm::gemm with (row, column) strides after `check`: dst = lhs·rhs (+ dst when `add`).
///
/// # Safety
/// `dst` must be valid for writes of `len` elements (and initialised, for reads, when `add`).
unsafe fn run(
    (m, n, k): (usize, usize, usize),
    (dst, len, (dst_rs, dst_cs)): (*mut f32, usize, Strides),
    add: bool,
    (lhs, (lhs_rs, lhs_cs)): (&[f32], Strides),
    (rhs, (rhs_rs, rhs_cs)): (&[f32], Strides),
    par: Parallelism,
) {
    if m == 0 || n == 0 {
        return;
    }
    check(
        (m, n, k),
        len,
        (dst_rs, dst_cs),
        lhs.len(),
        (lhs_rs, lhs_cs),
        rhs.len(),
        (rhs_rs, rhs_cs),
    );
    // SAFETY: `check` bounds the last element each operand reads or writes (strides >= 0) by its
    // length, and the caller vouches for the destination's.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst,
            dst_cs,
            dst_rs,
            add,
            lhs.as_ptr(),
            lhs_cs,
            lhs_rs,
            rhs.as_ptr(),
            rhs_cs,
            rhs_rs,
            if add { 1.0 } else { 0.0 },
            1.0,
            false,
            false,
            false,
            par,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference product, element by element.
    fn naive(m: usize, n: usize, k: usize, a: &[f32], b: &[f32]) -> Vec<f32> {
        let mut c = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                c[i * n + j] = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
            }
        }
        c
    }

    #[test]
    fn write_add_and_transposed_operands_match_the_reference() {
        let (m, n, k) = (3, 5, 4);
        let a: Vec<f32> = (0..m * k).map(|i| i as f32 * 0.5 - 2.0).collect();
        let b: Vec<f32> = (0..k * n).map(|i| 1.0 - i as f32 * 0.25).collect();
        let want = naive(m, n, k, &a, &b);
        let rows = |c: usize| (c as isize, 1);
        let none = Parallelism::None;
        // the destination is not read: NaN there must not leak into the product
        let mut c = vec![f32::NAN; m * n];
        for add in [false, true] {
            let (a, b) = ((&a[..], rows(k)), (&b[..], rows(n)));
            matmul((m, n, k), (&mut c, rows(n)), add, a, b, none);
        }
        assert_eq!(c, want.iter().map(|v| 2.0 * v).collect::<Vec<_>>());
        // aᵀ stored column-major: the same product read through swapped strides
        let at: Vec<f32> = (0..k * m).map(|i| a[(i % m) * k + i / m]).collect();
        let mut u = vec![MaybeUninit::uninit(); m * n];
        matmul_uninit(
            m,
            n,
            k,
            &mut u,
            rows(n),
            &at,
            (1, m as isize),
            &b,
            rows(n),
            none,
        );
        // SAFETY: gemm wrote every element
        let u: Vec<f32> = u.into_iter().map(|v| unsafe { v.assume_init() }).collect();
        assert_eq!(u, want);
    }

    #[test]
    #[should_panic(expected = "lhs out of bounds")]
    fn a_short_operand_is_a_panic_not_a_read_past_it() {
        let mut c = vec![0.0; 4];
        let s = |r: isize| (r, 1);
        matmul(
            (2, 2, 3),
            (&mut c, s(2)),
            false,
            (&[1.0; 5], s(3)),
            (&[1.0; 6], s(2)),
            Parallelism::None,
        );
    }

    #[test]
    #[should_panic(expected = "destination out of bounds")]
    fn a_short_destination_is_a_panic() {
        let mut c = vec![0.0; 3];
        matmul(
            (2, 2, 1),
            (&mut c, (2, 1)),
            true,
            (&[1.0; 2], (1, 1)),
            (&[1.0; 2], (2, 1)),
            Parallelism::None,
        );
    }
}
