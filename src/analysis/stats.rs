//! Small statistics shared by the analysis: median, quantiles, the 95 % interval of draws.

/// The median (mean of the two middle values for an even count); None for no values.
pub fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// Linear-interpolated quantile of sorted values (q in [0, 1]).
pub fn quantile_sorted(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let x = q.clamp(0.0, 1.0) * (v.len() - 1) as f64;
    let (i, f) = (x.floor() as usize, x - x.floor());
    if i + 1 < v.len() {
        v[i] + f * (v[i + 1] - v[i])
    } else {
        v[i]
    }
}

/// [`interval95`] of a bootstrap of an estimate, widened to contain the estimate itself: the
/// percentile interval of a biased statistic can miss its own point (a fit's S_min to draws
/// skewed upward by the tail model), and an interval that excludes the number printed beside it
/// reads as an error.
pub fn interval95_about(v: Vec<f64>, point: f64) -> Option<[f64; 2]> {
    interval95(v).map(|[lo, hi]| {
        if point.is_finite() {
            [lo.min(point), hi.max(point)]
        } else {
            [lo, hi]
        }
    })
}

/// 2.5 % and 97.5 % quantiles.
pub fn interval95(mut v: Vec<f64>) -> Option<[f64; 2]> {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    Some([quantile_sorted(&v, 0.025), quantile_sorted(&v, 0.975)])
}
