//! A language model's sentence features: every member of a (possibly fused) model reads each
//! sentence alone, from a zero state, and the feature is its state at the sentence's last byte.
//!
//! - **Text as in training**: the model reads `"\n" + sentence` — in the LM's byte stream every
//!   sentence follows the previous one's line end, so a leading newline is how a sentence starts
//!   there (docs/science.md §11). No trailing byte is added: the feature is the state after the
//!   sentence's own last byte.
//! - **LSTM, mLSTM** (one layer: the last layer): `cell` is c at the last byte (the reference's
//!   feature), `hidden` is h there, `mean` is h averaged over the sentence's bytes (the leading
//!   newline included). The recurrence is the models' own (their public weights and
//!   `model::lstm_cell`; a test holds the hidden states against the model's logits).
//! - **Transformer**: it has no cell state; `cell` and `hidden` are the final layer norm's output
//!   at the last byte (the state the LM head reads), `mean` its average over the sentence's bytes.
//!   A sentence longer than the context (`seq_len`) is read as its last `seq_len` bytes.
//! - **Batching without leakage**: sentences are grouped by length (fewer padded steps) and padded
//!   on the right; the recurrence and causal attention never let a later position reach an
//!   earlier state, and every row of a batch is its own sequence, so a feature does not depend on
//!   its padding or its batch neighbours (a test holds features against each sentence fed alone).
//!   Computed in fp32 whatever the training precision (the fp32 master weights).

use burn::tensor::backend::Backend;
use burn::tensor::{Bool, Device, Int, Tensor, TensorData};

use crate::model::layers::embed;
use crate::model::{lstm_cell, CharLstm, Ctx, Mlstm, Net, TransformerLm};
use crate::workload::spec::TransferFeature;

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
    match net {
        Net::CharLstm(m) => Some(m.hidden),
        Net::Mlstm(m) => Some(m.hidden),
        Net::Transformer(m) => Some(m.pos.dims()[2]),
        _ => None,
    }
}

/// What a forward pass of the encoder may hold at once, in f32 values (128 MiB): the largest
/// activation of a batch (`batch_cost`) stays below it.
pub const DEFAULT_BATCH_ELEMENTS: usize = 32 << 20;

/// The values one sentence of `t` bytes holds in the largest activation of a forward pass (every
/// member): the gate inputs of every step for the recurrent families, the attention scores or
/// the feed-forward layer of the Transformer.
fn row_cost<B: Backend>(net: &Net<B>, t: usize) -> usize {
    let k = net.members();
    k * t
        * match net {
            Net::CharLstm(m) => 4 * m.hidden,
            Net::Mlstm(m) => 5 * m.hidden,
            Net::Transformer(m) => {
                let ff = m.blocks.first().map_or(0, |b| b.ff1.w.dims()[2]);
                (m.heads * t).max(ff).max(3 * m.pos.dims()[2])
            }
            _ => 1,
        }
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
    let width = width_of(net).ok_or_else(|| {
        anyhow::anyhow!("a transfer probe reads a language model's states; this model is not one")
    })?;
    let k = net.members();
    let context = match net {
        Net::Transformer(m) => m.pos.dims()[1],
        _ => usize::MAX,
    };
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
        if end - start > 1 && (end - start) * row_cost(net, longest) > max_elements {
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
        let f = batch_features(net, ids, &lens, feature, device);
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

/// One padded batch's features [K, N, width] (`lens`: each row's real bytes).
fn batch_features<B: Backend>(
    net: &Net<B>,
    ids: Tensor<B, 2, Int>,
    lens: &[usize],
    feature: TransferFeature,
    device: &Device<B>,
) -> Tensor<B, 3> {
    let r = Rows {
        lens,
        feature,
        c: Ctx::fp32(),
        device,
    };
    match net {
        Net::CharLstm(m) => lstm_features(m, ids, &r),
        Net::Mlstm(m) => mlstm_features(m, ids, &r),
        Net::Transformer(m) => transformer_features(m, ids, &r),
        _ => unreachable!("checked by width_of"),
    }
}

/// Step i of [K, N, T, d] → [K, N, d].
fn step_of<B: Backend>(t: &Tensor<B, 4>, i: usize) -> Tensor<B, 3> {
    let [k, n, _, d] = t.dims();
    t.clone()
        .slice([0..k, 0..n, i..i + 1, 0..d])
        .reshape([k, n, d])
}

/// What a recurrence keeps of its states: the state at each row's last byte, or the sum of h over
/// its bytes.
struct Pick<B: Backend> {
    feature: TransferFeature,
    lens: Vec<usize>,
    acc: Tensor<B, 3>,
    device: Device<B>,
}

impl<B: Backend> Pick<B> {
    fn new(feature: TransferFeature, lens: &[usize], dims: [usize; 3], device: &Device<B>) -> Self {
        Pick {
            feature,
            lens: lens.to_vec(),
            acc: Tensor::zeros(dims, device),
            device: device.clone(),
        }
    }

    /// Rows where `f(len)` holds, as a mask broadcast to [K, N, d].
    fn rows(&self, f: impl Fn(usize) -> bool) -> Tensor<B, 3, Bool> {
        let [k, n, d] = self.acc.dims();
        let m: Vec<bool> = self.lens.iter().map(|&l| f(l)).collect();
        Tensor::<B, 3, Bool>::from_data(TensorData::new(m, [1, n, 1]), &self.device)
            .expand([k, n, d])
    }

    /// Books step i's hidden and cell states.
    fn step(&mut self, i: usize, h: &Tensor<B, 3>, cell: &Tensor<B, 3>) {
        match self.feature {
            TransferFeature::Cell | TransferFeature::Hidden => {
                let last = self.rows(|l| l == i + 1);
                let s = if self.feature == TransferFeature::Cell {
                    cell
                } else {
                    h
                };
                self.acc = self.acc.clone().mask_where(last, s.clone());
            }
            TransferFeature::Mean => {
                let pad = self.rows(|l| l <= i);
                self.acc = self.acc.clone() + h.clone().mask_fill(pad, 0.0);
            }
        }
    }

    fn finish(self) -> Tensor<B, 3> {
        match self.feature {
            TransferFeature::Mean => {
                let n = self.lens.len();
                let inv: Vec<f32> = self.lens.iter().map(|&l| 1.0 / l as f32).collect();
                self.acc * Tensor::<B, 3>::from_data(TensorData::new(inv, [1, n, 1]), &self.device)
            }
            _ => self.acc,
        }
    }
}

/// What every encoder needs besides its network and the ids: each row's real length, the
/// feature to pick, the context and the device.
struct Rows<'a, B: Backend> {
    lens: &'a [usize],
    feature: TransferFeature,
    c: Ctx,
    device: &'a Device<B>,
}

impl<B: Backend> Rows<'_, B> {
    /// [K, N, T] of ids [K·N, T] for `k` members.
    fn shape(&self, ids: &Tensor<B, 2, Int>, k: usize) -> [usize; 3] {
        let [rows, t] = ids.dims();
        [k, rows / k, t]
    }
}

fn lstm_features<B: Backend>(
    m: &CharLstm<B>,
    ids: Tensor<B, 2, Int>,
    r: &Rows<'_, B>,
) -> Tensor<B, 3> {
    let (c, [k, n, t], hd) = (&r.c, r.shape(&ids, m.embed.dims()[0]), m.hidden);
    let xg =
        m.wx.forward(embed(&m.embed, ids, c), c)
            .reshape([k, n, t, 4 * hd]);
    cells(r, [k, n, t, hd], |i, h| {
        step_of(&xg, i) + m.wh.forward(h, c)
    })
}

/// The recurrence of an LSTM cell over `t` steps from zero states, the feature picked at each
/// sentence's last byte: `gates(i, h)` gives step i's gate pre-activations from h_{i−1}.
fn cells<B: Backend>(
    r: &Rows<'_, B>,
    [k, n, t, hd]: [usize; 4],
    gates: impl Fn(usize, Tensor<B, 3>) -> Tensor<B, 3>,
) -> Tensor<B, 3> {
    let mut h = Tensor::<B, 3>::zeros([k, n, hd], r.device);
    let mut cell = h.clone();
    let mut pick = Pick::new(r.feature, r.lens, [k, n, hd], r.device);
    for i in 0..t {
        let (h2, c2) = lstm_cell(gates(i, h), cell, &r.c);
        h = h2;
        cell = c2;
        pick.step(i, &h, &cell);
    }
    pick.finish()
}

fn mlstm_features<B: Backend>(
    m: &Mlstm<B>,
    ids: Tensor<B, 2, Int>,
    r: &Rows<'_, B>,
) -> Tensor<B, 3> {
    let (c, [k, n, t], hd) = (&r.c, r.shape(&ids, m.embed.dims()[0]), m.hidden);
    let e = embed(&m.embed, ids, c);
    let xm = m.wmx.forward(e.clone(), c).reshape([k, n, t, hd]);
    let xg = m.wx.forward(e, c).reshape([k, n, t, 4 * hd]);
    cells(r, [k, n, t, hd], |i, h| {
        let mm = step_of(&xm, i) * m.wmh.forward(h, c);
        step_of(&xg, i) + m.wm.forward(mm, c)
    })
}

fn transformer_features<B: Backend>(
    m: &TransformerLm<B>,
    ids: Tensor<B, 2, Int>,
    r: &Rows<'_, B>,
) -> Tensor<B, 3> {
    let (lens, device) = (r.lens, r.device);
    let [k, _, d] = m.pos.dims();
    let [_, n, t] = r.shape(&ids, k);
    let hs = m.hidden(ids, &r.c).reshape([k, n, t, d]);
    match r.feature {
        TransferFeature::Cell | TransferFeature::Hidden => {
            let last: Vec<i64> = lens.iter().map(|&l| l as i64 - 1).collect();
            let idx = Tensor::<B, 4, Int>::from_data(TensorData::new(last, [1, n, 1, 1]), device)
                .expand([k, n, 1, d]);
            hs.gather(2, idx).reshape([k, n, d])
        }
        TransferFeature::Mean => {
            let mask: Vec<f32> = lens
                .iter()
                .flat_map(|&l| (0..t).map(move |i| if i < l { 1.0 / l as f32 } else { 0.0 }))
                .collect();
            let w = Tensor::<B, 4>::from_data(TensorData::new(mask, [1, n, t, 1]), device);
            (hs * w).sum_dim(2).reshape([k, n, d])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::InputShape;
    use crate::model::ModelSpec;
    use burn::backend::Flex;

    fn specs() -> Vec<ModelSpec> {
        vec![
            ModelSpec::CharLstm(crate::model::char_lstm::CharLstmSpec {
                embed: 6,
                hidden: 10,
            }),
            ModelSpec::Mlstm(crate::model::mlstm::MlstmSpec {
                embed: 6,
                hidden: 9,
            }),
            ModelSpec::Transformer(crate::model::transformer::TransformerSpec {
                d_model: 8,
                heads: 2,
                layers: 2,
                ff: 16,
            }),
        ]
    }

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
                let pairs = encode(&group, &s, f, 2 * row_cost(&group, 66), &dev).unwrap();
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
            let head = match &net {
                Net::CharLstm(m) => m.out.forward(hs, &Ctx::fp32()),
                Net::Mlstm(m) => m.out.forward(hs, &Ctx::fp32()),
                Net::Transformer(m) => m.head.forward(hs, &Ctx::fp32()),
                _ => unreachable!(),
            };
            let got: Vec<f32> = head.into_data().to_vec().unwrap();
            close(&got, &want, &format!("{spec:?}"));
        }
    }
}
