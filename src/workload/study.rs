//! A study from a model and a dataset alone: the `--model` / `--dataset` / `--optimizer` flags
//! and Setup's Model and Dataset fields become the minimal preset a user would write —
//! `[workload.dataset]`, `[workload.model]` and an optimizer — loaded by the one preset loader,
//! so everything the study leaves out goes to the calibration stage exactly as for a file
//! (docs/calibration.md). Also where the dataset sources a user can pick come from: the named
//! datasets, the user's datasets file and the datasets of the user's own presets.

use std::path::{Path, PathBuf};

use super::load::parse_preset;
use super::spec::{OptimizerKind, Preset};
use crate::model::Input;

/// Environment variable naming the user's datasets file (default:
/// `<config dir>/scaling-lab/datasets.toml`).
pub const DATASETS_FILE_ENV: &str = "SCALING_LAB_DATASETS_FILE";

/// The named datasets every build has (bundled or from the user's CIFAR files).
pub const NAMED_DATASETS: [&str; 7] = [
    "digits",
    "mnist",
    "fashion",
    "shakespeare",
    "reviews",
    "cifar10",
    "cifar100",
];

/// The user's datasets file: `SCALING_LAB_DATASETS_FILE`, else
/// `<config dir>/scaling-lab/datasets.toml`. Each table is a dataset source named by its key,
/// with the keys of a preset's `[workload.dataset]` (paths relative to the file).
pub fn user_datasets_file() -> Option<PathBuf> {
    if let Some(f) = std::env::var_os(DATASETS_FILE_ENV) {
        if !f.is_empty() {
            return Some(PathBuf::from(f));
        }
    }
    dirs::config_dir().map(|c| c.join("scaling-lab").join("datasets.toml"))
}

/// Where a dataset source the user can pick comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum Origin {
    /// A named dataset (bundled, or CIFAR from the user's files).
    Named,
    /// A table of the user's datasets file.
    DatasetsFile(PathBuf),
    /// The `[workload.dataset]` of one of the user's presets.
    Preset(PathBuf),
}

/// A dataset source: its name (what `--dataset` takes), where it comes from, and the lines of
/// its `[workload.dataset]` table.
#[derive(Clone, Debug, PartialEq)]
pub struct Source {
    pub name: String,
    pub origin: Origin,
    pub table: String,
}

impl Source {
    /// "mnist", "my-npz (datasets file)", "my-cnn's dataset (your preset)".
    pub fn label(&self) -> String {
        match &self.origin {
            Origin::Named => self.name.clone(),
            Origin::DatasetsFile(_) => format!("{} (datasets file)", self.name),
            Origin::Preset(_) => format!("{} (your preset's dataset)", self.name),
        }
    }
}

/// Every dataset source a user can pick: the named ones, the tables of the user's datasets
/// file, the datasets of the user's presets (those with files of their own). Problems reading
/// the datasets file come back as messages (a bad file never hides the named datasets).
pub fn dataset_sources() -> (Vec<Source>, Vec<String>) {
    let mut out = named_sources();
    let mut problems = Vec::new();
    if let Some(f) = user_datasets_file().filter(|f| f.is_file()) {
        match datasets_file_sources(&f) {
            Ok(v) => out.extend(v),
            Err(m) => problems.push(m),
        }
    }
    if let Some(dir) = super::presets::user_presets_dir() {
        for l in super::presets::list_all_presets(&super::presets::presets_dir(), Some(&dir)) {
            let Ok(p) = l.preset.as_ref() else { continue };
            let Some(d) = p.workload.dataset.as_ref().filter(|d| d.format.is_some()) else {
                continue;
            };
            if !l.user || out.iter().any(|s| s.name == p.name) {
                continue;
            }
            if let Ok(table) = toml::to_string(d) {
                out.push(Source {
                    name: p.name.clone(),
                    origin: Origin::Preset(l.path.clone()),
                    table,
                });
            }
        }
    }
    (out, problems)
}

/// The named datasets as sources: what every build offers, before the user's own.
pub fn named_sources() -> Vec<Source> {
    NAMED_DATASETS
        .iter()
        .map(|n| Source {
            name: n.to_string(),
            origin: Origin::Named,
            table: format!("name = \"{n}\"\n"),
        })
        .collect()
}

/// The sources of a datasets file (its paths made absolute, relative to the file).
fn datasets_file_sources(f: &Path) -> Result<Vec<Source>, String> {
    let text = std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
    let table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| format!("{}: {}", f.display(), e.message()))?;
    let base = f
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let mut out = Vec::new();
    for (name, v) in table {
        let Some(t) = v.as_table() else {
            return Err(format!(
                "{}: `{name}` is not a table: each dataset is a [NAME] table with the keys of \
                 [workload.dataset]",
                f.display()
            ));
        };
        let mut spec: crate::data::spec::DatasetSpec = t
            .clone()
            .try_into()
            .map_err(|e: toml::de::Error| format!("{}: [{name}]: {}", f.display(), e.message()))?;
        spec.resolve_paths(&base)
            .map_err(|p| format!("{}: [{name}]: {}", f.display(), p.message))?;
        let table = toml::to_string(&spec).map_err(|e| format!("{}: {e}", f.display()))?;
        out.push(Source {
            name,
            origin: Origin::DatasetsFile(f.to_path_buf()),
            table,
        });
    }
    Ok(out)
}

/// The format a path's name suggests (None: say `--format`).
pub fn format_of_path(p: &Path) -> Option<&'static str> {
    if p.is_dir() {
        return Some("image-folder");
    }
    let name = p.file_name()?.to_string_lossy().to_lowercase();
    let ends = |s: &str| name.ends_with(s);
    Some(if ends(".npz") {
        "npz"
    } else if ends(".npy") {
        "npy"
    } else if ends("-ubyte") || ends("-ubyte.gz") || ends(".idx") || ends(".idx.gz") {
        "idx"
    } else if ends(".txt") || ends(".txt.gz") {
        "bytes"
    } else {
        return None;
    })
}

/// What a study's flag or field was given as: `KIND[:key=value,…]` for the model,
/// `NAME|PATH[:key=value,…]` for the dataset.
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    pub head: String,
    pub settings: Vec<(String, String)>,
}

impl Choice {
    /// Parses `head[:k=v,k=v]`; a value may be an array (`channels=[8,16]`).
    pub fn parse(s: &str) -> Result<Choice, String> {
        let (head, rest) = match s.split_once(':') {
            Some((h, r)) if !Path::new(s).exists() => (h, Some(r)),
            _ => (s, None),
        };
        let head = head.trim();
        if head.is_empty() {
            return Err("empty: give a name (e.g. resnet, mnist) before any `:key=value`".into());
        }
        let mut settings = Vec::new();
        if let Some(rest) = rest {
            for item in split_top(rest) {
                let item = item.trim();
                if item.is_empty() {
                    continue;
                }
                let (k, v) = item
                    .split_once('=')
                    .ok_or_else(|| format!("`{item}` is not key=value"))?;
                let (k, v) = (k.trim(), v.trim());
                if k.is_empty() || !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    return Err(format!("`{k}` is not a setting name"));
                }
                settings.push((k.to_string(), v.to_string()));
            }
        }
        Ok(Choice {
            head: head.to_string(),
            settings,
        })
    }

    /// The choice as a flag or a Setup field takes it: `head[:key=value,…]`.
    pub fn text(&self) -> String {
        if self.settings.is_empty() {
            return self.head.clone();
        }
        let settings: Vec<String> = self
            .settings
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        format!("{}:{}", self.head, settings.join(","))
    }

    /// The settings as TOML lines (`k = v`; a value that is not a TOML value is a string).
    fn toml_lines(&self) -> String {
        self.settings
            .iter()
            .map(|(k, v)| format!("{k} = {}\n", toml_value(v)))
            .collect()
    }
}

/// Splits at commas outside brackets and braces (arrays, inline tables).
fn split_top(s: &str) -> Vec<&str> {
    let (mut depth, mut start, mut out) = (0i32, 0usize, Vec::new());
    for (i, c) in s.char_indices() {
        match c {
            '[' | '{' => depth += 1,
            ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// `v` as a TOML value: itself where it parses as one (numbers, booleans, arrays, quoted
/// strings), else a string.
fn toml_value(v: &str) -> String {
    let probe = format!("x = {v}");
    if probe.parse::<toml::Table>().is_ok() {
        v.to_string()
    } else {
        toml::Value::String(v.to_string()).to_string()
    }
}

/// A setting's value as a choice writes it: a plain word stays plain where it reads back as
/// the same string (`batch_norm=ghost`), anything else is its TOML (`hidden=[64]`, `"a b"`).
fn setting_text(v: &toml::Value) -> String {
    if let toml::Value::String(s) = v {
        let plain = !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./~".contains(c));
        if plain && toml_value(s) != *s {
            return s.clone();
        }
    }
    v.to_string()
}

/// A model spec as the choice that names it: its kind and every key of its spec
/// (`resnet:depth=8,width=4,batch_norm=ghost,ghost_batch=16`).
pub fn model_choice(m: &crate::model::ModelSpec) -> Choice {
    let table = toml::Table::try_from(m).unwrap_or_default();
    Choice {
        head: table
            .get("kind")
            .and_then(|k| k.as_str())
            .unwrap_or_default()
            .to_string(),
        settings: table
            .iter()
            .filter(|(k, _)| k.as_str() != "kind")
            .map(|(k, v)| (k.clone(), setting_text(v)))
            .collect(),
    }
}

/// A preset's model as the choice that makes it again in the preset's study: [`model_choice`]
/// without the settings that study does not use (the noisy quadratic model's Adam
/// preconditioning under another optimizer), which a study made from the choice would refuse.
pub fn preset_model_choice(p: &Preset) -> Choice {
    let mut c = model_choice(&p.workload.model);
    let unused = super::load::unused_settings(p);
    c.settings.retain(|(k, _)| {
        !unused
            .iter()
            .any(|(keys, _)| keys.len() == 3 && keys[..2] == ["workload", "model"] && keys[2] == k)
    });
    c
}

/// The keys that say which dataset a table is (the rest are settings of it).
const IDENTITY_KEYS: [&str; 5] = ["name", "format", "dir", "train", "val"];

/// A dataset spec as a choice of one of `sources`: the source whose table it extends, with the
/// settings in which it differs from it (`mnist:downsample=2`). None where no source is its
/// base (then it is a source of its own: its preset's).
pub fn dataset_choice(d: &crate::data::spec::DatasetSpec, sources: &[Source]) -> Option<Choice> {
    let mine = toml::Table::try_from(d).ok()?;
    sources.iter().find_map(|s| {
        let spec: crate::data::spec::DatasetSpec = toml::from_str(&s.table).ok()?;
        let base = toml::Table::try_from(&spec).ok()?;
        let same = |k: &str| mine.get(k) == base.get(k);
        if !IDENTITY_KEYS.iter().all(|k| same(k)) || base.keys().any(|k| !mine.contains_key(k)) {
            return None;
        }
        Some(Choice {
            head: s.name.clone(),
            settings: mine
                .iter()
                .filter(|(k, _)| !same(k))
                .map(|(k, v)| (k.clone(), setting_text(v)))
                .collect(),
        })
    })
}

/// The text of the user's preset file holding study `p` as the minimal study it is: what its
/// calibration stage chooses (`Preset::calibrate`) left out, and every other setting only where
/// leaving it out would load another study — so loading the file re-plans the same study
/// (checked: it loads back to `p`). A study without a calibration stage is written whole
/// (`presets::preset_file_text`).
pub fn study_file_text(p: &Preset, comment: &str) -> Result<String, String> {
    let Some(c) = p.calibrate.filter(|c| c.any()) else {
        return super::presets::preset_file_text(p, comment);
    };
    let mut whole = p.clone();
    whole.calibrate = None;
    whole.sweep.auto_concurrency = false;
    let mut table = toml::Table::try_from(&whole).map_err(|e| e.to_string())?;
    let mut drop: Vec<Vec<&str>> = super::load::unused_settings(p)
        .into_iter()
        .map(|(keys, _)| keys)
        .collect();
    for (on, keys) in [
        (c.target, vec!["workload", "target"]),
        (c.target, vec!["workload", "targets"]),
        (c.search, vec!["search"]),
        (c.batch_sizes, vec!["sweep", "batch_sizes"]),
        (c.budget, vec!["workload", "step_budget"]),
        (c.budget, vec!["workload", "max_examples"]),
        (c.eval, vec!["workload", "eval_every"]),
        (c.eval, vec!["workload", "eval_growth"]),
        (c.defaults, vec!["workload", "defaults"]),
        (c.size, vec!["sweep", "trials_per_batch"]),
        (c.size, vec!["sweep", "confirm"]),
        (p.sweep.auto_concurrency, vec!["sweep", "concurrency"]),
    ] {
        if on {
            drop.push(keys);
        }
    }
    for keys in &drop {
        remove_key(&mut table, keys);
    }
    if p.sweep.confirm.is_none() {
        if let Some(sw) = table.get_mut("sweep").and_then(|v| v.as_table_mut()) {
            sw.insert("confirm".into(), toml::Value::String("off".into()));
        }
    }
    let path = PathBuf::from(format!("{}.toml", p.name));
    let loads = |t: &toml::Table| -> Result<Preset, String> {
        let text = toml::to_string(t).map_err(|e| e.to_string())?;
        parse_preset(&path, &text).map_err(|e| e.to_string())
    };
    let back = loads(&table).map_err(|e| format!("the saved study would not load: {e}"))?;
    if back != *p {
        return Err(format!(
            "the saved study would load as another study ({}; a bug: please report it)",
            super::presets::first_difference(
                &serde_json::to_value(&back).unwrap_or_default(),
                &serde_json::to_value(p).unwrap_or_default(),
                ""
            )
            .unwrap_or_default()
        ));
    }
    // every other setting only where it makes a difference
    for keys in leaf_keys(&table) {
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        if keys == ["workload", "optimizer"] || keys == ["workload", "model", "kind"] {
            continue;
        }
        let mut t = table.clone();
        remove_key(&mut t, &keys);
        if loads(&t).is_ok_and(|b| b == *p) {
            table = t;
        }
    }
    let body = toml::to_string(&table).map_err(|e| e.to_string())?;
    let head: String = comment
        .lines()
        .map(|l| format!("# {l}\n").replace("# \n", "#\n"))
        .collect();
    Ok(format!("{head}\n{body}"))
}

/// Writes study `p` as the user's preset `name` ([`study_file_text`]: a calibrated study as
/// the minimal study it is, any other whole); refused where a bundled preset or an existing
/// file has the name. Returns the path.
pub fn save_user_study(name: &str, p: &Preset, comment: &str) -> Result<PathBuf, String> {
    super::presets::write_user_preset(name, |name| {
        let mut p = p.clone();
        p.name = name.to_string();
        study_file_text(&p, comment)
    })
}

/// Removes the key at `keys` (its tables emptied by it too).
fn remove_key(t: &mut toml::Table, keys: &[&str]) {
    let Some((first, rest)) = keys.split_first() else {
        return;
    };
    if rest.is_empty() {
        t.remove(*first);
        return;
    }
    if let Some(sub) = t.get_mut(*first).and_then(|v| v.as_table_mut()) {
        remove_key(sub, rest);
        if sub.is_empty() {
            t.remove(*first);
        }
    }
}

/// The paths of every value of `t` that is not a table.
fn leaf_keys(t: &toml::Table) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for (k, v) in t {
        match v.as_table() {
            Some(sub) => out.extend(leaf_keys(sub).into_iter().map(|mut p| {
                p.insert(0, k.clone());
                p
            })),
            None => out.push(vec![k.clone()]),
        }
    }
    out
}

/// Which of the study's parts a problem belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    Model,
    Dataset,
    Optimizer,
    Study,
}

/// A study that cannot be made: which part, and why (one line).
#[derive(Clone, Debug, PartialEq)]
pub struct StudyError {
    pub part: Part,
    pub message: String,
}

impl std::fmt::Display for StudyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let flag = match self.part {
            Part::Model => "--model",
            Part::Dataset => "--dataset",
            Part::Optimizer => "--optimizer",
            Part::Study => "the study",
        };
        write!(f, "{flag}: {}", self.message)
    }
}

/// The `[workload.dataset]` lines of a dataset choice: a named dataset, a source of the user's
/// (datasets file, presets), or a path (its format from `format` or its name).
pub fn dataset_table(
    choice: &Choice,
    format: Option<&str>,
    sources: &[Source],
) -> Result<String, StudyError> {
    let err = |m: String| StudyError {
        part: Part::Dataset,
        message: m,
    };
    let base = if let Some(s) = sources.iter().find(|s| s.name == choice.head) {
        if format.is_some() {
            return Err(err(format!(
                "`{}` is a named dataset source: --format is for a path",
                choice.head
            )));
        }
        s.table.clone()
    } else {
        let p = Path::new(&choice.head);
        if !p.exists() {
            let names: Vec<&str> = sources.iter().map(|s| s.name.as_str()).collect();
            return Err(err(format!(
                "`{}` is neither a dataset source ({}) nor an existing file or folder",
                choice.head,
                names.join(", ")
            )));
        }
        let f = match format {
            Some(f) => f,
            None => format_of_path(p).ok_or_else(|| {
                err(format!(
                    "cannot tell the format of {} from its name: give --format (idx, cifar10, \
                     cifar100, npy, npz, image-folder, bytes, tokens)",
                    p.display()
                ))
            })?,
        };
        let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
        format!(
            "format = {}\ntrain = {}\n",
            toml_value(f),
            toml::Value::String(abs.display().to_string())
        )
    };
    // the choice's settings replace the source's
    let mut table: toml::Table = base
        .parse()
        .map_err(|e: toml::de::Error| err(e.message().to_string()))?;
    let extra: toml::Table = choice
        .toml_lines()
        .parse()
        .map_err(|e: toml::de::Error| err(e.message().to_string()))?;
    table.extend(extra);
    // one line per key, a sub-table inline (`augment = { crop = 4, flip = true }`): the text
    // goes under `[workload.dataset]` as it is, where a `[augment]` header would leave it
    Ok(table.iter().map(|(k, v)| format!("{k} = {v}\n")).collect())
}

/// The `[workload.model]` lines after `kind`: the settings given, or, for a registered family
/// given by its kind alone, the sizes of its default (`Registration::default_spec`: what a study
/// on a 2-core CPU starts from).
fn model_lines(model: &Choice) -> String {
    let default = crate::model::family::registration(&model.head)
        .ok()
        .filter(|_| model.settings.is_empty())
        .and_then(|f| toml::to_string(&f.default_spec()).ok())
        .and_then(|t| t.parse::<toml::Table>().ok());
    match default {
        Some(mut table) => {
            table.remove("kind");
            toml::to_string(&table).unwrap_or_default()
        }
        None => model.toml_lines(),
    }
}

/// The minimal preset of a model, a dataset table and an optimizer (what a user would write),
/// loaded by the preset loader: everything else is left to the calibration stage. A problem is
/// one line naming the part it belongs to (a language model on images says so at the model).
pub fn study(
    model: &Choice,
    dataset_table: &str,
    optimizer: OptimizerKind,
) -> Result<Preset, StudyError> {
    let data_name = dataset_table
        .parse::<toml::Table>()
        .ok()
        .and_then(|t| {
            t.get("name")
                .and_then(|v| v.as_str().map(str::to_string))
                .or_else(|| t.get("format").and_then(|v| v.as_str().map(str::to_string)))
        })
        .unwrap_or_else(|| "data".into());
    // a model that reads no data is named after itself and its optimizer
    let name = if dataset_table.trim().is_empty() {
        format!("{}-{}", model.head, optimizer.name())
    } else {
        format!("{}-{}-{}", model.head, data_name, optimizer.name())
    };
    let text = format!(
        "name = {}\n\n[workload]\noptimizer = \"{}\"\n\n[workload.dataset]\n{dataset_table}\n\
         [workload.model]\nkind = {}\n{}",
        toml::Value::String(name.clone()),
        optimizer.name(),
        toml_value(&model.head),
        model_lines(model)
    );
    let family = crate::model::family::registration(&model.head).ok();
    let without_data = family.is_some_and(|f| f.input == Input::None);
    let text = if without_data {
        text.replace(&format!("[workload.dataset]\n{dataset_table}\n"), "")
    } else {
        text
    };
    let virtual_path = PathBuf::from(format!("{name}.toml"));
    parse_preset(&virtual_path, &text).map_err(|e| {
        // the line's table says which part the problem is in
        let line = e.line;
        let before: Vec<&str> = text.lines().take(line.max(1)).collect();
        let table = before
            .iter()
            .rev()
            .find(|l| l.starts_with('['))
            .copied()
            .unwrap_or("");
        let part = match table {
            "[workload.model]" => Part::Model,
            "[workload.dataset]" => Part::Dataset,
            "[workload]" => Part::Optimizer,
            _ => Part::Study,
        };
        // a language model on images (an image model on text) is said at the model, the
        // choice that reads the data (the loader places it at the dataset's key)
        let pair = part == Part::Dataset && e.message.starts_with("model `");
        let part = if pair || (part == Part::Study && e.message.contains("model")) {
            Part::Model
        } else {
            part
        };
        StudyError {
            part,
            message: e.message,
        }
    })
}

#[cfg(test)]
mod tests;
