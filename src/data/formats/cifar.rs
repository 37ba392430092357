//! CIFAR-10 and CIFAR-100 binary files as distributed (`cifar-10-binary.tar.gz`,
//! `cifar-100-binary.tar.gz`): fixed-size records, no header. A CIFAR-10 record is 1 label byte
//! then 3,072 pixel bytes (1,024 red, 1,024 green, 1,024 blue, each 32 rows of 32, row-major);
//! a CIFAR-100 record has two label bytes first, the coarse (20 classes) then the fine (100).
//! A file holds any whole number of records (subsets are common); its size must be a multiple.

use std::path::Path;

use super::{check_labels, format_err, Pixels, RawImages};
use crate::data::spec::CifarLabel;
use crate::data::DataError;

/// Pixel bytes of one record: 3 channels × 32 × 32.
pub const PIXELS: usize = 3 * 32 * 32;

/// Bytes of one record: the label bytes then the pixels.
pub fn record_len(label: Option<CifarLabel>) -> usize {
    label_bytes(label) + PIXELS
}

fn label_bytes(label: Option<CifarLabel>) -> usize {
    if label.is_some() {
        2
    } else {
        1
    }
}

/// (classes, which label byte) of CIFAR-10 (`None`) or CIFAR-100's coarse or fine label.
fn classes(label: Option<CifarLabel>) -> (usize, usize) {
    match label {
        None => (10, 0),
        Some(CifarLabel::Coarse) => (20, 0),
        Some(CifarLabel::Fine) => (100, 1),
    }
}

/// One file of records.
pub fn parse(path: &Path, b: &[u8], label: Option<CifarLabel>) -> Result<RawImages, DataError> {
    let rec = record_len(label);
    let what = if label.is_some() {
        "CIFAR-100 (2 label bytes + 3,072 pixel bytes)"
    } else {
        "CIFAR-10 (1 label byte + 3,072 pixel bytes)"
    };
    if b.is_empty() {
        return Err(format_err(path, format!("empty file: no {what} records")));
    }
    if !b.len().is_multiple_of(rec) {
        return Err(format_err(
            path,
            format!(
                "{} bytes is not a whole number of {what} records of {rec} bytes ({} whole \
                 records and {} bytes over: a truncated or foreign file)",
                b.len(),
                b.len() / rec,
                b.len() % rec
            ),
        ));
    }
    let n = b.len() / rec;
    let (classes, at) = classes(label);
    let lb = label_bytes(label);
    let mut pixels = Vec::with_capacity(n * PIXELS);
    let mut labels = Vec::with_capacity(n);
    for r in b.chunks_exact(rec) {
        labels.push(r[at]);
        pixels.extend_from_slice(&r[lb..]);
    }
    check_labels(path, &labels, classes)?;
    Ok(RawImages {
        channels: 3,
        height: 32,
        width: 32,
        pixels: Pixels::U8 {
            data: pixels,
            max_value: 255,
        },
        labels,
        classes,
    })
}
