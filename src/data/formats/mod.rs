//! Decoders of the formats a dataset can be in: file bytes in, examples out. Each error names
//! the file and what is wrong with it; no allocation is sized by a count a file's header states
//! before that count is checked against the file's length.
//!
//! `bundled` (digits CSV, review sentences), `idx`, `cifar`, `numpy` (.npy, .npz), `folder`
//! (ImageFolder: PNG/JPEG), `text` (bytes, token ids).

pub mod bundled;
pub mod cifar;
pub mod folder;
pub mod idx;
pub mod numpy;
pub mod text;

use std::path::Path;

use super::DataError;

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
