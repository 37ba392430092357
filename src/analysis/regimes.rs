//! The regimes as one ordered partition of the measured range — the one regime model (see the
//! module documentation of `analysis`): isotonic smoothing of ln S, a segmented fit with slopes
//! −1, −½, 0, spans named only with two measured batch sizes in them, boundary intervals from the
//! bootstrap refits, and the cross-check against the S_min(1 + B_crit/B) fit (a note, never a
//! second set of regimes).

use super::fit::fittable;
use super::stats::interval95_about;
use crate::core::analysis::{Fit, Note, Regime, RegimeSpan, SpanEnd};

/// A regime boundary whose 95 % interval spans more than this factor in B (3 doublings) is
/// "poorly determined".
pub const WIDE_BOUNDARY: f64 = 8.0;

/// Magnitude of the middle slope of the segmented model: −½, the slope of S_min(1 + B_crit/B) at
/// B = B_crit, halfway between the ideal slopes −1 and 0. (A free middle slope lets a long, gently
/// falling tail of a noisy curve pass for "flat", merging diminishing returns into maximal data
/// parallelism; a fixed one keeps the three pieces comparable between sweeps.)
pub const MIDDLE_SLOPE: f64 = 0.5;

/// Pool-adjacent-violators: the non-increasing sequence closest to `y` in least squares.
pub fn isotonic_non_increasing(y: &[f64]) -> Vec<f64> {
    // Blocks of (sum, count); merge while a block's mean exceeds its predecessor's.
    let mut blocks: Vec<(f64, usize)> = Vec::with_capacity(y.len());
    for &v in y {
        blocks.push((v, 1));
        while blocks.len() >= 2 {
            let (s1, n1) = blocks[blocks.len() - 1];
            let (s0, n0) = blocks[blocks.len() - 2];
            if s1 / n1 as f64 > s0 / n0 as f64 {
                blocks.pop();
                let last = blocks.len() - 1;
                blocks[last] = (s0 + s1, n0 + n1);
            } else {
                break;
            }
        }
    }
    blocks
        .iter()
        .flat_map(|&(s, n)| std::iter::repeat_n(s / n as f64, n))
        .collect()
}

/// The segmented model of ln S vs ln B: slope −1 below b1, −½ between, 0 above b2 (b1 = b2: a
/// sharp turn, no diminishing-returns band).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Segmented {
    pub b1: f64,
    pub b2: f64,
    /// Magnitude of the middle slope (`MIDDLE_SLOPE`).
    pub m: f64,
    pub rmse_log: f64,
}

impl Segmented {
    /// (end of perfect scaling, start of maximal data parallelism).
    pub fn boundaries(&self) -> (f64, f64) {
        (self.b1, self.b2)
    }
}

/// Least-squares segmented fit (breakpoints on a grid of the measured ln B range plus the measured
/// points) to the isotonic smoothing of ln S. `pts` are (B, S); needs ≥ 3.
pub fn segmented_fit(pts: &[(f64, f64)]) -> Option<Segmented> {
    let mut pts = fittable(pts)?;
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let xs: Vec<f64> = pts.iter().map(|p| p.0.ln()).collect();
    let ys = isotonic_non_increasing(&pts.iter().map(|p| p.1.ln()).collect::<Vec<_>>());
    let (x0, x1) = (xs[0], xs[xs.len() - 1]);
    const G: usize = 48;
    let mut grid: Vec<f64> = (0..=G)
        .map(|i| x0 + (x1 - x0) * i as f64 / G as f64)
        .chain(xs.iter().copied())
        .collect();
    grid.sort_by(|a, b| a.total_cmp(b));
    grid.dedup_by(|a, b| (*a - *b).abs() < 1e-12);
    let n = xs.len() as f64;
    let mut best: Option<(f64, Segmented)> = None;
    for (i, &c1) in grid.iter().enumerate() {
        for &c2 in &grid[i..] {
            // y ≈ Y + m·g(x) + h(x), g = max(0, c2 − max(x, c1)), h = max(0, c1 − x).
            // (g and r computed in place: no allocation per candidate, the same arithmetic —
            // this loop runs ~1,700 times per fit and 200 fits per bootstrap)
            let gr = |(&x, &y): (&f64, &f64)| ((c2 - x.max(c1)).max(0.0), y - (c1 - x).max(0.0));
            let m = MIDDLE_SLOPE;
            let y0 = xs
                .iter()
                .zip(&ys)
                .map(gr)
                .map(|(gv, rv)| rv - m * gv)
                .sum::<f64>()
                / n;
            let sse: f64 = xs
                .iter()
                .zip(&ys)
                .map(gr)
                .map(|(gv, rv)| (rv - y0 - m * gv).powi(2))
                .sum();
            if best.as_ref().is_none_or(|(e, _)| sse < *e - 1e-12) {
                best = Some((
                    sse,
                    Segmented {
                        b1: c1.exp(),
                        b2: c2.exp(),
                        m,
                        rmse_log: (sse / n).sqrt(),
                    },
                ));
            }
        }
    }
    best.map(|(_, s)| s)
}

/// Measured batch sizes within [lo, hi] (5 % tolerance).
fn points_in(bs: &[f64], lo: f64, hi: f64) -> usize {
    bs.iter()
        .filter(|&&b| b >= lo / 1.05 && b <= hi * 1.05)
        .count()
}

fn wide(ci: Option<[f64; 2]>) -> bool {
    ci.is_some_and(|[lo, hi]| hi > WIDE_BOUNDARY * lo)
}

/// The segmented model's boundaries, their intervals and which spans the data support.
struct Partition {
    bs: Vec<f64>,
    p_end: f64,
    m_start: f64,
    p_ci: Option<[f64; 2]>,
    m_ci: Option<[f64; 2]>,
    perfect: bool,
    diminishing: bool,
    maximal: bool,
}

impl Partition {
    fn bmin(&self) -> f64 {
        self.bs[0]
    }
    fn bmax(&self) -> f64 {
        self.bs[self.bs.len() - 1]
    }

    fn spans(&self) -> Vec<RegimeSpan> {
        let (bs, bmin, bmax) = (&self.bs, self.bmin(), self.bmax());
        let (p_end, m_start) = (self.p_end, self.m_start);
        let lo_d = if self.perfect { p_end } else { bmin };
        let hi_d = if self.maximal { m_start } else { bmax };
        let mut spans = Vec::new();
        if self.perfect {
            let hi = if self.diminishing || self.maximal {
                p_end
            } else {
                bmax
            };
            let ci = (hi < bmax).then_some(self.p_ci).flatten();
            spans.push(RegimeSpan {
                regime: Regime::Perfect,
                b_lo: bmin,
                b_hi: hi,
                b_lo_ci: None,
                b_hi_ci: ci,
                points: points_in(bs, bmin, hi),
                uncertain: wide(ci),
            });
        }
        if self.diminishing {
            let lo_ci = self.perfect.then_some(self.p_ci).flatten();
            let hi_ci = self.maximal.then_some(self.m_ci).flatten();
            spans.push(RegimeSpan {
                regime: Regime::Diminishing,
                b_lo: lo_d,
                b_hi: hi_d,
                b_lo_ci: lo_ci,
                b_hi_ci: hi_ci,
                points: points_in(bs, lo_d, hi_d),
                uncertain: wide(lo_ci) || wide(hi_ci),
            });
        }
        if self.maximal {
            let lo = if self.diminishing || self.perfect {
                m_start
            } else {
                bmin
            };
            let ci = (lo > bmin).then_some(self.m_ci).flatten();
            spans.push(RegimeSpan {
                regime: Regime::Maximal,
                b_lo: lo,
                b_hi: bmax,
                b_lo_ci: ci,
                b_hi_ci: None,
                points: points_in(bs, lo, bmax),
                uncertain: wide(ci),
            });
        }
        spans
    }

    /// What the data cannot support, poorly determined boundaries, and the cross-check with the
    /// fit (slope −0.75 at B_crit/3, −0.25 at 3·B_crit).
    fn notes(&self, spans: &[RegimeSpan], fit: Option<&Fit>, notes: &mut Vec<Note>) {
        let (bmin, bmax) = (self.bmin(), self.bmax());
        if !self.perfect {
            notes.push(Note::PerfectNotObserved { b_min: bmin });
        }
        if !self.maximal {
            notes.push(Note::MaximalNotReached { b_max: bmax });
        }
        if self.perfect && self.maximal && !self.diminishing {
            notes.push(Note::NoDiminishingBand {
                perfect_end: self.p_end,
                maximal_start: self.m_start,
            });
        }
        for s in spans {
            for (end, ci) in [(SpanEnd::Start, s.b_lo_ci), (SpanEnd::End, s.b_hi_ci)] {
                if let Some(ci) = ci.filter(|c| wide(Some(*c))) {
                    notes.push(Note::PoorBoundary {
                        regime: s.regime,
                        end,
                        ci,
                    });
                }
            }
        }
        let Some(f) = fit.filter(|f| !f.uncertain) else {
            return;
        };
        let overlap = |a: [f64; 2], b: [f64; 2]| a[0] <= b[1] && b[0] <= a[1];
        let perfect_end = self.perfect && self.p_end < bmax;
        if let (true, Some(ci), Some([lo, hi])) = (perfect_end, self.p_ci, f.b_crit_ci) {
            if !overlap(ci, [lo / 3.0, hi / 3.0]) {
                notes.push(Note::FitPerfectEndDisagrees {
                    b_crit: f.b_crit,
                    b_crit_ci: [lo, hi],
                    segmented: self.p_end,
                });
            }
        }
        let maximal_start = self.maximal && self.m_start > bmin;
        if let (true, Some(ci), Some([lo, hi])) = (maximal_start, self.m_ci, f.b_crit_ci) {
            if !overlap(ci, [lo * 3.0, hi * 3.0]) {
                notes.push(Note::FitMaximalStartDisagrees {
                    b_crit: f.b_crit,
                    b_crit_ci: [lo, hi],
                    segmented: self.m_start,
                });
            }
        }
    }
}

/// The regimes of a sweep as one ordered partition of its measured range (see the module
/// documentation). `pts`: measured (B, S) sorted by B; `boot`: (end of perfect scaling, start of
/// maximal data parallelism) of each bootstrap refit (may be empty); `fit`: the S_min(1 + B_crit/B)
/// fit, for the cross-check. Adds what cannot be supported to `notes`.
pub(crate) fn regimes(
    pts: &[(f64, f64)],
    boot: &[(f64, f64)],
    fit: Option<&Fit>,
    notes: &mut Vec<Note>,
) -> Vec<RegimeSpan> {
    let Some(seg) = segmented_fit(pts) else {
        notes.push(Note::TooFewForRegimes { reached: pts.len() });
        return Vec::new();
    };
    let bs: Vec<f64> = pts.iter().map(|p| p.0).collect();
    let (bmin, bmax) = (bs[0], bs[bs.len() - 1]);
    let (p_end, m_start) = seg.boundaries();
    let perfect = points_in(&bs, bmin, p_end) >= 2;
    let maximal = points_in(&bs, m_start, bmax) >= 2;
    let lo_d = if perfect { p_end } else { bmin };
    let hi_d = if maximal { m_start } else { bmax };
    let part = Partition {
        diminishing: points_in(&bs, lo_d, hi_d) >= 2 && hi_d > lo_d * 1.05,
        p_ci: interval95_about(boot.iter().map(|b| b.0).collect(), p_end),
        m_ci: interval95_about(boot.iter().map(|b| b.1).collect(), m_start),
        bs,
        p_end,
        m_start,
        perfect,
        maximal,
    };
    let spans = part.spans();
    part.notes(&spans, fit, notes);
    spans
}
