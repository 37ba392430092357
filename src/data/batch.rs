//! Deterministic batching: epoch-shuffled image batches, random text windows, validation
//! windows, and equal shards of a global batch for data-parallel workers.

use std::ops::Range;

use super::augment::Aug;
use super::split::{SplitMix64, STREAM_IMAGE_BATCHES, STREAM_TEXT_BATCHES};
use super::{DataError, ImageData, TextData};

/// Epoch-shuffling sampler of training indices.
///
/// The stream of indices is a concatenation of independent random permutations of `0..n`
/// (one per epoch). A batch takes the next `b` indices of that stream, so every batch has
/// exactly `b` examples, nothing is dropped, and each example appears exactly once per epoch.
/// A batch may straddle two epochs; when `b > n` one batch spans several epochs (and so holds
/// some examples more than once).
#[derive(Clone, Debug)]
pub struct ImageBatcher {
    n: usize,
    rng: SplitMix64,
    perm: Vec<usize>,
    pos: usize,
    epoch: u64,
}

impl ImageBatcher {
    /// `n_train` must be > 0.
    pub fn new(n_train: usize, seed: u64) -> Self {
        assert!(n_train > 0, "ImageBatcher over an empty training set");
        let mut rng = SplitMix64::with_stream(seed, STREAM_IMAGE_BATCHES);
        let perm = rng.permutation(n_train);
        ImageBatcher {
            n: n_train,
            rng,
            perm,
            pos: 0,
            epoch: 0,
        }
    }

    /// The next `b` training indices.
    pub fn next_batch(&mut self, b: usize) -> Vec<usize> {
        let mut out = Vec::with_capacity(b);
        while out.len() < b {
            if self.pos == self.n {
                self.rng.shuffle(&mut self.perm);
                self.pos = 0;
                self.epoch += 1;
            }
            let take = (b - out.len()).min(self.n - self.pos);
            out.extend_from_slice(&self.perm[self.pos..self.pos + take]);
            self.pos += take;
        }
        out
    }

    /// Completed epochs (passes over the training set).
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Fractional epochs consumed so far.
    pub fn epochs_f64(&self) -> f64 {
        self.epoch as f64 + self.pos as f64 / self.n as f64
    }
}

/// Gather training examples: (pixels `[idx.len() × c × h × w]`, labels as i64).
pub fn gather(data: &ImageData, idx: &[usize]) -> (Vec<f32>, Vec<i64>) {
    let d = data.example_len();
    let mut x = Vec::with_capacity(idx.len() * d);
    let mut y = Vec::with_capacity(idx.len());
    for &i in idx {
        x.extend_from_slice(&data.train_x[i * d..(i + 1) * d]);
        y.push(data.train_y[i] as i64);
    }
    (x, y)
}

/// [`gather`] with each row transformed by its augmentation (`augs[k]` for `idx[k]`; empty:
/// none).
pub fn gather_augmented(data: &ImageData, idx: &[usize], augs: &[Aug]) -> (Vec<f32>, Vec<i64>) {
    if augs.is_empty() {
        return gather(data, idx);
    }
    assert_eq!(augs.len(), idx.len(), "one augmentation per row");
    let d = data.example_len();
    let mut x = Vec::with_capacity(idx.len() * d);
    let mut y = Vec::with_capacity(idx.len());
    for (&i, &t) in idx.iter().zip(augs) {
        let img = &data.train_x[i * d..(i + 1) * d];
        super::augment::apply(img, data.channels, data.height, data.width, t, &mut x);
        y.push(data.train_y[i] as i64);
    }
    (x, y)
}

/// Samples random windows of `seq_len + 1` tokens from the training stream.
#[derive(Clone, Debug)]
pub struct TextBatcher {
    rng: SplitMix64,
    seq_len: usize,
}

impl TextBatcher {
    pub fn new(seq_len: usize, seed: u64) -> Self {
        TextBatcher {
            rng: SplitMix64::with_stream(seed, STREAM_TEXT_BATCHES),
            seq_len,
        }
    }

    /// `b` windows with uniformly random starts: (inputs `[b × seq_len]`, targets `[b × seq_len]`),
    /// targets being the inputs shifted by one byte. Needs `train.len() > seq_len`
    /// (guaranteed by `load`).
    pub fn next_batch(&mut self, data: &TextData, b: usize) -> (Vec<i64>, Vec<i64>) {
        let l = self.seq_len;
        let starts = data.train.len() - l; // number of valid window starts (>= 1)
        let mut x = Vec::with_capacity(b * l);
        let mut y = Vec::with_capacity(b * l);
        for _ in 0..b {
            let s = self.rng.below(starts as u64) as usize;
            let w = &data.train[s..s + l + 1];
            x.extend(w[..l].iter().map(|&c| c as i64));
            y.extend(w[1..].iter().map(|&c| c as i64));
        }
        (x, y)
    }
}

impl TextData {
    /// Non-overlapping validation windows: window k covers `val[k·L .. k·L + L + 1]`, so the
    /// targets of consecutive windows tile the validation stream exactly once. Capped by `max_val`.
    pub fn val_windows(&self) -> usize {
        let all = self.val.len().saturating_sub(1) / self.seq_len;
        match self.max_val {
            Some(m) => all.min(m),
            None => all,
        }
    }

    /// Validation windows `range` (indices into `0..val_windows()`): (inputs, targets), each
    /// `[range.len() × seq_len]`.
    pub fn val_batch(&self, range: Range<usize>) -> (Vec<i64>, Vec<i64>) {
        let l = self.seq_len;
        let end = range.end.min(self.val_windows());
        let mut x = Vec::new();
        let mut y = Vec::new();
        for k in range.start..end {
            let w = &self.val[k * l..k * l + l + 1];
            x.extend(w[..l].iter().map(|&c| c as i64));
            y.extend(w[1..].iter().map(|&c| c as i64));
        }
        (x, y)
    }

    /// All validation windows in batches of at most `b` windows, in order.
    pub fn val_batches(&self, b: usize) -> impl Iterator<Item = (Vec<i64>, Vec<i64>)> + '_ {
        let n = self.val_windows();
        let b = b.max(1);
        (0..n)
            .step_by(b)
            .map(move |s| self.val_batch(s..(s + b).min(n)))
    }
}

impl ImageData {
    /// Validation examples in order, in batches of at most `b`: (pixels, labels).
    pub fn val_batches(&self, b: usize) -> impl Iterator<Item = (Vec<f32>, Vec<i64>)> + '_ {
        let n = self.val_y.len();
        let d = self.example_len();
        let b = b.max(1);
        (0..n).step_by(b).map(move |s| {
            let e = (s + b).min(n);
            (
                self.val_x[s * d..e * d].to_vec(),
                self.val_y[s..e].iter().map(|&l| l as i64).collect(),
            )
        })
    }
}

/// Split a global batch of `batch` examples into `shards` equal contiguous ranges
/// (one per data-parallel worker). Error when `batch` is not divisible by `shards`.
pub fn shard_ranges(batch: usize, shards: usize) -> Result<Vec<Range<usize>>, DataError> {
    if shards == 0 || batch == 0 || !batch.is_multiple_of(shards) {
        return Err(DataError::Spec(format!(
            "batch size {batch} cannot be split into {shards} equal shards (it must be a positive multiple of the number of workers)"
        )));
    }
    let s = batch / shards;
    Ok((0..shards).map(|i| i * s..(i + 1) * s).collect())
}
