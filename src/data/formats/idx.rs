//! IDX files (the MNIST family's format; raw or gzip-compressed, which the reader undoes):
//! `format = "idx"`, `train = { images, labels }`, `classes`.

use std::path::Path;

use super::{classes, format_err, Files, FormatDef, Hostile, PartShape, Pixels, RawImages, Sample};
use crate::data::spec::{DatasetSpec, Part, SpecProblem};
use crate::data::DataError;

pub const IDX: FormatDef = FormatDef {
    name: "idx",
    part: PartShape::Pair,
    train: "{ images = \"train-images-idx3-ubyte.gz\", labels = \"train-labels-idx1-ubyte.gz\" }",
    keys: &["classes"],
    keys_doc: "`classes`",
    notes: "raw or `.gz`; magic 2051 / 2049",
    decoder,
    sample,
    hostile,
};

fn decoder(spec: &DatasetSpec) -> Result<super::Decoder, SpecProblem> {
    Ok(super::Decoder::Idx {
        classes: classes(spec, IDX.name)?,
    })
}

/// The image and label files of a part.
pub fn read(part: &Part, files: &mut dyn Files, classes: usize) -> Result<RawImages, DataError> {
    let names = super::file_names(part);
    let (pi, bi) = files.read(names[0])?;
    let (pl, bl) = files.read(names[1])?;
    parse_idx_pair(&pi, &bi, &pl, &bl, classes)
}

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

/// An IDX3 image file's bytes.
fn images_file(magic: u32, n: u32, rows: u32, cols: u32, pixels: &[u8]) -> Vec<u8> {
    let mut b = vec![];
    for v in [magic, n, rows, cols] {
        b.extend_from_slice(&v.to_be_bytes());
    }
    b.extend_from_slice(pixels);
    b
}

/// An IDX1 label file's bytes.
fn labels_file(labels: &[u8]) -> Vec<u8> {
    let mut b = 2049u32.to_be_bytes().to_vec();
    b.extend_from_slice(&(labels.len() as u32).to_be_bytes());
    b.extend_from_slice(labels);
    b
}

const IMAGES: &str = "train-images-idx3-ubyte";
const LABELS: &str = "train-labels-idx1-ubyte";

/// 20 images of 2×2, labels 0…9 twice.
fn sample() -> Sample {
    let px: Vec<u8> = (0..80).map(|i| (i * 3) as u8).collect();
    let labels: Vec<u8> = (0..20).map(|i| i % 10).collect();
    Sample {
        files: vec![
            (IMAGES.into(), images_file(2051, 20, 2, 2, &px)),
            (LABELS.into(), labels_file(&labels)),
        ],
        table: format!(
            "format = \"idx\"\ntrain = {{ images = \"{IMAGES}\", labels = \"{LABELS}\" }}\nclasses = 10"
        ),
    }
}

fn hostile() -> Vec<Hostile> {
    let px = vec![7u8; 80];
    vec![
        Hostile::file(
            "a label file's magic in the image file",
            vec![(IMAGES.into(), images_file(2049, 20, 2, 2, &px))],
            IMAGES,
            &["magic", "2051"],
        ),
        Hostile::file(
            "header counts past the end",
            vec![(IMAGES.into(), images_file(2051, 1_000_000, 28, 28, &px))],
            IMAGES,
            &["header says 1000000"],
        ),
        Hostile::file(
            "a label outside the classes",
            vec![(LABELS.into(), labels_file(&[12; 20]))],
            LABELS,
            &["label 12", "outside the 10 classes"],
        ),
        Hostile::file(
            "counts differ",
            vec![(LABELS.into(), labels_file(&[1; 19]))],
            LABELS,
            &["19 labels", "20 images"],
        ),
    ]
}
