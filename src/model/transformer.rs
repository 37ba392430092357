//! The Transformer family: a small pre-norm causal Transformer language model with learned
//! positions.

use burn::module::{Module, Param, ParamId};
use burn::tensor::backend::Backend;
use burn::tensor::{activation, Bool, Int, Tensor, TensorData};
use serde::{Deserialize, Serialize};

use super::encoder::{Encoder, Rows, TransferFeature};
use super::family::{Family, Forward, Input, ModelSpec, Network, Registration};
use super::knob::{self, Knob};
use super::layers::{embed, per_member_add, Ctx, Dense, Init, Norm};
use super::{lm, Batch, InputShape};

pub static FAMILY: Registration = Registration {
    kind: "transformer",
    label: "Transformer (small causal language model)",
    input: Input::Text,
    default: small,
    fits: |_| Ok(()),
    tiny: || {
        let spec = TransformerSpec {
            d_model: 8,
            heads: 2,
            layers: 2,
            ff: 12,
        };
        (ModelSpec::Transformer(spec), lm::tiny_text())
    },
};

/// Two blocks of width 64, 4 heads, feed-forward 256 (the `shakespeare-transformer-adam`
/// preset's model): a 2-core study's default.
pub fn small() -> ModelSpec {
    ModelSpec::Transformer(TransformerSpec {
        d_model: 64,
        heads: 4,
        layers: 2,
        ff: 256,
    })
}

/// Most blocks a preset may ask for (each is built: an absurd count is an error, not a hang).
pub const MAX_LAYERS: usize = 1024;

/// `kind = "transformer"`: width, attention heads, blocks, feed-forward width.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TransformerSpec {
    pub d_model: usize,
    pub heads: usize,
    pub layers: usize,
    pub ff: usize,
}

impl Family for TransformerSpec {
    fn registration(&self) -> &'static Registration {
        &FAMILY
    }
    fn problems(&self) -> Vec<(&'static str, String)> {
        let (d, heads) = (self.d_model, self.heads);
        let mut out = Vec::new();
        if d == 0 {
            out.push(("d_model", "d_model must be > 0".to_string()));
        }
        if heads == 0 || !d.is_multiple_of(heads.max(1)) {
            out.push((
                "heads",
                format!("heads {heads} must be > 0 and divide d_model {d}"),
            ));
        }
        if self.layers == 0 {
            out.push(("layers", "layers must be > 0".to_string()));
        } else if self.layers > MAX_LAYERS {
            out.push((
                "layers",
                format!("layers {} is absurd (at most {MAX_LAYERS})", self.layers),
            ));
        }
        if self.ff == 0 {
            out.push(("ff", "ff must be > 0".to_string()));
        }
        out
    }
    fn label(&self) -> String {
        format!("transformer {}×{}", self.layers, self.d_model)
    }
    fn size_key(&self) -> &'static str {
        "d_model"
    }
    fn knobs(&self) -> Vec<Knob> {
        vec![
            Knob::new(
                "d_model",
                "the width of every position's state",
                self.d_model.to_string(),
            ),
            Knob::new(
                "heads",
                "attention heads per block (they divide d_model)",
                self.heads.to_string(),
            ),
            Knob::new("layers", "blocks", self.layers.to_string()),
            Knob::new("ff", "the feed-forward layer's width", self.ff.to_string()),
        ]
    }
    fn set_knob(&mut self, key: &str, text: &str) -> Result<(), String> {
        let v = knob::count(key, text)?;
        match key {
            "d_model" => self.d_model = v,
            "heads" => self.heads = v,
            "layers" => self.layers = v,
            "ff" => self.ff = v,
            _ => return Err(knob::unknown(FAMILY.kind, key, &self.knobs())),
        }
        Ok(())
    }
}

impl TransformerSpec {
    pub fn build<B: Backend>(
        &self,
        init: &mut Init<'_, B>,
        shape: InputShape,
    ) -> anyhow::Result<TransformerLm<B>> {
        anyhow::ensure!(
            self.heads > 0 && self.d_model.is_multiple_of(self.heads),
            "transformer d_model ({}) must be divisible by heads ({})",
            self.d_model,
            self.heads
        );
        Ok(TransformerLm::init(init, self, shape.vocab, shape.seq_len))
    }
}

#[derive(Module, Debug)]
pub struct Block<B: Backend> {
    pub ln1: Norm<B>,
    pub qkv: Dense<B>,
    pub proj: Dense<B>,
    pub ln2: Norm<B>,
    pub ff1: Dense<B>,
    pub ff2: Dense<B>,
}

/// Pre-norm causal Transformer LM with learned positions.
#[derive(Module, Debug)]
pub struct TransformerLm<B: Backend> {
    pub tok: Param<Tensor<B, 3>>,
    pub pos: Param<Tensor<B, 3>>,
    pub blocks: Vec<Block<B>>,
    pub ln_f: Norm<B>,
    pub head: Dense<B>,
    pub heads: usize,
}

impl<B: Backend> TransformerLm<B> {
    /// One member from `init`: the blocks (QKV, projection, the two feed-forward layers each;
    /// layer norms γ = 1, β = 0), then the token and position embeddings (Normal(0, 0.02)), the
    /// final norm and the readout.
    pub fn init(init: &mut Init<'_, B>, s: &TransformerSpec, vocab: usize, max_len: usize) -> Self {
        let d = s.d_model;
        let blocks = (0..s.layers)
            .map(|_| {
                let ln1 = Norm::init(init, d);
                let qkv = Dense::init(init, d, 3 * d);
                let proj = Dense::init(init, d, d);
                let ln2 = Norm::init(init, d);
                let ff1 = Dense::init(init, d, s.ff);
                let ff2 = Dense::init(init, s.ff, d);
                Block {
                    ln1,
                    qkv,
                    proj,
                    ln2,
                    ff1,
                    ff2,
                }
            })
            .collect();
        TransformerLm {
            tok: init.normal([1, vocab, d], 0.02),
            pos: init.normal([1, max_len, d], 0.02),
            blocks,
            ln_f: Norm::init(init, d),
            head: Dense::init(init, d, vocab),
            heads: s.heads,
        }
    }

    pub fn forward(&self, x: Tensor<B, 2, Int>, c: &Ctx) -> Tensor<B, 3> {
        c.to_f32(self.head.forward(self.hidden(x, c), c))
    }

    /// The final layer norm's output [K, N·T, d] (what the head reads): each position's state
    /// sees only the positions before it.
    pub fn hidden(&self, x: Tensor<B, 2, Int>, c: &Ctx) -> Tensor<B, 3> {
        let [rows, t] = x.dims();
        let dev = x.device();
        let [k, max_len, d] = self.pos.dims();
        let n = rows / k;
        assert!(t <= max_len, "sequence longer than the model's context");
        // member k's positions [T, d] added to each of its N sequences
        let pos = c.w(&self.pos).slice([0..k, 0..t, 0..d]).reshape([k, t * d]);
        let tokens = embed(&self.tok, x, c).reshape([k, n, t * d]);
        let mut hdn = per_member_add(tokens, pos).reshape([k, n * t, d]);
        let mask: Vec<bool> = (0..t * t).map(|i| (i % t) > (i / t)).collect();
        let mask = Tensor::<B, 2, Bool>::from_data(TensorData::new(mask, [t, t]), &dev)
            .unsqueeze::<4>()
            .expand([rows, self.heads, t, t]);
        let dh = d / self.heads;
        for b in &self.blocks {
            let a = b.qkv.forward(b.ln1.forward(hdn.clone(), c), c);
            let mut qkv = a.chunk(3, 2).into_iter();
            let split = |z: Tensor<B, 3>| z.reshape([rows, t, self.heads, dh]).swap_dims(1, 2);
            let q = split(qkv.next().unwrap());
            let kk = split(qkv.next().unwrap());
            let v = split(qkv.next().unwrap());
            let scores = c.to_f32(q.matmul(kk.swap_dims(2, 3))) / (dh as f64).sqrt();
            let att = activation::softmax(scores.mask_fill(mask.clone(), -1e9), 3);
            let y = c.cast(att).matmul(v).swap_dims(1, 2).reshape([k, n * t, d]);
            hdn = hdn + b.proj.forward(y, c);
            let f = activation::gelu(b.ff1.forward(b.ln2.forward(hdn.clone(), c), c));
            hdn = hdn + b.ff2.forward(f, c);
        }
        self.ln_f.forward(hdn, c)
    }
}

impl<B: Backend> Network<B> for TransformerLm<B> {
    fn forward(&self, batch: &Batch<B>, c: &Ctx) -> Forward<B> {
        Forward::of_text(batch, self.tok.dims()[0], |x| {
            TransformerLm::forward(self, x, c)
        })
    }

    /// One sequence of `seq_len` bytes: every dense layer at every position, and attention's two
    /// products (scores q·kᵀ and their weighted sum of v: 2·T²·d each, over all heads) per block.
    fn flops(&self, shape: InputShape) -> f64 {
        let t = shape.seq_len;
        let d = self.ln_f.gamma.lazy_shape().dims::<2>()[1] as f64;
        let blocks: f64 = self
            .blocks
            .iter()
            .map(|b| {
                b.qkv.flops(t)
                    + b.proj.flops(t)
                    + b.ff1.flops(t)
                    + b.ff2.flops(t)
                    + 2.0 * 2.0 * (t * t) as f64 * d
            })
            .sum();
        blocks + self.head.flops(t)
    }

    fn untrained(&self) -> Vec<ParamId> {
        Vec::new()
    }

    fn encoder(&self) -> Option<&dyn Encoder<B>> {
        Some(self)
    }
}

/// No cell state: `cell` and `hidden` are the final layer norm's output at a sentence's last
/// byte (the state the head reads), `mean` its average over the sentence's bytes; a sentence
/// longer than the context is read as its last `seq_len` bytes.
impl<B: Backend> Encoder<B> for TransformerLm<B> {
    fn width(&self) -> usize {
        self.pos.dims()[2]
    }

    fn context(&self) -> usize {
        self.pos.dims()[1]
    }

    /// The attention scores, the feed-forward layer or the QKV projection, whichever is largest.
    fn sentence_cost(&self, t: usize) -> usize {
        let ff = self.blocks.first().map_or(0, |b| b.ff1.w.dims()[2]);
        t * (self.heads * t).max(ff).max(3 * self.pos.dims()[2])
    }

    fn features(&self, ids: Tensor<B, 2, Int>, r: &Rows<'_, B>) -> Tensor<B, 3> {
        let (lens, device) = (r.lens, r.device);
        let [k, _, d] = self.pos.dims();
        let [_, n, t] = r.shape(&ids, k);
        let hs = self.hidden(ids, &r.c).reshape([k, n, t, d]);
        match r.feature {
            TransferFeature::Cell | TransferFeature::Hidden => {
                let last: Vec<i64> = lens.iter().map(|&l| l as i64 - 1).collect();
                let idx =
                    Tensor::<B, 4, Int>::from_data(TensorData::new(last, [1, n, 1, 1]), device)
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

    fn head(&self, states: Tensor<B, 3>, c: &Ctx) -> Tensor<B, 3> {
        self.head.forward(states, c)
    }
}
