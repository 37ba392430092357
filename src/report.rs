//! The plain-text report of a sweep (no colour codes): shown by the headless sweep, the TUI's
//! summary panel and `compare`. Everything comes from `core::analysis::Analysis`.

use std::fmt::Write;

use crate::core::analysis::{Analysis, Regime};
use crate::runlog::compare::{perfect_scaling_extent, Comparison};
use crate::sweep::analysis::{fit_range, lr_scaling_exponent, perfect_scaling_steps, FitRange};

/// Context printed above the analysis.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReportInfo {
    pub preset: String,
    pub optimizer: String,
    pub devices: String,
    pub trials_done: usize,
    pub trials_planned: usize,
    pub wall_s: Option<f64>,
    pub log_path: Option<String>,
    pub cancelled: bool,
}

impl ReportInfo {
    pub fn from_log(log: &crate::runlog::RunLog) -> Self {
        ReportInfo {
            preset: log.header.preset.name.clone(),
            optimizer: log.header.preset.workload.optimizer.name().into(),
            devices: log.header.devices.label(),
            trials_done: log.trials.len(),
            trials_planned: log.planned_trials(),
            wall_s: log.summary.as_ref().map(|s| s.wall_s),
            log_path: Some(log.path.display().to_string()),
            cancelled: log.summary.as_ref().is_some_and(|s| !s.complete),
        }
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

fn opt_num(x: Option<f64>) -> String {
    x.map(num).unwrap_or_else(|| "-".into())
}

fn regime_short(r: Regime) -> &'static str {
    match r {
        Regime::Perfect => "perfect",
        Regime::Diminishing => "diminishing",
        Regime::Maximal => "maximal",
    }
}

/// The per-batch-size table: steps-to-target, ratio to perfect scaling, regime of the segment to
/// the next B, best metaparameters, noise scale and trial outcome counts.
pub fn per_batch_table(a: &Analysis) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:>7} {:>8} {:>7} {:<12} {:>9} {:>9} {:>9} {:>6}  trials (reached/diverged/not reached/cancelled)",
        "B", "steps", "×ideal", "regime→", "best η", "η/(1−γ)", "B_simple", "best#"
    );
    for p in &a.per_batch {
        let ideal = match (a.perfect_anchor, p.steps) {
            (Some(anchor), Some(st)) => {
                num(st as f64 / perfect_scaling_steps(anchor, p.batch_size as f64))
            }
            _ => "-".into(),
        };
        let regime = a
            .segments
            .iter()
            .find(|seg| seg.b_lo == p.batch_size)
            .map(|seg| regime_short(seg.regime))
            .unwrap_or("");
        let _ = writeln!(
            s,
            "{:>7} {:>8} {:>7} {:<12} {:>9} {:>9} {:>9} {:>6}  {} ({}/{}/{}/{})",
            p.batch_size,
            p.steps
                .map(|x| x.to_string())
                .unwrap_or_else(|| "none".into()),
            ideal,
            regime,
            opt_num(p.best_lr),
            opt_num(p.best_effective_lr),
            opt_num(p.b_simple),
            p.best_trial
                .map(|x| x.to_string())
                .unwrap_or_else(|| "-".into()),
            p.trials,
            p.reached,
            p.diverged,
            p.not_reached,
            p.cancelled
        );
    }
    s
}

/// Regime ranges merged over consecutive segments, e.g. "perfect scaling 16–128".
pub fn regime_ranges(a: &Analysis) -> Vec<(usize, usize, Regime)> {
    let mut out: Vec<(usize, usize, Regime)> = Vec::new();
    for seg in &a.segments {
        match out.last_mut() {
            Some(last) if last.2 == seg.regime && last.1 == seg.b_lo => last.1 = seg.b_hi,
            _ => out.push((seg.b_lo, seg.b_hi, seg.regime)),
        }
    }
    out
}

/// The regimes the fitted curve implies, robust to trial-to-trial noise in single segments: its
/// log-log slope is −B_crit/(B + B_crit), so it is ≤ −0.75 (perfect) for B ≤ B_crit/3 and ≥ −0.25
/// (maximal) for B ≥ 3·B_crit, with the same thresholds as the per-segment classification.
pub fn fit_regimes_line(b_crit: f64) -> String {
    format!(
        "regimes by the fit (slope −B_crit/(B+B_crit)): perfect scaling B ≤ {}, diminishing returns {}–{}, maximal data parallelism B ≥ {}",
        num(b_crit / 3.0),
        num(b_crit / 3.0),
        num(3.0 * b_crit),
        num(3.0 * b_crit)
    )
}

/// The full report.
pub fn render_report(a: &Analysis, info: &ReportInfo) -> String {
    let mut s = String::new();
    if !info.preset.is_empty() {
        let _ = writeln!(
            s,
            "sweep {} ({}, {}) — target {}",
            info.preset, info.optimizer, info.devices, a.target
        );
    } else {
        let _ = writeln!(s, "target {}", a.target);
    }
    let mut status = format!("{}/{} trials", info.trials_done, info.trials_planned);
    if let Some(w) = info.wall_s {
        let _ = write!(status, " in {w:.1} s");
    }
    if info.cancelled {
        status.push_str(" — interrupted, resumable");
    }
    let _ = writeln!(s, "{status}");
    if let Some(p) = &info.log_path {
        let _ = writeln!(s, "run log: {p}");
    }
    s.push('\n');
    s.push_str(&per_batch_table(a));
    s.push('\n');
    let batch_sizes: Vec<usize> = a.per_batch.iter().map(|p| p.batch_size).collect();
    let reached = a.per_batch.iter().filter(|p| p.steps.is_some()).count();
    if reached == 0 {
        let _ = writeln!(s, "no batch size reached the target: no curve to analyse");
        return s;
    }
    if let Some((b0, s0)) = a.perfect_anchor {
        let _ = writeln!(
            s,
            "perfect scaling reference: S = {s0}·{b0}/B (anchored at the smallest B that reached)"
        );
    }
    let ranges = regime_ranges(a);
    if ranges.is_empty() {
        let _ = writeln!(s, "regimes: need two batch sizes that reached the target");
    } else {
        let parts: Vec<String> = ranges
            .iter()
            .map(|(lo, hi, r)| format!("{} {lo}–{hi}", r.label()))
            .collect();
        let _ = writeln!(
            s,
            "regimes (local slope; ≤ −0.75 perfect, ≥ −0.25 maximal): {}",
            parts.join("; ")
        );
    }
    match &a.fit {
        Some(f) => {
            let note = match fit_range(f, &batch_sizes) {
                FitRange::Within => "",
                FitRange::AboveRange => " — beyond the largest B measured: no bend seen, B_crit is a lower bound at best",
                FitRange::BelowRange => " — below the smallest B measured: already saturated",
            };
            let _ = writeln!(
                s,
                "fit S = S_min·(1 + B_crit/B): S_min = {} steps, B_crit = {}{note} (R² {:.3}, rms ln-residual {:.3})",
                num(f.s_min),
                num(f.b_crit),
                f.r2,
                f.rmse_log
            );
            if matches!(fit_range(f, &batch_sizes), FitRange::Within) {
                let _ = writeln!(s, "{}", fit_regimes_line(f.b_crit));
            }
        }
        None => {
            let _ = writeln!(
                s,
                "fit S = S_min·(1 + B_crit/B): needs ≥ 3 batch sizes that reached the target"
            );
        }
    }
    match (a.noise_prediction, &a.fit) {
        (Some(n), Some(f)) => {
            let _ = writeln!(
                s,
                "noise scale: median B_simple of the best trials = {} (fitted B_crit = {}, ratio {:.2})",
                num(n),
                num(f.b_crit),
                n / f.b_crit
            );
        }
        (Some(n), None) => {
            let _ = writeln!(
                s,
                "noise scale: median B_simple of the best trials = {}",
                num(n)
            );
        }
        _ => {
            let _ = writeln!(s, "noise scale: not measured");
        }
    }
    if let Some(k) = lr_scaling_exponent(&a.lr_rules) {
        let _ = writeln!(
            s,
            "best η ∝ B^{k:.2} across batch sizes (linear rule: 1, sqrt rule: 0.5)"
        );
    }
    let diverged: usize = a.per_batch.iter().map(|p| p.diverged).sum();
    let not_reached: usize = a.per_batch.iter().map(|p| p.not_reached).sum();
    let early: usize = a.per_batch.iter().map(|p| p.early_stopped).sum();
    let cancelled: usize = a.per_batch.iter().map(|p| p.cancelled).sum();
    let early_note = if early > 0 {
        format!(" ({early} stopped early at their B's best step count: S(B) unchanged)")
    } else {
        String::new()
    };
    let _ = writeln!(
        s,
        "kept in the log: {diverged} diverged, {not_reached} did not reach{early_note}, {cancelled} cancelled (cancelled never count)"
    );
    s
}

/// The time-to-target projection section of a run log's report (science.md §6), or a line saying
/// why there is none.
pub fn render_projection_section(log: &crate::runlog::RunLog, max_devices: usize) -> String {
    use crate::sweep::projection::{
        calibrate_compute, measured_check, project_all, render_projection_table,
    };
    if is_nqm(log) {
        return "time-to-target projection: none for the NQM (a closed-form model has no compute to time)\n"
            .into();
    }
    let a = log.analysis();
    if a.per_batch.iter().all(|p| p.steps.is_none()) {
        return "time-to-target projection: no batch size reached the target\n".into();
    }
    let (Some(ps), Some(c)) = (
        project_all(&log.trials, &a, max_devices),
        calibrate_compute(&log.trials),
    ) else {
        return "time-to-target projection: the log has no measured compute times (imported or NQM data)\n"
            .into();
    };
    let check = measured_check(&log.trials, &a, &c);
    let mut backend = format!("{}, {}", log.header.backend, log.header.devices.label());
    if log.header.concurrency > 1 {
        backend.push_str(&format!(
            ", {} trials at once sharing the machine",
            log.header.concurrency
        ));
    }
    render_projection_table(&ps, &backend, check)
}

fn is_nqm(log: &crate::runlog::RunLog) -> bool {
    matches!(
        log.header.preset.workload.model,
        crate::workload::spec::ModelSpec::Nqm { .. }
    )
}

/// The projections of a run log for `--json` output (None for the NQM or without timings).
pub fn projections_for_log(
    log: &crate::runlog::RunLog,
    max_devices: usize,
) -> Option<Vec<crate::sweep::projection::Projection>> {
    if is_nqm(log) {
        return None;
    }
    crate::sweep::projection::project_all(&log.trials, &log.analysis(), max_devices)
}

/// One line for the TUI's status panel: the best modelled speedup on a fast and on a slow link
/// (e.g. "NVLink 13.9×@G256 · 10GbE 6.6×@G64"). None without measured compute times.
pub fn projection_brief(
    trials: &[crate::core::record::TrialRecord],
    analysis: &Analysis,
) -> Option<String> {
    use crate::sweep::projection::{calibrate_compute, project, LinkModel};
    if analysis.per_batch.iter().all(|p| p.steps.is_none()) {
        return None;
    }
    let c = calibrate_compute(trials)?;
    let parts: Vec<String> = [LinkModel::nvlink(), LinkModel::ethernet_10g()]
        .iter()
        .filter_map(|l| {
            let p = project(analysis, &c, l, 1024);
            let best = p
                .rows
                .iter()
                .max_by(|a, b| a.speedup.total_cmp(&b.speedup))?;
            Some(format!("{} {:.1}×@G{}", l.name, best.speedup, best.devices))
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join(" · "))
}

/// `report`: the sweep report of a run log followed by its projection.
pub fn render_log_report(log: &crate::runlog::RunLog, max_devices: usize) -> String {
    let mut s = render_report(&log.analysis(), &ReportInfo::from_log(log));
    s.push('\n');
    s.push_str(&render_projection_section(log, max_devices));
    s
}

/// `compare` output: summary per run, then the per-B steps side by side.
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
        "{:<3} {:<36} {:<10} {:>9} {:>9} {:>6} {:>10} {:>8}  target",
        "#", "run", "optimizer", "S_min", "B_crit", "R²", "perfect→", "B_simple"
    );
    for (i, r) in c.runs.iter().enumerate() {
        let a = &r.analysis;
        let _ = writeln!(
            s,
            "{:<3} {:<36} {:<10} {:>9} {:>9} {:>6} {:>10} {:>8}  {}",
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
            opt_num(a.noise_prediction),
            r.target
        );
    }
    s.push('\n');
    let _ = write!(s, "{:>7}", "B");
    for i in 0..c.runs.len() {
        let _ = write!(s, " {:>9} {:<12}", format!("#{} steps", i + 1), "regime→");
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
            let regime = r
                .analysis
                .segments
                .iter()
                .find(|seg| seg.b_lo == b)
                .map(|seg| regime_short(seg.regime))
                .unwrap_or("");
            let _ = write!(s, " {steps:>9} {regime:<12}");
        }
        s.push('\n');
    }
    for (i, r) in c.runs.iter().enumerate() {
        let parts: Vec<String> = regime_ranges(&r.analysis)
            .iter()
            .map(|(lo, hi, reg)| format!("{} {lo}–{hi}", regime_short(*reg)))
            .collect();
        if !parts.is_empty() {
            let _ = writeln!(s, "#{} regimes: {}", i + 1, parts.join("; "));
        }
    }
    s
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let t: String = s.chars().take(n - 1).collect();
        format!("{t}…")
    }
}

#[cfg(test)]
mod projection_tests {
    use super::*;
    use crate::core::trial::Outcome;
    use crate::sweep::analysis::tests::rec;
    use crate::workload::spec::{Metric, OptimizerKind, Target};

    #[test]
    fn brief_names_the_best_speedup_per_link() {
        let mut trials = vec![];
        for (i, (b, s)) in [(16usize, 800u64), (64, 220), (256, 80), (1024, 60)]
            .into_iter()
            .enumerate()
        {
            let mut r = rec(i as u64, b, 0.1, Outcome::Reached { step: s }, None);
            r.outcome.throughput.compute_s = 2e-3 + 5e-5 * b as f64;
            r.outcome.throughput.step_s = r.outcome.throughput.compute_s;
            r.outcome.throughput.params = 1_000_000;
            trials.push(r);
        }
        let target = Target {
            metric: Metric::ValError,
            value: 0.1,
        };
        let a = crate::sweep::analysis::analyze(&target, &trials, OptimizerKind::Sgd);
        let brief = projection_brief(&trials, &a).expect("a projection");
        assert!(
            brief.starts_with("NVLink ") && brief.contains(" · 10GbE "),
            "{brief}"
        );
        // 4 MB of gradients: 10 GbE cannot beat NVLink.
        let speed = |name: &str| -> f64 {
            let part = brief.split(" · ").find(|p| p.starts_with(name)).unwrap();
            part.split_whitespace()
                .nth(1)
                .unwrap()
                .split('×')
                .next()
                .unwrap()
                .parse()
                .unwrap()
        };
        assert!(speed("NVLink") > speed("10GbE"), "{brief}");
        // No timings (imported data): nothing to say.
        for t in &mut trials {
            t.outcome.throughput.compute_s = 0.0;
        }
        assert_eq!(projection_brief(&trials, &a), None);
    }
}
