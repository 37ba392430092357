//! The bag-of-bytes baseline's features: which bytes and which byte bigrams a sentence contains
//! (presence, 0/1 — binarised counts, as NB-SVM-style bag-of-n-gram baselines use). The vocabulary
//! is the probe's training sentences' n-grams that occur in at least two of them (an n-gram seen
//! once carries no evidence a held-out sentence can use); validation and test sentences are read
//! against it. A byte-level stand-in for bag-of-words: no tokeniser, the same bytes the language
//! model reads.

use std::collections::{BTreeMap, HashMap};

use super::logreg::Rows;

/// An n-gram id: a byte b is b, a bigram (a, b) is 256 + 256·a + b.
fn grams(text: &[u8]) -> Vec<u32> {
    let mut g: Vec<u32> = text.iter().map(|&b| b as u32).collect();
    g.extend(
        text.windows(2)
            .map(|w| 256 + 256 * w[0] as u32 + w[1] as u32),
    );
    g.sort_unstable();
    g.dedup();
    g
}

/// The vocabulary of a set of training sentences: n-gram id → feature column.
#[derive(Clone, Debug, PartialEq)]
pub struct Vocabulary {
    columns: HashMap<u32, u32>,
}

impl Vocabulary {
    /// The n-grams of at least two of `train`'s sentences, in id order.
    pub fn of(train: &[Vec<u8>]) -> Vocabulary {
        let mut df: BTreeMap<u32, usize> = BTreeMap::new();
        for s in train {
            for g in grams(s) {
                *df.entry(g).or_default() += 1;
            }
        }
        let columns = df
            .into_iter()
            .filter(|(_, n)| *n >= 2)
            .enumerate()
            .map(|(col, (g, _))| (g, col as u32))
            .collect();
        Vocabulary { columns }
    }

    pub fn len(&self) -> usize {
        self.columns.len()
    }
    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }

    /// The presence features of `sentences` (n-grams outside the vocabulary ignored).
    pub fn rows(&self, sentences: &[Vec<u8>]) -> Rows {
        let rows = sentences
            .iter()
            .map(|s| {
                let mut r: Vec<(u32, f32)> = grams(s)
                    .into_iter()
                    .filter_map(|g| self.columns.get(&g).map(|&c| (c, 1.0)))
                    .collect();
                r.sort_unstable_by_key(|e| e.0);
                r
            })
            .collect();
        Rows::Sparse {
            p: self.len(),
            rows,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_and_bigrams_seen_twice_are_the_vocabulary() {
        let train: Vec<Vec<u8>> = ["abc", "abd", "xy"]
            .iter()
            .map(|s| s.as_bytes().to_vec())
            .collect();
        let v = Vocabulary::of(&train);
        // a, b and the bigram "ab" are in two sentences; nothing else is
        assert_eq!(v.len(), 3);
        let Rows::Sparse { p, rows } = v.rows(&[b"ab".to_vec(), b"zz".to_vec(), b"bab".to_vec()])
        else {
            unreachable!()
        };
        assert_eq!(p, 3);
        assert_eq!(rows[0].len(), 3);
        assert!(rows[1].is_empty());
        // presence, not counts: "bab" has b twice and "ab" once
        assert_eq!(rows[2].len(), 3);
        assert!(rows[2].iter().all(|e| e.1 == 1.0));
    }
}
