//! Side-by-side comparison of two or more run logs (e.g. SGD vs momentum on one workload).

use crate::core::analysis::Analysis;
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
            target: {
                let t = l.header.preset.workload.target;
                format!("{} <= {}", t.metric.name(), t.value)
            },
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

/// The largest B of the leading run of perfect-scaling segments (None if the first segment is not
/// perfect): how far perfect scaling extends.
pub fn perfect_scaling_extent(a: &Analysis) -> Option<usize> {
    if !a.regimes.is_empty() {
        // The ordered partition (one span per regime, from a monotone model of the curve).
        return a
            .regimes
            .iter()
            .find(|r| r.regime == crate::core::analysis::Regime::Perfect)
            .map(|r| r.b_hi.round() as usize);
    }
    let mut extent = None;
    for s in &a.segments {
        if s.regime == crate::core::analysis::Regime::Perfect {
            extent = Some(s.b_hi);
        } else {
            break;
        }
    }
    extent
}

/// The smallest B of the trailing run of maximal-data-parallelism segments (None if the last
/// segment is not maximal): from where more batch stops saving steps. With
/// [`perfect_scaling_extent`], the one "perfect ≤ / maximal ≥" rule of the CLI and the TUI.
pub fn maximal_from(a: &Analysis) -> Option<usize> {
    if !a.regimes.is_empty() {
        return a
            .regimes
            .iter()
            .find(|r| r.regime == crate::core::analysis::Regime::Maximal)
            .map(|r| r.b_lo.round() as usize);
    }
    let mut from = None;
    for s in a.segments.iter().rev() {
        if s.regime == crate::core::analysis::Regime::Maximal {
            from = Some(s.b_lo);
        } else {
            break;
        }
    }
    from
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::analysis::{Regime, Segment};

    fn seg(b_lo: usize, b_hi: usize, regime: Regime) -> Segment {
        Segment {
            b_lo,
            b_hi,
            slope: 0.0,
            regime,
        }
    }

    #[test]
    fn perfect_and_maximal_extents_are_the_leading_and_trailing_runs() {
        let a = Analysis {
            segments: vec![
                seg(16, 32, Regime::Perfect),
                seg(32, 64, Regime::Perfect),
                seg(64, 128, Regime::Diminishing),
                seg(128, 256, Regime::Perfect),
                seg(256, 512, Regime::Maximal),
                seg(512, 1024, Regime::Maximal),
            ],
            ..Default::default()
        };
        // A perfect segment after a diminishing one does not extend "perfect ≤".
        assert_eq!(perfect_scaling_extent(&a), Some(64));
        assert_eq!(maximal_from(&a), Some(256));
        let b = Analysis {
            segments: vec![
                seg(16, 32, Regime::Diminishing),
                seg(32, 64, Regime::Perfect),
            ],
            ..Default::default()
        };
        assert_eq!(perfect_scaling_extent(&b), None);
        assert_eq!(maximal_from(&b), None);
    }
}
