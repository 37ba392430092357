use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::workload::spec::{Metaparams, Precision};

/// Where a trial runs.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum DeviceSpec {
    /// G data-parallel CPU workers (threads), labelled "workers", never "GPUs".
    Cpu { workers: usize },
    /// One replica per listed CUDA device index.
    Cuda { devices: Vec<usize> },
    /// One replica per listed wgpu adapter index (`--features wgpu`; Vulkan, Metal, DX12). An
    /// index may repeat: `wgpu:0,0` is two replicas sharing adapter 0.
    Wgpu { adapters: Vec<usize> },
}

impl DeviceSpec {
    pub fn is_cpu(&self) -> bool {
        matches!(self, DeviceSpec::Cpu { .. })
    }
    pub fn replicas(&self) -> usize {
        match self {
            DeviceSpec::Cpu { workers } => *workers,
            DeviceSpec::Cuda { devices } => devices.len(),
            DeviceSpec::Wgpu { adapters } => adapters.len(),
        }
    }
    /// The GPU indices of a CUDA or wgpu spec (None: CPU workers).
    pub fn gpu_ids(&self) -> Option<&[usize]> {
        match self {
            DeviceSpec::Cpu { .. } => None,
            DeviceSpec::Cuda { devices } => Some(devices),
            DeviceSpec::Wgpu { adapters } => Some(adapters),
        }
    }
    /// The same kind of GPU spec on other indices (a CPU spec is returned unchanged).
    pub fn with_gpu_ids(&self, ids: Vec<usize>) -> DeviceSpec {
        match self {
            DeviceSpec::Cpu { .. } => self.clone(),
            DeviceSpec::Cuda { .. } => DeviceSpec::Cuda { devices: ids },
            DeviceSpec::Wgpu { .. } => DeviceSpec::Wgpu { adapters: ids },
        }
    }
    /// What a replica is called in messages: "workers", "GPUs" (CUDA), "replicas" (wgpu, whose
    /// replicas may share an adapter).
    pub fn replica_noun(&self) -> &'static str {
        match self {
            DeviceSpec::Cpu { .. } => "workers",
            DeviceSpec::Cuda { .. } => "GPUs",
            DeviceSpec::Wgpu { .. } => "replicas",
        }
    }
    /// For wgpu specs that repeat an adapter: "2 replicas sharing adapter 0" (None otherwise).
    pub fn sharing(&self) -> Option<String> {
        let DeviceSpec::Wgpu { adapters } = self else {
            return None;
        };
        let mut distinct = adapters.clone();
        distinct.sort_unstable();
        distinct.dedup();
        if distinct.len() == adapters.len() {
            return None;
        }
        let parts: Vec<String> = distinct
            .iter()
            .map(|a| {
                let n = adapters.iter().filter(|x| *x == a).count();
                format!(
                    "{n} replica{} on adapter {a}",
                    if n == 1 { "" } else { "s" }
                )
            })
            .collect();
        Some(if distinct.len() == 1 {
            format!(
                "{} replicas sharing adapter {}",
                adapters.len(),
                distinct[0]
            )
        } else {
            parts.join(", ")
        })
    }
    pub fn label(&self) -> String {
        match self {
            DeviceSpec::Cpu { workers } => {
                format!(
                    "cpu × {workers} worker{}",
                    if *workers == 1 { "" } else { "s" }
                )
            }
            DeviceSpec::Cuda { devices } => format!(
                "cuda:{}",
                devices
                    .iter()
                    .map(|d| d.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            DeviceSpec::Wgpu { adapters } => format!(
                "wgpu:{}",
                adapters
                    .iter()
                    .map(|d| d.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        }
    }
}

/// Everything needed to run one trial (besides the workload itself).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct TrialSpec {
    /// Index in the sweep plan (stable across resume); 0 for a single `train` run.
    pub trial_id: u64,
    /// Global batch size B (split into `devices.replicas()` equal shards).
    pub batch_size: usize,
    pub devices: DeviceSpec,
    pub precision: Precision,
    pub metaparams: Metaparams,
    /// Seed of initialisation and data order.
    pub seed: u64,
    /// `--repeats`: this trial re-runs trial `repeat_of`'s metaparameters with another seed (full
    /// budget, no early stopping). Repeats never enter S(B)'s best-of-K minimum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat_of: Option<u64>,
    /// The confirm stage: this trial re-runs a search configuration with a fresh seed
    /// (full budget, no early stopping; `core::confirm`). Confirm trials never enter S(B)'s
    /// best-of-K minimum; they give the confirmed S(B).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm: Option<crate::core::confirm::ConfirmMark>,
    /// The calibration stage: a pilot trial, with its own budget, evaluation spacing and target
    /// (`core::calibrate`). Pilot trials never enter S(B); they choose the study.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibrate: Option<crate::core::calibrate::CalibrateMark>,
}

impl TrialSpec {
    /// `k` trials like this one, numbered 0..k, seeds `seed`..`seed + k` (a group of distinct
    /// networks for measuring a group's cost), each with its own cancel token.
    pub fn members(&self, k: usize) -> (Vec<TrialSpec>, Vec<CancelToken>) {
        let specs = (0..k as u64)
            .map(|i| TrialSpec {
                trial_id: i,
                seed: self.seed + i,
                ..self.clone()
            })
            .collect();
        (specs, vec![CancelToken::new(); k])
    }

    /// Trial 0 at batch size `batch_size` on one CPU worker in fp32, seed 0 (callers set the
    /// fields they vary with struct-update syntax).
    pub fn cpu(batch_size: usize, metaparams: Metaparams) -> Self {
        TrialSpec {
            trial_id: 0,
            batch_size,
            devices: DeviceSpec::Cpu { workers: 1 },
            precision: Precision::Fp32,
            metaparams,
            seed: 0,
            repeat_of: None,
            confirm: None,
            calibrate: None,
        }
    }

    /// A search trial: neither a repeat (`--repeats`), a confirm trial nor a pilot trial of the
    /// calibration. Only search trials are cut by early stopping, count in S(B)'s best of K and
    /// in the search's counts.
    pub fn is_search(&self) -> bool {
        self.repeat_of.is_none() && self.confirm.is_none() && self.calibrate.is_none()
    }
}

/// How a trial ended, measured as Shallue et al. measure it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    /// First evaluation at which the metric met the target.
    Reached { step: u64 },
    /// The step budget ran out first. `early_stopped`: the budget was cut to the best
    /// steps-to-target already measured at this batch size (the trial could no longer win).
    NotReached {
        budget: u64,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        early_stopped: bool,
    },
    /// Loss became NaN/inf or blew up (Google's data calls this INFEASIBLE).
    Diverged { step: u64 },
    /// Stopped by the user; never counted as a result.
    Cancelled { step: u64 },
    /// The device ran out of memory at this batch size (a CUDA allocation failed): kept and
    /// counted like a diverged trial, never a steps-to-target.
    Oom { batch_size: usize, step: u64 },
}

impl Outcome {
    pub fn steps_to_target(&self) -> Option<u64> {
        match self {
            Outcome::Reached { step } => Some(*step),
            _ => None,
        }
    }
    pub fn label(&self) -> &'static str {
        match self {
            Outcome::Reached { .. } => "reached",
            Outcome::NotReached { .. } => "not reached",
            Outcome::Diverged { .. } => "diverged",
            Outcome::Cancelled { .. } => "cancelled",
            Outcome::Oom { .. } => "out of memory",
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
pub struct EvalPoint {
    pub step: u64,
    pub metric: f64,
    /// Mean training loss since the previous evaluation.
    pub train_loss: f64,
}

/// Gradient noise scale (McCandlish et al. App. A.1) summary of a trial.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct NoiseSummary {
    /// B_simple = EMA(tr Σ) / EMA(|G|²) at the evaluation that reached the target (or at the end).
    pub b_simple: Option<f64>,
    /// (step, B_simple) samples, bounded in length.
    pub trajectory: Vec<(u64, f64)>,
    /// Steps that measured tr(Σ) (every step at G ≥ 2; at G = 1 one step in `sample_every`).
    /// Absent (0) in older logs and where no estimate ran.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub samples: u64,
    /// Steps between two tr(Σ) samples at the end of the trial (1 = every step; at G = 1 chosen
    /// from the measured cost of a sample unless `--noise-every` fixed it).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub sample_every: u64,
    /// Seconds the estimate's own work took in this trial: at G = 1 the extra half-batch backward
    /// and its distance on the sampled steps after the first (host time: exact on the CPU, the
    /// dispatch on a GPU; the first step is cold, with a GPU's kernel compilation and autotuning);
    /// 0 at G ≥ 2, where the norms come from the exchange's buffers. Absent (0) in older logs.
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub cost_s: f64,
    /// 95 % interval of `b_simple` from the sampling noise of its two running means (tr(Σ) and
    /// |g_B|², each with its window's variance and lag-1 autocorrelation; the delta method on
    /// ln B_simple). Absent in older logs, at targets other than the goal, and for the NQM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<NoiseInterval>,
}

/// A 95 % interval of a B_simple estimate.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
pub struct NoiseInterval {
    pub lo: f64,
    /// None: unbounded above — the |G|² estimate is not resolved from 0 at 95 %.
    pub hi: Option<f64>,
}

impl NoiseInterval {
    /// Whether `v` lies inside (an unbounded interval contains everything above `lo`).
    pub fn contains(&self, v: f64) -> bool {
        v >= self.lo && self.hi.is_none_or(|h| v <= h)
    }
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

fn is_zero_f64(x: &f64) -> bool {
    *x == 0.0
}

/// Throughput of a trial; the inputs of the time-to-target projection.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Throughput {
    pub examples_per_s: f64,
    /// Mean wall time of one step (seconds).
    pub step_s: f64,
    /// Mean forward+backward time per step (slowest replica).
    pub compute_s: f64,
    /// Mean gradient exchange (all-reduce) time per step.
    pub exchange_s: f64,
    /// Number of trainable parameters.
    pub params: u64,
    /// Bytes of gradient each replica contributes to the all-reduce per step.
    pub exchanged_bytes_per_step: u64,
    /// Processes (nodes) the exchange spanned: ≥ 2 for a multi-node trial, whose `exchange_s` is
    /// then measured across processes (absent: one process).
    #[serde(default, skip_serializing_if = "is_one_or_zero")]
    pub nodes: u64,
    /// The multi-node exchange ran over loopback (every node on this machine's 127.0.0.1).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub loopback: bool,
    /// Blocking device→host reads per training step and replica (the loss, the norms and the
    /// loss scaler's finite check come back together: 1). Absent (0) in older logs.
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub reads_per_step: f64,
    /// Blocking device→host reads per evaluation (every validation batch's sums in one: 1).
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub reads_per_eval: f64,
}

fn is_one_or_zero(n: &u64) -> bool {
    *n <= 1
}

impl Throughput {
    /// Replicas of the trial over all its processes, given the replicas of one process.
    pub fn world(&self, local_replicas: usize) -> usize {
        local_replicas.max(1) * (self.nodes.max(1) as usize)
    }
}

/// The complete result of one trial: what the run log stores.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct TrialOutcome {
    pub outcome: Outcome,
    /// Applied optimizer steps (excludes steps skipped by the loss scaler).
    pub steps: u64,
    pub skipped_steps: u64,
    pub final_loss_scale: f64,
    pub wall_s: f64,
    pub evals: Vec<EvalPoint>,
    pub noise: NoiseSummary,
    pub throughput: Throughput,
    /// Why the trial stopped where it did, in words, where the outcome alone does not say
    /// (diverged: "training loss is NaN", "50 consecutive steps skipped …"). Absent in older logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// A trial run with a batch-size schedule: its stages as they ran (empty: one batch size,
    /// `TrialSpec::batch_size`, the whole trial; absent in logs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<crate::core::schedule::StageRun>,
    /// A trial trained in a fused group (several trials of one batch size as one program): the
    /// group it ran in. Absent: trained alone (and in logs from before fused groups).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<GroupRun>,
    /// A language model with a transfer probe (`[workload.transfer]`): the probe's curve and the
    /// end-of-trial readout. Absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transfer: Option<Box<crate::core::transfer::TransferRecord>>,
}

/// The fused group a trial trained in (`TrialOutcome::group`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct GroupRun {
    /// The trials trained together, by id, in the group's order (this one among them).
    pub trials: Vec<u64>,
}

impl TrialOutcome {
    /// An outcome with nothing measured but how it ended and the steps applied: no evaluations,
    /// noise scale or timing, loss scale 1 (imports, scripted and never-started trials).
    pub fn bare(outcome: Outcome, steps: u64) -> Self {
        TrialOutcome {
            outcome,
            steps,
            skipped_steps: 0,
            final_loss_scale: 1.0,
            wall_s: 0.0,
            evals: Vec::new(),
            noise: NoiseSummary::default(),
            throughput: Throughput::default(),
            reason: None,
            stages: Vec::new(),
            group: None,
            transfer: None,
        }
    }
}

/// Cooperative cancellation flag shared with a running trial, and a step budget the sweep may
/// lower while it runs (another trial of its calibration pilot reached the target first).
#[derive(Clone, Debug)]
pub struct CancelToken {
    cancelled: Arc<AtomicBool>,
    stop_at: Arc<AtomicU64>,
}

impl Default for CancelToken {
    fn default() -> Self {
        Self {
            cancelled: Arc::default(),
            stop_at: Arc::new(AtomicU64::new(u64::MAX)),
        }
    }
}

impl CancelToken {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::SeqCst);
    }
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }
    /// Lowers the trial's step budget to `step` (never raises it): it trains on to `step` if it
    /// is not there yet and stops there, evaluated like any budget (`Meter::cap_budget`).
    pub fn cap_at(&self, step: u64) {
        self.stop_at.fetch_min(step, Ordering::SeqCst);
    }
    /// The budget `cap_at` set, if any.
    pub fn capped_at(&self) -> Option<u64> {
        Some(self.stop_at.load(Ordering::SeqCst)).filter(|&s| s < u64::MAX)
    }
}
