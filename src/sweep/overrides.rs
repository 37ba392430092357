//! One override/validation path for run settings. CLI flags (`sweep`, `train`, resume) and the
//! TUI's Setup fields become a [`SweepOverrides`]; [`SweepOverrides::apply`] range-checks every value
//! against the preset, writes the accepted ones into a [`SweepConfig`] and returns structured
//! [`Problem`]s (field, message, whether it blocks the run). No clap, no printing: callers decide how
//! to show the problems (`Problem::flag` names the CLI flag).

use std::fmt;

use crate::core::trial::DeviceSpec;
use crate::sweep::SweepConfig;
use crate::workload::spec::{ConfirmPlan, Metric, Precision, Workload};

/// Largest batch size accepted for a workload without a dataset (a closed-form workload has no
/// training set, and no memory that grows with the batch).
pub const MAX_BATCH_WITHOUT_DATA: usize = 1 << 40;
/// Largest number of data-parallel CPU workers of one trial.
pub const MAX_WORKERS: usize = 1024;
/// Largest number of trials per batch size.
pub const MAX_TRIALS: usize = 100_000;
/// Largest number of trials run at once.
pub const MAX_CONCURRENCY: usize = 256;
/// Largest step budget.
pub const MAX_STEPS: u64 = 1 << 40;

/// One problem with one setting.
#[derive(Clone, Debug, PartialEq)]
pub struct Problem {
    /// The setting, snake_case (`batch_sizes`, `loss_scale`, …): `flag()` gives the CLI flag.
    pub field: &'static str,
    pub message: String,
    /// A blocking problem stops the run; a non-blocking one is a warning.
    pub blocking: bool,
}

impl Problem {
    pub fn error(field: &'static str, message: impl Into<String>) -> Self {
        Problem {
            field,
            message: message.into(),
            blocking: true,
        }
    }
    pub fn warning(field: &'static str, message: impl Into<String>) -> Self {
        Problem {
            field,
            message: message.into(),
            blocking: false,
        }
    }
    /// The CLI flag of the field (`--batch-sizes`). `shards` (batch sizes that do not split over
    /// the devices) is given with `--batch-sizes`; Setup shows it under its devices field.
    pub fn flag(&self) -> String {
        match self.field {
            "shards" => "--batch-sizes".into(),
            f => format!("--{}", f.replace('_', "-")),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.flag(), self.message)
    }
}

/// The first blocking problem, if any.
pub fn first_blocking(problems: &[Problem]) -> Option<&Problem> {
    problems.iter().find(|p| p.blocking)
}

/// Settings that replace a preset's (every `None` keeps the preset's value).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SweepOverrides {
    pub batch_sizes: Option<Vec<usize>>,
    pub trials: Option<usize>,
    /// Data-parallel CPU workers of one trial (ignored when `devices` is given).
    pub workers: Option<usize>,
    /// Already-resolved devices (e.g. CUDA after a probe).
    pub devices: Option<DeviceSpec>,
    pub concurrency: Option<usize>,
    pub precision: Option<Precision>,
    pub seed: Option<u64>,
    /// Target value of the preset's metric.
    pub target: Option<f64>,
    /// A ladder of targets: the strictest becomes the goal (trials run until it), the
    /// others the looser rungs read from the same trials (`workload.targets`).
    pub targets: Option<Vec<f64>>,
    /// Step budget (replaces the preset's, including its example budget).
    pub steps: Option<u64>,
    pub eval_every: Option<u64>,
    /// Initial fp16 loss scale.
    pub loss_scale: Option<f64>,
    pub lr: Option<f64>,
    pub momentum: Option<f64>,
    /// The confirm stage: Some(None) turns it off, Some(Some(k×r)) sets it.
    pub confirm: Option<Option<ConfirmPlan>>,
}

/// The range of sensible target values of a metric, as (lo, hi) exclusive of lo; `hi` inclusive.
pub fn target_range(metric: Metric) -> (f64, f64) {
    match metric {
        // An error rate of 1 or more is met at step 0.
        Metric::ValError => (0.0, 1.0 - f64::EPSILON),
        // Bytes carry at most 8 bits.
        Metric::ValBpc => (0.0, 8.0),
        Metric::ExpectedLoss => (0.0, f64::MAX),
        // An accuracy of 0 is met at step 0, 1 never.
        Metric::TransferAcc => (0.0, 1.0 - f64::EPSILON),
    }
}

/// Checks a target value against its metric's range.
pub fn check_target(metric: Metric, value: f64) -> Option<Problem> {
    let (lo, hi) = target_range(metric);
    if !value.is_finite() || value <= lo || value > hi {
        let range = match metric {
            Metric::ValError => "0 < target < 1".to_string(),
            Metric::ValBpc => "0 < target ≤ 8".to_string(),
            Metric::ExpectedLoss => "a finite target > 0".to_string(),
            Metric::TransferAcc => "0 < target < 1".to_string(),
        };
        return Some(Problem::error(
            "target",
            format!(
                "{value} is out of range for {}: need {range}",
                metric.name()
            ),
        ));
    }
    None
}

/// The number of training examples of a workload's dataset (images; text: non-overlapping
/// `seq_len` windows; None for the NQM). Loads (and caches) the dataset; an error is the data
/// error's text.
pub fn training_set_size(w: &Workload) -> Result<Option<usize>, String> {
    match &w.dataset {
        None => Ok(None),
        Some(d) => crate::data::load_cached(d)
            .map(|ds| {
                Some(match ds.as_ref() {
                    crate::data::Dataset::Images(i) => i.n_train(),
                    // Non-overlapping windows of one example each.
                    crate::data::Dataset::Text(t) => (t.train.len() / t.seq_len.max(1)).max(1),
                })
            })
            .map_err(|e| e.to_string()),
    }
}

/// Checks one batch size: ≥ 1 and ≤ the training set (or [`MAX_BATCH_WITHOUT_DATA`]). Whether it splits
/// over the devices is [`check_shards`].
pub fn check_batch_size(field: &'static str, b: usize, n_train: Option<usize>) -> Option<Problem> {
    if b == 0 {
        return Some(Problem::error(field, "batch size 0: need at least 1"));
    }
    match n_train {
        Some(n) if b > n => Some(Problem::error(
            field,
            format!("batch size {b} is larger than the training set ({n} examples)"),
        )),
        None if b > MAX_BATCH_WITHOUT_DATA => Some(Problem::error(
            field,
            format!("batch size {b} is larger than {MAX_BATCH_WITHOUT_DATA}"),
        )),
        _ => None,
    }
}

/// Checks that every batch size splits into one equal shard per replica of `devices` (the one
/// place this rule and its message live: `train`, `sweep`, resume and Setup).
pub fn check_shards(field: &'static str, sizes: &[usize], devices: &DeviceSpec) -> Option<Problem> {
    let g = devices.replicas();
    let bad: Vec<String> = sizes
        .iter()
        .filter(|&&b| g > 0 && !b.is_multiple_of(g))
        .map(|b| b.to_string())
        .collect();
    if bad.is_empty() {
        return None;
    }
    let unit = devices.replica_noun();
    let message = if sizes.len() == 1 {
        format!(
            "batch size {} not divisible by {g} {unit} (each needs an equal shard): use a multiple of {g}",
            bad[0]
        )
    } else {
        format!(
            "{} of {} batch sizes not divisible by {g} {unit} (each needs an equal shard): B = {}",
            bad.len(),
            sizes.len(),
            bad.join(", ")
        )
    };
    Some(Problem::error(field, message))
}

fn check_workers(field: &'static str, devices: &DeviceSpec) -> Option<Problem> {
    let g = devices.replicas();
    if g == 0 {
        return Some(Problem::error(field, "need at least 1 worker/device"));
    }
    if g > MAX_WORKERS {
        return Some(Problem::error(
            field,
            format!("{g} workers/devices: at most {MAX_WORKERS}"),
        ));
    }
    None
}

impl SweepOverrides {
    /// Applies the workload-level settings (target, steps, eval interval, lr, momentum, precision,
    /// loss scale) to `w`; returns the problems. A rejected value is not applied.
    pub fn apply_to_workload(&self, w: &mut Workload) -> Vec<Problem> {
        let mut problems = vec![];
        if let Some(t) = self.target {
            match check_target(w.target.metric, t) {
                Some(p) => problems.push(p),
                None => w.target.value = t,
            }
        }
        if let Some(ts) = &self.targets {
            problems.extend(self.apply_targets(w, ts));
        } else {
            // A new goal keeps only the rungs still looser than it.
            let goal = w.target.value;
            let dropped: Vec<String> = w
                .targets
                .iter()
                .filter(|&&t| t <= goal)
                .map(|t| t.to_string())
                .collect();
            if !dropped.is_empty() {
                w.targets.retain(|&t| t > goal);
                problems.push(Problem::warning(
                    "targets",
                    format!(
                        "the preset's rungs {} are not looser than the goal {goal}: dropped",
                        dropped.join(", ")
                    ),
                ));
            }
        }
        if let Some(s) = self.steps {
            if s == 0 || s > MAX_STEPS {
                problems.push(Problem::error(
                    "steps",
                    format!("{s} steps: need 1 ≤ steps ≤ {MAX_STEPS}"),
                ));
            } else {
                w.step_budget = s;
                w.max_examples = None;
            }
        }
        if let Some(e) = self.eval_every {
            if e == 0 || e > MAX_STEPS {
                problems.push(Problem::error(
                    "eval_every",
                    format!("{e}: need 1 ≤ eval-every ≤ {MAX_STEPS}"),
                ));
            } else {
                w.eval_every = e;
            }
        }
        if let Some(lr) = self.lr {
            if !(lr.is_finite() && lr > 0.0) {
                problems.push(Problem::error(
                    "lr",
                    format!("{lr}: need a finite learning rate > 0"),
                ));
            } else {
                w.defaults.learning_rate = lr;
            }
        }
        if let Some(m) = self.momentum {
            // a setting takes effect or is an error (`applied`): SGD has no γ
            let unused =
                crate::workload::applied::unused(w, crate::workload::applied::Setting::Momentum);
            if let Some(why) = unused {
                problems.push(Problem::error(
                    "momentum",
                    format!("has no effect here: {why}"),
                ));
            } else if !(0.0..1.0).contains(&m) {
                problems.push(Problem::error("momentum", format!("{m}: need 0 ≤ γ < 1")));
            } else {
                w.defaults.momentum = m;
            }
        }
        if (self.steps.is_some() || self.eval_every.is_some()) && w.step_budget < w.eval_every {
            problems.push(Problem::error(
                "steps",
                format!(
                    "a budget of {} steps is shorter than one evaluation interval ({} steps)",
                    w.step_budget, w.eval_every
                ),
            ));
        }
        if let Some(p) = self.precision {
            let unused = crate::workload::applied::unused(
                w,
                crate::workload::applied::Setting::LowPrecision,
            );
            match unused.filter(|_| p != Precision::Fp32) {
                Some(why) => problems.push(Problem::error(
                    "precision",
                    format!("{} has no effect here: {why}", p.name()),
                )),
                None => w.precision = p,
            }
        }
        if let Some(s) = self.loss_scale {
            if !(s.is_finite() && s >= 1.0) {
                problems.push(Problem::error(
                    "loss_scale",
                    format!("{s}: need a finite loss scale ≥ 1"),
                ));
            } else if w.precision != Precision::Fp16 {
                problems.push(Problem::error(
                    "loss_scale",
                    format!(
                        "only applies to --precision fp16 ({} keeps the scale at 1)",
                        w.precision.name()
                    ),
                ));
            }
        }
        problems
    }

    /// `--targets`: every value in range; the strictest becomes the goal, the rest the ladder.
    fn apply_targets(&self, w: &mut Workload, ts: &[f64]) -> Vec<Problem> {
        let mut problems = vec![];
        if self.target.is_some() {
            problems.push(Problem::error(
                "targets",
                "give --target (one goal) or --targets (a ladder), not both",
            ));
            return problems;
        }
        if ts.is_empty() {
            problems.push(Problem::error("targets", "no targets given"));
            return problems;
        }
        if w.target.metric.maximised() {
            problems.push(Problem::error(
                "targets",
                format!(
                    "a ladder of targets is read for minimised metrics; {} has its goal only (--target)",
                    w.target.metric.name()
                ),
            ));
            return problems;
        }
        if ts.len() > crate::workload::check::MAX_TARGETS + 1 {
            problems.push(Problem::error(
                "targets",
                format!(
                    "{} targets: at most {}",
                    ts.len(),
                    crate::workload::check::MAX_TARGETS + 1
                ),
            ));
            return problems;
        }
        for &t in ts {
            if let Some(p) = check_target(w.target.metric, t) {
                problems.push(Problem::error("targets", p.message));
                return problems;
            }
        }
        let mut v = ts.to_vec();
        v.sort_by(|a, b| b.total_cmp(a));
        v.dedup();
        w.target.value = v.pop().unwrap_or(w.target.value);
        w.targets = v;
        problems
    }

    /// Applies every setting to a sweep configuration and re-checks the result (batch sizes
    /// against the training set and the devices, counts in range). Problems name their field.
    pub fn apply(&self, cfg: &mut SweepConfig) -> Vec<Problem> {
        let mut problems = self.apply_to_workload(&mut cfg.preset.workload);
        // a setting given here is the study's: the calibration stage no longer chooses it
        if let Some(c) = cfg.preset.calibrate.as_mut() {
            if self.target.is_some() || self.targets.is_some() {
                c.target = false;
            }
            if self.batch_sizes.is_some() {
                c.batch_sizes = false;
            }
            if self.steps.is_some() {
                c.budget = false;
            }
            if self.eval_every.is_some() {
                c.eval = false;
            }
            if self.trials.is_some() || self.confirm.is_some() {
                c.size = false;
            }
            if !c.any() {
                cfg.preset.calibrate = None;
            }
        }
        if let Some(p) = self.precision {
            cfg.precision = p;
        }
        if let Some(b) = &self.batch_sizes {
            cfg.batch_sizes = b.clone();
        }
        if let Some(t) = self.trials {
            cfg.trials_per_batch = t;
        }
        if let Some(d) = &self.devices {
            cfg.devices = d.clone();
        } else if let Some(w) = self.workers {
            cfg.devices = DeviceSpec::Cpu { workers: w };
        }
        if let Some(c) = self.concurrency {
            cfg.concurrency = c;
        }
        if let Some(s) = self.seed {
            cfg.seed = s;
        }
        if let Some(c) = self.confirm {
            cfg.preset.sweep.confirm = c;
            if c.is_none() {
                // no stage, nothing for the preset's confirm_until to narrow (an explicit
                // `--until` after this narrows the search instead)
                cfg.preset.sweep.confirm_until = None;
                cfg.until = None;
            }
        }
        problems.extend(check_config(cfg));
        problems
    }
}

/// Range checks of a whole sweep configuration (also what `--resume` re-checks in a log header).
pub fn check_config(cfg: &SweepConfig) -> Vec<Problem> {
    let mut problems = vec![];
    if let Some(p) = check_workers("workers", &cfg.devices) {
        problems.push(p);
    }
    if cfg.trials_per_batch == 0 || cfg.trials_per_batch > MAX_TRIALS {
        problems.push(Problem::error(
            "trials",
            format!(
                "{} trials per batch size: need 1 ≤ trials ≤ {MAX_TRIALS}",
                cfg.trials_per_batch
            ),
        ));
    }
    if cfg.concurrency == 0 || cfg.concurrency > MAX_CONCURRENCY {
        problems.push(Problem::error(
            "concurrency",
            format!(
                "{}: need 1 ≤ concurrency ≤ {MAX_CONCURRENCY}",
                cfg.concurrency
            ),
        ));
    }
    if let Some(plan) = cfg.preset.sweep.confirm {
        // the stage confirms the best K of the search's trials at each B: never more than ran
        let n = cfg.trials_per_batch;
        if plan.configs > n && n > 0 && cfg.widen == 0 {
            problems.push(Problem::warning(
                "confirm",
                format!(
                    "{plan} asks for the best {} configurations per batch size, but the search \
                     runs {n} trial{} at each: the stage confirms at most {n} ({n}x{} per batch \
                     size)",
                    plan.configs,
                    if n == 1 { "" } else { "s" },
                    plan.seeds
                ),
            ));
        }
    }
    let w = &cfg.preset.workload;
    if let Some(p) = check_target(w.target.metric, w.target.value) {
        problems.push(p);
    }
    if let Some(t) = w
        .targets
        .iter()
        .find(|&&t| t <= w.target.value || check_target(w.target.metric, t).is_some())
    {
        problems.push(Problem::error(
            "targets",
            format!(
                "rung {t} is out of range or not looser than the goal {}",
                w.target.value
            ),
        ));
    }
    if cfg.batch_sizes.is_empty() && !cfg.preset.calibrate.is_some_and(|c| c.batch_sizes) {
        problems.push(Problem::error("batch_sizes", "no batch sizes to sweep"));
    }
    let mut sorted = cfg.batch_sizes.clone();
    sorted.sort_unstable();
    sorted.dedup();
    if sorted.len() != cfg.batch_sizes.len() {
        problems.push(Problem::error(
            "batch_sizes",
            format!("duplicate batch sizes in {:?}", cfg.batch_sizes),
        ));
    }
    // Cheap checks first: only load the dataset when every size is otherwise plausible.
    let cheap = cfg
        .batch_sizes
        .iter()
        .find_map(|&b| check_batch_size("batch_sizes", b, None))
        .or_else(|| check_shards("shards", &cfg.batch_sizes, &cfg.devices));
    if let Some(p) = cheap {
        problems.push(p);
        return problems;
    }
    match training_set_size(w) {
        Ok(n) => problems.extend(
            cfg.batch_sizes
                .iter()
                .find_map(|&b| check_batch_size("batch_sizes", b, n)),
        ),
        Err(e) => problems.push(Problem::error("preset", format!("dataset: {e}"))),
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn targets_outside_the_metric_range_are_rejected() {
        assert!(check_target(Metric::ValError, 0.04).is_none());
        for bad in [0.0, 1.0, 2.0, f64::NAN, f64::INFINITY, -0.1] {
            let p = check_target(Metric::ValError, bad).expect("rejected");
            assert_eq!(p.flag(), "--target");
            assert!(p.blocking);
        }
        assert!(check_target(Metric::ValBpc, 3.3).is_none());
        assert!(check_target(Metric::ValBpc, 9.0).is_some());
        assert!(check_target(Metric::ExpectedLoss, 1e-3).is_none());
        assert!(check_target(Metric::ExpectedLoss, f64::INFINITY).is_some());
    }

    #[test]
    fn batch_sizes_are_checked_against_data_and_shards() {
        let two = DeviceSpec::Cpu { workers: 2 };
        assert!(check_batch_size("batch_sizes", 64, Some(1437)).is_none());
        assert!(check_shards("batch_sizes", &[64], &two).is_none());
        assert!(check_batch_size("batch_sizes", 0, Some(1437)).is_some());
        let p = check_batch_size("batch_sizes", 3000, Some(1437)).unwrap();
        assert!(p.message.contains("1437"), "{p}");
        let p = check_shards("batch_sizes", &[63], &two).unwrap();
        assert!(p.message.contains("multiple of 2"), "{p}");
        assert!(check_batch_size("batch_sizes", usize::MAX, None).is_some());
        // Several sizes: one problem listing every size that does not split.
        let p = check_shards("workers", &[2, 3, 4, 6], &DeviceSpec::Cpu { workers: 3 }).unwrap();
        assert_eq!(
            p.message,
            "2 of 4 batch sizes not divisible by 3 workers (each needs an equal shard): B = 2, 4"
        );
        let p = check_shards(
            "workers",
            &[6, 8],
            &DeviceSpec::Cuda {
                devices: vec![0, 1, 2],
            },
        )
        .unwrap();
        assert!(
            p.message.contains("by 3 GPUs") && p.message.ends_with("B = 8"),
            "{p}"
        );
    }

    #[test]
    fn a_budget_shorter_than_the_eval_interval_is_rejected() {
        let mut w =
            crate::workload::spec::Workload::nqm(4, crate::workload::spec::OptimizerKind::Sgd, 0.1);
        w.eval_every = 10;
        let o = SweepOverrides {
            steps: Some(5),
            ..Default::default()
        };
        let p = o.apply_to_workload(&mut w);
        assert_eq!(p.len(), 1, "{p:?}");
        assert_eq!(p[0].field, "steps");
        assert!(
            p[0].message
                .contains("shorter than one evaluation interval (10 steps)"),
            "{}",
            p[0]
        );
        // the preset's own budget is not re-checked when neither value is overridden
        w.step_budget = 3;
        assert!(SweepOverrides::default()
            .apply_to_workload(&mut w)
            .is_empty());
    }

    /// The preset's `confirm_until` is the sweep's default `--until`; `--confirm off` drops both.
    #[test]
    fn confirm_until_is_the_default_until_and_goes_with_the_stage() {
        let (path, p) = crate::workload::presets::embedded_presets()
            .into_iter()
            .find(|(p, _)| p.ends_with("digits-mlp-adam.toml"))
            .map(|(p, r)| (p, r.unwrap()))
            .unwrap();
        let rel = p
            .sweep
            .confirm_until
            .expect("the digits presets set confirm_until");
        let cfg = crate::sweep::SweepConfig::from_preset(p, Some(path), "runs".into());
        assert_eq!(cfg.until, Some(rel));
        let mut off = cfg.clone();
        let o = SweepOverrides {
            confirm: Some(None),
            ..Default::default()
        };
        assert!(o.apply(&mut off).is_empty());
        assert_eq!((off.until, off.preset.sweep.confirm_until), (None, None));
        assert_eq!(off.preset.sweep.confirm, None);
    }

    #[test]
    fn loss_scale_only_for_fp16_and_finite() {
        // a trained model (the NQM has no precision: `applied`)
        let (_, mut w) = crate::workload::presets::embedded_presets()
            .into_iter()
            .find(|(p, _)| p.ends_with("digits-mlp-sgd.toml"))
            .map(|(p, r)| (p, r.unwrap().workload))
            .unwrap();
        let o = SweepOverrides {
            loss_scale: Some(1024.0),
            ..Default::default()
        };
        let p = o.apply_to_workload(&mut w.clone());
        assert_eq!(p.len(), 1);
        assert!(p[0].message.contains("fp16"), "{}", p[0]);
        let o = SweepOverrides {
            loss_scale: Some(f64::INFINITY),
            precision: Some(Precision::Fp16),
            ..Default::default()
        };
        assert_eq!(o.apply_to_workload(&mut w).len(), 1);
        let o = SweepOverrides {
            loss_scale: Some(1024.0),
            precision: Some(Precision::Fp16),
            steps: Some(0),
            ..Default::default()
        };
        let p = o.apply_to_workload(&mut w);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].field, "steps");
    }

    #[test]
    fn flags_the_workload_does_not_use_are_refused() {
        use crate::workload::spec::{OptimizerKind, Workload};
        let o = SweepOverrides {
            momentum: Some(0.5),
            precision: Some(Precision::Bf16),
            ..Default::default()
        };
        let mut w = Workload::nqm(4, OptimizerKind::Sgd, 0.1);
        let p = o.apply_to_workload(&mut w);
        let fields: Vec<&str> = p.iter().map(|p| p.field).collect();
        assert_eq!(fields, ["momentum", "precision"], "{p:?}");
        assert!(p[0].message.contains("sgd has no momentum"), "{}", p[0]);
        assert_eq!((w.defaults.momentum, w.precision), (0.9, Precision::Fp32));
        // γ applies to momentum; fp32 is what the NQM computes in (never refused)
        let mut w = Workload::nqm(4, OptimizerKind::Momentum, 0.1);
        let o = SweepOverrides {
            momentum: Some(0.5),
            precision: Some(Precision::Fp32),
            ..Default::default()
        };
        assert!(o.apply_to_workload(&mut w).is_empty());
        assert_eq!(w.defaults.momentum, 0.5);
    }
}
