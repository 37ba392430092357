//! IDX files (the MNIST family's format; raw or gzip-compressed, which the reader undoes).

use std::path::Path;

use super::{format_err, Pixels, RawImages};
use crate::data::DataError;

fn be_u32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// IDX3 images (magic 2051, big-endian): returns (n, rows, cols, pixels).
pub fn parse_idx_images(
    path: &Path,
    b: &[u8],
) -> Result<(usize, usize, usize, Vec<u8>), DataError> {
    if b.len() < 16 {
        return Err(format_err(
            path,
            format!(
                "IDX image file too short for its header ({} bytes)",
                b.len()
            ),
        ));
    }
    let magic = be_u32(b, 0);
    if magic != 2051 {
        return Err(format_err(
            path,
            format!("bad IDX image magic number {magic} (expected 2051)"),
        ));
    }
    let n = be_u32(b, 4) as usize;
    let rows = be_u32(b, 8) as usize;
    let cols = be_u32(b, 12) as usize;
    if rows == 0 || cols == 0 || n == 0 {
        return Err(format_err(
            path,
            format!("IDX image file holds {n} images of {rows}×{cols}: nothing to read"),
        ));
    }
    let expected = n
        .checked_mul(rows)
        .and_then(|x| x.checked_mul(cols))
        .and_then(|x| x.checked_add(16))
        .ok_or_else(|| format_err(path, "IDX image header sizes overflow"))?;
    if b.len() != expected {
        return Err(format_err(
            path,
            format!(
                "IDX image file has {} bytes, header says {n}×{rows}×{cols} (+16) = {expected}",
                b.len()
            ),
        ));
    }
    Ok((n, rows, cols, b[16..].to_vec()))
}

/// IDX1 labels (magic 2049, big-endian).
pub fn parse_idx_labels(path: &Path, b: &[u8]) -> Result<Vec<u8>, DataError> {
    if b.len() < 8 {
        return Err(format_err(
            path,
            format!(
                "IDX label file too short for its header ({} bytes)",
                b.len()
            ),
        ));
    }
    let magic = be_u32(b, 0);
    if magic != 2049 {
        return Err(format_err(
            path,
            format!("bad IDX label magic number {magic} (expected 2049)"),
        ));
    }
    let n = be_u32(b, 4) as usize;
    if n == 0 {
        return Err(format_err(path, "IDX label file holds 0 labels"));
    }
    if b.len() != n + 8 {
        return Err(format_err(
            path,
            format!(
                "IDX label file has {} bytes, header says {n} labels (+8) = {}",
                b.len(),
                n + 8
            ),
        ));
    }
    Ok(b[8..].to_vec())
}

/// Pair an IDX image file with its label file (counts must agree; labels must be < `classes`).
pub fn parse_idx_pair(
    images_path: &Path,
    images: &[u8],
    labels_path: &Path,
    labels: &[u8],
    classes: usize,
) -> Result<RawImages, DataError> {
    let (n, rows, cols, pixels) = parse_idx_images(images_path, images)?;
    let labels = parse_idx_labels(labels_path, labels)?;
    if labels.len() != n {
        return Err(format_err(
            labels_path,
            format!(
                "{} labels but {} holds {n} images",
                labels.len(),
                images_path.display()
            ),
        ));
    }
    if let Some((i, l)) = labels
        .iter()
        .enumerate()
        .find(|(_, &l)| l as usize >= classes)
    {
        return Err(format_err(
            labels_path,
            format!(
                "label {l} of example {i} is outside the {classes} classes (0 … {})",
                classes - 1
            ),
        ));
    }
    Ok(RawImages {
        channels: 1,
        height: rows,
        width: cols,
        pixels: Pixels::U8 {
            data: pixels,
            max_value: 255,
        },
        labels,
        classes,
    })
}
