//! Transfer: does what a language model learnt carry over to a task it was not trained on? The
//! question Puri et al. train a large-batch char mLSTM for (Radford et al. 2017's "sentiment
//! neuron"; docs/science.md §11), asked per batch size.
//!
//! A **probe** reads labelled sentences (the movie reviews' sentiment, held out of the LM's text:
//! `data::probe`) through the model (`encode`: each sentence alone from a zero state, its state at
//! the last byte — the cell state c of the recurrent families by default), fits an L1-penalised
//! logistic regression on the training sentences' features (`logreg`, no standardisation, as the
//! reference), chooses C on 2^-8 … 2^0 by validation accuracy and reports accuracy on the held-out
//! test sentences with a Wilson interval (`stats`), its non-zero weights, and the single unit of
//! largest |weight| refit alone.
//!
//! Every readout carries its **controls**, on the same test sentences: the majority class, the
//! same probe on the untrained network's features (step 0: the network the trial started from,
//! rebuilt from its seed — what the architecture alone gives), and a bag-of-bytes probe (`bytes`:
//! byte and bigram presence). Transfer is the gain over the step-0 control, with a paired interval.
//!
//! Layering: imports `data`, `workload`, `core` and `model`; `train` runs it during a trial.

pub mod bytes;
pub mod encode;
pub mod logreg;
pub mod stats;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use crate::core::transfer::{PairedCounts, ProbeScore, TransferReadout, UnitScore};
use crate::data::probe::ProbeSet;
use crate::workload::spec::TransferSpec;
use logreg::{accuracy, c_grid, select_c, Rows, Solver};

/// A fitted probe's score and which test sentences it got right.
#[derive(Clone, Debug, PartialEq)]
pub struct Probe {
    pub score: ProbeScore,
    pub right: Vec<bool>,
}

/// The solver's settings for every probe (KKT violation ≤ 1e-5 × examples).
pub fn solver() -> Solver {
    Solver {
        tol: 1e-5,
        max_outer: 100,
        max_inner: 100,
    }
}

/// One member's features of the probe's sentences (train, then val, then test: the order
/// [`sentences`] gives) split into the three splits' rows. Non-finite values (a diverged
/// network's) read as 0. With `standardize` every feature is shifted and scaled by its mean and
/// standard deviation over the training sentences (a constant feature becomes 0).
pub fn split_rows(set: &ProbeSet, width: usize, features: &[f32], standardize: bool) -> [Rows; 3] {
    let (a, b) = (set.train.len(), set.train.len() + set.val.len());
    let finite = |v: f32| if v.is_finite() { v } else { 0.0 };
    let (mut shift, mut scale) = (vec![0f64; width], vec![1f64; width]);
    if standardize && a > 0 {
        for j in 0..width {
            let col = (0..a).map(|i| finite(features[i * width + j]) as f64);
            let mean = col.clone().sum::<f64>() / a as f64;
            let var = col.map(|v| (v - mean).powi(2)).sum::<f64>() / a as f64;
            shift[j] = mean;
            scale[j] = if var > 0.0 { 1.0 / var.sqrt() } else { 0.0 };
        }
    }
    let rows = |r: std::ops::Range<usize>| Rows::Dense {
        p: width,
        data: features[r.start * width..r.end * width]
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                let j = i % width;
                ((finite(v) as f64 - shift[j]) * scale[j]) as f32
            })
            .collect(),
    };
    [rows(0..a), rows(a..b), rows(b..b + set.test.len())]
}

/// Every sentence of the probe, in the order its features are read: train, val, test.
pub fn sentences(set: &ProbeSet) -> Vec<Vec<u8>> {
    set.train
        .text
        .iter()
        .chain(&set.val.text)
        .chain(&set.test.text)
        .cloned()
        .collect()
}

/// Fits a probe on `rows` (train, val, test) and scores it; with `unit`, also the unit of largest
/// |weight| refit alone (C chosen the same way).
pub fn fit_probe(rows: &[Rows; 3], set: &ProbeSet, unit: bool) -> Probe {
    let [train, val, test] = rows;
    let grid = c_grid();
    let s = solver();
    let (c, m, val_acc) = select_c(train, &set.train.labels, val, &set.val.labels, &grid, &s);
    let pred = m.predict(test);
    let right: Vec<bool> = pred
        .iter()
        .zip(&set.test.labels)
        .map(|(a, b)| a == b)
        .collect();
    let unit = if unit {
        best_unit(&m.w).map(|j| {
            let one = |r: &Rows| r.column(j);
            let (_, mu, _) = select_c(
                &one(train),
                &set.train.labels,
                &one(val),
                &set.val.labels,
                &grid,
                &s,
            );
            let p = mu.predict(&one(test));
            UnitScore {
                index: j as u32,
                correct: p
                    .iter()
                    .zip(&set.test.labels)
                    .filter(|(a, b)| a == b)
                    .count() as u32,
                n: set.test.len() as u32,
            }
        })
    } else {
        None
    };
    Probe {
        score: ProbeScore {
            correct: right.iter().filter(|r| **r).count() as u32,
            n: right.len() as u32,
            train_acc: accuracy(&m.predict(train), &set.train.labels),
            val_acc,
            c,
            nonzero: m.nonzero() as u32,
            features: train.width() as u32,
            unit,
        },
        right,
    }
}

/// The index of the largest |weight| (None: every weight is zero).
fn best_unit(w: &[f64]) -> Option<usize> {
    w.iter()
        .enumerate()
        .filter(|(_, v)| **v != 0.0)
        .max_by(|a, b| a.1.abs().total_cmp(&b.1.abs()).then(b.0.cmp(&a.0)))
        .map(|(j, _)| j)
}

/// The controls that do not depend on a network: bag-of-bytes and the majority class.
#[derive(Clone, Debug, PartialEq)]
pub struct Baselines {
    pub bytes: Probe,
    /// Test sentences of the training labels' majority class.
    pub majority_correct: u32,
}

/// The baselines of a probe set, computed once per process per draw (a sweep's trials share them).
pub fn baselines(set: &ProbeSet) -> Arc<Baselines> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<Baselines>>>> = OnceLock::new();
    let key = format!("{:?}", set.info);
    let cache = CACHE.get_or_init(Default::default);
    if let Some(b) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return b.clone();
    }
    let vocab = bytes::Vocabulary::of(&set.train.text);
    let rows = [
        vocab.rows(&set.train.text),
        vocab.rows(&set.val.text),
        vocab.rows(&set.test.text),
    ];
    let positives = set.train.labels.iter().filter(|&&l| l == 1).count();
    let majority = u8::from(2 * positives > set.train.len());
    let b = Arc::new(Baselines {
        bytes: fit_probe(&rows, set, false),
        majority_correct: set.test.labels.iter().filter(|&&l| l == majority).count() as u32,
    });
    cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, b.clone());
    b
}

fn paired(a: &[bool], b: &[bool]) -> PairedCounts {
    let p = stats::Paired::of(a, b);
    PairedCounts {
        both: p.both as u32,
        only_probe: p.only_first as u32,
        only_other: p.only_second as u32,
        neither: p.neither as u32,
    }
}

/// The paired counts as the interval's input.
pub fn as_paired(c: &PairedCounts) -> stats::Paired {
    stats::Paired {
        both: c.both as usize,
        only_first: c.only_probe as usize,
        only_second: c.only_other as usize,
        neither: c.neither as usize,
    }
}

/// The end-of-trial readout from a member's trained and step-0 features (each the probe's
/// sentences in [`sentences`] order, `width` per sentence).
pub fn readout(
    step: u64,
    spec: &TransferSpec,
    set: &ProbeSet,
    width: usize,
    trained: &[f32],
    control: &[f32],
) -> TransferReadout {
    let t0 = std::time::Instant::now();
    let base = baselines(set);
    let z = spec.standardize;
    let probe = fit_probe(&split_rows(set, width, trained, z), set, true);
    let ctl = fit_probe(&split_rows(set, width, control, z), set, true);
    TransferReadout {
        step,
        val_bpc: None,
        feature: spec.feature.name().to_string(),
        standardized: z,
        split: set.info.fingerprint.clone(),
        vs_control: paired(&probe.right, &ctl.right),
        vs_bytes: paired(&probe.right, &base.bytes.right),
        probe: probe.score,
        control: ctl.score,
        bytes: base.bytes.score.clone(),
        majority_correct: base.majority_correct,
        wall_s: t0.elapsed().as_secs_f64(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::probe::{Labelled, ProbeSizes, ProbeSplitInfo};
    use crate::data::SplitMix64;

    fn set_of(labels: [Vec<u8>; 3]) -> ProbeSet {
        let l = |v: &Vec<u8>| Labelled {
            text: v.iter().map(|_| Vec::new()).collect(),
            labels: v.clone(),
        };
        ProbeSet {
            train: l(&labels[0]),
            val: l(&labels[1]),
            test: l(&labels[2]),
            info: ProbeSplitInfo {
                sizes: ProbeSizes {
                    train: labels[0].len(),
                    val: labels[1].len(),
                    test: labels[2].len(),
                },
                seed: 0,
                excluded: 0,
                fingerprint: String::new(),
            },
        }
    }

    /// 64 features of noise and one planted unit (feature 37) that carries the label: the probe
    /// reads it well above chance, keeps few weights, and names unit 37 as its best single unit,
    /// which alone does about as well as the whole probe.
    #[test]
    fn a_planted_informative_unit_is_found() {
        let (p, planted) = (64, 37);
        let mut r = SplitMix64::new(11);
        let mut uni = || (r.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let mut make = |n: usize| {
            let mut y = Vec::with_capacity(n);
            let mut x = Vec::with_capacity(n * p);
            for _ in 0..n {
                let label = u8::from(uni() < 0.5);
                for j in 0..p {
                    let noise = (uni() * 2.0 - 1.0) as f32;
                    x.push(if j == planted {
                        noise * 0.8 + if label == 1 { 0.6 } else { -0.6 }
                    } else {
                        noise
                    });
                }
                y.push(label);
            }
            (x, y)
        };
        let (xa, ya) = make(400);
        let (xb, yb) = make(200);
        let (xc, yc) = make(400);
        let set = set_of([ya, yb, yc]);
        let rows = [
            Rows::Dense { p, data: xa },
            Rows::Dense { p, data: xb },
            Rows::Dense { p, data: xc },
        ];
        let probe = fit_probe(&rows, &set, true);
        let s = &probe.score;
        assert!(s.acc() > 0.8, "accuracy {}", s.acc());
        let unit = s.unit.expect("a best unit");
        assert_eq!(unit.index, planted as u32);
        assert!(unit.acc() > 0.8, "the unit alone: {}", unit.acc());
        assert!(s.nonzero < 32, "{} non-zero weights", s.nonzero);
        assert_eq!(probe.right.len(), 400);
        // without the planted unit's signal the same probe sits near chance
        let mut blind = rows.clone();
        for r in blind.iter_mut() {
            if let Rows::Dense { data, .. } = r {
                for (i, v) in data.iter_mut().enumerate() {
                    if i % p == planted {
                        *v = 0.0;
                    }
                }
            }
        }
        let chance = fit_probe(&blind, &set, false).score.acc();
        assert!(chance < 0.6, "no signal, yet {chance}");
    }
}
