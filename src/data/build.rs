//! Splitting decoded data into the training and validation sets a trial uses (pure: no I/O).
//!
//! - Images without validation files: a seeded random permutation of all examples (SplitMix64
//!   from `split_seed`); the first `round(n·val_fraction)` permuted examples are the validation
//!   set, the rest the training set. With validation files (CIFAR's test batch, MNIST's t10k):
//!   the training files are the training set and the validation files, in a seeded order, the
//!   validation set. `max_val` keeps the first `max_val` validation examples.
//! - Text without validation files: the first `max_bytes` bytes; the contiguous tail of
//!   `round(len·val_fraction)` tokens is the validation stream (a random split would leak text).
//!   With validation files: the training files (capped by `max_bytes`) and the validation files.
//! - Review sentences: a seeded order, kept while they fit in `max_bytes`; the last
//!   `round(k·val_fraction)` sentences are validation. With `probe = { train, val, test }` a
//!   transfer probe's labelled sentences are drawn first (`super::probe`) and every sentence of
//!   their text is left out of both streams.

use super::formats::{Pixels, RawImages, RawSource};
use super::split::{self, SplitInfo, SplitMix64};
use super::{DataError, Dataset, DatasetSpec, ImageData, Raw, TextData, TextLabels};

pub(super) fn split(raw: &Raw, spec: &DatasetSpec) -> Result<Dataset, DataError> {
    let name = spec.label();
    let files = raw.files.clone();
    match &raw.source {
        RawSource::Images { train, val } => {
            let mut d = match val {
                None => split_images(train, spec, name)?,
                Some(v) => file_split_images(train, v, spec, name)?,
            };
            d.files = files;
            Ok(Dataset::Images(d))
        }
        RawSource::Text { train, val, vocab } => {
            let cap = |t: &[u32]| -> Vec<u32> {
                match spec.max_bytes {
                    Some(m) => t[..m.min(t.len())].to_vec(),
                    None => t.to_vec(),
                }
            };
            let mut d = match val {
                None => {
                    let stream = cap(train);
                    let n_val = split::val_count(stream.len(), spec.val_fraction);
                    let cut = stream.len().saturating_sub(n_val);
                    let total = stream.len();
                    let (t, v) = (stream[..cut].to_vec(), stream[cut..].to_vec());
                    text_data(t, v, *vocab, None, spec, name, "contiguous-tail", total)?
                }
                Some(v) => {
                    let t = cap(train);
                    let total = t.len() + v.len();
                    text_data(t, v.clone(), *vocab, None, spec, name, "files", total)?
                }
            };
            d.files = files;
            Ok(Dataset::Text(d))
        }
        RawSource::Sentences { labels, sentences } => {
            let held = match spec.probe {
                Some(sizes) => Some(super::probe::draw(
                    labels,
                    sentences,
                    sizes,
                    spec.split_seed,
                )?),
                None => None,
            };
            let lm = held.as_ref().map(|(_, lm)| lm.as_slice());
            let mut d = split_sentences(labels, sentences, lm, spec, name)?;
            d.files = files;
            if let Some((set, _)) = held {
                d.split.probe = Some(set.info.clone());
                d.probe = Some(std::sync::Arc::new(set));
            }
            Ok(Dataset::Text(d))
        }
    }
}

/// `lm[i]` false: sentence `i` is a transfer probe's (or shares its text) and stays out of both
/// streams.
fn split_sentences(
    labels: &[u8],
    sentences: &[String],
    lm: Option<&[bool]>,
    spec: &DatasetSpec,
    name: String,
) -> Result<TextData, DataError> {
    let mut rng = SplitMix64::with_stream(spec.split_seed, split::STREAM_SPLIT);
    let order = rng.permutation(sentences.len());
    let budget = spec.max_bytes.unwrap_or(usize::MAX);
    let mut used = 0usize;
    let mut chosen = Vec::new();
    for &i in &order {
        if lm.is_some_and(|lm| !lm[i]) {
            continue;
        }
        let len = sentences[i].len() + 1;
        if used + len > budget {
            break;
        }
        used += len;
        chosen.push(i);
    }
    if chosen.len() < 2 {
        return Err(DataError::Spec(format!(
            "max_bytes {budget} keeps fewer than two review sentences"
        )));
    }
    let n_val = split::val_count(chosen.len(), spec.val_fraction).min(chosen.len() - 1);
    let cut = chosen.len() - n_val;
    let join = |ids: &[usize]| {
        let mut out = Vec::new();
        for &i in ids {
            out.extend(sentences[i].bytes().map(u32::from));
            out.push(b'\n' as u32);
        }
        out
    };
    let tl = TextLabels {
        train: chosen[..cut].iter().map(|&i| labels[i]).collect(),
        val: chosen[cut..].iter().map(|&i| labels[i]).collect(),
    };
    text_data(
        join(&chosen[..cut]),
        join(&chosen[cut..]),
        super::BYTE_VOCAB,
        Some(tl),
        spec,
        name,
        "seeded-sentence-shuffle/splitmix64+tail",
        used,
    )
}

/// The output size of `downsample`, or why it cannot apply.
fn pooled_size(r: &RawImages, spec: &DatasetSpec) -> Result<(usize, usize, usize), DataError> {
    let f = spec.downsample.unwrap_or(1).max(1);
    let (height, width) = (r.height / f, r.width / f);
    if height == 0 || width == 0 {
        return Err(DataError::Spec(format!(
            "downsample {f} is larger than the {}×{} images",
            r.height, r.width
        )));
    }
    if !r.height.is_multiple_of(f) || !r.width.is_multiple_of(f) {
        return Err(DataError::Spec(format!(
            "downsample {f} does not divide the {}×{} images (it would crop them)",
            r.height, r.width
        )));
    }
    Ok((f, height, width))
}

/// Examples `ids` of `r`, f×f average-pooled, as [0, 1] floats (uint8) or as stored (float32),
/// and their labels.
fn pick(
    r: &RawImages,
    ids: &[usize],
    f: usize,
    height: usize,
    width: usize,
) -> (Vec<f32>, Vec<u8>) {
    let c = r.channels;
    let plane = r.height * r.width;
    let d = c * plane;
    let mut x = Vec::with_capacity(ids.len() * c * height * width);
    let mut y = Vec::with_capacity(ids.len());
    for &i in ids {
        for ch in 0..c {
            let at = i * d + ch * plane;
            match &r.pixels {
                Pixels::U8 { data, max_value } => {
                    let img = &data[at..at + plane];
                    let scale = 1.0 / (*max_value as f32 * (f * f) as f32);
                    for oy in 0..height {
                        for ox in 0..width {
                            let mut acc = 0u32;
                            for dy in 0..f {
                                let row = (oy * f + dy) * r.width + ox * f;
                                acc += img[row..row + f].iter().map(|&p| p as u32).sum::<u32>();
                            }
                            x.push(acc as f32 * scale);
                        }
                    }
                }
                Pixels::F32(data) => {
                    let img = &data[at..at + plane];
                    if f == 1 {
                        x.extend_from_slice(img);
                        continue;
                    }
                    let scale = 1.0 / (f * f) as f32;
                    for oy in 0..height {
                        for ox in 0..width {
                            let mut acc = 0f32;
                            for dy in 0..f {
                                let row = (oy * f + dy) * r.width + ox * f;
                                acc += img[row..row + f].iter().sum::<f32>();
                            }
                            x.push(acc * scale);
                        }
                    }
                }
            }
        }
        y.push(r.labels[i]);
    }
    (x, y)
}

fn image_data(
    r: &RawImages,
    (height, width): (usize, usize),
    (train_x, train_y): (Vec<f32>, Vec<u8>),
    (val_x, val_y): (Vec<f32>, Vec<u8>),
    spec: &DatasetSpec,
    split: SplitInfo,
) -> ImageData {
    ImageData {
        channels: r.channels,
        height,
        width,
        classes: r.classes,
        train_x,
        train_y,
        val_x,
        val_y,
        split,
        standardized: None,
        augment: spec.augment.filter(|a| !a.is_identity()),
        files: vec![],
    }
}

/// The seeded split of one set of examples.
pub(super) fn split_images(
    r: &RawImages,
    spec: &DatasetSpec,
    name: String,
) -> Result<ImageData, DataError> {
    let n = r.len();
    let n_val = split::val_count(n, spec.val_fraction);
    if n_val >= n {
        return Err(DataError::Spec(format!(
            "val_fraction {} leaves no training examples out of {n}",
            spec.val_fraction
        )));
    }
    let mut rng = SplitMix64::with_stream(spec.split_seed, split::STREAM_SPLIT);
    let perm = rng.permutation(n);
    let (val_idx, train_idx) = perm.split_at(n_val);
    let used = spec.max_val.map_or(n_val, |m| m.min(n_val));
    let (f, height, width) = pooled_size(r, spec)?;
    let split = SplitInfo {
        dataset: name,
        method: "seeded-shuffle/splitmix64".into(),
        unit: "examples".into(),
        seed: spec.split_seed,
        total: n,
        n_train: train_idx.len(),
        n_val,
        n_val_used: used,
        fingerprint: split::fingerprint_indices(val_idx),
        probe: None,
    };
    Ok(image_data(
        r,
        (height, width),
        pick(r, train_idx, f, height, width),
        pick(r, &val_idx[..used], f, height, width),
        spec,
        split,
    ))
}

/// Training files and validation files: the validation examples in a seeded order (so that
/// `max_val` keeps a random subset).
fn file_split_images(
    train: &RawImages,
    val: &RawImages,
    spec: &DatasetSpec,
    name: String,
) -> Result<ImageData, DataError> {
    let (n, n_val) = (train.len(), val.len());
    let mut rng = SplitMix64::with_stream(spec.split_seed, split::STREAM_SPLIT);
    let order = rng.permutation(n_val);
    let used = spec.max_val.map_or(n_val, |m| m.min(n_val));
    let (f, height, width) = pooled_size(train, spec)?;
    let all: Vec<usize> = (0..n).collect();
    // the validation set's identity: its order and labels
    let mut id = Vec::with_capacity(n_val * 5);
    for &i in &order {
        id.extend_from_slice(&(i as u32).to_le_bytes());
        id.push(val.labels[i]);
    }
    let split = SplitInfo {
        dataset: name,
        method: "files".into(),
        unit: "examples".into(),
        seed: spec.split_seed,
        total: n + n_val,
        n_train: n,
        n_val,
        n_val_used: used,
        fingerprint: split::fingerprint_bytes(&id),
        probe: None,
    };
    Ok(image_data(
        train,
        (height, width),
        pick(train, &all, f, height, width),
        pick(val, &order[..used], f, height, width),
        spec,
        split,
    ))
}

#[allow(clippy::too_many_arguments)]
fn text_data(
    train: Vec<u32>,
    val: Vec<u32>,
    vocab: usize,
    labels: Option<TextLabels>,
    spec: &DatasetSpec,
    name: String,
    method: &str,
    total: usize,
) -> Result<TextData, DataError> {
    let need = spec.seq_len + 1;
    let unit = if vocab <= super::BYTE_VOCAB {
        "bytes"
    } else {
        "tokens"
    };
    if train.len() < need || val.len() < need {
        return Err(DataError::Spec(format!(
            "{name}: {} training and {} validation {unit} (max_bytes {}, val_fraction {}) — each needs at least seq_len + 1 = {need}",
            train.len(),
            val.len(),
            spec.max_bytes.map_or("unset".to_string(), |m| m.to_string()),
            spec.val_fraction
        )));
    }
    let mut t = TextData {
        vocab,
        split: SplitInfo {
            dataset: name,
            method: method.into(),
            unit: unit.into(),
            seed: spec.split_seed,
            total,
            n_train: train.len(),
            n_val: val.len(),
            n_val_used: 0,
            fingerprint: split::fingerprint_tokens(&val, vocab),
            probe: None,
        },
        train,
        val,
        seq_len: spec.seq_len,
        max_val: spec.max_val,
        labels,
        files: vec![],
        probe: None,
    };
    t.split.n_val_used = t.val_windows();
    Ok(t)
}
