//! Numbers and outcomes in words: the one formatting of every view (text, TUI, compare).

use crate::core::trial::{NoiseInterval, Outcome};

/// A B_simple interval in words: "180–410", or "≥ 180" where it is unbounded above.
pub fn band(i: &NoiseInterval) -> String {
    match i.hi {
        Some(hi) => format!("{}–{}", num(i.lo), num(hi)),
        None => format!("≥ {}", num(i.lo)),
    }
}

/// Why a B_simple band has no upper end, where it has none: " — no upper end: at 5 of 8 batch
/// sizes the best trial's |G|² was not resolved from 0, so its B_simple is unbounded above".
/// `unbounded`: [best trials whose interval is unbounded above, best trials with an interval].
pub fn unbounded_band_reason(i: &NoiseInterval, unbounded: Option<[usize; 2]>) -> String {
    match (i.hi, unbounded) {
        (None, Some([k, n])) => format!(
            " — no upper end: at {k} of {n} batch sizes the best trial's |G|² (the gradient's \
             signal) was not resolved from 0, so its B_simple is unbounded above"
        ),
        (None, None) => " — no upper end: |G|² not resolved from 0".into(),
        _ => String::new(),
    }
}

/// A value with its 95 % interval: "66.0 [58.8–74.3]" ("66.0" without one; "[58.8–∞)" where
/// it is unbounded above). The one way every comparison shows a number with its uncertainty.
pub fn with_interval(x: f64, ci: Option<[f64; 2]>) -> String {
    match ci {
        Some([lo, hi]) if hi.is_finite() => format!("{} [{}–{}]", num(x), num(lo), num(hi)),
        Some([lo, _]) => format!("{} [{}–∞)", num(x), num(lo)),
        None => num(x),
    }
}

/// A fit's S_min and B_crit with their 95 % intervals: ["68.3 [64.7–71.9]", "27.1 [24.8–30.0]"]
/// (what `compare` shows, and any view that puts one run's fit beside another's).
pub fn fit_with_intervals(f: &crate::core::analysis::Fit) -> [String; 2] {
    [
        with_interval(f.s_min, f.s_min_ci),
        with_interval(f.b_crit, f.b_crit_ci),
    ]
}

/// Steps with their 95 % interval: "933 [850–1040]" ("[850–∞)" unbounded above).
pub fn steps_with_interval(x: u64, ci: Option<[Option<u64>; 2]>) -> String {
    match ci {
        Some([Some(lo), Some(hi)]) => format!("{x} [{lo}–{hi}]"),
        Some([Some(lo), None]) => format!("{x} [{lo}–∞)"),
        _ => x.to_string(),
    }
}

/// Compact number: 3 significant digits, scientific outside [1e-3, 1e5).
pub fn num(x: f64) -> String {
    if !x.is_finite() {
        return "-".into();
    }
    let a = x.abs();
    if a != 0.0 && !(1e-3..1e5).contains(&a) {
        format!("{x:.2e}")
    } else if a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// [`num`], or "-" for nothing.
pub fn opt_num(x: Option<f64>) -> String {
    x.map(num).unwrap_or_else(|| "-".into())
}

/// Thousands separators: 12345.6 → "12,346".
pub fn thousands(x: f64) -> String {
    if !x.is_finite() {
        return "-".into();
    }
    let s = format!("{:.0}", x.abs());
    let mut out = String::new();
    if x < -0.5 {
        out.push('-');
    }
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A batch size (or boundary) in notes and regime lines: whole numbers as such, one decimal
/// below 10.
pub fn fmt_b(b: f64) -> String {
    if b >= 10.0 || (b - b.round()).abs() < 1e-9 {
        format!("{:.0}", b)
    } else {
        format!("{:.1}", b)
    }
}

/// Three significant digits, for ranges in notes.
pub fn fmt_sig(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    if !(1e-2..1e4).contains(&x.abs()) {
        return format!("{x:.2e}");
    }
    let digits = (2 - x.abs().log10().floor() as i32).max(0) as usize;
    format!("{x:.digits$}")
}

/// At most `n` characters, with "…" when cut.
pub fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let t: String = s.chars().take(n - 1).collect();
        format!("{t}…")
    }
}

/// How long an outcome's sentence is: the report's progress lines, or the TUI's lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wording {
    /// "reached at step 120", "stopped early at step 40: the best trial at this B reached by then".
    Full,
    /// "reached at 120", "stopped early at 40" (lists and narrow panels).
    Short,
}

/// One finished trial's outcome in words: the one wording of every view.
pub fn outcome_text(o: &Outcome) -> String {
    outcome_words(o, Wording::Full)
}

/// [`outcome_text`] at the given length.
pub fn outcome_words(o: &Outcome, w: Wording) -> String {
    let full = w == Wording::Full;
    match o {
        Outcome::Reached { step } if full => format!("reached at step {step}"),
        Outcome::Reached { step } => format!("reached at {step}"),
        Outcome::NotReached {
            budget,
            early_stopped: false,
        } if full => format!("did not reach within {budget} steps"),
        Outcome::NotReached {
            budget,
            early_stopped: false,
        } => format!("not reached in {budget}"),
        Outcome::NotReached { budget, .. } if full => {
            format!("stopped early at step {budget}: the best trial at this B reached by then")
        }
        Outcome::NotReached { budget, .. } => format!("stopped early at {budget}"),
        Outcome::Diverged { step } if full => format!("diverged at step {step}"),
        Outcome::Diverged { step } => format!("diverged at {step}"),
        Outcome::Cancelled { step } if full => format!("cancelled at step {step}"),
        Outcome::Cancelled { step } => format!("cancelled at {step}"),
        Outcome::Oom { batch_size, step } if full => {
            format!("out of device memory at B = {batch_size} (step {step})")
        }
        Outcome::Oom { batch_size, .. } => format!("out of memory at B = {batch_size}"),
    }
}
