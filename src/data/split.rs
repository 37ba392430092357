//! A portable seeded RNG (SplitMix64) and the seeded train/validation split.
//!
//! SplitMix64 (Steele, Lea & Flood 2014; the seeding generator of xoshiro) is used instead of
//! `rand`'s generators so that a split seed names the same split on every machine and every
//! version of this program: its output is fully specified by the ten lines below, and nothing
//! else (platform word size, crate upgrades) can change it.

use serde::{Deserialize, Serialize};

/// SplitMix64: 64-bit state, period 2^64, passes BigCrush; deterministic everywhere.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    /// Derive an independent stream for a purpose (e.g. "split", "batches") from one seed.
    pub fn with_stream(seed: u64, stream: u64) -> Self {
        let mut m = SplitMix64::new(seed ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03));
        let s = m.next_u64();
        SplitMix64::new(s)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform integer in `0..n` (n > 0), without modulo bias (Lemire's method with rejection).
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "below(0)");
        let threshold = n.wrapping_neg() % n;
        loop {
            let m = (self.next_u64() as u128) * (n as u128);
            if (m as u64) >= threshold {
                return (m >> 64) as u64;
            }
        }
    }

    /// Fisher–Yates shuffle in place.
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            v.swap(i, j);
        }
    }

    /// A random permutation of `0..n`.
    pub fn permutation(&mut self, n: usize) -> Vec<usize> {
        let mut p: Vec<usize> = (0..n).collect();
        self.shuffle(&mut p);
        p
    }
}

/// Stream ids, so the split and the batch order drawn from the same seed are independent.
pub const STREAM_SPLIT: u64 = 1;
pub const STREAM_IMAGE_BATCHES: u64 = 2;
pub const STREAM_TEXT_BATCHES: u64 = 3;
pub const STREAM_AUGMENT: u64 = 4;
/// The transfer probe's draw of labelled sentences (`probe`).
pub const STREAM_PROBE: u64 = 5;

/// How a dataset was split: enough to record in a run log and to check that two runs saw the
/// same validation set.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct SplitInfo {
    /// Dataset name as in presets ("digits", "mnist", ...).
    pub dataset: String,
    /// "seeded-shuffle/splitmix64" (examples) or "contiguous-tail" (Shakespeare bytes) or
    /// "seeded-sentence-shuffle/splitmix64+tail" (review sentences).
    pub method: String,
    /// What `n_*` count: "examples" or "bytes".
    pub unit: String,
    pub seed: u64,
    /// Size of the source before splitting (after `max_bytes` for text).
    pub total: usize,
    pub n_train: usize,
    /// Held-out size.
    pub n_val: usize,
    /// Validation examples (images) or windows (text) used per evaluation (after `max_val`).
    pub n_val_used: usize,
    /// First 16 hex digits of the SHA-256 of the validation set's identity: the original indices
    /// (u32 little-endian, in order) for images; the validation bytes for text.
    pub fingerprint: String,
    /// The labelled sentences a transfer probe holds out of the text (absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<super::probe::ProbeSplitInfo>,
}

/// Fingerprint of a list of example indices.
pub fn fingerprint_indices(idx: &[usize]) -> String {
    let mut bytes = Vec::with_capacity(idx.len() * 4);
    for &i in idx {
        bytes.extend_from_slice(&(i as u32).to_le_bytes());
    }
    fingerprint_bytes(&bytes)
}

/// Fingerprint of a byte string.
pub fn fingerprint_bytes(b: &[u8]) -> String {
    super::files::sha256_hex(b)[..16].to_string()
}

/// Fingerprint of a token stream: of its bytes for byte-level text (vocabulary ≤ 256), else of
/// the ids as u32 little-endian.
pub fn fingerprint_tokens(t: &[u32], vocab: usize) -> String {
    if vocab <= 256 {
        let b: Vec<u8> = t.iter().map(|&c| c as u8).collect();
        fingerprint_bytes(&b)
    } else {
        let b: Vec<u8> = t.iter().flat_map(|c| c.to_le_bytes()).collect();
        fingerprint_bytes(&b)
    }
}

/// Number of validation examples for `n` examples at `fraction` (rounded, at least 1).
pub fn val_count(n: usize, fraction: f64) -> usize {
    ((n as f64 * fraction).round() as usize).max(1)
}
