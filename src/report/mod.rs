//! The report of a sweep — one pipeline with one owner:
//!
//! ```text
//! trial records + header ──analysis::analyze──► Analysis (numbers, enums)
//!                        ──report::build──────► Report (built once per change)
//!                        ──renderers──────────► text · JSON · CSV · SVG · compare · headless
//!                                               (the TUI's panels draw the same Report)
//! ```
//!
//! [`build`] is the one way a `Report` is made: from a run log ([`Report::from_log`]), from a
//! sweep that just ended in this process ([`of_sweep`]: the CLI, the cluster front end, the TUI;
//! nothing re-reads the log it just wrote) or from the TUI's live state. The renderers live here
//! too: `text` (the plain-text report), `json` (`--json`, `docs/report-schema.json`), `notes` (the
//! wording of the analysis's typed notes), `export` (CSV, the export JSON, the metaparameter
//! picture), `chart` (the exported S(B) chart: legend below the plot, labels placed clear of each
//! other), `compare`, `projection` (the projection table and brief), `headless` (the progress
//! view of a headless sweep), `format` (numbers and outcomes in words, values with intervals),
//! `bench` (`scaling-lab bench`'s tables), `calibration` (the calibration stage in words).
//!
//! Layering: `report` imports `core`, `workload`, `transfer`, `train` (the bench's measurements),
//! `analysis`, `runlog` and `sweep`; `cluster`,
//! `cli` and `tui` import it.

pub mod bench;
pub mod calibration;
pub mod chart;
pub mod compare;
pub mod export;
pub mod format;
pub mod headless;
pub mod json;
pub mod notes;
pub mod projection;
pub mod schedule;
pub mod targets;
pub mod text;
pub mod transfer;

#[cfg(test)]
mod tests;

use std::path::Path;

use serde::Serialize;

use crate::analysis::projection::{self as proj, LinkTable, Projection};
use crate::analysis::{fit_range, lr_scaling_exponent, perfect_scaling_steps, FitRange};
use crate::core::analysis::{Analysis, OutcomeCounts, Readout, Regime, Study};
use crate::core::events::TrialErrorNote;
use crate::core::record::{Header, TrialRecord};
use crate::core::trial::NoiseInterval;
use crate::runlog::RunLog;
use crate::sweep::SweepResult;

pub use format::{
    band, fit_with_intervals, num, opt_num, outcome_text, steps_with_interval, thousands,
    unbounded_band_reason, with_interval,
};

/// Version of the JSON shape of [`Report`] (`docs/report-schema.json`). Version 2: one
/// regime model reaches the outputs — `per_batch[].regime` (the ordered partition's regime at B)
/// replaces the per-segment `regime_to_next`, the fit no longer implies regimes of its own
/// (`fit.perfect_up_to`/`maximal_from` are gone), `analysis.segments` carry slopes only, `kept`
/// is the count type of the rows (with `trials` and `reached`), and a cluster run adds `cluster`.
/// Version 3: one meaning per word — `per_batch[].steps` (and `steps_ci`) is S(B) as the curve
/// reads it (`readout`), the best trial `best_trial_steps`/`best_trial_ci` beside it, and
/// `on_curve`; `evidence` says what the curve rests on and which fields are withheld for want of
/// it (`analysis::evidence`); the noise band says how many best trials' intervals are unbounded.
pub const REPORT_VERSION: u32 = 3;

/// What a report is built from: a run's header, its finished trials and how far it got.
#[derive(Clone, Copy, Debug)]
pub struct Run<'a> {
    pub header: &'a Header,
    pub trials: &'a [TrialRecord],
    /// The run log (or sweep directory), when there is one.
    pub path: Option<&'a Path>,
    pub progress: Progress,
    /// Problems reading the log (torn last line, …).
    pub warnings: &'a [String],
    /// A calibrated study's calibration (the log's calibrated line), when there is one.
    pub calibrated: Option<&'a crate::core::calibrate::Calibrated>,
}

/// How far a run got.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Progress {
    pub trials_done: usize,
    pub trials_planned: usize,
    /// Each stage against its own plan (search, confirm, repeats).
    pub stages: crate::core::stages::StageCounts,
    pub wall_s: Option<f64>,
    /// Interrupted (resumable).
    pub cancelled: bool,
}

/// How far the time-to-target projection goes and which measured link it may use.
#[derive(Clone, Copy, Debug)]
pub struct ReportOptions<'a> {
    /// Largest device count G of the projection.
    pub max_devices: usize,
    /// A saved `bench --allreduce` table (`runlog::link_table::find_link_table`).
    pub link_table: Option<&'a LinkTable>,
    /// Read S(B) at this target value (of the sweep's metric) instead of the sweep's goal: the
    /// same pipeline over the trials' evaluation curves. None: the goal.
    pub target: Option<f64>,
}

impl Default for ReportOptions<'_> {
    fn default() -> Self {
        ReportOptions {
            max_devices: 1024,
            link_table: None,
            target: None,
        }
    }
}

/// One row of the per-batch-size table. `steps` is S(B) as the curve reads it (`readout`):
/// the confirmed S(B) once the confirm stage has finished, else the best trial; the best trial
/// is always `best_trial_steps` beside it.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct ReportRow {
    pub batch_size: usize,
    /// S(B) as the curve reads it (None: not reached).
    pub steps: Option<u64>,
    /// Its 95 % interval [lo, hi] (hi null: unbounded above; absent: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steps_ci: Option<[Option<u64>; 2]>,
    /// The best trial's steps-to-target (Shallue et al.'s readout; None: no trial reached).
    pub best_trial_steps: Option<u64>,
    /// Its 95 % interval (the median best of this B's search trials).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub best_trial_ci: Option<[u64; 2]>,
    /// `steps` rests on enough finished trials to be on the curve (`analysis::evidence`).
    pub on_curve: bool,
    /// steps / the perfect-scaling reference at this B (on the curve only).
    pub x_ideal: Option<f64>,
    /// The regime of the ordered partition this B lies in (on the curve only).
    pub regime: Option<Regime>,
    pub best_lr: Option<f64>,
    pub best_effective_lr: Option<f64>,
    pub b_simple: Option<f64>,
    pub best_trial: Option<u64>,
    #[serde(flatten)]
    pub counts: OutcomeCounts,
    /// S(B) is not measured at this target (stricter than the sweep's goal): `steps` is null.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub not_measured: bool,
    /// The confirmed S(B): the seed median of the best confirmed configuration (absent
    /// without a confirm stage at this B; null: no configuration's median reached the target).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confirmed_steps: Option<Option<u64>>,
    /// Its 95 % interval [lo, hi] (hi null: unbounded above).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confirmed_ci: Option<[Option<u64>; 2]>,
    /// The seed-to-seed spread at this B: the standard deviation of ln steps between seeds of one
    /// configuration (what a single-seed readout hides).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed_sd: Option<f64>,
}

/// How much evidence the curve rests on, and what the report withholds for want of it
/// (`analysis::evidence`).
#[derive(Serialize, Clone, Debug, PartialEq, Default)]
pub struct EvidenceSummary {
    /// The rule: batch sizes the curve needs …
    pub min_batch_sizes: usize,
    /// … each with S(B) from at least this many finished trials.
    pub min_trials: usize,
    /// The batch sizes on the curve.
    pub curve: Vec<usize>,
    /// Measured batch sizes off the curve, with the trials their S(B) rests on.
    pub thin: Vec<crate::core::analysis::ThinPoint>,
    /// The report fields left empty for want of evidence (`fit`, `regimes`, `lr_exponent`,
    /// `projections`, `perfect_anchor`); empty when nothing is withheld.
    pub withheld: Vec<String>,
    /// What is missing, in words (absent when nothing is withheld).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

impl EvidenceSummary {
    /// The evidence of `a` and what the report withholds for want of it.
    pub fn of(a: &Analysis) -> Self {
        use crate::analysis::evidence::{MIN_CURVE_POINTS, MIN_TRIALS_PER_POINT};
        let e = &a.evidence;
        EvidenceSummary {
            min_batch_sizes: MIN_CURVE_POINTS,
            min_trials: MIN_TRIALS_PER_POINT,
            curve: e.curve.clone(),
            thin: e.thin.clone(),
            withheld: if e.withheld {
                [
                    "fit",
                    "regimes",
                    "lr_exponent",
                    "projections",
                    "perfect_anchor",
                ]
                .map(String::from)
                .to_vec()
            } else {
                Vec::new()
            },
            text: notes::withheld_text(e),
        }
    }
}

/// A range of batch sizes in one regime (the ordered partition, rounded to whole B).
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct RegimeRange {
    pub b_lo: usize,
    pub b_hi: usize,
    pub regime: Regime,
}

/// The fit S = S_min·(1 + B_crit/B) and where B_crit lies against the measured batch sizes.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct FitSummary {
    pub s_min: f64,
    pub b_crit: f64,
    pub r2: f64,
    pub rmse_log: f64,
    pub range: FitRange,
}

/// The gradient-noise-scale prediction of B_crit.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct NoiseSummary {
    /// Median B_simple over the best trials.
    pub median_b_simple: f64,
    /// median B_simple / fitted B_crit.
    pub ratio_to_b_crit: Option<f64>,
    /// How often the best trials measured tr(Σ): one step in this many (median; 1 = every
    /// step, as at G ≥ 2; at G = 1 the cadence follows the cost of a sample). Absent where the
    /// log does not say (older logs, imports, the NQM).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampled_every: Option<f64>,
    /// The band around the median: the medians of the best trials' 95 % intervals' ends (`hi`
    /// null: unbounded above). Absent where a best trial recorded no interval (older logs, other
    /// targets than the goal, the NQM).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval: Option<NoiseInterval>,
    /// [best trials whose interval is unbounded above (|G|² not resolved from 0), best trials
    /// with an interval]: why the band has no upper end where it has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unbounded: Option<[usize; 2]>,
}

/// The G = (measured devices) check of the projection model against the best trial's own time.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct ProjectionCheck {
    pub batch_size: usize,
    pub measured_s: f64,
    pub modelled_s: f64,
}

/// The measured link's model beside the trials' own gradient-exchange times.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct ExchangeCheck {
    pub devices: usize,
    pub bytes: f64,
    pub measured_s: f64,
    pub modelled_s: f64,
}

/// What a sweep run by the cluster front end adds (a Slurm array task, one node of a multi-node
/// sweep, or the merged report of a sweep directory).
#[derive(Serialize, Clone, Debug, PartialEq, Default)]
pub struct ClusterRun {
    /// The array task's share ("I/N").
    pub shard: Option<String>,
    /// Processes (nodes) of each trial.
    pub nodes: usize,
    /// Why the multi-node group was lost, if it was.
    pub group_lost: Option<String>,
    /// Trials this process ran (0 for a merged report).
    pub trials_run: usize,
    /// Every planned trial is logged (None for one array task's share).
    pub complete: Option<bool>,
}

/// Everything the report says, as data. Built once ([`build`]), then rendered as text
/// ([`Report::text`]), JSON ([`Report::to_json`]) or drawn by the TUI.
#[derive(Serialize, Clone, Debug, PartialEq, Default)]
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
    /// Each stage's trials against its own plan: the search (`trials_planned` is its plan),
    /// the confirm stage with its `--until` rounds, the `--repeats`.
    pub stages: crate::core::stages::StageCounts,
    pub wall_s: Option<f64>,
    /// Interrupted (resumable).
    pub cancelled: bool,
    /// "metric <= value".
    pub target: String,
    /// The sweep's goal ("metric <= value") when the report reads another target (`--target`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub goal: Option<String>,
    /// The sweep's ladder of targets, loosest first (absent: a single-target sweep).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ladder: Vec<f64>,
    pub per_batch: Vec<ReportRow>,
    /// (B0, S0) of the perfect-scaling reference S0·B0/B.
    pub perfect_anchor: Option<(usize, u64)>,
    /// The ordered regime partition in whole batch sizes.
    pub regimes: Vec<RegimeRange>,
    /// The end of the perfect-scaling regime ("perfect ≤"), shared with `compare` and the TUI.
    pub perfect_up_to: Option<usize>,
    pub fit: Option<FitSummary>,
    /// The evidence the curve rests on and the fields withheld for want of it.
    pub evidence: EvidenceSummary,
    pub noise: Option<NoiseSummary>,
    /// Best η ∝ B^k across batch sizes (linear rule 1, sqrt rule 0.5).
    pub lr_exponent: Option<f64>,
    /// How the search trials of the whole sweep ended.
    pub kept: OutcomeCounts,
    /// Time-to-target projections (one per link); None with `projection_note` saying why.
    pub projections: Option<Vec<Projection>>,
    pub projection_note: Option<String>,
    /// What the projection's compute was timed on.
    pub projection_backend: Option<String>,
    pub projection_check: Option<ProjectionCheck>,
    /// Where the projection's measured link comes from (a `bench --allreduce` fit or the trials).
    pub projection_link: Option<String>,
    /// The measured link's all-reduce time beside the trials' measured exchange per step.
    pub exchange_check: Option<ExchangeCheck>,
    /// Problems reading the log or comparing (torn last line, …).
    pub warnings: Vec<String>,
    /// Trials that failed to run.
    pub errors: Vec<TrialErrorNote>,
    /// A cluster run's share, nodes and state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterRun>,
    /// The sweep's confirm stage, "KxR" (absent: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confirm: Option<String>,
    /// Which S(B) the fit, the regimes, the ladders and the projection read: `best_trial` (the
    /// paper's readout) or `confirmed` (the seed median of the best confirmed configuration).
    pub readout: Readout,
    /// A language model with a transfer probe: the best trial's probe per batch size beside S(B),
    /// with its controls (`transfer`). Absent without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transfer: Option<transfer::TransferReport>,
    /// The calibration stage of a study the lab calibrated: its choices, why, and its price.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calibration: Option<calibration::CalibrationSummary>,
    /// Each regime the curve does not show, and why, one line each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub missing_regimes: Vec<String>,
    /// The full analysis the report was built from (its notes worded: `json`).
    #[serde(serialize_with = "json::analysis_value")]
    pub analysis: Analysis,
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

/// The ordered partition in whole batch sizes: (b_lo, b_hi, regime), in order.
pub fn regime_ranges(a: &Analysis) -> Vec<(usize, usize, Regime)> {
    a.regimes
        .iter()
        .map(|r| (r.b_lo.round() as usize, r.b_hi.round() as usize, r.regime))
        .collect()
}

/// The end of perfect scaling ("perfect ≤"): the perfect span's upper end, if there is one.
pub fn perfect_scaling_extent(a: &Analysis) -> Option<usize> {
    regime_ranges(a)
        .into_iter()
        .find(|r| r.2 == Regime::Perfect)
        .map(|r| r.1)
}

/// Where maximal data parallelism starts ("maximal ≥"): the maximal span's lower end.
pub fn maximal_from(a: &Analysis) -> Option<usize> {
    regime_ranges(a)
        .into_iter()
        .find(|r| r.2 == Regime::Maximal)
        .map(|r| r.0)
}

/// Median over the best trials (per batch size) of steps per tr(Σ) sample; None when no best
/// trial recorded its samples (older logs, imports, the NQM).
fn noise_sampling(trials: &[TrialRecord], a: &Analysis) -> Option<f64> {
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

pub(crate) fn rows(a: &Analysis) -> Vec<ReportRow> {
    a.per_batch
        .iter()
        .map(|p| ReportRow {
            batch_size: p.batch_size,
            steps: a.curve_steps(p),
            steps_ci: match a.readout {
                Readout::BestTrial => p.steps_ci.map(|[lo, hi]| [Some(lo), Some(hi)]),
                Readout::Confirmed => p
                    .confirmed
                    .as_ref()
                    .and_then(|c| c.steps_ci)
                    .map(|ci| [Some(ci.lo), ci.hi]),
            },
            best_trial_steps: p.steps,
            best_trial_ci: p.steps_ci,
            on_curve: a.on_curve_steps(p).is_some(),
            // against the perfect-scaling line of the curve the fit reads
            x_ideal: match (a.perfect_anchor, a.on_curve_steps(p)) {
                (Some(anchor), Some(st)) => {
                    Some(st as f64 / perfect_scaling_steps(anchor, p.batch_size as f64))
                }
                _ => None,
            },
            regime: a.on_curve_steps(p).and_then(|_| regime_at(a, p.batch_size)),
            confirmed_steps: p.confirmed.as_ref().map(|c| c.steps),
            confirmed_ci: p
                .confirmed
                .as_ref()
                .and_then(|c| c.steps_ci)
                .map(|ci| [Some(ci.lo), ci.hi]),
            seed_sd: p.confirmed.as_ref().and_then(|c| c.seed_sd),
            best_lr: p.best_lr,
            best_effective_lr: p.best_effective_lr,
            b_simple: p.b_simple,
            best_trial: p.best_trial,
            counts: p.counts,
            not_measured: p.not_measured,
        })
        .collect()
}

/// The report of `analysis` (already made from `run`'s trials), without the projection.
fn from_analysis(analysis: Analysis, run: &Run) -> Report {
    let a = &analysis;
    let batch_sizes: Vec<usize> = a.per_batch.iter().map(|p| p.batch_size).collect();
    let fit = a.fit.as_ref().map(|f| FitSummary {
        s_min: f.s_min,
        b_crit: f.b_crit,
        r2: f.r2,
        rmse_log: f.rmse_log,
        range: fit_range(f, &batch_sizes),
    });
    let noise = a.noise_prediction.map(|n| NoiseSummary {
        median_b_simple: n,
        ratio_to_b_crit: a.fit.as_ref().map(|f| n / f.b_crit),
        sampled_every: noise_sampling(run.trials, a),
        interval: a.noise_interval,
        unbounded: a.noise_interval.map(|_| {
            let ivs: Vec<NoiseInterval> = a
                .per_batch
                .iter()
                .filter_map(|p| p.b_simple_interval)
                .collect();
            [ivs.iter().filter(|i| i.hi.is_none()).count(), ivs.len()]
        }),
    });
    let h = run.header;
    Report {
        report_version: REPORT_VERSION,
        preset: h.preset.name.clone(),
        optimizer: h.preset.workload.optimizer.name().into(),
        devices: devices_label(run),
        backend: Some(h.backend.clone()),
        log: run.path.map(|p| p.display().to_string()),
        trials_done: run.progress.trials_done,
        trials_planned: run.progress.trials_planned,
        stages: run.progress.stages,
        wall_s: run.progress.wall_s,
        cancelled: run.progress.cancelled,
        target: a
            .target
            .as_ref()
            .map(crate::core::analysis::target_text)
            .unwrap_or_default(),
        goal: a.goal.as_ref().map(crate::core::analysis::target_text),
        ladder: if h.preset.workload.targets.is_empty() {
            Vec::new()
        } else {
            crate::analysis::ladder::ladder_of(&h.preset.workload)
        },
        per_batch: rows(a),
        perfect_anchor: a.perfect_anchor,
        regimes: regime_ranges(a)
            .into_iter()
            .map(|(b_lo, b_hi, regime)| RegimeRange { b_lo, b_hi, regime })
            .collect(),
        perfect_up_to: perfect_scaling_extent(a),
        fit,
        noise,
        // the η exponent is a fit over B too: withheld with the curve
        lr_exponent: if a.withheld() {
            None
        } else {
            lr_scaling_exponent(&a.lr_rules)
        },
        evidence: EvidenceSummary::of(a),
        kept: a.per_batch.iter().map(|p| p.counts).sum(),
        warnings: run.warnings.to_vec(),
        confirm: h.preset.sweep.confirm.map(|c| c.to_string()),
        readout: a.readout,
        transfer: transfer::build(run.trials, a, &h.preset.workload),
        calibration: run.calibrated.map(|c| calibration::summary(c, run.trials)),
        // withheld with the curve: no regime is read, none is missing
        missing_regimes: if a.withheld() {
            Vec::new()
        } else {
            calibration::missing_regimes(&a.notes, run.calibrated)
        },
        analysis,
        ..Report::default()
    }
}

/// The devices of one trial, with the processes of a multi-node sweep ("cpu × 1 worker × 2 nodes").
fn devices_label(run: &Run) -> String {
    let label = run.header.devices.label();
    match run.trials.iter().map(|t| t.outcome.throughput.nodes).max() {
        Some(n) if n >= 2 => format!("{label} × {n} nodes"),
        _ => label,
    }
}

/// The study a run is read as: its preset's, at `target` when given.
pub fn study_of(run: &Run, target: Option<f64>) -> Study {
    let study = Study::of_preset(&run.header.preset);
    match target {
        Some(t) => study.at(t),
        None => study,
    }
}

/// The one way a report is made: the analysis of `run`'s trials (`analysis::analyze` of the
/// header's preset, at `opts.target` when given), the report's numbers, and the time-to-target
/// projection.
pub fn build(run: &Run, opts: &ReportOptions) -> Report {
    build_from(run, opts, None)
}

/// [`build`], with the analysis of `run`'s trials for its study when the caller has it already.
fn build_from(run: &Run, opts: &ReportOptions, analysed: Option<Analysis>) -> Report {
    let study = study_of(run, opts.target);
    let mut analysis = analysed.unwrap_or_else(|| crate::analysis::analyze(&study, run.trials));
    // `--until REL`: what it did at each B (at the goal, the reading it narrowed)
    if let Some(rel) = run.header.adaptive.as_ref().and_then(|a| a.until) {
        if let (true, Some(plan)) = (study.target == study.goal, study.confirm) {
            // with a confirm stage --until narrowed the confirmed S(B)
            use crate::analysis::until;
            let budget = run.header.adaptive.as_ref().and_then(|a| a.max_trials);
            let used = until::search_trials(run.trials) + until::confirm_trials(run.trials);
            let left = budget.map_or(0, |m| m.saturating_sub(used));
            crate::analysis::confirm::mark_until(
                &mut analysis.per_batch,
                run.trials,
                rel,
                plan.seeds,
                left,
            );
        } else if study.target == study.goal {
            use crate::analysis::until;
            let k = run.header.trials_per_batch;
            let st = until::stalled(run.trials, study.optimizer, &analysis.per_batch, k);
            let preset = &run.header.preset;
            let looks = until::outlooks(run.trials, preset, &analysis.per_batch, rel);
            let budget = run.header.adaptive.as_ref().and_then(|a| a.max_trials);
            let left = budget.map_or(0, |m| m.saturating_sub(until::search_trials(run.trials)));
            until::mark(&mut analysis.per_batch, run.trials, rel, &st, &looks, left);
        }
    }
    let mut r = from_analysis(analysis, run);
    r.add_projection(run, opts);
    r
}

/// The report of a sweep that just ended in this process (every way a sweep ends: the CLI, the
/// cluster front end, the TUI): its own records, its trial errors; the log is not read again.
pub fn of_sweep(result: &SweepResult, opts: &ReportOptions) -> Report {
    let run = Run {
        header: &result.header,
        trials: &result.trials,
        path: Some(&result.log_path),
        progress: Progress {
            trials_done: result.trials_done,
            trials_planned: result.trials_planned,
            stages: result.counts,
            wall_s: Some(result.wall_s),
            cancelled: result.cancelled,
        },
        warnings: &[],
        calibrated: result.calibrated.as_ref(),
    };
    // the sweep's own analysis when the report reads the same study (no target of its own)
    let same = study_of(&run, opts.target) == result.study;
    let mut r = build_from(&run, opts, same.then(|| result.analysis.clone()));
    r.errors = result.errors.clone();
    r
}

impl Run<'_> {
    /// A run log read back: its trials, its summary's wall time and state, the reader's warnings.
    pub fn of_log(log: &RunLog) -> Run<'_> {
        Run {
            header: &log.header,
            trials: &log.trials,
            path: Some(&log.path),
            progress: Progress {
                trials_done: log.trials.len(),
                trials_planned: log.planned_trials(),
                stages: log.stage_counts(),
                wall_s: log.summary.as_ref().map(|s| s.wall_s),
                cancelled: log.summary.as_ref().is_some_and(|s| !s.complete),
            },
            warnings: &log.warnings,
            calibrated: log.calibrated.as_ref(),
        }
    }
}

impl Report {
    /// The report of a run log, with its time-to-target projection over 1 … `max_devices`
    /// devices and the reader's warnings.
    pub fn from_log(log: &RunLog, max_devices: usize) -> Report {
        Self::from_log_with(log, max_devices, None)
    }

    /// [`Report::from_log`] with the projection's measured link fitted to a saved
    /// `bench --allreduce` table (see `runlog::link_table::find_link_table`).
    pub fn from_log_with(log: &RunLog, max_devices: usize, table: Option<&LinkTable>) -> Report {
        let opts = ReportOptions {
            max_devices,
            link_table: table,
            target: None,
        };
        build(&Run::of_log(log), &opts)
    }

    /// [`Report::from_log_with`] read at another target (`--target`).
    pub fn from_log_at(
        log: &RunLog,
        max_devices: usize,
        table: Option<&LinkTable>,
        target: Option<f64>,
    ) -> Report {
        let opts = ReportOptions {
            max_devices,
            link_table: table,
            target,
        };
        build(&Run::of_log(log), &opts)
    }

    fn add_projection(&mut self, run: &Run, opts: &ReportOptions) {
        let a = &self.analysis;
        if run.header.preset.workload.closed_form() {
            self.projection_note =
                Some("none for the NQM (a closed-form model has no compute to time)".into());
            return;
        }
        if a.per_batch.iter().all(|p| p.steps.is_none()) {
            self.projection_note = Some("no batch size reached the target".into());
            return;
        }
        if a.withheld() {
            self.projection_note = Some(format!(
                "withheld (too little evidence: it needs {})",
                notes::evidence_rule()
            ));
            return;
        }
        let (Some(ps), Some(c)) = (
            proj::project_all(run.trials, a, opts.max_devices, opts.link_table),
            proj::calibrate_compute(run.trials),
        ) else {
            self.projection_note =
                Some("the log has no measured compute times (imported or NQM data)".into());
            return;
        };
        self.projection_check =
            proj::measured_check(run.trials, a, &c).map(|(batch_size, measured_s, modelled_s)| {
                ProjectionCheck {
                    batch_size,
                    measured_s,
                    modelled_s,
                }
            });
        if let Some(link) = ps.iter().map(|p| &p.link).find(|l| l.measured) {
            self.projection_link = link.source.clone();
            self.exchange_check = proj::exchange_check(run.trials, link).map(
                |(devices, bytes, measured_s, modelled_s)| ExchangeCheck {
                    devices,
                    bytes,
                    measured_s,
                    modelled_s,
                },
            );
        }
        self.projection_backend = Some(projection_backend(run));
        self.projections = Some(ps);
    }

    /// S_min and B_crit with their 95 % intervals ("68.3 [64.7–71.9]", "27.1 [24.8–30.0]"), as
    /// `compare` shows them; None without a fit (or withheld: `evidence.text` says why).
    pub fn fit_with_intervals(&self) -> Option<[String; 2]> {
        self.analysis.fit.as_ref().map(format::fit_with_intervals)
    }

    /// Fit values as the TUI and the CLI show them: ("S_min", "B_crit", "R²").
    pub fn fit_numbers(&self) -> Option<(String, String, String)> {
        self.fit
            .as_ref()
            .map(|f| (num(f.s_min), num(f.b_crit), format!("{:.3}", f.r2)))
    }
}

/// What the projection's compute was timed on: the backend, its devices, trials sharing the
/// machine, processes of a multi-node trial.
fn projection_backend(run: &Run) -> String {
    // Newer headers already name the devices ("burn-flex (cpu), 2 workers").
    let h = run.header;
    let b = &h.backend;
    let mut backend = if b.contains("worker") || b.contains("cuda:") {
        b.clone()
    } else {
        format!("{b}, {}", h.devices.label())
    };
    if h.concurrency > 1 {
        backend.push_str(&format!(
            ", {} trials at once sharing the machine",
            h.concurrency
        ));
    }
    if let Some(t) = run.trials.iter().find(|t| t.outcome.throughput.nodes >= 2) {
        let th = &t.outcome.throughput;
        backend.push_str(&format!(
            " per process × {} processes{}",
            th.nodes,
            if th.loopback { " (loopback)" } else { "" }
        ));
    }
    backend
}
