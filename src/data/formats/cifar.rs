//! CIFAR-10 and CIFAR-100 binary files as distributed (`cifar-10-binary.tar.gz`,
//! `cifar-100-binary.tar.gz`): fixed-size records, no header. A CIFAR-10 record is 1 label byte
//! then 3,072 pixel bytes (1,024 red, 1,024 green, 1,024 blue, each 32 rows of 32, row-major);
//! a CIFAR-100 record has two label bytes first, the coarse (20 classes) then the fine (100).
//! A file holds any whole number of records (subsets are common); its size must be a multiple.
//! `format = "cifar10"` and `format = "cifar100"` (with `label`): a file or a list of files.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{
    check_labels, format_err, need, problem, Decoder, Files, FormatDef, Hostile, PartShape, Pixels,
    RawImages, Sample,
};
use crate::data::spec::{DatasetSpec, Part, SpecProblem};
use crate::data::DataError;

/// CIFAR-100's two label bytes (`label = "fine" | "coarse"`).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum CifarLabel {
    /// 20 superclasses (the first label byte).
    Coarse,
    /// 100 classes (the second label byte).
    Fine,
}

pub const CIFAR10: FormatDef = FormatDef {
    name: "cifar10",
    part: PartShape::Files,
    train: "[\"data_batch_1.bin\", …, \"data_batch_5.bin\"]",
    keys: &[],
    keys_doc: "",
    notes: "a file or a list; records of 1 label byte + 3,072 pixel bytes (R, G, B planes of \
            32×32)",
    decoder: |_| Ok(Decoder::Cifar { label: None }),
    sample: || sample(None),
    hostile: || hostile(None),
};

pub const CIFAR100: FormatDef = FormatDef {
    name: "cifar100",
    part: PartShape::Files,
    train: "\"train.bin\"",
    keys: &["label"],
    keys_doc: "`label = \"fine\" \\| \"coarse\"`",
    notes: "a file or a list; records of coarse + fine label bytes + 3,072 pixel bytes",
    decoder: cifar100_decoder,
    sample: || sample(Some(CifarLabel::Fine)),
    hostile: || hostile(Some(CifarLabel::Fine)),
};

fn cifar100_decoder(spec: &DatasetSpec) -> Result<Decoder, SpecProblem> {
    let label = spec.label.ok_or_else(|| {
        need(
            CIFAR100.name,
            "label",
            "\"fine\" (100 classes) or \"coarse\" (20): the class label byte",
        )
    })?;
    Ok(Decoder::Cifar { label: Some(label) })
}

/// The `label` key on a named dataset: CIFAR-100's label byte, which `cifar100` needs.
pub fn entry_label(
    name: &str,
    needs: bool,
    label: Option<CifarLabel>,
) -> Result<Option<CifarLabel>, SpecProblem> {
    match (needs, label) {
        (true, None) => Err(problem(
            "label",
            "cifar100 has two labels: say which is the class, label = \"fine\" (100 classes) or \
             \"coarse\" (20)",
        )),
        (true, Some(l)) => Ok(Some(l)),
        (false, None) => Ok(None),
        (false, Some(_)) => Err(problem(
            "label",
            format!("label has no effect on `{name}`: it picks CIFAR-100's label byte"),
        )),
    }
}

/// The files of a part, one after the other.
pub fn read(
    part: &Part,
    files: &mut dyn Files,
    label: Option<CifarLabel>,
) -> Result<RawImages, DataError> {
    let mut all: Option<RawImages> = None;
    for n in super::file_names(part) {
        let (p, b) = files.read(n)?;
        let im = parse(&p, &b, label)?;
        match all.as_mut() {
            Some(a) => a.append(im, &p)?,
            None => all = Some(im),
        }
    }
    Ok(all.expect("at least one file: the part's shape is checked"))
}

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

/// `n` records: label bytes `labels(i)`, pixel k of record i = (i·7 + k) mod 256.
fn records(n: usize, labels: impl Fn(usize) -> Vec<u8>) -> Vec<u8> {
    let mut b = vec![];
    for i in 0..n {
        b.extend(labels(i));
        b.extend((0..PIXELS).map(|k| ((i * 7 + k) % 256) as u8));
    }
    b
}

/// The label bytes of record `i`: CIFAR-10's class, or CIFAR-100's coarse and fine ones.
fn label_of(label: Option<CifarLabel>, i: usize) -> Vec<u8> {
    match label {
        None => vec![(i % 10) as u8],
        Some(_) => vec![(i % 20) as u8, (i % 100) as u8],
    }
}

/// CIFAR-10: two batches of 10 records; CIFAR-100: one file of 20.
fn sample(label: Option<CifarLabel>) -> Sample {
    match label {
        None => Sample {
            files: vec![
                (
                    "data_batch_1.bin".into(),
                    records(10, |i| label_of(None, i)),
                ),
                (
                    "data_batch_2.bin".into(),
                    records(10, |i| label_of(None, i + 10)),
                ),
            ],
            table: "format = \"cifar10\"\ntrain = [\"data_batch_1.bin\", \"data_batch_2.bin\"]"
                .into(),
        },
        Some(_) => Sample {
            files: vec![("train.bin".into(), records(20, |i| label_of(label, i)))],
            table: "format = \"cifar100\"\ntrain = \"train.bin\"\nlabel = \"fine\"".into(),
        },
    }
}

fn hostile(label: Option<CifarLabel>) -> Vec<Hostile> {
    let file = if label.is_some() {
        "train.bin"
    } else {
        "data_batch_2.bin"
    };
    let mut truncated = records(2, |i| label_of(label, i));
    truncated.truncate(truncated.len() - 5);
    let mut out = vec![Hostile::file(
        "a truncated record",
        vec![(file.into(), truncated)],
        file,
        &["not a whole number", "1 whole records"],
    )];
    match label {
        None => out.push(Hostile::file(
            "a label outside the classes",
            vec![(file.into(), records(3, |i| vec![8 + i as u8]))],
            file,
            &["label 10 of example 2", "outside the 10 classes"],
        )),
        Some(_) => {
            out.push(Hostile::file(
                "a fine label outside the classes",
                vec![(file.into(), records(3, |i| vec![0, 98 + i as u8]))],
                file,
                &["label 100 of example 2", "outside the 100 classes"],
            ));
            out.push(
                Hostile::file(
                    "a coarse label outside the classes",
                    vec![(file.into(), records(3, |i| vec![19 + i as u8, 0]))],
                    file,
                    &["label 20 of example 1", "outside the 20 classes"],
                )
                .with_table("format = \"cifar100\"\ntrain = \"train.bin\"\nlabel = \"coarse\""),
            );
            out.push(Hostile::file(
                "a CIFAR-10 file read as CIFAR-100",
                vec![(file.into(), records(3, |i| label_of(None, i)))],
                file,
                &["not a whole number of CIFAR-100"],
            ));
        }
    }
    out
}
