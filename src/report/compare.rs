//! Side-by-side comparison of two or more run logs (e.g. SGD vs momentum on one workload): the
//! comparison (each log's analysis, warnings when they are not comparable) and its text.

use std::fmt::Write;

use super::format::{opt_num, truncate};
use super::{maximal_from, perfect_scaling_extent, regime_at, study_of, Run};
use crate::core::analysis::{target_text, Analysis, Readout};
use crate::runlog::reader::RunLog;

#[derive(Clone, Debug, PartialEq)]
pub struct ComparedRun {
    /// File name of the log.
    pub label: String,
    pub preset: String,
    pub optimizer: String,
    pub workload: String,
    pub target: String,
    pub source: String,
    pub status: String,
    pub trials: usize,
    pub analysis: Analysis,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    pub runs: Vec<ComparedRun>,
    /// Union of the batch sizes of all runs, sorted.
    pub batch_sizes: Vec<usize>,
    /// Mismatches that make the comparison questionable (different workload or target).
    pub warnings: Vec<String>,
}

fn workload_label(log: &RunLog) -> String {
    let w = &log.header.preset.workload;
    let data = match &w.dataset {
        Some(d) => d.label(),
        None => "none".into(),
    };
    let model = serde_json::to_value(&w.model)
        .ok()
        .map(|v| v.to_string())
        .unwrap_or_default();
    format!("{data} / {model}")
}

/// Builds the comparison (analyses recomputed from the trial records).
pub fn compare(logs: &[RunLog]) -> Comparison {
    compare_at(logs, None)
}

/// [`compare`] with every log read at `target` (a value of its metric; None: each log's goal).
pub fn compare_at(logs: &[RunLog], target: Option<f64>) -> Comparison {
    let runs: Vec<ComparedRun> = logs
        .iter()
        .map(|l| ComparedRun {
            label: l
                .path
                .file_name()
                .map(|f| f.to_string_lossy().to_string())
                .unwrap_or_else(|| l.path.display().to_string()),
            preset: l.header.preset.name.clone(),
            optimizer: l.header.preset.workload.optimizer.name().into(),
            workload: workload_label(l),
            target: target_text(&study_of(&Run::of_log(l), target).target),
            source: l.header.source.clone(),
            status: l.status().label().into(),
            trials: l.trials.len(),
            analysis: crate::analysis::analyze(&study_of(&Run::of_log(l), target), &l.trials),
        })
        .collect();
    let mut warnings = Vec::new();
    if logs.len() < 2 {
        warnings.push("compare needs at least two run logs".into());
    }
    if let Some(first) = runs.first() {
        for r in &runs[1..] {
            if r.workload != first.workload {
                warnings.push(format!(
                    "different workloads: {} has {}, {} has {}",
                    first.label, first.workload, r.label, r.workload
                ));
            }
            if r.target != first.target {
                warnings.push(format!(
                    "different targets: {} has {}, {} has {} — steps-to-target are not comparable",
                    first.label, first.target, r.label, r.target
                ));
            }
        }
    }
    for (r, l) in runs.iter().zip(logs) {
        if r.status != "complete" {
            warnings.push(format!(
                "{} is {} ({} of {} trials)",
                r.label,
                r.status,
                l.trials.len(),
                l.planned_trials()
            ));
        }
    }
    let mut batch_sizes: Vec<usize> = runs
        .iter()
        .flat_map(|r| r.analysis.per_batch.iter().map(|p| p.batch_size))
        .collect();
    batch_sizes.sort_unstable();
    batch_sizes.dedup();
    Comparison {
        runs,
        batch_sizes,
        warnings,
    }
}

/// `compare` output: summary per run, then the per-B steps side by side with the regime of each
/// run's ordered partition.
pub fn render_compare(c: &Comparison) -> String {
    let mut s = String::new();
    for w in &c.warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    if !c.warnings.is_empty() {
        s.push('\n');
    }
    let _ = writeln!(
        s,
        "{:<3} {:<36} {:<10} {:>9} {:>9} {:>6} {:>9} {:>9} {:>8}  target",
        "#", "run", "optimizer", "S_min", "B_crit", "R²", "perfect≤", "maximal≥", "B_simple"
    );
    for (i, r) in c.runs.iter().enumerate() {
        let a = &r.analysis;
        let _ = writeln!(
            s,
            "{:<3} {:<36} {:<10} {:>9} {:>9} {:>6} {:>9} {:>9} {:>8}  {}",
            i + 1,
            truncate(&r.label, 36),
            r.optimizer,
            opt_num(a.fit.as_ref().map(|f| f.s_min)),
            opt_num(a.fit.as_ref().map(|f| f.b_crit)),
            a.fit
                .as_ref()
                .map(|f| format!("{:.3}", f.r2))
                .unwrap_or_else(|| "-".into()),
            perfect_scaling_extent(a)
                .map(|b| b.to_string())
                .unwrap_or_else(|| "-".into()),
            maximal_from(a)
                .map(|b| b.to_string())
                .unwrap_or_else(|| "-".into()),
            opt_num(a.noise_prediction),
            r.target
        );
    }
    s.push('\n');
    // S(B) as each run's curve reads it: the confirmed seed median (its best trial
    // after the slash) or the best trial
    let confirmed: Vec<usize> = (0..c.runs.len())
        .filter(|&i| c.runs[i].analysis.readout == Readout::Confirmed)
        .collect();
    let w = if confirmed.is_empty() { 9 } else { 11 };
    let _ = write!(s, "{:>7}", "B");
    for i in 0..c.runs.len() {
        let _ = write!(s, " {:>w$} {:<12}", format!("#{} steps", i + 1), "regime");
    }
    s.push('\n');
    for &b in &c.batch_sizes {
        let _ = write!(s, "{b:>7}");
        for r in &c.runs {
            let a = &r.analysis;
            let p = a.per_batch.iter().find(|p| p.batch_size == b);
            let steps = match p {
                Some(p) => match (a.curve_steps(p), a.readout) {
                    (Some(x), Readout::Confirmed) => match p.steps {
                        Some(best) => format!("{x}/{best}"),
                        None => x.to_string(),
                    },
                    (Some(x), Readout::BestTrial) => x.to_string(),
                    (None, _) if p.not_measured => "not-meas".into(),
                    (None, _) => "none".into(),
                },
                None => "".into(),
            };
            let regime = p
                .and_then(|p| a.curve_steps(p))
                .and_then(|_| regime_at(a, b))
                .map(|r| r.short())
                .unwrap_or("");
            let _ = write!(s, " {steps:>w$} {regime:<12}");
        }
        s.push('\n');
    }
    for i in &confirmed {
        let _ = writeln!(
            s,
            "#{} reads the confirmed S(B) (the seed median of the best confirmed configuration; \
             after the slash its best trial, the paper's readout)",
            i + 1
        );
    }
    for (i, r) in c.runs.iter().enumerate() {
        let parts: Vec<String> = super::regime_ranges(&r.analysis)
            .iter()
            .map(|(lo, hi, reg)| format!("{} {lo}–{hi}", reg.short()))
            .collect();
        if !parts.is_empty() {
            let _ = writeln!(s, "#{} regimes: {}", i + 1, parts.join("; "));
        }
    }
    s
}
