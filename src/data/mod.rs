//! The bundled datasets: verified loading, seeded train/validation splits, batching, sharding.
//!
//! Layering: the bottom layer (imports no other module of the crate).
//!
//! Files live in `data/` (see `data/NOTICE` for provenance and licences). Every file's SHA-256 is
//! checked when it is read; a missing or modified file is an error naming it (never a panic).
//!
//! **Data directory**: `SCALING_LAB_DATA_DIR` alone if set, else the first of `./data`, the user
//! data directory and the build tree's `data/` that holds a bundled file ([`data_search_path`]);
//! the small digits file is also embedded in the binary as the last resort.
//!
//! **Splits** (recorded in run logs via [`Dataset::split_info`]):
//! - images (digits, MNIST-10k, Fashion-MNIST-10k): a seeded random permutation of all examples
//!   (SplitMix64 from `split_seed`, see [`split`]) — MNIST-10k is sorted by class, so shuffling is
//!   essential; the first `round(n·val_fraction)` permuted examples are the validation set, the
//!   rest the training set. `max_val` keeps only the first `max_val` validation examples.
//! - Shakespeare: the first `max_bytes` bytes of the corpus; its contiguous tail of
//!   `round(len·val_fraction)` bytes is the validation stream (a random byte split would leak
//!   text between the two). The seed does not change this split; it is recorded anyway.
//! - movie reviews: sentences in a seeded random order, kept while their bytes (plus '\n') fit
//!   in `max_bytes`; the last `round(k·val_fraction)` sentences are validation. Each sentence is
//!   followed by '\n' in the byte stream; per-sentence labels stay available in [`TextLabels`].
//!   With `probe = { train, val, test }` a transfer probe's labelled sentences are drawn first
//!   ([`probe`]) and every sentence of their text is left out of both streams.
//!
//! **Pixels** are scaled to [0, 1] (digits: v/16, IDX: v/255). [`ImageData::standardize`]
//! optionally shifts/scales both splits by the training split's scalar mean and std.

pub mod batch;
pub mod files;
pub mod parse;
pub mod probe;
pub mod split;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

pub use batch::{gather, shard_ranges, ImageBatcher, TextBatcher};
pub use files::{DataFile, ALL_FILES};
pub use parse::RawImages;
pub use split::{SplitInfo, SplitMix64};

use crate::workload::spec::{DatasetKind, DatasetSpec};

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

/// Byte-level text: train and validation byte streams.
#[derive(Clone, Debug, PartialEq)]
pub struct TextData {
    /// 256: every byte is a token.
    pub vocab: usize,
    pub train: Vec<u8>,
    pub val: Vec<u8>,
    pub seq_len: usize,
    /// Cap on validation windows per evaluation.
    pub max_val: Option<usize>,
    pub labels: Option<TextLabels>,
    pub split: SplitInfo,
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

/// [`read_raw`] from [`data_dir`], with the embedded digits file as the last resort (only when
/// `SCALING_LAB_DATA_DIR` is not set: an explicit directory is never silently replaced).
fn read_raw_auto(kind: DatasetKind) -> Result<RawSource, DataError> {
    let dir = data_dir();
    match read_raw(&dir, kind) {
        Err(DataError::Missing { .. })
            if kind == DatasetKind::Digits
                && std::env::var_os(DATA_DIR_ENV).is_none_or(|d| d.is_empty()) =>
        {
            let path = PathBuf::from(format!("<embedded>/{}", files::DIGITS_CSV.name));
            let text = files::gunzip(&path, EMBEDDED_DIGITS)?;
            Ok(RawSource::Images(parse::parse_digits_csv(&path, &text)?))
        }
        other => other,
    }
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

/// The preset name of a dataset kind.
pub fn kind_name(kind: DatasetKind) -> &'static str {
    match kind {
        DatasetKind::Digits => "digits",
        DatasetKind::Mnist => "mnist",
        DatasetKind::Fashion => "fashion",
        DatasetKind::Shakespeare => "shakespeare",
        DatasetKind::Reviews => "reviews",
    }
}

/// Whether a dataset kind holds images (else byte-level text).
pub fn is_image_kind(kind: DatasetKind) -> bool {
    matches!(
        kind,
        DatasetKind::Digits | DatasetKind::Mnist | DatasetKind::Fashion
    )
}

/// The files a dataset kind reads.
pub fn files_of(kind: DatasetKind) -> &'static [DataFile] {
    const DIGITS: [DataFile; 1] = [files::DIGITS_CSV];
    const MNIST: [DataFile; 2] = [files::MNIST_IMAGES, files::MNIST_LABELS];
    const FASHION: [DataFile; 2] = [files::FASHION_IMAGES, files::FASHION_LABELS];
    const SHAKESPEARE: [DataFile; 1] = [files::SHAKESPEARE];
    const REVIEWS: [DataFile; 1] = [files::REVIEWS];
    match kind {
        DatasetKind::Digits => &DIGITS,
        DatasetKind::Mnist => &MNIST,
        DatasetKind::Fashion => &FASHION,
        DatasetKind::Shakespeare => &SHAKESPEARE,
        DatasetKind::Reviews => &REVIEWS,
    }
}

/// Check every bundled file in `dir`; one result per file.
pub fn verify_all(dir: &Path) -> Vec<(DataFile, Result<(), DataError>)> {
    ALL_FILES
        .iter()
        .map(|f| (*f, files::read_verified(dir, f).map(|_| ())))
        .collect()
}

/// Decoded source data before splitting.
#[derive(Debug)]
pub enum RawSource {
    Images(RawImages),
    Text(Vec<u8>),
    Sentences {
        labels: Vec<u8>,
        sentences: Vec<String>,
    },
}

/// Read, verify and decode the files of one dataset kind from `dir`.
pub fn read_raw(dir: &Path, kind: DatasetKind) -> Result<RawSource, DataError> {
    match kind {
        DatasetKind::Digits => {
            let f = files::DIGITS_CSV;
            let text = files::read_gz_verified(dir, &f)?;
            Ok(RawSource::Images(parse::parse_digits_csv(
                &dir.join(f.name),
                &text,
            )?))
        }
        DatasetKind::Mnist | DatasetKind::Fashion => {
            let (fi, fl) = if kind == DatasetKind::Mnist {
                (files::MNIST_IMAGES, files::MNIST_LABELS)
            } else {
                (files::FASHION_IMAGES, files::FASHION_LABELS)
            };
            let images = files::read_gz_verified(dir, &fi)?;
            let labels = files::read_gz_verified(dir, &fl)?;
            Ok(RawSource::Images(parse::parse_idx_pair(
                &dir.join(fi.name),
                &images,
                &dir.join(fl.name),
                &labels,
                10,
            )?))
        }
        DatasetKind::Shakespeare => Ok(RawSource::Text(files::read_gz_verified(
            dir,
            &files::SHAKESPEARE,
        )?)),
        DatasetKind::Reviews => {
            let f = files::REVIEWS;
            let text = files::read_gz_verified(dir, &f)?;
            let (labels, sentences) = parse::parse_reviews_tsv(&dir.join(f.name), &text)?;
            Ok(RawSource::Sentences { labels, sentences })
        }
    }
}

fn check_spec(spec: &DatasetSpec) -> Result<(), DataError> {
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
    Ok(())
}

/// Split decoded source data as `spec` says (pure: no I/O).
pub fn build(raw: &RawSource, spec: &DatasetSpec) -> Result<Dataset, DataError> {
    check_spec(spec)?;
    let name = kind_name(spec.name).to_string();
    match raw {
        RawSource::Images(r) => build_images(r, spec, name).map(Dataset::Images),
        RawSource::Text(bytes) => {
            let bytes = match spec.max_bytes {
                Some(m) => &bytes[..m.min(bytes.len())],
                None => &bytes[..],
            };
            let n_val = split::val_count(bytes.len(), spec.val_fraction);
            let cut = bytes.len().saturating_sub(n_val);
            text_data(
                bytes[..cut].to_vec(),
                bytes[cut..].to_vec(),
                None,
                spec,
                name,
                "contiguous-tail",
                bytes.len(),
            )
        }
        RawSource::Sentences { labels, sentences } => {
            let held = match spec.probe {
                Some(sizes) => Some(probe::draw(labels, sentences, sizes, spec.split_seed)?),
                None => None,
            };
            let mut rng = SplitMix64::with_stream(spec.split_seed, split::STREAM_SPLIT);
            let order = rng.permutation(sentences.len());
            let budget = spec.max_bytes.unwrap_or(usize::MAX);
            let mut used = 0usize;
            let mut chosen = Vec::new();
            for &i in &order {
                if held.as_ref().is_some_and(|(_, lm)| !lm[i]) {
                    continue;
                }
                let len = sentences[i].len() + 1;
                if used + len > budget {
                    break;
                }
                used += len;
                chosen.push(i);
            }
            if chosen.len() < 2 {
                return Err(DataError::Spec(format!(
                    "max_bytes {budget} keeps fewer than two review sentences"
                )));
            }
            let n_val = split::val_count(chosen.len(), spec.val_fraction).min(chosen.len() - 1);
            let cut = chosen.len() - n_val;
            let join = |ids: &[usize]| {
                let mut out = Vec::new();
                for &i in ids {
                    out.extend_from_slice(sentences[i].as_bytes());
                    out.push(b'\n');
                }
                out
            };
            let tl = TextLabels {
                train: chosen[..cut].iter().map(|&i| labels[i]).collect(),
                val: chosen[cut..].iter().map(|&i| labels[i]).collect(),
            };
            let mut d = text_data(
                join(&chosen[..cut]),
                join(&chosen[cut..]),
                Some(tl),
                spec,
                name,
                "seeded-sentence-shuffle/splitmix64+tail",
                used,
            )?;
            if let (Dataset::Text(t), Some((set, _))) = (&mut d, held) {
                t.split.probe = Some(set.info.clone());
                t.probe = Some(Arc::new(set));
            }
            Ok(d)
        }
    }
}

fn build_images(r: &RawImages, spec: &DatasetSpec, name: String) -> Result<ImageData, DataError> {
    let n = r.len();
    let n_val = split::val_count(n, spec.val_fraction);
    if n_val >= n {
        return Err(DataError::Spec(format!(
            "val_fraction {} leaves no training examples out of {n}",
            spec.val_fraction
        )));
    }
    let mut rng = SplitMix64::with_stream(spec.split_seed, split::STREAM_SPLIT);
    let perm = rng.permutation(n);
    let (val_idx, train_idx) = perm.split_at(n_val);
    let used = spec.max_val.map_or(n_val, |m| m.min(n_val));
    let d = r.height * r.width;
    let f = spec.downsample.unwrap_or(1).max(1);
    let (height, width) = (r.height / f, r.width / f);
    if height == 0 || width == 0 {
        return Err(DataError::Spec(format!(
            "downsample {f} is larger than the {}×{} images",
            r.height, r.width
        )));
    }
    let scale = 1.0 / (r.max_value as f32 * (f * f) as f32);
    let pick = |ids: &[usize]| -> (Vec<f32>, Vec<u8>) {
        let mut x = Vec::with_capacity(ids.len() * height * width);
        let mut y = Vec::with_capacity(ids.len());
        for &i in ids {
            let img = &r.pixels[i * d..(i + 1) * d];
            for oy in 0..height {
                for ox in 0..width {
                    let mut acc = 0u32;
                    for dy in 0..f {
                        let row = (oy * f + dy) * r.width + ox * f;
                        acc += img[row..row + f].iter().map(|&p| p as u32).sum::<u32>();
                    }
                    x.push(acc as f32 * scale);
                }
            }
            y.push(r.labels[i]);
        }
        (x, y)
    };
    let (train_x, train_y) = pick(train_idx);
    let (val_x, val_y) = pick(&val_idx[..used]);
    Ok(ImageData {
        channels: 1,
        height,
        width,
        classes: 10,
        train_x,
        train_y,
        val_x,
        val_y,
        split: SplitInfo {
            dataset: name,
            method: "seeded-shuffle/splitmix64".into(),
            unit: "examples".into(),
            seed: spec.split_seed,
            total: n,
            n_train: train_idx.len(),
            n_val,
            n_val_used: used,
            fingerprint: split::fingerprint_indices(val_idx),
            probe: None,
        },
        standardized: None,
    })
}

fn text_data(
    train: Vec<u8>,
    val: Vec<u8>,
    labels: Option<TextLabels>,
    spec: &DatasetSpec,
    name: String,
    method: &str,
    total: usize,
) -> Result<Dataset, DataError> {
    let need = spec.seq_len + 1;
    if train.len() < need || val.len() < need {
        return Err(DataError::Spec(format!(
            "{name}: {} training and {} validation bytes (max_bytes {}, val_fraction {}) — each needs at least seq_len + 1 = {need}",
            train.len(),
            val.len(),
            spec.max_bytes.map_or("unset".to_string(), |m| m.to_string()),
            spec.val_fraction
        )));
    }
    let mut t = TextData {
        vocab: BYTE_VOCAB,
        split: SplitInfo {
            dataset: name,
            method: method.into(),
            unit: "bytes".into(),
            seed: spec.split_seed,
            total,
            n_train: train.len(),
            n_val: val.len(),
            n_val_used: 0,
            fingerprint: split::fingerprint_bytes(&val),
            probe: None,
        },
        train,
        val,
        seq_len: spec.seq_len,
        max_val: spec.max_val,
        labels,
        probe: None,
    };
    t.split.n_val_used = t.val_windows();
    Ok(Dataset::Text(t))
}

/// Load and split a dataset from the data directory ([`data_dir`]).
pub fn load(spec: &DatasetSpec) -> Result<Dataset, DataError> {
    check_spec(spec)?;
    let raw = read_raw_auto(spec.name)?;
    build(&raw, spec)
}

/// Load and split a dataset from `dir` (no caching).
pub fn load_from(dir: &Path, spec: &DatasetSpec) -> Result<Dataset, DataError> {
    check_spec(spec)?;
    let raw = read_raw(dir, spec.name)?;
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

static RAW_CACHE: OnceLock<Mutex<HashMap<String, Slot<RawSource>>>> = OnceLock::new();
static DATASET_CACHE: OnceLock<Mutex<HashMap<String, Slot<Dataset>>>> = OnceLock::new();

/// Like [`load`], but each (data dir, spec) is decoded and split once per process; the decoded
/// files are shared between specs of the same dataset (e.g. different split seeds).
pub fn load_cached(spec: &DatasetSpec) -> Result<Arc<Dataset>, DataError> {
    check_spec(spec)?;
    let dir = data_dir();
    let key = format!("{}|{spec:?}", dir.display());
    cached(&DATASET_CACHE, key, || {
        let raw_key = format!("{}|{:?}", dir.display(), spec.name);
        let raw = cached(&RAW_CACHE, raw_key, || read_raw_auto(spec.name))?;
        build(&raw, spec)
    })
}

/// [`load_cached`] from an explicit directory.
pub fn load_cached_from(dir: &Path, spec: &DatasetSpec) -> Result<Arc<Dataset>, DataError> {
    check_spec(spec)?;
    let key = format!("{}|{spec:?}", dir.display());
    cached(&DATASET_CACHE, key, || {
        let raw_key = format!("{}|{:?}", dir.display(), spec.name);
        let raw = cached(&RAW_CACHE, raw_key, || read_raw(dir, spec.name))?;
        build(&raw, spec)
    })
}
