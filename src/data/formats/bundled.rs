//! The bundled datasets' own formats: the UCI digits CSV and the movie-review sentences TSV
//! (named datasets only: no preset names them as a `format`).

use std::path::Path;

use super::{format_err, Decoded, Files, Pixels, RawImages};
use crate::data::spec::Part;
use crate::data::DataError;

/// The digits file of a part.
pub fn read_digits(part: &Part, files: &mut dyn Files) -> Result<RawImages, DataError> {
    let (p, b) = files.read(super::file_names(part)[0])?;
    parse_digits_csv(&p, &b)
}

/// The review sentences of a part.
pub fn read_reviews(part: &Part, files: &mut dyn Files) -> Result<Decoded, DataError> {
    let (p, b) = files.read(super::file_names(part)[0])?;
    let (labels, sentences) = parse_reviews_tsv(&p, &b)?;
    Ok(Decoded::Sentences(labels, sentences))
}

/// The UCI digits CSV as shipped by scikit-learn: per line 64 values 0..=16, then the label 0..=9.
pub fn parse_digits_csv(path: &Path, text: &[u8]) -> Result<RawImages, DataError> {
    let text =
        std::str::from_utf8(text).map_err(|e| format_err(path, format!("not UTF-8: {e}")))?;
    let mut pixels = Vec::new();
    let mut labels = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let lineno = i + 1;
        let fields: Vec<&str> = line.split(',').collect();
        if fields.len() != 65 {
            return Err(format_err(
                path,
                format!("line {lineno}: expected 65 comma-separated values (64 pixels + label), found {}", fields.len()),
            ));
        }
        for (j, f) in fields.iter().enumerate() {
            let v: u8 = f.trim().parse().map_err(|_| {
                format_err(
                    path,
                    format!(
                        "line {lineno}, column {}: `{f}` is not an integer 0..=16",
                        j + 1
                    ),
                )
            })?;
            if j < 64 {
                if v > 16 {
                    return Err(format_err(
                        path,
                        format!(
                            "line {lineno}, column {}: pixel {v} is outside 0..=16",
                            j + 1
                        ),
                    ));
                }
                pixels.push(v);
            } else {
                if v > 9 {
                    return Err(format_err(
                        path,
                        format!("line {lineno}: label {v} is outside 0..=9"),
                    ));
                }
                labels.push(v);
            }
        }
    }
    if labels.is_empty() {
        return Err(format_err(path, "no examples"));
    }
    Ok(RawImages {
        channels: 1,
        height: 8,
        width: 8,
        pixels: Pixels::U8 {
            data: pixels,
            max_value: 16,
        },
        labels,
        classes: 10,
    })
}

/// `label<TAB>sentence` lines (label 0 or 1): returns (labels, sentences).
pub fn parse_reviews_tsv(path: &Path, text: &[u8]) -> Result<(Vec<u8>, Vec<String>), DataError> {
    let text =
        std::str::from_utf8(text).map_err(|e| format_err(path, format!("not UTF-8: {e}")))?;
    let mut labels = Vec::new();
    let mut sentences = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let (label, sentence) = line.split_once('\t').ok_or_else(|| {
            format_err(
                path,
                format!("line {}: expected `label<TAB>sentence`", i + 1),
            )
        })?;
        let label: u8 = match label.trim() {
            "0" => 0,
            "1" => 1,
            other => {
                return Err(format_err(
                    path,
                    format!("line {}: label `{other}` is not 0 or 1", i + 1),
                ))
            }
        };
        if sentence.contains('\n') {
            return Err(format_err(
                path,
                format!("line {}: sentence contains a newline", i + 1),
            ));
        }
        labels.push(label);
        sentences.push(sentence.to_string());
    }
    if sentences.is_empty() {
        return Err(format_err(path, "no sentences"));
    }
    Ok((labels, sentences))
}
