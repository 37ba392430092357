//! Datasets: sources (named entries and files in standard formats), verified loading through one
//! path, seeded train/validation splits, augmentation, batching, sharding. The guide:
//! docs/datasets.md.
//!
//! Layering: the bottom layer (imports no other module of the crate). The dataset's preset types
//! ([`DatasetSpec`]) live here; `workload` re-exports them.
//!
//! A source ([`spec::Source`]) is a registry entry ([`registry`]: the bundled datasets, whose
//! files live in `data/` with their SHA-256 pinned — `data/NOTICE` — and CIFAR-10/100, which the
//! user brings) or a preset's files in a [`Format`]. [`read`] locates, reads, verifies and
//! records the files ([`digest`]: path, size, SHA-256 for the run log) and [`formats`] decodes
//! them; a missing, modified or malformed file is one error naming it (never a panic).
//!
//! **Data directory** (named entries without `dir`): `SCALING_LAB_DATA_DIR` alone if set, else
//! the first of `./data`, the user data directory and the build tree's `data/` that holds a
//! bundled file ([`data_search_path`]); the small digits file is also embedded in the binary as
//! the last resort.
//!
//! **Splits** (`build`; recorded via [`Dataset::split_info`]): images are split by a seeded
//! permutation (SplitMix64 from `split_seed`, see [`split`]) unless the source has validation
//! files; text by its contiguous tail; review sentences by a seeded order; a transfer
//! probe's labelled sentences ([`probe`]) are drawn first and kept out of both streams.
//!
//! **Pixels** are scaled to [0, 1] (digits: v/16, bytes: v/255; float32 arrays as stored).
//! [`ImageData::standardize`] optionally shifts/scales both splits by the training split's
//! scalar mean and std.

pub mod augment;
pub mod batch;
mod build;
pub mod digest;
pub mod files;
pub mod formats;
pub mod paths;
pub mod probe;
pub mod read;
pub mod registry;
pub mod spec;
pub mod split;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_files;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

pub use augment::Aug;
pub use batch::{gather, gather_augmented, shard_ranges, ImageBatcher, TextBatcher};
pub use digest::DataFileRecord;
pub use files::{DataFile, ALL_FILES};
pub use formats::{Pixels, RawImages, RawSource};
pub use read::Raw;
pub use spec::{
    Augment, CifarLabel, DatasetSpec, Format, Geometry, Layout, Part, Source, SpecProblem,
    TokenType,
};
pub use split::{SplitInfo, SplitMix64};

/// Byte-level vocabulary size of the text datasets.
pub const BYTE_VOCAB: usize = 256;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DataError {
    #[error(
        "dataset file {} is missing (looked in {}); get the files with `scaling-lab data install DIR` \
         from a build that has them (or `git checkout -- data/` in the scaling-lab repository) and set \
         SCALING_LAB_DATA_DIR=DIR",
        path.display(),
        searched_places()
    )]
    Missing { path: PathBuf },
    /// A file of the user's own dataset that is not there, and the key of `[workload.dataset]`
    /// that names it.
    #[error(
        "dataset file {} is missing: `{key}` under [workload.dataset] names it (relative names \
         are in the preset's folder, or in `dir` when it is given)",
        path.display()
    )]
    MissingFile { path: PathBuf, key: String },
    #[error(
        "dataset file {} is corrupt or modified: its sha256 is {actual}, expected {expected}; \
         restore it with `git checkout -- data/`",
        path.display()
    )]
    Checksum {
        path: PathBuf,
        expected: String,
        actual: String,
    },
    #[error("cannot read dataset file {}: {message}", path.display())]
    Io { path: PathBuf, message: String },
    #[error("dataset file {}: {message}", path.display())]
    Format { path: PathBuf, message: String },
    #[error("invalid dataset settings: {0}")]
    Spec(String),
    /// A setting of `[workload.dataset]` that the data contradicts (an `image_size` no image
    /// has): the preset is at fault, at `key`; the message starts with the key and its value.
    #[error("{message}")]
    Setting { key: &'static str, message: String },
    /// A named dataset whose files are nowhere it looked (which, where, where they come from).
    #[error("{0}")]
    NotFound(String),
}

impl DataError {
    /// An I/O error reading `path`: `Missing` when it does not exist, else `Io`.
    pub fn io(path: &Path, e: std::io::Error) -> Self {
        if e.kind() == std::io::ErrorKind::NotFound {
            DataError::Missing {
                path: path.to_path_buf(),
            }
        } else {
            DataError::Io {
                path: path.to_path_buf(),
                message: e.to_string(),
            }
        }
    }
}

/// A loaded, split dataset.
#[derive(Clone, Debug, PartialEq)]
pub enum Dataset {
    Images(ImageData),
    Text(TextData),
}

impl Dataset {
    pub fn split_info(&self) -> SplitInfo {
        match self {
            Dataset::Images(d) => d.split.clone(),
            Dataset::Text(d) => d.split.clone(),
        }
    }
    pub fn as_images(&self) -> Option<&ImageData> {
        match self {
            Dataset::Images(d) => Some(d),
            _ => None,
        }
    }
    pub fn as_text(&self) -> Option<&TextData> {
        match self {
            Dataset::Text(d) => Some(d),
            _ => None,
        }
    }
    /// The data files read, for the run log's header.
    pub fn files(&self) -> &[DataFileRecord] {
        match self {
            Dataset::Images(d) => &d.files,
            Dataset::Text(d) => &d.files,
        }
    }
}

/// Image classification data, NCHW, pixels in [0, 1] (unless standardised).
#[derive(Clone, Debug, PartialEq)]
pub struct ImageData {
    pub channels: usize,
    pub height: usize,
    pub width: usize,
    pub classes: usize,
    /// n_train × channels × height × width.
    pub train_x: Vec<f32>,
    pub train_y: Vec<u8>,
    /// n_val_used × channels × height × width (after the `max_val` cap).
    pub val_x: Vec<f32>,
    pub val_y: Vec<u8>,
    pub split: SplitInfo,
    /// (mean, std) applied by [`ImageData::standardize`], if it was.
    pub standardized: Option<(f32, f32)>,
    /// Random crops and flips of training batches (`augment`); None: the images as they are.
    pub augment: Option<Augment>,
    /// The files the examples came from (recorded in run logs).
    pub files: Vec<DataFileRecord>,
}

impl ImageData {
    /// Floats per example (c·h·w).
    pub fn example_len(&self) -> usize {
        self.channels * self.height * self.width
    }
    pub fn n_train(&self) -> usize {
        self.train_y.len()
    }
    pub fn n_val(&self) -> usize {
        self.val_y.len()
    }
    /// x ← (x − mean)/std for both splits, with the scalar mean and std of the training pixels.
    /// Idempotent (a second call does nothing). Returns (mean, std).
    pub fn standardize(&mut self) -> (f32, f32) {
        if let Some(ms) = self.standardized {
            return ms;
        }
        let n = self.train_x.len().max(1) as f64;
        let mean = self.train_x.iter().map(|&v| v as f64).sum::<f64>() / n;
        let var = self
            .train_x
            .iter()
            .map(|&v| (v as f64 - mean).powi(2))
            .sum::<f64>()
            / n;
        let std = var.sqrt().max(1e-8);
        let (m, s) = (mean as f32, std as f32);
        for v in self.train_x.iter_mut().chain(self.val_x.iter_mut()) {
            *v = (*v - m) / s;
        }
        self.standardized = Some((m, s));
        (m, s)
    }
}

/// Per-sentence labels of a labelled text corpus (movie reviews), in stream order.
#[derive(Clone, Debug, PartialEq)]
pub struct TextLabels {
    /// 1 = positive, 0 = negative; one per sentence of `train`, in order.
    pub train: Vec<u8>,
    pub val: Vec<u8>,
}

/// Text: train and validation token streams (byte-level text: every byte is a token).
#[derive(Clone, Debug, PartialEq)]
pub struct TextData {
    /// 256 for byte-level text; the declared vocabulary of token files.
    pub vocab: usize,
    pub train: Vec<u32>,
    pub val: Vec<u32>,
    pub seq_len: usize,
    /// Cap on validation windows per evaluation.
    pub max_val: Option<usize>,
    pub labels: Option<TextLabels>,
    pub split: SplitInfo,
    /// The files the text came from (recorded in run logs).
    pub files: Vec<DataFileRecord>,
    /// A transfer probe's labelled sentences, never in `train` or `val` (`probe`).
    pub probe: Option<Arc<probe::ProbeSet>>,
}

/// Environment variable naming the data directory (when set, only it is used).
pub const DATA_DIR_ENV: &str = "SCALING_LAB_DATA_DIR";

/// The digits file, embedded so that the default presets run from an installed binary anywhere.
pub const EMBEDDED_DIGITS: &[u8] = include_bytes!("../../data/digits.csv.gz");
/// The provenance and licences of the bundled files.
pub const NOTICE: &str = include_str!("../../data/NOTICE");

/// Where data files are looked for, in order: `$SCALING_LAB_DATA_DIR` alone when it is set;
/// else `./data`, the user data directory (`$XDG_DATA_HOME/scaling-lab/data` on Linux), and the
/// build tree's `data/`.
pub fn data_search_path() -> Vec<PathBuf> {
    if let Some(d) = std::env::var_os(DATA_DIR_ENV) {
        if !d.is_empty() {
            return vec![PathBuf::from(d)];
        }
    }
    let mut out = vec![PathBuf::from("./data")];
    if let Some(u) = dirs::data_dir() {
        out.push(u.join("scaling-lab").join("data"));
    }
    out.push(PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/data")));
    out
}

/// The places [`data_search_path`] names, for messages.
pub fn searched_places() -> String {
    let env_set = std::env::var_os(DATA_DIR_ENV).is_some_and(|d| !d.is_empty());
    let list: Vec<String> = data_search_path()
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    if env_set {
        format!("{} (from {DATA_DIR_ENV})", list.join(", "))
    } else {
        list.join(", ")
    }
}

fn holds_any_data_file(dir: &Path) -> bool {
    ALL_FILES.iter().any(|f| dir.join(f.name).is_file())
}

/// The data directory: the first place of [`data_search_path`] that holds a bundled file (or the
/// first place, when none does).
pub fn data_dir() -> PathBuf {
    let places = data_search_path();
    places
        .iter()
        .find(|d| holds_any_data_file(d))
        .cloned()
        .unwrap_or_else(|| places[0].clone())
}

/// What [`install_data`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InstallReport {
    /// Files written (verified copies).
    pub installed: Vec<PathBuf>,
    /// Files already present in the target with the right checksum.
    pub already: Vec<PathBuf>,
    /// Bundled files found nowhere (name only).
    pub missing: Vec<&'static str>,
}

/// `scaling-lab data install DIR`: copies every bundled data file that this build can find
/// ([`data_search_path`], and the embedded digits file) into `dir`, verifying each SHA-256, plus
/// the NOTICE. Existing verified files are kept; a file with a wrong checksum in `dir` is an
/// error (never overwritten). Each file is written to a temporary name and renamed, so an
/// interrupted install never leaves a partial file under a real name.
pub fn install_data(dir: &Path) -> anyhow::Result<InstallReport> {
    use anyhow::Context;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut report = InstallReport::default();
    let same = |a: &Path| std::fs::canonicalize(a).ok() == std::fs::canonicalize(dir).ok();
    for f in ALL_FILES.iter() {
        let dest = dir.join(f.name);
        if dest.symlink_metadata().is_ok() {
            files::read_verified_path(&dest, f.sha256).with_context(|| {
                format!("{} exists and is not the bundled file", dest.display())
            })?;
            report.already.push(dest);
            continue;
        }
        let mut bytes = data_search_path()
            .iter()
            .filter(|d| !same(d))
            .find_map(|d| files::read_verified(d, f).ok());
        if bytes.is_none() && *f == files::DIGITS_CSV {
            bytes = Some(EMBEDDED_DIGITS.to_vec());
        }
        let Some(bytes) = bytes else {
            report.missing.push(f.name);
            continue;
        };
        write_new_atomically(&dest, &bytes)?;
        report.installed.push(dest);
    }
    let notice = dir.join("NOTICE");
    if notice.symlink_metadata().is_err() {
        write_new_atomically(&notice, NOTICE.as_bytes())?;
    }
    Ok(report)
}

fn write_new_atomically(dest: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use anyhow::Context;
    use std::io::Write;
    let tmp = dest.with_extension(format!("partial-{}", std::process::id()));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .with_context(|| format!("cannot create {}", tmp.display()))?;
    f.write_all(bytes)
        .and_then(|_| f.sync_all())
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    drop(f);
    // Refuse to replace anything that appeared meanwhile.
    if dest.symlink_metadata().is_ok() {
        let _ = std::fs::remove_file(&tmp);
        anyhow::bail!(
            "{} appeared while installing: not overwritten",
            dest.display()
        );
    }
    std::fs::rename(&tmp, dest).with_context(|| format!("cannot create {}", dest.display()))
}

/// Check every bundled file in `dir`; one result per file.
pub fn verify_all(dir: &Path) -> Vec<(DataFile, Result<(), DataError>)> {
    ALL_FILES
        .iter()
        .map(|f| (*f, files::read_verified(dir, f).map(|_| ())))
        .collect()
}

fn check_spec(spec: &DatasetSpec) -> Result<Source, DataError> {
    if !(spec.val_fraction > 0.0 && spec.val_fraction < 1.0) {
        return Err(DataError::Spec(format!(
            "val_fraction {} must be in (0, 1)",
            spec.val_fraction
        )));
    }
    if spec.seq_len == 0 {
        return Err(DataError::Spec("seq_len must be at least 1".into()));
    }
    if spec.max_bytes == Some(0) {
        return Err(DataError::Spec("max_bytes must be at least 1".into()));
    }
    if spec.max_val == Some(0) {
        return Err(DataError::Spec("max_val must be at least 1".into()));
    }
    spec.source().map_err(|p| {
        DataError::Spec(match p.key.first() {
            Some(k) if !p.message.contains(k) => format!("{k}: {}", p.message),
            _ => p.message,
        })
    })
}

/// Split decoded source data as `spec` says (pure: no I/O).
pub fn build(raw: &Raw, spec: &DatasetSpec) -> Result<Dataset, DataError> {
    check_spec(spec)?;
    build::split(raw, spec)
}

/// Load and split a dataset (no caching).
pub fn load(spec: &DatasetSpec) -> Result<Dataset, DataError> {
    let source = check_spec(spec)?;
    let raw = read::read_source(&source)?;
    build(&raw, spec)
}

type Slot<T> = Arc<Mutex<Option<Arc<T>>>>;

fn cached<T>(
    map: &'static OnceLock<Mutex<HashMap<String, Slot<T>>>>,
    key: String,
    make: impl FnOnce() -> Result<T, DataError>,
) -> Result<Arc<T>, DataError> {
    let slot = {
        let mut m = map
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        m.entry(key).or_default().clone()
    };
    // One loader per key at a time; other keys proceed in parallel. Errors are not cached.
    let mut s = slot.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(v) = s.as_ref() {
        return Ok(v.clone());
    }
    let v = Arc::new(make()?);
    *s = Some(v.clone());
    Ok(v)
}

static RAW_CACHE: OnceLock<Mutex<HashMap<String, Slot<Raw>>>> = OnceLock::new();
static DATASET_CACHE: OnceLock<Mutex<HashMap<String, Slot<Dataset>>>> = OnceLock::new();

/// Like [`load`], but each (source, its location, spec) is decoded and split once per process;
/// the decoded files are shared between specs of the same source (e.g. different split seeds).
pub fn load_cached(spec: &DatasetSpec) -> Result<Arc<Dataset>, DataError> {
    let source = check_spec(spec)?;
    // where an entry's files are depends on the environment: part of the key
    let place = read::locate(&source)
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let key = format!("{place}|{spec:?}");
    cached(&DATASET_CACHE, key, || {
        let raw_key = format!("{place}|{source:?}");
        let raw = cached(&RAW_CACHE, raw_key, || read::read_source(&source))?;
        build(&raw, spec)
    })
}
