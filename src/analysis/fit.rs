//! The perfect-scaling reference, the local segment slopes, and the least-squares fit in log space
//! of S = S_min·(1 + B_crit/B) (McCandlish et al.), with where B_crit lies against the measured
//! batch sizes.

use serde::{Deserialize, Serialize};

use crate::core::analysis::{Fit, Segment};

/// Slope at or below which the curve scales perfectly (the fit's slope −B_crit/(B + B_crit)
/// crosses it at B_crit/3; the regime cross-check uses it).
pub const PERFECT_SLOPE: f64 = -0.75;
/// Slope at or above which more batch no longer saves steps (the fit crosses it at 3·B_crit).
pub const MAXIMAL_SLOPE: f64 = -0.25;

/// Steps on the perfect-scaling line through the anchor (B0, S0): S0·B0/B.
pub fn perfect_scaling_steps(anchor: (usize, u64), b: f64) -> f64 {
    anchor.1 as f64 * anchor.0 as f64 / b
}

/// Local slopes d ln S / d ln B between consecutive measured (B, S) points, sorted by B.
pub fn segments(measured: &[(usize, u64)]) -> Vec<Segment> {
    measured
        .windows(2)
        .map(|w| {
            let (b0, s0) = w[0];
            let (b1, s1) = w[1];
            let slope =
                ((s1 as f64).ln() - (s0 as f64).ln()) / ((b1 as f64).ln() - (b0 as f64).ln());
            Segment {
                b_lo: b0,
                b_hi: b1,
                slope,
            }
        })
        .collect()
}

fn log_sse(pts: &LogPoints, ln_bc: f64) -> (f64, f64) {
    let bc = ln_bc.exp();
    // ln(1 + B_crit/B) once per point (the same values the two sums read), on the stack
    let mut buf = [0.0f64; 64];
    if pts.b.len() > buf.len() {
        let shape: Vec<f64> = pts.b.iter().map(|&b| (1.0 + bc / b).ln()).collect();
        return sse_and_mean(&pts.ln_s, &shape);
    }
    let shape = &mut buf[..pts.b.len()];
    for (l, &b) in shape.iter_mut().zip(&pts.b) {
        *l = (1.0 + bc / b).ln();
    }
    sse_and_mean(&pts.ln_s, shape)
}

/// The least-squares intercept of ln S − shape and its sum of squared residuals: (sse, mean).
fn sse_and_mean(ln_s: &[f64], shape: &[f64]) -> (f64, f64) {
    let n = ln_s.len() as f64;
    let mean = ln_s.iter().zip(shape).map(|(&ls, &l)| ls - l).sum::<f64>() / n;
    let sse = ln_s
        .iter()
        .zip(shape)
        .map(|(&ls, &l)| {
            let r = ls - mean - l;
            r * r
        })
        .sum();
    (sse, mean)
}

/// The fit's points with ln S computed once (the fit evaluates `log_sse` ~200 times).
struct LogPoints {
    b: Vec<f64>,
    ln_s: Vec<f64>,
}

/// The points a log-space fit can use (B and S finite and > 0); None when fewer than 3.
pub(crate) fn fittable(pts: &[(f64, f64)]) -> Option<Vec<(f64, f64)>> {
    let pts: Vec<(f64, f64)> = pts
        .iter()
        .copied()
        .filter(|&(b, s)| b > 0.0 && s > 0.0 && b.is_finite() && s.is_finite())
        .collect();
    (pts.len() >= 3).then_some(pts)
}

/// Least-squares fit in log space of S = S_min·(1 + B_crit/B) to (B, S) points.
/// B_crit is searched over [B_min/1000, B_max·1000]; a value near either end means the data show
/// no bend (pure perfect scaling or pure saturation) — see [`fit_range`].
pub fn fit_scaling(pts: &[(f64, f64)]) -> Option<Fit> {
    fit_core(pts, 600, 80)
}

/// The fit on a grid of `n_grid` cells refined by `n_golden` golden-section steps.
pub(crate) fn fit_core(pts: &[(f64, f64)], n_grid: usize, n_golden: usize) -> Option<Fit> {
    let pts = fittable(pts)?;
    let lp = LogPoints {
        b: pts.iter().map(|p| p.0).collect(),
        ln_s: pts.iter().map(|p| p.1.ln()).collect(),
    };
    let bmin = pts.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let bmax = pts.iter().map(|p| p.0).fold(0.0, f64::max);
    let (lo, hi) = ((bmin / 1000.0).ln(), (bmax * 1000.0).ln());
    let n_grid = n_grid.max(2);
    let xs: Vec<f64> = (0..=n_grid)
        .map(|i| lo + (hi - lo) * i as f64 / n_grid as f64)
        .collect();
    let (mut best_i, mut best) = (0, f64::INFINITY);
    for (i, &x) in xs.iter().enumerate() {
        let (e, _) = log_sse(&lp, x);
        if e < best {
            best = e;
            best_i = i;
        }
    }
    // Golden-section refinement on the bracketing grid cells.
    let (mut a, mut b) = (xs[best_i.saturating_sub(1)], xs[(best_i + 1).min(n_grid)]);
    let g = (5f64.sqrt() - 1.0) / 2.0;
    let mut c = b - g * (b - a);
    let mut d = a + g * (b - a);
    for _ in 0..n_golden {
        if log_sse(&lp, c).0 < log_sse(&lp, d).0 {
            b = d;
        } else {
            a = c;
        }
        c = b - g * (b - a);
        d = a + g * (b - a);
    }
    let x = (a + b) / 2.0;
    let (sse, ln_smin) = log_sse(&lp, x);
    let n = pts.len() as f64;
    let mean_ln = pts.iter().map(|p| p.1.ln()).sum::<f64>() / n;
    let sst: f64 = pts.iter().map(|p| (p.1.ln() - mean_ln).powi(2)).sum();
    let r2 = if sst > 1e-12 {
        1.0 - sse / sst
    } else if sse < 1e-12 {
        1.0
    } else {
        0.0
    };
    Some(Fit {
        s_min: ln_smin.exp(),
        b_crit: x.exp(),
        r2,
        rmse_log: (sse / n).sqrt(),
        b_crit_ci: None,
        s_min_ci: None,
        uncertain: r2 < 0.9,
    })
}

/// Where the fitted B_crit lies relative to the measured batch sizes.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum FitRange {
    Within,
    /// B_crit far above the largest measured B: the curve never bends (all perfect scaling).
    AboveRange,
    /// B_crit far below the smallest measured B: already saturated everywhere.
    BelowRange,
}

/// B_crit more than 4× outside the measured range is an extrapolation, not a measurement.
pub fn fit_range(fit: &Fit, batch_sizes: &[usize]) -> FitRange {
    let lo = batch_sizes.iter().copied().min().unwrap_or(1) as f64;
    let hi = batch_sizes.iter().copied().max().unwrap_or(1) as f64;
    if fit.b_crit > 4.0 * hi {
        FitRange::AboveRange
    } else if fit.b_crit < lo / 4.0 {
        FitRange::BelowRange
    } else {
        FitRange::Within
    }
}
