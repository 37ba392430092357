//! Vectorisable f32 exp, σ and tanh (Cephes' single-precision polynomials, ~1–2 ulp), written
//! branch-free so the compiler vectorises loops over slices; the loops are compiled twice, for AVX2
//! and for the baseline, and chosen at run time. No fused multiply-add is formed (Rust never
//! contracts), so both versions give bitwise the same results. NaN propagates (a diverged trial
//! stays NaN), ±∞ saturate.

const LOG2E: f32 = std::f32::consts::LOG2_E;
const LN2_HI: f32 = 0.693_359_4;
const LN2_LO: f32 = -2.121_944_4e-4;
/// Round-to-nearest of |v| < 2^22 by adding and subtracting 1.5·2^23.
const ROUND: f32 = 12_582_912.0;

/// e^x (x clamped to [−87, 88]: the result stays a normal f32).
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    let x = if x > 88.0 { 88.0 } else { x };
    let x = if x < -87.0 { -87.0 } else { x };
    // t holds round(x·log2 e) in its low mantissa bits; n is that integer as a float
    let t = x * LOG2E + ROUND;
    let n = t - ROUND;
    let r = x - n * LN2_HI - n * LN2_LO;
    let mut p = 1.987_569_1e-4f32;
    p = p * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 1.666_666_5e-1;
    p = p * r + 5e-1;
    p = p * r * r + r + 1.0;
    // 2^n from the exponent bits, in integer arithmetic on t's bits (no float→int conversion, so
    // the loop vectorises): n + 127 is in [1, 254]; a NaN x gives a NaN p
    let bits = t.to_bits().wrapping_sub(ROUND.to_bits()).wrapping_add(127) << 23;
    p * f32::from_bits(bits)
}

/// σ(x) = 1 / (1 + e^−x).
#[inline(always)]
pub fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + exp(-x))
}

/// tanh(x): a polynomial below |x| = 0.625, 1 − 2/(e^{2|x|} + 1) above (Cephes' tanhf).
#[inline(always)]
pub fn tanh(x: f32) -> f32 {
    let a = if x < 0.0 { -x } else { x };
    let big = 1.0 - 2.0 / (exp(2.0 * a) + 1.0);
    let big = if x < 0.0 { -big } else { big };
    let z = x * x;
    let small =
        ((((-5.704_988_7e-3 * z + 2.063_909e-2) * z - 5.373_971_6e-2) * z + 1.333_144_2e-1) * z
            - 3.333_328e-1)
            * z
            * x
            + x;
    if a < 0.625 {
        small
    } else {
        big
    }
}

/// Runs `$body` (a closure-free block over slices) in a function compiled for AVX-512 or AVX2
/// when the CPU has it, else in the baseline one.
macro_rules! simd_dispatch {
    (fn $name:ident($($arg:ident: $ty:ty),*) $body:block) => {
        pub fn $name($($arg: $ty),*) {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f")]
                unsafe fn avx512($($arg: $ty),*) $body
                #[target_feature(enable = "avx2")]
                unsafe fn avx2($($arg: $ty),*) $body
                if std::arch::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the CPU supports AVX-512F (checked above).
                    return unsafe { avx512($($arg),*) };
                }
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: the CPU supports AVX2 (checked above).
                    return unsafe { avx2($($arg),*) };
                }
            }
            #[inline(always)]
            fn base($($arg: $ty),*) $body
            base($($arg),*)
        }
    };
}
pub(crate) use simd_dispatch;

simd_dispatch! {
    fn exp_slice(v: &mut [f32]) {
        for x in v.iter_mut() {
            *x = exp(*x);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ulps(a: f32, b: f32) -> u32 {
        (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs() as u32
    }

    #[test]
    fn exp_sigmoid_tanh_are_within_a_few_ulps_of_libm() {
        let mut x = -80.0f32;
        let (mut worst_e, mut worst_t, mut worst_s) = (0u32, 0f32, 0f32);
        while x < 80.0 {
            let e = exp(x);
            worst_e = worst_e.max(ulps(e, x.exp()));
            worst_t = worst_t.max((tanh(x) - x.tanh()).abs());
            let s = 1.0 / (1.0 + (-x).exp());
            worst_s = worst_s.max((sigmoid(x) - s).abs() / s.max(1e-30));
            x += 0.001_37;
        }
        assert!(worst_e <= 3, "exp: {worst_e} ulps");
        assert!(worst_t <= 2e-7, "tanh: {worst_t}");
        assert!(worst_s <= 1e-6, "sigmoid: {worst_s} relative");
        // small arguments keep tanh's relative accuracy
        for &x in &[1e-6f32, -3e-4, 0.01, 0.3, -0.62] {
            assert!(((tanh(x) - x.tanh()) / x.tanh()).abs() < 1e-6, "{x}");
        }
    }

    #[test]
    fn nan_propagates_and_infinities_saturate() {
        assert!(exp(f32::NAN).is_nan());
        assert!(sigmoid(f32::NAN).is_nan());
        assert!(tanh(f32::NAN).is_nan());
        assert_eq!(tanh(f32::INFINITY), 1.0);
        assert_eq!(tanh(f32::NEG_INFINITY), -1.0);
        let s = sigmoid(f32::NEG_INFINITY);
        assert!((0.0..1e-37).contains(&s), "{s}");
        assert_eq!(sigmoid(f32::INFINITY), 1.0);
        assert!(exp(1000.0).is_finite() && exp(-1000.0) > 0.0);
    }

    #[test]
    fn the_dispatched_loop_equals_the_scalar_function_bitwise() {
        let mut v: Vec<f32> = (0..1000).map(|i| (i as f32 - 500.0) / 7.3).collect();
        let want: Vec<f32> = v.iter().map(|&x| exp(x)).collect();
        exp_slice(&mut v);
        assert_eq!(v, want);
    }
}
