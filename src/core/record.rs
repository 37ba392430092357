//! Lines of a run log (JSONL). The schema is versioned; see docs/runlog-schema.json.

use serde::{Deserialize, Serialize};

use super::trial::{TrialOutcome, TrialSpec};
use crate::workload::spec::Preset;

/// The newest run-log schema this build writes. Version 3: a study with a calibration stage
/// (`Header::calibration`, pilot trials with a `calibrate` mark, a `calibrated` line); a log
/// without one is written as version 2 ([`schema_of`]), which older builds read.
/// Version 2: the header's preset may carry a ladder of targets (`workload.targets`).
pub const SCHEMA_VERSION: u32 = 3;
/// The schema of a log without a calibration stage.
pub const SCHEMA_WITHOUT_CALIBRATION: u32 = 2;

/// The schema a header is written with: 3 with a calibration stage, else 2.
pub fn schema_of(h: &Header) -> u32 {
    if h.calibration.is_some() {
        SCHEMA_VERSION
    } else {
        SCHEMA_WITHOUT_CALIBRATION
    }
}
/// The oldest schema this build still reads (version 1: no ladder; read as a single target).
pub const OLDEST_SCHEMA_VERSION: u32 = 1;

/// Whether this build reads run logs of schema `v`.
pub fn reads_schema(v: u64) -> bool {
    (OLDEST_SCHEMA_VERSION as u64..=SCHEMA_VERSION as u64).contains(&v)
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum LogLine {
    Header(Box<Header>),
    Trial(Box<TrialRecord>),
    /// The calibration stage's result (`analysis::calibrate`), written once its last pilot
    /// trial is: the study the search then runs. Re-derived and checked by every reader.
    Calibrated(Box<crate::core::calibrate::Calibrated>),
    Summary(Box<Summary>),
}

/// First line of every run log.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Header {
    pub schema: u32,
    /// The preset exactly as loaded (after CLI overrides).
    pub preset: Preset,
    /// Path the preset was loaded from, if any.
    pub preset_path: Option<String>,
    /// Sweep seed: the trial sequence is re-derived from it on resume.
    pub seed: u64,
    pub batch_sizes: Vec<usize>,
    pub trials_per_batch: usize,
    pub devices: crate::core::trial::DeviceSpec,
    pub concurrency: usize,
    /// git revision of the build (or "unknown").
    pub revision: String,
    pub crate_version: String,
    pub backend: String,
    /// RFC 3339.
    pub started: String,
    /// Where it came from: "scaling-lab" or "batch-science-import".
    #[serde(default = "default_source")]
    pub source: String,
    /// Set for logs imported from another lab's data (`source` says from where).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub import: Option<ImportInfo>,
    /// `--repeats` / `--until` of the sweep (absent: neither; what `--resume` re-runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<Adaptive>,
    /// The most trials of one batch size trained as one fused group (1: every trial alone; what
    /// `--resume` keeps; absent in logs from before fused groups, which trained alone).
    #[serde(default = "one")]
    pub fuse: usize,
    /// The data files the sweep read, each with its path, size and SHA-256 (a folder of images:
    /// its manifest's): `sweep --resume` refuses a log whose files changed since, readers warn
    /// (`runlog::validate`). Absent in logs from before it was recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub data_files: Vec<crate::data::DataFileRecord>,
    /// A study with a calibration stage (`preset.calibrate`): what its workload allows (the
    /// batch sizes it can train, the training set's size, a training example's FLOPs), measured
    /// when the sweep started, so that every reader re-derives the same pilot rounds. Absent
    /// otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<crate::core::calibrate::Facts>,
}

/// Trials a sweep adds beyond its plan (`SweepConfig::{repeats, until, max_trials, widen}`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Adaptive {
    /// Runs of each B's best metaparameters in all (the best trial + repeats − 1 more seeds).
    #[serde(default = "one")]
    pub repeats: usize,
    /// Add trials until every steps_ci relative half-width ≤ this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<f64>,
    /// Budget of search trials (plan included) for `until`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_trials: Option<usize>,
    /// `--widen N`: re-centre the search range at a B whose best trial is at its edge, at most N
    /// half-widths each way (`crate::core::widen`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub widen: Option<usize>,
}

fn one() -> usize {
    1
}

/// What an imported run log came from (Google's batch_science data, docs/science.md §7). The
/// header's `preset.workload.model` is only a placeholder the schema requires for such logs.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ImportInfo {
    pub directory: String,
    pub dataset: String,
    pub model: String,
    pub optimizer: String,
    /// measurements.csv column used as the validation metric, and how it was converted.
    pub metric_column: String,
    pub conversion: String,
    /// Target in the column's own units.
    pub target_value: f64,
    /// INCOMPLETE trials (ignored, as in the paper).
    pub ignored_incomplete: usize,
}

fn default_source() -> String {
    "scaling-lab".into()
}

/// One finished trial (written and fsynced before the next trial starts).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct TrialRecord {
    pub trial_id: u64,
    pub spec: TrialSpec,
    pub outcome: TrialOutcome,
    /// RFC 3339 time the trial finished.
    pub finished: String,
}

impl TrialRecord {
    /// The record of `spec`'s trial (its id), with no finish time.
    pub fn new(spec: TrialSpec, outcome: TrialOutcome) -> Self {
        TrialRecord {
            trial_id: spec.trial_id,
            spec,
            outcome,
            finished: String::new(),
        }
    }
}

/// Last line of a complete (or cleanly interrupted) sweep.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Summary {
    pub finished: String,
    pub trials_done: usize,
    pub trials_planned: usize,
    /// false when the sweep was cancelled/interrupted before finishing the plan.
    pub complete: bool,
    pub wall_s: f64,
    /// The sweep's analysis when it ended (`core::analysis::Analysis` as JSON, typed notes). Never
    /// read back for numbers: every reader recomputes the analysis from the trial records.
    pub analysis: serde_json::Value,
}
