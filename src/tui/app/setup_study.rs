//! What Setup's study is of: its Model and Dataset fields (with the optimizer), and the study
//! they make where they are not the selected preset's own — a minimal study whose calibration
//! stage chooses the target, the ranges, the batch sizes and the budget (`workload::study`,
//! docs/calibration.md). The fields a calibration chooses show "auto (calibrated)" until the user
//! edits them (an edit gives the value: the calibration no longer chooses it); Save as preset
//! writes the study as the user's preset.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::setup::{cycle, Field, SetupState, FIELDS};
use super::Command;
use crate::workload::spec::{Calibrate, Preset};
use crate::workload::study::{self, Choice, Origin, Part, Source, StudyError};

/// The model families the Model field cycles through, in order.
pub const FAMILY_ORDER: [&str; 7] = [
    "mlp",
    "cnn",
    "resnet",
    "char-lstm",
    "mlstm",
    "transformer",
    "nqm",
];

/// Each family at the size the bundled presets use for it (the `[workload.model]` of the first
/// bundled momentum preset of its kind, else the first of its kind — a momentum preset's model
/// has no setting only another optimizer uses, such as the noisy quadratic model's Adam
/// preconditioning): (kind, `kind:key=value,…`).
pub fn family_defaults() -> &'static [(String, String)] {
    static DEFAULTS: OnceLock<Vec<(String, String)>> = OnceLock::new();
    DEFAULTS.get_or_init(|| {
        let bundled: Vec<(bool, Choice)> = crate::workload::presets::embedded_presets()
            .into_iter()
            .filter_map(|(_, p)| p.ok())
            .map(|p| {
                let momentum =
                    p.workload.optimizer == crate::workload::spec::OptimizerKind::Momentum;
                (momentum, study::preset_model_choice(&p))
            })
            .collect();
        FAMILY_ORDER
            .iter()
            .map(|k| {
                let of_kind = || bundled.iter().filter(|(_, c)| c.head == *k);
                let text = of_kind()
                    .find(|(m, _)| *m)
                    .or_else(|| of_kind().next())
                    .map_or_else(|| k.to_string(), |(_, c)| c.text());
                (k.to_string(), text)
            })
            .collect()
    })
}

/// The head of a choice's text (`resnet` of `resnet:width=4`).
fn head(text: &str) -> String {
    Choice::parse(text).map(|c| c.head).unwrap_or_default()
}

impl SetupState {
    /// The dataset sources the Dataset field offers (`workload::study::dataset_sources`) and the
    /// problems reading the user's datasets file; the selected preset is loaded again.
    pub fn set_sources(&mut self, sources: Vec<Source>, problems: Vec<String>) {
        self.sources = sources;
        self.source_problems = problems;
        self.reset_from_preset();
    }

    /// The study Setup edits: the one its model, dataset and optimizer make where they are not
    /// the preset's own, else the selected preset. None: no preset, or the study cannot be
    /// made (`problems` says why, under the field of its part).
    pub fn base(&self) -> Option<&Preset> {
        match &self.study {
            Some(Ok(p)) => Some(p),
            Some(Err(_)) => None,
            None => self.preset().map(|e| &e.preset),
        }
    }

    /// Whether the calibration chooses the value of `f` (target, batch sizes, step budget):
    /// the study leaves it out and the user has not edited it.
    pub fn auto(&self, f: Field) -> bool {
        let Some(c) = self.base().and_then(|p| p.calibrate) else {
            return false;
        };
        let touched = |f: Field| self.touched.contains(&f);
        match f {
            Field::Target => c.target && !touched(Field::Target),
            Field::BatchMin | Field::BatchMax => {
                c.batch_sizes && !touched(Field::BatchMin) && !touched(Field::BatchMax)
            }
            Field::Budget => c.budget && !touched(Field::Budget),
            Field::Trials | Field::Confirm => {
                c.size && !touched(Field::Trials) && !touched(Field::Confirm)
            }
            _ => false,
        }
    }

    /// What the study's calibration stage will choose (the user's edits taken out); None: the
    /// study has none.
    pub fn calibrates(&self) -> Option<Calibrate> {
        let mut c = self.base()?.calibrate?;
        c.target &= self.auto(Field::Target);
        c.batch_sizes &= self.auto(Field::BatchMax);
        c.budget &= self.auto(Field::Budget);
        c.size &= self.auto(Field::Trials);
        c.any().then_some(c)
    }

    /// The dataset field's value for preset `p`: (source index, text). A dataset no source
    /// is the base of becomes a source of its own, named after its preset.
    pub(crate) fn dataset_of(&mut self, p: &Preset) -> (usize, String) {
        let Some(d) = &p.workload.dataset else {
            // a model that reads no data: the field keeps what it had
            let text = if self.dataset.is_empty() {
                self.sources
                    .first()
                    .map(|s| s.name.clone())
                    .unwrap_or_default()
            } else {
                self.dataset.clone()
            };
            return (self.source_index(&text), text);
        };
        if let Some(c) = study::dataset_choice(d, &self.sources) {
            return (self.source_index(&c.head), c.text());
        }
        let path = self
            .preset()
            .and_then(|e| e.path.clone())
            .unwrap_or_else(|| PathBuf::from(&p.name));
        self.sources.push(Source {
            name: p.name.clone(),
            origin: Origin::Preset(path),
            table: toml::to_string(d).unwrap_or_default(),
        });
        (self.sources.len() - 1, p.name.clone())
    }

    /// The index of the source a dataset text names (`sources.len()`: a path).
    fn source_index(&self, text: &str) -> usize {
        let h = head(text);
        self.sources
            .iter()
            .position(|s| s.name == h)
            .unwrap_or(self.sources.len())
    }

    /// The study of the model, dataset and optimizer as the fields hold them.
    pub fn build_study(&self) -> Result<Preset, StudyError> {
        let err = |part, message: String| StudyError { part, message };
        let model = Choice::parse(&self.model).map_err(|m| err(Part::Model, m))?;
        let table = if model.head == "nqm" {
            String::new()
        } else {
            if self.dataset.trim().is_empty() {
                return Err(err(
                    Part::Dataset,
                    "a path: Enter, then PATH[:format=npz,key=value,…] (the format from the \
                     name: .npz .npy -ubyte .idx .txt, a folder of images)"
                        .into(),
                ));
            }
            let mut choice = Choice::parse(&self.dataset).map_err(|m| err(Part::Dataset, m))?;
            // a path's format is one of its settings here (`--format` on the command line)
            let mut format = None;
            if !self.sources.iter().any(|s| s.name == choice.head) {
                if let Some(i) = choice.settings.iter().position(|(k, _)| k == "format") {
                    format = Some(choice.settings.remove(i).1);
                }
            }
            study::dataset_table(&choice, format.as_deref(), &self.sources)?
        };
        study::study(&model, &table, self.optimizer)
    }

    /// Rebuilds the study after the model, dataset or optimizer changed, and loads every field
    /// the user has not touched from it.
    pub(crate) fn restudy(&mut self) {
        self.study = self.preset().map(|e| e.preset.clone()).and_then(|p| {
            let w = &p.workload;
            let own = (&self.model, &self.dataset) == (&self.own.0, &self.own.1);
            if own && self.optimizer == w.optimizer {
                return None;
            }
            match self.build_study() {
                Ok(s)
                    if s.workload.model == w.model
                        && s.workload.dataset == w.dataset
                        && s.workload.optimizer == w.optimizer =>
                {
                    None
                }
                r => Some(r),
            }
        });
        self.rebase();
    }

    /// Loads every field the user has not touched from the study (`load_field`).
    pub(crate) fn rebase(&mut self) {
        let Some(preset) = self.preset().map(|e| e.preset.clone()) else {
            return;
        };
        let base = self.base().cloned().unwrap_or_else(|| preset.clone());
        for f in FIELDS {
            if !self.touched.contains(&f) {
                self.load_field(f, &base, &preset);
            }
        }
    }

    /// ←/→ on the Model field: the next family, at its default size (the preset's own model
    /// for the preset's family).
    pub(crate) fn cycle_model(&mut self, up: bool) {
        let defaults = family_defaults();
        let h = head(&self.model);
        let i = defaults.iter().position(|(k, _)| *k == h);
        let next = match i {
            Some(i) => cycle(i, defaults.len(), up),
            None => 0,
        };
        let (kind, text) = &defaults[next];
        self.model = if head(&self.own.0) == *kind {
            self.own.0.clone()
        } else {
            text.clone()
        };
        self.restudy();
    }

    /// ←/→ on the Dataset field: the next source (the preset's own with its settings), then
    /// "a path…".
    pub(crate) fn cycle_dataset(&mut self, up: bool) {
        self.dataset_idx = cycle(self.dataset_idx, self.sources.len() + 1, up);
        self.dataset = match self.sources.get(self.dataset_idx) {
            Some(s) if head(&self.own.1) == s.name => self.own.1.clone(),
            Some(s) => s.name.clone(),
            None => String::new(),
        };
        self.restudy();
    }

    /// The Model field's text editor accepted `text`: a choice (`kind:key=value,…`), or why
    /// not. What the study makes of it (an unknown key, a model for other data) is said under
    /// the field.
    pub fn set_model(&mut self, text: &str) -> Result<(), String> {
        let c = Choice::parse(text.trim())?;
        self.model = c.text();
        self.restudy();
        Ok(())
    }

    /// The Dataset field's text editor accepted `text`: a source or a path with its settings.
    pub fn set_dataset(&mut self, text: &str) -> Result<(), String> {
        let c = Choice::parse(text.trim())?;
        self.dataset = c.text();
        self.dataset_idx = self.source_index(&self.dataset);
        self.restudy();
        Ok(())
    }

    /// The Dataset field's value in words: the choice, where it comes from, or that a path is
    /// to be typed.
    pub fn dataset_value(&self) -> String {
        if head(&self.model) == "nqm" {
            return "none: the noisy quadratic model reads no data".into();
        }
        match self.sources.get(self.dataset_idx) {
            None if self.dataset.is_empty() => "a path… (Enter: type it)".into(),
            None => self.dataset.clone(),
            Some(s) => match &s.origin {
                Origin::Named => self.dataset.clone(),
                Origin::DatasetsFile(_) => format!("{} (datasets file)", self.dataset),
                Origin::Preset(_) => format!("{} (a preset's dataset)", self.dataset),
            },
        }
    }

    /// Save as preset from Setup: the study as launched (a study with a calibration stage as
    /// the minimal study it is, a preset's with its edits), or why not.
    pub fn save_command(&self, name: &str, runs_dir: &Path) -> Result<Command, String> {
        if let Some(p) = self.problems().into_iter().find(|p| p.blocking) {
            return Err(format!("fix it first: {}", p.message));
        }
        let cfg = self
            .config(runs_dir)
            .ok_or("no study to save: pick a preset, or a model and a dataset")?;
        let p = cfg.preset;
        let how = match self.calibrates() {
            Some(c) => format!(
                "saved by scaling-lab's Setup as the minimal study it is: its calibration stage \
                 chooses the {} (docs/calibration.md)",
                c.keys().join(", ")
            ),
            None => match self.preset() {
                Some(e) if self.study.is_none() => format!(
                    "saved by scaling-lab's Setup from preset {} with its edits",
                    e.preset.name
                ),
                _ => "saved by scaling-lab's Setup".into(),
            },
        };
        let comment = format!(
            "{name}: {}\n{how}\n`scaling-lab sweep {name}` plans this study again",
            p.description
        );
        Ok(Command::SavePreset {
            name: name.to_string(),
            preset: Box::new(p),
            comment,
        })
    }
}
