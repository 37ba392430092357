//! Side-by-side comparison of two or more run logs (e.g. SGD vs momentum on one workload): the
//! comparison (each log's analysis, warnings when they are not comparable) and its text.

use std::fmt::Write;

use super::format::{opt_num, truncate};
use super::{maximal_from, perfect_scaling_extent, regime_at};
use crate::core::analysis::{target_text, Analysis};
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
        Some(d) => serde_json::to_value(d.name)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_else(|| "?".into()),
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
            target: target_text(&l.header.preset.workload.target),
            source: l.header.source.clone(),
            status: l.status().label().into(),
            trials: l.trials.len(),
            analysis: l.analysis(),
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
    let _ = write!(s, "{:>7}", "B");
    for i in 0..c.runs.len() {
        let _ = write!(s, " {:>9} {:<12}", format!("#{} steps", i + 1), "regime");
    }
    s.push('\n');
    for &b in &c.batch_sizes {
        let _ = write!(s, "{b:>7}");
        for r in &c.runs {
            let p = r.analysis.per_batch.iter().find(|p| p.batch_size == b);
            let steps = match p {
                Some(p) => p
                    .steps
                    .map(|x| x.to_string())
                    .unwrap_or_else(|| "none".into()),
                None => "".into(),
            };
            let regime = p
                .and_then(|p| p.steps)
                .and_then(|_| regime_at(&r.analysis, b))
                .map(|r| r.short())
                .unwrap_or("");
            let _ = write!(s, " {steps:>9} {regime:<12}");
        }
        s.push('\n');
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
