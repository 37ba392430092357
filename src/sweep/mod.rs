//! The batch-size study of Shallue et al.: the plan (`core::plan`: quasi-random metaparameters per batch size),
//! scheduler (runs trials through a `TrialRunner`, writes the run log, returns a `SweepResult`
//! with everything the report needs), the thread layout (`layout`), device slots (`devices`), the
//! one override path for flags and Setup fields (`overrides`) and the runner factory (`runners`:
//! the Burn trainer or the NQM). The analysis lives in `crate::analysis`, the report and the
//! headless view in `crate::report`.
//!
//! Layering: imports `data`, `workload`, `core`, `model`, `train`, `nqm`, `analysis` and
//! `runlog`.

pub mod calibrate;
pub mod devices;
pub mod layout;
pub mod overrides;

mod resume;
pub mod runners;
pub mod scheduler;

use std::path::PathBuf;

use crate::core::confirm::ConfirmId;
use crate::core::plan;
use crate::core::record::Header;
use crate::core::trial::{DeviceSpec, TrialSpec};
use crate::core::widen::REPEAT_ID_BASE;
use crate::workload::spec::{Fuse, Precision, Preset};

pub use runners::runner_for;
pub use scheduler::{start_sweep, SweepControl, SweepHandle, SweepResult};

/// Everything a sweep needs besides the trial runner.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepConfig {
    pub preset: Preset,
    pub preset_path: Option<PathBuf>,
    pub batch_sizes: Vec<usize>,
    pub trials_per_batch: usize,
    /// Devices of ONE trial (G data-parallel replicas).
    pub devices: DeviceSpec,
    /// Trials run at once (each on its own threads / devices).
    pub concurrency: usize,
    pub precision: Precision,
    pub seed: u64,
    pub runs_dir: PathBuf,
    /// `--repeats R`: after the search trials, run each B's best metaparameters R − 1 more times
    /// with new seeds (1 = no repeats). Repeats never change S(B); see `analysis`.
    pub repeats: usize,
    /// `--until REL`: keep adding search trials (Halton continuation) at the B where one more is
    /// expected to narrow `steps_ci` most (`analysis::until::outlook`), until all are ≤ REL or have
    /// flattened, or `max_trials` search trials ran. With a confirm stage it adds confirm seeds
    /// instead (`analysis::confirm::outlook`); the preset's `[sweep] confirm_until` is its default.
    pub until: Option<f64>,
    /// Budget of search trials for `until` (plan included); None = 4 × the plan.
    pub max_trials: Option<usize>,
    /// `--widen N`: when the best trial at a B sits at the edge of the explored η / 1−γ range, run a
    /// group of trials there in the range moved half a width past that edge; at most N moves each
    /// way (0 = off). See `crate::core::widen`.
    pub widen: usize,
    /// Fused trial groups: the trials of one batch size trained as one program, at most K at a
    /// time (`Fuse::Auto`: the calibration chooses when the sweep starts; the header records K).
    pub fuse: Fuse,
    /// Stop once the calibration stage chose the study (`sweep --calibrate-only`): the log holds
    /// the pilots and the calibrated study, and `--resume` runs the study.
    pub calibrate_only: bool,
}

impl SweepConfig {
    /// The preset's own sweep defaults (batch sizes, trials, workers, concurrency, seed).
    pub fn from_preset(preset: Preset, preset_path: Option<PathBuf>, runs_dir: PathBuf) -> Self {
        let d = preset.sweep.clone();
        let preset_until = d.confirm.and(d.confirm_until);
        SweepConfig {
            precision: preset.workload.precision,
            preset,
            preset_path,
            batch_sizes: d.batch_sizes,
            trials_per_batch: d.trials_per_batch,
            devices: DeviceSpec::Cpu {
                workers: d.workers.max(1),
            },
            concurrency: d.concurrency.max(1),
            seed: d.seed,
            runs_dir,
            repeats: 1,
            // the preset's width target for its confirm stage
            until: preset_until,
            max_trials: None,
            widen: 0,
            fuse: d.fuse,
            calibrate_only: false,
        }
    }

    /// The configuration recorded in a run log's header: what `--resume` re-runs.
    pub fn from_header(header: &Header, runs_dir: PathBuf) -> Self {
        SweepConfig {
            preset: header.preset.clone(),
            preset_path: header.preset_path.as_ref().map(PathBuf::from),
            batch_sizes: header.batch_sizes.clone(),
            trials_per_batch: header.trials_per_batch,
            devices: header.devices.clone(),
            concurrency: header.concurrency.max(1),
            precision: header.preset.workload.precision,
            seed: header.seed,
            runs_dir,
            repeats: header.adaptive.as_ref().map_or(1, |a| a.repeats.max(1)),
            until: header.adaptive.as_ref().and_then(|a| a.until),
            max_trials: header.adaptive.as_ref().and_then(|a| a.max_trials),
            widen: header.adaptive.as_ref().and_then(|a| a.widen).unwrap_or(0),
            fuse: Fuse::of_members(header.fuse),
            calibrate_only: false,
        }
    }

    /// What the run-log header records of `repeats` / `until` (None: neither is used).
    pub fn adaptive(&self) -> Option<crate::core::record::Adaptive> {
        (self.repeats > 1 || self.until.is_some() || self.widen > 0).then(|| {
            crate::core::record::Adaptive {
                repeats: self.repeats.max(1),
                until: self.until,
                max_trials: self.until.map(|_| self.search_budget()),
                widen: (self.widen > 0).then_some(self.widen),
            }
        })
    }

    /// The devices of ONE trial: `devices`, or one of them with `[sweep] trials_per_device`.
    pub fn trial_devices(&self) -> DeviceSpec {
        crate::core::devices::trial_devices(&self.devices, self.preset.sweep.trials_per_device)
    }

    /// Search trials `until` may run in all (plan included).
    pub fn search_budget(&self) -> usize {
        self.max_trials
            .unwrap_or(4 * self.batch_sizes.len() * self.trials_per_batch)
            .max(self.batch_sizes.len() * self.trials_per_batch)
    }

    /// Checks a configuration before anything runs (clear messages, no panics later).
    pub fn validate(&self) -> anyhow::Result<()> {
        let calibrated_sizes = self.preset.calibrate.is_some_and(|c| c.batch_sizes);
        anyhow::ensure!(
            !self.batch_sizes.is_empty() || calibrated_sizes,
            "no batch sizes to sweep"
        );
        anyhow::ensure!(
            self.batch_sizes.iter().all(|&b| b > 0),
            "batch sizes must be positive (got {:?})",
            self.batch_sizes
        );
        let mut sorted = self.batch_sizes.clone();
        sorted.sort_unstable();
        sorted.dedup();
        anyhow::ensure!(
            sorted.len() == self.batch_sizes.len(),
            "batch sizes contain duplicates: {:?}",
            self.batch_sizes
        );
        anyhow::ensure!(
            self.trials_per_batch > 0,
            "trials per batch size must be at least 1"
        );
        anyhow::ensure!(self.concurrency > 0, "concurrency must be at least 1");
        if let Some(k) = self.fuse.members() {
            anyhow::ensure!(
                k <= crate::train::runner::MAX_GROUP,
                "fuse = {k}: at most {} trials in one group",
                crate::train::runner::MAX_GROUP
            );
        }
        anyhow::ensure!(self.repeats >= 1, "--repeats must be at least 1");
        anyhow::ensure!(
            self.repeats <= 1000,
            "--repeats {} is more than 1000 runs per batch size",
            self.repeats
        );
        if let Some(rel) = self.until {
            anyhow::ensure!(
                rel.is_finite() && rel > 0.0,
                "--until must be a positive relative half-width such as 0.1 (got {rel})"
            );
        }
        anyhow::ensure!(
            (self.search_budget() as u64) < REPEAT_ID_BASE / 2,
            "the trial budget {} is too large",
            self.search_budget()
        );
        anyhow::ensure!(
            self.widen <= crate::core::widen::WIDEN_MAX_SHIFT as usize,
            "--widen {} is more than {} half-widths",
            self.widen,
            crate::core::widen::WIDEN_MAX_SHIFT
        );
        anyhow::ensure!(
            self.widen == 0 || self.batch_sizes.len() <= crate::core::widen::WIDEN_MAX_BATCH_SIZES,
            "--widen supports at most {} batch sizes",
            crate::core::widen::WIDEN_MAX_BATCH_SIZES
        );
        let g = self.trial_devices().replicas();
        anyhow::ensure!(g > 0, "a trial needs at least one device/worker");
        if let Some(&b) = self.batch_sizes.iter().find(|&&b| b % g != 0) {
            anyhow::bail!(
                "batch size {b} does not split into {g} equal shards (one per device/worker)"
            );
        }
        plan::validate_search(&self.preset)?;
        Ok(())
    }
}

/// The full, deterministic trial sequence of a sweep (re-derived identically on resume).
pub fn plan(cfg: &SweepConfig) -> Vec<TrialSpec> {
    plan::plan_trials(
        &cfg.preset,
        &cfg.batch_sizes,
        cfg.trials_per_batch,
        &cfg.trial_devices(),
        cfg.precision,
        cfg.seed,
    )
}

/// The ids of the confirm trials a sweep's records call for: at every batch size whose
/// plan trials are all logged, its best configurations × the plan's seeds (what a re-submitted
/// Slurm sweep still has to run; `--until` steps are decided by the running sweep).
pub fn confirm_stage_ids(
    cfg: &SweepConfig,
    records: &[crate::core::record::TrialRecord],
) -> Vec<u64> {
    let Some(plan) = cfg.preset.sweep.confirm else {
        return Vec::new();
    };
    let logged: std::collections::HashSet<u64> = records.iter().map(|r| r.trial_id).collect();
    let n = cfg.batch_sizes.len() as u64;
    let mut out = Vec::new();
    for (bi, &b) in cfg.batch_sizes.iter().enumerate() {
        let settled =
            (0..cfg.trials_per_batch as u64).all(|k| logged.contains(&(k * n + bi as u64)));
        if !settled {
            continue;
        }
        let top = crate::analysis::confirm::top_configs(records, b, plan.configs);
        for rank in 0..top.len() {
            for seed in 0..plan.seeds {
                out.extend(
                    ConfirmId {
                        batch_index: bi,
                        rank: rank as u32,
                        seed: seed as u32,
                    }
                    .encode(),
                );
            }
        }
    }
    out
}

/// Power-of-two batch sizes lo, 2·lo, … ≤ hi (the default grid).
pub fn powers_of_two(lo: usize, hi: usize) -> Vec<usize> {
    let mut v = Vec::new();
    let mut b = lo.max(1).next_power_of_two();
    while b <= hi {
        v.push(b);
        b *= 2;
    }
    v
}
