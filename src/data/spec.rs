//! `[workload.dataset]` of a preset: where the examples come from (a *source*) and how they are
//! split. A source is either a named entry of the registry (`name = "mnist"`: a bundled dataset,
//! or a known layout of files such as `cifar10`) or files on disk in a named format
//! (`format = "idx"`, `train = …`). Both resolve into one [`Source`] (format + files + where they
//! are + pinned digests) that one loader reads (`super::load`). The guide: docs/datasets.md.
//!
//! The serde type is flat (every key of every format) so that `toml` locates unknown keys and
//! wrong types; [`DatasetSpec::source`] then checks which keys the source takes, each problem
//! with the key it is about ([`SpecProblem`]), for the preset loader to locate. What each
//! format takes and how its keys are checked is its file's (`super::formats`): nothing here
//! names a format.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::formats::problem;
pub use super::formats::{
    cifar::CifarLabel, numpy::Layout, text::TokenType, Decoder, Examples, Format,
};
use super::registry::{self, Entry};

/// A dataset in a preset (`[workload.dataset]`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DatasetSpec {
    /// Without `format`: the registry entry (`digits`, `mnist`, `fashion`, `shakespeare`,
    /// `reviews`, `cifar10`, `cifar100`). With `format`: a label for reports (default: the format).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Files on disk in this format (see [`Format`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<Format>,
    /// The folder `train`/`val` names are relative to (an entry: the folder holding its files;
    /// default: the data directory). Relative to the preset file; `~` and `$VAR` expanded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<String>,
    /// The training files (a file, a list of files, or `{ images, labels }`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub train: Option<Part>,
    /// The validation files, in the same form; without them `val_fraction` of the training
    /// examples is held out (a seeded split).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub val: Option<Part>,
    /// Image classes (idx, npy, npz): every label must be below it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classes: Option<usize>,
    /// CIFAR-100: which label byte is the class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<CifarLabel>,
    /// npy/npz: the image array's axes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<Layout>,
    /// image-folder: [height, width] every image must have (default: the first image's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_size: Option<[usize; 2]>,
    /// image-folder: 1 (grey) or 3 (RGB) channels every image must have (default: the first's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channels: Option<usize>,
    /// tokens: the width of one token id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dtype: Option<TokenType>,
    /// tokens: the vocabulary size (every id must be below it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vocab: Option<usize>,
    /// Fraction held out for validation (when no `val` files are given).
    #[serde(default = "default_val_fraction")]
    pub val_fraction: f64,
    /// Seed of the train/validation split (recorded in run logs).
    #[serde(default)]
    pub split_seed: u64,
    /// Byte-level text: use only the first N bytes of the corpus (None = all).
    #[serde(default)]
    pub max_bytes: Option<usize>,
    /// Text datasets: sequence length (truncated BPTT window) of one example.
    #[serde(default = "default_seq_len")]
    pub seq_len: usize,
    /// Cap on the number of validation examples (images) or windows (text) used per evaluation.
    #[serde(default)]
    pub max_val: Option<usize>,
    /// Image datasets: average-pool f×f pixel blocks (2 turns 28×28 into 14×14), a 4× cheaper
    /// input for CPU-sized studies. None = full resolution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub downsample: Option<usize>,
    /// Image datasets: random crops and horizontal flips of the training batches
    /// (`super::augment`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub augment: Option<Augment>,
    /// The bundled reviews: labelled sentences held out of the language model's text for a
    /// transfer probe (`super::probe`); None = no probe, every sentence is text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<super::probe::ProbeSizes>,
}

fn default_val_fraction() -> f64 {
    0.1
}
fn default_seq_len() -> usize {
    64
}

/// Data augmentation of training images (Shallue et al.'s CIFAR-10 pipeline: `crop = 4`,
/// `flip = true`). Seeded by the trial's seed and the step (`super::augment`).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[serde(deny_unknown_fields)]
pub struct Augment {
    /// Zero padding in pixels on every side, then a random crop back to the image size (0: none).
    #[serde(default)]
    pub crop: usize,
    /// A random horizontal flip of half the images.
    #[serde(default)]
    pub flip: bool,
}

impl Augment {
    pub fn is_identity(&self) -> bool {
        self.crop == 0 && !self.flip
    }
}

/// The files of one split: a file, a list of files, a pair of image and label files, or the
/// image and label arrays of a NumPy archive.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Part {
    Files(Vec<String>),
    Pair {
        images: String,
        labels: String,
    },
    Archive {
        file: String,
        images: String,
        labels: String,
    },
}

impl Part {
    /// The paths this part names (an archive's member names are not paths).
    fn paths_mut(&mut self) -> Vec<&mut String> {
        match self {
            Part::Files(v) => v.iter_mut().collect(),
            Part::Pair { images, labels } => vec![images, labels],
            Part::Archive { file, .. } => vec![file],
        }
    }
    /// The paths this part names with the key that names each, below `key` (`train`,
    /// `train[1]`, `train.images`, `train.file`).
    pub fn keyed(&self, key: &str) -> Vec<(String, &String)> {
        match self {
            Part::Files(v) if v.len() == 1 => vec![(key.to_string(), &v[0])],
            Part::Files(v) => v
                .iter()
                .enumerate()
                .map(|(i, p)| (format!("{key}[{i}]"), p))
                .collect(),
            Part::Pair { images, labels } => vec![
                (format!("{key}.images"), images),
                (format!("{key}.labels"), labels),
            ],
            Part::Archive { file, .. } => vec![(format!("{key}.file"), file)],
        }
    }
    fn shape(&self) -> &'static str {
        match self {
            Part::Files(v) if v.len() == 1 => "a file name",
            Part::Files(_) => "a list of files",
            Part::Pair { .. } => "a table { images, labels }",
            Part::Archive { .. } => "a table { file, images, labels }",
        }
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PartTable {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    file: Option<String>,
    images: String,
    labels: String,
}

impl Serialize for Part {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Part::Files(v) => v.serialize(s),
            Part::Pair { images, labels } => PartTable {
                file: None,
                images: images.clone(),
                labels: labels.clone(),
            }
            .serialize(s),
            Part::Archive {
                file,
                images,
                labels,
            } => PartTable {
                file: Some(file.clone()),
                images: images.clone(),
                labels: labels.clone(),
            }
            .serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Part {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Part;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "a file name, a list of file names, or a table { images = \"…\", labels = \"…\" }",
                )
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Part, E> {
                Ok(Part::Files(vec![v.to_string()]))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut a: A) -> Result<Part, A::Error> {
                let mut out = Vec::new();
                while let Some(s) = a.next_element::<String>()? {
                    out.push(s);
                }
                Ok(Part::Files(out))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, a: A) -> Result<Part, A::Error> {
                let t = PartTable::deserialize(serde::de::value::MapAccessDeserializer::new(a))?;
                Ok(match t.file {
                    Some(file) => Part::Archive {
                        file,
                        images: t.images,
                        labels: t.labels,
                    },
                    None => Part::Pair {
                        images: t.images,
                        labels: t.labels,
                    },
                })
            }
        }
        d.deserialize_any(V)
    }
}

/// A problem with a dataset table, and the key (below `[workload.dataset]`) it is about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecProblem {
    pub key: Vec<&'static str>,
    pub message: String,
}

/// A resolved source: what the loader reads.
#[derive(Clone, Debug, PartialEq)]
pub struct Source {
    /// The registry entry, for a named source.
    pub entry: Option<&'static Entry>,
    /// The dataset's name in reports and split records.
    pub label: String,
    pub decoder: Decoder,
    pub train: Part,
    pub val: Option<Part>,
    /// The folder relative names are in (None: an entry looked for on the data search path).
    pub dir: Option<PathBuf>,
}

/// The image geometry a source is known to have before it is read (bundled entries and CIFAR).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Examples in the training files (before any split).
    pub train: usize,
    /// Examples in the validation files, when the source has them.
    pub val: Option<usize>,
    pub channels: usize,
    pub height: usize,
    pub width: usize,
    pub classes: usize,
}

/// Largest number of classes of an image dataset (labels are stored in one byte).
pub const MAX_CLASSES: usize = 256;
/// Largest token vocabulary.
pub const MAX_VOCAB: usize = 1 << 24;

impl DatasetSpec {
    /// A named (registry) dataset with the default split settings.
    pub fn named(name: &str) -> DatasetSpec {
        DatasetSpec {
            name: Some(name.to_string()),
            format: None,
            dir: None,
            train: None,
            val: None,
            classes: None,
            label: None,
            layout: None,
            image_size: None,
            channels: None,
            dtype: None,
            vocab: None,
            val_fraction: default_val_fraction(),
            split_seed: 0,
            max_bytes: None,
            seq_len: default_seq_len(),
            max_val: None,
            downsample: None,
            augment: None,
            probe: None,
        }
    }

    /// Files on disk in `format` (`train` as given), with the default split settings.
    pub fn files(format: Format, train: Part) -> DatasetSpec {
        DatasetSpec {
            name: None,
            format: Some(format),
            train: Some(train),
            ..DatasetSpec::named("")
        }
    }

    /// The name reports and split records give the dataset.
    pub fn label(&self) -> String {
        match (&self.name, self.format) {
            (Some(n), _) if !n.is_empty() => n.clone(),
            (_, Some(f)) => f.name().to_string(),
            _ => "?".into(),
        }
    }

    /// Whether the source holds images (None: the spec names no valid source).
    pub fn is_images(&self) -> Option<bool> {
        self.source().ok().map(|s| s.decoder.is_images())
    }

    /// The token vocabulary of a text source (256 for byte-level text), None for images.
    pub fn vocab_size(&self) -> Option<usize> {
        match self.source().ok()?.decoder.examples() {
            Examples::Images => None,
            Examples::Bytes => Some(super::BYTE_VOCAB),
            Examples::Tokens { vocab } => Some(vocab),
        }
    }

    /// The image geometry known before reading (registry entries); None for files and text.
    pub fn geometry(&self) -> Option<Geometry> {
        self.source().ok()?.entry?.geometry(self.label)
    }

    /// Which source this spec names, with every key it gives checked against it (a key of
    /// another format, a missing key, a wrong shape of `train`/`val`): the first problem found.
    pub fn source(&self) -> Result<Source, SpecProblem> {
        match (&self.name, self.format) {
            (None, None) => Err(problem(
                "name",
                format!(
                    "a dataset needs `name` (one of {}) or `format` (one of {}) with its files",
                    registry::names().join(", "),
                    Format::names()
                ),
            )),
            (Some(name), None) => self.entry_source(name),
            (_, Some(format)) => self.file_source(format),
        }
    }

    /// The keys of the formats (each format takes some: its `FormatDef::keys`), and whether
    /// this spec gives each.
    fn format_keys(&self) -> [(&'static str, bool); 7] {
        [
            ("classes", self.classes.is_some()),
            ("label", self.label.is_some()),
            ("layout", self.layout.is_some()),
            ("image_size", self.image_size.is_some()),
            ("channels", self.channels.is_some()),
            ("dtype", self.dtype.is_some()),
            ("vocab", self.vocab.is_some()),
        ]
    }

    fn entry_source(&self, name: &str) -> Result<Source, SpecProblem> {
        let entry = registry::find(name).ok_or_else(|| {
            problem(
                "name",
                format!(
                    "unknown dataset `{name}`: the named datasets are {}; for your own files give \
                     format = one of {} and train = …",
                    registry::names().join(", "),
                    Format::names()
                ),
            )
        })?;
        let given = [("train", self.train.is_some()), ("val", self.val.is_some())]
            .into_iter()
            .chain(self.format_keys())
            .filter(|&(key, _)| key != "label");
        for (key, given) in given {
            if given {
                return Err(problem(
                    key,
                    format!(
                        "{key} has no effect on the named dataset `{name}` (its files and format \
                         are fixed): remove it, or give format = \"…\" to read files of your own"
                    ),
                ));
            }
        }
        let decoder = match entry.decoder {
            Decoder::Cifar { label } => Decoder::Cifar {
                label: super::formats::cifar::entry_label(name, label.is_some(), self.label)?,
            },
            d => {
                super::formats::cifar::entry_label(name, false, self.label)?;
                d
            }
        };
        Ok(Source {
            entry: Some(entry),
            label: entry.name.to_string(),
            decoder,
            train: entry.train.to_part(),
            val: entry.val.map(|v| v.to_part()),
            dir: self.dir.as_ref().map(PathBuf::from),
        })
    }

    fn file_source(&self, format: Format) -> Result<Source, SpecProblem> {
        let def = format.def();
        let train = self.train.clone().ok_or_else(|| {
            problem(
                "train",
                format!(
                    "format = \"{}\" needs train = {} ({})",
                    def.name,
                    def.train,
                    def.part.holds()
                ),
            )
        })?;
        check_part(format, "train", &train)?;
        if let Some(v) = &self.val {
            check_part(format, "val", v)?;
        }
        for (key, given) in self.format_keys() {
            if given && !def.keys.contains(&key) {
                return Err(problem(
                    key,
                    format!(
                        "{key} has no effect on format = \"{}\": remove it",
                        def.name
                    ),
                ));
            }
        }
        let decoder = (def.decoder)(self)?;
        let dir = self.dir.as_ref().map(PathBuf::from);
        Ok(Source {
            entry: None,
            label: self.label(),
            decoder,
            train,
            val: self.val.clone(),
            dir,
        })
    }

    /// Keys this spec gives that its source ignores (other than those [`source`] refuses): the
    /// split settings when `val` files are given, augmentation on text, text settings on
    /// images. (key, why), for the preset loader's "has no effect" check.
    pub fn unused_keys(&self) -> Vec<(&'static str, String)> {
        let Ok(s) = self.source() else {
            return vec![];
        };
        let mut out = vec![];
        if s.val.is_some() {
            out.push((
                "val_fraction",
                "the validation set is the dataset's validation files".to_string(),
            ));
            if !s.decoder.is_images() {
                out.push((
                    "split_seed",
                    "the validation set is the dataset's validation files".to_string(),
                ));
            }
        }
        // (`max_bytes` and `seq_len` on images: `workload::applied`, flags share that rule)
        if !s.decoder.is_images() {
            let why = "applies to image datasets only".to_string();
            out.push(("augment", why.clone()));
            out.push(("downsample", why));
            if matches!(s.decoder.examples(), Examples::Tokens { .. }) {
                out.push((
                    "max_bytes",
                    "applies to byte-level text: token files are used whole".to_string(),
                ));
            }
        }
        out
    }

    /// Expands `~` and `$VAR`/`${VAR}` in `dir`, `train` and `val`, and makes them absolute:
    /// `dir` relative to `base` (the preset's folder), file names relative to `dir` (or `base`).
    /// Idempotent on what it returns (absolute paths without `~` or `$`).
    pub fn resolve_paths(&mut self, base: &Path) -> Result<(), SpecProblem> {
        let dir = match &self.dir {
            Some(d) => {
                let p = super::paths::expand(d, base).map_err(|m| problem("dir", m))?;
                self.dir = Some(p.display().to_string());
                p
            }
            None => base.to_path_buf(),
        };
        if self.format.is_none() {
            return Ok(()); // an entry's file names are its own
        }
        for (key, part) in [("train", &mut self.train), ("val", &mut self.val)] {
            if let Some(part) = part {
                for p in part.paths_mut() {
                    let abs = super::paths::expand(p, &dir).map_err(|m| problem(key, m))?;
                    *p = abs.display().to_string();
                }
            }
        }
        Ok(())
    }
}

/// The shape of `train`/`val` a format takes.
fn check_part(format: Format, key: &'static str, part: &Part) -> Result<(), SpecProblem> {
    let def = format.def();
    if !def.part.fits(part) {
        return Err(problem(
            key,
            format!(
                "format = \"{}\" takes {key} = {}, not {}",
                def.name,
                def.train,
                part.shape()
            ),
        ));
    }
    let names: Vec<&String> = match part {
        Part::Files(v) => v.iter().collect(),
        Part::Pair { images, labels } => vec![images, labels],
        Part::Archive {
            file,
            images,
            labels,
        } => vec![file, images, labels],
    };
    if names.iter().any(|n| n.trim().is_empty()) {
        return Err(problem(key, format!("{key} names an empty file")));
    }
    Ok(())
}
