//! The data order of a trial: the global batch of each step, split into the replicas' shards.

use super::worker::HostBatch;
use crate::data::{augment, Dataset, ImageBatcher, TextBatcher};

/// Draws the global batch of the next step and splits it into the replicas' shards.
pub(super) struct Sampler<'a> {
    dataset: &'a Dataset,
    images: Option<ImageBatcher>,
    text: Option<TextBatcher>,
    shards: Vec<std::ops::Range<usize>>,
    /// The trial's seed (the augmentation's draws are the seed's and the step's).
    seed: u64,
    /// Batches drawn so far (the step the next one is for).
    step: u64,
}

impl<'a> Sampler<'a> {
    pub(super) fn new(
        dataset: &'a Dataset,
        shards: Vec<std::ops::Range<usize>>,
        seed: u64,
    ) -> Self {
        Sampler {
            dataset,
            images: match dataset {
                Dataset::Images(d) => Some(ImageBatcher::new(d.n_train(), seed)),
                _ => None,
            },
            text: match dataset {
                Dataset::Text(d) => Some(TextBatcher::new(d.seq_len, seed)),
                _ => None,
            },
            shards,
            seed,
            step: 0,
        }
    }

    /// A batch-size schedule switched B: the replicas' rows of the new global batch. The data
    /// order goes on where it was (the same permutation walk / random stream), so a scheduled
    /// trial stays deterministic in its seed.
    pub(super) fn set_shards(&mut self, shards: Vec<std::ops::Range<usize>>) {
        self.shards = shards;
    }

    pub(super) fn next(&mut self, b: usize) -> Vec<HostBatch> {
        let step = self.step;
        self.step += 1;
        if let Some(bt) = self.images.as_mut() {
            let idx = bt.next_batch(b);
            // every row of the global batch drawn before it is split: shards do not change them
            let augs = match self.dataset.as_images().and_then(|d| d.augment) {
                Some(a) => augment::draw(&a, self.seed, step, b),
                None => vec![],
            };
            return self
                .shards
                .iter()
                .map(|r| {
                    let a = if augs.is_empty() {
                        vec![]
                    } else {
                        augs[r.clone()].to_vec()
                    };
                    HostBatch::Images(idx[r.clone()].to_vec(), a)
                })
                .collect();
        }
        let d = self.dataset.as_text().expect("text dataset");
        let (x, y) = self.text.as_mut().expect("text batcher").next_batch(d, b);
        let l = d.seq_len;
        self.shards
            .iter()
            .map(|r| {
                HostBatch::Text(
                    x[r.start * l..r.end * l].to_vec(),
                    y[r.start * l..r.end * l].to_vec(),
                )
            })
            .collect()
    }
}
