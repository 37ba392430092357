//! The Setup screen's state: the selected preset, the edited study, and what is wrong with it.

use std::path::PathBuf;

use super::RunEntry;
use crate::core::trial::DeviceSpec;
use crate::sweep::overrides::Problem;
use crate::sweep::overrides::SweepOverrides;
use crate::sweep::SweepConfig;
use crate::workload::spec::{ConfirmPlan, Fuse, Metric, OptimizerKind, Precision, Preset};

#[derive(Clone, Debug, PartialEq)]
pub struct PresetEntry {
    pub preset: Preset,
    pub path: Option<PathBuf>,
    /// From the user's presets directory (Setup marks it "yours").
    pub user: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Optimizer,
    Precision,
    Devices,
    BatchMin,
    BatchMax,
    Trials,
    Concurrency,
    Target,
    Budget,
    Widen,
    Fuse,
    Confirm,
}

pub const FIELDS: [Field; 12] = [
    Field::Optimizer,
    Field::Precision,
    Field::Devices,
    Field::BatchMin,
    Field::BatchMax,
    Field::Trials,
    Field::Concurrency,
    Field::Target,
    Field::Budget,
    Field::Widen,
    Field::Fuse,
    Field::Confirm,
];

/// The confirm stages the Setup field offers (None = off), in order.
pub const CONFIRM_CHOICES: [Option<ConfirmPlan>; 9] = [
    None,
    Some(ConfirmPlan {
        configs: 1,
        seeds: 5,
    }),
    Some(ConfirmPlan {
        configs: 2,
        seeds: 5,
    }),
    Some(ConfirmPlan {
        configs: 3,
        seeds: 3,
    }),
    Some(ConfirmPlan::DEFAULT),
    Some(ConfirmPlan {
        configs: 3,
        seeds: 8,
    }),
    Some(ConfirmPlan {
        configs: 3,
        seeds: 10,
    }),
    Some(ConfirmPlan {
        configs: 5,
        seeds: 5,
    }),
    Some(ConfirmPlan {
        configs: 3,
        seeds: 20,
    }),
];

impl Field {
    pub fn label(self) -> &'static str {
        match self {
            Field::Optimizer => "optimizer",
            Field::Precision => "precision",
            Field::Devices => "devices",
            Field::BatchMin => "batch size from",
            Field::BatchMax => "batch size to",
            Field::Trials => "trials per B",
            Field::Concurrency => "trials at once",
            Field::Target => "target",
            Field::Budget => "step budget",
            Field::Widen => "widen search",
            Field::Fuse => "fused trials",
            Field::Confirm => "confirm stage",
        }
    }

    /// The Setup field a problem is shown under, by the setting it names (the same settings the
    /// CLI flags set); None: shown below the fields.
    pub fn of(problem: &Problem) -> Option<Field> {
        Some(match problem.field {
            "optimizer" => Field::Optimizer,
            "precision" | "loss_scale" => Field::Precision,
            "workers" | "devices" | "shards" => Field::Devices,
            "batch_sizes" => Field::BatchMax,
            "trials" => Field::Trials,
            "concurrency" => Field::Concurrency,
            "target" => Field::Target,
            "steps" | "eval_every" => Field::Budget,
            "widen" => Field::Widen,
            "fuse" => Field::Fuse,
            "confirm" => Field::Confirm,
            _ => return None,
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetupFocus {
    Presets,
    Fields,
}

#[derive(Clone, Debug, PartialEq)]
pub struct SetupState {
    pub presets: Vec<PresetEntry>,
    /// Problems loading presets (file:line messages).
    pub load_errors: Vec<String>,
    pub selected: usize,
    pub focus: SetupFocus,
    pub field: usize,
    /// Device choices: CPU 1–8 workers, then 1..=n of the CUDA devices found.
    pub devices: Vec<DeviceSpec>,
    pub gpu_labels: Vec<String>,
    /// Labels of the wgpu adapters (choices after the CUDA ones: 1..=n adapters, and two
    /// replicas sharing adapter 0 when there is one).
    pub wgpu_labels: Vec<String>,
    pub device_idx: usize,
    pub optimizer: OptimizerKind,
    pub precision: Precision,
    pub b_min: usize,
    pub b_max: usize,
    pub trials: usize,
    /// Trials run at the same time (CUDA sweeps run one at a time).
    pub concurrency: usize,
    /// The preset leaves concurrency to the scheduler and the field was not touched: the sweep's
    /// calibration chooses (`sweep::layout`); editing the field fixes it.
    pub concurrency_auto: bool,
    pub target: f64,
    pub budget: u64,
    /// `--widen N`: moves of the search range past an edge per batch size (0 = off).
    pub widen: usize,
    /// `--fuse`: the trials of one batch size trained as one program (auto, off, or at most K).
    pub fuse: Fuse,
    /// `--confirm KxR`: the confirm stage (None = off), the preset's at first.
    pub confirm: Option<ConfirmPlan>,
    /// The runs directory's cached layout calibrations (`sweep::layout::read_cache`, read when
    /// the app starts): the wall-time bound Setup shows before any run of the study exists.
    pub calibrations: std::collections::BTreeMap<String, crate::sweep::layout::Calibration>,
    /// `e` asked for a calibration that has not come back yet.
    pub calibrating: bool,
}

/// Highest value the concurrency field offers.
pub const MAX_CONCURRENCY: usize = 16;

impl SetupState {
    pub fn new(
        presets: Vec<PresetEntry>,
        load_errors: Vec<String>,
        initial: Option<&str>,
        gpu_labels: Vec<String>,
    ) -> Self {
        let mut devices: Vec<DeviceSpec> =
            (1..=8).map(|w| DeviceSpec::Cpu { workers: w }).collect();
        for n in 1..=gpu_labels.len() {
            devices.push(DeviceSpec::Cuda {
                devices: (0..n).collect(),
            });
        }
        let selected = initial
            .and_then(|name| presets.iter().position(|p| p.preset.name == name))
            .unwrap_or(0);
        let mut s = SetupState {
            presets,
            load_errors,
            selected,
            focus: SetupFocus::Presets,
            field: 0,
            devices,
            gpu_labels,
            wgpu_labels: Vec::new(),
            device_idx: 0,
            optimizer: OptimizerKind::Sgd,
            precision: Precision::Fp32,
            b_min: 16,
            b_max: 1024,
            trials: 1,
            concurrency: 1,
            concurrency_auto: false,
            target: 0.0,
            budget: 0,
            widen: 0,
            fuse: Fuse::Auto,
            confirm: Some(ConfirmPlan::DEFAULT),
            calibrations: Default::default(),
            calibrating: false,
        };
        s.reset_from_preset();
        s
    }

    /// Adds the wgpu adapters found as device choices: 1..=n adapters, and with one adapter
    /// also two replicas sharing it (data parallelism on a one-GPU machine).
    pub fn add_wgpu_adapters(&mut self, labels: Vec<String>) {
        for n in 1..=labels.len() {
            self.devices.push(DeviceSpec::Wgpu {
                adapters: (0..n).collect(),
            });
        }
        if labels.len() == 1 {
            self.devices.push(DeviceSpec::Wgpu {
                adapters: vec![0, 0],
            });
        }
        self.wgpu_labels = labels;
    }

    pub fn preset(&self) -> Option<&PresetEntry> {
        self.presets.get(self.selected)
    }

    /// Loads the editable values from the selected preset.
    pub fn reset_from_preset(&mut self) {
        let Some(p) = self.presets.get(self.selected).map(|e| e.preset.clone()) else {
            return;
        };
        let w = &p.workload;
        self.optimizer = w.optimizer;
        self.precision = w.precision;
        self.target = w.target.value;
        self.budget = w.step_budget;
        self.trials = p.sweep.trials_per_batch.max(1);
        self.concurrency = p.sweep.concurrency.clamp(1, MAX_CONCURRENCY);
        self.concurrency_auto = p.sweep.auto_concurrency;
        self.widen = 0;
        self.fuse = p.sweep.fuse;
        self.confirm = p.sweep.confirm;
        self.b_min = p.sweep.batch_sizes.iter().copied().min().unwrap_or(16);
        self.b_max = p.sweep.batch_sizes.iter().copied().max().unwrap_or(1024);
        let workers = p.sweep.workers.max(1);
        self.device_idx = self
            .devices
            .iter()
            .position(|d| *d == DeviceSpec::Cpu { workers })
            .unwrap_or(0);
    }

    pub fn device(&self) -> DeviceSpec {
        self.devices[self.device_idx.min(self.devices.len() - 1)].clone()
    }

    /// The batch sizes of the sweep: the preset's own grid when the range is unchanged, otherwise
    /// powers of two from `b_min` to `b_max`.
    pub fn batch_sizes(&self) -> Vec<usize> {
        if let Some(p) = self.preset() {
            let grid = &p.preset.sweep.batch_sizes;
            let lo = grid.iter().copied().min().unwrap_or(0);
            let hi = grid.iter().copied().max().unwrap_or(0);
            if lo == self.b_min && hi == self.b_max {
                let mut g = grid.clone();
                g.sort_unstable();
                return g;
            }
        }
        crate::sweep::powers_of_two(self.b_min, self.b_max)
    }

    /// The name the edited study runs under: the preset's, with its optimizer suffix replaced
    /// when the optimizer was changed ("digits-mlp-momentum" → "digits-mlp-adam"), or
    /// "name+optimizer" when the name does not end with the optimizer.
    pub fn study_name(&self) -> String {
        let Some(p) = self.preset() else {
            return String::new();
        };
        let name = &p.preset.name;
        let old = p.preset.workload.optimizer;
        if self.optimizer == old {
            return name.clone();
        }
        match name.strip_suffix(old.name()) {
            Some(stem) => format!("{stem}{}", self.optimizer.name()),
            None => format!("{name}+{}", self.optimizer.name()),
        }
    }

    /// Estimated wall time of the study from earlier runs of the same study in `runs`: their mean
    /// seconds per trial × trials / concurrency. None when no earlier run has finished trials.
    pub fn estimate_s(&self, runs: &[RunEntry]) -> Option<f64> {
        let names = [
            self.study_name(),
            self.preset()
                .map(|p| p.preset.name.clone())
                .unwrap_or_default(),
        ];
        let per: Vec<f64> = names
            .iter()
            .map(|n| {
                runs.iter()
                    .filter(|r| &r.preset == n)
                    .filter_map(|r| r.seconds_per_trial())
                    .collect::<Vec<f64>>()
            })
            .find(|v| !v.is_empty())?;
        let spt = per.iter().sum::<f64>() / per.len() as f64;
        let at_once = self.effective_concurrency().max(1) as f64;
        Some(spt * self.total_trials() as f64 / at_once)
    }

    /// Concurrency as launched (GPU sweeps run one trial at a time).
    pub fn effective_concurrency(&self) -> usize {
        if !self.device().is_cpu() {
            1
        } else {
            self.concurrency.max(1)
        }
    }

    /// The preset's `[sweep] confirm_until`: the confirm stage adds seeds at every B
    /// whose confirmed interval is wider; None without a confirm stage.
    pub fn confirm_until(&self) -> Option<f64> {
        self.confirm?;
        self.preset()?.preset.sweep.confirm_until
    }

    /// The edited study as settings over the preset: what `sweep` would get from the same values
    /// as flags. The step budget is only an override once it was changed (an edited budget
    /// replaces the preset's example budget too, as `--steps` does).
    pub fn overrides(&self) -> SweepOverrides {
        let budget_changed = self
            .preset()
            .is_some_and(|p| p.preset.workload.step_budget != self.budget);
        SweepOverrides {
            batch_sizes: Some(self.batch_sizes()),
            trials: Some(self.trials),
            devices: Some(self.device()),
            concurrency: (!self.auto_layout()).then(|| self.effective_concurrency()),
            precision: Some(self.precision),
            target: Some(self.target),
            steps: budget_changed.then_some(self.budget),
            confirm: Some(self.confirm),
            ..Default::default()
        }
    }

    /// The preset renamed for the edited study with the edited optimizer and sweep defaults (the
    /// workload settings come from [`Self::overrides`]).
    pub fn edited_preset(&self) -> Option<Preset> {
        let mut p = self.preset()?.preset.clone();
        p.name = self.study_name();
        p.workload.optimizer = self.optimizer;
        p.sweep.batch_sizes = self.batch_sizes();
        p.sweep.trials_per_batch = self.trials;
        p.sweep.concurrency = self.effective_concurrency();
        p.sweep.auto_concurrency = self.auto_layout();
        p.sweep.fuse = self.fuse;
        if let DeviceSpec::Cpu { workers } = self.device() {
            p.sweep.workers = workers;
        }
        Some(p)
    }

    /// The configuration Setup launches and the problems the shared override check finds in it
    /// (the same `SweepOverrides::apply` that checks `sweep`'s flags).
    fn checked_config(&self, runs_dir: &std::path::Path) -> Option<(SweepConfig, Vec<Problem>)> {
        let entry = self.preset()?;
        let preset = self.edited_preset()?;
        let mut cfg = SweepConfig::from_preset(preset, entry.path.clone(), runs_dir.to_path_buf());
        let problems = self.overrides().apply(&mut cfg);
        cfg.widen = self.widen;
        Some((cfg, problems))
    }

    /// Whether the scheduler chooses the concurrency (a CPU sweep of a preset that leaves it
    /// out, the field untouched).
    pub fn auto_layout(&self) -> bool {
        self.concurrency_auto && self.device().is_cpu()
    }

    /// The wall-time bound of the edited study from the cached calibration of its workload (no
    /// IO, no measurement), with the concurrency it assumes.
    pub fn calibrated_estimate(&self) -> Option<crate::sweep::layout::WallEstimate> {
        let (cfg, _) = self.checked_config(std::path::Path::new("."))?;
        crate::sweep::layout::estimate_from(&cfg, &self.calibrations).map(|(_, e)| e)
    }

    pub fn config(&self, runs_dir: &std::path::Path) -> Option<SweepConfig> {
        self.checked_config(runs_dir).map(|(cfg, _)| cfg)
    }

    /// Everything wrong or noteworthy about the current combination: the problems of the shared
    /// override check, then Setup's own notes (`Field::of` places each under its field).
    pub fn problems(&self) -> Vec<Problem> {
        let Some(entry) = self.preset() else {
            return vec![Problem::error(
                "preset",
                "no presets found: put preset TOML files in the presets directory",
            )];
        };
        let mut out = Vec::new();
        let mut gpu_scale = None;
        if let Some((cfg, problems)) = self.checked_config(std::path::Path::new(".")) {
            out = problems;
            if out.iter().all(|p| !p.blocking) {
                if let Err(e) = cfg.validate() {
                    out.push(Problem::error("preset", format!("{e:#}")));
                }
            }
            let est = crate::sweep::layout::estimate_from(&cfg, &self.calibrations);
            gpu_scale = crate::sweep::layout::gpu_scale_warning(&cfg, est.as_ref().map(|e| &e.1))
                // any preset: a bound of 10 min or more, from its cached calibration
                .or_else(|| {
                    est.as_ref()
                        .and_then(|(_, e)| crate::sweep::layout::long_sweep_warning(&cfg, e))
                });
        }
        if self.precision == Precision::Bf16 && matches!(self.device(), DeviceSpec::Wgpu { .. }) {
            // what the runner's precision probe finds at launch, said before it
            out.push(Problem::error(
                "precision",
                "bf16 on wgpu: its WGSL shaders have no bf16 type; use fp16 (loss-scaled) or fp32",
            ));
        }
        out.extend(self.notes(&entry.preset));
        out.extend(gpu_scale.map(|w| Problem::warning("devices", w)));
        out
    }

    /// Advice about the combination that does not block the launch.
    fn notes(&self, p: &Preset) -> Vec<Problem> {
        let mut out = Vec::new();
        let w = &p.workload;
        if self.optimizer != w.optimizer {
            let lr = p.search.learning_rate;
            out.push(Problem::warning(
                "optimizer",
                format!(
                    "the η search range [{}, {}] was set for {}; {} may want another range",
                    lr[0],
                    lr[1],
                    w.optimizer.name(),
                    self.optimizer.name()
                ),
            ));
        }
        let precision_note = match (self.precision, &self.device(), w.closed_form()) {
            (Precision::Fp32, _, _) => None,
            (_, _, true) => {
                Some("the noisy quadratic model is closed-form: precision has no effect")
            }
            (Precision::Bf16, DeviceSpec::Cpu { .. }, _) => {
                Some("bf16 is emulated on CPU: expect ~2× slower steps than fp32")
            }
            (Precision::Fp16, _, _) => {
                Some("fp16 uses dynamic loss scaling; skipped steps show in Live")
            }
            _ => None,
        };
        out.extend(precision_note.map(|m| Problem::warning("precision", m)));
        if matches!(self.device(), DeviceSpec::Cpu { workers } if workers > 2) {
            out.push(Problem::warning(
                "workers",
                "CPU workers share this machine's cores: steps are real, wall time is not a GPU forecast",
            ));
        }
        if !self.device().is_cpu() && self.concurrency > 1 {
            out.push(Problem::warning(
                "concurrency",
                "GPU sweeps run one trial at a time (each trial owns its GPUs)",
            ));
        }
        out
    }

    pub fn total_trials(&self) -> usize {
        self.batch_sizes().len() * self.trials
    }

    pub(crate) fn adjust(&mut self, field: Field, up: bool) {
        let Some(w) = self.preset().map(|p| p.preset.workload.clone()) else {
            return;
        };
        match field {
            Field::Optimizer => {
                const ALL: [OptimizerKind; 4] = [
                    OptimizerKind::Sgd,
                    OptimizerKind::Momentum,
                    OptimizerKind::Nesterov,
                    OptimizerKind::Adam,
                ];
                let i = ALL.iter().position(|o| *o == self.optimizer).unwrap_or(0);
                self.optimizer = ALL[cycle(i, ALL.len(), up)];
            }
            Field::Precision => {
                const ALL: [Precision; 3] = [Precision::Fp32, Precision::Bf16, Precision::Fp16];
                let i = ALL.iter().position(|o| *o == self.precision).unwrap_or(0);
                self.precision = ALL[cycle(i, ALL.len(), up)];
            }
            Field::Devices => {
                self.device_idx = step_clamped(self.device_idx, self.devices.len(), up);
            }
            Field::BatchMin => {
                self.b_min = if up {
                    self.b_min * 2
                } else {
                    (self.b_min / 2).max(1)
                };
                self.b_min = self.b_min.min(1 << 20);
            }
            Field::BatchMax => {
                self.b_max = if up {
                    self.b_max * 2
                } else {
                    (self.b_max / 2).max(1)
                };
                self.b_max = self.b_max.min(1 << 20);
            }
            Field::Concurrency => {
                self.concurrency_auto = false;
                self.concurrency = if up {
                    (self.concurrency + 1).min(MAX_CONCURRENCY)
                } else {
                    self.concurrency.saturating_sub(1).max(1)
                };
            }
            Field::Trials => {
                self.trials = if up {
                    (self.trials + 1).min(256)
                } else {
                    self.trials.saturating_sub(1).max(1)
                };
            }
            Field::Target => {
                self.target = match w.target.metric {
                    Metric::ValError | Metric::TransferAcc => {
                        let v = self.target + if up { 0.01 } else { -0.01 };
                        (v * 100.0).round().clamp(1.0, 99.0) / 100.0
                    }
                    Metric::ValBpc => {
                        let v = self.target + if up { 0.05 } else { -0.05 };
                        ((v * 100.0).round() / 100.0).max(0.05)
                    }
                    Metric::ExpectedLoss => {
                        let f: f64 = if up { 1.25 } else { 0.8 };
                        sig3(self.target * f)
                    }
                };
            }
            Field::Budget => {
                self.budget = ladder_125(self.budget, up).max(w.eval_every.max(1));
            }
            Field::Widen => {
                let max = crate::core::widen::WIDEN_MAX_SHIFT as usize;
                self.widen = if up {
                    (self.widen + 1).min(max)
                } else {
                    self.widen.saturating_sub(1)
                };
            }
            Field::Fuse => {
                // auto → off → 2 → 3 … → the trials per B (at most 16) and back
                let max = self.trials.clamp(2, 16);
                self.fuse = match (self.fuse, up) {
                    (Fuse::Auto, true) => Fuse::Off,
                    (Fuse::Auto, false) => Fuse::Auto,
                    (Fuse::Off, true) => Fuse::Members(2),
                    (Fuse::Off, false) => Fuse::Auto,
                    (Fuse::Members(k), true) => Fuse::Members((k + 1).min(max)),
                    (Fuse::Members(k), false) => Fuse::of_members(k - 1),
                };
            }
            Field::Confirm => {
                // a preset's own stage that is not a choice sits before the next larger one
                let i = CONFIRM_CHOICES
                    .iter()
                    .position(|c| *c == self.confirm)
                    .unwrap_or_else(|| {
                        let n = self.confirm.map_or(0, |c| c.trials());
                        CONFIRM_CHOICES
                            .iter()
                            .position(|c| c.map_or(0, |c| c.trials()) > n)
                            .unwrap_or(CONFIRM_CHOICES.len())
                            .saturating_sub(usize::from(up))
                    });
                self.confirm = CONFIRM_CHOICES[step_clamped(i, CONFIRM_CHOICES.len(), up)];
            }
        }
    }
}

fn cycle(i: usize, n: usize, up: bool) -> usize {
    if up {
        (i + 1) % n
    } else {
        (i + n - 1) % n
    }
}

fn step_clamped(i: usize, n: usize, up: bool) -> usize {
    if up {
        (i + 1).min(n.saturating_sub(1))
    } else {
        i.saturating_sub(1)
    }
}

fn sig3(v: f64) -> f64 {
    if v <= 0.0 || !v.is_finite() {
        return v;
    }
    let m = 10f64.powf(v.log10().floor() - 2.0);
    (v / m).round() * m
}

/// Next/previous value on the 1-2-5 ladder (100, 200, 500, 1000, …).
pub fn ladder_125(v: u64, up: bool) -> u64 {
    let mut steps = Vec::new();
    let mut d = 1u64;
    while d <= 100_000_000 {
        for m in [1, 2, 5] {
            steps.push(d * m);
        }
        d *= 10;
    }
    if up {
        steps.into_iter().find(|&s| s > v).unwrap_or(v)
    } else {
        steps.into_iter().rev().find(|&s| s < v).unwrap_or(v)
    }
}
