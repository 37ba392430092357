//! The trainer's options that are not part of a trial's identity.

use std::time::Duration;

use super::exchange;
use super::scaler::ScalerConfig;

/// Options that are not part of a trial's identity.
#[derive(Clone, Debug)]
pub struct TrainOptions {
    /// Estimate the gradient noise scale (free at G ≥ 2; sampled at G = 1, see `noise_every`).
    pub noise_scale: bool,
    /// One worker: sample tr(Σ) every this many steps (1 = every step). `None`: the cadence
    /// follows the measured cost (`noise::Cadence`), the default.
    pub noise_every: Option<u64>,
    /// Override of the fp16 loss scaler (default: 2^16, ×0.5, ×2 after 2000). Only fp16 scales
    /// the loss: fp32 and bf16 keep scale 1 (and skip non-finite steps) whatever is given here.
    pub scaler: Option<ScalerConfig>,
    /// Minimum interval between Step events.
    pub step_event_interval: Duration,
    /// Examples per evaluation forward pass.
    pub eval_batch: usize,
    /// Gradient bytes per all-reduce call (bucketed exchange); 0 = one call per parameter tensor.
    pub bucket_bytes: usize,
    /// A trial whose loss scaler skips this many steps in a row is stopped as diverged.
    pub max_consecutive_skips: u64,
    /// This process is one node of a multi-node trial (src/cluster): the global batch is split
    /// over every node's replicas and the all-reduce spans the nodes. `None`: one process.
    pub cluster: Option<super::multinode::ClusterSpec>,
    /// A batch-size schedule: the trial starts at its first stage's batch size
    /// (which must be the spec's) and switches at evaluations; `None`: `TrialSpec::batch_size`
    /// the whole trial.
    pub batch_schedule: Option<crate::core::schedule::BatchSchedule>,
    /// Before a trial on a JIT device (CUDA, wgpu) at a batch size not yet known to fit, ask a
    /// child process of this binary whether it fits (`fit_probe`): an out-of-memory there is the
    /// trial's `oom` outcome and leaves this process's device usable. Set by the sweeps of the
    /// `scaling-lab` binary (several trials per process); `false` for `train` and library users.
    pub fit_probe: bool,
}

impl Default for TrainOptions {
    fn default() -> Self {
        TrainOptions {
            noise_scale: true,
            noise_every: default_noise_every(),
            scaler: None,
            step_event_interval: Duration::from_millis(100),
            eval_batch: 1000,
            bucket_bytes: exchange::default_bucket_bytes(),
            max_consecutive_skips: 50,
            cluster: None,
            batch_schedule: None,
            fit_probe: false,
        }
    }
}

/// `noise_every` of `TrainOptions::default()`: `SCALING_LAB_NOISE_EVERY` when set to a number ≥ 1
/// (for A/B measurements of the cadence with one binary, e.g. 1 = every step), else `None`
/// (the cadence follows the measured cost).
pub fn default_noise_every() -> Option<u64> {
    std::env::var("SCALING_LAB_NOISE_EVERY")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .filter(|&k| k >= 1)
}
