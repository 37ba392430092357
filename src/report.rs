//! The report of a sweep: one [`Report`] value built from an `Analysis` and header info (a live
//! sweep) or from a run log, rendered as plain text (headless `sweep`, `report`; no colour codes),
//! serialised as JSON (`--json`, shape in `docs/report-schema.json`) and drawn by the TUI's status
//! panel. `compare` output is rendered here too, from `runlog::compare`. Number formatting: [`num`].

use std::fmt::Write;

use serde::{Deserialize, Serialize};

use crate::analysis::projection::{self, Projection};
use crate::analysis::{fit_range, lr_scaling_exponent, perfect_scaling_steps, FitRange};
use crate::core::analysis::{Analysis, Regime};
use crate::core::trial::Outcome;
use crate::runlog::compare::{maximal_from, perfect_scaling_extent, Comparison};

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

/// One finished trial's outcome in words ("reached at step 120").
pub fn outcome_text(o: &Outcome) -> String {
    match o {
        Outcome::Reached { step } => format!("reached at step {step}"),
        Outcome::NotReached {
            budget,
            early_stopped: false,
        } => format!("did not reach within {budget} steps"),
        Outcome::NotReached { budget, .. } => {
            format!("stopped early at step {budget}: the best trial at this B reached by then")
        }
        Outcome::Diverged { step } => format!("diverged at step {step}"),
        Outcome::Cancelled { step } => format!("cancelled at step {step}"),
        Outcome::Oom { batch_size, step } => {
            format!("out of device memory at B = {batch_size} (step {step})")
        }
    }
}

pub fn opt_num(x: Option<f64>) -> String {
    x.map(num).unwrap_or_else(|| "-".into())
}

/// Short regime name ("perfect", "diminishing", "maximal").
pub fn regime_short(r: Regime) -> &'static str {
    r.short()
}

/// The regime (of the ordered partition) that batch size `b` lies in.
pub fn regime_at(a: &Analysis, b: usize) -> Option<Regime> {
    let b = b as f64;
    a.regimes
        .iter()
        .find(|r| b >= r.b_lo * 0.999 && b < r.b_hi * 0.999)
        .or_else(|| a.regimes.last().filter(|r| b >= r.b_lo * 0.999))
        .map(|r| r.regime)
}

/// The per-batch-size table: steps-to-target, ratio to perfect scaling, regime of the segment to
/// the next B, best metaparameters, noise scale and trial outcome counts.
pub fn per_batch_table(a: &Analysis) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:>7} {:>8} {:>15} {:>7} {:<12} {:>9} {:>9} {:>9} {:>6}  trials (reached/diverged/not reached/cancelled)",
        "B", "steps", "95% interval", "×ideal", "regime", "best η", "η/(1−γ)", "B_simple", "best#"
    );
    for p in &a.per_batch {
        let ideal = match (a.perfect_anchor, p.steps) {
            (Some(anchor), Some(st)) => {
                num(st as f64 / perfect_scaling_steps(anchor, p.batch_size as f64))
            }
            _ => "-".into(),
        };
        let regime = if p.steps.is_some() {
            regime_at(a, p.batch_size).map(regime_short).unwrap_or("")
        } else {
            ""
        };
        let ci = p
            .steps_ci
            .map(|[lo, hi]| format!("[{lo}–{hi}]"))
            .unwrap_or_else(|| "-".into());
        let edge = if p.at_search_edge { "†" } else { "" };
        let _ = writeln!(
            s,
            "{:>7} {:>8} {:>15} {:>7} {:<12} {:>9} {:>9} {:>9} {:>6}  {} ({}/{}/{}/{})",
            p.batch_size,
            p.steps
                .map(|x| format!("{x}{edge}"))
                .unwrap_or_else(|| "none".into()),
            ci,
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
        if p.oom > 0 {
            // the row's trial counts include them; the table keeps its columns
            s.pop();
            let _ = writeln!(s, " +{} out of memory", p.oom);
        }
    }
    s
}

/// The regimes as batch-size ranges, in order perfect → diminishing → maximal, each at most once:
/// the ordered partition of `analysis` (a monotone model of the curve, not single noisy
/// segments). An analysis without it (older callers) falls back to merged local segments.
pub fn regime_ranges(a: &Analysis) -> Vec<(usize, usize, Regime)> {
    if !a.regimes.is_empty() {
        return a
            .regimes
            .iter()
            .map(|r| (r.b_lo.round() as usize, r.b_hi.round() as usize, r.regime))
            .collect();
    }
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

/// Version of the JSON shape of [`Report`] (`docs/report-schema.json`).
pub const REPORT_VERSION: u32 = 1;

/// One row of the per-batch-size table.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ReportRow {
    pub batch_size: usize,
    /// Best steps-to-target (None: no trial reached).
    pub steps: Option<u64>,
    /// steps / the perfect-scaling reference at this B.
    pub x_ideal: Option<f64>,
    /// Regime of the segment from this B to the next.
    pub regime_to_next: Option<Regime>,
    pub best_lr: Option<f64>,
    pub best_effective_lr: Option<f64>,
    pub b_simple: Option<f64>,
    pub best_trial: Option<u64>,
    pub trials: usize,
    pub reached: usize,
    pub diverged: usize,
    pub not_reached: usize,
    pub early_stopped: usize,
    pub cancelled: usize,
    #[serde(default, skip_serializing_if = "crate::core::analysis::is_zero")]
    pub oom: usize,
}

/// A range of consecutive batch sizes in one regime.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct RegimeRange {
    pub b_lo: usize,
    pub b_hi: usize,
    pub regime: Regime,
}

/// The fit S = S_min·(1 + B_crit/B) and where B_crit lies against the measured batch sizes.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct FitSummary {
    pub s_min: f64,
    pub b_crit: f64,
    pub r2: f64,
    pub rmse_log: f64,
    /// "within", "above_range" (no bend seen) or "below_range" (already saturated).
    pub range: String,
    /// Regimes the fit implies (only when B_crit is within range): perfect for B ≤ B_crit/3,
    /// maximal for B ≥ 3·B_crit.
    pub perfect_up_to: Option<f64>,
    pub maximal_from: Option<f64>,
}

/// The gradient-noise-scale prediction of B_crit.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct NoiseSummary {
    /// Median B_simple over the best trials.
    pub median_b_simple: f64,
    /// median B_simple / fitted B_crit.
    pub ratio_to_b_crit: Option<f64>,
    /// How often the best trials measured tr(Σ): one step in this many (median; 1 = every
    /// step, as at G ≥ 2; at G = 1 the cadence follows the cost of a sample). Absent where the
    /// log does not say (older logs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampled_every: Option<f64>,
}

/// Trials kept in the log that did not reach the target.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct KeptCounts {
    pub diverged: usize,
    pub not_reached: usize,
    pub early_stopped: usize,
    pub cancelled: usize,
    /// Out of device memory (CUDA), with their batch sizes in the per-batch rows.
    #[serde(default, skip_serializing_if = "crate::core::analysis::is_zero")]
    pub oom: usize,
}

/// The G = (measured devices) check of the projection model against the best trial's own time.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ProjectionCheck {
    pub batch_size: usize,
    pub measured_s: f64,
    pub modelled_s: f64,
}

/// The measured link's model beside the trials' own gradient-exchange times.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ExchangeCheck {
    pub devices: usize,
    pub bytes: f64,
    pub measured_s: f64,
    pub modelled_s: f64,
}

/// A trial that failed to run at all.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct TrialErrorNote {
    pub trial_id: u64,
    pub message: String,
}

/// Everything the report says, as data. Built once, then rendered as text ([`Report::text`]),
/// serialised as JSON, or drawn by the TUI.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Report {
    pub report_version: u32,
    pub preset: String,
    pub optimizer: String,
    pub devices: String,
    /// What ran (from the run-log header), when known.
    pub backend: Option<String>,
    /// Run-log path.
    pub log: Option<String>,
    pub trials_done: usize,
    pub trials_planned: usize,
    pub wall_s: Option<f64>,
    /// Interrupted (resumable).
    pub cancelled: bool,
    /// "metric <= value".
    pub target: String,
    pub per_batch: Vec<ReportRow>,
    /// (B0, S0) of the perfect-scaling reference S0·B0/B.
    pub perfect_anchor: Option<(usize, u64)>,
    /// Regimes by local slope, merged over consecutive segments.
    pub regimes: Vec<RegimeRange>,
    /// The largest B of the leading perfect-scaling range ("perfect ≤"), shared with `compare`.
    pub perfect_up_to: Option<usize>,
    pub fit: Option<FitSummary>,
    pub noise: Option<NoiseSummary>,
    /// Best η ∝ B^k across batch sizes (linear rule 1, sqrt rule 0.5).
    pub lr_exponent: Option<f64>,
    pub kept: KeptCounts,
    /// Time-to-target projections (one per link); None with `projection_note` saying why.
    pub projections: Option<Vec<Projection>>,
    pub projection_note: Option<String>,
    /// What the projection's compute was timed on.
    pub projection_backend: Option<String>,
    pub projection_check: Option<ProjectionCheck>,
    /// Where the projection's measured link comes from (a `bench --allreduce` fit or the trials).
    #[serde(default)]
    pub projection_link: Option<String>,
    /// The measured link's all-reduce time beside the trials' measured exchange per step.
    #[serde(default)]
    pub exchange_check: Option<ExchangeCheck>,
    /// Problems reading the log or comparing (torn last line, …).
    pub warnings: Vec<String>,
    /// Trials that failed to run.
    pub errors: Vec<TrialErrorNote>,
    /// The full analysis the report was built from.
    pub analysis: Analysis,
}

impl Report {
    /// The report of an analysis with its header info (no projection: see [`Report::from_log`]).
    pub fn new(analysis: Analysis, info: &ReportInfo) -> Report {
        let a = &analysis;
        let per_batch = a
            .per_batch
            .iter()
            .map(|p| ReportRow {
                batch_size: p.batch_size,
                steps: p.steps,
                x_ideal: match (a.perfect_anchor, p.steps) {
                    (Some(anchor), Some(st)) => {
                        Some(st as f64 / perfect_scaling_steps(anchor, p.batch_size as f64))
                    }
                    _ => None,
                },
                regime_to_next: a
                    .segments
                    .iter()
                    .find(|seg| seg.b_lo == p.batch_size)
                    .map(|seg| seg.regime),
                best_lr: p.best_lr,
                best_effective_lr: p.best_effective_lr,
                b_simple: p.b_simple,
                best_trial: p.best_trial,
                trials: p.trials,
                reached: p.reached,
                diverged: p.diverged,
                not_reached: p.not_reached,
                early_stopped: p.early_stopped,
                cancelled: p.cancelled,
                oom: p.oom,
            })
            .collect();
        let batch_sizes: Vec<usize> = a.per_batch.iter().map(|p| p.batch_size).collect();
        let fit = a.fit.as_ref().map(|f| {
            let range = fit_range(f, &batch_sizes);
            let within = matches!(range, FitRange::Within);
            FitSummary {
                s_min: f.s_min,
                b_crit: f.b_crit,
                r2: f.r2,
                rmse_log: f.rmse_log,
                range: match range {
                    FitRange::Within => "within",
                    FitRange::AboveRange => "above_range",
                    FitRange::BelowRange => "below_range",
                }
                .into(),
                perfect_up_to: within.then_some(f.b_crit / 3.0),
                maximal_from: within.then_some(3.0 * f.b_crit),
            }
        });
        let noise = a.noise_prediction.map(|n| NoiseSummary {
            median_b_simple: n,
            ratio_to_b_crit: a.fit.as_ref().map(|f| n / f.b_crit),
            sampled_every: None,
        });
        let kept = KeptCounts {
            diverged: a.per_batch.iter().map(|p| p.diverged).sum(),
            not_reached: a.per_batch.iter().map(|p| p.not_reached).sum(),
            early_stopped: a.per_batch.iter().map(|p| p.early_stopped).sum(),
            cancelled: a.per_batch.iter().map(|p| p.cancelled).sum(),
            oom: a.per_batch.iter().map(|p| p.oom).sum(),
        };
        Report {
            report_version: REPORT_VERSION,
            preset: info.preset.clone(),
            optimizer: info.optimizer.clone(),
            devices: info.devices.clone(),
            backend: None,
            log: info.log_path.clone(),
            trials_done: info.trials_done,
            trials_planned: info.trials_planned,
            wall_s: info.wall_s,
            cancelled: info.cancelled,
            target: a.target.clone(),
            per_batch,
            perfect_anchor: a.perfect_anchor,
            regimes: regime_ranges(a)
                .into_iter()
                .map(|(b_lo, b_hi, regime)| RegimeRange { b_lo, b_hi, regime })
                .collect(),
            perfect_up_to: perfect_scaling_extent(a),
            fit,
            noise,
            lr_exponent: lr_scaling_exponent(&a.lr_rules),
            kept,
            projections: None,
            projection_note: None,
            projection_backend: None,
            projection_check: None,
            projection_link: None,
            exchange_check: None,
            warnings: vec![],
            errors: vec![],
            analysis,
        }
    }

    /// The report of a run log, with its time-to-target projection over 1 … `max_devices`
    /// devices and the reader's warnings.
    pub fn from_log(log: &crate::runlog::RunLog, max_devices: usize) -> Report {
        Self::from_log_with(log, max_devices, None)
    }

    /// [`Report::from_log`] with the projection's measured link fitted to a saved
    /// `bench --allreduce` table (see [`projection::find_link_table`]).
    pub fn from_log_with(
        log: &crate::runlog::RunLog,
        max_devices: usize,
        table: Option<&projection::LinkTable>,
    ) -> Report {
        let a = log.analysis();
        let sampled_every = noise_sampling(&log.trials, &a);
        let mut r = Report::new(a, &ReportInfo::from_log(log));
        if let Some(n) = r.noise.as_mut() {
            n.sampled_every = sampled_every;
        }
        r.backend = Some(log.header.backend.clone());
        r.warnings = log.warnings.clone();
        r.add_projection(log, max_devices, table);
        r
    }

    fn add_projection(
        &mut self,
        log: &crate::runlog::RunLog,
        max_devices: usize,
        table: Option<&projection::LinkTable>,
    ) {
        let a = &self.analysis;
        if is_nqm(log) {
            self.projection_note =
                Some("none for the NQM (a closed-form model has no compute to time)".into());
            return;
        }
        if a.per_batch.iter().all(|p| p.steps.is_none()) {
            self.projection_note = Some("no batch size reached the target".into());
            return;
        }
        let (Some(ps), Some(c)) = (
            projection::project_all(&log.trials, a, max_devices, table),
            projection::calibrate_compute(&log.trials),
        ) else {
            self.projection_note =
                Some("the log has no measured compute times (imported or NQM data)".into());
            return;
        };
        self.projection_check = projection::measured_check(&log.trials, a, &c).map(
            |(batch_size, measured_s, modelled_s)| ProjectionCheck {
                batch_size,
                measured_s,
                modelled_s,
            },
        );
        // Newer headers already name the devices ("burn-flex (cpu), 2 workers").
        let b = &log.header.backend;
        let mut backend = if b.contains("worker") || b.contains("cuda:") {
            b.clone()
        } else {
            format!("{b}, {}", log.header.devices.label())
        };
        if log.header.concurrency > 1 {
            backend.push_str(&format!(
                ", {} trials at once sharing the machine",
                log.header.concurrency
            ));
        }
        if let Some(t) = log.trials.iter().find(|t| t.outcome.throughput.nodes >= 2) {
            let th = &t.outcome.throughput;
            backend.push_str(&format!(
                " per process × {} processes{}",
                th.nodes,
                if th.loopback { " (loopback)" } else { "" }
            ));
        }
        if let Some(link) = ps.iter().map(|p| &p.link).find(|l| l.measured) {
            self.projection_link = link.source.clone();
            self.exchange_check = projection::exchange_check(&log.trials, link).map(
                |(devices, bytes, measured_s, modelled_s)| ExchangeCheck {
                    devices,
                    bytes,
                    measured_s,
                    modelled_s,
                },
            );
        }
        self.projection_backend = Some(backend);
        self.projections = Some(ps);
    }

    /// The report text without the projection (what the headless sweep prints at its end).
    pub fn main_text(&self) -> String {
        let mut s = String::new();
        if !self.preset.is_empty() {
            let _ = writeln!(
                s,
                "sweep {} ({}, {}) — target {}",
                self.preset, self.optimizer, self.devices, self.target
            );
        } else {
            let _ = writeln!(s, "target {}", self.target);
        }
        let mut status = format!("{}/{} trials", self.trials_done, self.trials_planned);
        if let Some(w) = self.wall_s {
            let _ = write!(status, " in {w:.1} s");
        }
        if self.cancelled {
            status.push_str(" — interrupted, resumable");
        }
        let _ = writeln!(s, "{status}");
        if let Some(p) = &self.log {
            let _ = writeln!(s, "run log: {p}");
        }
        s.push('\n');
        s.push_str(&per_batch_table(&self.analysis));
        s.push('\n');
        let reached = self.per_batch.iter().filter(|p| p.steps.is_some()).count();
        if reached == 0 {
            let _ = writeln!(s, "no batch size reached the target: no curve to analyse");
            return s;
        }
        if let Some((b0, s0)) = self.perfect_anchor {
            let _ = writeln!(
                s,
                "perfect scaling reference: S = {s0}·{b0}/B (anchored at the smallest B that reached)"
            );
        }
        if !self.analysis.regimes.is_empty() || !self.analysis.notes.is_empty() {
            let _ = writeln!(
                s,
                "regimes (ordered partition of a monotone fit, 95% intervals on boundaries): {}",
                crate::analysis::regimes_line(&self.analysis)
            );
            for n in &self.analysis.notes {
                let _ = writeln!(s, "  note: {n}");
            }
        } else if self.regimes.is_empty() {
            let _ = writeln!(s, "regimes: need two batch sizes that reached the target");
        } else {
            let parts: Vec<String> = self
                .regimes
                .iter()
                .map(|r| format!("{} {}–{}", r.regime.label(), r.b_lo, r.b_hi))
                .collect();
            let _ = writeln!(
                s,
                "regimes (local slope; ≤ −0.75 perfect, ≥ −0.25 maximal): {}",
                parts.join("; ")
            );
        }
        match &self.fit {
            Some(f) => {
                let note = match f.range.as_str() {
                    "above_range" => " — beyond the largest B measured: no bend seen, B_crit is a lower bound at best",
                    "below_range" => " — below the smallest B measured: already saturated",
                    _ => "",
                };
                let af = self.analysis.fit.as_ref();
                let intervals = match (af.and_then(|f| f.s_min_ci), af.and_then(|f| f.b_crit_ci)) {
                    (Some([sl, sh]), Some([bl, bh])) => format!(
                        " (95% intervals: S_min {}–{}, B_crit {}–{})",
                        num(sl),
                        num(sh),
                        num(bl),
                        num(bh)
                    ),
                    _ => String::new(),
                };
                let uncertain = if af.is_some_and(|f| f.uncertain) {
                    " — UNCERTAIN (poor R² or an interval wider than its value)"
                } else {
                    ""
                };
                let _ = writeln!(
                    s,
                    "fit S = S_min·(1 + B_crit/B): S_min = {} steps, B_crit = {}{intervals}{note} (R² {:.3}, rms ln-residual {:.3}){uncertain}",
                    num(f.s_min),
                    num(f.b_crit),
                    f.r2,
                    f.rmse_log
                );
                if f.range == "within" {
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
        match (&self.noise, &self.fit) {
            (Some(n), Some(f)) => {
                let _ = writeln!(
                    s,
                    "noise scale: median B_simple of the best trials = {} (fitted B_crit = {}, ratio {:.2})",
                    num(n.median_b_simple),
                    num(f.b_crit),
                    n.ratio_to_b_crit.unwrap_or(f64::NAN)
                );
            }
            (Some(n), None) => {
                let _ = writeln!(
                    s,
                    "noise scale: median B_simple of the best trials = {}",
                    num(n.median_b_simple)
                );
            }
            _ => {
                let _ = writeln!(s, "noise scale: not measured");
            }
        }
        if let Some(k) = self.noise.as_ref().and_then(|n| n.sampled_every) {
            let _ = if k <= 1.0 {
                writeln!(s, "  tr(Σ) measured on every step of the best trials")
            } else {
                writeln!(
                    s,
                    "  tr(Σ) measured on one step in {k:.0} of the best trials (median; the cadence follows the measured cost of a sample)"
                )
            };
        }
        if let Some(k) = self.lr_exponent {
            let _ = writeln!(
                s,
                "best η ∝ B^{k:.2} across batch sizes (linear rule: 1, sqrt rule: 0.5)"
            );
        }
        let k = &self.kept;
        let early_note = if k.early_stopped > 0 {
            format!(
                " ({} stopped early at their B's best step count: S(B) unchanged)",
                k.early_stopped
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            s,
            "kept in the log: {} diverged, {} did not reach{early_note}, {} cancelled (cancelled never count)",
            k.diverged, k.not_reached, k.cancelled
        );
        if k.oom > 0 {
            let oom_at: Vec<String> = self
                .per_batch
                .iter()
                .filter(|p| p.oom > 0)
                .map(|p| format!("B = {} ({})", p.batch_size, p.oom))
                .collect();
            let _ = writeln!(
                s,
                "out of device memory: {} trial(s) at {}",
                k.oom,
                oom_at.join(", ")
            );
        }
        if !self.errors.is_empty() {
            let _ = writeln!(
                s,
                "{} trial(s) failed to run; first: trial {}: {}",
                self.errors.len(),
                self.errors[0].trial_id,
                self.errors[0].message
            );
        }
        s
    }

    /// The time-to-target projection section (science.md §6), or a line saying why there is none.
    pub fn projection_text(&self) -> String {
        let caveat = if self.projections.is_some()
            && self.analysis.fit.as_ref().is_some_and(|f| f.uncertain)
        {
            "note: the S(B) curve behind this projection is uncertain (see the fit line): treat the speedups as rough\n"
        } else {
            ""
        };
        let mut link = String::new();
        if self.projections.is_some() {
            if let Some(src) = &self.projection_link {
                link += &format!("measured link: {src}\n");
            }
            if let Some(c) = &self.exchange_check {
                link += &format!(
                    "exchange check at G = {}: the trials measured {:.3} ms per step for {:.1} kB, the measured link model says {:.3} ms\n",
                    c.devices,
                    c.measured_s * 1e3,
                    c.bytes / 1e3,
                    c.modelled_s * 1e3
                );
            }
        }
        caveat.to_string()
            + &match &self.projections {
                Some(ps) => projection::render_projection_table(
                    ps,
                    self.projection_backend.as_deref().unwrap_or("?"),
                    self.projection_check
                        .as_ref()
                        .map(|c| (c.batch_size, c.measured_s, c.modelled_s)),
                ),
                None => format!(
                    "time-to-target projection: {}\n",
                    self.projection_note.as_deref().unwrap_or("not computed")
                ),
            }
            + &link
    }

    /// The whole report: main text, a blank line, the projection section.
    pub fn text(&self) -> String {
        let mut s = self.main_text();
        s.push('\n');
        s.push_str(&self.projection_text());
        s
    }

    /// The JSON value of the report (shape: `docs/report-schema.json`).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    /// Fit values as the TUI and the CLI show them: ("S_min", "B_crit", "R²").
    pub fn fit_numbers(&self) -> Option<(String, String, String)> {
        self.fit
            .as_ref()
            .map(|f| (num(f.s_min), num(f.b_crit), format!("{:.3}", f.r2)))
    }
}

/// The report without projection (see [`Report::main_text`]).
pub fn render_report(a: &Analysis, info: &ReportInfo) -> String {
    Report::new(a.clone(), info).main_text()
}

/// The time-to-target projection section of a run log's report (science.md §6), or a line saying
/// why there is none.
pub fn render_projection_section(log: &crate::runlog::RunLog, max_devices: usize) -> String {
    Report::from_log(log, max_devices).projection_text()
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
) -> Option<Vec<Projection>> {
    if is_nqm(log) {
        return None;
    }
    projection::project_all(&log.trials, &log.analysis(), max_devices, None)
}

/// `report`: the sweep report of a run log followed by its projection.
pub fn render_log_report(log: &crate::runlog::RunLog, max_devices: usize) -> String {
    Report::from_log(log, max_devices).text()
}

/// One line for the TUI's status panel: the best modelled speedup on a fast and on a slow link
/// (e.g. "NVLink 13.9×@G256 · 10GbE 6.6×@G64"). None without measured compute times.
pub fn projection_brief(
    trials: &[crate::core::record::TrialRecord],
    analysis: &Analysis,
) -> Option<String> {
    use crate::analysis::projection::{calibrate_compute, project, LinkModel};
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

/// Median over the best trials (per batch size) of steps per tr(Σ) sample; None when no best
/// trial recorded its samples (older logs, imports, the NQM).
fn noise_sampling(trials: &[crate::core::TrialRecord], a: &crate::core::Analysis) -> Option<f64> {
    let mut v: Vec<f64> = a
        .per_batch
        .iter()
        .filter_map(|p| p.best_trial)
        .filter_map(|id| trials.iter().find(|t| t.trial_id == id))
        .filter(|t| t.outcome.noise.samples > 0)
        .map(|t| t.outcome.steps.max(1) as f64 / t.outcome.noise.samples as f64)
        .collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

#[cfg(test)]
mod projection_tests {
    use super::*;
    use crate::analysis::curve::tests::rec;
    use crate::core::trial::Outcome;
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
        let a = crate::analysis::analyze(&target, &trials, OptimizerKind::Sgd);
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
