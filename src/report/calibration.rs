//! The calibration stage in words (docs/calibration.md): what it chose and why, for the report,
//! the headless progress and the TUI.

use crate::core::calibrate::{Calibrated, End};
use crate::report::format;

fn fmt_b(b: usize) -> String {
    format::fmt_b(b as f64)
}

/// One line: what the calibration chose (the headless progress prints it when it ends).
pub fn summary_line(c: &Calibrated) -> String {
    let mut parts = Vec::new();
    if let Some(t) = &c.target {
        parts.push(format!(
            "target {} {} {}",
            c.preset.workload.target.metric.name(),
            c.preset.workload.target.metric.relation(),
            trim(t.value)
        ));
    }
    if let (Some(lo), Some(hi)) = (c.batch_sizes.first(), c.batch_sizes.last()) {
        parts.push(format!(
            "batch sizes {}–{} ({})",
            fmt_b(*lo),
            fmt_b(*hi),
            c.batch_sizes.len()
        ));
    }
    let w = &c.preset.workload;
    if c.preset.calibrate.is_some_and(|k| k.budget) {
        parts.push(format!(
            "budget {} steps{}",
            w.step_budget,
            w.max_examples
                .map(|e| format!(" / {e} examples"))
                .unwrap_or_default()
        ));
    }
    if let Some(z) = &c.sizing {
        parts.push(format!(
            "{} trials per B, confirm {}×{}",
            z.trials_per_batch, z.confirm[0], z.confirm[1]
        ));
    }
    format!(
        "calibrated from {} pilot trials: {}",
        c.pilots.iter().map(|p| p.lrs.len()).sum::<usize>(),
        parts.join(", ")
    )
}

/// The lines of the report's calibration section: each choice with the rule that made it.
pub fn lines(c: &Calibrated) -> Vec<String> {
    let mut out = Vec::new();
    let w = &c.preset.workload;
    if let Some(t) = &c.target {
        out.push(format!(
            "target {} {} {}: the best reference-scan curve at B = {} by step {} of its {} (a \
             third of its budget; it reached {} by the end), rounded looser",
            w.target.metric.name(),
            w.target.metric.relation(),
            trim(t.value),
            fmt_b(t.batch_size),
            t.at_step,
            t.budget,
            trim(t.best_value)
        ));
    }
    if let (Some(lo), Some(hi)) = (c.batch_sizes.first(), c.batch_sizes.last()) {
        out.push(format!(
            "batch sizes {}–{} ({} powers of two): {}; {}",
            fmt_b(*lo),
            fmt_b(*hi),
            c.batch_sizes.len(),
            end_text(&c.low, false),
            end_text(&c.high, true)
        ));
    }
    if let Some(z) = &c.sizing {
        out.push(sizing_text(z));
    }
    for p in &c.pilots {
        out.push(format!(
            "  pilot B = {:>6}: {} learning rates {:.2e}–{:.2e}, {}{}",
            fmt_b(p.batch_size),
            p.lrs.len(),
            p.lrs.first().copied().unwrap_or(0.0),
            p.lrs.last().copied().unwrap_or(0.0),
            match (p.steps, p.best_lr) {
                (Some(s), Some(l)) => format!("best η {l:.2e} reached the target at step {s}"),
                _ => format!("none reached the target in {} steps", p.budget),
            },
            if p.diverged.is_empty() {
                String::new()
            } else {
                format!(", {} diverged", p.diverged.len())
            }
        ));
    }
    out
}

/// The study's size and why: the plan, its prediction against the budget, the full plan's.
pub fn sizing_text(z: &crate::core::calibrate::Sizing) -> String {
    use crate::sweep::estimate::human_s;
    let spacing = match z.dense {
        Some([a, b]) => format!(
            ", the ends thinned outside {}–{} (×2 within 4× of the pilots' B_crit; each end's \
             pair kept, then ×4 apart)",
            fmt_b(a),
            fmt_b(b)
        ),
        None => String::new(),
    };
    let left = format!(
        "the {} that the {} budget leaves after the calibration's {}",
        human_s((z.budget_s - z.calibration_s).max(0.0)),
        human_s(z.budget_s),
        human_s(z.calibration_s)
    );
    let why = if z.over {
        format!(
            "the smallest plan, and still predicted {} against {left}",
            human_s(z.predicted_s)
        )
    } else if z.predicted_s >= z.full_s {
        format!(
            "the full plan, predicted {} of {left}",
            human_s(z.predicted_s)
        )
    } else {
        format!(
            "the largest plan predicted to fit: {} of {left} (the full plan — 8 trials, confirm \
             3×5, every power of two — {})",
            human_s(z.predicted_s),
            human_s(z.full_s)
        )
    };
    format!(
        "size: {} trials per batch size, confirm {}×{}{spacing}; {why} (from the pilots' \
         seconds per step)",
        z.trials_per_batch, z.confirm[0], z.confirm[1]
    )
}

/// Why the batch range ends at one end, in words.
pub fn end_text(e: &End, high: bool) -> String {
    match (e, high) {
        (
            End::Observed {
                batch_size,
                ratio,
                b_crit,
            },
            false,
        ) => format!(
            "perfect scaling observed down to B = {} (S ×{:.2} from the pilot above{})",
            fmt_b(*batch_size),
            ratio,
            fitted(*b_crit)
        ),
        (
            End::Observed {
                batch_size,
                ratio,
                b_crit,
            },
            true,
        ) => format!(
            "maximal data parallelism observed by B = {} (S ×{:.2} from the pilot below{})",
            fmt_b(*batch_size),
            ratio,
            fitted(*b_crit)
        ),
        (End::Limit { batch_size, why }, false) => format!(
            "perfect scaling not observed before B = {}: the range is limited by {why}",
            fmt_b(*batch_size)
        ),
        (End::Limit { batch_size, why }, true) => format!(
            "maximal data parallelism not observed by B = {}: the range is limited by {why}",
            fmt_b(*batch_size)
        ),
        (End::Given { batch_size }, false) => format!("from B = {} (given)", fmt_b(*batch_size)),
        (End::Given { batch_size }, true) => format!("to B = {} (given)", fmt_b(*batch_size)),
    }
}

fn fitted(b_crit: Option<f64>) -> String {
    b_crit
        .map(|b| format!("; the pilots' fit puts B_crit at {b:.0}"))
        .unwrap_or_default()
}

/// A value with at most 4 significant digits, no trailing zeros.
fn trim(v: f64) -> String {
    let s = format!("{v:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s.is_empty() || s == "-" {
        format!("{v}")
    } else {
        s.to_string()
    }
}

/// The calibration stage in the report: what it chose and why, and what it cost.
#[derive(serde::Serialize, Clone, Debug, PartialEq)]
pub struct CalibrationSummary {
    /// One line: the choices (`summary_line`).
    pub summary: String,
    /// Each choice with the rule that made it (`lines`).
    pub lines: Vec<String>,
    /// The pilot trials the stage ran.
    pub pilot_trials: usize,
    /// Their summed trial time (s).
    pub pilot_trial_s: f64,
    /// The pilots' share of every trial's time in the run, pilots included (0–1): with trials
    /// run side by side, the share of the run's wall time the calibration took.
    pub share: f64,
}

/// The calibration stage of `c` over the run's `trials` (pilots are those with calibration ids).
pub fn summary(c: &Calibrated, trials: &[crate::core::record::TrialRecord]) -> CalibrationSummary {
    use crate::core::calibrate::CalibrateId;
    let (mut pilots, mut pilot_s, mut all_s) = (0usize, 0.0f64, 0.0f64);
    for t in trials {
        all_s += t.outcome.wall_s;
        if CalibrateId::decode(t.trial_id).is_some() {
            pilots += 1;
            pilot_s += t.outcome.wall_s;
        }
    }
    CalibrationSummary {
        summary: summary_line(c),
        lines: lines(c),
        pilot_trials: pilots,
        pilot_trial_s: pilot_s,
        share: if all_s > 0.0 { pilot_s / all_s } else { 0.0 },
    }
}

/// The price line: "calibration: 40 pilot trials, 21.3 s of trial time (18 % of the run's)".
pub fn price_line(s: &CalibrationSummary) -> String {
    format!(
        "calibration: {} pilot trials, {:.1} s of trial time ({:.0} % of the run's)",
        s.pilot_trials,
        s.pilot_trial_s,
        s.share * 100.0
    )
}

/// Each regime the curve does not show, with why, in one line (never a silent omission): the
/// note that says it is missing, then the calibration's end of the batch range where it stopped
/// at a limit, else where the study's batch sizes stop.
pub fn missing_regimes(
    notes: &[crate::core::analysis::Note],
    calibrated: Option<&Calibrated>,
) -> Vec<String> {
    use crate::core::analysis::Note;
    let mut out = Vec::new();
    for n in notes {
        let high = match n {
            Note::MaximalNotReached { .. } => true,
            Note::PerfectNotObserved { .. } => false,
            _ => continue,
        };
        let why = match calibrated.map(|c| if high { &c.high } else { &c.low }) {
            Some(End::Limit { why, .. }) => format!("the batch range is limited by {why}"),
            Some(End::Observed { batch_size, .. }) => format!(
                "the calibration's pilots showed it by B = {}; the study's curve does not \
                 resolve it (more trials per B narrow it)",
                fmt_b(*batch_size)
            ),
            _ if high => "the study's batch sizes end there (give larger ones, or leave them \
                          out for the lab to calibrate)"
                .to_string(),
            _ => "the study's batch sizes start there (give smaller ones, or leave them out \
                  for the lab to calibrate)"
                .to_string(),
        };
        out.push(format!("{}: {why}", super::notes::note_text(n)));
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::analysis::calibrate::tests::{drive_at, nqm_inputs};
    use crate::workload::spec::OptimizerKind;

    /// The size line says the plan and why: the full plan on a fast machine, a smaller one with
    /// its prediction against what the budget leaves on a slow one.
    #[test]
    fn the_report_says_the_studys_size_and_why() {
        let inp = nqm_inputs(OptimizerKind::Sgd);
        let (fast, _) = drive_at(&inp, 1e-6);
        let lines = super::lines(&fast);
        let size = lines
            .iter()
            .find(|l| l.starts_with("size: "))
            .expect("a size line");
        assert!(
            size.starts_with(
                "size: 8 trials per batch size, confirm 3×5; the full plan, predicted"
            ),
            "{size}"
        );
        assert!(super::summary_line(&fast).ends_with("8 trials per B, confirm 3×5"));
        let (slow, _) = drive_at(&inp, 1e-4);
        let z = slow.sizing.clone().unwrap();
        let size = super::sizing_text(&z);
        assert!(size.contains(&format!("{} trials per batch size", z.trials_per_batch)));
        assert!(
            size.contains("the largest plan predicted to fit")
                || size.contains("the smallest plan, and still predicted"),
            "{size}"
        );
        assert!(
            size.contains("budget leaves after the calibration's"),
            "{size}"
        );
    }
}
