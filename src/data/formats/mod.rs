//! The formats a dataset can be in, one file each: `idx`, `cifar` (cifar10, cifar100), `numpy`
//! (npy, npz), `folder` (image-folder), `text` (bytes, tokens), and the bundled datasets' own
//! (`bundled`: the digits CSV, the review sentences). A format's file holds everything the lab
//! knows about it: its [`FormatDef`] (its name, the shape of `train`/`val`, the keys it takes and
//! their checks, its row of docs/datasets.md's table), its decoder (file bytes in, examples
//! out), a small valid sample and the damaged inputs it brings to the hostile-file corpus
//! (`tests/inputs/corpus_data.rs`, which runs every registered format's through the binary).
//!
//! [`formats!`] below is the one registration: it declares [`Format`] (what `format = "…"`
//! names), [`Format::ALL`] and the one exhaustive match from a format to its definition;
//! `spec` and `read` go through it and never name a format. [`Decoder::read`] is the one
//! exhaustive match from a decoder to the function of its file that reads it.
//!
//! Each error names the file and what is wrong with it; no allocation is sized by a count a
//! file's header states before that count is checked against the file's length.

pub mod bundled;
pub mod cifar;
pub mod folder;
pub mod idx;
pub mod numpy;
pub mod text;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

use super::digest::DataFileRecord;
use super::spec::{DatasetSpec, Part, SpecProblem, MAX_CLASSES};
use super::DataError;
use cifar::CifarLabel;
use numpy::Layout;
use text::TokenType;

/// Declares the formats from one list, `Variant => its definition` (a `const FormatDef` in its
/// file): the enum, the list of them all and the match from each to its definition, so that a
/// format cannot be declared and left out of any of them.
macro_rules! formats {
    ($($(#[$doc:meta])* $variant:ident => $def:path,)+) => {
        /// The on-disk formats a preset can name (`format = "…"`), each defined in its file.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Format {
            $($(#[$doc])* $variant,)+
        }

        impl Format {
            /// Every format, in the order messages and docs list them.
            pub const ALL: &'static [Format] = &[$(Format::$variant),+];
            /// Every format's name.
            const NAMES: &'static [&'static str] = &[$($def.name),+];

            /// What the lab knows about the format (its file's [`FormatDef`]).
            pub fn def(self) -> &'static FormatDef {
                match self {
                    $(Format::$variant => &$def,)+
                }
            }
        }
    };
}

formats! {
    /// The MNIST family's IDX files (raw or .gz): `{ images, labels }`.
    Idx => idx::IDX,
    /// CIFAR-10 binary batches: 1 label byte + 3,072 pixel bytes per record.
    Cifar10 => cifar::CIFAR10,
    /// CIFAR-100 binary files: coarse + fine label bytes + 3,072 pixel bytes per record.
    Cifar100 => cifar::CIFAR100,
    /// NumPy arrays: `{ images = "x.npy", labels = "y.npy" }`.
    Npy => numpy::NPY,
    /// A NumPy archive: `{ file = "d.npz", images = "x_train", labels = "y_train" }`.
    Npz => numpy::NPZ,
    /// A folder per class of PNG/JPEG images.
    ImageFolder => folder::IMAGE_FOLDER,
    /// Any file of bytes: byte-level text.
    Bytes => text::BYTES,
    /// Token ids, little-endian u16 or u32 (nanoGPT's train.bin/val.bin).
    Tokens => text::TOKENS,
}

impl Format {
    /// `format = "…"`.
    pub fn name(self) -> &'static str {
        self.def().name
    }

    /// The format named `name`.
    pub fn named(name: &str) -> Option<Format> {
        Format::ALL.iter().copied().find(|f| f.name() == name)
    }

    /// Every format's name, for messages ("idx, cifar10, …").
    pub fn names() -> String {
        Format::NAMES.join(", ")
    }
}

impl serde::Serialize for Format {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Format {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        Format::named(&name).ok_or_else(|| serde::de::Error::unknown_variant(&name, Format::NAMES))
    }
}

/// Everything the lab knows about one format; each format's file defines its own as a `const`.
pub struct FormatDef {
    /// `format = "…"`.
    pub name: &'static str,
    /// What `train` and `val` name.
    pub part: PartShape,
    /// `train = …` in messages and in docs/datasets.md's table.
    pub train: &'static str,
    /// The keys of `[workload.dataset]` it takes besides `train`/`val` (any other format key
    /// is an error at the key); `decoder` checks their values.
    pub keys: &'static [&'static str],
    /// docs/datasets.md's table: the "other keys" and "notes" columns (a test holds the table
    /// to the registry).
    pub keys_doc: &'static str,
    pub notes: &'static str,
    /// Its decoder from the spec's keys, each checked: a problem names its key.
    pub decoder: fn(&DatasetSpec) -> Result<Decoder, SpecProblem>,
    /// A small valid dataset in the format.
    pub sample: fn() -> Sample,
    /// Damaged inputs of the format for the hostile-file corpus (at least one: the corpus
    /// fails for a format that brings none).
    pub hostile: fn() -> Vec<Hostile>,
}

/// What `train` and `val` name in a format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartShape {
    /// `{ images, labels }`: two files.
    Pair,
    /// `{ file, images, labels }`: two arrays of an archive.
    Archive,
    /// One folder.
    Folder,
    /// A file or a list of files, read one after the other.
    Files,
}

impl PartShape {
    /// Whether `part` has this shape.
    pub fn fits(self, part: &Part) -> bool {
        match self {
            PartShape::Pair => matches!(part, Part::Pair { .. }),
            PartShape::Archive => matches!(part, Part::Archive { .. }),
            PartShape::Folder => matches!(part, Part::Files(v) if v.len() == 1),
            PartShape::Files => matches!(part, Part::Files(v) if !v.is_empty()),
        }
    }

    /// What a part of this shape holds, for messages.
    pub fn holds(self) -> &'static str {
        match self {
            PartShape::Folder => "the training folder",
            PartShape::Pair | PartShape::Archive | PartShape::Files => "the training files",
        }
    }
}

/// A problem with the key `key` of `[workload.dataset]`.
pub(crate) fn problem(key: &'static str, message: impl Into<String>) -> SpecProblem {
    SpecProblem {
        key: vec![key],
        message: message.into(),
    }
}

/// "format = "F" needs KEY = WHAT".
pub(crate) fn need(format: &str, key: &'static str, what: &str) -> SpecProblem {
    problem(key, format!("format = \"{format}\" needs {key} = {what}"))
}

/// `classes` (2 to [`MAX_CLASSES`]), which image formats with labels of their own take.
pub(crate) fn classes(spec: &DatasetSpec, format: &str) -> Result<usize, SpecProblem> {
    let c = spec.classes.ok_or_else(|| {
        need(
            format,
            "classes",
            "the number of classes (labels 0 … classes − 1)",
        )
    })?;
    if !(2..=MAX_CLASSES).contains(&c) {
        return Err(problem(
            "classes",
            format!("classes = {c}: a classifier needs 2 to {MAX_CLASSES} classes"),
        ));
    }
    Ok(c)
}

/// How the examples of a source are decoded (a format and its keys' values, or one of the
/// bundled datasets' own).
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

/// What a decoder's examples are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Examples {
    Images,
    /// Byte-level text (every byte a token, vocabulary 256), sentences included.
    Bytes,
    /// Token ids below `vocab`.
    Tokens {
        vocab: usize,
    },
}

impl Decoder {
    /// What its examples are.
    pub fn examples(self) -> Examples {
        match self {
            Decoder::DigitsCsv
            | Decoder::Idx { .. }
            | Decoder::Cifar { .. }
            | Decoder::Npy { .. }
            | Decoder::Npz { .. }
            | Decoder::ImageFolder { .. } => Examples::Images,
            Decoder::ReviewsTsv | Decoder::Bytes => Examples::Bytes,
            Decoder::Tokens { vocab, .. } => Examples::Tokens { vocab },
        }
    }

    /// Whether the examples are images (else text).
    pub fn is_images(self) -> bool {
        self.examples() == Examples::Images
    }

    /// Reads and decodes one part (`train` or `val`) through `files`; `train_classes` are the
    /// training part's class names (an image folder's validation folder must have the same).
    pub fn read(
        self,
        part: &Part,
        files: &mut dyn Files,
        train_classes: Option<&[String]>,
    ) -> Result<PartData, DataError> {
        let plain = |data| PartData {
            data,
            class_names: None,
        };
        Ok(match self {
            Decoder::DigitsCsv => plain(Decoded::Images(bundled::read_digits(part, files)?)),
            Decoder::ReviewsTsv => plain(bundled::read_reviews(part, files)?),
            Decoder::Idx { classes } => plain(Decoded::Images(idx::read(part, files, classes)?)),
            Decoder::Cifar { label } => plain(Decoded::Images(cifar::read(part, files, label)?)),
            Decoder::Npy { layout, classes } => plain(Decoded::Images(numpy::read_npy(
                part, files, layout, classes,
            )?)),
            Decoder::Npz { layout, classes } => plain(Decoded::Images(numpy::read_npz(
                part, files, layout, classes,
            )?)),
            Decoder::ImageFolder { size, channels } => {
                folder::read_part(part, files, size, channels, train_classes)?
            }
            Decoder::Bytes => plain(text::read_bytes(part, files)?),
            Decoder::Tokens { dtype, vocab } => {
                plain(text::read_tokens(part, files, dtype, vocab)?)
            }
        })
    }
}

/// How a format reads what a part names: the one loader (`super::read`) locates, verifies,
/// records and decompresses every file.
pub trait Files {
    /// The bytes of the file `name` (relative to the source's folder), a `.gz` decompressed,
    /// with the path it was read from.
    fn read(&mut self, name: &str) -> Result<(PathBuf, Vec<u8>), DataError>;
    /// The folder `name` names (relative to the source's folder).
    fn folder(&self, name: &str) -> PathBuf;
    /// Records a folder that was read (its manifest) for the run log.
    fn record(&mut self, record: DataFileRecord);
}

/// One part, decoded.
pub enum Decoded {
    Images(RawImages),
    /// Token ids and the vocabulary.
    Text(Vec<u32>, usize),
    /// Labels and sentences.
    Sentences(Vec<u8>, Vec<String>),
}

/// One part, decoded, and an image folder's class names.
pub struct PartData {
    pub data: Decoded,
    pub class_names: Option<Vec<String>>,
}

/// A small dataset in a format, written by tests: its files and its `[workload.dataset]` keys
/// (paths relative to the folder the files are written in).
#[derive(Clone, Debug)]
pub struct Sample {
    /// (path, bytes); a path ending in `/` is an empty folder.
    pub files: Vec<(String, Vec<u8>)>,
    /// The lines of `[workload.dataset]` naming them.
    pub table: String,
}

impl Sample {
    /// Writes the files under `dir`.
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        write_files(dir, &self.files)
    }
}

/// Writes `(path, bytes)` files under `dir` (a path ending in `/`: an empty folder).
pub fn write_files(dir: &Path, files: &[(String, Vec<u8>)]) -> std::io::Result<()> {
    for (name, bytes) in files {
        let p = dir.join(name);
        if name.ends_with('/') {
            std::fs::create_dir_all(&p)?;
            continue;
        }
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&p, bytes)?;
    }
    Ok(())
}

/// A damaged input of a format: its sample with `files` written over it (and `table` for the
/// sample's keys, when given), and what the one error line says.
#[derive(Clone, Debug)]
pub struct Hostile {
    pub name: &'static str,
    /// (path, bytes) written after the sample's files; a path ending in `/` is an empty folder.
    pub files: Vec<(String, Vec<u8>)>,
    /// The `[workload.dataset]` lines, when not the sample's.
    pub table: Option<String>,
    /// What is at fault.
    pub blames: Blame,
    /// Words the error line says.
    pub says: Vec<&'static str>,
}

/// What a hostile input's error blames.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Blame {
    /// A data file (path relative to the sample's folder): a runtime error, exit 1.
    File(String),
    /// A key of `[workload.dataset]`: the preset's error at `file:line:col`, exit 2.
    Key(&'static str),
}

impl Hostile {
    /// A damaged file: `files` over the sample, the error naming `blamed` and saying `says`.
    pub fn file(
        name: &'static str,
        files: Vec<(String, Vec<u8>)>,
        blamed: &str,
        says: &[&'static str],
    ) -> Hostile {
        Hostile {
            name,
            files,
            table: None,
            blames: Blame::File(blamed.to_string()),
            says: says.to_vec(),
        }
    }

    /// With `table` for the sample's keys.
    pub fn with_table(self, table: impl Into<String>) -> Hostile {
        Hostile {
            table: Some(table.into()),
            ..self
        }
    }
}

/// Decoded image examples in file order, NCHW, one label per image.
#[derive(Clone, Debug, PartialEq)]
pub struct RawImages {
    pub channels: usize,
    pub height: usize,
    pub width: usize,
    /// n × channels × height × width values.
    pub pixels: Pixels,
    pub labels: Vec<u8>,
    /// Labels are below this.
    pub classes: usize,
}

/// Pixel values as stored: bytes scaled by 1/max_value when split, or floats used as they are.
#[derive(Clone, Debug, PartialEq)]
pub enum Pixels {
    U8 { data: Vec<u8>, max_value: u8 },
    F32(Vec<f32>),
}

impl Pixels {
    pub fn len(&self) -> usize {
        match self {
            Pixels::U8 { data, .. } => data.len(),
            Pixels::F32(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl RawImages {
    pub fn len(&self) -> usize {
        self.labels.len()
    }
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }
    /// Values per example (c·h·w).
    pub fn example_len(&self) -> usize {
        self.channels * self.height * self.width
    }

    /// `other`'s examples after these (the same geometry; `other_path` names it when not).
    pub fn append(&mut self, other: RawImages, other_path: &Path) -> Result<(), DataError> {
        let same =
            (self.channels, self.height, self.width) == (other.channels, other.height, other.width);
        if !same {
            return Err(format_err(
                other_path,
                format!(
                    "its images are {}×{}×{} (channels × height × width), the files before it \
                     hold {}×{}×{}",
                    other.channels,
                    other.height,
                    other.width,
                    self.channels,
                    self.height,
                    self.width
                ),
            ));
        }
        match (&mut self.pixels, other.pixels) {
            (
                Pixels::U8 { data, max_value },
                Pixels::U8 {
                    data: d,
                    max_value: m,
                },
            ) if *max_value == m => data.extend(d),
            (Pixels::F32(a), Pixels::F32(b)) => a.extend(b),
            _ => {
                return Err(format_err(
                    other_path,
                    "its pixels are of another type than the files before it (uint8 vs float32)",
                ))
            }
        }
        self.labels.extend(other.labels);
        Ok(())
    }
}

/// Decoded source data before splitting.
#[derive(Debug, Clone, PartialEq)]
pub enum RawSource {
    /// Images; `val` when the source has validation files.
    Images {
        train: RawImages,
        val: Option<RawImages>,
    },
    /// A token stream (bytes are tokens 0…255); `val` when the source has validation files.
    Text {
        train: Vec<u32>,
        val: Option<Vec<u32>>,
        vocab: usize,
    },
    /// Labelled sentences (bundled `reviews`).
    Sentences {
        labels: Vec<u8>,
        sentences: Vec<String>,
    },
}

pub(crate) fn format_err(path: &Path, message: impl Into<String>) -> DataError {
    DataError::Format {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

/// The first label not below `classes`, as an error naming the file and example.
pub(crate) fn check_labels(path: &Path, labels: &[u8], classes: usize) -> Result<(), DataError> {
    match labels.iter().position(|&l| l as usize >= classes) {
        None => Ok(()),
        Some(i) => Err(format_err(
            path,
            format!(
                "label {} of example {i} is outside the {classes} classes (0 … {})",
                labels[i],
                classes - 1
            ),
        )),
    }
}

/// The first NaN or infinity among `values` (examples of `per` values), as an error.
pub(crate) fn check_finite(path: &Path, values: &[f32], per: usize) -> Result<(), DataError> {
    match values.iter().position(|v| !v.is_finite()) {
        None => Ok(()),
        Some(i) => Err(format_err(
            path,
            format!(
                "pixel {} of example {} is {} (float data must be finite)",
                i % per.max(1),
                i / per.max(1),
                values[i]
            ),
        )),
    }
}

/// The file names of a part, in the order a format reads them (an archive's member names are
/// not files).
pub(crate) fn file_names(part: &Part) -> Vec<&str> {
    match part {
        Part::Files(v) => v.iter().map(String::as_str).collect(),
        Part::Pair { images, labels } => vec![images, labels],
        Part::Archive { file, .. } => vec![file],
    }
}
