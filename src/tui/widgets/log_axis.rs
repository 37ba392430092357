//! Log axes by hand (ratatui has none): the scaling chart plots log2(B) against log10(S); these
//! helpers choose the bounds, the tick positions and their labels (1, 2, 4 … 512, 1K, 2K; 10, 100,
//! 1K steps), and place the labels on terminal columns/rows without overlapping.

/// Formats a power of two compactly: 1, 2, 4 … 512, 1K, 2K … 512K, 1M.
pub fn format_pow2(v: u64) -> String {
    if v >= 1 << 20 && v.is_multiple_of(1 << 20) {
        format!("{}M", v >> 20)
    } else if v >= 1024 && v.is_multiple_of(1024) {
        format!("{}K", v >> 10)
    } else {
        v.to_string()
    }
}

/// Formats a count with SI suffixes and at most 3 significant digits: 10, 200, 1K, 2.5K, 10K, 1M.
pub fn format_si(v: f64) -> String {
    if !v.is_finite() {
        return "–".into();
    }
    let a = v.abs();
    let (x, suffix) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e3 {
        (v / 1e3, "K")
    } else {
        (v, "")
    };
    let ax = x.abs();
    let s = if suffix.is_empty() && a >= 1.0 && (v - v.round()).abs() < 1e-9 {
        format!("{}", v.round() as i64)
    } else if ax >= 100.0 {
        format!("{:.0}", x)
    } else if ax >= 10.0 {
        trim(format!("{:.1}", x))
    } else if ax >= 1.0 {
        trim(format!("{:.2}", x))
    } else if ax == 0.0 {
        "0".into()
    } else {
        format!("{:.2}", x)
    };
    format!("{s}{suffix}")
}

fn trim(s: String) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Bounds of the log2 batch-size axis: whole powers of two around [b_min, b_max],
/// padded by half an octave on each side so end points are not drawn on the frame.
pub fn log2_bounds(b_min: usize, b_max: usize) -> [f64; 2] {
    let lo = (b_min.max(1) as f64).log2().floor();
    let hi = (b_max.max(b_min).max(1) as f64).log2().ceil();
    if hi <= lo {
        [lo - 0.5, lo + 0.5]
    } else {
        [lo - 0.25, hi + 0.25]
    }
}

/// Bounds of the log10 steps axis: whole decades containing [s_min, s_max]
/// (a half decade when they are close), never collapsing to zero height.
pub fn log10_bounds(s_min: f64, s_max: f64) -> [f64; 2] {
    let s_min = s_min.max(1e-12);
    let s_max = s_max.max(s_min);
    let lmin = s_min.log10();
    let lmax = s_max.log10();
    let mut lo = lmin.floor();
    let mut hi = lmax.ceil();
    // Tighten to half decades (…, 3.16·10^k, …) when that still contains the data.
    if lmin - lo >= 0.5 {
        lo += 0.5;
    }
    if hi - lmax >= 0.5 {
        hi -= 0.5;
    }
    if hi - lo < 0.5 {
        hi = lo + 0.5;
    }
    [lo, hi]
}

/// Tick (position in log2 units, label) for every power of two inside the bounds.
pub fn pow2_ticks(bounds: [f64; 2]) -> Vec<(f64, String)> {
    let mut out = Vec::new();
    let mut e = bounds[0].ceil().max(0.0);
    while e <= bounds[1] + 1e-9 {
        out.push((e, format_pow2(1u64 << (e as u32).min(62))));
        e += 1.0;
    }
    out
}

/// Ticks (position in log10 units, label) at decades, plus 2× and 5× when the range is under
/// two decades (so a short axis still has labels).
pub fn log10_ticks(bounds: [f64; 2]) -> Vec<(f64, String)> {
    let span = bounds[1] - bounds[0];
    let mults: &[f64] = if span <= 2.0 {
        &[1.0, 2.0, 5.0]
    } else {
        &[1.0]
    };
    let mut out = Vec::new();
    let mut d = bounds[0].floor();
    while d <= bounds[1] + 1e-9 {
        for &m in mults {
            let p = d + m.log10();
            if p >= bounds[0] - 1e-9 && p <= bounds[1] + 1e-9 {
                out.push((p, format_si(m * 10f64.powf(d))));
            }
        }
        d += 1.0;
    }
    out
}

/// "Nice" linear ticks (1, 2, 2.5, 5 × 10^k steps), at most `max_ticks`, inside [lo, hi].
pub fn linear_ticks(lo: f64, hi: f64, max_ticks: usize) -> Vec<(f64, String)> {
    if hi.partial_cmp(&lo) != Some(std::cmp::Ordering::Greater) || max_ticks < 2 {
        return vec![(lo, format_si(lo))];
    }
    let raw = (hi - lo) / (max_ticks - 1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let mut out = Vec::new();
    let mut v = (lo / step).ceil() * step;
    while v <= hi + step * 1e-9 {
        out.push((v, format_si(if v.abs() < step * 1e-9 { 0.0 } else { v })));
        v += step;
    }
    out
}

/// Maps a value in `bounds` to a cell offset in 0..cells (0 = low end).
pub fn to_cell(v: f64, bounds: [f64; 2], cells: u16) -> u16 {
    if cells <= 1 || bounds[1] <= bounds[0] {
        return 0;
    }
    let f = ((v - bounds[0]) / (bounds[1] - bounds[0])).clamp(0.0, 1.0);
    (f * f64::from(cells - 1)).round() as u16
}

/// Places tick labels along an axis of `cells` columns: each label is centred on its tick and
/// labels that would overlap (with one space between) the previous one are dropped.
/// Returns (start column, label).
pub fn place_x_labels(ticks: &[(f64, String)], bounds: [f64; 2], cells: u16) -> Vec<(u16, String)> {
    let mut out: Vec<(u16, String)> = Vec::new();
    let mut next_free: i32 = 0;
    for (v, label) in ticks {
        let w = label.chars().count() as i32;
        let c = i32::from(to_cell(*v, bounds, cells));
        let start = (c - w / 2).clamp(0, (i32::from(cells) - w).max(0));
        if start < next_free {
            continue;
        }
        out.push((start as u16, label.clone()));
        next_free = start + w + 1;
    }
    out
}

/// Places y tick labels on rows (0 = top) of an axis `cells` rows high, dropping labels that
/// would share a row with an already placed one. Returns (row, label).
pub fn place_y_labels(ticks: &[(f64, String)], bounds: [f64; 2], cells: u16) -> Vec<(u16, String)> {
    let mut out: Vec<(u16, String)> = Vec::new();
    for (v, label) in ticks {
        let row = cells.saturating_sub(1) - to_cell(*v, bounds, cells);
        if out.iter().any(|(r, _)| r.abs_diff(row) < 1) {
            continue;
        }
        out.push((row, label.clone()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pow2_labels() {
        let l: Vec<String> = [1u64, 2, 4, 512, 1024, 2048, 65536, 1 << 20]
            .iter()
            .map(|&v| format_pow2(v))
            .collect();
        assert_eq!(l, ["1", "2", "4", "512", "1K", "2K", "64K", "1M"]);
        assert_eq!(format_pow2(1536), "1536");
    }

    #[test]
    fn si_labels() {
        assert_eq!(format_si(10.0), "10");
        assert_eq!(format_si(100.0), "100");
        assert_eq!(format_si(1000.0), "1K");
        assert_eq!(format_si(2500.0), "2.5K");
        assert_eq!(format_si(20000.0), "20K");
        assert_eq!(format_si(1e6), "1M");
        assert_eq!(format_si(0.5), "0.50");
        assert_eq!(format_si(f64::NAN), "–");
    }

    #[test]
    fn log2_axis_covers_whole_octaves() {
        let b = log2_bounds(16, 2048);
        assert!(
            b[0] < 4.0 && b[0] > 3.0 && b[1] > 11.0 && b[1] < 12.0,
            "{b:?}"
        );
        let t = pow2_ticks(b);
        let labels: Vec<&str> = t.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels, ["16", "32", "64", "128", "256", "512", "1K", "2K"]);
        // non-power-of-two ends still give a usable axis
        let b = log2_bounds(24, 24);
        assert!(b[1] > b[0]);
        assert!(!pow2_ticks(b).is_empty());
    }

    #[test]
    fn log10_axis_and_ticks() {
        let b = log10_bounds(40.0, 3000.0);
        assert_eq!(b, [1.5, 3.5]);
        let t = log10_ticks(b);
        let labels: Vec<&str> = t.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels, ["50", "100", "200", "500", "1K", "2K"]);
        let wide = log10_ticks(log10_bounds(10.0, 100000.0));
        let labels: Vec<&str> = wide.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels, ["10", "100", "1K", "10K", "100K"]);
        // a single value still has height
        let one = log10_bounds(100.0, 100.0);
        assert!(one[1] - one[0] >= 0.5);
    }

    #[test]
    fn linear_ticks_are_nice() {
        let t = linear_ticks(0.0, 1000.0, 5);
        let labels: Vec<&str> = t.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels, ["0", "250", "500", "750", "1K"]);
        assert_eq!(linear_ticks(5.0, 5.0, 5).len(), 1);
    }

    #[test]
    fn labels_never_overlap() {
        let b = log2_bounds(1, 1 << 20);
        let placed = place_x_labels(&pow2_ticks(b), b, 30);
        assert!(placed.len() < 21 && placed.len() >= 4);
        for w in placed.windows(2) {
            let end = w[0].0 as usize + w[0].1.chars().count();
            assert!(end < w[1].0 as usize, "{placed:?}");
        }
        for (c, l) in &placed {
            assert!(*c as usize + l.chars().count() <= 30);
        }
        let yb = log10_bounds(10.0, 1e6);
        let rows = place_y_labels(&log10_ticks(yb), yb, 3);
        assert!(rows.len() <= 3);
        assert_eq!(to_cell(yb[0], yb, 10), 0);
        assert_eq!(to_cell(yb[1], yb, 10), 9);
    }
}
