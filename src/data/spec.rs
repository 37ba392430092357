//! `[workload.dataset]` of a preset: where the examples come from (a *source*) and how they are
//! split. A source is either a named entry of the registry (`name = "mnist"`: a bundled dataset,
//! or a known layout of files such as `cifar10`) or files on disk in a named format
//! (`format = "idx"`, `train = …`). Both resolve into one [`Source`] (format + files + where they
//! are + pinned digests) that one loader reads (`super::load`). The guide: docs/datasets.md.
//!
//! The serde type is flat (every key of every format) so that `toml` locates unknown keys and
//! wrong types; [`DatasetSpec::source`] then checks which keys the source takes, each problem
//! with the key it is about ([`SpecProblem`]), for the preset loader to locate.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

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

/// The on-disk formats a preset can name.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// The MNIST family's IDX files (raw or .gz): `{ images, labels }`.
    Idx,
    /// CIFAR-10 binary batches: 1 label byte + 3,072 pixel bytes per record.
    Cifar10,
    /// CIFAR-100 binary files: coarse + fine label bytes + 3,072 pixel bytes per record.
    Cifar100,
    /// NumPy arrays: `{ images = "x.npy", labels = "y.npy" }`.
    Npy,
    /// A NumPy archive: `{ file = "d.npz", images = "x_train", labels = "y_train" }`.
    Npz,
    /// A folder per class of PNG/JPEG images.
    ImageFolder,
    /// Any file of bytes: byte-level text.
    Bytes,
    /// Token ids, little-endian u16 or u32 (nanoGPT's train.bin/val.bin).
    Tokens,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Idx => "idx",
            Format::Cifar10 => "cifar10",
            Format::Cifar100 => "cifar100",
            Format::Npy => "npy",
            Format::Npz => "npz",
            Format::ImageFolder => "image-folder",
            Format::Bytes => "bytes",
            Format::Tokens => "tokens",
        }
    }
    /// Every format, for messages.
    pub const ALL: [Format; 8] = [
        Format::Idx,
        Format::Cifar10,
        Format::Cifar100,
        Format::Npy,
        Format::Npz,
        Format::ImageFolder,
        Format::Bytes,
        Format::Tokens,
    ];
}

/// CIFAR-100's two label bytes.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum CifarLabel {
    /// 20 superclasses (the first label byte).
    Coarse,
    /// 100 classes (the second label byte).
    Fine,
}

/// The axes of a NumPy image array.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum Layout {
    /// (N, H, W, C): TensorFlow/Keras.
    Nhwc,
    /// (N, C, H, W): PyTorch.
    Nchw,
    /// (N, H, W): one channel.
    Nhw,
}

/// The width of a token id.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum TokenType {
    U16,
    U32,
}

impl TokenType {
    pub fn bytes(self) -> usize {
        match self {
            TokenType::U16 => 2,
            TokenType::U32 => 4,
        }
    }
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

fn problem(key: &'static str, message: impl Into<String>) -> SpecProblem {
    SpecProblem {
        key: vec![key],
        message: message.into(),
    }
}

/// How the examples of a source are decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Decoder {
    /// The UCI digits CSV (bundled `digits`).
    DigitsCsv,
    /// `label<TAB>sentence` lines (bundled `reviews`).
    ReviewsTsv,
    Idx {
        classes: usize,
    },
    /// `None`: CIFAR-10 (one label byte); `Some`: CIFAR-100 and the label byte used.
    Cifar {
        label: Option<CifarLabel>,
    },
    Npy {
        layout: Layout,
        classes: usize,
    },
    Npz {
        layout: Layout,
        classes: usize,
    },
    ImageFolder {
        size: Option<[usize; 2]>,
        channels: Option<usize>,
    },
    Bytes,
    Tokens {
        dtype: TokenType,
        vocab: usize,
    },
}

impl Decoder {
    /// Whether the examples are images (else text).
    pub fn is_images(self) -> bool {
        !matches!(
            self,
            Decoder::ReviewsTsv | Decoder::Bytes | Decoder::Tokens { .. }
        )
    }
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
        match self.source().ok()?.decoder {
            Decoder::Tokens { vocab, .. } => Some(vocab),
            d if !d.is_images() => Some(super::BYTE_VOCAB),
            _ => None,
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
                    format_names()
                ),
            )),
            (Some(name), None) => self.entry_source(name),
            (_, Some(format)) => self.file_source(format),
        }
    }

    fn entry_source(&self, name: &str) -> Result<Source, SpecProblem> {
        let entry = registry::find(name).ok_or_else(|| {
            problem(
                "name",
                format!(
                    "unknown dataset `{name}`: the named datasets are {}; for your own files give \
                     format = one of {} and train = …",
                    registry::names().join(", "),
                    format_names()
                ),
            )
        })?;
        for (key, given) in [
            ("train", self.train.is_some()),
            ("val", self.val.is_some()),
            ("classes", self.classes.is_some()),
            ("layout", self.layout.is_some()),
            ("image_size", self.image_size.is_some()),
            ("channels", self.channels.is_some()),
            ("dtype", self.dtype.is_some()),
            ("vocab", self.vocab.is_some()),
        ] {
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
            Decoder::Cifar { label: Some(_) } => Decoder::Cifar {
                label: Some(self.label.ok_or_else(|| {
                    problem(
                        "label",
                        "cifar100 has two labels: say which is the class, label = \"fine\" (100 \
                         classes) or \"coarse\" (20)",
                    )
                })?),
            },
            d => {
                if self.label.is_some() {
                    return Err(problem(
                        "label",
                        format!("label has no effect on `{name}`: it picks CIFAR-100's label byte"),
                    ));
                }
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
        let train = self.train.clone().ok_or_else(|| {
            problem(
                "train",
                format!(
                    "format = \"{}\" needs train = {} (the training files)",
                    format.name(),
                    part_example(format)
                ),
            )
        })?;
        check_part(format, "train", &train)?;
        if let Some(v) = &self.val {
            check_part(format, "val", v)?;
        }
        let decoder = self.decoder_of(format)?;
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

    /// The decoder of `format` from its keys; a key another format takes is an error.
    fn decoder_of(&self, format: Format) -> Result<Decoder, SpecProblem> {
        let f = format.name();
        let takes: &[&str] = match format {
            Format::Idx => &["classes"],
            Format::Cifar10 => &[],
            Format::Cifar100 => &["label"],
            Format::Npy | Format::Npz => &["classes", "layout"],
            Format::ImageFolder => &["image_size", "channels"],
            Format::Bytes => &[],
            Format::Tokens => &["dtype", "vocab"],
        };
        for (key, given) in [
            ("classes", self.classes.is_some()),
            ("label", self.label.is_some()),
            ("layout", self.layout.is_some()),
            ("image_size", self.image_size.is_some()),
            ("channels", self.channels.is_some()),
            ("dtype", self.dtype.is_some()),
            ("vocab", self.vocab.is_some()),
        ] {
            if given && !takes.contains(&key) {
                return Err(problem(
                    key,
                    format!("{key} has no effect on format = \"{f}\": remove it"),
                ));
            }
        }
        let need = |key: &'static str, what: &str| {
            problem(key, format!("format = \"{f}\" needs {key} = {what}"))
        };
        let classes = || -> Result<usize, SpecProblem> {
            let c = self
                .classes
                .ok_or_else(|| need("classes", "the number of classes (labels 0 … classes − 1)"))?;
            if !(2..=MAX_CLASSES).contains(&c) {
                return Err(problem(
                    "classes",
                    format!("classes = {c}: a classifier needs 2 to {MAX_CLASSES} classes"),
                ));
            }
            Ok(c)
        };
        let layout = || {
            self.layout.ok_or_else(|| {
                need(
                    "layout",
                    "\"nhwc\", \"nchw\" or \"nhw\" (the image array's axes)",
                )
            })
        };
        Ok(match format {
            Format::Idx => Decoder::Idx {
                classes: classes()?,
            },
            Format::Cifar10 => Decoder::Cifar { label: None },
            Format::Cifar100 => Decoder::Cifar {
                label: Some(self.label.ok_or_else(|| {
                    need(
                        "label",
                        "\"fine\" (100 classes) or \"coarse\" (20): the class label byte",
                    )
                })?),
            },
            Format::Npy => Decoder::Npy {
                layout: layout()?,
                classes: classes()?,
            },
            Format::Npz => Decoder::Npz {
                layout: layout()?,
                classes: classes()?,
            },
            Format::ImageFolder => {
                if let Some([h, w]) = self.image_size {
                    if h == 0 || w == 0 || h > 1 << 14 || w > 1 << 14 {
                        return Err(problem(
                            "image_size",
                            format!("image_size [{h}, {w}]: each side must be 1 to 16384 pixels"),
                        ));
                    }
                }
                if let Some(c) = self.channels.filter(|c| ![1, 3].contains(c)) {
                    return Err(problem(
                        "channels",
                        format!("channels = {c}: images are read as 1 (grey) or 3 (RGB) channels"),
                    ));
                }
                Decoder::ImageFolder {
                    size: self.image_size,
                    channels: self.channels,
                }
            }
            Format::Bytes => Decoder::Bytes,
            Format::Tokens => {
                let dtype = self
                    .dtype
                    .ok_or_else(|| need("dtype", "\"u16\" or \"u32\" (the width of a token id)"))?;
                let vocab = self
                    .vocab
                    .ok_or_else(|| need("vocab", "the vocabulary size (every id is below it)"))?;
                let max = if dtype == TokenType::U16 {
                    1 << 16
                } else {
                    MAX_VOCAB
                };
                if !(2..=max).contains(&vocab) {
                    return Err(problem(
                        "vocab",
                        format!(
                            "vocab = {vocab}: give 2 to {max} for {} ids",
                            f_dtype(dtype)
                        ),
                    ));
                }
                Decoder::Tokens { dtype, vocab }
            }
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
            if matches!(s.decoder, Decoder::Tokens { .. }) {
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

fn f_dtype(t: TokenType) -> &'static str {
    match t {
        TokenType::U16 => "u16",
        TokenType::U32 => "u32",
    }
}

fn format_names() -> String {
    Format::ALL
        .iter()
        .map(|f| f.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// What `train` looks like for a format.
fn part_example(format: Format) -> &'static str {
    match format {
        Format::Idx => {
            "{ images = \"train-images-idx3-ubyte.gz\", labels = \"train-labels-idx1-ubyte.gz\" }"
        }
        Format::Npy => "{ images = \"x_train.npy\", labels = \"y_train.npy\" }",
        Format::Npz => "{ file = \"data.npz\", images = \"x_train\", labels = \"y_train\" }",
        Format::Cifar10 => "[\"data_batch_1.bin\", …, \"data_batch_5.bin\"]",
        Format::Cifar100 => "\"train.bin\"",
        Format::ImageFolder => "\"train/\" (a folder holding a folder of images per class)",
        Format::Bytes => "\"input.txt\"",
        Format::Tokens => "\"train.bin\"",
    }
}

/// The shape of `train`/`val` a format takes.
fn check_part(format: Format, key: &'static str, part: &Part) -> Result<(), SpecProblem> {
    let ok = match (format, part) {
        (Format::Idx | Format::Npy, Part::Pair { .. }) => true,
        (Format::Npz, Part::Archive { .. }) => true,
        (Format::ImageFolder, Part::Files(v)) => v.len() == 1,
        (Format::Cifar10 | Format::Cifar100 | Format::Bytes | Format::Tokens, Part::Files(v)) => {
            !v.is_empty()
        }
        _ => false,
    };
    if !ok {
        return Err(problem(
            key,
            format!(
                "format = \"{}\" takes {key} = {}, not {}",
                format.name(),
                part_example(format),
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
