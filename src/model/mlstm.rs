//! The mLSTM family: a byte-level multiplicative LSTM language model (Krause et al.; Puri et al.):
//! m = (W_mx·x) ⊙ (W_mh·h); gates = W_x·x + W_m·m + b.

use burn::module::{Module, Param, ParamId};
use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor};
use serde::{Deserialize, Serialize};

use super::encoder::{Encoder, Rows};
use super::family::{Family, Forward, Input, ModelSpec, Network, Registration};
use super::knob::Knob;
use super::layers::{embed, Ctx, Dense, Init, Proj};
use super::lm::{self, cells, step_slice, unroll};
use super::{Batch, InputShape};

pub static FAMILY: Registration = Registration {
    kind: "mlstm",
    label: "mLSTM (multiplicative LSTM language model)",
    input: Input::Text,
    default: small,
    fits: |_| Ok(()),
    tiny: || {
        let spec = MlstmSpec {
            embed: 5,
            hidden: 6,
        };
        (ModelSpec::Mlstm(spec), lm::tiny_text())
    },
};

/// Embedding 32, hidden 64 (the `shakespeare-mlstm-adam` preset's model): a 2-core study's
/// default.
pub fn small() -> ModelSpec {
    ModelSpec::Mlstm(MlstmSpec {
        embed: 32,
        hidden: 64,
    })
}

/// `kind = "mlstm"`: embedding and hidden widths.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MlstmSpec {
    pub embed: usize,
    pub hidden: usize,
}

impl Family for MlstmSpec {
    fn registration(&self) -> &'static Registration {
        &FAMILY
    }
    fn problems(&self) -> Vec<(&'static str, String)> {
        lm::width_problems(self.embed, self.hidden)
    }
    fn label(&self) -> String {
        format!("mlstm {}", self.hidden)
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

impl MlstmSpec {
    pub fn build<B: Backend>(
        &self,
        init: &mut Init<'_, B>,
        shape: InputShape,
    ) -> anyhow::Result<Mlstm<B>> {
        Ok(Mlstm::init(init, shape.vocab, self.embed, self.hidden))
    }
}

#[derive(Module, Debug)]
pub struct Mlstm<B: Backend> {
    pub embed: Param<Tensor<B, 3>>,
    pub wmx: Proj<B>,
    pub wmh: Proj<B>,
    pub wx: Dense<B>,
    pub wm: Proj<B>,
    pub out: Dense<B>,
    pub hidden: usize,
}

impl<B: Backend> Mlstm<B> {
    /// One member from `init`: the embedding (Normal(0, 1/√e)), W_mx, W_mh, W_x, W_m, the readout.
    pub fn init(init: &mut Init<'_, B>, vocab: usize, e: usize, h: usize) -> Self {
        Mlstm {
            embed: init.normal([1, vocab, e], 1.0 / (e as f64).sqrt()),
            wmx: Proj::init(init, e, h),
            wmh: Proj::init(init, h, h),
            wx: Dense::init(init, e, 4 * h),
            wm: Proj::init(init, h, 4 * h),
            out: Dense::init(init, h, vocab),
            hidden: h,
        }
    }

    pub fn forward(&self, x: Tensor<B, 2, Int>, c: &Ctx) -> Tensor<B, 3> {
        let [rows, t] = x.dims();
        let k = self.embed.dims()[0];
        let n = rows / k;
        let dev = x.device();
        let e = embed(&self.embed, x, c);
        let xm = self
            .wmx
            .forward(e.clone(), c)
            .reshape([k, n, t, self.hidden]);
        let xg = self.wx.forward(e, c).reshape([k, n, t, 4 * self.hidden]);
        let hs = unroll([k, n, t, self.hidden], &dev, c, |i, h| {
            let m = step_slice(&xm, i) * self.wmh.forward(h, c);
            step_slice(&xg, i) + self.wm.forward(m, c)
        });
        c.to_f32(self.out.forward(hs, c))
    }
}

impl<B: Backend> Network<B> for Mlstm<B> {
    fn forward(&self, batch: &Batch<B>, c: &Ctx) -> Forward<B> {
        Forward::of_text(batch, self.embed.dims()[0], |x| Mlstm::forward(self, x, c))
    }

    /// One sequence of `seq_len` bytes: every projection at every step.
    fn flops(&self, shape: InputShape) -> f64 {
        let t = shape.seq_len;
        [&self.wmx, &self.wmh, &self.wm]
            .iter()
            .map(|p| p.flops(t))
            .sum::<f64>()
            + self.wx.flops(t)
            + self.out.flops(t)
    }

    fn untrained(&self) -> Vec<ParamId> {
        Vec::new()
    }

    fn encoder(&self) -> Option<&dyn Encoder<B>> {
        Some(self)
    }
}

/// The mLSTM's recurrence from zero states, read as the char-LSTM's (`cell`, `hidden`, `mean`).
impl<B: Backend> Encoder<B> for Mlstm<B> {
    fn width(&self) -> usize {
        self.hidden
    }

    /// The gate inputs and the multiplicative inputs of every step.
    fn sentence_cost(&self, t: usize) -> usize {
        t * 5 * self.hidden
    }

    fn features(&self, ids: Tensor<B, 2, Int>, r: &Rows<'_, B>) -> Tensor<B, 3> {
        let (c, [k, n, t], hd) = (&r.c, r.shape(&ids, self.embed.dims()[0]), self.hidden);
        let e = embed(&self.embed, ids, c);
        let xm = self.wmx.forward(e.clone(), c).reshape([k, n, t, hd]);
        let xg = self.wx.forward(e, c).reshape([k, n, t, 4 * hd]);
        cells(r, [k, n, t, hd], |i, h| {
            let mm = step_slice(&xm, i) * self.wmh.forward(h, c);
            step_slice(&xg, i) + self.wm.forward(mm, c)
        })
    }

    fn head(&self, states: Tensor<B, 3>, c: &Ctx) -> Tensor<B, 3> {
        self.out.forward(states, c)
    }
}
