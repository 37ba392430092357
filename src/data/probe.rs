//! The labelled sentences a transfer probe reads (`[workload.dataset] probe = { train, val, test }`
//! on the movie reviews): drawn before the language model's text is built, and **never** part of
//! it.
//!
//! The draw: a permutation of every sentence from the split seed on its own stream
//! ([`split::STREAM_PROBE`], so the probe's draw and the LM's sentence order are independent); in
//! that order the first `train`, then `val`, then `test` sentences of distinct text (a sentence whose
//! text was drawn already is passed over, so no text sits in two splits). The language model's
//! text is then every sentence whose text is not one of the probe's: the drawn sentences and any
//! duplicate of them elsewhere in the file are left out of its training and validation streams.
//! The draw is recorded in the run log ([`ProbeSplitInfo`]: sizes, seed, a fingerprint of the
//! drawn sentence ids in order).

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::split::{self, SplitMix64};
use super::DataError;

/// How many labelled sentences each of the probe's splits holds.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(deny_unknown_fields)]
pub struct ProbeSizes {
    /// Sentences the probe's logistic regression is fitted on.
    pub train: usize,
    /// Sentences its regularisation C is chosen on.
    pub val: usize,
    /// Held-out sentences its accuracy is reported on.
    pub test: usize,
}

impl ProbeSizes {
    pub fn total(&self) -> usize {
        self.train + self.val + self.test
    }
}

/// Labelled sentences, in draw order (text without a line end; label 1 = positive).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Labelled {
    pub text: Vec<Vec<u8>>,
    pub labels: Vec<u8>,
}

impl Labelled {
    pub fn len(&self) -> usize {
        self.labels.len()
    }
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }
}

/// The probe's three splits.
#[derive(Clone, Debug, PartialEq)]
pub struct ProbeSet {
    pub train: Labelled,
    pub val: Labelled,
    pub test: Labelled,
    pub info: ProbeSplitInfo,
}

/// What a run log records of the probe's draw.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct ProbeSplitInfo {
    pub sizes: ProbeSizes,
    /// The split seed the draw used (its own stream).
    pub seed: u64,
    /// Sentences of the file left out of the language model's text: the drawn ones and their
    /// duplicates.
    pub excluded: usize,
    /// First 16 hex digits of the SHA-256 of the drawn sentence ids (u32 little-endian; train,
    /// val, test in order).
    pub fingerprint: String,
}

/// Draws the probe's sentences; returns them and, per sentence of the file, whether the language
/// model may read it (its text is none of the probe's).
pub fn draw(
    labels: &[u8],
    sentences: &[String],
    sizes: ProbeSizes,
    seed: u64,
) -> Result<(ProbeSet, Vec<bool>), DataError> {
    if sizes.train < 2 || sizes.val < 1 || sizes.test < 1 {
        return Err(DataError::Spec(format!(
            "probe: train {} / val {} / test {} sentences — the probe needs at least 2 / 1 / 1",
            sizes.train, sizes.val, sizes.test
        )));
    }
    let mut rng = SplitMix64::with_stream(seed, split::STREAM_PROBE);
    let order = rng.permutation(sentences.len());
    let mut taken: HashSet<&str> = HashSet::new();
    let mut ids = Vec::with_capacity(sizes.total());
    for &i in &order {
        if ids.len() == sizes.total() {
            break;
        }
        if taken.insert(sentences[i].as_str()) {
            ids.push(i);
        }
    }
    if ids.len() < sizes.total() {
        return Err(DataError::Spec(format!(
            "probe: {} sentences asked for (train {} + val {} + test {}) but the file has {} of distinct text",
            sizes.total(),
            sizes.train,
            sizes.val,
            sizes.test,
            ids.len()
        )));
    }
    let part = |r: std::ops::Range<usize>| Labelled {
        text: ids[r.clone()]
            .iter()
            .map(|&i| sentences[i].as_bytes().to_vec())
            .collect(),
        labels: ids[r].iter().map(|&i| labels[i]).collect(),
    };
    let (a, b) = (sizes.train, sizes.train + sizes.val);
    let lm: Vec<bool> = sentences
        .iter()
        .map(|s| !taken.contains(s.as_str()))
        .collect();
    let excluded = lm.iter().filter(|k| !**k).count();
    if excluded == sentences.len() {
        return Err(DataError::Spec(
            "probe: the probe takes every sentence; none is left for the language model".into(),
        ));
    }
    Ok((
        ProbeSet {
            train: part(0..a),
            val: part(a..b),
            test: part(b..ids.len()),
            info: ProbeSplitInfo {
                sizes,
                seed,
                excluded,
                fingerprint: split::fingerprint_indices(&ids),
            },
        },
        lm,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn corpus() -> (Vec<u8>, Vec<String>) {
        let mut s: Vec<String> = (0..200).map(|i| format!("sentence number {i}")).collect();
        // duplicates: 5 copies of one text, 2 of another
        for _ in 0..4 {
            s.push("a repeated sentence".into());
        }
        s.push("a repeated sentence".into());
        s.push("twice".into());
        s.push("twice".into());
        let labels = (0..s.len()).map(|i| (i % 2) as u8).collect();
        (labels, s)
    }

    /// The draw is seeded, its splits hold distinct texts, and no text the probe holds — nor any
    /// duplicate of it — is left to the language model.
    #[test]
    fn the_probe_never_shares_a_text_with_the_language_model() {
        let (labels, s) = corpus();
        let sizes = ProbeSizes {
            train: 60,
            val: 20,
            test: 40,
        };
        let (p, lm) = draw(&labels, &s, sizes, 3).unwrap();
        let (q, lm2) = draw(&labels, &s, sizes, 3).unwrap();
        assert_eq!(p, q);
        assert_eq!(lm, lm2);
        assert_ne!(draw(&labels, &s, sizes, 4).unwrap().0, p, "another seed");
        assert_eq!((p.train.len(), p.val.len(), p.test.len()), (60, 20, 40));
        let probe: HashSet<&[u8]> = p
            .train
            .text
            .iter()
            .chain(&p.val.text)
            .chain(&p.test.text)
            .map(|t| t.as_slice())
            .collect();
        assert_eq!(probe.len(), 120, "distinct texts across the splits");
        for (i, keep) in lm.iter().enumerate() {
            assert_eq!(*keep, !probe.contains(s[i].as_bytes()), "sentence {i}");
        }
        assert_eq!(p.info.excluded, lm.iter().filter(|k| !**k).count());
        assert!(p.info.excluded >= 120);
        // labels travel with their sentences
        for (t, &l) in p.test.text.iter().zip(&p.test.labels) {
            let i = s.iter().position(|x| x.as_bytes() == t.as_slice()).unwrap();
            assert_eq!(labels[i], l);
        }
    }

    #[test]
    fn impossible_sizes_are_errors() {
        let (labels, s) = corpus();
        let big = ProbeSizes {
            train: 150,
            val: 30,
            test: 30,
        };
        let e = draw(&labels, &s, big, 0).unwrap_err().to_string();
        assert!(e.contains("distinct text"), "{e}");
        let tiny = ProbeSizes {
            train: 1,
            val: 1,
            test: 1,
        };
        assert!(draw(&labels, &s, tiny, 0).is_err());
    }
}
