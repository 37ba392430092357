//! The named datasets a preset can give as `name = "…"`: each entry is a format, its files, their
//! pinned SHA-256 digests (bundled files) and where they are looked for — the same [`Source`] a
//! preset's own files resolve to, read by the same loader.
//!
//! [`Source`]: super::spec::Source

use super::files::{self, DataFile};
use super::spec::{CifarLabel, Decoder, Geometry, Part};

/// The files of one split of an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryPart {
    Files(&'static [&'static str]),
    Pair(&'static str, &'static str),
}

impl EntryPart {
    pub fn to_part(self) -> Part {
        match self {
            EntryPart::Files(v) => Part::Files(v.iter().map(|s| s.to_string()).collect()),
            EntryPart::Pair(images, labels) => Part::Pair {
                images: images.to_string(),
                labels: labels.to_string(),
            },
        }
    }
}

/// A named dataset.
#[derive(Debug)]
pub struct Entry {
    pub name: &'static str,
    pub decoder: Decoder,
    pub train: EntryPart,
    pub val: Option<EntryPart>,
    /// The bundled files with their pinned digests (empty: files the user brings, unpinned).
    pub pins: &'static [DataFile],
    /// A folder inside a data directory that may hold the files (the distributed archive's).
    pub folder: Option<&'static str>,
    /// Where the files usually come from (for the message when they are missing).
    pub source_hint: Option<&'static str>,
    /// (examples in train, in val, channels, height, width, classes) of an image entry.
    shape: Option<(usize, Option<usize>, usize, usize, usize, usize)>,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Entry {
    /// Whether the entry's files ship with scaling-lab (pinned, installable).
    pub fn is_bundled(&self) -> bool {
        !self.pins.is_empty()
    }

    /// The pinned digest of one of its files.
    pub fn pin(&self, file_name: &str) -> Option<&'static DataFile> {
        self.pins.iter().find(|f| f.name == file_name)
    }

    /// Every file name the entry reads, train then val.
    pub fn file_names(&self) -> Vec<&'static str> {
        let mut out = vec![];
        for p in std::iter::once(self.train).chain(self.val) {
            match p {
                EntryPart::Files(v) => out.extend_from_slice(v),
                EntryPart::Pair(a, b) => out.extend([a, b]),
            }
        }
        out
    }

    /// The image geometry (CIFAR-100: of the label byte chosen).
    pub fn geometry(&self, label: Option<CifarLabel>) -> Option<Geometry> {
        let (train, val, channels, height, width, classes) = self.shape?;
        let classes = match label {
            Some(CifarLabel::Coarse) if classes == 100 => 20,
            _ => classes,
        };
        Some(Geometry {
            train,
            val,
            channels,
            height,
            width,
            classes,
        })
    }
}

const CIFAR10_TRAIN: &[&str] = &[
    "data_batch_1.bin",
    "data_batch_2.bin",
    "data_batch_3.bin",
    "data_batch_4.bin",
    "data_batch_5.bin",
];

/// Every named dataset.
pub static ENTRIES: [Entry; 7] = [
    Entry {
        name: "digits",
        decoder: Decoder::DigitsCsv,
        train: EntryPart::Files(&["digits.csv.gz"]),
        val: None,
        pins: &[files::DIGITS_CSV],
        folder: None,
        source_hint: None,
        shape: Some((1797, None, 1, 8, 8, 10)),
    },
    Entry {
        name: "mnist",
        decoder: Decoder::Idx { classes: 10 },
        train: EntryPart::Pair(
            "mnist10k-images-idx3-ubyte.gz",
            "mnist10k-labels-idx1-ubyte.gz",
        ),
        val: None,
        pins: &[files::MNIST_IMAGES, files::MNIST_LABELS],
        folder: None,
        source_hint: None,
        shape: Some((10_000, None, 1, 28, 28, 10)),
    },
    Entry {
        name: "fashion",
        decoder: Decoder::Idx { classes: 10 },
        train: EntryPart::Pair(
            "fashion-mnist-t10k-images-idx3-ubyte.gz",
            "fashion-mnist-t10k-labels-idx1-ubyte.gz",
        ),
        val: None,
        pins: &[files::FASHION_IMAGES, files::FASHION_LABELS],
        folder: None,
        source_hint: None,
        shape: Some((10_000, None, 1, 28, 28, 10)),
    },
    Entry {
        name: "shakespeare",
        decoder: Decoder::Bytes,
        train: EntryPart::Files(&["shakespeare.txt.gz"]),
        val: None,
        pins: &[files::SHAKESPEARE],
        folder: None,
        source_hint: None,
        shape: None,
    },
    Entry {
        name: "reviews",
        decoder: Decoder::ReviewsTsv,
        train: EntryPart::Files(&["movie-review-sentences.tsv.gz"]),
        val: None,
        pins: &[files::REVIEWS],
        folder: None,
        source_hint: None,
        shape: None,
    },
    Entry {
        name: "cifar10",
        decoder: Decoder::Cifar { label: None },
        train: EntryPart::Files(CIFAR10_TRAIN),
        val: Some(EntryPart::Files(&["test_batch.bin"])),
        pins: &[],
        folder: Some("cifar-10-batches-bin"),
        source_hint: Some("https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz"),
        shape: Some((50_000, Some(10_000), 3, 32, 32, 10)),
    },
    Entry {
        name: "cifar100",
        decoder: Decoder::Cifar {
            label: Some(CifarLabel::Fine),
        },
        train: EntryPart::Files(&["train.bin"]),
        val: Some(EntryPart::Files(&["test.bin"])),
        pins: &[],
        folder: Some("cifar-100-binary"),
        source_hint: Some("https://www.cs.toronto.edu/~kriz/cifar-100-binary.tar.gz"),
        shape: Some((50_000, Some(10_000), 3, 32, 32, 100)),
    },
];

/// The entry named `name`.
pub fn find(name: &str) -> Option<&'static Entry> {
    ENTRIES.iter().find(|e| e.name == name)
}

/// Every entry's name, in order.
pub fn names() -> Vec<&'static str> {
    ENTRIES.iter().map(|e| e.name).collect()
}

/// The bundled file named `file_name` (any entry's), with its pinned digest.
pub fn bundled_file(file_name: &str) -> Option<&'static DataFile> {
    ENTRIES.iter().find_map(|e| e.pin(file_name))
}
