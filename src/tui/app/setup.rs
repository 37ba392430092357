//! The Setup screen's state: the selected preset, the edited study, and what is wrong with it.
//! What the study is of — its model, dataset and optimizer — and the calibrated study they make
//! when they are not the preset's own live in `super::setup_study`.

use std::collections::BTreeSet;
use std::path::PathBuf;

use super::RunEntry;
use crate::core::trial::DeviceSpec;
use crate::sweep::overrides::Problem;
use crate::sweep::overrides::SweepOverrides;
use crate::sweep::SweepConfig;
use crate::workload::spec::{ConfirmPlan, Fuse, Metric, OptimizerKind, Precision, Preset};
use crate::workload::study::{Source, StudyError};

#[derive(Clone, Debug, PartialEq)]
pub struct PresetEntry {
    pub preset: Preset,
    pub path: Option<PathBuf>,
    /// From the user's presets directory (Setup marks it "yours").
    pub user: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Field {
    Model,
    Dataset,
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

pub const FIELDS: [Field; 14] = [
    Field::Model,
    Field::Dataset,
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
            Field::Model => "model",
            Field::Dataset => "dataset",
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
            "model" => Field::Model,
            "dataset" => Field::Dataset,
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
    /// The Model field: `kind:key=value,…` (`workload::study::Choice`).
    pub model: String,
    /// The Dataset field: `NAME|PATH[:key=value,…]` (empty: a path not typed yet).
    pub dataset: String,
    /// Which of `sources` the Dataset field is on (`sources.len()`: a path).
    pub dataset_idx: usize,
    /// The dataset sources the field cycles through: the named datasets, the tables of the
    /// user's datasets file, the datasets of the user's presets (and the selected preset's own).
    pub sources: Vec<Source>,
    /// Problems reading the datasets file (said under the field; the named datasets stay).
    pub source_problems: Vec<String>,
    /// The model and dataset texts of the selected preset (what `r` returns to).
    pub own: (String, String),
    /// The study the model, dataset and optimizer make where they are not the preset's own (a
    /// study with a calibration stage), or why it cannot be made; None: the preset's study.
    pub study: Option<Result<Preset, StudyError>>,
    /// The fields the user changed since the preset was selected (the others follow the study:
    /// the preset's values, or what a new study leaves to its calibration and defaults).
    pub touched: BTreeSet<Field>,
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
            model: String::new(),
            dataset: String::new(),
            dataset_idx: 0,
            sources: crate::workload::study::named_sources(),
            source_problems: Vec::new(),
            own: Default::default(),
            study: None,
            touched: BTreeSet::new(),
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

    /// Loads the selected preset: its model, dataset and optimizer, and every value from it
    /// (nothing touched).
    pub fn reset_from_preset(&mut self) {
        let Some(p) = self.presets.get(self.selected).map(|e| e.preset.clone()) else {
            return;
        };
        self.touched.clear();
        self.study = None;
        self.optimizer = p.workload.optimizer;
        self.model = crate::workload::study::preset_model_choice(&p).text();
        (self.dataset_idx, self.dataset) = self.dataset_of(&p);
        self.own = (self.model.clone(), self.dataset.clone());
        self.rebase();
    }

    /// Sets one untouched field from the study Setup edits (`base`: the selected `preset`, or
    /// the study its model, dataset and optimizer make). What a calibration chooses keeps the
    /// preset's value as the start of an edit (shown "auto" until then).
    pub(crate) fn load_field(&mut self, f: Field, base: &Preset, preset: &Preset) {
        let w = &base.workload;
        let sw = &base.sweep;
        let cal = base.calibrate.unwrap_or_default();
        match f {
            // what the study is of: set by the preset and the user only
            Field::Model | Field::Dataset | Field::Optimizer => {}
            Field::Precision => self.precision = w.precision,
            Field::Devices => {
                let workers = sw.workers.max(1);
                self.device_idx = self
                    .devices
                    .iter()
                    .position(|d| *d == DeviceSpec::Cpu { workers })
                    .unwrap_or(0);
            }
            Field::BatchMin | Field::BatchMax => {
                let grid = if sw.batch_sizes.is_empty() {
                    &preset.sweep.batch_sizes
                } else {
                    &sw.batch_sizes
                };
                self.b_min = grid.iter().copied().min().unwrap_or(16);
                self.b_max = grid.iter().copied().max().unwrap_or(1024);
            }
            Field::Trials => self.trials = sw.trials_per_batch.max(1),
            Field::Concurrency => {
                self.concurrency = sw.concurrency.clamp(1, MAX_CONCURRENCY);
                self.concurrency_auto = sw.auto_concurrency;
            }
            Field::Target => {
                let same = preset.workload.target.metric == w.target.metric;
                self.target = if cal.target && same {
                    preset.workload.target.value
                } else {
                    w.target.value
                };
            }
            Field::Budget => {
                self.budget = if cal.budget {
                    preset.workload.step_budget
                } else {
                    w.step_budget
                }
            }
            Field::Widen => self.widen = 0,
            Field::Fuse => self.fuse = sw.fuse,
            Field::Confirm => self.confirm = sw.confirm,
        }
    }

    pub fn device(&self) -> DeviceSpec {
        self.devices[self.device_idx.min(self.devices.len() - 1)].clone()
    }

    /// The batch sizes of the sweep: the preset's own grid when the range is unchanged, otherwise
    /// powers of two from `b_min` to `b_max`.
    /// Empty while the calibration chooses them.
    pub fn batch_sizes(&self) -> Vec<usize> {
        if self.auto(Field::BatchMax) {
            return Vec::new();
        }
        if let Some(p) = self.base() {
            let grid = &p.sweep.batch_sizes;
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
    /// "name+optimizer" when the name does not end with the optimizer; a study of another model
    /// or dataset is named after them ("mlp-digits-momentum").
    pub fn study_name(&self) -> String {
        let Some(p) = self.preset() else {
            return String::new();
        };
        if let Some(Ok(s)) = &self.study {
            if (&self.model, &self.dataset) != (&self.own.0, &self.own.1) {
                return s.name.clone();
            }
        }
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

    /// The wall times of the earlier complete runs of the edited study in `runs` (the same
    /// study name or preset, batch range, precision and devices): what the estimate expects
    /// from (`sweep::estimate::Estimate::with_earlier`).
    pub fn earlier_walls(&self, runs: &[RunEntry]) -> Vec<f64> {
        let names = [
            self.study_name(),
            self.preset()
                .map(|p| p.preset.name.clone())
                .unwrap_or_default(),
        ];
        let bs = self.batch_sizes();
        let range = bs.iter().min().zip(bs.iter().max()).map(|(a, b)| (*a, *b));
        let devices = self.device().label();
        names
            .iter()
            .map(|n| {
                runs.iter()
                    .filter(|r| {
                        &r.preset == n
                            && r.status == super::RunStatus::Complete
                            && r.b_range == range
                            && r.precision == self.precision.name()
                            && r.devices == devices
                    })
                    .filter_map(|r| r.duration_s)
                    .collect::<Vec<f64>>()
            })
            .find(|v| !v.is_empty())
            .unwrap_or_default()
    }

    /// The estimate of the edited study (`sweep::estimate`, what `sweep --dry-run` prints): its
    /// bound from the cached calibration of its workload (no IO, no measurement), its
    /// expectation from the earlier complete runs in `runs`. None without a calibration.
    pub fn estimate(&self, runs: &[RunEntry]) -> Option<crate::sweep::estimate::Estimate> {
        let (cfg, _) = self.checked_config(std::path::Path::new("."))?;
        crate::sweep::estimate::estimate_from(&cfg, &self.calibrations, &self.earlier_walls(runs))
    }

    /// Setup's estimate in a few words: "≤ 9m 12s · expected 1m 40s–2m 30s (2 earlier runs)",
    /// the expectation alone where earlier runs give one and nothing is calibrated yet; None
    /// with neither.
    pub fn estimate_summary(&self, runs: &[RunEntry]) -> Option<String> {
        use crate::sweep::estimate::short_s;
        let range = |(lo, hi): (f64, f64)| format!("{}–{}", short_s(lo), short_s(hi));
        if let Some(e) = self.estimate(runs) {
            let most = match (e.at_most_s, e.pilots.as_ref()) {
                (Some(m), _) => format!("≤ {} (calibrated, every trial to its budget)", short_s(m)),
                (None, Some(p)) => format!(
                    "calibration ≤ {}, then the study it chooses",
                    short_s(p.at_most_s)
                ),
                (None, None) => "not known".into(),
            };
            return Some(match e.expected_s {
                Some(r) => format!("{most} · expected {} ({})", range(r), e.basis),
                None => most,
            });
        }
        let walls = self.earlier_walls(runs);
        let lo = walls.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = walls.iter().copied().fold(0.0, f64::max);
        (!walls.is_empty()).then(|| {
            format!(
                "expected {} ({} earlier run{}; e for a bound)",
                range((
                    lo * crate::sweep::estimate::EXPECTED_LOW,
                    hi * crate::sweep::estimate::EXPECTED_HIGH
                )),
                walls.len(),
                if walls.len() == 1 { "" } else { "s" }
            )
        })
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
        self.base()?.sweep.confirm_until
    }

    /// The edited study as settings over the preset: what `sweep` would get from the same values
    /// as flags. The step budget is only an override once it was changed (an edited budget
    /// replaces the preset's example budget too, as `--steps` does).
    /// What the calibration chooses ("auto" fields) is no override: given, it is the study's.
    pub fn overrides(&self) -> SweepOverrides {
        let budget_given = self.base().is_some_and(|p| {
            p.workload.step_budget != self.budget || p.calibrate.is_some_and(|c| c.budget)
        });
        SweepOverrides {
            batch_sizes: (!self.auto(Field::BatchMax)).then(|| self.batch_sizes()),
            trials: (!self.auto(Field::Trials)).then_some(self.trials),
            devices: Some(self.device()),
            concurrency: (!self.auto_layout()).then(|| self.effective_concurrency()),
            precision: Some(self.precision),
            target: (!self.auto(Field::Target)).then_some(self.target),
            steps: (budget_given && !self.auto(Field::Budget)).then_some(self.budget),
            confirm: (!self.auto(Field::Confirm)).then_some(self.confirm),
            ..Default::default()
        }
    }

    /// The preset renamed for the edited study with the edited optimizer and sweep defaults (the
    /// workload settings come from [`Self::overrides`]).
    pub fn edited_preset(&self) -> Option<Preset> {
        let mut p = self.base()?.clone();
        p.name = self.study_name();
        p.workload.optimizer = self.optimizer;
        if !self.auto(Field::BatchMax) {
            p.sweep.batch_sizes = self.batch_sizes();
        }
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
        // a study of another model, dataset or optimizer is no file's
        let path = self.study.is_none().then(|| entry.path.clone()).flatten();
        let mut cfg = SweepConfig::from_preset(preset, path, runs_dir.to_path_buf());
        let problems = self.overrides().apply(&mut cfg);
        cfg.widen = self.widen;
        Some((cfg, problems))
    }

    /// Whether the scheduler chooses the concurrency (a CPU sweep of a preset that leaves it
    /// out, the field untouched).
    pub fn auto_layout(&self) -> bool {
        self.concurrency_auto && self.device().is_cpu()
    }

    /// The cached layout calibration of `cfg`'s workload on this machine (no IO).
    pub fn layout_calibration(
        &self,
        cfg: &SweepConfig,
    ) -> Option<crate::sweep::layout::Calibration> {
        let key = crate::sweep::layout::calibration_key(
            &cfg.preset.workload,
            cfg.precision,
            crate::sweep::layout::cores(),
        );
        self.calibrations.get(&key).cloned()
    }

    /// The estimate of the edited study from the cached calibration of its workload alone (no
    /// IO, no measurement), with the concurrency it assumes.
    /// None for a study whose calibration chooses its batch sizes or budget (not known yet).
    pub fn calibrated_estimate(&self) -> Option<crate::sweep::estimate::Estimate> {
        if self.auto(Field::BatchMax) || self.auto(Field::Budget) {
            return None;
        }
        self.estimate(&[])
    }

    pub fn config(&self, runs_dir: &std::path::Path) -> Option<SweepConfig> {
        self.checked_config(runs_dir).map(|(cfg, _)| cfg)
    }

    /// Everything wrong or noteworthy about the current combination: the problems of the shared
    /// override check, then Setup's own notes (`Field::of` places each under its field).
    pub fn problems(&self) -> Vec<Problem> {
        if self.preset().is_none() {
            return vec![Problem::error(
                "preset",
                "no presets found: put preset TOML files in the presets directory",
            )];
        };
        let mut out = Vec::new();
        if let Some(Err(e)) = &self.study {
            out.push(Problem::error(part_field(e.part), e.message.clone()));
        }
        let mut gpu_scale = None;
        if let Some((cfg, problems)) = self.checked_config(std::path::Path::new(".")) {
            out.extend(problems);
            if out.iter().all(|p| !p.blocking) {
                if let Err(e) = cfg.validate() {
                    out.push(Problem::error("preset", format!("{e:#}")));
                }
            }
            // (a study whose calibration chooses its batch sizes or budget has no bound yet)
            let known = !self.auto(Field::BatchMax) && !self.auto(Field::Budget);
            let est = crate::sweep::estimate::estimate_from(&cfg, &self.calibrations, &[])
                .filter(|_| known);
            gpu_scale = crate::sweep::estimate::gpu_scale_warning(&cfg, est.as_ref())
                // any preset: a trial of 10 min or a sweep of an hour, from its cached calibration
                .or_else(|| {
                    est.as_ref()
                        .and_then(|e| crate::sweep::estimate::long_sweep_warning(&cfg, e))
                });
        }
        if self.precision == Precision::Bf16 && matches!(self.device(), DeviceSpec::Wgpu { .. }) {
            // what the runner's precision probe finds at launch, said before it
            out.push(Problem::error(
                "precision",
                "bf16 on wgpu: its WGSL shaders have no bf16 type; use fp16 (loss-scaled) or fp32",
            ));
        }
        if let Some(base) = self.base() {
            out.extend(self.notes(base));
        }
        out.extend(
            self.source_problems
                .iter()
                .map(|m| Problem::warning("dataset", m.clone())),
        );
        out.extend(gpu_scale.map(|w| Problem::warning("devices", w)));
        out
    }

    /// Advice about the combination that does not block the launch.
    fn notes(&self, p: &Preset) -> Vec<Problem> {
        let mut out = Vec::new();
        let w = &p.workload;
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
        match field {
            Field::Model => return self.cycle_model(up),
            Field::Dataset => return self.cycle_dataset(up),
            Field::Optimizer => {
                const ALL: [OptimizerKind; 4] = [
                    OptimizerKind::Sgd,
                    OptimizerKind::Momentum,
                    OptimizerKind::Nesterov,
                    OptimizerKind::Adam,
                ];
                let i = ALL.iter().position(|o| *o == self.optimizer).unwrap_or(0);
                self.optimizer = ALL[cycle(i, ALL.len(), up)];
                return self.restudy();
            }
            _ => {}
        }
        let Some(w) = self.base().map(|p| p.workload.clone()) else {
            return;
        };
        self.touched.insert(field);
        match field {
            Field::Model | Field::Dataset | Field::Optimizer => {}
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

/// The Setup field a problem of a study's part is shown under.
fn part_field(p: crate::workload::study::Part) -> &'static str {
    use crate::workload::study::Part;
    match p {
        Part::Model => "model",
        Part::Dataset => "dataset",
        Part::Optimizer => "optimizer",
        Part::Study => "preset",
    }
}

pub(crate) fn cycle(i: usize, n: usize, up: bool) -> usize {
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
