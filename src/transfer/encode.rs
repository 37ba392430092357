//! A language model's sentence features: every member of a (possibly fused) model reads each
//! sentence alone, from a zero state, and the feature is its state at the sentence's last byte.
//!
//! - **Text as in training**: the model reads `"\n" + sentence` — in the LM's byte stream every
//!   sentence follows the previous one's line end, so a leading newline is how a sentence starts
//!   there (docs/science.md §11). No trailing byte is added: the feature is the state after the
//!   sentence's own last byte.
//! - **Each family's own reading** is in its file (`model::encoder::Encoder`, reached through
//!   `Network::encoder`): the recurrent families' `cell` is c at the last byte (the reference's
//!   feature), `hidden` h there, `mean` h averaged over the sentence's bytes (the leading newline
//!   included); the Transformer, without a cell state, gives the final layer norm's output there
//!   and reads a sentence longer than its context as its last bytes. A test holds every
//!   encoder's hidden states against its model's logits.
//! - **Batching without leakage**: sentences are grouped by length (fewer padded steps) and padded
//!   on the right; the recurrence and causal attention never let a later position reach an
//!   earlier state, and every row of a batch is its own sequence, so a feature does not depend on
//!   its padding or its batch neighbours (a test holds features against each sentence fed alone).
//!   Computed in fp32 whatever the training precision (the fp32 master weights).

use burn::tensor::backend::Backend;
use burn::tensor::{Device, Int, Tensor, TensorData};

use crate::model::encoder::{Encoder, Rows, TransferFeature};
use crate::model::{Ctx, Net};

/// Sentence features of every member: `per_member[k]` is N × `width` row-major, in the order the
/// sentences were given.
#[derive(Clone, Debug, PartialEq)]
pub struct Features {
    pub width: usize,
    pub per_member: Vec<Vec<f32>>,
}

/// The bytes the model reads for a sentence: a leading newline, then the sentence.
pub fn model_input(sentence: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(sentence.len() + 1);
    v.push(b'\n');
    v.extend_from_slice(sentence);
    v
}

/// The feature width of a language model (None: not a language model).
pub fn width_of<B: Backend>(net: &Net<B>) -> Option<usize> {
    net.network().encoder().map(|e| e.width())
}

/// What a forward pass of the encoder may hold at once, in f32 values (128 MiB): the largest
/// activation of a batch (`batch_cost`) stays below it.
pub const DEFAULT_BATCH_ELEMENTS: usize = 32 << 20;

/// The values one sentence of `t` bytes holds in the largest activation of a forward pass (every
/// member; the family's `Encoder::sentence_cost`).
fn row_cost<B: Backend>(enc: &dyn Encoder<B>, k: usize, t: usize) -> usize {
    k * enc.sentence_cost(t)
}

/// Encodes `sentences` (raw text, without the leading newline) with every member of `net`; a
/// forward pass holds at most `max_elements` values in its largest activation (at least one
/// sentence). Call on a model without gradients (`valid()`).
pub fn encode<B: Backend>(
    net: &Net<B>,
    sentences: &[Vec<u8>],
    feature: TransferFeature,
    max_elements: usize,
    device: &Device<B>,
) -> anyhow::Result<Features> {
    let enc = net.network().encoder().ok_or_else(|| {
        anyhow::anyhow!("a transfer probe reads a language model's states; this model is not one")
    })?;
    let (width, context) = (enc.width(), enc.context());
    let k = net.members();
    let inputs: Vec<Vec<u8>> = sentences
        .iter()
        .map(|s| {
            let v = model_input(s);
            let skip = v.len().saturating_sub(context);
            v[skip..].to_vec()
        })
        .collect();
    // shortest first: a batch pads to its longest sentence
    let mut order: Vec<usize> = (0..inputs.len()).collect();
    order.sort_by_key(|&i| inputs[i].len());
    let mut per_member = vec![vec![0f32; inputs.len() * width]; k];
    // consecutive runs of the sorted order, each as long as the budget allows at its longest
    let mut chunks: Vec<&[usize]> = Vec::new();
    let mut start = 0;
    for end in 1..=order.len() {
        let longest = inputs[order[end - 1]].len();
        if end - start > 1 && (end - start) * row_cost(enc, k, longest) > max_elements {
            chunks.push(&order[start..end - 1]);
            start = end - 1;
        }
    }
    if start < order.len() {
        chunks.push(&order[start..]);
    }
    for chunk in chunks {
        let lens: Vec<usize> = chunk.iter().map(|&i| inputs[i].len()).collect();
        let t = lens.iter().copied().max().unwrap_or(1);
        let n = chunk.len();
        let mut ids = vec![0i64; n * t];
        for (r, &i) in chunk.iter().enumerate() {
            for (j, &b) in inputs[i].iter().enumerate() {
                ids[r * t + j] = b as i64;
            }
        }
        // every member reads the same rows (member-major)
        let ids =
            Tensor::<B, 2, Int>::from_data(TensorData::new(ids.repeat(k), [k * n, t]), device);
        let rows = Rows {
            lens: &lens,
            feature,
            c: Ctx::fp32(),
            device,
        };
        let f = enc.features(ids, &rows);
        let v: Vec<f32> = f
            .into_data()
            .convert::<f32>()
            .to_vec()
            .map_err(|e| anyhow::anyhow!("reading the sentence features back: {e:?}"))?;
        for (m, out) in per_member.iter_mut().enumerate() {
            for (r, &i) in chunk.iter().enumerate() {
                let src = &v[(m * n + r) * width..(m * n + r + 1) * width];
                out[i * width..(i + 1) * width].copy_from_slice(src);
            }
        }
    }
    Ok(Features { width, per_member })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Input, InputShape, ModelSpec, FAMILIES};
    use burn::backend::Flex;

    /// Every registered language model at its smallest size.
    fn specs() -> Vec<ModelSpec> {
        let lms: Vec<ModelSpec> = FAMILIES
            .iter()
            .filter(|r| r.input == Input::Text)
            .map(|r| r.tiny().0)
            .collect();
        assert!(
            lms.len() >= 3,
            "the char-LSTM, the mLSTM and the Transformer"
        );
        lms
    }

    /// Bytes, and windows of `seq_len` (the Transformer's context).
    fn shape(seq_len: usize) -> InputShape {
        InputShape {
            channels: 0,
            height: 0,
            width: 0,
            classes: 256,
            vocab: 256,
            seq_len,
        }
    }

    /// Every family that reads text has an encoder, and no other family has one.
    #[test]
    fn every_language_model_and_only_they_have_an_encoder() {
        let dev = Default::default();
        for r in FAMILIES.iter().filter(|r| r.input != Input::None) {
            let (spec, shape) = r.tiny();
            let net = Net::<Flex>::init(&spec, shape, 1, &dev).unwrap();
            assert_eq!(
                net.network().encoder().is_some(),
                r.input == Input::Text,
                "{}",
                r.kind
            );
        }
    }

    fn sentences() -> Vec<Vec<u8>> {
        [
            "a fine film .",
            "dull",
            "the plot goes nowhere , slowly , and the actors seem to know it",
            "x",
            "an unexpectedly moving story about two brothers",
        ]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect()
    }

    fn close(a: &[f32], b: &[f32], what: &str) {
        assert_eq!(a.len(), b.len());
        for (i, (x, y)) in a.iter().zip(b).enumerate() {
            assert!(
                (x - y).abs() <= 1e-5 * (1.0 + y.abs()),
                "{what}, value {i}: {x} vs {y}"
            );
        }
    }

    /// Every family, every feature: a sentence's feature is what it is when fed alone — whatever
    /// its batch neighbours, its padding (a longer neighbour pads it), the batch size or the
    /// member it is read by in a fused group.
    #[test]
    fn a_sentence_is_encoded_as_if_it_were_fed_alone() {
        let dev = Default::default();
        let s = sentences();
        for spec in specs() {
            let group = Net::<Flex>::init_group(&spec, shape(80), &[5, 9], &dev).unwrap();
            let solo = Net::<Flex>::init(&spec, shape(80), 9, &dev).unwrap();
            for f in [
                TransferFeature::Cell,
                TransferFeature::Hidden,
                TransferFeature::Mean,
            ] {
                let all = encode(&group, &s, f, usize::MAX, &dev).unwrap();
                // two sentences a batch, at most (the longest holds 66 bytes)
                let enc = group.network().encoder().unwrap();
                let pairs = encode(&group, &s, f, 2 * row_cost(enc, 2, 66), &dev).unwrap();
                let w = all.width;
                for (i, one) in s.iter().enumerate() {
                    let alone =
                        encode(&solo, std::slice::from_ref(one), f, usize::MAX, &dev).unwrap();
                    let row = |v: &Vec<f32>| v[i * w..(i + 1) * w].to_vec();
                    let what = format!("{spec:?} {f:?} sentence {i}");
                    close(&row(&all.per_member[1]), &alone.per_member[0], &what);
                    close(&row(&pairs.per_member[1]), &alone.per_member[0], &what);
                }
                assert_ne!(all.per_member[0], all.per_member[1], "members differ");
            }
        }
    }

    /// The encoder's recurrence is the model's: its hidden states give the model's own logits
    /// (the LM head on h at every byte equals `Net::logits`), so a change to a family's forward
    /// pass cannot silently leave the encoder behind.
    #[test]
    fn the_encoders_states_are_the_models() {
        let dev = Default::default();
        let text = b"\nthe film is a mess but a lovable one".to_vec();
        for spec in specs() {
            let net = Net::<Flex>::init(&spec, shape(64), 3, &dev).unwrap();
            let t = text.len();
            let ids: Vec<i64> = text.iter().map(|&b| b as i64).collect();
            let x = Tensor::<Flex, 2, Int>::from_data(TensorData::new(ids.clone(), [1, t]), &dev);
            let batch = crate::model::Batch::Text {
                x: x.clone(),
                y: x.clone(),
            };
            let (logits, _) = net.logits(&batch, &Ctx::fp32());
            let want: Vec<f32> = logits.into_data().to_vec().unwrap();
            // the hidden state after each prefix, through the encoder, then the model's head
            let prefixes: Vec<Vec<u8>> = (1..=t).map(|i| text[1..i].to_vec()).collect();
            let h = encode(&net, &prefixes, TransferFeature::Hidden, usize::MAX, &dev).unwrap();
            let hs = Tensor::<Flex, 3>::from_data(
                TensorData::new(h.per_member[0].clone(), [1, t, h.width]),
                &dev,
            );
            let head = net.network().encoder().unwrap().head(hs, &Ctx::fp32());
            let got: Vec<f32> = head.into_data().to_vec().unwrap();
            close(&got, &want, &format!("{spec:?}"));
        }
    }
}
