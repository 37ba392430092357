//! Serde types of a preset: the workload, its search space and sweep defaults.
//! Loading and validation (with file:line errors) live in `workload::load`.

use serde::{Deserialize, Serialize};

// The dataset of a workload belongs to the data layer (`data::spec`: its sources, formats and
// checks); the `[workload.model]` table to the model families (`model::family`, each family's
// fields in its own file). Both are imported from there, not through this module.
use crate::data::spec::DatasetSpec;
use crate::model::encoder::TransferFeature;
use crate::model::{Input, ModelSpec};

/// One TOML file under `presets/`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Preset {
    /// Left out of a file: the file's name (the loader sets it).
    #[serde(default)]
    pub name: String,
    /// Left out of a file: the model, dataset and optimizer in words (the loader writes it).
    #[serde(default)]
    pub description: String,
    pub workload: Workload,
    #[serde(default)]
    pub search: SearchSpace,
    #[serde(default)]
    pub sweep: SweepDefaults,
    /// What the study leaves to the calibration stage (`analysis::calibrate`): set by the loader
    /// for the settings a preset file leaves out, never written in one. Kept in the calibrated
    /// study (what was chosen), absent from a study that fixes everything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibrate: Option<Calibrate>,
}

/// Trials per batch size of a study that leaves its batch sizes or ranges to the calibration and
/// does not say.
pub const CALIBRATED_TRIALS_PER_BATCH: usize = 8;

/// The settings a study leaves out, which the calibration stage chooses from pilot trials
/// (docs/calibration.md).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(deny_unknown_fields)]
pub struct Calibrate {
    /// `[workload.target]`: the target (and a ladder of looser rungs).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub target: bool,
    /// `[search]`: per-B learning-rate ranges (and 1−γ for the momentum optimizers).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub search: bool,
    /// `[sweep] batch_sizes`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub batch_sizes: bool,
    /// `step_budget` and `max_examples`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub budget: bool,
    /// `eval_every` and `eval_growth`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub eval: bool,
    /// `[workload.defaults]` (a single `train` run's metaparameters).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub defaults: bool,
    /// `[sweep] trials_per_batch` and `confirm`: the study's size, fitted to the wall-time
    /// budget from the pilots' measured speed (never a reason on its own to calibrate).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub size: bool,
}

impl Calibrate {
    /// Whether anything is left to the calibration.
    pub fn any(&self) -> bool {
        self.target || self.search || self.batch_sizes || self.budget || self.eval || self.defaults
    }
    /// What the calibration chooses, in words: "the target, the η ranges and the batch sizes".
    pub fn words(&self) -> String {
        let words: Vec<&str> = self
            .keys()
            .iter()
            .map(|k| match *k {
                "target" => "the target",
                "search" => "the η ranges",
                "batch_sizes" => "the batch sizes",
                "step_budget" => "the step budget",
                "eval_every" => "the evaluation spacing",
                "trials_per_batch and confirm" => "the study's size (trials, confirm stage)",
                _ => "the default metaparameters",
            })
            .collect();
        match words.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
            _ => words.concat(),
        }
    }
    /// The settings left out, as their preset keys.
    pub fn keys(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        for (on, key) in [
            (self.target, "target"),
            (self.search, "search"),
            (self.batch_sizes, "batch_sizes"),
            (self.budget, "step_budget"),
            (self.eval, "eval_every"),
            (self.defaults, "defaults"),
            (self.size, "trials_per_batch and confirm"),
        ] {
            if on {
                v.push(key);
            }
        }
        v
    }
}

/// What is trained and how success is measured.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    /// `None` for the noisy quadratic model (it has no data).
    #[serde(default)]
    pub dataset: Option<DatasetSpec>,
    pub model: ModelSpec,
    pub optimizer: OptimizerKind,
    /// The goal: trials stop at the first evaluation that meets it. With a ladder (`targets`) it is
    /// the strictest rung. Left out of a preset: the calibration chooses it (`Preset::calibrate`).
    #[serde(default = "placeholder_target")]
    pub target: Target,
    /// A ladder of looser targets (values of `target.metric`, each looser than `target`) read from
    /// the same trials' evaluation curves, exactly: B_crit(target). Empty: one target.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<f64>,
    /// Evaluate the validation metric every k steps (left out: the calibration chooses it).
    #[serde(default = "one_u64")]
    pub eval_every: u64,
    /// Evaluation spacing grows geometrically once steps are large: after an evaluation at step s
    /// the next one is the first multiple of `eval_every` at or after max(s + eval_every,
    /// s·(1 + eval_growth)). 0 (the default) = every `eval_every` steps. Steps-to-target is then
    /// resolved to within a relative `eval_growth` (e.g. 0.05 = 5%) instead of `eval_every` steps, which
    /// is what a log-log curve needs, at a fraction of the evaluation cost on long, small-batch trials.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub eval_growth: f64,
    /// Give up after this many (applied) steps: outcome NotReached (left out: the calibration
    /// chooses it and `max_examples`).
    #[serde(default = "placeholder_budget")]
    pub step_budget: u64,
    /// Optional budget in training examples: a trial at batch size B stops after
    /// min(step_budget, ⌈max_examples / B⌉) steps, so a failing large-batch trial costs at most this
    /// many examples rather than step_budget·B. None = step_budget only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_examples: Option<u64>,
    #[serde(default)]
    pub precision: Precision,
    /// Default metaparameters for a single `train` run (left out: the calibration's best at
    /// its reference batch size).
    #[serde(default = "placeholder_defaults")]
    pub defaults: Metaparams,
    /// Global-norm gradient clipping (Puri et al. clip at 1.0). None = off.
    #[serde(default)]
    pub grad_clip: Option<f64>,
    /// Loss is declared diverged when it exceeds this multiple of the initial loss (or is NaN/inf).
    #[serde(default = "default_divergence_factor")]
    pub divergence_factor: f64,
    /// A language model's transfer probe (`[workload.transfer]`; the dataset names the probe's
    /// sentences). None: bits per byte only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transfer: Option<TransferSpec>,
}

/// `[workload.transfer]`: a linear probe on the language model's sentence features (the
/// `transfer` module; docs/science.md §11). Every trial that can be its batch size's best (it reached
/// the target, or ran its whole budget) gets an end-of-trial readout: the probe beside the same
/// probe on its untrained network (step 0), bag-of-bytes and the majority class.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct TransferSpec {
    /// Which state a sentence's feature is.
    #[serde(default)]
    pub feature: TransferFeature,
    /// Also probe at every k-th evaluation (a thinned schedule: a probe costs more than a
    /// validation loss); 0 (default) = the end-of-trial readout only. A `transfer_acc` target
    /// probes at every evaluation (thin those with `eval_every` / `eval_growth`).
    #[serde(default)]
    pub every: u64,
    /// Standardise each feature by its mean and standard deviation over the probe's training
    /// sentences before the fit. Off by default, as the reference (sentiment-discovery): the L1
    /// penalty then weighs a unit by its own scale, which favours a trained network's larger
    /// states over the untrained control's small ones.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub standardize: bool,
}

/// What a study that leaves its target out holds until the calibration chose one (the loader
/// sets the metric its model family reads).
fn placeholder_target() -> Target {
    Target {
        metric: Metric::ValError,
        value: 0.5,
    }
}

fn one_u64() -> u64 {
    1
}

fn placeholder_budget() -> u64 {
    1000
}

fn placeholder_defaults() -> Metaparams {
    Metaparams::new(0.01, 0.9)
}

fn default_divergence_factor() -> f64 {
    10.0
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

impl Workload {
    /// A noisy-quadratic-model workload (docs/science.md §5) with PyTorch-like default
    /// metaparameters (η 0.1, γ/β1 0.9, β2 0.999, ε 1e-8), evaluated every step for up to 100k
    /// steps; callers adjust the fields they study. Used by tests and by code that builds sweeps
    /// programmatically.
    pub fn nqm(dim: usize, optimizer: OptimizerKind, target: f64) -> Workload {
        Workload {
            dataset: None,
            model: ModelSpec::Nqm(crate::model::nqm::NqmSpec::new(dim)),
            optimizer,
            target: Target {
                metric: Metric::ExpectedLoss,
                value: target,
            },
            targets: Vec::new(),
            eval_every: 1,
            eval_growth: 0.0,
            step_budget: 100_000,
            max_examples: None,
            precision: Precision::Fp32,
            defaults: Metaparams::new(0.1, 0.9),
            grad_clip: None,
            divergence_factor: default_divergence_factor(),
            transfer: None,
        }
    }

    /// Whether this workload's trials are computed in closed form rather than trained: its family
    /// reads no data (the noisy quadratic model), so there is no network, no sampling and no
    /// compute to time. What follows from it: the closed-form runner (`sweep::runners`), no thread
    /// layout to calibrate and nothing to fuse (`sweep::layout`), no precision, gradients, seeds,
    /// workers or noise-scale cost (`workload::applied`), no memory limit on its batch sizes, no
    /// compute projection in the report, and a metric that is an expected loss, not a rate
    /// ([`Metric::ExpectedLoss`]).
    pub fn closed_form(&self) -> bool {
        self.model.family().input() == Input::None
    }

    /// The step budget of a trial at global batch size `batch` (see `max_examples`).
    pub fn budget_for(&self, batch: usize) -> u64 {
        let by_examples = self
            .max_examples
            .map(|e| e.div_ceil(batch.max(1) as u64).max(self.eval_every.max(1)))
            .unwrap_or(u64::MAX);
        self.step_budget.min(by_examples)
    }

    /// The evaluation step after one at `last` (0 = none yet); see `eval_growth`.
    pub fn next_eval(&self, last: u64) -> u64 {
        let every = self.eval_every.max(1);
        let mut at = last + every;
        if self.eval_growth > 0.0 {
            // (−1e-9: 100·1.1 must give 110, not 111 from rounding.)
            let grown = (last as f64 * (1.0 + self.eval_growth) - 1e-9).ceil() as u64;
            at = at.max(grown.div_ceil(every) * every);
        }
        at
    }
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum OptimizerKind {
    Sgd,
    Momentum,
    Nesterov,
    Adam,
}

impl OptimizerKind {
    pub fn uses_momentum(self) -> bool {
        matches!(self, OptimizerKind::Momentum | OptimizerKind::Nesterov)
    }
    pub fn name(self) -> &'static str {
        match self {
            OptimizerKind::Sgd => "sgd",
            OptimizerKind::Momentum => "momentum",
            OptimizerKind::Nesterov => "nesterov",
            OptimizerKind::Adam => "adam",
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Precision {
    #[default]
    Fp32,
    Bf16,
    Fp16,
}

impl Precision {
    pub fn name(self) -> &'static str {
        match self {
            Precision::Fp32 => "fp32",
            Precision::Bf16 => "bf16",
            Precision::Fp16 => "fp16",
        }
    }
    /// Bytes per gradient element exchanged in the all-reduce.
    pub fn grad_bytes(self) -> usize {
        match self {
            Precision::Fp32 => 4,
            _ => 2,
        }
    }
}

/// The goal a trial must reach: `metric <= value` for the minimised metrics (error,
/// cross-entropy, the NQM's loss), `metric >= value` for the maximised one (`transfer_acc`).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Target {
    pub metric: Metric,
    pub value: f64,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Validation classification error in [0, 1].
    ValError,
    /// Validation cross-entropy in bits per character.
    ValBpc,
    /// The expected loss of a closed-form workload (the noisy quadratic model's), > 0 and
    /// unbounded: not a rate. (`nqm_loss` in presets and run logs.)
    #[serde(rename = "nqm_loss")]
    ExpectedLoss,
    /// A language model's transfer: the held-out accuracy of a linear probe on its sentence
    /// features (`[workload.transfer]`, the `transfer` module), in [0, 1]. Maximised.
    TransferAcc,
}

impl Metric {
    pub fn name(self) -> &'static str {
        match self {
            Metric::ValError => "val_error",
            Metric::ValBpc => "val_bpc",
            Metric::ExpectedLoss => "nqm_loss",
            Metric::TransferAcc => "transfer_acc",
        }
    }
    /// Higher is better (a target is met from above): only `transfer_acc`.
    pub fn maximised(self) -> bool {
        matches!(self, Metric::TransferAcc)
    }
    /// ">=" for a maximised metric, "<=" otherwise: how a target is written.
    pub fn relation(self) -> &'static str {
        if self.maximised() {
            ">="
        } else {
            "<="
        }
    }
}

impl Target {
    /// The metric meets the target (a NaN or infinite metric never does).
    pub fn is_met(&self, metric: f64) -> bool {
        metric.is_finite()
            && if self.metric.maximised() {
                metric >= self.value
            } else {
                metric <= self.value
            }
    }
    /// A target value no evaluation meets (a calibration's trials run their whole budget).
    pub fn unreachable_value(metric: Metric) -> f64 {
        if metric.maximised() {
            f64::INFINITY
        } else {
            f64::NEG_INFINITY
        }
    }
}

/// Learning-rate scaling rule relative to a base batch size.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[serde(rename_all = "kebab-case")]
pub enum LrRule {
    #[default]
    None,
    Linear,
    Sqrt,
}

impl LrRule {
    /// η(B) from η0 at base batch B0.
    pub fn scale(self, lr: f64, batch: usize, base_batch: usize) -> f64 {
        let r = batch as f64 / base_batch.max(1) as f64;
        match self {
            LrRule::None => lr,
            LrRule::Linear => lr * r,
            LrRule::Sqrt => lr * r.sqrt(),
        }
    }
}

/// The metaparameters of one trial (the learning rate is the one actually used at this batch size).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Metaparams {
    pub learning_rate: f64,
    /// γ for momentum/Nesterov, β1 for Adam; ignored by SGD.
    #[serde(default = "default_momentum")]
    pub momentum: f64,
    /// Adam β2.
    #[serde(default = "default_beta2")]
    pub beta2: f64,
    /// Adam ε (PyTorch default 1e-8).
    #[serde(default = "default_eps")]
    pub epsilon: f64,
    #[serde(default)]
    pub schedule: Schedule,
}

fn default_momentum() -> f64 {
    0.9
}
fn default_beta2() -> f64 {
    0.999
}
fn default_eps() -> f64 {
    1e-8
}

impl Metaparams {
    /// η and γ (β1 for Adam) with the defaults a preset file gets for the rest: β2 0.999, ε 1e-8,
    /// a constant schedule.
    pub fn new(learning_rate: f64, momentum: f64) -> Self {
        Metaparams {
            learning_rate,
            momentum,
            beta2: default_beta2(),
            epsilon: default_eps(),
            schedule: Schedule::default(),
        }
    }

    /// Effective learning rate η/(1−γ) for momentum optimizers, η otherwise.
    pub fn effective_lr(&self, opt: OptimizerKind) -> f64 {
        if opt.uses_momentum() {
            self.learning_rate / (1.0 - self.momentum).max(1e-12)
        } else {
            self.learning_rate
        }
    }
}

/// Warmup then decay; the schedule's step counter advances only on applied (not skipped) steps.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct Schedule {
    /// Linear warmup from 0 to η0 over this many steps (0 = none).
    #[serde(default)]
    pub warmup_steps: u64,
    #[serde(default)]
    pub decay: Decay,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Decay {
    #[default]
    Constant,
    /// Linear decay from η0 to α·η0 over `steps` steps, then constant (Shallue et al.).
    /// α = 0 gives Puri et al.'s decay to zero.
    Linear { alpha: f64, steps: u64 },
}

impl Schedule {
    /// Learning rate at (applied) step `t` (0-based) for base rate `lr`.
    pub fn lr_at(&self, lr: f64, t: u64) -> f64 {
        let warm = if self.warmup_steps > 0 && t < self.warmup_steps {
            (t + 1) as f64 / self.warmup_steps as f64
        } else {
            1.0
        };
        let decay = match self.decay {
            Decay::Constant => 1.0,
            Decay::Linear { alpha, steps } => {
                if steps == 0 {
                    alpha
                } else {
                    let f = (t.min(steps)) as f64 / steps as f64;
                    1.0 - (1.0 - alpha) * f
                }
            }
        };
        lr * warm * decay
    }
}

/// The quasi-random search space of a sweep (Shallue et al. §4).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SearchSpace {
    /// η drawn log-uniformly in [lo, hi] (at the base batch if an LR rule centres the range).
    pub learning_rate: [f64; 2],
    /// 1−γ drawn log-uniformly in [lo, hi]; None = keep the default momentum.
    #[serde(default)]
    pub one_minus_momentum: Option<[f64; 2]>,
    /// Decay factor α drawn log-uniformly in [lo, hi]; None = no decay (constant schedule).
    #[serde(default)]
    pub decay_alpha: Option<[f64; 2]>,
    /// Decay length T as a fraction of the step budget, drawn uniformly in [lo, hi].
    #[serde(default)]
    pub decay_fraction: Option<[f64; 2]>,
    /// Warmup steps as a fraction of the step budget (fixed).
    #[serde(default)]
    pub warmup_fraction: f64,
    /// Centre the learning-rate range per batch size with this rule relative to `base_batch`.
    #[serde(default)]
    pub lr_rule: LrRule,
    #[serde(default = "default_base_batch")]
    pub base_batch: usize,
    /// Per-B learning-rate ranges, `[[B, lo, hi], …]` (a calibrated study writes one per batch
    /// size): at a B listed its range, between two listed B the ends interpolated in log-log,
    /// beyond them the nearest; `learning_rate`, `lr_rule` and `base_batch` then do not apply.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub learning_rate_at: Vec<[f64; 3]>,
    /// The learning-rate ranges are of the effective rate η/(1−γ) (momentum optimizers): a
    /// trial's η is its drawn effective rate × its drawn 1−γ, so the search spreads along the
    /// diagonal where the good trials lie (Shallue et al. Fig. 8) instead of across it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub effective_lr: bool,
}

impl SearchSpace {
    /// The learning-rate range at batch size `b` (the preset's range re-centred by its LR rule).
    pub fn lr_range_at(&self, b: usize) -> [f64; 2] {
        if !self.learning_rate_at.is_empty() {
            return per_batch_range(&self.learning_rate_at, b as f64);
        }
        [
            self.lr_rule
                .scale(self.learning_rate[0], b, self.base_batch),
            self.lr_rule
                .scale(self.learning_rate[1], b, self.base_batch),
        ]
    }
}

/// The range at `b` of a per-B table `[[B, lo, hi], …]`: interpolated in log-log between the
/// listed B around it, the nearest listed range beyond them.
fn per_batch_range(rows: &[[f64; 3]], b: f64) -> [f64; 2] {
    let mut rows: Vec<[f64; 3]> = rows.to_vec();
    rows.sort_by(|x, y| x[0].total_cmp(&y[0]));
    let first = rows[0];
    let last = rows[rows.len() - 1];
    if b <= first[0] {
        return [first[1], first[2]];
    }
    if b >= last[0] {
        return [last[1], last[2]];
    }
    for w in rows.windows(2) {
        let (r0, r1) = (w[0], w[1]);
        if b <= r1[0] {
            let t = (b.ln() - r0[0].ln()) / (r1[0].ln() - r0[0].ln()).max(1e-300);
            let at = |i: usize| (r0[i].ln() + t * (r1[i].ln() - r0[i].ln())).exp();
            return [at(1), at(2)];
        }
    }
    [last[1], last[2]]
}

fn default_base_batch() -> usize {
    128
}

impl Default for SearchSpace {
    fn default() -> Self {
        SearchSpace {
            learning_rate: [1e-3, 1.0],
            one_minus_momentum: None,
            decay_alpha: None,
            decay_fraction: None,
            warmup_fraction: 0.0,
            lr_rule: LrRule::None,
            base_batch: default_base_batch(),
            learning_rate_at: Vec::new(),
            effective_lr: false,
        }
    }
}

/// Defaults of the `sweep` command for this preset.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SweepDefaults {
    /// Left out: the calibration chooses them.
    #[serde(default)]
    pub batch_sizes: Vec<usize>,
    /// Left out: 8 (the loader sets it).
    #[serde(default)]
    pub trials_per_batch: usize,
    #[serde(default = "default_workers")]
    pub workers: usize,
    /// Trials run at once (each on its own worker group).
    #[serde(default = "default_workers")]
    pub concurrency: usize,
    #[serde(default)]
    pub seed: u64,
    /// Early stopping (as in Google's released studies): a trial at batch size B stops once it has
    /// run as many steps as the best steps-to-target already measured at B. It can then no longer
    /// become the best trial, so S(B) — the minimum over trials — is exactly what a full run gives;
    /// the stopped trial is kept in the log as "did not reach (stopped early)".
    #[serde(default = "default_true", skip_serializing_if = "is_true")]
    pub early_stopping: bool,
    /// The preset leaves `concurrency` out: the scheduler chooses it (`sweep::layout`: one trial on
    /// all threads or one trial per core, measured per workload). Set by the loader, never written
    /// in a preset; `--concurrency N` clears it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub auto_concurrency: bool,
    /// GPU sweeps: 0 (default) = one trial spans all the listed devices; K ≥ 1 = every trial on
    /// one device, K trials per device at once (`sweep::devices`).
    #[serde(default, skip_serializing_if = "is_zero_usize")]
    pub trials_per_device: usize,
    /// A paper-scale preset meant for a GPU (`gpu_scale = true` under `[sweep]`): a sweep of it on
    /// the CPU (headless or Setup) warns with its estimated wall time (`sweep::layout`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub gpu_scale: bool,
    /// Fused trial groups (`fuse = "auto" | "off" | K`): the trials of one batch size trained as
    /// one program, at most K at a time (`sweep::scheduler`); "auto" (the default) lets the
    /// sweep's calibration choose K.
    #[serde(default, skip_serializing_if = "Fuse::is_auto")]
    pub fuse: Fuse,
    /// The confirm stage: after the search at each B, its best `configs`
    /// configurations re-run with `seeds` fresh seeds each; the confirmed S(B) is the seed median
    /// of the best of them (`analysis::confirm`). `confirm = "3x5"` or `"off"` in a preset; a
    /// preset file that leaves it out gets [`ConfirmPlan::DEFAULT`] (the loader sets it). Absent in
    /// a run log's header (older logs too): off.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "confirm_serde"
    )]
    pub confirm: Option<ConfirmPlan>,
    /// `confirm_until = REL`: the confirm stage goes on at every B whose confirmed
    /// interval is wider than ±REL, adding fresh seeds where they narrow it most (what
    /// `--until REL` does with a confirm stage; `--until` overrides it, `--until off` drops it).
    /// Only with a confirm stage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm_until: Option<f64>,
}

/// The most trials one fused group may hold (`[sweep] fuse`, `--fuse`; the trainer's
/// `train::runner::MAX_GROUP`).
pub const MAX_FUSE: usize = 64;

/// How a sweep groups the trials of one batch size into fused groups (one program each).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Fuse {
    /// The calibration chooses (`sweep::layout::resolve_fuse`).
    #[default]
    Auto,
    /// Every trial trains alone.
    Off,
    /// At most this many trials (≥ 2) in a group.
    Members(usize),
}

impl Fuse {
    pub fn is_auto(&self) -> bool {
        *self == Fuse::Auto
    }
    /// From the number of members a group may hold (1 or 0: off).
    pub fn of_members(k: usize) -> Self {
        if k <= 1 {
            Fuse::Off
        } else {
            Fuse::Members(k)
        }
    }
    /// The most trials in a group (1 when off; None while automatic).
    pub fn members(&self) -> Option<usize> {
        match self {
            Fuse::Auto => None,
            Fuse::Off => Some(1),
            Fuse::Members(k) => Some(*k),
        }
    }
    /// "auto", "off" or the number.
    pub fn label(&self) -> String {
        match self {
            Fuse::Auto => "auto".into(),
            Fuse::Off => "off".into(),
            Fuse::Members(k) => k.to_string(),
        }
    }
    /// Parses "auto", "off" or a number of trials (1 = off).
    pub fn parse(s: &str) -> Result<Self, String> {
        match s.trim() {
            "auto" => Ok(Fuse::Auto),
            "off" => Ok(Fuse::Off),
            t => match t.parse::<usize>() {
                Ok(k) if k >= 1 => Ok(Fuse::of_members(k)),
                _ => Err(format!(
                    "`{t}` is not a fuse setting: give a number of trials a group holds (≥ 1), \"off\" or \"auto\""
                )),
            },
        }
    }
}

impl Serialize for Fuse {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Fuse::Members(k) => s.serialize_u64(*k as u64),
            other => s.serialize_str(&other.label()),
        }
    }
}

impl<'de> Deserialize<'de> for Fuse {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            N(i64),
            S(String),
        }
        match Raw::deserialize(d).map_err(|_| {
            serde::de::Error::custom(
                "fuse must be a number of trials a group holds (≥ 1), \"off\" or \"auto\"",
            )
        })? {
            Raw::N(n) if n >= 1 => Ok(Fuse::of_members(n as usize)),
            Raw::N(n) => Err(serde::de::Error::custom(format!(
                "fuse = {n}: a group holds at least 1 trial (1 or \"off\": no fusion)"
            ))),
            Raw::S(s) => Fuse::parse(&s).map_err(serde::de::Error::custom),
        }
    }
}

/// `[sweep] confirm` / `--confirm`: k configurations × r fresh seeds each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConfirmPlan {
    /// k: the search's best configurations at each B that are confirmed.
    pub configs: usize,
    /// r: fresh seeds per configuration.
    pub seeds: usize,
}

impl ConfirmPlan {
    /// 3 configurations × 5 seeds.
    pub const DEFAULT: ConfirmPlan = ConfirmPlan {
        configs: 3,
        seeds: 5,
    };
    /// Most configurations per B (the trial id keeps three digits for the rank).
    pub const MAX_CONFIGS: usize = 100;
    /// Most seeds per configuration in the plan (`--until` may add more, below 1000).
    pub const MAX_SEEDS: usize = 100;

    /// Trials per batch size.
    pub fn trials(&self) -> usize {
        self.configs * self.seeds
    }

    /// Parses "KxR" (also "K×R", "KXR"), or "off" (None). The message says what is wrong.
    pub fn parse(s: &str) -> Result<Option<ConfirmPlan>, String> {
        let t = s.trim();
        if t.eq_ignore_ascii_case("off") || t.eq_ignore_ascii_case("none") {
            return Ok(None);
        }
        let (k, r) = t.split_once(['x', 'X', '×']).ok_or_else(|| {
            format!("`{s}`: expected K×R (configurations × seeds, e.g. 3x5) or off")
        })?;
        let num = |v: &str, what: &str, max: usize| -> Result<usize, String> {
            if v.trim().is_empty() {
                return Err(format!("`{s}`: {what} is missing (e.g. 3x5)"));
            }
            let n: usize = v
                .trim()
                .parse()
                .map_err(|_| format!("`{s}`: {what} `{}` is not a whole number", v.trim()))?;
            if n == 0 || n > max {
                return Err(format!("`{s}`: {what} must be 1 to {max} (got {n})"));
            }
            Ok(n)
        };
        let configs = num(k, "the configurations K", Self::MAX_CONFIGS)?;
        let seeds = num(r, "the seeds R", Self::MAX_SEEDS)?;
        if seeds < 2 {
            return Err(format!(
                "`{s}`: R must be at least 2 (one seed has no seed-to-seed spread to give an interval)"
            ));
        }
        Ok(Some(ConfirmPlan { configs, seeds }))
    }
}

impl std::fmt::Display for ConfirmPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}", self.configs, self.seeds)
    }
}

/// A confirm plan written as a string ("3x5"; "off" reads as None).
mod confirm_serde {
    use super::ConfirmPlan;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &Option<ConfirmPlan>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(p) => s.serialize_str(&p.to_string()),
            None => s.serialize_str("off"),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ConfirmPlan>, D::Error> {
        let s = String::deserialize(d)?;
        ConfirmPlan::parse(&s).map_err(serde::de::Error::custom)
    }
}

fn is_zero_usize(n: &usize) -> bool {
    *n == 0
}

fn default_workers() -> usize {
    1
}

fn default_true() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

impl Default for SweepDefaults {
    fn default() -> Self {
        SweepDefaults {
            batch_sizes: vec![16, 32, 64, 128, 256, 512, 1024, 2048],
            trials_per_batch: 8,
            workers: 1,
            concurrency: 1,
            seed: 0,
            early_stopping: true,
            auto_concurrency: false,
            trials_per_device: 0,
            gpu_scale: false,
            fuse: Fuse::Auto,
            confirm: None,
            confirm_until: None,
        }
    }
}

#[cfg(test)]
mod tests;
