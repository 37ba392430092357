//! The char-LSTM family: a byte-level LSTM language model (embedding, one LSTM layer, a dense
//! readout over the vocabulary).

use burn::module::{Module, Param, ParamId};
use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor};
use serde::{Deserialize, Serialize};

use super::encoder::{Encoder, Rows};
use super::family::{Family, Forward, Input, ModelSpec, Network, Registration};
use super::kernels;
use super::knob::Knob;
use super::layers::{embed, Ctx, Dense, Init, Proj};
use super::lm::{self, cells, step_slice, unroll};
use super::{Batch, InputShape};

pub static FAMILY: Registration = Registration {
    kind: "char-lstm",
    label: "char-LSTM (byte-level LSTM language model)",
    input: Input::Text,
    default: small,
    fits: |_| Ok(()),
    tiny: || {
        let spec = CharLstmSpec {
            embed: 5,
            hidden: 7,
        };
        (ModelSpec::CharLstm(spec), lm::tiny_text())
    },
};

/// Embedding 32, hidden 64 (the `shakespeare-lstm-adam` preset's model): a 2-core study's
/// default and `bench`'s char-LSTM step.
pub fn small() -> ModelSpec {
    ModelSpec::CharLstm(CharLstmSpec {
        embed: 32,
        hidden: 64,
    })
}

/// `kind = "char-lstm"`: embedding and hidden widths.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CharLstmSpec {
    pub embed: usize,
    pub hidden: usize,
}

impl Family for CharLstmSpec {
    fn registration(&self) -> &'static Registration {
        &FAMILY
    }
    fn problems(&self) -> Vec<(&'static str, String)> {
        lm::width_problems(self.embed, self.hidden)
    }
    fn label(&self) -> String {
        format!("char-lstm {}", self.hidden)
    }
    fn size_key(&self) -> &'static str {
        "hidden"
    }
    fn knobs(&self) -> Vec<Knob> {
        lm::width_knobs(self.embed, self.hidden)
    }
    fn set_knob(&mut self, key: &str, text: &str) -> Result<(), String> {
        lm::set_width(key, text, &mut self.embed, &mut self.hidden)
    }
}

impl CharLstmSpec {
    pub fn build<B: Backend>(
        &self,
        init: &mut Init<'_, B>,
        shape: InputShape,
    ) -> anyhow::Result<CharLstm<B>> {
        Ok(CharLstm::init(init, shape.vocab, self.embed, self.hidden))
    }
}

#[derive(Module, Debug)]
pub struct CharLstm<B: Backend> {
    pub embed: Param<Tensor<B, 3>>,
    pub wx: Dense<B>,
    pub wh: Proj<B>,
    pub out: Dense<B>,
    pub hidden: usize,
}

impl<B: Backend> CharLstm<B> {
    /// One member from `init`: the embedding (Normal(0, 1/√e)), W_x, W_h, the readout.
    pub fn init(init: &mut Init<'_, B>, vocab: usize, e: usize, h: usize) -> Self {
        CharLstm {
            embed: init.normal([1, vocab, e], 1.0 / (e as f64).sqrt()),
            wx: Dense::init(init, e, 4 * h),
            wh: Proj::init(init, h, 4 * h),
            out: Dense::init(init, h, vocab),
            hidden: h,
        }
    }

    /// Logits [K, N·T, vocab] in fp32.
    pub fn forward(&self, x: Tensor<B, 2, Int>, c: &Ctx) -> Tensor<B, 3> {
        let [rows, t] = x.dims();
        let k = self.embed.dims()[0];
        let n = rows / k;
        let dev = x.device();
        let xg = self
            .wx
            .forward(embed(&self.embed, x, c), c)
            .reshape([k, n, t, 4 * self.hidden]);
        let hs = match c
            .is_fp32()
            .then(|| kernels::lstm_layer(xg.clone(), self.wh.w.val()))
            .flatten()
        {
            Some(hs) => hs.reshape([k, n * t, self.hidden]),
            None => unroll([k, n, t, self.hidden], &dev, c, |i, h| {
                step_slice(&xg, i) + self.wh.forward(h, c)
            }),
        };
        c.to_f32(self.out.forward(hs, c))
    }
}

impl<B: Backend> Network<B> for CharLstm<B> {
    fn forward(&self, batch: &Batch<B>, c: &Ctx) -> Forward<B> {
        Forward::of_text(batch, self.embed.dims()[0], |x| {
            CharLstm::forward(self, x, c)
        })
    }

    /// One sequence of `seq_len` bytes: the input projection, the recurrence and the readout at
    /// every step.
    fn flops(&self, shape: InputShape) -> f64 {
        let t = shape.seq_len;
        self.wx.flops(t) + self.wh.flops(t) + self.out.flops(t)
    }

    fn untrained(&self) -> Vec<ParamId> {
        Vec::new()
    }

    fn encoder(&self) -> Option<&dyn Encoder<B>> {
        Some(self)
    }

    /// `benches/peers/char_lstm.py`'s names.
    fn peer_params(&self) -> Option<serde_json::Value> {
        use super::layers::member0_values as v;
        Some(serde_json::json!({
            "embed": v(&self.embed),
            "wx": v(&self.wx.w), "bx": v(&self.wx.b),
            "wh": v(&self.wh.w),
            "wo": v(&self.out.w), "bo": v(&self.out.b),
        }))
    }
}

/// The LSTM's recurrence from zero states: `cell` is c at a sentence's last byte (the reference's
/// feature), `hidden` h there, `mean` h averaged over its bytes.
impl<B: Backend> Encoder<B> for CharLstm<B> {
    fn width(&self) -> usize {
        self.hidden
    }

    /// The gate inputs of every step.
    fn sentence_cost(&self, t: usize) -> usize {
        t * 4 * self.hidden
    }

    fn features(&self, ids: Tensor<B, 2, Int>, r: &Rows<'_, B>) -> Tensor<B, 3> {
        let (c, [k, n, t], hd) = (&r.c, r.shape(&ids, self.embed.dims()[0]), self.hidden);
        let xg = self
            .wx
            .forward(embed(&self.embed, ids, c), c)
            .reshape([k, n, t, 4 * hd]);
        cells(r, [k, n, t, hd], |i, h| {
            step_slice(&xg, i) + self.wh.forward(h, c)
        })
    }

    fn head(&self, states: Tensor<B, 3>, c: &Ctx) -> Tensor<B, 3> {
        self.out.forward(states, c)
    }
}
