//! Side-by-side comparison of two or more run logs (e.g. SGD vs momentum on one workload): the
//! comparison (each log's analysis, warnings when they are not comparable) and its text.

use std::fmt::Write;

use super::format::{fit_with_intervals, steps_with_interval, with_interval};
use super::notes::withheld_text;
use super::text::regimes_line;
use super::{maximal_from, perfect_scaling_extent, regime_at, study_of, Run};
use crate::core::analysis::{target_text, Analysis, BatchPoint, Readout};
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
            let c = l.stage_counts();
            warnings.push(format!(
                "{} is {} ({} of {} trials{})",
                r.label,
                r.status,
                l.trials.len(),
                c.planned().max(l.trials.len()),
                if c.staged() {
                    format!(": {}", c.text())
                } else {
                    String::new()
                }
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

/// A table of text cells, each column as wide as its widest cell (nothing is cut), column `i`
/// right-aligned when `right[i]`.
fn table(rows: &[Vec<String>], right: &[bool]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let width: Vec<usize> = (0..cols)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut s = String::new();
    for r in rows {
        let mut line = String::new();
        for (i, c) in r.iter().enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            let w = width[i];
            if right.get(i).copied().unwrap_or(false) {
                let _ = write!(line, "{c:>w$}");
            } else {
                let _ = write!(line, "{c:<w$}");
            }
        }
        let _ = writeln!(s, "{}", line.trim_end());
    }
    s
}

/// The fit's S_min and B_crit with their 95 % intervals, R², or "-" each.
fn fit_cells(a: &Analysis) -> [String; 3] {
    match &a.fit {
        Some(f) => {
            let [s_min, b_crit] = fit_with_intervals(f);
            let r2 = format!("{:.3}{}", f.r2, if f.uncertain { " uncertain" } else { "" });
            [s_min, b_crit, r2]
        }
        None => ["-".into(), "-".into(), "-".into()],
    }
}

/// The median B_simple of the best trials with its band ("145 [120–200]", "145 [120–∞)").
fn noise_cell(a: &Analysis) -> String {
    match a.noise_prediction {
        Some(n) => with_interval(
            n,
            a.noise_interval
                .map(|i| [i.lo, i.hi.unwrap_or(f64::INFINITY)]),
        ),
        None => "-".into(),
    }
}

/// S(B) at `b` as run `a`'s curve reads it, with its 95 % interval ("933 [850–1040]").
fn steps_cell(a: &Analysis, p: Option<&BatchPoint>) -> String {
    let Some(p) = p else {
        return String::new();
    };
    match a.curve_steps(p) {
        Some(x) => {
            let ci = match a.readout {
                Readout::BestTrial => p.steps_ci.map(|[lo, hi]| [Some(lo), Some(hi)]),
                Readout::Confirmed => p
                    .confirmed
                    .as_ref()
                    .and_then(|c| c.steps_ci)
                    .map(|ci| [Some(ci.lo), ci.hi]),
            };
            steps_with_interval(x, ci)
        }
        None if p.not_measured => "not-meas".into(),
        None => "none".into(),
    }
}

/// `compare` output: one line per run (its file name, never cut), the fit with its intervals
/// per run, then the per-B S(B) with their intervals side by side with the regime of each run's
/// ordered partition, and each run's regimes with their boundaries' intervals.
pub fn render_compare(c: &Comparison) -> String {
    let mut s = String::new();
    for w in &c.warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    if !c.warnings.is_empty() {
        s.push('\n');
    }
    for (i, r) in c.runs.iter().enumerate() {
        let _ = writeln!(
            s,
            "#{} {} ({}, {}, {} trials, {}; S(B): {})",
            i + 1,
            r.label,
            r.optimizer,
            r.target,
            r.trials,
            r.status,
            r.analysis.readout.label()
        );
    }
    s.push('\n');
    let mut rows = vec![[
        "run",
        "S_min [95%]",
        "B_crit [95%]",
        "R²",
        "perfect≤",
        "maximal≥",
        "B_simple [95% band]",
    ]
    .map(String::from)
    .to_vec()];
    for (i, r) in c.runs.iter().enumerate() {
        let a = &r.analysis;
        let [s_min, b_crit, r2] = fit_cells(a);
        let opt_b = |b: Option<usize>| b.map_or_else(|| "-".into(), |b| b.to_string());
        rows.push(vec![
            format!("#{}", i + 1),
            s_min,
            b_crit,
            r2,
            opt_b(perfect_scaling_extent(a)),
            opt_b(maximal_from(a)),
            noise_cell(a),
        ]);
    }
    s.push_str(&table(&rows, &[false, true, true, true, true, true, true]));
    for (i, r) in c.runs.iter().enumerate() {
        if let Some(w) = withheld_text(&r.analysis.evidence) {
            let _ = writeln!(s, "#{} {w}", i + 1);
        }
    }
    s.push('\n');
    // S(B) as each run's curve reads it (the confirmed seed median, or the best trial), and
    // for a run that reads the confirmed S(B) its best trial beside it
    let mut head = vec!["B".to_string()];
    let mut right = vec![true];
    for (i, r) in c.runs.iter().enumerate() {
        head.push(format!("#{} S(B) [95%]", i + 1));
        right.push(true);
        if r.analysis.readout == Readout::Confirmed {
            head.push(format!("#{} best trial", i + 1));
            right.push(true);
        }
        head.push(format!("#{} regime", i + 1));
        right.push(false);
    }
    let mut rows = vec![head];
    for &b in &c.batch_sizes {
        let mut row = vec![b.to_string()];
        for r in &c.runs {
            let a = &r.analysis;
            let p = a.per_batch.iter().find(|p| p.batch_size == b);
            row.push(steps_cell(a, p));
            if a.readout == Readout::Confirmed {
                row.push(
                    p.and_then(|p| p.steps)
                        .map(|x| x.to_string())
                        .unwrap_or_default(),
                );
            }
            let regime = p
                .and_then(|p| a.on_curve_steps(p))
                .and_then(|_| regime_at(a, b))
                .map(|r| r.short())
                .unwrap_or("");
            row.push(regime.to_string());
        }
        rows.push(row);
    }
    s.push_str(&table(&rows, &right));
    for (i, r) in c.runs.iter().enumerate() {
        if r.analysis.readout == Readout::Confirmed {
            let _ = writeln!(
                s,
                "#{} reads the confirmed S(B) (the seed median of the best confirmed \
                 configuration); its best trial (the paper's readout) beside it",
                i + 1
            );
        }
    }
    for (i, r) in c.runs.iter().enumerate() {
        if !r.analysis.withheld() {
            let _ = writeln!(s, "#{} regimes: {}", i + 1, regimes_line(&r.analysis));
        }
    }
    s
}

/// `compare --json`: per run its label, what it is, the fit with its 95 % intervals, the noise
/// scale with its band, the regimes with their boundaries' intervals, the evidence and what it
/// withholds, and the per-B rows of `report --json` (S(B) as the curve reads it with its
/// interval, the best trial beside it).
pub fn compare_json(c: &Comparison) -> serde_json::Value {
    let runs: Vec<serde_json::Value> = c
        .runs
        .iter()
        .map(|r| {
            let a = &r.analysis;
            serde_json::json!({
                "label": r.label,
                "preset": r.preset,
                "optimizer": r.optimizer,
                "target": r.target,
                "status": r.status,
                "trials": r.trials,
                "readout": a.readout,
                "fit": a.fit,
                "perfect_up_to": perfect_scaling_extent(a),
                "maximal_from": maximal_from(a),
                "noise_prediction": a.noise_prediction,
                "noise_interval": a.noise_interval,
                "regimes": a.regimes,
                "evidence": super::EvidenceSummary::of(a),
                "per_batch": super::rows(a),
            })
        })
        .collect();
    serde_json::json!({
        "runs": runs,
        "batch_sizes": c.batch_sizes,
        "warnings": c.warnings,
    })
}
