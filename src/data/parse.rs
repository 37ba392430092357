//! Parsers of the bundled formats (decompressed bytes in, raw examples out).

use std::path::Path;

use super::DataError;

/// Decoded image examples in file order: pixels as stored (u8), one label per image.
#[derive(Clone, Debug, PartialEq)]
pub struct RawImages {
    pub height: usize,
    pub width: usize,
    /// n × height × width bytes, row-major.
    pub pixels: Vec<u8>,
    pub labels: Vec<u8>,
    /// The largest pixel value of the format (16 for digits, 255 for IDX).
    pub max_value: u8,
}

impl RawImages {
    pub fn len(&self) -> usize {
        self.labels.len()
    }
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }
}

fn format_err(path: &Path, message: impl Into<String>) -> DataError {
    DataError::Format {
        path: path.to_path_buf(),
        message: message.into(),
    }
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
        height: 8,
        width: 8,
        pixels,
        labels,
        max_value: 16,
    })
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
    if rows == 0 || cols == 0 {
        return Err(format_err(
            path,
            format!("IDX image size {rows}×{cols} is empty"),
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
            format!("label {l} of example {i} is not below {classes}"),
        ));
    }
    Ok(RawImages {
        height: rows,
        width: cols,
        pixels,
        labels,
        max_value: 255,
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
