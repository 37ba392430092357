//! The batch-size study of Shallue et al.: plan (quasi-random metaparameters per batch size),
//! scheduler (runs trials through a `TrialRunner`, writes the run log), analysis (steps-to-target,
//! regimes, S = S_min·(1 + B_crit/B) fit) and the headless view model. The time-to-target
//! projection lives in `crate::analysis::projection`.

pub mod analysis;
pub mod headless;
pub mod plan;
pub mod scheduler;

use std::path::PathBuf;

use crate::core::record::Header;
use crate::core::trial::{DeviceSpec, TrialSpec};
use crate::workload::spec::{Precision, Preset};

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
}

impl SweepConfig {
    /// The preset's own sweep defaults (batch sizes, trials, workers, concurrency, seed).
    pub fn from_preset(preset: Preset, preset_path: Option<PathBuf>, runs_dir: PathBuf) -> Self {
        let d = preset.sweep.clone();
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
        }
    }

    /// Checks a configuration before anything runs (clear messages, no panics later).
    pub fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(!self.batch_sizes.is_empty(), "no batch sizes to sweep");
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
        let g = self.devices.replicas();
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
        &cfg.devices,
        cfg.precision,
        cfg.seed,
    )
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
